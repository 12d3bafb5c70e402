/* The layer partitioner: in-flight counts from the schedule, per-range
 * recompute frontiers, the exact DP for one chunk per device, the column
 * MILP (partition_glpk.c), the baselines, and the exact re-simulation of
 * the chosen partition. DESIGN §6, docs/optimizer.md. */
#include "partition.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct psched_partition_result {
    psched_solve_status status;
    double gap, objective, solve_time, min_memory, makespan, bubble;
    uint32_t stages, devices, layers;
    bool has_partition;
    uint32_t *first, *count;
    uint8_t *choice;
    double *stage_time, *stage_mem;
    double *dev_param, *dev_mem, *dev_peak;
    psched_plan *plan;
};

static _Thread_local double (*test_clock)(void);

void psched__set_test_clock(double (*clock)(void))
{
    test_clock = clock;
}

double psched__now(void)
{
    if (test_clock)
        return test_clock();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static _Thread_local bool force_milp;

void psched__partition_force_milp(bool on)
{
    force_milp = on;
}

/* Seconds left before the call's deadline, at least 1 ms so that a
 * solver called late still returns its incumbent. */
static double time_left(const psched__problem *pb)
{
    return fmax(1e-3, pb->deadline - psched__now());
}

/* ---- the problem ---- */

static void problem_free(psched__problem *pb)
{
    if (pb->table) {
        for (size_t i = 0; i <= pb->layers; i++)
            psched__fronts_free(&pb->table[i]);
    }
    psched__dealloc(pb->table);
    psched__dealloc(pb->inflight);
    psched__dealloc(pb->device_of);
    psched__dealloc(pb->time_prefix);
    psched__dealloc(pb->param_prefix);
    psched__dealloc(pb->minact_prefix);
    psched__dealloc(pb->group_of);
    memset(pb, 0, sizeof *pb);
}

static const psched__group *layer_group(const psched__problem *pb, uint32_t layer)
{
    return &pb->model->groups[pb->group_of[layer]];
}

static double variant_min_act(const psched__group *g)
{
    double a = g->variant[0].act;
    for (int r = 1; r < PSCHED__RECOMPUTE_KINDS; r++)
        if (g->variant[r].present && g->variant[r].act < a)
            a = g->variant[r].act;
    return a;
}

static psched_status problem_layers(psched__problem *pb, const psched_model *model)
{
    /* check_args bounds L by PSCHED__PARTITION_MAX_LAYERS, so L + 1 and
     * every (L + 1) x (stages + 1) table size below stay far from a wrap;
     * sizes are still computed in size_t. */
    uint32_t L = model->layer_count;
    size_t n = (size_t)L + 1;
    pb->model = model;
    pb->layers = L;
    pb->group_of = psched__calloc(L, sizeof *pb->group_of);
    pb->time_prefix = psched__calloc(n, sizeof(double));
    pb->param_prefix = psched__calloc(n, sizeof(double));
    pb->minact_prefix = psched__calloc(n, sizeof(double));
    if (!pb->group_of || !pb->time_prefix || !pb->param_prefix || !pb->minact_prefix)
        return PSCHED_ENOMEM_FAIL();
    uint32_t l = 0;
    for (uint32_t g = 0; g < model->group_count; g++) {
        const psched__group *gr = &model->groups[g];
        for (uint32_t k = 0; k < gr->count; k++, l++) {
            pb->group_of[l] = g;
            pb->time_prefix[l + 1] = pb->time_prefix[l] + gr->f + gr->b + gr->w;
            pb->param_prefix[l + 1] = pb->param_prefix[l] + gr->param;
            pb->minact_prefix[l + 1] = pb->minact_prefix[l] + variant_min_act(gr);
        }
    }
    pb->time_total = pb->time_prefix[L];
    return PSCHED_OK;
}

/* Walk each device's list once: the most micro-batches a stage holds is
 * the peak of (forwards − weight backwards) in list order, which is what
 * unit memory deltas (1, 0, -1) give. */
static psched_status count_inflight(const psched_schedule *sched, psched__problem *pb)
{
    const psched_plan *rp = psched_schedule_plan(sched);
    uint32_t S = pb->stages;
    double *cur = psched__calloc(S, sizeof *cur);
    if (!cur)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; s < S; s++)
        pb->device_of[s] = psched_plan_stage_device(rp, s);
    for (uint32_t d = 0; d < pb->devices; d++) {
        size_t n = psched_schedule_op_count(sched, d);
        for (size_t i = 0; i < n; i++) {
            psched_op op;
            psched_schedule_ops(sched, d, i, 1, &op, sizeof op);
            if (op.kind == PSCHED_OP_F) {
                cur[op.stage] += 1;
                if (cur[op.stage] > pb->inflight[op.stage])
                    pb->inflight[op.stage] = cur[op.stage];
            } else if (op.kind == PSCHED_OP_W || op.kind == PSCHED_OP_BW) {
                cur[op.stage] -= 1;
            }
        }
    }
    psched__dealloc(cur);
    return PSCHED_OK;
}

/* Makespan of the unit schedule with skewed chunks: on every device one
 * chunk costs h = (v+1)/2 and the others 1/2 each, so device totals stay
 * v and only the stages differ. The heavy chunk is chunk 0 everywhere
 * (`alternate` false) or chunk d mod v on device d. */
static psched_status skewed_makespan(const psched_plan *unit, const char *name, bool alternate,
                                     double *out)
{
    uint32_t v = psched_plan_chunks(unit);
    double h = (v + 1) / 2.0;
    psched_plan *probe = NULL;
    psched_schedule *sched = NULL;
    psched_report *rep = NULL;
    psched_status st = psched_plan_clone(unit, &probe);
    for (uint32_t s = 0; !st && s < psched_plan_stages(unit); s++) {
        uint32_t heavy = alternate ? psched_plan_stage_device(unit, s) % v : 0;
        double c = psched_plan_stage_chunk(unit, s) == heavy ? h : 0.5;
        st = psched_plan_set_stage_cost(probe, s, c, c, c);
    }
    if (!st)
        st = psched_generate(probe, name, &sched);
    if (!st)
        st = psched_simulate(sched, NULL, &rep);
    if (!st)
        *out = psched_report_makespan(rep);
    psched_report_destroy(rep);
    psched_schedule_destroy(sched);
    psched_plan_destroy(probe);
    return st;
}

/* lambda, the weight of the largest stage in the objective: the larger of
 * the values that make the objective equal the makespan of the two skewed
 * runs, (m-1)·lambda·3h + kappa·3S. A device's time alone cannot see how it
 * is split over its chunks; unequal chunks stall each other, and how much
 * depends on the schedule (looped BFS suffers most when the heavy chunk
 * changes from device to device, interleaved when it does not). One chunk
 * per device: lambda = 1 (a stage is a device). Clamped to [0, v]. */
static psched_status calibrate_lambda(const psched_plan *unit, const char *name,
                                      double unit_makespan, psched__problem *pb)
{
    pb->lambda = 1;
    if (pb->chunks == 1 || pb->microbatches == 1)
        return PSCHED_OK;
    double v = pb->chunks, h = (v + 1) / 2, lambda = 0;
    for (int alternate = 0; alternate < 2; alternate++) {
        double skewed = 0;
        psched_status st = skewed_makespan(unit, name, alternate, &skewed);
        if (st)
            return st;
        lambda = fmax(lambda, (skewed - unit_makespan) / ((pb->microbatches - 1.0) * 3 * h) + v / h);
    }
    pb->lambda = isfinite(lambda) ? fmin(fmax(lambda, 0), v) : 1;
    return PSCHED_OK;
}

/* Generate the schedule with unit costs: its stage map, the in-flight
 * counts, and kappa, chosen so that (m-1)·max_d T_d + kappa·Σ_s T_s equals
 * the simulated makespan when every stage costs the same; then lambda.
 * *resolved gets a copy of the resolved plan with the caller's
 * communication latency. */
static psched_status probe_schedule(const psched_plan *plan, const char *name,
                                    psched__problem *pb, psched_plan **resolved)
{
    psched_plan *probe = NULL;
    psched_schedule *sched = NULL;
    psched_report *rep = NULL;
    psched_status st = psched_plan_clone(plan, &probe);
    if (!st)
        st = psched_plan_set_cost(probe, 1, 1, 1);
    if (!st)
        st = psched_plan_set_mem(probe, 1, 0, -1);
    if (!st)
        st = psched_plan_set_comm(probe, 0);
    if (!st)
        st = psched_plan_set_memory_limit(probe, INFINITY);
    if (!st)
        st = psched_generate(probe, name, &sched);
    if (st)
        goto out;
    const psched_plan *rp = psched_schedule_plan(sched);
    if (psched_plan_chains(rp) != 1) {
        st = psched_fail(PSCHED_EUNSUPPORTED,
                         "schedule %s runs %u chains; the partitioner handles one chain", name,
                         psched_plan_chains(rp));
        goto out;
    }
    pb->devices = psched_plan_devices(rp);
    pb->chunks = psched_plan_chunks(rp);
    pb->stages = psched_plan_stages(rp);
    pb->microbatches = psched_plan_microbatches(rp);
    pb->inflight = psched__calloc(pb->stages, sizeof *pb->inflight);
    pb->device_of = psched__calloc(pb->stages, sizeof *pb->device_of);
    if (!pb->inflight || !pb->device_of) {
        st = PSCHED_ENOMEM_FAIL();
        goto out;
    }
    if ((st = count_inflight(sched, pb)) || (st = psched_simulate(sched, NULL, &rep)))
        goto out;
    pb->nmin = INFINITY;
    for (uint32_t s = 0; s < pb->stages; s++)
        pb->nmin = fmin(pb->nmin, pb->inflight[s]);
    double unit_device = 3.0 * pb->chunks, unit_sum = 3.0 * pb->stages;
    pb->kappa = (psched_report_makespan(rep) - (pb->microbatches - 1.0) * unit_device) / unit_sum;
    if ((st = calibrate_lambda(rp, name, psched_report_makespan(rep), pb)) ||
        (st = psched_plan_clone(rp, resolved)))
        goto out;
    st = psched_plan_set_comm(*resolved, psched_plan_comm(plan));
    if (!st)
        st = psched_plan_set_memory_limit(*resolved, INFINITY);
    if (st) {
        psched_plan_destroy(*resolved);
        *resolved = NULL;
    }
out:
    psched_report_destroy(rep);
    psched_schedule_destroy(sched);
    psched_plan_destroy(probe);
    return st;
}

/* ---- recompute frontiers ---- */

static int point_cmp(const void *a, const void *b)
{
    const psched__point *x = a, *y = b;
    if (x->extra != y->extra)
        return x->extra < y->extra ? -1 : 1;
    if (x->act != y->act)
        return x->act < y->act ? -1 : 1;
    return 0;
}

void psched__fronts_free(psched__fronts *fr)
{
    psched__dealloc(fr->pts);
    psched__dealloc(fr->first);
    memset(fr, 0, sizeof *fr);
}

/* Frontier of [i, i+len) from that of [i, i+len-1), appended to the pool:
 * every point extended by every variant of the new layer, kept when no
 * kept point has both less extra time and fewer activation bytes, and
 * when it can still fit. */
static psched_status extend_front(const psched__problem *pb, psched__fronts *fr, uint32_t len)
{
    uint32_t i = fr->start, nprev;
    size_t pfirst = fr->first[len - 1];
    nprev = (uint32_t)(fr->first[len] - pfirst);
    size_t need = fr->npts + (size_t)nprev * PSCHED__RECOMPUTE_KINDS + 1;
    if (need > fr->pcap) {
        size_t cap = fr->pcap ? fr->pcap : 64;
        while (cap < need)
            cap *= 2;
        psched__point *v = psched__reallocarray(fr->pts, cap, sizeof *v);
        if (!v)
            return PSCHED_ENOMEM_FAIL();
        fr->pts = v;
        fr->pcap = cap;
    }
    if ((size_t)len + 2 > fr->fcap) {
        size_t cap = fr->fcap ? 2 * fr->fcap : 64;
        size_t *v = psched__reallocarray(fr->first, cap, sizeof *v);
        if (!v)
            return PSCHED_ENOMEM_FAIL();
        fr->first = v;
        fr->fcap = cap;
    }
    const psched__group *g = layer_group(pb, i + len - 1);
    double param = psched__range_param(pb, i, len), base = psched__range_time(pb, i, len);
    psched__point *cand = fr->pts + fr->npts;
    uint32_t n = 0;
    for (uint32_t k = 0; k < nprev; k++) {
        const psched__point *pk = &fr->pts[pfirst + k];
        for (int r = 0; r < PSCHED__RECOMPUTE_KINDS; r++) {
            if (!g->variant[r].present)
                continue;
            psched__point q = {pk->extra + g->variant[r].extra, pk->act + g->variant[r].act,
                               (int32_t)k, (uint8_t)r};
            if (param + pb->nmin * q.act > pb->limit || base + q.extra > pb->tau_max)
                continue;
            cand[n++] = q;
        }
    }
    if (n > 1)
        qsort(cand, n, sizeof *cand, point_cmp);
    uint32_t kept = 0;
    for (uint32_t k = 0; k < n; k++)
        if (kept == 0 || cand[k].act < cand[kept - 1].act)
            cand[kept++] = cand[k];
    fr->npts += kept;
    fr->first[len + 1] = fr->npts;
    return PSCHED_OK;
}

psched_status psched__fronts_build(const psched__problem *pb, uint32_t i, size_t point_cap,
                                   psched__fronts *fr, bool *capped)
{
    fr->start = i;
    fr->npts = 0;
    fr->maxlen = 0;
    if (fr->fcap < 2 || fr->pcap < 1) {
        psched__fronts_free(fr);
        fr->start = i;
        fr->first = psched__calloc(64, sizeof *fr->first);
        fr->pts = psched__calloc(64, sizeof *fr->pts);
        if (!fr->first || !fr->pts)
            return PSCHED_ENOMEM_FAIL();
        fr->fcap = fr->pcap = 64;
    }
    fr->pts[0] = (psched__point){0, 0, -1, 0};
    fr->npts = 1;
    fr->first[0] = 0;
    fr->first[1] = 1;
    for (uint32_t len = 1; i + len <= pb->layers; len++) {
        if (psched__range_time(pb, i, len) > pb->tau_max)
            break;
        if (len % 256 == 0 && psched__expired(pb)) {
            *capped = true; /* cut by the deadline: not the whole frontier */
            break;
        }
        psched_status st = extend_front(pb, fr, len);
        if (st)
            return st;
        if (fr->first[len + 1] == fr->first[len])
            break;
        if (fr->npts > point_cap) {
            *capped = true;
            break;
        }
        fr->maxlen = len;
    }
    fr->npts = fr->first[fr->maxlen + 1];
    return PSCHED_OK;
}

/* Every start's frontiers, for the solvers that pair ranges of different
 * starts (the two-chunk DP, the MILP), within PSCHED__FRONT_POINT_CAP
 * points: each start gets an equal share of what the earlier ones left. */
static psched_status build_table(psched__problem *pb)
{
    uint32_t L = pb->layers;
    pb->table = psched__calloc((size_t)L + 1, sizeof *pb->table);
    if (!pb->table)
        return PSCHED_ENOMEM_FAIL();
    pb->table_points = 0;
    pb->widest = 1;
    for (uint32_t i = 0; i <= L; i++) {
        if (psched__expired(pb)) {
            /* The rest of the starts keep only the empty range: nothing
             * is claimed optimal, the solvers end at their first check. */
            pb->truncated = true;
            for (uint32_t j = i; j <= L; j++) {
                psched_status st = psched__fronts_build(pb, j, 0, &pb->table[j], &pb->truncated);
                if (st)
                    return st;
            }
            break;
        }
        size_t left = PSCHED__FRONT_POINT_CAP > pb->table_points
                          ? PSCHED__FRONT_POINT_CAP - pb->table_points
                          : 0;
        size_t share = left / ((size_t)L + 1 - i);
        psched_status st = psched__fronts_build(pb, i, share > 64 ? share : 64, &pb->table[i],
                                                &pb->truncated);
        if (st)
            return st;
        psched__fronts *fr = &pb->table[i];
        pb->table_points += fr->npts;
        for (uint32_t len = 0; len <= fr->maxlen; len++) {
            uint32_t n = (uint32_t)(fr->first[len + 1] - fr->first[len]);
            pb->widest = n > pb->widest ? n : pb->widest;
        }
        /* Give back what the start does not use. */
        psched__point *v = psched__reallocarray(fr->pts, fr->npts, sizeof *v);
        if (v) {
            fr->pts = v;
            fr->pcap = fr->npts;
        }
    }
    if (pb->truncated)
        pb->thinned = true;
    return PSCHED_OK;
}

void psched__fill_choices(const psched__fronts *fr, uint32_t len, int32_t k, uint8_t *choice)
{
    for (uint32_t l = len; l >= 1; l--) {
        const psched__point *pt = &fr->pts[fr->first[l] + (size_t)k];
        choice[fr->start + l - 1] = pt->choice;
        k = pt->prev;
    }
}

/* Index of the fastest point of [fr->start, +len) whose memory on stage s
 * is at most `budget`, or -1. Points are sorted by extra time, act
 * decreasing. */
static int32_t first_fitting(const psched__problem *pb, uint32_t s, const psched__fronts *fr,
                             uint32_t len, double budget)
{
    uint32_t n;
    const psched__point *pts = psched__front(fr, len, &n);
    double param = psched__range_param(pb, fr->start, len);
    for (uint32_t k = 0; k < n; k++)
        if (param + pb->inflight[s] * pts[k].act <= budget)
            return (int32_t)k;
    return -1;
}

/* Range lengths stage s may take from start i. */
static void length_bounds(const psched__problem *pb, uint32_t s, const psched__fronts *fr,
                          uint32_t *lo, uint32_t *hi)
{
    uint32_t i = fr->start, rest = pb->stages - 1 - s, left = pb->layers - i;
    *lo = pb->allow_empty ? 0 : 1;
    *hi = fr->maxlen < left ? fr->maxlen : left;
    if (!pb->allow_empty)
        *hi = left >= rest ? (*hi < left - rest ? *hi : left - rest) : 0;
    if (s == pb->stages - 1)
        *lo = left;
}

/* ---- solutions ---- */

static psched_status solution_init(psched__solution *sol, uint32_t stages, uint32_t layers)
{
    memset(sol, 0, sizeof *sol);
    sol->first = psched__calloc(stages, sizeof *sol->first);
    sol->count = psched__calloc(stages, sizeof *sol->count);
    sol->choice = psched__calloc(layers ? layers : 1, sizeof *sol->choice);
    if (!sol->first || !sol->count || !sol->choice)
        return PSCHED_ENOMEM_FAIL();
    return PSCHED_OK;
}

static void solution_free(psched__solution *sol)
{
    psched__dealloc(sol->first);
    psched__dealloc(sol->count);
    psched__dealloc(sol->choice);
    memset(sol, 0, sizeof *sol);
}

static void copy_solution(const psched__problem *pb, const psched__solution *from,
                          psched__solution *to)
{
    memcpy(to->first, from->first, pb->stages * sizeof *to->first);
    memcpy(to->count, from->count, pb->stages * sizeof *to->count);
    memcpy(to->choice, from->choice, pb->layers);
    to->found = from->found;
}

/* Figures of a solution; arrays may be NULL. Returns the objective. */
typedef struct evaluation {
    double *stage_time, *stage_mem, *dev_param, *dev_mem, *dev_time;
    double objective, max_mem;
} evaluation;

static void evaluate(const psched__problem *pb, const psched__solution *sol, evaluation *ev)
{
    for (uint32_t d = 0; d < pb->devices; d++)
        ev->dev_param[d] = ev->dev_mem[d] = ev->dev_time[d] = 0;
    double sum = 0;
    for (uint32_t s = 0; s < pb->stages; s++) {
        uint32_t i = sol->first[s], len = sol->count[s], d = pb->device_of[s];
        double extra = 0, act = 0;
        for (uint32_t l = i; l < i + len; l++) {
            const psched__variant *v = &layer_group(pb, l)->variant[sol->choice[l]];
            extra += v->extra;
            act += v->act;
        }
        double t = psched__range_time(pb, i, len) + extra;
        double param = psched__range_param(pb, i, len);
        ev->stage_time[s] = t;
        ev->stage_mem[s] = param + pb->inflight[s] * act;
        ev->dev_param[d] += param;
        ev->dev_mem[d] += ev->stage_mem[s];
        ev->dev_time[d] += t;
        sum += t;
    }
    double tmax = 0, mmax = 0;
    for (uint32_t d = 0; d < pb->devices; d++) {
        tmax = fmax(tmax, ev->dev_time[d]);
        mmax = fmax(mmax, ev->dev_mem[d]);
    }
    for (uint32_t s = 0; s < pb->stages; s++)
        tmax = fmax(tmax, pb->lambda * ev->stage_time[s]);
    ev->objective = (pb->microbatches - 1.0) * tmax + pb->kappa * sum;
    ev->max_mem = mmax;
}

static bool fits(const psched__problem *pb, double mem)
{
    return mem <= pb->limit * (1 + 1e-12);
}

/* ---- dynamic programs ---- */

/* A DP state: stages 0..s-1 cover layers 0..i-1 with largest stage time
 * `tmax` and total recompute time `extra`; back-pointers rebuild it. */
typedef struct dp_state {
    double tmax, extra;
    uint32_t prev_i;
    int32_t prev_state, point;
} dp_state;

typedef struct dp_list {
    dp_state *v;
    uint32_t n, pruned; /* pruned: the size after the last prune */
    size_t cap;
} dp_list;

static int state_cmp(const void *a, const void *b)
{
    const dp_state *x = a, *y = b;
    if (x->tmax != y->tmax)
        return x->tmax < y->tmax ? -1 : 1;
    if (x->extra != y->extra)
        return x->extra < y->extra ? -1 : 1;
    return 0;
}

/* Keep the states no other state beats in both tmax and extra. */
static void dp_prune(dp_list *l)
{
    if (l->n > 1) /* qsort of an empty (possibly NULL) array is undefined */
        qsort(l->v, l->n, sizeof *l->v, state_cmp);
    uint32_t kept = 0;
    for (uint32_t k = 0; k < l->n; k++)
        if (kept == 0 || l->v[k].extra < l->v[kept - 1].extra)
            l->v[kept++] = l->v[k];
    l->n = l->pruned = kept;
}

/* A list is pruned whenever it doubles, so no list holds more than about
 * twice its Pareto set while the states of later layers wait: the DP's
 * memory stays linear in layers x stages x Pareto size. */
static psched_status dp_push(dp_list *l, dp_state st)
{
    if (l->n >= 2 * l->pruned + 16)
        dp_prune(l);
    dp_state *v = psched__grow(l->v, &l->cap, l->n, sizeof *l->v, 8);
    if (!v)
        return PSCHED_ENOMEM_FAIL();
    l->v = v;
    l->v[l->n++] = st;
    return PSCHED_OK;
}

/* Every transition out of stage s's states at start fr->start. */
static psched_status dp_expand(const psched__problem *pb, uint32_t s, double budget,
                               const psched__fronts *fr, const dp_list *from, dp_list *to)
{
    uint32_t i = fr->start, lo, hi;
    length_bounds(pb, s, fr, &lo, &hi);
    for (uint32_t len = lo; len <= hi; len++) {
        int32_t k = first_fitting(pb, s, fr, len, budget);
        if (k < 0)
            break; /* a longer range only needs more memory */
        uint32_t n;
        double extra = psched__front(fr, len, &n)[k].extra;
        double t = psched__range_time(pb, i, len) + extra;
        for (uint32_t q = 0; q < from->n; q++) {
            dp_state ns = {fmax(from->v[q].tmax, t), from->v[q].extra + extra, i, (int32_t)q, k};
            psched_status st = dp_push(&to[i + len], ns);
            if (st)
                return st;
        }
    }
    return PSCHED_OK;
}

static psched_status dp_rebuild(const psched__problem *pb, dp_list *lists, int32_t best,
                                psched__fronts *fr, psched__solution *sol)
{
    uint32_t j = pb->layers;
    bool capped = false;
    for (uint32_t s = pb->stages; s-- > 0;) {
        const dp_state *st = &lists[(size_t)(s + 1) * (pb->layers + 1) + j].v[best];
        sol->first[s] = st->prev_i;
        sol->count[s] = j - st->prev_i;
        /* The frontiers are rebuilt exactly as the search built them. */
        psched_status status = psched__fronts_build(pb, st->prev_i, PSCHED__FRONT_POINT_CAP, fr,
                                                    &capped);
        if (status)
            return status;
        psched__fill_choices(fr, j - st->prev_i, st->point, sol->choice);
        best = st->prev_state;
        j = st->prev_i;
    }
    sol->found = true;
    return PSCHED_OK;
}

/* Over Pareto sets of (largest stage time, recompute time) per (stage,
 * first layer), start by start: the frontiers of one start are built,
 * every stage's states there are expanded, and the frontiers dropped, so
 * memory is linear in the layers (times stages and Pareto sizes). With one
 * chunk per device a stage is a device, so this is exact; with v chunks
 * each stage is held to 1/v of the memory and the result is a feasible
 * incumbent, not an optimum. *complete is false when the deadline or the
 * point cap cut the search (sol->found then false). */
static psched_status solve_dp(const psched__problem *pb, psched__solution *sol, bool *complete)
{
    size_t width = (size_t)pb->layers + 1, cells = ((size_t)pb->stages + 1) * width;
    dp_list *lists = psched__calloc(cells, sizeof *lists);
    psched__fronts fr = {0};
    if (!lists)
        return PSCHED_ENOMEM_FAIL();
    psched_status st = dp_push(&lists[0], (dp_state){0, 0, 0, -1, -1});
    double budget = pb->limit / pb->chunks;
    bool capped = false, expired = false;
    sol->found = false;
    for (uint32_t i = 0; !st && i <= pb->layers; i++) {
        if ((expired = psched__expired(pb)))
            break;
        bool any = false;
        for (uint32_t s = 0; s < pb->stages && !any; s++)
            any = lists[s * width + i].n > 0;
        if (!any)
            continue;
        st = psched__fronts_build(pb, i, PSCHED__FRONT_POINT_CAP, &fr, &capped);
        for (uint32_t s = 0; !st && s < pb->stages; s++) {
            dp_list *from = &lists[s * width + i];
            if (!from->n)
                continue;
            dp_prune(from);
            st = dp_expand(pb, s, budget, &fr, from, &lists[(s + 1) * width]);
        }
    }
    *complete = !expired && !capped;
    if (!st && !expired) {
        dp_list *last = &lists[pb->stages * width + pb->layers];
        dp_prune(last);
        int32_t best = -1;
        double best_obj = INFINITY;
        for (uint32_t q = 0; q < last->n; q++) {
            double obj = (pb->microbatches - 1.0) * last->v[q].tmax +
                         pb->kappa * (pb->time_total + last->v[q].extra);
            if (obj < best_obj) {
                best_obj = obj;
                best = (int32_t)q;
            }
        }
        if (best >= 0)
            st = dp_rebuild(pb, lists, best, &fr, sol);
    }
    for (size_t c = 0; c < cells; c++)
        psched__dealloc(lists[c].v);
    psched__dealloc(lists);
    psched__fronts_free(&fr);
    return st;
}

/* Min over splits of max_s cost(s, range), where cost is the stage's base
 * time (memory = false) or its memory with every layer at its most
 * memory-saving variant (memory = true). Writes the split into sol when
 * non-NULL; returns the value (INFINITY when no split exists, NAN when the
 * deadline passed first). */
static double minmax_split(const psched__problem *pb, bool memory, psched__solution *sol,
                           psched_status *status)
{
    size_t width = pb->layers + 1, cells = (size_t)(pb->stages + 1) * width;
    double *best = psched__malloc(cells * sizeof *best);
    uint32_t *arg = psched__malloc(cells * sizeof *arg);
    *status = PSCHED_OK;
    if (!best || !arg) {
        psched__dealloc(best);
        psched__dealloc(arg);
        *status = PSCHED_ENOMEM_FAIL();
        return INFINITY;
    }
    for (size_t c = 0; c < cells; c++)
        best[c] = INFINITY;
    best[0] = 0;
    bool expired = false;
    for (uint32_t s = 0; s < pb->stages && !expired; s++) {
        for (uint32_t i = 0; i <= pb->layers; i++) {
            double here = best[s * width + i];
            if (here == INFINITY)
                continue;
            if ((expired = psched__expired(pb)))
                break;
            uint32_t rest = pb->stages - 1 - s, left = pb->layers - i;
            uint32_t lo = pb->allow_empty ? 0 : 1, hi = left;
            if (!pb->allow_empty)
                hi = left >= rest ? left - rest : 0;
            if (s == pb->stages - 1)
                lo = left;
            for (uint32_t len = lo; len <= hi; len++) {
                double c = memory ? psched__range_param(pb, i, len) +
                                        pb->inflight[s] *
                                            (pb->minact_prefix[i + len] - pb->minact_prefix[i])
                                  : psched__range_time(pb, i, len);
                double v = fmax(here, c);
                size_t to = (s + 1) * width + i + len;
                if (v < best[to]) {
                    best[to] = v;
                    arg[to] = i;
                }
            }
        }
    }
    double value = expired ? NAN : best[pb->stages * width + pb->layers];
    if (sol && value < INFINITY) {
        uint32_t j = pb->layers;
        for (uint32_t s = pb->stages; s-- > 0;) {
            uint32_t i = arg[(s + 1) * width + j];
            sol->first[s] = i;
            sol->count[s] = j - i;
            j = i;
        }
        memset(sol->choice, PSCHED_RECOMPUTE_NONE, pb->layers);
        sol->found = true;
    }
    psched__dealloc(best);
    psched__dealloc(arg);
    return value;
}

/* ---- baselines ---- */

/* The most memory-saving variant a layer has among none..kind. */
static uint8_t uniform_choice(const psched__group *g, int kind)
{
    for (int r = kind; r > 0; r--)
        if (g->variant[r].present)
            return (uint8_t)r;
    return PSCHED_RECOMPUTE_NONE;
}

/* Megatron's splits: `units` layers starting at `skip` split evenly with
 * the remainder on the first stages; a leading embedding and a trailing head
 * (count-1 groups at the ends) stay on the first and last stage. */
static psched_status even_split(const psched__problem *pb, bool accounted, psched__solution *sol)
{
    const psched_model *m = pb->model;
    uint32_t emb = 0, head = 0;
    if (!accounted && m->group_count >= 3) {
        emb = m->groups[0].count == 1;
        head = m->groups[m->group_count - 1].count == 1;
    }
    uint32_t body = pb->layers - emb - head, S = pb->stages;
    uint32_t next = 0;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t n = body / S + (s < body % S);
        if (s == 0)
            n += emb;
        if (s == S - 1)
            n += head;
        if (n == 0 && !pb->allow_empty)
            return psched_fail(PSCHED_EINVAL,
                               "even split leaves stage %u empty (%u layers to split over %u "
                               "stages); allow empty stages or use another method",
                               s, body, S);
        sol->first[s] = next;
        sol->count[s] = n;
        next += n;
    }
    sol->found = true;
    return PSCHED_OK;
}

/* One recompute choice for every layer, the first of none, selective,
 * full that fits (Megatron's --recompute-granularity). */
static void uniform_recompute(const psched__problem *pb, psched__solution *sol, evaluation *ev)
{
    for (int kind = 0; kind < PSCHED__RECOMPUTE_KINDS; kind++) {
        for (uint32_t l = 0; l < pb->layers; l++)
            sol->choice[l] = uniform_choice(layer_group(pb, l), kind);
        evaluate(pb, sol, ev);
        if (fits(pb, ev->max_mem))
            return;
    }
}

/* ---- the column MILP ---- */

typedef struct column_list {
    psched__column *v;
    size_t n, cap;
} column_list;

static psched_status column_push(column_list *c, psched__column col)
{
    psched__column *v = psched__grow(c->v, &c->cap, c->n, sizeof *c->v, 256);
    if (!v)
        return PSCHED_ENOMEM_FAIL();
    c->v = v;
    c->v[c->n++] = col;
    return PSCHED_OK;
}

/* Frontier points offered per (stage, range) with v > 1: a range of k
 * identical layers with two variants has O(k²) Pareto points, far more
 * columns than GLPK handles; beyond this many, evenly spaced ones (the
 * fastest and the leanest always) are kept and the result is no longer
 * claimed optimal. */
#define MAX_POINTS_PER_RANGE 24u

/* Columns of one (stage, start): with one chunk only the fastest mix that
 * fits (memory is per stage), else the frontier points that fit alone. */
static psched_status stage_columns(psched__problem *pb, uint32_t s, uint32_t i, double tau_max,
                                   column_list *out)
{
    const psched__fronts *fr = &pb->table[i];
    uint32_t lo, hi;
    length_bounds(pb, s, fr, &lo, &hi);
    for (uint32_t len = lo; len <= hi; len++) {
        uint32_t nf;
        const psched__point *front = psched__front(fr, len, &nf);
        double base = psched__range_time(pb, i, len), param = psched__range_param(pb, i, len);
        if (nf == 0 || base + front[0].extra > tau_max)
            break;
        uint32_t k0 = 0, k1 = nf;
        if (pb->chunks == 1) {
            int32_t k = first_fitting(pb, s, fr, len, pb->limit);
            if (k < 0)
                break;
            k0 = (uint32_t)k;
            k1 = k0 + 1;
        }
        bool any = false;
        uint32_t n = k1 - k0, step_num = 1, step_den = 1;
        if (n > MAX_POINTS_PER_RANGE) {
            pb->thinned = true;
            step_num = n - 1;
            step_den = MAX_POINTS_PER_RANGE - 1;
            k1 = MAX_POINTS_PER_RANGE;
        }
        for (uint32_t q = k0; q < k1; q++) {
            uint32_t k = n > MAX_POINTS_PER_RANGE
                             ? (uint32_t)(((uint64_t)q * step_num + step_den / 2) / step_den)
                             : q;
            const psched__point *pt = &front[k];
            psched__column col = {s, i, len, (int32_t)k, base + pt->extra,
                                  param + pb->inflight[s] * pt->act};
            if (col.mem > pb->limit || col.time > tau_max)
                continue;
            any = true;
            psched_status st = column_push(out, col);
            if (st)
                return st;
        }
        if (!any && pb->chunks > 1 && param + pb->inflight[s] * front[nf - 1].act > pb->limit)
            break;
    }
    return PSCHED_OK;
}

static psched_status build_columns(psched__problem *pb, double tau_max, column_list *out)
{
    for (uint32_t s = 0; s < pb->stages; s++) {
        uint32_t i_lo = pb->allow_empty ? 0 : s, i_hi = s == 0 ? 0 : pb->layers;
        for (uint32_t i = i_lo; i <= i_hi; i++) {
            psched_status st = stage_columns(pb, s, i, tau_max, out);
            if (st)
                return st;
        }
    }
    return PSCHED_OK;
}

/* Columns that reproduce (or beat) the seed stage by stage, so GLPK starts
 * from it; false when some stage has none. */
static bool map_seed(const column_list *cols, const psched__solution *seed, const evaluation *ev,
                     int32_t *out, uint32_t stages)
{
    for (uint32_t s = 0; s < stages; s++)
        out[s] = -1;
    for (size_t c = 0; c < cols->n; c++) {
        const psched__column *col = &cols->v[c];
        uint32_t s = col->stage;
        if (col->first != seed->first[s] || col->len != seed->count[s])
            continue;
        double tol_t = 1e-9 * fmax(1, ev->stage_time[s]), tol_m = 1e-9 * fmax(1, ev->stage_mem[s]);
        if (col->time <= ev->stage_time[s] + tol_t && col->mem <= ev->stage_mem[s] + tol_m &&
            (out[s] < 0 || col->time < cols->v[out[s]].time))
            out[s] = (int32_t)c;
    }
    for (uint32_t s = 0; s < stages; s++)
        if (out[s] < 0)
            return false;
    return true;
}

static void solution_from_columns(const psched__problem *pb, const column_list *cols,
                                  const int32_t *chosen, psched__solution *sol)
{
    for (uint32_t s = 0; s < pb->stages; s++) {
        const psched__column *col = &cols->v[chosen[s]];
        sol->first[s] = col->first;
        sol->count[s] = col->len;
        psched__fill_choices(&pb->table[col->first], col->len, col->point, sol->choice);
    }
    sol->found = true;
}

typedef struct ilp_outcome {
    bool optimal;
    double gap;
} ilp_outcome;

/* The incumbent the exact searches start from: the best fitting of
 * Megatron's even split, the accounted even split and the stage DP's
 * solution (each stage held to 1/v of the memory), so no search returns a
 * partition the baselines beat. The even splits come first: their best
 * objective bounds every stage's time in a better partition (a stage's
 * device takes at least its time, and kappa >= 0 weighs at least the base
 * time), so pb->tau_max keeps the frontiers to ranges that can matter.
 * seed->found is false when none fits; *objective is then INFINITY.
 * *dp_complete says whether the stage DP ran to its end. */
static psched_status best_seed(psched__problem *pb, evaluation *ev, psched__solution *seed,
                               double *objective, bool *dp_complete)
{
    psched__solution cand;
    psched_status st = solution_init(&cand, pb->stages, pb->layers);
    *objective = INFINITY;
    *dp_complete = false;
    seed->found = false;
    for (int k = 0; !st && k < 3; k++) {
        cand.found = false;
        if (k == 2) {
            double c = (pb->microbatches - 1.0) * fmax(1, pb->lambda);
            if (isfinite(*objective) && c > 0 && pb->kappa >= 0) {
                double tau = (*objective - pb->kappa * pb->time_total) / c;
                pb->tau_max = tau + 1e-9 * fmax(1, fabs(tau));
            }
            st = solve_dp(pb, &cand, dp_complete);
        } else if (even_split(pb, k == 1, &cand) == PSCHED_OK) {
            uniform_recompute(pb, &cand, ev);
        } else {
            cand.found = false;
        }
        if (st || !cand.found)
            continue;
        evaluate(pb, &cand, ev);
        if (fits(pb, ev->max_mem) && ev->objective < *objective) {
            *objective = ev->objective;
            copy_solution(pb, &cand, seed);
        }
    }
    solution_free(&cand);
    return st;
}

/* A lower bound of the objective over every partition: the largest
 * device takes at least the average and at least the slowest layer; with
 * kappa < 0 the recompute time could lower it without bound, so 0. */
static double objective_floor(const psched__problem *pb)
{
    if (pb->kappa < 0)
        return 0;
    double lb = pb->time_total / pb->devices;
    for (uint32_t l = 0; l < pb->layers; l++)
        lb = fmax(lb, psched__range_time(pb, l, 1));
    return (pb->microbatches - 1.0) * lb + pb->kappa * pb->time_total;
}

/* The MILP seeded with the DP's solution; its objective bounds every
 * column's time (by the largest device time, and by that over lambda for
 * a single stage), which keeps the column count near S·L·(a few lengths). */
static psched_status solve_ilp(psched__problem *pb, evaluation *ev, const psched__solution *seed_in,
                               double seed_objective, psched__solution *sol, ilp_outcome *res)
{
    psched__solution seed;
    double tau_max = INFINITY;
    psched_status st = solution_init(&seed, pb->stages, pb->layers);
    if (!st)
        copy_solution(pb, seed_in, &seed);
    if (!st)
        st = build_table(pb);
    if (!st && seed.found) {
        evaluate(pb, &seed, ev);
        if (pb->microbatches > 1)
            tau_max = (seed_objective - pb->kappa * pb->time_total) / (pb->microbatches - 1.0);
        tau_max += 1e-9 * fmax(1, fabs(tau_max));
    }
    column_list cols = {0};
    int32_t *chosen = psched__calloc(pb->stages, sizeof *chosen);
    int32_t *seed_cols = psched__calloc(pb->stages, sizeof *seed_cols);
    if (!st && (!chosen || !seed_cols))
        st = PSCHED_ENOMEM_FAIL();
    if (!st)
        st = build_columns(pb, tau_max / fmax(1, pb->lambda), &cols);
    if (!st) {
        bool seeded = seed.found && map_seed(&cols, &seed, ev, seed_cols, pb->stages);
        psched__milp in = {pb->stages, pb->devices, pb->layers, pb->device_of, cols.v, cols.n,
                           pb->limit, pb->microbatches - 1.0, pb->kappa, pb->lambda, false,
                           seeded ? seed_cols : NULL};
        bool found = false;
        double bound = -INFINITY;
        res->gap = NAN;
        st = psched__milp_solve(&in, time_left(pb), chosen, &found, &res->optimal, &bound);
        res->optimal = res->optimal && !pb->thinned;
        if (!st && found) {
            solution_from_columns(pb, &cols, chosen, sol);
            evaluate(pb, sol, ev);
        }
        if (!st && seed.found && (!found || ev->objective > seed_objective)) {
            /* GLPK stopped before it had anything better: keep the seed. */
            copy_solution(pb, &seed, sol);
            res->optimal = false;
        }
        /* The columns left out cost more than the seed, so GLPK's bound
         * holds for every partition unless frontiers were thinned. */
        if (!st && sol->found && !pb->thinned && isfinite(bound)) {
            evaluate(pb, sol, ev);
            res->gap = fmax(0, (ev->objective - bound) / ev->objective);
        }
    }
    psched__dealloc(cols.v);
    psched__dealloc(chosen);
    psched__dealloc(seed_cols);
    solution_free(&seed);
    return st;
}

/* Largest device memory, every layer at its leanest variant, of the
 * split that minimizes the largest stage's (a quick witness that a limit
 * is met, for every layout). */
static psched_status lean_split_memory(const psched__problem *pb, double *out)
{
    psched__solution sol;
    psched_status st = solution_init(&sol, pb->stages, pb->layers);
    double *dev = psched__calloc(pb->devices, sizeof *dev);
    if (!st && !dev)
        st = PSCHED_ENOMEM_FAIL();
    *out = INFINITY;
    if (!st && minmax_split(pb, true, &sol, &st) < INFINITY && !st) {
        *out = 0;
        for (uint32_t s = 0; s < pb->stages; s++) {
            uint32_t i = sol.first[s], j = i + sol.count[s];
            dev[pb->device_of[s]] += psched__range_param(pb, i, sol.count[s]) +
                                     pb->inflight[s] * (pb->minact_prefix[j] - pb->minact_prefix[i]);
        }
        for (uint32_t d = 0; d < pb->devices; d++)
            *out = fmax(*out, dev[d]);
    }
    psched__dealloc(dev);
    solution_free(&sol);
    return st;
}

/* Smallest device memory any split fits in, every layer at its most
 * memory-saving variant; when the limit is met, possibly only some fitting
 * figure <= the limit (nothing needs more). Exact by DP with one chunk per
 * device and with the two-chunk layouts; by MILP otherwise, given a third
 * of the time left. NAN when unknown: no GLPK, or the time ran out first. */
static psched_status min_memory(const psched__problem *pb, double *out)
{
    psched_status st;
    if (pb->chunks == 1) {
        *out = minmax_split(pb, true, NULL, &st);
        return st;
    }
    if ((st = lean_split_memory(pb, out)) || fits(pb, *out))
        return st;
    if (psched__pair_applies(pb))
        return psched__pair_min_memory(pb, out);
    *out = NAN;
    if (!psched__have_glpk() || psched__expired(pb))
        return PSCHED_OK;
    column_list cols = {0};
    st = PSCHED_OK;
    for (uint32_t s = 0; !st && s < pb->stages; s++) {
        for (uint32_t i = pb->allow_empty ? 0 : s; !st && i <= (s == 0 ? 0 : pb->layers); i++) {
            uint32_t rest = pb->stages - 1 - s, left = pb->layers - i;
            uint32_t lo = pb->allow_empty ? 0 : 1, hi = left;
            if (!pb->allow_empty)
                hi = left >= rest ? left - rest : 0;
            if (s == pb->stages - 1)
                lo = left;
            for (uint32_t len = lo; !st && len <= hi; len++) {
                double act = pb->minact_prefix[i + len] - pb->minact_prefix[i];
                st = column_push(&cols, (psched__column){s, i, len, -1, 0,
                                                         psched__range_param(pb, i, len) +
                                                             pb->inflight[s] * act});
            }
        }
    }
    int32_t *chosen = psched__calloc(pb->stages, sizeof *chosen);
    if (!st && !chosen)
        st = PSCHED_ENOMEM_FAIL();
    if (!st) {
        psched__milp in = {pb->stages, pb->devices, pb->layers, pb->device_of, cols.v, cols.n,
                           INFINITY, 0, 0, 0, true, NULL};
        bool found = false, optimal = false;
        double bound = 0;
        st = psched__milp_solve(&in, time_left(pb) / 3, chosen, &found, &optimal, &bound);
        /* Only a proven minimum may declare a limit infeasible. */
        if (!st && found && optimal) {
            double *mem = psched__calloc(pb->devices, sizeof *mem);
            if (!mem) {
                st = PSCHED_ENOMEM_FAIL();
            } else {
                double mx = 0;
                for (uint32_t s = 0; s < pb->stages; s++)
                    mem[pb->device_of[s]] += cols.v[chosen[s]].mem;
                for (uint32_t d = 0; d < pb->devices; d++)
                    mx = fmax(mx, mem[d]);
                *out = mx;
                psched__dealloc(mem);
            }
        }
    }
    psched__dealloc(chosen);
    psched__dealloc(cols.v);
    return st;
}

/* ---- the result ---- */

void psched_partition_result_destroy(psched_partition_result *r)
{
    if (!r)
        return;
    psched__dealloc(r->first);
    psched__dealloc(r->count);
    psched__dealloc(r->choice);
    psched__dealloc(r->stage_time);
    psched__dealloc(r->stage_mem);
    psched__dealloc(r->dev_param);
    psched__dealloc(r->dev_mem);
    psched__dealloc(r->dev_peak);
    psched_plan_destroy(r->plan);
    psched__dealloc(r);
}

static psched_partition_result *result_alloc(const psched__problem *pb)
{
    psched_partition_result *r = psched__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    uint32_t S = pb->stages, P = pb->devices;
    r->stages = S;
    r->devices = P;
    r->layers = pb->layers;
    r->first = psched__calloc(S, sizeof *r->first);
    r->count = psched__calloc(S, sizeof *r->count);
    r->choice = psched__calloc(pb->layers, sizeof *r->choice);
    r->stage_time = psched__calloc(S, sizeof(double));
    r->stage_mem = psched__calloc(S, sizeof(double));
    r->dev_param = psched__calloc(P, sizeof(double));
    r->dev_mem = psched__calloc(P, sizeof(double));
    r->dev_peak = psched__calloc(P, sizeof(double));
    if (!r->first || !r->count || !r->choice || !r->stage_time || !r->stage_mem ||
        !r->dev_param || !r->dev_mem || !r->dev_peak) {
        psched_partition_result_destroy(r);
        return NULL;
    }
    r->gap = r->objective = r->min_memory = r->makespan = r->bubble = NAN;
    return r;
}

/* Write each stage's summed costs and its activation bytes (held from F
 * to W) into the plan. */
static psched_status write_costs(const psched__problem *pb, const psched__solution *sol,
                                 psched_plan *plan)
{
    for (uint32_t s = 0; s < pb->stages; s++) {
        double f = 0, b = 0, w = 0, act = 0;
        for (uint32_t l = sol->first[s]; l < sol->first[s] + sol->count[s]; l++) {
            const psched__group *g = layer_group(pb, l);
            const psched__variant *v = &g->variant[sol->choice[l]];
            f += g->f;
            b += g->b + v->extra;
            w += g->w;
            act += v->act;
        }
        psched_status st = psched_plan_set_stage_cost(plan, s, f, b, w);
        if (!st)
            st = psched_plan_set_stage_mem(plan, s, act, 0, -act);
        if (st)
            return st;
    }
    return PSCHED_OK;
}

/* Generate the schedule again with the partition's costs and simulate it:
 * the figures users compare are the simulator's, not the model's. */
static psched_status resimulate(const psched__problem *pb, const char *name,
                                psched_partition_result *r)
{
    psched_schedule *sched = NULL;
    psched_report *rep = NULL;
    psched_status st = psched_generate(r->plan, name, &sched);
    if (!st)
        st = psched_simulate(sched, NULL, &rep);
    if (!st) {
        r->makespan = psched_report_makespan(rep);
        r->bubble = psched_report_bubble_ratio(rep);
        for (uint32_t d = 0; d < pb->devices && !st; d++) {
            double peak = 0;
            st = psched_report_device(rep, d, NULL, NULL, &peak);
            r->dev_peak[d] = r->dev_param[d] + peak;
        }
    }
    psched_report_destroy(rep);
    psched_schedule_destroy(sched);
    return st;
}

static psched_status fill_result(const psched__problem *pb, const psched__solution *sol,
                                 const char *name, psched_plan **plan, evaluation *ev,
                                 psched_partition_result *r)
{
    if (!sol->found)
        return PSCHED_OK;
    evaluate(pb, sol, ev);
    r->has_partition = true;
    r->objective = ev->objective;
    memcpy(r->first, sol->first, pb->stages * sizeof *r->first);
    memcpy(r->count, sol->count, pb->stages * sizeof *r->count);
    memcpy(r->choice, sol->choice, pb->layers);
    memcpy(r->stage_time, ev->stage_time, pb->stages * sizeof(double));
    memcpy(r->stage_mem, ev->stage_mem, pb->stages * sizeof(double));
    memcpy(r->dev_param, ev->dev_param, pb->devices * sizeof(double));
    memcpy(r->dev_mem, ev->dev_mem, pb->devices * sizeof(double));
    psched_status st = write_costs(pb, sol, *plan);
    if (st)
        return st;
    r->plan = *plan;
    *plan = NULL;
    return resimulate(pb, name, r);
}

static psched_status check_options(const psched_partition_options *o)
{
    if (o->version == 0 || o->version > PSCHED_PARTITION_OPTIONS_VERSION)
        return psched_fail(PSCHED_EINVAL, "partition options version (%u) must be 1..%u",
                           o->version, PSCHED_PARTITION_OPTIONS_VERSION);
    if ((unsigned)o->method > PSCHED_PARTITION_DP_TIME)
        return psched_fail(PSCHED_EINVAL, "partition method (%d) must be 0..%d", (int)o->method,
                           (int)PSCHED_PARTITION_DP_TIME);
    if (!(o->time_limit > 0) || !isfinite(o->time_limit))
        return psched_fail(PSCHED_EINVAL, "partition time limit (%g s) must be finite and > 0",
                           o->time_limit);
    if (o->flags & ~PSCHED_PARTITION_ALLOW_EMPTY)
        return psched_fail(PSCHED_EINVAL, "partition flags (0x%x) has unknown bits", o->flags);
    return PSCHED_OK;
}

/* Two chunks per device in a loop or V layout: the exact two-walker DP
 * (partition_pair.c), started from the seed. */
static psched_status solve_pair(psched__problem *pb, const psched__solution *seed,
                                double incumbent, psched__solution *sol,
                                psched_solve_status *status, double *gap)
{
    if (seed->found)
        copy_solution(pb, seed, sol);
    psched__pair_outcome res;
    psched_status st = build_table(pb);
    if (!st)
        st = psched__pair_solve(pb, incumbent, sol, &res);
    if (st)
        return st;
    if (!sol->found) {
        *status = PSCHED_SOLVE_INFEASIBLE;
        return PSCHED_OK;
    }
    if (res.complete && !pb->thinned) {
        *status = PSCHED_SOLVE_OPTIMAL;
        *gap = 0;
        return PSCHED_OK;
    }
    /* The DP's bound covers the ranges it saw; with some left out only
     * the floor every partition shares holds. */
    double bound = pb->thinned || !isfinite(res.bound) ? objective_floor(pb) : res.bound;
    *status = PSCHED_SOLVE_FEASIBLE;
    *gap = fmax(0, (res.objective - bound) / res.objective);
    return PSCHED_OK;
}

/* The ILP and DP methods. Where a DP is exact it proves the optimum:
 * the stage DP with one chunk per device, the two-walker DP with two
 * chunks in a loop or V layout. Elsewhere the ILP method solves the column
 * MILP seeded with the stage DP's solution, and the DP method returns that
 * heuristic solution (each stage held to 1/v of the memory). */
static psched_status solve_optimizer(psched__problem *pb, psched_partition_method method,
                                     evaluation *ev, psched__solution *sol,
                                     psched_solve_status *status, double *gap, double *min_mem)
{
    psched_status st;
    bool milp = method == PSCHED_PARTITION_ILP && psched__have_glpk();
    bool pair = pb->chunks == 2 && pb->kappa >= 0 && psched__pair_applies(pb);
    bool exact = (pb->chunks == 1 || pair) && !(milp && force_milp);
    /* A limit below the smallest fitting memory needs no search. */
    if (isfinite(pb->limit) && (milp || pb->chunks == 1 || pair)) {
        if ((st = min_memory(pb, min_mem)))
            return st;
        if (*min_mem > pb->limit * (1 + 1e-12)) {
            *status = PSCHED_SOLVE_INFEASIBLE;
            return PSCHED_OK;
        }
        *min_mem = NAN;
    }
    psched__solution seed;
    double incumbent = INFINITY;
    bool dp_complete = false;
    if ((st = solution_init(&seed, pb->stages, pb->layers)))
        return st;
    st = best_seed(pb, ev, &seed, &incumbent, &dp_complete);
    if (!st && exact && pair) {
        st = solve_pair(pb, &seed, incumbent, sol, status, gap);
    } else if (!st && milp && !exact) {
        ilp_outcome res = {false, NAN};
        st = solve_ilp(pb, ev, &seed, incumbent, sol, &res);
        *status = !sol->found ? PSCHED_SOLVE_INFEASIBLE
                  : res.optimal ? PSCHED_SOLVE_OPTIMAL
                                : PSCHED_SOLVE_FEASIBLE;
        *gap = res.optimal ? 0 : res.gap;
    } else if (!st && method == PSCHED_PARTITION_ILP && !exact) {
        st = psched_fail(PSCHED_EUNSUPPORTED,
                         "the ILP needs GLPK for %u chunks per device in this layout and this "
                         "build has none; use v <= 2 with loop or V placement, or the dp method",
                         pb->chunks);
    } else if (!st) {
        /* The seed is the stage DP's solution unless a baseline beat it. */
        copy_solution(pb, &seed, sol);
        if (!sol->found) {
            *status = PSCHED_SOLVE_INFEASIBLE;
        } else if (exact && dp_complete) {
            *status = PSCHED_SOLVE_OPTIMAL;
            *gap = 0;
        } else {
            /* A heuristic (v > 1), or the deadline or the point cap cut
             * the DP: feasible, with the gap to the floor every partition
             * shares. */
            evaluate(pb, sol, ev);
            *status = PSCHED_SOLVE_FEASIBLE;
            *gap = fmax(0, (ev->objective - objective_floor(pb)) / ev->objective);
        }
    }
    solution_free(&seed);
    return st;
}

/* Run the method; sets *status. */
static psched_status run_method(psched__problem *pb, const psched_partition_options *o,
                                evaluation *ev, psched__solution *sol, psched_solve_status *status,
                                double *gap, double *min_mem)
{
    psched_status st = PSCHED_OK;
    *gap = NAN;
    switch (o->method) {
    case PSCHED_PARTITION_EVEN:
    case PSCHED_PARTITION_EVEN_ACCOUNTED:
        if ((st = even_split(pb, o->method == PSCHED_PARTITION_EVEN_ACCOUNTED, sol)))
            return st;
        uniform_recompute(pb, sol, ev);
        break;
    case PSCHED_PARTITION_DP_TIME:
        if (isnan(minmax_split(pb, false, sol, &st)) && !st) {
            /* The deadline came first: Megatron's split, which the
             * time-balanced one would only have improved. */
            if ((st = even_split(pb, false, sol)))
                return st;
        }
        if (st)
            return st;
        break;
    case PSCHED_PARTITION_DP:
    case PSCHED_PARTITION_ILP:
        return solve_optimizer(pb, o->method, ev, sol, status, gap, min_mem);
    }
    if (!sol->found) {
        *status = PSCHED_SOLVE_INFEASIBLE;
        return PSCHED_OK;
    }
    evaluate(pb, sol, ev);
    *status = fits(pb, ev->max_mem) ? PSCHED_SOLVE_FEASIBLE : PSCHED_SOLVE_INFEASIBLE;
    return PSCHED_OK;
}

static psched_status check_args(const psched_model *model, const psched_plan *plan,
                                const char *schedule, psched_partition_result **out)
{
    if (!model || !plan || !schedule || !out)
        return psched_fail(PSCHED_EINVAL, "model, plan, schedule name and output must be non-NULL");
    if (model->layer_count == 0)
        return psched_fail(PSCHED_EINVAL, "the model has no layer");
    if (model->layer_count > PSCHED__PARTITION_MAX_LAYERS)
        return psched_fail(PSCHED_EINVAL,
                           "the model has %u layers; the partitioner handles at most %u "
                           "(its tables grow with the layer count)",
                           model->layer_count, PSCHED__PARTITION_MAX_LAYERS);
    double limit = psched_plan_memory_limit(plan);
    if (!(limit > 0))
        return psched_fail(PSCHED_EINVAL, "memory limit (%g) must be > 0", limit);
    return PSCHED_OK;
}

/* Refuse what the objective cannot weigh: a model whose layers take no
 * time (every partition ties, speed-ups are 0/0) and times or bytes whose
 * sums overflow (every figure would be inf, every comparison a tie). The
 * objective multiplies the total time by at most m + S, memory the
 * activations by at most the in-flight count. */
static psched_status check_magnitudes(const psched__problem *pb)
{
    uint32_t L = pb->layers;
    double act = 0, extra = 0, inflight = 0;
    for (uint32_t g = 0; g < pb->model->group_count; g++) {
        const psched__group *gr = &pb->model->groups[g];
        double a = 0, e = 0;
        for (int r = 0; r < PSCHED__RECOMPUTE_KINDS; r++)
            if (gr->variant[r].present)
                a = fmax(a, gr->variant[r].act), e = fmax(e, gr->variant[r].extra);
        act += a * gr->count;
        extra += e * gr->count;
    }
    for (uint32_t s = 0; s < pb->stages; s++)
        inflight = fmax(inflight, pb->inflight[s]);
    double weight = (double)pb->microbatches + pb->stages;
    if (!isfinite((pb->time_total + extra) * weight))
        return psched_fail(PSCHED_EINVAL,
                           "the model's times overflow: %u layers sum to %g (f+b+w) plus %g "
                           "(recompute), times m + S = %g; scale the times down",
                           L, pb->time_total, extra, weight);
    if (!isfinite(pb->param_prefix[L] + act * fmax(1, inflight)))
        return psched_fail(PSCHED_EINVAL,
                           "the model's bytes overflow: parameters sum to %g and activations to "
                           "%g, times up to %g micro-batches in flight; scale the bytes down",
                           pb->param_prefix[L], act, inflight);
    if (!(pb->time_total > 0))
        return psched_fail(PSCHED_EINVAL,
                           "the model's %u layers take no time (f+b+w sum to 0): every "
                           "partition ties; give the layers their times",
                           L);
    return PSCHED_OK;
}

static psched_status partition_problem(psched__problem *pb, const psched_partition_options *o,
                                       const char *schedule, psched_plan **resolved,
                                       psched_partition_result **out)
{
    psched__solution sol = {0};
    evaluation ev = {0};
    psched_partition_result *r = result_alloc(pb);
    psched_status st = r ? solution_init(&sol, pb->stages, pb->layers) : PSCHED_ENOMEM_FAIL();
    if (!st) {
        ev.stage_time = psched__calloc(pb->stages, sizeof(double));
        ev.stage_mem = psched__calloc(pb->stages, sizeof(double));
        ev.dev_param = psched__calloc(pb->devices, sizeof(double));
        ev.dev_mem = psched__calloc(pb->devices, sizeof(double));
        ev.dev_time = psched__calloc(pb->devices, sizeof(double));
        if (!ev.stage_time || !ev.stage_mem || !ev.dev_param || !ev.dev_mem || !ev.dev_time)
            st = PSCHED_ENOMEM_FAIL();
    }
    if (!st)
        st = run_method(pb, o, &ev, &sol, &r->status, &r->gap, &r->min_memory);
    if (!st)
        st = fill_result(pb, &sol, schedule, resolved, &ev, r);
    if (!st && r->status == PSCHED_SOLVE_INFEASIBLE && isnan(r->min_memory))
        st = min_memory(pb, &r->min_memory);
    psched__dealloc(ev.stage_time);
    psched__dealloc(ev.stage_mem);
    psched__dealloc(ev.dev_param);
    psched__dealloc(ev.dev_mem);
    psched__dealloc(ev.dev_time);
    solution_free(&sol);
    if (st) {
        psched_partition_result_destroy(r);
        return st;
    }
    *out = r;
    return PSCHED_OK;
}

psched_status psched_partition(const psched_model *model, const psched_plan *plan,
                               const char *schedule, const psched_partition_options *options,
                               psched_partition_result **out)
{
    static const psched_partition_options defaults = PSCHED_PARTITION_OPTIONS_INIT;
    const psched_partition_options *o = options ? options : &defaults;
    if (out)
        *out = NULL; /* a failed call leaves no handle to free */
    psched_status st = check_args(model, plan, schedule, out);
    if (st || (st = check_options(o)))
        return st;
    double t0 = psched__now();
    psched__problem pb = {0};
    psched_plan *resolved = NULL;
    pb.allow_empty = (o->flags & PSCHED_PARTITION_ALLOW_EMPTY) != 0;
    pb.deadline = t0 + o->time_limit;
    pb.tau_max = INFINITY;
    pb.limit = psched_plan_memory_limit(plan);
    st = probe_schedule(plan, schedule, &pb, &resolved);
    if (!st && !pb.allow_empty && model->layer_count < pb.stages)
        st = psched_fail(PSCHED_EINVAL,
                         "the model has %u layers, fewer than the %u stages of %s; allow empty "
                         "stages to partition it",
                         model->layer_count, pb.stages, schedule);
    if (!st)
        st = problem_layers(&pb, model);
    if (!st)
        st = check_magnitudes(&pb);
    psched_partition_result *r = NULL;
    if (!st)
        st = partition_problem(&pb, o, schedule, &resolved, &r);
    psched_plan_destroy(resolved);
    problem_free(&pb);
    if (st)
        return st;
    r->solve_time = psched__now() - t0;
    *out = r;
    return PSCHED_OK;
}

/* ---- getters ---- */

psched_solve_status psched_partition_status(const psched_partition_result *r)
{
    return r ? r->status : PSCHED_SOLVE_INFEASIBLE;
}

double psched_partition_gap(const psched_partition_result *r)
{
    return r ? r->gap : NAN;
}

double psched_partition_objective(const psched_partition_result *r)
{
    return r ? r->objective : NAN;
}

double psched_partition_solve_time(const psched_partition_result *r)
{
    return r ? r->solve_time : NAN;
}

double psched_partition_min_memory(const psched_partition_result *r)
{
    return r ? r->min_memory : NAN;
}

uint32_t psched_partition_stages(const psched_partition_result *r)
{
    return r ? r->stages : 0;
}

psched_status psched_partition_stage(const psched_partition_result *r, uint32_t stage,
                                     uint32_t *first, uint32_t *count, double *time,
                                     double *memory)
{
    if (!r || stage >= r->stages)
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stage count (%u)", stage,
                           r ? r->stages : 0);
    if (!r->has_partition)
        return psched_fail(PSCHED_EINFEASIBLE, "no partition fits the memory limit");
    if (first)
        *first = r->first[stage];
    if (count)
        *count = r->count[stage];
    if (time)
        *time = r->stage_time[stage];
    if (memory)
        *memory = r->stage_mem[stage];
    return PSCHED_OK;
}

psched_recompute psched_partition_layer_recompute(const psched_partition_result *r,
                                                  uint32_t layer)
{
    if (!r || !r->has_partition || layer >= r->layers)
        return PSCHED_RECOMPUTE_NONE;
    return (psched_recompute)r->choice[layer];
}

const psched_plan *psched_partition_plan(const psched_partition_result *r)
{
    return r ? r->plan : NULL;
}

double psched_partition_makespan(const psched_partition_result *r)
{
    return r ? r->makespan : NAN;
}

double psched_partition_bubble_ratio(const psched_partition_result *r)
{
    return r ? r->bubble : NAN;
}

psched_status psched_partition_device(const psched_partition_result *r, uint32_t device,
                                      double *params, double *memory, double *peak_memory)
{
    if (!r || device >= r->devices)
        return psched_fail(PSCHED_EINVAL, "device (%u) must be < device count (%u)", device,
                           r ? r->devices : 0);
    if (!r->has_partition)
        return psched_fail(PSCHED_EINFEASIBLE, "no partition fits the memory limit");
    if (params)
        *params = r->dev_param[device];
    if (memory)
        *memory = r->dev_mem[device];
    if (peak_memory)
        *peak_memory = r->dev_peak[device];
    return PSCHED_OK;
}
