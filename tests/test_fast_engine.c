/* The execution engine's fast path (lib/core/execute.c, issue 13) against
 * the general engine: on every generator over small shapes and two cost
 * settings, and on thousands of corrupted copies of those schedules, the
 * fast path accepts exactly the schedules the general engine runs to the
 * end, with bit-identical times, and sums psched_simulate's per-device
 * figures as their definitions say (DESIGN §3: busy time with a pair's
 * time once, peak of the running memory sum in list order, latest end). */
#include "internal.h"
#include "testsched.h"
#include "testutil.h"

#include <stdint.h>

static const char *const generators[] = {
    "gpipe", "1f1b", "interleaved", "looped-bfs", "interleaved-zb", "zb-h1", "zb-h2",
    "zb",    "v-zb", "v-half",      "v-min",      "dualpipe",       "dualpipev",
};

static uint64_t rng = 0x9e3779b97f4a7c15u;

/* Costs: unit (setting 0) or uneven per stage with t_comm and memory. */
static psched_plan *make_plan(uint32_t p, uint32_t m, uint32_t v, int setting)
{
    psched_plan *plan = tu_plan(p, m, v);
    if (!plan)
        return NULL;
    if (setting == 1) {
        for (uint32_t s = 0; s < p * (v ? v : 1); s++)
            psched_plan_set_stage_cost(plan, s, 1.0 + 0.25 * (s % 3), 2.0 + 0.5 * (s % 2),
                                       0.75 + 0.125 * s);
        psched_plan_set_comm(plan, 0.375);
        psched_plan_set_mem(plan, 3, -1, -2);
    }
    return plan;
}

/* What psched_simulate reports per device, from the general engine's
 * times, by the definitions. */
static void expected_figures(const psched_schedule *s, const double *start, const double *end,
                             uint32_t d, double *busy, double *peak, double *last)
{
    double b = 0, mem = 0, pk = 0, l = 0;
    bool paired = false;
    for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
        const psched_op *o = &s->ops[g];
        if (!paired)
            b += end[g] - start[g];
        paired = (o->flags & PSCHED_OP_OVERLAP_NEXT) != 0;
        if (end[g] > l)
            l = end[g];
        psched_cost3 c = psched__plan_mem(s->plan, o->stage);
        mem += o->kind == PSCHED_OP_F ? c.f : o->kind == PSCHED_OP_B ? c.b
             : o->kind == PSCHED_OP_W ? c.w : c.b + c.w;
        if (mem > pk)
            pk = mem;
    }
    *busy = b;
    *peak = pk;
    *last = l;
}

static double *mem_of_plan(const psched_plan *plan, uint32_t S)
{
    double *t = calloc((size_t)S * 8 + 1, sizeof *t);
    for (uint32_t st = 0; t && st < S; st++) {
        psched_cost3 c = psched__plan_mem(plan, st);
        t[st * 8 + PSCHED_OP_F] = c.f;
        t[st * 8 + PSCHED_OP_B] = c.b;
        t[st * 8 + PSCHED_OP_W] = c.w;
        t[st * 8 + PSCHED_OP_BW] = c.b + c.w;
    }
    return t;
}

static int compared, valid_mutants, invalid_mutants;

/* The fast path agrees with the general engine on s (valid or not). */
static void compare(const psched_schedule *s, bool figures)
{
    size_t n = s->offset[s->devices];
    uint32_t p = s->devices, S = s->plan->devices * s->plan->chunks;
    double *s1 = malloc((n + 1) * sizeof *s1), *e1 = malloc((n + 1) * sizeof *e1);
    double *s2 = malloc((n + 1) * sizeof *s2), *e2 = malloc((n + 1) * sizeof *e2);
    double *busy = calloc(p + 1, sizeof *busy), *peak = calloc(p + 1, sizeof *peak);
    double *last = calloc(p + 1, sizeof *last), *mem_of = mem_of_plan(s->plan, S);
    CHECK(s1 && e1 && s2 && e2 && busy && peak && last && mem_of);
    psched_fast_figures fig = {mem_of, busy, peak, last};
    bool checked = psched__execute_fast(s, NULL, NULL, NULL, NULL);
    bool timed = psched__execute_fast(s, NULL, s1, e1, figures ? &fig : NULL);
    bool general = psched__execute_general(s, NULL, s2, e2) == PSCHED_OK;
    CHECK_EQ_INT(checked, general);
    CHECK_EQ_INT(timed, general);
    compared++;
    if (timed && general) {
        CHECK(memcmp(s1, s2, n * sizeof *s1) == 0);
        CHECK(memcmp(e1, e2, n * sizeof *e1) == 0);
        for (uint32_t d = 0; figures && d < p; d++) {
            double b, pk, l;
            expected_figures(s, s2, e2, d, &b, &pk, &l);
            CHECK(busy[d] == b);
            CHECK(peak[d] == pk);
            CHECK(last[d] == l);
        }
    }
    free(s1), free(e1), free(s2), free(e2);
    free(busy), free(peak), free(last), free(mem_of);
}

/* One random corruption of the op list: a swap, another stage,
 * micro-batch or kind, a copy of another op, an overlap flag toggled. */
static void mutate(psched_schedule *s)
{
    size_t n = s->offset[s->devices];
    uint32_t S = s->plan->devices * s->plan->chunks, mbs = psched__plan_chain_mbs(s->plan);
    size_t i = ts_rand(&rng, (uint32_t)n), j = ts_rand(&rng, (uint32_t)n);
    psched_op *o = &s->ops[i], t;
    switch (ts_rand(&rng, 7)) {
    case 0: /* swap with a neighbour on the list */
        if (i + 1 < n) {
            t = s->ops[i];
            s->ops[i] = s->ops[i + 1];
            s->ops[i + 1] = t;
        }
        break;
    case 1:
        t = s->ops[i];
        s->ops[i] = s->ops[j];
        s->ops[j] = t;
        break;
    case 2:
        o->stage = ts_rand(&rng, S + 1);
        break;
    case 3:
        o->microbatch = ts_rand(&rng, mbs + 1);
        break;
    case 4:
        o->kind = (uint8_t)ts_rand(&rng, 4);
        break;
    case 5:
        *o = s->ops[j];
        break;
    default:
        o->flags ^= PSCHED_OP_OVERLAP_NEXT;
        break;
    }
}

static void test_generators_and_mutants(void)
{
    static const uint32_t ps[] = {1, 2, 3, 4, 5}, ms[] = {1, 2, 3, 4, 6, 8, 9}, vs[] = {0, 1, 2, 3};
    int generated = 0;
    for (size_t gi = 0; gi < sizeof generators / sizeof *generators; gi++)
        for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
            for (size_t b = 0; b < sizeof ms / sizeof *ms; b++)
                for (size_t c = 0; c < sizeof vs / sizeof *vs; c++)
                    for (int setting = 0; setting < 2; setting++) {
                        psched_plan *plan = make_plan(ps[a], ms[b], vs[c], setting);
                        psched_schedule *s = NULL;
                        if (!plan || psched_generate(plan, generators[gi], &s) != PSCHED_OK) {
                            psched_plan_destroy(plan);
                            continue; /* the generator does not take this shape */
                        }
                        generated++;
                        compare(s, true);
                        size_t n = s->offset[s->devices];
                        psched_op *keep = malloc((n + 1) * sizeof *keep);
                        memcpy(keep, s->ops, n * sizeof *keep);
                        for (int k = 0; k < 12; k++) {
                            memcpy(s->ops, keep, n * sizeof *keep);
                            int times = 1 + (int)ts_rand(&rng, 3);
                            for (int t = 0; t < times; t++)
                                mutate(s);
                            bool ok = psched__execute_general(s, NULL, NULL, NULL) == PSCHED_OK;
                            *(ok ? &valid_mutants : &invalid_mutants) += 1;
                            compare(s, true);
                        }
                        free(keep);
                        psched_schedule_destroy(s);
                        psched_plan_destroy(plan);
                    }
    /* every generator took some shapes; mutants of both outcomes ran */
    CHECK(generated > 500);
    CHECK(valid_mutants > 100);
    CHECK(invalid_mutants > 1000);
    printf("# %d schedules compared: %d generated, %d valid and %d invalid mutants\n", compared,
           generated, valid_mutants, invalid_mutants);
}

/* The cost model's extensions leave the times to the general engine:
 * psched_simulate with overlap savings still matches it. */
static void test_extensions_take_the_general_engine(void)
{
    psched_plan *plan = make_plan(4, 8, 2, 1);
    CHECK(plan != NULL);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "interleaved", &s));
    psched_plan *costs = NULL;
    CHECK_OK(psched_plan_clone(s->plan, &costs));
    CHECK_OK(psched_plan_set_overlap_saving(costs, 0.5));
    size_t n = s->offset[s->devices];
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    CHECK(!psched__execute_fast(s, costs, a, b, NULL));
    CHECK(psched__execute_fast(s, costs, NULL, NULL, NULL)); /* validation: costs unused */
    free(a), free(b);
    psched_plan_destroy(costs);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

int main(void)
{
    RUN(test_generators_and_mutants);
    RUN(test_extensions_take_the_general_engine);
    TEST_MAIN_END();
}
