/* zb (greedy zero-bubble scheduler), v-min and v-half: spans against the
 * published figures of reference/README.md, the memory limit, closed forms
 * with unit costs (ZB-H1's span, zero bubble, the V-Min/V-Half peak
 * formulas) and hand-derived orders. Everything is measured with the core
 * simulator. */
#include "pipesched.h"
#include "testutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- helpers ---- */

typedef struct shape {
    uint32_t p, m;
    double f, b, w, comm;
} shape;

static psched_plan *make_plan(shape s)
{
    psched_plan *plan = tu_plan(s.p, s.m, 0);
    CHECK_OK(psched_plan_set_cost(plan, s.f, s.b, s.w));
    CHECK_OK(psched_plan_set_comm(plan, s.comm));
    return plan;
}

static shape unit(uint32_t p, uint32_t m)
{
    shape s = {p, m, 1, 1, 1, 0};
    return s;
}

/* Generates `name` for `plan`, simulates it and returns its span and the
 * highest per-device peak memory; NAN on failure. */
static double measure(const psched_plan *plan, const char *name, double *peak)
{
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    double span = NAN;
    *peak = NAN;
    CHECK_OK(psched_generate(plan, name, &s));
    if (s)
        CHECK_OK(psched_simulate(s, NULL, &r));
    if (r) {
        span = psched_report_span(r);
        *peak = 0;
        for (uint32_t d = 0; d < psched_report_devices(r); d++) {
            double pk = 0;
            CHECK_OK(psched_report_device(r, d, NULL, NULL, &pk));
            *peak = fmax(*peak, pk);
        }
    }
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    return span;
}

static double measure_shape(shape sh, double limit, const char *name, double *peak)
{
    psched_plan *plan = make_plan(sh);
    if (isfinite(limit))
        CHECK_OK(psched_plan_set_memory_limit(plan, limit));
    double span = measure(plan, name, peak);
    psched_plan_destroy(plan);
    return span;
}

/* The generation must fail; returns its status. */
static psched_status generate_status(const psched_plan *plan, const char *name)
{
    psched_schedule *s = NULL;
    psched_status st = psched_generate(plan, name, &s);
    CHECK(s == NULL);
    psched_schedule_destroy(s);
    return st;
}

/* Device 0's order in PyTorch text for a one-device schedule. */
static void check_one_device_order(const char *name, const char *want)
{
    psched_plan *plan = make_plan(unit(1, 1));
    psched_schedule *s = NULL;
    char *csv = NULL;
    CHECK_OK(psched_generate(plan, name, &s));
    if (s)
        CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &csv, NULL));
    CHECK_STR(csv, want);
    psched_free(csv);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ---- zb ---- */

/* reference/README.md, "Published figures": span of the zero-bubble repo's
 * scheduler with memory limit p and 2p (deltas F=+1, B=0, W=-1). */
static void test_zb_meets_published_spans_at_limit_p_and_2p(void)
{
    static const struct {
        shape s;
        double at_p, at_2p;
    } rows[] = {
        {{4, 8, 1, 1, 1, 0}, 27, 24},
        {{8, 16, 1, 1, 1, 0}, 55, 48},
        {{4, 8, 3, 2, 1, 1}, 74, 62},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        double peak;
        double limit = rows[i].s.p;
        double span = measure_shape(rows[i].s, limit, "zb", &peak);
        CHECK(span <= rows[i].at_p);
        CHECK(peak <= limit);
        limit = 2.0 * rows[i].s.p;
        span = measure_shape(rows[i].s, limit, "zb", &peak);
        CHECK(span <= rows[i].at_2p);
        CHECK(peak <= limit);
    }
}

/* ZB-H1: with 1F1B's memory (p) and unit costs the span is
 * m(F+B+W) + (p-1)(F+B-W) = 3m + p - 1 for m >= p. */
static void test_zb_limit_p_unit_costs_has_zb_h1_span(void)
{
    static const uint32_t cases[][2] = {{1, 3}, {2, 2}, {3, 7}, {4, 8}, {4, 12}, {6, 6}, {8, 16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint32_t p = cases[i][0], m = cases[i][1];
        double peak;
        double span = measure_shape(unit(p, m), p, "zb", &peak);
        CHECK_EQ_DBL(span, 3.0 * m + p - 1);
        CHECK(peak <= p);
    }
}

/* Without a limit the busy time m(F+B+W) of every device is reachable for
 * m >= 2p-1 (ZB-H2's zero bubble). */
static void test_zb_unlimited_memory_has_zero_bubble_for_m_at_least_2p_minus_1(void)
{
    static const uint32_t cases[][2] = {{2, 3}, {4, 7}, {4, 8}, {5, 12}, {8, 15}, {8, 32}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double peak;
        double span = measure_shape(unit(cases[i][0], cases[i][1]), INFINITY, "zb", &peak);
        CHECK_EQ_DBL(span, 3.0 * cases[i][1]);
    }
}

/* Whatever the costs, comm and limit, the schedule stays within the limit. */
static void test_zb_never_exceeds_the_memory_limit(void)
{
    for (uint32_t p = 1; p <= 6; p++)
        for (uint32_t m = 1; m <= 3 * p; m++) {
            const double limits[] = {1, 2, p, 2.0 * p};
            for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
                shape sh = {p, m, 3, 2, 1, 1};
                double peak;
                (void)measure_shape(sh, limits[k], "zb", &peak);
                CHECK(peak <= limits[k]);
            }
        }
}

/* Non-uniform memory deltas: each stage's own deltas are respected. */
static void test_zb_respects_per_stage_memory_deltas(void)
{
    psched_plan *plan = make_plan((shape){4, 8, 1, 1, 1, 0});
    CHECK_OK(psched_plan_set_stage_mem(plan, 3, 2, 0, -2));
    CHECK_OK(psched_plan_set_memory_limit(plan, 4));
    double peak;
    (void)measure(plan, "zb", &peak);
    CHECK(peak <= 4);
    psched_plan_destroy(plan);
}

/* The smallest feasible peak runs one micro-batch at a time: F then B, so
 * max(mem_F, mem_F + mem_B) with the default deltas 1; with (2, 1, -3) on
 * every stage it is 3. */
static void test_zb_limit_below_smallest_peak_is_infeasible(void)
{
    psched_plan *plan = make_plan(unit(4, 8));
    CHECK_OK(psched_plan_set_memory_limit(plan, 0.5));
    CHECK_EQ_INT(generate_status(plan, "zb"), PSCHED_EINFEASIBLE);
    CHECK_CONTAINS(psched_last_error(), "smallest feasible peak (1,");
    CHECK_CONTAINS(psched_last_error(), "memory limit (0.5)");

    CHECK_OK(psched_plan_set_mem(plan, 2, 1, -3));
    CHECK_OK(psched_plan_set_memory_limit(plan, 2.5));
    CHECK_EQ_INT(generate_status(plan, "zb"), PSCHED_EINFEASIBLE);
    CHECK_CONTAINS(psched_last_error(), "smallest feasible peak (3,");

    /* At exactly the minimum it is feasible and keeps it. */
    CHECK_OK(psched_plan_set_memory_limit(plan, 3));
    double peak;
    (void)measure(plan, "zb", &peak);
    CHECK_EQ_DBL(peak, 3);
    psched_plan_destroy(plan);
}

/* A last stage 3x slower (a large vocabulary head): zb beats 1f1b and
 * reaches the bound set by that stage's own work, m * (3+3+3). */
static void test_zb_beats_1f1b_with_slow_last_stage(void)
{
    static const uint32_t cases[][2] = {{4, 8}, {4, 16}, {8, 16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint32_t p = cases[i][0], m = cases[i][1];
        psched_plan *plan = make_plan(unit(p, m));
        CHECK_OK(psched_plan_set_chunks(plan, 1));
        CHECK_OK(psched_plan_set_stage_cost(plan, p - 1, 3, 3, 3));
        double peak;
        double zb = measure(plan, "zb", &peak);
        double one_f_one_b = measure(plan, "1f1b", &peak);
        CHECK(zb < one_f_one_b);
        CHECK_EQ_DBL(zb, 9.0 * m);
        psched_plan_destroy(plan);
    }
}

/* zb-h1 and zb-h2 are among zb's candidates: within their memory, zb is
 * never slower, whatever the per-stage costs. */
static void test_zb_never_slower_than_zb_h1_and_zb_h2_within_their_memory(void)
{
    static const double profiles[][4][3] = {
        {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {3, 3, 3}},
        {{3, 2, 1}, {1, 1, 1}, {1, 2, 1}, {2, 1, 2}},
        {{1, 2, 1}, {2, 4, 2}, {1, 2, 1}, {2, 4, 2}},
    };
    for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++)
        for (uint32_t m = 4; m <= 12; m += 4) {
            psched_plan *plan = make_plan((shape){4, m, 1, 1, 1, 1});
            for (uint32_t st = 0; st < 4; st++)
                CHECK_OK(psched_plan_set_stage_cost(plan, st, profiles[i][st][0],
                                                    profiles[i][st][1], profiles[i][st][2]));
            static const char *const seeds[] = {"zb-h1", "zb-h2"};
            for (size_t k = 0; k < 2; k++) {
                double peak, zb_peak;
                double seed = measure(plan, seeds[k], &peak);
                CHECK_OK(psched_plan_set_memory_limit(plan, peak));
                CHECK(measure(plan, "zb", &zb_peak) <= seed);
                CHECK(zb_peak <= peak);
                CHECK_OK(psched_plan_set_memory_limit(plan, INFINITY));
            }
            psched_plan_destroy(plan);
        }
}

static void test_zb_rejects_chunks_and_placement_it_does_not_build(void)
{
    psched_plan *plan = make_plan(unit(4, 8));
    CHECK_OK(psched_plan_set_chunks(plan, 2));
    CHECK_EQ_INT(generate_status(plan, "zb"), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "chunks (2)");
    CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_VSHAPE));
    CHECK_EQ_INT(generate_status(plan, "zb"), PSCHED_EINVAL);
    psched_plan_destroy(plan);
}

/* ---- v-min, v-half ---- */

/* Peak activations in chunk units (DESIGN.md §3): V-Min 2*floor((p+4)/3),
 * V-Half 2*floor((p+2)/2). */
static void test_v_min_and_v_half_peak_memory_formulas(void)
{
    for (uint32_t p = 2; p <= 10; p++) {
        double peak;
        (void)measure_shape(unit(p, 3 * p), INFINITY, "v-min", &peak);
        CHECK_EQ_DBL(peak, 2 * ((p + 4) / 3));
        (void)measure_shape(unit(p, 3 * p), INFINITY, "v-half", &peak);
        CHECK_EQ_DBL(peak, 2 * ((p + 2) / 2));
    }
}

/* reference/README.md, "Published figures" (costs per chunk, comm 0). */
static void test_v_min_and_v_half_meet_published_spans(void)
{
    static const struct {
        shape s;
        double half, half_peak, min, min_peak;
    } rows[] = {
        {{4, 8, 1, 1, 1, 0}, 53, 6, 59, 4},
        {{8, 16, 1, 1, 1, 0}, 113, 10, 123, 8},
        {{4, 8, 3, 2, 1, 0}, 123, 6, 160, 4},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        double peak;
        CHECK(measure_shape(rows[i].s, INFINITY, "v-half", &peak) <= rows[i].half);
        CHECK_EQ_DBL(peak, rows[i].half_peak);
        CHECK(measure_shape(rows[i].s, INFINITY, "v-min", &peak) <= rows[i].min);
        CHECK_EQ_DBL(peak, rows[i].min_peak);
    }
}

/* Fewer micro-batches than a block holds: still valid, never above the
 * formula's memory. */
static void test_v_min_and_v_half_handle_any_microbatch_count(void)
{
    for (uint32_t p = 1; p <= 6; p++)
        for (uint32_t m = 1; m <= 2 * p; m++) {
            double peak;
            shape sh = {p, m, 3, 2, 1, 1};
            CHECK(!isnan(measure_shape(sh, INFINITY, "v-min", &peak)));
            CHECK(peak <= 2 * ((p + 4) / 3));
            CHECK(!isnan(measure_shape(sh, INFINITY, "v-half", &peak)));
            CHECK(peak <= 2 * ((p + 2) / 2));
        }
}

/* p = 1, m = 1 by hand. Device 0 holds stages 0 and 1. V-Min slots: F 0,
 * f 1, B 2, b 3, and the two W in the next free slots, oldest backward
 * first. V-Half: F 0, f 1, B 2, b 4, so B's W takes the free slot 3. */
static void test_v_min_and_v_half_single_device_orders(void)
{
    check_one_device_order("v-min", "0F0,1F0,1I0,0I0,1W0,0W0\n");
    check_one_device_order("v-half", "0F0,1F0,1I0,1W0,0I0,0W0\n");
}

static void test_v_min_and_v_half_reject_other_shapes(void)
{
    static const char *const names[] = {"v-min", "v-half"};
    for (size_t i = 0; i < 2; i++) {
        psched_plan *plan = make_plan(unit(4, 8));
        CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP));
        CHECK_EQ_INT(generate_status(plan, names[i]), PSCHED_EINVAL);
        CHECK_CONTAINS(psched_last_error(), "placement");
        CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_AUTO));
        CHECK_OK(psched_plan_set_chunks(plan, 3));
        CHECK_EQ_INT(generate_status(plan, names[i]), PSCHED_EINVAL);
        CHECK_CONTAINS(psched_last_error(), "chunks (3)");
        psched_plan_destroy(plan);
    }
}

int main(void)
{
    RUN(test_zb_meets_published_spans_at_limit_p_and_2p);
    RUN(test_zb_limit_p_unit_costs_has_zb_h1_span);
    RUN(test_zb_unlimited_memory_has_zero_bubble_for_m_at_least_2p_minus_1);
    RUN(test_zb_never_exceeds_the_memory_limit);
    RUN(test_zb_respects_per_stage_memory_deltas);
    RUN(test_zb_limit_below_smallest_peak_is_infeasible);
    RUN(test_zb_beats_1f1b_with_slow_last_stage);
    RUN(test_zb_never_slower_than_zb_h1_and_zb_h2_within_their_memory);
    RUN(test_zb_rejects_chunks_and_placement_it_does_not_build);
    RUN(test_v_min_and_v_half_peak_memory_formulas);
    RUN(test_v_min_and_v_half_meet_published_spans);
    RUN(test_v_min_and_v_half_handle_any_microbatch_count);
    RUN(test_v_min_and_v_half_single_device_orders);
    RUN(test_v_min_and_v_half_reject_other_shapes);
    TEST_MAIN_END();
}
