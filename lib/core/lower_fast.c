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

/* One comm op of the device being lowered: 16 bytes, since the ones kept
 * for a later device are written to and read back from memory. */
typedef struct fast_rec {
    double time;  /* its transfer's key */
    uint32_t gap; /* before the gap-th op of the device; REC_RECV: a RECV */
    uint32_t op;  /* the op it belongs to: its producer (SEND), consumer (RECV) */
} fast_rec;

#define REC_RECV 0x80000000u

typedef struct lf {
    const psched_schedule *s;
    const psched_op *ops;
    const size_t *offset;
    uint32_t S;
    double comm;
    /* simulated end of every op: as floats when every end is one exactly
     * (integer costs, say: half the memory), else as doubles */
    const float *endf;
    const double *endd;
    /* bit g: op g starts later than its device's previous end (0 first) */
    const uint64_t *idle;
    /* [2*(mb*S + stage)]: the place of its F on its device, [+1]: of its
     * backward; 16 bits when every device has fewer than 65535 ops */
    uint16_t *pos16;
    uint32_t *pos32;
    uint32_t *stage_device;
    uint8_t *stage_flags;  /* PSCHED_EXEC_FIRST / LAST */
    fast_rec *recs, *sorted;
    uint32_t *count;       /* [gap + 2] counting sort */
    size_t widest;         /* most ops on one device */
    /* A transfer's key is computed once, on the first of its two devices
     * lowered; the comm op it gives the other device waits in that
     * device's part of the result, not written yet (a device whose part
     * could not hold them all computes its keys itself: keep[d] false). */
    psched_op *out;        /* the result's ops */
    size_t *out_first;     /* [d]: first op of device d in the result */
    uint32_t *kept;        /* [d]: comm ops waiting there */
    bool *keep;
} lf;

/* Global index of the F (back = 0) or the backward (1) of a cell on
 * device d. */
static inline uint32_t pos_at(const lf *f, size_t cell, int back, uint32_t d)
{
    size_t i = 2 * cell + (size_t)back;
    return (uint32_t)f->offset[d] + (f->pos16 ? f->pos16[i] : f->pos32[i]);
}

static inline double end_at(const lf *f, size_t g)
{
    return f->endf ? (double)f->endf[g] : f->endd[g];
}

/* Number of ops of device d (global [first, last)) ending by t: what
 * lower.c's gap_before() returns with rank UINT32_MAX, searched the same
 * way (galloping out from `hint`, then a binary search of the bracket). */
static inline uint32_t ending_by(const lf *f, size_t first, size_t last, double t, size_t hint)
{
    size_t lo = first, hi = last;
    hint = hint < lo ? lo : hint > hi ? hi : hint;
    /* the answer is next to the hint as a rule: the hint or the op after it */
    if (hint == first || end_at(f, hint - 1) <= t) {
        if (hint == last || !(end_at(f, hint) <= t))
            return (uint32_t)(hint - first);
        if (hint + 1 == last || !(end_at(f, hint + 1) <= t))
            return (uint32_t)(hint + 1 - first);
    }
    if (hint < hi && end_at(f, hint) <= t) {
        size_t step = 1;
        lo = hint + 1;
        while (hi - hint > step && end_at(f, hint + step) <= t) {
            lo = hint + step + 1;
            step *= 2;
        }
        if (hi - hint > step)
            hi = hint + step;
    } else {
        size_t step = 1;
        hi = hint;
        while (hint - lo >= step && !(end_at(f, hint - step) <= t)) {
            hi = hint - step;
            step *= 2;
        }
        if (hint - lo >= step)
            lo = hint - step + 1;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (end_at(f, mid) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)(lo - first);
}

/* The simulated start of op g of device d: what the compute fast path
 * computed (and start[] held), with the same operations in the same order:
 * the device's previous end (0 first), raised to each input's end (+
 * t_comm from another device). Inputs on the device itself ended by the
 * previous end, so only the one from another stage's device is looked up. */
static inline double start_of(const lf *f, size_t g, size_t first, uint32_t d)
{
    double ready = g > first ? end_at(f, g - 1) : 0;
    if (!(f->idle[g / 64] >> (g % 64) & 1))
        return ready;
    const psched_op *o = &f->ops[g];
    uint32_t s = o->stage;
    size_t cell = (size_t)o->microbatch * f->S + s;
    uint8_t fl = f->stage_flags[s];
    uint32_t in, dd;
    if (o->kind == PSCHED_OP_F) {
        if (fl & PSCHED_EXEC_FIRST)
            return ready;
        dd = f->stage_device[s - 1];
        in = pos_at(f, cell - 1, 0, dd);
    } else if (o->kind != PSCHED_OP_W) {
        if (fl & PSCHED_EXEC_LAST)
            return ready;
        dd = f->stage_device[s + 1];
        in = pos_at(f, cell + 1, 1, dd);
    } else {
        return ready;
    }
    double t = end_at(f, in);
    if (dd != d)
        t += f->comm;
    return t > ready ? t : ready;
}

/* lower.c's idle_until() on device d, ops [first, last). */
static inline double idle_until(const lf *f, uint32_t d, size_t first, size_t last, double t,
                                double span, size_t hint, uint32_t *gap)
{
    *gap = ending_by(f, first, last, t, hint);
    size_t u = first + *gap;
    double gap_start = u > first ? end_at(f, u - 1) : -INFINITY;
    double gap_end = u < last ? start_of(f, u, first, d) : INFINITY;
    double latest = gap_end - span < t ? gap_end - span : t;
    if (latest >= gap_start)
        return latest;
    return start_of(f, u - 1, first, d) - span;
}

/* lower.c's transfer_key() for producer p on device a, consumer c on
 * device b, with the gaps of its SEND on a and its RECV on b (the ops of
 * the device ending by the key); false when the key would need the rank
 * tie-break. */
static inline bool key_of(const lf *f, uint32_t p, uint32_t a, uint32_t c, uint32_t b,
                          double *time, uint32_t *gap_a, uint32_t *gap_b)
{
    size_t a0 = f->offset[a], a1 = f->offset[a + 1], b0 = f->offset[b], b1 = f->offset[b + 1];
    double comm = f->comm, lo = end_at(f, p);
    double when = start_of(f, c, b0, b) - comm;
    bool found = false; /* the search stopped at a time both are idle: the gaps are its */
    int step = 0;
    for (; step < FAST_IDLE_STEPS && when >= lo; step++) {
        double ta = idle_until(f, a, a0, a1, when, comm, p, gap_a);
        double tb = idle_until(f, b, b0, b1, when, comm, c, gap_b);
        if (ta == when && tb == when) {
            found = true;
            break;
        }
        when = ta < tb ? ta : tb;
    }
    if (step == FAST_IDLE_STEPS || when < lo) {
        when = lo;
        if (c > b0 && end_at(f, c - 1) > when)
            when = end_at(f, c - 1);
        found = false;
    }
    if (!found) {
        *gap_a = ending_by(f, a0, a1, when, p);
        *gap_b = ending_by(f, b0, b1, when, c);
    }
    *time = when;
    return end_at(f, c) != when;
}

/* Leaves rec r for device e in e's part of the result. */
static void keep_for(lf *f, uint32_t e, const fast_rec *r)
{
    memcpy((char *)(f->out + f->out_first[e]) + (size_t)f->kept[e]++ * sizeof *r, r, sizeof *r);
}

/* The comm ops of device d (those kept for it first); returns how many,
 * or -1 when the schedule is not the fast path's. */
static long device_recs(lf *f, uint32_t d, long *kept)
{
    const psched_op *ops = f->ops;
    uint32_t S = f->S;
    size_t first = f->offset[d], last = f->offset[d + 1];
    long n = 0;
    bool mine = f->keep[d]; /* what earlier devices computed for this one is there */
    if (mine) {
        memcpy(f->recs, f->out + f->out_first[d], (size_t)f->kept[d] * sizeof *f->recs);
        n = f->kept[d];
    }
    *kept = n;
    for (size_t g = first; g < last; g++) {
        const psched_op *o = &ops[g];
        uint32_t s = o->stage;
        size_t cell = (size_t)o->microbatch * S + s;
        uint8_t fl = f->stage_flags[s];
        uint32_t in = PSCHED_EXEC_NONE, out = PSCHED_EXEC_NONE, from = 0, to = 0;
        bool fwd = o->kind == PSCHED_OP_F;
        if (fwd) {
            if (!(fl & PSCHED_EXEC_FIRST) && (from = f->stage_device[s - 1]) != d)
                in = pos_at(f, cell - 1, 0, from);
            if (!(fl & PSCHED_EXEC_LAST) && (to = f->stage_device[s + 1]) != d)
                out = pos_at(f, cell + 1, 0, to);
        } else if (o->kind != PSCHED_OP_W) {
            if (!(fl & PSCHED_EXEC_LAST) && (from = f->stage_device[s + 1]) != d)
                in = pos_at(f, cell + 1, 1, from);
            if (!(fl & PSCHED_EXEC_FIRST) && (to = f->stage_device[s - 1]) != d)
                out = pos_at(f, cell - 1, 1, to);
        }
        double time;
        uint32_t gap_a, gap_b;
        if (in != PSCHED_EXEC_NONE && !(from < d && mine)) {
            /* a RECV before this op: the consumer */
            if (!key_of(f, in, from, (uint32_t)g, d, &time, &gap_a, &gap_b))
                return -1;
            f->recs[n++] = (fast_rec){time, gap_b | REC_RECV, (uint32_t)g};
            if (from > d && f->keep[from]) {
                fast_rec send = {time, gap_a, in};
                keep_for(f, from, &send);
            }
        }
        if (out != PSCHED_EXEC_NONE && !(to < d && mine)) {
            /* a SEND after this op: the producer */
            if (!key_of(f, (uint32_t)g, d, out, to, &time, &gap_a, &gap_b))
                return -1;
            f->recs[n++] = (fast_rec){time, gap_a, (uint32_t)g};
            if (to > d && f->keep[to]) {
                fast_rec recv = {time, gap_b | REC_RECV, out};
                keep_for(f, to, &recv);
            }
        }
    }
    return n;
}

/* lower.c's rec_cmp on one device (every rank UINT32_MAX). */
/* The transfer of a comm op, numbered as lower.c numbers them: by its
 * consumer's global index (a SEND's is looked up only on a tie). */
static uint32_t transfer_of(const lf *f, const fast_rec *r)
{
    if (r->gap & REC_RECV)
        return r->op;
    const psched_op *o = &f->ops[r->op];
    size_t cell = (size_t)o->microbatch * f->S + o->stage;
    if (o->kind == PSCHED_OP_F)
        return pos_at(f, cell + 1, 0, f->stage_device[o->stage + 1]);
    return pos_at(f, cell - 1, 1, f->stage_device[o->stage - 1]);
}

static inline bool rec_before(const lf *f, const fast_rec *a, const fast_rec *b)
{
    uint32_t ga = a->gap & ~REC_RECV, gb = b->gap & ~REC_RECV;
    if (ga != gb)
        return ga < gb;
    if (a->time != b->time)
        return a->time < b->time;
    if ((a->gap ^ b->gap) & REC_RECV)
        return !(a->gap & REC_RECV); /* SEND first */
    return transfer_of(f, a) < transfer_of(f, b);
}

/* Insertion sort of r[lo, hi) by rec_before; false when it would move
 * more than `budget` recs (the run is then left permuted). */
static bool insertion(const lf *f, fast_rec *r, long lo, long hi, size_t budget)
{
    size_t moves = 0;
    for (long i = lo + 1; i < hi; i++) {
        if (!rec_before(f, &r[i], &r[i - 1]))
            continue;
        fast_rec x = r[i];
        long j = i;
        while (j > lo && rec_before(f, &x, &r[j - 1]) && moves++ <= budget) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
        if (moves > budget)
            return false;
    }
    return true;
}

/* Two sorted runs of recs, read in merged order. */
typedef struct runs {
    const fast_rec *a, *a_end, *b, *b_end;
} runs;

static inline const fast_rec *runs_peek(const lf *f, const runs *it)
{
    if (it->a == it->a_end)
        return it->b < it->b_end ? it->b : NULL;
    if (it->b == it->b_end)
        return it->a;
    return rec_before(f, it->b, it->a) ? it->b : it->a;
}

static inline void runs_take(runs *it, const fast_rec *r)
{
    if (it->a < it->a_end && r == it->a) /* an empty run a may end where b starts */
        it->a++;
    else
        it->b++;
}

/* Sorts the n recs by rec_before: the m kept by earlier devices, then the
 * device's own. Each run comes in its ops' order, so nearly sorted (a
 * RECV's gap is its consumer's place as a rule, a SEND's the place after
 * its producer): insertion sort of each, read merged as they are written
 * out; when a run is far from sorted, a counting sort by gap and insertion
 * sort within gaps (in a second array, made then). */
static bool sort_recs(lf *f, long n, long m, size_t len, runs *it)
{
    fast_rec *r = f->recs;
    if (insertion(f, r, 0, m, 8 * (size_t)m + 64) && insertion(f, r, m, n, 8 * (size_t)(n - m) + 64)) {
        *it = (runs){r, r + m, r + m, r + n};
        return true;
    }
    if (!f->sorted) {
        f->sorted = psched__reallocarray(NULL, 2 * f->widest + 1, sizeof *f->sorted);
        f->count = psched__reallocarray(NULL, f->widest + 3, sizeof *f->count);
        if (!f->sorted || !f->count)
            return false;
    }
    fast_rec *out = f->sorted;
    uint32_t *count = f->count;
    memset(count, 0, (len + 3) * sizeof *count);
    for (long i = 0; i < n; i++)
        count[(r[i].gap & ~REC_RECV) + 2]++;
    for (size_t g = 0; g <= len; g++)
        count[g + 2] += count[g + 1];
    for (long i = 0; i < n; i++)
        out[count[(r[i].gap & ~REC_RECV) + 1]++] = r[i];
    insertion(f, out, 0, n, SIZE_MAX);
    *it = (runs){out, out + n, out + n, out + n};
    return true;
}

/* Device d's ops with its n comm ops (m of them kept by earlier devices)
 * in their gaps, written at `at`; returns the end. */
static psched_op *emit_device(lf *f, uint32_t d, long n, long m, psched_op *at)
{
    const psched_op *ops = f->ops;
    size_t first = f->offset[d], len = f->offset[d + 1] - first;
    runs it;
    if (!sort_recs(f, n, m, len, &it))
        return NULL;
    const fast_rec *r = runs_peek(f, &it);
    for (size_t g = 0; g <= len; g++) {
        while (r && (r->gap & ~REC_RECV) == g) {
            runs_take(&it, r);
            const fast_rec *next = runs_peek(f, &it);
            const psched_op *o = &ops[r->op];
            bool fwd = o->kind == PSCHED_OP_F;
            uint8_t kind = (r->gap & REC_RECV) ? (fwd ? PSCHED_OP_RECV_F : PSCHED_OP_RECV_B)
                                   : (fwd ? PSCHED_OP_SEND_F : PSCHED_OP_SEND_B);
            bool batch = next && (next->gap & ~REC_RECV) == g && next->time == r->time;
            *at++ = (psched_op){o->stage, o->microbatch, o->chunk, kind,
                                (uint8_t)(batch ? PSCHED_OP_BATCH_NEXT : 0)};
            r = next;
        }
        if (g < len)
            *at++ = ops[first + g];
    }
    return at;
}

static void lf_free(lf *f)
{
    psched__dealloc((void *)f->endf);
    psched__dealloc((void *)f->endd);
    psched__dealloc((void *)f->idle);
    psched__dealloc(f->pos16);
    psched__dealloc(f->pos32);
    psched__dealloc(f->stage_device);
    psched__dealloc(f->stage_flags);
    psched__dealloc(f->recs);
    psched__dealloc(f->kept);
    psched__dealloc(f->keep);
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
    if (total >= UINT32_MAX / 2 || cells > 4 * total + 4096)
        return false; /* a gap takes 31 bits */
    size_t widest = 0;
    for (uint32_t d = 0; d < p; d++)
        if (s->offset[d + 1] - s->offset[d] > widest)
            widest = s->offset[d + 1] - s->offset[d];
    lf f = {.s = s, .ops = s->ops, .offset = s->offset, .S = S, .widest = widest,
            .comm = (costs ? costs : plan)->comm};
    uint32_t per = S / (plan->chains ? plan->chains : 1);
    size_t transfers = 0; /* every cell has one F and one backward in a valid schedule */
    for (uint32_t st = 0; st + 1 < S; st++)
        if (st % per != per - 1 &&
            psched_plan_stage_device(plan, st) != psched_plan_stage_device(plan, st + 1))
            transfers += 2 * (size_t)mbs;
    size_t count = total + 2 * transfers;
    psched_schedule *out = psched__calloc(1, sizeof *out);
    psched_plan *clone = NULL;
    bool ok = out && psched_plan_clone(plan, &clone) == PSCHED_OK;
    if (ok) {
        out->plan = clone;
        out->devices = p;
        out->offset = psched__reallocarray(NULL, (size_t)p + 1, sizeof *out->offset);
        out->ops = psched__reallocarray(NULL, count + 1, sizeof *out->ops);
        ok = out->offset && out->ops;
    }
    /* The simulated times, in the result's op array while it is not
     * written yet when they fit there (it is resident anyway), and the
     * engine's per-cell times with them (no allocation freed, then kept
     * resident by the heap): the starts only until the idle bits are set,
     * the ends until they are copied as floats (or as doubles, when some
     * end is not a float). */
    double *start = NULL, *end = NULL, *own = NULL, *cell_times = NULL;
    if (ok && (count + 1) * sizeof *out->ops >= (2 * total + 2 * cells + 1) * sizeof(double)) {
        /* the engine's cell times there too */
        start = (double *)(void *)out->ops;
        end = start + total;
        cell_times = end + total;
    } else if (ok) {
        own = start = psched__malloc_array_huge(2 * total + 1, sizeof *start);
        end = start ? start + total : NULL;
    }
    ok = ok && start && psched__execute_fast_in(s, costs, start, end, NULL, cell_times);
    if (ok) {
        if (widest < UINT16_MAX)
            f.pos16 = psched__reallocarray(NULL, 2 * cells + 1, sizeof *f.pos16);
        else
            f.pos32 = psched__reallocarray(NULL, 2 * cells + 1, sizeof *f.pos32);
        f.stage_device = psched__reallocarray(NULL, (size_t)S + 1, sizeof *f.stage_device);
        f.stage_flags = psched__reallocarray(NULL, (size_t)S + 1, sizeof *f.stage_flags);
        f.recs = psched__reallocarray(NULL, 2 * widest + 1, sizeof *f.recs);
        f.kept = psched__calloc((size_t)p + 1, sizeof *f.kept);
        f.keep = psched__calloc((size_t)p + 1, sizeof *f.keep);
        ok = (f.pos16 || f.pos32) && f.stage_device && f.stage_flags && f.recs && f.kept &&
             f.keep;
    }
    uint64_t *idle = ok ? psched__calloc(total / 64 + 1, sizeof *idle) : NULL;
    float *endf = ok ? psched__reallocarray(NULL, total + 1, sizeof *endf) : NULL;
    ok = ok && idle && endf;
    if (ok) {
        for (uint32_t st = 0; st < S; st++) {
            f.stage_device[st] = psched_plan_stage_device(plan, st);
            f.stage_flags[st] = (uint8_t)((st % per == 0 ? PSCHED_EXEC_FIRST : 0) |
                                          (st % per == per - 1 ? PSCHED_EXEC_LAST : 0));
        }
        f.out = out->ops;
        f.out_first = out->offset;
    }
    /* One pass over the ops: idle bits, ends as floats, positions, and
     * each device's part of the result and whether it can hold the comm
     * ops of its transfers with earlier devices until it is written (at
     * most all its comm ops, which take 12 bytes each there against a
     * rec's 16: so where they fit). The fast engine accepted the
     * schedule: every op a compute op on its stage's device, every cell
     * one F and one backward. */
    bool exact = true;
    size_t placed = 0;
    for (uint32_t d = 0; d < p && ok; d++) {
        double prev = 0;
        size_t comm = 0, earlier = 0;
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            if (start[g] != prev)
                idle[g / 64] |= (uint64_t)1 << (g % 64);
            prev = end[g];
            endf[g] = (float)end[g];
            exact &= (double)endf[g] == end[g];
            const psched_op *o = &s->ops[g];
            uint32_t st = o->stage, in = d, to = d;
            uint8_t fl = f.stage_flags[st];
            ok &= !o->flags; /* an overlapped pair: not the fast path's */
            if (o->kind == PSCHED_OP_W)
                continue;
            size_t i = 2 * ((size_t)o->microbatch * S + st) + (o->kind != PSCHED_OP_F);
            if (f.pos16)
                f.pos16[i] = (uint16_t)(g - s->offset[d]);
            else
                f.pos32[i] = (uint32_t)(g - s->offset[d]);
            if (o->kind == PSCHED_OP_F) {
                in = fl & PSCHED_EXEC_FIRST ? d : f.stage_device[st - 1];
                to = fl & PSCHED_EXEC_LAST ? d : f.stage_device[st + 1];
            } else {
                in = fl & PSCHED_EXEC_LAST ? d : f.stage_device[st + 1];
                to = fl & PSCHED_EXEC_FIRST ? d : f.stage_device[st - 1];
            }
            comm += (in != d) + (to != d);
            earlier += (in < d) + (to < d);
        }
        size_t room = (s->offset[d + 1] - s->offset[d] + comm) * sizeof *out->ops;
        f.keep[d] = earlier * sizeof(fast_rec) <= room;
        out->offset[d] = placed;
        placed += s->offset[d + 1] - s->offset[d] + comm;
    }
    ok = ok && placed == count;
    f.idle = idle;
    if (ok && exact) {
        f.endf = endf;
    } else {
        psched__dealloc(endf);
        double *copy = ok ? psched__malloc_array_huge(total + 1, sizeof *copy) : NULL;
        if (copy)
            memcpy(copy, end, total * sizeof *copy);
        f.endd = copy;
        ok = ok && copy;
    }
    psched__dealloc(own);
    if (ok) {
        psched_op *at = out->ops;
        for (uint32_t d = 0; d < p && at; d++) {
            if ((size_t)(at - out->ops) != out->offset[d]) {
                at = NULL;
                break;
            }
            long m, n = device_recs(&f, d, &m);
            at = n < 0 ? NULL : emit_device(&f, d, n, m, at);
        }
        ok = at && (size_t)(at - out->ops) == count;
        out->offset[p] = count;
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
