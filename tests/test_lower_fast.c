/* The fast path of comm lowering (lib/core/lower_fast.c) against the
 * general lowering (lib/core/lower.c, the oracle): the same ops, flags and
 * mode for every generator over a grid of small shapes and several cost
 * settings, and the fast path really taken where it should be. */
#include "execute.h"
#include "testsched.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_schedule(const psched_schedule *a, const psched_schedule *b)
{
    if (a->devices != b->devices || a->lower_mode != b->lower_mode ||
        strcmp(a->name, b->name) != 0)
        return false;
    for (uint32_t d = 0; d <= a->devices; d++)
        if (a->offset[d] != b->offset[d])
            return false;
    return memcmp(a->ops, b->ops, a->offset[a->devices] * sizeof *a->ops) == 0;
}

/* Costs: 0 unit, 1 uneven per stage with t_comm 0.5, 2 unit with t_comm 1,
 * 3 W free (a zero-cost consumer never feeds a transfer, but a free W sits
 * in the gaps), 4 fractional costs whose sums round. */
static psched_plan *costs_plan(uint32_t p, uint32_t v, uint32_t m, int which)
{
    psched_plan *plan = tu_plan(p, m, v);
    if (!plan)
        return NULL;
    uint32_t S = p * v;
    switch (which) {
    case 1:
        for (uint32_t s = 0; s < S; s++)
            psched_plan_set_stage_cost(plan, s, 1 + (s * 7 % 5) * 0.25, 1.5 + (s % 3),
                                       0.5 + (s % 2));
        psched_plan_set_comm(plan, 0.5);
        break;
    case 2:
        psched_plan_set_comm(plan, 1);
        break;
    case 3:
        psched_plan_set_cost(plan, 1, 1, 0);
        break;
    case 4:
        for (uint32_t s = 0; s < S; s++)
            psched_plan_set_stage_cost(plan, s, 0.1 * (s + 1), 0.3, 0.7);
        psched_plan_set_comm(plan, 0.1);
        break;
    }
    return plan;
}

static int fast_taken, compared;

static void compare_one(const char *name, uint32_t p, uint32_t v, uint32_t m, int which)
{
    psched_plan *plan = costs_plan(p, v, m, which);
    psched_schedule *s = NULL;
    if (!plan || psched_generate(plan, name, &s) != PSCHED_OK) {
        psched_plan_destroy(plan);
        return;
    }
    psched_schedule *fast = NULL, *general = NULL, *direct = NULL;
    psched_status a = psched_lower_comm(s, NULL, &fast);
    psched_status b = psched__lower_comm_general(s, NULL, NULL, &general);
    CHECK_EQ_INT(a, b);
    if (fast && general) {
        compared++;
        if (!same_schedule(fast, general))
            fprintf(stderr, "  %s p=%u v=%u m=%u costs %d: the fast path differs\n", name, p,
                    v, m, which);
        CHECK(same_schedule(fast, general));
    }
    if (psched__lower_fast(s, NULL, &direct)) {
        fast_taken++;
        CHECK(general && same_schedule(direct, general));
    }
    psched_schedule_destroy(direct);
    psched_schedule_destroy(fast);
    psched_schedule_destroy(general);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_fast_lowering_is_the_general_one(void)
{
    for (size_t i = 0; i < psched_generator_count(); i++) {
        const char *name = psched_generator_at(i)->name;
        if (psched_generator_is_exact(psched_generator_at(i)))
            continue; /* up to its time limit per plan */
        for (uint32_t p = 1; p <= 5; p++) {
            uint32_t ms[] = {1, p, 2 * p + 1, 4 * p};
            for (uint32_t v = 1; v <= 3; v++)
                for (size_t k = 0; k < 4; k++)
                    for (int which = 0; which < 5; which++)
                        compare_one(name, p, v, ms[k], which);
        }
    }
    fprintf(stderr, "  %d lowerings compared, the fast path took %d\n", compared, fast_taken);
    CHECK(compared > 1000);
    CHECK(fast_taken > compared / 2);
}

/* A larger one, where the idle-time search runs long. */
static void test_fast_lowering_at_a_larger_size(void)
{
    static const char *const names[] = {"interleaved", "1f1b", "zb-h1", "v-half", "dualpipev"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int which = 0; which < 5; which++)
            compare_one(names[i], 8, 2, 64, which);
    /* 65,536 ops on each device: positions take 32 bits */
    compare_one("1f1b", 2, 1, 32768, 1);
}

/* The fast path is compiled once per representation of its working
 * arrays: ends as floats (every simulated end exactly a float) or doubles,
 * places as 16 bits (fewer than 65535 ops on every device) or 32. Each of
 * the four on a schedule that takes it (checked here from the schedule and
 * its simulated ends, not from the library), against the general lowering
 * (compare_one checks the fast path took it). */
static void test_fast_lowering_in_each_representation(void)
{
    static const struct {
        const char *name;
        uint32_t p, v, m;
        int costs;
        bool floats, places16;
    } cases[] = {
        {"interleaved", 4, 2, 16, 0, true, true},
        {"interleaved", 4, 2, 16, 4, false, true},
        {"zb-h1", 4, 1, 12, 1, true, true},
        {"zb-h1", 4, 1, 12, 4, false, true},
        {"1f1b", 2, 1, 32768, 1, true, false},
        {"1f1b", 2, 1, 32768, 4, false, false},
        {"interleaved", 2, 2, 16384, 2, true, false},
        {"interleaved", 2, 2, 16384, 4, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        psched_plan *plan = costs_plan(cases[i].p, cases[i].v, cases[i].m, cases[i].costs);
        psched_schedule *s = NULL;
        CHECK(plan && psched_generate(plan, cases[i].name, &s) == PSCHED_OK);
        if (!s) {
            psched_plan_destroy(plan);
            continue;
        }
        size_t total = s->offset[s->devices], widest = 0;
        for (uint32_t d = 0; d < s->devices; d++)
            if (s->offset[d + 1] - s->offset[d] > widest)
                widest = s->offset[d + 1] - s->offset[d];
        double *start = malloc((total + 1) * sizeof *start);
        double *end = malloc((total + 1) * sizeof *end);
        CHECK(start && end && psched__execute_fast(s, NULL, start, end, NULL));
        bool floats = true;
        for (size_t g = 0; start && end && g < total; g++)
            floats &= (double)(float)end[g] == end[g];
        CHECK(floats == cases[i].floats);
        CHECK((widest < 65535) == cases[i].places16);
        free(start);
        free(end);
        int taken = fast_taken;
        compare_one(cases[i].name, cases[i].p, cases[i].v, cases[i].m, cases[i].costs);
        CHECK_EQ_INT(fast_taken, taken + 1);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
}

/* The general lowering's inputs it is not for: async mode, copies, a
 * zero-cost consumer at the key's time, an overlapped pair. */
static void test_fast_path_declines_what_it_does_not_do(void)
{
    psched_plan *plan = costs_plan(2, 1, 2, 0);
    psched_schedule *s = NULL, *l = NULL, *o = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    CHECK(psched__lower_fast(s, NULL, &l));
    psched_schedule_destroy(l);
    l = NULL;
    CHECK_OK(psched_offload(s, NULL, PSCHED_OFFLOAD_ALL, 0, &o));
    CHECK(!psched__lower_fast(o, NULL, &l));
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    /* every cost 0: each consumer ends at its key's time */
    psched_plan_set_cost(plan, 0, 0, 0);
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    CHECK(!psched__lower_fast(s, NULL, &l));
    psched_schedule *general = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    CHECK_OK(psched__lower_comm_general(s, NULL, NULL, &general));
    CHECK(l && general && same_schedule(l, general));
    psched_schedule_destroy(l);
    psched_schedule_destroy(general);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    /* DualPipeV overlaps F&B pairs in its steady state */
    plan = costs_plan(4, 2, 16, 0);
    CHECK_OK(psched_generate(plan, "dualpipev", &s));
    bool pairs = false;
    for (size_t g = 0; s && g < s->offset[s->devices]; g++)
        pairs |= (s->ops[g].flags & PSCHED_OP_OVERLAP_NEXT) != 0;
    CHECK(pairs);
    l = NULL;
    CHECK(!psched__lower_fast(s, NULL, &l));
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ---- the fast path of psched_validate() for lowered schedules ---- */

static uint64_t rng = 88172645463325252u;

/* One small change of a lowered schedule: swap two neighbours, move an op
 * a few places, flip a flag, change a micro-batch or stage, or duplicate
 * an op over its neighbour. */
static void mutate(psched_schedule *s)
{
    size_t total = s->offset[s->devices];
    if (total < 2)
        return;
    size_t g = ts_rand(&rng, (uint32_t)(total - 1));
    psched_op *o = &s->ops[g], t;
    switch (ts_rand(&rng, 7)) {
    case 0:
        t = o[0];
        o[0] = o[1];
        o[1] = t;
        break;
    case 1: {
        size_t to = g + 1 + ts_rand(&rng, 4);
        if (to >= total)
            to = total - 1;
        t = s->ops[g];
        memmove(&s->ops[g], &s->ops[g + 1], (to - g) * sizeof t);
        s->ops[to] = t;
        break;
    }
    case 2:
        o->flags ^= PSCHED_OP_BATCH_NEXT;
        break;
    case 3:
        o->flags ^= PSCHED_OP_OVERLAP_NEXT;
        break;
    case 4:
        o->microbatch ^= 1;
        break;
    case 5:
        o->stage += ts_rand(&rng, 2) ? 1 : (uint32_t)-1;
        break;
    default:
        o[1] = o[0];
        break;
    }
}

static int rv_fast, rv_checked, rv_mutant_valid, rv_mutant_fast;

/* The fast check says valid exactly when the general engine does, on the
 * lowered schedule and on mutants of it (the fast path may only decline). */
static void check_rendezvous(const psched_schedule *l)
{
    bool fast = psched__rendezvous_fast_check(l);
    psched_status general = psched__execute_rendezvous(l, NULL, NULL, NULL);
    CHECK(!fast || general == PSCHED_OK);
    if (general == PSCHED_OK && l->lower_mode == PSCHED_LOWER_RENDEZVOUS && l->devices <= 256)
        CHECK(fast);
    rv_fast += fast;
    for (int i = 0; i < 40; i++) {
        psched_schedule *m = ts_copy(l);
        for (uint32_t k = ts_rand(&rng, 3); k < 3; k++)
            mutate(m);
        fast = psched__rendezvous_fast_check(m);
        general = psched__execute_rendezvous(m, NULL, NULL, NULL);
        if (fast && general != PSCHED_OK)
            fprintf(stderr, "  fast check accepted a mutant the engine refuses: %s\n",
                    psched_last_error());
        CHECK(!fast || general == PSCHED_OK);
        rv_checked++;
        rv_mutant_valid += general == PSCHED_OK;
        rv_mutant_fast += fast;
        psched_schedule_destroy(m);
    }
}

static void test_fast_rendezvous_check_agrees_with_the_engine(void)
{
    for (size_t i = 0; i < psched_generator_count(); i++) {
        const char *name = psched_generator_at(i)->name;
        if (psched_generator_is_exact(psched_generator_at(i)))
            continue;
        for (uint32_t p = 2; p <= 4; p++) {
            uint32_t ms[] = {p, 2 * p + 1};
            for (uint32_t v = 1; v <= 2; v++) {
                for (size_t k = 0; k < 2; k++) {
                    psched_plan *plan = costs_plan(p, v, ms[k], (int)(k + v) % 5);
                    psched_schedule *s = NULL, *l = NULL, *a = NULL;
                    if (plan && psched_generate(plan, name, &s) == PSCHED_OK) {
                        psched_lower_options opt = PSCHED_LOWER_OPTIONS_INIT;
                        opt.mode = PSCHED_LOWER_ASYNC;
                        CHECK_OK(psched_lower_comm(s, NULL, &l));
                        CHECK_OK(psched_lower_comm_ex(s, NULL, &opt, &a));
                        if (l)
                            check_rendezvous(l);
                        if (a)
                            CHECK(!psched__rendezvous_fast_check(a));
                    }
                    psched_schedule_destroy(a);
                    psched_schedule_destroy(l);
                    psched_schedule_destroy(s);
                    psched_plan_destroy(plan);
                }
            }
        }
    }
    fprintf(stderr, "  %d lowered schedules valid by the fast check, %d mutants compared (%d "
            "valid, %d of them by the fast check)\n", rv_fast, rv_checked, rv_mutant_valid,
            rv_mutant_fast);
    CHECK(rv_fast > 60);
}

int main(void)
{
    RUN(test_fast_lowering_is_the_general_one);
    RUN(test_fast_lowering_at_a_larger_size);
    RUN(test_fast_lowering_in_each_representation);
    RUN(test_fast_path_declines_what_it_does_not_do);
    RUN(test_fast_rendezvous_check_agrees_with_the_engine);
    TEST_MAIN_END();
}
