/* ZB-H2, the zero-bubble handcrafted schedule of "Zero Bubble Pipeline
 * Parallelism" (Qi et al., 2023, Figure 3): a parallelogram instead of
 * 1F1B's trapezoid. The order is the authors' own (get_hand_schedule with
 * two warm-up forwards per hop, sail-sg/zero-bubble-pipeline-parallelism,
 * megatron/core/pipeline_parallel/efficiency.py). Device d runs
 *     F^w0  (F B)^t  (F B W)^s  (B W)^w0  W^t
 * with w0 = 2(p-1-d) warm-up forwards, t = 2d rounds whose W is deferred
 * to the end, s = m - w0 - t: the authors' loop over m rounds "F if any is
 * left, B, W once the round is past 2(p-1) - w0", then the deferred W.
 *
 * Why, with unit costs and m >= 2p-1: the first B reaches device d at time
 * 2p-1-d (p-1 forward hops, the last stage's F and B, p-1-d backward hops),
 * and w0 + 1 = 2(p-d)-1 forwards fill [d, 2p-1-d) exactly. B's then reach
 * device d every 2 slots for the first 2d rounds (room for one F: the 2d
 * forwards device d runs ahead of device d+1) and every 3 slots after
 * (room for F and W), and after its last B device d runs its 2d deferred W:
 * no device ever idles, span = m(F+B+W).
 *
 * Memory (deltas F +1, W -1): w0 + t + 1 = 2p-1 forwards precede the first
 * W on every device and each later round frees one (W) as it allocates one
 * (F): peak memory is exactly min(m, 2p-1).
 *
 * For smaller m the same loop runs with w0 capped at m: rounds whose F has
 * run out are (B) or (B W). The F/B interleaving is then 1F1B's with
 * warm-up counts that never grow downstream, so the order stays valid. */
#include "shapes/split_phases.h"

#define NAME "zb-h2"

static psched_status check(const psched_plan *plan)
{
    psched_status st = psched__check_placement(plan, PSCHED_PLACEMENT_LOOP, NAME);
    if (st == PSCHED_OK)
        st = psched__check_chunks(plan, 1, 1, NAME);
    return st;
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    psched_seq mbs = psched__seq_grouped(m, 1, m);
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; d < p && st == PSCHED_OK; d++) {
        size_t w0 = 2 * (size_t)(p - 1 - d);
        w0 = w0 < m ? w0 : m;
        /* Rounds 0..m-1: F while i < m - w0 (forwards left), W once
         * i >= t. Both bounds cut the rounds into three runs. */
        size_t t = 2 * (size_t)(p - 1) - w0;
        size_t f_end = m - w0, w_from = t < m ? t : m;
        size_t first = f_end < w_from ? f_end : w_from; /* F B */
        size_t both = f_end > w_from ? f_end - w_from : 0; /* F B W */
        size_t bare = w_from > f_end ? w_from - f_end : 0; /* B, F run out */
        size_t last = m - first - both - bare;            /* B W */
        const psched_split_phase word[] = {
            {"F", w0}, {"FB", first}, {"FBW", both}, {"B", bare}, {"BW", last}};
        /* The W deferred by the first w_from rounds follow (drain). */
        st = psched__split_device(b, d, &mbs, &mbs, word, 5);
    }
    return st;
}

const psched_generator psched_gen_zb_h2 = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "ZB-H2 (zero-bubble paper, handcrafted): "
                   "zero bubble, 2p-1 micro-batches in flight",
    .constraints = "loop placement, v = 1; zero bubble when m >= 2p-1",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 1,
    .chains = 1,
    .check = check,
    .generate = generate,
};
