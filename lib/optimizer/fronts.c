/* Recompute frontiers: per layer range, the Pareto set of (extra
 * backward time, activation bytes) over its layers' recompute mixes,
 * built start by start (the stage DP holds one start at a time) or for
 * every start within a point cap (the two-chunk DP, the MILP). Part of the
 * partition problem; depends on nothing solver-side. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    const psched__group *g = psched__layer_group(pb, i + len - 1);
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
            if (param + pb->nmin * q.act > psched__room(pb) || base + q.extra > pb->tau_max)
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
psched_status psched__fronts_table(psched__problem *pb)
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
int32_t psched__first_fitting(const psched__problem *pb, uint32_t s, const psched__fronts *fr,
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
void psched__length_bounds(const psched__problem *pb, uint32_t s, const psched__fronts *fr,
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
