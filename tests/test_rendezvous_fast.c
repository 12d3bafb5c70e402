/* The fast path of the rendezvous check (lib/core/rendezvous_fast.c)
 * against the general rendezvous engine (lib/core/rendezvous.c): what the
 * fast path does its own way is pinned here. Duplicated calls are refused
 * as a transfer completed twice (or never matched), not by a bit per
 * posted call; a channel's calls are one signed count and a ring; unknown
 * flag bits and pair shapes other than the two it knows are left to the
 * engine; a channel queue longer than its 16 slots is left to the engine;
 * devices run last-woken first. Every case compares with the engine: the
 * fast path may decline a valid schedule, never accept an invalid one. */
#include "execute.h"
#include "testsched.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct row_op {
    unsigned kind; /* a psched_op_kind */
    uint32_t stage, mb, flags;
} row_op;

/* A rendezvous-mode schedule of a 2-device (or p-device) loop plan from
 * per-device op lists. */
static psched_schedule *build(uint32_t p, uint32_t m, const row_op *const *rows,
                              const size_t *counts)
{
    psched_plan *plan = tu_plan(p, m, 1), *copy;
    psched_builder *b;
    if (!plan)
        return NULL;
    psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP);
    if (psched_plan_clone(plan, &copy) || psched__builder_create(copy, &b)) {
        psched_plan_destroy(plan);
        return NULL;
    }
    psched_plan_destroy(plan);
    for (uint32_t d = 0; d < p; d++)
        for (size_t i = 0; i < counts[d]; i++)
            psched_builder_append(b, d, (psched_op_kind)rows[d][i].kind, rows[d][i].stage, rows[d][i].mb,
                                  rows[d][i].flags);
    psched_schedule *out = NULL;
    if (psched__builder_finish(b, copy, "test", &out))
        psched_plan_destroy(copy);
    psched__builder_destroy(b);
    return out;
}

enum { F = PSCHED_OP_F, BW = PSCHED_OP_BW, SF = PSCHED_OP_SEND_F, RF = PSCHED_OP_RECV_F,
       SB = PSCHED_OP_SEND_B, RB = PSCHED_OP_RECV_B, BATCH = PSCHED_OP_BATCH_NEXT };

/* Issue 4's hand example, lowered: 2 devices, 2 micro-batches. */
static const row_op hand0[] = {{F, 0, 0, 0},      {SF, 0, 0, 0}, {F, 0, 1, 0},
                               {SF, 0, 1, BATCH}, {RB, 0, 0, 0}, {BW, 0, 0, 0},
                               {RB, 0, 1, 0},     {BW, 0, 1, 0}};
static const row_op hand1[] = {{RF, 1, 0, 0}, {F, 1, 0, 0},  {BW, 1, 0, 0}, {SB, 1, 0, BATCH},
                               {RF, 1, 1, 0}, {F, 1, 1, 0},  {BW, 1, 1, 0}, {SB, 1, 1, 0}};

/* The hand example with op `at` of device `dev` replaced, or a copy of it
 * inserted after it (`insert`). */
static psched_schedule *hand_variant(uint32_t dev, size_t at, row_op op, bool insert)
{
    row_op r[2][9];
    size_t n[2] = {8, 8};
    memcpy(r[0], hand0, sizeof hand0);
    memcpy(r[1], hand1, sizeof hand1);
    if (insert) {
        memmove(&r[dev][at + 1], &r[dev][at], (n[dev] - at) * sizeof op);
        n[dev]++;
    }
    r[dev][at] = op;
    const row_op *rows[] = {r[0], r[1]};
    return build(2, 2, rows, n);
}

/* Fast says valid only when the engine does; returns the fast verdict. */
static bool fast_agrees(const psched_schedule *s, psched_status *general)
{
    bool fast = psched__rendezvous_fast_check(s);
    *general = psched__execute_rendezvous(s, NULL, NULL, NULL);
    CHECK(!fast || *general == PSCHED_OK);
    return fast;
}

static void test_hand_example_is_accepted(void)
{
    const row_op *rows[] = {hand0, hand1};
    size_t n[] = {8, 8};
    psched_schedule *s = build(2, 2, rows, n);
    psched_status general = PSCHED_EINVAL; /* when s is NULL (a failed CHECK) */
    CHECK(s && fast_agrees(s, &general));
    CHECK_EQ_INT(general, PSCHED_OK);
    psched_schedule_destroy(s);
}

/* A SEND or RECV posted twice: in the same group (both copies queued at
 * once), in consecutive groups, on one side or on both (then every call
 * has a partner and only the second completion of the transfer shows it). */
static void test_duplicated_calls_are_refused(void)
{
    struct {
        uint32_t dev;
        size_t at;
        row_op op;
        bool insert;
    } one[] = {
        {0, 1, {SF, 0, 0, 0}, true},         /* SEND twice, one after the other */
        {0, 1, {SF, 0, 0, BATCH}, true},     /* SEND twice in one group */
        {1, 0, {RF, 1, 0, 0}, true},         /* RECV twice */
        {1, 0, {RF, 1, 0, BATCH}, true},     /* RECV twice in one group */
        {0, 3, {SF, 0, 0, BATCH}, false},    /* a SEND of micro-batch 0 in place of 1 */
        {1, 4, {RF, 1, 0, 0}, false},        /* a RECV of micro-batch 0 in place of 1 */
        {0, 6, {RB, 0, 0, 0}, false},        /* RECV_B of micro-batch 0 twice */
        {1, 7, {SB, 1, 0, 0}, false},        /* SEND_B of micro-batch 0 twice */
    };
    for (size_t i = 0; i < sizeof one / sizeof *one; i++) {
        psched_schedule *s = hand_variant(one[i].dev, one[i].at, one[i].op, one[i].insert);
        psched_status general = PSCHED_EINVAL;
        CHECK(s && !fast_agrees(s, &general));
        CHECK(general != PSCHED_OK);
        psched_schedule_destroy(s);
    }
    /* both sides duplicated, one group each: SENDs and RECVs pair up, the
     * transfer completes twice */
    row_op r0[9], r1[9];
    memcpy(r0, hand0, sizeof hand0);
    memcpy(r1, hand1, sizeof hand1);
    memmove(&r0[2], &r0[1], 7 * sizeof *r0);
    r0[1].flags = BATCH;
    memmove(&r1[1], &r1[0], 8 * sizeof *r1);
    r1[0].flags = BATCH;
    const row_op *rows[] = {r0, r1};
    size_t n[] = {9, 9};
    psched_schedule *s = build(2, 2, rows, n);
    psched_status general = PSCHED_EINVAL; /* when s is NULL (a failed CHECK) */
    CHECK(s && !fast_agrees(s, &general));
    CHECK_EQ_INT(general, PSCHED_EINVALID);
    psched_schedule_destroy(s);
    /* the same in separate groups */
    r0[1].flags = 0;
    r1[0].flags = 0;
    s = build(2, 2, rows, n);
    CHECK(s && !fast_agrees(s, &general));
    CHECK_EQ_INT(general, PSCHED_EINVALID);
    psched_schedule_destroy(s);
}

/* Flag bits the fast path does not know, on a compute or a comm op, and a
 * pair flag on a comm op: left to the engine. */
static void test_unknown_flags_are_left_to_the_engine(void)
{
    const row_op *rows[] = {hand0, hand1};
    size_t n[] = {8, 8};
    uint8_t flags[] = {0x4, 0x4, 0x4 | BATCH, PSCHED_OP_OVERLAP_NEXT};
    size_t at[] = {0, 1, 3, 1}; /* F0, SEND_F0, SEND_F1 (grouped), SEND_F0 */
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        psched_schedule *s = build(2, 2, rows, n);
        psched_status general = PSCHED_EINVAL;
        CHECK(s != NULL);
        if (!s)
            continue;
        s->ops[s->offset[0] + at[i]].flags = flags[i];
        CHECK(!fast_agrees(s, &general));
        psched_schedule_destroy(s);
    }
}

/* Device 0 sends all m activations in one group, device 1 receives them
 * in one group, then the gradients likewise: valid for any m. The queue of
 * whichever side posts first holds m calls: up to 16 the fast path's,
 * beyond the engine's alone. */
static psched_schedule *one_group_each_way(uint32_t m)
{
    row_op *r0 = calloc(4 * (size_t)m, sizeof *r0), *r1 = calloc(4 * (size_t)m, sizeof *r1);
    size_t n0 = 0, n1 = 0;
    for (uint32_t k = 0; k < m; k++)
        r0[n0++] = (row_op){F, 0, k, 0};
    for (uint32_t k = 0; k < m; k++)
        r0[n0++] = (row_op){SF, 0, k, k + 1 < m ? BATCH : 0};
    for (uint32_t k = 0; k < m; k++)
        r0[n0++] = (row_op){RB, 0, k, k + 1 < m ? BATCH : 0};
    for (uint32_t k = 0; k < m; k++)
        r0[n0++] = (row_op){BW, 0, k, 0};
    for (uint32_t k = 0; k < m; k++)
        r1[n1++] = (row_op){RF, 1, k, k + 1 < m ? BATCH : 0};
    for (uint32_t k = 0; k < m; k++) {
        r1[n1++] = (row_op){F, 1, k, 0};
        r1[n1++] = (row_op){BW, 1, k, 0};
    }
    for (uint32_t k = 0; k < m; k++)
        r1[n1++] = (row_op){SB, 1, k, k + 1 < m ? BATCH : 0};
    const row_op *rows[] = {r0, r1};
    size_t n[] = {n0, n1};
    psched_schedule *s = build(2, m, rows, n);
    free(r0);
    free(r1);
    return s;
}

static void test_long_channel_queues_are_left_to_the_engine(void)
{
    psched_status general = PSCHED_EINVAL; /* when s is NULL (a failed CHECK) */
    psched_schedule *s = one_group_each_way(16);
    CHECK(s && fast_agrees(s, &general));
    CHECK_EQ_INT(general, PSCHED_OK);
    psched_schedule_destroy(s);
    s = one_group_each_way(17);
    CHECK(s && !fast_agrees(s, &general));
    CHECK_EQ_INT(general, PSCHED_OK);
    CHECK_OK(psched_validate(s));
    psched_schedule_destroy(s);
}

/* ---- mutants of generated, lowered schedules ---- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

/* Changes test_lower_fast.c's mutants do not make: another comm kind, a
 * copy of another op of the same device, another chunk's stage, a long
 * move, an op's group flag moved to its neighbour, two ops of a device
 * swapped at a distance. */
static void mutate(psched_schedule *s)
{
    uint32_t d = ts_rand(&rng, s->devices);
    size_t first = s->offset[d], n = s->offset[d + 1] - first;
    if (n < 2)
        return;
    psched_op *o = &s->ops[first], t;
    size_t i = ts_rand(&rng, (uint32_t)n), j = ts_rand(&rng, (uint32_t)n);
    switch (ts_rand(&rng, 6)) {
    case 0:
        if (o[i].kind >= PSCHED_OP_SEND_F && o[i].kind <= PSCHED_OP_RECV_B)
            o[i].kind = (uint8_t)(PSCHED_OP_SEND_F + ts_rand(&rng, 4));
        break;
    case 1:
        o[i] = o[j];
        break;
    case 2:
        o[i].stage += s->devices * (ts_rand(&rng, 2) ? 1 : (uint32_t)-1);
        break;
    case 3: {
        t = o[i];
        if (i < j)
            memmove(&o[i], &o[i + 1], (j - i) * sizeof t);
        else
            memmove(&o[j + 1], &o[j], (i - j) * sizeof t);
        o[j] = t;
        break;
    }
    case 4:
        if (i + 1 < n) {
            uint8_t f = o[i].flags & PSCHED_OP_BATCH_NEXT;
            o[i].flags ^= f;
            o[i + 1].flags |= f;
        }
        break;
    default:
        t = o[i];
        o[i] = o[j];
        o[j] = t;
        break;
    }
}

static void test_mutants_are_never_accepted_when_the_engine_refuses(void)
{
    int lowered = 0, with_pairs = 0, checked = 0, valid = 0, accepted = 0;
    for (size_t gi = 0; gi < psched_generator_count(); gi++) {
        const psched_generator *gen = psched_generator_at(gi);
        if (psched_generator_is_exact(gen))
            continue;
        for (uint32_t p = 2; p <= 4; p++) {
            for (uint32_t v = 1; v <= 2; v++) {
                psched_plan *plan = tu_plan(p, 2 * p, v);
                psched_schedule *s = NULL, *l = NULL;
                if (!plan)
                    continue;
                if (psched_generate(plan, gen->name, &s) == PSCHED_OK &&
                    psched_lower_comm(s, NULL, &l) == PSCHED_OK) {
                    psched_status general;
                    bool fast = fast_agrees(l, &general);
                    CHECK(fast == (general == PSCHED_OK));
                    lowered += fast;
                    bool pairs = false;
                    for (size_t g = 0; g < l->offset[l->devices]; g++)
                        pairs |= (l->ops[g].flags & PSCHED_OP_OVERLAP_NEXT) != 0;
                    with_pairs += pairs && fast;
                    for (int k = 0; k < 60; k++) {
                        psched_schedule *m = ts_copy(l);
                        for (uint32_t x = ts_rand(&rng, 3); x < 3; x++)
                            mutate(m);
                        bool mf = fast_agrees(m, &general);
                        if (mf && general != PSCHED_OK)
                            fprintf(stderr, "  %s p=%u v=%u: a mutant accepted, the engine "
                                    "says %s\n", gen->name, p, v, psched_last_error());
                        checked++;
                        valid += general == PSCHED_OK;
                        accepted += mf;
                        psched_schedule_destroy(m);
                    }
                }
                psched_schedule_destroy(l);
                psched_schedule_destroy(s);
                psched_plan_destroy(plan);
            }
        }
    }
    fprintf(stderr, "  %d lowered schedules accepted (%d with overlapped pairs), %d mutants "
            "(%d valid, %d of them accepted by the fast path)\n", lowered, with_pairs, checked,
            valid, accepted);
    CHECK(lowered > 40);
    CHECK(with_pairs > 0);
    CHECK(checked > 2000);
    CHECK(accepted > 0);
}

int main(void)
{
    RUN(test_hand_example_is_accepted);
    RUN(test_duplicated_calls_are_refused);
    RUN(test_unknown_flags_are_left_to_the_engine);
    RUN(test_long_channel_queues_are_left_to_the_engine);
    RUN(test_mutants_are_never_accepted_when_the_engine_refuses);
    TEST_MAIN_END();
}
