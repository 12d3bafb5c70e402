/* GPipe: every forward, then every backward, each in micro-batch order. */
#include "shapes/phases.h"

static psched_status check(const psched_plan *plan)
{
    return psched__check_chunks(plan, 1, 1, "gpipe");
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    psched_seq mbs = psched__seq_grouped(m, 1, m);
    psched_status st = PSCHED_OK;
    /* A warm-up as long as the forwards leaves no steady state: the 1F1B
     * shape degenerates into all F then all BW. */
    for (uint32_t d = 0; d < p && st == PSCHED_OK; d++)
        st = psched__emit_1f1b(b, d, &mbs, &mbs, mbs.count, PSCHED_OP_BW);
    return st;
}

/* PyTorch's (and torchtitan's) class name for this schedule. */
static const char *const aliases[] = {"GPipe", NULL};

const psched_generator psched_gen_gpipe = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "gpipe",
    .description = "GPipe: all forwards, then all full backwards, in micro-batch order",
    .constraints = "loop placement, v = 1",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 1,
    .chains = 1,
    .check = check,
    .generate = generate,
    .aliases = aliases,
};
