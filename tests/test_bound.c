/* Lower bounds (psched_bound): each term against a hand derivation from
 * docs/simulator.md's formulas, and soundness: over a grid of random small
 * plans, the bound never exceeds the simulated makespan or span of any
 * generator's schedule, nor, with the memory limit set to what a schedule
 * actually peaks at, that schedule's makespan. */
#include "testutil.h"
#include "pipesched.h"
#include "testsched.h"

#include <stdint.h>

static psched_bound_info bound_of(const psched_plan *plan, psched_status expect)
{
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    psched_status st = psched_bound(plan, NULL, &b);
    CHECK_EQ_INT(st, expect);
    if (st != expect)
        fprintf(stderr, "  %s\n", psched_last_error());
    return b;
}

static void test_unit_cost_1f1b_terms_by_hand(void)
{
    /* p=4, v=1, m=8, F=B=W=1, comm 0. work = 8·3 = 24. Device 3 (stage 3):
     * its first F can start at 3 (F of stages 0..2), its last B leaves
     * B2, B1, B0 and W0 = 4 to run, covered by its 8 W's: 3 + 24 = 27.
     * One micro-batch: 4 F + 4 B + W0 = 9. */
    psched_plan *plan = ts_plan(4, 8, 1, PSCHED_PLACEMENT_LOOP);
    psched_bound_info b = bound_of(plan, PSCHED_OK);
    CHECK_EQ_DBL(b.work, 24);
    CHECK_EQ_DBL(b.span, 24);
    CHECK_EQ_DBL(b.critical_path, 9);
    CHECK_EQ_DBL(b.device_path, 27);
    CHECK_EQ_DBL(b.memory, 0);
    CHECK_EQ_DBL(b.makespan, 27);
    psched_plan_destroy(plan);
}

static void test_costs_and_comm_terms_by_hand(void)
{
    /* p=4, m=8, (F,B,W) = (3,2,1), comm 1 (the zero-bubble paper's third
     * row). work = 8·6 = 48. Device 3: head 3·3 + 3 = 12, tail after its
     * last B: B2+B1+B0 + 3 comm + W0 = 10, its W's total 8, so
     * 12 + 48 + 2 = 62. Critical path: 4·3 + 4·2 + 1 + 6 comm = 27. */
    psched_plan *plan = ts_plan(4, 8, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_cost(plan, 3, 2, 1);
    psched_plan_set_comm(plan, 1);
    psched_bound_info b = bound_of(plan, PSCHED_OK);
    CHECK_EQ_DBL(b.work, 48);
    CHECK_EQ_DBL(b.critical_path, 27);
    CHECK_EQ_DBL(b.device_path, 62);
    CHECK_EQ_DBL(b.makespan, 62);
    psched_plan_destroy(plan);
}

static void test_few_microbatches_expose_the_tail(void)
{
    /* p=4, m=1, unit costs: device 3 head 3, work 3, tail 4 but only one W
     * (1) to hide it: 3 + 3 + 3 = 9, the critical path itself. */
    psched_plan *plan = ts_plan(4, 1, 1, PSCHED_PLACEMENT_LOOP);
    psched_bound_info b = bound_of(plan, PSCHED_OK);
    CHECK_EQ_DBL(b.device_path, 9);
    CHECK_EQ_DBL(b.makespan, 9);
    psched_plan_destroy(plan);
}

static void test_memory_limit_term_by_hand(void)
{
    /* p=4, m=8, unit costs, limit 2 units (mem_F = 1): device 0 holds at
     * most 2 micro-batches, each from its F's start to its W's start, at
     * least F0 + (F1..F3, B3..B1) = 7: 8·7 / 2 = 28 > 27. */
    psched_plan *plan = ts_plan(4, 8, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_memory_limit(plan, 2);
    psched_bound_info b = bound_of(plan, PSCHED_OK);
    CHECK_EQ_DBL(b.memory, 28);
    CHECK_EQ_DBL(b.makespan, 28);
    psched_bound_options o = {.version = PSCHED_BOUND_OPTIONS_VERSION,
                              .flags = PSCHED_BOUND_IGNORE_MEMORY};
    psched_bound_info free_b = {.version = PSCHED_BOUND_INFO_VERSION};
    CHECK_OK(psched_bound(plan, &o, &free_b));
    CHECK_EQ_DBL(free_b.memory, 0);
    CHECK_EQ_DBL(free_b.makespan, 27);
    psched_plan_set_memory_limit(plan, 0.5);
    bound_of(plan, PSCHED_EINFEASIBLE);
    CHECK_CONTAINS(psched_last_error(), "memory limit 0.5");
    psched_plan_destroy(plan);
}

static void test_zb_h2_meets_the_span_bound(void)
{
    /* ZB-H2 has zero bubble for m >= 2p-1 (DESIGN §3): span = 3m = work. */
    psched_plan *plan = ts_plan(4, 8, 1, PSCHED_PLACEMENT_AUTO);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "zb-h2", &s));
    if (s) {
        psched_bound_info b = bound_of(psched_schedule_plan(s), PSCHED_OK);
        psched_report *r = NULL;
        CHECK_OK(psched_simulate(s, NULL, &r));
        CHECK_EQ_DBL(b.span, 24);
        if (r)
            CHECK_EQ_DBL(psched_report_span(r), b.span);
        psched_report_destroy(r);
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* The cost model's extensions (issue K) only lower what the bound may
 * assume. Overlap: DualPipeV p = 8, m = 32, unit costs, saving 0.5 per
 * pair: each F may hide 0.5, so a device's work is at least 2 stages x 32
 * x (0.5 + 1 + 1) = 160 (the span bound), below the simulated 179.
 * Weights: 1F1B p = 2, m = 3, weights (1, 4, 1): a device works (1+4+1) x 3
 * = 18, and device 1 starts no sooner than the lightest F on device 0 (1):
 * 19, below the straggler's simulated makespan 27. */
static void test_overlap_and_weights_keep_the_bound_sound(void)
{
    psched_plan *plan = ts_plan(8, 32, 2, PSCHED_PLACEMENT_AUTO);
    CHECK_OK(psched_plan_set_overlap_saving(plan, 0.5));
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "dualpipev", &s));
    psched_report *r = NULL;
    if (s) {
        psched_bound_info b = bound_of(psched_schedule_plan(s), PSCHED_OK);
        CHECK_EQ_DBL(b.span, 160);
        CHECK_OK(psched_simulate(s, NULL, &r));
        if (r)
            CHECK(b.span <= psched_report_span(r) && b.makespan <= psched_report_makespan(r));
        psched_report_destroy(r);
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);

    plan = ts_plan(2, 3, 1, PSCHED_PLACEMENT_AUTO);
    static const double weights[] = {1, 4, 1};
    CHECK_OK(psched_plan_set_microbatch_weights(plan, weights, 3));
    s = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    if (s) {
        psched_bound_info b = bound_of(psched_schedule_plan(s), PSCHED_OK);
        CHECK_EQ_DBL(b.span, 18);
        CHECK_EQ_DBL(b.makespan, 19);
        r = NULL;
        CHECK_OK(psched_simulate(s, NULL, &r));
        if (r)
            CHECK_EQ_DBL(psched_report_makespan(r), 27);
        psched_report_destroy(r);
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_bad_arguments_are_named(void)
{
    psched_plan *plan = ts_plan(2, 4, 1, PSCHED_PLACEMENT_LOOP);
    psched_bound_info b = {.version = 0};
    CHECK_EQ_INT(psched_bound(plan, NULL, &b), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "out->version 0");
    b.version = PSCHED_BOUND_INFO_VERSION;
    CHECK_EQ_INT(psched_bound(NULL, NULL, &b), PSCHED_EINVAL);
    psched_bound_options o = {.version = PSCHED_BOUND_OPTIONS_VERSION, .flags = 0x80};
    CHECK_EQ_INT(psched_bound(plan, &o, &b), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "0x80");
    psched_plan *unresolved = ts_plan(2, 4, 0, PSCHED_PLACEMENT_AUTO);
    CHECK_EQ_INT(psched_bound(unresolved, NULL, &b), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "left to a generator");
    psched_plan_destroy(unresolved);
    psched_plan_destroy(plan);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static double draw(void)
{
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    return 0.5 * (double)(1 + (rng >> 33) % 6); /* 0.5 .. 3 in halves */
}

static int checked, memory_checked;

/* The bound of the schedule's own plan must not exceed what the simulator
 * measured; neither must the bound with the limit set to the schedule's
 * own peak, which this schedule meets. */
static void check_sound(const psched_schedule *s)
{
    psched_report *r = NULL;
    if (psched_simulate(s, NULL, &r) != PSCHED_OK) {
        fprintf(stderr, "%s: simulate: %s\n", psched_schedule_name(s), psched_last_error());
        tu_failed_checks++;
        return;
    }
    const psched_plan *pl = psched_schedule_plan(s);
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    CHECK_OK(psched_bound(pl, NULL, &b));
    double mk = psched_report_makespan(r), sp = psched_report_span(r);
    if (b.makespan > mk * (1 + 1e-12) || b.span > sp * (1 + 1e-12)) {
        fprintf(stderr, "%s p=%u m=%u v=%u: bound %g/%g exceeds makespan %g / span %g "
                "(work %g cp %g device %g)\n", psched_schedule_name(s), psched_plan_devices(pl),
                psched_plan_microbatches(pl), psched_plan_chunks(pl), b.makespan, b.span, mk, sp,
                b.work, b.critical_path, b.device_path);
        tu_failed_checks++;
    }
    double peak = 0;
    for (uint32_t d = 0; d < psched_report_devices(r); d++) {
        double pk = 0;
        psched_report_device(r, d, NULL, NULL, &pk);
        if (pk > peak)
            peak = pk;
    }
    psched_plan *limited = NULL;
    CHECK_OK(psched_plan_clone(pl, &limited));
    if (limited && peak > 0) {
        psched_plan_set_memory_limit(limited, peak);
        psched_bound_info bm = {.version = PSCHED_BOUND_INFO_VERSION};
        CHECK_OK(psched_bound(limited, NULL, &bm));
        if (bm.makespan > mk * (1 + 1e-12)) {
            fprintf(stderr, "%s p=%u m=%u v=%u: memory bound %g (limit %g) exceeds makespan %g\n",
                    psched_schedule_name(s), psched_plan_devices(pl), psched_plan_microbatches(pl),
                    psched_plan_chunks(pl), bm.memory, peak, mk);
            tu_failed_checks++;
        }
        memory_checked++;
    }
    psched_plan_destroy(limited);
    psched_report_destroy(r);
    checked++;
}

static void test_bound_is_below_every_generator_on_random_plans(void)
{
    for (size_t g = 0; g < psched_generator_count(); g++) {
        const char *name = psched_generator_at(g)->name;
        /* the exact generator's spans are checked against the bound in
         * tests/test_optimal.c, on plans it proves within a node limit */
        if (psched_generator_is_exact(psched_generator_at(g)))
            continue;
        for (uint32_t p = 1; p <= 4; p++)
            for (uint32_t v = 0; v <= 3; v++)
                for (uint32_t m = 1; m <= 3 * p + 1; m++)
                    for (int trial = 0; trial < 3; trial++) {
                        psched_plan *plan = ts_plan(p, m, v, PSCHED_PLACEMENT_AUTO);
                        /* v = 0 leaves the chunks to the generator: one cost set for
                         * every stage, since the stage count is not known yet. */
                        psched_plan_set_cost(plan, draw(), draw(), draw());
                        for (uint32_t st = 0; st < p * v; st++)
                            CHECK_OK(psched_plan_set_stage_cost(plan, st, draw(), draw(), draw()));
                        psched_plan_set_comm(plan, trial == 2 ? draw() : 0);
                        psched_schedule *s = NULL;
                        if (psched_generate(plan, name, &s) == PSCHED_OK)
                            check_sound(s);
                        psched_schedule_destroy(s);
                        psched_plan_destroy(plan);
                    }
    }
    fprintf(stderr, "# %d schedules checked, %d with their own peak as the limit\n", checked,
            memory_checked);
    CHECK(checked > 1000);
}

int main(void)
{
    RUN(test_unit_cost_1f1b_terms_by_hand);
    RUN(test_costs_and_comm_terms_by_hand);
    RUN(test_few_microbatches_expose_the_tail);
    RUN(test_memory_limit_term_by_hand);
    RUN(test_zb_h2_meets_the_span_bound);
    RUN(test_bad_arguments_are_named);
    RUN(test_overlap_and_weights_keep_the_bound_sound);
    RUN(test_bound_is_below_every_generator_on_random_plans);
    TEST_MAIN_END();
}
