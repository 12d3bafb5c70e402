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
 *    dependency on the same device comes earlier in the list.
 * Then every device runs its list in order. A compute op never waits (its
 * inputs from other devices arrive through RECVs earlier in its list). A
 * comm op and the ops chained to it by BATCH_NEXT are posted together, at
 * the device's current time; the group completes when each of its
 * transfers is matched, a transfer completing t_comm after the later of its
 * two posts. A device parked on a group resumes when its last transfer is
 * matched, so the run is O(ops); devices left parked form a deadlock cycle.
 *
 * Times: compute ops as in execute.c; a comm op takes no device time, so
 * its start and end are both the completion of its transfer. */
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
} rv;

static bool is_comm(uint8_t kind)
{
    return kind >= PSCHED_OP_SEND_F;
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
            psched_status st = is_comm(s->ops[g].kind) ? check_comm_op(r, d, g)
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
                psched_status st = is_comm(s->ops[u].kind) ? check_comm_position(r, u)
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
        size_t n = (ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
        double cost = psched__exec_unit_cost(x, ops, g, n);
        for (size_t u = g; u < g + n; u++) {
            x->start[u] = x->free_at[d];
            x->end[u] = x->free_at[d] + cost;
        }
        x->free_at[d] += cost;
        x->cursor[d] = g + n;
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
        run_device(r, d);
    }
    for (uint32_t d = 0; d < x->p; d++)
        if (x->cursor[d] != x->s->offset[d + 1])
            return report_deadlock(r);
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
    if (!r->comm || !r->peer || !r->rank || !r->count || !r->post || !r->group_end ||
        !r->pending || !r->group_done || !r->stuck)
        return PSCHED_ENOMEM_FAIL();
    memset(r->comm, 0xff, comm * sizeof *r->comm);
    /* report_deadlock finds a parked group's first unmatched op by its
     * unset end time */
    for (size_t g = 0; g < total; g++) {
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
    psched_status st = psched__exec_setup(&r.x, s, costs, start, end, true);
    if (st)
        return st;
    st = alloc_rv(&r);
    if (!st)
        st = check_structure(&r);
    if (!st)
        st = match_pairs(&r);
    if (!st)
        st = check_channel_order(&r);
    if (!st)
        st = check_positions(&r);
    if (!st)
        st = run_all(&r);
    free_rv(&r);
    return st;
}
