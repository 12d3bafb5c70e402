/* Comm lowering of schedules with activation copies (OFFLOAD/RELOAD,
 * issue 18 item 4): the lowered order of offloaded 1F1B p = 2, m = 2 by
 * hand, every generator x offload policy x lowering mode over a grid, the
 * csv-comms round trip, and the rendezvous engine's rules for copies. */
#include "execute.h"
#include "testsched.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

/* Device d as its csv-comms row (a group "[a;b]BATCH"). */
static char *row(const psched_schedule *s, uint32_t d)
{
    char *text = NULL;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV_COMMS, 0, &text, NULL));
    if (!text)
        return NULL;
    char *at = text;
    for (uint32_t i = 0; i < d && at; i++) {
        at = strchr(at, '\n');
        at = at ? at + 1 : NULL;
    }
    char *out = at ? strndup(at, strcspn(at, "\n")) : NULL;
    free(text);
    return out;
}

static void check_rows(const psched_schedule *s, const char *const *want, uint32_t n)
{
    for (uint32_t d = 0; d < n; d++) {
        char *got = row(s, d);
        CHECK_STR(got ? got : "(none)", want[d]);
        free(got);
    }
}

/* 1F1B p = 2, m = 2, unit costs (F 1, B 1, W 1: BW 2), t_comm 0, every
 * activation offloaded (docs/simulator.md "Activation offload"; the
 * transform's lists are derived in test_offload.c):
 *   d0: 0F0 0OFFLOAD0 0RELOAD0 0F1 0OFFLOAD1 0RELOAD1 0B0 0B1
 *   d1: 1F0 1OFFLOAD0 1RELOAD0 1B0 1F1 1OFFLOAD1 1RELOAD1 1B1
 * With copies that take no time (PCIe bandwidth unset) the compute times
 * are those of plain 1F1B, so the comm ops land where test_lower.c's hand
 * example puts them (0SEND_F0 after 0F0; {0SEND_F1, 0RECV_B0} after 0F1
 * meeting {1SEND_B0, 1RECV_F1} after 1B0; 0RECV_B1 before 0B1; 1RECV_F0
 * first; 1SEND_B1 last), and each copy stays right behind the compute op
 * it follows, ahead of those comm ops. */
static const char *const by_hand[] = {
    "0F0,0OFFLOAD0,0RELOAD0,0SEND_F0,0F1,0OFFLOAD1,0RELOAD1,[0SEND_F1;0RECV_B0]BATCH,0B0,"
    "0RECV_B1,0B1",
    "1RECV_F0,1F0,1OFFLOAD0,1RELOAD0,1B0,[1SEND_B0;1RECV_F1]BATCH,1F1,1OFFLOAD1,1RELOAD1,1B1,"
    "1SEND_B1",
};

static void test_offload_all_1f1b_p2_m2_lowers_by_hand(void)
{
    psched_plan *plan = tu_plan(2, 2, 0);
    psched_schedule *s = NULL, *o = NULL, *l = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    CHECK_OK(psched_offload(s, NULL, PSCHED_OFFLOAD_ALL, 0, &o));
    CHECK_OK(psched_lower_comm(o, NULL, &l));
    if (l) {
        check_rows(l, by_hand, 2);
        CHECK_OK(psched_validate(l));
        /* plain 1F1B p = 2, m = 2: d1 runs F0 [1,2], B0 [2,4], F1 [4,5],
         * B1 [5,7]; d0's B1 [7,9] */
        psched_report *r = NULL;
        CHECK_OK(psched_simulate(l, NULL, &r));
        if (r)
            CHECK_EQ_DBL(psched_report_makespan(r), 9);
        psched_report_destroy(r);
    }
    psched_schedule_destroy(l);
    /* Copies of 0.5 (one memory unit over PCIe bandwidth 2): test_offload.c
     * derives the compute times d0 0F0 [0,1], 0F1 [1,2], 0B0 [5,7], 0B1
     * [9,11]; d1 1F0 [1,2], RELOAD0 [2.5,3], 1B0 [3,5], 1F1 [5,6], RELOAD1
     * [6.5,7], 1B1 [7,9]. The comm ops keep their places (each still meets
     * its peer where the compute-only lowering put it: d0 is idle from 2 to
     * 5, while d1 waits for its copies), and under rendezvous semantics the
     * group {0SEND_F1, 0RECV_B0} posted at 2 completes at 5 with d1's, so
     * every compute op keeps the time above: makespan 11. */
    CHECK_OK(psched_plan_set_pcie_bandwidth(plan, 2));
    psched_schedule_destroy(o);
    o = NULL;
    CHECK_OK(psched_offload(s, plan, PSCHED_OFFLOAD_ALL, 0, &o));
    CHECK_OK(psched_lower_comm(o, plan, &l));
    if (l) {
        check_rows(l, by_hand, 2);
        psched_report *r = NULL;
        CHECK_OK(psched_simulate(l, plan, &r));
        if (r) {
            CHECK_EQ_DBL(psched_report_makespan(r), 11);
            /* RELOAD1 of d1: issued at 6 (after 1F1), copy stream free
             * after OFFLOAD1 [6,6.5] */
            size_t g = l->offset[1];
            while (l->ops[g].kind != PSCHED_OP_RELOAD || l->ops[g].microbatch != 1)
                g++;
            CHECK_EQ_DBL(r->start[g], 6.5);
            CHECK_EQ_DBL(r->end[g], 7);
        }
        psched_report_destroy(r);
    }
    psched_schedule_destroy(l);
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* The ops of s without those for which drop() holds, as one text. */
static char *projection(const psched_schedule *s, bool (*drop)(uint8_t))
{
    size_t cap = 64 * (s->offset[s->devices] + s->devices) + 1, at = 0;
    char *text = malloc(cap);
    for (uint32_t d = 0; d < s->devices && text; d++) {
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            if (drop(s->ops[g].kind))
                continue;
            psched_op o = s->ops[g];
            if (o.kind >= PSCHED_OP_SEND_F && o.kind <= PSCHED_OP_RECV_B)
                o.flags &= (uint8_t)~PSCHED_OP_BATCH_NEXT; /* a copy may sit in between */
            at += (size_t)psched__op_text(&o, text + at, cap - at);
            at += (size_t)snprintf(text + at, cap - at, "/%x,", o.flags);
        }
        at += (size_t)snprintf(text + at, cap - at, "\n");
    }
    return text;
}

static bool is_comm(uint8_t k)
{
    return k >= PSCHED_OP_SEND_F && k <= PSCHED_OP_RECV_B;
}

static bool is_copy(uint8_t k)
{
    return psched__is_copy(k);
}

/* One (generator, shape, policy, mode): the lowered schedule validates;
 * without its comm ops it is the offloaded input; without its copies it is
 * the lowering of the input without copies (copies take no time here, so
 * the times, and with them every comm op's place, are the same); its
 * csv-comms text imports back to the same ops. Returns 1 when the
 * generator accepts the shape. */
static int lower_one(const char *name, uint32_t p, uint32_t v, uint32_t m,
                     psched_offload_policy policy, psched_lower_mode mode)
{
    psched_plan *plan = tu_plan(p, m, 0);
    psched_plan_set_chunks(plan, v);
    psched_schedule *s = NULL, *o = NULL, *l = NULL, *bare = NULL, *back = NULL;
    if (psched_generate(plan, name, &s) != PSCHED_OK) {
        psched_plan_destroy(plan);
        return 0;
    }
    psched_lower_options opt = PSCHED_LOWER_OPTIONS_INIT;
    opt.mode = mode;
    CHECK_OK(psched_offload(s, NULL, policy, 1, &o));
    if (o)
        CHECK_OK(psched_lower_comm_ex(o, NULL, &opt, &l));
    CHECK_OK(psched_lower_comm_ex(s, NULL, &opt, &bare));
    if (l && bare) {
        if (psched_validate(l) != PSCHED_OK)
            fprintf(stderr, "  %s p=%u v=%u m=%u policy %d mode %d: %s\n", name, p, v, m,
                    (int)policy, (int)mode, psched_last_error());
        CHECK_OK(psched_validate(l));
        char *a = projection(l, is_comm), *b = projection(o, is_comm);
        CHECK_STR(a, b);
        free(a);
        free(b);
        a = projection(l, is_copy);
        b = projection(bare, is_copy);
        CHECK_STR(a, b);
        free(a);
        free(b);
        char *text = NULL;
        CHECK_OK(psched_export(l, NULL, PSCHED_FORMAT_CSV_COMMS, 0, &text, NULL));
        if (text)
            CHECK_OK(psched_import_csv(text, strlen(text), l->plan, &back));
        if (back) {
            CHECK_EQ_INT(back->offset[back->devices], l->offset[l->devices]);
            CHECK(memcmp(back->ops, l->ops, l->offset[l->devices] * sizeof *l->ops) == 0);
            /* a file does not record the mode: rendezvous semantics */
            if (mode == PSCHED_LOWER_RENDEZVOUS)
                CHECK_OK(psched_validate(back));
        }
        free(text);
        /* PyTorch's dialect has no spelling for a copy */
        text = NULL;
        bool copies = false;
        for (size_t g = 0; g < l->offset[l->devices]; g++)
            copies |= is_copy(l->ops[g].kind);
        if (copies) {
            CHECK_EQ_INT(psched_export(l, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &text, NULL),
                         PSCHED_EUNSUPPORTED);
            CHECK_CONTAINS(psched_last_error(), "no OFFLOAD/RELOAD actions");
        }
        free(text);
    }
    psched_schedule_destroy(back);
    psched_schedule_destroy(bare);
    psched_schedule_destroy(l);
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return 1;
}

static void test_every_generator_and_policy_lowers_with_copies(void)
{
    static const psched_offload_policy policies[] = {PSCHED_OFFLOAD_ALL, PSCHED_OFFLOAD_SELECTIVE,
                                                     PSCHED_OFFLOAD_BUDGET};
    for (size_t i = 0; i < psched_generator_count(); i++) {
        const char *name = psched_generator_at(i)->name;
        if (psched_generator_is_exact(psched_generator_at(i)))
            continue; /* up to its time limit per plan */
        int checked = 0;
        for (uint32_t p = 1; p <= 4; p++) {
            uint32_t ms[] = {p, 2 * p + 1, 4 * p};
            for (uint32_t v = 1; v <= 2; v++)
                for (size_t k = 0; k < 3; k++)
                    for (size_t q = 0; q < 3; q++)
                        for (int mode = 0; mode < 2; mode++)
                            checked += lower_one(name, p, v, ms[k], policies[q],
                                                 (psched_lower_mode)mode);
        }
        if (checked == 0)
            fprintf(stderr, "  %s accepted no configuration of the grid\n", name);
        CHECK(checked > 0);
    }
}

/* The rendezvous engine's rules for copies in a lowered schedule. */
static void test_rendezvous_rules_for_copies(void)
{
    psched_plan *plan = tu_plan(2, 1, 0);
    psched_plan_set_chunks(plan, 1);
    psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP);
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"0F0,0SEND_F0,0OFFLOAD0,0RELOAD0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n", NULL},
        {"0F0,0SEND_F0,0OFFLOAD0,0RECV_B0,0B0,0RELOAD0\n1RECV_F0,1F0,1B0,1SEND_B0\n",
         "device 0 op 4 (0B0): needs device 0 op 5 (0RELOAD0), which comes later on the same "
         "device"},
        {"0OFFLOAD0,0F0,0SEND_F0,0RELOAD0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n",
         "device 0 op 0 (0OFFLOAD0): needs device 0 op 1 (0F0), which comes later on the same "
         "device"},
        {"0F0,0SEND_F0,0RELOAD0,0OFFLOAD0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n",
         "device 0 op 2 (0RELOAD0): needs device 0 op 3 (0OFFLOAD0), which comes later on the "
         "same device"},
        {"0F0,0SEND_F0,0OFFLOAD0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n",
         "has no matching 0RELOAD0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        psched_schedule *s = ts_import(plan, cases[i].text);
        CHECK(s != NULL);
        if (!s)
            continue;
        if (!cases[i].message) {
            CHECK_OK(psched_validate(s));
        } else {
            CHECK_EQ_INT(psched_validate(s), PSCHED_EINVALID);
            CHECK_CONTAINS(psched_last_error(), cases[i].message);
        }
        psched_schedule_destroy(s);
    }
    /* a batch flag reaching from a comm op onto a copy */
    psched_plan *copy;
    CHECK_OK(psched_plan_clone(plan, &copy));
    psched_builder *b;
    CHECK_OK(psched__builder_create(copy, &b));
    psched_builder_append(b, 0, PSCHED_OP_F, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_SEND_F, 0, 0, PSCHED_OP_BATCH_NEXT);
    psched_builder_append(b, 0, PSCHED_OP_OFFLOAD, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_RELOAD, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_RECV_B, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_BW, 0, 0, 0);
    psched_builder_append(b, 1, PSCHED_OP_RECV_F, 1, 0, 0);
    psched_builder_append(b, 1, PSCHED_OP_F, 1, 0, 0);
    psched_builder_append(b, 1, PSCHED_OP_BW, 1, 0, 0);
    psched_builder_append(b, 1, PSCHED_OP_SEND_B, 1, 0, 0);
    psched_schedule *bad = NULL;
    CHECK_OK(psched__builder_finish(b, copy, "bad", &bad));
    psched__builder_destroy(b);
    CHECK_EQ_INT(psched_validate(bad), PSCHED_EINVALID);
    CHECK_CONTAINS(psched_last_error(), "device 0 op 1 (0SEND_F0): BATCH_NEXT needs a next comm op");
    char *text = NULL;
    CHECK_EQ_INT(psched_export(bad, NULL, PSCHED_FORMAT_CSV_COMMS, 0, &text, NULL), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "the next op is a copy op; a batched group holds SEND/RECV");
    free(text);
    psched_schedule_destroy(bad);
    /* a copy inside a batched group's cell */
    psched_schedule *s = NULL;
    const char *cell = "0F0,[0SEND_F0;0OFFLOAD0]BATCH,0RELOAD0,0RECV_B0,0B0\n"
                       "1RECV_F0,1F0,1B0,1SEND_B0\n";
    CHECK_EQ_INT(psched_import_csv(cell, strlen(cell), plan, &s), PSCHED_EPARSE);
    CHECK_CONTAINS(psched_last_error(), "a batched group holds SEND/RECV actions only");
    psched_plan_destroy(plan);
}

/* A lowered schedule with copies simulates with the copy stream's times
 * and the memory they free and take (as for the compute schedule). */
static void test_lowered_schedule_keeps_the_offloaded_peak(void)
{
    psched_plan *plan = tu_plan(4, 8, 0);
    CHECK_OK(psched_plan_set_pcie_bandwidth(plan, 4));
    psched_schedule *s = NULL, *o = NULL, *l = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    CHECK_OK(psched_offload(s, NULL, PSCHED_OFFLOAD_ALL, 0, &o));
    CHECK_OK(psched_lower_comm(o, NULL, &l));
    psched_report *ro = NULL, *rl = NULL;
    if (l) {
        CHECK_OK(psched_simulate(o, NULL, &ro));
        CHECK_OK(psched_simulate(l, NULL, &rl));
    }
    if (ro && rl) {
        /* t_comm = 0: a lowered schedule whose transfers meet at once runs
         * every op at its compute-schedule time (1F1B: test_lower.c) */
        CHECK_EQ_DBL(psched_report_makespan(rl), psched_report_makespan(ro));
        for (uint32_t d = 0; d < 4; d++)
            CHECK_EQ_DBL(rl->peak[d], ro->peak[d]);
    }
    psched_report_destroy(ro);
    psched_report_destroy(rl);
    psched_schedule_destroy(l);
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

int main(void)
{
    RUN(test_offload_all_1f1b_p2_m2_lowers_by_hand);
    RUN(test_every_generator_and_policy_lowers_with_copies);
    RUN(test_rendezvous_rules_for_copies);
    RUN(test_lowered_schedule_keeps_the_offloaded_peak);
    TEST_MAIN_END();
}
