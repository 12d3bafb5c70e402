/* optimal: the exact scheduler. The smallest simulated span over EVERY
 * valid order of the plan's F, B and W ops (split backward), for any
 * placement (loop, V-shape, custom) and v, with comm latency and the memory
 * limit, found by a GLPK MILP (schedules/optimal_milp.c).
 *
 * It first runs every other registered one-chain generator on the plan and
 * keeps the best schedule that fits the memory limit (smallest span, then
 * makespan): that schedule seeds the MILP and is returned unless the MILP
 * finds a strictly shorter span, so `optimal` is never slower than a
 * heuristic. When the best heuristic already meets psched_bound()'s lower
 * bound, it is optimal without a solve.
 *
 * The schedule records what was proved (psched_schedule_solve_status()):
 * optimal, or feasible with the gap (span - best bound) / span when the time
 * limit (option "time-limit", seconds, default 10) or the node limit
 * ("node-limit", branch-and-bound nodes, default 0 = none; deterministic,
 * for tests) stopped the search first. The model grows with the square of
 * the ops per device, so plans above OPTIMAL_MAX_OPS ops are refused. */
#include "optimal_milp.h"

#include <math.h>
#include <string.h>

#define NAME "optimal"
/* 3·S·m at most: p = 4 with m up to 16, p = 8 with m = 8. Beyond the
 * smallest sizes a proof comes only from the bound (bench/bench_optimal.c,
 * docs/schedules.md), and the model grows with the square of the ops per
 * device. */
#define OPTIMAL_MAX_OPS 192u
#define DEFAULT_TIME_LIMIT 10

static int64_t option(const psched_plan *plan, const char *key, int64_t fallback)
{
    int64_t v;
    return psched_plan_get_option(plan, key, &v) == PSCHED_OK ? v : fallback;
}

static psched_status check(const psched_plan *plan)
{
    uint64_t ops = 3ull * plan->devices * plan->chunks * plan->microbatches;
    if (ops > OPTIMAL_MAX_OPS)
        return psched_fail(PSCHED_EINVAL,
                           "optimal solves plans of at most %u ops (3 x stages x microbatches); "
                           "this one has %llu (devices %u, chunks %u, microbatches %u)",
                           OPTIMAL_MAX_OPS, (unsigned long long)ops, plan->devices, plan->chunks,
                           plan->microbatches);
    int64_t t = option(plan, "time-limit", DEFAULT_TIME_LIMIT);
    if (t < 1 || t > 86400)
        return psched_fail(PSCHED_EINVAL, "time-limit (%lld) must be 1..86400 seconds",
                           (long long)t);
    int64_t nodes = option(plan, "node-limit", 0);
    if (nodes < 0)
        return psched_fail(PSCHED_EINVAL, "node-limit (%lld) must be >= 0 (0: no limit)",
                           (long long)nodes);
    /* The MILP models DESIGN §3's cost model: identical micro-batches (its
     * symmetry breaking relies on it), a fixed latency per edge, no pairs. */
    for (uint32_t k = 0; k < plan->microbatches; k++)
        if (psched__plan_weight(plan, 0, k) != 1)
            return psched_fail(PSCHED_EUNSUPPORTED, "optimal needs every micro-batch weight at 1 "
                                                    "(micro-batch %u weighs %g)",
                               k, psched__plan_weight(plan, 0, k));
    if (psched__costmodel_links(plan))
        return psched_fail(PSCHED_EUNSUPPORTED, "optimal models comm as the fixed latency t_comm; "
                                                "this plan sets comm bytes or a topology");
    for (uint32_t s = 0; s < plan->devices * plan->chunks; s++)
        if (psched__plan_overlap(plan, s) != 0)
            return psched_fail(PSCHED_EUNSUPPORTED, "optimal does not overlap F&B pairs; stage %u "
                                                    "sets an overlap saving (%g)",
                               s, psched__plan_overlap(plan, s));
    if (!psched__exact_available())
        return psched_fail(PSCHED_EUNSUPPORTED, "optimal needs GLPK, and this build of "
                                                "pipesched has none (meson option -Dglpk)");
    return PSCHED_OK;
}

/* The instance: ops, their dependencies and the forced orders. */
typedef struct instance {
    uint32_t S, m, n;
    psched__xop *ops;
    uint8_t *before;
} instance;

static uint32_t op_id(const instance *x, uint32_t kind, uint32_t s, uint32_t k)
{
    return (s * x->m + k) * 3 + kind;
}

static void add_dep(const psched_plan *plan, psched__xop *o, uint32_t dep, uint32_t dev)
{
    o->lat[o->ndep] = dev == o->device ? 0 : plan->comm;
    o->dep[o->ndep++] = dep;
}

static psched_status instance_build(const psched_plan *plan, instance *x)
{
    x->S = plan->devices * plan->chunks;
    x->m = plan->microbatches;
    x->n = 3 * x->S * x->m;
    uint32_t n = x->n;
    x->ops = psched__calloc(n, sizeof *x->ops);
    x->before = psched__calloc((size_t)n * n, 1);
    if (!x->ops || !x->before)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; s < x->S; s++) {
        psched_cost3 t = psched__plan_cost(plan, s), mem = psched__plan_mem(plan, s);
        uint32_t dev = psched_plan_stage_device(plan, s);
        uint32_t prev_dev = s ? psched_plan_stage_device(plan, s - 1) : 0;
        uint32_t next_dev = s + 1 < x->S ? psched_plan_stage_device(plan, s + 1) : 0;
        for (uint32_t k = 0; k < x->m; k++) {
            psched__xop *f = &x->ops[op_id(x, 0, s, k)], *b = &x->ops[op_id(x, 1, s, k)],
                        *w = &x->ops[op_id(x, 2, s, k)];
            *f = (psched__xop){.device = dev, .dur = t.f, .mem = mem.f};
            *b = (psched__xop){.device = dev, .dur = t.b, .mem = mem.b};
            *w = (psched__xop){.device = dev, .dur = t.w, .mem = mem.w};
            if (s > 0)
                add_dep(plan, f, op_id(x, 0, s - 1, k), prev_dev);
            add_dep(plan, b, op_id(x, 0, s, k), dev);
            if (s + 1 < x->S)
                add_dep(plan, b, op_id(x, 1, s + 1, k), next_dev);
            add_dep(plan, w, op_id(x, 1, s, k), dev);
        }
    }
    /* Forced orders: the dependencies, and the first stage's forwards in
     * micro-batch order (micro-batches are identical, so any schedule can
     * be renumbered to run them so without changing a time). Then the
     * transitive closure. */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < x->ops[i].ndep; k++)
            x->before[(size_t)x->ops[i].dep[k] * n + i] = 1;
    for (uint32_t k = 0; k + 1 < x->m; k++)
        x->before[(size_t)op_id(x, 0, 0, k) * n + op_id(x, 0, 0, k + 1)] = 1;
    for (uint32_t via = 0; via < n; via++)
        for (uint32_t i = 0; i < n; i++)
            if (x->before[(size_t)i * n + via])
                for (uint32_t j = 0; j < n; j++)
                    x->before[(size_t)i * n + j] |= x->before[(size_t)via * n + j];
    return PSCHED_OK;
}

/* A lower bound on the span beyond the per-device work of psched_bound():
 * the fill before a device's first backward. Let s_d be the last stage on
 * device d. Every B on d waits, through the backward chain, for a B of s_d,
 * so the first B (or W) on d is some B(s_d, k); it starts at least
 * t_F(s_d) + path(s_d) after the first op on d, where path(s_d) is the
 * chain F(s_d+1..S-1, k), B(S-1..s_d+1, k) with its latencies, all on other
 * devices. Until then d can only run forwards, at most its whole forward
 * work, and with a memory limit and positive mem_F only forwards whose
 * deltas sum to at most the limit (no W frees memory before the first B):
 * a fractional knapsack bounds their time. So its span is at least its work
 * plus max(0, t_F(s_d) + path(s_d) - the forward time it can run). */
static double forward_capacity(const psched_plan *plan, uint32_t d, double fwork)
{
    uint32_t S = plan->devices * plan->chunks, m = plan->microbatches;
    double room = plan->memory_limit, cap = 0;
    if (!isfinite(room))
        return fwork;
    bool used[PSCHED_MAX_CHUNKS] = {false};
    for (;;) { /* best time per unit of memory first */
        uint32_t pick = UINT32_MAX, c = 0, pick_c = 0;
        double ratio = -1;
        for (uint32_t s = 0; s < S; s++) {
            if (psched_plan_stage_device(plan, s) != d)
                continue;
            double mf = psched__plan_mem(plan, s).f, tf = psched__plan_cost(plan, s).f;
            if (mf <= 0)
                return fwork; /* forwards that free memory: no cap */
            if (!used[c] && tf / mf > ratio)
                ratio = tf / mf, pick = s, pick_c = c;
            c++;
        }
        if (pick == UINT32_MAX || room <= 0)
            break;
        used[pick_c] = true;
        double mf = psched__plan_mem(plan, pick).f, tf = psched__plan_cost(plan, pick).f;
        double take = fmin((double)m, room / mf);
        cap += take * tf;
        room -= take * mf;
    }
    return fmin(cap, fwork);
}

static double fill_bound(const psched_plan *plan)
{
    uint32_t p = plan->devices, S = p * plan->chunks, m = plan->microbatches;
    double best = 0;
    for (uint32_t d = 0; d < p; d++) {
        double work = 0, fwork = 0;
        uint32_t last = 0;
        for (uint32_t s = 0; s < S; s++) {
            if (psched_plan_stage_device(plan, s) != d)
                continue;
            psched_cost3 t = psched__plan_cost(plan, s);
            work += m * (t.f + t.b + t.w);
            fwork += m * t.f;
            last = s;
        }
        double path = psched__plan_cost(plan, last).f;
        for (uint32_t s = last + 1; s < S; s++) {
            psched_cost3 t = psched__plan_cost(plan, s);
            double lat = psched_plan_stage_device(plan, s) != psched_plan_stage_device(plan, s - 1)
                             ? plan->comm
                             : 0;
            path += t.f + t.b + 2 * lat; /* the edge forwards and back */
        }
        best = fmax(best, work + fmax(0, path - forward_capacity(plan, d, fwork)));
    }
    return best;
}

/* A candidate schedule and its simulated figures. */
typedef struct candidate {
    psched_schedule *schedule;
    double span, makespan;
} candidate;

static bool better(double span, double makespan, const candidate *than)
{
    double eps = 1e-9 * fmax(1, than->span);
    return !than->schedule || span < than->span - eps ||
           (span <= than->span + eps && makespan < than->makespan - eps);
}

/* Simulates s; takes it as *best when it fits the limit and beats it. */
static psched_status consider(psched_schedule *s, double limit, candidate *best)
{
    psched_report *r = NULL;
    psched_status st = psched_simulate(s, NULL, &r);
    if (st == PSCHED_ENOMEM) {
        psched_schedule_destroy(s);
        return st;
    }
    bool fits = st == PSCHED_OK;
    for (uint32_t d = 0; fits && d < s->devices; d++) {
        double peak = 0;
        psched_report_device(r, d, NULL, NULL, &peak);
        fits = peak <= limit + 1e-9 * fmax(1, fabs(limit));
    }
    if (fits && better(psched_report_span(r), psched_report_makespan(r), best)) {
        psched_schedule_destroy(best->schedule);
        *best = (candidate){s, psched_report_span(r), psched_report_makespan(r)};
    } else {
        psched_schedule_destroy(s);
    }
    psched_report_destroy(r);
    return PSCHED_OK;
}

/* Ops of `from` into a new schedule for `plan`, with every BW split into B
 * then W and overlapped pairs run one after the other: the MILP's op set. */
static psched_status split_copy(const psched_schedule *from, const psched_plan *plan,
                                psched_schedule **out)
{
    psched_builder *b = NULL;
    psched_plan *own = NULL;
    psched_status st = psched_plan_clone(plan, &own);
    if (!st)
        st = psched__builder_create(own, &b);
    for (uint32_t d = 0; !st && d < from->devices; d++)
        for (size_t i = from->offset[d]; i < from->offset[d + 1]; i++) {
            const psched_op *o = &from->ops[i];
            if (o->kind == PSCHED_OP_BW) {
                psched_builder_append(b, d, PSCHED_OP_B, o->stage, o->microbatch, 0);
                st = psched_builder_append(b, d, PSCHED_OP_W, o->stage, o->microbatch, 0);
            } else {
                st = psched_builder_append(b, d, (psched_op_kind)o->kind, o->stage, o->microbatch,
                                           0);
            }
        }
    if (!st)
        st = psched__builder_finish(b, own, NAME, out);
    psched__builder_destroy(b);
    if (st)
        psched_plan_destroy(own);
    return st;
}

/* The plan the heuristics see: this one without this generator's options,
 * which they do not read. */
static psched_status heuristic_plan(const psched_plan *plan, psched_plan **out)
{
    psched_status st = psched_plan_clone(plan, out);
    if (st)
        return st;
    psched_plan *c = *out;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < c->option_count; i++)
        if (strcmp(c->options[i].key, "time-limit") && strcmp(c->options[i].key, "node-limit"))
            c->options[kept++] = c->options[i];
    c->option_count = kept;
    return PSCHED_OK;
}

/* One micro-batch at a time (its forwards down the stages, then each
 * backward followed by its W up the stages): the order that holds the least
 * memory, a seed that fits whenever any order does (mem_F >= 0, and
 * mem_F + mem_B + mem_W <= 0 on every stage, as zb.c argues). */
static psched_status serial_order(const psched_plan *plan, candidate *seed, candidate *best)
{
    psched_builder *b = NULL;
    psched_plan *own = NULL;
    uint32_t S = plan->devices * plan->chunks;
    psched_status st = psched_plan_clone(plan, &own);
    if (!st)
        st = psched__builder_create(own, &b);
    for (uint32_t k = 0; !st && k < plan->microbatches; k++) {
        for (uint32_t s = 0; s < S; s++)
            psched_builder_append(b, psched_plan_stage_device(plan, s), PSCHED_OP_F, s, k, 0);
        for (uint32_t s = S; s-- > 0;) {
            uint32_t d = psched_plan_stage_device(plan, s);
            psched_builder_append(b, d, PSCHED_OP_B, s, k, 0);
            st = psched_builder_append(b, d, PSCHED_OP_W, s, k, 0);
        }
    }
    psched_schedule *s1 = NULL, *s2 = NULL;
    if (!st)
        st = psched__builder_finish(b, own, NAME, &s1);
    if (st) /* the plan is still ours when finish fails */
        psched_plan_destroy(own);
    psched__builder_destroy(b);
    if (!st)
        st = split_copy(s1, plan, &s2);
    if (!st)
        st = consider(s1, plan->memory_limit, seed);
    else
        psched_schedule_destroy(s1);
    if (!st)
        st = consider(s2, plan->memory_limit, best);
    else
        psched_schedule_destroy(s2);
    return st;
}

/* Every other one-chain generator that accepts the plan: the best one as
 * generated (`best`) and the best split into F, B, W (`seed`). */
static psched_status run_heuristics(const psched_plan *plan, candidate *best, candidate *seed)
{
    psched_plan *hp = NULL;
    psched_status st = heuristic_plan(plan, &hp);
    size_t count = psched_generator_count();
    for (size_t g = 0; !st && g < count; g++) {
        const psched_generator *gen = psched_generator_at(g);
        if (!strcmp(gen->name, NAME) || gen->chains == 2)
            continue;
        psched_schedule *s = NULL, *split = NULL;
        psched_status gs = psched_generate(hp, gen->name, &s);
        if (gs == PSCHED_ENOMEM)
            st = gs;
        if (gs)
            continue;
        st = split_copy(s, plan, &split);
        if (!st)
            st = consider(split, plan->memory_limit, seed);
        if (!st)
            st = consider(s, plan->memory_limit, best);
        else
            psched_schedule_destroy(s);
    }
    psched_plan_destroy(hp);
    if (!st)
        st = serial_order(plan, seed, best);
    if (!st && seed->schedule && better(seed->span, seed->makespan, best)) {
        /* the split order is a schedule too */
        psched_schedule *copy = NULL;
        st = split_copy(seed->schedule, plan, &copy);
        if (!st)
            st = consider(copy, plan->memory_limit, best);
    }
    return st;
}

static psched_status append_schedule(psched_builder *b, const psched_schedule *s)
{
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; d < s->devices; d++)
        for (size_t i = s->offset[d]; i < s->offset[d + 1]; i++) {
            const psched_op *o = &s->ops[i];
            st = psched_builder_append(b, d, (psched_op_kind)o->kind, o->stage, o->microbatch,
                                       o->flags);
        }
    return st;
}

/* The seed's position and simulated start of every instance op. */
static psched_status seed_arrays(const instance *x, const candidate *seed, uint32_t *pos,
                                 double *start)
{
    psched_report *r = NULL;
    psched_status st = psched_simulate(seed->schedule, NULL, &r);
    if (st)
        return st;
    const psched_schedule *s = seed->schedule;
    for (uint32_t d = 0; d < s->devices; d++)
        for (size_t i = s->offset[d]; i < s->offset[d + 1]; i++) {
            const psched_op *o = &s->ops[i];
            uint32_t kind = o->kind == PSCHED_OP_F ? 0 : o->kind == PSCHED_OP_B ? 1 : 2;
            uint32_t id = op_id(x, kind, o->stage, o->microbatch);
            pos[id] = (uint32_t)(i - s->offset[d]);
            start[id] = r->start[i];
        }
    psched_report_destroy(r);
    return PSCHED_OK;
}

/* The MILP's order as a schedule. */
static psched_status order_schedule(const psched_plan *plan, const instance *x,
                                    const uint32_t *pos, psched_schedule **out)
{
    uint32_t p = plan->devices, n = x->n;
    uint32_t *slot = psched__calloc(n, sizeof *slot), *fill = psched__calloc(p + 1, sizeof *fill);
    psched_plan *own = NULL;
    psched_builder *b = NULL;
    psched_status st = !slot || !fill ? PSCHED_ENOMEM_FAIL() : psched_plan_clone(plan, &own);
    if (!st)
        st = psched__builder_create(own, &b);
    /* ops per device, then each op at its position */
    for (uint32_t i = 0; !st && i < n; i++)
        fill[x->ops[i].device + 1]++;
    for (uint32_t d = 0; !st && d < p; d++)
        fill[d + 1] += fill[d];
    for (uint32_t i = 0; !st && i < n; i++) {
        uint32_t d = x->ops[i].device;
        if (fill[d] + pos[i] >= fill[d + 1])
            st = psched_fail(PSCHED_ESOLVER, "the MILP's order puts op %u at position %u of "
                                             "device %u", i, pos[i], d);
        else
            slot[fill[d] + pos[i]] = i + 1;
    }
    for (uint32_t d = 0; !st && d < p; d++)
        for (uint32_t at = fill[d]; !st && at < fill[d + 1]; at++) {
            if (!slot[at]) {
                st = psched_fail(PSCHED_ESOLVER, "the MILP's order leaves position %u of device "
                                                 "%u empty", at - fill[d], d);
                break;
            }
            uint32_t i = slot[at] - 1, kind = i % 3, sk = i / 3;
            static const psched_op_kind kinds[3] = {PSCHED_OP_F, PSCHED_OP_B, PSCHED_OP_W};
            st = psched_builder_append(b, d, kinds[kind], sk / x->m, sk % x->m, 0);
        }
    if (!st)
        st = psched__builder_finish(b, own, NAME, out);
    psched__builder_destroy(b);
    if (st)
        psched_plan_destroy(own);
    psched__dealloc(slot);
    psched__dealloc(fill);
    return st;
}

/* Solve; `best` becomes the MILP's schedule when it is strictly shorter. */
static psched_status solve(const psched_plan *plan, const instance *x, const candidate *seed,
                           double lower, candidate *best, psched__exact_result *res)
{
    uint32_t n = x->n;
    uint32_t *pos = psched__calloc(n, sizeof *pos), *seed_pos = NULL;
    double *seed_start = NULL;
    psched_status st = pos ? PSCHED_OK : PSCHED_ENOMEM_FAIL();
    if (!st && seed->schedule) {
        seed_pos = psched__calloc(n, sizeof *seed_pos);
        seed_start = psched__calloc(n, sizeof *seed_start);
        st = seed_pos && seed_start ? seed_arrays(x, seed, seed_pos, seed_start)
                                    : PSCHED_ENOMEM_FAIL();
    }
    double horizon = 0;
    for (uint32_t i = 0; i < n; i++)
        horizon += x->ops[i].dur + plan->comm;
    psched__exact in = {
        .n = n,
        .devices = plan->devices,
        .ops = x->ops,
        .before = x->before,
        .limit = plan->memory_limit,
        .lower = lower,
        .horizon = fmax(horizon, 1),
        .seed_pos = seed_pos,
        .seed_start = seed_start,
        .time_limit = (double)option(plan, "time-limit", DEFAULT_TIME_LIMIT),
        .node_limit = (long)option(plan, "node-limit", 0),
    };
    if (!st)
        st = psched__exact_solve(&in, pos, res);
    if (!st && res->found) {
        psched_schedule *s = NULL;
        st = order_schedule(plan, x, pos, &s);
        if (!st)
            st = consider(s, plan->memory_limit, best);
    }
    psched__dealloc(pos);
    psched__dealloc(seed_pos);
    psched__dealloc(seed_start);
    return st;
}

static psched_status finish(psched_builder *b, const candidate *best, double bound)
{
    double eps = 1e-9 * fmax(1, best->span);
    bool optimal = best->span <= bound + eps;
    double gap = optimal ? 0 : best->span > 0 ? (best->span - bound) / best->span : INFINITY;
    psched_status st = append_schedule(b, best->schedule);
    if (!st)
        st = psched_builder_set_solve_status(b, optimal ? PSCHED_SOLVE_OPTIMAL
                                                        : PSCHED_SOLVE_FEASIBLE,
                                             optimal ? 0 : gap);
    return st;
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    instance x = {0};
    candidate best = {0}, seed = {0};
    psched_bound_info info = {.version = PSCHED_BOUND_INFO_VERSION};
    psched_status st = psched_bound(plan, NULL, &info);
    if (!st)
        st = instance_build(plan, &x);
    if (!st)
        st = run_heuristics(plan, &best, &seed);
    double bound = st ? 0 : fmax(info.span, fill_bound(plan));
    if (!st && !(best.schedule && best.span <= bound + 1e-9 * fmax(1, best.span))) {
        psched__exact_result res;
        st = solve(plan, &x, &seed, bound, &best, &res);
        if (st == PSCHED_ESOLVER && best.schedule) /* GLPK failed: the heuristic stands */
            st = PSCHED_OK, res.bound = bound, res.optimal = res.found = false;
        if (!st) {
            bound = fmax(bound, res.bound);
            if (res.optimal && !res.found && !best.schedule)
                st = psched_fail(PSCHED_EINFEASIBLE, "no order of the %u ops keeps every device "
                                                     "within the memory limit (%g)",
                                 x.n, plan->memory_limit);
            else if (!best.schedule)
                st = psched_fail(PSCHED_EINFEASIBLE, "no schedule within the memory limit (%g) "
                                                     "was found before the time or node limit",
                                 plan->memory_limit);
        }
    }
    if (!st)
        st = finish(b, &best, bound);
    psched_schedule_destroy(best.schedule);
    psched_schedule_destroy(seed.schedule);
    psched__dealloc(x.ops);
    psched__dealloc(x.before);
    return st;
}

static const psched_generator_option_desc options[] = {
    {.name = "time-limit",
     .description = "seconds for the MILP search (the best order so far is returned, with its gap)",
     .min = 1,
     .max = 86400,
     .default_value = DEFAULT_TIME_LIMIT},
    {.name = "node-limit",
     .description = "branch-and-bound nodes for the MILP search, 0 = no limit (deterministic)",
     .min = 0,
     .max = INT64_MAX,
     .default_value = 0},
};

const psched_generator psched_gen_optimal = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "exact: smallest span over every order (GLPK MILP), seeded with the best "
                   "heuristic; states optimal or feasible with its gap",
    .constraints = "any placement and v, one chain, at most 192 ops (3 x stages x microbatches); "
                   "options time-limit (s), node-limit",
    .placement = PSCHED_PLACEMENT_CUSTOM,
    .default_chunks = 1,
    .chains = 1,
    .check = check,
    .generate = generate,
    .options = options,
    .option_count = sizeof options / sizeof options[0],
};

int psched_generator_is_exact(const psched_generator *generator)
{
    return generator && generator->generate == generate;
}
