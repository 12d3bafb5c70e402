/* "Optimal" means optimal for the simulated step time (issue 17 item 4).
 * An independent brute force written here from the contract (DESIGN §6,
 * docs/optimizer.md): every contiguous split of the layers into the
 * schedule's stages x every per-layer recompute choice, kept when every
 * device's parameters plus in-flight activations (the unit schedule's
 * peak of F minus W per stage, times the stage's activation bytes) fit
 * the limit, each generated and simulated with its summed stage costs.
 * psched_partition() must match the fastest within 0.5% on small random
 * instances (<= 8 layers, p <= 4; 1f1b, gpipe, zb-h1, interleaved v = 2,
 * v-zb, v-half), say `optimal` only when it matches it, and never be
 * slower than the even split when that fits.
 *
 * Not in suite c (the valgrind stage runs suite c): a few thousand
 * simulations. */
#include "devsearch.h"
#include "testutil.h"

typedef struct bf_layer {
    double f, b, w, param;
    double act[3], extra[3];
    bool has[3];
} bf_layer;

typedef struct brute {
    uint32_t L, S, R, p, m, v; /* R: layer ranges (S, or S/2 with two chains) */
    const char *name;
    bf_layer lay[10];
    double inflight[16];
    uint32_t device_of[16];
    double limit;
    psched_plan *plan; /* p, m, v; costs written per candidate */
    uint32_t cut[17];
    uint8_t choice[10];
    uint8_t grp[10];       /* each layer's group in the model (random_instance) */
    double best, lean;
    long sims;
    bool uniform;          /* layers 1 .. L-2 one group (random_instance) */
    bool recompute;        /* with uniform: an embedding, a run with both recompute
                              kinds, a head, and a limit close to the leanest */
    bool weighted;         /* random micro-batch weights, some below 1; no memory limit */
    double max_candidates; /* 0: 4000 */
} brute;

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rng_state >> 33) % n);
}

/* The unit schedule: stage map and per stage the peak of F minus W (or
 * BW) in each device's list order. */
static void brute_schedule(brute *o)
{
    psched_plan *unit = NULL;
    CHECK_OK(psched_plan_clone(o->plan, &unit));
    CHECK_OK(psched_plan_set_cost(unit, 1, 1, 1));
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(unit, o->name, &s));
    const psched_plan *rp = psched_schedule_plan(s);
    o->S = psched_plan_stages(rp);
    /* Two chains (DualPipe) run the same layers: chain 1's stage S/2 + j
     * holds chain 0's stage j's range, a copy of its parameters. */
    o->R = psched_plan_chains(rp) == 2 ? o->S / 2 : o->S;
    double cur[16] = {0};
    for (uint32_t st = 0; st < o->S; st++) {
        o->device_of[st] = psched_plan_stage_device(rp, st);
        o->inflight[st] = 0;
    }
    for (uint32_t d = 0; d < o->p; d++) {
        for (size_t i = 0; i < psched_schedule_op_count(s, d); i++) {
            psched_op op;
            psched_schedule_ops(s, d, i, 1, &op, sizeof op);
            if (op.kind == PSCHED_OP_F && ++cur[op.stage] > o->inflight[op.stage])
                o->inflight[op.stage] = cur[op.stage];
            else if (op.kind == PSCHED_OP_W || op.kind == PSCHED_OP_BW)
                cur[op.stage] -= 1;
        }
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(unit);
}

/* Largest device memory of the current split and choices. */
static double brute_memory(const brute *o)
{
    double dev[4] = {0};
    for (uint32_t s = 0; s < o->S; s++) {
        double act = 0, param = 0;
        uint32_t k = s % o->R;
        for (uint32_t l = o->cut[k]; l < o->cut[k + 1]; l++) {
            act += o->lay[l].act[o->choice[l]];
            param += o->lay[l].param;
        }
        dev[o->device_of[s]] += param + o->inflight[s] * act;
    }
    double mx = 0;
    for (uint32_t d = 0; d < o->p; d++)
        mx = fmax(mx, dev[d]);
    return mx;
}

static double brute_simulate(brute *o)
{
    for (uint32_t s = 0; s < o->S; s++) {
        double f = 0, b = 0, w = 0, act = 0;
        uint32_t k = s % o->R;
        for (uint32_t l = o->cut[k]; l < o->cut[k + 1]; l++) {
            f += o->lay[l].f;
            b += o->lay[l].b + o->lay[l].extra[o->choice[l]];
            w += o->lay[l].w;
            act += o->lay[l].act[o->choice[l]];
        }
        CHECK_OK(psched_plan_set_stage_cost(o->plan, s, f, b, w));
        CHECK_OK(psched_plan_set_stage_mem(o->plan, s, act, 0, -act));
    }
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    CHECK_OK(psched_generate(o->plan, o->name, &s));
    CHECK_OK(psched_simulate(s, NULL, &r));
    double mk = psched_report_makespan(r);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    o->sims++;
    return mk;
}

/* Every choice of every layer, then every split (memory = true: only the
 * leanest memory of all, for the limit). */
static void brute_choices(brute *o, uint32_t l, bool memory)
{
    if (l == o->L) {
        double mem = brute_memory(o);
        if (memory)
            o->lean = fmin(o->lean, mem);
        else if (mem <= o->limit * (1 + 1e-12))
            o->best = fmin(o->best, brute_simulate(o));
        return;
    }
    for (uint8_t r = 0; r < 3; r++) {
        if (!o->lay[l].has[r])
            continue;
        o->choice[l] = r;
        brute_choices(o, l + 1, memory);
    }
}

static void brute_splits(brute *o, uint32_t s, bool memory)
{
    if (s == o->R - 1) {
        o->cut[s + 1] = o->L;
        brute_choices(o, 0, memory);
        return;
    }
    for (uint32_t end = o->cut[s] + 1; end + (o->R - 1 - s) <= o->L; end++) {
        o->cut[s + 1] = end;
        brute_splits(o, s + 1, memory);
    }
}

/* Candidates (splits x choices) of an instance, to keep the sweep small. */
static double candidates(const brute *o)
{
    double n = 1;
    for (uint32_t l = 0; l < o->L; l++)
        n *= o->lay[l].has[0] + o->lay[l].has[1] + o->lay[l].has[2];
    double splits = 1; /* C(L-1, R-1) */
    for (uint32_t k = 1; k < o->R; k++)
        splits = splits * (o->L - k) / k;
    return n * splits;
}

static psched_model *random_instance(brute *o)
{
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    uint32_t left = o->L, l = 0;
    /* uniform: a single first layer (or not), one run of identical layers,
     * a single last layer (or not) */
    bool head = o->uniform && rnd(4) != 0, tail = o->uniform && rnd(4) != 0;
    if (o->recompute) {
        /* the grid's shape (bench_partition) at random sizes */
        double act = 3 + rnd(4), sel = 0.25 * (1 + rnd(2));
        bf_layer e = {0.3, 0.3, 0.3, 4, {1, 0, 0}, {0, 0, 0}, {true, false, false}};
        bf_layer r = {1, 1 + 0.5 * rnd(2), 1, 2, {act, act / 2, 0.5}, {0, sel, 1},
                      {true, true, true}};
        bf_layer h = {2, 2, 2, 8, {8, 0, 0}, {0, 0, 0}, {true, false, false}};
        CHECK_OK(psched_model_add_layers(model, "embedding", 1, e.f, e.b, e.w, e.act[0], e.param));
        CHECK_OK(psched_model_add_layers(model, "layer", o->L - 2, r.f, r.b, r.w, r.act[0],
                                         r.param));
        CHECK_OK(psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_SELECTIVE, r.act[1],
                                            r.extra[1]));
        CHECK_OK(psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_FULL, r.act[2], r.extra[2]));
        CHECK_OK(psched_model_add_layers(model, "head", 1, h.f, h.b, h.w, h.act[0], h.param));
        for (l = 0; l < o->L; l++) {
            o->lay[l] = l == 0 ? e : l + 1 == o->L ? h : r;
            o->grp[l] = l == 0 ? 0 : l + 1 == o->L ? 2 : 1;
        }
        left = 0;
    }
    while (left) {
        uint32_t n = 1 + rnd(left < 3 ? left : 3);
        if (o->uniform)
            n = (l == 0 && head) || (left == 1 && tail) ? 1 : left - tail;
        double f = 1 + rnd(4), act = 2 + rnd(8), param = 1 + rnd(6);
        double b = f + rnd(3), w = rnd(2) ? f : 0.5 * f;
        CHECK_OK(psched_model_add_layers(model, "g", n, f, b, w, act, param));
        uint32_t g = psched_model_groups(model) - 1;
        bf_layer x = {f, b, w, param, {act, 0, 0}, {0, 0, 0}, {true, false, false}};
        if (rnd(3) == 0) {
            x.has[1] = true, x.act[1] = act / 2, x.extra[1] = 0.5 + rnd(2);
            CHECK_OK(psched_model_set_recompute(model, g, PSCHED_RECOMPUTE_SELECTIVE, x.act[1],
                                                x.extra[1]));
        }
        if (rnd(3) == 0) {
            x.has[2] = true, x.act[2] = 1, x.extra[2] = f;
            CHECK_OK(psched_model_set_recompute(model, g, PSCHED_RECOMPUTE_FULL, 1, f));
        }
        for (uint32_t k = 0; k < n; k++) {
            o->grp[l] = (uint8_t)g;
            o->lay[l++] = x;
        }
        left -= n;
    }
    return model;
}

/* What a brute-force test ran: instances matched, of them proven optimal
 * and faster than the even split, and the brute force's simulations. */
typedef struct tally {
    int cases, optimal, improved;
    long sims;
} tally;

static void tally_print(const tally *t, const char *what)
{
    printf("# %s%d instances, %d proven optimal, %d faster than the even split; %ld "
           "brute-force simulations\n",
           what, t->cases, t->optimal, t->improved, t->sims);
}

/* An instance of o (name, v, p, L, m set): random layers into *model,
 * o->plan (p, m, v, comm 0 or 0.5), the unit schedule's stage map, a
 * memory limit between the leanest fit and "anything fits" (none with
 * weights), the brute force's best, and *plan, the plan to partition
 * (unit costs, the limit). false, with nothing kept, when the instance has
 * more than max_candidates splits x choices (o->max_candidates when set). */
static bool brute_instance(brute *o, double max_candidates, psched_model **model,
                           psched_plan **plan)
{
    *model = random_instance(o);
    o->plan = tu_plan(o->p, o->m, o->v);
    CHECK_OK(psched_plan_set_comm(o->plan, rnd(2) ? 0 : 0.5));
    brute_schedule(o);
    if (candidates(o) > (o->max_candidates > 0 ? o->max_candidates : max_candidates)) {
        psched_plan_destroy(o->plan);
        psched_model_destroy(*model);
        return false;
    }
    o->lean = INFINITY;
    o->cut[0] = 0;
    brute_splits(o, 0, true);
    o->limit = rnd(3) == 0 ? INFINITY : o->lean * (1 + 0.1 * rnd(6));
    if (o->recompute)
        o->limit = o->lean * (1 + 0.05 * rnd(5));
    if (o->weighted) {
        /* the simulator scales micro-batch k's times by w_k; the brute
         * force simulates the same plan (its memory model counts every
         * micro-batch as 1: no limit) */
        static const double pick[] = {0.25, 0.5, 1, 2};
        double w[16], same = rnd(2) ? pick[rnd(2)] : 0;
        for (uint32_t k = 0; k < o->m; k++)
            w[k] = same > 0 ? same : pick[rnd(4)];
        w[rnd(o->m)] = 0.25;
        CHECK_OK(psched_plan_set_microbatch_weights(o->plan, w, o->m));
        o->limit = INFINITY;
    }
    o->best = INFINITY;
    brute_splits(o, 0, false);
    *plan = NULL;
    CHECK_OK(psched_plan_clone(o->plan, plan));
    CHECK_OK(psched_plan_set_cost(*plan, 1, 1, 1)); /* the partitioner sets costs */
    CHECK_OK(psched_plan_set_memory_limit(*plan, o->limit));
    return true;
}

static void brute_instance_free(brute *o, psched_model *model, psched_plan *plan)
{
    psched_plan_destroy(plan);
    psched_plan_destroy(o->plan);
    psched_model_destroy(model);
}

/* One instance of o (name, v, p, L, m set): random layers, the brute
 * force, psched_partition() against it, counted in *t unless skipped (too
 * many candidates). Every instance it runs must come out proven. */
static void run_instance(brute *o, tally *t)
{
    psched_model *model = NULL;
    psched_plan *plan = NULL;
    if (!brute_instance(o, 4000, &model, &plan))
        return;
    t->sims += o->sims;
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400; /* never reached: the certificate's budgets end it */
    psched_partition_result *r = NULL, *e = NULL;
    CHECK_OK(psched_partition(model, plan, o->name, &opt, &r));
    opt.method = PSCHED_PARTITION_EVEN;
    /* The even split may not apply (a stage left empty). */
    if (psched_partition(model, plan, o->name, &opt, &e) != PSCHED_OK)
        e = NULL;
    double mk = psched_partition_makespan(r);
    bool is_opt = psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL;
    if (!(mk <= o->best * 1.005) || (is_opt && !(mk <= o->best * (1 + 1e-9))))
        fprintf(stderr, "%s p=%u v=%u m=%u L=%u limit %g: partition %g (%s), brute %g\n",
                o->name, o->p, o->v, o->m, o->L, o->limit, mk, is_opt ? "optimal" : "feasible",
                o->best);
    CHECK(mk <= o->best * 1.005);
    CHECK(!is_opt || mk <= o->best * (1 + 1e-9));
    if (!(mk >= o->best * (1 - 1e-9)))
        fprintf(stderr, "%s p=%u v=%u m=%u L=%u limit %g: partition %g below the brute %g\n",
                o->name, o->p, o->v, o->m, o->L, o->limit, mk, o->best);
    CHECK(mk >= o->best * (1 - 1e-9)); /* nothing beats every candidate */
    /* Every small instance is searched to the end. */
    CHECK(is_opt);
    if (e && psched_partition_status(e) != PSCHED_SOLVE_INFEASIBLE) {
        double even = psched_partition_makespan(e);
        CHECK(mk <= even * (1 + 1e-9));
        t->improved += mk < even * (1 - 1e-9);
    }
    psched_partition_result_destroy(r);
    psched_partition_result_destroy(e);
    brute_instance_free(o, model, plan);
    t->cases++;
    t->optimal += is_opt;
}

/* The critical-path bound (issue 17 item 5) on one instance of o: the
 * brute force's fastest fitting partition, then psched_partition() with
 * the search cut after node_cap nodes and the soundness check on. Every
 * multiplier set's weighted cost of every fitting partition it simulated
 * is at most that partition's step time, and the reported bound
 * (makespan x (1 - gap)) is at most the brute force's best. 0 when
 * skipped, 1 when checked (2 when proven, then equal to the best). */
static int run_bound_instance(brute *o, size_t node_cap, size_t *checks)
{
    psched_model *model = NULL;
    psched_plan *plan = NULL;
    int res = 0;
    if (brute_instance(o, 4000, &model, &plan)) {
        psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
        opt.time_limit = 86400;
        /* cut, then to the end (the full search checks every leaf) */
        for (int pass = 0; pass < 2; pass++) {
            psched_partition_result *r = NULL;
            psched__certify_test_hooks(pass == 0 ? node_cap : 0, true);
            CHECK_OK(psched_partition(model, plan, o->name, &opt, &r));
            size_t n = 0;
            double worst = psched__certify_test_worst(&n);
            psched__certify_test_hooks(0, false);
            *checks += n;
            if (!(worst <= 1e-9))
                fprintf(stderr, "%s p=%u v=%u m=%u L=%u: a bound exceeds a step time by %g\n",
                        o->name, o->p, o->v, o->m, o->L, worst);
            CHECK(worst <= 1e-9);
            double mk = psched_partition_makespan(r), gap = psched_partition_gap(r);
            CHECK(mk >= o->best * (1 - 1e-9));
            CHECK(gap >= 0 && gap < 1);
            double bound = mk * (1 - gap);
            if (!(bound <= o->best * (1 + 1e-9)))
                fprintf(stderr, "%s p=%u v=%u m=%u L=%u: bound %g above the best %g\n", o->name,
                        o->p, o->v, o->m, o->L, bound, o->best);
            CHECK(bound <= o->best * (1 + 1e-9));
            bool is_opt = psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL;
            CHECK(!is_opt || mk <= o->best * (1 + 1e-9));
            if (pass == 0)
                res = is_opt ? 2 : 1;
            else
                CHECK(is_opt); /* small: searched to the end */
            psched_partition_result_destroy(r);
        }
        brute_instance_free(o, model, plan);
    }
    return res;
}

/* Soundness of the critical-path bound over random small instances of
 * every kind it applies to (v = 1, 2, 4, V placement, DualPipe), memory
 * limits and comm latency: the search cut after 1-40 nodes, so the gap
 * reported comes from the bound, never from a finished search. */
static void test_path_bound_is_sound(void)
{
    static const struct {
        const char *name;
        uint32_t v;
    } kinds[] = {{"1f1b", 1},        {"zb-h1", 1},          {"interleaved", 2},
                 {"v-zb", 2},        {"interleaved", 4},    {"interleaved-zb", 4},
                 {"dualpipe", 2}};
    rng_state = 20261128;
    int cases = 0, proven = 0;
    size_t checks = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (int t = 0; t < 16; t++) {
            brute o;
            memset(&o, 0, sizeof o);
            o.name = kinds[k].name;
            o.v = kinds[k].v;
            if (strcmp(o.name, "dualpipe") == 0) {
                o.p = 2 + 2 * rnd(2);
                o.L = o.p + rnd(9 - o.p);
                o.m = 2 * o.p + 2 * rnd(3);
            } else {
                o.p = o.v == 4 ? 2 : 2 + rnd(3);
                if (o.p * o.v > 8)
                    o.p = 8 / o.v;
                o.L = o.p * o.v + rnd(11 - o.p * o.v);
                o.m = o.p * (1 + rnd(3));
                if (strncmp(o.name, "interleaved", 11) == 0)
                    o.m = o.p * (1 + rnd(2));
            }
            int res = run_bound_instance(&o, 1 + rnd(40), &checks);
            cases += res > 0;
            proven += res == 2;
        }
    }
    printf("# path bound: %d instances (%d proven within the node cap), %zu bound checks\n",
           cases, proven, checks);
    CHECK(cases >= 70);
    CHECK(checks > 500);
}

/* A mid-size four-chunk instance (issue 17 item 5): 32 non-uniform
 * layers, p = 4, m = 8, interleaved v = 4 (16 stages), no memory limit.
 * Too large for the brute force (C(31, 15) splits); the certificate must
 * search it to the end and prove the partition optimal, and as an
 * independent check the partition must be no slower than the even split
 * and than 300 random splits, each simulated by
 * psched_partition_evaluate(). */
static void test_four_chunks_mid_size_proven(void)
{
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    CHECK_OK(psched_model_add_layers(model, "embedding", 1, 0.5, 0.5, 0.5, 1, 4));
    CHECK_OK(psched_model_add_layers(model, "attention", 10, 1, 2, 1, 4, 2));
    CHECK_OK(psched_model_add_layers(model, "mlp", 10, 2, 3, 2, 4, 4));
    CHECK_OK(psched_model_add_layers(model, "attention2", 10, 1, 2, 1, 4, 2));
    CHECK_OK(psched_model_add_layers(model, "head", 1, 4, 4, 4, 8, 8));
    psched_plan *plan = tu_plan(4, 8, 4);
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400; /* the budgets end it, not the clock */
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition(model, plan, "interleaved", &opt, &r));
    CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
    CHECK(psched_partition_gap(r) == 0);
    double mk = psched_partition_makespan(r);
    opt.method = PSCHED_PARTITION_EVEN;
    psched_partition_result *e = NULL;
    CHECK_OK(psched_partition(model, plan, "interleaved", &opt, &e));
    CHECK(mk <= psched_partition_makespan(e) * (1 + 1e-9));
    rng_state = 20261129;
    uint32_t counts[16];
    for (int t = 0; t < 300; t++) {
        /* 16 stages of at least one layer each: 16 extra layers at random */
        for (int s = 0; s < 16; s++)
            counts[s] = 1;
        for (int k = 0; k < 16; k++)
            counts[rnd(16)]++;
        psched_partition_result *x = NULL;
        CHECK_OK(psched_partition_evaluate(model, plan, "interleaved", counts, 16, NULL, &x));
        CHECK(mk <= psched_partition_makespan(x) * (1 + 1e-9));
        psched_partition_result_destroy(x);
    }
    printf("# L = 32, p = 4, v = 4: proven %g (even split %g)\n", mk,
           psched_partition_makespan(e));
    psched_partition_result_destroy(r);
    psched_partition_result_destroy(e);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

static void test_partition_matches_the_simulated_brute_force(void)
{
    static const struct {
        const char *name;
        uint32_t v;
    } kinds[] = {{"1f1b", 1}, {"gpipe", 1}, {"zb-h1", 1},
                 {"interleaved", 2}, {"v-zb", 2}, {"v-half", 2}};
    rng_state = 20261125;
    tally tl = {0};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (int t = 0; t < 30; t++) {
            brute o;
            memset(&o, 0, sizeof o);
            o.name = kinds[k].name;
            o.v = kinds[k].v;
            o.p = 2 + rnd(3);
            if (o.p * o.v > 8)
                o.p = 8 / o.v;
            o.L = o.p * o.v + rnd(9 - o.p * o.v);
            o.m = o.p * (1 + rnd(3));
            if (kinds[k].v == 2 && strcmp(o.name, "interleaved") == 0)
                o.m = o.p * (1 + rnd(2)); /* interleaved: m a multiple of p */
            run_instance(&o, &tl);
        }
    }
    tally_print(&tl, "");
    CHECK(tl.cases >= 120);
}

/* Four chunks per device (issue 17 item 5): interleaved, interleaved-zb
 * and looped BFS with v = 4 on p = 2 (8 stages, 8-10 layers), each
 * matched against the brute force and proven optimal. */
static void test_four_chunks_match_the_brute_force(void)
{
    static const char *const names[] = {"interleaved", "interleaved-zb", "looped-bfs"};
    rng_state = 20261126;
    tally tl = {0};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        for (int t = 0; t < 12; t++) {
            brute o;
            memset(&o, 0, sizeof o);
            o.name = names[k];
            o.v = 4;
            o.p = 2;
            o.L = 8 + rnd(3);
            o.m = o.p * (1 + rnd(3));
            run_instance(&o, &tl);
        }
    }
    tally_print(&tl, "v = 4: ");
    CHECK(tl.cases >= 24);
}

/* o for one random instance of an optional embedding, one run of lmin to
 * lmin + 2 identical layers and an optional head (random_instance), m a
 * multiple of p (even and at least 2p for DualPipe). */
static void identical_brute(brute *o, const char *name, uint32_t v, uint32_t p, uint32_t lmin)
{
    memset(o, 0, sizeof *o);
    o->name = name;
    o->v = v;
    o->p = p;
    o->L = lmin + rnd(3); /* at most 10 (brute.lay) */
    o->m = p * (1 + rnd(3));
    if (strcmp(name, "dualpipe") == 0)
        o->m = 2 * p + 2 * rnd(2);
    o->uniform = true;
    o->max_candidates = 12000;
}

/* One such instance against the brute force (run_instance). */
static void run_identical_instance(const char *name, uint32_t v, uint32_t p, uint32_t lmin,
                                   tally *tl)
{
    brute o;
    identical_brute(&o, name, v, p, lmin);
    run_instance(&o, tl);
}

/* A kind of random instance: schedule, v, p, fewest layers. */
typedef struct instance_kind {
    const char *name;
    uint32_t v, p, lmin;
} instance_kind;

/* The run MILP's instance kinds: the two tests below. */
static const instance_kind run_kinds[] = {
    {"interleaved", 4, 2, 8},    {"interleaved-zb", 4, 2, 8}, {"interleaved", 2, 2, 6},
    {"interleaved-zb", 2, 2, 6}, {"1f1b", 1, 4, 5},           {"dualpipe", 2, 4, 5}};

/* An identical-layer instance o of kind `kind`, its model and plan
 * (brute_instance()); false when skipped (too many candidates). */
static bool run_kind_instance(const instance_kind *kind, brute *o, psched_model **model,
                              psched_plan **plan)
{
    identical_brute(o, kind->name, kind->v, kind->p, kind->lmin);
    return brute_instance(o, 4000, model, plan);
}

/* The run MILP (docs/optimizer.md, "Where v = 4 is proven"): models whose
 * layers between the first and the last are identical (an embedding, one
 * run, a head, each end optional), where the certificate's MILP over the
 * counts of layers per stage and recompute kind proves the partitions.
 * Interleaved and interleaved-zb at v = 4 and v = 2, 1f1b and DualPipe, p
 * = 2 or 4, memory limits and comm latency at random: every instance
 * matched against the brute force (which knows nothing of the runs:
 * every split x every per-layer choice), proven optimal, and the MILP
 * proves some of them itself. */
static void test_identical_layers_match_the_brute_force(void)
{
    /* the run MILP over the pool's paths, then over the reference order's
     * DAG (both test hooks; by default the DAG up to a unit count) */
    static const char *const rows[] = {"paths", "DAG"};
    for (int mode = 1; mode <= 2; mode++) {
        rng_state = 20261128;
        tally tl = {0};
        psched__certify_test_hooks(0, false);
        /* the run MILP's own proofs: the device search, which runs first
         * and proves these itself, is off (its test is below) */
        psched__certify_test_no_device_search(true);
        psched__certify_test_run_dag(mode);
        for (size_t k = 0; k < sizeof run_kinds / sizeof *run_kinds; k++)
            for (int t = 0; t < 10; t++)
                run_identical_instance(run_kinds[k].name, run_kinds[k].v, run_kinds[k].p,
                                       run_kinds[k].lmin, &tl);
        psched__certify_test_run_dag(0);
        psched__certify_test_no_device_search(false);
        size_t proofs = psched__certify_test_run_proofs();
        printf("# identical layers, the run MILP's rows the %s: %d instances, %d proven "
               "optimal (%zu by the run MILP), %d faster than the even split; %ld brute-force "
               "simulations\n",
               rows[mode - 1], tl.cases, tl.optimal, proofs, tl.improved, tl.sims);
        CHECK(tl.cases >= 40);
        CHECK(!psched__have_glpk() || proofs >= 10);
    }
}

/* The hooks of the DAG MILP's tests (on: the run MILP over the DAG with
 * `stride` (0: the whole DAG), started from the slowest candidate, no
 * local or device search; off: every hook back to its default). */
static void dag_milp_hooks(bool on, uint32_t stride)
{
    psched__certify_test_no_device_search(on);
    psched__certify_test_no_improve(on);
    psched__certify_test_slowest_start(on);
    psched__certify_test_run_dag(on ? 2 : 0);
    psched__certify_test_run_stride(on ? stride : 0);
}

/* Instance o of kind `kind` (run_kind_instance()) partitioned with a
 * day's limit into *r, GLPK stopped after 1 to 4 node selections when
 * `stop`; false when skipped. */
static bool run_kind_partition(const instance_kind *kind, bool stop, brute *o,
                               psched_model **model, psched_plan **plan,
                               psched_partition_result **r)
{
    if (!run_kind_instance(kind, o, model, plan))
        return false;
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400;
    psched__certify_test_hooks(0, false);
    psched__run_milp_test_selects(stop ? 1 + rnd(4) : 0);
    CHECK_OK(psched_partition(*model, *plan, o->name, &opt, r));
    psched__run_milp_test_selects(0);
    return true;
}

/* What the DAG MILP's tests count over the instances. */
typedef struct dag_tally {
    int cases, solved, whole, below, trees, proofs;
} dag_tally;

/* The run MILP over the DAG with `stride` (0: the whole DAG) on the
 * identical-layer instances of every run kind (10 each, from `seed`),
 * started from the slowest candidate without the local or the device
 * search, each against the brute force: the MILP's optimum (where GLPK
 * solved it) at most the brute force's best, and equal to it where every
 * micro-batch keeps its inputs; with a stride, GLPK stopped after 1 to 4
 * node selections on every second instance, its tree's bound at most the
 * brute force's best too; every proof by the MILP on an instance not
 * stopped with its optimum (GLPK starts from the best partition, so it
 * returns one even where nothing is below the best); every reported bound
 * (makespan x (1 - gap)) at most the brute force's best, and the result
 * its best, proven. */
static dag_tally dag_milp_against_brute(uint32_t stride, uint32_t seed)
{
    dag_tally tl = {0};
    rng_state = seed;
    dag_milp_hooks(true, stride);
    for (size_t k = 0; k < sizeof run_kinds / sizeof *run_kinds; k++) {
        for (int t = 0; t < 10; t++) {
            brute o;
            psched_model *model = NULL;
            psched_plan *plan = NULL;
            psched_partition_result *r = NULL;
            bool stop = stride > 1 && t % 2 == 1;
            if (!run_kind_partition(&run_kinds[k], stop, &o, &model, &plan, &r))
                continue;
            double z = psched__certify_test_run_dag_z(), tree = psched__certify_test_run_tree();
            uint32_t per_chain = strcmp(o.name, "dualpipe") == 0 ? o.m / 2 : o.m;
            bool every = stride <= 1 || per_chain <= 2; /* no input left out */
            bool equal = fabs(z - o.best) <= 1e-6 * o.best;
            if (!(z <= o.best * (1 + 1e-6)) || (z > 0 && every && !equal) ||
                !(tree <= o.best * (1 + 1e-9)))
                fprintf(stderr, "%s p=%u v=%u m=%u L=%u limit %g, stride %u: DAG MILP %g, "
                        "tree %g, brute %g\n", o.name, o.p, o.v, o.m, o.L, o.limit, stride, z,
                        tree, o.best);
            CHECK(z <= o.best * (1 + 1e-6));
            CHECK(tree <= o.best * (1 + 1e-9));
            if (z > 0) {
                tl.solved++;
                if (every) {
                    CHECK(equal);
                    tl.whole++;
                }
                tl.below += z < o.best * (1 - 1e-6);
            }
            tl.trees += tree > 0;
            if (!stop && psched__certify_test_run_proofs() > 0) {
                CHECK(z > 0);
                tl.proofs++;
            }
            double mk = psched_partition_makespan(r);
            CHECK(mk * (1 - psched_partition_gap(r)) <= o.best * (1 + 1e-9));
            CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
            CHECK(fabs(mk - o.best) <= 1e-9 * o.best);
            tl.cases++;
            psched_partition_result_destroy(r);
            brute_instance_free(&o, model, plan);
        }
    }
    dag_milp_hooks(false, 0);
    return tl;
}

/* The run MILP over the reference order's DAG (docs/optimizer.md, "The
 * run MILP", *The whole DAG*): its rows are every dependency of the
 * order, so its optimum is the least simulated step time over every
 * partition that fits, which the brute force (every split x every
 * per-layer choice, each simulated) finds independently. The identical-
 * layer instances (interleaved and interleaved-zb at v = 4 and 2 on
 * p = 2, 1f1b and DualPipe on p = 4, memory limits, t_comm 0 or 0.5),
 * started from the slowest candidate without the local search or the
 * device search so that the MILP has a faster partition to find: where
 * GLPK solves it, its optimum equals the brute force's within GLPK's
 * tolerances, and every proof by the MILP comes with that optimum (GLPK
 * starts from the best partition as its incumbent, so it returns one
 * even where nothing is below the best). Checked to fail with the comm
 * latency left out of the rows (DualPipe and 1F1B's cross-device inputs),
 * with the device order's rows left out, with the units of one input left
 * without a column as if they had none (their input's row lost), and
 * without the start handed to GLPK. */
static void test_run_dag_milp_optimum_is_the_brute_force(void)
{
    if (!psched__have_glpk())
        return; /* no MILP */
    dag_tally tl = dag_milp_against_brute(0, 20261129);
    printf("# run MILP over the DAG: %d instances, its optimum equal to the brute force's on "
           "the %d it solved; %d proofs by the MILP, each with its optimum\n",
           tl.cases, tl.solved, tl.proofs);
    CHECK(tl.cases >= 40);
    CHECK(tl.solved >= 20 && tl.whole == tl.solved);
    CHECK(tl.proofs >= 20);
}

/* The run MILP over the DAG of some micro-batches (docs/optimizer.md,
 * "The run MILP", *Some micro-batches of the DAG*): only each chain's
 * micro-batches 0, s, 2s, ... and its last keep their inputs' rows, fewer
 * rows, so its optimum and its stopped tree's bound are lower bounds, not
 * the least step time. The identical-layer instances as above with a
 * stride of 3, started from the slowest candidate without the local or
 * the device search: where GLPK solves it, its optimum is at most the
 * brute force's best, equal to it where no input is left out (at most
 * two micro-batches per chain) and below it on some
 * instances (so the stride is applied); on every other instance GLPK is
 * stopped after 1 to 4 node selections and its tree's bound stays below
 * the brute force's best too; every reported bound (makespan x (1 - gap))
 * does, and the certificate's search after the MILP still ends at the
 * brute force's best, proven. */
static void test_run_dag_stride_bounds_the_brute_force(void)
{
    if (!psched__have_glpk())
        return; /* no MILP */
    dag_tally tl = dag_milp_against_brute(3, 20261130);
    printf("# run MILP over the DAG of every third micro-batch and the last: %d instances, "
           "%d solved (%d with every input, equal to the brute force; %d below it), %d "
           "stopped trees' bounds, all at most the brute force's best\n",
           tl.cases, tl.solved, tl.whole, tl.below, tl.trees);
    CHECK(tl.cases >= 40);
    CHECK(tl.solved >= 10);
    CHECK(tl.whole >= 1);
    CHECK(tl.below >= 2);
    CHECK(tl.trees >= 5);
}

/* Chimera's order on 4 devices with device 0's second and third ops
 * swapped (0F1 and 7F0: still valid, no longer its own mirror image). */
static psched_status skewed_chimera_generate(const psched_plan *plan, psched_builder *b)
{
    psched_plan *c = NULL;
    psched_schedule *s = NULL;
    psched_status st = psched_plan_clone(plan, &c);
    if (!st)
        st = psched_generate(c, "chimera", &s);
    for (uint32_t d = 0; !st && d < psched_plan_devices(plan); d++) {
        size_t n = psched_schedule_op_count(s, d);
        for (size_t i = 0; !st && i < n; i++) {
            psched_op op;
            size_t j = d == 0 && (i == 1 || i == 2) ? 3 - i : i;
            st = psched_schedule_ops(s, d, j, 1, &op, sizeof op);
            if (!st)
                st = psched_builder_append(b, d, op.kind, op.stage, op.microbatch, op.flags);
        }
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(c);
    return st;
}

static const psched_generator skewed_chimera = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "chimera-skewed",
    .description = "Chimera with device 0's second and third ops swapped (a test's)",
    .constraints = "as chimera, p = 4",
    .placement = PSCHED_PLACEMENT_VSHAPE,
    .default_chunks = 2,
    .chains = 2,
    .generate = skewed_chimera_generate,
};

/* The DAG MILP of a two-chain order that is its own mirror image
 * (DualPipe's, Chimera's: docs/optimizer.md, "The run MILP", *The whole
 * DAG*) has one end column and one set of rows per pair of mirrored
 * units. On 4 devices, identical-layer instances as above, started from
 * the slowest candidate without the local or the device search: where
 * GLPK solves it, its optimum equals the brute force's (every split x
 * every per-layer choice, each simulated), and its rows were halved on
 * DualPipe and Chimera, never on a Chimera order with two ops of one
 * device swapped (its optimum equals the brute force's too). Checked to
 * fail with the mirror taken without comparing the orders (the skewed
 * order's rows are then halved too). */
static void test_run_dag_mirror_only_where_symmetric(void)
{
    if (!psched__have_glpk())
        return; /* no MILP */
    psched_status reg = psched_register_generator(&skewed_chimera);
    CHECK(reg == PSCHED_OK || reg == PSCHED_EEXIST);
    static const instance_kind kinds[] = {
        {"dualpipe", 2, 4, 5}, {"chimera", 2, 4, 5}, {"chimera-skewed", 2, 4, 5}};
    int solved[3] = {0}, mirrored[3] = {0};
    rng_state = 20261129;
    dag_milp_hooks(true, 0);
    for (int k = 0; k < 3; k++) {
        for (int t = 0; t < 8; t++) {
            brute o;
            psched_model *model = NULL;
            psched_plan *plan = NULL;
            psched_partition_result *r = NULL;
            size_t before = psched__run_dag_test_mirrored();
            if (!run_kind_partition(&kinds[k], false, &o, &model, &plan, &r))
                continue;
            double z = psched__certify_test_run_dag_z();
            bool halved = psched__run_dag_test_mirrored() > before;
            if (z > 0) {
                if (!(fabs(z - o.best) <= 1e-6 * o.best))
                    fprintf(stderr, "%s m=%u L=%u limit %g: DAG MILP %g, brute %g\n", o.name,
                            o.m, o.L, o.limit, z, o.best);
                CHECK(fabs(z - o.best) <= 1e-6 * o.best);
                solved[k]++;
                mirrored[k] += halved;
            }
            CHECK(k < 2 || !halved);
            CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
            CHECK(fabs(psched_partition_makespan(r) - o.best) <= 1e-9 * o.best);
            psched_partition_result_destroy(r);
            brute_instance_free(&o, model, plan);
        }
    }
    dag_milp_hooks(false, 0);
    printf("# run MILP over a mirrored DAG: DualPipe %d of %d solved halved, Chimera %d of %d, "
           "Chimera skewed %d of %d\n",
           mirrored[0], solved[0], mirrored[1], solved[1], mirrored[2], solved[2]);
    for (int k = 0; k < 3; k++)
        CHECK(solved[k] >= 4);
    CHECK(mirrored[0] == solved[0] && mirrored[1] == solved[1] && mirrored[2] == 0);
}

/* Which rows the run MILP takes (docs/optimizer.md, "The whole DAG" and
 * "Some micro-batches of the DAG"): the whole DAG (1) up to 2 000 units
 * whatever the time, and up to 3 200 units (the grid's p = 8, v = 4
 * orders: 2 048 and 3 072) when 7.5 ms a unit is left (2 048 units:
 * 15.36 s; 3 072: 23.04 s); else, from 2 001 to 3 200 units with two
 * stages or more per device, every fourth micro-batch's DAG; the paths
 * (0) beyond 3 200 (p = 16, v = 4: 4 096 units and more) and with one
 * stage per device (1F1B on 16 devices, m = 64: 2 048 units). */
static void test_run_dag_rows_by_units_time_and_chunks(void)
{
    CHECK(psched__run_dag_stride(1, 1, 0) == 1);
    CHECK(psched__run_dag_stride(2000, 4, 0) == 1);
    CHECK(psched__run_dag_stride(2000, 1, 0) == 1);
    CHECK(psched__run_dag_stride(2001, 4, 0) == 4);
    CHECK(psched__run_dag_stride(2048, 4, 10) == 4);
    CHECK(psched__run_dag_stride(2048, 2, 15.35) == 4);
    CHECK(psched__run_dag_stride(2048, 1, 15.35) == 0);
    CHECK(psched__run_dag_stride(2048, 4, 15.37) == 1);
    CHECK(psched__run_dag_stride(2048, 1, 15.37) == 1);
    CHECK(psched__run_dag_stride(3072, 4, 23.03) == 4);
    CHECK(psched__run_dag_stride(3072, 4, 23.05) == 1);
    CHECK(psched__run_dag_stride(3200, 4, 24.01) == 1);
    CHECK(psched__run_dag_stride(3200, 4, 23.99) == 4);
    CHECK(psched__run_dag_stride(3201, 4, 1e9) == 0);
    CHECK(psched__run_dag_stride(4096, 4, 60) == 0);
    CHECK(psched__run_dag_stride(4096, 4, INFINITY) == 0);
}

/* The integer solutions the run MILP handed to the certificate (a test
 * hook records them), each evaluated again through
 * psched_partition_evaluate() (S stages, L layers): none that fits may be
 * faster than `mk`, the partition returned. Returns how many fit. */
static size_t check_run_solutions(psched_model *model, psched_plan *plan, const char *name,
                                  uint32_t S, uint32_t L, double mk)
{
    size_t fitting = 0;
    for (size_t i = 0; i < psched__certify_test_run_found(); i++) {
        uint32_t counts[16];
        uint8_t choice[64];
        psched_recompute rec[64];
        if (S > 16 || L > 64 || !psched__certify_test_run_solution(i, counts, S, choice, L))
            continue;
        for (uint32_t l = 0; l < L; l++)
            rec[l] = (psched_recompute)choice[l];
        psched_partition_result *x = NULL;
        CHECK_OK(psched_partition_evaluate(model, plan, name, counts, S, rec, &x));
        if (psched_partition_status(x) == PSCHED_SOLVE_FEASIBLE) {
            fitting++;
            if (!(mk <= psched_partition_makespan(x) * (1 + 1e-9)))
                fprintf(stderr, "%s: solution %zu simulates %g, returned %g\n", name, i,
                        psched_partition_makespan(x), mk);
            CHECK(mk <= psched_partition_makespan(x) * (1 + 1e-9));
        }
        psched_partition_result_destroy(x);
    }
    return fitting;
}

/* The run MILP stopped before it proves an optimum (a test hook stops
 * GLPK's search after 1 to 4 node selections, as its time limit does on
 * the grid's large cases): the bound its tree proves (the largest open
 * node bound seen, the incumbent, the incumbent's cut) must hold for every
 * partition. The same identical-layer instances, the device search off,
 * the certificate's own search cut after 1 to 10 nodes: the tree's bound
 * and the reported bound (makespan x (1 - gap)) never exceed the brute
 * force's fastest partition. */
static void test_run_milp_stopped_tree_bound_is_sound(void)
{
    if (!psched__have_glpk())
        return; /* no MILP to stop */
    rng_state = 20261127;
    int cases = 0, trees = 0, tightest = 0;
    size_t incumbents = 0, found = 0;
    psched__certify_test_no_device_search(true);
    for (size_t k = 0; k < sizeof run_kinds / sizeof *run_kinds; k++) {
        for (int t = 0; t < 30; t++) {
            brute o;
            psched_model *model = NULL;
            psched_plan *plan = NULL;
            if (!run_kind_instance(&run_kinds[k], &o, &model, &plan))
                continue;
            psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
            opt.time_limit = 86400;
            psched_partition_result *r = NULL;
            psched__certify_test_hooks(1 + rnd(10), false);
            psched__run_milp_test_selects(1 + rnd(4));
            /* half without the local search: the MILP's incumbent can then
             * be faster than the solvers' partitions */
            psched__certify_test_no_improve(t % 2 == 1);
            /* the run MILP's rows the paths or the whole DAG, in turn */
            psched__certify_test_run_dag(1 + (t / 2) % 2);
            CHECK_OK(psched_partition(model, plan, o.name, &opt, &r));
            psched__certify_test_run_dag(0);
            psched__certify_test_no_improve(false);
            psched__run_milp_test_selects(0);
            incumbents += psched__certify_test_run_incumbents();
            double mk = psched_partition_makespan(r);
            /* every integer solution GLPK found on its way that fits is
             * at least as slow as the partition returned */
            found += check_run_solutions(model, plan, o.name, o.R, o.L, mk);
            psched__certify_test_hooks(0, false);
            double tree = psched__certify_test_run_tree();
            double gap = psched_partition_gap(r);
            double bound = mk * (1 - gap);
            if (!(tree <= o.best * (1 + 1e-9)) || !(bound <= o.best * (1 + 1e-9)))
                fprintf(stderr, "%s p=%u v=%u m=%u L=%u limit %g: tree %g, bound %g, best %g\n",
                        o.name, o.p, o.v, o.m, o.L, o.limit, tree, bound, o.best);
            CHECK(tree <= o.best * (1 + 1e-9));
            CHECK(bound <= o.best * (1 + 1e-9));
            CHECK(mk >= o.best * (1 - 1e-9));
            cases++;
            trees += tree > 0;
            tightest += tree > 0 && tree >= bound * (1 - 1e-12);
            psched_partition_result_destroy(r);
            brute_instance_free(&o, model, plan);
        }
    }
    psched__certify_test_no_device_search(false);
    printf("# stopped run MILP: %d instances, %d with a tree bound, %d where it is the bound "
           "reported, %zu incumbents taken, %zu integer solutions found that fit\n",
           cases, trees, tightest, incumbents, found);
    CHECK(cases >= 40);
    CHECK(trees >= 10);
}

/* The grid's shape (an embedding, `run` identical layers with both
 * recompute kinds, a head) on p = 2, m = 8, v = 4 with the memory limit at
 * 70% of the even split's largest device under `schedule`, and the
 * certificate's hooks of the run MILP tests (no local search, no device
 * search, from the slowest candidate; off again with
 * run_milp_hooks_off()): returns the limit. */
static double run_milp_instance(uint32_t run, const char *schedule, psched_model **model,
                                psched_plan **plan)
{
    *model = tu_grid_model(run + 2);
    *plan = tu_plan(2, 8, 4);
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.method = PSCHED_PARTITION_EVEN;
    psched_partition_result *e = NULL;
    CHECK_OK(psched_partition(*model, *plan, schedule, &opt, &e));
    double most = 0;
    for (uint32_t d = 0; d < 2; d++) {
        double params, memory, peak;
        CHECK_OK(psched_partition_device(e, d, &params, &memory, &peak));
        most = fmax(most, memory);
    }
    psched_partition_result_destroy(e);
    CHECK_OK(psched_plan_set_memory_limit(*plan, 0.7 * most));
    psched__certify_test_no_device_search(true);
    psched__certify_test_no_improve(true);
    psched__certify_test_slowest_start(true);
    psched__certify_test_run_dag(1); /* the paths' rows: their rounds and incumbents */
    return 0.7 * most;
}

static void run_milp_hooks_off(void)
{
    psched__run_milp_test_selects(0);
    psched__certify_test_hooks(0, false);
    psched__certify_test_no_improve(false);
    psched__certify_test_slowest_start(false);
    psched__certify_test_no_device_search(false);
    psched__certify_test_run_dag(0);
}

/* A run MILP stopped with an incumbent (issue 17 item 5, eleventh pass):
 * GLPK's incumbent is a partition, simulated and kept when it fits and is
 * faster. The grid's shape at L = 12, p = 2, interleaved v = 4, m = 8,
 * memory limit 70% of the even split's largest device, the local search
 * and the device search off (so the partitions before the MILP are the
 * solvers', the baselines' and the critical-path rounds', started from
 * the slowest candidate), GLPK stopped after 14, 16, ..., 34 node
 * selections: where an incumbent is taken (a test hook counts it; where
 * GLPK's search meets one faster than the best depends on its branching,
 * so the test sweeps the stop: 22, 24 and 26 with the branching on the
 * aggregates), the result is a real partition: psched_partition_evaluate()
 * of its counts and recompute choices gives its makespan and it fits. */
static void test_run_milp_stopped_incumbent_is_simulated(void)
{
    psched_model *model = NULL;
    psched_plan *plan = NULL;
    double limit = run_milp_instance(10, "interleaved", &model, &plan);
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400; /* the budgets and the hooks end it, not the clock */
    size_t stops = 0, taken = 0;
    for (size_t selects = 14; selects <= 34; selects += 2) {
        psched__certify_test_hooks(5, false);
        psched__run_milp_test_selects(selects);
        psched_partition_result *r = NULL;
        CHECK_OK(psched_partition(model, plan, "interleaved", &opt, &r));
        stops++;
        if (psched__certify_test_run_incumbents() == 0) {
            psched_partition_result_destroy(r);
            continue;
        }
        taken++;
        uint32_t counts[8];
        psched_recompute rec[12];
        for (uint32_t st = 0; st < 8; st++) {
            uint32_t first;
            CHECK_OK(psched_partition_stage(r, st, &first, &counts[st], NULL, NULL));
        }
        for (uint32_t l = 0; l < 12; l++)
            rec[l] = psched_partition_layer_recompute(r, l);
        psched_partition_result *x = NULL;
        CHECK_OK(psched_partition_evaluate(model, plan, "interleaved", counts, 8, rec, &x));
        double mk = psched_partition_makespan(r);
        CHECK(fabs(psched_partition_makespan(x) - mk) <= 1e-9 * mk);
        for (uint32_t d = 0; d < 2; d++) {
            double params, memory, peak;
            CHECK_OK(psched_partition_device(x, d, &params, &memory, &peak));
            CHECK(memory <= limit * (1 + 1e-9));
        }
        psched_partition_result_destroy(x);
        psched_partition_result_destroy(r);
    }
    run_milp_hooks_off();
    printf("# stopped run MILP: an incumbent taken at %zu of %zu stops, each evaluated again\n",
           taken, stops);
    CHECK(taken >= 1);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

/* Every integer solution GLPK finds on the run MILP's way is a partition
 * (its rows bound the step time from below, so the one with the least
 * bound, which GLPK keeps, need not be the fastest simulated, and a search
 * the clock stops keeps only its last): the certificate simulates each and
 * keeps the fastest that fits. The grid's shape at L = 14, p = 2,
 * interleaved-zb v = 4, m = 8, memory limit 70% of the even split's
 * largest device, the local search and the device search off, started
 * from the slowest candidate, the certificate's search cut after 5 nodes,
 * GLPK stopped after 40, 48, ..., 80 node selections and once not
 * stopped: each solution a test hook recorded, evaluated again through
 * psched_partition_evaluate(), is never faster than the partition returned
 * when it fits. From 48 selections on, GLPK's first solution simulates
 * 210.4 and its last, which it stops with, 211.1 (found by a search over
 * these shapes): a certificate that is handed each solution but keeps
 * none returns 211.1 and fails the comparison; one handed only the last
 * fails the count of solutions. */
static void test_run_milp_keeps_its_fastest_integer_solution(void)
{
    if (!psched__have_glpk())
        return; /* no MILP */
    psched_model *model = NULL;
    psched_plan *plan = NULL;
    run_milp_instance(12, "interleaved-zb", &model, &plan);
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400; /* the budgets and the hooks end it, not the clock */
    size_t found = 0, fitting = 0, runs = 0;
    for (size_t selects = 40; selects <= 88; selects += 8) {
        psched__certify_test_hooks(5, false);
        psched__run_milp_test_selects(selects <= 80 ? selects : 0);
        psched_partition_result *r = NULL;
        CHECK_OK(psched_partition(model, plan, "interleaved-zb", &opt, &r));
        found += psched__certify_test_run_found();
        runs++;
        fitting += check_run_solutions(model, plan, "interleaved-zb", 8, 14,
                                       psched_partition_makespan(r));
        psched_partition_result_destroy(r);
    }
    run_milp_hooks_off();
    printf("# run MILP: %zu integer solutions found in %zu runs, %zu fit, none faster than "
           "the partition returned\n",
           found, runs, fitting);
    /* (19 found, each fitting: a floor on what the test exercises) */
    CHECK(fitting >= 7);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

/* The device search (issue 17 item 5; devsearch.c): a run's per-stage
 * layer counts and recompute variants enumerated one device at a time,
 * each node bounded by the fixed order's step time with the stages not
 * placed at their least cost. Random instances with an optional
 * embedding, one run and an optional head: interleaved and interleaved-zb
 * at v = 4 and 2, looped-bfs at v = 2, v-zb and 1f1b (p = 2 to 4), and
 * two chains, DualPipe and Chimera (p = 2 and 4: the search places the
 * mirrored device pairs, DualPipe's overlapped F&B pairs as units), memory
 * limits and comm latency at random, half of them with the local search
 * off (so the device search has to find the best itself, not only prove
 * it). Every answer must equal the brute force (every split x every
 * per-layer choice, knowing nothing of runs or devices) and be proven,
 * and the device search must prove most of them itself (when it proves
 * one, nothing else runs). */
static void test_device_search_matches_the_brute_force(void)
{
    static const struct {
        const char *name;
        uint32_t v, p, lmin;
    } kinds[] = {{"interleaved", 4, 2, 8}, {"interleaved-zb", 4, 2, 8}, {"interleaved", 2, 2, 6},
                 {"looped-bfs", 2, 2, 6},  {"v-zb", 2, 2, 6},           {"1f1b", 1, 4, 5},
                 {"dualpipe", 2, 4, 5},    {"dualpipe", 2, 2, 4},       {"chimera", 2, 4, 5},
                 {"chimera", 2, 2, 4}};
    rng_state = 20261129;
    tally tl = {0};
    psched__certify_test_hooks(0, false);
    size_t before = psched__devsearch_test_proofs();
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (int t = 0; t < 10; t++) {
            psched__certify_test_no_improve(t % 2 == 1);
            run_identical_instance(kinds[k].name, kinds[k].v, kinds[k].p, kinds[k].lmin, &tl);
            psched__certify_test_no_improve(false);
        }
    }
    size_t proofs = psched__devsearch_test_proofs() - before;
    printf("# device search: %d instances, %d proven optimal (%zu by the device search), %d "
           "faster than the even split; %ld brute-force simulations\n",
           tl.cases, tl.optimal, proofs, tl.improved, tl.sims);
    CHECK(tl.cases >= 45);
    CHECK(proofs * 4 >= (size_t)tl.cases * 3);
}

/* The device search on two chains (DualPipe, Chimera) stopped early
 * (after 1, 2, 4, 8 and 16 nodes): the bound of what it has not searched
 * and the bound the partition reports (the layer count bound now counts
 * the mirrored pairs too) never exceed the brute force's fastest
 * partition. p = 2 and 4 (5-7 and 7-9 layers), identical runs, memory
 * limits and comm latency at random, the local search off. */
static void test_device_search_bound_holds_for_two_chains(void)
{
    rng_state = 20261130;
    int cases = 0, listed = 0;
    psched__certify_test_hooks(0, false);
    for (int t = 0; t < 48; t++) {
        brute o;
        identical_brute(&o, t % 2 ? "chimera" : "dualpipe", 2, t % 3 ? 4 : 2, t % 3 ? 7 : 5);
        psched_model *model = NULL;
        psched_plan *plan = NULL;
        if (!brute_instance(&o, 4000, &model, &plan))
            continue;
        cases++;
        for (size_t stop = 1; stop <= 16; stop *= 2) {
            psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
            opt.time_limit = 86400;
            psched_partition_result *r = NULL;
            psched__certify_test_no_improve(true); /* the search has to find it */
            psched__devsearch_test_stop(stop);
            CHECK_OK(psched_partition(model, plan, o.name, &opt, &r));
            psched__devsearch_test_stop(0);
            psched__certify_test_no_improve(false);
            double bound = psched__devsearch_test_bound(), mk = psched_partition_makespan(r);
            double reported = mk * (1 - psched_partition_gap(r));
            if (!(bound <= o.best * (1 + 1e-9)) || !(reported <= o.best * (1 + 1e-9)))
                fprintf(stderr, "%s p=%u m=%u L=%u limit %g stop %zu: bounds %g, %g, best %g\n",
                        o.name, o.p, o.m, o.L, o.limit, stop, bound, reported, o.best);
            CHECK(bound <= o.best * (1 + 1e-9));
            CHECK(reported <= o.best * (1 + 1e-9));
            CHECK(mk >= o.best * (1 - 1e-9));
            listed += bound > 0 && bound < mk * (1 - 1e-9);
            psched_partition_result_destroy(r);
        }
        brute_instance_free(&o, model, plan);
    }
    printf("# two chains stopped early: %d instances, %d with a bound from listed subtrees\n",
           cases, listed);
    CHECK(cases >= 40);
    CHECK(listed >= 16);
}

/* An embedding, `layers` identical layers and a head of f = b = w =
 * `head`, `head_act` activations and `head_param` parameters (the
 * mid-size runs below). */
static psched_model *run_model_head(uint32_t layers, double head, double head_act,
                                    double head_param)
{
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    CHECK_OK(psched_model_add_layers(model, "embedding", 1, 0.3, 0.3, 0.3, 1, 4));
    CHECK_OK(psched_model_add_layers(model, "layer", layers, 1, 1.5, 1, 4, 2));
    CHECK_OK(psched_model_add_layers(model, "head", 1, head, head, head, head_act, head_param));
    return model;
}

static psched_model *run_model(uint32_t layers)
{
    return run_model_head(layers, 2, 8, 8);
}

/* A plan of p devices, m micro-batches, v chunks and comm latency `comm` */
static psched_plan *run_plan(uint32_t p, uint32_t m, uint32_t v, double comm)
{
    psched_plan *plan = tu_plan(p, m, v);
    CHECK_OK(psched_plan_set_comm(plan, comm));
    return plan;
}

/* psched_partition() with the local search off (the device search then
 * starts from the solver's and the baselines' best and has to find the
 * fastest) and the device search in passes of `slice` nodes, each resuming
 * the last (0: one pass). True when the device search proved the result. */
static bool partition_by_method(const psched_model *model, const psched_plan *plan,
                                const char *name, size_t slice, psched_partition_method method,
                                psched_partition_result **r)
{
    size_t before = psched__devsearch_test_proofs();
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400; /* the budgets end it, not the clock */
    opt.method = method;
    psched__certify_test_no_improve(true);
    psched__devsearch_test_slice(slice);
    CHECK_OK(psched_partition(model, plan, name, &opt, r));
    psched__devsearch_test_slice(0);
    psched__certify_test_no_improve(false);
    return psched__devsearch_test_proofs() == before + 1;
}

static bool partition_by_device_search(const psched_model *model, const psched_plan *plan,
                                       const char *name, size_t slice,
                                       psched_partition_result **r)
{
    return partition_by_method(model, plan, name, slice, PSCHED_PARTITION_ILP, r);
}

/* The device search on a mid-size run (p = 2, v = 4: 8 stages, an
 * embedding, 14 identical layers and a head, no memory limit) against an
 * enumeration of every split the test writes itself: every count vector
 * (the embedding's and the head's stages may hold no run layer, every
 * other stage at least one: 6 435 of them) evaluated by
 * psched_partition_evaluate(), which generates and simulates it. With
 * the local search off, the partition must equal the enumeration's
 * fastest and be proven by the device search. */
static void test_device_search_mid_size_matches_the_enumeration(void)
{
    static const char *const names[] = {"interleaved", "interleaved-zb"};
    psched_model *model = run_model(14);
    size_t dives = psched__devsearch_test_dives();
    size_t nodes_with[2] = {0, 0}, chain_rises = 0; /* with and without the chain bound */
    for (int k = 0; k < 4; k++) {
        const char *name = names[k % 2];
        psched_plan *plan = run_plan(2, 8, 4, k < 2 ? 0 : 0.25);
        /* the enumeration: x[s] run layers on stage s, Σ x = 14 */
        uint32_t x[8] = {0}, counts[8], best_counts[8] = {0};
        double best = INFINITY;
        long evaluated = 0;
        for (;;) {
            uint32_t sum = 0;
            bool ok = true;
            for (int s = 0; s < 8; s++) {
                sum += x[s];
                ok = ok && (s == 0 || s == 7 || x[s] >= 1);
            }
            if (ok && sum == 14) {
                for (int s = 0; s < 8; s++)
                    counts[s] = x[s] + (s == 0) + (s == 7);
                psched_partition_result *r = NULL;
                CHECK_OK(psched_partition_evaluate(model, plan, name, counts, 8, NULL, &r));
                double mk = psched_partition_makespan(r);
                if (mk < best) {
                    best = mk;
                    memcpy(best_counts, counts, sizeof counts);
                }
                evaluated++;
                psched_partition_result_destroy(r);
            }
            /* next vector, each digit 0 .. 14 (odometer, pruned by the sum) */
            int d = 0;
            while (d < 8) {
                uint32_t rest = 0;
                for (int s = d + 1; s < 8; s++)
                    rest += x[s];
                if (x[d] + rest < 14) {
                    x[d]++;
                    break;
                }
                x[d] = 0;
                d++;
            }
            if (d == 8)
                break;
        }
        CHECK(evaluated == 6435);
        /* in one pass, again without the chain bound, then (without it,
         * so that the search has nodes to slice) in passes of at most 40
         * evaluated options between two children, each resuming where the
         * last stopped */
        for (int run = 0; run < 3; run++) {
            bool sliced = run == 2;
            size_t resumed = psched__devsearch_test_resumes();
            size_t nodes = psched__devsearch_test_nodes();
            size_t rises = psched__devsearch_test_chain_rises();
            psched_partition_result *r = NULL;
            psched__devsearch_test_no_chain(run > 0);
            CHECK(partition_by_device_search(model, plan, name, sliced ? 40 : 0, &r));
            psched__devsearch_test_no_chain(false);
            if (run < 2)
                nodes_with[run] += psched__devsearch_test_nodes() - nodes;
            if (run > 0)
                CHECK(psched__devsearch_test_chain_rises() == rises);
            else
                chain_rises += psched__devsearch_test_chain_rises() - rises;
            double mk = psched_partition_makespan(r);
            CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
            if (!(fabs(mk - best) <= 1e-9 * best))
                fprintf(stderr,
                        "%s comm %g: partition %g, enumeration %g (%u %u %u %u %u %u %u %u)\n",
                        name, k < 2 ? 0 : 0.25, mk, best, best_counts[0], best_counts[1],
                        best_counts[2], best_counts[3], best_counts[4], best_counts[5],
                        best_counts[6], best_counts[7]);
            CHECK(fabs(mk - best) <= 1e-9 * best);
            size_t passes = psched__devsearch_test_resumes() - resumed;
            CHECK(sliced ? passes >= 3 : passes == 0);
            printf("# %s, comm %g: proven %g, the enumeration's best of %ld splits (%s)\n", name,
                   k < 2 ? 0 : 0.25, mk, evaluated,
                   sliced    ? "resumed passes"
                   : run > 0 ? "one pass, no chain bound"
                             : "one pass");
            psched_partition_result_destroy(r);
        }
        /* from the stage DP's partition (the dp method), with a dive of 300
         * nodes: where the dive finds a faster partition its pass ends and
         * the certificate searches again from the root */
        psched_partition_result *r = NULL;
        psched__devsearch_test_dive(300);
        psched__devsearch_test_no_polish(true); /* else the polish finds it first */
        psched__devsearch_test_no_chain(true);  /* else the root proves it first */
        bool proven = partition_by_method(model, plan, name, 0, PSCHED_PARTITION_DP, &r);
        psched__devsearch_test_no_chain(false);
        psched__devsearch_test_no_polish(false);
        psched__devsearch_test_dive(0);
        if (psched_partition_status(r) != PSCHED_SOLVE_INFEASIBLE) {
            CHECK(proven);
            CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
            CHECK(fabs(psched_partition_makespan(r) - best) <= 1e-9 * best);
        }
        psched_partition_result_destroy(r);
        psched_plan_destroy(plan);
    }
    printf("# %zu dives found a faster partition and ended their pass\n",
           psched__devsearch_test_dives() - dives);
    CHECK(psched__devsearch_test_dives() > dives);
    /* the chain bound made ops start later and the searches smaller */
    printf("# device search nodes: %zu with the chain bound, %zu without (%zu rises)\n",
           nodes_with[0], nodes_with[1], chain_rises);
    CHECK(chain_rises > 0);
    CHECK(nodes_with[0] < nodes_with[1]);
    psched_model_destroy(model);
}

/* Every count vector of a run over S stages (test_device_search_four_devices,
 * first_depth_case()): x[s] run layers on stage s (the embedding's stage
 * 0 and the head's last stage may hold none, every other stage at least
 * one), each evaluated by psched_partition_evaluate(); the fastest whose
 * every device fits the plan's memory limit is kept, and with a table
 * (cap > 0) every vector and its step time. */
typedef struct vectors {
    const psched_model *model;
    const psched_plan *plan;
    const char *name;
    uint32_t S, x[16];
    double limit, best;
    double lean, best_mem; /* the least largest device memory; the fastest's */
    long evaluated, fitting;
    uint32_t *table; /* n x S run layers */
    double *table_mk;
    size_t n, cap;
} vectors;

static void vectors_stage(vectors *q, uint32_t s, uint32_t left)
{
    if (s + 1 == q->S) {
        q->x[s] = left;
        uint32_t counts[16];
        for (uint32_t t = 0; t < q->S; t++)
            counts[t] = q->x[t] + (t == 0) + (t + 1 == q->S);
        psched_partition_result *r = NULL;
        CHECK_OK(psched_partition_evaluate(q->model, q->plan, q->name, counts, q->S, NULL, &r));
        double mem = 0, mk = psched_partition_makespan(r);
        for (uint32_t d = 0; d < psched_plan_devices(q->plan); d++) {
            double md = 0;
            CHECK_OK(psched_partition_device(r, d, NULL, &md, NULL));
            mem = fmax(mem, md);
        }
        q->evaluated++;
        CHECK(q->n < q->cap || !q->cap);
        if (q->n < q->cap) {
            memcpy(q->table + q->n * q->S, q->x, q->S * sizeof *q->x);
            q->table_mk[q->n++] = mk;
        }
        q->lean = fmin(q->lean, mem);
        if (mem <= q->limit) {
            q->fitting++;
            if (mk < q->best || (mk == q->best && mem < q->best_mem)) {
                q->best = mk;
                q->best_mem = mem;
            }
        }
        psched_partition_result_destroy(r);
        return;
    }
    /* the stages after s but the last need one layer each */
    uint32_t need_after = q->S - 2 - s;
    for (uint32_t c = s == 0 ? 0 : 1; c + need_after <= left; c++) {
        q->x[s] = c;
        vectors_stage(q, s + 1, left - c);
    }
}

/* One instance of test_device_search_first_depth_bounds_hold(): the
 * records' bounds against the fastest completion of each; adds to
 * *records, *tight (within 1e-9 of it) and *ratio (bound / fastest). */
static void first_depth_case(const char *name, uint32_t p, uint32_t v, uint32_t m, uint32_t L,
                             double comm, double head, bool chain, size_t *records,
                             size_t *tight, double *ratio)
{
    uint32_t S = p * v;
    /* a light head: the last stage takes run layers too */
    psched_model *model = head > 0 ? run_model_head(L, head, 1, 4) : run_model(L);
    psched_plan *plan = run_plan(p, m, v, comm);
    vectors q;
    memset(&q, 0, sizeof q);
    q.model = model;
    q.plan = plan;
    q.name = name;
    q.S = S;
    q.limit = q.best = q.lean = INFINITY;
    q.cap = 20000;
    q.table = calloc(q.cap * S, sizeof *q.table);
    q.table_mk = calloc(q.cap, sizeof *q.table_mk);
    CHECK(q.table && q.table_mk);
    vectors_stage(&q, 0, L);
    /* from the slowest candidate, without the local search and the
     * polish, so that the first depth's bounds meet slow incumbents */
    psched__devsearch_test_record(100000, S);
    psched__devsearch_test_no_chain(!chain);
    psched__certify_test_slowest_start(true);
    psched__devsearch_test_no_polish(true);
    psched_partition_result *r = NULL;
    partition_by_device_search(model, plan, name, 0, &r);
    psched__devsearch_test_no_polish(false);
    psched__certify_test_slowest_start(false);
    psched__devsearch_test_no_chain(false);
    size_t n = psched__devsearch_test_records();
    for (size_t i = 0; i < n; i++) {
        uint32_t known[8];
        CHECK(S <= 8);
        double bound = S <= 8 ? psched__devsearch_test_record_at(i, known) : NAN;
        double least = INFINITY;
        for (size_t k = 0; k < q.n; k++) {
            bool match = true;
            for (uint32_t s = 0; s < S && match; s++)
                match = known[s] == UINT32_MAX || known[s] == q.table[k * S + s];
            if (match)
                least = fmin(least, q.table_mk[k]);
        }
        if (!isfinite(least))
            continue; /* counts no split completes (the search's ranges allow them) */
        if (!(bound <= least * (1 + 1e-9)))
            fprintf(stderr, "%s p=%u v=%u m=%u L=%u comm %g chain %d: bound %g, fastest %g\n",
                    name, p, v, m, L, comm, chain, bound, least);
        CHECK(bound <= least * (1 + 1e-9));
        (*records)++;
        *tight += bound >= least * (1 - 1e-9);
        *ratio += bound / least;
    }
    psched__devsearch_test_record(0, 0);
    /* and the partition is the enumeration's fastest, proven */
    CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
    CHECK(fabs(psched_partition_makespan(r) - q.best) <= 1e-9 * q.best);
    psched_partition_result_destroy(r);
    free(q.table);
    free(q.table_mk);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

/* The bounds the device search gives one device's layer counts at its
 * first depth (the other devices without counts: their stages at their
 * fewest layers, the chain bound and the share of the layers left on
 * top) never exceed the fastest split that completes those counts, which
 * the test finds by enumerating every split of the run: 22 instances,
 * 1f1b and zb-h1 on 2-4 devices, interleaved, interleaved-zb and
 * looped-bfs on 2 at v = 2 and 4, 1-8 micro-batches, with and without
 * latency, with run_model()'s heavy head and with a light one (the last
 * stage then takes run layers, which is where a device's first op can
 * be the chain's: one chunk per device). The test fails when the chain
 * bound counts a layer too many in the forward, raises a device's first
 * op through its own layers, counts w into a B, or is scaled by 1.05 or
 * 1.1. Without the chain bound fewer bounds equal the fastest
 * completion (the test fails with it off). */
static void test_device_search_first_depth_bounds_hold(void)
{
    static const struct {
        const char *name;
        uint32_t p, v, m, L;
        double comm, head; /* 0: run_model()'s head */
    } cases[] = {
        {"1f1b", 3, 1, 1, 9, 0, 0},
        {"1f1b", 4, 1, 2, 10, 0, 0},
        {"1f1b", 4, 1, 4, 10, 0.25, 0},
        {"1f1b", 3, 1, 3, 12, 0.25, 0},
        {"interleaved", 2, 2, 1, 10, 0, 0},
        {"interleaved", 2, 2, 2, 10, 0.25, 0},
        {"interleaved", 2, 2, 4, 10, 0, 0},
        {"interleaved-zb", 2, 2, 2, 10, 0, 0},
        {"interleaved-zb", 2, 4, 2, 10, 0.25, 0},
        {"interleaved", 2, 4, 4, 10, 0, 0},
        {"looped-bfs", 2, 2, 2, 10, 0, 0},
        {"looped-bfs", 2, 4, 2, 10, 0.25, 0},
        {"zb-h1", 4, 1, 1, 10, 0, 0},
        {"zb-h1", 3, 1, 2, 9, 0.25, 0},
        {"interleaved-zb", 2, 2, 1, 10, 0, 0},
        {"1f1b", 3, 1, 4, 9, 0, 0.1},
        {"1f1b", 3, 1, 8, 10, 0.25, 0.1},
        {"1f1b", 4, 1, 6, 10, 0, 0.1},
        {"zb-h1", 3, 1, 6, 9, 0, 0.1},
        {"1f1b", 2, 1, 2, 8, 0, 0.1},
        {"1f1b", 2, 1, 3, 8, 0.25, 0.1},
        {"1f1b", 2, 1, 4, 9, 0, 0},
    };
    size_t records[2] = {0, 0}, tight[2] = {0, 0};
    double ratio[2] = {0, 0};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        for (int chain = 0; chain < 2; chain++)
            first_depth_case(cases[k].name, cases[k].p, cases[k].v, cases[k].m, cases[k].L,
                             cases[k].comm, cases[k].head, chain, &records[chain], &tight[chain],
                             &ratio[chain]);
    printf("# first depth: %zu bounds with the chain bound, %zu equal to the fastest completion, "
           "mean %.4f of it; without: %zu, %zu, %.4f\n",
           records[1], tight[1], records[1] ? ratio[1] / records[1] : 0, records[0], tight[0],
           records[0] ? ratio[0] / records[0] : 0);
    CHECK(records[1] > 0 && records[0] > 0);
    CHECK(tight[1] > tight[0]);
}

/* The device search where devices' layer counts differ widely: p = 4,
 * v = 4 (16 stages), an embedding, 18 identical layers and a head, m = 8,
 * without a memory limit and with one that only some splits fit (the
 * embedding's and the head's devices then take fewer layers). The test
 * enumerates every count vector (C(19, 15) = 3 876) through
 * psched_partition_evaluate(); with the local search off, psched_partition()
 * must equal the fastest that fits, proven by the device search, in one
 * pass, in resumed passes and after a dive of 50 nodes (which finds
 * nothing faster here: the search then starts from the root in the same
 * pass); stopped after a few evaluations, the
 * search's bound of what it has not searched may not exceed it. (Caught a
 * dominance rule that compared
 * options holding different layer counts once the bound counted the
 * layers left to the other devices.) */
static void test_device_search_four_devices_matches_the_enumeration(void)
{
    static const char *const names[] = {"interleaved", "interleaved-zb"};
    psched_model *model = run_model(18);
    int listed = 0, below = 0, raised = 0;
    for (int k = 0; k < 4; k++) {
        psched_plan *plan = run_plan(4, 8, 4, k < 2 ? 0 : 0.25);
        vectors q;
        memset(&q, 0, sizeof q);
        q.model = model;
        q.plan = plan;
        q.name = names[k % 2];
        q.S = 16;
        q.limit = q.best = q.lean = INFINITY;
        vectors_stage(&q, 0, 18);
        CHECK(q.evaluated == 3876);
        double unlimited = q.best;
        /* a limit halfway between the leanest split's largest device and
         * the fastest split's */
        if (k >= 2) {
            CHECK(q.best_mem > q.lean);
            q.limit = (q.lean + q.best_mem) / 2;
            q.best = INFINITY;
            q.evaluated = q.fitting = 0;
            vectors_stage(&q, 0, 18);
            CHECK(q.fitting > 0 && q.fitting < q.evaluated);
            CHECK_OK(psched_plan_set_memory_limit(plan, q.limit));
        }
        /* in one pass, in resumed passes, and after a short dive */
        for (int sliced = 0; sliced < 3; sliced++) {
            psched_partition_result *r = NULL;
            psched__devsearch_test_dive(sliced == 2 ? 50 : 0);
            CHECK(partition_by_device_search(model, plan, q.name, sliced == 1 ? 25 : 0, &r));
            psched__devsearch_test_dive(0);
            double mk = psched_partition_makespan(r);
            CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
            if (!(fabs(mk - q.best) <= 1e-9 * q.best))
                fprintf(stderr, "%s comm %g limit %g: partition %g, enumeration %g\n", q.name,
                        k < 2 ? 0 : 0.25, q.limit, mk, q.best);
            CHECK(fabs(mk - q.best) <= 1e-9 * q.best);
            if (!sliced)
                printf("# %s, comm %g, limit %g: proven %g, the enumeration's best of %ld "
                       "fitting splits (%g without the limit)\n",
                       q.name, k < 2 ? 0 : 0.25, q.limit, mk, q.fitting, unlimited);
            psched_partition_result_destroy(r);
        }
        /* stopped early (every pass after `stop` nodes, the run MILP after
         * its first node, the search after its first; every other stop from
         * the slowest candidate without the device search's polish and with
         * a dive of one node, so the bounds run with a slow incumbent),
         * without and with the bound passes: the search's bound (its open subtrees' least,
         * or a bound pass's threshold) and the reported one never exceed
         * the enumeration's fastest; the bound passes never lower the
         * reported bound nor slow the partition, and mostly raise it */
        static const size_t stops[] = {8, 12, 16, 24, 32, 48, 64, 96, 128, 192};
        for (size_t t = 0; t < sizeof stops / sizeof *stops; t++) {
            size_t stop = stops[t];
            double reported[2], mk[2];
            for (int passes = 0; passes < 2; passes++) {
                psched__certify_test_hooks(1, false); /* the search: one node */
                size_t ended = psched__certify_test_bound_passes();
                psched__certify_test_no_bound_passes(!passes);
                psched__devsearch_test_stop(stop);
                psched__run_milp_test_selects(1); /* (it would prove most) */
                psched__certify_test_slowest_start(t % 2 == 1);
                psched__devsearch_test_no_polish(t % 2 == 1);
                psched__devsearch_test_dive(t % 2 == 1 ? 1 : 0);
                psched_partition_result *r = NULL;
                partition_by_device_search(model, plan, q.name, 0, &r);
                bool ended_below = psched__certify_test_bound_passes() > ended;
                psched__certify_test_slowest_start(false);
                psched__devsearch_test_no_polish(false);
                psched__devsearch_test_dive(0);
                psched__run_milp_test_selects(0);
                psched__devsearch_test_stop(0);
                psched__certify_test_no_bound_passes(false);
                psched__certify_test_hooks(0, false);
                double bound = psched__devsearch_test_bound();
                mk[passes] = psched_partition_makespan(r);
                reported[passes] = mk[passes] * (1 - psched_partition_gap(r));
                if (!(bound <= q.best * (1 + 1e-9)) ||
                    !(reported[passes] <= q.best * (1 + 1e-9)))
                    fprintf(stderr, "%s limit %g stop %zu passes %d: bounds %g, %g, best %g\n",
                            q.name, q.limit, stop, passes, bound, reported[passes], q.best);
                CHECK(bound <= q.best * (1 + 1e-9));
                CHECK(reported[passes] <= q.best * (1 + 1e-9));
                CHECK(psched_partition_status(r) != PSCHED_SOLVE_OPTIMAL ||
                      fabs(mk[passes] - q.best) <= 1e-9 * q.best);
                /* stopped with subtrees listed (a bound below the incumbent) */
                if (!passes)
                    listed += bound > 0 && bound < mk[0] * (1 - 1e-9);
                else
                    below += ended_below;
                psched_partition_result_destroy(r);
            }
            CHECK(reported[1] >= reported[0] * (1 - 1e-9));
            CHECK(mk[1] <= mk[0] * (1 + 1e-9));
            raised += reported[1] > reported[0] * (1 + 1e-9);
        }
        psched_plan_destroy(plan);
    }
    printf("# stopped early: %d of 40 runs with a bound from listed subtrees; with the bound "
           "passes, %d with one that ended below its threshold, %d with a higher bound\n",
           listed, below, raised);
    CHECK(listed >= 12);
    CHECK(below >= 12 && raised >= 12);
    psched_model_destroy(model);
}

/* One count vector's recompute mixes for test_device_search_recompute:
 * stage s takes mix[s] = (none, selective, full) of its run layers, every
 * combination, each evaluated and kept as (makespan, largest device
 * memory bound). */
typedef struct mixes {
    const psched_model *model;
    const psched_plan *plan;
    const char *name;
    uint32_t x[4];
    uint32_t mix[4][2]; /* per stage: selective, full (none is the rest) */
    double *mk, *mem;
    size_t n, cap;
} mixes;

static void mixes_stage(mixes *q, int s)
{
    if (s == 4) {
        uint32_t counts[4];
        psched_recompute rc[8];
        uint32_t at = 0;
        for (int t = 0; t < 4; t++) {
            counts[t] = q->x[t] + (t == 0) + (t == 3);
            if (t == 0)
                rc[at++] = PSCHED_RECOMPUTE_NONE; /* the embedding */
            uint32_t sel = q->mix[t][0], full = q->mix[t][1];
            for (uint32_t k = 0; k < q->x[t]; k++)
                rc[at++] = k < sel           ? PSCHED_RECOMPUTE_SELECTIVE
                           : k < sel + full ? PSCHED_RECOMPUTE_FULL
                                            : PSCHED_RECOMPUTE_NONE;
            if (t == 3)
                rc[at++] = PSCHED_RECOMPUTE_NONE; /* the head */
        }
        CHECK(at == 8);
        psched_partition_result *r = NULL;
        CHECK_OK(psched_partition_evaluate(q->model, q->plan, q->name, counts, 4, rc, &r));
        double mem = 0;
        for (uint32_t d = 0; d < 2; d++) {
            double md = 0;
            CHECK_OK(psched_partition_device(r, d, NULL, &md, NULL));
            mem = fmax(mem, md);
        }
        CHECK(q->n < q->cap);
        q->mk[q->n] = psched_partition_makespan(r);
        q->mem[q->n] = mem;
        q->n++;
        psched_partition_result_destroy(r);
        return;
    }
    for (uint32_t sel = 0; sel <= q->x[s]; sel++)
        for (uint32_t full = 0; sel + full <= q->x[s]; full++) {
            q->mix[s][0] = sel;
            q->mix[s][1] = full;
            mixes_stage(q, s + 1);
        }
}

/* The device search where a memory limit makes recompute mixes the
 * choice: p = 2, v = 2 (4 stages, two per device), an embedding, 6
 * identical layers with selective and full recompute, a head. The test
 * enumerates every count vector (the embedding's and the head's stages may
 * hold no run layer) x every per-stage mix of none, selective and full:
 * 6 832 partitions (the count: sum over the vectors of the product of
 * (c + 1)(c + 2) / 2 over the stages), each evaluated by
 * psched_partition_evaluate(), and, for limits between the leanest
 * partition's memory and the fastest one's, the fastest that fits. With
 * the local search off, psched_partition() must equal it and the device
 * search must prove it. */
static void test_device_search_recompute_matches_the_enumeration(void)
{
    static const char *const names[] = {"interleaved", "interleaved-zb"};
    psched_model *model = run_model(6);
    CHECK_OK(psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_SELECTIVE, 2, 0.25));
    CHECK_OK(psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_FULL, 0.5, 1));
    mixes q;
    memset(&q, 0, sizeof q);
    q.model = model;
    q.cap = 8192;
    q.mk = calloc(q.cap, sizeof(double));
    q.mem = calloc(q.cap, sizeof(double));
    CHECK(q.mk && q.mem);
    int proven = 0;
    for (int k = 0; k < 2; k++) {
        psched_plan *plan = tu_plan(2, 4, 2);
        q.plan = plan;
        q.name = names[k];
        q.n = 0;
        for (uint32_t a = 0; a <= 6; a++)
            for (uint32_t b = 1; a + b <= 6; b++)
                for (uint32_t c = 1; a + b + c <= 6; c++) {
                    q.x[0] = a, q.x[1] = b, q.x[2] = c, q.x[3] = 6 - a - b - c;
                    mixes_stage(&q, 0);
                }
        CHECK(q.n == 6832);
        double lean = INFINITY, fastest = INFINITY, fastest_mem = 0;
        for (size_t i = 0; i < q.n; i++) {
            lean = fmin(lean, q.mem[i]);
            if (q.mk[i] < fastest || (q.mk[i] == fastest && q.mem[i] < fastest_mem)) {
                fastest = q.mk[i];
                fastest_mem = q.mem[i];
            }
        }
        CHECK(fastest_mem > lean); /* the limits below bind */
        for (int l = 1; l <= 3; l++) {
            double limit = lean + (fastest_mem - lean) * l / 4.0;
            double best = INFINITY;
            for (size_t i = 0; i < q.n; i++)
                if (q.mem[i] <= limit)
                    best = fmin(best, q.mk[i]);
            CHECK(best > fastest); /* recompute is the choice */
            CHECK_OK(psched_plan_set_memory_limit(plan, limit));
            /* in one pass and in passes of a few evaluated options */
            for (int sliced = 0; sliced < 2; sliced++) {
                psched_partition_result *r = NULL;
                proven += partition_by_device_search(model, plan, names[k], sliced ? 3 : 0, &r);
                double mk = psched_partition_makespan(r);
                if (!(fabs(mk - best) <= 1e-9 * best))
                    fprintf(stderr, "%s limit %g: partition %g, enumeration %g\n", names[k],
                            limit, mk, best);
                CHECK(fabs(mk - best) <= 1e-9 * best);
                CHECK(psched_partition_status(r) == PSCHED_SOLVE_OPTIMAL);
                if (!sliced)
                    printf("# %s, limit %g: %g, the fastest that fits of the enumeration's %zu "
                           "partitions\n",
                           names[k], limit, mk, q.n);
                psched_partition_result_destroy(r);
            }
        }
        psched_plan_destroy(plan);
    }
    CHECK(proven == 12);
    free(q.mk);
    free(q.mem);
    psched_model_destroy(model);
}

/* DualPipe's two chains partitioned together: chain 0's stage j and
 * chain 1's stage p + j hold the same layers (device d holds ranges d and
 * p-1-d); the brute force splits the layers into p ranges, writes each
 * range's costs into both chains' stages and sums every device's two
 * stages' parameters and in-flight activations. p in {2, 4}, m even and
 * >= 2p, up to 8 layers. */
static void test_dualpipe_matches_the_brute_force(void)
{
    rng_state = 20261127;
    tally tl = {0};
    for (int t = 0; t < 40; t++) {
        brute o;
        memset(&o, 0, sizeof o);
        o.name = "dualpipe";
        o.v = 2;
        o.p = 2 + 2 * rnd(2);
        o.L = o.p + rnd(9 - o.p);
        o.m = 2 * o.p + 2 * rnd(3);
        run_instance(&o, &tl);
    }
    tally_print(&tl, "dualpipe: ");
    CHECK(tl.cases >= 25);
}

/* A neighbour in o (its cut and choice): when it fits, it is simulated
 * and must not beat mk; `what` names the move. */
static bool no_faster_neighbour(brute *o, double mk, long *neighbours, const char *what)
{
    if (!(brute_memory(o) <= o->limit * (1 + 1e-12)))
        return true;
    (*neighbours)++;
    double n = brute_simulate(o);
    if (n < mk * (1 - 1e-9)) {
        fprintf(stderr, "%s p=%u v=%u m=%u L=%u: %s gives %g < %g\n", o->name, o->p, o->v,
                o->m, o->L, what, n, mk);
        return false;
    }
    return true;
}

/* Every recompute choice of the layers ls[i..n) (one device's; the rest
 * as they are): none that fits the limit simulates faster than mk. */
static bool device_choices(brute *o, const uint32_t *ls, uint32_t n, uint32_t i, double mk,
                           long *tried)
{
    if (i == n) {
        if (!(brute_memory(o) <= o->limit * (1 + 1e-12)))
            return true;
        (*tried)++;
        double t = brute_simulate(o);
        if (t < mk * (1 - 1e-9)) {
            fprintf(stderr, "%s p=%u v=%u m=%u L=%u: a device's other choices give %g < %g\n",
                    o->name, o->p, o->v, o->m, o->L, t, mk);
            return false;
        }
        return true;
    }
    uint32_t l = ls[i];
    uint8_t was = o->choice[l];
    bool ok = true;
    for (uint8_t r = 0; r < 3 && ok; r++) {
        if (!o->lay[l].has[r])
            continue;
        o->choice[l] = r;
        ok = device_choices(o, ls, n, i + 1, mk, tried);
    }
    o->choice[l] = was;
    return ok;
}

/* The partitions one run layer away on device d (from one of its stages
 * to another, every other stage as recorded: count[] per stage, choice[]
 * per layer), each with every recompute choice of d's layers: none that
 * fits simulates faster than mk. */
static bool device_moves(brute *o, const uint32_t *count, const uint8_t *choice, uint32_t d,
                         double mk, long *tried)
{
    bool head = o->grp[0] != o->grp[1], tail = o->grp[o->L - 1] != o->grp[o->L - 2];
    uint32_t S = o->R;
    bool ok = true;
    for (uint32_t j = 0; j < S && ok; j++) {
        for (uint32_t k = 0; k < S && ok; k++) {
            if (j == k || o->device_of[j] != d || o->device_of[k] != d)
                continue;
            uint32_t ends = (j == 0 && head) + (j == S - 1 && tail);
            if (count[j] <= ends || count[j] == 1)
                continue; /* no run layer to give, or the stage would be empty */
            uint32_t ls[10], n = 0, from = 0;
            o->cut[0] = 0;
            for (uint32_t s = 0; s < S; s++) {
                uint32_t c = count[s] - (s == j) + (s == k);
                o->cut[s + 1] = o->cut[s] + c;
                for (uint32_t l = o->cut[s]; l < o->cut[s + 1]; l++) {
                    if (o->device_of[s] == d) {
                        o->choice[l] = 0; /* every choice of d's layers below */
                        ls[n++] = l;
                    } else {
                        o->choice[l] = choice[from + (l - o->cut[s])];
                    }
                }
                from += count[s];
            }
            ok = device_choices(o, ls, n, 0, mk, tried);
        }
    }
    return ok;
}

/* The device search's polish (docs/optimizer.md, "The device search"):
 * before its search from the root, each device's recompute assignment of
 * the incumbent's layer counts is searched with every other device kept,
 * then single run layers move between stages (each device at every option
 * of its new counts), until neither gains. Its answer (the test hook
 * keeps it) must fit, simulate to the step time it reports, be no faster
 * than the final partition, and be a device-wise optimum the test checks
 * itself: for every device, every recompute choice of its layers
 * (embedding and head included, the other devices' layers unchanged), and
 * every move of one run layer between two of its stages with every
 * recompute choice of its layers, that fits the limit simulates no
 * faster. (Moves between two devices try one device's options with the
 * other at its least work: a descent, not an optimum the test can state;
 * the brute-force tests check the answers they lead to.) A third run with
 * the options cap at 1: the search does not start and the polish runs
 * alone, making its groups itself. Checked to fail when the polish skips
 * a group's last option, stops after one sweep, skips the moves within a
 * device, or makes a group without its last option. Random runs (an
 * optional embedding, identical layers, an optional head), looped-bfs
 * (every micro-batch in flight: the limit binds), interleaved and
 * interleaved-zb at v = 4, 1f1b; half with the local search off, so the
 * polish starts from the solver's partition. */
static void test_device_search_polish_ends_at_a_device_optimum(void)
{
    static const struct {
        const char *name;
        uint32_t v, p, lmin;
    } kinds[] = {{"looped-bfs", 4, 2, 8},     {"looped-bfs", 2, 2, 6}, {"interleaved", 4, 2, 8},
                 {"interleaved-zb", 4, 2, 8}, {"1f1b", 1, 4, 5}};
    rng_state = 20261127;
    int cases = 0, polished = 0, capped = 0;
    long tried = 0;
    size_t gains = psched__devsearch_test_polish_gains();
    psched__certify_test_hooks(0, false);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (int t = 0; t < 24; t++) {
            brute o;
            identical_brute(&o, kinds[k].name, kinds[k].v, kinds[k].p, kinds[k].lmin);
            o.recompute = t % 3 != 2;
            psched_model *model = NULL;
            psched_plan *plan = NULL;
            if (!brute_instance(&o, 12000, &model, &plan))
                continue;
            cases++;
            psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
            opt.time_limit = 86400; /* the budgets end it */
            opt.method = t % 3 ? PSCHED_PARTITION_DP : PSCHED_PARTITION_ILP;
            psched_partition_result *r = NULL;
            psched__certify_test_no_improve(t % 2 == 0);
            psched__certify_test_slowest_start(t % 4 == 0);
            /* a third with the options over the cap: no search, the
             * polish alone, making its groups itself */
            size_t proofs = psched__devsearch_test_proofs();
            psched__devsearch_test_options_cap(t % 3 == 1 ? 1 : 0);
            CHECK_OK(psched_partition(model, plan, o.name, &opt, &r));
            psched__devsearch_test_options_cap(0);
            psched__certify_test_slowest_start(false);
            psched__certify_test_no_improve(false);
            if (t % 3 == 1)
                CHECK(psched__devsearch_test_proofs() == proofs);
            uint32_t count[16];
            uint8_t choice[10];
            double mk = 0;
            if (psched__devsearch_test_polished(count, o.S, choice, o.L, &mk)) {
                polished++;
                capped += t % 3 == 1;
                o.cut[0] = 0;
                for (uint32_t s = 0; s < o.R; s++)
                    o.cut[s + 1] = o.cut[s] + count[s];
                CHECK(o.cut[o.R] == o.L);
                memcpy(o.choice, choice, o.L);
                CHECK(brute_memory(&o) <= o.limit * (1 + 1e-12));
                double own = brute_simulate(&o);
                CHECK(fabs(own - mk) <= 1e-9 * own);
                CHECK(psched_partition_makespan(r) <= mk * (1 + 1e-9));
                for (uint32_t d = 0; d < o.p; d++) {
                    uint32_t ls[10], n = 0;
                    for (uint32_t s = 0; s < o.R; s++)
                        for (uint32_t l = o.cut[s]; o.device_of[s] == d && l < o.cut[s + 1]; l++)
                            ls[n++] = l;
                    CHECK(device_choices(&o, ls, n, 0, mk, &tried));
                }
                for (uint32_t d = 0; d < o.p; d++)
                    CHECK(device_moves(&o, count, choice, d, mk, &tried));
            }
            psched_partition_result_destroy(r);
            brute_instance_free(&o, model, plan);
        }
    }
    gains = psched__devsearch_test_polish_gains() - gains;
    printf("# polish: %d of %d instances (%d of them over the options cap), %zu partitions "
           "kept, %ld device-wise alternatives that fit simulated, none faster\n",
           polished, cases, capped, gains, tried);
    CHECK(polished * 4 >= cases * 3);
    CHECK(capped * 5 >= cases);
    CHECK(gains > 0);
}

/* The local search that improves the incumbent (docs/optimizer.md,
 * "Local search"), alone (the test hook stops the certificate after it):
 * its answer must be a local optimum that the test checks itself, over
 * the brute force's own split and memory model. Every partition one move
 * away (one layer from any range to any other, the layers between
 * shifting one range over with their recompute choices, or with the
 * moved layer carrying its kind and every other range keeping its kinds;
 * one layer's recompute kind changed; two layers of one group on ranges of
 * one device exchanging kinds) that fits the limit simulates no faster, and the
 * answer is no slower than the even split when that fits, and the bound
 * it reports (no search ran) is at most the brute force's best. Random
 * small instances, identical runs and mixed layers, v = 1, 2 and 4,
 * DualPipe, and looped-bfs with identical runs (BFS holds every
 * micro-batch, so the limit binds and where the recompute sits matters:
 * without the kind exchanges 3 of them end one exchange away from a
 * faster partition). */
static void test_local_search_ends_at_a_local_optimum(void)
{
    static const struct {
        const char *name;
        uint32_t v, p;
    } kinds[] = {{"1f1b", 1, 4},        {"interleaved", 2, 2}, {"interleaved", 4, 2},
                 {"interleaved-zb", 4, 2}, {"v-zb", 2, 2},     {"dualpipe", 2, 4},
                 {"looped-bfs", 4, 2}, {"looped-bfs", 2, 2}, {"looped-bfs", 2, 4}};
    rng_state = 20261126;
    int cases = 0;
    long neighbours = 0;
    psched__certify_test_improve_only(true);
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (int t = 0; t < (k >= 6 ? 24 : 8); t++) {
            brute o;
            memset(&o, 0, sizeof o);
            o.name = kinds[k].name;
            o.v = kinds[k].v;
            o.p = kinds[k].p;
            o.L = 2 * o.p + rnd(11 - 2 * o.p); /* at most 10 (brute.lay) */
            if (o.L < o.p * o.v)
                o.L = o.p * o.v;
            o.m = o.p * (1 + rnd(3));
            if (strcmp(o.name, "dualpipe") == 0)
                o.m = 2 * o.p + 2 * rnd(2);
            o.uniform = rnd(2) == 0 || k >= 6;
            psched_model *model = NULL;
            psched_plan *plan = NULL;
            if (!brute_instance(&o, 20000, &model, &plan))
                continue;
            psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
            opt.time_limit = 86400;
            psched_partition_result *r = NULL, *e = NULL;
            CHECK_OK(psched_partition(model, plan, o.name, &opt, &r));
            CHECK(psched_partition_status(r) != PSCHED_SOLVE_INFEASIBLE);
            double mk = psched_partition_makespan(r);
            uint32_t count[16] = {0};
            for (uint32_t s = 0; s < o.R; s++) {
                CHECK_OK(psched_partition_stage(r, s, &o.cut[s], &count[s], NULL, NULL));
                CHECK_EQ_INT(o.cut[s], s ? o.cut[s - 1] + count[s - 1] : 0);
            }
            o.cut[o.R] = o.L;
            for (uint32_t l = 0; l < o.L; l++)
                o.choice[l] = (uint8_t)psched_partition_layer_recompute(r, l);
            CHECK(brute_memory(&o) <= o.limit * (1 + 1e-12));
            CHECK_EQ_DBL(brute_simulate(&o), mk);
            /* the bound reported without the search (the shared work, one
             * micro-batch's path, the layer count bound of identical
             * layers) holds for the brute force's best */
            CHECK(mk >= o.best * (1 - 1e-9));
            double bound = mk * (1 - psched_partition_gap(r));
            if (!(bound <= o.best * (1 + 1e-9)))
                fprintf(stderr, "%s p=%u v=%u m=%u L=%u: bound %g above the best %g\n", o.name,
                        o.p, o.v, o.m, o.L, bound, o.best);
            CHECK(bound <= o.best * (1 + 1e-9));
            uint32_t cut0[17];
            uint8_t choice0[10];
            memcpy(cut0, o.cut, sizeof cut0);
            memcpy(choice0, o.choice, sizeof choice0);
            bool local = true;
            for (uint32_t a = 0; a < o.R; a++) {
                for (uint32_t b = 0; b < o.R; b++) {
                    if (a == b || count[a] < 2)
                        continue;
                    /* range a gives one layer to range b: every boundary
                     * between them moves one layer towards a */
                    if (a < b)
                        for (uint32_t x = a + 1; x <= b; x++)
                            o.cut[x]--;
                    else
                        for (uint32_t x = b + 1; x <= a; x++)
                            o.cut[x]++;
                    char what[96];
                    snprintf(what, sizeof what, "moving a layer from range %u to %u", a, b);
                    local = no_faster_neighbour(&o, mk, &neighbours, what) && local;
                    memcpy(o.cut, cut0, sizeof cut0);
                }
            }
            for (uint32_t l = 0; l < o.L; l++) {
                for (uint8_t q = 0; q < 3; q++) {
                    if (!o.lay[l].has[q] || q == choice0[l])
                        continue;
                    o.choice[l] = q;
                    char what[96];
                    snprintf(what, sizeof what, "layer %u with kind %u", l, q);
                    local = no_faster_neighbour(&o, mk, &neighbours, what) && local;
                    o.choice[l] = choice0[l];
                }
            }
            /* range a gives one layer to range b carrying its kind, every
             * other range keeping its kinds (the layers between shift, their
             * kinds stay with their ranges) */
            for (uint32_t a = 0; a < o.R; a++) {
                for (uint32_t b = 0; b < o.R; b++) {
                    if (a == b || count[a] < 2)
                        continue;
                    uint8_t lists[16][10];
                    uint32_t len[16];
                    for (uint32_t q = 0; q < o.R; q++) {
                        len[q] = count[q];
                        memcpy(lists[q], choice0 + cut0[q], count[q]);
                    }
                    uint8_t moved = a < b ? lists[a][len[a] - 1] : lists[a][0];
                    if (a > b)
                        memmove(lists[a], lists[a] + 1, len[a] - 1);
                    len[a]--;
                    if (a < b) {
                        memmove(lists[b] + 1, lists[b], len[b]);
                        lists[b][0] = moved;
                    } else {
                        lists[b][len[b]] = moved;
                    }
                    len[b]++;
                    bool valid = true;
                    for (uint32_t q = 0, l = 0; q < o.R; q++) {
                        o.cut[q] = l;
                        for (uint32_t i = 0; i < len[q]; i++, l++) {
                            o.choice[l] = lists[q][i];
                            valid = valid && o.lay[l].has[o.choice[l]];
                        }
                    }
                    char what[96];
                    snprintf(what, sizeof what, "moving a layer with its kind from range %u to %u",
                             a, b);
                    if (valid)
                        local = no_faster_neighbour(&o, mk, &neighbours, what) && local;
                    memcpy(o.cut, cut0, sizeof cut0);
                    memcpy(o.choice, choice0, sizeof choice0);
                }
            }
            /* two layers of one group on ranges of one device exchange
             * their kinds (with two chains a range sits on two devices) */
            for (uint32_t a = 0; a < o.R; a++) {
                for (uint32_t b = a + 1; b < o.R; b++) {
                    bool same = false;
                    for (uint32_t sa = a; sa < o.S; sa += o.R)
                        for (uint32_t sb = b; sb < o.S; sb += o.R)
                            same = same || o.device_of[sa] == o.device_of[sb];
                    if (!same)
                        continue;
                    for (uint32_t la = cut0[a]; la < cut0[a + 1]; la++)
                        for (uint32_t lb = cut0[b]; lb < cut0[b + 1]; lb++) {
                            if (o.grp[la] != o.grp[lb] || choice0[la] == choice0[lb])
                                continue;
                            o.choice[la] = choice0[lb];
                            o.choice[lb] = choice0[la];
                            char what[96];
                            snprintf(what, sizeof what, "layers %u and %u exchanging kinds", la,
                                     lb);
                            local = no_faster_neighbour(&o, mk, &neighbours, what) && local;
                            memcpy(o.choice, choice0, sizeof choice0);
                        }
                }
            }
            CHECK(local);
            opt.method = PSCHED_PARTITION_EVEN;
            if (psched_partition(model, plan, o.name, &opt, &e) == PSCHED_OK &&
                psched_partition_status(e) != PSCHED_SOLVE_INFEASIBLE)
                CHECK(mk <= psched_partition_makespan(e) * (1 + 1e-9));
            psched_partition_result_destroy(e);
            psched_partition_result_destroy(r);
            brute_instance_free(&o, model, plan);
            cases++;
        }
    }
    psched__certify_test_improve_only(false);
    printf("# local search: %d instances, %ld fitting neighbours simulated\n", cases, neighbours);
    CHECK(cases >= 30);
}

/* Micro-batch weights below 1 (issue 18 item 3 with issue 17 item 4): the
 * certificate's bounds charge each micro-batch the lightest weight, not 1,
 * so `optimal` still means no split simulates faster. Random small
 * instances (1f1b, zb-h1, interleaved and interleaved-zb v = 2, p = 2 or
 * 4, identical runs and mixed layers) with every weight 0.25 or every
 * weight 0.5, or weights from {0.25, 0.5, 1, 2} with one of them 0.25,
 * against the brute force of the same weighted plan; every one proven and
 * equal to it. (With every bound charging m whole micro-batches, 2 of 110
 * such instances came out `optimal` but slower than the best split.) */
static void test_weighted_microbatches_match_the_brute_force(void)
{
    static const struct {
        const char *name;
        uint32_t v, p;
    } kinds[] = {{"1f1b", 1, 2},        {"1f1b", 1, 4},          {"zb-h1", 1, 2},
                 {"interleaved", 2, 2}, {"interleaved-zb", 2, 2}};
    rng_state = 20261129;
    tally tl = {0};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (int t = 0; t < 12; t++) {
            brute o;
            memset(&o, 0, sizeof o);
            o.name = kinds[k].name;
            o.v = kinds[k].v;
            o.p = kinds[k].p;
            o.L = o.p * o.v + rnd(9 - o.p * o.v);
            o.m = o.p * (1 + rnd(3));
            o.uniform = rnd(2) == 0;
            o.weighted = true;
            run_instance(&o, &tl);
        }
    }
    tally_print(&tl, "weighted micro-batches: ");
    CHECK(tl.cases >= 45);

    /* A case where charging whole micro-batches cut the best split: 7
     * layers in groups (f, b, w) = 2 x (3, 4, 3), 2 x (1, 1, 1), 2 x (3, 5,
     * 3), 1 x (3, 5, 1), interleaved, p = 2, v = 2, m = 6, every weight
     * 0.5. With no comm every op's time halves, so every split's step time
     * halves: the answer is half the brute force's best at unit weights
     * (charging whole micro-batches, 98.5 came out `optimal`, above half of
     * that best). */
    static const double g[4][3] = {{3, 4, 3}, {1, 1, 1}, {3, 5, 3}, {3, 5, 1}};
    static const uint32_t n[4] = {2, 2, 2, 1};
    brute o;
    memset(&o, 0, sizeof o);
    o.name = "interleaved", o.p = 2, o.v = 2, o.m = 6, o.L = 7, o.limit = INFINITY;
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    for (uint32_t k = 0, l = 0; k < 4; k++) {
        CHECK_OK(psched_model_add_layers(model, "g", n[k], g[k][0], g[k][1], g[k][2], 1, 1));
        for (uint32_t j = 0; j < n[k]; j++, l++)
            o.lay[l] = (bf_layer){g[k][0], g[k][1], g[k][2], 1, {1, 0, 0}, {0, 0, 0},
                                  {true, false, false}};
    }
    o.plan = tu_plan(o.p, o.m, o.v);
    brute_schedule(&o);
    o.best = INFINITY;
    o.cut[0] = 0;
    brute_splits(&o, 0, false);
    const double half[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    CHECK_OK(psched_plan_set_microbatch_weights(o.plan, half, 6));
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition(model, o.plan, o.name, NULL, &r));
    CHECK_EQ_INT(psched_partition_status(r), PSCHED_SOLVE_OPTIMAL);
    CHECK_EQ_DBL(psched_partition_makespan(r), o.best / 2);
    psched_partition_result_destroy(r);
    psched_plan_destroy(o.plan);
    psched_model_destroy(model);
}

/* Issue 17's hand-checkable case: 3 identical layers (f = b = w = 1),
 * p = 2, m = 2, 1f1b. The estimate ties [1, 2] and [2, 1]; the issue
 * gives their simulated step times as 15 and 13 (stage costs (1,1,1),
 * (2,2,2) against (2,2,2), (1,1,1)). The partition must be [2, 1] at 13,
 * proven. */
/* 3 identical layers (f = b = w = 1, activation and parameters 1) on
 * 1f1b, p = 2, m micro-batches, partitioned (the certificate stopped after
 * its local search when improve_only). */
static psched_partition_result *three_layers_1f1b(uint32_t m, bool improve_only)
{
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    CHECK_OK(psched_model_add_layers(model, "layer", 3, 1, 1, 1, 1, 1));
    psched_plan *plan = tu_plan(2, m, 0);
    psched_partition_result *r = NULL;
    psched__certify_test_improve_only(improve_only);
    CHECK_OK(psched_partition(model, plan, "1f1b", NULL, &r));
    psched__certify_test_improve_only(false);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
    return r;
}

static void test_three_identical_layers_take_the_faster_tie(void)
{
    psched_partition_result *r = three_layers_1f1b(2, false);
    CHECK_EQ_INT(psched_partition_status(r), PSCHED_SOLVE_OPTIMAL);
    CHECK_EQ_DBL(psched_partition_makespan(r), 13);
    uint32_t count = 0;
    CHECK_OK(psched_partition_stage(r, 0, NULL, &count, NULL, NULL));
    CHECK_EQ_INT(count, 2);
    psched_partition_result_destroy(r);
}

/* The layer count bound (docs/optimizer.md), by hand: 3 identical layers
 * (f = b = w = 1, so t = 3 per layer), 1f1b, p = 2, m = 4. Device 0 starts
 * at 0; device 1 after the F of at least one layer (1); m·t = 12. Device
 * 0 fits floor(T / 12) layers and device 1 floor((T - 1) / 12) (less its
 * tail, the B of stage 0's layers, where the certificate knows the order
 * ends with it: that only lowers device 1's count): both need one, and
 * together three, first reached at T = 24 (2 + 1). The shared work gives
 * only 4·9/2 = 18 and one micro-batch 6. With the certificate stopped
 * after its local search (no search, no path bound), the reported bound
 * is 24. */
static void test_layer_count_bound_by_hand(void)
{
    psched_partition_result *r = three_layers_1f1b(4, true);
    double mk = psched_partition_makespan(r);
    CHECK(mk >= 24);
    CHECK(fabs(mk * (1 - psched_partition_gap(r)) - 24) <= 1e-9 * 24);
    psched_partition_result_destroy(r);
}

/* 6 identical layers (f = b = w = 1, activations 4, parameters 1), with
 * full recompute (0.5 for +1 on B) when `full`. */
static psched_model *six_layers(bool full)
{
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    CHECK_OK(psched_model_add_layers(model, "layer", 6, 1, 1, 1, 4, 1));
    if (full)
        CHECK_OK(psched_model_set_recompute(model, 0, PSCHED_RECOMPUTE_FULL, 0.5, 1));
    return model;
}

/* p = 2, m = 4 and a memory limit (INFINITY: none). */
static psched_plan *two_devices_four_microbatches(double limit)
{
    return tu_plan_limited(2, 4, 0, limit);
}

/* The layer count bound with the recompute a binding limit forces, by
 * hand: 6 identical layers (f = b = w = 1, so t = 3; activations 4,
 * parameters 1; full recompute keeps 0.5 for +1 on B), 1f1b, p = 2, m = 4,
 * limit 10. Device 0 holds 2 micro-batches in flight, device 1 one. With
 * n layers device 0 has 10 - n for 2·(their activations): per layer at
 * most a = (10 - n)/(2n), and the cheapest mix of none (4, +0) and full
 * (0.5, +1) averaging a costs (4 - a)/3.5 per layer. Device 1 holds a
 * layer per micro-batch, a = (10 - n)/n, and starts after the F of device
 * 0's layers and ends before their BW (1F1B fuses B and W: 3 per layer).
 * Split [3, 3]: device 0 a = 7/6, 17/21 per layer, 4·(9 + 17/7) = 320/7 =
 * 45.71; device 1 a = 7/3, 10/21 per layer, 9 + 4·(9 + 10/7) = 355/7 =
 * 50.71. [4, 2]: device 0 a = 3/4, 4·(12 + 4·13/14) = 62.9; [2, 4]: device
 * 1 6 + 4·(12 + 4·5/7) = 65.4. So no split is faster than 355/7 with
 * the fractional mix (the count bound's above 256 layers per device; the
 * hook sets that limit to 0 here). Whole layers (its own up to 256):
 * [3, 3] device 0 fits all three at full (1.5 <= 3.5; one without is 5),
 * +3, 4·12 = 48; device 1 one without and two at full (5 <= 7; two
 * without is 8.5), +2, 9 + 4·11 = 53. [4, 2]: device 0 all at full (2 <=
 * 3), 4·16 = 64; [2, 4]: device 1 one without and three at full (5.5 <=
 * 6), 6 + 4·15 = 66. So 53. Without the recompute the bound was 37
 * (device 1: its start, the F of one layer, plus 4·9). With the
 * certificate stopped after its local search, the reported bound is the
 * count bound. */
static void test_layer_count_bound_counts_forced_recompute(void)
{
    psched_model *model = six_layers(true);
    psched_plan *plan = two_devices_four_microbatches(10);
    for (int whole = 0; whole < 2; whole++) {
        psched_partition_result *r = NULL;
        psched__certify_test_improve_only(true);
        psched__certify_test_whole_max(whole ? UINT32_MAX : 0);
        CHECK_OK(psched_partition(model, plan, "1f1b", NULL, &r));
        psched__certify_test_whole_max(UINT32_MAX);
        psched__certify_test_improve_only(false);
        double want = whole ? 53 : 355.0 / 7, mk = psched_partition_makespan(r);
        CHECK(fabs(psched__certify_test_count_bound() - want) <= 1e-9 * want);
        CHECK(mk >= 53);
        CHECK(fabs(mk * (1 - psched_partition_gap(r)) - want) <= 1e-9 * want);
        psched_partition_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

/* The layer count bound where device e holds stage e alone (v = 1), by
 * hand: its start is the F of every layer before it and its tail the
 * backward of every layer before it (one per stage before). 6 identical
 * layers (f = b = w = 1), 1f1b, p = 2, m = 4, no limit: device 0 with n
 * layers takes 12n, device 1 n + 12(6 - n) + 2n (the F of device 0's
 * layers first, their BW last); the least of the larger is at n = 3: 45,
 * which is [3, 3]'s step time ((m + p - 1)·9): proven by the bound alone.
 * With one layer per earlier stage it was 37 (1 + 36), and the shared
 * work gives 36. */
static void test_layer_count_bound_starts_after_the_layers_before(void)
{
    psched_model *model = six_layers(false);
    psched_plan *plan = two_devices_four_microbatches(INFINITY);
    psched_partition_result *r = NULL;
    psched__certify_test_improve_only(true);
    CHECK_OK(psched_partition(model, plan, "1f1b", NULL, &r));
    psched__certify_test_improve_only(false);
    double mk = psched_partition_makespan(r);
    CHECK(fabs(psched__certify_test_count_bound() - 45) <= 1e-9 * 45);
    CHECK_EQ_DBL(mk, 45);
    CHECK_EQ_INT(psched_partition_status(r), PSCHED_SOLVE_OPTIMAL);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

/* The balanced-count candidate (certify.c, count_candidate()) where no
 * solver has time: a clock that jumps 1 000 s at every read, so every
 * deadline has passed. 6 identical layers (f = b = w = 1, activations 4,
 * parameters 1, full recompute 0.5 for +1), 1f1b, p = 2, m = 4, limit 10.
 * Balanced counts: [3, 3] (the per-micro-batch times with the least
 * recompute their memory allows: [3, 3] 11.43 and 10.43, [4, 2] 15.71,
 * [2, 4] 14.86). Device 0 keeps 2 micro-batches: 3 + 2·(activations) <=
 * 10 leaves 3.5, so all three at full (1.5); device 1 keeps one: 7, one
 * layer without recompute and two at full (5). Stages F 3, BW 9 and F 3,
 * BW 8. 1F1B by hand: d0 F0 [0,3] F1 [3,6]; d1 F0 [3,6] BW0 [6,14] F1
 * [14,17] BW1 [17,25]; d0 BW0 [14,23] F2 [23,26] BW1 [26,35] F3 [35,38];
 * d1 F2 [26,29] BW2 [29,37] F3 [38,41] BW3 [41,49]; d0 BW2 [38,47] BW3
 * [49,58]: 58. The even split (one recompute choice for all: full on both)
 * takes 60 (device 1's BW 9 too). */
static double jumping_now;
static double jumping_clock(void)
{
    return jumping_now += 1000;
}

static void test_balanced_counts_when_no_solver_has_time(void)
{
    psched_model *model = six_layers(true);
    psched_plan *plan = two_devices_four_microbatches(10);
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    psched_partition_result *r = NULL, *e = NULL;
    psched__set_test_clock(jumping_clock);
    CHECK_OK(psched_partition(model, plan, "1f1b", &opt, &r));
    opt.method = PSCHED_PARTITION_EVEN;
    CHECK_OK(psched_partition(model, plan, "1f1b", &opt, &e));
    psched__set_test_clock(NULL);
    CHECK_EQ_DBL(psched_partition_makespan(e), 60);
    CHECK_EQ_DBL(psched_partition_makespan(r), 58);
    uint32_t count = 0;
    CHECK_OK(psched_partition_stage(r, 0, NULL, &count, NULL, NULL));
    CHECK_EQ_INT(count, 3);
    psched_partition_result_destroy(r);
    psched_partition_result_destroy(e);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

/* A run with selective and full recompute under a limit close to the
 * leanest fit (random_instance(), the grid's shape) of the given kind;
 * false when it has too many candidates for the brute force. */
static bool recompute_instance(brute *o, const char *name, uint32_t v, uint32_t p, uint32_t lmin,
                               psched_model **model, psched_plan **plan)
{
    identical_brute(o, name, v, p, lmin);
    o->recompute = true;
    return brute_instance(o, 12000, model, plan);
}

/* Several stages per device: interleaved and interleaved-zb at v = 2 and
 * 4, v-zb, looped-bfs. */
static const instance_kind chunk_kinds[] = {
    {"interleaved", 2, 2, 6}, {"interleaved-zb", 2, 2, 6}, {"v-zb", 2, 2, 6},
    {"looped-bfs", 2, 2, 6},  {"interleaved", 4, 2, 8},    {"interleaved-zb", 4, 2, 8}};

/* fn on twelve random recompute_instance()s of each kind, the generator
 * seeded with `seed`; returns how many there were (those with too many
 * candidates for the brute force are left out). */
static int each_recompute_instance(const instance_kind *kinds, size_t n, uint64_t seed,
                                   void (*fn)(brute *o, psched_model *model, psched_plan *plan,
                                              void *ctx),
                                   void *ctx)
{
    rng_state = seed;
    int cases = 0;
    for (size_t k = 0; k < n; k++) {
        for (int t = 0; t < 12; t++) {
            brute o;
            psched_model *model = NULL;
            psched_plan *plan = NULL;
            if (!recompute_instance(&o, kinds[k].name, kinds[k].v, kinds[k].p, kinds[k].lmin,
                                    &model, &plan))
                continue;
            cases++;
            fn(&o, model, plan, ctx);
            brute_instance_free(&o, model, plan);
        }
    }
    return cases;
}

/* The balanced-count candidate with several stages per device (each
 * device's layers split evenly over its stages, its recompute moved one
 * variant leaner where that saves the most memory per extra time) on
 * random runs with selective and full recompute under limits close to the
 * leanest fit (interleaved and interleaved-zb at v = 2 and 4, v-zb,
 * looped-bfs): it fits the limit by the brute force's memory rule, its
 * step time there is no faster than the brute force's best, and it is
 * often faster than every baseline (the even splits, each with one
 * recompute kind for every layer, and the time-balanced split). */
typedef struct chunk_tally {
    int made, beat;
} chunk_tally;

static void balanced_chunks_instance(brute *o, psched_model *model, psched_plan *plan, void *ctx)
{
    static const psched_partition_method baselines[] = {
        PSCHED_PARTITION_EVEN, PSCHED_PARTITION_EVEN_ACCOUNTED, PSCHED_PARTITION_DP_TIME};
    chunk_tally *tl = ctx;
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400;
    psched_partition_result *r = NULL;
    psched__certify_test_improve_only(true);
    CHECK_OK(psched_partition(model, plan, o->name, &opt, &r));
    psched__certify_test_improve_only(false);
    uint32_t count[16];
    uint8_t choice[10];
    if (psched__certify_test_candidate(count, o->S, choice, o->L)) {
        tl->made++;
        o->cut[0] = 0;
        for (uint32_t s = 0; s < o->R; s++)
            o->cut[s + 1] = o->cut[s] + count[s];
        CHECK(o->cut[o->R] == o->L);
        memcpy(o->choice, choice, o->L);
        CHECK(brute_memory(o) <= o->limit * (1 + 1e-12));
        double own = brute_simulate(o);
        CHECK(own >= o->best * (1 - 1e-9));
        CHECK(psched_partition_makespan(r) <= own * (1 + 1e-9));
        double base = INFINITY;
        for (size_t b = 0; b < sizeof baselines / sizeof *baselines; b++) {
            psched_partition_result *e = NULL;
            opt.method = baselines[b];
            if (psched_partition(model, plan, o->name, &opt, &e) == PSCHED_OK &&
                psched_partition_status(e) != PSCHED_SOLVE_INFEASIBLE)
                base = fmin(base, psched_partition_makespan(e));
            psched_partition_result_destroy(e);
        }
        tl->beat += own < base * (1 - 1e-9);
    }
    psched_partition_result_destroy(r);
}

static void test_balanced_counts_with_chunks_fit_and_beat_the_baselines(void)
{
    chunk_tally tl = {0, 0};
    int cases = each_recompute_instance(chunk_kinds, sizeof chunk_kinds / sizeof *chunk_kinds,
                                        20261126, balanced_chunks_instance, &tl);
    printf("# balanced counts with chunks: %d instances, %d candidates, %d faster than every "
           "baseline\n",
           cases, tl.made, tl.beat);
    CHECK(cases >= 40);
    CHECK(tl.made * 4 >= cases * 3);
    CHECK(tl.beat * 2 >= tl.made);
}

/* The certificate stopped after its local search (psched__certify_test_improve_only),
 * alone, with the descents from the balanced counts in one orientation and
 * with both (certify.c, count_descents()): the step times of the three, r
 * the last's result. */
static void descents_runs(const psched_model *model, const psched_plan *plan, const char *name,
                          psched_partition_result **r, double *alone, double *one, double *both)
{
    psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
    opt.time_limit = 86400; /* the op budgets end it, not the clock */
    psched_partition_result *a = NULL, *b = NULL;
    psched__certify_test_improve_only(true);
    CHECK_OK(psched_partition(model, plan, name, &opt, &a));
    psched__certify_test_descents(2);
    CHECK_OK(psched_partition(model, plan, name, &opt, &b));
    psched__certify_test_descents(1);
    CHECK_OK(psched_partition(model, plan, name, &opt, r));
    psched__certify_test_descents(0);
    psched__certify_test_improve_only(false);
    *alone = psched_partition_makespan(a);
    *one = psched_partition_makespan(b);
    *both = psched_partition_makespan(*r);
    psched_partition_result_destroy(a);
    psched_partition_result_destroy(b);
}

/* The descents from the balanced counts: on random runs with selective
 * and full recompute under limits close to the leanest fit (interleaved
 * and interleaved-zb at v = 2 and 4, v-zb, looped-bfs; p = 2, at most 10
 * layers) the answer with them fits by the brute force's memory rule, is
 * never slower than the local search's alone nor faster than the brute
 * force's best; and on the grid's shape at p = 4 (an embedding, L − 2
 * identical layers with selective and full recompute, a head; L = 24, 32,
 * 40, m = 16, v = 2, limits 50-70% of the even split's largest device
 * without recompute) it is faster than the local search's alone on a
 * third of the runs or more (none without the descents), and the second
 * orientation (the larger shares where the most micro-batches are in
 * flight) is faster than the first alone on some. */
static void descents_instance(brute *o, psched_model *model, psched_plan *plan, void *ctx)
{
    (void)ctx;
    psched_partition_result *r = NULL;
    double alone, one, mk;
    descents_runs(model, plan, o->name, &r, &alone, &one, &mk);
    o->cut[0] = 0;
    for (uint32_t s = 0; s < o->R; s++) {
        uint32_t count = 0;
        CHECK_OK(psched_partition_stage(r, s, NULL, &count, NULL, NULL));
        o->cut[s + 1] = o->cut[s] + count;
    }
    CHECK(o->cut[o->R] == o->L);
    for (uint32_t l = 0; l < o->L; l++)
        o->choice[l] = (uint8_t)psched_partition_layer_recompute(r, l);
    CHECK(brute_memory(o) <= o->limit * (1 + 1e-12));
    CHECK_EQ_DBL(brute_simulate(o), mk);
    CHECK(mk >= o->best * (1 - 1e-9));
    CHECK(mk <= one * (1 + 1e-12));
    CHECK(one <= alone * (1 + 1e-12));
    psched_partition_result_destroy(r);
}

static void test_count_descents_fit_and_never_lose(void)
{
    int cases = each_recompute_instance(chunk_kinds, sizeof chunk_kinds / sizeof *chunk_kinds,
                                        20261129, descents_instance, NULL);
    CHECK(cases >= 40);

    static const char *const names[] = {"v-zb", "interleaved", "interleaved-zb", "looped-bfs"};
    int runs = 0, faster = 0, oriented = 0;
    for (uint32_t layers = 24; layers <= 40; layers += 8) {
        psched_model *model = tu_grid_model(layers);
        for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
            psched_plan *plan = tu_plan(4, 16, 2);
            uint32_t counts[8];
            for (uint32_t s = 0; s < 8; s++)
                counts[s] = layers / 8 + (s < layers % 8);
            psched_partition_result *even = NULL;
            CHECK_OK(psched_partition_evaluate(model, plan, names[k], counts, 8, NULL, &even));
            double most = 0;
            for (uint32_t d = 0; d < 4; d++) {
                double mem = 0;
                CHECK_OK(psched_partition_device(even, d, NULL, &mem, NULL));
                most = fmax(most, mem);
            }
            psched_partition_result_destroy(even);
            for (int tenths = 5; tenths <= 7; tenths++) {
                CHECK_OK(psched_plan_set_memory_limit(plan, 0.1 * tenths * most));
                psched_partition_result *r = NULL, *check = NULL;
                double alone, one, mk;
                descents_runs(model, plan, names[k], &r, &alone, &one, &mk);
                runs++;
                CHECK(mk <= one * (1 + 1e-12));
                CHECK(one <= alone * (1 + 1e-12));
                faster += mk < alone * (1 - 1e-9);
                oriented += mk < one * (1 - 1e-9);
                /* the answer, evaluated as given: it fits, at the same time */
                uint32_t got[8];
                psched_recompute rec[40];
                for (uint32_t s = 0; s < 8; s++)
                    CHECK_OK(psched_partition_stage(r, s, NULL, &got[s], NULL, NULL));
                for (uint32_t l = 0; l < layers; l++)
                    rec[l] = psched_partition_layer_recompute(r, l);
                CHECK_OK(psched_partition_evaluate(model, plan, names[k], got, 8, rec, &check));
                CHECK_EQ_INT(psched_partition_status(check), PSCHED_SOLVE_FEASIBLE);
                CHECK_EQ_DBL(psched_partition_makespan(check), mk);
                psched_partition_result_destroy(check);
                psched_partition_result_destroy(r);
            }
            psched_plan_destroy(plan);
        }
        psched_model_destroy(model);
    }
    printf("# descents from the balanced counts: %d small runs; %d grid-shaped runs, %d faster "
           "than the local search alone, %d faster with the second orientation\n",
           cases, runs, faster, oriented);
    CHECK(faster * 3 >= runs);
    CHECK(oriented > 0);
}

/* Soundness of the layer count bound with forced recompute: random
 * identical runs with selective and full recompute under limits close to
 * the leanest fit (the grid's shape), 1f1b, zb-h1, interleaved, v-zb and
 * DualPipe, the certificate stopped after its local search so the count
 * bound is computed alone, with the fractional recompute mix and with
 * whole layers: it never exceeds the brute force's fastest fitting
 * partition, whole layers never lower it (the mix relaxes them), and they
 * raise it on many instances. */
typedef struct count_tally {
    int raised;
} count_tally;

static void count_bound_instance(brute *o, psched_model *model, psched_plan *plan, void *ctx)
{
    count_tally *tl = ctx;
    double frac = 0;
    for (int whole = 0; whole < 2; whole++) {
        /* the fractional recompute mix, then whole layers */
        psched_partition_result *r = NULL;
        psched__certify_test_improve_only(true);
        psched__certify_test_whole_max(whole ? UINT32_MAX : 0);
        CHECK_OK(psched_partition(model, plan, o->name, NULL, &r));
        psched__certify_test_whole_max(UINT32_MAX);
        psched__certify_test_improve_only(false);
        double bound = psched__certify_test_count_bound();
        if (!(bound <= o->best * (1 + 1e-9)))
            fprintf(stderr, "%s p=%u m=%u L=%u limit %g: count bound %g above the best %g\n",
                    o->name, o->p, o->m, o->L, o->limit, bound, o->best);
        CHECK(bound <= o->best * (1 + 1e-9));
        CHECK(psched_partition_makespan(r) * (1 - psched_partition_gap(r)) <=
              o->best * (1 + 1e-9));
        /* whole layers only add to the fractional mix's bound */
        if (!whole)
            frac = bound;
        CHECK(!whole || bound >= frac * (1 - 1e-12));
        tl->raised += whole && bound > frac * (1 + 1e-9);
        psched_partition_result_destroy(r);
    }
}

static void test_layer_count_bound_is_sound_under_recompute(void)
{
    static const instance_kind kinds[] = {{"1f1b", 1, 2, 5},        {"1f1b", 1, 4, 5},
                                          {"zb-h1", 1, 3, 5},       {"interleaved", 2, 2, 6},
                                          {"v-zb", 2, 2, 6},        {"dualpipe", 2, 4, 5}};
    count_tally tl = {0};
    int cases = each_recompute_instance(kinds, sizeof kinds / sizeof *kinds, 20261127,
                                        count_bound_instance, &tl);
    printf("# count bound with recompute: %d instances, %d higher with whole layers\n", cases,
           tl.raised);
    CHECK(cases >= 50);
    CHECK(tl.raised >= cases / 4);
}

/* The step time the optimizer reports is simulated with the plan's
 * micro-batch weights (issue 18 item 3). 8 identical layers (1, 1, 1) on
 * 1F1B p = 2, m = 4: the split is [4, 4], stage times F 4, BW 8; unit
 * weights give (m + p - 1)·12 = 60. Weights (1, 1, 1, 4) scale micro-batch
 * 3 by 4 (F 16, BW 32). d1: F0 [4,8] BW0 [8,16] F1 [16,20] BW1 [20,28]
 * F2 [28,32] BW2 [32,40]; d0: F0 [0,4] F1 [4,8] BW0 [16,24] F2 [24,28]
 * BW1 [28,36] F3 [36,52] BW2 [52,60]; d1: F3 [52,68] BW3 [68,100]; d0:
 * BW3 [100,132].
 * Memory (activation 1 and parameters 1 per layer): micro-batch k counts
 * w_k in flight, as the simulator scales its activations. d0 runs F0 F1
 * BW0 F2 BW1 F3 BW2 BW3: held 1 2 1 2 1 5 4 0, peak 5; d1 F0 BW0 F1 BW1 ...
 * F3: peak 4. [4, 4] then needs 5·4 + 4 = 24 and 4·4 + 4 = 20; a split
 * [k, 8 - k] needs max(6k, 5(8 - k)), smallest 24 at k = 4: a limit of 23
 * fits nothing. */
static void test_partition_step_time_uses_the_microbatch_weights(void)
{
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    CHECK_OK(psched_model_add_layers(model, "layer", 8, 1, 1, 1, 1, 1));
    psched_plan *plan = tu_plan(2, 4, 0);
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition(model, plan, "1f1b", NULL, &r));
    CHECK_EQ_DBL(psched_partition_makespan(r), 60);
    psched_partition_result_destroy(r);
    const double w[] = {1, 1, 1, 4};
    CHECK_OK(psched_plan_set_microbatch_weights(plan, w, 4));
    CHECK_OK(psched_partition(model, plan, "1f1b", NULL, &r));
    uint32_t count = 0;
    CHECK_OK(psched_partition_stage(r, 0, NULL, &count, NULL, NULL));
    CHECK_EQ_INT(count, 4);
    CHECK_EQ_DBL(psched_partition_makespan(r), 132);
    double memory, peak;
    CHECK_OK(psched_partition_device(r, 0, NULL, &memory, &peak));
    CHECK_EQ_DBL(memory, 24);
    CHECK_EQ_DBL(peak, 24);
    CHECK_OK(psched_partition_device(r, 1, NULL, &memory, &peak));
    CHECK_EQ_DBL(memory, 20);
    CHECK_EQ_DBL(peak, 20);
    psched_partition_result_destroy(r);
    CHECK_OK(psched_plan_set_memory_limit(plan, 23));
    CHECK_OK(psched_partition(model, plan, "1f1b", NULL, &r));
    CHECK_EQ_INT(psched_partition_status(r), PSCHED_SOLVE_INFEASIBLE);
    CHECK_EQ_DBL(psched_partition_min_memory(r), 24);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
}

/* A generator that reads no stage cost or memory delta builds the same
 * order for every partition; the certificate then simulates that order
 * with each partition's costs instead of generating it again (3-4 times
 * fewer microseconds per partition on the example profiles). Nothing the
 * result says may change: mid-size instances (16-24 layers, searches cut
 * by the budgets, not the clock) partitioned with and without the
 * shortcut give the same partition, step time, status and gap. zb's
 * greedy reads the costs and never takes it. */
static void test_static_order_changes_no_result(void)
{
    static const struct {
        const char *name;
        uint32_t v;
        bool ignores;
    } kinds[] = {{"1f1b", 1, true},          {"interleaved", 2, true}, {"v-zb", 2, true},
                 {"interleaved", 4, true},    {"interleaved-zb", 4, true},
                 {"dualpipe", 2, true},       {"zb", 1, false}};
    rng_state = 20261127;
    int compared = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        psched_plan *probe = tu_plan(4, 8, kinds[k].v);
        psched_schedule *sched = NULL;
        CHECK_OK(psched_generate(probe, kinds[k].name, &sched));
        CHECK(psched__schedule_order_ignores_costs(sched) == kinds[k].ignores);
        psched_schedule_destroy(sched);
        psched_plan_destroy(probe);
        for (int t = 0; t < 3; t++) {
            psched_model *model = NULL;
            CHECK_OK(psched_model_create(&model));
            uint32_t p = kinds[k].v == 4 ? 2 : 2 + 2 * rnd(2), layers = 12 + rnd(7), g = 0;
            double total = 0; /* parameters + p micro-batches of activations */
            while (layers) {
                uint32_t n = 1 + rnd(layers < 6 ? layers : 6);
                double f = 1 + rnd(4), act = 2 + rnd(6), param = 1 + rnd(6);
                CHECK_OK(psched_model_add_layers(model, "g", n, f, f + rnd(3), f, act, param));
                total += n * (param + p * act);
                if (rnd(2))
                    CHECK_OK(psched_model_set_recompute(model, g, PSCHED_RECOMPUTE_FULL, 1, f));
                g++;
                layers -= n;
            }
            psched_plan *plan = tu_plan(p, 2 * p, kinds[k].v);
            CHECK_OK(psched_plan_set_comm(plan, rnd(2) ? 0 : 0.5));
            /* a binding limit on two instances in three */
            if (t > 0)
                CHECK_OK(psched_plan_set_memory_limit(plan, total / p * (0.6 + 0.2 * t)));
            psched_partition_options opt = PSCHED_PARTITION_OPTIONS_INIT;
            opt.time_limit = 86400; /* the budgets end it, not the clock */
            psched_partition_result *r[2] = {NULL, NULL};
            for (int pass = 0; pass < 2; pass++) {
                psched__certify_test_regenerate(pass == 1);
                CHECK_OK(psched_partition(model, plan, kinds[k].name, &opt, &r[pass]));
                psched__certify_test_regenerate(false);
            }
            if (r[0] && r[1]) {
                CHECK_EQ_INT(psched_partition_status(r[0]), psched_partition_status(r[1]));
                double m0 = psched_partition_makespan(r[0]), m1 = psched_partition_makespan(r[1]);
                double g0 = psched_partition_gap(r[0]), g1 = psched_partition_gap(r[1]);
                CHECK(m0 == m1 || (isnan(m0) && isnan(m1)));
                CHECK(g0 == g1 || (isnan(g0) && isnan(g1)));
                bool found = psched_partition_status(r[0]) != PSCHED_SOLVE_INFEASIBLE;
                uint32_t stages = found ? psched_partition_stages(r[0]) : 0;
                for (uint32_t s = 0; s < stages; s++) {
                    uint32_t a = 0, b = 0;
                    CHECK_OK(psched_partition_stage(r[0], s, NULL, &a, NULL, NULL));
                    CHECK_OK(psched_partition_stage(r[1], s, NULL, &b, NULL, NULL));
                    CHECK_EQ_INT(a, b);
                }
                compared++;
            }
            psched_partition_result_destroy(r[0]);
            psched_partition_result_destroy(r[1]);
            psched_plan_destroy(plan);
            psched_model_destroy(model);
        }
    }
    printf("# %d instances partitioned the same with and without the shortcut\n", compared);
    CHECK_EQ_INT(compared, 21);
}

int main(void)
{
    RUN(test_three_identical_layers_take_the_faster_tie);
    RUN(test_layer_count_bound_by_hand);
    RUN(test_layer_count_bound_counts_forced_recompute);
    RUN(test_layer_count_bound_starts_after_the_layers_before);
    RUN(test_balanced_counts_when_no_solver_has_time);
    RUN(test_balanced_counts_with_chunks_fit_and_beat_the_baselines);
    RUN(test_count_descents_fit_and_never_lose);
    RUN(test_layer_count_bound_is_sound_under_recompute);
    RUN(test_partition_step_time_uses_the_microbatch_weights);
    RUN(test_partition_matches_the_simulated_brute_force);
    RUN(test_four_chunks_match_the_brute_force);
    RUN(test_dualpipe_matches_the_brute_force);
    RUN(test_weighted_microbatches_match_the_brute_force);
    RUN(test_identical_layers_match_the_brute_force);
    RUN(test_run_dag_milp_optimum_is_the_brute_force);
    RUN(test_run_dag_mirror_only_where_symmetric);
    RUN(test_run_dag_stride_bounds_the_brute_force);
    RUN(test_run_dag_rows_by_units_time_and_chunks);
    RUN(test_run_milp_stopped_tree_bound_is_sound);
    RUN(test_run_milp_stopped_incumbent_is_simulated);
    RUN(test_run_milp_keeps_its_fastest_integer_solution);
    RUN(test_device_search_matches_the_brute_force);
    RUN(test_device_search_bound_holds_for_two_chains);
    RUN(test_device_search_mid_size_matches_the_enumeration);
    RUN(test_device_search_first_depth_bounds_hold);
    RUN(test_device_search_recompute_matches_the_enumeration);
    RUN(test_device_search_four_devices_matches_the_enumeration);
    RUN(test_device_search_polish_ends_at_a_device_optimum);
    RUN(test_path_bound_is_sound);
    RUN(test_four_chunks_mid_size_proven);
    RUN(test_local_search_ends_at_a_local_optimum);
    RUN(test_static_order_changes_no_result);
    TEST_MAIN_END();
}
