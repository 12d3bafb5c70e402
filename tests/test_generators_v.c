/* v-zb, dualpipev, dualpipe and chimera: exact orders against the reference
 * frameworks' outputs (reference/README.md, PyTorch's
 * dualpipev_4rank_10mb.csv) and the Chimera paper's figure, hand
 * derivations, closed forms with unit costs, and the structure DualPipe is
 * defined by (half pipelines, mirror). */
#include "internal.h"
#include "pipesched.h"
#include "testutil.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- helpers ---- */

static psched_schedule *generate(const char *name, uint32_t p, uint32_t m)
{
    psched_plan *plan = tu_plan(p, m, 0);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, name, &s));
    psched_plan_destroy(plan);
    return s;
}

/* Status of a generation that must fail; v = 0 keeps the generator's
 * default chunks, PSCHED_PLACEMENT_AUTO its placement. */
static psched_status generate_error(const char *name, uint32_t p, uint32_t m, uint32_t v,
                                    psched_placement placement)
{
    psched_plan *plan = tu_plan(p, m, v);
    psched_schedule *s = NULL;
    CHECK_OK(psched_plan_set_placement(plan, placement));
    psched_status st = psched_generate(plan, name, &s);
    CHECK(s == NULL);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return st;
}

/* Status of the generator's own check on a plan as given (the core resolves
 * and pre-checks placement and chain divisibility before it, so some rules
 * are only reachable this way). */
static psched_status check_error(const char *name, uint32_t p, uint32_t m, uint32_t v,
                                 psched_placement placement)
{
    const psched_generator *g = NULL;
    CHECK_OK(psched_generator_find(name, &g));
    psched_plan *plan = tu_plan(p, m, v);
    CHECK_OK(psched_plan_set_placement(plan, placement));
    psched_status st = (g && g->check) ? g->check(plan) : PSCHED_OK;
    psched_plan_destroy(plan);
    return st;
}

static psched_op *device_ops(const psched_schedule *s, uint32_t d, size_t *n)
{
    *n = psched_schedule_op_count(s, d);
    psched_op *ops = calloc(*n ? *n : 1, sizeof *ops);
    CHECK(ops != NULL);
    if (ops && *n)
        CHECK_OK(psched_schedule_ops(s, d, 0, *n, ops, sizeof *ops));
    return ops;
}

/* One action in PyTorch text: our B is "I", our BW is "B". */
static int action_text(const psched_op *op, char *buf, size_t cap)
{
    static const char letter[] = {'F', 'I', 'W', 'B'};
    return snprintf(buf, cap, "%u%c%u", (unsigned)op->stage, letter[op->kind & 3],
                    (unsigned)op->microbatch);
}

/* A device's row as PyTorch's compute-only CSV writes it. */
static void row_text(const psched_schedule *s, uint32_t d, char *buf, size_t cap)
{
    size_t n, len = 0;
    psched_op *ops = device_ops(s, d, &n);
    buf[0] = '\0';
    for (size_t i = 0; ops && i < n && len + 64 < cap; i++) {
        char a[32], b[32];
        if (len)
            buf[len++] = ',';
        action_text(&ops[i], a, sizeof a);
        if ((ops[i].flags & PSCHED_OP_OVERLAP_NEXT) && i + 1 < n) {
            action_text(&ops[++i], b, sizeof b);
            len += (size_t)snprintf(buf + len, cap - len, "(%s;%s)OVERLAP_F_B", a, b);
        } else {
            len += (size_t)snprintf(buf + len, cap - len, "%s", a);
        }
    }
    free(ops);
}

static void check_rows(const char *name, uint32_t p, uint32_t m, const char *const *rows)
{
    psched_schedule *s = generate(name, p, m);
    if (!s)
        return;
    CHECK_EQ_INT(psched_schedule_devices(s), p);
    CHECK_OK(psched_validate(s));
    for (uint32_t d = 0; d < p; d++) {
        char buf[4096];
        row_text(s, d, buf, sizeof buf);
        CHECK_STR(buf, rows[d]);
    }
    psched_schedule_destroy(s);
}

/* ---- exact orders ---- */

/* reference/README.md, ZB-V (PyTorch ScheduleZBVZeroBubble), p=2, m=4 */
static void test_v_zb_matches_pytorch_p2_m4(void)
{
    static const char *const rows[] = {
        "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,"
        "0I2,0W2,0I3,0W3",
        "1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1F3,1I1,1W1,2F3,2I2,2W2,1I2,2I3,"
        "1I3,1W2,2W3,1W3",
    };
    check_rows("v-zb", 2, 4, rows);
}

/* m < 2p-1: the order built for m' = 3 with micro-batches 1 and 2 left out
 * (derived by hand from the rules of the issue). */
static void test_v_zb_single_microbatch_keeps_the_m_prime_order(void)
{
    static const char *const rows[] = {
        "0F0,3F0,3I0,3W0,0I0,0W0",
        "1F0,2F0,2I0,2W0,1I0,1W0",
    };
    check_rows("v-zb", 2, 1, rows);
}

/* reference/README.md, DualPipeV, p=2, m=4 */
static void test_dualpipev_matches_pytorch_p2_m4(void)
{
    static const char *const rows[] = {
        "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,"
        "(3F3;0B1)OVERLAP_F_B,3B3,0I2,0W2,0I3,0W3",
        "1F0,2F0,1F1,2F1,1F2,2B0,(2F2;1B0)OVERLAP_F_B,(1F3;2B1)OVERLAP_F_B,"
        "(2F3;1B1)OVERLAP_F_B,2B2,1B2,2I3,1I3,2W3,1W3",
    };
    check_rows("dualpipev", 2, 4, rows);
}

/* reference/pytorch/dualpipev_4rank_10mb.csv (PyTorch test artifact) */
static void test_dualpipev_matches_pytorch_csv_p4_m10(void)
{
    static const char *const rows[] = {
        "0F0,0F1,0F2,0F3,0F4,0F5,0F6,7F0,7I0,7W0,7F1,7I1,7W1,7F2,7I2,7W2,7F3,"
        "(0F7;7B3)OVERLAP_F_B,(7F4;0B0)OVERLAP_F_B,(0F8;7B4)OVERLAP_F_B,(7F5;0B1)OVERLAP_F_B,"
        "(0F9;7B5)OVERLAP_F_B,(7F6;0B2)OVERLAP_F_B,7B6,(7F7;0B3)OVERLAP_F_B,7B7,"
        "(7F8;0B4)OVERLAP_F_B,7B8,(7F9;0B5)OVERLAP_F_B,7B9,0I6,0W6,0I7,0W7,0I8,0W8,0I9,0W9",
        "1F0,1F1,1F2,1F3,1F4,6F0,1F5,6F1,6I0,6W0,6F2,6I1,6W1,6F3,(1F6;6B2)OVERLAP_F_B,"
        "(6F4;1B0)OVERLAP_F_B,(1F7;6B3)OVERLAP_F_B,(6F5;1B1)OVERLAP_F_B,(1F8;6B4)OVERLAP_F_B,"
        "(6F6;1B2)OVERLAP_F_B,(1F9;6B5)OVERLAP_F_B,(6F7;1B3)OVERLAP_F_B,6B6,"
        "(6F8;1B4)OVERLAP_F_B,6B7,(6F9;1B5)OVERLAP_F_B,6B8,1B6,6I9,1I7,6W9,1I8,1W7,1I9,1W8,1W9",
        "2F0,2F1,2F2,5F0,2F3,5F1,2F4,5F2,5I0,5W0,5F3,(2F5;5B1)OVERLAP_F_B,(5F4;2B0)OVERLAP_F_B,"
        "(2F6;5B2)OVERLAP_F_B,(5F5;2B1)OVERLAP_F_B,(2F7;5B3)OVERLAP_F_B,(5F6;2B2)OVERLAP_F_B,"
        "(2F8;5B4)OVERLAP_F_B,(5F7;2B3)OVERLAP_F_B,(2F9;5B5)OVERLAP_F_B,(5F8;2B4)OVERLAP_F_B,"
        "5B6,(5F9;2B5)OVERLAP_F_B,5B7,2B6,5B8,2I7,5I9,2I8,2W7,2I9,5W9,2W8,2W9",
        "3F0,4F0,3F1,4F1,3F2,4F2,3F3,4F3,3F4,4B0,(4F4;3B0)OVERLAP_F_B,(3F5;4B1)OVERLAP_F_B,"
        "(4F5;3B1)OVERLAP_F_B,(3F6;4B2)OVERLAP_F_B,(4F6;3B2)OVERLAP_F_B,(3F7;4B3)OVERLAP_F_B,"
        "(4F7;3B3)OVERLAP_F_B,(3F8;4B4)OVERLAP_F_B,(4F8;3B4)OVERLAP_F_B,(3F9;4B5)OVERLAP_F_B,"
        "(4F9;3B5)OVERLAP_F_B,4B6,3B6,4B7,3B7,4I8,3I8,4I9,3I9,4W8,3W8,4W9,3W9",
    };
    check_rows("dualpipev", 4, 10, rows);
}

/* p=2, m=4 by hand from dualpipe.py: each half is one device with M = 2;
 * device 0 leads with chain-0 stage 0 and also runs chain-1 stage 3, device
 * 1 leads with chain-1 stage 2 and also runs chain-0 stage 1. */
static void test_dualpipe_matches_deepseek_p2_m4(void)
{
    static const char *const rows[] = {
        "0F0,3F0,0F1,3B0,(3F1;0B0)OVERLAP_F_B,3B1,0I1,0W1",
        "2F0,1F0,2F1,1B0,(1F1;2B0)OVERLAP_F_B,1B1,2I1,2W1",
    };
    check_rows("dualpipe", 2, 4, rows);
}

/* ---- closed forms with unit costs ---- */


static double max_peak(const psched_report *r, uint32_t p)
{
    double peak = 0;
    for (uint32_t d = 0; d < p; d++) {
        double pk = 0;
        CHECK_OK(psched_report_device(r, d, NULL, NULL, &pk));
        if (pk > peak)
            peak = pk;
    }
    return peak;
}

/* ZB-V paper: with t_F = t_B = t_W per chunk and m >= 2p-1 no device idles
 * between its first and last op (span = 6m), holding at most 2p chunk
 * activations (M). */
static void test_v_zb_zero_bubble_and_peak_2p_for_m_at_least_2p_minus_1(void)
{
    for (uint32_t p = 2; p <= 6; p++) {
        uint32_t ms[] = {2 * p - 1, 2 * p, 3 * p, 4 * p + 1};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            uint32_t m = ms[i];
            psched_schedule *s = generate("v-zb", p, m);
            psched_report *r = NULL;
            if (!s)
                continue;
            CHECK_OK(psched_simulate(s, NULL, &r));
            if (r) {
                CHECK_EQ_DBL(psched_report_span(r), 6.0 * m);
                CHECK_EQ_DBL(max_peak(r, p), 2.0 * p);
                CHECK_EQ_DBL(psched_report_peak_memory_M(r), 1.0);
            }
            psched_report_destroy(r);
            psched_schedule_destroy(s);
        }
    }
}

/* reference/README.md, V-ZB column of the published spans (zero-bubble
 * repo, costs per chunk, comm 0). */
static void test_v_zb_span_equals_published_table(void)
{
    static const struct {
        uint32_t p, m;
        double f, b, w, span;
    } rows[] = {{4, 8, 1, 1, 1, 48}, {8, 16, 1, 1, 1, 96}, {4, 8, 3, 2, 1, 107}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        psched_plan *plan = tu_plan(rows[i].p, rows[i].m, 0);
        psched_schedule *s = NULL;
        psched_report *r = NULL;
        CHECK_OK(psched_plan_set_cost(plan, rows[i].f, rows[i].b, rows[i].w));
        CHECK_OK(psched_generate(plan, "v-zb", &s));
        if (s)
            CHECK_OK(psched_simulate(s, NULL, &r));
        if (r)
            CHECK_EQ_DBL(psched_report_span(r), rows[i].span);
        psched_report_destroy(r);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
}

/* ---- validity over a grid ---- */

static void test_v_zb_validates_for_every_m(void)
{
    for (uint32_t p = 1; p <= 6; p++)
        for (uint32_t m = 1; m <= 4 * p; m++) {
            psched_schedule *s = generate("v-zb", p, m);
            if (!s)
                continue;
            CHECK_OK(psched_validate(s));
            for (uint32_t d = 0; d < p; d++)
                CHECK_EQ_INT(psched_schedule_op_count(s, d), 6 * m);
            psched_schedule_destroy(s);
        }
}

static void test_dualpipev_validates_for_m_at_least_2p(void)
{
    for (uint32_t p = 1; p <= 8; p++)
        for (uint32_t m = 2 * p; m <= 4 * p + 1; m++) {
            psched_schedule *s = generate("dualpipev", p, m);
            if (!s)
                continue;
            CHECK_OK(psched_validate(s));
            psched_schedule_destroy(s);
        }
}

static void test_dualpipe_validates_for_even_p_and_m(void)
{
    for (uint32_t p = 2; p <= 8; p += 2)
        for (uint32_t m = 2 * p; m <= 4 * p; m += 2) {
            psched_schedule *s = generate("dualpipe", p, m);
            if (!s)
                continue;
            CHECK_EQ_INT(psched_plan_chains(psched_schedule_plan(s)), 2);
            CHECK_OK(psched_validate(s));
            psched_schedule_destroy(s);
        }
}

/* ---- DualPipe's defining structure ---- */

static bool same_op(const psched_op *a, const psched_op *b, uint32_t b_stage)
{
    return a->kind == b->kind && a->microbatch == b->microbatch && a->flags == b->flags &&
           a->stage == b_stage;
}

/* Device p-1-d runs device d's order with the chains swapped: stage s of one
 * chain becomes stage (s + p) mod 2p of the other. */
static void test_dualpipe_second_half_mirrors_the_first(void)
{
    for (uint32_t p = 2; p <= 8; p += 2) {
        uint32_t m = 3 * p - (3 * p) % 2;
        psched_schedule *s = generate("dualpipe", p, m);
        if (!s)
            continue;
        for (uint32_t d = 0; d < p / 2; d++) {
            size_t n, nm;
            psched_op *a = device_ops(s, d, &n), *b = device_ops(s, p - 1 - d, &nm);
            CHECK_EQ_INT(n, nm);
            for (size_t i = 0; a && b && i < n && i < nm; i++)
                CHECK(same_op(b + i, a + i, (a[i].stage + p) % (2 * p)));
            free(a);
            free(b);
        }
        psched_schedule_destroy(s);
    }
}

/* Device d < p/2 runs DualPipeV's device d on p/2 devices with m/2
 * micro-batches: its chunk-0 stage becomes d, its chunk-1 stage 2p-1-d. */
static void test_dualpipe_first_half_is_dualpipev_on_half_the_devices(void)
{
    for (uint32_t p = 2; p <= 8; p += 2) {
        uint32_t h = p / 2, m = 2 * p + 2;
        psched_schedule *dp = generate("dualpipe", p, m);
        psched_schedule *dv = generate("dualpipev", h, m / 2);
        for (uint32_t d = 0; dp && dv && d < h; d++) {
            size_t n, nv;
            psched_op *a = device_ops(dp, d, &n), *v = device_ops(dv, d, &nv);
            CHECK_EQ_INT(n, nv);
            for (size_t i = 0; a && v && i < n && i < nv; i++) {
                uint32_t stage = v[i].stage == d ? d : 2 * p - 1 - d;
                CHECK(same_op(a + i, v + i, stage));
            }
            free(a);
            free(v);
        }
        psched_schedule_destroy(dp);
        psched_schedule_destroy(dv);
    }
}

/* ---- Chimera (Li & Hoefler, SC'21, arXiv 2107.06925) ---- */

/* The paper's figure 3, p = D = 4 workers, N = 4 micro-batches: the down
 * pipeline (stage s on P_s) runs micro-batches 0 and 1, the up pipeline
 * (stage s on P_{3-s}) runs 2 and 3, each 1F1B in equal time slots, and the
 * two merge without conflict. Transcribed slot by slot (' marks a backward,
 * _ an empty slot); the same order is what the authors' runtime loop runs
 * (Shigangli/Chimera, main_with_runtime.py, --chimera: per device, a
 * forwards of its leading pipeline, b (other, lead) forward pairs, a
 * (forward, backward) pairs of the other, b backward pairs, a backwards):
 *
 *   slot  0  1  2  3  4  5  6  7  8  9
 *   P0    0  1  _  2  2' 3  3' 0' _  1'
 *   P1    _  0  2  1  3  2' 0' 3' 1' _
 *   P2    _  2  0  3  1  0' 2' 1' 3' _
 *   P3    2  3  _  0  0' 1  1' 2' _  3'
 *
 * In pipesched the up pipeline is chain 1 (stages 4..7, stage 4+s on device
 * 3-s) with its micro-batches numbered from 0: the paper's 2 and 3 are
 * chain 1's 0 and 1. Backwards are full (PyTorch "B"). */
static const char *const chimera_figure_rows[] = {
    "0F0,0F1,7F0,7B0,7F1,7B1,0B0,0B1",
    "1F0,6F0,1F1,6F1,6B0,1B0,6B1,1B1",
    "5F0,2F0,5F1,2F1,2B0,5B0,2B1,5B1",
    "4F0,4F1,3F0,3B0,3F1,3B1,4B0,4B1",
};
/* The slot of each op of the rows above, read off the figure. */
static const int chimera_figure_slots[4][8] = {
    {0, 1, 3, 4, 5, 6, 7, 9},
    {1, 2, 3, 4, 5, 6, 7, 8},
    {1, 2, 3, 4, 5, 6, 7, 8},
    {0, 1, 3, 4, 5, 6, 7, 9},
};

static void test_chimera_matches_the_paper_figure_p4_m4(void)
{
    check_rows("chimera", 4, 4, chimera_figure_rows);
}

/* Chimera plan with a forward and a full backward of one slot each (the
 * paper's equal-slot figures): t_F = 2, t_B = t_W = 1, so a slot is 2. */
static psched_schedule *chimera_equal_slots(uint32_t p, uint32_t m)
{
    psched_plan *plan = tu_plan(p, m, 0);
    psched_schedule *s = NULL;
    CHECK_OK(psched_plan_set_cost(plan, 2, 1, 1));
    CHECK_OK(psched_generate(plan, "chimera", &s));
    psched_plan_destroy(plan);
    return s;
}

/* Simulated, every op starts in the figure's slot: the order runs as drawn. */
static void test_chimera_runs_in_the_figure_slots(void)
{
    psched_schedule *s = chimera_equal_slots(4, 4);
    psched_report *r = NULL;
    if (s)
        CHECK_OK(psched_simulate(s, NULL, &r));
    for (uint32_t d = 0; r && d < 4; d++) {
        double start[8];
        CHECK_OK(psched_report_op_times(r, d, 0, 8, start, NULL));
        for (int i = 0; i < 8; i++)
            CHECK_EQ_DBL(start[i], 2.0 * chimera_figure_slots[d][i]);
    }
    psched_report_destroy(r);
    psched_schedule_destroy(s);
}

/* The paper's bubble (§3.2, table 2): with equal forward and backward slots
 * each worker idles D - 2 slots (D/2 - 1 in the forward and in the backward
 * passes), bubble ratio (D-2)/(2N+D-2), N micro-batches per worker; every
 * device runs all m micro-batches (m/2 of each pipeline), so N = m and the
 * step is 2m + p - 2 slots, for the basic unit m = p and for units
 * concatenated (m = kp). */
static void test_chimera_bubble_is_p_minus_2_slots(void)
{
    for (uint32_t p = 2; p <= 8; p += 2)
        for (uint32_t k = 1; k <= 3; k++) {
            uint32_t m = k * p;
            psched_schedule *s = chimera_equal_slots(p, m);
            psched_report *r = NULL;
            if (s)
                CHECK_OK(psched_simulate(s, NULL, &r));
            if (r) {
                CHECK_EQ_DBL(psched_report_makespan(r), 2.0 * (2 * m + p - 2));
                CHECK_EQ_DBL(psched_report_span(r), 2.0 * (2 * m + p - 2));
                for (uint32_t d = 0; d < p; d++) {
                    double busy = 0, idle = 0;
                    CHECK_OK(psched_report_device(r, d, &busy, &idle, NULL));
                    CHECK_EQ_DBL(busy, 2.0 * 2 * m);
                    CHECK_EQ_DBL(idle, 2.0 * (p - 2));
                }
            }
            psched_report_destroy(r);
            psched_schedule_destroy(s);
        }
}

/* The paper's activation memory (table 2): between (D/2 + 1) and D
 * micro-batches' stage activations per worker. By hand from the unit: a
 * device a steps from the middle (a = p/2 - d on the first half) holds its
 * a + 2b lead/other forwards, then one more before the first backward:
 * p/2 + 1 + min(d, p-1-d), p/2 + 1 at the ends and p in the middle; the
 * concatenated units keep it (each next forward follows a backward). */
static void test_chimera_memory_is_the_papers_range(void)
{
    for (uint32_t p = 2; p <= 8; p += 2)
        for (uint32_t k = 1; k <= 3; k++) {
            psched_schedule *s = generate("chimera", p, k * p);
            psched_report *r = NULL;
            if (s)
                CHECK_OK(psched_simulate(s, NULL, &r));
            for (uint32_t d = 0; r && d < p; d++) {
                double peak = 0;
                uint32_t edge = d < p - 1 - d ? d : p - 1 - d;
                CHECK_OK(psched_report_device(r, d, NULL, NULL, &peak));
                CHECK_EQ_DBL(peak, p / 2 + 1 + edge);
            }
            if (r)
                CHECK_EQ_DBL(max_peak(r, p), p);
            psched_report_destroy(r);
            psched_schedule_destroy(s);
        }
}

static void test_chimera_validates_for_even_p_and_m_a_multiple_of_p(void)
{
    for (uint32_t p = 2; p <= 10; p += 2)
        for (uint32_t m = p; m <= 5 * p; m += p) {
            psched_schedule *s = generate("chimera", p, m);
            if (!s)
                continue;
            CHECK_EQ_INT(psched_plan_chains(psched_schedule_plan(s)), 2);
            CHECK_OK(psched_validate(s));
            for (uint32_t d = 0; d < p; d++)
                CHECK_EQ_INT(psched_schedule_op_count(s, d), 2 * m);
            psched_schedule_destroy(s);
        }
}

static void test_chimera_rejects_odd_devices_and_partial_units(void)
{
    CHECK_EQ_INT(generate_error("chimera", 3, 6, 0, PSCHED_PLACEMENT_AUTO), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "devices (3) must be even for chimera (the two pipelines "
                                   "merge without conflict only for an even depth)");
    CHECK_EQ_INT(generate_error("chimera", 4, 6, 0, PSCHED_PLACEMENT_AUTO), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "microbatches (6) must be a multiple of devices (4) for "
                                   "chimera (basic units of p micro-batches, p/2 per direction)");
    CHECK_EQ_INT(check_error("chimera", 4, 2, 2, PSCHED_PLACEMENT_VSHAPE), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "microbatches (2) must be a multiple of devices (4)");
}

/* ---- plan checks ---- */

static void test_dualpipev_rejects_m_below_2p(void)
{
    CHECK_EQ_INT(generate_error("dualpipev", 3, 5, 0, PSCHED_PLACEMENT_AUTO), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "microbatches (5) must be >= 2*devices (6) for dualpipev");
}

static void test_dualpipe_rejects_odd_devices_and_microbatches(void)
{
    CHECK_EQ_INT(generate_error("dualpipe", 3, 12, 0, PSCHED_PLACEMENT_AUTO), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "devices (3) must be even for dualpipe");
    CHECK_EQ_INT(generate_error("dualpipe", 4, 6, 0, PSCHED_PLACEMENT_AUTO), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "microbatches (6) must be >= 2*devices (8) for dualpipe");
    CHECK_EQ_INT(generate_error("dualpipe", 4, 9, 0, PSCHED_PLACEMENT_AUTO), PSCHED_EINVAL);
    CHECK_EQ_INT(check_error("dualpipe", 4, 9, 2, PSCHED_PLACEMENT_VSHAPE), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(),
              "microbatches (9) must be even for dualpipe (m/2 per direction)");
}

static void test_v_generators_reject_chunks_other_than_2(void)
{
    static const char *const names[] = {"v-zb", "dualpipev", "dualpipe", "chimera"};
    for (size_t i = 0; i < 4; i++) {
        char want[64];
        CHECK_EQ_INT(generate_error(names[i], 2, 4, 3, PSCHED_PLACEMENT_AUTO), PSCHED_EINVAL);
        CHECK_EQ_INT(check_error(names[i], 2, 4, 3, PSCHED_PLACEMENT_VSHAPE), PSCHED_EINVAL);
        snprintf(want, sizeof want, "chunks (3) must be 2 for %s", names[i]);
        CHECK_STR(psched_last_error(), want);
    }
}

static void test_v_generators_reject_loop_placement(void)
{
    static const char *const names[] = {"v-zb", "dualpipev", "dualpipe", "chimera"};
    for (size_t i = 0; i < 4; i++) {
        CHECK_EQ_INT(generate_error(names[i], 2, 4, 2, PSCHED_PLACEMENT_LOOP), PSCHED_EINVAL);
        CHECK_EQ_INT(check_error(names[i], 2, 4, 2, PSCHED_PLACEMENT_LOOP), PSCHED_EINVAL);
        CHECK_CONTAINS(psched_last_error(), "placement must be vshape");
        CHECK_CONTAINS(psched_last_error(), names[i]);
    }
}

/* ---- allocation failure ---- */

/* Every allocation of a generation may fail: the result is ENOMEM and no
 * schedule, until enough allocations succeed (the W queue of the DualPipe
 * phases is one of them). */
static void test_v_generators_report_enomem_on_every_failed_allocation(void)
{
    static const char *const names[] = {"v-zb", "dualpipev", "dualpipe", "chimera"};
    psched_generator_count(); /* register the built-ins before counting */
    for (size_t i = 0; i < 4; i++) {
        psched_plan *plan = tu_plan(4, 8, 0);
        psched_status st = PSCHED_ENOMEM;
        for (long n = 0; n < 1000 && st == PSCHED_ENOMEM; n++) {
            psched_schedule *s = NULL;
            psched__alloc_fail_after(n);
            st = psched_generate(plan, names[i], &s);
            psched__alloc_fail_after(-1);
            CHECK(st == PSCHED_OK || st == PSCHED_ENOMEM);
            CHECK((st == PSCHED_OK) == (s != NULL));
            psched_schedule_destroy(s);
        }
        CHECK_OK(st);
        psched_plan_destroy(plan);
    }
}

int main(void)
{
    RUN(test_v_zb_matches_pytorch_p2_m4);
    RUN(test_v_zb_single_microbatch_keeps_the_m_prime_order);
    RUN(test_dualpipev_matches_pytorch_p2_m4);
    RUN(test_dualpipev_matches_pytorch_csv_p4_m10);
    RUN(test_dualpipe_matches_deepseek_p2_m4);
    RUN(test_v_zb_zero_bubble_and_peak_2p_for_m_at_least_2p_minus_1);
    RUN(test_v_zb_span_equals_published_table);
    RUN(test_v_zb_validates_for_every_m);
    RUN(test_dualpipev_validates_for_m_at_least_2p);
    RUN(test_dualpipe_validates_for_even_p_and_m);
    RUN(test_dualpipe_second_half_mirrors_the_first);
    RUN(test_dualpipe_first_half_is_dualpipev_on_half_the_devices);
    RUN(test_chimera_matches_the_paper_figure_p4_m4);
    RUN(test_chimera_runs_in_the_figure_slots);
    RUN(test_chimera_bubble_is_p_minus_2_slots);
    RUN(test_chimera_memory_is_the_papers_range);
    RUN(test_chimera_validates_for_even_p_and_m_a_multiple_of_p);
    RUN(test_chimera_rejects_odd_devices_and_partial_units);
    RUN(test_dualpipev_rejects_m_below_2p);
    RUN(test_dualpipe_rejects_odd_devices_and_microbatches);
    RUN(test_v_generators_reject_chunks_other_than_2);
    RUN(test_v_generators_reject_loop_placement);
    RUN(test_v_generators_report_enomem_on_every_failed_allocation);
    TEST_MAIN_END();
}
