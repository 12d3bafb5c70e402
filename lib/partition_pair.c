/* The exact partitioner for two chunks per device.
 *
 * With loop placement device k holds stages k and p+k; with the V shape,
 * stages k and 2p-1-k. Two walkers go through the devices in order 0..p-1:
 * walker A covers stages 0..p-1 from layer 0 forwards, walker B covers the
 * second half (loop: forwards from the boundary `mid` where A will stop,
 * which the DP guesses; V: backwards from the last layer until it meets A).
 * A DP state is the pair of walker positions (and mid); its value is the
 * Pareto set of (largest device time, total recompute time) so far.
 *
 * Given its two ranges, a device's best recompute mix is the one with the
 * least extra time that fits its memory: that lowers both its time and the
 * total, so it is found per device by merging the two ranges' frontiers
 * and the DP stays exact.
 *
 * The search is bounded by a largest device time tau, raised pass by pass
 * from the average load until tau is high enough that no partition above it
 * can beat the best one found (iterative deepening): the early passes,
 * with tight bounds, are small. */
#include "partition.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pair_entry {
    uint32_t mid, a, b; /* loop: A must stop at mid; V: mid unused (0) */
    double tmax, extra;
    double smax;        /* largest stage time: breaks ties of the objective */
    int32_t parent;     /* entry index in the previous step */
    uint32_t len1, len2;
    int32_t k1, k2;     /* frontier points of the two ranges */
} pair_entry;

typedef struct pair_step {
    pair_entry *v;
    size_t n, cap;
} pair_step;

/* What one pass searches for. */
typedef struct pair_pass {
    const psched__problem *pb;
    bool backward;      /* V shape: walker B runs downwards */
    bool memory;        /* min-memory pass: tmax holds the largest memory */
    double tau;         /* bound on every device's time (or memory) */
    double bound;       /* prune entries whose objective bound exceeds it */
    uint32_t minlen;    /* 0 when empty stages are allowed, else 1 */
    double nmin;        /* fewest in-flight micro-batches of any stage */
    pair_step *steps;   /* p + 1 steps */
    size_t work;        /* transitions since the last deadline check */
    bool expired;
} pair_pass;

static const double rel_eps = 1e-9;

bool psched__pair_applies(const psched__problem *pb)
{
    uint32_t p = pb->devices;
    if (pb->chunks != 2 || pb->stages != 2 * p)
        return false;
    bool loop = true, vee = true;
    for (uint32_t k = 0; k < p; k++) {
        uint32_t d = pb->device_of[k];
        loop = loop && pb->device_of[p + k] == d;
        vee = vee && pb->device_of[2 * p - 1 - k] == d;
    }
    return loop || vee;
}

static bool layout_backward(const psched__problem *pb)
{
    uint32_t p = pb->devices;
    for (uint32_t k = 0; k < p; k++)
        if (pb->device_of[2 * p - 1 - k] != pb->device_of[k])
            return false;
    return true;
}

static psched_status step_push(pair_step *st, const pair_entry *e)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 1024;
        pair_entry *v = psched__reallocarray(st->v, cap, sizeof *v);
        if (!v)
            return PSCHED_ENOMEM_FAIL();
        st->v = v;
        st->cap = cap;
    }
    st->v[st->n++] = *e;
    return PSCHED_OK;
}

static int entry_cmp(const void *x, const void *y)
{
    const pair_entry *a = x, *b = y;
    if (a->mid != b->mid)
        return a->mid < b->mid ? -1 : 1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    if (a->tmax != b->tmax)
        return a->tmax < b->tmax ? -1 : 1;
    if (a->extra != b->extra)
        return a->extra < b->extra ? -1 : 1;
    if (a->smax != b->smax)
        return a->smax < b->smax ? -1 : 1;
    return 0;
}

/* Per state, keep the entries no other beats in tmax, extra and smax.
 * Sorted by tmax, an entry is dominated by a kept one of its state with
 * no more extra and no larger stage. */
static void step_prune(pair_step *st)
{
    qsort(st->v, st->n, sizeof *st->v, entry_cmp);
    size_t kept = 0, state = 0; /* first kept entry of the current state */
    for (size_t k = 0; k < st->n; k++) {
        const pair_entry *e = &st->v[k];
        if (kept == 0 || st->v[state].mid != e->mid || st->v[state].a != e->a ||
            st->v[state].b != e->b)
            state = kept;
        bool dominated = false;
        for (size_t q = state; q < kept && !dominated; q++)
            dominated = st->v[q].extra <= e->extra && st->v[q].smax <= e->smax;
        if (!dominated)
            st->v[kept++] = *e;
    }
    st->n = kept;
}

/* Least extra time of a device holding [i1, i1+l1) as stage s1 and
 * [i2, i2+l2) as stage s2 within the memory limit, merging the two
 * frontiers (extra ascending, activations descending); -1 when none fits. */
static double pair_extra(const psched__problem *pb, uint32_t s1, uint32_t i1, uint32_t l1,
                         uint32_t s2, uint32_t i2, uint32_t l2, int32_t *k1_out, int32_t *k2_out)
{
    uint32_t x1 = psched__front_index(pb, i1, l1), x2 = psched__front_index(pb, i2, l2);
    const psched__point *f1 = pb->front[x1], *f2 = pb->front[x2];
    uint32_t n1 = pb->front_len[x1], n2 = pb->front_len[x2];
    double budget = pb->limit * (1 + 1e-12) - psched__range_param(pb, i1, l1) -
                    psched__range_param(pb, i2, l2);
    double in1 = pb->inflight[s1], in2 = pb->inflight[s2], best = -1;
    uint32_t j = n2;
    for (uint32_t k = 0; k < n1; k++) {
        double rest = budget - in1 * f1[k].act;
        while (j > 0 && in2 * f2[j - 1].act <= rest)
            j--;
        if (j == n2 || in2 * f2[j].act > rest)
            continue;
        double e = f1[k].extra + f2[j].extra;
        if (best < 0 || e < best) {
            best = e;
            *k1_out = (int32_t)k;
            *k2_out = (int32_t)j;
        }
        if (j == 0)
            break; /* later points of f1 only add extra */
    }
    return best;
}

/* Layers the walkers still have to cover, and their base time (or lean
 * memory lower bound) after a transition to (mid, a, b). */
static void remaining(const pair_pass *ps, uint32_t mid, uint32_t a, uint32_t b, uint32_t *left_a,
                      uint32_t *left_b, double *load)
{
    const psched__problem *pb = ps->pb;
    uint32_t L = pb->layers;
    double nmin = ps->nmin;
    if (ps->backward) {
        *left_a = *left_b = b - a;
        *load = ps->memory ? pb->param_prefix[b] - pb->param_prefix[a] +
                                 nmin * (pb->minact_prefix[b] - pb->minact_prefix[a])
                           : pb->time_prefix[b] - pb->time_prefix[a];
        return;
    }
    *left_a = mid - a;
    *left_b = L - b;
    if (ps->memory)
        *load = pb->param_prefix[mid] - pb->param_prefix[a] + pb->param_prefix[L] -
                pb->param_prefix[b] +
                nmin * (pb->minact_prefix[mid] - pb->minact_prefix[a] + pb->minact_prefix[L] -
                        pb->minact_prefix[b]);
    else
        *load = pb->time_prefix[mid] - pb->time_prefix[a] + pb->time_prefix[L] -
                pb->time_prefix[b];
}

/* Lower bound of the objective (or of the largest memory) of any
 * completion of entry e after step k+1, or INFINITY when it cannot reach
 * the end: too few layers left for the remaining stages, or more load
 * than the remaining devices can take under tau. */
static double completion_bound(const pair_pass *ps, uint32_t k, const pair_entry *e)
{
    const psched__problem *pb = ps->pb;
    uint32_t r = pb->devices - k - 1, la, lb;
    double load;
    remaining(ps, e->mid, e->a, e->b, &la, &lb, &load);
    if (r == 0) {
        bool done = ps->backward ? e->a == e->b : (e->a == e->mid && e->b == pb->layers);
        if (!done)
            return INFINITY;
    } else if (ps->backward ? la < 2 * r * ps->minlen
                            : (la < r * ps->minlen || lb < r * ps->minlen)) {
        return INFINITY;
    }
    double avg = r ? load / r : 0;
    if (avg > ps->tau * (1 + rel_eps))
        return INFINITY;
    double z = fmax(e->tmax, avg);
    if (ps->memory)
        return z;
    return (pb->microbatches - 1.0) * z + pb->kappa * (pb->time_total + e->extra);
}

static bool tick(pair_pass *ps)
{
    if (++ps->work % 4096 == 0 && psched__expired(ps->pb))
        ps->expired = true;
    return ps->expired;
}

/* Cost of stage s's range [i, i+len) alone: its base time, or its lean
 * memory. Both only grow with the length. */
static double single_cost(const pair_pass *ps, uint32_t s, uint32_t i, uint32_t len)
{
    const psched__problem *pb = ps->pb;
    if (!ps->memory)
        return psched__range_time(pb, i, len);
    return psched__range_param(pb, i, len) +
           pb->inflight[s] * (pb->minact_prefix[i + len] - pb->minact_prefix[i]);
}

/* All transitions of one entry through device step k (frontier lengths
 * only bound time passes: min-memory passes run before the frontiers
 * exist). A device's cost
 * (time with its best recompute mix, or lean memory) only grows with
 * either range's length, hence the breaks. */
static psched_status expand(pair_pass *ps, uint32_t k, int32_t parent)
{
    const psched__problem *pb = ps->pb;
    const pair_entry *e = &ps->steps[k].v[parent];
    uint32_t p = pb->devices, L = pb->layers;
    uint32_t s1 = k, s2 = ps->backward ? 2 * p - 1 - k : p + k;
    uint32_t room_a = ps->backward ? e->b - e->a : e->mid - e->a;
    uint32_t max1 = ps->memory || pb->maxlen[e->a] > room_a ? room_a : pb->maxlen[e->a];
    double limit = ps->tau * (1 + rel_eps);
    for (uint32_t l1 = ps->minlen; l1 <= max1; l1++) {
        double cost1 = single_cost(ps, s1, e->a, l1);
        if (cost1 > limit)
            break;
        uint32_t room_b = ps->backward ? e->b - e->a - l1 : L - e->b;
        for (uint32_t l2 = ps->minlen; l2 <= room_b; l2++) {
            uint32_t i2 = ps->backward ? e->b - l2 : e->b;
            if ((!ps->memory && l2 > pb->maxlen[i2]) || tick(ps))
                break;
            double cost = cost1 + single_cost(ps, s2, i2, l2);
            if (cost > limit)
                break;
            pair_entry n = {e->mid, e->a + l1, ps->backward ? i2 : e->b + l2, 0, e->extra,
                            e->smax, parent, l1, l2, -1, -1};
            if (!ps->memory) {
                double x = pair_extra(pb, s1, e->a, l1, s2, i2, l2, &n.k1, &n.k2);
                if (x < 0 || cost + x > limit)
                    break;
                double x1 = pb->front[psched__front_index(pb, e->a, l1)][n.k1].extra;
                n.smax = fmax(n.smax, fmax(cost1 + x1, cost - cost1 + x - x1));
                cost += x;
                n.extra += x;
            }
            n.tmax = fmax(e->tmax, cost);
            double reach = completion_bound(ps, k, &n);
            if (reach == INFINITY || reach > ps->bound)
                continue;
            psched_status st = step_push(&ps->steps[k + 1], &n);
            if (st)
                return st;
        }
    }
    return PSCHED_OK;
}

static void pass_free(pair_pass *ps)
{
    if (ps->steps)
        for (uint32_t k = 0; k <= ps->pb->devices; k++)
            psched__dealloc(ps->steps[k].v);
    psched__dealloc(ps->steps);
    ps->steps = NULL;
}

/* One pass under bounds tau and `bound`. On return ps->steps[p] holds the
 * complete entries (unless ps->expired). */
static psched_status pass_run(pair_pass *ps)
{
    const psched__problem *pb = ps->pb;
    uint32_t p = pb->devices, L = pb->layers;
    ps->steps = psched__calloc(p + 1, sizeof *ps->steps);
    if (!ps->steps)
        return PSCHED_ENOMEM_FAIL();
    psched_status st = PSCHED_OK;
    /* Starting states: V: (0, L); loop: (mid, 0, mid) for every mid that
     * leaves both halves at least p layers. */
    ps->nmin = INFINITY;
    for (uint32_t s = 0; s < pb->stages; s++)
        ps->nmin = fmin(ps->nmin, pb->inflight[s]);
    uint32_t lo = ps->backward ? 0 : p * ps->minlen;
    uint32_t hi = ps->backward ? 0 : L >= lo ? L - lo : 0;
    for (uint32_t mid = lo; !st && mid <= hi && L >= 2 * lo; mid++) {
        pair_entry e = {mid, 0, ps->backward ? L : mid, 0, 0, 0, -1, 0, 0, -1, -1};
        st = step_push(&ps->steps[0], &e);
    }
    for (uint32_t k = 0; !st && k < p && !ps->expired; k++) {
        for (size_t q = 0; !st && q < ps->steps[k].n && !ps->expired; q++)
            st = expand(ps, k, (int32_t)q);
        step_prune(&ps->steps[k + 1]);
    }
    return st;
}

static double entry_value(const pair_pass *ps, const pair_entry *e)
{
    const psched__problem *pb = ps->pb;
    if (ps->memory)
        return e->tmax;
    return (pb->microbatches - 1.0) * e->tmax + pb->kappa * (pb->time_total + e->extra);
}

/* The best complete entry of the last step, or -1. Among entries whose
 * objective ties with the best, the one with the smallest largest stage:
 * the objective only sees device totals, and a device whose two stages are
 * far apart in time stalls its neighbours in the simulated schedule. */
static int32_t pass_best(const pair_pass *ps, double *value)
{
    const pair_step *last = &ps->steps[ps->pb->devices];
    int32_t best = -1;
    *value = INFINITY;
    for (size_t q = 0; q < last->n; q++)
        *value = fmin(*value, entry_value(ps, &last->v[q]));
    for (size_t q = 0; q < last->n; q++) {
        const pair_entry *e = &last->v[q];
        if (entry_value(ps, e) <= *value + rel_eps * fabs(*value) &&
            (best < 0 || e->smax < last->v[best].smax))
            best = (int32_t)q;
    }
    return best;
}

static void pass_rebuild(const pair_pass *ps, int32_t best, psched__solution *sol)
{
    const psched__problem *pb = ps->pb;
    uint32_t p = pb->devices;
    for (uint32_t k = p; k-- > 0;) {
        const pair_entry *e = &ps->steps[k + 1].v[best];
        const pair_entry *from = &ps->steps[k].v[e->parent];
        uint32_t s1 = k, s2 = ps->backward ? 2 * p - 1 - k : p + k;
        uint32_t i2 = ps->backward ? e->b : from->b;
        sol->first[s1] = from->a;
        sol->count[s1] = e->len1;
        sol->first[s2] = i2;
        sol->count[s2] = e->len2;
        psched__fill_choices(pb, from->a, e->len1, e->k1, sol->choice);
        psched__fill_choices(pb, i2, e->len2, e->k2, sol->choice);
        best = e->parent;
    }
    sol->found = true;
}

/* Bound of the next pass: geometric steps above the lower bound `lb`,
 * never beyond `cap` (the bound that settles the search). */
static double next_tau(double lb, double cap, int round)
{
    double tau = lb * (1 + 0.01 * ldexp(1.0, round));
    return round >= 12 || tau >= cap ? cap : tau;
}

psched_status psched__pair_solve(const psched__problem *pb, double incumbent,
                                 psched__solution *sol, psched__pair_outcome *out)
{
    double c = pb->microbatches - 1.0, kt = pb->kappa * pb->time_total;
    double lb = pb->time_total / pb->devices;
    for (uint32_t l = 0; l < pb->layers; l++)
        lb = fmax(lb, psched__range_time(pb, l, 1));
    memset(out, 0, sizeof *out);
    out->objective = incumbent;
    out->bound = c * lb + kt;
    psched_status st = PSCHED_OK;
    double smax = INFINITY; /* of the solution in sol */
    for (int round = 0; !st; round++) {
        double cap = c > 0 && isfinite(out->objective) ? (out->objective - kt) / c : INFINITY;
        double tau = c > 0 ? next_tau(lb, cap, round) : INFINITY;
        pair_pass ps = {pb, layout_backward(pb), false, tau, INFINITY,
                        pb->allow_empty ? 0u : 1u, 0, NULL, 0, false};
        ps.bound = out->objective * (1 + rel_eps);
        st = pass_run(&ps);
        if (!st && ps.expired) {
            pass_free(&ps);
            return PSCHED_OK;
        }
        double value = INFINITY;
        int32_t best = st ? -1 : pass_best(&ps, &value);
        double tie = rel_eps * fabs(out->objective);
        if (best >= 0 && (!out->found || value < out->objective - tie ||
                          (value <= out->objective + tie && ps.steps[pb->devices].v[best].smax < smax))) {
            pass_rebuild(&ps, best, sol);
            out->found = true;
            out->objective = fmin(value, out->objective);
            smax = ps.steps[pb->devices].v[best].smax;
        }
        pass_free(&ps);
        /* Every partition with device times up to tau has been seen; one
         * above tau costs more than c·tau + kt. */
        if (c > 0 && isfinite(tau))
            out->bound = fmin(out->objective, c * tau + kt);
        if (c > 0 && isfinite(out->objective))
            cap = (out->objective - kt) / c;
        if (!isfinite(tau) || tau >= cap * (1 - rel_eps)) {
            out->complete = true;
            out->bound = out->objective;
            break;
        }
    }
    return st;
}

psched_status psched__pair_min_memory(const psched__problem *pb, double *value)
{
    double nmin = INFINITY, lb = 0;
    for (uint32_t s = 0; s < pb->stages; s++)
        nmin = fmin(nmin, pb->inflight[s]);
    for (uint32_t l = 0; l < pb->layers; l++)
        lb = fmax(lb, psched__range_param(pb, l, 1) +
                          nmin * (pb->minact_prefix[l + 1] - pb->minact_prefix[l]));
    lb = fmax(lb, (pb->param_prefix[pb->layers] + nmin * pb->minact_prefix[pb->layers]) /
                      pb->devices);
    *value = NAN;
    /* First whether the limit itself is met, then (only when it is not)
     * the exact minimum from above it. */
    double floor = isfinite(pb->limit) ? fmax(lb, pb->limit) : lb;
    for (int round = -1; round <= 13; round++) {
        double cap = round < 0 ? floor : round == 13 ? INFINITY : floor * (1 + 0.01 * ldexp(1, round));
        pair_pass ps = {pb, layout_backward(pb), true, cap, cap * (1 + rel_eps),
                        pb->allow_empty ? 0u : 1u, 0, NULL, 0, false};
        psched_status st = pass_run(&ps);
        double best = INFINITY;
        if (!st && !ps.expired)
            pass_best(&ps, &best);
        bool expired = ps.expired;
        pass_free(&ps);
        if (st || expired)
            return st;
        if (best < INFINITY) {
            *value = best;
            return PSCHED_OK;
        }
    }
    *value = INFINITY;
    return PSCHED_OK;
}
