/* The smallest memory any split fits in, exactly, and a split that fits
 * in it, when the layers between the first and the last are identical
 * (docs/optimizer.md, the Status paragraph of "Optimal for the simulated
 * step time").
 *
 * Every layer at its leanest variant, stage s holding n_s of the run's
 * identical layers takes n_s·w_s on its device, w_s = param + inflight[s]
 * · act, plus the first layer on stage 0 and the last on stage S − 1 when
 * they differ from the run (the run's shape, psched__run_shape()). Any
 * counts n_s >= lo_s summing to the run's length are a split (lo_s = 1,
 * but 0 on a stage holding a different first or last layer), so device d
 * at its stages' least counts takes m_d, and each further layer costs it
 * at least its cheapest stage's w, c_d, and exactly that when every
 * further layer goes there. The least largest device over the E = run −
 * Σ lo_s further layers is then that of E identical units over devices
 * whose memory after k of them is m_d + k·c_d: any allocation's largest
 * device is at least max(max m_d, the E-th smallest of the values m_d +
 * k·c_d, k >= 1) (its E units' values are E of them, and a device's
 * values rise with k), and giving each unit in turn to the device least
 * after taking it takes exactly the E smallest. This replaces, on these
 * models, the MILP over every stage's ranges (four chunks per device,
 * Chimera, DualPipe's two chains), which often could not prove the
 * minimum in its share of the time and left it unknown (the grid's L =
 * 80, p = 8 interleaved v = 4 at 1 byte: 12.6 s, no figure; now 157.5 at
 * once), and its split is the witness a tight limit needs (the methods
 * that minimise time found none at L = 32, p = 4 interleaved v = 4 and
 * limits 120 and 121, where it fits). */
#include "optimizer.h"
#include "pathbound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Device d's memory after one more of its further layers. */
static double next_value(const double *base, const double *cheap, const uint32_t *taken,
                         uint32_t d)
{
    return base[d] + (double)(taken[d] + 1) * cheap[d];
}

static void swap_u32(uint32_t *a, uint32_t *b)
{
    uint32_t t = *a;
    *a = *b;
    *b = t;
}

psched_status psched__run_min_memory(const psched__problem *pb, psched__solution *sol,
                                     double *out, bool *done)
{
    psched__run run;
    uint32_t S = pb->stages, D = pb->devices, L = pb->layers;
    *done = false;
    if (!psched__run_shape(pb, &run) || run.count < S - (uint32_t)run.head - (uint32_t)run.tail)
        return PSCHED_OK;
    double *base = psched__calloc(D, sizeof *base), *cheap = psched__calloc(D, sizeof *cheap);
    uint32_t *at = psched__calloc(D, sizeof *at); /* each device's cheapest stage */
    uint32_t *heap = psched__calloc(D, sizeof *heap), *taken = psched__calloc(D, sizeof *taken);
    bool ok = base && cheap && at && heap && taken;
    for (uint32_t d = 0; ok && d < D; d++)
        cheap[d] = INFINITY;
    uint32_t extra = run.count;
    for (uint32_t s = 0; ok && s < S; s++) {
        uint32_t d = pb->device_of[s];
        double w = psched__lean_memory(pb, s, run.first, 1); /* one run layer */
        bool head = s == 0 && run.head, tail = s == S - 1 && run.tail;
        /* its one layer: the different first or last, or a run layer */
        if (head || tail) {
            base[d] += psched__lean_memory(pb, s, head ? 0 : L - 1, 1);
        } else {
            base[d] += w;
            extra--;
        }
        if (w < cheap[d]) {
            cheap[d] = w;
            at[d] = s;
        }
    }
    double top = 0;
    /* a binary heap of the devices by their memory after one more layer;
     * each further layer to its first */
    for (uint32_t d = 0; ok && d < D; d++) {
        top = fmax(top, base[d]);
        uint32_t k = d;
        heap[k] = d;
        while (k > 0 && next_value(base, cheap, taken, heap[(k - 1) / 2]) >
                            next_value(base, cheap, taken, heap[k])) {
            swap_u32(&heap[k], &heap[(k - 1) / 2]);
            k = (k - 1) / 2;
        }
    }
    for (uint32_t e = 0; ok && e < extra; e++) {
        top = fmax(top, next_value(base, cheap, taken, heap[0]));
        taken[heap[0]]++;
        for (uint32_t k = 0;;) {
            uint32_t c = 2 * k + 1;
            if (c >= D)
                break;
            if (c + 1 < D && next_value(base, cheap, taken, heap[c + 1]) <
                                 next_value(base, cheap, taken, heap[c]))
                c++;
            if (!(next_value(base, cheap, taken, heap[c]) < next_value(base, cheap, taken, heap[k])))
                break;
            swap_u32(&heap[k], &heap[c]);
            k = c;
        }
    }
    if (ok && sol) {
        /* the split: least counts, each device's further layers on its
         * cheapest stage; every layer at its leanest variant */
        uint32_t a = 0;
        for (uint32_t s = 0; s < S; s++) {
            uint32_t d = pb->device_of[s];
            /* one layer each (a run layer, or the different first or
             * last: S >= 2), and the device's further layers */
            uint32_t n = 1 + (at[d] == s ? taken[d] : 0);
            sol->first[s] = a;
            sol->count[s] = n;
            a += n;
        }
        for (uint32_t l = 0; l < L; l++)
            sol->choice[l] = psched__lean_kind(psched__layer_group(pb, l));
        sol->found = a == L; /* (the counts hold every layer) */
    }
    psched__dealloc(base);
    psched__dealloc(cheap);
    psched__dealloc(at);
    psched__dealloc(heap);
    psched__dealloc(taken);
    if (!ok)
        return PSCHED_ENOMEM_FAIL();
    *out = top;
    *done = true;
    return PSCHED_OK;
}

/* The smallest memory of any model, by a depth-first search over the
 * stage boundaries in stage order (docs/optimizer.md, the Status
 * paragraph of "Optimal for the simulated step time"). A node has stages
 * 0..k-1 placed and stage k starting at layer b; it is cut when no split
 * of layers [b, L) over stages k..S-1 can keep every device below the best
 * largest device found. Two bounds, each over every such split:
 *
 * - volume: every layer left lands on some stage >= k, so it costs at
 *   least param + n·act with n the least in-flight count of those stages;
 *   the devices with stages left must absorb that sum below the best.
 * - count: device d ends with at least one layer on each of its r_d
 *   stages >= k: layer b on stage k, layer L-1 on stage S-1, and on every
 *   other stage one of the layers between at no less than their least
 *   param plus the stage's in-flight count times their least activation.
 *   Its further layers cost at least the cheapest layers left at d's least
 *   in-flight count, so it takes at most r_d + j_d layers, j_d the most
 *   of those whose sum fits the room left. The devices must take all L - b.
 *   Then kind by kind (mm_kinds_fit()): the devices must find room for
 *   every layer of each kind.
 *
 * They prove the minimum at once where one layer more or less on a device
 * decides it and the layers come in runs of a kind (a few dense layers
 * before the MoE ones); where kinds alternate on many devices, the splits
 * that differ only in where the light layers go are too many for these
 * fractional bounds, and the search may stop before its proof. Stopped
 * at its step cap or after a third of the time left (but never before
 * 2^14 steps), its best split is still a split (the witness a tight limit
 * needs) but not a proof. */
/* Caps: the prefix-sum tables' doubles, the steps of one search (a
 * second or two), and the steps it may take whatever the clock says (a
 * millisecond: enough for small models after the deadline, as the closed
 * form). */
enum { MM_TABLE_MAX = 1u << 20, MM_KINDS = 16 /* kinds of layer counted one by one */ };
#define MM_STEP_MAX ((uint64_t)1 << 26)
#define MM_STEP_FREE ((uint64_t)1 << 14)

typedef struct mm_search {
    const psched__problem *pb;
    uint32_t S, D, L, V, stride;
    double *nval;      /* V distinct in-flight counts, ascending */
    uint32_t *least;   /* (S+1) x D: index in nval of d's least count on stages >= k */
    uint32_t *rem;     /* (S+1) x D: d's stages >= k */
    uint32_t *mid;     /* (S+1) x D: d's stages strictly between k and S-1 */
    double *mid_n;     /* (S+1) x D: their in-flight counts' sum */
    double *nmin_all;  /* S+1: least in-flight count of the stages >= k */
    double *pmin, *amin; /* L+1: least param, least leanest activation of layers >= i */
    double *cheap;     /* tables x V x (L+1): prefix sums of the ascending costs of layers
                          >= t·stride at nval[x] */
    double *load;      /* D */
    double *left;      /* D: each device's room for its further layers, at a node */
    uint32_t K;        /* kinds of layer (param, leanest activation); 0: more than MM_KINDS */
    uint32_t *kind_left; /* (L+1) x MM_KINDS: layers of each kind at or after l */
    double kind_param[MM_KINDS], kind_act[MM_KINDS];
    uint32_t *cut, *best_cut; /* S+1 boundaries */
    double best, below;
    uint64_t steps, cap;
    double deadline;
    bool stopped;
} mm_search;


static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint32_t value_index(const mm_search *s, double n)
{
    uint32_t lo = 0, hi = s->V - 1;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (s->nval[mid] < n)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool mm_prepare(mm_search *s)
{
    const psched__problem *pb = s->pb;
    uint32_t S = s->S, D = s->D, L = s->L;
    size_t SD = (size_t)(S + 1) * D;
    s->nval = psched__calloc(S, sizeof *s->nval);
    s->least = psched__calloc(SD, sizeof *s->least);
    s->rem = psched__calloc(SD, sizeof *s->rem);
    s->mid = psched__calloc(SD, sizeof *s->mid);
    s->mid_n = psched__calloc(SD, sizeof *s->mid_n);
    s->nmin_all = psched__calloc(S + 1, sizeof *s->nmin_all);
    s->pmin = psched__calloc(L + 1, sizeof *s->pmin);
    s->amin = psched__calloc(L + 1, sizeof *s->amin);
    s->load = psched__calloc(D, sizeof *s->load);
    s->left = psched__calloc(D, sizeof *s->left);
    s->kind_left = psched__calloc(((size_t)L + 1) * MM_KINDS, sizeof *s->kind_left);
    s->cut = psched__calloc(S + 1, sizeof *s->cut);
    s->best_cut = psched__calloc(S + 1, sizeof *s->best_cut);
    if (!s->nval || !s->least || !s->rem || !s->mid || !s->mid_n || !s->nmin_all || !s->pmin ||
        !s->amin || !s->load || !s->cut || !s->best_cut || !s->left || !s->kind_left)
        return false;
    /* the kinds of layer, and how many of each are left from each layer */
    s->K = 0;
    for (uint32_t l = L; l-- > 0;) {
        double param = psched__range_param(pb, l, 1);
        double act = pb->minact_prefix[l + 1] - pb->minact_prefix[l];
        uint32_t x = 0;
        while (x < s->K && !(s->kind_param[x] == param && s->kind_act[x] == act))
            x++;
        if (x == MM_KINDS) {
            s->K = 0; /* too many kinds: no count by kind */
            break;
        }
        if (x == s->K) {
            s->kind_param[x] = param;
            s->kind_act[x] = act;
            s->K++;
        }
        uint32_t *row = &s->kind_left[(size_t)l * MM_KINDS];
        memcpy(row, row + MM_KINDS, MM_KINDS * sizeof *row);
        row[x]++;
    }
    memcpy(s->nval, pb->inflight, S * sizeof *s->nval);
    qsort(s->nval, S, sizeof *s->nval, cmp_double);
    s->V = 0;
    for (uint32_t i = 0; i < S; i++)
        if (s->V == 0 || s->nval[i] != s->nval[s->V - 1])
            s->nval[s->V++] = s->nval[i];
    s->nmin_all[S] = INFINITY;
    for (uint32_t k = S; k-- > 0;) {
        double *row = &s->mid_n[(size_t)k * D];
        uint32_t *least = &s->least[(size_t)k * D], *rem = &s->rem[(size_t)k * D],
                 *mid = &s->mid[(size_t)k * D];
        memcpy(rem, &s->rem[(size_t)(k + 1) * D], D * sizeof *rem);
        memcpy(least, &s->least[(size_t)(k + 1) * D], D * sizeof *least);
        /* stages strictly between k and S-1: those of k+1 plus k+1 itself */
        memcpy(mid, &s->mid[(size_t)(k + 1) * D], D * sizeof *mid);
        memcpy(row, &s->mid_n[(size_t)(k + 1) * D], D * sizeof *row);
        if (k + 1 < S - 1) {
            mid[pb->device_of[k + 1]]++;
            row[pb->device_of[k + 1]] += pb->inflight[k + 1];
        }
        uint32_t d = pb->device_of[k], x = value_index(s, pb->inflight[k]);
        if (rem[d] == 0 || x < least[d])
            least[d] = x;
        rem[d]++;
        s->nmin_all[k] = fmin(s->nmin_all[k + 1], pb->inflight[k]);
    }
    s->pmin[L] = s->amin[L] = INFINITY;
    for (uint32_t l = L; l-- > 0;) {
        s->pmin[l] = fmin(s->pmin[l + 1], psched__range_param(pb, l, 1));
        s->amin[l] = fmin(s->amin[l + 1], pb->minact_prefix[l + 1] - pb->minact_prefix[l]);
    }
    /* one table per stride-th suffix start: a table for an earlier start
     * holds more layers, so its cheapest are no dearer (still a bound) */
    size_t row = (size_t)L + 1, per = (size_t)s->V * row;
    s->stride = (uint32_t)((per * row + MM_TABLE_MAX - 1) / MM_TABLE_MAX);
    if (s->stride == 0)
        s->stride = 1;
    size_t tables = L / s->stride + 1;
    s->cheap = psched__calloc(tables * per, sizeof *s->cheap);
    if (!s->cheap)
        return false;
    for (size_t t = 0; t < tables; t++) {
        uint32_t from = (uint32_t)t * s->stride;
        for (uint32_t x = 0; x < s->V; x++) {
            double *ps = &s->cheap[t * per + x * row];
            for (uint32_t l = from; l < L; l++)
                ps[1 + l - from] = psched__lean_memory_at(pb, s->nval[x], l, 1);
            qsort(ps + 1, L - from, sizeof *ps, cmp_double);
            for (uint32_t j = 1; j <= L - from; j++)
                ps[j] += ps[j - 1];
        }
    }
    return true;
}

static void mm_release(mm_search *s)
{
    psched__dealloc(s->nval);
    psched__dealloc(s->least);
    psched__dealloc(s->rem);
    psched__dealloc(s->mid);
    psched__dealloc(s->mid_n);
    psched__dealloc(s->nmin_all);
    psched__dealloc(s->pmin);
    psched__dealloc(s->amin);
    psched__dealloc(s->cheap);
    psched__dealloc(s->load);
    psched__dealloc(s->left);
    psched__dealloc(s->kind_left);
    psched__dealloc(s->cut);
    psched__dealloc(s->best_cut);
}

/* The count bound kind by kind: the layers of one kind strictly between b
 * and the last must each find room. On device d such a layer costs at
 * least c = param + n·act at d's least in-flight count n, or, as one of
 * the d's mid[d] stages' own layers (already counted at the least param
 * and activation), at least the difference δ to that; so d takes at most
 * y layers of the kind, the most with min(y, mid)·δ + max(0, y - mid)·c
 * below its room. Where a few heavy layers (MoE among dense ones) decide
 * the minimum, the count bound above let every device fill up with the
 * light ones. */
static bool mm_kinds_fit(const mm_search *s, uint32_t k, uint32_t b)
{
    uint32_t S = s->S, D = s->D, L = s->L, end = k < S - 1 ? L - 1 : L, others = b + 1;
    if (s->K < 2 || others >= end)
        return true;
    const uint32_t *rem = &s->rem[(size_t)k * D], *mid = &s->mid[(size_t)k * D],
                   *least = &s->least[(size_t)k * D];
    const uint32_t *at = &s->kind_left[(size_t)others * MM_KINDS],
                   *past = &s->kind_left[(size_t)end * MM_KINDS];
    for (uint32_t x = 0; x < s->K; x++) {
        uint64_t want = at[x] - past[x], can = 0;
        for (uint32_t d = 0; d < D && can < want && want > 0; d++) {
            if (rem[d] == 0)
                continue;
            double n = s->nval[least[d]], left = s->left[d] * (1 + 1e-9);
            double c = s->kind_param[x] + n * s->kind_act[x];
            double delta = s->kind_param[x] - s->pmin[others] +
                           n * (s->kind_act[x] - s->amin[others]);
            double y;
            if (!(c > 0)) {
                y = (double)want;
            } else if (mid[d] && delta > 0 && left < mid[d] * delta) {
                y = floor(left / delta);
            } else {
                double room = left - mid[d] * fmax(0, delta);
                y = mid[d] + floor(room / c);
            }
            can += y < (double)want ? (uint64_t)y : want;
        }
        if (can < want)
            return false;
    }
    return true;
}

/* Can layers [b, L) on stages k..S-1 (k < S) leave every device below M? */
static bool mm_may_fit(const mm_search *s, uint32_t k, uint32_t b, double M)
{
    const psched__problem *pb = s->pb;
    uint32_t S = s->S, D = s->D, L = s->L;
    const uint32_t *rem = &s->rem[(size_t)k * D], *mid = &s->mid[(size_t)k * D],
                   *least = &s->least[(size_t)k * D];
    const double *mid_n = &s->mid_n[(size_t)k * D];
    double room = 0;
    for (uint32_t d = 0; d < D; d++) {
        if (rem[d] == 0 && !(s->load[d] < M))
            return false;
        if (rem[d])
            room += M - s->load[d];
    }
    double volume = psched__range_param(pb, b, L - b) +
                    s->nmin_all[k] * (pb->minact_prefix[L] - pb->minact_prefix[b]);
    if (!(volume < room))
        return false;
    uint32_t others = b + 1, t = others / s->stride, from = t * s->stride;
    size_t row = (size_t)L + 1;
    /* every device's one layer on each of its stages first: any device
     * that cannot take them cuts the node */
    for (uint32_t d = 0; d < D; d++) {
        if (rem[d] == 0)
            continue;
        double must = 0;
        if (mid[d])
            must += mid[d] * s->pmin[others] + mid_n[d] * s->amin[others];
        if (pb->device_of[k] == d)
            must += psched__lean_memory(pb, k, b, 1);
        if (k < S - 1 && pb->device_of[S - 1] == d)
            must += psched__lean_memory(pb, S - 1, L - 1, 1);
        s->left[d] = M - s->load[d] - must;
        if (!(s->left[d] > 0))
            return false;
    }
    uint64_t total = 0;
    for (uint32_t d = 0; d < D && total < L - b; d++) {
        if (rem[d] == 0)
            continue;
        /* the most further layers whose cheapest sum stays below left */
        const double *ps = &s->cheap[((size_t)t * s->V + least[d]) * row];
        uint32_t lo = 0, hi = L - from;
        while (lo < hi) {
            uint32_t j = (lo + hi + 1) / 2;
            if (ps[j] < s->left[d])
                lo = j;
            else
                hi = j - 1;
        }
        total += rem[d] + lo;
    }
    return total >= L - b && mm_kinds_fit(s, k, b);
}

/* One step (a node, or a stage end tried at one): false until the cap,
 * or the deadline after the free steps, stops the search. */
static bool mm_step(mm_search *s)
{
    if (++s->steps > s->cap ||
        ((s->steps & 1023) == 0 && s->steps > MM_STEP_FREE && psched__now() > s->deadline))
        s->stopped = true;
    return s->stopped;
}

static void mm_dive(mm_search *s, uint32_t k, uint32_t b)
{
    const psched__problem *pb = s->pb;
    if (mm_step(s))
        return;
    if (k == s->S) {
        double top = 0;
        for (uint32_t d = 0; d < s->D; d++)
            top = fmax(top, s->load[d]);
        if (top < s->below) {
            s->best = top;
            s->below = top * (1 - 1e-12);
            memcpy(s->best_cut, s->cut, (s->S + 1) * sizeof *s->cut);
        }
        return;
    }
    uint32_t d = pb->device_of[k], last = s->L - (s->S - 1 - k);
    for (uint32_t e = k == s->S - 1 ? s->L : b + 1; e <= last && !mm_step(s); e++) {
        double c = psched__lean_memory(pb, k, b, e - b);
        if (!(s->load[d] + c < s->below))
            break;
        s->load[d] += c;
        s->cut[k + 1] = e;
        if (k + 1 == s->S || mm_may_fit(s, k + 1, e, s->below))
            mm_dive(s, k + 1, e);
        s->load[d] -= c;
    }
}

psched_status psched__search_min_memory(const psched__problem *pb, psched__solution *sol,
                                        double *out, bool *done)
{
    uint32_t S = pb->stages, L = pb->layers;
    *done = false;
    *out = NAN;
    if (pb->allow_empty || S == 0 || L < S)
        return PSCHED_OK;
    double now = psched__now();
    mm_search s = {.pb = pb, .S = S, .D = pb->devices, .L = L, .best = INFINITY,
                   .below = INFINITY, .cap = MM_STEP_MAX,
                   .deadline = now + fmax(0, pb->deadline - now) / 3};
    if (!mm_prepare(&s)) {
        mm_release(&s);
        return PSCHED_ENOMEM_FAIL();
    }
    s.cut[0] = 0;
    if (mm_may_fit(&s, 0, 0, INFINITY))
        mm_dive(&s, 0, 0);
    if (isfinite(s.best)) {
        *out = s.best;
        *done = !s.stopped;
        for (uint32_t k = 0; k < S; k++) {
            sol->first[k] = s.best_cut[k];
            sol->count[k] = s.best_cut[k + 1] - s.best_cut[k];
        }
        for (uint32_t l = 0; l < L; l++)
            sol->choice[l] = psched__lean_kind(psched__layer_group(pb, l));
        sol->found = true;
    }
    mm_release(&s);
    return PSCHED_OK;
}
