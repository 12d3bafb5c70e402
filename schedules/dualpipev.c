/* DeepSeek's DualPipeV ("cut-in-half" DualPipe): one V-shaped pipeline in
 * which every device runs the eight DualPipe phases with its chunk-0 stage
 * as phase 0 and its chunk-1 stage as phase 1. Order as PyTorch's
 * ScheduleDualPipeV. */
#include "shapes/dualpipe_phases.h"

static psched_status dualpipev_check(const psched_plan *plan)
{
    return psched__dualpipe_check(plan, "dualpipev");
}

static psched_status dualpipev_generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);

    for (uint32_t d = 0; d < p; d++) {
        psched_dualpipe_device dev = {
            .device = d, .rank = d, .ranks = p, .mbs = m, .stage = {d, 2 * p - 1 - d}};
        psched_status st = psched__dualpipe_phases(b, &dev);
        if (st != PSCHED_OK)
            return st;
    }
    return PSCHED_OK;
}

/* PyTorch's (and torchtitan's) class name for this schedule. */
static const char *const aliases[] = {"DualPipeV", NULL};

const psched_generator psched_gen_dualpipev = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "dualpipev",
    .description = "DeepSeek DualPipeV: cut-in-half DualPipe on a V, overlapped F&B pairs",
    .constraints = "vshape placement, v = 2, m >= 2p",
    .placement = PSCHED_PLACEMENT_VSHAPE,
    .default_chunks = 2,
    .chains = 1,
    .check = dualpipev_check,
    .generate = dualpipev_generate,
    .aliases = aliases,
};
