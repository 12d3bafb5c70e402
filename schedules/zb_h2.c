/* ZB-H2, the zero-bubble handcrafted schedule of "Zero Bubble Pipeline
 * Parallelism" (Qi et al., 2023, Figure 3): a parallelogram instead of
 * 1F1B's trapezoid. Device d runs
 *     F^w  (B W F)^s  (B F)^r  (B W)^w  W^r
 * with w = min(m, 2(p-d)-1) warm-up forwards, r = min(2d, m-w) rounds whose
 * W is deferred, s = m-w-r.
 *
 * Why, with unit costs and m >= 2p-1: the first B reaches device d at time
 * 2p-1-d (p-1 forward hops, the last stage's F and B, p-1-d backward hops),
 * and 2(p-d)-1 forwards fill [d, 2p-1-d) exactly. Device d must then stay
 * busy until d+3m, so after its last B it runs 2d+1 W: B's therefore reach
 * every device with the same spacing, 3 for the first s = m-2p+1 of them
 * (room for one W and one F in between) and 2 for the last 2p-2 (room for
 * one op: the 2d forwards device d still has, then W). Each forward is
 * ready in time because device d-1 runs the same forward at least one slot
 * earlier, so no device ever idles: span = m(F+B+W).
 *
 * Memory (deltas F +1, W -1): w + r = min(m, 2p-1) micro-batches between F
 * and W on every device, and putting W before F in the steady triple means
 * the peak never exceeds it: peak memory is exactly min(m, 2p-1).
 *
 * For m < 2p-1 the counts shrink with the same words; the F/B interleaving
 * is then 1F1B's with warm-up counts that never grow downstream, so the
 * order stays valid. */
#include "split_phases.h"

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
        size_t fill = 2 * (size_t)(p - d) - 1;
        size_t w = m < fill ? m : fill;
        size_t r = 2 * (size_t)d < m - w ? 2 * (size_t)d : m - w;
        size_t s = m - w - r;
        const psched_split_phase word[] = {{"F", w}, {"BWF", s}, {"BF", r}, {"BW", w}};
        st = psched__split_device(b, d, &mbs, &mbs, word, 4);
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
