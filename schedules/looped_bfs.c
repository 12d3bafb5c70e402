/* Looped BFS (breadth-first pipeline parallelism, PyTorch
 * ScheduleLoopedBFS): each device runs the forwards of every micro-batch on
 * its first chunk, then on its next chunk, ...; then the backwards from its
 * last chunk to its first, micro-batches in descending order. */
#include "shapes/phases.h"

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    uint32_t v = psched_plan_chunks(plan);
    /* One group of all m micro-batches is the breadth-first order; read
     * back to front it is chunks descending, micro-batches descending. */
    psched_seq fwd = psched__seq_grouped(m, v, m);
    psched_seq bwd = psched__seq_reversed(fwd);
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; d < p && st == PSCHED_OK; d++)
        st = psched__emit_1f1b(b, d, &fwd, &bwd, fwd.count, PSCHED_OP_BW);
    return st;
}

/* PyTorch's (and torchtitan's) class name for this schedule. */
static const char *const aliases[] = {"LoopedBFS", NULL};

const psched_generator psched_gen_looped_bfs = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "looped-bfs",
    .description = "Looped BFS: "
                   "all forwards chunk by chunk, then all backwards from the last chunk",
    .constraints = "loop placement, v >= 1",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 2,
    .chains = 1,
    .check = NULL, /* every p, m and v >= 1 fit; psched_generate() enforces loop placement */
    .generate = generate,
    .aliases = aliases,
};
