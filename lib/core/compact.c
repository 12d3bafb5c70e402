/* Validation of a compact schedule (psched_generate_write): the fast
 * path's run (execute.c, "The fast path") on the builder's 32-bit codes
 * instead of psched_ops, for validation only (no times).
 *
 * It agrees with psched__execute_fast on every schedule the codes can
 * hold, by the same argument: one byte per (stage, micro-batch) cell says
 * which of F, B, W, BW have run; an op's inputs are bits of its own and
 * its neighbour stages' cells; a device whose input on another device has
 * not run parks on that (cell, F or backward) and the op's end wakes it;
 * an input on its own device that has not run, a duplicate, a malformed
 * pair, a device left waiting or a bad count ends the run with "cannot
 * tell", and the caller then validates the expanded schedule, whose
 * general engine names the failure. The builder already refused what pass
 * 1 checks per op (kind, range, placement: a code holds only F, B, W, BW
 * of a stage of its device, micro-batch in range), so the run checks the
 * rest. tests/test_stream.c compares the verdict with psched_validate()'s
 * on generated schedules and corrupted copies. */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "internal.h"
#include "memadvise.h"

#include <string.h>


enum {
    HAS_F = 1u << PSCHED_OP_F,
    HAS_B = 1u << PSCHED_OP_B,
    HAS_W = 1u << PSCHED_OP_W,
    HAS_BW = 1u << PSCHED_OP_BW,
    RAN_F = HAS_F,
    RAN_BACK = HAS_B | HAS_BW,
};
#define STAGE_FIRST 0x1u
#define STAGE_LAST 0x2u
#define NOBODY SIZE_MAX

enum { RUN_PARK, RUN_READY, RUN_FAIL };

typedef struct cstage {
    uint32_t prev, next; /* devices of the neighbour stages (own device at a chain end) */
    uint8_t flags;
} cstage;

/* A device's place in the run. Parked on a single op, it keeps that op
 * decoded: the op's other inputs were met before it parked (they are
 * checked first, and on the device itself they cannot wait), and it is
 * woken exactly when the one it waits on runs, so it resumes by running
 * the op without reading, decoding and checking it again. In 1F1B at p =
 * 1024 a device runs one or two ops per turn, so that is a third of the
 * codes read (fix 10 in bench/RESULTS.md). */
typedef struct cdev {
    size_t cursor;  /* next op; while parked, the op it waits to run */
    size_t waiting; /* 2 x cell + 1 for a backward it waits on, or NOBODY */
    size_t cell;    /* the op it waits to run, when `resume` */
    uint32_t stage;
    uint8_t kind;
    bool resume;    /* parked on a single op (not a pair) */
} cdev;

typedef struct crun {
    const psched_compact *c;
    uint32_t p, S, v;
    unsigned cb;
    uint8_t *cell; /* [mb*S + stage] */
    const cstage *stages;
    cdev *dv;
    /* a stack of devices ready to run: the device woken last runs next.
     * Only a parked device is woken, so none is on it twice. */
    uint32_t *queue;
    uint32_t qlen;
} crun;

static void enqueue(crun *r, uint32_t d)
{
#if defined(__GNUC__)
    /* the device resumes at its cursor's op a few devices later: its
     * codes are one of p streams, rarely still in cache */
    __builtin_prefetch(&r->c->code[r->dv[d].cursor + 1]);
#endif
    r->queue[r->qlen++] = d;
}

static inline int input(crun *r, uint32_t d, size_t c, uint8_t ran, uint32_t dd)
{
    if (r->cell[c] & ran)
        return RUN_READY;
    if (dd == d)
        return RUN_FAIL;
    r->dv[d].waiting = 2 * c + (ran == RAN_BACK);
    return RUN_PARK;
}

/* Stage, cell and kind of a code of device d. */
static inline void decode(const crun *r, uint32_t d, uint32_t code, uint32_t *stage, size_t *cell,
                          uint8_t *kind)
{
    uint32_t chunk = (code >> PSCHED_CODE_SHIFT) & ((1u << r->cb) - 1);
    *stage = r->c->stage_of[(size_t)d * r->v + chunk];
    *cell = (size_t)(code >> (PSCHED_CODE_SHIFT + r->cb)) * r->S + *stage;
    *kind = (uint8_t)(code & 3u);
}

/* Marks op `kind` of cell c (stage s) as run and wakes the device parked
 * on it; false for a duplicate. */
static inline bool mark(crun *r, uint32_t d, uint32_t s, size_t c, uint8_t kind)
{
    uint8_t bit = (uint8_t)(1u << kind);
    if (r->cell[c] & bit)
        return false;
    r->cell[c] |= bit;
    const cstage *st = &r->stages[s];
    uint32_t other;
    size_t key;
    if (kind == PSCHED_OP_F) {
        if (st->flags & STAGE_LAST)
            return true;
        other = st->next;
        key = 2 * c;
    } else if (kind == PSCHED_OP_W) {
        return true;
    } else {
        if (st->flags & STAGE_FIRST)
            return true;
        other = st->prev;
        key = 2 * c + 1;
    }
    if (other != d && r->dv[other].waiting == key) {
        r->dv[other].waiting = NOBODY;
        enqueue(r, other);
    }
    return true;
}

/* The inputs of op `kind` of cell c (stage s): RUN_READY when all ran. */
static inline int inputs(crun *r, uint32_t d, uint32_t s, size_t c, uint8_t kind)
{
    const cstage *st = &r->stages[s];
    if (kind == PSCHED_OP_F)
        return st->flags & STAGE_FIRST ? RUN_READY : input(r, d, c - 1, RAN_F, st->prev);
    if (kind == PSCHED_OP_W)
        return input(r, d, c, RAN_BACK, d);
    int res = input(r, d, c, RAN_F, d);
    if (res == RUN_READY && !(st->flags & STAGE_LAST))
        res = input(r, d, c + 1, RAN_BACK, st->next);
    return res;
}

/* Runs device d until its list ends or it waits for another device. */
static int run_device(crun *r, uint32_t d)
{
    const uint32_t *code = r->c->code;
    cdev *me = &r->dv[d];
    size_t last = r->c->offset[d + 1], g = me->cursor;
    int res = RUN_READY;
#if defined(__GNUC__)
    /* the line after: a turn runs a few ops */
    __builtin_prefetch(&code[g + 16 < last ? g + 16 : g]);
#endif
    if (me->resume) {
        me->resume = false;
        if (!mark(r, d, me->stage, me->cell, me->kind))
            return RUN_FAIL; /* a duplicate */
        g++;
    }
    while (g < last) {
        uint32_t s;
        size_t c;
        uint8_t kind;
        decode(r, d, code[g], &s, &c, &kind);
        if (!(code[g] & PSCHED_CODE_OVERLAP)) {
            res = inputs(r, d, s, c, kind);
            if (res != RUN_READY) {
                *me = (cdev){.cursor = g, .waiting = me->waiting, .cell = c, .stage = s,
                             .kind = kind, .resume = res == RUN_PARK};
                return res;
            }
            if (!mark(r, d, s, c, kind)) {
                res = RUN_FAIL; /* a duplicate */
                break;
            }
            g++;
            continue;
        }
        /* an overlapped pair: both ops' inputs first, then both run */
        if (g + 1 >= last || (code[g + 1] & PSCHED_CODE_OVERLAP)) {
            res = RUN_FAIL;
            break;
        }
        uint32_t s2;
        size_t c2;
        uint8_t kind2;
        decode(r, d, code[g + 1], &s2, &c2, &kind2);
        res = inputs(r, d, s, c, kind);
        if (res == RUN_READY)
            res = inputs(r, d, s2, c2, kind2);
        if (res != RUN_READY)
            break;
        if (!mark(r, d, s, c, kind) || !mark(r, d, s2, c2, kind2)) {
            res = RUN_FAIL;
            break;
        }
        g += 2;
    }
    me->cursor = g;
    return res;
}

static bool run_all(crun *r, size_t cells)
{
    for (uint32_t d = r->p; d-- > 0;)
        enqueue(r, d); /* device 0 on top */
    while (r->qlen) {
        uint32_t d = r->queue[--r->qlen];
        if (run_device(r, d) == RUN_FAIL)
            return false;
    }
    for (uint32_t d = 0; d < r->p; d++)
        if (r->dv[d].cursor != r->c->offset[d + 1])
            return false; /* left waiting: a deadlock */
    /* every cell holds F, B and W, or F and BW */
    unsigned bad = 0;
    for (size_t c = 0; c < cells; c++) {
        uint8_t e = r->cell[c];
        bad |= (e != (HAS_F | HAS_B | HAS_W)) & (e != (HAS_F | HAS_BW));
    }
    return !bad;
}

bool psched__compact_valid(const psched_compact *c)
{
    const psched_plan *plan = c->plan;
    uint32_t p = c->devices, S = plan->devices * plan->chunks;
    uint32_t mbs = psched__plan_chain_mbs(plan);
    size_t total = c->offset[p], cells = (size_t)S * mbs;
    /* a valid schedule has at least two ops per cell */
    if (p == 0 || S == 0 || cells > total + 4096)
        return false;
    crun r = {.c = c, .p = p, .S = S, .v = c->chunks, .cb = c->chunk_bits};
    cstage *stages = psched__calloc(S, sizeof *stages);
    r.cell = psched__calloc(cells, 1);
    r.dv = psched__calloc(p, sizeof *r.dv);
    r.queue = psched__reallocarray(NULL, p, sizeof *r.queue);
    bool ok = stages && r.cell && r.dv && r.queue;
    if (ok) {
        uint32_t per = S / (plan->chains ? plan->chains : 1);
        for (uint32_t st = 0; st < S; st++) {
            cstage *x = &stages[st];
            uint32_t dev = psched_plan_stage_device(plan, st);
            x->flags = (uint8_t)((st % per == 0 ? STAGE_FIRST : 0) |
                                 (st % per == per - 1 ? STAGE_LAST : 0));
            x->prev = st % per ? psched_plan_stage_device(plan, st - 1) : dev;
            x->next = st % per != per - 1 ? psched_plan_stage_device(plan, st + 1) : dev;
        }
        r.stages = stages;
        psched__advise_huge(r.cell, cells);
        for (uint32_t d = 0; d < p; d++)
            r.dv[d] = (cdev){.cursor = c->offset[d], .waiting = NOBODY};
        ok = run_all(&r, cells);
    }
    psched__dealloc(stages);
    psched__dealloc(r.cell);
    psched__dealloc(r.dv);
    psched__dealloc(r.queue);
    return ok;
}
