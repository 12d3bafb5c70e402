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
 * device. A transfer's key is computed once, on the first of its two
 * devices lowered, which also files the comm op of the other device: in
 * that device's slots when it is the next one, else in its part of the
 * result, not written yet. A device's comm ops are filed by gap as they
 * are made (GAP_SLOTS per gap; nearly every gap holds two, the RECV before
 * an op and the SEND after the op before it), and each gap's are sorted
 * as they are written straight into the result's op array, sized exactly
 * beforehand (every (stage, micro-batch) has one F and one backward, so
 * the transfers are 2 x micro-batches x the chain edges that cross
 * devices). Working memory: each op's end (a float when every end is one),
 * an idle bit per op, a place per (stage, micro-batch, F or backward) and
 * two devices' slots. The hot functions are compiled once for each
 * representation of those arrays (REP_*).
 */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "execute.h"
#include "memadvise.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* lower.c's IDLE_SEARCH_STEPS: the same search, the same cut-off */
#define FAST_IDLE_STEPS 16

#if defined(__GNUC__)
#define LF_INLINE inline __attribute__((always_inline))
#define LF_NOINLINE __attribute__((noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define LF_INLINE inline
#define LF_NOINLINE
#define LIKELY(x) (x)
#endif

/* The representation of the working arrays, a constant argument of the
 * hot functions (always inlined): each of the four combinations is
 * compiled on its own (device_pass_*), so the loops test neither. */
#define REP_FLOAT 1 /* ends as floats (else doubles) */
#define REP_POS16 2 /* places as 16 bits (else 32) */

/* One comm op of a device: 16 bytes (those kept for a later device wait
 * in its part of the result, 12 bytes an op). */
typedef struct fast_rec {
    double time;  /* its transfer's key */
    uint32_t gap; /* before the gap-th op of the device; REC_RECV: a RECV */
    uint32_t op;  /* the op it belongs to: its producer (SEND), consumer (RECV) */
} fast_rec;

#define REC_RECV 0x80000000u

/* What the F (back 0) or the backward (1) of a stage exchanges: the
 * place index (see lf.pos16) of its input's and its output's op, less
 * 2 x its micro-batch, and their devices: in_dev/out_dev only when another
 * device's (PSCHED_EXEC_NONE: none, or on the same device), src_dev
 * whichever (PSCHED_EXEC_NONE when the stage has no input: the first
 * stage's F, the last's backward). */
typedef struct lf_class {
    int64_t in_i, out_i;
    uint32_t in_dev, out_dev, src_dev;
    uint32_t pad;
} lf_class;

typedef struct lf {
    const psched_schedule *s;
    const psched_op *ops;
    const size_t *offset;
    uint32_t S, mbs;
    double comm;
    /* simulated end of every op: as floats when every end is one exactly
     * (integer costs, say: half the memory), else as doubles */
    const float *endf;
    const double *endd;
    /* bit g: op g starts later than its device's previous end (0 first) */
    const uint64_t *idle;
    /* [2*(stage*mbs + mb)]: the place of its F on its device, [+1]: of
     * its backward; 16 bits when every device has fewer than 65535 ops.
     * Stage-major: a device walks its ops in about micro-batch order, so
     * the places it reads (its neighbour stages') are a few streams. */
    uint16_t *pos16;
    uint32_t *pos32;
    lf_class *cls;         /* [2*stage + back] */
    /* The comm ops of the device being lowered, by gap: the first
     * GAP_SLOTS of gap g in slots[GAP_SLOTS*g ...], count[g] of them in
     * all, the rest in over[] (then the device's are sorted into sorted[],
     * made then). next_slots, next_count: the same for the next device,
     * filed as the keys of its transfers with this one are found (two
     * buffers, swapped from one device to the next). */
    fast_rec *slots, *over, *sorted, *next_slots;
    uint32_t *count, *next_count;
    fast_rec *slot_buf[2];
    uint32_t *count_buf[2];
    size_t widest;         /* most ops on one device */
    /* A transfer's key is computed once, on the first of its two devices
     * lowered; the comm op it gives the other device waits in that
     * device's part of the result, not written yet (a device whose part
     * could not hold them all computes its keys itself: keep[d] false). */
    psched_op *out;        /* the result's ops */
    size_t *out_first;     /* [d]: first op of device d in the result */
    char **kept;           /* [d]: the end of the comm ops waiting there */
    bool *keep;
} lf;

#define GAP_SLOTS 3

static LF_INLINE double end_at(const lf *f, size_t g, int rep)
{
    return (rep & REP_FLOAT) ? (double)f->endf[g] : f->endd[g];
}

/* Place on its device of the op at place index i (see lf_class). */
static LF_INLINE uint32_t place_at(const lf *f, size_t i, int rep)
{
    return (rep & REP_POS16) ? f->pos16[i] : f->pos32[i];
}

/* Back (0: F, 1: backward) of a compute kind other than W. */
static LF_INLINE unsigned back_of(uint8_t kind) { return kind != PSCHED_OP_F; }

/* Number of ops of device d (global [first, last)) ending by t: what
 * lower.c's gap_before() returns with rank UINT32_MAX, searched the same
 * way (galloping out from `hint`, then a binary search of the bracket). */
static LF_INLINE uint32_t ending_by(const lf *f, size_t first, size_t last, double t, size_t hint,
                                    int rep)
{
    size_t lo = first, hi = last;
    hint = hint < lo ? lo : hint > hi ? hi : hint;
    /* the answer is next to the hint as a rule: the hint or the op after it */
    if (hint == first || end_at(f, hint - 1, rep) <= t) {
        if (hint == last || !(end_at(f, hint, rep) <= t))
            return (uint32_t)(hint - first);
        if (hint + 1 == last || !(end_at(f, hint + 1, rep) <= t))
            return (uint32_t)(hint + 1 - first);
    }
    if (hint < hi && end_at(f, hint, rep) <= t) {
        size_t step = 1;
        lo = hint + 1;
        while (hi - hint > step && end_at(f, hint + step, rep) <= t) {
            lo = hint + step + 1;
            step *= 2;
        }
        if (hi - hint > step)
            hi = hint + step;
    } else {
        size_t step = 1;
        hi = hint;
        while (hint - lo >= step && !(end_at(f, hint - step, rep) <= t)) {
            hi = hint - step;
            step *= 2;
        }
        if (hint - lo >= step)
            lo = hint - step + 1;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (end_at(f, mid, rep) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)(lo - first);
}

/* The start of an op that starts later than its device's previous end
 * (`ready`): raised to its input's end (+ t_comm from another device), as
 * the compute fast path computed it. */
static LF_NOINLINE double start_late(const lf *f, size_t g, uint32_t d, double ready, int rep)
{
    const psched_op *o = &f->ops[g];
    if (o->kind == PSCHED_OP_W)
        return ready;
    const lf_class *k = &f->cls[2 * (size_t)o->stage + back_of(o->kind)];
    uint32_t dd = k->src_dev;
    if (dd == PSCHED_EXEC_NONE)
        return ready;
    size_t i = 2 * (size_t)o->microbatch + (size_t)k->in_i;
    double t = end_at(f, f->offset[dd] + place_at(f, i, rep), rep);
    if (dd != d)
        t += f->comm;
    return t > ready ? t : ready;
}

static LF_NOINLINE double start_late_f16(const lf *f, size_t g, uint32_t d, double ready)
{
    return start_late(f, g, d, ready, REP_FLOAT | REP_POS16);
}
static LF_NOINLINE double start_late_f32(const lf *f, size_t g, uint32_t d, double ready)
{
    return start_late(f, g, d, ready, REP_FLOAT);
}
static LF_NOINLINE double start_late_d16(const lf *f, size_t g, uint32_t d, double ready)
{
    return start_late(f, g, d, ready, REP_POS16);
}
static LF_NOINLINE double start_late_d32(const lf *f, size_t g, uint32_t d, double ready)
{
    return start_late(f, g, d, ready, 0);
}

/* The simulated start of op g of device d: what the compute fast path
 * computed (and start[] held), with the same operations in the same order:
 * the device's previous end (0 first), raised to each input's end (+
 * t_comm from another device). Inputs on the device itself ended by the
 * previous end, so only the one from another stage's device is looked up,
 * and only when the op's idle bit says it waited. */
static LF_INLINE double start_of(const lf *f, size_t g, size_t first, uint32_t d, int rep)
{
    double ready = g > first ? end_at(f, g - 1, rep) : 0;
    if (!(f->idle[g / 64] >> (g % 64) & 1))
        return ready;
    switch (rep) {
    case REP_FLOAT | REP_POS16:
        return start_late_f16(f, g, d, ready);
    case REP_FLOAT:
        return start_late_f32(f, g, d, ready);
    case REP_POS16:
        return start_late_d16(f, g, d, ready);
    default:
        return start_late_d32(f, g, d, ready);
    }
}

/* lower.c's idle_until() on device d, ops [first, last). */
static LF_INLINE double idle_until(const lf *f, uint32_t d, size_t first, size_t last, double t,
                                   double span, size_t hint, uint32_t *gap, int rep)
{
    *gap = ending_by(f, first, last, t, hint, rep);
    size_t u = first + *gap;
    double gap_start = u > first ? end_at(f, u - 1, rep) : -INFINITY;
    double gap_end = u < last ? start_of(f, u, first, d, rep) : INFINITY;
    double latest = gap_end - span < t ? gap_end - span : t;
    if (latest >= gap_start)
        return latest;
    return start_of(f, u - 1, first, d, rep) - span;
}

/* lower.c's transfer_key() for producer p on device a, consumer c on
 * device b, with the gaps of its SEND on a and its RECV on b (the ops of
 * the device ending by the key); false when the key would need the rank
 * tie-break. The whole search: key_of() takes its common case. */
static LF_NOINLINE bool key_search(const lf *f, uint32_t p, uint32_t a, uint32_t c, uint32_t b,
                                   double *time, uint32_t *gap_a, uint32_t *gap_b, int rep)
{
    size_t a0 = f->offset[a], a1 = f->offset[a + 1], b0 = f->offset[b], b1 = f->offset[b + 1];
    double comm = f->comm, lo = end_at(f, p, rep);
    double when = start_of(f, c, b0, b, rep) - comm;
    bool found = false; /* the search stopped at a time both are idle: the gaps are its */
    int step = 0;
    for (; step < FAST_IDLE_STEPS && when >= lo; step++) {
        double ta = idle_until(f, a, a0, a1, when, comm, p, gap_a, rep);
        double tb = idle_until(f, b, b0, b1, when, comm, c, gap_b, rep);
        if (ta == when && tb == when) {
            found = true;
            break;
        }
        when = ta < tb ? ta : tb;
    }
    if (step == FAST_IDLE_STEPS || when < lo) {
        when = lo;
        if (c > b0 && end_at(f, c - 1, rep) > when)
            when = end_at(f, c - 1, rep);
        found = false;
    }
    if (!found) {
        *gap_a = ending_by(f, a0, a1, when, p, rep);
        *gap_b = ending_by(f, b0, b1, when, c, rep);
    }
    *time = when;
    return end_at(f, c, rep) != when;
}

static LF_NOINLINE bool key_search_f16(const lf *f, uint32_t p, uint32_t a, uint32_t c,
                                       uint32_t b, double *time, uint32_t *gap_a, uint32_t *gap_b)
{
    return key_search(f, p, a, c, b, time, gap_a, gap_b, REP_FLOAT | REP_POS16);
}
static LF_NOINLINE bool key_search_f32(const lf *f, uint32_t p, uint32_t a, uint32_t c,
                                       uint32_t b, double *time, uint32_t *gap_a, uint32_t *gap_b)
{
    return key_search(f, p, a, c, b, time, gap_a, gap_b, REP_FLOAT);
}
static LF_NOINLINE bool key_search_d16(const lf *f, uint32_t p, uint32_t a, uint32_t c,
                                       uint32_t b, double *time, uint32_t *gap_a, uint32_t *gap_b)
{
    return key_search(f, p, a, c, b, time, gap_a, gap_b, REP_POS16);
}
static LF_NOINLINE bool key_search_d32(const lf *f, uint32_t p, uint32_t a, uint32_t c,
                                       uint32_t b, double *time, uint32_t *gap_a, uint32_t *gap_b)
{
    return key_search(f, p, a, c, b, time, gap_a, gap_b, 0);
}

/* key_search()'s answer (a's ops are [a0, a1), b's start at b0), taking
 * its common case inline: the search stops at its first step, at when =
 * start(c) - t_comm, both devices idle there. On b that holds when c's
 * previous op ended by `when` (and c ends after it: no tie): the gap is
 * c's place and idle_until() returns `when` (start(c) - t_comm is `when`
 * itself). On a, p ended by `when` (lo <= when), so the ops ending by it
 * are p's place + 1 or more, and idle_until() returns `when` when the next
 * op u starts no earlier than when + t_comm (the same sum idle_until()
 * compares). Anything else: the whole search, from the start (the same
 * answer). */
static LF_INLINE bool key_of(const lf *f, uint32_t p, uint32_t a, size_t a0, size_t a1, uint32_t c,
                             uint32_t b, size_t b0, double *time, uint32_t *gap_a,
                             uint32_t *gap_b, int rep)
{
    double comm = f->comm, lo = end_at(f, p, rep);
    double when = start_of(f, c, b0, b, rep) - comm;
    if (when >= lo && (c == b0 || end_at(f, c - 1, rep) <= when) && end_at(f, c, rep) > when) {
        size_t u = (size_t)p + 1;
        if (u < a1 && end_at(f, u, rep) <= when)
            u = a0 + ending_by(f, a0, a1, when, u + 1, rep);
        double gap_end = u < a1 ? start_of(f, u, a0, a, rep) : INFINITY;
        if (gap_end - comm >= when) {
            *gap_a = (uint32_t)(u - a0);
            *gap_b = (uint32_t)(c - b0);
            *time = when;
            return true;
        }
    }
    switch (rep) {
    case REP_FLOAT | REP_POS16:
        return key_search_f16(f, p, a, c, b, time, gap_a, gap_b);
    case REP_FLOAT:
        return key_search_f32(f, p, a, c, b, time, gap_a, gap_b);
    case REP_POS16:
        return key_search_d16(f, p, a, c, b, time, gap_a, gap_b);
    default:
        return key_search_d32(f, p, a, c, b, time, gap_a, gap_b);
    }
}

/* Leaves rec r for device e in e's part of the result. */
static LF_INLINE void keep_for(lf *f, uint32_t e, fast_rec r)
{
    memcpy(f->kept[e], &r, sizeof r);
    f->kept[e] += sizeof r;
}

/* Files rec r of the device being lowered under its gap; n: recs in
 * over[] so far. */
static LF_INLINE void file_rec(lf *f, fast_rec r, long *n)
{
    uint32_t g = r.gap & ~REC_RECV, c = f->count[g]++;
    if (LIKELY(c < GAP_SLOTS))
        f->slots[GAP_SLOTS * (size_t)g + c] = r;
    else
        f->over[(*n)++] = r;
}

/* Leaves rec r for device e > d: filed in the next device's slots when e
 * is the next one and its gap has room, else in e's part of the result
 * (filed when e is lowered). */
static LF_INLINE void leave_for(lf *f, uint32_t d, uint32_t e, fast_rec r)
{
    if (e == d + 1) {
        uint32_t g = r.gap & ~REC_RECV, c = f->next_count[g];
        if (LIKELY(c < GAP_SLOTS)) {
            f->next_count[g] = c + 1;
            f->next_slots[GAP_SLOTS * (size_t)g + c] = r;
            return;
        }
    }
    keep_for(f, e, r);
}

/* The comm ops of device d (those kept for it, then its own) filed by
 * gap; returns how many went to over[], or -1 when the schedule is not
 * the fast path's. */
static LF_INLINE long device_recs(lf *f, uint32_t d, int rep)
{
    const psched_op *ops = f->ops;
    const lf_class *cls = f->cls;
    const size_t *offset = f->offset;
    size_t first = offset[d], last = offset[d + 1];
    /* this device's counts were zeroed with the previous device's, the
     * next one's are now */
    if (d + 1 < f->s->devices)
        memset(f->next_count, 0, (offset[d + 2] - last + 1) * sizeof *f->next_count);
    long n = 0;
    bool mine = f->keep[d]; /* what earlier devices computed for this one is there */
    if (mine) {
        const char *at = (const char *)(f->out + f->out_first[d]);
        for (; at < f->kept[d]; at += sizeof(fast_rec)) {
            fast_rec r;
            memcpy(&r, at, sizeof r);
            file_rec(f, r, &n);
        }
    }
    /* transfers with an earlier device that kept its comm ops here are
     * done: one with device e is made here when e + 1 > skip
     * (PSCHED_EXEC_NONE + 1 is 0: no transfer) */
    uint32_t skip = mine ? d : 0;
    for (size_t g = first; g < last; g++) {
        const psched_op *o = &ops[g];
        if (o->kind == PSCHED_OP_W)
            continue;
        const lf_class *k = &cls[2 * (size_t)o->stage + back_of(o->kind)];
        uint32_t from = k->in_dev, to = k->out_dev;
        size_t base = 2 * (size_t)o->microbatch;
        double time;
        uint32_t gap_a, gap_b;
        if (from + 1 > skip) {
            /* a RECV before this op: the consumer */
            uint32_t in = (uint32_t)offset[from] + place_at(f, base + (size_t)k->in_i, rep);
            if (!key_of(f, in, from, offset[from], offset[from + 1], (uint32_t)g, d, first, &time,
                        &gap_a, &gap_b, rep))
                return -1;
            file_rec(f, (fast_rec){time, gap_b | REC_RECV, (uint32_t)g}, &n);
            if (from > d && f->keep[from])
                leave_for(f, d, from, (fast_rec){time, gap_a, in});
        }
        if (to + 1 > skip) {
            /* a SEND after this op: the producer */
            uint32_t out = (uint32_t)offset[to] + place_at(f, base + (size_t)k->out_i, rep);
            if (!key_of(f, (uint32_t)g, d, first, last, out, to, offset[to], &time, &gap_a, &gap_b,
                        rep))
                return -1;
            file_rec(f, (fast_rec){time, gap_a, (uint32_t)g}, &n);
            if (to > d && f->keep[to])
                leave_for(f, d, to, (fast_rec){time, gap_b | REC_RECV, out});
        }
    }
    return n;
}

/* The transfer of a comm op, numbered as lower.c numbers them: by its
 * consumer's global index (a SEND's is looked up only on a tie). */
static LF_NOINLINE uint32_t transfer_of(const lf *f, const fast_rec *r, int rep)
{
    if (r->gap & REC_RECV)
        return r->op;
    const psched_op *o = &f->ops[r->op];
    const lf_class *k = &f->cls[2 * (size_t)o->stage + back_of(o->kind)];
    size_t i = 2 * (size_t)o->microbatch + (size_t)k->out_i;
    return (uint32_t)f->offset[k->out_dev] + place_at(f, i, rep);
}

/* lower.c's rec_cmp for two comm ops of one gap of a device (every rank
 * UINT32_MAX). */
static LF_INLINE bool gap_before(const lf *f, const fast_rec *a, const fast_rec *b, int rep)
{
    if (a->time != b->time)
        return a->time < b->time;
    if ((a->gap ^ b->gap) & REC_RECV)
        return !(a->gap & REC_RECV); /* SEND first */
    return transfer_of(f, a, rep) < transfer_of(f, b, rep);
}

/* Sorts the recs of one gap, r[0, n), by gap_before (insertion: a gap
 * holds a few). */
static LF_INLINE void sort_gap(const lf *f, fast_rec *r, uint32_t n, int rep)
{
    for (uint32_t i = 1; i < n; i++) {
        if (!gap_before(f, &r[i], &r[i - 1], rep))
            continue;
        fast_rec x = r[i];
        uint32_t j = i;
        while (j > 0 && gap_before(f, &x, &r[j - 1], rep)) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = x;
    }
}

_Static_assert(PSCHED_OP_RECV_F == PSCHED_OP_SEND_F + 1 &&
                   PSCHED_OP_SEND_B == PSCHED_OP_SEND_F + 2 &&
                   PSCHED_OP_RECV_B == PSCHED_OP_SEND_F + 3,
               "comm_op() computes comm kinds");

/* The comm op of rec x (batched with the next one when `batch`): its
 * op's stage, micro-batch and chunk (copied whole, then the kind and flags
 * set), SEND_F + 1 for a RECV + 2 for a backward's. */
static LF_INLINE psched_op comm_op(const psched_op *ops, const fast_rec *x, bool batch)
{
    psched_op c = ops[x->op];
    c.kind = (uint8_t)(PSCHED_OP_SEND_F + (x->gap >> 31) + 2 * (c.kind != PSCHED_OP_F));
    c.flags = (uint8_t)(batch ? PSCHED_OP_BATCH_NEXT : 0);
    return c;
}

/* The m comm ops of one gap, r[0, m), sorted and written at `at`, then
 * op (NULL after the last gap); returns the end. */
static LF_INLINE psched_op *emit_gap(const lf *f, fast_rec *r, uint32_t m, const psched_op *op,
                                     psched_op *at, int rep)
{
    if (m > 1)
        sort_gap(f, r, m, rep);
    for (uint32_t k = 0; k < m; k++)
        *at++ = comm_op(f->ops, &r[k], k + 1 < m && r[k + 1].time == r[k].time);
    if (op)
        *at++ = *op;
    return at;
}

/* Device d's ops with its comm ops in their gaps, written at `at`, when
 * some gap holds more than GAP_SLOTS (n of them in over[]): every gap's
 * recs gathered in gap order into sorted[], each gap's sorted as it is
 * written. Returns the end, or NULL (no memory). */
static LF_NOINLINE psched_op *emit_crowded(lf *f, uint32_t d, long n, psched_op *at, int rep)
{
    const psched_op *ops = f->ops;
    size_t first = f->offset[d], len = f->offset[d + 1] - first;
    if (!f->sorted && !(f->sorted = psched__reallocarray(NULL, 2 * f->widest + 1,
                                                         sizeof *f->sorted)))
        return NULL;
    fast_rec *sorted = f->sorted;
    uint32_t *count = f->count;
    /* count[g] becomes the end of gap g in sorted[]: its slots copied,
     * room left for its recs in over[] */
    uint32_t end = 0;
    for (size_t g = 0; g <= len; g++) {
        uint32_t c = count[g], kept = c < GAP_SLOTS ? c : GAP_SLOTS;
        memcpy(sorted + end, f->slots + GAP_SLOTS * g, kept * sizeof *sorted);
        end += c;
        count[g] = end - (c - kept);
    }
    for (long i = 0; i < n; i++)
        sorted[count[f->over[i].gap & ~REC_RECV]++] = f->over[i];
    uint32_t k = 0;
    for (size_t g = 0; g <= len; g++) {
        uint32_t k1 = count[g];
        at = emit_gap(f, sorted + k, k1 - k, g < len ? &ops[first + g] : NULL, at, rep);
        k = k1;
    }
    return at;
}

/* Device d's ops with its comm ops in their gaps (each in its slots),
 * written at `at`; returns the end. Nearly every gap holds two (the RECV
 * before an op and the SEND after the op before it): those take a
 * straight path. (A branch on the data here, as in key_of(), measured
 * faster than branch-free code: it is predicted, and the branch-free form
 * puts the loads of the comm ops behind the comparison.) */
static LF_INLINE psched_op *emit_device(lf *f, uint32_t d, psched_op *at, int rep)
{
    const psched_op *ops = f->ops;
    size_t first = f->offset[d], len = f->offset[d + 1] - first;
    fast_rec *slots = f->slots;
    const uint32_t *count = f->count;
    for (size_t g = 0; g < len; g++) {
        uint32_t m = count[g];
        fast_rec *a = &slots[GAP_SLOTS * g], *b = a + 1;
        if (m != 2) {
            at = emit_gap(f, a, m, &ops[first + g], at, rep);
            continue;
        }
#if defined(__GNUC__)
        __builtin_prefetch(at + 48, 1); /* the result's lines, for writing */
#endif
        bool swap = gap_before(f, b, a, rep);
        const fast_rec *x = swap ? b : a, *y = swap ? a : b;
        at[0] = comm_op(ops, x, b->time == a->time);
        at[1] = comm_op(ops, y, false);
        at[2] = ops[first + g];
        at += 3;
    }
    return emit_gap(f, &slots[GAP_SLOTS * len], count[len], NULL, at, rep);
}

/* Device d lowered and written at `at`: returns the end, or NULL. */
static LF_INLINE psched_op *device_pass(lf *f, uint32_t d, psched_op *at, int rep)
{
    f->slots = f->slot_buf[d & 1];
    f->count = f->count_buf[d & 1];
    f->next_slots = f->slot_buf[(d + 1) & 1];
    f->next_count = f->count_buf[(d + 1) & 1];
    long n = device_recs(f, d, rep);
    if (n < 0)
        return NULL;
    return n ? emit_crowded(f, d, n, at, rep) : emit_device(f, d, at, rep);
}

static LF_NOINLINE psched_op *device_pass_f16(lf *f, uint32_t d, psched_op *at)
{
    return device_pass(f, d, at, REP_FLOAT | REP_POS16);
}
static LF_NOINLINE psched_op *device_pass_f32(lf *f, uint32_t d, psched_op *at)
{
    return device_pass(f, d, at, REP_FLOAT);
}
static LF_NOINLINE psched_op *device_pass_d16(lf *f, uint32_t d, psched_op *at)
{
    return device_pass(f, d, at, REP_POS16);
}
static LF_NOINLINE psched_op *device_pass_d32(lf *f, uint32_t d, psched_op *at)
{
    return device_pass(f, d, at, 0);
}

static void lf_free(lf *f)
{
    psched__dealloc((void *)f->endf);
    psched__dealloc((void *)f->endd);
    psched__dealloc((void *)f->idle);
    psched__dealloc(f->pos16);
    psched__dealloc(f->pos32);
    psched__dealloc(f->cls);
    psched__dealloc(f->slot_buf[0]);
    psched__dealloc(f->slot_buf[1]);
    psched__dealloc(f->count_buf[0]);
    psched__dealloc(f->count_buf[1]);
    psched__dealloc(f->over);
    psched__dealloc(f->kept);
    psched__dealloc(f->keep);
    psched__dealloc(f->sorted);
}

/* The class table (lf_class) of every (stage, F or backward) and, per
 * device, how many comm ops its ops make and how many of them go with an
 * earlier device: every cell of a valid schedule has one F and one
 * backward, so each stage's counts times the micro-batches. */
static void fill_classes(lf *f, const psched_plan *plan, uint32_t mbs, size_t *comm,
                         size_t *earlier)
{
    uint32_t S = f->S, per = S / (plan->chains ? plan->chains : 1);
    int64_t row = 2 * (int64_t)mbs; /* place indices of a stage */
    for (uint32_t st = 0; st < S; st++) {
        uint32_t d = psched_plan_stage_device(plan, st);
        bool head = st % per == 0, tail = st % per == per - 1;
        uint32_t prev = head ? PSCHED_EXEC_NONE : psched_plan_stage_device(plan, st - 1);
        uint32_t next = tail ? PSCHED_EXEC_NONE : psched_plan_stage_device(plan, st + 1);
        /* F: from the stage before (its F), to the stage after */
        lf_class *k = &f->cls[2 * (size_t)st];
        k[0] = (lf_class){.in_i = row * ((int64_t)st - 1), .out_i = row * ((int64_t)st + 1),
                          .in_dev = prev == d ? PSCHED_EXEC_NONE : prev,
                          .out_dev = next == d ? PSCHED_EXEC_NONE : next, .src_dev = prev};
        /* backward: from the stage after (its backward), to the stage before */
        k[1] = (lf_class){.in_i = row * ((int64_t)st + 1) + 1, .out_i = row * ((int64_t)st - 1) + 1,
                          .in_dev = next == d ? PSCHED_EXEC_NONE : next,
                          .out_dev = prev == d ? PSCHED_EXEC_NONE : prev, .src_dev = next};
        for (int b = 0; b < 2; b++) {
            uint32_t in = k[b].in_dev, out = k[b].out_dev;
            comm[d] += (size_t)mbs * ((in != PSCHED_EXEC_NONE) + (out != PSCHED_EXEC_NONE));
            earlier[d] += (size_t)mbs * ((in != PSCHED_EXEC_NONE && in < d) +
                                         (out != PSCHED_EXEC_NONE && out < d));
        }
    }
}

/* The places of device ops[first, last) (in pos16 or pos32); returns its
 * ops' flags ORed. */
static LF_INLINE unsigned set_places(const psched_op *ops, size_t first, size_t last,
                                     uint32_t mbs, uint16_t *pos16, uint32_t *pos32)
{
    unsigned flags = 0;
    for (size_t g = first; g < last; g++) {
        const psched_op *o = &ops[g];
        flags |= o->flags;
        if (o->kind == PSCHED_OP_W)
            continue;
        size_t i = 2 * ((size_t)o->stage * mbs + o->microbatch) + back_of(o->kind);
        if (pos16)
            pos16[i] = (uint16_t)(g - first);
        else
            pos32[i] = (uint32_t)(g - first);
    }
    return flags;
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
    lf f = {.s = s, .ops = s->ops, .offset = s->offset, .S = S, .mbs = mbs, .widest = widest,
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
    size_t *comm = NULL, *earlier = NULL;
    if (ok) {
        if (widest < UINT16_MAX)
            f.pos16 = psched__reallocarray(NULL, 2 * cells + 1, sizeof *f.pos16);
        else
            f.pos32 = psched__reallocarray(NULL, 2 * cells + 1, sizeof *f.pos32);
        f.cls = psched__reallocarray(NULL, 2 * (size_t)S + 1, sizeof *f.cls);
        for (int i = 0; i < 2; i++) {
            f.slot_buf[i] = psched__reallocarray(NULL, GAP_SLOTS * (widest + 1) + 1,
                                                 sizeof *f.slot_buf[i]);
            f.count_buf[i] = psched__calloc(widest + 1, sizeof *f.count_buf[i]);
        }
        f.over = psched__reallocarray(NULL, 2 * widest + 1, sizeof *f.over);
        f.kept = psched__calloc((size_t)p + 1, sizeof *f.kept);
        f.keep = psched__calloc((size_t)p + 1, sizeof *f.keep);
        comm = psched__calloc(2 * (size_t)p + 1, sizeof *comm);
        earlier = comm ? comm + p : NULL;
        ok = (f.pos16 || f.pos32) && f.cls && f.slot_buf[0] && f.slot_buf[1] && f.over &&
             f.count_buf[0] && f.count_buf[1] && f.kept &&
             f.keep && comm;
    }
    uint64_t *idle = ok ? psched__reallocarray(NULL, total / 64 + 1, sizeof *idle) : NULL;
    float *endf = ok ? psched__reallocarray(NULL, total + 1, sizeof *endf) : NULL;
    ok = ok && idle && endf;
    if (ok) {
        fill_classes(&f, plan, mbs, comm, earlier);
        f.out = out->ops;
        f.out_first = out->offset;
    }
    /* The times: an idle bit per op (it starts later than the op before it
     * on its device ends, or than 0 for a device's first: those are set
     * after), the ends as floats and whether every one is exactly one. */
    bool exact = true;
    for (size_t w = 0; ok && w * 64 < total; w++) {
        size_t g0 = w * 64, g1 = total - g0 < 64 ? total : g0 + 64;
        uint64_t bits = 0;
        unsigned inexact = 0;
        for (size_t g = g0 ? g0 : 1; g < g1; g++) {
            bits |= (uint64_t)(start[g] != end[g - 1]) << (g - g0);
            float ef = (float)end[g];
            endf[g] = ef;
            inexact |= (double)ef != end[g];
        }
        idle[w] = bits;
        exact &= !inexact;
    }
    if (ok && total) {
        endf[0] = (float)end[0];
        exact &= (double)endf[0] == end[0];
    }
    /* Then the ops: places, and each device's part of the result and
     * whether it can hold the comm ops of its transfers with earlier
     * devices until it is written (at most all its comm ops, which take
     * 12 bytes each there against a rec's 16: so where they fit). The fast
     * engine accepted the schedule: every op a compute op on its stage's
     * device, every cell one F and one backward. */
    unsigned flags = 0;
    size_t placed = 0;
    for (uint32_t d = 0; d < p && ok; d++) {
        size_t first = s->offset[d], last = s->offset[d + 1], ops_d = last - first;
        if (ops_d) {
            uint64_t bit = (uint64_t)1 << (first % 64);
            idle[first / 64] = (idle[first / 64] & ~bit) | (start[first] != 0 ? bit : 0);
        }
        if (f.pos16)
            flags |= set_places(s->ops, first, last, mbs, f.pos16, NULL);
        else
            flags |= set_places(s->ops, first, last, mbs, NULL, f.pos32);
        size_t room = (ops_d + comm[d]) * sizeof *out->ops;
        f.keep[d] = earlier[d] * sizeof(fast_rec) <= room;
        out->offset[d] = placed;
        f.kept[d] = (char *)(out->ops + placed);
        placed += ops_d + comm[d];
    }
    ok = ok && !flags && placed == count;
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
    psched__dealloc(comm);
    if (ok) {
        psched_op *at = out->ops;
        int rep = (f.endf ? REP_FLOAT : 0) | (f.pos16 ? REP_POS16 : 0);
        for (uint32_t d = 0; d < p && at; d++) {
            if ((size_t)(at - out->ops) != out->offset[d]) {
                at = NULL;
                break;
            }
            switch (rep) {
            case REP_FLOAT | REP_POS16:
                at = device_pass_f16(&f, d, at);
                break;
            case REP_FLOAT:
                at = device_pass_f32(&f, d, at);
                break;
            case REP_POS16:
                at = device_pass_d16(&f, d, at);
                break;
            default:
                at = device_pass_d32(&f, d, at);
                break;
            }
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
