/* Interleaved zero bubble (ZB1P with v chunks, PyTorch
 * ScheduleInterleavedZeroBubble). The forward and backward visiting orders
 * are interleaved 1F1B's (Megatron's table with group size N, backwards on
 * the mirrored chunk), the backward is split, and device d warms up with
 * (p-d-1) + (v-1)N forwards: one fewer per hop than interleaved 1F1B,
 * because a B alone returns the gradient upstream in half a full backward.
 * Counting steady-state and cool-down steps from 0, step j >= d ends with
 * the W of the oldest B that has none yet; steps before d leave their W for
 * later, which fills device d's share of the pipeline drain. The W still
 * pending after the last B follow in order. */
#include "shapes/split_phases.h"


#define NAME "interleaved-zb"

static psched_status check(const psched_plan *plan)
{
    uint32_t n;
    psched_status st = psched__check_placement(plan, PSCHED_PLACEMENT_LOOP, NAME);
    if (st == PSCHED_OK)
        st = psched__check_chunks(plan, 2, 0, NAME);
    if (st == PSCHED_OK)
        st = psched__interleaved_group(plan, NAME, &n);
    return st;
}

/* One device: warm-up forwards, steady (F, B[, W]) steps, cool-down
 * (B[, W]) steps, the W left over. Steps j < d carry no W. */
static psched_status emit_device(psched_builder *b, uint32_t d, const psched_seq *fwd,
                                 const psched_seq *bwd, size_t warmup)
{
    size_t total = fwd->count;
    size_t w = warmup < total ? warmup : total;
    size_t steady = total - w;
    size_t steady_bare = d < steady ? d : steady;
    size_t cool_bare = d > steady ? d - steady : 0;
    if (cool_bare > w)
        cool_bare = w;
    const psched_split_phase word[] = {{"F", w},
                                       {"FB", steady_bare},
                                       {"FBW", steady - steady_bare},
                                       {"B", cool_bare},
                                       {"BW", w - cool_bare}};
    return psched__split_device(b, d, fwd, bwd, word, 5);
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    uint32_t v = psched_plan_chunks(plan);
    uint32_t n;
    psched_status st = psched__interleaved_group(plan, NAME, &n);
    psched_seq fwd = psched__seq_grouped(m, v, n);
    psched_seq bwd = psched__seq_mirrored(fwd);
    for (uint32_t d = 0; d < p && st == PSCHED_OK; d++) {
        size_t warmup = (size_t)(p - d - 1) + (size_t)(v - 1) * n;
        st = emit_device(b, d, &fwd, &bwd, warmup);
    }
    return st;
}

/* PyTorch's (and torchtitan's) class name for this schedule. */
static const char *const aliases[] = {"InterleavedZeroBubble", NULL};

const psched_generator psched_gen_interleaved_zb = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "Interleaved zero bubble (ZB1P, PyTorch ScheduleInterleavedZeroBubble): "
                   "interleaved 1F1B with split backward, W fills the drain",
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
