/* Collectives and Vocabulary Parallelism (issue 19; docs/schedules.md
 * "Vocabulary Parallelism"): the COLLECTIVE, VOCAB_S and VOCAB_T kinds in
 * the validator, the simulator, the formats and the hash, and the vocab
 * option of 1f1b and v-half. Times and peaks are derived by hand in the
 * comments. */
#include "testsched.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Vocab-2 by hand, p = 2, m = 1, F = B = W = 1 (BW = 2), t_comm 0, S pass
 * 0.5, T pass 0.25, memory (S, T) = (+0.5, -0.5); one node with links of
 * bandwidth 10 and latency 0.1 (every transfer between devices takes the
 * latency too): collective 0 (1 byte) takes 0.1 + 0.1 = 0.2, collective 1
 * (2 bytes) 0.1 + 0.2 = 0.3.
 *   d0: 0F0 0COLLECTIVE0 0VOCAB_S0 1COLLECTIVE0 0VOCAB_T0 0B0
 *   d1: 1F0 0COLLECTIVE0 1VOCAB_S0 1COLLECTIVE0 1B0 1VOCAB_T0
 * d0 F [0,1]; d1 F [1.1,2.1]. Collective 0: arrivals 1 and 2.1, runs
 * [2.1, 2.3]. S passes [2.3, 2.8] on both. Collective 1: arrivals 2.8,
 * runs [2.8, 3.1]. d0 T [3.1, 3.35]; d1's BW (the last stage's backward
 * waits for the last collective) [3.1, 5.1], T [5.1, 5.35]; d0 BW needs
 * d1's, 0.1 later: [5.2, 7.2]. Makespan 7.2. Busy (collectives run on the
 * comm stream): d0 1 + .5 + .25 + 2 = 3.75. Memory d0: F 1, S 1.5, T 1,
 * BW 0: peak 1.5; d1: 1, 1.5, BW 0.5: 1.5. */
static void test_vocab2_p2_m1_by_hand(void)
{
    psched_plan *plan = tu_plan(2, 1, 0);
    CHECK_OK(psched_plan_set_chunks(plan, 1));
    CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP));
    CHECK_OK(psched_plan_set_vocab_cost(plan, 0.5, 0.25));
    CHECK_OK(psched_plan_set_vocab_mem(plan, 0.5, -0.5));
    CHECK_OK(psched_plan_set_topology(plan, 0, 10, 0.1, 1, 1));
    CHECK_OK(psched_plan_set_collective_bytes(plan, 0, 1));
    CHECK_OK(psched_plan_set_collective_bytes(plan, 1, 2));
    psched_schedule *s = ts_import(plan, "0F0,0COLLECTIVE0,0VOCAB_S0,1COLLECTIVE0,0VOCAB_T0,0B0\n"
                                      "1F0,0COLLECTIVE0,1VOCAB_S0,1COLLECTIVE0,1B0,1VOCAB_T0\n");
    CHECK(s != NULL);
    CHECK_OK(psched_validate(s));
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(s, NULL, &r));
    CHECK(fabs(psched_report_makespan(r) - 7.2) < 1e-9);
    double start[6], end[6];
    CHECK_OK(psched_report_op_times(r, 0, 0, 6, start, end));
    const double s0[] = {0, 2.1, 2.3, 2.8, 3.1, 5.2}, e0[] = {1, 2.3, 2.8, 3.1, 3.35, 7.2};
    for (int i = 0; i < 6; i++) {
        CHECK(fabs(start[i] - s0[i]) < 1e-9);
        CHECK(fabs(end[i] - e0[i]) < 1e-9);
    }
    CHECK_OK(psched_report_op_times(r, 1, 0, 6, start, end));
    const double s1[] = {1.1, 2.1, 2.3, 2.8, 3.1, 5.1}, e1[] = {2.1, 2.3, 2.8, 3.1, 5.1, 5.35};
    for (int i = 0; i < 6; i++) {
        CHECK(fabs(start[i] - s1[i]) < 1e-9);
        CHECK(fabs(end[i] - e1[i]) < 1e-9);
    }
    double busy, peak;
    CHECK_OK(psched_report_device(r, 0, &busy, NULL, &peak));
    CHECK(fabs(busy - 3.75) < 1e-9);
    CHECK_EQ_DBL(peak, 1.5);
    CHECK_OK(psched_report_device(r, 1, &busy, NULL, &peak));
    CHECK_EQ_DBL(peak, 1.5);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Four devices on two nodes of two: the group spans nodes, so a collective
 * takes the inter-node link: t_comm 0.5 + latency 1 + 8 bytes / 4 = 3.5.
 * It starts at the last arrival, d3's F end: F [0,1] on d0, then hops of
 * t_comm 0.5 (d0-d1, d2-d3 inside a node) and 0.5 + 1 (d1-d2 across):
 * d1 [1.5,2.5], d2 [4,5], d3 [5.5,6.5]; the collective runs [6.5, 10]. */
static void test_collective_across_nodes_takes_the_inter_node_link(void)
{
    psched_plan *plan = tu_plan(4, 1, 0);
    CHECK_OK(psched_plan_set_comm(plan, 0.5));
    CHECK_OK(psched_plan_set_topology(plan, 2, 100, 0, 4, 1));
    CHECK_OK(psched_plan_set_collective_bytes(plan, 0, 8));
    /* a plain barrier: every device reaches it after its F; no vocab rules */
    psched_schedule *s = ts_import(plan, "0F0,0COLLECTIVE0,0B0\n1F0,0COLLECTIVE0,1B0\n"
                                      "2F0,0COLLECTIVE0,2B0\n3F0,0COLLECTIVE0,3B0\n");
    CHECK(s != NULL);
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(s, NULL, &r));
    double start, end;
    CHECK_OK(psched_report_op_times(r, 0, 1, 1, &start, &end));
    CHECK_EQ_DBL(start, 6.5);
    CHECK_EQ_DBL(end, 10);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void check_refused(const psched_plan *plan, const char *text, psched_status want,
                          const char *needle)
{
    psched_schedule *s = ts_import(plan, text);
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK_EQ_INT(psched_validate(s), want);
    CHECK_CONTAINS(psched_last_error(), needle);
    psched_schedule_destroy(s);
}

static void test_validator_names_the_devices_of_a_collective_deadlock(void)
{
    psched_plan *plan = tu_plan(3, 1, 0);
    /* device 2 never reaches collective 0 of micro-batch 0 */
    check_refused(plan, "0F0,0COLLECTIVE0,0B0\n1F0,0COLLECTIVE0,1B0\n2F0,2B0\n",
                  PSCHED_EDEADLOCK,
                  "collective 0COLLECTIVE0 is reached by 2 of 3 devices; device(s) 2 never");
    /* devices 0 and 1 take two collectives in opposite orders */
    check_refused(plan,
                  "0F0,0COLLECTIVE0,1COLLECTIVE0,0B0\n1F0,1COLLECTIVE0,0COLLECTIVE0,1B0\n"
                  "2F0,0COLLECTIVE0,1COLLECTIVE0,2B0\n",
                  PSCHED_EDEADLOCK, "devices 0 and 1 reach collectives in different orders");
    psched_plan_destroy(plan);
    plan = tu_plan(2, 1, 0);
    /* the last stage's backward before the all-reduce it needs */
    check_refused(plan,
                  "0F0,0COLLECTIVE0,0VOCAB_S0,1COLLECTIVE0,0VOCAB_T0,0B0\n"
                  "1F0,0COLLECTIVE0,1VOCAB_S0,1B0,1COLLECTIVE0,1VOCAB_T0\n",
                  PSCHED_EINVALID, "device 1 op 3 (1B0): needs device 1 op 4 (1COLLECTIVE0), "
                                   "which comes later on the same device");
    /* an S pass before the broadcast */
    check_refused(plan,
                  "0F0,0VOCAB_S0,0COLLECTIVE0,1COLLECTIVE0,0VOCAB_T0,0B0\n"
                  "1F0,0COLLECTIVE0,1VOCAB_S0,1COLLECTIVE0,1B0,1VOCAB_T0\n",
                  PSCHED_EINVALID, "(0VOCAB_S0): needs device 0 op 2 (0COLLECTIVE0)");
    /* the broadcast's root before the last stage's F */
    check_refused(plan,
                  "0F0,0COLLECTIVE0,0VOCAB_S0,1COLLECTIVE0,0VOCAB_T0,0B0\n"
                  "0COLLECTIVE0,1F0,1VOCAB_S0,1COLLECTIVE0,1B0,1VOCAB_T0\n",
                  PSCHED_EINVALID, "needs device 1 op 1 (1F0), which comes later");
    /* a missing T pass */
    check_refused(plan,
                  "0F0,0COLLECTIVE0,0VOCAB_S0,1COLLECTIVE0,0B0\n"
                  "1F0,0COLLECTIVE0,1VOCAB_S0,1COLLECTIVE0,1B0,1VOCAB_T0\n",
                  PSCHED_EINVALID, "0VOCAB_T0 is missing");
    /* one collective per micro-batch is neither algorithm */
    check_refused(plan,
                  "0F0,0COLLECTIVE0,0VOCAB_S0,0VOCAB_T0,0B0\n"
                  "1F0,0COLLECTIVE0,1VOCAB_S0,1VOCAB_T0,1B0\n",
                  PSCHED_EINVALID, "indices 0, 1 (Vocab-2) or 0, 1, 2 (Vocab-1)");
    /* a shard on the wrong device is refused by the builder (import) */
    psched_schedule *s = NULL;
    const char *bad = "0F0,1VOCAB_S0\n1F0\n";
    CHECK_EQ_INT(psched_import_csv(bad, strlen(bad), plan, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "VOCAB_S shard (1) must be the device's own index (0)");
    const char *big = "0F0,8COLLECTIVE0,0B0\n1F0,1B0\n";
    CHECK_EQ_INT(psched_import_csv(big, strlen(big), plan, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "collective index (8) must be < 8");
    psched_plan_destroy(plan);
}

/* Counts of one device's list. */
static void count_kinds(const psched_schedule *s, uint32_t d, size_t n[16])
{
    size_t len = psched_schedule_op_count(s, d);
    psched_op *ops = calloc(len + 1, sizeof *ops);
    psched_schedule_ops(s, d, 0, len, ops, sizeof *ops);
    memset(n, 0, 16 * sizeof *n);
    for (size_t i = 0; i < len; i++)
        n[ops[i].kind]++;
    free(ops);
}

/* 1F1B with vocab on unit costs (vocabulary passes free): the first device
 * warms up with p - 1 + 2 forwards under Vocab-1 and p - 1 + 1 under
 * Vocab-2, so it holds p + 2 and p + 1 activations at its peak (the
 * paper's figures; 1F1B alone: p). Every device runs m S and m T passes and
 * 3m (Vocab-1) or 2m (Vocab-2) collectives. */
static void test_1f1b_vocab_memory_is_p_plus_2_and_p_plus_1(void)
{
    const uint32_t p = 4, m = 12;
    for (int vocab = 0; vocab <= 2; vocab++) {
        psched_plan *plan = tu_plan(p, m, 0);
        CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
        psched_schedule *s = NULL;
        CHECK_OK(psched_generate(plan, "1f1b", &s));
        CHECK_OK(psched_validate(s));
        psched_report *r = NULL;
        CHECK_OK(psched_simulate(s, NULL, &r));
        double peak;
        CHECK_OK(psched_report_device(r, 0, NULL, NULL, &peak));
        CHECK_EQ_DBL(peak, vocab == 0 ? p : vocab == 1 ? p + 2 : p + 1);
        for (uint32_t d = 0; d < p; d++) {
            size_t n[16];
            count_kinds(s, d, n);
            CHECK_EQ_INT(n[PSCHED_OP_VOCAB_S], vocab ? m : 0);
            CHECK_EQ_INT(n[PSCHED_OP_VOCAB_T], vocab ? m : 0);
            CHECK_EQ_INT(n[PSCHED_OP_COLLECTIVE], vocab == 1 ? 3 * m : vocab == 2 ? 2 * m : 0);
            CHECK_EQ_INT(n[PSCHED_OP_F], m);
            CHECK_EQ_INT(n[PSCHED_OP_BW], m);
        }
        psched_report_destroy(r);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
}

/* The balanced step. p = 4, m = 16, unit layers (F = B = W = 1 per stage)
 * and an output layer worth 3 per pass. On the last stage (t = 4 each) the
 * 1F1B step is at least m x 12 = 192: that stage does 12 per micro-batch.
 * Split over the devices with Vocab-2 (S = F + B of the head over p = 6/4,
 * T = W over p = 3/4) every device does 3 + 9/4 = 5.25 per micro-batch, so
 * the step is at least m x 5.25 = 84, and the schedule keeps within one
 * 1F1B fill of (p - 1) + 2 periods (the extra warm-up) above it. */
static void test_vocab_balances_the_last_stage(void)
{
    const uint32_t p = 4, m = 16;
    psched_plan *plan = tu_plan(p, m, 0);
    CHECK_OK(psched_plan_set_chunks(plan, 1));
    CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP));
    CHECK_OK(psched_plan_set_stage_cost(plan, p - 1, 4, 4, 4));
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    CHECK_OK(psched_simulate(s, NULL, &r));
    /* 1F1B span = (m + p - 1) x the slowest stage's F+B+W when it is last */
    CHECK(psched_report_makespan(r) >= m * 12.0);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    CHECK_OK(psched_plan_set_stage_cost(plan, p - 1, 1, 1, 1));
    CHECK_OK(psched_plan_set_vocab_cost(plan, (3 + 3) / 4.0, 3 / 4.0)); /* Vocab-2 split */
    CHECK_OK(psched_plan_set_option(plan, "vocab", 2));
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    CHECK_OK(psched_validate(s));
    CHECK_OK(psched_simulate(s, NULL, &r));
    double t = psched_report_makespan(r);
    CHECK(t >= m * 5.25);
    CHECK(t <= m * 5.25 + (p - 1) * 5.25 + 2 * 5.25);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_v_half_vocab_is_valid(void)
{
    for (uint32_t p = 2; p <= 6; p++) {
        for (int vocab = 1; vocab <= 2; vocab++) {
            psched_plan *plan = tu_plan(p, 2 * p, 0);
            CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
            CHECK_OK(psched_plan_set_vocab_cost(plan, 0.5, 0.5));
            psched_schedule *s = NULL;
            CHECK_OK(psched_generate(plan, "v-half", &s));
            CHECK_OK(psched_validate(s));
            psched_schedule_destroy(s);
            psched_plan_destroy(plan);
        }
    }
}

/* The premise of the planner's bound for Vocabulary Parallelism
 * candidates (lib/optimizer/plan_search.c, vocab_bound()): on every
 * device each S pass starts after the device's first pipeline op starts
 * and ends before its last pipeline op ends, and with Vocab-1 each T pass
 * too (the last stage's backward needs the head's input gradient, which
 * Vocab-1's T computes and Vocab-2's S computes). With Vocab-2 a T pass
 * (the head's weight gradient) may come after the last pipeline op: the
 * hand example above has d1's T after its BW, and the check counts such
 * cases to show the bound must leave them out. Random stage and pass
 * costs, 1f1b and v-half, p 2-6, m p-3p. The same premise lets
 * psched_bound() with #PSCHED_BOUND_VOCAB_PASSES count the passes: its
 * makespan and span bounds must stay at or below the simulated ones on
 * every schedule here, and they rise above the bound without it (which
 * leaves the passes out) on most: the work and device-path terms always
 * rise, the critical path, which no pass lengthens, may still be the
 * largest term. */
static void test_vocab_passes_lie_within_each_device_s_pipeline_ops(void)
{
    srand(20261128);
    int checked = 0, t_after = 0, raised = 0;
    for (int trial = 0; trial < 240; trial++) {
        const char *name = trial % 2 ? "v-half" : "1f1b";
        int vocab = 1 + (trial / 2) % 2;
        uint32_t p = 2 + (uint32_t)(rand() % 5), m = p * (1 + (uint32_t)(rand() % 3));
        uint32_t v = trial % 2 ? 2 : 1;
        psched_plan *plan = tu_plan(p, m, 0);
        CHECK_OK(psched_plan_set_chunks(plan, v));
        if (v == 2)
            CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_VSHAPE));
        CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
        static const double pick[] = {0.25, 0.5, 1, 2, 3, 6};
        CHECK_OK(psched_plan_set_vocab_cost(plan, pick[rand() % 6], pick[rand() % 6]));
        for (uint32_t st = 0; st < p * v; st++)
            CHECK_OK(psched_plan_set_stage_cost(plan, st, pick[rand() % 5], pick[rand() % 5],
                                                pick[rand() % 5]));
        psched_schedule *s = NULL;
        CHECK_OK(psched_generate(plan, name, &s));
        psched_report *r = NULL;
        CHECK_OK(psched_simulate(s, NULL, &r));
        psched_bound_info with = {.version = PSCHED_BOUND_INFO_VERSION}, without = with;
        psched_bound_options o = {PSCHED_BOUND_OPTIONS_VERSION, PSCHED_BOUND_VOCAB_PASSES};
        CHECK_OK(psched_bound(psched_schedule_plan(s), &o, &with));
        CHECK_OK(psched_bound(psched_schedule_plan(s), NULL, &without));
        CHECK(with.makespan <= psched_report_makespan(r) * (1 + 1e-9));
        CHECK(with.span <= psched_report_span(r) * (1 + 1e-9));
        CHECK(with.makespan >= without.makespan);
        raised += with.makespan > without.makespan * (1 + 1e-9);
        for (uint32_t d = 0; d < p; d++) {
            size_t n = psched_schedule_op_count(s, d);
            psched_op *ops = calloc(n, sizeof *ops);
            double *start = calloc(n, sizeof *start), *end = calloc(n, sizeof *end);
            CHECK(ops && start && end);
            CHECK_OK(psched_schedule_ops(s, d, 0, n, ops, sizeof *ops));
            CHECK_OK(psched_report_op_times(r, d, 0, n, start, end));
            double first = INFINITY, last = -INFINITY;
            for (size_t i = 0; i < n; i++)
                if (ops[i].kind <= PSCHED_OP_W || ops[i].kind == PSCHED_OP_BW) {
                    first = fmin(first, start[i]);
                    last = fmax(last, end[i]);
                }
            for (size_t i = 0; i < n; i++) {
                bool s_pass = ops[i].kind == PSCHED_OP_VOCAB_S;
                bool t_pass = ops[i].kind == PSCHED_OP_VOCAB_T;
                if (s_pass || (t_pass && vocab == 1)) {
                    CHECK(start[i] >= first - 1e-9);
                    CHECK(end[i] <= last + 1e-9);
                    checked++;
                }
                t_after += t_pass && end[i] > last + 1e-9;
            }
            free(ops);
            free(start);
            free(end);
        }
        psched_report_destroy(r);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
    CHECK(checked > 1000);
    CHECK(t_after > 0);
    CHECK(raised > 120);
    printf("# vocab passes checked: %d; Vocab-2 T passes after the last pipeline op: %d; "
           "bounds raised by the passes: %d of 240\n",
           checked, t_after, raised);
}

/* psched_bound()'s work term with #PSCHED_BOUND_VOCAB_PASSES, by hand:
 * p = 2, m = 2, 1f1b, F = B = W = 1 on both stages, S = 0.5, T = 0.25:
 * each device runs 2 x (1 + 1 + 1) of its stage and 2 x (0.5 + 0.25) of
 * passes, 7.5 (6 without the flag); an unknown flag is refused.
 * Where Vocab-1 and Vocab-2 differ, the device path: with W = 0 on stage
 * 1, device 1 starts after stage 0's F (1), runs its F and B (4) and the
 * passes that end before its last backward, then the chain still needs
 * stage 0's B and W (2) after it, beyond the W's and passes device 1 can
 * run meanwhile: with Vocab-1 every pass (1.5) comes first, 1 + 4 + 1.5 +
 * max(0, 2) = 8.5; with Vocab-2 only the S passes (1), the T passes (0.5)
 * hide under the chain's 2: 1 + 4 + 1 + max(0.5, 2) = 8. Device 0's path
 * is 0 + 4 + 2 + 1.5 = 7.5 either way, and its work 7.5 too. */
static void test_bound_counts_the_vocabulary_passes_by_hand(void)
{
    const double device_path[3] = {0, 8.5, 8};
    for (int vocab = 1; vocab <= 2; vocab++) {
        psched_plan *plan = tu_plan(2, 2, 0);
        CHECK_OK(psched_plan_set_chunks(plan, 1));
        CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP));
        CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
        CHECK_OK(psched_plan_set_vocab_cost(plan, 0.5, 0.25));
        psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
        psched_bound_options o = {PSCHED_BOUND_OPTIONS_VERSION, PSCHED_BOUND_VOCAB_PASSES};
        CHECK_OK(psched_bound(plan, &o, &b));
        CHECK_EQ_DBL(b.work, 7.5);
        CHECK_EQ_DBL(b.span, 7.5);
        CHECK_OK(psched_bound(plan, NULL, &b));
        CHECK_EQ_DBL(b.work, 6);
        o.flags = 0x4;
        CHECK_EQ_INT(psched_bound(plan, &o, &b), PSCHED_EINVAL);
        CHECK(strstr(psched_last_error(), "0x4") != NULL);
        CHECK_OK(psched_plan_set_stage_cost(plan, 1, 1, 1, 0));
        o.flags = PSCHED_BOUND_VOCAB_PASSES;
        CHECK_OK(psched_bound(plan, &o, &b));
        CHECK_EQ_DBL(b.work, 7.5);
        CHECK_EQ_DBL(b.device_path, device_path[vocab]);
        CHECK_EQ_DBL(b.makespan, device_path[vocab]);
        /* and the order generated for it obeys the bound */
        psched_schedule *s = NULL;
        psched_report *r = NULL;
        CHECK_OK(psched_generate(plan, "1f1b", &s));
        CHECK_OK(psched_simulate(s, NULL, &r));
        CHECK(psched_report_makespan(r) >= device_path[vocab] - 1e-9);
        psched_report_destroy(r);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
    /* An imported schedule's plan has no `vocab` option: the passes count
     * by the flag alone. The hand example above (p = 2, m = 1, F = B = W =
     * 1, S 0.5, T 0.25): each device's work is 3 + 0.75 = 3.75, its busy
     * time there, and the bound stays under the simulated 7.2. */
    psched_plan *plan = tu_plan(2, 1, 0);
    CHECK_OK(psched_plan_set_chunks(plan, 1));
    CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP));
    CHECK_OK(psched_plan_set_vocab_cost(plan, 0.5, 0.25));
    psched_schedule *s = ts_import(plan, "0F0,0COLLECTIVE0,0VOCAB_S0,1COLLECTIVE0,0VOCAB_T0,0B0\n"
                                      "1F0,0COLLECTIVE0,1VOCAB_S0,1COLLECTIVE0,1B0,1VOCAB_T0\n");
    CHECK(s != NULL);
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    psched_bound_options o = {PSCHED_BOUND_OPTIONS_VERSION, PSCHED_BOUND_VOCAB_PASSES};
    CHECK_OK(psched_bound(psched_schedule_plan(s), &o, &b));
    CHECK_EQ_DBL(b.work, 3.75);
    CHECK(b.makespan <= 7.2);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static bool same_bound(const psched_bound_info *a, const psched_bound_info *b)
{
    return a->makespan == b->makespan && a->span == b->span && a->work == b->work &&
           a->critical_path == b->critical_path && a->device_path == b->device_path &&
           a->memory == b->memory;
}

/* psched_schedule_bound() counts the passes of a schedule that holds them
 * (what `pipesched simulate` prints): the same figures as psched_bound()
 * with the flag for a 1f1b order with Vocab-1 (p = 3, m = 6); without it
 * for the same plan's order without passes (option vocab 0), and for
 * passes that take no time; the caller's flags pass through. */
static void test_schedule_bound_reads_the_passes(void)
{
    psched_bound_options with = {PSCHED_BOUND_OPTIONS_VERSION, PSCHED_BOUND_VOCAB_PASSES};
    psched_bound_options ignore = {PSCHED_BOUND_OPTIONS_VERSION, PSCHED_BOUND_IGNORE_MEMORY};
    for (int vocab = 0; vocab <= 1; vocab++) {
        for (int timed = 0; timed <= 1; timed++) {
            psched_plan *plan = tu_plan(3, 6, 0);
            CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
            CHECK_OK(psched_plan_set_vocab_cost(plan, timed ? 2 : 0, timed ? 1 : 0));
            CHECK_OK(psched_plan_set_memory_limit(plan, 40));
            psched_schedule *s = NULL;
            CHECK_OK(psched_generate(plan, "1f1b", &s));
            psched_bound_info got = {.version = PSCHED_BOUND_INFO_VERSION}, want = got;
            CHECK_OK(psched_schedule_bound(s, NULL, &got));
            CHECK_OK(psched_bound(psched_schedule_plan(s), vocab ? &with : NULL, &want));
            CHECK(same_bound(&got, &want));
            /* by hand: each device's work is 6 x (1 + 1 + 1), with the
             * passes 6 x (2 + 1) more */
            CHECK_EQ_DBL(got.work, vocab && timed ? 36 : 18);
            CHECK_OK(psched_schedule_bound(s, &with, &got));
            CHECK_EQ_DBL(got.work, timed ? 36 : 18);
            CHECK_OK(psched_schedule_bound(s, &ignore, &got));
            CHECK_OK(psched_bound(psched_schedule_plan(s), &ignore, &want));
            CHECK(vocab && timed ? got.work == 36 : same_bound(&got, &want));
            CHECK_EQ_DBL(got.memory, 0);
            psched_schedule_destroy(s);
            psched_plan_destroy(plan);
        }
    }
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    CHECK_EQ_INT(psched_schedule_bound(NULL, NULL, &b), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "schedule must not be NULL");
    psched_plan *plan = tu_plan(2, 2, 0);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    psched_bound_options bad = {PSCHED_BOUND_OPTIONS_VERSION, 0x8};
    CHECK_EQ_INT(psched_schedule_bound(s, &bad, &b), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "0x8");
    b.version = 0;
    CHECK_EQ_INT(psched_schedule_bound(s, NULL, &b), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "out->version 0");
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* The hash covers the new kinds; CSV round-trips them; PyTorch's own
 * compute_comms dialect refuses them by name. */
static void test_formats_and_hash_cover_the_new_kinds(void)
{
    uint64_t h[3];
    for (int vocab = 0; vocab <= 2; vocab++) {
        psched_plan *plan = tu_plan(4, 8, 0);
        CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
        psched_schedule *s = NULL, *back = NULL;
        CHECK_OK(psched_generate(plan, "1f1b", &s));
        CHECK_OK(psched_schedule_hash(s, &h[vocab]));
        char *text = NULL;
        CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &text, NULL));
        CHECK(vocab == 0 || strstr(text, "COLLECTIVE") != NULL);
        CHECK_OK(psched_import_csv(text, strlen(text), NULL, &back));
        uint64_t hb = 0;
        CHECK_OK(psched_schedule_hash(back, &hb));
        CHECK(hb == h[vocab]);
        psched_free(text);
        psched_report *r = NULL;
        CHECK_OK(psched_simulate(s, NULL, &r));
        for (psched_format f = PSCHED_FORMAT_JSON; f <= PSCHED_FORMAT_SVG; f++) {
            text = NULL;
            CHECK_OK(psched_export(s, r, f, 0, &text, NULL));
            CHECK(vocab == 0 || f == PSCHED_FORMAT_ASCII || strstr(text, "VOCAB_S") != NULL);
            psched_free(text);
        }
        if (vocab) {
            CHECK_EQ_INT(psched_export(s, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &text, NULL),
                         PSCHED_EUNSUPPORTED);
            CHECK_CONTAINS(psched_last_error(), "no vocabulary passes or collectives");
        }
        psched_report_destroy(r);
        psched_schedule_destroy(back);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
    CHECK(h[0] != h[1] && h[1] != h[2] && h[0] != h[2]);
}


/* Comm lowering keeps every collective where it was (one global order,
 * NCCL's rule) and the lowered schedule runs under rendezvous and async
 * point-to-point semantics alike; 1F1B with vocab keeps its compute
 * makespan when transfers are free. */
static void test_lowering_keeps_collectives_in_one_order(void)
{
    const char *names[] = {"1f1b", "v-half"};
    for (int n = 0; n < 2; n++)
        for (int vocab = 1; vocab <= 2; vocab++)
            for (uint32_t p = 2; p <= 5; p++) {
                const uint32_t ms[] = {p, 2 * p, 3 * p + 1};
                for (int i = 0; i < 3; i++) {
                    psched_plan *plan = tu_plan(p, ms[i], 0);
                    CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
                    CHECK_OK(psched_plan_set_vocab_cost(plan, 0.5, 0.25));
                    psched_schedule *s = NULL;
                    CHECK_OK(psched_generate(plan, names[n], &s));
                    psched_report *r = NULL;
                    CHECK_OK(psched_simulate(s, NULL, &r));
                    for (int mode = 0; mode <= 1; mode++) {
                        psched_lower_options o = PSCHED_LOWER_OPTIONS_INIT;
                        o.mode = mode ? PSCHED_LOWER_ASYNC : PSCHED_LOWER_RENDEZVOUS;
                        psched_schedule *l = NULL;
                        CHECK_OK(psched_lower_comm_ex(s, NULL, &o, &l));
                        psched_report *lr = NULL;
                        CHECK_OK(psched_simulate(l, NULL, &lr));
                        if (n == 0 && lr)
                            CHECK_EQ_DBL(psched_report_makespan(lr), psched_report_makespan(r));
                        /* every device's collectives in the compute order */
                        for (uint32_t d = 0; d < p; d++) {
                            size_t a = psched_schedule_op_count(s, d);
                            size_t b = psched_schedule_op_count(l, d);
                            psched_op *x = calloc(a + 1, sizeof *x), *y = calloc(b + 1, sizeof *y);
                            psched_schedule_ops(s, d, 0, a, x, sizeof *x);
                            psched_schedule_ops(l, d, 0, b, y, sizeof *y);
                            size_t j = 0;
                            for (size_t k = 0; k < b; k++) {
                                if (y[k].kind < PSCHED_OP_SEND_F || y[k].kind > PSCHED_OP_RECV_B) {
                                    CHECK(j < a && x[j].kind == y[k].kind &&
                                          x[j].stage == y[k].stage &&
                                          x[j].microbatch == y[k].microbatch);
                                    j++;
                                }
                            }
                            CHECK(j == a);
                            free(x);
                            free(y);
                        }
                        psched_report_destroy(lr);
                        psched_schedule_destroy(l);
                    }
                    psched_report_destroy(r);
                    psched_schedule_destroy(s);
                    psched_plan_destroy(plan);
                }
            }
}

/* Found by the generate fuzzer: with zero costs every op ends at 0, so the
 * lowering's global order fell back to ranks that ignored the collectives:
 * v-half p=4 m=4 Vocab-1 put device 0's SEND_B0 behind its last-stage
 * backward 7I1, which waits for collective 2 of micro-batch 1, which
 * device 1 reaches only after its RECV_B0 (a rendezvous deadlock). Ops
 * that wait for a collective now rank after every device's call. The
 * async lowering's re-timing ignored the same waits (1f1b p=2 m=2 Vocab-1:
 * device 0's S pass of micro-batch 1 ahead of its SEND_F1, while device 1
 * reached the collective only after receiving it); it now starts a
 * waiting op after the collective's end, and both lowerings must give a
 * valid schedule over zero, unit, latency and pass costs. */
static void test_lowering_with_zero_costs_waits_for_every_call(void)
{
    const char *names[] = {"1f1b", "v-half"};
    /* F, B, W, transfer latency, S and T pass times */
    const double costs[][6] = {{0, 0, 0, 0, 0, 0},   {0, 1, 0, 0, 0, 0},
                               {1, 0, 0, 0, 0, 0},   {1, 1, 1, 0, 0, 0},
                               {1, 1, 1, 0.5, 0.5, 0.25}, {1, 2, 1, 3, 0, 1}};
    for (int n = 0; n < 2; n++)
        for (int vocab = 1; vocab <= 2; vocab++)
            for (int c = 0; c < 6; c++)
                for (uint32_t p = 2; p <= 5; p++) {
                    const uint32_t ms[] = {p, 2 * p + 1};
                    for (int i = 0; i < 2; i++) {
                        psched_plan *plan = tu_plan(p, ms[i], 0);
                        CHECK_OK(psched_plan_set_option(plan, "vocab", vocab));
                        CHECK_OK(psched_plan_set_cost(plan, costs[c][0], costs[c][1],
                                                      costs[c][2]));
                        CHECK_OK(psched_plan_set_comm(plan, costs[c][3]));
                        CHECK_OK(psched_plan_set_vocab_cost(plan, costs[c][4], costs[c][5]));
                        psched_schedule *s = NULL;
                        CHECK_OK(psched_generate(plan, names[n], &s));
                        /* the rendezvous lowering (psched_lower_comm) */
                        psched_schedule *l = NULL;
                        CHECK_OK(psched_lower_comm(s, NULL, &l));
                        CHECK_OK(psched_validate(l));
                        psched_schedule_destroy(l);
                        /* the async one: its re-timing follows the
                         * collectives' waits, so it orders no send behind
                         * a barrier the send feeds */
                        psched_lower_options o = PSCHED_LOWER_OPTIONS_INIT;
                        o.mode = PSCHED_LOWER_ASYNC;
                        l = NULL;
                        CHECK_OK(psched_lower_comm_ex(s, NULL, &o, &l));
                        CHECK_OK(psched_validate(l));
                        psched_schedule_destroy(l);
                        psched_schedule_destroy(s);
                        psched_plan_destroy(plan);
                    }
                }
}

static void test_setters_check_their_values(void)
{
    psched_plan *plan = tu_plan(2, 2, 0);
    CHECK_EQ_INT(psched_plan_set_vocab_cost(plan, -1, 0), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "vocabulary S pass time (-1) must be finite and >= 0");
    CHECK_EQ_INT(psched_plan_set_vocab_cost(plan, 0, NAN), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_plan_set_vocab_mem(plan, INFINITY, 0), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_plan_set_collective_bytes(plan, 8, 1), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "collective index (8) must be < 8");
    CHECK_EQ_INT(psched_plan_set_collective_bytes(plan, 0, -2), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_plan_set_vocab_cost(NULL, 0, 0), PSCHED_EINVAL);
    double a = -1, b = -1;
    CHECK_OK(psched_plan_vocab_cost(plan, &a, &b));
    CHECK(a == 0 && b == 0);
    CHECK_OK(psched_plan_set_vocab_cost(plan, 1.5, 2.5));
    CHECK_OK(psched_plan_set_vocab_mem(plan, 3, -3));
    CHECK_OK(psched_plan_set_collective_bytes(plan, 2, 7));
    psched_plan *copy = NULL;
    CHECK_OK(psched_plan_clone(plan, &copy));
    CHECK_OK(psched_plan_vocab_cost(copy, &a, &b));
    CHECK(a == 1.5 && b == 2.5);
    CHECK_OK(psched_plan_vocab_mem(copy, &a, &b));
    CHECK(a == 3 && b == -3);
    CHECK_EQ_DBL(psched_plan_collective_bytes(copy, 2), 7);
    CHECK(isnan(psched_plan_collective_bytes(copy, 8)));
    CHECK_OK(psched_plan_set_option(plan, "vocab", 3));
    psched_schedule *s = NULL;
    CHECK_EQ_INT(psched_generate(plan, "1f1b", &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "vocab");
    psched_plan_destroy(copy);
    psched_plan_destroy(plan);
}

static void test_allocation_failures_are_reported(void)
{
    psched_plan *plan = tu_plan(4, 8, 0);
    CHECK_OK(psched_plan_set_option(plan, "vocab", 1));
    CHECK_OK(psched_plan_set_vocab_cost(plan, 0.5, 0.5));
    int ok = 0;
    for (long n = 0; n < 600 && ok < 3; n++) {
        psched_schedule *s = NULL;
        psched_report *r = NULL;
        psched__alloc_fail_after(n);
        psched_status st = psched_generate(plan, "1f1b", &s);
        if (!st)
            st = psched_simulate(s, NULL, &r);
        psched__alloc_fail_after(-1);
        CHECK(st == PSCHED_OK || st == PSCHED_ENOMEM);
        ok += st == PSCHED_OK;
        psched_report_destroy(r);
        psched_schedule_destroy(s);
    }
    CHECK(ok > 0);
    psched_plan_destroy(plan);
}

int main(void)
{
    RUN(test_vocab2_p2_m1_by_hand);
    RUN(test_collective_across_nodes_takes_the_inter_node_link);
    RUN(test_validator_names_the_devices_of_a_collective_deadlock);
    RUN(test_1f1b_vocab_memory_is_p_plus_2_and_p_plus_1);
    RUN(test_vocab_balances_the_last_stage);
    RUN(test_v_half_vocab_is_valid);
    RUN(test_vocab_passes_lie_within_each_device_s_pipeline_ops);
    RUN(test_bound_counts_the_vocabulary_passes_by_hand);
    RUN(test_schedule_bound_reads_the_passes);
    RUN(test_formats_and_hash_cover_the_new_kinds);
    RUN(test_lowering_keeps_collectives_in_one_order);
    RUN(test_lowering_with_zero_costs_waits_for_every_call);
    RUN(test_setters_check_their_values);
    RUN(test_allocation_failures_are_reported);
    TEST_MAIN_END();
}
