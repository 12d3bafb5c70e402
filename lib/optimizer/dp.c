/* The exact DPs of one chunk per device: the stage DP over Pareto sets
 * of (largest stage time, recompute time), and the min-max split (by time:
 * PipeDream's baseline; by lean memory: the smallest fitting memory). */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    psched__length_bounds(pb, s, fr, &lo, &hi);
    for (uint32_t len = lo; len <= hi; len++) {
        int32_t k = psched__first_fitting(pb, s, fr, len, budget);
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
psched_status psched__stage_dp(const psched__problem *pb, psched__solution *sol, bool *complete)
{
    size_t width = (size_t)pb->layers + 1, cells = ((size_t)pb->stages + 1) * width;
    dp_list *lists = psched__calloc(cells, sizeof *lists);
    psched__fronts fr = {0};
    if (!lists)
        return PSCHED_ENOMEM_FAIL();
    psched_status st = dp_push(&lists[0], (dp_state){0, 0, 0, -1, -1});
    double budget = psched__room(pb) / pb->chunks;
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
double psched__minmax_split(const psched__problem *pb, bool memory, psched__solution *sol,
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
                double c = memory ? psched__lean_memory(pb, s, i, len)
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

/* Largest device memory, every layer at its leanest variant, of the
 * split that minimizes the largest stage's (a quick witness that a limit
 * is met, for every layout). With @p sol, that partition: the split and
 * each layer's leanest variant (the first of the kinds on a tie, so no
 * recompute where it saves nothing). */
psched_status psched__lean_split(const psched__problem *pb, psched__solution *sol, double *out)
{
    psched__solution own;
    psched__solution *x = sol ? sol : &own;
    psched_status st = sol ? PSCHED_OK : psched__solution_init(&own, pb->stages, pb->layers);
    double *dev = psched__calloc(pb->devices, sizeof *dev);
    if (!st && !dev)
        st = PSCHED_ENOMEM_FAIL();
    *out = INFINITY;
    x->found = false;
    if (!st && psched__minmax_split(pb, true, x, &st) < INFINITY && !st) {
        *out = 0;
        for (uint32_t s = 0; s < pb->stages; s++)
            dev[pb->device_of[s]] += psched__lean_memory(pb, s, x->first[s], x->count[s]);
        for (uint32_t d = 0; d < pb->devices; d++)
            *out = fmax(*out, dev[d]);
        for (uint32_t l = 0; l < pb->layers; l++)
            x->choice[l] = psched__lean_kind(psched__layer_group(pb, l));
    }
    psched__dealloc(dev);
    if (!sol)
        psched__solution_free(&own);
    return st;
}
