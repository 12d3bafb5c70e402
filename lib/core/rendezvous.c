/* Execution of a lowered schedule (one with SEND/RECV ops) under
 * rendezvous point-to-point semantics, the engine behind psched_validate
 * and psched_simulate for such schedules.
 *
 * Rules, checked in this order, each failure naming device, position, op:
 * 1. compute ops: the DESIGN §2 rules of execute.c (placement, duplicates,
 *    counts, every dependency runs);
 * 2. comm ops: on their stage's device, toward a neighbour stage of the same
 *    chain on another device (none at the tip of a V, between chunks of one
 *    device or across DualPipe chains), no duplicates; BATCH_NEXT only joins
 *    comm ops, OVERLAP_NEXT only compute ops;
 * 3. every SEND has exactly one RECV with the same stage pair, micro-batch
 *    and direction, and vice versa;
 * 4. between two devices, sends and receives are listed in the same order:
 *    NCCL matches point-to-point calls of a device pair in posting order
 *    (inside batched groups too), so a different order would hand one
 *    micro-batch's tensor to another's receive;
 * 5. each SEND after the op producing its tensor, each RECV before the op
 *    consuming it; a compute op fed from another device has its RECV; a
 *    dependency on the same device comes earlier in the list (for the
 *    activation copies too: OFFLOAD after its F, RELOAD after its OFFLOAD,
 *    the backward after its RELOAD).
 * Activation copies (OFFLOAD/RELOAD) are checked by execute.c's pass 1
 * and 3 rules and run as there: issued when the device's list reaches
 * them, on the device's copy stream, without blocking the list; a
 * backward starts no earlier than its RELOAD's end. Op kinds past RELOAD
 * are refused (EUNSUPPORTED).
 * Then every device runs its list in order. A compute op never waits (its
 * inputs from other devices arrive through RECVs earlier in its list). A
 * comm op and the ops chained to it by BATCH_NEXT are posted together, at
 * the device's current time; the group completes when each of its
 * transfers is matched, a transfer completing t_comm after the later of its
 * two posts. A device parked on a group resumes when its last transfer is
 * matched, so the run is O(ops); devices left parked form a deadlock cycle.
 *
 * psched_validate() first tries the fast path of rendezvous_fast.c, which
 * runs these semantics without times and answers only "valid"; anything
 * else comes here, so every message comes from this file.
 *
 * Times: compute ops as in execute.c; a comm op takes no device time, so
 * its start and end are both the completion of its transfer.
 *
 * Async semantics (a schedule from psched_lower_comm_ex() in
 * PSCHED_LOWER_ASYNC mode, run as torch.distributed isend/irecv on NCCL):
 * rules 1-5 alike, and rule 4 for both directions together: the calls
 * between two devices run one at a time on one stream in posting order
 * (one communicator per pair), so both sides must list all their calls to
 * each other, sends and receives, in the same order. Posting a comm op
 * never blocks and BATCH_NEXT changes nothing. A transfer completes t_comm
 * after the latest of its SEND's post, its RECV's post and the completion
 * of the pair's previous transfer; a compute op fed from another device
 * waits for it. A device parks on the compute op whose transfer is not
 * complete and resumes when it is; devices left parked form a cycle of
 * waits (the compute op waits for the transfer's SEND, or for the RECV
 * when the SEND is posted), reported as a deadlock. */
#include "execute.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NONE PSCHED_EXEC_NONE

typedef struct rv {
    psched_exec x;
    uint32_t *comm;     /* [(stage*mbs + mb)*4 + kind - SEND_F] -> global index, or NONE */
    uint32_t *peer;     /* [g] the comm op a comm op pairs with */
    uint32_t *rank;     /* [g] position of a comm op among its device pair's sends or receives */
    uint32_t *count;    /* [2p] scratch counters per peer device and direction */
    double *post;       /* [g] time a comm op was posted, -1 before */
    size_t *group_end;  /* [d] one past the group device d has posted, 0 when none */
    uint32_t *pending;  /* [d] transfers of that group not matched yet */
    double *group_done; /* [d] completion of that group's latest matched transfer */
    size_t *stuck;      /* [d] first unmatched op of a parked group, for the report */
    bool async;         /* PSCHED_LOWER_ASYNC semantics */
    uint32_t *prev;     /* [g] async: the comm op before g between its two devices, or NONE */
    uint32_t *next;     /* [g] async: the one after it */
    uint32_t *last;     /* [d] scratch: latest comm op toward device d */
} rv;

static bool is_comm(uint8_t kind)
{
    return kind >= PSCHED_OP_SEND_F && kind <= PSCHED_OP_RECV_B;
}

/* A vocabulary pass or a collective (collective.c runs them): `stage` is a
 * shard or an index, not a stage. */
static bool is_coll(uint8_t kind)
{
    return kind >= PSCHED_OP_VOCAB_S;
}

static bool is_send(uint8_t kind)
{
    return kind == PSCHED_OP_SEND_F || kind == PSCHED_OP_SEND_B;
}

/* SEND_F and RECV_B talk to stage + 1, RECV_F and SEND_B to stage - 1. */
static bool toward_next(uint8_t kind)
{
    return kind == PSCHED_OP_SEND_F || kind == PSCHED_OP_RECV_B;
}

static uint8_t partner_kind(uint8_t kind)
{
    switch (kind) {
    case PSCHED_OP_SEND_F: return PSCHED_OP_RECV_F;
    case PSCHED_OP_RECV_F: return PSCHED_OP_SEND_F;
    case PSCHED_OP_SEND_B: return PSCHED_OP_RECV_B;
    default: return PSCHED_OP_SEND_B;
    }
}

static uint32_t *comm_slot(rv *r, uint32_t stage, uint32_t mb, uint8_t kind)
{
    return &r->comm[((size_t)stage * r->x.mbs + mb) * 4 + (kind - PSCHED_OP_SEND_F)];
}

/* The compute op whose tensor a comm op carries: the producer of a SEND,
 * the consumer of a RECV (same stage and micro-batch). */
static uint32_t compute_of(const rv *r, const psched_op *o)
{
    if (o->kind == PSCHED_OP_SEND_F || o->kind == PSCHED_OP_RECV_F)
        return psched__exec_at(&r->x, o->stage, o->microbatch, PSCHED_SLOT_F);
    return psched__exec_backward(&r->x, o->stage, o->microbatch);
}

static void name_op(uint32_t stage, uint32_t mb, uint8_t kind, char *buf, size_t size)
{
    psched_op o = {stage, mb, 0, kind, 0};
    psched__op_text(&o, buf, size);
}

/* EINVALID "device 1 op 7 (1SEND_F3): <rule>"; the op's stage may be out of
 * range, so its device is passed rather than looked up. */
static psched_status op_fail(const rv *r, uint32_t d, size_t g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static psched_status op_fail(const rv *r, uint32_t d, size_t g, const char *fmt, ...)
{
    char t[48], why[400];
    va_list ap;
    psched__op_text(&r->x.s->ops[g], t, sizeof t);
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): %s", d, g - r->x.s->offset[d], t,
                       why);
}

/* An op kind this engine does not run (one added after COLLECTIVE). */
static psched_status unknown_kind(const rv *r, uint32_t d, size_t g)
{
    char t[48];
    psched__op_text(&r->x.s->ops[g], t, sizeof t);
    return psched_fail(PSCHED_EUNSUPPORTED, "device %u op %zu (%s): op kind %u is not handled "
                       "by the rendezvous engine (compute, SEND/RECV, OFFLOAD/RELOAD, "
                       "vocabulary and collective ops only)", d, g - r->x.s->offset[d], t, (unsigned)r->x.s->ops[g].kind);
}

/* Rule 2 for a compute op: flags that only make sense on comm ops. */
static psched_status check_compute_flags(const rv *r, uint32_t d, size_t g)
{
    const psched_op *ops = r->x.s->ops;
    if (ops[g].flags & PSCHED_OP_BATCH_NEXT)
        return op_fail(r, d, g, "BATCH_NEXT joins comm ops into one batched group; a compute "
                       "op cannot carry it");
    if ((ops[g].flags & PSCHED_OP_OVERLAP_NEXT) && is_comm(ops[g + 1].kind)) {
        char t[48];
        psched__op_text(&ops[g + 1], t, sizeof t);
        return op_fail(r, d, g, "an overlapped pair holds two compute ops, not the comm op %s",
                       t);
    }
    return PSCHED_OK;
}

/* Rule 2 for a comm op; indexes it. */
static psched_status check_comm_op(rv *r, uint32_t d, size_t g)
{
    const psched_schedule *s = r->x.s;
    const psched_op *o = &s->ops[g];
    if (o->flags & PSCHED_OP_OVERLAP_NEXT)
        return op_fail(r, d, g, "OVERLAP_NEXT pairs compute ops; a comm op cannot carry it");
    if ((o->flags & PSCHED_OP_BATCH_NEXT) &&
        (g + 1 >= s->offset[d + 1] || !is_comm(s->ops[g + 1].kind)))
        return op_fail(r, d, g, "BATCH_NEXT needs a next comm op on the same device to batch "
                       "with");
    if (o->stage >= r->x.S || o->microbatch >= r->x.mbs)
        return op_fail(r, d, g, "stage must be < %u and micro-batch < %u", r->x.S, r->x.mbs);
    if (r->x.stage_device[o->stage] != d)
        return op_fail(r, d, g, "stage %u is placed on device %u", o->stage,
                       r->x.stage_device[o->stage]);
    bool next = toward_next(o->kind);
    if (next ? psched__stage_last(r->x.plan, o->stage) : psched__stage_first(r->x.plan, o->stage))
        return op_fail(r, d, g, "stage %u is the %s stage of its chain, so there is no stage to "
                       "%s", o->stage, next ? "last" : "first",
                       is_send(o->kind) ? "send to" : "receive from");
    uint32_t other = next ? o->stage + 1 : o->stage - 1;
    if (r->x.stage_device[other] == d)
        return op_fail(r, d, g, "stages %u and %u are both on device %u; only dependencies "
                       "that cross devices are communicated", o->stage, other, d);
    uint32_t *at = comm_slot(r, o->stage, o->microbatch, o->kind);
    if (*at != NONE) {
        char first[96];
        psched__exec_describe(&r->x, *at, first, sizeof first);
        return op_fail(r, d, g, "duplicate of %s", first);
    }
    *at = (uint32_t)g;
    return PSCHED_OK;
}

static psched_status check_structure(rv *r)
{
    const psched_schedule *s = r->x.s;
    for (uint32_t d = 0; d < r->x.p; d++) {
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            uint8_t kind = s->ops[g].kind;
            if (psched__is_copy(kind) || is_coll(kind))
                continue; /* execute.c's pass 1 (collective.c) checked it */
            psched_status st = kind > PSCHED_OP_COLLECTIVE ? unknown_kind(r, d, g)
                               : is_comm(kind)         ? check_comm_op(r, d, g)
                                                       : check_compute_flags(r, d, g);
            if (st)
                return st;
        }
    }
    return PSCHED_OK;
}

/* Rule 3. */
static psched_status match_pairs(rv *r)
{
    const psched_schedule *s = r->x.s;
    for (size_t g = 0; g < s->offset[s->devices]; g++) {
        const psched_op *o = &s->ops[g];
        if (!is_comm(o->kind))
            continue;
        uint32_t other = toward_next(o->kind) ? o->stage + 1 : o->stage - 1;
        uint8_t kind = partner_kind(o->kind);
        r->peer[g] = *comm_slot(r, other, o->microbatch, kind);
        if (r->peer[g] != NONE)
            continue;
        char a[96], t[48];
        psched__exec_describe(&r->x, g, a, sizeof a);
        name_op(other, o->microbatch, kind, t, sizeof t);
        return psched_fail(PSCHED_EINVALID, "%s: no matching %s on device %u (every %s needs "
                           "exactly one %s)", a, t, r->x.stage_device[other],
                           is_send(o->kind) ? "send" : "receive",
                           is_send(o->kind) ? "receive" : "send");
    }
    return PSCHED_OK;
}

/* Numbers each device's sends per destination and receives per source in
 * list order; count[] (per peer device and direction) is scratch, zero
 * between devices. */
static void rank_device(rv *r, uint32_t d)
{
    const psched_schedule *s = r->x.s;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            if (!is_comm(s->ops[g].kind))
                continue;
            uint32_t other = r->x.stage_device[s->ops[r->peer[g]].stage];
            uint32_t *c = &r->count[2 * (size_t)other + !is_send(s->ops[g].kind)];
            if (pass == 0)
                r->rank[g] = (*c)++;
            else
                *c = 0;
        }
    }
}

/* The send of rank k from device a to device b (an error path only). */
static size_t nth_send(const rv *r, uint32_t a, uint32_t b, uint32_t k)
{
    const psched_schedule *s = r->x.s;
    size_t g = s->offset[a];
    for (; g < s->offset[a + 1]; g++) {
        const psched_op *o = &s->ops[g];
        if (is_send(o->kind) && r->x.stage_device[s->ops[r->peer[g]].stage] == b &&
            r->rank[g] == k)
            break;
    }
    return g;
}

/* Rule 4. */
static psched_status check_channel_order(rv *r)
{
    const psched_schedule *s = r->x.s;
    for (uint32_t d = 0; d < r->x.p; d++)
        rank_device(r, d);
    for (size_t g = 0; g < s->offset[s->devices]; g++) {
        const psched_op *o = &s->ops[g];
        if (!is_comm(o->kind) || is_send(o->kind) || r->rank[g] == r->rank[r->peer[g]])
            continue;
        uint32_t b = r->x.stage_device[o->stage], a = r->x.stage_device[s->ops[r->peer[g]].stage];
        size_t send = nth_send(r, a, b, r->rank[g]);
        const psched_op *so = &s->ops[send];
        /* Only the micro-batch differs when the send feeds this stage. */
        bool same_pair = so->kind == partner_kind(o->kind) &&
                         (toward_next(so->kind) ? so->stage + 1 : so->stage - 1) == o->stage;
        char at[96], other[96];
        psched__exec_describe(&r->x, g, at, sizeof at);
        psched__exec_describe(&r->x, send, other, sizeof other);
        return psched_fail(PSCHED_EINVALID, "%s: %s mismatch: it is receive #%u from device %u, "
                           "but send #%u from device %u to device %u is %s; calls between two "
                           "devices match in posting order, so both sides must list them in "
                           "the same order", at, same_pair ? "micro-batch" : "stage",
                           r->rank[g] + 1, a, r->rank[g] + 1, a, b, other);
    }
    return PSCHED_OK;
}

/* Async rule 4: per device pair, one sequence of calls. Numbers each
 * device's calls per peer device (both directions) and chains them. */
static psched_status check_stream_order(rv *r)
{
    const psched_schedule *s = r->x.s;
    for (uint32_t d = 0; d < r->x.p; d++) {
        for (int pass = 0; pass < 2; pass++) {
            for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
                if (!is_comm(s->ops[g].kind))
                    continue;
                uint32_t other = r->x.stage_device[s->ops[r->peer[g]].stage];
                if (pass == 1) {
                    r->count[other] = 0;
                    r->last[other] = NONE;
                    continue;
                }
                r->rank[g] = r->count[other]++;
                r->prev[g] = r->last[other];
                r->next[g] = NONE;
                if (r->last[other] != NONE)
                    r->next[r->last[other]] = (uint32_t)g;
                r->last[other] = (uint32_t)g;
            }
        }
    }
    for (size_t g = 0; g < s->offset[s->devices]; g++) {
        const psched_op *o = &s->ops[g];
        if (!is_comm(o->kind) || !is_send(o->kind) || r->rank[g] == r->rank[r->peer[g]])
            continue;
        uint32_t a = r->x.stage_device[o->stage], b = r->x.stage_device[s->ops[r->peer[g]].stage];
        char at[96], other[96];
        psched__exec_describe(&r->x, g, at, sizeof at);
        psched__exec_describe(&r->x, r->peer[g], other, sizeof other);
        return psched_fail(PSCHED_EINVALID, "%s: it is call #%u from device %u to device %u, "
                           "but its match %s is call #%u of device %u to device %u; under async "
                           "semantics the calls between two devices run one at a time in "
                           "posting order, both directions on one stream, so both sides must "
                           "list them in the same order", at, r->rank[g] + 1, a, b, other,
                           r->rank[r->peer[g]] + 1, b, a);
    }
    return PSCHED_OK;
}

/* Rule 5 for a comm op. */
static psched_status check_comm_position(rv *r, size_t g)
{
    const psched_op *o = &r->x.s->ops[g];
    uint32_t c = compute_of(r, o);
    bool send = is_send(o->kind);
    if (send ? c < g : c > g)
        return PSCHED_OK;
    char a[96], b[96];
    psched__exec_describe(&r->x, g, a, sizeof a);
    psched__exec_describe(&r->x, c, b, sizeof b);
    return psched_fail(PSCHED_EINVALID, "%s: comes %s its %s %s", a, send ? "before" : "after",
                       send ? "producer" : "consumer", b);
}

/* "needs <op>, which comes later on the same device" for op g needing
 * op `need` of its own device. */
static psched_status later_fail(const rv *r, size_t g, uint32_t need)
{
    char a[96], b[96];
    psched__exec_describe(&r->x, g, a, sizeof a);
    psched__exec_describe(&r->x, need, b, sizeof b);
    return psched_fail(PSCHED_EINVALID, "%s: needs %s, which comes later on the same device", a,
                       b);
}

/* Rule 5 for a copy: after its input (its F, or its OFFLOAD). */
static psched_status check_copy_position(rv *r, size_t g)
{
    const psched_op *o = &r->x.s->ops[g];
    uint32_t need = o->kind == PSCHED_OP_OFFLOAD
                        ? psched__exec_at(&r->x, o->stage, o->microbatch, PSCHED_SLOT_F)
                        : psched__exec_copy(&r->x, o->stage, o->microbatch, PSCHED_OP_OFFLOAD);
    return need < g ? PSCHED_OK : later_fail(r, g, need);
}

/* Rule 5 for a compute op of the unit [first, first + n). */
static psched_status check_compute_inputs(rv *r, size_t g, size_t first, size_t n)
{
    const psched_op *o = &r->x.s->ops[g];
    uint32_t dep[2], d = r->x.stage_device[o->stage];
    int nd = psched__exec_deps(&r->x, o, dep);
    for (int i = 0; i < nd; i++) {
        uint32_t from = r->x.stage_device[r->x.s->ops[dep[i]].stage];
        uint8_t kind = o->kind == PSCHED_OP_F ? PSCHED_OP_RECV_F : PSCHED_OP_RECV_B;
        bool missing_recv = from != d && *comm_slot(r, o->stage, o->microbatch, kind) == NONE;
        bool paired = from == d && dep[i] >= first && dep[i] < first + n;
        bool later = from == d && dep[i] > g;
        if (!missing_recv && !paired && !later)
            continue;
        char a[96], b[96], t[48];
        psched__exec_describe(&r->x, g, a, sizeof a);
        psched__exec_describe(&r->x, dep[i], b, sizeof b);
        name_op(o->stage, o->microbatch, kind, t, sizeof t);
        if (missing_recv)
            return psched_fail(PSCHED_EINVALID, "%s: needs %s from device %u, but no %s "
                               "receives it", a, b, from, t);
        if (paired)
            return psched_fail(PSCHED_EINVALID, "%s: overlapped with the op it depends on", a);
        return psched_fail(PSCHED_EINVALID, "%s: needs %s, which comes later on the same "
                           "device", a, b);
    }
    if (o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) {
        uint32_t re = psched__exec_copy(&r->x, o->stage, o->microbatch, PSCHED_OP_RELOAD);
        if (re != NONE && re > g)
            return later_fail(r, g, re);
    }
    return PSCHED_OK;
}

static psched_status check_positions(rv *r)
{
    const psched_schedule *s = r->x.s;
    for (uint32_t d = 0; d < r->x.p; d++) {
        size_t g = s->offset[d];
        while (g < s->offset[d + 1]) {
            size_t n = (s->ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
            for (size_t u = g; u < g + n; u++) {
                uint8_t kind = s->ops[u].kind;
                if (kind >= PSCHED_OP_VOCAB_S)
                    continue; /* their orders: psched__coll_check */
                psched_status st = is_comm(kind)           ? check_comm_position(r, u)
                                   : psched__is_copy(kind) ? check_copy_position(r, u)
                                                           : check_compute_inputs(r, u, g, n);
                if (st)
                    return st;
            }
            g += n;
        }
    }
    return PSCHED_OK;
}

/* A transfer between comm op g (just posted) and its posted peer. */
static void complete_transfer(rv *r, size_t g, uint32_t d)
{
    uint32_t h = r->peer[g];
    double t = (r->post[g] > r->post[h] ? r->post[g] : r->post[h]) + r->x.costs->comm;
    r->x.start[g] = r->x.end[g] = r->x.start[h] = r->x.end[h] = t;
    if (t > r->group_done[d])
        r->group_done[d] = t;
    uint32_t e = r->x.stage_device[r->x.s->ops[h].stage];
    if (t > r->group_done[e])
        r->group_done[e] = t;
    if (--r->pending[e] == 0)
        psched__exec_enqueue(&r->x, e);
}

/* Posts the group starting at the cursor of device d. */
static void post_group(rv *r, uint32_t d)
{
    const psched_op *ops = r->x.s->ops;
    size_t g = r->x.cursor[d];
    r->group_done[d] = r->x.free_at[d];
    for (;; g++) {
        r->post[g] = r->x.free_at[d];
        if (r->post[r->peer[g]] >= 0)
            complete_transfer(r, g, d);
        else
            r->pending[d]++;
        if (!(ops[g].flags & PSCHED_OP_BATCH_NEXT))
            break;
    }
    r->group_end[d] = g + 1;
}

/* The last stage's backward waits for the vocabulary layer's last
 * collective of its micro-batch; false with d parked on it. */
static bool coll_inputs(rv *r, uint32_t d, size_t g, size_t n, double *ready)
{
    for (size_t u = g; u < g + n; u++) {
        const psched_op *o = &r->x.s->ops[u];
        if ((o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) &&
            !psched__coll_backward_ready(&r->x, d, o, ready)) {
            r->stuck[d] = u;
            return false;
        }
    }
    return true;
}

/* When unit [g, g + n) of device d can start by its own device's ops: the
 * device's time, or the end of a RELOAD a backward of it waits for. */
static double local_ready(const rv *r, uint32_t d, size_t g, size_t n)
{
    const psched_exec *x = &r->x;
    double ready = x->free_at[d];
    if (!x->copy_pos)
        return ready;
    for (size_t u = g; u < g + n; u++) {
        const psched_op *o = &x->s->ops[u];
        if (o->kind != PSCHED_OP_B && o->kind != PSCHED_OP_BW)
            continue;
        uint32_t re = psched__exec_copy(x, o->stage, o->microbatch, PSCHED_OP_RELOAD);
        if (re != NONE && x->end[re] > ready)
            ready = x->end[re];
    }
    return ready;
}

/* Issues copy g of device d (its input, earlier on the device, has run:
 * rule 5) on the copy stream; the device goes on. */
static void run_copy(rv *r, uint32_t d, size_t g)
{
    psched_exec *x = &r->x;
    const psched_op *o = &x->s->ops[g];
    uint32_t in = o->kind == PSCHED_OP_OFFLOAD
                      ? psched__exec_at(x, o->stage, o->microbatch, PSCHED_SLOT_F)
                      : psched__exec_copy(x, o->stage, o->microbatch, PSCHED_OP_OFFLOAD);
    double ready = x->free_at[d];
    if (x->end[in] > ready)
        ready = x->end[in];
    psched__exec_copy_at(x, d, g, ready);
    x->cursor[d] = g + 1;
}

/* Op g of device d when it is a copy or a collective (both modes run them
 * alike): SIDE_RAN, the device goes on; SIDE_PARKED, a vocabulary pass
 * waits for the collective it needs (a collective itself is posted
 * without blocking); SIDE_NONE for any other op. */
enum { SIDE_NONE, SIDE_RAN, SIDE_PARKED };

static int run_side_op(rv *r, uint32_t d, size_t g)
{
    uint8_t kind = r->x.s->ops[g].kind;
    if (psched__is_copy(kind)) {
        run_copy(r, d, g);
        return SIDE_RAN;
    }
    if (!is_coll(kind))
        return SIDE_NONE;
    if (!psched__coll_run(&r->x, d, g)) {
        r->stuck[d] = g;
        return SIDE_PARKED;
    }
    return SIDE_RAN;
}

/* Runs compute unit [g, g + n) of device d (n = 2: an overlapped pair),
 * its inputs from other devices ready at `ready`, once the collectives it
 * needs have run; false with the device parked on one. */
static bool run_unit(rv *r, uint32_t d, size_t g, size_t n, double ready)
{
    psched_exec *x = &r->x;
    if (x->coll && !coll_inputs(r, d, g, n, &ready))
        return false;
    double cost = psched__exec_unit_cost(x, x->s->ops, g, n);
    for (size_t u = g; u < g + n; u++) {
        x->start[u] = ready;
        x->end[u] = ready + cost;
    }
    x->free_at[d] = ready + cost;
    x->cursor[d] = g + n;
    return true;
}

/* Runs device d until its list ends or it parks on a group. */
static void run_device(rv *r, uint32_t d)
{
    psched_exec *x = &r->x;
    const psched_op *ops = x->s->ops;
    size_t last = x->s->offset[d + 1];
    while (x->cursor[d] < last) {
        size_t g = x->cursor[d];
        if (r->group_end[d] == 0 && is_comm(ops[g].kind))
            post_group(r, d);
        if (r->group_end[d] != 0) {
            if (r->pending[d] > 0)
                return;
            x->free_at[d] = r->group_done[d];
            x->cursor[d] = r->group_end[d];
            r->group_end[d] = 0;
            continue;
        }
        int side = run_side_op(r, d, g);
        if (side == SIDE_PARKED)
            return;
        if (side == SIDE_RAN)
            continue;
        size_t n = (ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
        if (!run_unit(r, d, g, n, local_ready(r, d, g, n)))
            return;
    }
}

/* Async mode: completes the transfer of comm op g if both its ends are
 * posted and its pair's previous transfer is complete, then the pair's
 * following ones that became ready; wakes each receiver, which may be
 * parked on the consumer. */
static void complete_async(rv *r, size_t g)
{
    for (uint32_t c = (uint32_t)g; c != NONE; c = r->next[c]) {
        uint32_t h = r->peer[c], before = r->prev[c];
        if (r->post[c] < 0 || r->post[h] < 0 || r->x.end[c] >= 0 ||
            (before != NONE && r->x.end[before] < 0))
            return;
        double t = r->post[c] > r->post[h] ? r->post[c] : r->post[h];
        if (before != NONE && r->x.end[before] > t)
            t = r->x.end[before];
        t += r->x.costs->comm;
        r->x.start[c] = r->x.end[c] = r->x.start[h] = r->x.end[h] = t;
        size_t recv = is_send(r->x.s->ops[c].kind) ? h : c;
        psched__exec_enqueue(&r->x, r->x.stage_device[r->x.s->ops[recv].stage]);
    }
}

/* Async mode: the completion of the transfers feeding unit [g, g + n) of
 * device d, or -1 with the device parked on the first whose SEND is not
 * posted yet. */
static double async_inputs_ready(rv *r, uint32_t d, size_t g, size_t n)
{
    psched_exec *x = &r->x;
    double ready = local_ready(r, d, g, n);
    for (size_t u = g; u < g + n; u++) {
        const psched_op *o = &x->s->ops[u];
        uint32_t dep[2];
        int nd = psched__exec_deps(x, o, dep);
        for (int i = 0; i < nd; i++) {
            if (x->stage_device[x->s->ops[dep[i]].stage] == d)
                continue;
            uint8_t kind = o->kind == PSCHED_OP_F ? PSCHED_OP_RECV_F : PSCHED_OP_RECV_B;
            uint32_t recv = *comm_slot(r, o->stage, o->microbatch, kind);
            if (x->end[recv] < 0) {
                /* a transfer waits for its SEND, else (posted) for the
                 * pair's earlier call not posted yet */
                uint32_t w = r->peer[recv];
                if (r->post[w] >= 0) {
                    w = recv;
                    while (r->prev[w] != NONE && r->x.end[r->prev[w]] < 0)
                        w = r->prev[w];
                    if (r->post[w] >= 0)
                        w = r->peer[w];
                }
                r->stuck[d] = u;
                x->waiting[d] = w;
                return -1;
            }
            if (x->end[recv] > ready)
                ready = x->end[recv];
        }
    }
    return ready;
}

/* Async mode: runs device d until its list ends or it parks. */
static void run_device_async(rv *r, uint32_t d)
{
    psched_exec *x = &r->x;
    const psched_op *ops = x->s->ops;
    size_t last = x->s->offset[d + 1];
    while (x->cursor[d] < last) {
        size_t g = x->cursor[d];
        if (is_comm(ops[g].kind)) {
            r->post[g] = x->free_at[d];
            complete_async(r, g);
            x->cursor[d] = g + 1;
            continue;
        }
        int side = run_side_op(r, d, g);
        if (side == SIDE_PARKED)
            return;
        if (side == SIDE_RAN)
            continue;
        size_t n = (ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
        double ready = async_inputs_ready(r, d, g, n);
        if (ready < 0 || !run_unit(r, d, g, n, ready))
            return;
    }
}

/* Each parked device waits for the peer of the first unmatched op of its
 * group; the peer's device has not posted it, so it is parked too. */
static psched_status report_deadlock(rv *r)
{
    psched_exec *x = &r->x;
    for (uint32_t d = 0; d < x->p; d++) {
        if (x->cursor[d] == x->s->offset[d + 1])
            continue;
        size_t g = x->cursor[d];
        if (!is_comm(x->s->ops[g].kind) || r->group_end[d] == 0) {
            r->stuck[d] = g; /* parked on a collective: waiting[d] names it */
            continue;
        }
        while (x->end[g] >= 0)
            g++;
        r->stuck[d] = g;
        x->waiting[d] = r->peer[g];
    }
    return psched__exec_deadlock(x, r->stuck);
}

static psched_status run_all(rv *r)
{
    psched_exec *x = &r->x;
    for (uint32_t d = 0; d < x->p; d++)
        psched__exec_enqueue(x, d);
    while (x->qlen) {
        uint32_t d = x->queue[x->qhead];
        x->qhead = (x->qhead + 1) % x->p;
        x->qlen--;
        x->queued[d] = false;
        if (r->async)
            run_device_async(r, d);
        else
            run_device(r, d);
    }
    for (uint32_t d = 0; d < x->p; d++)
        if (x->cursor[d] != x->s->offset[d + 1])
            return r->async ? psched__exec_deadlock(x, r->stuck) : report_deadlock(r);
    return PSCHED_OK;
}

static void free_rv(rv *r)
{
    psched__dealloc(r->comm);
    psched__dealloc(r->peer);
    psched__dealloc(r->rank);
    psched__dealloc(r->count);
    psched__dealloc(r->post);
    psched__dealloc(r->group_end);
    psched__dealloc(r->pending);
    psched__dealloc(r->group_done);
    psched__dealloc(r->stuck);
    psched__dealloc(r->prev);
    psched__dealloc(r->next);
    psched__dealloc(r->last);
    psched__exec_free(&r->x);
}

static psched_status alloc_rv(rv *r)
{
    const psched_schedule *s = r->x.s;
    size_t total = s->offset[s->devices], p = s->devices;
    size_t comm = (size_t)r->x.S * r->x.mbs * 4;
    r->comm = psched__reallocarray(NULL, comm + 1, sizeof *r->comm);
    r->peer = psched__reallocarray(NULL, total + 1, sizeof *r->peer);
    r->rank = psched__reallocarray(NULL, total + 1, sizeof *r->rank);
    r->count = psched__calloc(2 * p, sizeof *r->count);
    r->post = psched__reallocarray(NULL, total + 1, sizeof *r->post);
    r->group_end = psched__calloc(p, sizeof *r->group_end);
    r->pending = psched__calloc(p, sizeof *r->pending);
    r->group_done = psched__calloc(p, sizeof *r->group_done);
    r->stuck = psched__calloc(p, sizeof *r->stuck);
    r->prev = psched__reallocarray(NULL, total + 1, sizeof *r->prev);
    r->next = psched__reallocarray(NULL, total + 1, sizeof *r->next);
    r->last = psched__reallocarray(NULL, p + 1, sizeof *r->last);
    if (!r->prev || !r->next || !r->last ||
        !r->comm || !r->peer || !r->rank || !r->count || !r->post || !r->group_end ||
        !r->pending || !r->group_done || !r->stuck)
        return PSCHED_ENOMEM_FAIL();
    memset(r->comm, 0xff, comm * sizeof *r->comm);
    /* report_deadlock finds a parked group's first unmatched op by its
     * unset end time */
    for (size_t d = 0; d < p; d++)
        r->last[d] = NONE;
    for (size_t g = 0; g < total; g++) {
        r->prev[g] = r->next[g] = NONE;
        r->peer[g] = NONE;
        r->post[g] = -1;
        r->x.end[g] = -1;
    }
    return PSCHED_OK;
}

psched_status psched__execute_rendezvous(const psched_schedule *s, const psched_plan *costs,
                                         double *start, double *end)
{
    rv r = {0};
    r.async = s->lower_mode == PSCHED_LOWER_ASYNC;
    psched_status st = psched__exec_setup(&r.x, s, costs, start, end, true);
    if (st)
        return st;
    st = alloc_rv(&r);
    if (!st)
        st = check_structure(&r);
    if (!st)
        st = match_pairs(&r);
    if (!st)
        st = r.async ? check_stream_order(&r) : check_channel_order(&r);
    if (!st)
        st = check_positions(&r);
    if (!st)
        st = run_all(&r);
    free_rv(&r);
    return st;
}
