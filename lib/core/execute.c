/* In-order execution of a compute schedule: the one engine behind
 * psched_validate and psched_simulate. Structure is checked first
 * (placement, duplicates, counts), then every device runs its list in
 * order; a device blocked on a dependency parks until that op finishes, so
 * the whole run is O(ops). Anything that cannot finish is a deadlock,
 * reported with its cycle. The structure checks and messages are shared
 * through execute.h with rendezvous.c (lowered schedules) and lower.c.
 *
 * Speed: the checks run as tight loops that only test; the code that names
 * the offending op and rule runs once something failed, and recomputes
 * what it needs. When the first failure is ambiguous (several rules broken
 * at once) the same rule wins as in a check-everything-in-order design:
 * pass 1 (structure), then pass 2 (every dependency runs, first in list
 * order), then pass 3 (counts), then the run. psched__execute folds pass 2
 * into the run, which looks at every dependency anyway, and runs the pass
 * on its own only to name a failure. */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "execute.h"
#include "memadvise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NONE PSCHED_EXEC_NONE
/* ops ahead of a device's cursor to prefetch (a few cache lines of records) */
#define PREFETCH_AHEAD 16

typedef psched_exec exec;

#if defined(__GNUC__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define UNLIKELY(x) (x)
#define LIKELY(x) (x)
#endif

static uint32_t *slot_ptr(exec *x, uint32_t stage, uint32_t mb, uint32_t slot)
{
    return &x->pos[((size_t)mb * x->S + stage) * PSCHED_SLOTS + slot];
}

static uint32_t device_of_index(const exec *x, size_t g)
{
    if (UNLIKELY(x->s->ops[g].kind >= PSCHED_OP_VOCAB_S))
        return psched__coll_device(x->s, g); /* `stage` is a shard or an index */
    return x->stage_device[x->s->ops[g].stage];
}

static void name_op(uint32_t stage, uint32_t mb, uint8_t kind, char *buf, size_t size)
{
    psched_op o = {stage, mb, 0, kind, 0};
    psched__op_text(&o, buf, size);
}

/* The message for op g of device d, which pass 1 refused. */
static psched_status index_fail(exec *x, uint32_t d, size_t g)
{
    const psched_schedule *s = x->s;
    const psched_op *o = &s->ops[g];
    char t[48], where[96];
    psched__op_text(o, t, sizeof t);
    size_t i = g - s->offset[d];
    if (o->kind > PSCHED_OP_BW)
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
    if ((o->flags & PSCHED_OP_OVERLAP_NEXT) && g + 1 < s->offset[d + 1] &&
        s->ops[g + 1].kind >= PSCHED_OP_OFFLOAD && s->ops[g + 1].kind <= PSCHED_OP_RELOAD)
        return psched_fail(PSCHED_EINVALID,
                           "device %u op %zu (%s): an overlapped pair holds two compute ops; "
                           "the next op is a copy (OFFLOAD/RELOAD), which runs on the copy "
                           "stream", d, i, t);
    if ((o->flags & PSCHED_OP_OVERLAP_NEXT) &&
        (g + 1 >= s->offset[d + 1] || (s->ops[g + 1].flags & PSCHED_OP_OVERLAP_NEXT)))
        return psched_fail(PSCHED_EINVALID,
                           "device %u op %zu (%s): an overlapped pair needs exactly one "
                           "next op to pair with", d, i, t);
    psched__exec_describe(x, *slot_ptr(x, o->stage, o->microbatch, o->kind), where,
                          sizeof where);
    return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): duplicate of %s", d, i, t,
                       where);
}

static uint32_t *copy_slot(exec *x, uint32_t stage, uint32_t mb, uint8_t kind)
{
    return &x->copy_pos[((size_t)mb * x->S + stage) * 2 + (kind - PSCHED_OP_OFFLOAD)];
}

/* Pass 1 for an activation copy (OFFLOAD/RELOAD): on its stage's device,
 * no flags, no duplicate. The copy index is allocated at the first one, so
 * schedules without copies pay nothing. */
static psched_status index_copy(exec *x, uint32_t d, size_t g)
{
    const psched_op *o = &x->s->ops[g];
    char t[48];
    size_t i = g - x->s->offset[d];
    psched__op_text(o, t, sizeof t);
    if (o->stage >= x->S || o->microbatch >= x->mbs)
        return psched_fail(PSCHED_EINVALID,
                           "device %u op %zu (%s): stage must be < %u and micro-batch < %u",
                           d, i, t, x->S, x->mbs);
    if (x->stage_device[o->stage] != d)
        return psched_fail(PSCHED_EINVALID,
                           "device %u op %zu (%s): stage %u is placed on device %u", d, i,
                           t, o->stage, x->stage_device[o->stage]);
    if (o->flags)
        return psched_fail(PSCHED_EINVALID,
                           "device %u op %zu (%s): a copy runs alone on the copy stream and "
                           "takes no flags (0x%x)", d, i, t, o->flags);
    if (!x->copy_pos) {
        size_t n = (size_t)x->S * x->mbs * 2;
        x->copy_pos = psched__reallocarray(NULL, n + 1, sizeof *x->copy_pos);
        x->copy_free = psched__calloc(x->p, sizeof *x->copy_free);
        if (!x->copy_pos || !x->copy_free)
            return PSCHED_ENOMEM_FAIL();
        memset(x->copy_pos, 0xff, n * sizeof *x->copy_pos);
    }
    uint32_t *at = copy_slot(x, o->stage, o->microbatch, o->kind);
    if (*at != NONE) {
        char where[96];
        psched__exec_describe(x, *at, where, sizeof where);
        return psched_fail(PSCHED_EINVALID, "device %u op %zu (%s): duplicate of %s", d, i, t,
                           where);
    }
    *at = (uint32_t)g;
    return PSCHED_OK;
}

/* Pass 1: every op is a known compute op on its placement's device, no
 * duplicates, pairs well formed. Fills the position index. */
static psched_status index_ops(exec *x)
{
    const psched_schedule *s = x->s;
    const psched_op *ops = s->ops;
    for (uint32_t d = 0; d < x->p; d++) {
        size_t last = s->offset[d + 1];
        for (size_t g = s->offset[d]; g < last; g++) {
            const psched_op *o = &ops[g];
#if defined(__GNUC__)
            /* the cells a device's ops land in are scattered over the index */
            if (g + PREFETCH_AHEAD < last) {
                const psched_op *soon = &ops[g + PREFETCH_AHEAD];
                if (soon->stage < x->S && soon->microbatch < x->mbs)
                    __builtin_prefetch(slot_ptr(x, soon->stage, soon->microbatch, 0), 1);
            }
#endif
            if (UNLIKELY(o->kind > PSCHED_OP_BW)) {
                if (o->kind >= PSCHED_OP_VOCAB_S) {
                    psched_status st = psched__coll_index(x, d, g);
                    if (st)
                        return st;
                    continue;
                }
                if (o->kind == PSCHED_OP_OFFLOAD || o->kind == PSCHED_OP_RELOAD) {
                    psched_status st = index_copy(x, d, g);
                    if (st)
                        return st;
                    continue;
                }
                if (x->comm_ok)
                    continue; /* rendezvous.c checks comm ops */
                return index_fail(x, d, g);
            }
            if (UNLIKELY(o->stage >= x->S ||
                         o->microbatch >= x->mbs || x->stage_device[o->stage] != d))
                return index_fail(x, d, g);
            if (UNLIKELY((o->flags & PSCHED_OP_OVERLAP_NEXT) &&
                         (g + 1 >= last || (ops[g + 1].flags & PSCHED_OP_OVERLAP_NEXT) ||
                          ops[g + 1].kind >= PSCHED_OP_OFFLOAD)))
                return index_fail(x, d, g);
            uint32_t *at = slot_ptr(x, o->stage, o->microbatch, o->kind);
            if (UNLIKELY(*at != NONE))
                return index_fail(x, d, g);
            *at = (uint32_t)g;
        }
    }
    return PSCHED_OK;
}

/* What is wrong with one cell's counts, or NULL; *kind gets the op named. */
static const char *cell_problem(const uint32_t *e, uint8_t *kind)
{
    *kind = PSCHED_OP_F;
    if (e[PSCHED_SLOT_F] == NONE)
        return "is missing";
    if (e[PSCHED_SLOT_BW] != NONE && (e[PSCHED_SLOT_B] != NONE || e[PSCHED_SLOT_W] != NONE)) {
        *kind = e[PSCHED_SLOT_B] != NONE ? PSCHED_OP_B : PSCHED_OP_W;
        return "runs although the fused backward (BW, PyTorch B) also runs";
    }
    if (e[PSCHED_SLOT_BW] == NONE && e[PSCHED_SLOT_B] == NONE) {
        *kind = PSCHED_OP_B;
        return "is missing (and no fused BW runs either)";
    }
    if (e[PSCHED_SLOT_BW] == NONE && e[PSCHED_SLOT_W] == NONE) {
        *kind = PSCHED_OP_W;
        return "is missing (its B runs, so its W must too)";
    }
    return NULL;
}

/* Pass 3 for copies: an OFFLOAD without its RELOAD leaves the backward
 * without its input, a RELOAD without an OFFLOAD copies nothing back. */
static psched_status check_copy_pairs(exec *x)
{
    for (uint32_t st = 0; st < x->S; st++) {
        for (uint32_t k = 0; k < x->mbs; k++) {
            uint32_t off = *copy_slot(x, st, k, PSCHED_OP_OFFLOAD);
            uint32_t re = *copy_slot(x, st, k, PSCHED_OP_RELOAD);
            if ((off == NONE) == (re == NONE))
                continue;
            char a[96], t[48];
            psched__exec_describe(x, off != NONE ? off : re, a, sizeof a);
            name_op(st, k, off != NONE ? PSCHED_OP_RELOAD : PSCHED_OP_OFFLOAD, t, sizeof t);
            return psched_fail(PSCHED_EINVALID, "%s: has no matching %s (copies come in "
                               "pairs: OFFLOAD after the F, RELOAD before the backward)", a, t);
        }
    }
    return PSCHED_OK;
}

/* Pass 3: every (stage, micro-batch) has one F and either BW or B + W. A
 * cell is good when F is there and exactly one of BW, (B and W) is; the
 * scan tests that in memory order, and only a failure walks the cells
 * stage by stage to name the first bad one. */
static psched_status check_counts(exec *x)
{
    size_t cells = (size_t)x->S * x->mbs;
    bool bad = false;
    for (size_t c = 0; c < cells; c++) {
        const uint32_t *e = &x->pos[c * PSCHED_SLOTS];
        bool split = (e[PSCHED_SLOT_B] != NONE) & (e[PSCHED_SLOT_W] != NONE);
        bool any_split = (e[PSCHED_SLOT_B] != NONE) | (e[PSCHED_SLOT_W] != NONE);
        bool fused = e[PSCHED_SLOT_BW] != NONE;
        bad |= (e[PSCHED_SLOT_F] == NONE) | (fused ? any_split : !split);
    }
    if (!bad) {
        psched_status st = x->copy_pos ? check_copy_pairs(x) : PSCHED_OK;
        return !st && x->coll ? psched__coll_check(x) : st;
    }
    for (uint32_t st = 0; st < x->S; st++) {
        for (uint32_t k = 0; k < x->mbs; k++) {
            uint8_t kind;
            const char *problem = cell_problem(slot_ptr(x, st, k, 0), &kind);
            if (problem) {
                char t[48];
                name_op(st, k, kind, t, sizeof t);
                return psched_fail(PSCHED_EINVALID, "%s %s: expected on device %u", t, problem,
                                   x->stage_device[st]);
            }
        }
    }
    return PSCHED_OK;
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
            if (UNLIKELY(o->kind == PSCHED_OP_OFFLOAD || o->kind == PSCHED_OP_RELOAD)) {
                bool off = o->kind == PSCHED_OP_OFFLOAD;
                uint32_t need = off ? psched__exec_at(x, o->stage, o->microbatch, PSCHED_SLOT_F)
                                    : *copy_slot(x, o->stage, o->microbatch, PSCHED_OP_OFFLOAD);
                if (need != NONE)
                    continue;
                char a[96], t[48];
                psched__exec_describe(x, g, a, sizeof a);
                name_op(o->stage, o->microbatch, off ? PSCHED_OP_F : PSCHED_OP_OFFLOAD, t,
                        sizeof t);
                return psched_fail(PSCHED_EINVALID, "%s: needs %s which never runs", a, t);
            }
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
    x->deps_checked = true;
    return PSCHED_OK;
}

/* w_k of an op's micro-batch (1 without weights). */
static inline double op_weight(const exec *x, const psched_op *o)
{
    return x->weight ? x->weight[(size_t)(o->stage / x->per) * x->mbs + o->microbatch] : 1.0;
}

double psched__exec_cost(const exec *x, const psched_op *o)
{
    if (UNLIKELY(o->kind >= PSCHED_OP_VOCAB_S))
        return psched__coll_op_cost(x, o);
    /* comm kinds never reach here; anything past BW costs like BW */
    uint32_t k = o->kind <= PSCHED_OP_BW ? o->kind : PSCHED_OP_BW;
    double t = x->stage_cost[(size_t)o->stage * PSCHED_SLOTS + k];
    return x->weight ? t * op_weight(x, o) : t;
}

/* What an overlapped pair saves: only an F with a B or BW hides one op's
 * communication under the other's compute; each side's saving scales with
 * its micro-batch, and the pair saves the smaller, so never more than
 * either op takes (the setter keeps s <= min(t_F, t_B)). */
static double pair_saving(const exec *x, const psched_op *a, const psched_op *b)
{
    if (a->kind != PSCHED_OP_F) {
        const psched_op *t = a;
        a = b;
        b = t;
    }
    if (a->kind != PSCHED_OP_F || (b->kind != PSCHED_OP_B && b->kind != PSCHED_OP_BW))
        return 0;
    return fmin(x->overlap[a->stage] * op_weight(x, a), x->overlap[b->stage] * op_weight(x, b));
}

double psched__exec_unit_cost(const exec *x, const psched_op *ops, size_t g, size_t n)
{
    double cost = 0;
    for (size_t u = g; u < g + n; u++)
        cost += psched__exec_cost(x, &ops[u]);
    if (n == 2 && x->overlap)
        cost -= pair_saving(x, &ops[g], &ops[g + 1]);
    return cost;
}

/* Wakes the device whose op depends across devices on op g of device d: the
 * next stage's F for an F, the previous stage's backward for a B/BW. A
 * device parks on exactly the op it needs, so the test is one compare. */
static void notify(exec *x, const psched_op *o, size_t g, uint32_t d)
{
    uint32_t other;
    if (o->kind == PSCHED_OP_F && !(x->stage_flags[o->stage] & PSCHED_EXEC_LAST))
        other = x->stage_device[o->stage + 1];
    else if ((o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) &&
             !(x->stage_flags[o->stage] & PSCHED_EXEC_FIRST))
        other = x->stage_device[o->stage - 1];
    else
        return;
    if (other != d && x->waiting[other] == g) {
        x->waiting[other] = NONE;
        psched__exec_enqueue(x, other);
    }
}

/* Outcome of looking at one dependency of the unit [g, g + n) of device d. */
enum { DEP_READY, DEP_PARK, DEP_MISSING, DEP_IN_PAIR };

/* Dependency `dep`, which runs on device `dd` (NONE: never runs), folded
 * into *ready with the edge latency when it has run. */
static inline int take_dep(exec *x, uint32_t d, size_t g, size_t n, uint32_t dep, uint32_t dd,
                           double *ready)
{
    if (UNLIKELY(dep == NONE))
        return DEP_MISSING;
    if (UNLIKELY(n == 2 && (dep == g || dep == g + 1)))
        return DEP_IN_PAIR;
    if (dep >= x->cursor[dd]) {
        x->waiting[d] = dep;
        return DEP_PARK;
    }
    if (x->end) {
        double t = dd == d ? x->end[dep] : x->links ? x->arrive[dep] : x->end[dep] + x->costs->comm;
        if (t > *ready)
            *ready = t;
    }
    return DEP_READY;
}

/* The dependencies of op o (on device d) in the order psched__exec_deps
 * lists them, with the device each runs on taken from the stage map rather
 * than from the op record; the first that is not ready decides. */
static inline int take_deps(exec *x, uint32_t d, size_t g, size_t n, const psched_op *o,
                            double *ready)
{
    uint32_t s = o->stage, k = o->microbatch;
    uint8_t flags = x->stage_flags[s];
    int r = DEP_READY;
    switch (o->kind) {
    case PSCHED_OP_F:
        if (!(flags & PSCHED_EXEC_FIRST))
            r = take_dep(x, d, g, n, psched__exec_at(x, s - 1, k, PSCHED_SLOT_F),
                         x->stage_device[s - 1], ready);
        break;
    case PSCHED_OP_B:
    case PSCHED_OP_BW:
        r = take_dep(x, d, g, n, psched__exec_at(x, s, k, PSCHED_SLOT_F), d, ready);
        if (r == DEP_READY && !(flags & PSCHED_EXEC_LAST))
            r = take_dep(x, d, g, n, psched__exec_backward(x, s + 1, k), x->stage_device[s + 1],
                         ready);
        break;
    case PSCHED_OP_W:
        r = take_dep(x, d, g, n, psched__exec_at(x, s, k, PSCHED_SLOT_B), d, ready);
        break;
    case PSCHED_OP_OFFLOAD:
        r = take_dep(x, d, g, n, psched__exec_at(x, s, k, PSCHED_SLOT_F), d, ready);
        break;
    case PSCHED_OP_RELOAD:
        r = take_dep(x, d, g, n, *copy_slot(x, s, k, PSCHED_OP_OFFLOAD), d, ready);
        break;
    }
    /* the vocabulary layer's last collective feeds the last stage's backward */
    if (UNLIKELY(x->coll) && r == DEP_READY &&
        (o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) &&
        !psched__coll_backward_ready(x, d, o, ready))
        r = DEP_PARK;
    /* an offloaded activation is back only when its RELOAD has ended */
    if (UNLIKELY(x->copy_pos) && r == DEP_READY &&
        (o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW)) {
        uint32_t re = *copy_slot(x, s, k, PSCHED_OP_RELOAD);
        if (re != NONE)
            r = take_dep(x, d, g, n, re, d, ready);
    }
    return r;
}

/* Link model: the output of op g (just finished on device d) leaves for
 * the device of its consumer on the link of d in that direction, after
 * whatever was issued on that link before it (ops of one device finish in
 * list order, so this is issue order); it holds the link for bytes /
 * bandwidth and arrives the link's latency + t_comm after that. */
static void send_output(exec *x, const psched_op *o, size_t g, uint32_t d)
{
    uint32_t to;
    int dir;
    if (o->kind == PSCHED_OP_F && !(x->stage_flags[o->stage] & PSCHED_EXEC_LAST)) {
        to = x->stage_device[o->stage + 1];
        dir = 0;
    } else if ((o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) &&
               !(x->stage_flags[o->stage] & PSCHED_EXEC_FIRST)) {
        to = x->stage_device[o->stage - 1];
        dir = 1;
    } else {
        return;
    }
    if (to == d)
        return;
    const psched_costmodel *c = x->costs->cm;
    uint32_t nd = c->node_devices;
    int inter = nd && d / nd != to / nd;
    double *link = &x->link_free[2 * (size_t)d + (to < d)];
    double leave = fmax(x->end[g], *link);
    double hold = psched__plan_bytes(x->costs, o->stage, dir) * op_weight(x, o) / c->bandwidth[inter];
    if (!(hold >= 0)) /* 0 bytes over an infinite link: no time, not NaN */
        hold = 0;
    *link = leave + hold;
    x->arrive[g] = leave + hold + c->latency[inter] + x->costs->comm;
    if (x->leave_out)
        x->leave_out[g] = leave;
}

/* Devices take turns after an op or two, so each device's list is one of
 * p interleaved streams, too many for the hardware prefetcher to follow:
 * fetch the lines device d will read next, op g being its current one. */
static inline void prefetch_ahead(const exec *x, const psched_op *ops, size_t g, size_t last)
{
#if defined(__GNUC__)
    if (g + PREFETCH_AHEAD >= last)
        return;
    __builtin_prefetch(&ops[g + PREFETCH_AHEAD]);
    if (x->end) {
        __builtin_prefetch(&x->start[g + PREFETCH_AHEAD], 1);
        __builtin_prefetch(&x->end[g + PREFETCH_AHEAD], 1);
    }
    /* the record fetched half as far ahead is in cache by now: its cell,
     * next to its neighbour stages' cells, is what it will look up */
    const psched_op *soon = &ops[g + PREFETCH_AHEAD / 2];
    __builtin_prefetch(&x->pos[((size_t)soon->microbatch * x->S + soon->stage) * PSCHED_SLOTS]);
#else
    (void)x, (void)ops, (void)g, (void)last;
#endif
}

void psched__exec_copy_at(exec *x, uint32_t d, size_t g, double ready)
{
    const psched_op *o = &x->s->ops[g];
    const psched_costmodel *c = x->costs->cm;
    double bw = c ? c->pcie_bandwidth : INFINITY;
    double amount = fabs(psched__plan_mem(x->costs, o->stage).f) * op_weight(x, o);
    double t = isinf(bw) ? 0 : amount / bw;
    double start = fmax(ready, x->copy_free[d]);
    x->start[g] = start;
    x->end[g] = start + t;
    x->copy_free[d] = start + t;
}

/* An activation copy, issued when device d's compute reaches it: it starts
 * once the copy stream is free and its input is there (the F for an
 * OFFLOAD, the OFFLOAD for a RELOAD), takes mem_F·w_k / PCIe bandwidth on
 * the copy stream and none of the compute stream. */
static int run_copy(exec *x, uint32_t d, size_t g)
{
    const psched_op *o = &x->s->ops[g];
    double ready = x->free_at[d];
    int r = take_deps(x, d, g, 1, o, &ready);
    if (r != DEP_READY)
        return r;
    if (x->end)
        psched__exec_copy_at(x, d, g, ready);
    x->cursor[d] = g + 1;
    return DEP_READY;
}

/* Runs device d until its list ends or it needs an op that has not run. */
static psched_status run_device(exec *x, uint32_t d)
{
    const psched_op *ops = x->s->ops;
    size_t last = x->s->offset[d + 1];
    while (x->cursor[d] < last) {
        size_t g = x->cursor[d];
        size_t n = (ops[g].flags & PSCHED_OP_OVERLAP_NEXT) ? 2 : 1;
        if (UNLIKELY(ops[g].kind >= PSCHED_OP_VOCAB_S)) {
            if (!psched__coll_run(x, d, g))
                return PSCHED_OK;
            continue;
        }
        if (UNLIKELY(ops[g].kind >= PSCHED_OP_OFFLOAD)) {
            int r = run_copy(x, d, g);
            if (r == DEP_PARK)
                return PSCHED_OK;
            if (UNLIKELY(r == DEP_MISSING))
                return check_deps_exist(x);
            continue;
        }
        prefetch_ahead(x, ops, g, last);
        double ready = x->free_at[d], cost = 0;
        for (size_t u = g; u < g + n; u++) {
            int r = take_deps(x, d, g, n, &ops[u], &ready);
            if (r == DEP_PARK)
                return PSCHED_OK;
            if (UNLIKELY(r == DEP_MISSING))
                return check_deps_exist(x);
            if (UNLIKELY(r == DEP_IN_PAIR)) {
                char a[96];
                psched__exec_describe(x, u, a, sizeof a);
                return psched_fail(PSCHED_EINVALID, "%s: overlapped with the op it depends on",
                                   a);
            }
            cost += x->stage_cost[(size_t)ops[u].stage * PSCHED_SLOTS + ops[u].kind];
        }
        if (UNLIKELY(x->weight || x->overlap))
            cost = psched__exec_unit_cost(x, ops, g, n);
        if (x->end) {
            for (size_t u = g; u < g + n; u++) {
                x->start[u] = ready;
                x->end[u] = ready + cost;
            }
            if (UNLIKELY(x->links))
                for (size_t u = g; u < g + n; u++)
                    send_output(x, &ops[u], u, d);
        }
        x->free_at[d] = ready + cost;
        x->cursor[d] = g + n;
        for (size_t u = g; u < g + n; u++)
            notify(x, &ops[u], u, d);
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

static psched_status run_all(exec *x)
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

psched_status psched__exec_run(exec *x)
{
    psched_status st = run_all(x);
    /* A dependency that never runs outranks whatever stopped the run. */
    if (st && !x->deps_checked) {
        psched_status missing = check_deps_exist(x);
        if (missing)
            return missing;
    }
    return st;
}

void psched__exec_free(exec *x)
{
    psched__dealloc(x->pos);
    psched__dealloc(x->stage_device);
    psched__dealloc(x->stage_flags);
    psched__dealloc(x->stage_cost);
    psched__dealloc(x->cursor);
    psched__dealloc(x->free_at);
    psched__dealloc(x->waiting);
    psched__dealloc(x->queue);
    psched__dealloc(x->queued);
    psched__dealloc(x->overlap);
    psched__dealloc(x->arrive);
    psched__dealloc(x->link_free);
    psched__dealloc(x->copy_pos);
    psched__dealloc(x->copy_free);
    psched__coll_free(x->coll);
    if (x->own_times) {
        psched__dealloc(x->start);
        psched__dealloc(x->end);
    }
    memset(x, 0, sizeof *x);
}

/* Device, chain ends and op times of every stage. */
static void fill_stages(exec *x)
{
    uint32_t per = x->S / (x->plan->chains ? x->plan->chains : 1);
    for (uint32_t st = 0; st < x->S; st++) {
        x->stage_device[st] = psched_plan_stage_device(x->plan, st);
        x->stage_flags[st] = (uint8_t)((st % per == 0 ? PSCHED_EXEC_FIRST : 0) |
                                       (st % per == per - 1 ? PSCHED_EXEC_LAST : 0));
        psched_cost3 c = psched__plan_cost(x->costs, st);
        double *t = &x->stage_cost[(size_t)st * PSCHED_SLOTS];
        t[PSCHED_OP_F] = c.f;
        t[PSCHED_OP_B] = c.b;
        t[PSCHED_OP_W] = c.w;
        t[PSCHED_OP_BW] = c.b + c.w;
        if (x->overlap)
            x->overlap[st] = psched__plan_overlap(x->costs, st);
    }
}

/* The extensions' tables, when the costs plan sets any (times only). */
static bool alloc_costmodel(exec *x, size_t total)
{
    const psched_costmodel *c = x->costs->cm;
    if (!c)
        return true;
    x->per = x->S / (x->plan->chains ? x->plan->chains : 1);
    if (c->weight && c->weight_len == (size_t)x->mbs * (x->plan->chains ? x->plan->chains : 1))
        x->weight = c->weight;
    bool overlap = c->overlap_all > 0;
    for (uint32_t i = 0; c->overlap && i < c->overlap_len; i++)
        overlap |= c->overlap[i] > 0;
    if (overlap && !(x->overlap = psched__calloc(x->S + 1, sizeof *x->overlap)))
        return false;
    if (psched__costmodel_links(x->costs)) {
        x->links = true;
        x->arrive = psched__calloc(total + 1, sizeof *x->arrive);
        x->link_free = psched__calloc(2 * (size_t)x->p, sizeof *x->link_free);
        if (!x->arrive || !x->link_free)
            return false;
    }
    return true;
}

/* Allocation and the per-stage tables; times only when `timed`. */
static psched_status exec_alloc(exec *x, const psched_schedule *s, const psched_plan *costs,
                                double *start, double *end, bool comm_ok, bool timed)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->plan = s->plan;
    x->costs = costs ? costs : s->plan;
    x->p = s->devices;
    x->S = s->plan->devices * s->plan->chunks;
    x->mbs = psched__plan_chain_mbs(s->plan);
    x->comm_ok = comm_ok;
    size_t total = s->offset[s->devices], cells = (size_t)x->S * x->mbs;
    /* The index has a slot per (stage, micro-batch): when a schedule claims
     * far more of them than it has ops (a few bytes of CSV can name
     * micro-batch 5 000 000), say so instead of allocating for it. */
    if (cells > 4 * total + 4096)
        return psched_fail(PSCHED_EINVALID,
                           "schedule has %zu ops, but stages (%u) x micro-batches (%u) need at "
                           "least %zu (one F and one backward each)",
                           total, x->S, x->mbs, 2 * cells);
    if (timed) {
        x->own_times = !start || !end;
        x->start = x->own_times ? psched__reallocarray(NULL, total + 1, sizeof(double)) : start;
        x->end = x->own_times ? psched__reallocarray(NULL, total + 1, sizeof(double)) : end;
    }
    x->pos = psched__reallocarray(NULL, cells * PSCHED_SLOTS + 1, sizeof *x->pos);
    x->stage_device = psched__reallocarray(NULL, x->S + 1, sizeof *x->stage_device);
    x->stage_flags = psched__reallocarray(NULL, x->S + 1, sizeof *x->stage_flags);
    x->stage_cost = psched__reallocarray(NULL, (size_t)x->S * PSCHED_SLOTS + 1, sizeof(double));
    x->cursor = psched__reallocarray(NULL, x->p, sizeof *x->cursor);
    x->free_at = psched__calloc(x->p, sizeof *x->free_at);
    x->waiting = psched__reallocarray(NULL, x->p, sizeof *x->waiting);
    x->queue = psched__reallocarray(NULL, x->p, sizeof *x->queue);
    x->queued = psched__calloc(x->p, sizeof *x->queued);
    if ((timed && (!x->start || !x->end)) || !x->pos || !x->stage_device || !x->stage_flags ||
        !x->stage_cost || !x->cursor || !x->free_at || !x->waiting || !x->queue || !x->queued ||
        (timed && !alloc_costmodel(x, total))) {
        psched__exec_free(x);
        return PSCHED_ENOMEM_FAIL();
    }
    if (x->own_times) {
        psched__advise_huge(x->start, (total + 1) * sizeof(double));
        psched__advise_huge(x->end, (total + 1) * sizeof(double));
    }
    psched__advise_huge(x->pos, cells * PSCHED_SLOTS * sizeof *x->pos);
    memset(x->pos, 0xff, cells * PSCHED_SLOTS * sizeof *x->pos);
    fill_stages(x);
    for (uint32_t d = 0; d < x->p; d++) {
        x->cursor[d] = s->offset[d];
        x->waiting[d] = NONE;
    }
    return PSCHED_OK;
}

/* Passes 1 and 3, and pass 2 unless the run is left to find a missing
 * dependency (`defer_deps`); the order of the messages is the passes'. */
static psched_status exec_check(exec *x, bool defer_deps)
{
    psched_status st = index_ops(x);
    if (!st && !defer_deps)
        st = check_deps_exist(x);
    if (!st) {
        st = check_counts(x);
        if (st && !x->deps_checked) {
            psched_status missing = check_deps_exist(x);
            if (missing)
                st = missing;
        }
    }
    if (st)
        psched__exec_free(x);
    return st;
}

psched_status psched__exec_setup(exec *x, const psched_schedule *s, const psched_plan *costs,
                                 double *start, double *end, bool comm_ok)
{
    psched_status st = exec_alloc(x, s, costs, start, end, comm_ok, true);
    if (!st)
        st = exec_check(x, false);
    return st;
}

/* The general engine alone (psched__execute_transfers without the fast
 * path first). */
static psched_status execute_general(const psched_schedule *s, const psched_plan *costs,
                                     double *start, double *end, double *leave, double *arrive)
{
    exec x;
    psched_status st = exec_alloc(&x, s, costs, start, end, false, start || end);
    if (!st)
        st = exec_check(&x, true);
    if (st)
        return st;
    size_t total = s->offset[s->devices];
    if (x.links && leave) {
        x.leave_out = leave;
        for (size_t g = 0; g < total; g++)
            leave[g] = NAN;
    }
    st = psched__exec_run(&x);
    if (!st && x.links && arrive) {
        for (size_t g = 0; g < total; g++)
            arrive[g] = leave && isnan(leave[g]) ? NAN : x.arrive[g];
    }
    psched__exec_free(&x);
    return st;
}

psched_status psched__execute_transfers(const psched_schedule *s, const psched_plan *costs,
                                        double *start, double *end, double *leave,
                                        double *arrive)
{
    if (!leave && !arrive && psched__execute_fast(s, costs, start, end, NULL))
        return PSCHED_OK;
    return execute_general(s, costs, start, end, leave, arrive);
}

psched_status psched__execute_general(const psched_schedule *s, const psched_plan *costs,
                                      double *start, double *end)
{
    return execute_general(s, costs, start, end, NULL, NULL);
}

psched_status psched__execute(const psched_schedule *s, const psched_plan *costs, double *start,
                              double *end)
{
    return psched__execute_transfers(s, costs, start, end, NULL, NULL);
}

/* ------------------------------------------------------------------------
 * The fast path (issue 13): the same run for the common case, on a state
 * of one byte per (stage, micro-batch) cell instead of the position index.
 *
 * It answers only "valid, and here are the times" or "something is off":
 * on anything unusual (a comm op or a copy, an op out of place, a
 * duplicate, a bad count, a dependency on the same device that has not run
 * yet, a device left waiting, an allocation failing) it gives up and the
 * caller runs the general engine above, which finds the same outcome and
 * names it. So every message comes from one place, and the fast path only
 * has to agree with the general one on valid schedules:
 *   - pass 1's checks run on each op as it runs (kind, range, placement,
 *     pair, duplicate) and pass 3's on the cells after the run, accepting
 *     exactly what index_ops and check_counts accept (without copies); once
 *     both pass every dependency exists (every cell holds an F and a
 *     backward, and a W only beside its B), so pass 2 has nothing to find,
 *     and a backward that ran is the one psched__exec_backward names;
 *   - "op has run" is a bit of its cell (the general engine compares its
 *     index with its device's cursor), a cross-device wait parks the device
 *     on the (cell, F or backward) it needs and the op's end wakes it, as
 *     notify() does; any order of running ready devices gives the same
 *     times, since an op's times depend only on its inputs' end times and
 *     its device's previous op;
 *   - times are computed with the same operations in the same order
 *     (max of the device's free time and each input's end, + t_comm across
 *     devices; 0 + the unit's op costs), so they are bit-identical. Only the
 *     default cost model takes it: micro-batch weights, overlap savings and
 *     the link model leave it to the general engine.
 * The cell state is 1 byte (validation fits half a million ops' cells in
 * the second-level cache) and, for times, each cell keeps the end of its F
 * and of its backward next to its neighbours' (micro-batch-major cells). */

enum {
    FAST_HAS_F = 1u << PSCHED_OP_F,
    FAST_HAS_B = 1u << PSCHED_OP_B,
    FAST_HAS_W = 1u << PSCHED_OP_W,
    FAST_HAS_BW = 1u << PSCHED_OP_BW,
    FAST_RAN_F = FAST_HAS_F,                  /* the cell's F has run */
    FAST_RAN_BACK = FAST_HAS_B | FAST_HAS_BW, /* its backward has run */
};
#define FAST_NOBODY SIZE_MAX

typedef struct fast_stage {
    uint32_t device, prev, next; /* its device, its neighbour stages' (when it has them) */
    uint8_t flags;               /* PSCHED_EXEC_FIRST / PSCHED_EXEC_LAST */
    double cost[PSCHED_SLOTS];   /* F, B, W, BW times (timed runs) */
} fast_stage;

typedef struct fast_exec {
    const psched_op *ops;
    const size_t *offset;
    uint32_t p, S;
    double comm;
    uint8_t *cell;          /* [mb*S + stage]: FAST_* bits (FAST_HAS_*: the op has run) */
    double *tcell;          /* [2*cell]: end of its F, [2*cell + 1]: of its backward */
    size_t cells;
    const fast_stage *stages;
    double *start, *end;    /* NULL: validation only */
    psched_fast_figures *fig; /* NULL: no per-device figures */
    double *mem;            /* [d]: the device's memory so far (with fig) */
    size_t *cursor;
    double *free_at;
    size_t *waiting;        /* 2*cell + (0: its F, 1: its backward), or FAST_NOBODY */
    uint32_t *queue;
    bool *queued;
    uint32_t qhead, qlen;
} fast_exec;

static inline void fast_enqueue(fast_exec *f, uint32_t d)
{
    if (f->queued[d])
        return;
    f->queued[d] = true;
    f->queue[(f->qhead + f->qlen++) % f->p] = d;
}

/* Pass 3: every cell holds F, B and W, or F and BW. */
static bool fast_counts(const fast_exec *f, size_t cells)
{
    unsigned bad = 0;
    for (size_t c = 0; c < cells; c++) {
        uint8_t e = f->cell[c];
        bad |= (e != (FAST_HAS_F | FAST_HAS_B | FAST_HAS_W)) & (e != (FAST_HAS_F | FAST_HAS_BW));
    }
    return !bad;
}

/* One input of an op, in cell c: ready when `ran` is set there, else the
 * device parks on it (FAST_RUN_FAIL for an input on its own device: the
 * general engine names that failure). */
#define FAST_RUN_PARK 0
#define FAST_RUN_READY 1
#define FAST_RUN_FAIL 2

#if defined(__GNUC__)
#define FAST_INLINE inline __attribute__((always_inline))
#else
#define FAST_INLINE inline
#endif

static FAST_INLINE int fast_input(fast_exec *f, uint32_t d, size_t c, uint8_t ran, uint32_t dd,
                                  double *ready, bool timed)
{
    if (UNLIKELY(!(f->cell[c] & ran))) {
        if (dd == d)
            return FAST_RUN_FAIL;
        f->waiting[d] = 2 * c + (ran == FAST_RAN_BACK);
        return FAST_RUN_PARK;
    }
    if (timed) {
        double t = f->tcell[2 * c + (ran == FAST_RAN_BACK)];
        if (dd != d)
            t += f->comm;
        if (t > *ready)
            *ready = t;
    }
    return FAST_RUN_READY;
}

/* An op of kind `kind` in cell c of stage st ended on device d at done:
 * an F's or a backward's end goes to the cell's times (timed runs), and
 * the device of the neighbour stage its output feeds (the next stage's
 * for an F, the previous one's for a B or BW; none beyond the ends, none
 * for a W) runs again when it waits for just that. */
static FAST_INLINE void fast_hand_off(fast_exec *f, const fast_stage *st, uint8_t kind,
                                      size_t c, uint32_t d, double done, bool timed)
{
    uint32_t other;
    size_t key;
    if (kind == PSCHED_OP_F) {
        key = 2 * c;
        if (timed)
            f->tcell[key] = done;
        if (st->flags & PSCHED_EXEC_LAST)
            return;
        other = st->next;
    } else if (kind == PSCHED_OP_W) {
        return;
    } else {
        key = 2 * c + 1;
        if (timed)
            f->tcell[key] = done;
        if (st->flags & PSCHED_EXEC_FIRST)
            return;
        other = st->prev;
    }
    if (other != d && f->waiting[other] == key) {
        f->waiting[other] = FAST_NOBODY;
        fast_enqueue(f, other);
    }
}

/* Runs device d until its list ends or it waits for another device. */
static FAST_INLINE int fast_device(fast_exec *f, uint32_t d, bool timed)
{
    const psched_op *ops = f->ops;
    const fast_stage *stages = f->stages;
    uint8_t *cell = f->cell;
    uint32_t S = f->S;
    size_t cells = f->cells;
    size_t last = f->offset[d + 1];
    size_t g = f->cursor[d];
    double free_at = timed ? f->free_at[d] : 0;
    int r = FAST_RUN_READY;
    while (g < last) {
#if defined(__GNUC__)
        if (g + PREFETCH_AHEAD < last) {
            __builtin_prefetch(&ops[g + PREFETCH_AHEAD]);
            if (timed) {
                __builtin_prefetch(&f->start[g + PREFETCH_AHEAD], 1);
                __builtin_prefetch(&f->end[g + PREFETCH_AHEAD], 1);
            }
            if (timed) {
                const psched_op *soon = &ops[g + PREFETCH_AHEAD / 2];
                size_t sc = (size_t)soon->microbatch * S + soon->stage;
                __builtin_prefetch(&cell[sc]);
                __builtin_prefetch(&f->tcell[2 * sc]);
            }
        }
#endif
        if (LIKELY(!(ops[g].flags & PSCHED_OP_OVERLAP_NEXT))) {
            /* a single op (the unit loop below, unrolled for one op: its
             * cell read once, its inputs in its own cell tested from it) */
            const psched_op *o = &ops[g];
            uint32_t s = o->stage;
            uint8_t kind = o->kind;
            size_t c = (size_t)o->microbatch * S + s;
            if (UNLIKELY(kind > PSCHED_OP_BW || s >= S || c >= cells || stages[s].device != d)) {
                r = FAST_RUN_FAIL;
                break;
            }
            const fast_stage *st = &stages[s];
            uint8_t e = cell[c], bit = (uint8_t)(1u << kind);
            double ready = free_at;
            if (kind == PSCHED_OP_F) {
                if (!(st->flags & PSCHED_EXEC_FIRST))
                    r = fast_input(f, d, c - 1, FAST_RAN_F, st->prev, &ready, timed);
            } else if (kind == PSCHED_OP_W) {
                r = fast_input(f, d, c, FAST_RAN_BACK, d, &ready, timed);
            } else {
                r = fast_input(f, d, c, FAST_RAN_F, d, &ready, timed);
                if (r == FAST_RUN_READY && !(st->flags & PSCHED_EXEC_LAST))
                    r = fast_input(f, d, c + 1, FAST_RAN_BACK, st->next, &ready, timed);
            }
            if (r != FAST_RUN_READY)
                break;
            if (UNLIKELY(e & bit)) {
                r = FAST_RUN_FAIL; /* a duplicate */
                break;
            }
            cell[c] = (uint8_t)(e | bit);
            double done = 0;
            if (timed) {
                done = ready + (0 + st->cost[kind]);
                free_at = done;
                f->start[g] = ready;
                f->end[g] = done;
                if (f->fig) {
                    psched_fast_figures *fig = f->fig;
                    fig->busy[d] += done - ready;
                    if (done > fig->last[d])
                        fig->last[d] = done;
                    f->mem[d] += fig->mem_of[(size_t)s * 8 + kind];
                    if (f->mem[d] > fig->peak[d])
                        fig->peak[d] = f->mem[d];
                }
            }
            g++;
            fast_hand_off(f, st, kind, c, d, done, timed);
            continue;
        }
        size_t n = 1;
        if (UNLIKELY(ops[g].flags & PSCHED_OP_OVERLAP_NEXT)) {
            /* pass 1's check of a pair, as it runs */
            if (g + 1 >= last || (ops[g + 1].flags & PSCHED_OP_OVERLAP_NEXT)) {
                r = FAST_RUN_FAIL;
                break;
            }
            n = 2;
        }
        double ready = free_at, cost = 0;
        for (size_t u = g; u < g + n; u++) {
            const psched_op *o = &ops[u];
            uint32_t s = o->stage;
            size_t c = (size_t)o->microbatch * S + s;
            /* pass 1's checks of the op (with s < S, c < cells iff mb < mbs) */
            if (UNLIKELY(o->kind > PSCHED_OP_BW || s >= S || c >= cells ||
                         stages[s].device != d)) {
                r = FAST_RUN_FAIL;
                goto out;
            }
            const fast_stage *st = &stages[s];
            switch (o->kind) {
            case PSCHED_OP_F:
                if (!(st->flags & PSCHED_EXEC_FIRST))
                    r = fast_input(f, d, c - 1, FAST_RAN_F, st->prev, &ready, timed);
                break;
            case PSCHED_OP_B:
            case PSCHED_OP_BW:
                r = fast_input(f, d, c, FAST_RAN_F, d, &ready, timed);
                if (r == FAST_RUN_READY && !(st->flags & PSCHED_EXEC_LAST))
                    r = fast_input(f, d, c + 1, FAST_RAN_BACK, st->next, &ready, timed);
                break;
            default: /* W: its B */
                r = fast_input(f, d, c, FAST_RAN_BACK, d, &ready, timed);
                break;
            }
            if (r != FAST_RUN_READY)
                goto out;
            if (timed)
                cost += st->cost[o->kind];
        }
        double done = ready + cost;
        free_at = done;
        if (timed && f->fig) {
            /* psched_simulate's figures, summed in the same (list) order */
            psched_fast_figures *fig = f->fig;
            fig->busy[d] += done - ready;
            if (done > fig->last[d])
                fig->last[d] = done;
            for (size_t u = g; u < g + n; u++) {
                f->mem[d] += fig->mem_of[(size_t)ops[u].stage * 8 + ops[u].kind];
                if (f->mem[d] > fig->peak[d])
                    fig->peak[d] = f->mem[d];
            }
        }
        for (size_t u = g; u < g + n; u++) {
            const psched_op *o = &ops[u];
            uint32_t s = o->stage;
            size_t c = (size_t)o->microbatch * S + s;
            uint8_t bit = (uint8_t)(1u << o->kind);
            if (UNLIKELY(cell[c] & bit)) {
                r = FAST_RUN_FAIL; /* a duplicate */
                goto out;
            }
            cell[c] |= bit;
            if (timed) {
                f->start[u] = ready;
                f->end[u] = done;
            }
            fast_hand_off(f, &stages[s], o->kind, c, d, done, timed);
        }
        g += n;
    }
out:
    f->cursor[d] = g;
    if (timed)
        f->free_at[d] = free_at;
    return r;
}

static int fast_device_timed(fast_exec *f, uint32_t d) { return fast_device(f, d, true); }
static int fast_device_check(fast_exec *f, uint32_t d) { return fast_device(f, d, false); }

static bool fast_run(fast_exec *f, bool timed)
{
    for (uint32_t d = 0; d < f->p; d++)
        fast_enqueue(f, d);
    while (f->qlen) {
        uint32_t d = f->queue[f->qhead];
        f->qhead = (f->qhead + 1) % f->p;
        f->qlen--;
        f->queued[d] = false;
        int r = timed ? fast_device_timed(f, d) : fast_device_check(f, d);
        if (r == FAST_RUN_FAIL)
            return false;
    }
    for (uint32_t d = 0; d < f->p; d++)
        if (f->cursor[d] != f->offset[d + 1])
            return false;
    return true;
}

/* True when the costs plan uses none of the cost model's extensions that
 * change compute times or transfers (what alloc_costmodel would set up). */
static bool fast_costs_plain(const psched_plan *plan, const psched_plan *costs, uint32_t mbs)
{
    const psched_costmodel *c = costs->cm;
    if (!c)
        return true;
    if (c->weight && c->weight_len == (size_t)mbs * (plan->chains ? plan->chains : 1))
        return false;
    if (c->overlap_all > 0)
        return false;
    for (uint32_t i = 0; c->overlap && i < c->overlap_len; i++)
        if (c->overlap[i] > 0)
            return false;
    return !psched__costmodel_links(costs);
}

bool psched__execute_fast(const psched_schedule *s, const psched_plan *costs, double *start,
                          double *end, psched_fast_figures *fig)
{
    return psched__execute_fast_in(s, costs, start, end, fig, NULL);
}

bool psched__execute_fast_in(const psched_schedule *s, const psched_plan *costs, double *start,
                             double *end, psched_fast_figures *fig, double *scratch)
{
    const psched_plan *plan = s->plan;
    if (!costs)
        costs = plan;
    bool timed = start || end;
    if (timed && !(start && end))
        return false;
    uint32_t p = s->devices, S = plan->devices * plan->chunks;
    uint32_t mbs = psched__plan_chain_mbs(plan);
    size_t total = s->offset[p], cells = (size_t)S * mbs;
    if (cells > 4 * total + 4096 || (timed && !fast_costs_plain(plan, costs, mbs)))
        return false;
    fast_exec f = {.ops = s->ops, .offset = s->offset, .p = p, .S = S, .cells = cells, .comm = costs->comm,
                   .start = start, .end = end};
    fast_stage *stages = psched__calloc((size_t)S + 1, sizeof *stages);
    f.cell = psched__calloc(cells + 1, 1);
    f.tcell = !timed ? NULL : scratch ? scratch
                                      : psched__malloc_array_huge(2 * cells + 1, sizeof *f.tcell);
    f.cursor = psched__reallocarray(NULL, (size_t)p + 1, sizeof *f.cursor);
    f.free_at = psched__calloc((size_t)p + 1, sizeof *f.free_at);
    f.waiting = psched__reallocarray(NULL, (size_t)p + 1, sizeof *f.waiting);
    f.queue = psched__reallocarray(NULL, (size_t)p + 1, sizeof *f.queue);
    f.queued = psched__calloc((size_t)p + 1, sizeof *f.queued);
    if (timed && fig) {
        f.fig = fig;
        f.mem = psched__calloc((size_t)p + 1, sizeof *f.mem);
    }
    bool ok = (!f.fig || f.mem) && stages && (!timed || f.tcell) && f.cell &&
              f.cursor && f.free_at && f.waiting && f.queue && f.queued;
    if (ok) {
        uint32_t per = S / (plan->chains ? plan->chains : 1);
        for (uint32_t st = 0; st < S; st++)
            stages[st].device = psched_plan_stage_device(plan, st);
        for (uint32_t st = 0; st < S; st++) {
            fast_stage *x = &stages[st];
            x->flags = (uint8_t)((st % per == 0 ? PSCHED_EXEC_FIRST : 0) |
                                 (st % per == per - 1 ? PSCHED_EXEC_LAST : 0));
            x->prev = st % per ? stages[st - 1].device : x->device;
            x->next = st % per != per - 1 ? stages[st + 1].device : x->device;
            psched_cost3 c = psched__plan_cost(costs, st);
            x->cost[PSCHED_OP_F] = c.f;
            x->cost[PSCHED_OP_B] = c.b;
            x->cost[PSCHED_OP_W] = c.w;
            x->cost[PSCHED_OP_BW] = c.b + c.w;
        }
        f.stages = stages;
        for (uint32_t d = 0; d < p; d++) {
            f.cursor[d] = s->offset[d];
            f.waiting[d] = FAST_NOBODY;
        }
        psched__advise_huge(f.cell, cells);
        ok = fast_run(&f, timed) && fast_counts(&f, cells);
    }
    psched__dealloc(stages);
    psched__dealloc(f.mem);
    psched__dealloc(f.cell);
    if (f.tcell != scratch)
        psched__dealloc(f.tcell);
    psched__dealloc(f.cursor);
    psched__dealloc(f.free_at);
    psched__dealloc(f.waiting);
    psched__dealloc(f.queue);
    psched__dealloc(f.queued);
    return ok;
}
