/* A plug-in built against a future header: its descriptor claims
 * abi_version PSCHED_GENERATOR_ABI + 1, which this library must refuse
 * (EPLUGIN) instead of reading fields it does not know. */
#include "pipesched.h"

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    (void)plan;
    return psched_builder_reserve(b, 0, 0);
}

static const psched_generator future = {
    .abi_version = PSCHED_GENERATOR_ABI + 1,
    .name = "future-abi",
    .description = "from a newer header (test plug-in)",
    .constraints = "none",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 1,
    .chains = 1,
    .generate = generate,
};

PSCHED_API psched_status psched_plugin_init(void);

psched_status psched_plugin_init(void)
{
    return psched_register_generator(&future);
}
