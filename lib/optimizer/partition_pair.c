/* The exact partitioner for two chunks per device.
 *
 * With loop placement device k holds stages k and p+k; with the V shape,
 * stages k and 2p-1-k. Two walkers go through the devices in order 0..p-1:
 * walker A covers stages 0..p-1 from layer 0 forwards, walker B covers the
 * second half (loop: forwards from the boundary `mid` where A will stop,
 * which the DP guesses; V: backwards from the last layer until it meets A).
 * The objective is (m-1)·z + kappa·(base time + recompute time) with
 * z = max(largest device time, lambda·largest stage time), so a DP state,
 * the pair of walker positions (and mid), keeps the Pareto set of
 * (z so far, recompute time so far).
 *
 * Given its two ranges, a device's useful recompute mixes are those that
 * fit its memory and that no other beats in both extra time and its own z;
 * they are found by merging the two ranges' frontiers, so the DP stays
 * exact.
 *
 * The search is bounded by tau >= z, raised pass by pass from the average
 * load until no partition above tau can beat the best one found (iterative
 * deepening): the early passes, with tight bounds, are small, and a pass
 * after one that found nothing better only looks for z above the last tau
 * (that bounds the recompute time a better partition may have). */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pair_entry {
    uint32_t mid, a, b; /* loop: A must stop at mid; V: mid unused (0) */
    double z;           /* largest device time and lambda·stage time so far
                           (min-memory passes: the largest device memory) */
    double extra;       /* recompute time so far */
    double smax;        /* largest stage time: breaks ties of the objective */
    int32_t parent;     /* entry index in the previous step */
    uint32_t len1, len2;
    int32_t k1, k2;     /* frontier points of the two ranges */
    int32_t next;       /* next entry of the same state while building */
    bool dead;          /* beaten by a later entry of its state */
} pair_entry;

/* The entries of one device step. While the step is built, a hash table
 * maps each state (mid, a, b) to its chain of entries, so an entry beaten
 * by one of its state is dropped at once and a beaten one is marked dead;
 * then the step is compacted. */
typedef struct pair_step {
    pair_entry *v;
    size_t n, cap;
    int32_t *slot;      /* head entry of a state, or -1 */
    size_t slots, states;
} pair_step;

/* A device's recompute mix for its two ranges: frontier points k1, k2,
 * their total extra time and the larger of the two stage times. */
typedef struct pair_choice {
    double extra, smax, z; /* z: max(device time, lambda·smax) */
    int32_t k1, k2;
} pair_choice;

/* What one pass searches for. */
typedef struct pair_pass {
    const psched__problem *pb;
    bool backward;      /* V shape: walker B runs downwards */
    bool memory;        /* min-memory pass */
    double tau;         /* bound on every device's time (or memory) */
    double bound;       /* prune entries whose objective bound exceeds it */
    double z_done;      /* earlier passes saw every partition whose largest
                           device time (or lambda·stage) is at most this, so
                           a better one lies above it */
    uint32_t minlen;    /* 0 when empty stages are allowed, else 1 */
    double *nrest;      /* per step k: fewest in-flight micro-batches of the
                           stages of devices k..p-1 */
    pair_step *steps;   /* p + 1 steps */
    pair_choice *choices; /* scratch for one device's mixes */
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

static size_t state_hash(const pair_entry *e, size_t mask)
{
    uint64_t h = ((uint64_t)e->mid * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)e->a << 32 | e->b);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return (size_t)(h ^ (h >> 32)) & mask;
}

static bool same_state(const pair_entry *x, const pair_entry *y)
{
    return x->mid == y->mid && x->a == y->a && x->b == y->b;
}

/* x is at least as good as y: no larger z and extra (the objective's
 * only inputs), and on an exact tie no larger stage. */
static bool beats(const pair_entry *x, const pair_entry *y)
{
    if (x->z > y->z || x->extra > y->extra)
        return false;
    return x->z < y->z || x->extra < y->extra || x->smax <= y->smax;
}

static size_t find_slot(const pair_step *st, const pair_entry *e)
{
    size_t mask = st->slots - 1, h = state_hash(e, mask);
    while (st->slot[h] >= 0 && !same_state(&st->v[st->slot[h]], e))
        h = (h + 1) & mask;
    return h;
}

static psched_status grow_slots(pair_step *st)
{
    size_t slots = st->slots ? 2 * st->slots : 1024;
    int32_t *old = st->slot;
    size_t old_slots = st->slots;
    st->slot = psched__reallocarray(NULL, slots, sizeof *st->slot);
    if (!st->slot) {
        st->slot = old;
        return PSCHED_ENOMEM_FAIL();
    }
    st->slots = slots;
    for (size_t h = 0; h < slots; h++)
        st->slot[h] = -1;
    for (size_t h = 0; h < old_slots; h++)
        if (old[h] >= 0)
            st->slot[find_slot(st, &st->v[old[h]])] = old[h];
    psched__dealloc(old);
    return PSCHED_OK;
}

/* Add e to its state unless an entry of the state beats it; entries it
 * beats are marked dead. */
static psched_status step_insert(pair_step *st, const pair_entry *e)
{
    psched_status rc;
    if ((st->states + 1) * 2 > st->slots && (rc = grow_slots(st)))
        return rc;
    pair_entry *v = psched__grow(st->v, &st->cap, st->n, sizeof *st->v, 1024);
    if (!v)
        return PSCHED_ENOMEM_FAIL();
    st->v = v;
    size_t h = find_slot(st, e);
    int32_t head = st->slot[h];
    for (int32_t q = head; q >= 0; q = st->v[q].next)
        if (!st->v[q].dead && beats(&st->v[q], e))
            return PSCHED_OK;
    for (int32_t q = head; q >= 0; q = st->v[q].next)
        if (beats(e, &st->v[q]))
            st->v[q].dead = true;
    st->v[st->n] = *e;
    st->v[st->n].next = head;
    st->v[st->n].dead = false;
    st->slot[h] = (int32_t)st->n++;
    st->states += head < 0;
    return PSCHED_OK;
}

/* Drop the dead entries and the table once the step is complete. */
static void step_finish(pair_step *st)
{
    size_t kept = 0;
    for (size_t q = 0; q < st->n; q++)
        if (!st->v[q].dead)
            st->v[kept++] = st->v[q];
    st->n = kept;
    psched__dealloc(st->slot);
    st->slot = NULL;
    st->slots = st->states = 0;
}

/* The mixes of a device holding [i1, i1+l1) as stage s1 and [i2, i2+l2)
 * as stage s2 that fit its memory and that no other fitting mix beats in
 * both extra time and z = max(device time, lambda·larger stage). Frontiers are sorted by extra
 * ascending, activations descending, so for each point of the first the
 * fastest fitting point of the second is found by one pointer moving
 * down; any slower point of the second would be beaten by it. Returns the
 * number of mixes written to out (0: none fits). */
static uint32_t pair_choices(const psched__problem *pb, uint32_t s1, uint32_t i1, uint32_t l1,
                             uint32_t s2, uint32_t i2, uint32_t l2, pair_choice *out)
{
    uint32_t n1, n2, n = 0;
    const psched__point *f1 = psched__front(&pb->table[i1], l1, &n1);
    const psched__point *f2 = psched__front(&pb->table[i2], l2, &n2);
    double budget = psched__room(pb) - psched__range_param(pb, i1, l1) -
                    psched__range_param(pb, i2, l2);
    double base1 = psched__range_time(pb, i1, l1), base2 = psched__range_time(pb, i2, l2);
    double in1 = pb->inflight[s1], in2 = pb->inflight[s2];
    uint32_t j = n2;
    for (uint32_t k = 0; k < n1; k++) {
        double rest = budget - in1 * f1[k].act;
        while (j > 0 && in2 * f2[j - 1].act <= rest)
            j--;
        if (j == n2 || in2 * f2[j].act > rest)
            continue;
        pair_choice c = {f1[k].extra + f2[j].extra,
                         fmax(base1 + f1[k].extra, base2 + f2[j].extra), 0, (int32_t)k,
                         (int32_t)j};
        c.z = fmax(base1 + base2 + c.extra, pb->lambda * c.smax);
        bool beaten = false;
        uint32_t kept = 0;
        for (uint32_t q = 0; q < n && !beaten; q++)
            beaten = out[q].extra <= c.extra && out[q].z <= c.z;
        if (beaten)
            continue;
        for (uint32_t q = 0; q < n; q++)
            if (!(c.extra <= out[q].extra && c.z <= out[q].z))
                out[kept++] = out[q];
        out[kept++] = c;
        n = kept;
        if (j == 0)
            break; /* later points of f1 only add time to stage s1 */
    }
    return n;
}

static double entry_value(const pair_pass *ps, const pair_entry *e)
{
    const psched__problem *pb = ps->pb;
    if (ps->memory)
        return e->z;
    return (pb->microbatches - 1.0) * e->z + pb->kappa * (pb->time_total + e->extra);
}

/* Sum of a prefix array over the layers the walkers still have to cover
 * after reaching (mid, a, b). */
static double left_sum(const pair_pass *ps, const double *prefix, const pair_entry *e)
{
    if (ps->backward)
        return prefix[e->b] - prefix[e->a];
    return prefix[e->mid] - prefix[e->a] + prefix[ps->pb->layers] - prefix[e->b];
}

/* Lower bound of the objective (or of the largest memory) of any
 * completion of entry e after step k+1, or INFINITY when it cannot reach
 * the end: too few layers left for the remaining stages, more time than
 * the remaining devices can take under tau, or more parameters and lean
 * activations than their memory holds. */
static double completion_bound(const pair_pass *ps, uint32_t k, const pair_entry *e)
{
    const psched__problem *pb = ps->pb;
    uint32_t r = pb->devices - k - 1;
    uint32_t la = ps->backward ? e->b - e->a : e->mid - e->a;
    uint32_t lb = ps->backward ? la : pb->layers - e->b;
    if (r == 0) {
        bool done = ps->backward ? e->a == e->b : (e->a == e->mid && e->b == pb->layers);
        return done ? entry_value(ps, e) : INFINITY;
    }
    if (ps->backward ? la < 2 * r * ps->minlen : (la < r * ps->minlen || lb < r * ps->minlen))
        return INFINITY;
    double mem = left_sum(ps, pb->param_prefix, e) +
                 ps->nrest[k + 1] * left_sum(ps, pb->minact_prefix, e);
    if (!ps->memory && mem > r * pb->limit * (1 + rel_eps))
        return INFINITY;
    double avg = (ps->memory ? mem : left_sum(ps, pb->time_prefix, e)) / r;
    if (avg > ps->tau * (1 + rel_eps))
        return INFINITY;
    if (ps->memory)
        return fmax(e->z, avg);
    double z = fmax(e->z, fmax(avg, ps->z_done));
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
    return psched__lean_memory(pb, s, i, len);
}

/* Smallest second-range length from which the layers left after device
 * step k can still fit in the remaining devices' time (or memory) under
 * tau; the load left only shrinks as the range grows, so binary search. */
static uint32_t first_len2(const pair_pass *ps, uint32_t k, const pair_entry *e, uint32_t l1,
                           uint32_t lo, uint32_t hi)
{
    const psched__problem *pb = ps->pb;
    uint32_t r = pb->devices - k - 1;
    if (r == 0)
        return ps->backward ? (e->b - e->a - l1 >= lo ? e->b - e->a - l1 : hi + 1)
                            : (pb->layers - e->b >= lo ? pb->layers - e->b : hi + 1);
    /* Memory passes bound the parameters left only (a lower bound). */
    const double *prefix = ps->memory ? pb->param_prefix : pb->time_prefix;
    double cap = r * ps->tau * (1 + rel_eps);
    uint32_t a = e->a + l1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        double left = ps->backward ? prefix[e->b - mid] - prefix[a]
                                   : prefix[e->mid] - prefix[a] + prefix[pb->layers] -
                                         prefix[e->b + mid];
        if (left > cap)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* All transitions of one entry through device step k (frontier lengths
 * only bound time passes: min-memory passes run before the frontiers
 * exist). A device's cost (time with its fastest fitting mix, or lean
 * memory) only grows with either range's length, hence the breaks. */
static psched_status expand(pair_pass *ps, uint32_t k, int32_t parent)
{
    const psched__problem *pb = ps->pb;
    const pair_entry *e = &ps->steps[k].v[parent];
    uint32_t p = pb->devices, L = pb->layers;
    uint32_t s1 = k, s2 = ps->backward ? 2 * p - 1 - k : p + k;
    uint32_t room_a = ps->backward ? e->b - e->a : e->mid - e->a;
    uint32_t max1 = ps->memory || pb->table[e->a].maxlen > room_a ? room_a : pb->table[e->a].maxlen;
    double limit = ps->tau * (1 + rel_eps);
    for (uint32_t l1 = ps->minlen; l1 <= max1; l1++) {
        double cost1 = single_cost(ps, s1, e->a, l1);
        if (cost1 > limit)
            break;
        uint32_t room_b = ps->backward ? e->b - e->a - l1 : L - e->b;
        if (room_b < ps->minlen)
            break;
        uint32_t l2_lo = first_len2(ps, k, e, l1, ps->minlen, room_b);
        for (uint32_t l2 = l2_lo; l2 <= room_b; l2++) {
            uint32_t i2 = ps->backward ? e->b - l2 : e->b;
            if ((!ps->memory && l2 > pb->table[i2].maxlen) || tick(ps))
                break;
            double cost2 = single_cost(ps, s2, i2, l2), cost = cost1 + cost2;
            if (cost > limit)
                break;
            /* Positions alone (no recompute yet) already bound every mix:
             * skip before merging frontiers. */
            double zdev = ps->memory ? cost : fmax(cost, pb->lambda * fmax(cost1, cost2));
            pair_entry probe = {e->mid, e->a + l1, ps->backward ? i2 : e->b + l2,
                                fmax(e->z, zdev), e->extra, 0, parent, l1, l2, -1, -1, -1, false};
            double reach0 = completion_bound(ps, k, &probe);
            if (reach0 == INFINITY || reach0 > ps->bound || zdev > limit)
                continue;
            pair_choice lean = {0, 0, cost, -1, -1}, *choice = &lean;
            uint32_t nc = 1;
            if (!ps->memory) {
                choice = ps->choices;
                nc = pair_choices(pb, s1, e->a, l1, s2, i2, l2, choice);
                double fastest = INFINITY;
                for (uint32_t q = 0; q < nc; q++)
                    fastest = fmin(fastest, choice[q].extra);
                if (nc == 0 || cost + fastest > limit)
                    break;
            }
            for (uint32_t q = 0; q < nc; q++) {
                const pair_choice *c = &choice[q];
                pair_entry n = {e->mid, e->a + l1, ps->backward ? i2 : e->b + l2,
                                fmax(e->z, c->z), e->extra + c->extra, fmax(e->smax, c->smax),
                                parent, l1, l2, c->k1, c->k2, -1, false};
                if (c->z > limit)
                    continue;
                double reach = completion_bound(ps, k, &n);
                if (reach == INFINITY || reach > ps->bound)
                    continue;
                psched_status st = step_insert(&ps->steps[k + 1], &n);
                if (st)
                    return st;
            }
        }
    }
    return PSCHED_OK;
}

static void pass_free(pair_pass *ps)
{
    psched__dealloc(ps->nrest);
    ps->nrest = NULL;
    psched__dealloc(ps->choices);
    ps->choices = NULL;
    if (ps->steps)
        for (uint32_t k = 0; k <= ps->pb->devices; k++) {
            psched__dealloc(ps->steps[k].v);
            psched__dealloc(ps->steps[k].slot);
        }
    psched__dealloc(ps->steps);
    ps->steps = NULL;
}

/* One pass under bounds tau and `bound`. On return ps->steps[p] holds the
 * complete entries (unless ps->expired). */
static psched_status pass_run(pair_pass *ps)
{
    const psched__problem *pb = ps->pb;
    uint32_t p = pb->devices, L = pb->layers;
    uint32_t widest = ps->memory || !pb->table ? 1 : pb->widest;
    ps->steps = psched__calloc(p + 1, sizeof *ps->steps);
    ps->choices = psched__calloc(widest, sizeof *ps->choices);
    if (!ps->steps || !ps->choices)
        return PSCHED_ENOMEM_FAIL();
    psched_status st = PSCHED_OK;
    /* Starting states: V: (0, L); loop: (mid, 0, mid) for every mid that
     * leaves both halves at least p layers. */
    ps->nrest = psched__calloc(p + 1, sizeof *ps->nrest);
    if (!ps->nrest)
        return PSCHED_ENOMEM_FAIL();
    ps->nrest[p] = INFINITY;
    for (uint32_t k = p; k-- > 0;) {
        uint32_t s2 = ps->backward ? 2 * p - 1 - k : p + k;
        ps->nrest[k] = fmin(ps->nrest[k + 1], fmin(pb->inflight[k], pb->inflight[s2]));
    }
    uint32_t lo = ps->backward ? 0 : p * ps->minlen;
    uint32_t hi = ps->backward ? 0 : L >= lo ? L - lo : 0;
    for (uint32_t mid = lo; !st && mid <= hi && L >= 2 * lo; mid++) {
        pair_entry e = {mid, 0, ps->backward ? L : mid, 0, 0, 0, -1, 0, 0, -1, -1, -1, false};
        st = step_insert(&ps->steps[0], &e);
    }
    step_finish(&ps->steps[0]);
    for (uint32_t k = 0; !st && k < p && !ps->expired; k++) {
        for (size_t q = 0; !st && q < ps->steps[k].n && !ps->expired; q++)
            st = expand(ps, k, (int32_t)q);
        step_finish(&ps->steps[k + 1]);
    }
    return st;
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
        psched__fill_choices(&pb->table[from->a], e->len1, e->k1, sol->choice);
        psched__fill_choices(&pb->table[i2], e->len2, e->k2, sol->choice);
        best = e->parent;
    }
    sol->found = true;
}

/* Bound of the next pass: geometric steps above the lower bound `lb`,
 * never beyond `cap` (the bound that settles the search). */
static double next_tau(double lb, double cap, int round)
{
    double tau = lb * (1 + 0.01 * pow(1.5, round));
    return round >= 20 || tau >= cap ? cap : tau;
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
    double z_done = 0;
    for (int round = 0; !st; round++) {
        double cap = c > 0 && isfinite(out->objective) ? (out->objective - kt) / c : INFINITY;
        double tau = c > 0 ? next_tau(lb, cap, round) : INFINITY;
        pair_pass ps = {pb, layout_backward(pb), false, tau, INFINITY, z_done,
                        pb->allow_empty ? 0u : 1u, NULL, NULL, NULL, 0, false};
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
        if (c > 0 && isfinite(tau)) {
            out->bound = fmin(out->objective, c * tau + kt);
            z_done = tau;
        }
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
        pair_pass ps = {pb, layout_backward(pb), true, cap, cap * (1 + rel_eps), 0,
                        pb->allow_empty ? 0u : 1u, NULL, NULL, NULL, 0, false};
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
