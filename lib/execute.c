/* In-order execution of a compute schedule: the one engine behind
 * psched_validate and psched_simulate. Structure is checked first
 * (placement, duplicates, counts), then every device runs its list in
 * order; a device blocked on a dependency parks until that op finishes, so
 * the whole run is O(ops). Anything that cannot finish is a deadlock,
 * reported with its cycle. The structure checks and messages are shared
 * through execute.h with rendezvous.c (lowered schedules) and lower.c. */
#include "execute.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NONE PSCHED_EXEC_NONE

typedef psched_exec exec;

static uint32_t slot_of(uint8_t kind)
{
    switch (kind) {
    case PSCHED_OP_F: return PSCHED_SLOT_F;
    case PSCHED_OP_B: return PSCHED_SLOT_B;
    case PSCHED_OP_W: return PSCHED_SLOT_W;
    case PSCHED_OP_BW: return PSCHED_SLOT_BW;
    default: return NONE;
    }
}

static uint32_t *slot_ptr(exec *x, uint32_t stage, uint32_t mb, uint32_t slot)
{
    return &x->pos[((size_t)stage * x->mbs + mb) * PSCHED_SLOTS + slot];
}

static uint32_t device_of_index(const exec *x, size_t g)
{
    return x->stage_device[x->s->ops[g].stage];
}

/* "device 1 op 7 (3I2)" */
void psched__exec_describe(const exec *x, size_t g, char *buf, size_t size)
{
    uint32_t d = device_of_index(x, g);
    char t[48];
    psched__op_text(&x->s->ops[g], t, sizeof t);
    snprintf(buf, size, "device %u op %zu (%s)", d, g - x->s->offset[d], t);
}

static void name_op(uint32_t stage, uint32_t mb, uint8_t kind, char *buf, size_t size)
{
    psched_op o = {stage, mb, 0, kind, 0};
    psched__op_text(&o, buf, size);
}

/* Pass 1: every op is a known compute op on its placement's device, no
 * duplicates, pairs well formed. Fills the position index. */
static psched_status index_ops(exec *x)
{
    const psched_schedule *s = x->s;
    for (uint32_t d = 0; d < x->p; d++) {
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            const psched_op *o = &s->ops[g];
            char t[48], where[96];
            psched__op_text(o, t, sizeof t);
            size_t i = g - s->offset[d];
            uint32_t slot = slot_of(o->kind);
            if (slot == NONE && x->comm_ok)
                continue; /* rendezvous.c checks comm ops */
            if (slot == NONE)
                return psched_fail(PSCHED_EUNSUPPORTED,
                                   "device %u op %zu (%s): comm ops are not checked here; "
                                   "validate the compute schedule before lowering", d, i, t);
            if (o->stage >= x->S || o->microbatch >= x->mbs)
                return psched_fail(PSCHED_EINVALID,
                                   "device %u op %zu (%s): stage must be < %u and micro-batch < %u",
                                   d, i, t, x->S, x->mbs);
            if (x->stage_device[o->stage] != d)
                return psched_fail(PSCHED_EINVALID,
                                   "device %u op %zu (%s): stage %u is placed on device %u", d, i,
                                   t, o->stage, x->stage_device[o->stage]);
            if ((o->flags & PSCHED_OP_OVERLAP_NEXT) &&
                (g + 1 >= s->offset[d + 1] || (s->ops[g + 1].flags & PSCHED_OP_OVERLAP_NEXT)))
                return psched_fail(PSCHED_EINVALID,
                                   "device %u op %zu (%s): an overlapped pair needs exactly one "
                                   "next op to pair with", d, i, t);
            uint32_t *at = slot_ptr(x, o->stage, o->microbatch, slot);
            if (*at != NONE) {
                psched__exec_describe(x, *at, where, sizeof where);
                return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): duplicate of %s", d, i,
                                   t, where);
            }
            *at = (uint32_t)g;
        }
    }
    return PSCHED_OK;
}

/* Pass 3: every (stage, micro-batch) has one F and either BW or B + W. */
static psched_status check_counts(exec *x)
{
    for (uint32_t st = 0; st < x->S; st++) {
        for (uint32_t k = 0; k < x->mbs; k++) {
            uint32_t *e = slot_ptr(x, st, k, 0);
            char t[48];
            const char *problem = NULL;
            uint8_t kind = PSCHED_OP_F;
            if (e[PSCHED_SLOT_F] == NONE) {
                problem = "is missing";
            } else if (e[PSCHED_SLOT_BW] != NONE && (e[PSCHED_SLOT_B] != NONE || e[PSCHED_SLOT_W] != NONE)) {
                kind = e[PSCHED_SLOT_B] != NONE ? PSCHED_OP_B : PSCHED_OP_W;
                problem = "runs although the fused backward (BW, PyTorch B) also runs";
            } else if (e[PSCHED_SLOT_BW] == NONE && e[PSCHED_SLOT_B] == NONE) {
                kind = PSCHED_OP_B;
                problem = "is missing (and no fused BW runs either)";
            } else if (e[PSCHED_SLOT_BW] == NONE && e[PSCHED_SLOT_W] == NONE) {
                kind = PSCHED_OP_W;
                problem = "is missing (its B runs, so its W must too)";
            }
            if (problem) {
                name_op(st, k, kind, t, sizeof t);
                return psched_fail(PSCHED_EINVALID, "%s %s: expected on device %u", t, problem,
                                   x->stage_device[st]);
            }
        }
    }
    return PSCHED_OK;
}

/* Dependencies of one op (global indices), DESIGN §2. A dependency that
 * never runs is reported here; counts were checked already. */
int psched__exec_deps(const exec *x, const psched_op *o, uint32_t dep[2])
{
    int n = 0;
    uint32_t s = o->stage, k = o->microbatch;
    switch (o->kind) {
    case PSCHED_OP_F:
        if (!psched__stage_first(x->plan, s))
            dep[n++] = psched__exec_at(x, s - 1, k, PSCHED_SLOT_F);
        break;
    case PSCHED_OP_B:
    case PSCHED_OP_BW:
        dep[n++] = psched__exec_at(x, s, k, PSCHED_SLOT_F);
        if (!psched__stage_last(x->plan, s))
            dep[n++] = psched__exec_backward(x, s + 1, k);
        break;
    case PSCHED_OP_W:
        dep[n++] = psched__exec_at(x, s, k, PSCHED_SLOT_B);
        break;
    }
    return n;
}

/* Pass 2: every dependency of every op runs somewhere; reported in list
 * order so the message points at the first op that cannot run. */
static psched_status check_deps_exist(exec *x)
{
    const psched_schedule *s = x->s;
    for (uint32_t d = 0; d < x->p; d++) {
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            const psched_op *o = &s->ops[g];
            uint32_t dep[2];
            int n = psched__exec_deps(x, o, dep);
            for (int i = 0; i < n; i++) {
                if (dep[i] != NONE)
                    continue;
                /* F needs F of the stage before; B/BW need the next stage's
                 * backward (named in the op's own kind) or their own F; W its B. */
                uint32_t st = o->stage;
                uint8_t kind = PSCHED_OP_F;
                if (o->kind == PSCHED_OP_F)
                    st = o->stage - 1;
                else if (o->kind == PSCHED_OP_W)
                    kind = PSCHED_OP_B;
                else if (i == 1) {
                    st = o->stage + 1;
                    kind = o->kind;
                }
                char a[96], t[48];
                psched__exec_describe(x, g, a, sizeof a);
                name_op(st, o->microbatch, kind, t, sizeof t);
                return psched_fail(PSCHED_EINVALID, "%s: needs %s which never runs", a, t);
            }
        }
    }
    return PSCHED_OK;
}

double psched__exec_cost(const exec *x, const psched_op *o)
{
    psched_cost3 c = psched__plan_cost(x->costs, o->stage);
    switch (o->kind) {
    case PSCHED_OP_F: return c.f;
    case PSCHED_OP_B: return c.b;
    case PSCHED_OP_W: return c.w;
    default: return c.b + c.w;
    }
}

void psched__exec_enqueue(exec *x, uint32_t d)
{
    if (x->queued[d])
        return;
    x->queued[d] = true;
    x->queue[(x->qhead + x->qlen++) % x->p] = d;
}

/* Wakes the devices whose ops depend on op g across devices. */
static void notify(exec *x, size_t g)
{
    const psched_op *o = &x->s->ops[g];
    uint32_t dependent = NONE;
    if (o->kind == PSCHED_OP_F && !psched__stage_last(x->plan, o->stage))
        dependent = *slot_ptr(x, o->stage + 1, o->microbatch, PSCHED_SLOT_F);
    else if ((o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) &&
             !psched__stage_first(x->plan, o->stage)) {
        dependent = *slot_ptr(x, o->stage - 1, o->microbatch, PSCHED_SLOT_B);
        if (dependent == NONE)
            dependent = *slot_ptr(x, o->stage - 1, o->microbatch, PSCHED_SLOT_BW);
    }
    if (dependent == NONE)
        return;
    uint32_t d = device_of_index(x, dependent);
    if (x->waiting[d] == g) {
        x->waiting[d] = NONE;
        psched__exec_enqueue(x, d);
    }
}

/* Runs device d until its list ends or it needs an op that has not run. */
static psched_status run_device(exec *x, uint32_t d)
{
    const psched_schedule *s = x->s;
    size_t last = s->offset[d + 1];
    while (x->cursor[d] < last) {
        size_t g = x->cursor[d];
        size_t n = (s->ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
        double ready = x->free_at[d], cost = 0;
        for (size_t u = g; u < g + n; u++) {
            uint32_t dep[2];
            int nd = psched__exec_deps(x, &s->ops[u], dep);
            for (int i = 0; i < nd; i++) {
                if (n == 2 && (dep[i] == g || dep[i] == g + 1)) {
                    char a[96];
                    psched__exec_describe(x, u, a, sizeof a);
                    return psched_fail(PSCHED_EINVALID,
                                       "%s: overlapped with the op it depends on", a);
                }
                if (x->end[dep[i]] < 0) {
                    x->waiting[d] = dep[i];
                    return PSCHED_OK;
                }
                double lat = device_of_index(x, dep[i]) == d ? 0 : x->costs->comm;
                if (x->end[dep[i]] + lat > ready)
                    ready = x->end[dep[i]] + lat;
            }
            cost += psched__exec_cost(x, &s->ops[u]);
        }
        for (size_t u = g; u < g + n; u++) {
            x->start[u] = ready;
            x->end[u] = ready + cost;
        }
        x->free_at[d] = ready + cost;
        x->cursor[d] = g + n;
        for (size_t u = g; u < g + n; u++)
            notify(x, u);
    }
    return PSCHED_OK;
}

/* Every device that did not finish waits on something: follow the waits
 * from one of them until a device repeats, and name that cycle. */
psched_status psched__exec_deadlock(exec *x, const size_t *at_op)
{
    uint32_t d = 0;
    while (x->cursor[d] == x->s->offset[d + 1])
        d++;
    bool *seen = psched__calloc(x->p, sizeof *seen);
    if (!seen)
        return PSCHED_ENOMEM_FAIL();
    while (!seen[d]) {
        seen[d] = true;
        d = device_of_index(x, x->waiting[d]);
    }
    char msg[900];
    size_t at = (size_t)snprintf(msg, sizeof msg, "deadlock:");
    uint32_t first = d;
    do {
        char a[96], b[96];
        psched__exec_describe(x, at_op[d], a, sizeof a);
        psched__exec_describe(x, x->waiting[d], b, sizeof b);
        if (at < sizeof msg)
            at += (size_t)snprintf(msg + at, sizeof msg - at, "%s %s waits for %s",
                                   d == first ? "" : ";", a, b);
        d = device_of_index(x, x->waiting[d]);
    } while (d != first);
    psched__dealloc(seen);
    return psched_fail(PSCHED_EDEADLOCK, "%s", msg);
}

/* A parked device waiting on its own later op can never move: say so
 * precisely instead of as a one-device cycle. */
static psched_status check_self_waits(exec *x)
{
    for (uint32_t d = 0; d < x->p; d++) {
        if (x->cursor[d] == x->s->offset[d + 1] || x->waiting[d] == NONE)
            continue;
        if (device_of_index(x, x->waiting[d]) == d) {
            char a[96], b[96];
            psched__exec_describe(x, x->cursor[d], a, sizeof a);
            psched__exec_describe(x, x->waiting[d], b, sizeof b);
            return psched_fail(PSCHED_EINVALID, "%s: needs %s, which comes later on the same device",
                               a, b);
        }
    }
    return PSCHED_OK;
}

psched_status psched__exec_run(exec *x)
{
    for (uint32_t d = 0; d < x->p; d++)
        psched__exec_enqueue(x, d);
    while (x->qlen) {
        uint32_t d = x->queue[x->qhead];
        x->qhead = (x->qhead + 1) % x->p;
        x->qlen--;
        x->queued[d] = false;
        psched_status st = run_device(x, d);
        if (st)
            return st;
    }
    for (uint32_t d = 0; d < x->p; d++) {
        if (x->cursor[d] != x->s->offset[d + 1]) {
            psched_status st = check_self_waits(x);
            return st ? st : psched__exec_deadlock(x, x->cursor);
        }
    }
    return PSCHED_OK;
}

void psched__exec_free(exec *x)
{
    psched__dealloc(x->pos);
    psched__dealloc(x->stage_device);
    psched__dealloc(x->cursor);
    psched__dealloc(x->free_at);
    psched__dealloc(x->waiting);
    psched__dealloc(x->queue);
    psched__dealloc(x->queued);
    if (x->own_times) {
        psched__dealloc(x->start);
        psched__dealloc(x->end);
    }
    memset(x, 0, sizeof *x);
}

psched_status psched__exec_setup(exec *x, const psched_schedule *s, const psched_plan *costs,
                                 double *start, double *end, bool comm_ok)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->plan = s->plan;
    x->costs = costs ? costs : s->plan;
    x->p = s->devices;
    x->S = s->plan->devices * s->plan->chunks;
    x->mbs = psched__plan_chain_mbs(s->plan);
    x->comm_ok = comm_ok;
    size_t total = s->offset[s->devices];
    x->own_times = !start || !end;
    x->start = x->own_times ? psched__reallocarray(NULL, total + 1, sizeof(double)) : start;
    x->end = x->own_times ? psched__reallocarray(NULL, total + 1, sizeof(double)) : end;
    x->pos = psched__reallocarray(NULL, (size_t)x->S * x->mbs * PSCHED_SLOTS + 1, sizeof *x->pos);
    x->stage_device = psched__reallocarray(NULL, x->S + 1, sizeof *x->stage_device);
    x->cursor = psched__reallocarray(NULL, x->p, sizeof *x->cursor);
    x->free_at = psched__calloc(x->p, sizeof *x->free_at);
    x->waiting = psched__reallocarray(NULL, x->p, sizeof *x->waiting);
    x->queue = psched__reallocarray(NULL, x->p, sizeof *x->queue);
    x->queued = psched__calloc(x->p, sizeof *x->queued);
    if (!x->start || !x->end || !x->pos || !x->stage_device || !x->cursor || !x->free_at ||
        !x->waiting || !x->queue || !x->queued) {
        psched__exec_free(x);
        return PSCHED_ENOMEM_FAIL();
    }
    memset(x->pos, 0xff, ((size_t)x->S * x->mbs * PSCHED_SLOTS) * sizeof *x->pos);
    for (uint32_t st = 0; st < x->S; st++)
        x->stage_device[st] = psched_plan_stage_device(s->plan, st);
    for (size_t g = 0; g < total; g++)
        x->end[g] = -1;
    for (uint32_t d = 0; d < x->p; d++) {
        x->cursor[d] = s->offset[d];
        x->waiting[d] = NONE;
    }
    psched_status st = index_ops(x);
    if (!st)
        st = check_deps_exist(x);
    if (!st)
        st = check_counts(x);
    if (st)
        psched__exec_free(x);
    return st;
}

psched_status psched__execute(const psched_schedule *s, const psched_plan *costs, double *start,
                              double *end)
{
    exec x;
    psched_status st = psched__exec_setup(&x, s, costs, start, end, false);
    if (st)
        return st;
    st = psched__exec_run(&x);
    psched__exec_free(&x);
    return st;
}
