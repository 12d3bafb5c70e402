/*
 * Communication lowering (psched_lower_comm): inserts a SEND after the
 * producer and a RECV before the consumer of every dependency that crosses
 * devices, ordered and batched so that a runtime with rendezvous
 * point-to-point calls (a send completes only when the peer posts the
 * matching receive; BATCH_NEXT groups are posted together and complete
 * together, like torch.distributed.batch_isend_irecv + wait) never
 * deadlocks.
 *
 * Placement by a key. The compute schedule is simulated with the given
 * costs. Each transfer, from producer P on device A to consumer C on device
 * B, gets a time: preferably the latest time at which A and B are both idle
 * for t_comm between P's end and C's start, so that the rendezvous delays
 * neither device; when no such time is found within a few gaps, the time
 * both sides are first ready: the later of P's end and the end of what B
 * runs just before C. On each of the two devices the comm op then sits
 * after every compute unit (an op or an overlapped pair) that ends by that
 * time. So a RECV lands right before its consumer, or earlier where the
 * receiver is busy when the sender is free; a SEND right after its producer,
 * or later where the receiver only gets there later. Ops of one device at
 * the same place with the same key form one batched group (SENDs first,
 * then RECVs, each in transfer order); others are posted in key order. A
 * zero-cost consumer ending exactly at the key's time would tie with it:
 * such keys are made total by the consumer's rank in one topological order
 * of the compute units (earliest simulated start first).
 *
 * Why this cannot deadlock: the place of a comm op on a device only grows
 * with its key, so every device lists its comm ops in key order and the ops
 * sharing a key are one group. Take the smallest key whose transfers are
 * not all done. Every device with ops of that key reaches its group (what
 * precedes it is compute, whose RECVs come earlier with smaller keys, or
 * comm with smaller keys, done), so both sides of each such transfer are
 * posted and the groups complete; by induction everything does. Equal keys
 * are where two devices meet at the same moment, 1F1B's steady state:
 * device 0 after 0F1 posts {0SEND_F1 + 0RECV_B0} while device 1 after 1B0
 * posts {1SEND_B0 + 1RECV_F1}, Megatron's send_forward_recv_backward and
 * send_backward_recv_forward. Both devices order the transfers between them
 * alike, so NCCL, which matches a device pair's calls in posting order,
 * pairs the right ones. With unit costs and t_comm = 0 the lowered 1F1B,
 * GPipe, ZB and V schedules keep their compute makespan; a schedule whose
 * devices never idle at the same moment around a transfer (interleaved
 * 1F1B's steady state) pays the wait that rendezvous semantics imply.
 *
 * The compute order is unchanged. Cost: O(ops log ops).
 *
 * The common case (rendezvous mode, compute ops without overlapped pairs,
 * the compute fast path's costs, no tie on a zero-cost consumer) takes the
 * fast path in lower_fast.c, which gives exactly this lowering's output
 * without its global order, per-transfer arrays and builder
 * (tests/test_lower_fast.c compares the two).
 *
 * Activation copies (OFFLOAD/RELOAD, issue 18) stay where they are: each
 * is part of the tail of the compute unit it follows, so it stays right
 * behind that unit, ahead of the comm ops lowering puts in the gap after
 * it. The times come from the simulation with the copies (a backward waits
 * for its RELOAD). Copies wait only for earlier ops of their own device
 * and never block the compute stream, so the argument above still holds.
 * Any other op kind is refused (EUNSUPPORTED), so a kind added later
 * (collectives) fails clearly until lowering learns it.
 *
 * Async mode (psched_lower_comm_ex with PSCHED_LOWER_ASYNC), for runtimes
 * whose isend/irecv never block: the compute schedule is re-timed with one
 * transfer at a time per device pair (link_times), and a transfer's key is
 * its producer's end in those times. So a SEND sits right after its
 * producer and a RECV right after the receiver's last unit ending by then:
 * posted no earlier than the data can exist, yet early enough that the
 * transfer overlaps the compute before the consumer. No groups: both
 * devices of a pair list their transfers by (key, sending device,
 * transfer), one order for the pair's single stream, which is also the
 * order link_times gave them the link in. The re-timing follows the
 * collectives as the engine does (collective.c): a collective runs once
 * every device has called it, and an op waiting for it starts after its
 * end. The result is executed under async semantics (rendezvous.c).
 *
 * CSV: ::PSCHED_FORMAT_CSV_COMMS writes a batched group as one cell
 * `[a;b]BATCH` and psched_import_csv() reads it back, so a lowered schedule
 * survives a file. PyTorch's compute_comms dialect
 * (PSCHED_FORMAT_CSV_COMMS_PYTORCH) has no spelling for a group: it writes
 * the group's ops in list order, and a schedule that needs groups validates
 * as a deadlock once re-imported from it (PyTorch's own runtime posts every
 * SEND/RECV as an asynchronous isend/irecv, for which its files are written).
 */
#include "execute.h"

#include <math.h>
#include <stdlib.h>

/* One comm op to insert: where, in which order, and what. */
typedef struct comm_rec {
    uint32_t device, gap; /* gap g: before the g-th unit of the device */
    double time;          /* key: (time, rank) */
    uint32_t rank, recv, transfer;
    uint32_t stage, mb;
    uint8_t kind;
    uint32_t src;         /* the producer's device (async mode's tie order) */
} comm_rec;

typedef struct lower {
    psched_exec x;        /* the compute schedule: position index, simulated times */
    uint32_t units;
    uint32_t *unit_of;    /* [op] unit of a compute op */
    size_t *unit_first;   /* [unit] first op of a unit; units + 1 entries */
    /* a unit is one compute op or an overlapped pair; the activation copies
     * (OFFLOAD/RELOAD) that follow it in the list, before the next unit,
     * are its tail and stay right behind it */
    uint32_t *dev_unit;   /* [device] first unit of a device; p + 1 entries */
    uint32_t *order;      /* [unit] rank in the global order */
    uint32_t transfers;
    uint32_t *producer, *consumer; /* [transfer] global op indices */
    uint32_t *out_first;  /* [unit] CSR of transfers by producer unit; units + 1 entries */
    uint32_t *out;
    comm_rec *recs;       /* 2 per transfer */
    bool async;           /* PSCHED_LOWER_ASYNC */
} lower;

static uint32_t device_of(const lower *l, size_t g)
{
    if (l->x.s->ops[g].kind >= PSCHED_OP_VOCAB_S)
        return psched__coll_device(l->x.s, g); /* `stage` is a shard or an index */
    return l->x.stage_device[l->x.s->ops[g].stage];
}

/* Collectives run on the communication stream, so their simulated times
 * are the group's, not the device's: for placing comm ops a collective
 * stands where its device reaches it, the end of the device's op before
 * it. That keeps every device's unit times in list order, and the
 * collectives keep their places and their one global order (NCCL's rule):
 * no comm op is ever put between two devices' calls of one collective. */
static void collective_arrivals(lower *l)
{
    const psched_schedule *s = l->x.s;
    for (uint32_t d = 0; d < s->devices; d++) {
        double t = 0;
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            if (s->ops[g].kind == PSCHED_OP_COLLECTIVE)
                l->x.start[g] = l->x.end[g] = t;
            else
                t = l->x.end[g];
        }
    }
}

/* Compute ops in unit u (2: an overlapped pair). */
static size_t unit_len(const lower *l, uint32_t u)
{
    return (l->x.s->ops[l->unit_first[u]].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
}

/* One past the tail of unit u of device d: the next unit or the list's end. */
static size_t unit_tail_end(const lower *l, uint32_t d, uint32_t u)
{
    return u + 1 < l->dev_unit[d + 1] ? l->unit_first[u + 1] : l->x.s->offset[d + 1];
}

/* Units, and the transfers: every dependency whose producer runs on
 * another device than its consumer. */
static psched_status find_units_and_transfers(lower *l)
{
    const psched_schedule *s = l->x.s;
    size_t total = s->offset[s->devices];
    l->unit_of = psched__reallocarray(NULL, total + 1, sizeof *l->unit_of);
    l->unit_first = psched__reallocarray(NULL, total + 1, sizeof *l->unit_first);
    l->dev_unit = psched__reallocarray(NULL, (size_t)s->devices + 1, sizeof *l->dev_unit);
    /* at most one input of an op comes from another device: a backward's
     * other input, its own F, runs on its own device */
    l->producer = psched__reallocarray(NULL, total + 1, sizeof *l->producer);
    l->consumer = psched__reallocarray(NULL, total + 1, sizeof *l->consumer);
    if (!l->unit_of || !l->unit_first || !l->dev_unit || !l->producer || !l->consumer)
        return PSCHED_ENOMEM_FAIL();
    uint32_t u = 0;
    for (uint32_t d = 0; d < s->devices; d++) {
        l->dev_unit[d] = u;
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; u++) {
            while (g < s->offset[d + 1] && psched__is_copy(s->ops[g].kind))
                g++; /* the tail of the unit before, or leading copies */
            if (g == s->offset[d + 1])
                break;
            size_t n = (s->ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
            l->unit_first[u] = g;
            for (size_t i = g; i < g + n; i++)
                l->unit_of[i] = u;
            g += n;
        }
    }
    l->dev_unit[s->devices] = l->units = u;
    l->unit_first[u] = total;
    for (size_t g = 0; g < total; g++) {
        uint32_t dep[2];
        int n = psched__exec_deps(&l->x, &s->ops[g], dep);
        for (int i = 0; i < n; i++) {
            if (device_of(l, dep[i]) == device_of(l, g))
                continue;
            l->producer[l->transfers] = dep[i];
            l->consumer[l->transfers++] = (uint32_t)g;
        }
    }
    return PSCHED_OK;
}

/* Transfers grouped by producer unit (counting sort). */
static psched_status index_outgoing(lower *l)
{
    l->out_first = psched__calloc((size_t)l->units + 2, sizeof *l->out_first);
    l->out = psched__reallocarray(NULL, (size_t)l->transfers + 1, sizeof *l->out);
    if (!l->out_first || !l->out)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t t = 0; t < l->transfers; t++)
        l->out_first[l->unit_of[l->producer[t]] + 2]++;
    for (uint32_t u = 0; u < l->units; u++)
        l->out_first[u + 2] += l->out_first[u + 1];
    for (uint32_t t = 0; t < l->transfers; t++)
        l->out[l->out_first[l->unit_of[l->producer[t]] + 1]++] = t;
    return PSCHED_OK;
}

/* An op that waits for a collective (a vocabulary pass, the last stage's
 * backward: collective.c) enters the global order only after every
 * device's call of that collective. Collective calls themselves never
 * block (they are posted on the communication stream). Without this, ties
 * of equal times (zero costs) could rank a waiting op before another
 * device's call, and placement would then put that device's transfer
 * behind a barrier the transfer itself feeds: a deadlock. */
typedef struct barrier {
    size_t groups;         /* 0: no op waits for a collective */
    uint32_t last_stage;
    uint32_t *need, *have; /* [group] calls in the schedule, calls ranked */
    uint32_t *head, *next; /* [group], [unit]: the waiting units, a list */
    uint8_t *last;         /* [micro-batch] index of its last collective */
} barrier;

static size_t coll_group(uint32_t microbatch, uint32_t index)
{
    return (size_t)microbatch * PSCHED_MAX_COLLECTIVES + index;
}

static psched_status barrier_init(const lower *l, barrier *b)
{
    const psched_schedule *s = l->x.s;
    size_t total = s->offset[s->devices];
    bool vocab = false;
    uint32_t mbs = 0;
    for (size_t g = 0; g < total; g++) {
        const psched_op *o = &s->ops[g];
        vocab |= o->kind == PSCHED_OP_VOCAB_S || o->kind == PSCHED_OP_VOCAB_T;
        if (o->kind == PSCHED_OP_COLLECTIVE && o->microbatch + 1 > mbs)
            mbs = o->microbatch + 1;
    }
    if (!vocab || mbs == 0)
        return PSCHED_OK; /* no op waits: the calls order nothing */
    b->groups = (size_t)mbs * PSCHED_MAX_COLLECTIVES;
    b->last_stage = l->x.S - 1;
    b->need = psched__calloc(b->groups, sizeof *b->need);
    b->have = psched__calloc(b->groups, sizeof *b->have);
    b->head = psched__reallocarray(NULL, b->groups, sizeof *b->head);
    b->next = psched__reallocarray(NULL, (size_t)l->units + 1, sizeof *b->next);
    b->last = psched__calloc(mbs, sizeof *b->last);
    if (!b->need || !b->have || !b->head || !b->next || !b->last)
        return PSCHED_ENOMEM_FAIL();
    for (size_t g = 0; g < b->groups; g++)
        b->head[g] = UINT32_MAX;
    for (size_t g = 0; g < total; g++) {
        const psched_op *o = &s->ops[g];
        if (o->kind != PSCHED_OP_COLLECTIVE)
            continue;
        b->need[coll_group(o->microbatch, o->stage)]++;
        if (o->stage > b->last[o->microbatch])
            b->last[o->microbatch] = (uint8_t)o->stage;
    }
    return PSCHED_OK;
}

static void barrier_free(barrier *b)
{
    psched__dealloc(b->need);
    psched__dealloc(b->have);
    psched__dealloc(b->head);
    psched__dealloc(b->next);
    psched__dealloc(b->last);
}

/* The collective op o waits for, or SIZE_MAX (collective.c's rules). */
static size_t waits_for(const barrier *b, const psched_op *o)
{
    size_t k = o->microbatch;
    if (o->kind == PSCHED_OP_VOCAB_S || o->kind == PSCHED_OP_VOCAB_T)
        return k * PSCHED_MAX_COLLECTIVES < b->groups
                   ? coll_group(o->microbatch, o->kind == PSCHED_OP_VOCAB_S ? 0 : 1)
                   : SIZE_MAX;
    if ((o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) && o->stage == b->last_stage &&
        k * PSCHED_MAX_COLLECTIVES < b->groups)
        return coll_group(o->microbatch, b->last[k]);
    return SIZE_MAX;
}

/* ---- async mode: times with one transfer at a time per device pair.
 * Calls between two ranks run in posting order on one stream (one NCCL
 * communicator per pair), both directions alike, so two transfers of a
 * pair whose windows overlap cannot both start at their producer's end.
 * The compute schedule is re-timed with each transfer taking its pair's
 * link at the later of its producer's end and the link's previous
 * transfer's end, in the order the producers end (units run in order of
 * their end time, Dijkstra-like, so releases come in time order). The
 * lowering then posts every transfer at its release in these times. */

typedef struct link_sim {
    uint32_t *link;      /* [transfer] compact id of its device pair */
    double *free;        /* [link] end of its last transfer */
    double *arrival;     /* [transfer] NAN until its producer ran */
    uint32_t *in_first;  /* [unit] CSR of transfers by consumer unit */
    uint32_t *in;
    uint32_t *cursor;    /* [device] next unit */
    double *clock;       /* [device] */
    uint32_t *hitem;     /* heap of ready devices by their next unit's end */
    double *hkey;        /* [device] that end */
    uint32_t hlen;
    bool *inheap;        /* [device] */
    /* collectives (when an op waits for one): the engine's rules
     * (collective.c), calls never block, a collective runs on the shared
     * stream once every device has called it, and an op that waits for
     * it starts after its end */
    barrier bar;
    uint32_t *carrived;  /* [group] calls run */
    double *carrive;     /* [group] the latest call */
    double *cend;        /* [group] end once run, NAN before */
    double comm_free;    /* end of the last collective run */
} link_sim;

static uint64_t pair_of(const lower *l, uint32_t t)
{
    uint64_t a = device_of(l, l->producer[t]), b = device_of(l, l->consumer[t]);
    return a < b ? a * l->x.p + b : b * l->x.p + a;
}

static const lower *sort_ctx;

static int by_pair(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint64_t qa = pair_of(sort_ctx, a), qb = pair_of(sort_ctx, b);
    return qa < qb ? -1 : qa > qb;
}

static bool ls_less(const link_sim *k, uint32_t a, uint32_t b)
{
    return k->hkey[a] < k->hkey[b] || (k->hkey[a] == k->hkey[b] && a < b);
}

static void ls_push(link_sim *k, uint32_t d)
{
    k->inheap[d] = true;
    uint32_t i = k->hlen++;
    while (i > 0 && ls_less(k, d, k->hitem[(i - 1) / 2])) {
        k->hitem[i] = k->hitem[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    k->hitem[i] = d;
}

static uint32_t ls_pop(link_sim *k)
{
    uint32_t top = k->hitem[0], last = k->hitem[--k->hlen], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= k->hlen)
            break;
        if (c + 1 < k->hlen && ls_less(k, k->hitem[c + 1], k->hitem[c]))
            c++;
        if (!ls_less(k, k->hitem[c], last))
            break;
        k->hitem[i] = k->hitem[c];
        i = c;
    }
    k->hitem[i] = last;
    k->inheap[top] = false;
    return top;
}

/* Pushes device d when the inputs of its next unit have arrived (and the
 * collectives it waits for have run). */
static void ls_try(const lower *l, link_sim *k, uint32_t d)
{
    uint32_t u = k->cursor[d];
    if (u == l->dev_unit[d + 1])
        return;
    double start = k->clock[d];
    for (uint32_t i = k->in_first[u]; i < k->in_first[u + 1]; i++) {
        double a = k->arrival[k->in[i]];
        if (isnan(a))
            return;
        if (a > start)
            start = a;
    }
    for (size_t i = 0; k->bar.groups && i < unit_len(l, u); i++) {
        size_t g = waits_for(&k->bar, &l->x.s->ops[l->unit_first[u] + i]);
        if (g == SIZE_MAX || !k->bar.need[g])
            continue;
        if (isnan(k->cend[g]))
            return;
        if (k->cend[g] > start)
            start = k->cend[g];
    }
    k->hkey[d] = start + psched__exec_unit_cost(&l->x, l->x.s->ops, l->unit_first[u],
                                                unit_len(l, u));
    ls_push(k, d);
}

static psched_status link_times(lower *l)
{
    uint32_t n = l->transfers, p = l->x.p;
    link_sim k = {0};
    uint32_t *idx = psched__reallocarray(NULL, (size_t)n + 1, sizeof *idx);
    k.link = psched__reallocarray(NULL, (size_t)n + 1, sizeof *k.link);
    k.free = psched__reallocarray(NULL, (size_t)n + 1, sizeof *k.free);
    k.arrival = psched__reallocarray(NULL, (size_t)n + 1, sizeof *k.arrival);
    k.in_first = psched__calloc((size_t)l->units + 2, sizeof *k.in_first);
    k.in = psched__reallocarray(NULL, (size_t)n + 1, sizeof *k.in);
    k.cursor = psched__reallocarray(NULL, (size_t)p + 1, sizeof *k.cursor);
    k.clock = psched__calloc((size_t)p + 1, sizeof *k.clock);
    k.hitem = psched__reallocarray(NULL, (size_t)p + 1, sizeof *k.hitem);
    k.hkey = psched__reallocarray(NULL, (size_t)p + 1, sizeof *k.hkey);
    k.inheap = psched__calloc((size_t)p + 1, sizeof *k.inheap);
    psched_status st = PSCHED_OK;
    if (!idx || !k.link || !k.free || !k.arrival || !k.in_first || !k.in || !k.cursor ||
        !k.clock || !k.hitem || !k.hkey || !k.inheap) {
        st = PSCHED_ENOMEM_FAIL();
        goto out;
    }
    if (l->x.coll && (st = barrier_init(l, &k.bar)) != PSCHED_OK)
        goto out;
    if (k.bar.groups) {
        k.carrived = psched__calloc(k.bar.groups, sizeof *k.carrived);
        k.carrive = psched__calloc(k.bar.groups, sizeof *k.carrive);
        k.cend = psched__reallocarray(NULL, k.bar.groups, sizeof *k.cend);
        if (!k.carrived || !k.carrive || !k.cend) {
            st = PSCHED_ENOMEM_FAIL();
            goto out;
        }
        for (size_t g = 0; g < k.bar.groups; g++)
            k.cend[g] = NAN;
        k.comm_free = -INFINITY;
    }
    for (uint32_t t = 0; t < n; t++) {
        idx[t] = t;
        k.arrival[t] = NAN;
        k.in_first[l->unit_of[l->consumer[t]] + 2]++;
    }
    for (uint32_t u = 0; u < l->units; u++)
        k.in_first[u + 2] += k.in_first[u + 1];
    for (uint32_t t = 0; t < n; t++)
        k.in[k.in_first[l->unit_of[l->consumer[t]] + 1]++] = t;
    sort_ctx = l;
    qsort(idx, n, sizeof *idx, by_pair);
    for (uint32_t i = 0, id = 0; i < n; i++) {
        if (i > 0 && pair_of(l, idx[i]) != pair_of(l, idx[i - 1]))
            id++;
        k.link[idx[i]] = id;
        k.free[id] = -INFINITY;
    }
    for (uint32_t d = 0; d < p; d++) {
        k.cursor[d] = l->dev_unit[d];
        ls_try(l, &k, d);
    }
    double comm = l->x.costs->comm;
    while (k.hlen > 0) {
        uint32_t d = ls_pop(&k), u = k.cursor[d]++;
        double end = k.hkey[d];
        size_t g0 = l->unit_first[u], g1 = g0 + unit_len(l, u);
        double cost = psched__exec_unit_cost(&l->x, l->x.s->ops, g0, g1 - g0);
        for (size_t g = g0; g < g1; g++) {
            l->x.start[g] = end - cost;
            l->x.end[g] = end;
        }
        k.clock[d] = end;
        for (uint32_t i = l->out_first[u]; i < l->out_first[u + 1]; i++) {
            uint32_t t = l->out[i], id = k.link[t];
            double start = k.free[id] > end ? k.free[id] : end;
            k.free[id] = start + comm;
            k.arrival[t] = start + comm;
            uint32_t e = device_of(l, l->consumer[t]);
            if (e != d && k.cursor[e] == l->unit_of[l->consumer[t]])
                ls_try(l, &k, e);
        }
        const psched_op *o = &l->x.s->ops[g0];
        if (k.bar.groups && o->kind == PSCHED_OP_COLLECTIVE) {
            size_t c = coll_group(o->microbatch, o->stage);
            if (k.carrived[c]++ == 0 || end > k.carrive[c])
                k.carrive[c] = end;
            if (k.carrived[c] == k.bar.need[c]) {
                double at = k.carrive[c] > k.comm_free ? k.carrive[c] : k.comm_free;
                const double *w = l->x.weight;
                k.cend[c] = at + psched__collective_time(l->x.costs, p, o->stage,
                                                         w ? w[o->microbatch] : 1.0);
                k.comm_free = k.cend[c];
                for (uint32_t e = 0; e < p; e++)
                    if (e != d && !k.inheap[e])
                        ls_try(l, &k, e);
            }
        }
        ls_try(l, &k, d);
    }
out:
    psched__dealloc(idx);
    psched__dealloc(k.link);
    psched__dealloc(k.free);
    psched__dealloc(k.arrival);
    psched__dealloc(k.in_first);
    psched__dealloc(k.in);
    psched__dealloc(k.cursor);
    psched__dealloc(k.clock);
    psched__dealloc(k.hitem);
    psched__dealloc(k.hkey);
    psched__dealloc(k.inheap);
    psched__dealloc(k.carrived);
    psched__dealloc(k.carrive);
    psched__dealloc(k.cend);
    barrier_free(&k.bar);
    return st;
}

/* ---- the global order: Kahn's algorithm, earliest simulated start first.
 * At most one unit per device is ready at a time, so the heap holds <= p. */

typedef struct heap {
    uint32_t *item;
    uint32_t len;
} heap;

static bool heap_less(const lower *l, uint32_t a, uint32_t b)
{
    double sa = l->x.start[l->unit_first[a]], sb = l->x.start[l->unit_first[b]];
    return sa < sb || (sa == sb && a < b);
}

static void heap_push(const lower *l, heap *h, uint32_t u)
{
    uint32_t i = h->len++;
    while (i > 0 && heap_less(l, u, h->item[(i - 1) / 2])) {
        h->item[i] = h->item[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->item[i] = u;
}

static uint32_t heap_pop(const lower *l, heap *h)
{
    uint32_t top = h->item[0], last = h->item[--h->len], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->len)
            break;
        if (c + 1 < h->len && heap_less(l, h->item[c + 1], h->item[c]))
            c++;
        if (!heap_less(l, h->item[c], last))
            break;
        h->item[i] = h->item[c];
        i = c;
    }
    h->item[i] = last;
    return top;
}

/* Unit u is ready: into the heap, or held until the collective it waits
 * for has every device's call ranked. */
static void ready(const lower *l, heap *h, barrier *b, uint32_t u)
{
    if (b->groups) {
        for (size_t i = 0; i < unit_len(l, u); i++) {
            size_t g = waits_for(b, &l->x.s->ops[l->unit_first[u] + i]);
            if (g != SIZE_MAX && b->need[g] && b->have[g] < b->need[g]) {
                b->next[u] = b->head[g];
                b->head[g] = u;
                return;
            }
        }
    }
    heap_push(l, h, u);
}

/* Unit u was ranked: a collective's last call lets its waiting units go. */
static void ranked(const lower *l, heap *h, barrier *b, uint32_t u)
{
    const psched_op *o = &l->x.s->ops[l->unit_first[u]];
    if (!b->groups || o->kind != PSCHED_OP_COLLECTIVE)
        return;
    size_t g = coll_group(o->microbatch, o->stage);
    if (++b->have[g] < b->need[g])
        return;
    uint32_t v = b->head[g];
    b->head[g] = UINT32_MAX;
    while (v != UINT32_MAX) {
        uint32_t next = b->next[v];
        ready(l, h, b, v); /* an overlapped pair may wait for another too */
        v = next;
    }
}

static void release(const lower *l, heap *h, barrier *b, uint32_t *indeg, uint32_t u)
{
    if (--indeg[u] == 0)
        ready(l, h, b, u);
}

static psched_status global_order(lower *l)
{
    uint32_t p = l->x.p;
    uint32_t *indeg = psched__calloc((size_t)l->units + 1, sizeof *indeg);
    heap h = {psched__reallocarray(NULL, (size_t)p + 1, sizeof *h.item), 0};
    barrier b = {0};
    l->order = psched__reallocarray(NULL, (size_t)l->units + 1, sizeof *l->order);
    psched_status st = !indeg || !h.item || !l->order ? PSCHED_ENOMEM_FAIL()
                       : l->x.coll                    ? barrier_init(l, &b)
                                                      : PSCHED_OK;
    if (st) {
        psched__dealloc(indeg);
        psched__dealloc(h.item);
        barrier_free(&b);
        return st;
    }
    for (uint32_t t = 0; t < l->transfers; t++)
        indeg[l->unit_of[l->consumer[t]]]++;
    for (uint32_t d = 0; d < p; d++) {
        for (uint32_t u = l->dev_unit[d] + 1; u < l->dev_unit[d + 1]; u++)
            indeg[u]++;
        if (l->dev_unit[d] < l->dev_unit[d + 1] && indeg[l->dev_unit[d]] == 0)
            ready(l, &h, &b, l->dev_unit[d]);
    }
    /* The compute schedule ran to its end, so every unit gets released. */
    uint32_t rank = 0;
    for (; h.len > 0; rank++) {
        uint32_t u = heap_pop(l, &h);
        l->order[u] = rank;
        ranked(l, &h, &b, u);
        uint32_t d = device_of(l, l->unit_first[u]);
        if (u + 1 < l->dev_unit[d + 1])
            release(l, &h, &b, indeg, u + 1);
        for (uint32_t i = l->out_first[u]; i < l->out_first[u + 1]; i++)
            release(l, &h, &b, indeg, l->unit_of[l->consumer[l->out[i]]]);
    }
    psched__dealloc(indeg);
    psched__dealloc(h.item);
    barrier_free(&b);
    if (rank != l->units) /* the engine ran it, so this is a bug, not input */
        return psched_fail(PSCHED_EINVAL, "comm lowering: %u of %u ops could not be "
                           "ordered around the collectives", l->units - rank, l->units);
    return PSCHED_OK;
}

/* ---- placement */

/* Whether unit u's (end, order) is below the key (time, rank). */
static bool unit_before(const lower *l, uint32_t u, double time, uint32_t rank)
{
    double end = l->x.end[l->unit_first[u]];
    return end < time || (end == time && l->order[u] < rank);
}

/* The gap of device d after its units u with (end(u), order(u)) below
 * (time, rank): units along a device increase in that pair, so the gap
 * grows with the key. The search gallops out from unit `hint` (a unit of
 * the transfer's producer or consumer, next to the answer as a rule) and
 * ends in a binary search of the bracket: the same answer as a binary
 * search of the whole device, in O(log distance). */
static uint32_t gap_before(const lower *l, uint32_t d, double time, uint32_t rank, uint32_t hint)
{
    uint32_t first = l->dev_unit[d], lo = first, hi = l->dev_unit[d + 1];
    hint = hint < lo ? lo : hint > hi ? hi : hint;
    if (hint < hi && unit_before(l, hint, time, rank)) {
        uint32_t step = 1;
        lo = hint + 1;
        while (hi - hint > step && unit_before(l, hint + step, time, rank)) {
            lo = hint + step + 1;
            step *= 2;
        }
        if (hi - hint > step)
            hi = hint + step;
    } else {
        uint32_t step = 1;
        hi = hint;
        while (hint - lo >= step && !unit_before(l, hint - step, time, rank)) {
            hi = hint - step;
            step *= 2;
        }
        if (hint - lo >= step)
            lo = hint - step + 1;
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (unit_before(l, mid, time, rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - first;
}

static int rec_cmp_key(const comm_rec *a, const comm_rec *b)
{
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->gap != b->gap)
        return a->gap < b->gap ? -1 : 1;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return 0;
}

static int rec_cmp(const void *pa, const void *pb)
{
    const comm_rec *a = pa, *b = pb;
    int c = rec_cmp_key(a, b);
    if (c)
        return c;
    if (a->recv != b->recv)
        return a->recv < b->recv ? -1 : 1;
    return a->transfer < b->transfer ? -1 : a->transfer > b->transfer;
}

/* Async mode: no groups, so a device pair's two sides must list the
 * transfers between them in one order: key, then transfer, the same on
 * both (a SEND-before-RECV rule would order two opposite transfers of one
 * key differently on the two sides). */
static int rec_cmp_async(const void *pa, const void *pb)
{
    const comm_rec *a = pa, *b = pb;
    int c = rec_cmp_key(a, b);
    if (c)
        return c;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    return a->transfer < b->transfer ? -1 : a->transfer > b->transfer;
}

static bool same_key(const comm_rec *a, const comm_rec *b)
{
    return a->time == b->time && a->rank == b->rank;
}

/* One step of the search for the latest T <= t at which device d is idle
 * for `span` (it stays blocked while a transfer completes): T itself when
 * the gap holding t has room, else the latest candidate before it. */
static double idle_until(const lower *l, uint32_t d, double t, double span, uint32_t hint)
{
    uint32_t u = l->dev_unit[d] + gap_before(l, d, t, UINT32_MAX, hint);
    double gap_start = u > l->dev_unit[d] ? l->x.end[l->unit_first[u - 1]] : -INFINITY;
    double gap_end = u < l->dev_unit[d + 1] ? l->x.start[l->unit_first[u]] : INFINITY;
    double latest = gap_end - span < t ? gap_end - span : t;
    if (latest >= gap_start)
        return latest;
    return l->x.start[l->unit_first[u - 1]] - span;
}

/* Searching further back than this many gaps would make lowering
 * quadratic on long idle-free stretches; the fallback key is as valid. */
#define IDLE_SEARCH_STEPS 16

/* The key of transfer t. Preferably the latest time at which both devices
 * are idle for t_comm between the producer's end and the consumer's start:
 * posted there, the transfer delays neither. Otherwise the time both sides
 * are first ready: the producer's end and the end of what the receiver
 * runs just before the consumer. A zero-cost consumer ending exactly at the
 * key's time makes the key total with its rank. */
static void transfer_key(const lower *l, uint32_t t, double *time, uint32_t *rank)
{
    uint32_t a = device_of(l, l->producer[t]), b = device_of(l, l->consumer[t]);
    uint32_t uc = l->unit_of[l->consumer[t]], up = l->unit_of[l->producer[t]];
    double comm = l->x.costs->comm, lo = l->x.end[l->producer[t]];
    double when = l->x.start[l->consumer[t]] - comm;
    int step = 0;
    for (; step < IDLE_SEARCH_STEPS && when >= lo; step++) {
        double ta = idle_until(l, a, when, comm, up), tb = idle_until(l, b, when, comm, uc);
        if (ta == when && tb == when)
            break;
        when = ta < tb ? ta : tb;
    }
    if (step == IDLE_SEARCH_STEPS || when < lo) {
        when = lo;
        if (uc > l->dev_unit[b] && l->x.end[l->unit_first[uc - 1]] > when)
            when = l->x.end[l->unit_first[uc - 1]];
    }
    *time = when;
    *rank = l->x.end[l->consumer[t]] == when ? l->order[uc] : UINT32_MAX;
}

/* The key of transfer t in async mode: its producer's end. Nothing blocks
 * on a post, so the SEND goes right after the producer and the RECV right
 * after the receiver's last unit ending by then: posted no earlier than
 * the data can exist, and no later, so the transfer runs while the
 * receiver computes what lies between it and the consumer and arrives when
 * the compute-only simulation expects it (the producer's end + t_comm).
 * A zero-cost consumer ending at that very time keeps its RECV before it
 * by its rank, as above. */
static void async_key(const lower *l, uint32_t t, double *time, uint32_t *rank)
{
    uint32_t uc = l->unit_of[l->consumer[t]];
    *time = l->x.end[l->producer[t]];
    *rank = l->x.end[l->consumer[t]] == *time ? l->order[uc] : UINT32_MAX;
}

/* Orders the comm ops by device and gap (counting sort: most gaps hold
 * zero to two), then each gap by key. */
static psched_status sort_recs(lower *l)
{
    size_t n = 2 * (size_t)l->transfers, gaps = (size_t)l->units + l->x.p;
    size_t *first = psched__calloc(gaps + 2, sizeof *first);
    comm_rec *sorted = psched__reallocarray(NULL, n + 1, sizeof *sorted);
    if (!first || !sorted) {
        psched__dealloc(first);
        psched__dealloc(sorted);
        return PSCHED_ENOMEM_FAIL();
    }
    for (size_t i = 0; i < n; i++)
        first[l->dev_unit[l->recs[i].device] + l->recs[i].device + l->recs[i].gap + 2]++;
    for (size_t g = 0; g < gaps; g++)
        first[g + 2] += first[g + 1];
    for (size_t i = 0; i < n; i++)
        sorted[first[l->dev_unit[l->recs[i].device] + l->recs[i].device + l->recs[i].gap + 1]++] =
            l->recs[i];
    for (size_t g = 0; g < gaps; g++)
        if (first[g + 1] - first[g] > 1)
            qsort(sorted + first[g], first[g + 1] - first[g], sizeof *sorted,
                  l->async ? rec_cmp_async : rec_cmp);
    psched__dealloc(first);
    psched__dealloc(l->recs);
    l->recs = sorted;
    return PSCHED_OK;
}

static psched_status place_comm_ops(lower *l)
{
    const psched_op *ops = l->x.s->ops;
    l->recs = psched__reallocarray(NULL, 2 * (size_t)l->transfers + 1, sizeof *l->recs);
    if (!l->recs)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t t = 0; t < l->transfers; t++) {
        const psched_op *po = &ops[l->producer[t]], *co = &ops[l->consumer[t]];
        uint32_t a = device_of(l, l->producer[t]), b = device_of(l, l->consumer[t]), rank;
        double time;
        if (l->async)
            async_key(l, t, &time, &rank);
        else
            transfer_key(l, t, &time, &rank);
        bool fwd = co->kind == PSCHED_OP_F;
        uint32_t up = l->unit_of[l->producer[t]], uc = l->unit_of[l->consumer[t]];
        l->recs[2 * t] = (comm_rec){a, gap_before(l, a, time, rank, up), time, rank, 0, t, po->stage,
                                    po->microbatch, fwd ? PSCHED_OP_SEND_F : PSCHED_OP_SEND_B, a};
        l->recs[2 * t + 1] = (comm_rec){b, gap_before(l, b, time, rank, uc), time, rank, 1, t,
                                        co->stage, co->microbatch,
                                        fwd ? PSCHED_OP_RECV_F : PSCHED_OP_RECV_B, a};
    }
    return sort_recs(l);
}

/* Appends every device's units with its comm ops in their gaps. */
static psched_status emit(const lower *l, psched_builder *b)
{
    const psched_schedule *s = l->x.s;
    size_t r = 0, nrecs = 2 * (size_t)l->transfers;
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; d < s->devices && !st; d++) {
        size_t r0 = r;
        while (r < nrecs && l->recs[r].device == d)
            r++;
        st = psched_builder_reserve(b, d, (s->offset[d + 1] - s->offset[d]) + (r - r0));
        uint32_t n = l->dev_unit[d + 1] - l->dev_unit[d];
        /* copies ahead of the first unit (none in a valid schedule: a copy
         * follows its F) keep their place too */
        size_t lead = n ? l->unit_first[l->dev_unit[d]] : s->offset[d + 1];
        for (size_t g = s->offset[d]; g < lead && !st; g++)
            st = psched_builder_append(b, d, (psched_op_kind)s->ops[g].kind, s->ops[g].stage,
                                       s->ops[g].microbatch, s->ops[g].flags);
        for (uint32_t gap = 0, i = (uint32_t)r0; gap <= n && !st; gap++) {
            for (; i < r && l->recs[i].gap == gap && !st; i++) {
                const comm_rec *c = &l->recs[i];
                bool batch = !l->async && i + 1 < r && c[1].gap == gap && same_key(c, &c[1]);
                st = psched_builder_append(b, d, (psched_op_kind)c->kind, c->stage, c->mb,
                                           batch ? PSCHED_OP_BATCH_NEXT : 0);
            }
            if (gap == n)
                break;
            uint32_t u = l->dev_unit[d] + gap;
            for (size_t g = l->unit_first[u]; g < unit_tail_end(l, d, u) && !st; g++)
                st = psched_builder_append(b, d, (psched_op_kind)s->ops[g].kind,
                                           s->ops[g].stage, s->ops[g].microbatch,
                                           s->ops[g].flags);
        }
    }
    return st;
}

static psched_status build(const lower *l, psched_schedule **out)
{
    psched_plan *plan = NULL;
    psched_builder *b = NULL;
    psched_status st = psched_plan_clone(l->x.s->plan, &plan);
    if (!st)
        st = psched__builder_create(plan, &b);
    if (!st)
        st = emit(l, b);
    if (!st)
        st = psched__builder_finish(b, plan, l->x.s->name, out);
    if (!st)
        (*out)->lower_mode = l->async ? PSCHED_LOWER_ASYNC : PSCHED_LOWER_RENDEZVOUS;
    if (st)
        psched_plan_destroy(plan);
    psched__builder_destroy(b);
    return st;
}

static void free_lower(lower *l)
{
    psched__dealloc(l->unit_of);
    psched__dealloc(l->unit_first);
    psched__dealloc(l->dev_unit);
    psched__dealloc(l->order);
    psched__dealloc(l->producer);
    psched__dealloc(l->consumer);
    psched__dealloc(l->out_first);
    psched__dealloc(l->out);
    psched__dealloc(l->recs);
    psched__exec_free(&l->x);
}

static psched_status check_args(const psched_schedule *s, const psched_plan *plan)
{
    if (!s)
        return psched_fail(PSCHED_EINVAL, "psched_lower_comm: schedule is NULL");
    uint32_t S = s->plan->devices * s->plan->chunks;
    if (plan && psched_plan_stages(plan) != S)
        return psched_fail(PSCHED_EINVAL, "psched_lower_comm: cost plan has %u stages (devices "
                           "x chunks) but the schedule has %u", psched_plan_stages(plan), S);
    return PSCHED_OK;
}

/* Every op a kind the lowering takes. The fast path takes compute ops
 * only, so it runs before this pass: what it accepts passes it. */
static psched_status check_kinds(const psched_schedule *s)
{
    for (uint32_t d = 0; d < s->devices; d++) {
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            uint8_t kind = s->ops[g].kind;
            if (kind <= PSCHED_OP_BW || psched__is_copy(kind) || kind >= PSCHED_OP_VOCAB_S)
                continue; /* compute, copies, vocabulary passes and collectives stay */
            char t[48];
            psched__op_text(&s->ops[g], t, sizeof t);
            if (kind > PSCHED_OP_RELOAD) /* a kind this lowering does not know */
                return psched_fail(PSCHED_EUNSUPPORTED,
                                   "psched_lower_comm: device %u op %zu (%s): op kind %u is not "
                                   "handled by comm lowering (compute ops and OFFLOAD/RELOAD "
                                   "copies only)", d, g - s->offset[d], t, (unsigned)kind);
            return psched_fail(PSCHED_EINVAL, "psched_lower_comm: device %u op %zu (%s) is "
                               "already a comm op; lower a compute schedule", d,
                               g - s->offset[d], t);
        }
    }
    return PSCHED_OK;
}

psched_status psched_lower_comm(const psched_schedule *schedule, const psched_plan *plan,
                                psched_schedule **lowered)
{
    return psched_lower_comm_ex(schedule, plan, NULL, lowered);
}

psched_lower_mode psched_schedule_lower_mode(const psched_schedule *schedule)
{
    return schedule ? (psched_lower_mode)schedule->lower_mode : PSCHED_LOWER_RENDEZVOUS;
}

static psched_status lower_comm(const psched_schedule *schedule, const psched_plan *plan,
                                const psched_lower_options *options, psched_schedule **lowered,
                                bool fast)
{
    if (!lowered)
        return psched_fail(PSCHED_EINVAL, "psched_lower_comm: lowered is NULL");
    *lowered = NULL;
    if (options && (options->version == 0 || options->version > PSCHED_LOWER_OPTIONS_VERSION))
        return psched_fail(PSCHED_EINVAL, "psched_lower_comm_ex: options version %u is not "
                           "supported (1..%u)", options->version, PSCHED_LOWER_OPTIONS_VERSION);
    if (options && options->mode != PSCHED_LOWER_RENDEZVOUS && options->mode != PSCHED_LOWER_ASYNC)
        return psched_fail(PSCHED_EINVAL, "psched_lower_comm_ex: mode %d must be "
                           "PSCHED_LOWER_RENDEZVOUS (0) or PSCHED_LOWER_ASYNC (1)",
                           (int)options->mode);
    psched_status st = check_args(schedule, plan);
    if (st)
        return st;
    lower l = {0};
    l.async = options && options->mode == PSCHED_LOWER_ASYNC;
    if (fast && !l.async && psched__lower_fast(schedule, plan, lowered))
        return PSCHED_OK;
    st = check_kinds(schedule);
    if (st)
        return st;
    st = psched__exec_setup(&l.x, schedule, plan, NULL, NULL, false);
    if (st)
        return st;
    st = psched__exec_run(&l.x);
    if (!st && l.x.coll)
        collective_arrivals(&l);
    if (!st)
        st = find_units_and_transfers(&l);
    if (!st)
        st = index_outgoing(&l);
    if (!st && l.async) {
        st = link_times(&l);
        if (!st && l.x.coll)
            collective_arrivals(&l);
    }
    if (!st)
        st = global_order(&l);
    if (!st)
        st = place_comm_ops(&l);
    if (!st)
        st = build(&l, lowered);
    free_lower(&l);
    return st;
}

psched_status psched_lower_comm_ex(const psched_schedule *schedule, const psched_plan *plan,
                                   const psched_lower_options *options,
                                   psched_schedule **lowered)
{
    return lower_comm(schedule, plan, options, lowered, true);
}

psched_status psched__lower_comm_general(const psched_schedule *schedule,
                                         const psched_plan *plan,
                                         const psched_lower_options *options,
                                         psched_schedule **lowered)
{
    return lower_comm(schedule, plan, options, lowered, false);
}
