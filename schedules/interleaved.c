/* Interleaved 1F1B (Megatron-LM forward_backward_pipelining_with_interleaving,
 * PyTorch ScheduleInterleaved1F1B). Each device holds v chunks (loop
 * placement: chunk c of device d is stage c*p + d). Micro-batches go through
 * the chunks in groups of N: the schedule table lists, group by group, chunk
 * 0 of every micro-batch of the group, then chunk 1, ... The k-th forward of
 * every device is table[k]; the k-th backward is the same micro-batch on the
 * mirrored chunk v-1-c. Device d warms up with 2(p-d-1) + (v-1)N forwards. */
#include "shapes/phases.h"

#define NAME "interleaved"

static psched_status check(const psched_plan *plan)
{
    uint32_t n;
    psched_status st = psched__check_chunks(plan, 2, 0, NAME);
    if (st == PSCHED_OK)
        st = psched__interleaved_group(plan, NAME, &n);
    return st;
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    uint32_t v = psched_plan_chunks(plan);
    uint32_t n;
    psched_status st = psched__interleaved_group(plan, NAME, &n);
    if (st != PSCHED_OK)
        return st;
    psched_seq fwd = psched__seq_grouped(m, v, n);
    psched_seq bwd = psched__seq_mirrored(fwd);
    /* Warm-up: the last device needs the first group through chunks 0..v-2
     * before its first backward; each device upstream adds one forward and
     * one backward hop. The emitter caps it at m*v. */
    for (uint32_t d = 0; d < p && st == PSCHED_OK; d++) {
        size_t warmup = (size_t)(p - d - 1) * 2 + (size_t)(v - 1) * n;
        st = psched__emit_1f1b(b, d, &fwd, &bwd, warmup, PSCHED_OP_BW);
    }
    return st;
}

/* PyTorch's (and torchtitan's) class name for this schedule. */
static const char *const aliases[] = {"Interleaved1F1B", NULL};

const psched_generator psched_gen_interleaved = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "Megatron-LM interleaved 1F1B: "
                   "v chunks per device, micro-batches in groups of N",
    .constraints = "loop placement, v >= 2; option group-size N: p <= N <= m, "
                   "m mod N = 0 or >= p",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 2,
    .chains = 1,
    .check = check,
    .generate = generate,
    .aliases = aliases,
    .options = psched__group_size_option,
    .option_count = 1,
};
