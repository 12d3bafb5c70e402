/* Collectives and vocabulary-parallel passes (issue 19): the plan's
 * settings for them, and their half of the execution engine.
 *
 * A COLLECTIVE op (index j of micro-batch k) is reached by every device;
 * it runs on the devices' communication stream once the last of them has
 * reached it, so it never holds a device's compute stream. Every device
 * must reach the collectives of a schedule in one order (NCCL's rule: one
 * communicator, one stream), which makes that stream a single global
 * sequence: a collective starts at max(latest arrival, end of the
 * collective before it).
 *
 * VOCAB_S / VOCAB_T are compute ops on device d's shard of the output layer
 * (Yeung et al., "Balancing Pipeline Parallelism with Vocabulary
 * Parallelism", MLSys'25). When a schedule holds them, its collectives of
 * micro-batch k are, by index: 0 broadcasts the last stage's output (its
 * device reaches it after that F), 1 all-reduces the softmax statistics,
 * and with three per micro-batch (Vocab-1) 2 all-reduces the input
 * gradient; with two (Vocab-2, online softmax) index 1 carries the input
 * gradient as well. Dependencies on each device d:
 *   S(d,k) after collective 0; collective 1 after S(d,k); T(d,k) after
 *   collective 1; Vocab-1: collective 2 after T(d,k); the last stage's
 *   backward of k after the last collective of k. */
#include "execute.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NONE PSCHED_EXEC_NONE
#define MAXC PSCHED_MAX_COLLECTIVES

/* ---- the plan's settings ---- */

static psched_status costmodel_block(psched_plan *plan, psched_costmodel **out)
{
    if (!plan->cm) {
        psched_costmodel *c = psched__calloc(1, sizeof *c);
        if (!c)
            return PSCHED_ENOMEM_FAIL();
        c->bandwidth[0] = c->bandwidth[1] = INFINITY;
        c->pcie_bandwidth = INFINITY;
        plan->cm = c;
    }
    *out = plan->cm;
    return PSCHED_OK;
}

static psched_status set_pair(psched_plan *plan, double a, double b, bool times)
{
    const char *what = times ? "time" : "memory change";
    if (!plan)
        return psched_fail(PSCHED_EINVAL, "plan is NULL");
    const double v[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (!isfinite(v[i]) || (times && v[i] < 0))
            return psched_fail(PSCHED_EINVAL, "vocabulary %s pass %s (%g) must be finite%s",
                               i ? "T" : "S", what, v[i], times ? " and >= 0" : "");
    psched_costmodel *c = NULL;
    psched_status st = costmodel_block(plan, &c);
    if (st)
        return st;
    double *dst = times ? c->vocab_time : c->vocab_mem;
    dst[0] = a;
    dst[1] = b;
    return PSCHED_OK;
}

psched_status psched_plan_set_vocab_cost(psched_plan *plan, double s, double t)
{
    return set_pair(plan, s, t, true);
}

psched_status psched_plan_set_vocab_mem(psched_plan *plan, double s, double t)
{
    return set_pair(plan, s, t, false);
}

static psched_status get_pair(const psched_plan *plan, double *a, double *b, bool times)
{
    if (!plan)
        return psched_fail(PSCHED_EINVAL, "plan is NULL");
    const psched_costmodel *c = plan->cm;
    const double *src = c ? (times ? c->vocab_time : c->vocab_mem) : NULL;
    if (a)
        *a = src ? src[0] : 0;
    if (b)
        *b = src ? src[1] : 0;
    return PSCHED_OK;
}

psched_status psched_plan_vocab_cost(const psched_plan *plan, double *s, double *t)
{
    return get_pair(plan, s, t, true);
}

psched_status psched_plan_vocab_mem(const psched_plan *plan, double *s, double *t)
{
    return get_pair(plan, s, t, false);
}

psched_status psched_plan_set_collective_bytes(psched_plan *plan, uint32_t index, double bytes)
{
    if (!plan)
        return psched_fail(PSCHED_EINVAL, "plan is NULL");
    if (index >= MAXC)
        return psched_fail(PSCHED_EINVAL, "collective index (%u) must be < %u", index, MAXC);
    if (!isfinite(bytes) || bytes < 0)
        return psched_fail(PSCHED_EINVAL, "collective bytes (%g) must be finite and >= 0",
                           bytes);
    psched_costmodel *c = NULL;
    psched_status st = costmodel_block(plan, &c);
    if (st)
        return st;
    c->coll_bytes[index] = bytes;
    return PSCHED_OK;
}

double psched_plan_collective_bytes(const psched_plan *plan, uint32_t index)
{
    if (!plan || index >= MAXC)
        return NAN;
    return plan->cm ? plan->cm->coll_bytes[index] : 0;
}

/* ---- the engine ---- */

struct psched_coll {
    uint32_t p, mbs, root, last_stage;
    uint32_t ncoll;   /* collectives per micro-batch when vocab passes exist */
    bool vocab;       /* the schedule holds VOCAB_S/VOCAB_T ops */
    uint32_t *cpos;   /* [(k*MAXC + j)*p + d] -> op index */
    uint32_t *vpos;   /* [(k*p + d)*2 + (kind - VOCAB_S)] -> op index */
    uint32_t *arrived;  /* [k*MAXC + j]: devices that reached it */
    double *arrive_max; /* [k*MAXC + j]: latest arrival */
    double *cend;       /* [k*MAXC + j]: end once run, NAN before */
    double *cstart;
    double *vend;       /* [op index of a vocab pass]: its end (times kept here too) */
    double comm_free;   /* end of the last collective run */
};

static uint32_t *cslot(const psched_coll *c, uint32_t j, uint32_t k, uint32_t d)
{
    return &c->cpos[((size_t)k * MAXC + j) * c->p + d];
}

static uint32_t *vslot(const psched_coll *c, uint32_t d, uint32_t k, uint8_t kind)
{
    return &c->vpos[((size_t)k * c->p + d) * 2 + (kind - PSCHED_OP_VOCAB_S)];
}

uint32_t psched__coll_device(const psched_schedule *s, size_t g)
{
    uint32_t lo = 0, hi = s->devices;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->offset[mid] <= g)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void psched__coll_free(psched_coll *c)
{
    if (!c)
        return;
    psched__dealloc(c->cpos);
    psched__dealloc(c->vpos);
    psched__dealloc(c->arrived);
    psched__dealloc(c->arrive_max);
    psched__dealloc(c->cend);
    psched__dealloc(c->cstart);
    psched__dealloc(c->vend);
    psched__dealloc(c);
}

static psched_status coll_alloc(psched_exec *x)
{
    psched_coll *c = psched__calloc(1, sizeof *c);
    if (!c)
        return PSCHED_ENOMEM_FAIL();
    x->coll = c;
    c->p = x->p;
    c->mbs = x->mbs;
    c->last_stage = x->S - 1;
    c->root = x->stage_device[x->S - 1];
    size_t nc = (size_t)x->mbs * MAXC, total = x->s->offset[x->p];
    c->cpos = psched__reallocarray(NULL, nc * x->p + 1, sizeof *c->cpos);
    c->vpos = psched__reallocarray(NULL, (size_t)x->mbs * x->p * 2 + 1, sizeof *c->vpos);
    c->arrived = psched__calloc(nc + 1, sizeof *c->arrived);
    c->arrive_max = psched__calloc(nc + 1, sizeof *c->arrive_max);
    c->cend = psched__reallocarray(NULL, nc + 1, sizeof *c->cend);
    c->cstart = psched__reallocarray(NULL, nc + 1, sizeof *c->cstart);
    c->vend = psched__calloc(total + 1, sizeof *c->vend);
    if (!c->cpos || !c->vpos || !c->arrived || !c->arrive_max || !c->cend || !c->cstart ||
        !c->vend)
        return PSCHED_ENOMEM_FAIL(); /* psched__exec_free frees the partial block */
    memset(c->cpos, 0xff, nc * x->p * sizeof *c->cpos);
    memset(c->vpos, 0xff, (size_t)x->mbs * x->p * 2 * sizeof *c->vpos);
    for (size_t i = 0; i < nc; i++)
        c->cend[i] = c->cstart[i] = NAN;
    return PSCHED_OK;
}

static void describe(const psched_exec *x, size_t g, char *buf, size_t size)
{
    psched__exec_describe(x, g, buf, size);
}

psched_status psched__coll_index(psched_exec *x, uint32_t d, size_t g)
{
    const psched_op *o = &x->s->ops[g];
    char t[48];
    size_t i = g - x->s->offset[d];
    psched__op_text(o, t, sizeof t);
    if (o->kind > PSCHED_OP_COLLECTIVE)
        return psched_fail(PSCHED_EINVALID, "device %u op %zu: kind %u is not an op kind", d, i,
                           o->kind);
    if (o->microbatch >= x->mbs)
        return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): micro-batch must be < %u", d,
                           i, t, x->mbs);
    if (o->kind == PSCHED_OP_COLLECTIVE && o->stage >= MAXC)
        return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): collective index must be < %u",
                           d, i, t, MAXC);
    if (o->kind != PSCHED_OP_COLLECTIVE && o->stage != d)
        return psched_fail(PSCHED_EINVALID,
                           "device %u op %zu (%s): vocabulary shard %u lives on device %u", d, i,
                           t, o->stage, o->stage);
    if (o->flags)
        return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): takes no flags (0x%x)", d, i,
                           t, o->flags);
    if (x->plan->chains != 1)
        return psched_fail(PSCHED_EINVALID,
                           "device %u op %zu (%s): collectives and vocabulary passes need one "
                           "chain (the schedule has %u)", d, i, t, x->plan->chains);
    if (!x->coll) {
        psched_status st = coll_alloc(x);
        if (st)
            return st;
    }
    psched_coll *c = x->coll;
    uint32_t *at = o->kind == PSCHED_OP_COLLECTIVE ? cslot(c, o->stage, o->microbatch, d)
                                                   : vslot(c, d, o->microbatch, o->kind);
    if (*at != NONE) {
        char where[96];
        describe(x, *at, where, sizeof where);
        return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): duplicate of %s", d, i, t,
                           where);
    }
    *at = (uint32_t)g;
    if (o->kind != PSCHED_OP_COLLECTIVE)
        c->vocab = true;
    return PSCHED_OK;
}

/* Every collective reached by every device, in one order. */
static psched_status check_order(psched_exec *x)
{
    psched_coll *c = x->coll;
    const psched_schedule *s = x->s;
    for (uint32_t k = 0; k < c->mbs; k++) {
        for (uint32_t j = 0; j < MAXC; j++) {
            uint32_t reached = 0, missing = NONE;
            for (uint32_t d = 0; d < c->p; d++) {
                if (*cslot(c, j, k, d) != NONE)
                    reached++;
                else if (missing == NONE)
                    missing = d;
            }
            if (reached == 0 || reached == c->p)
                continue;
            char t[48], list[160];
            psched_op o = {j, k, 0, PSCHED_OP_COLLECTIVE, 0};
            psched__op_text(&o, t, sizeof t);
            size_t at = 0;
            list[0] = '\0';
            for (uint32_t d = 0, n = 0; d < c->p && at < sizeof list; d++) {
                if (*cslot(c, j, k, d) != NONE)
                    continue;
                if (n++ == 6) {
                    snprintf(list + at, sizeof list - at, ", ...");
                    break;
                }
                at += (size_t)snprintf(list + at, sizeof list - at, "%s%u", n > 1 ? ", " : "",
                                       d);
            }
            return psched_fail(PSCHED_EDEADLOCK,
                               "deadlock: collective %s is reached by %u of %u devices; "
                               "device(s) %s never reach it, so the others wait forever",
                               t, reached, c->p, list);
        }
    }
    /* same set on every device; compare each device's sequence with device 0's */
    size_t n0 = s->offset[1];
    for (uint32_t d = 1; d < c->p; d++) {
        size_t a = s->offset[0], b = s->offset[d];
        for (;;) {
            while (a < n0 && s->ops[a].kind != PSCHED_OP_COLLECTIVE)
                a++;
            while (b < s->offset[d + 1] && s->ops[b].kind != PSCHED_OP_COLLECTIVE)
                b++;
            if (a >= n0 || b >= s->offset[d + 1])
                break;
            const psched_op *oa = &s->ops[a], *ob = &s->ops[b];
            if (oa->stage != ob->stage || oa->microbatch != ob->microbatch) {
                char ta[48], tb[48], wa[96], wb[96];
                psched__op_text(oa, ta, sizeof ta);
                psched__op_text(ob, tb, sizeof tb);
                describe(x, a, wa, sizeof wa);
                describe(x, b, wb, sizeof wb);
                return psched_fail(PSCHED_EDEADLOCK,
                                   "deadlock: devices 0 and %u reach collectives in different "
                                   "orders (all devices must reach them in one order): %s "
                                   "comes before %s on device 0, but %s comes first on device %u",
                                   d, wa, tb, wb, d);
            }
            a++;
            b++;
        }
    }
    return PSCHED_OK;
}

/* Op index `need` must come before op `g` on the same device. */
static psched_status need_before(psched_exec *x, size_t g, uint32_t need, uint32_t stage,
                                 uint32_t mb, uint8_t kind)
{
    char a[96], t[48];
    describe(x, g, a, sizeof a);
    if (need == NONE) {
        psched_op o = {stage, mb, 0, kind, 0};
        psched__op_text(&o, t, sizeof t);
        return psched_fail(PSCHED_EINVALID, "%s: needs %s which never runs", a, t);
    }
    if (need > g) {
        char b[96];
        describe(x, need, b, sizeof b);
        return psched_fail(PSCHED_EINVALID, "%s: needs %s, which comes later on the same device",
                           a, b);
    }
    return PSCHED_OK;
}

/* The vocabulary rules: every shard's S and T for every micro-batch, two
 * or three collectives per micro-batch, and the same-device orders. */
static psched_status check_vocab(psched_exec *x)
{
    psched_coll *c = x->coll;
    uint32_t n0 = 0;
    while (n0 < MAXC && *cslot(c, n0, 0, 0) != NONE)
        n0++;
    for (uint32_t k = 0; k < c->mbs; k++) {
        uint32_t n = 0;
        while (n < MAXC && *cslot(c, n, k, 0) != NONE)
            n++;
        uint32_t extra = n;
        while (extra < MAXC && *cslot(c, extra, k, 0) == NONE)
            extra++;
        if ((n != 2 && n != 3) || n != n0 || extra < MAXC)
            return psched_fail(PSCHED_EINVALID,
                               "micro-batch %u has collectives %s0..%u: vocabulary passes need "
                               "indices 0, 1 (Vocab-2) or 0, 1, 2 (Vocab-1) for every "
                               "micro-batch, the same count for all", k,
                               n ? "" : "none of ", n ? n - 1 : 0);
        for (uint32_t d = 0; d < c->p; d++) {
            for (uint8_t kind = PSCHED_OP_VOCAB_S; kind <= PSCHED_OP_VOCAB_T; kind++) {
                if (*vslot(c, d, k, kind) != NONE)
                    continue;
                char t[48];
                psched_op o = {d, k, 0, kind, 0};
                psched__op_text(&o, t, sizeof t);
                return psched_fail(PSCHED_EINVALID,
                                   "%s is missing: every device runs the S and T passes of its "
                                   "vocabulary shard for every micro-batch (expected on device "
                                   "%u)", t, d);
            }
        }
    }
    c->ncoll = n0;
    uint32_t last = n0 - 1;
    for (uint32_t k = 0; k < c->mbs; k++) {
        uint32_t f = psched__exec_at(x, c->last_stage, k, PSCHED_SLOT_F);
        psched_status st = need_before(x, *cslot(c, 0, k, c->root), f, c->last_stage, k,
                                       PSCHED_OP_F);
        for (uint32_t d = 0; d < c->p && !st; d++) {
            uint32_t sp = *vslot(c, d, k, PSCHED_OP_VOCAB_S), tp = *vslot(c, d, k, PSCHED_OP_VOCAB_T);
            st = need_before(x, sp, *cslot(c, 0, k, d), 0, k, PSCHED_OP_COLLECTIVE);
            if (!st)
                st = need_before(x, *cslot(c, 1, k, d), sp, d, k, PSCHED_OP_VOCAB_S);
            if (!st)
                st = need_before(x, tp, *cslot(c, 1, k, d), 1, k, PSCHED_OP_COLLECTIVE);
            if (!st && n0 == 3)
                st = need_before(x, *cslot(c, 2, k, d), tp, d, k, PSCHED_OP_VOCAB_T);
        }
        uint32_t b = psched__exec_backward(x, c->last_stage, k);
        if (!st && b != NONE)
            st = need_before(x, b, *cslot(c, last, k, c->root), last, k, PSCHED_OP_COLLECTIVE);
        if (st)
            return st;
    }
    return PSCHED_OK;
}

psched_status psched__coll_check(psched_exec *x)
{
    psched_status st = check_order(x);
    if (!st && x->coll->vocab)
        st = check_vocab(x);
    return st;
}

double psched__collective_time(const psched_plan *costs, uint32_t p, uint32_t j, double w)
{
    const psched_costmodel *cm = costs->cm;
    double t = costs->comm;
    if (!cm)
        return t;
    int inter = cm->node_devices && p > cm->node_devices;
    double hold = cm->coll_bytes[j] * w / cm->bandwidth[inter];
    return t + cm->latency[inter] + (hold >= 0 ? hold : 0); /* 0 bytes over INFINITY: 0 */
}

/* Time of collective j of micro-batch k. */
static double coll_cost(const psched_exec *x, uint32_t j, uint32_t k)
{
    return psched__collective_time(x->costs, x->p, j, x->weight ? x->weight[k] : 1.0);
}

static double vocab_cost(const psched_exec *x, const psched_op *o)
{
    const psched_costmodel *cm = x->costs->cm;
    double t = cm ? cm->vocab_time[o->kind - PSCHED_OP_VOCAB_S] : 0;
    return x->weight ? t * x->weight[o->microbatch] : t;
}

double psched__coll_op_cost(const psched_exec *x, const psched_op *o)
{
    return o->kind == PSCHED_OP_COLLECTIVE ? 0 : vocab_cost(x, o);
}

/* Collective (j, k) has run: parks device d on it otherwise, naming the
 * first device that has not reached it. */
static bool coll_done(psched_exec *x, uint32_t d, uint32_t j, uint32_t k, double *ready)
{
    psched_coll *c = x->coll;
    size_t ci = (size_t)k * MAXC + j;
    if (!isnan(c->cend[ci])) {
        if (c->cend[ci] > *ready)
            *ready = c->cend[ci];
        return true;
    }
    for (uint32_t e = 0; e < c->p; e++) {
        uint32_t at = *cslot(c, j, k, e);
        if (at >= x->cursor[e]) {
            x->waiting[d] = at;
            return false;
        }
    }
    /* everyone arrived but it has not run: an earlier collective holds
     * the stream; wait on this device's own op (completion wakes all) */
    x->waiting[d] = *cslot(c, j, k, d);
    return false;
}

bool psched__coll_backward_ready(psched_exec *x, uint32_t d, const psched_op *o, double *ready)
{
    psched_coll *c = x->coll;
    if (!c->vocab || o->stage != c->last_stage)
        return true;
    return coll_done(x, d, c->ncoll - 1, o->microbatch, ready);
}

/* The collective all devices have reached runs on the shared stream. */
static void run_collective(psched_exec *x, uint32_t j, uint32_t k)
{
    psched_coll *c = x->coll;
    size_t ci = (size_t)k * MAXC + j;
    double start = fmax(c->arrive_max[ci], c->comm_free);
    double end = start + coll_cost(x, j, k);
    c->cstart[ci] = start;
    c->cend[ci] = end;
    c->comm_free = end;
    for (uint32_t e = 0; e < c->p; e++) {
        uint32_t at = *cslot(c, j, k, e);
        if (x->end) {
            x->start[at] = start;
            x->end[at] = end;
        }
        psched__exec_enqueue(x, e);
    }
}

bool psched__coll_run(psched_exec *x, uint32_t d, size_t g)
{
    psched_coll *c = x->coll;
    const psched_op *o = &x->s->ops[g];
    uint32_t k = o->microbatch;
    if (o->kind == PSCHED_OP_COLLECTIVE) {
        uint32_t j = o->stage;
        size_t ci = (size_t)k * MAXC + j;
        double arrive = x->free_at[d];
        if (c->arrived[ci] == 0 || arrive > c->arrive_max[ci])
            c->arrive_max[ci] = arrive;
        x->cursor[d] = g + 1;
        /* the comm stream is in order: a collective runs after the one
         * before it, which every device reached first (one order) */
        if (++c->arrived[ci] == c->p)
            run_collective(x, j, k);
        for (uint32_t e = 0; e < c->p; e++) {
            if (x->waiting[e] == g) {
                x->waiting[e] = NONE;
                psched__exec_enqueue(x, e);
            }
        }
        return true;
    }
    double ready = x->free_at[d];
    uint32_t j = o->kind == PSCHED_OP_VOCAB_S ? 0 : 1;
    if (c->vocab && !coll_done(x, d, j, k, &ready))
        return false;
    double end = ready + vocab_cost(x, o);
    if (x->end) {
        x->start[g] = ready;
        x->end[g] = end;
    }
    c->vend[g] = end;
    x->free_at[d] = end;
    x->cursor[d] = g + 1;
    return true;
}
