/* DeepSeek's bidirectional DualPipe: two copies of the model as two chains,
 * chain 0 entering at device 0 and chain 1 at device p-1, m/2 micro-batches
 * each. The first half of the devices runs DualPipeV on p/2 devices with its
 * chain-0 stage leading; the second half is its mirror, with the chain-1
 * stage leading (deepseek-ai/DualPipe, dualpipe.py). */
#include "shapes/dualpipe_phases.h"

static psched_status dualpipe_check(const psched_plan *plan)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);

    if (p % 2 != 0)
        return psched_fail(PSCHED_EINVAL, "devices (%u) must be even for dualpipe", p);
    if (m % 2 != 0)
        return psched_fail(PSCHED_EINVAL,
                           "microbatches (%u) must be even for dualpipe (m/2 per direction)", m);
    return psched__dualpipe_check(plan, "dualpipe");
}

static psched_status dualpipe_generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), half = p / 2;
    uint32_t mbs = psched_plan_microbatches(plan) / 2;

    for (uint32_t d = 0; d < p; d++) {
        /* chain-0 stage d and chain-1 stage 2p-1-d (stage p+s on device p-1-s) */
        bool first_half = d < half;
        psched_dualpipe_device dev = {
            .device = d,
            .rank = first_half ? d : p - 1 - d,
            .ranks = half,
            .mbs = mbs,
            .stage = {first_half ? d : 2 * p - 1 - d, first_half ? 2 * p - 1 - d : d},
        };
        psched_status st = psched__dualpipe_phases(b, &dev);
        if (st != PSCHED_OK)
            return st;
    }
    return PSCHED_OK;
}

const psched_generator psched_gen_dualpipe = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "dualpipe",
    .description = "DeepSeek DualPipe: "
                   "two model copies in opposite directions, overlapped F&B pairs",
    .constraints = "vshape placement (2 chains), v = 2, p even, m even, m >= 2p",
    .placement = PSCHED_PLACEMENT_VSHAPE,
    .default_chunks = 2,
    .chains = 2,
    .check = dualpipe_check,
    .generate = dualpipe_generate,
};
