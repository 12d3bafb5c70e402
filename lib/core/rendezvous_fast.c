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
 *      chain on another device, no OVERLAP_NEXT, BATCH_NEXT only towards
 *      another comm op of the device; no BATCH_NEXT on a compute op, no
 *      comm op in a pair; no duplicate: see 3, 4;
 *   3, 4. calls between two devices match in posting order, per direction
 *      (NCCL): a device pair's k-th SEND meets the receiver's k-th RECV
 *      from it, and the two must carry the same (stage pair, micro-batch,
 *      direction); every device finishing means every posted op was
 *      matched. A match completes its transfer, and a transfer completed
 *      twice fails: so a duplicated SEND or RECV (which needs a second
 *      match of the same transfer, or is never matched) is refused without
 *      a bit per posted call, and SENDs and RECVs pair one to one;
 *   5. a SEND is posted after its producer ran on the device; a compute op
 *      fed from another device runs only when its RECV completed, so that
 *      RECV exists and comes earlier;
 *   and the run: a group (ops chained by BATCH_NEXT) is posted at once and
 *   the device waits until each of its ops is matched; a device left
 *   waiting means a deadlock (the general engine names the cycle).
 * A queue holds a device pair's posted, unmatched calls of one side; a
 * device posts one group before it waits, so queues stay short (longer
 * than QCAP: not the fast path's).
 *
 * Everything an op's checks need that depends only on its (stage, kind) is
 * one 16-byte entry of a table made once per check (`rule`): the device it
 * belongs on (or none), which bits of its own cell must be set and which
 * clear, the cell and bit holding its input, the bits it sets; for a comm
 * op its channel, peer and transfer number. An op is then a handful of
 * loads and compares; the channels actually used are numbered densely so
 * their state stays in the first-level cache. The outcome does not depend
 * on the order devices run in (a device's progress depends only on which
 * calls were matched, and each channel matches in posting order), so the
 * device woken last runs first, while what it needs is still in cache;
 * failures are marked unlikely, so the valid path is laid out straight
 * (fix 10 in bench/RESULTS.md).
 */
#include "execute.h"

#define QCAP 16u
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NODEV 0xffffu

enum {
    /* bits 0-3: the compute kinds that ran (1 << kind) */
    RAN_F = 1u << PSCHED_OP_F,
    RAN_B = 1u << PSCHED_OP_B,
    RAN_W = 1u << PSCHED_OP_W,
    RAN_BW = 1u << PSCHED_OP_BW,
    /* B or BW ran: one bit, so that "needs a backward" is one test */
    RAN_BACK = 1u << 4,
    /* the cell's RECV_F / RECV_B completed */
    DONE_RECV_F = 1u << 8,
    DONE_RECV_B = 1u << 9,
    /* set in every cell: the input of an op that has none */
    ALWAYS = 0x8000u,
};

/* A posted op as its channel keeps it, one number per transfer (what a
 * match compares): 2 x the cell of the transfer's lower stage, + 1 for a
 * backward transfer. SEND_F of stage s and RECV_F of s + 1 (same micro-
 * batch) give 2 (mb*S + s); SEND_B of s + 1 and RECV_B of s give
 * 2 (mb*S + s) + 1. */
typedef uint32_t posted;

typedef struct chan {
    posted q[QCAP];    /* posted, unmatched ops, oldest first */
    uint8_t head, len; /* not bigger: see cell_state */
    bool sends;        /* the queued ops are SENDs (else RECVs) */
} chan;

/* What one (stage, micro-batch) has seen so far (the bits above). 16 bits,
 * not two bytes: a store through a character type could alias anything,
 * and the compiler would reload every field of the state after each one. */
typedef uint16_t cell_state;

/* The checks of op kind k at stage s, [8*s + k]. The op's own cell must
 * satisfy (state & mask) == want: its own bit clear (no duplicate), what
 * must come before it set (F before a backward, B before W, the producer
 * before a SEND, the RECV of an input from another device). */
typedef struct rule {
    uint16_t dev; /* the device it runs on; NODEV: never valid (no channel) */
    uint16_t mask, want;
    union {
        struct {                /* compute ops */
            uint16_t set;       /* bits it sets in its own cell */
            uint16_t in_mask;   /* a bit of cell + in_off that must be set */
            int16_t in_off;
        };
        struct {                /* comm ops */
            uint16_t chan;      /* dense channel number */
            uint16_t peer;      /* the device at the other end */
            int16_t key_off;    /* 2 x cell + key_off = the transfer (posted) */
        };
    };
    uint16_t done;   /* comm: the DONE_RECV_* bit of its transfer */
    int8_t recv_off; /* comm: the cell of its transfer's RECV - its own cell */
    uint8_t send;    /* comm: a SEND (else a RECV) */
} rule;

typedef struct dev_state {
    size_t cursor;    /* next op; the first op of the group it waits on */
    size_t group_end; /* end of the group it waits on */
    uint32_t pending; /* its posted ops not matched yet */
} dev_state;

typedef struct rf {
    const psched_op *ops;
    const size_t *offset;
    uint32_t p, S, mbs;
    rule *rules;       /* [8*stage + kind] */
    cell_state *cell;  /* [mb*S + stage] */
    chan *ch;          /* dense channel numbers */
    dev_state *dv;     /* [device] */
    uint32_t *ready;   /* a stack of devices ready to run, each at most once */
    uint32_t nready;
} rf;

/* The op's rule, or NULL when its stage, micro-batch or kind is out of
 * range or it does not belong on device d. */
static inline const rule *rule_of(const rule *rules, uint32_t S, uint32_t mbs, psched_op o,
                                  uint32_t d)
{
    if (o.stage >= S || o.microbatch >= mbs || o.kind > PSCHED_OP_RECV_B)
        return NULL;
    const rule *r = &rules[8 * (size_t)o.stage + o.kind];
    return r->dev == d ? r : NULL;
}

/* An overlapped pair at g (rule 1 for both, checked before either runs;
 * the pair's ops are two compute ops, the first flagged OVERLAP_NEXT and
 * nothing else, the second unflagged). */
static bool run_pair(rf *f, uint32_t d, size_t g, size_t last)
{
    const psched_op *o = &f->ops[g];
    if (g + 1 >= last || o[0].flags != PSCHED_OP_OVERLAP_NEXT || o[1].flags != 0 ||
        o[0].kind > PSCHED_OP_BW || o[1].kind > PSCHED_OP_BW)
        return false;
    const rule *r[2];
    size_t c[2];
    for (int u = 0; u < 2; u++) {
        r[u] = rule_of(f->rules, f->S, f->mbs, o[u], d);
        if (!r[u])
            return false;
        c[u] = (size_t)o[u].microbatch * f->S + o[u].stage;
        if ((f->cell[c[u]] & r[u]->mask) != r[u]->want ||
            !(f->cell[c[u] + r[u]->in_off] & r[u]->in_mask))
            return false;
    }
    f->cell[c[0]] |= r[0]->set;
    if ((f->cell[c[1]] & r[1]->mask) != r[1]->want)
        return false; /* the pair's two ops are one */
    f->cell[c[1]] |= r[1]->set;
    return true;
}

/* Runs device d until its list ends or it waits for a group; false when
 * not the fast path's. A compute op (rule 1): its own cell's state and its
 * input. A comm op (rules 2, 5): its rule (a channel), its producer, then
 * posted (rules 3, 4): it meets the oldest call of the other side queued
 * on its channel, which must be the same transfer, not completed yet (the
 * match completes the RECV: its consumer may run; the peer, waiting on its
 * group, is ready once all of it matched), or it is queued. */
static bool run_device(rf *f, uint32_t d)
{
    const psched_op *ops = f->ops;
    const rule *rules = f->rules;
    cell_state *cells = f->cell;
    chan *chans = f->ch;
    dev_state *dv = f->dv;
    const uint32_t S = f->S, mbs = f->mbs;
    size_t last = f->offset[d + 1], g = dv[d].cursor;
    while (g < last) {
        psched_op o = ops[g];
        const rule *r = rule_of(rules, S, mbs, o, d);
        if (UNLIKELY(!r))
            return false;
        size_t c = (size_t)o.microbatch * S + o.stage;
        unsigned st = cells[c];
        if (UNLIKELY((st & r->mask) != r->want))
            return false;
        if (o.kind <= PSCHED_OP_BW) {
            if (UNLIKELY(o.flags)) {
                if (UNLIKELY(!run_pair(f, d, g, last)))
                    return false;
                g += 2;
                continue;
            }
            if (UNLIKELY(!(cells[c + r->in_off] & r->in_mask)))
                return false;
            cells[c] = (cell_state)(st | r->set);
            g++;
            continue;
        }
        size_t group = g;
        uint32_t pending = 0;
        for (;;) {
            if (UNLIKELY(o.flags & ~PSCHED_OP_BATCH_NEXT))
                return false;
            posted key = (posted)(2 * c + (size_t)(int64_t)r->key_off);
            chan *ch = &chans[r->chan];
            if (ch->len > 0 && ch->sends != r->send) {
                posted other = ch->q[ch->head];
                ch->head = (uint8_t)((ch->head + 1) & (QCAP - 1));
                ch->len--;
                cell_state *rc = &cells[c + r->recv_off];
                if (UNLIKELY(other != key || (*rc & r->done)))
                    return false;
                *rc = (cell_state)(*rc | r->done);
                dev_state *e = &dv[r->peer];
                if (--e->pending == 0) {
                    e->cursor = e->group_end;
                    /* it runs next (last ready, first run): fetch its ops */
                    __builtin_prefetch(&ops[e->cursor]);
                    __builtin_prefetch(&ops[e->cursor + 5]);
                    f->ready[f->nready++] = r->peer;
                }
            } else {
                if (UNLIKELY(ch->len == QCAP))
                    return false;
                ch->sends = r->send;
                ch->q[(ch->head + ch->len++) & (QCAP - 1)] = key;
                pending++;
            }
            g++;
            if (!(o.flags & PSCHED_OP_BATCH_NEXT))
                break;
            if (UNLIKELY(g >= last))
                return false;
            o = ops[g];
            r = rule_of(rules, S, mbs, o, d);
            if (UNLIKELY(!r || o.kind < PSCHED_OP_SEND_F))
                return false;
            c = (size_t)o.microbatch * S + o.stage;
            if (UNLIKELY((cells[c] & r->mask) != r->want))
                return false;
        }
        if (pending > 0) {
            dv[d].cursor = group;
            dv[d].group_end = g;
            dv[d].pending = pending;
            return true;
        }
    }
    dv[d].cursor = g;
    return true;
}

/* A compute op's rule on device d: the bits of its cell it reads (mask),
 * which of them must be set (want), and the bits it sets; its input cell
 * (in_off, in_mask) is its own until the caller says otherwise. */
static rule compute_rule(uint32_t d, uint16_t mask, uint16_t want, uint16_t set)
{
    return (rule){.dev = (uint16_t)d, .mask = mask, .want = want, .set = set, .in_mask = ALWAYS};
}

/* Fills f->rules and numbers the channels; false when out of memory. */
static bool make_rules(rf *f, const psched_plan *plan)
{
    uint32_t S = f->S, p = f->p, per = S / (plan->chains ? plan->chains : 1);
    uint32_t *dev = psched__reallocarray(NULL, (size_t)S + 1, sizeof *dev);
    uint16_t *chan_id = psched__reallocarray(NULL, (size_t)p * p + 1, sizeof *chan_id);
    if (!dev || !chan_id) {
        psched__dealloc(dev);
        psched__dealloc(chan_id);
        return false;
    }
    for (uint32_t st = 0; st < S; st++)
        dev[st] = psched_plan_stage_device(plan, st);
    for (size_t k = 0; k < (size_t)p * p; k++)
        chan_id[k] = NODEV;
    uint32_t channels = 0;
    for (uint32_t st = 0; st < S; st++) {
        uint32_t d = dev[st];
        bool first = st % per == 0, last = st % per == per - 1;
        rule *r = &f->rules[8 * (size_t)st];
        /* compute ops: own bit clear, F before a backward, B before W */
        r[PSCHED_OP_F] = compute_rule(d, RAN_F, 0, RAN_F);
        r[PSCHED_OP_B] = compute_rule(d, RAN_B | RAN_F, RAN_F, RAN_B | RAN_BACK);
        r[PSCHED_OP_W] = compute_rule(d, RAN_W | RAN_B, RAN_B, RAN_W);
        r[PSCHED_OP_BW] = compute_rule(d, RAN_BW | RAN_F, RAN_F, RAN_BW | RAN_BACK);
        /* inputs: the neighbour stage's op on this device, else this cell's RECV */
        if (!first) {
            if (dev[st - 1] == d) {
                r[PSCHED_OP_F].in_off = -1;
                r[PSCHED_OP_F].in_mask = RAN_F;
            } else {
                r[PSCHED_OP_F].mask |= DONE_RECV_F;
                r[PSCHED_OP_F].want |= DONE_RECV_F;
            }
        }
        if (!last) {
            for (int k = PSCHED_OP_B; k <= PSCHED_OP_BW; k += PSCHED_OP_BW - PSCHED_OP_B) {
                if (dev[st + 1] == d) {
                    r[k].in_off = 1;
                    r[k].in_mask = RAN_BACK;
                } else {
                    r[k].mask |= DONE_RECV_B;
                    r[k].want |= DONE_RECV_B;
                }
            }
        }
        /* comm ops: a neighbour stage of the chain on another device */
        for (uint8_t kind = PSCHED_OP_SEND_F; kind <= PSCHED_OP_RECV_B; kind++) {
            bool next = kind == PSCHED_OP_SEND_F || kind == PSCHED_OP_RECV_B;
            bool send = kind == PSCHED_OP_SEND_F || kind == PSCHED_OP_SEND_B;
            rule *c = &r[kind];
            *c = (rule){.dev = NODEV};
            if (next ? last : first)
                continue;
            uint32_t peer = dev[next ? st + 1 : st - 1];
            if (peer == d)
                continue;
            uint16_t *id = &chan_id[send ? (size_t)d * p + peer : (size_t)peer * p + d];
            if (*id == NODEV) /* p <= 256: at most p (p - 1) = 65,280 channels */
                *id = (uint16_t)channels++;
            static const int16_t transfer[4] = {0, -2, -1, 1}; /* see posted */
            static const int8_t recv_cell[4] = {1, 0, -1, 0};
            static const uint16_t producer[4] = {RAN_F, 0, RAN_BACK, 0};
            unsigned k = kind - PSCHED_OP_SEND_F;
            *c = (rule){.dev = (uint16_t)d, .mask = producer[k], .want = producer[k],
                        .chan = *id, .peer = (uint16_t)peer, .key_off = transfer[k],
                        .done = next == send ? DONE_RECV_F : DONE_RECV_B,
                        .recv_off = recv_cell[k], .send = send};
        }
    }
    psched__dealloc(dev);
    psched__dealloc(chan_id);
    f->ch = psched__calloc((size_t)channels + 1, sizeof *f->ch);
    return f->ch != NULL;
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
    rf f = {.ops = s->ops, .offset = s->offset, .p = p, .S = S, .mbs = mbs};
    f.rules = psched__reallocarray(NULL, 8 * (size_t)S + 1, sizeof *f.rules);
    f.cell = psched__reallocarray(NULL, cells + 1, sizeof *f.cell);
    f.dv = psched__calloc((size_t)p + 1, sizeof *f.dv);
    f.ready = psched__reallocarray(NULL, (size_t)p + 1, sizeof *f.ready);
    bool ok = f.rules && f.cell && f.dv && f.ready && make_rules(&f, plan);
    for (size_t c = 0; ok && c < cells; c++)
        f.cell[c] = ALWAYS;
    for (uint32_t d = 0; ok && d < p; d++) {
        f.dv[d].cursor = s->offset[d];
        f.ready[f.nready++] = d;
    }
    /* the run's outcome does not depend on the order devices run in; last
     * ready, first run keeps what the device just woken needs in cache */
    while (ok && f.nready)
        ok = run_device(&f, f.ready[--f.nready]);
    for (uint32_t d = 0; ok && d < p; d++)
        ok = f.dv[d].cursor == s->offset[d + 1];
    /* rule 1's counts: every cell one F and either BW or B and W */
    for (size_t c = 0; ok && c < cells; c++) {
        unsigned e = f.cell[c] & (RAN_F | RAN_B | RAN_W | RAN_BW);
        ok = e == (RAN_F | RAN_B | RAN_W) || e == (RAN_F | RAN_BW);
    }
    psched__dealloc(f.rules);
    psched__dealloc(f.cell);
    psched__dealloc(f.ch);
    psched__dealloc(f.dv);
    psched__dealloc(f.ready);
    return ok;
}
