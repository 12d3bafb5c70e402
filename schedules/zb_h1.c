/* ZB-H1, the handcrafted schedule of "Zero Bubble Pipeline Parallelism"
 * (Qi et al., 2023). Device d runs
 *     F^w  (B F)^r  (B W F)^s  (B W)^w  W^r
 * with w = min(m, p-d) warm-up forwards and r = min(d, m-w) rounds whose W
 * is deferred. Its F/B interleaving is 1F1B's, so it is valid wherever 1F1B
 * is; the deferred W of device d fill the d idle slots 1F1B leaves at the
 * end of that device. Every device holds at most min(m, p) micro-batches
 * between F and W (w + r), 1F1B's memory; with unit costs and m >= p the
 * span is m(F+B+W) + (p-1)(F+B-W). */
#include "shapes/split_phases.h"

#define NAME "zb-h1"

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
        size_t w = m < p - d ? m : p - d;
        size_t r = d < m - w ? d : m - w;
        size_t s = m - w - r;
        const psched_split_phase word[] = {{"F", w}, {"BF", r}, {"BWF", s}, {"BW", w}};
        st = psched__split_device(b, d, &mbs, &mbs, word, 4);
    }
    return st;
}

const psched_generator psched_gen_zb_h1 = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "ZB-H1 (zero-bubble paper, handcrafted): 1F1B memory, bubble (p-1)(F+B-W)",
    .constraints = "loop placement, v = 1",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 1,
    .chains = 1,
    .check = check,
    .generate = generate,
};
