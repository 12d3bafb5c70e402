/* Simulator semantics (DESIGN §3), with times derived by hand. */
#include "testsched.h"
#include "testutil.h"

static const char *const onef1b_2x2[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};

static void check_times(const psched_report *r, uint32_t d, const double *start,
                        const double *end, size_t n)
{
    double s[16], e[16];
    CHECK_OK(psched_report_op_times(r, d, 0, n, s, e));
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_DBL(s[i], start[i]);
        CHECK_EQ_DBL(e[i], end[i]);
    }
}

static void test_1f1b_2x2_unit_costs_by_hand(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, onef1b_2x2);
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    /* d0: 0F0 [0,1] 0F1 [1,2] 0B0 waits 1B0 -> [4,6] 0B1 waits 1B1 -> [7,9]
     * d1: 1F0 [1,2] 1B0 [2,4] 1F1 [4,5] 1B1 [5,7] */
    const double s0[] = {0, 1, 4, 7}, e0[] = {1, 2, 6, 9};
    const double s1[] = {1, 2, 4, 5}, e1[] = {2, 4, 5, 7};
    check_times(r, 0, s0, e0, 4);
    check_times(r, 1, s1, e1, 4);
    CHECK_EQ_DBL(psched_report_makespan(r), 9);
    CHECK_EQ_DBL(psched_report_span(r), 9);
    CHECK_EQ_DBL(psched_report_bubble_ratio(r), 1.0 - 12.0 / 18.0);
    double busy, idle, peak;
    CHECK_OK(psched_report_device(r, 1, &busy, &idle, &peak));
    CHECK_EQ_DBL(busy, 6);
    CHECK_EQ_DBL(idle, 3);
    CHECK_EQ_DBL(peak, 1);
    CHECK_OK(psched_report_device(r, 0, NULL, NULL, &peak));
    CHECK_EQ_DBL(peak, 2);
    CHECK_EQ_DBL(psched_report_peak_memory_M(r), 1.0); /* 2 units of a 2-stage model */
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_comm_latency_only_on_cross_device_edges(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_comm(plan, 0.5);
    psched_schedule *s = ts_build(plan, onef1b_2x2);
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    /* d1: 1F0 [1.5,2.5] 1B0 [2.5,4.5] 1F1 [4.5,5.5] 1B1 [5.5,7.5]
     * d0: 0B0 needs 4.5+0.5 -> [5,7]; 0B1 needs 7.5+0.5 -> [8,10] */
    const double s0[] = {0, 1, 5, 8}, e0[] = {1, 2, 7, 10};
    const double s1[] = {1.5, 2.5, 4.5, 5.5}, e1[] = {2.5, 4.5, 5.5, 7.5};
    check_times(r, 0, s0, e0, 4);
    check_times(r, 1, s1, e1, 4);
    CHECK_EQ_DBL(psched_report_makespan(r), 10);
    CHECK_EQ_DBL(psched_report_span(r), 10); /* d0: 10 - 0; d1: 7.5 - 1.5 */
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_span_measures_from_each_devices_first_op(void)
{
    /* Three devices, one micro-batch: device 2 starts at 2 and ends at 5. */
    psched_plan *plan = ts_plan(3, 1, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0B0", "1F0,1B0", "2F0,2B0"};
    psched_schedule *s = ts_build(plan, rows);
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    CHECK_EQ_DBL(psched_report_makespan(r), 9); /* 3 F + 3 BW of 2 */
    CHECK_EQ_DBL(psched_report_span(r), 9);     /* device 0: 0 .. 9 */
    double busy;
    CHECK_OK(psched_report_device(r, 2, &busy, NULL, NULL));
    CHECK_EQ_DBL(busy, 3);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_overlapped_pair_runs_as_one_unit_costing_both(void)
{
    /* one device, two chunks: (1F1 ; 1B0) is one unit of 1 + 2 */
    psched_plan *plan = ts_plan(1, 2, 2, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,1F0,0F1,1F1;1B0,0B0,1B1,0B1"};
    psched_schedule *s = ts_build(plan, rows);
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    const double st[] = {0, 1, 2, 3, 3, 6, 8, 10}, en[] = {1, 2, 3, 6, 6, 8, 10, 12};
    check_times(r, 0, st, en, 8);
    CHECK_EQ_DBL(psched_report_makespan(r), 12);
    double busy;
    CHECK_OK(psched_report_device(r, 0, &busy, NULL, NULL));
    CHECK_EQ_DBL(busy, 12);
    CHECK_EQ_DBL(psched_report_bubble_ratio(r), 0);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_per_stage_costs_and_memory_from_a_second_plan(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, onef1b_2x2);
    psched_plan *costs = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    CHECK_OK(psched_plan_set_stage_cost(costs, 1, 2, 3, 0));  /* stage 1: F 2, BW 3 */
    CHECK_OK(psched_plan_set_stage_mem(costs, 0, 5, -2, -3));
    psched_report *r;
    CHECK_OK(psched_simulate(s, costs, &r));
    /* d0: 0F0 [0,1] 0F1 [1,2]; d1: 1F0 [1,3] 1B0 [3,6] 1F1 [6,8] 1B1 [8,11];
     * d0: 0B0 [6,8] 0B1 [11,13] */
    const double s0[] = {0, 1, 6, 11}, e0[] = {1, 2, 8, 13};
    const double s1[] = {1, 3, 6, 8}, e1[] = {3, 6, 8, 11};
    check_times(r, 0, s0, e0, 4);
    check_times(r, 1, s1, e1, 4);
    double peak;
    CHECK_OK(psched_report_device(r, 0, NULL, NULL, &peak));
    CHECK_EQ_DBL(peak, 10); /* +5 +5 */
    CHECK_EQ_DBL(psched_report_peak_memory_M(r), 10.0 / 6.0); /* sum mem_F = 5 + 1 */
    psched_report_destroy(r);
    psched_plan_destroy(costs);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_cost_plan_of_another_shape_is_rejected(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, onef1b_2x2);
    psched_plan *costs = ts_plan(3, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_report *r = (psched_report *)1;
    CHECK_EQ_INT(psched_simulate(s, costs, &r), PSCHED_EINVAL);
    CHECK(r == NULL);
    CHECK_STR(psched_last_error(), "cost plan has 3 stages (devices x chunks) but the schedule has 2");
    psched_plan_destroy(costs);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_report_bounds_are_checked(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, onef1b_2x2);
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    double x[8];
    CHECK_EQ_INT(psched_report_device(r, 2, x, NULL, NULL), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "device (2) must be < devices (2)");
    CHECK_EQ_INT(psched_report_op_times(r, 1, 3, 2, x, x), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "ops [3, 5) out of range: device 1 has 4 ops");
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_simulating_an_invalid_schedule_fails_like_validate(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0B0,0F1,0B1", "1F1,1B1,1F0,1B0"};
    psched_schedule *s = ts_build(plan, rows);
    psched_report *r;
    CHECK_EQ_INT(psched_simulate(s, NULL, &r), PSCHED_EDEADLOCK);
    CHECK(r == NULL);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

int main(void)
{
    RUN(test_1f1b_2x2_unit_costs_by_hand);
    RUN(test_comm_latency_only_on_cross_device_edges);
    RUN(test_span_measures_from_each_devices_first_op);
    RUN(test_overlapped_pair_runs_as_one_unit_costing_both);
    RUN(test_per_stage_costs_and_memory_from_a_second_plan);
    RUN(test_cost_plan_of_another_shape_is_rejected);
    RUN(test_report_bounds_are_checked);
    RUN(test_simulating_an_invalid_schedule_fails_like_validate);
    TEST_MAIN_END();
}
