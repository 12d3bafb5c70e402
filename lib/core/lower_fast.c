/*
 * The fast path of comm lowering (issue 13): the same output as lower.c's
 * rendezvous lowering, op for op and flag for flag, for the common case,
 * without its intermediate structures. Like execute.c's fast path it
 * answers "here is the lowered schedule" or "not mine" (false, no error
 * set), and psched_lower_comm_ex() then runs the general lowering, which
 * finds the same answer or names the failure. It takes:
 *   - rendezvous mode, a schedule of compute ops only without overlapped
 *     pairs (so a unit is one op), and costs the compute fast path
 *     (psched__execute_fast) times: the times are then bit-identical to
 *     the general engine's, and the schedule is valid;
 *   - every transfer whose key needs no tie-break: its consumer does not
 *     end at the key's time (a zero-cost consumer with t_comm = 0 would;
 *     the general lowering then orders by the global order's rank). So the
 *     global order (lower.c's heap) is never needed: every rank is
 *     UINT32_MAX, and "unit u ends before the key" is end[u] <= time.
 * What it computes is lower.c's, step by step: the key of a transfer is
 * transfer_key()'s search (the same idle_until() steps, the same fallback
 * after IDLE_SEARCH_STEPS), a comm op's gap is the number of its device's
 * ops ending by the key, a gap's comm ops are sorted by (key, RECV after
 * SEND, transfer) with transfers numbered in their consumer's list order,
 * and ops of one gap with equal keys form a batched group.
 *
 * Layout: no per-transfer arrays. Device by device, each of its ops that
 * consumes from or produces for another device yields a comm op on this
 * device (a transfer's key is so computed once on each side); they are
 * sorted by gap (counting sort: most gaps hold zero to two) and written
 * straight into the result's op array, sized exactly beforehand (every
 * (stage, micro-batch) has one F and one backward, so the transfers are
 * 2 x micro-batches x the chain edges that cross devices). Working memory:
 * the simulated times, a (F, backward) position per (stage, micro-batch)
 * and one device's comm ops.
 */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "execute.h"
#include "memadvise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* lower.c's IDLE_SEARCH_STEPS: the same search, the same cut-off */
#define FAST_IDLE_STEPS 16

typedef struct fast_rec {
    double time;
    uint32_t gap, transfer; /* transfer: its consumer's global index */
    uint32_t stage, mb;
    uint16_t chunk;
    uint8_t kind, recv;
} fast_rec;

typedef struct lf {
    const psched_schedule *s;
    const psched_op *ops;
    const size_t *offset;
    uint32_t S;
    double comm;
    const double *start, *end;
    uint32_t *posf, *posb; /* [mb*S + stage]: global index of its F, its backward */
    uint32_t *stage_device;
    uint8_t *stage_flags;  /* PSCHED_EXEC_FIRST / LAST */
    fast_rec *recs, *sorted;
    uint32_t *count;       /* [gap + 2] counting sort */
} lf;

/* Number of ops of device d (global [first, last)) ending by t: what
 * lower.c's gap_before() returns with rank UINT32_MAX, searched the same
 * way (galloping out from `hint`, then a binary search of the bracket). */
static inline uint32_t ending_by(const lf *f, size_t first, size_t last, double t, size_t hint)
{
    const double *end = f->end;
    size_t lo = first, hi = last;
    hint = hint < lo ? lo : hint > hi ? hi : hint;
    if (hint < hi && end[hint] <= t) {
        size_t step = 1;
        lo = hint + 1;
        while (hi - hint > step && end[hint + step] <= t) {
            lo = hint + step + 1;
            step *= 2;
        }
        if (hi - hint > step)
            hi = hint + step;
    } else {
        size_t step = 1;
        hi = hint;
        while (hint - lo >= step && !(end[hint - step] <= t)) {
            hi = hint - step;
            step *= 2;
        }
        if (hint - lo >= step)
            lo = hint - step + 1;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (end[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)(lo - first);
}

/* lower.c's idle_until() on device [first, last). */
static inline double idle_until(const lf *f, size_t first, size_t last, double t, double span,
                                size_t hint)
{
    size_t u = first + ending_by(f, first, last, t, hint);
    double gap_start = u > first ? f->end[u - 1] : -INFINITY;
    double gap_end = u < last ? f->start[u] : INFINITY;
    double latest = gap_end - span < t ? gap_end - span : t;
    if (latest >= gap_start)
        return latest;
    return f->start[u - 1] - span;
}

/* lower.c's transfer_key() for producer p on device a, consumer c on
 * device b; false when the key would need the rank tie-break. */
static inline bool key_of(const lf *f, uint32_t p, uint32_t a, uint32_t c, uint32_t b,
                          double *time)
{
    size_t a0 = f->offset[a], a1 = f->offset[a + 1], b0 = f->offset[b], b1 = f->offset[b + 1];
    double comm = f->comm, lo = f->end[p];
    double when = f->start[c] - comm;
    int step = 0;
    for (; step < FAST_IDLE_STEPS && when >= lo; step++) {
        double ta = idle_until(f, a0, a1, when, comm, p);
        double tb = idle_until(f, b0, b1, when, comm, c);
        if (ta == when && tb == when)
            break;
        when = ta < tb ? ta : tb;
    }
    if (step == FAST_IDLE_STEPS || when < lo) {
        when = lo;
        if (c > b0 && f->end[c - 1] > when)
            when = f->end[c - 1];
    }
    *time = when;
    return f->end[c] != when;
}

/* The comm ops of device d, in rec order; returns how many, or -1 when the
 * schedule is not the fast path's. */
static long device_recs(lf *f, uint32_t d)
{
    const psched_op *ops = f->ops;
    uint32_t S = f->S;
    size_t first = f->offset[d], last = f->offset[d + 1];
    long n = 0;
    for (size_t g = first; g < last; g++) {
        const psched_op *o = &ops[g];
        uint32_t s = o->stage;
        size_t cell = (size_t)o->microbatch * S + s;
        uint8_t fl = f->stage_flags[s];
        uint32_t in = PSCHED_EXEC_NONE, out = PSCHED_EXEC_NONE, from = 0, to = 0;
        bool fwd = o->kind == PSCHED_OP_F;
        if (fwd) {
            if (!(fl & PSCHED_EXEC_FIRST) && (from = f->stage_device[s - 1]) != d)
                in = f->posf[cell - 1];
            if (!(fl & PSCHED_EXEC_LAST) && (to = f->stage_device[s + 1]) != d)
                out = f->posf[cell + 1];
        } else if (o->kind != PSCHED_OP_W) {
            if (!(fl & PSCHED_EXEC_LAST) && (from = f->stage_device[s + 1]) != d)
                in = f->posb[cell + 1];
            if (!(fl & PSCHED_EXEC_FIRST) && (to = f->stage_device[s - 1]) != d)
                out = f->posb[cell - 1];
        }
        double time;
        if (in != PSCHED_EXEC_NONE) {
            /* a RECV before this op: the consumer */
            if (!key_of(f, in, from, (uint32_t)g, d, &time))
                return -1;
            f->recs[n++] = (fast_rec){time, ending_by(f, first, last, time, g), (uint32_t)g,
                                      s, o->microbatch, o->chunk,
                                      fwd ? PSCHED_OP_RECV_F : PSCHED_OP_RECV_B, 1};
        }
        if (out != PSCHED_EXEC_NONE) {
            /* a SEND after this op: the producer */
            if (!key_of(f, (uint32_t)g, d, out, to, &time))
                return -1;
            f->recs[n++] = (fast_rec){time, ending_by(f, first, last, time, g), out,
                                      s, o->microbatch, o->chunk,
                                      fwd ? PSCHED_OP_SEND_F : PSCHED_OP_SEND_B, 0};
        }
    }
    return n;
}

/* lower.c's rec_cmp within one gap (every rank UINT32_MAX). */
static inline bool rec_before(const fast_rec *a, const fast_rec *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    if (a->recv != b->recv)
        return a->recv < b->recv;
    return a->transfer < b->transfer;
}

/* Device d's ops with its comm ops in their gaps, written at `at`; returns
 * the end. */
static psched_op *emit_device(lf *f, uint32_t d, long n, psched_op *at)
{
    size_t first = f->offset[d], len = f->offset[d + 1] - first;
    uint32_t *count = f->count;
    memset(count, 0, (len + 3) * sizeof *count);
    for (long i = 0; i < n; i++)
        count[f->recs[i].gap + 2]++;
    for (size_t g = 0; g <= len; g++)
        count[g + 2] += count[g + 1];
    for (long i = 0; i < n; i++) {
        const fast_rec *r = &f->recs[i];
        f->sorted[count[r->gap + 1]++] = *r;
    }
    /* count[g + 1] is now the end of gap g; sort each gap's few recs */
    uint32_t begin = 0;
    for (size_t g = 0; g <= len; g++) {
        uint32_t stop = count[g + 1];
        for (uint32_t i = begin + 1; i < stop; i++) {
            fast_rec x = f->sorted[i];
            uint32_t j = i;
            while (j > begin && rec_before(&x, &f->sorted[j - 1])) {
                f->sorted[j] = f->sorted[j - 1];
                j--;
            }
            f->sorted[j] = x;
        }
        for (uint32_t i = begin; i < stop; i++) {
            const fast_rec *r = &f->sorted[i];
            bool batch = i + 1 < stop && f->sorted[i + 1].time == r->time;
            *at++ = (psched_op){r->stage, r->mb, r->chunk, r->kind,
                                (uint8_t)(batch ? PSCHED_OP_BATCH_NEXT : 0)};
        }
        begin = stop;
        if (g < len)
            *at++ = f->ops[first + g];
    }
    return at;
}

static void lf_free(lf *f)
{
    psched__dealloc((void *)f->start);
    psched__dealloc((void *)f->end);
    psched__dealloc(f->posf);
    psched__dealloc(f->posb);
    psched__dealloc(f->stage_device);
    psched__dealloc(f->stage_flags);
    psched__dealloc(f->recs);
    psched__dealloc(f->sorted);
    psched__dealloc(f->count);
}

bool psched__lower_fast(const psched_schedule *s, const psched_plan *costs,
                        psched_schedule **lowered)
{
    const psched_plan *plan = s->plan;
    uint32_t p = s->devices, S = plan->devices * plan->chunks;
    uint32_t mbs = psched__plan_chain_mbs(plan);
    size_t total = s->offset[p], cells = (size_t)S * mbs;
    if (total >= UINT32_MAX || cells > 4 * total + 4096)
        return false;
    size_t widest = 0;
    for (uint32_t d = 0; d < p; d++)
        if (s->offset[d + 1] - s->offset[d] > widest)
            widest = s->offset[d + 1] - s->offset[d];
    lf f = {.s = s, .ops = s->ops, .offset = s->offset, .S = S,
            .comm = (costs ? costs : plan)->comm};
    double *start = psched__malloc_array_huge(total + 1, sizeof *start);
    double *end = psched__malloc_array_huge(total + 1, sizeof *end);
    f.start = start;
    f.end = end;
    bool ok = start && end && psched__execute_fast(s, costs, start, end, NULL);
    psched_schedule *out = NULL;
    psched_plan *clone = NULL;
    if (ok) {
        f.posf = psched__malloc_array_huge(cells + 1, sizeof *f.posf);
        f.posb = psched__malloc_array_huge(cells + 1, sizeof *f.posb);
        f.stage_device = psched__reallocarray(NULL, (size_t)S + 1, sizeof *f.stage_device);
        f.stage_flags = psched__reallocarray(NULL, (size_t)S + 1, sizeof *f.stage_flags);
        f.recs = psched__reallocarray(NULL, 2 * widest + 1, sizeof *f.recs);
        f.sorted = psched__reallocarray(NULL, 2 * widest + 1, sizeof *f.sorted);
        f.count = psched__reallocarray(NULL, widest + 3, sizeof *f.count);
        ok = f.posf && f.posb && f.stage_device && f.stage_flags && f.recs && f.sorted &&
             f.count;
    }
    size_t transfers = 0;
    if (ok) {
        /* the fast engine accepted it: every op a compute op on its stage's
         * device, every cell one F and one backward */
        uint32_t per = S / (plan->chains ? plan->chains : 1);
        for (uint32_t st = 0; st < S; st++) {
            f.stage_device[st] = psched_plan_stage_device(plan, st);
            f.stage_flags[st] = (uint8_t)((st % per == 0 ? PSCHED_EXEC_FIRST : 0) |
                                          (st % per == per - 1 ? PSCHED_EXEC_LAST : 0));
        }
        for (uint32_t st = 0; st + 1 < S; st++)
            if (!(f.stage_flags[st] & PSCHED_EXEC_LAST) &&
                f.stage_device[st] != f.stage_device[st + 1])
                transfers += 2 * (size_t)mbs;
        for (size_t g = 0; g < total && ok; g++) {
            const psched_op *o = &s->ops[g];
            size_t cell = (size_t)o->microbatch * S + o->stage;
            if (o->flags)
                ok = false; /* an overlapped pair: not the fast path's */
            else if (o->kind == PSCHED_OP_F)
                f.posf[cell] = (uint32_t)g;
            else if (o->kind != PSCHED_OP_W)
                f.posb[cell] = (uint32_t)g;
        }
    }
    if (ok) {
        out = psched__calloc(1, sizeof *out);
        ok = out && psched_plan_clone(plan, &clone) == PSCHED_OK;
    }
    if (ok) {
        out->plan = clone;
        out->devices = p;
        out->offset = psched__reallocarray(NULL, (size_t)p + 1, sizeof *out->offset);
        out->ops = psched__malloc_array_huge(total + 2 * transfers + 1, sizeof *out->ops);
        ok = out->offset && out->ops;
    }
    if (ok) {
        psched_op *at = out->ops;
        for (uint32_t d = 0; d < p && ok; d++) {
            out->offset[d] = (size_t)(at - out->ops);
            long n = device_recs(&f, d);
            if (n < 0)
                ok = false;
            else
                at = emit_device(&f, d, n, at);
        }
        out->offset[p] = (size_t)(at - out->ops);
        ok = ok && out->offset[p] == total + 2 * transfers;
    }
    lf_free(&f);
    if (!ok) {
        if (out) {
            psched__dealloc(out->offset);
            psched__dealloc(out->ops);
            psched__dealloc(out);
        }
        psched_plan_destroy(clone);
        return false;
    }
    snprintf(out->name, sizeof out->name, "%s", s->name);
    out->lower_mode = PSCHED_LOWER_RENDEZVOUS;
    *lowered = out;
    return true;
}
