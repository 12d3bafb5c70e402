/* The cost model's extensions (issue 18, docs/simulator.md "Cost model
 * extensions"): overlapped pairs that save time, micro-batch weights and
 * communication by bytes over links. Every expected time is derived by hand
 * in the comment above it, or is a closed form (the DualPipe paper's
 * bubble); "unchanged" tests compare against the default model, whose
 * figures the rest of the suite pins. */
#include "testsched.h"
#include "testutil.h"

static void check_times(const psched_report *r, uint32_t d, const double *start,
                        const double *end, size_t n)
{
    double s[32], e[32];
    CHECK_OK(psched_report_op_times(r, d, 0, n, s, e));
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_DBL(s[i], start[i]);
        CHECK_EQ_DBL(e[i], end[i]);
    }
}

static psched_plan *gen_plan(uint32_t p, uint32_t m, double f, double b, double w)
{
    psched_plan *plan = tu_plan(p, m, 0);
    if (!plan)
        return NULL;
    psched_plan_set_cost(plan, f, b, w);
    return plan;
}

static psched_report *simulate_generated(const psched_plan *plan, const char *name)
{
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    CHECK_OK(psched_generate(plan, name, &s));
    if (s)
        CHECK_OK(psched_simulate(s, NULL, &r));
    psched_schedule_destroy(s);
    return r;
}

/* ---- defaults ---- */

static void test_defaults_are_the_plain_model(void)
{
    psched_plan *plan = ts_plan(2, 3, 1, PSCHED_PLACEMENT_LOOP);
    CHECK_EQ_DBL(psched_plan_stage_overlap_saving(plan, 1), 0);
    CHECK_EQ_DBL(psched_plan_microbatch_weight(plan, 2), 1);
    CHECK(isnan(psched_plan_microbatch_weight(plan, 3)));
    CHECK(isnan(psched_plan_stage_overlap_saving(plan, 2)));
    double fw = -1, bw = -1;
    CHECK_OK(psched_plan_stage_comm_bytes(plan, 0, &fw, &bw));
    CHECK_EQ_DBL(fw, 0);
    CHECK_EQ_DBL(bw, 0);
    uint32_t g = 7;
    double ib = 0, il = -1, xb = 0, xl = -1;
    CHECK_OK(psched_plan_topology(plan, &g, &ib, &il, &xb, &xl));
    CHECK_EQ_INT(g, 0);
    CHECK(isinf(ib) && isinf(xb));
    CHECK_EQ_DBL(il, 0);
    CHECK_EQ_DBL(xl, 0);
    psched_plan_destroy(plan);
}

/* Setting every extension to its neutral value leaves every op time of
 * every listed generator as the default model gives it. */
static void test_neutral_extensions_change_no_time(void)
{
    static const char *const names[] = {"1f1b", "zb-h1", "interleaved", "dualpipev", "v-min"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        psched_plan *plain = gen_plan(4, 8, 1, 2, 1.5), *neutral;
        psched_plan_set_comm(plain, 0.25);
        CHECK_OK(psched_plan_clone(plain, &neutral));
        double w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        CHECK_OK(psched_plan_set_microbatch_weights(neutral, w, 8));
        CHECK_OK(psched_plan_set_overlap_saving(neutral, 0));
        CHECK_OK(psched_plan_set_comm_bytes(neutral, 0, 0));
        CHECK_OK(psched_plan_set_topology(neutral, 2, INFINITY, 0, INFINITY, 0));
        psched_report *a = simulate_generated(plain, names[i]);
        psched_report *b = simulate_generated(neutral, names[i]);
        CHECK(a && b);
        if (a && b) {
            CHECK_EQ_DBL(psched_report_makespan(b), psched_report_makespan(a));
            for (uint32_t d = 0; d < 4; d++) {
                size_t n = a->offset[d + 1] - a->offset[d];
                for (size_t k = 0; k < n; k++) {
                    CHECK(a->start[a->offset[d] + k] == b->start[b->offset[d] + k]);
                    CHECK(a->end[a->offset[d] + k] == b->end[b->offset[d] + k]);
                }
                CHECK(a->peak[d] == b->peak[d]);
            }
        }
        psched_report_destroy(a);
        psched_report_destroy(b);
        psched_plan_destroy(plain);
        psched_plan_destroy(neutral);
    }
}

/* ---- overlapped pairs ---- */

static void test_overlap_saving_range_is_checked(void)
{
    psched_plan *plan = gen_plan(2, 4, 1, 2, 1);
    CHECK_EQ_INT(psched_plan_set_overlap_saving(plan, 1.5), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "overlap_saving of stage 0 (1.5) must be <= min(t_F, t_B) = 1");
    CHECK_EQ_INT(psched_plan_set_overlap_saving(plan, -0.5), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "must be finite and >= 0");
    CHECK_EQ_INT(psched_plan_set_overlap_saving(plan, NAN), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_plan_set_stage_overlap_saving(plan, 2, 0.5), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "stage (2) must be < stages (2");
    CHECK_OK(psched_plan_set_stage_overlap_saving(plan, 1, 1));
    CHECK_EQ_DBL(psched_plan_stage_overlap_saving(plan, 1), 1);
    CHECK_EQ_DBL(psched_plan_stage_overlap_saving(plan, 0), 0);
    /* costs lowered afterwards: the simulation refuses the plan */
    CHECK_OK(psched_plan_set_stage_cost(plan, 1, 0.5, 2, 1));
    psched_schedule *s;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    psched_report *r = NULL;
    CHECK_EQ_INT(psched_simulate(s, NULL, &r), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "overlap_saving of stage 1 (1) must be <= min(t_F, t_B) = 0.5");
    CHECK(r == NULL);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* One device, m = 2, t_F = t_B = t_W = 1, s = 0.5: 0F0 [0,1]; the pair
 * (0F1 with 0B0, a BW of 2) takes 1 + 2 - 0.5 = 2.5: [1,3.5]; 0B1 [3.5,5.5].
 * A pair of F with W saves nothing: it is not an F&B pair. */
static void test_overlapped_pair_by_hand(void)
{
    psched_plan *plan = ts_plan(1, 2, 1, PSCHED_PLACEMENT_LOOP);
    CHECK_OK(psched_plan_set_overlap_saving(plan, 0.5));
    static const char *const rows[] = {"0F0,0F1;0B0,0B1"};
    psched_schedule *s = ts_build(plan, rows);
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    const double st[] = {0, 1, 1, 3.5}, en[] = {1, 3.5, 3.5, 5.5};
    check_times(r, 0, st, en, 4);
    double busy;
    CHECK_OK(psched_report_device(r, 0, &busy, NULL, NULL));
    CHECK_EQ_DBL(busy, 5.5);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    /* 0F0 [0,1]; 0I0 [1,2]; pair 0F1 + 0W0 = 2: [2,4]; 0I1 [4,5]; 0W1 [5,6] */
    static const char *const fw[] = {"0F0,0I0,0F1;0W0,0I1,0W1"};
    s = ts_build(plan, fw);
    CHECK_OK(psched_simulate(s, NULL, &r));
    CHECK_EQ_DBL(psched_report_makespan(r), 6);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* The DualPipe paper's bubble (DeepSeek-V3 report, table 2; DualPipe
 * README): (PP/2 - 1)(F&B + B - 3W), PP the pipeline's stages (p for
 * DualPipe, 2p for DualPipeV), B a full backward (our t_B + t_W), W the
 * weight part, F&B = F + B - s the overlapped pair. The device that
 * carries the bubble is the last rank r = P - 1 of a half pipeline of P
 * ranks with M micro-batches (P = p, M = m for DualPipeV; P = p/2, M = m/2
 * for DualPipe). Its work: 2M chunk-passes of F + B + W, less s per pair;
 * by the phase counts of dualpipe_phases.c it runs 2(M - 2P + r + 1) - 1
 * pairs in the steady phase (its first step has the V's tip unpaired) and
 * P - r - 1 = 0 after, so 2M - 2P - 1 pairs. Span = work + bubble. With
 * t_F = t_B (the paper's setting, F and B chunks alike):
 *   DualPipeV p = 4, m = 16, unit costs, s = 0.5: work = 96 - 23 * 0.5 =
 *   84.5, bubble = 3 * (2.5 + 2 - 3) = 4.5, span 89; s = 0: 96 + 3 * 2 = 102.
 *   DualPipe p = 4, m = 16 (P = 2, M = 8): work = 48 - 11 * 0.5 = 42.5,
 *   bubble = 1 * 1.5, span 44; s = 0: 48 + 2 = 50. */
static double dualpipe_span(uint32_t P, uint32_t M, uint32_t PP, double f, double b, double w,
                            double s)
{
    double full = b + w, pairs = 2.0 * M - 2.0 * P - 1;
    double work = 2.0 * M * (f + b + w) - pairs * s;
    return work + (PP / 2.0 - 1) * ((f + full - s) + full - 3 * w);
}

static void test_dualpipe_spans_follow_the_paper_bubble(void)
{
    CHECK_EQ_DBL(dualpipe_span(4, 16, 8, 1, 1, 1, 0.5), 89);
    CHECK_EQ_DBL(dualpipe_span(2, 8, 4, 1, 1, 1, 0.5), 44);
    static const struct {
        double f, b, w;
    } costs[] = {{1, 1, 1}, {1, 1, 0.5}, {2, 2, 1}};
    static const double savings[] = {0, 0.25, 0.5, 1};
    static const uint32_t ps[] = {2, 4, 8}, ms_per_p[] = {2, 3, 4};
    for (size_t c = 0; c < 3; c++) {
        for (size_t k = 0; k < 4; k++) {
            for (size_t i = 0; i < 3; i++) {
                for (size_t j = 0; j < 3; j++) {
                    uint32_t p = ps[i], m = ms_per_p[j] * p;
                    psched_plan *plan = gen_plan(p, m, costs[c].f, costs[c].b, costs[c].w);
                    CHECK_OK(psched_plan_set_overlap_saving(plan, savings[k]));
                    psched_report *r = simulate_generated(plan, "dualpipev");
                    if (r)
                        CHECK_EQ_DBL(psched_report_span(r),
                                     dualpipe_span(p, m, 2 * p, costs[c].f, costs[c].b,
                                                   costs[c].w, savings[k]));
                    psched_report_destroy(r);
                    if (p >= 4) {
                        r = simulate_generated(plan, "dualpipe");
                        if (r)
                            CHECK_EQ_DBL(psched_report_span(r),
                                         dualpipe_span(p / 2, m / 2, p, costs[c].f, costs[c].b,
                                                       costs[c].w, savings[k]));
                        psched_report_destroy(r);
                    }
                    psched_plan_destroy(plan);
                }
            }
        }
    }
}

/* The done-when figure: dualpipev p = 8, m = 32, s = 0.5. Work 192 - 47 *
 * 0.5 = 168.5, bubble 7 * 1.5 = 10.5: span 179 (206 without the saving). */
static void test_dualpipev_p8_m32_overlap_half(void)
{
    psched_plan *plan = gen_plan(8, 32, 1, 1, 1);
    psched_report *plain = simulate_generated(plan, "dualpipev");
    CHECK_OK(psched_plan_set_overlap_saving(plan, 0.5));
    psched_report *r = simulate_generated(plan, "dualpipev");
    if (plain && r) {
        CHECK_EQ_DBL(psched_report_span(plain), 206);
        CHECK_EQ_DBL(psched_report_span(r), 179);
    }
    psched_report_destroy(plain);
    psched_report_destroy(r);
    psched_plan_destroy(plan);
}

/* ---- micro-batch weights ---- */

static void test_weight_setter_checks_count_and_sign(void)
{
    psched_plan *plan = gen_plan(2, 3, 1, 1, 1);
    const double two[] = {1, 2}, neg[] = {1, -1, 1}, ok[] = {1, 4, 1};
    CHECK_EQ_INT(psched_plan_set_microbatch_weights(plan, two, 2), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "microbatch weights (2 given) must number microbatches (3)");
    CHECK_EQ_INT(psched_plan_set_microbatch_weights(plan, neg, 3), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "weight of micro-batch 1 (-1) must be finite and > 0");
    CHECK_EQ_INT(psched_plan_set_microbatch_weights(plan, NULL, 3), PSCHED_EINVAL);
    CHECK_OK(psched_plan_set_microbatch_weights(plan, ok, 3));
    CHECK_EQ_DBL(psched_plan_microbatch_weight(plan, 1), 4);
    /* m changed afterwards: the simulation names the mismatch */
    CHECK_OK(psched_plan_set_microbatches(plan, 4));
    psched_schedule *s;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    psched_report *r = NULL;
    CHECK_EQ_INT(psched_simulate(s, NULL, &r), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "microbatch weights (3) must number microbatches (4)");
    psched_schedule_destroy(s);
    CHECK_OK(psched_plan_set_microbatch_weights(plan, NULL, 0));
    CHECK_EQ_DBL(psched_plan_microbatch_weight(plan, 1), 1);
    psched_plan_destroy(plan);
}

/* 1F1B, p = 2, m = 3, unit costs (BW = 2), weights (1, 4, 1): micro-batch 1
 * is a straggler whose F takes 4 and BW 8.
 *   d0: 0F0 [0,1] 0F1 [1,5]
 *   d1: 1F0 [1,2] 1B0 [2,4] 1F1 waits 0F1 -> [5,9] 1B1 [9,17]
 *   d0: 0B0 waits 1B0 (4), free at 5 -> [5,7] 0F2 [7,8] 0B1 waits 1B1 -> [17,25]
 *   d1: 1F2 [17,18] 1B2 [18,20];  d0: 0B2 waits 1B2 (20), free 25 -> [25,27]
 * Makespan 27 (12 = (m + p - 1)(F + B + W) with all weights 1). Memory: d0
 * holds 1 + 4 after 0F1, then 4 after 0B0, 5 after 0F2: peak 5; d1 peaks at
 * 4 when 1F1 runs. */
static void test_straggler_microbatch_1f1b_p2_m3_by_hand(void)
{
    psched_plan *plan = gen_plan(2, 3, 1, 1, 1);
    psched_report *r = simulate_generated(plan, "1f1b");
    if (r)
        CHECK_EQ_DBL(psched_report_makespan(r), 12);
    psched_report_destroy(r);
    const double w[] = {1, 4, 1};
    CHECK_OK(psched_plan_set_microbatch_weights(plan, w, 3));
    psched_schedule *s;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    char *text;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &text, NULL));
    CHECK_STR(text, "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n");
    psched_free(text);
    CHECK_OK(psched_simulate(s, NULL, &r));
    const double s0[] = {0, 1, 5, 7, 17, 25}, e0[] = {1, 5, 7, 8, 25, 27};
    const double s1[] = {1, 2, 5, 9, 17, 18}, e1[] = {2, 4, 9, 17, 18, 20};
    check_times(r, 0, s0, e0, 6);
    check_times(r, 1, s1, e1, 6);
    CHECK_EQ_DBL(psched_report_makespan(r), 27);
    double busy, peak;
    CHECK_OK(psched_report_device(r, 0, &busy, NULL, &peak));
    CHECK_EQ_DBL(busy, 18);
    CHECK_EQ_DBL(peak, 5);
    CHECK_OK(psched_report_device(r, 1, NULL, NULL, &peak));
    CHECK_EQ_DBL(peak, 4);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* A straggler in a longer step (p = 4, m = 8, micro-batch 2 weighs 4): the
 * zb scheduler, which orders by simulated times, does at least as well as
 * the fixed orders 1F1B and ZB-H1 on the weighted step. */
static void test_zb_does_at_least_as_well_as_fixed_orders_with_a_straggler(void)
{
    psched_plan *plan = gen_plan(4, 8, 1, 1, 1);
    const double w[] = {1, 1, 4, 1, 1, 1, 1, 1};
    CHECK_OK(psched_plan_set_microbatch_weights(plan, w, 8));
    psched_report *zb = simulate_generated(plan, "zb");
    psched_report *f1b = simulate_generated(plan, "1f1b");
    psched_report *h1 = simulate_generated(plan, "zb-h1");
    if (zb && f1b && h1) {
        CHECK(psched_report_makespan(zb) <= psched_report_makespan(f1b));
        CHECK(psched_report_makespan(zb) <= psched_report_makespan(h1));
        /* the straggler costs 1F1B more than its own extra work, 3 x 3 */
        CHECK(psched_report_makespan(f1b) > 33 + 9);
    }
    psched_report_destroy(zb);
    psched_report_destroy(f1b);
    psched_report_destroy(h1);
    psched_plan_destroy(plan);
}

/* Two chains, p = 2, v = 1, m = 2: stage 0 (chain 0) on d0, stage 1 (chain
 * 1) on d1, one micro-batch each, numbered 0 in its chain. Weights (1, 3):
 * micro-batch 0 of chain 1 is micro-batch 1 overall and weighs 3, so d1
 * takes 3 * (1 + 2) = 9 and holds 3 units; d0 takes 3. */
static void test_weights_number_microbatches_over_chains(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    CHECK_OK(psched_plan_set_chains(plan, 2));
    const double w[] = {1, 3};
    CHECK_OK(psched_plan_set_microbatch_weights(plan, w, 2));
    static const char *const rows[] = {"0F0,0B0", "1F0,1B0"};
    psched_schedule *s = ts_build(plan, rows);
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    double busy, peak;
    CHECK_OK(psched_report_device(r, 0, &busy, NULL, &peak));
    CHECK_EQ_DBL(busy, 3);
    CHECK_EQ_DBL(peak, 1);
    CHECK_OK(psched_report_device(r, 1, &busy, NULL, &peak));
    CHECK_EQ_DBL(busy, 9);
    CHECK_EQ_DBL(peak, 3);
    CHECK_EQ_DBL(psched_report_makespan(r), 9);
    CHECK_EQ_DBL(psched_report_peak_memory_M(r), 1.5);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ---- communication by bytes and links ---- */

/* GPipe, p = 2, m = 3, unit costs (BW = 2): d0 runs 0F0 [0,1] 0F1 [1,2]
 * 0F2 [2,3] back to back, and their activations queue on d0's link. */
static psched_report *gpipe_p2_m3(psched_plan *plan)
{
    static const char *const rows[] = {"0F0,0F1,0F2,0B0,0B1,0B2", "1F0,1F1,1F2,1B0,1B1,1B2"};
    psched_schedule *s = ts_build(plan, rows);
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(s, NULL, &r));
    psched_schedule_destroy(s);
    return r;
}

/* 4 bytes forward over bandwidth 1, no latency: each activation holds the
 * link 4; they leave at 1, 5, 9 and arrive at 5, 9, 13 (one link, issue
 * order), though the F's end at 1, 2, 3. d1: 1F0 [5,6] 1F1 [9,10] 1F2
 * [13,14] 1B0 [14,16] 1B1 [16,18] 1B2 [18,20]; gradients carry 0 bytes and
 * arrive at once: d0 0B0 [16,18] 0B1 [18,20] 0B2 [20,22]. */
static void test_transfers_queue_on_the_senders_link(void)
{
    psched_plan *plan = ts_plan(2, 3, 1, PSCHED_PLACEMENT_LOOP);
    CHECK_OK(psched_plan_set_comm_bytes(plan, 4, 0));
    CHECK_OK(psched_plan_set_topology(plan, 0, 1, 0, INFINITY, 0));
    psched_report *r = gpipe_p2_m3(plan);
    const double s1[] = {5, 9, 13, 14, 16, 18}, e1[] = {6, 10, 14, 16, 18, 20};
    const double s0[] = {0, 1, 2, 16, 18, 20}, e0[] = {1, 2, 3, 18, 20, 22};
    check_times(r, 0, s0, e0, 6);
    check_times(r, 1, s1, e1, 6);
    CHECK_EQ_DBL(psched_report_makespan(r), 22);
    psched_report_destroy(r);
    /* the Chrome trace shows the queued transfers on device 0's up link */
    static const char *const rows[] = {"0F0,0F1,0F2,0B0,0B1,0B2", "1F0,1F1,1F2,1B0,1B1,1B2"};
    psched_schedule *s = ts_build(plan, rows);
    char *trace = NULL;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CHROME, 0, &trace, NULL));
    CHECK_CONTAINS(trace, "\"tid\": 6, \"args\": {\"name\": \"device 0 link up\"}");
    CHECK_CONTAINS(trace, "{\"name\": \"0F1 -> device 1\", \"cat\": \"TRANSFER\", \"ph\": \"X\", "
                          "\"ts\": 5000, \"dur\": 4000, \"pid\": 0, \"tid\": 6,");
    psched_free(trace);
    /* the SVG draws each transfer as an arrow from the sender's lane edge at
     * its leave time to the receiver's at its arrival: 28 px per unit (the
     * shortest op) from x = 84, lane 0 spans y 44..72 and lane 1 78..106.
     * 0F1 leaves at 5 (x 224) and arrives at 9 (x 336); the gradients (0
     * bytes) leave and arrive when their backward ends. */
    char *picture = NULL;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_SVG, 0, &picture, NULL));
    size_t arrows = 0;
    for (const char *at = picture; (at = strstr(at, "<line class=\"transfer\"")); at++)
        arrows++;
    CHECK_EQ_INT(arrows, 6);
    CHECK_CONTAINS(picture, "marker-end=\"url(#arrow)\" x1=\"224\" y1=\"72\" x2=\"336\" "
                            "y2=\"78\"><title>0F1 -> device 1: leaves 5, arrives 9</title>");
    CHECK_CONTAINS(picture, "<title>1B0 -> device 0: leaves 16, arrives 16</title>");
    CHECK_CONTAINS(picture, ">transfer (leaves its link, arrives)</text>");
    psched_free(picture);
    psched_schedule_destroy(s);
    /* without the link model there is nothing to draw */
    psched_plan *plain = ts_plan(2, 3, 1, PSCHED_PLACEMENT_LOOP);
    s = ts_build(plain, rows);
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_SVG, 0, &picture, NULL));
    CHECK(strstr(picture, "class=\"transfer") == NULL);
    psched_free(picture);
    psched_schedule_destroy(s);
    psched_plan_destroy(plain);
    /* --comm keeps its meaning: 0.25 more on every transfer. Arrivals 5.25,
     * 9.25, 13.25; d1 ends 1B2 at 20.25; d0's B's wait for 16.5, 18.5,
     * 20.5: makespan 22.5. */
    CHECK_OK(psched_plan_set_comm(plan, 0.25));
    r = gpipe_p2_m3(plan);
    CHECK_EQ_DBL(psched_report_makespan(r), 22.5);
    psched_report_destroy(r);
    /* weights scale bytes: (1, 1, 2) makes 0F2 [2,4] and its 8 bytes hold
     * the link from 9 to 17; d1 1F2 [17,19] 1B0 [19,21] 1B1 [21,23] 1B2
     * [23,27]; d0 0B2 [27,31]. */
    CHECK_OK(psched_plan_set_comm(plan, 0));
    const double w[] = {1, 1, 2};
    CHECK_OK(psched_plan_set_microbatch_weights(plan, w, 3));
    r = gpipe_p2_m3(plan);
    CHECK_EQ_DBL(psched_report_makespan(r), 31);
    psched_report_destroy(r);
    psched_plan_destroy(plan);
}

/* One device per node: d0 -> d1 is inter-node, bandwidth 2, latency 0.5.
 * Activations hold the link 2: leave 1, 3, 5, arrive 3.5, 5.5, 7.5. d1:
 * 1F0 [3.5,4.5] 1F1 [5.5,6.5] 1F2 [7.5,8.5] 1B0 [8.5,10.5] 1B1 [10.5,12.5]
 * 1B2 [12.5,14.5]; gradients (0 bytes) still pay the latency: d0 0B0
 * [11,13] 0B1 [13,15] 0B2 [15,17]. Intra-node values (bandwidth 1,
 * latency 9) are not used. */
static void test_inter_node_links_use_their_bandwidth_and_latency(void)
{
    psched_plan *plan = ts_plan(2, 3, 1, PSCHED_PLACEMENT_LOOP);
    CHECK_OK(psched_plan_set_comm_bytes(plan, 4, 0));
    CHECK_OK(psched_plan_set_topology(plan, 1, 1, 9, 2, 0.5));
    psched_report *r = gpipe_p2_m3(plan);
    const double s1[] = {3.5, 5.5, 7.5, 8.5, 10.5, 12.5};
    const double s0[] = {0, 1, 2, 11, 13, 15}, e0[] = {1, 2, 3, 13, 15, 17};
    double st[6];
    CHECK_OK(psched_report_op_times(r, 1, 0, 6, st, NULL));
    for (int i = 0; i < 6; i++)
        CHECK_EQ_DBL(st[i], s1[i]);
    check_times(r, 0, s0, e0, 6);
    CHECK_EQ_DBL(psched_report_makespan(r), 17);
    psched_report_destroy(r);
    /* the same two devices on one node (2 per node): intra link, latency 9
     * and bandwidth 1: arrivals 14, 18, 22 */
    CHECK_OK(psched_plan_set_topology(plan, 2, 1, 9, 2, 0.5));
    r = gpipe_p2_m3(plan);
    CHECK_OK(psched_report_op_times(r, 1, 0, 3, st, NULL));
    CHECK_EQ_DBL(st[0], 14);
    CHECK_EQ_DBL(st[1], 18);
    CHECK_EQ_DBL(st[2], 22);
    psched_report_destroy(r);
    psched_plan_destroy(plan);
}

static void test_link_setters_check_their_values(void)
{
    psched_plan *plan = ts_plan(2, 3, 1, PSCHED_PLACEMENT_LOOP);
    CHECK_EQ_INT(psched_plan_set_comm_bytes(plan, -1, 0), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "comm bytes (forward -1, backward 0) must be finite and >= 0");
    CHECK_EQ_INT(psched_plan_set_topology(plan, 1, 0, 0, 1, 0), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "intra-node bandwidth (0) must be > 0");
    CHECK_EQ_INT(psched_plan_set_topology(plan, 1, 1, 0, 1, -2), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "inter-node latency (-2) must be finite and >= 0");
    CHECK_EQ_INT(psched_plan_set_stage_comm_bytes(plan, 2, 1, 1), PSCHED_EINVAL);
    CHECK_OK(psched_plan_set_stage_comm_bytes(plan, 1, 3, 5));
    double f, b;
    CHECK_OK(psched_plan_stage_comm_bytes(plan, 1, &f, &b));
    CHECK_EQ_DBL(f, 3);
    CHECK_EQ_DBL(b, 5);
    CHECK_OK(psched_plan_stage_comm_bytes(plan, 0, &f, &b));
    CHECK_EQ_DBL(f, 0);
    psched_plan_destroy(plan);
}

int main(void)
{
    RUN(test_defaults_are_the_plain_model);
    RUN(test_neutral_extensions_change_no_time);
    RUN(test_overlap_saving_range_is_checked);
    RUN(test_overlapped_pair_by_hand);
    RUN(test_dualpipe_spans_follow_the_paper_bubble);
    RUN(test_dualpipev_p8_m32_overlap_half);
    RUN(test_weight_setter_checks_count_and_sign);
    RUN(test_straggler_microbatch_1f1b_p2_m3_by_hand);
    RUN(test_weights_number_microbatches_over_chains);
    RUN(test_zb_does_at_least_as_well_as_fixed_orders_with_a_straggler);
    RUN(test_transfers_queue_on_the_senders_link);
    RUN(test_inter_node_links_use_their_bandwidth_and_latency);
    RUN(test_link_setters_check_their_values);
    TEST_MAIN_END();
}
