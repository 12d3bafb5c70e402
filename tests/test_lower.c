/* Comm lowering and the rendezvous validator: the hand example of issue 4
 * exactly, its deadlock without batched groups, every generator over a
 * grid, one error per broken rule, simulated times, the comms CSV round
 * trip and PyTorch's own comms file. argv[1]: the shared reference dir. */
#include "testsched.h"
#include "testutil.h"

static const char *ref_dir = "tests/data/reference";

/* ---- schedules with comm ops written as text: "0F0,0SEND_F1+0RECV_B0,0B0";
 * '+' joins a batched group, ';' an overlapped pair; B is PyTorch's B (BW). */

static const struct {
    const char *text;
    psched_op_kind kind;
} kinds[] = {
    {"SEND_F", PSCHED_OP_SEND_F}, {"RECV_F", PSCHED_OP_RECV_F}, {"SEND_B", PSCHED_OP_SEND_B},
    {"RECV_B", PSCHED_OP_RECV_B}, {"F", PSCHED_OP_F},           {"I", PSCHED_OP_B},
    {"W", PSCHED_OP_W},           {"B", PSCHED_OP_BW},
};

static psched_schedule *build_rows(const psched_plan *plan, const char *const *rows)
{
    psched_plan *copy;
    psched_builder *b;
    if (psched_plan_clone(plan, &copy))
        return NULL;
    if (psched__builder_create(copy, &b)) {
        psched_plan_destroy(copy);
        return NULL;
    }
    for (uint32_t d = 0; d < psched_plan_devices(plan); d++) {
        for (const char *s = rows[d]; *s;) {
            char *end;
            uint32_t stage = (uint32_t)strtoul(s, &end, 10);
            size_t k = 0;
            while (strncmp(end, kinds[k].text, strlen(kinds[k].text)) != 0)
                k++;
            uint32_t mb = (uint32_t)strtoul(end + strlen(kinds[k].text), &end, 10);
            uint32_t flags = *end == '+' ? PSCHED_OP_BATCH_NEXT
                             : *end == ';' ? PSCHED_OP_OVERLAP_NEXT : 0;
            psched_builder_append(b, d, kinds[k].kind, stage, mb, flags);
            s = *end ? end + 1 : end;
        }
    }
    psched_schedule *out = NULL;
    if (psched__builder_finish(b, copy, "test", &out))
        psched_plan_destroy(copy);
    psched__builder_destroy(b);
    return out;
}

/* Device d in the notation above. */
static const char *render(const psched_schedule *s, uint32_t d)
{
    static char buf[8192];
    size_t at = 0;
    buf[0] = '\0';
    for (size_t g = s->offset[d]; g < s->offset[d + 1] && at < sizeof buf - 64; g++) {
        at += (size_t)psched__op_text(&s->ops[g], buf + at, sizeof buf - at);
        if (g + 1 < s->offset[d + 1])
            buf[at++] = (s->ops[g].flags & PSCHED_OP_BATCH_NEXT) ? '+'
                        : (s->ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? ';' : ',';
        buf[at] = '\0';
    }
    return buf;
}

/* Issue 4's example: 2 devices, compute 0F0,0F1,0B0,0B1 / 1F0,1B0,1F1,1B1. */
static const char *const hand_compute[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};
static const char *const hand_lowered[] = {
    "0F0,0SEND_F0,0F1,0SEND_F1+0RECV_B0,0B0,0RECV_B1,0B1",
    "1RECV_F0,1F0,1B0,1SEND_B0+1RECV_F1,1F1,1B1,1SEND_B1",
};

static psched_status validate_rows(const char *row0, const char *row1)
{
    const char *rows[] = {row0, row1};
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = build_rows(plan, rows);
    psched_status st = s ? psched_validate(s) : PSCHED_ENOMEM;
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return st;
}

static void test_hand_example_lowers_exactly(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, hand_compute), *l = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    CHECK(l != NULL);
    if (l) {
        CHECK_STR(render(l, 0), hand_lowered[0]);
        CHECK_STR(render(l, 1), hand_lowered[1]);
        CHECK_EQ_INT(l->ops[l->offset[0] + 3].flags, PSCHED_OP_BATCH_NEXT);
        CHECK_EQ_INT(l->ops[l->offset[0] + 4].flags, 0);
        CHECK_EQ_INT(l->ops[l->offset[1] + 3].flags, PSCHED_OP_BATCH_NEXT);
        CHECK_EQ_INT(l->ops[l->offset[1] + 4].flags, 0);
        CHECK_STR(psched_schedule_name(l), "test");
        CHECK_OK(psched_validate(l));
    }
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_hand_example_without_groups_is_a_deadlock_cycle(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, hand_compute), *l = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    for (size_t g = 0; l && g < psched_schedule_total_ops(l); g++)
        l->ops[g].flags &= (uint8_t)~PSCHED_OP_BATCH_NEXT;
    /* Each device sends first and receives second; each send waits for a
     * receive the peer only posts after its own send completes. */
    CHECK_EQ_INT(psched_validate(l), PSCHED_EDEADLOCK);
    CHECK_STR(psched_last_error(),
              "deadlock: device 0 op 3 (0SEND_F1) waits for device 1 op 4 (1RECV_F1); "
              "device 1 op 3 (1SEND_B0) waits for device 0 op 4 (0RECV_B0)");
    psched_report *r = NULL;
    CHECK_EQ_INT(psched_simulate(l, NULL, &r), PSCHED_EDEADLOCK);
    CHECK(r == NULL);
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ---- every generator over a grid */

/* Cross-device dependency edges, from the placement alone: each pair of
 * consecutive stages of a chain on two devices carries one forward and one
 * backward tensor per micro-batch. */
static size_t cross_device_edges(const psched_plan *plan)
{
    uint32_t S = psched_plan_stages(plan), chains = psched_plan_chains(plan);
    uint32_t per = S / chains, mbs = psched_plan_microbatches(plan) / chains;
    size_t pairs = 0;
    for (uint32_t s = 0; s + 1 < S; s++)
        if (s % per != per - 1 &&
            psched_plan_stage_device(plan, s) != psched_plan_stage_device(plan, s + 1))
            pairs++;
    return pairs * 2 * mbs;
}

/* The lowered lists minus comm ops are the compute lists, op for op. */
static int same_compute_order(const psched_schedule *s, const psched_schedule *l)
{
    for (uint32_t d = 0; d < s->devices; d++) {
        size_t g = s->offset[d];
        for (size_t h = l->offset[d]; h < l->offset[d + 1]; h++) {
            if (l->ops[h].kind >= PSCHED_OP_SEND_F)
                continue;
            if (g == s->offset[d + 1] || memcmp(&s->ops[g], &l->ops[h], sizeof s->ops[g]) != 0)
                return 0;
            g++;
        }
        if (g != s->offset[d + 1])
            return 0;
    }
    return 1;
}

static size_t count_comm_ops(const psched_schedule *l)
{
    size_t n = 0;
    for (size_t g = 0; g < psched_schedule_total_ops(l); g++)
        n += l->ops[g].kind >= PSCHED_OP_SEND_F;
    return n;
}

/* 0: not accepted by the generator; 1: checked; -1: failed (reported). */
/* The csv-comms file of a lowered schedule reads back as the same op lists,
 * batched groups included, and validates under rendezvous semantics (the
 * file a blocking-send runtime executes). */
static void check_comms_csv_round_trip(const psched_schedule *l)
{
    char *text = NULL;
    psched_schedule *back = NULL;
    CHECK_OK(psched_export(l, NULL, PSCHED_FORMAT_CSV_COMMS, 0, &text, NULL));
    if (text)
        CHECK_OK(psched_import_csv(text, strlen(text), NULL, &back));
    if (back) {
        CHECK_OK(psched_validate(back));
        CHECK_EQ_INT(psched_plan_chains(psched_schedule_plan(back)),
                     psched_plan_chains(psched_schedule_plan(l)));
        CHECK_EQ_INT(psched_plan_microbatches(psched_schedule_plan(back)),
                     psched_plan_microbatches(psched_schedule_plan(l)));
        CHECK_EQ_INT(psched_schedule_total_ops(back), psched_schedule_total_ops(l));
        int same = psched_schedule_total_ops(back) == psched_schedule_total_ops(l);
        for (uint32_t d = 0; same && d < l->devices; d++)
            same = back->offset[d + 1] == l->offset[d + 1];
        for (size_t g = 0; same && g < psched_schedule_total_ops(l); g++)
            same = back->ops[g].kind == l->ops[g].kind && back->ops[g].stage == l->ops[g].stage &&
                   back->ops[g].microbatch == l->ops[g].microbatch &&
                   back->ops[g].flags == l->ops[g].flags;
        CHECK(same);
    }
    psched_schedule_destroy(back);
    psched_free(text);
}

static int lower_one(const char *name, uint32_t p, uint32_t v, uint32_t m)
{
    psched_plan *plan = tu_plan(p, m, v);
    psched_schedule *s = NULL, *l = NULL;
    if (!plan)
        return -1;
    int result = 0;
    if (psched_generate(plan, name, &s) == PSCHED_OK) {
        int before = tu_failed_checks;
        CHECK_OK(psched_lower_comm(s, NULL, &l));
        if (l) {
            CHECK_OK(psched_validate(l));
            CHECK(same_compute_order(s, l));
            CHECK_EQ_INT(count_comm_ops(l), 2 * cross_device_edges(psched_schedule_plan(s)));
            check_comms_csv_round_trip(l);
        }
        result = tu_failed_checks == before ? 1 : -1;
        if (result < 0)
            fprintf(stderr, "  in %s p=%u v=%u m=%u\n", name, p, v, m);
    }
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return result;
}

static void test_every_generator_lowers_validates_and_keeps_its_compute_order(void)
{
    for (size_t i = 0; i < psched_generator_count(); i++) {
        const char *name = psched_generator_at(i)->name;
        /* an exact generator takes up to its time limit per plan */
        if (psched_generator_is_exact(psched_generator_at(i)))
            continue;
        int checked = 0;
        for (uint32_t p = 1; p <= 4; p++) {
            uint32_t ms[] = {1, p, 2 * p + 1, 4 * p};
            for (uint32_t v = 1; v <= 3; v++)
                for (size_t k = 0; k < 4; k++)
                    checked += lower_one(name, p, v, ms[k]) != 0;
        }
        if (checked == 0)
            fprintf(stderr, "  %s accepted no configuration of the grid\n", name);
        CHECK(checked > 0);
    }
}

static void test_vshape_tip_needs_no_comm(void)
{
    /* v-zb, p = 2: stages 0,1 down and 2,3 back; 1 -> 2 stays on device 1. */
    psched_plan *plan = tu_plan(2, 4, 0);
    psched_schedule *s = NULL, *l = NULL;
    CHECK_OK(psched_generate(plan, "v-zb", &s));
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    /* edges 0->1 and 2->3 cross devices: 2 pairs x 2 directions x 4 mbs x 2 ops */
    CHECK_EQ_INT(count_comm_ops(l), 32);
    for (size_t g = 0; g < psched_schedule_total_ops(l); g++)
        CHECK(l->ops[g].kind < PSCHED_OP_SEND_F ||
              !((l->ops[g].kind == PSCHED_OP_SEND_F && l->ops[g].stage == 1) ||
                (l->ops[g].kind == PSCHED_OP_RECV_F && l->ops[g].stage == 2)));
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_single_device_lowers_to_itself(void)
{
    psched_plan *plan = ts_plan(1, 2, 2, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,1F0,0F1,1F1,1B0,0B0,1B1,0B1"};
    psched_schedule *s = ts_build(plan, rows), *l = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    CHECK_STR(render(l, 0), rows[0]);
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_out_of_order_consumption_still_lowers(void)
{
    /* Device 1 consumes micro-batch 1 before 0: a SEND placed right after
     * its producer would wait forever for 1RECV_F0. */
    const char *rows[] = {"0F0,0F1,0B1,0B0", "1F1,1F0,1B1,1B0"};
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, rows), *l = NULL;
    CHECK_OK(psched_validate(s));
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    if (l) {
        CHECK_OK(psched_validate(l));
        CHECK(same_compute_order(s, l));
    }
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ---- one error per broken rule */

static void test_send_without_recv_is_reported(void)
{
    CHECK_EQ_INT(validate_rows(hand_lowered[0], "1F0,1B0,1SEND_B0+1RECV_F1,1F1,1B1,1SEND_B1"),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(), "device 0 op 1 (0SEND_F0): no matching 1RECV_F0 on device 1 "
                                   "(every send needs exactly one receive)");
}

static void test_recv_without_send_is_reported(void)
{
    CHECK_EQ_INT(validate_rows("0F0,0F1,0SEND_F1+0RECV_B0,0B0,0RECV_B1,0B1", hand_lowered[1]),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(), "device 1 op 0 (1RECV_F0): no matching 0SEND_F0 on device 0 "
                                   "(every receive needs exactly one send)");
}

static void test_recv_after_its_consumer_is_reported(void)
{
    CHECK_EQ_INT(validate_rows(hand_lowered[0], "1F0,1RECV_F0,1B0,1SEND_B0+1RECV_F1,1F1,1B1,"
                                                "1SEND_B1"),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(),
              "device 1 op 1 (1RECV_F0): comes after its consumer device 1 op 0 (1F0)");
}

static void test_send_before_its_producer_is_reported(void)
{
    CHECK_EQ_INT(validate_rows("0SEND_F0,0F0,0F1,0SEND_F1+0RECV_B0,0B0,0RECV_B1,0B1",
                               hand_lowered[1]),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(),
              "device 0 op 0 (0SEND_F0): comes before its producer device 0 op 1 (0F0)");
}

static void test_mismatched_microbatch_is_reported(void)
{
    /* Both receives exist, but device 1 posts them in the other order: NCCL
     * would hand micro-batch 0's activations to the receive of 1. */
    CHECK_EQ_INT(validate_rows(hand_lowered[0], "1RECV_F1,1F0,1B0,1SEND_B0+1RECV_F0,1F1,1B1,"
                                                "1SEND_B1"),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(),
              "device 1 op 0 (1RECV_F1): micro-batch mismatch: it is receive #1 from device 0, "
              "but send #1 from device 0 to device 1 is device 0 op 1 (0SEND_F0); calls "
              "between two devices match in posting order, so both sides must list them in "
              "the same order");
}

static void test_compute_op_without_its_recv_is_reported(void)
{
    CHECK_EQ_INT(validate_rows("0F0,0F1,0SEND_F1+0RECV_B0,0B0,0RECV_B1,0B1",
                               "1F0,1B0,1SEND_B0+1RECV_F1,1F1,1B1,1SEND_B1"),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(),
              "device 1 op 0 (1F0): needs device 0 op 0 (0F0) from device 0, but no 1RECV_F0 "
              "receives it");
}

static void test_comm_between_stages_of_one_device_is_refused(void)
{
    /* p = 1, v = 2: stages 0 and 1 share device 0. */
    psched_plan *plan = ts_plan(1, 1, 2, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0SEND_F0,1RECV_F0,1F0,1B0,0B0"};
    psched_schedule *s = build_rows(plan, rows);
    CHECK_EQ_INT(psched_validate(s), PSCHED_EINVALID);
    CHECK_STR(psched_last_error(), "device 0 op 1 (0SEND_F0): stages 0 and 1 are both on "
                                   "device 0; only dependencies that cross devices are "
                                   "communicated");
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_send_from_the_last_stage_is_refused(void)
{
    CHECK_EQ_INT(validate_rows(hand_lowered[0], "1RECV_F0,1F0,1SEND_F0,1B0,1SEND_B0+1RECV_F1,"
                                                "1F1,1B1,1SEND_B1"),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(), "device 1 op 2 (1SEND_F0): stage 1 is the last stage of its "
                                   "chain, so there is no stage to send to");
}

static void test_batch_flag_on_a_compute_op_is_refused(void)
{
    CHECK_EQ_INT(validate_rows("0F0+0SEND_F0,0F1,0SEND_F1+0RECV_B0,0B0,0RECV_B1,0B1",
                               hand_lowered[1]),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(), "device 0 op 0 (0F0): BATCH_NEXT joins comm ops into one "
                                   "batched group; a compute op cannot carry it");
}

static void test_duplicate_comm_op_is_refused(void)
{
    CHECK_EQ_INT(validate_rows("0F0,0SEND_F0,0SEND_F0,0F1,0SEND_F1+0RECV_B0,0B0,0RECV_B1,0B1",
                               hand_lowered[1]),
                 PSCHED_EINVALID);
    CHECK_STR(psched_last_error(), "device 0 op 2 (0SEND_F0): duplicate of device 0 op 1 (0SEND_F0)");
}

/* ---- simulation */

static void test_lowered_1f1b_keeps_the_compute_makespan(void)
{
    /* unit costs, comm 0: 1F1B makespan 3(m + p - 1) (DESIGN §3) */
    for (uint32_t p = 2; p <= 4; p++) {
        uint32_t ms[] = {1, p, 2 * p + 1, 4 * p};
        for (size_t k = 0; k < 4; k++) {
            psched_plan *plan = tu_plan(p, ms[k], 0);
            psched_schedule *s = NULL, *l = NULL;
            psched_report *rs = NULL, *rl = NULL;
            CHECK_OK(psched_generate(plan, "1f1b", &s));
            CHECK_OK(psched_lower_comm(s, plan, &l));
            CHECK_OK(psched_simulate(s, NULL, &rs));
            CHECK_OK(psched_simulate(l, NULL, &rl));
            CHECK_EQ_DBL(psched_report_makespan(rs), 3.0 * (ms[k] + p - 1));
            CHECK_EQ_DBL(psched_report_makespan(rl), 3.0 * (ms[k] + p - 1));
            CHECK_EQ_DBL(psched_report_bubble_ratio(rl), psched_report_bubble_ratio(rs));
            psched_report_destroy(rs);
            psched_report_destroy(rl);
            psched_schedule_destroy(l);
            psched_schedule_destroy(s);
            psched_plan_destroy(plan);
        }
    }
}

/* Unit costs, comm 0: wherever both devices are idle at the moment a tensor
 * moves, the rendezvous costs nothing; these generators (orders fixed by the
 * reference frameworks) always leave such a moment. */
static void test_lowering_keeps_the_makespan_of_reference_orders(void)
{
    const char *names[] = {"gpipe", "1f1b", "looped-bfs", "interleaved-zb", "zb-h1", "zb-h2",
                           "v-zb", "dualpipev", "dualpipe"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        for (uint32_t p = 2; p <= 4; p++) {
            uint32_t ms[] = {p, 2 * p + 1, 4 * p};
            for (uint32_t v = 1; v <= 3; v++) {
                for (size_t k = 0; k < 3; k++) {
                    psched_plan *plan = tu_plan(p, ms[k], v);
                    psched_schedule *s = NULL, *l = NULL;
                    psched_report *rs = NULL, *rl = NULL;
                    if (psched_generate(plan, names[i], &s) == PSCHED_OK) {
                        CHECK_OK(psched_lower_comm(s, NULL, &l));
                        CHECK_OK(psched_simulate(s, NULL, &rs));
                        CHECK_OK(psched_simulate(l, NULL, &rl));
                        CHECK_EQ_DBL(psched_report_makespan(rl), psched_report_makespan(rs));
                    }
                    psched_report_destroy(rs);
                    psched_report_destroy(rl);
                    psched_schedule_destroy(l);
                    psched_schedule_destroy(s);
                    psched_plan_destroy(plan);
                }
            }
        }
    }
}

static void test_rendezvous_times_put_the_latency_on_the_transfer(void)
{
    /* Hand example with t_comm = 1. A transfer completes 1 after the later
     * of its two posts and both devices wait for it: device 0 posts 0SEND_F0
     * at 1, matched by 1RECV_F0 (posted at 0), done at 2; the groups are
     * posted at 3 (device 0) and 5 (device 1), done at 6; 0RECV_B1 posted at
     * 8, 1SEND_B1 at 9, done at 10; 0B1 runs 10..12. */
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_comm(plan, 1);
    psched_schedule *s = build_rows(plan, hand_lowered);
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(s, NULL, &r));
    double start[8], end[8];
    const double want_start[8] = {0, 2, 2, 6, 6, 6, 10, 10};
    const double want_end[8] = {1, 2, 3, 6, 6, 8, 10, 12};
    CHECK_OK(psched_report_op_times(r, 0, 0, 8, start, end));
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_DBL(start[i], want_start[i]);
        CHECK_EQ_DBL(end[i], want_end[i]);
    }
    double busy;
    CHECK_OK(psched_report_device(r, 0, &busy, NULL, NULL));
    CHECK_EQ_DBL(busy, 6); /* comm ops take no device time */
    CHECK_EQ_DBL(psched_report_makespan(r), 12);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ---- formats */

static void test_comms_csv_keeps_the_groups_and_pytorch_mode_drops_them(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, hand_compute), *l = NULL, *back = NULL, *flat = NULL;
    char *text = NULL, *torch = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    /* hand_lowered: one group per device, Megatron's send_forward_recv_backward */
    CHECK_OK(psched_export(l, NULL, PSCHED_FORMAT_CSV_COMMS, 0, &text, NULL));
    CHECK_STR(text, "0F0,0SEND_F0,0F1,[0SEND_F1;0RECV_B0]BATCH,0B0,0RECV_B1,0B1\n"
                    "1RECV_F0,1F0,1B0,[1SEND_B0;1RECV_F1]BATCH,1F1,1B1,1SEND_B1\n");
    CHECK_OK(psched_import_csv(text, strlen(text), NULL, &back));
    if (back) {
        CHECK_STR(render(back, 0), hand_lowered[0]);
        CHECK_STR(render(back, 1), hand_lowered[1]);
        CHECK_OK(psched_validate(back));
    }
    /* PyTorch's dialect: the group's ops as separate cells, which PyTorch
     * posts as isend/irecv; read back with blocking sends it deadlocks. */
    CHECK_OK(psched_export(l, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &torch, NULL));
    CHECK_STR(torch, "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
                     "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n");
    CHECK_OK(psched_import_csv(torch, strlen(torch), NULL, &flat));
    if (flat) {
        CHECK_EQ_INT(psched_validate(flat), PSCHED_EDEADLOCK);
        CHECK_STR(psched_last_error(), "deadlock: device 0 op 3 (0SEND_F1) waits for device 1 op 4 "
                                       "(1RECV_F1); device 1 op 3 (1SEND_B0) waits for device 0 "
                                       "op 4 (0RECV_B0)");
    }
    psched_free(torch);
    psched_free(text);
    psched_schedule_destroy(flat);
    psched_schedule_destroy(back);
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_json_lists_comm_ops_with_peer_and_group(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, hand_compute), *l = NULL;
    char *text = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    CHECK_OK(psched_export(l, NULL, PSCHED_FORMAT_JSON, 0, &text, NULL));
    /* device 0: 0SEND_F0 is unit 0, {0SEND_F1, 0RECV_B0} unit 1, 0RECV_B1
     * unit 2, all with device 1; device 1's 1RECV_F0 is its unit 0 */
    CHECK_CONTAINS(text, "{\"kind\": \"SEND_F\", \"stage\": 0, \"microbatch\": 0, \"chunk\": 0, "
                         "\"peer\": 1, \"group\": 0}");
    CHECK_CONTAINS(text, "{\"kind\": \"SEND_F\", \"stage\": 0, \"microbatch\": 1, \"chunk\": 0, "
                         "\"batch_next\": true, \"peer\": 1, \"group\": 1}");
    CHECK_CONTAINS(text, "{\"kind\": \"RECV_B\", \"stage\": 0, \"microbatch\": 0, \"chunk\": 0, "
                         "\"peer\": 1, \"group\": 1}");
    CHECK_CONTAINS(text, "{\"kind\": \"RECV_B\", \"stage\": 0, \"microbatch\": 1, \"chunk\": 0, "
                         "\"peer\": 1, \"group\": 2}");
    CHECK_CONTAINS(text, "{\"kind\": \"RECV_F\", \"stage\": 1, \"microbatch\": 0, \"chunk\": 0, "
                         "\"peer\": 0, \"group\": 0}");
    CHECK_CONTAINS(text, "{\"kind\": \"SEND_B\", \"stage\": 1, \"microbatch\": 1, \"chunk\": 0, "
                         "\"peer\": 0, \"group\": 2}");
    /* compute ops carry neither */
    CHECK_CONTAINS(text, "{\"kind\": \"F\", \"stage\": 0, \"microbatch\": 0, \"chunk\": 0}");
    psched_free(text);
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_lowered_csv_import_errors_name_the_rule(void)
{
    static const struct {
        const char *text;
        psched_status status;
        const char *message;
    } rows[] = {
        {"0F0,[0SEND_F0]BATCH\n1RECV_F0,1F0\n", PSCHED_EPARSE,
         "line 1 column 5: \"[0SEND_F0]BATCH\" is not a whole action: a batched group holds at "
         "least two actions"},
        {"[0F0;0SEND_F0]BATCH\n1RECV_F0,1F0\n", PSCHED_EPARSE,
         "line 1 column 2: \"[0F0;0SEND_F0]BATCH\" is not a whole action: a batched group holds "
         "SEND/RECV actions only"},
        {"0F0,[0SEND_F0;0RECV_B0]\n1F0\n", PSCHED_EPARSE,
         "line 1 column 23: \"[0SEND_F0;0RECV_B0]\" is not a whole action: expected ';' or the "
         "end \"]BATCH\" of a batched group"},
        {"0F0,[0SEND_F0,0RECV_B0]BATCH\n1F0\n", PSCHED_EPARSE,
         "line 1 column 14: \"[0SEND_F0\" is not a whole action: expected ';' or the end "
         "\"]BATCH\" of a batched group"},
        {"# pipesched: chains=3\n0F0\n", PSCHED_EPARSE,
         "line 1 column 1: \"# pipesched: chains=3\" is not the header \"# pipesched: chains=N\" "
         "with N = 1 or 2 (no other '#' line is read)"},
        {"0F0,0B0\n# pipesched: chains=2\n", PSCHED_EPARSE,
         "line 2 column 1: \"# pipesched: chains=2\": a line starting with '#' is read only as the "
         "first line, the header \"# pipesched: chains=N\""},
        /* parsed, then the validator's matching-pair rule: the RECV has no SEND */
        {"0F0,0B0\n1RECV_F0,1F0,1B0\n", PSCHED_EINVALID, NULL},
        /* the rendezvous rule: both devices send first */
        {"0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n", PSCHED_OK, NULL},
        {"0F0,0F1,0SEND_F0,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
         "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n", PSCHED_EDEADLOCK,
         "deadlock: device 0 op 3 (0SEND_F1) waits for device 1 op 4 (1RECV_F1); device 1 op 3 "
         "(1SEND_B0) waits for device 0 op 4 (0RECV_B0)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        psched_schedule *s = NULL;
        psched_status st = psched_import_csv(rows[i].text, strlen(rows[i].text), NULL, &s);
        if (st == PSCHED_OK)
            st = psched_validate(s);
        CHECK_EQ_INT(st, rows[i].status);
        if (rows[i].message)
            CHECK_STR(psched_last_error(), rows[i].message);
        if (st != rows[i].status)
            fprintf(stderr, "  row %zu: %s\n", i, psched_last_error());
        psched_schedule_destroy(s);
    }
}

static void test_batch_flag_outside_comm_ops_is_refused_by_the_csv_export(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *on_compute[] = {"0F0+0SEND_F0", "1RECV_F0,1F0"};
    const char *before_compute[] = {"0F0,0SEND_F0+0B0", "1RECV_F0,1F0"};
    const char *at_end[] = {"0F0,0SEND_F0+", "1RECV_F0,1F0"};
    const char *const *cases[] = {on_compute, before_compute, at_end};
    const char *messages[] = {
        "device 0 op 0 (0F0) has BATCH_NEXT but is a compute op; a batched group holds SEND/RECV "
        "ops only",
        "device 0 op 1 (0SEND_F0) has BATCH_NEXT but the next op is a compute op; a batched "
        "group holds SEND/RECV ops only",
        "device 0 op 1 (0SEND_F0) has BATCH_NEXT but is the last op of its device; a batched "
        "group needs the op it chains to",
    };
    for (size_t i = 0; i < 3; i++) {
        psched_schedule *s = build_rows(plan, cases[i]);
        char *text = NULL;
        CHECK(s != NULL);
        if (!s)
            continue;
        CHECK_EQ_INT(psched_export(s, NULL, PSCHED_FORMAT_CSV_COMMS, 0, &text, NULL), PSCHED_EINVAL);
        CHECK_STR(psched_last_error(), messages[i]);
        CHECK(text == NULL);
        /* PyTorch's dialect has no groups to check */
        CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &text, NULL));
        psched_free(text);
        psched_schedule_destroy(s);
    }
    psched_plan_destroy(plan);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "# missing data file %s: cannot open it\n", path);
        return NULL;
    }
    char *buf = malloc(1 << 20);
    *len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    return buf;
}

static void test_pytorch_comms_file_is_valid_under_rendezvous(void)
{
    /* PyTorch's runtime posts each SEND/RECV as an asynchronous isend/irecv
     * and needs no batched groups, so its file could have been invalid under
     * strict rendezvous. It is valid: PyTorch's lowering (_add_send_recv)
     * emits a RECV only in a simulation step after the one that emitted its
     * SEND, so every device lists its comm ops in one global step order;
     * with no two devices waiting on each other at the same step, nothing
     * can deadlock (the same argument lower.c relies on). */
    char path[4096];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/pytorch/zb1p_2rank_2stagep_comms.csv", ref_dir);
    char *text = read_file(path, &len);
    CHECK(text != NULL);
    if (!text)
        return;
    psched_schedule *s = NULL;
    CHECK_OK(psched_import_csv(text, len, NULL, &s));
    if (s) {
        CHECK_EQ_INT(psched_plan_devices(psched_schedule_plan(s)), 2);
        CHECK_EQ_INT(psched_plan_chunks(psched_schedule_plan(s)), 2);
        CHECK_EQ_INT(psched_plan_microbatches(psched_schedule_plan(s)), 8);
        /* 3 stage pairs (0-1, 1-2, 2-3) x 2 directions x 8 mbs x 2 ops */
        CHECK_EQ_INT(count_comm_ops(s), 96);
        CHECK_OK(psched_validate(s));
        /* our PyTorch mode writes PyTorch's own file back byte for byte */
        char *back = NULL;
        CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &back, NULL));
        CHECK(back && strlen(back) == len && memcmp(back, text, len) == 0);
        psched_free(back);
    }
    psched_schedule_destroy(s);
    free(text);
}

/* ---- arguments */

static void test_lowering_refuses_bad_input(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP), *other = ts_plan(3, 2, 1,
                                                                                   PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, hand_compute), *l = NULL, *again = NULL;
    CHECK_EQ_INT(psched_lower_comm(NULL, NULL, &l), PSCHED_EINVAL);
    CHECK(l == NULL);
    CHECK_EQ_INT(psched_lower_comm(s, NULL, NULL), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_lower_comm(s, other, &l), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "psched_lower_comm: cost plan has 3 stages (devices x chunks) "
                                   "but the schedule has 2");
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    CHECK_EQ_INT(psched_lower_comm(l, NULL, &again), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "psched_lower_comm: device 0 op 1 (0SEND_F0) is already a "
                                   "comm op; lower a compute schedule");
    CHECK(again == NULL);
    const char *broken[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1"};
    psched_schedule *bad = ts_build(plan, broken);
    psched_schedule *out = NULL;
    CHECK_EQ_INT(psched_lower_comm(bad, NULL, &out), PSCHED_EINVALID);
    CHECK_STR(psched_last_error(), "device 0 op 3 (0B1): needs 1B1 which never runs");
    CHECK(out == NULL);
    psched_schedule_destroy(bad);
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(other);
    psched_plan_destroy(plan);
}

static void test_lowering_and_rendezvous_survive_every_allocation_failure(void)
{
    psched_plan *plan = tu_plan(3, 6, 2);
    psched_schedule *s = NULL, *l = NULL;
    psched_report *r = NULL;
    CHECK_OK(psched_generate(plan, "interleaved", &s));
    int lowered = 0, simulated = 0;
    for (long n = 0; n < 10000 && !lowered; n++) {
        psched__alloc_fail_after(n);
        psched_status st = psched_lower_comm(s, NULL, &l);
        psched__alloc_fail_after(-1);
        lowered = st == PSCHED_OK;
        if (!lowered) {
            CHECK_EQ_INT(st, PSCHED_ENOMEM);
            CHECK(l == NULL);
        }
    }
    for (long n = 0; n < 10000 && lowered && !simulated; n++) {
        psched__alloc_fail_after(n);
        psched_status st = psched_simulate(l, NULL, &r);
        psched__alloc_fail_after(-1);
        simulated = st == PSCHED_OK;
        if (!simulated)
            CHECK_EQ_INT(st, PSCHED_ENOMEM);
    }
    CHECK(lowered && simulated);
    psched_report_destroy(r);
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ---- async mode (PSCHED_LOWER_ASYNC) */

#define CHECK_STATUS(expr, want, text)                                                 \
    do {                                                                               \
        CHECK_EQ_INT((expr), (want));                                                  \
        CHECK_CONTAINS(psched_last_error(), (text));                                   \
    } while (0)

/* The hand example (1F1B, p=2, m=2; F costs 1, BW 2) with t_comm = 0.5.
 * Compute-only: 0F0 0..1, 0F1 1..2; 1F0 1.5..2.5 (0F0 + 0.5), 1B0
 * 2.5..4.5, 1F1 4.5..5.5, 1B1 5.5..7.5; 0B0 5..7 (1B0 + 0.5), 0B1 8..10.
 * The four transfers of the one device pair are released at 1, 2, 4.5
 * and 7.5, never overlapping on the link, so these are also the times the
 * lowering places by. Each SEND right after its producer; each RECV after
 * the receiver's units ending by its producer's end: 0RECV_B0 (key 4.5)
 * after 0F1 (ends 2), 0RECV_B1 (7.5) after 0B0 (7); 1RECV_F0 (1) and
 * 1RECV_F1 (2) before 1F0 (ends 2.5). */
static const char *const async_lowered[] = {
    "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1",
    "1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1",
};

static psched_status lower_async(const psched_schedule *s, const psched_plan *plan,
                                 psched_schedule **out)
{
    psched_lower_options o = PSCHED_LOWER_OPTIONS_INIT;
    o.mode = PSCHED_LOWER_ASYNC;
    return psched_lower_comm_ex(s, plan, &o, out);
}

static void test_async_hand_example_places_and_times_exactly(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_comm(plan, 0.5);
    psched_schedule *s = ts_build(plan, hand_compute), *l = NULL;
    CHECK_OK(lower_async(s, NULL, &l));
    CHECK(l != NULL);
    if (!l)
        goto out;
    CHECK_STR(render(l, 0), async_lowered[0]);
    CHECK_STR(render(l, 1), async_lowered[1]);
    CHECK_EQ_INT(psched_schedule_lower_mode(l), PSCHED_LOWER_ASYNC);
    CHECK_EQ_INT(psched_schedule_lower_mode(s), PSCHED_LOWER_RENDEZVOUS);
    CHECK_OK(psched_validate(l));
    /* Async run: posts never block. a (0F0 -> 1F0): SEND at 1, RECV at 0,
     * done 1.5; b: SEND at 2, done 2.5; c (1B0 -> 0B0): SEND at 4.5, RECV
     * at 2, done 5; 0B0 5..7; d: SEND at 7.5, RECV at 7, done 8; 0B1
     * 8..10 = the compute-only makespan. A comm op's times are its
     * transfer's completion. */
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(l, NULL, &r));
    double start[8], end[8];
    const double want0_start[8] = {0, 1.5, 1, 2.5, 5, 5, 8, 8};
    const double want0_end[8] = {1, 1.5, 2, 2.5, 5, 7, 8, 10};
    const double want1_start[8] = {1.5, 2.5, 1.5, 2.5, 5, 4.5, 5.5, 8};
    const double want1_end[8] = {1.5, 2.5, 2.5, 4.5, 5, 5.5, 7.5, 8};
    CHECK_OK(psched_report_op_times(r, 0, 0, 8, start, end));
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_DBL(start[i], want0_start[i]);
        CHECK_EQ_DBL(end[i], want0_end[i]);
    }
    CHECK_OK(psched_report_op_times(r, 1, 0, 8, start, end));
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_DBL(start[i], want1_start[i]);
        CHECK_EQ_DBL(end[i], want1_end[i]);
    }
    CHECK_EQ_DBL(psched_report_makespan(r), 10);
    psched_report_destroy(r);
    /* The same op lists run by a blocking runtime: each transfer starts
     * only when both sides reach it. 1RECV_F1 blocks device 1 from 1.5
     * (after a) until 0SEND_F1 is posted at 2.5 (0F1 1.5..2.5): done 3;
     * 1F0 3..4, 1B0 4..6, c done 6.5, 0B0 6.5..8.5, 1F1 6.5..7.5, 1B1
     * 7.5..9.5, d done 10, 0B1 10..12: 12, so the mode matters. */
    l->lower_mode = PSCHED_LOWER_RENDEZVOUS;
    CHECK_OK(psched_simulate(l, NULL, &r));
    CHECK_EQ_DBL(psched_report_makespan(r), 12);
    psched_report_destroy(r);
out:
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static psched_status validate_async_rows(const char *row0, const char *row1)
{
    const char *rows[] = {row0, row1};
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = build_rows(plan, rows);
    if (s)
        s->lower_mode = PSCHED_LOWER_ASYNC;
    psched_status st = s ? psched_validate(s) : PSCHED_ENOMEM;
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return st;
}

static void test_async_validator_checks_one_order_per_device_pair(void)
{
    /* 0RECV_B0 before 0SEND_F1 on device 0, after 1RECV_F1's match on
     * device 1: the pair's one stream would pair a send with a send */
    CHECK_STATUS(validate_async_rows("0F0,0SEND_F0,0F1,0RECV_B0,0SEND_F1,0B0,0RECV_B1,0B1",
                                     async_lowered[1]),
                 PSCHED_EINVALID, "call #3 from device 0 to device 1");
    CHECK_OK(validate_async_rows(async_lowered[0], async_lowered[1]));
    /* still one matching RECV per SEND, each RECV before its consumer */
    CHECK_STATUS(validate_async_rows("0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0B1",
                                     async_lowered[1]),
                 PSCHED_EINVALID, "no matching 0RECV_B1");
    CHECK_STATUS(validate_async_rows("0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0B1,0RECV_B1",
                                     async_lowered[1]),
                 PSCHED_EINVALID, "comes after its consumer");
}

static void test_async_lowering_keeps_the_compute_makespan(void)
{
    /* With t_comm = 0 no two transfers of a pair overlap on the link, so
     * every generator's async lowering simulates to its compute makespan;
     * the lowering is valid under async semantics and keeps the order. */
    const char *names[] = {"gpipe", "1f1b", "interleaved", "looped-bfs", "interleaved-zb",
                           "zb-h1", "zb-h2", "v-half", "v-zb", "dualpipev", "dualpipe"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        for (uint32_t p = 2; p <= 4; p++) {
            for (uint32_t v = 1; v <= 2; v++) {
                psched_plan *plan = ts_plan(p, 2 * p, v, PSCHED_PLACEMENT_LOOP);
                psched_schedule *s = NULL, *l = NULL;
                psched_report *rs = NULL, *rl = NULL;
                psched_plan_set_placement(plan, PSCHED_PLACEMENT_AUTO);
                if (psched_generate(plan, names[i], &s) == PSCHED_OK) {
                    CHECK_OK(lower_async(s, NULL, &l));
                    CHECK_OK(psched_validate(l));
                    CHECK_OK(psched_simulate(s, NULL, &rs));
                    CHECK_OK(psched_simulate(l, NULL, &rl));
                    if (rs && rl)
                        CHECK_EQ_DBL(psched_report_makespan(rl), psched_report_makespan(rs));
                }
                psched_report_destroy(rs);
                psched_report_destroy(rl);
                psched_schedule_destroy(l);
                psched_schedule_destroy(s);
                psched_plan_destroy(plan);
            }
        }
    }
}

static void test_lower_options_are_checked(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_schedule *s = ts_build(plan, hand_compute), *l = NULL;
    psched_lower_options o = PSCHED_LOWER_OPTIONS_INIT;
    o.version = 2;
    CHECK_STATUS(psched_lower_comm_ex(s, NULL, &o, &l), PSCHED_EINVAL, "version 2");
    o.version = 0;
    CHECK_STATUS(psched_lower_comm_ex(s, NULL, &o, &l), PSCHED_EINVAL, "version 0");
    o = (psched_lower_options)PSCHED_LOWER_OPTIONS_INIT;
    o.mode = (psched_lower_mode)7;
    CHECK_STATUS(psched_lower_comm_ex(s, NULL, &o, &l), PSCHED_EINVAL, "mode 7");
    CHECK(l == NULL);
    /* NULL options: psched_lower_comm()'s rendezvous lowering */
    CHECK_OK(psched_lower_comm_ex(s, NULL, NULL, &l));
    if (l) {
        CHECK_STR(render(l, 0), hand_lowered[0]);
        CHECK_STR(render(l, 1), hand_lowered[1]);
        CHECK_EQ_INT(psched_schedule_lower_mode(l), PSCHED_LOWER_RENDEZVOUS);
    }
    CHECK_EQ_INT(psched_schedule_lower_mode(NULL), PSCHED_LOWER_RENDEZVOUS);
    psched_schedule_destroy(l);
    l = NULL;
    /* async lowering and its simulation fail cleanly at every allocation */
    bool lowered = false, simulated = false;
    psched_report *r = NULL;
    for (long n = 0; n < 10000 && !lowered; n++) {
        psched__alloc_fail_after(n);
        psched_status st = lower_async(s, NULL, &l);
        psched__alloc_fail_after(-1);
        lowered = st == PSCHED_OK;
        if (!lowered)
            CHECK_EQ_INT(st, PSCHED_ENOMEM);
    }
    for (long n = 0; n < 10000 && lowered && !simulated; n++) {
        psched__alloc_fail_after(n);
        psched_status st = psched_simulate(l, NULL, &r);
        psched__alloc_fail_after(-1);
        simulated = st == PSCHED_OK;
        if (!simulated)
            CHECK_EQ_INT(st, PSCHED_ENOMEM);
    }
    CHECK(lowered && simulated);
    psched_report_destroy(r);
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        ref_dir = argv[1];
    RUN(test_hand_example_lowers_exactly);
    RUN(test_hand_example_without_groups_is_a_deadlock_cycle);
    RUN(test_every_generator_lowers_validates_and_keeps_its_compute_order);
    RUN(test_vshape_tip_needs_no_comm);
    RUN(test_single_device_lowers_to_itself);
    RUN(test_out_of_order_consumption_still_lowers);
    RUN(test_send_without_recv_is_reported);
    RUN(test_recv_without_send_is_reported);
    RUN(test_recv_after_its_consumer_is_reported);
    RUN(test_send_before_its_producer_is_reported);
    RUN(test_mismatched_microbatch_is_reported);
    RUN(test_compute_op_without_its_recv_is_reported);
    RUN(test_comm_between_stages_of_one_device_is_refused);
    RUN(test_send_from_the_last_stage_is_refused);
    RUN(test_batch_flag_on_a_compute_op_is_refused);
    RUN(test_duplicate_comm_op_is_refused);
    RUN(test_lowered_1f1b_keeps_the_compute_makespan);
    RUN(test_lowering_keeps_the_makespan_of_reference_orders);
    RUN(test_rendezvous_times_put_the_latency_on_the_transfer);
    RUN(test_comms_csv_keeps_the_groups_and_pytorch_mode_drops_them);
    RUN(test_json_lists_comm_ops_with_peer_and_group);
    RUN(test_lowered_csv_import_errors_name_the_rule);
    RUN(test_batch_flag_outside_comm_ops_is_refused_by_the_csv_export);
    RUN(test_pytorch_comms_file_is_valid_under_rendezvous);
    RUN(test_lowering_refuses_bad_input);
    RUN(test_lowering_and_rendezvous_survive_every_allocation_failure);
    RUN(test_async_hand_example_places_and_times_exactly);
    RUN(test_async_validator_checks_one_order_per_device_pair);
    RUN(test_async_lowering_keeps_the_compute_makespan);
    RUN(test_lower_options_are_checked);
    TEST_MAIN_END();
}
