/* Activation offload (PipeOffload, arXiv 2503.01328; docs/simulator.md
 * "Activation offload"): OFFLOAD/RELOAD in the validator and simulator, and
 * the psched_offload transform. Times and peaks are derived by hand in the
 * comments; the step-time bound is the closed form derived in the docs. */
#include "testsched.h"
#include "testutil.h"

static psched_schedule *generate(const psched_plan *plan, const char *name)
{
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, name, &s));
    return s;
}

static char *csv(const psched_schedule *s)
{
    char *text = NULL;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &text, NULL));
    return text;
}

/* 1F1B p = 2, m = 2, unit costs (BW = 2), every activation offloaded, one
 * memory unit per activation over PCIe bandwidth 2: each copy takes 0.5.
 * The transform puts each RELOAD in front of the compute unit before the
 * backward (never before its OFFLOAD):
 *   d0: 0F0 0OFFLOAD0 0RELOAD0 0F1 0OFFLOAD1 0RELOAD1 0B0 0B1
 *   d1: 1F0 1OFFLOAD0 1RELOAD0 1B0 1F1 1OFFLOAD1 1RELOAD1 1B1
 * Times: d0 0F0 [0,1], OFFLOAD0 [1,1.5], RELOAD0 waits for it [1.5,2], 0F1
 * [1,2], OFFLOAD1 [2,2.5], RELOAD1 [2.5,3]. d1 1F0 [1,2], OFFLOAD0
 * [2,2.5], RELOAD0 [2.5,3], 1B0 waits for it [3,5], 1F1 [5,6], OFFLOAD1
 * [6,6.5], RELOAD1 [6.5,7], 1B1 [7,9]. d0 0B0 [5,7], 0B1 [9,11]: makespan
 * 11 (9 without offload: the last stage's backward waits for its copies).
 * Memory d0: 0F0 +1 at 0, 0F1 +1 at 1 (2), OFFLOAD0 -1 at 1.5 and RELOAD0
 * +1 at 1.5 (frees first: 2), the same at 2.5, BWs -1 each: peak 2. d1:
 * never more than one activation: peak 1. */
static void test_offload_all_1f1b_p2_m2_by_hand(void)
{
    psched_plan *plan = tu_plan(2, 2, 0);
    CHECK_OK(psched_plan_set_pcie_bandwidth(plan, 2));
    CHECK_EQ_DBL(psched_plan_pcie_bandwidth(plan), 2);
    psched_schedule *s = generate(plan, "1f1b"), *o = NULL;
    CHECK_OK(psched_offload(s, NULL, PSCHED_OFFLOAD_ALL, 0, &o));
    char *text = csv(o);
    CHECK_STR(text, "0F0,0OFFLOAD0,0RELOAD0,0F1,0OFFLOAD1,0RELOAD1,0B0,0B1\n"
                    "1F0,1OFFLOAD0,1RELOAD0,1B0,1F1,1OFFLOAD1,1RELOAD1,1B1\n");
    psched_free(text);
    CHECK_OK(psched_validate(o));
    psched_report *r;
    CHECK_OK(psched_simulate(o, NULL, &r));
    double st[8], en[8];
    CHECK_OK(psched_report_op_times(r, 0, 0, 8, st, en));
    const double s0[] = {0, 1, 1.5, 1, 2, 2.5, 5, 9}, e0[] = {1, 1.5, 2, 2, 2.5, 3, 7, 11};
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_DBL(st[i], s0[i]);
        CHECK_EQ_DBL(en[i], e0[i]);
    }
    CHECK_OK(psched_report_op_times(r, 1, 0, 8, st, en));
    const double s1[] = {1, 2, 2.5, 3, 5, 6, 6.5, 7}, e1[] = {2, 2.5, 3, 5, 6, 6.5, 7, 9};
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_DBL(st[i], s1[i]);
        CHECK_EQ_DBL(en[i], e1[i]);
    }
    CHECK_EQ_DBL(psched_report_makespan(r), 11);
    double busy, peak;
    CHECK_OK(psched_report_device(r, 0, &busy, NULL, &peak));
    CHECK_EQ_DBL(busy, 6); /* copies run on the copy stream */
    CHECK_EQ_DBL(peak, 2);
    CHECK_OK(psched_report_device(r, 1, NULL, NULL, &peak));
    CHECK_EQ_DBL(peak, 1);
    /* exports name the copies; the Chrome trace puts them on their own track */
    char *json = NULL, *chrome = NULL;
    CHECK_OK(psched_export(o, r, PSCHED_FORMAT_JSON, 0, &json, NULL));
    CHECK_CONTAINS(json, "{\"kind\": \"OFFLOAD\", \"stage\": 0, \"microbatch\": 0, \"chunk\": 0, "
                         "\"start\": 1, \"end\": 1.5}");
    CHECK_OK(psched_export(o, r, PSCHED_FORMAT_CHROME, 0, &chrome, NULL));
    CHECK_CONTAINS(chrome, "\"tid\": 2, \"args\": {\"name\": \"device 0 copies\"}");
    CHECK_CONTAINS(chrome, "{\"name\": \"0OFFLOAD0\", \"cat\": \"OFFLOAD\", \"ph\": \"X\", "
                           "\"ts\": 1000, \"dur\": 500, \"pid\": 0, \"tid\": 2,");
    psched_free(json);
    psched_free(chrome);
    psched_report_destroy(r);
    /* the hash sees the copies */
    uint64_t h1, h2;
    CHECK_OK(psched_schedule_hash(s, &h1));
    CHECK_OK(psched_schedule_hash(o, &h2));
    CHECK(h1 != h2);
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Copies taking no time (the default bandwidth) start at the same instant
 * as compute: a backward whose activations come back at its own start holds
 * them before it frees anything. p = 1, m = 2, unit costs (BW = 2), one unit
 * per activation:
 *   0F0 0OFFLOAD0 0F1 0OFFLOAD1 0RELOAD0 0RELOAD1 0B0 0B1
 * 0F0 [0,1], OFFLOAD0 at 1, 0F1 [1,2], OFFLOAD1 at 2, both RELOADs at 2,
 * 0B0 [2,4], 0B1 [4,6]. Memory: 1 at 0; at 1 OFFLOAD0 frees (0), 0F1 takes
 * (1); at 2 OFFLOAD1 frees (0), the two RELOADs take (2), then 0B0 frees
 * its own (1): peak 2, the two activations 0B0 runs beside. Counting 0B0's
 * free before the RELOADs at the same instant would give 1. */
static void test_reloads_count_before_compute_at_equal_times(void)
{
    psched_plan *plan = tu_plan(1, 2, 0);
    psched_schedule *s = ts_import(plan, "0F0,0OFFLOAD0,0F1,0OFFLOAD1,0RELOAD0,0RELOAD1,0B0,0B1\n");
    CHECK(s != NULL);
    CHECK_OK(psched_validate(s));
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    double st[8], en[8], peak;
    CHECK_OK(psched_report_op_times(r, 0, 0, 8, st, en));
    const double s0[] = {0, 1, 1, 2, 2, 2, 2, 4}, e0[] = {1, 1, 2, 2, 2, 2, 4, 6};
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_DBL(st[i], s0[i]);
        CHECK_EQ_DBL(en[i], e0[i]);
    }
    CHECK_OK(psched_report_device(r, 0, NULL, NULL, &peak));
    CHECK_EQ_DBL(peak, 2);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* 1F1B p = 8, m = 32, unit costs: (m + p - 1)(F + B + W) = 117, peak p = 8
 * units = M on device 0. Selective offload moves every activation whose
 * lifespan covers its two copies; the last device's (lifespan 0) stay.
 * In the steady state a device runs F(k + r) then the backward of k: the
 * transform issues RELOAD(k) when that F starts, so the copy is hidden iff
 * T_o <= t_F, and the OFFLOAD of the F before it (issued at that F's end)
 * ends T_o later, so the copy stream also carries 2 T_o per t_F + t_B + t_W.
 * With mem_F = 1 the bound is PCIe bandwidth >= mem_F / t_F = 1: at 1 the
 * step time stays 117; below it grows. A device then holds at most two
 * activations (the F running and the reloaded one): peak 2 units = M/4. */
static void test_selective_offload_1f1b_p8_m32_keeps_step_time_above_the_bound(void)
{
    psched_plan *plan = tu_plan(8, 32, 0);
    CHECK_OK(psched_plan_set_pcie_bandwidth(plan, 1));
    psched_schedule *s = generate(plan, "1f1b"), *o = NULL;
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    CHECK_EQ_DBL(psched_report_makespan(r), 117);
    CHECK_EQ_DBL(psched_report_peak_memory_M(r), 1);
    psched_report_destroy(r);
    CHECK_OK(psched_offload(s, NULL, PSCHED_OFFLOAD_SELECTIVE, 0, &o));
    CHECK_OK(psched_simulate(o, NULL, &r));
    CHECK_EQ_DBL(psched_report_makespan(r), 117);
    CHECK_EQ_DBL(psched_report_peak_memory_M(r), 0.25);
    double peak;
    CHECK_OK(psched_report_device(r, 7, NULL, NULL, &peak));
    CHECK_EQ_DBL(peak, 1);
    psched_report_destroy(r);
    /* below the bound the same schedule costs step time */
    psched_plan *slow;
    CHECK_OK(psched_plan_clone(plan, &slow));
    CHECK_OK(psched_plan_set_pcie_bandwidth(slow, 0.5));
    CHECK_OK(psched_simulate(o, slow, &r));
    CHECK(psched_report_makespan(r) > 117);
    psched_report_destroy(r);
    psched_plan_destroy(slow);
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Budget 2 on 1F1B p = 4, m = 8 (peaks 4, 3, 2, 1 without offload): every
 * device ends at or under 2; copies that take no time cost no step time. */
static void test_budget_offloads_until_each_device_fits(void)
{
    psched_plan *plan = tu_plan(4, 8, 0);
    psched_schedule *s = generate(plan, "1f1b"), *o = NULL;
    CHECK_EQ_INT(psched_offload(s, NULL, PSCHED_OFFLOAD_BUDGET, 0, &o), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "offload budget (0) must be > 0");
    CHECK_OK(psched_offload(s, NULL, PSCHED_OFFLOAD_BUDGET, 2, &o));
    psched_report *r;
    CHECK_OK(psched_simulate(o, NULL, &r));
    for (uint32_t d = 0; d < 4; d++) {
        double peak;
        CHECK_OK(psched_report_device(r, d, NULL, NULL, &peak));
        CHECK(peak <= 2);
    }
    CHECK_EQ_DBL(psched_report_makespan(r), 33);
    psched_report_destroy(r);
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Any generator: the offloaded schedule validates, and with copies that
 * take no time it keeps the step time and never raises a peak. */
static void test_offload_any_generator_is_valid_and_never_worse_with_free_copies(void)
{
    static const char *const names[] = {"gpipe",     "1f1b",  "interleaved", "zb-h1", "zb-h2",
                                        "dualpipev", "v-min", "v-half",      "v-zb",  "dualpipe"};
    static const psched_offload_policy policies[] = {PSCHED_OFFLOAD_ALL,
                                                     PSCHED_OFFLOAD_SELECTIVE};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        psched_plan *plan = tu_plan(4, 8, 0);
        psched_schedule *s = generate(plan, names[i]);
        psched_report *base = NULL;
        if (s)
            CHECK_OK(psched_simulate(s, NULL, &base));
        for (size_t k = 0; s && base && k < 2; k++) {
            psched_schedule *o = NULL;
            CHECK_OK(psched_offload(s, NULL, policies[k], 0, &o));
            psched_report *r = NULL;
            if (o) {
                CHECK_OK(psched_validate(o));
                CHECK_OK(psched_simulate(o, NULL, &r));
            }
            if (r) {
                CHECK_EQ_DBL(psched_report_makespan(r), psched_report_makespan(base));
                for (uint32_t d = 0; d < 4; d++)
                    CHECK(r->peak[d] <= base->peak[d]);
            }
            psched_report_destroy(r);
            psched_schedule_destroy(o);
        }
        psched_report_destroy(base);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
}

/* The validator's rules for copies, each with its message. */
static void test_copy_rules_are_checked(void)
{
    psched_plan *plan = ts_plan(1, 1, 1, PSCHED_PLACEMENT_LOOP);
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"0F0,0OFFLOAD0,0B0\n", "has no matching 0RELOAD0"},
        {"0F0,0RELOAD0,0B0\n", "needs 0OFFLOAD0 which never runs"},
        {"0OFFLOAD0,0F0,0RELOAD0,0B0\n", "needs device 0 op 1 (0F0), which comes later on the same device"},
        {"0F0,0OFFLOAD0,0B0,0RELOAD0\n", "needs device 0 op 3 (0RELOAD0), which comes later on the same device"},
        {"0F0,0OFFLOAD0,0OFFLOAD0,0RELOAD0,0B0\n", "duplicate of device 0 op 1 (0OFFLOAD0)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        psched_schedule *s = ts_import(plan, cases[i].text);
        CHECK(s != NULL);
        if (!s)
            continue;
        CHECK(psched_validate(s) != PSCHED_OK);
        CHECK_CONTAINS(psched_last_error(), cases[i].message);
        psched_schedule_destroy(s);
    }
    /* a valid one, which the comm lowering keeps as it is (one device: no
     * transfer; tests/test_lower_copies.c lowers offloaded schedules) */
    psched_schedule *s = ts_import(plan, "0F0,0OFFLOAD0,0RELOAD0,0B0\n");
    CHECK_OK(psched_validate(s));
    psched_schedule *lowered = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &lowered));
    if (lowered) {
        CHECK_EQ_INT(lowered->offset[1], 4);
        CHECK(memcmp(lowered->ops, s->ops, 4 * sizeof *s->ops) == 0);
    }
    psched_schedule_destroy(lowered);
    psched_schedule *again = NULL;
    CHECK_EQ_INT(psched_offload(s, NULL, PSCHED_OFFLOAD_ALL, 0, &again), PSCHED_EUNSUPPORTED);
    CHECK_CONTAINS(psched_last_error(), "offload a compute schedule");
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    /* flags on a copy, and a pair reaching into one */
    plan = ts_plan(1, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan *copy;
    CHECK_OK(psched_plan_clone(plan, &copy));
    psched_builder *b;
    CHECK_OK(psched__builder_create(copy, &b));
    psched_builder_append(b, 0, PSCHED_OP_F, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_F, 0, 1, PSCHED_OP_OVERLAP_NEXT);
    psched_builder_append(b, 0, PSCHED_OP_OFFLOAD, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_RELOAD, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_BW, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_BW, 0, 1, 0);
    psched_schedule *bad = NULL;
    CHECK_OK(psched__builder_finish(b, copy, "bad", &bad));
    psched__builder_destroy(b);
    CHECK_EQ_INT(psched_validate(bad), PSCHED_EINVALID);
    CHECK_CONTAINS(psched_last_error(), "an overlapped pair holds two compute ops");
    psched_schedule_destroy(bad);
    psched_plan_destroy(plan);
}

static void test_pcie_setter_checks_its_value(void)
{
    psched_plan *plan = tu_plan(2, 2, 0);
    CHECK(isinf(psched_plan_pcie_bandwidth(plan)));
    CHECK_EQ_INT(psched_plan_set_pcie_bandwidth(plan, 0), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "PCIe bandwidth (0) must be > 0");
    CHECK_EQ_INT(psched_plan_set_pcie_bandwidth(plan, NAN), PSCHED_EINVAL);
    CHECK(isnan(psched_plan_pcie_bandwidth(NULL)));
    psched_plan_destroy(plan);
    plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    static const char *const rows[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};
    psched_schedule *s = ts_build(plan, rows), *o = NULL;
    CHECK_EQ_INT(psched_offload(s, NULL, (psched_offload_policy)7, 0, &o), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "offload policy (7)");
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Every allocation of the transform and of a simulation with copies,
 * weights, links and overlap savings may fail: the call then says ENOMEM
 * and leaks nothing (the sanitizer build checks the leaks). */
static void test_allocation_failures_are_reported(void)
{
    psched_plan *plan = tu_plan(4, 8, 0);
    const double w[] = {1, 2, 1, 1, 3, 1, 1, 1};
    CHECK_OK(psched_plan_set_microbatch_weights(plan, w, 8));
    CHECK_OK(psched_plan_set_comm_bytes(plan, 2, 1));
    CHECK_OK(psched_plan_set_topology(plan, 2, 4, 0.1, 1, 0.5));
    CHECK_OK(psched_plan_set_pcie_bandwidth(plan, 2));
    psched_schedule *s = generate(plan, "1f1b");
    int ok = 0;
    for (long n = 0; n < 400 && ok < 3; n++) {
        psched_schedule *o = NULL;
        psched_report *r = NULL;
        psched__alloc_fail_after(n);
        psched_status st = psched_offload(s, NULL, PSCHED_OFFLOAD_BUDGET, 2, &o);
        if (!st)
            st = psched_simulate(o, NULL, &r);
        psched__alloc_fail_after(-1);
        CHECK(st == PSCHED_OK || st == PSCHED_ENOMEM);
        ok += st == PSCHED_OK;
        psched_report_destroy(r);
        psched_schedule_destroy(o);
    }
    CHECK(ok > 0);
    psched_plan *copy = NULL;
    for (long n = 0; n < 10; n++) {
        psched__alloc_fail_after(n);
        psched_status st = psched_plan_clone(plan, &copy);
        psched__alloc_fail_after(-1);
        CHECK(st == PSCHED_OK || st == PSCHED_ENOMEM);
        if (!st) {
            CHECK_EQ_DBL(psched_plan_microbatch_weight(copy, 4), 3);
            psched_plan_destroy(copy);
            break;
        }
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

int main(void)
{
    RUN(test_offload_all_1f1b_p2_m2_by_hand);
    RUN(test_reloads_count_before_compute_at_equal_times);
    RUN(test_selective_offload_1f1b_p8_m32_keeps_step_time_above_the_bound);
    RUN(test_budget_offloads_until_each_device_fits);
    RUN(test_offload_any_generator_is_valid_and_never_worse_with_free_copies);
    RUN(test_copy_rules_are_checked);
    RUN(test_pcie_setter_checks_its_value);
    RUN(test_allocation_failures_are_reported);
    TEST_MAIN_END();
}
