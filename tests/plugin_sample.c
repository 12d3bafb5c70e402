/* An out-of-tree generator plug-in, built as its own shared module with
 * nothing but the public header: "reverse-gpipe" runs all forwards, then
 * the full backwards in reverse micro-batch order. */
#include "pipesched.h"

static psched_status check(const psched_plan *plan)
{
    if (psched_plan_chunks(plan) != 1)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be 1 for reverse-gpipe",
                           psched_plan_chunks(plan));
    return PSCHED_OK;
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    for (uint32_t d = 0; d < p; d++) {
        psched_builder_reserve(b, d, 2 * (size_t)m);
        for (uint32_t k = 0; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_F, d, k, 0);
        for (uint32_t k = m; k-- > 0;)
            psched_builder_append(b, d, PSCHED_OP_BW, d, k, 0);
    }
    /* appends latch their first error; a zero reservation reads it back */
    return psched_builder_reserve(b, 0, 0);
}

static const psched_generator reverse_gpipe = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "reverse-gpipe",
    .description = "all F, then BW in reverse order (test plug-in)",
    .constraints = "loop placement, v = 1",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 1,
    .chains = 1,
    .check = check,
    .generate = generate,
};

PSCHED_API psched_status psched_plugin_init(void);

psched_status psched_plugin_init(void)
{
    return psched_register_generator(&reverse_gpipe);
}
