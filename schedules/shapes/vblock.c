/* V-shape building blocks: place slots, squeeze, compact, order by slot.
 * See vblock.h. Slots are unit-time steps; every device runs one op per
 * slot. */
#include "vblock.h"

#include "phases.h"

#include <string.h>

/* Op kinds inside a block. W are generic while the block is squeezed (the
 * k-th W of a device follows its k-th backward in slot order) and get
 * their stage only when the order is emitted. */
enum { VB_F0, VB_F1, VB_B1, VB_B0, VB_W, VB_KINDS };

/* Chunk activations an op holds or frees. */
static const int32_t vb_delta[VB_KINDS] = {1, 1, 0, 0, -1};

typedef struct vb {
    uint32_t p, m;
    int64_t *slot;    /* [(d * 4 + kind) * m + mb] for the four compute kinds,
                       * then [p * 4m + d * 2m + k] for device d's k-th W */
    int64_t *fresh;   /* compaction output, same layout */
    int64_t *free_at; /* per device: first slot after its last op so far */
    bool with_w;      /* W are ops with slots; otherwise each free slot runs
                       * a pending W (implicit W) */
    int64_t h;        /* slots per device in the arrays below */
    size_t cap;       /* allocated entries of occ, run, pend */
    int32_t *occ;     /* [d * h + t]: op code (idx * VB_KINDS + kind) or -1 */
    int32_t *run;     /* memory after slot t */
    int32_t *pend;    /* backwards whose implicit W has not run after slot t */
} vb;

static int64_t *vb_at(const vb *v, int64_t *slots, uint32_t d, int kind, uint32_t idx)
{
    if (kind == VB_W)
        return &slots[((size_t)v->p * 4 + (size_t)d * 2) * v->m + idx];
    return &slots[((size_t)d * 4 + (size_t)kind) * v->m + idx];
}

static bool vb_is_backward(int kind)
{
    return kind == VB_B1 || kind == VB_B0;
}

/* Rebuilds the slot occupancy (W included when explicit). */
static psched_status vb_index(vb *v)
{
    int64_t top = -1;
    uint32_t kinds = v->with_w ? VB_KINDS : VB_W;
    for (uint32_t d = 0; d < v->p; d++)
        for (uint32_t kind = 0; kind < kinds; kind++) {
            uint32_t n = kind == VB_W ? 2 * v->m : v->m;
            /* The last op of a kind is its latest: each kind keeps its
             * micro-batch order. */
            int64_t s = *vb_at(v, v->slot, d, (int)kind, n - 1);
            top = s > top ? s : top;
        }
    v->h = top + 1;
    size_t need = (size_t)v->p * (size_t)v->h;
    if (need > v->cap) {
        int32_t *occ = psched__reallocarray(v->occ, need, sizeof *occ);
        if (occ)
            v->occ = occ;
        int32_t *run = psched__reallocarray(v->run, need, sizeof *run);
        if (run)
            v->run = run;
        int32_t *pend = psched__reallocarray(v->pend, need, sizeof *pend);
        if (pend)
            v->pend = pend;
        if (!occ || !run || !pend)
            return PSCHED_ENOMEM_FAIL();
        v->cap = need;
    }
    for (size_t i = 0; i < need; i++)
        v->occ[i] = -1;
    for (uint32_t d = 0; d < v->p; d++)
        for (uint32_t kind = 0; kind < kinds; kind++) {
            uint32_t n = kind == VB_W ? 2 * v->m : v->m;
            for (uint32_t idx = 0; idx < n; idx++) {
                int64_t s = *vb_at(v, v->slot, d, (int)kind, idx);
                v->occ[(size_t)d * v->h + s] = (int32_t)(idx * VB_KINDS + kind);
            }
        }
    return PSCHED_OK;
}

/* Memory after each slot of device d from slot `from` on. With `store`
 * the values are written to run/pend; either way the walk stops at the
 * first slot at or after `settle` where it agrees with the stored values,
 * since nothing after that slot can differ. Returns the highest value the
 * walk saw. */
static int32_t vb_walk(vb *v, uint32_t d, int64_t from, int64_t settle, bool store)
{
    size_t base = (size_t)d * v->h;
    int32_t run = from > 0 ? v->run[base + from - 1] : 0;
    int32_t pend = from > 0 ? v->pend[base + from - 1] : 0;
    int32_t peak = run;
    for (int64_t t = from; t < v->h; t++) {
        int32_t code = v->occ[base + t];
        if (code >= 0) {
            run += vb_delta[code % VB_KINDS];
            pend += !v->with_w && vb_is_backward(code % VB_KINDS);
        } else if (pend > 0) {
            run--;
            pend--;
        }
        peak = run > peak ? run : peak;
        /* stored values are only meaningful (and only read) from `settle` on */
        bool same = t >= settle && run == v->run[base + t] && pend == v->pend[base + t];
        if (store) {
            v->run[base + t] = run;
            v->pend[base + t] = pend;
        }
        if (same)
            break;
    }
    return peak;
}

/* Recomputes every device's memory; returns the highest peak. */
static int32_t vb_memory(vb *v)
{
    int32_t peak = 0;
    for (uint32_t d = 0; d < v->p; d++) {
        int32_t pk = vb_walk(v, d, 0, v->h, true);
        peak = pk > peak ? pk : peak;
    }
    return peak;
}

static int64_t vb_max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Latest slot among the dependencies of a compute op in `slots`: the same
 * pass on the neighbouring device, the op before it on this device at the
 * tip of the V, and the previous micro-batch of the same kind. -1 if none. */
static int64_t vb_dep(const vb *v, int64_t *slots, uint32_t d, int kind, uint32_t idx)
{
    int64_t dep = -1;
    bool first = d == 0, last = d + 1 == v->p;
    switch (kind) {
    case VB_F0:
        if (!first)
            dep = *vb_at(v, slots, d - 1, VB_F0, idx);
        break;
    case VB_F1:
        dep = *vb_at(v, slots, d, VB_F0, idx);
        if (!last)
            dep = vb_max(dep, *vb_at(v, slots, d + 1, VB_F1, idx));
        break;
    case VB_B1:
        dep = *vb_at(v, slots, d, VB_F1, idx);
        if (!first)
            dep = vb_max(dep, *vb_at(v, slots, d - 1, VB_B1, idx));
        break;
    default:
        dep = *vb_at(v, slots, d, VB_B1, idx);
        if (!last)
            dep = vb_max(dep, *vb_at(v, slots, d + 1, VB_B0, idx));
        break;
    }
    if (idx > 0)
        dep = vb_max(dep, *vb_at(v, slots, d, kind, idx - 1));
    return dep;
}

/* The k-th W of device d waits for its k-th backward and its (k-1)-th W. */
static int64_t vb_w_dep(const vb *v, uint32_t d, uint32_t k)
{
    const int32_t *occ = &v->occ[(size_t)d * v->h];
    int64_t dep = k > 0 ? *vb_at(v, v->slot, d, VB_W, k - 1) : -1;
    uint32_t seen = 0;
    for (int64_t t = 0; t < v->h; t++)
        if (occ[t] >= 0 && vb_is_backward(occ[t] % VB_KINDS) && seen++ == k)
            return vb_max(dep, t);
    return dep;
}

/* Moves the op at slot t of device d to the earliest free slot after its
 * dependencies that keeps every running memory value within `peak`. */
static void vb_pull(vb *v, uint32_t d, int64_t t, int32_t peak)
{
    int32_t *occ = &v->occ[(size_t)d * v->h];
    int32_t code = occ[t];
    int kind = code % VB_KINDS;
    uint32_t idx = (uint32_t)(code / VB_KINDS);
    int64_t dep = kind == VB_W ? vb_w_dep(v, d, idx) : vb_dep(v, v->slot, d, kind, idx);
    for (int64_t at = dep + 1; at < t; at++) {
        if (occ[at] >= 0)
            continue;
        occ[at] = code;
        occ[t] = -1;
        if (vb_walk(v, d, at, t, false) <= peak) {
            (void)vb_walk(v, d, at, t, true);
            *vb_at(v, v->slot, d, kind, idx) = at;
            return;
        }
        occ[t] = code;
        occ[at] = -1;
    }
}

/* One squeeze pass over every op in slot order (devices in order within a
 * slot). The steady state, from device 0's first chunk-0 backward to the
 * last micro-batch's chunk-0 forward, stays in place; the cool-down after
 * it is squeezed, and the warm-up before it when `warmup` is set. */
static void vb_squeeze(vb *v, bool warmup)
{
    int32_t peak = vb_memory(v);
    int phase = 0;
    for (int64_t t = 0; t < v->h; t++)
        for (uint32_t d = 0; d < v->p; d++) {
            int32_t code = v->occ[(size_t)d * v->h + t];
            if (code < 0)
                continue;
            int kind = code % VB_KINDS;
            uint32_t idx = (uint32_t)(code / VB_KINDS);
            if (phase == 0 && kind == VB_B0 && d == 0)
                phase = 1;
            if (phase == 1) {
                if (kind == VB_F0 && idx + 1 == v->m)
                    phase = 2;
                continue;
            }
            if (phase == 2 || warmup)
                vb_pull(v, d, t, peak);
        }
}

/* Replaces every slot by the op's earliest start with unit costs, running
 * each device's ops in slot order: this closes the holes a squeeze left.
 * Dependencies always sit in earlier slots, so one sweep in slot order sees
 * them placed. */
static psched_status vb_compact(vb *v)
{
    for (uint32_t d = 0; d < v->p; d++)
        v->free_at[d] = 0;
    for (int64_t t = 0; t < v->h; t++)
        for (uint32_t d = 0; d < v->p; d++) {
            int32_t code = v->occ[(size_t)d * v->h + t];
            if (code < 0)
                continue;
            int kind = code % VB_KINDS;
            uint32_t idx = (uint32_t)(code / VB_KINDS);
            int64_t dep = kind == VB_W ? -1 : vb_dep(v, v->fresh, d, kind, idx);
            int64_t start = vb_max(dep + 1, v->free_at[d]);
            *vb_at(v, v->fresh, d, kind, idx) = start;
            v->free_at[d] = start + 1;
        }
    size_t n = (size_t)v->p * (v->with_w ? 6 : 4) * v->m;
    memcpy(v->slot, v->fresh, n * sizeof *v->fresh);
    return vb_index(v);
}

/* Gives every backward a W in the first free slot after it, first come
 * first served; W left when the device's ops end follow them. */
static psched_status vb_place_w(vb *v)
{
    for (uint32_t d = 0; d < v->p; d++) {
        const int32_t *occ = &v->occ[(size_t)d * v->h];
        uint32_t pending = 0, k = 0;
        for (int64_t t = 0; t < v->h; t++) {
            if (occ[t] >= 0)
                pending += vb_is_backward(occ[t] % VB_KINDS);
            else if (pending > 0)
                *vb_at(v, v->slot, d, VB_W, k++) = t, pending--;
        }
        for (int64_t t = v->h; k < 2 * v->m; t++)
            *vb_at(v, v->slot, d, VB_W, k++) = t;
    }
    v->with_w = true;
    return vb_index(v);
}

static psched_status vb_drop_w(vb *v)
{
    v->with_w = false;
    return vb_index(v);
}

/* Appends device d's ops in slot order; a W belongs to the oldest
 * backward without one, matching how vb_place_w handed them out. */
static psched_status vb_emit(const vb *v, psched_builder *b, uint32_t d, uint32_t *queue)
{
    const int32_t *occ = &v->occ[(size_t)d * v->h];
    uint32_t lo = 2 * v->p - 1 - d, head = 0, tail = 0;
    psched_status st = psched_builder_reserve(b, d, (size_t)6 * v->m);
    for (int64_t t = 0; t < v->h && st == PSCHED_OK; t++) {
        if (occ[t] < 0)
            continue;
        int kind = occ[t] % VB_KINDS;
        uint32_t idx = (uint32_t)(occ[t] / VB_KINDS);
        uint32_t stage = (kind == VB_F0 || kind == VB_B0) ? d : lo;
        if (kind == VB_W) {
            stage = queue[2 * head];
            idx = queue[2 * head + 1];
            head++;
        } else if (vb_is_backward(kind)) {
            queue[2 * tail] = stage;
            queue[2 * tail + 1] = idx;
            tail++;
        }
        psched_op_kind op = kind == VB_W ? PSCHED_OP_W : vb_is_backward(kind) ? PSCHED_OP_B
                                                                              : PSCHED_OP_F;
        st = psched_builder_append(b, d, op, stage, idx, 0);
    }
    return st;
}

/* The whole construction; see vblock.h. */
static psched_status vb_build(vb *v, psched_vblock_pattern pattern)
{
    for (uint32_t d = 0; d < v->p; d++) {
        int64_t first[4];
        pattern(v->p, d, first);
        for (int kind = 0; kind < VB_W; kind++)
            for (uint32_t k = 0; k < v->m; k++)
                *vb_at(v, v->slot, d, kind, k) = first[kind] + 6 * (int64_t)k;
    }
    psched_status st = vb_index(v);
    if (st == PSCHED_OK)
        st = vb_place_w(v);
    if (st == PSCHED_OK) {
        vb_squeeze(v, true);
        st = vb_compact(v);
    }
    if (st == PSCHED_OK)
        st = vb_drop_w(v);
    if (st == PSCHED_OK) {
        vb_squeeze(v, false);
        st = vb_place_w(v);
    }
    if (st == PSCHED_OK)
        st = vb_compact(v);
    if (st == PSCHED_OK)
        st = vb_drop_w(v);
    if (st == PSCHED_OK)
        st = vb_place_w(v);
    return st;
}

psched_status psched__vblock_check(const psched_plan *plan, const char *name)
{
    psched_status st = psched__check_placement(plan, PSCHED_PLACEMENT_VSHAPE, name);
    if (st == PSCHED_OK)
        st = psched__check_chunks(plan, 2, 2, name);
    return st;
}

psched_status psched__vblock_generate(const psched_plan *plan, psched_builder *b,
                                      psched_vblock_pattern pattern)
{
    vb v = {0};
    v.p = psched_plan_devices(plan);
    v.m = psched_plan_microbatches(plan);
    size_t ops = (size_t)v.p * 6 * v.m;
    v.slot = psched__reallocarray(NULL, ops, sizeof *v.slot);
    v.fresh = psched__reallocarray(NULL, ops, sizeof *v.fresh);
    v.free_at = psched__reallocarray(NULL, v.p, sizeof *v.free_at);
    uint32_t *queue = psched__reallocarray(NULL, (size_t)4 * v.m, sizeof *queue);
    psched_status st = PSCHED_OK;
    if (!v.slot || !v.fresh || !v.free_at || !queue)
        st = PSCHED_ENOMEM_FAIL();
    if (st == PSCHED_OK)
        st = vb_build(&v, pattern);
    for (uint32_t d = 0; d < v.p && st == PSCHED_OK; d++)
        st = vb_emit(&v, b, d, queue);
    psched__dealloc(v.slot);
    psched__dealloc(v.fresh);
    psched__dealloc(v.free_at);
    psched__dealloc(v.occ);
    psched__dealloc(v.run);
    psched__dealloc(v.pend);
    psched__dealloc(queue);
    return st;
}
