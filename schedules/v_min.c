/* V-Min: the building-block schedule of "Pipeline Parallelism with
 * Controllable Memory" (Qi et al. 2024) whose peak activation memory is
 * about a third of 1F1B's: 2*floor((p+4)/3) chunk activations per device
 * (m large enough to fill the pipeline). Device i's first block:
 *     chunk-0 F at i, chunk-1 F at 2p-1-i,
 *     chunk-1 B at 2p+d+i, chunk-0 B at 4p+d-1-i,   d = 2 if p % 3 == 0 else 0,
 * micro-batch k 6k slots later; vblock.c does the rest. */
#include "shapes/vblock.h"

#define NAME "v-min"

static void pattern(uint32_t devices, uint32_t device, int64_t slot[4])
{
    int64_t p = devices, i = device, d = devices % 3 == 0 ? 2 : 0;
    slot[0] = i;
    slot[1] = 2 * p - 1 - i;
    slot[2] = 2 * p + d + i;
    slot[3] = 4 * p + d - 1 - i;
}

static psched_status check(const psched_plan *plan)
{
    return psched__vblock_check(plan, NAME);
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    return psched__vblock_generate(plan, b, pattern);
}

const psched_generator psched_gen_v_min = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "V-Min (controllable-memory V-shape building blocks): memory about M/3, "
                   "2*floor((p+4)/3) chunk activations",
    .constraints = "vshape placement, v = 2; any p >= 1, m >= 1",
    .placement = PSCHED_PLACEMENT_VSHAPE,
    .default_chunks = 2,
    .chains = 1,
    .check = check,
    .generate = generate,
};
