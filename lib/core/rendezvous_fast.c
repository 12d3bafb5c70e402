/*
 * The fast path of psched_validate() for lowered schedules (issue 13): the
 * rendezvous run of rendezvous.c without times, on two bytes per (stage,
 * micro-batch) and a small queue per device pair. Like execute.c's fast
 * path it answers only "valid" or "not sure" (false, no error set), and
 * psched_validate() then runs the general engine, which finds the same
 * outcome and names it. It takes rendezvous-mode schedules of compute and
 * SEND/RECV ops (no copies, no other kind) and accepts exactly the valid
 * ones, rule by rule (rendezvous.c's numbering):
 *   1. compute ops as execute.c's fast path checks them as they run: kind,
 *      range, placement, pair shape, duplicates, inputs on the device
 *      itself run earlier and not in the same pair; counts at the end;
 *   2. a comm op, when posted: range, placement, a neighbour stage of its
 *      chain on another device, no duplicate, no OVERLAP_NEXT, BATCH_NEXT
 *      only towards another comm op of the device; no BATCH_NEXT on a
 *      compute op, no comm op in a pair;
 *   3, 4. calls between two devices match in posting order, per direction
 *      (NCCL): a device pair's k-th SEND meets the receiver's k-th RECV
 *      from it, and the two must carry the same (stage pair, micro-batch,
 *      direction); every device finishing means every posted op was
 *      matched, so with no duplicates SENDs and RECVs pair one to one;
 *   5. a SEND is posted after its producer ran on the device; a compute op
 *      fed from another device runs only when its RECV completed, so that
 *      RECV exists and comes earlier;
 *   and the run: a group (ops chained by BATCH_NEXT) is posted at once and
 *   the device waits until each of its ops is matched; a device left
 *   waiting means a deadlock (the general engine names the cycle).
 * A queue holds a device pair's posted, unmatched calls of one side; a
 * device posts one group before it waits, so queues stay short (longer
 * than QCAP: not the fast path's).
 */
#include "execute.h"

#include <string.h>

#define QCAP 16
#define NOBODY UINT32_MAX

enum {
    /* low byte: FAST bits of the compute kinds that ran (1 << kind) */
    RAN_F = 1u << PSCHED_OP_F,
    RAN_B = 1u << PSCHED_OP_B,
    RAN_W = 1u << PSCHED_OP_W,
    RAN_BW = 1u << PSCHED_OP_BW,
    RAN_BACK = RAN_B | RAN_BW,
    /* high byte (COMM()): comm kinds posted (1 << (kind - SEND_F)), and RECVs done */
    DONE_RECV_F = 1u << 4,
    DONE_RECV_B = 1u << 5,
};

/* A posted op as its channel keeps it, one number per transfer (what a
 * match compares): 2 x the cell of the transfer's lower stage, + 1 for a
 * backward transfer. SEND_F of stage s and RECV_F of s + 1 (same micro-
 * batch) give 2 (mb*S + s); SEND_B of s + 1 and RECV_B of s give
 * 2 (mb*S + s) + 1. */
typedef uint32_t posted;

typedef struct chan {
    posted q[QCAP];   /* posted, unmatched ops, oldest first */
    uint32_t head, len; /* not bytes: see cell_state */
    bool sends;       /* the queued ops are SENDs (else RECVs) */
} chan;

/* What one (stage, micro-batch) has seen so far: RAN_* in the low byte,
 * the comm bits (COMM(...), DONE_*) in the high byte, and ALWAYS, set in
 * every cell (the mask of a requirement that always holds). 16 bits, not
 * two bytes: a store through a character type could alias anything, and
 * the compiler would reload every field of the state after each one. */
typedef uint16_t cell_state;
#define COMM(bits) ((unsigned)(bits) << 8)
#define ALWAYS 0x8000u

/* What compute op kind k of stage s needs besides its own cell's bits: a
 * bit of the cell `off` stages away (its input on the device itself), or
 * its own cell's RECV done, or nothing (ALWAYS). */
typedef struct input_need {
    int32_t off;
    uint32_t mask;
} input_need;

typedef struct rf {
    const psched_op *ops;
    const size_t *offset;
    uint32_t p, S, mbs, per;
    uint32_t *stage_device;
    uint8_t *stage_flags; /* PSCHED_EXEC_FIRST / LAST */
    input_need *input;    /* [4*stage + compute kind] */
    uint32_t *chan_of;    /* [4*stage + comm kind - SEND_F]: channel | peer << 16, or NOBODY */
    cell_state *cell;     /* [mb*S + stage] */
    chan *ch;             /* [from*p + to] */
    size_t *cursor, *group_end; /* group_end[d]: 0 when not parked */
    uint32_t *pending;
    uint32_t *queue;
    bool *queued;
    uint32_t qhead, qlen;
} rf;

static void enqueue(rf *f, uint32_t d)
{
    if (f->queued[d])
        return;
    f->queued[d] = true;
    uint32_t at = f->qhead + f->qlen++;
    f->queue[at >= f->p ? at - f->p : at] = d; /* no division: this runs per group */
}

static bool is_comm(uint8_t kind)
{
    return kind >= PSCHED_OP_SEND_F && kind <= PSCHED_OP_RECV_B;
}

/* SEND_F and RECV_B talk to stage + 1, RECV_F and SEND_B to stage - 1. */
static bool toward_next(uint8_t kind)
{
    return kind == PSCHED_OP_SEND_F || kind == PSCHED_OP_RECV_B;
}

/* Bits of its own cell a compute op needs (its F before a backward, its B
 * before W), and a comm op (a SEND after its producer). */
static const uint16_t own_need[8] = {ALWAYS, RAN_F, RAN_B, RAN_F, RAN_F, ALWAYS, RAN_BACK, ALWAYS};
/* 2 x cell + this is the transfer's number (see posted) */
static const int32_t key_adjust[4] = {0, -2, -1, 1};

/* A parked device's op was matched. */
static void matched(rf *f, uint32_t e)
{
    if (--f->pending[e] == 0) {
        f->cursor[e] = f->group_end[e];
        f->group_end[e] = 0;
        enqueue(f, e);
    }
}

/* Posts transfer `key` of device d on channel entry `cp` (chan_of); false
 * when not the fast path's (a mismatch, a full queue). A match completes
 * the RECV: its consumer may run. */
static inline bool post(rf *f, uint32_t d, uint32_t cp, posted key, bool send)
{
    chan *c = &f->ch[cp & 0xffffu];
    if (c->len > 0 && c->sends != send) {
        posted other = c->q[c->head];
        c->head = (c->head + 1) % QCAP;
        c->len--;
        if (other != key)
            return false;
        uint32_t back = key & 1;
        f->cell[(key >> 1) + !back] |= (cell_state)COMM(back ? DONE_RECV_B : DONE_RECV_F);
        matched(f, cp >> 16);
        return true;
    }
    if (c->len == QCAP)
        return false;
    c->sends = send;
    c->q[(c->head + c->len++) % QCAP] = key;
    f->pending[d]++;
    return true;
}

/* The input of compute op o (on device d) from stage `from` of cell
 * `cell`: on the device itself it ran (`need` bit, and not in the pair
 * [pair0, pair1) being run), from another device its RECV is done. */
static bool input_ok(const rf *f, uint32_t d, size_t cell, uint8_t need, uint32_t from,
                     uint8_t done, size_t own)
{
    if (f->stage_device[from] == d)
        return (f->cell[cell] & need) != 0;
    return (f->cell[own] & COMM(done)) != 0;
}

/* Rule 1 for compute op g of device d, one of an overlapped pair; sets
 * nothing (the pair's bits are set once both are checked). */
static bool compute_ok(const rf *f, uint32_t d, size_t g)
{
    const psched_op *o = &f->ops[g];
    uint32_t s = o->stage;
    if (o->kind > PSCHED_OP_BW || s >= f->S || o->microbatch >= f->mbs ||
        f->stage_device[s] != d || (o->flags & PSCHED_OP_BATCH_NEXT))
        return false;
    size_t cell = (size_t)o->microbatch * f->S + s;
    if (f->cell[cell] & (1u << o->kind))
        return false;
    bool first = f->stage_flags[s] & PSCHED_EXEC_FIRST, last = f->stage_flags[s] & PSCHED_EXEC_LAST;
    switch (o->kind) {
    case PSCHED_OP_F:
        return first || input_ok(f, d, cell - 1, RAN_F, s - 1, DONE_RECV_F, cell);
    case PSCHED_OP_W:
        return (f->cell[cell] & RAN_B) != 0;
    default: /* B, BW */
        if (!(f->cell[cell] & RAN_F))
            return false;
        return last || input_ok(f, d, cell + 1, RAN_BACK, s + 1, DONE_RECV_B, cell);
    }
}

/* An overlapped pair at g (rule 1 for both, checked before either runs). */
static bool run_pair(rf *f, uint32_t d, size_t g, size_t last)
{
    const psched_op *ops = f->ops;
    if (g + 1 >= last || (ops[g + 1].flags & PSCHED_OP_OVERLAP_NEXT) ||
        ops[g + 1].kind > PSCHED_OP_BW || !compute_ok(f, d, g) || !compute_ok(f, d, g + 1))
        return false;
    for (size_t u = g; u < g + 2; u++) {
        size_t cell = (size_t)ops[u].microbatch * f->S + ops[u].stage;
        if (f->cell[cell] & (1u << ops[u].kind))
            return false; /* the pair's two ops are one */
        f->cell[cell] |= (cell_state)(1u << ops[u].kind);
    }
    return true;
}

/* Runs device d until its list ends or it waits for a group; false when
 * not the fast path's. Each op: range and placement; a compute op (rule
 * 1): not run yet, its own cell's needs and its input (f->input); a comm
 * op (rules 2, 5): a channel (a neighbour stage of its chain on another
 * device, f->chan_of), not posted yet, a SEND after its producer, then
 * posted (rules 3, 4). */
static bool run_device(rf *f, uint32_t d)
{
    const psched_op *ops = f->ops;
    cell_state *cells = f->cell;
    const uint32_t S = f->S, mbs = f->mbs;
    size_t last = f->offset[d + 1], g = f->cursor[d];
    while (g < last) {
        psched_op o = ops[g];
        uint32_t s = o.stage;
        if ((s >= S) | (o.microbatch >= mbs) || f->stage_device[s] != d)
            return false;
        size_t c = (size_t)o.microbatch * S + s;
        if (o.kind <= PSCHED_OP_BW) {
            if (o.flags) {
                if ((o.flags & PSCHED_OP_BATCH_NEXT) || !run_pair(f, d, g, last))
                    return false;
                g += 2;
                continue;
            }
            unsigned st = cells[c], bit = 1u << o.kind;
            input_need in = f->input[4 * s + o.kind];
            if ((st & bit) || !(st & own_need[o.kind]) || !(cells[c + in.off] & in.mask))
                return false;
            cells[c] = (cell_state)(st | bit);
            g++;
            continue;
        }
        if (o.kind > PSCHED_OP_RECV_B)
            return false;
        size_t group = g;
        for (;;) {
            uint32_t k = o.kind - PSCHED_OP_SEND_F, cp = f->chan_of[4 * s + k];
            unsigned st = cells[c], bit = COMM(1u << k);
            if (cp == NOBODY || (o.flags & PSCHED_OP_OVERLAP_NEXT) || (st & bit) ||
                !(st & own_need[o.kind]))
                return false;
            cells[c] = (cell_state)(st | bit);
            if (!post(f, d, cp, (posted)(2 * c + (size_t)(int64_t)key_adjust[k]), !(k & 1)))
                return false;
            g++;
            if (!(o.flags & PSCHED_OP_BATCH_NEXT))
                break;
            if (g >= last)
                return false;
            o = ops[g];
            s = o.stage;
            if (!is_comm(o.kind) || (s >= S) | (o.microbatch >= mbs) || f->stage_device[s] != d)
                return false;
            c = (size_t)o.microbatch * S + s;
        }
        if (f->pending[d] > 0) {
            f->cursor[d] = group;
            f->group_end[d] = g;
            return true;
        }
    }
    f->cursor[d] = g;
    return true;
}

bool psched__rendezvous_fast_check(const psched_schedule *s)
{
    const psched_plan *plan = s->plan;
    uint32_t p = s->devices, S = plan->devices * plan->chunks;
    uint32_t mbs = psched__plan_chain_mbs(plan);
    size_t total = s->offset[p], cells = (size_t)S * mbs;
    if (s->lower_mode != PSCHED_LOWER_RENDEZVOUS || p > 256 || total >= UINT32_MAX ||
        cells > 4 * total + 4096 || cells >= UINT32_MAX / 2 - 2)
        return false; /* a transfer's number takes 2 x cells */
    rf f = {.ops = s->ops, .offset = s->offset, .p = p, .S = S, .mbs = mbs,
            .per = S / (plan->chains ? plan->chains : 1)};
    f.stage_device = psched__reallocarray(NULL, (size_t)S + 1, sizeof *f.stage_device);
    f.stage_flags = psched__reallocarray(NULL, (size_t)S + 1, sizeof *f.stage_flags);
    f.input = psched__reallocarray(NULL, 4 * (size_t)S + 1, sizeof *f.input);
    f.chan_of = psched__reallocarray(NULL, 4 * (size_t)S + 1, sizeof *f.chan_of);
    f.cell = psched__reallocarray(NULL, cells + 1, sizeof *f.cell);
    f.ch = psched__calloc((size_t)p * p + 1, sizeof *f.ch);
    f.cursor = psched__reallocarray(NULL, (size_t)p + 1, sizeof *f.cursor);
    f.group_end = psched__calloc((size_t)p + 1, sizeof *f.group_end);
    f.pending = psched__calloc((size_t)p + 1, sizeof *f.pending);
    f.queue = psched__reallocarray(NULL, (size_t)p + 1, sizeof *f.queue);
    f.queued = psched__calloc((size_t)p + 1, sizeof *f.queued);
    bool ok = f.stage_device && f.stage_flags && f.input && f.chan_of && f.cell && f.ch &&
              f.cursor && f.group_end && f.pending && f.queue && f.queued;
    for (uint32_t st = 0; ok && st < S; st++) {
        f.stage_device[st] = psched_plan_stage_device(plan, st);
        f.stage_flags[st] = (uint8_t)((st % f.per == 0 ? PSCHED_EXEC_FIRST : 0) |
                                      (st % f.per == f.per - 1 ? PSCHED_EXEC_LAST : 0));
    }
    for (uint32_t st = 0; ok && st < S; st++) {
        uint32_t dev = f.stage_device[st];
        bool first = f.stage_flags[st] & PSCHED_EXEC_FIRST;
        bool last = f.stage_flags[st] & PSCHED_EXEC_LAST;
        input_need none = {0, ALWAYS}, fwd = none, back = none;
        if (!first)
            fwd = f.stage_device[st - 1] == dev ? (input_need){-1, RAN_F}
                                                : (input_need){0, COMM(DONE_RECV_F)};
        if (!last)
            back = f.stage_device[st + 1] == dev ? (input_need){1, RAN_BACK}
                                                 : (input_need){0, COMM(DONE_RECV_B)};
        f.input[4 * st + PSCHED_OP_F] = fwd;
        f.input[4 * st + PSCHED_OP_B] = back;
        f.input[4 * st + PSCHED_OP_W] = none;
        f.input[4 * st + PSCHED_OP_BW] = back;
        for (uint8_t kind = PSCHED_OP_SEND_F; kind <= PSCHED_OP_RECV_B; kind++) {
            bool next = toward_next(kind);
            bool send = kind == PSCHED_OP_SEND_F || kind == PSCHED_OP_SEND_B;
            uint32_t *at = &f.chan_of[4 * st + kind - PSCHED_OP_SEND_F];
            *at = NOBODY;
            if (next ? last : first)
                continue;
            uint32_t peer = f.stage_device[next ? st + 1 : st - 1];
            if (peer != dev)
                *at = (send ? dev * p + peer : peer * p + dev) | peer << 16;
        }
    }
    for (size_t c = 0; ok && c < cells; c++)
        f.cell[c] = ALWAYS;
    for (uint32_t d = 0; ok && d < p; d++) {
        f.cursor[d] = s->offset[d];
        enqueue(&f, d);
    }
    while (ok && f.qlen) {
        uint32_t d = f.queue[f.qhead];
        f.qhead = f.qhead + 1 == p ? 0 : f.qhead + 1;
        f.qlen--;
        f.queued[d] = false;
        ok = run_device(&f, d);
    }
    for (uint32_t d = 0; ok && d < p; d++)
        ok = f.cursor[d] == s->offset[d + 1];
    /* rule 1's counts: every cell one F and either BW or B and W */
    for (size_t c = 0; ok && c < cells; c++) {
        uint8_t e = (uint8_t)f.cell[c];
        ok = e == (RAN_F | RAN_B | RAN_W) || e == (RAN_F | RAN_BW);
    }
    psched__dealloc(f.stage_device);
    psched__dealloc(f.stage_flags);
    psched__dealloc(f.input);
    psched__dealloc(f.chan_of);
    psched__dealloc(f.cell);
    psched__dealloc(f.ch);
    psched__dealloc(f.cursor);
    psched__dealloc(f.group_end);
    psched__dealloc(f.pending);
    psched__dealloc(f.queue);
    psched__dealloc(f.queued);
    return ok;
}
