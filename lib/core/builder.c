/* The builder generators write through. Errors latch so a generator can
 * append freely and return the builder's status once.
 *
 * Generators append device by device (every op of device 0, then of device
 * 1, ...), so the ops go straight into one contiguous array that becomes
 * the schedule's: no per-device lists, no copy at the end, and the peak
 * memory of a generation is one op record per op. A generator that goes
 * back to an earlier device turns the builder into per-device lists (the
 * ops so far are copied once) and the schedule is assembled from them.
 *
 * Compact mode (psched_generate_write): the contiguous array holds one
 * 32-bit code per op instead of a psched_op (kind, overlap flag, chunk and
 * micro-batch; the stage follows from device and chunk), a third of the
 * memory. An op the code cannot hold, or a generator going back to an
 * earlier device, turns the codes into psched_ops once and the builder
 * carries on as above. */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "internal.h"
#include "memadvise.h"

#include <stdio.h>
#include <string.h>

/* The check of a VOCAB_S, VOCAB_T or COLLECTIVE op: `stage` is the
 * device's shard, or the collective's index below PSCHED_MAX_COLLECTIVES. */

psched_status psched__check_collective_op(uint32_t device, psched_op_kind kind, uint32_t stage,
                                          uint32_t mb, uint32_t mbs, uint32_t flags)
{
    const char *name = psched__kind_name((uint8_t)kind);
    if (kind == PSCHED_OP_COLLECTIVE && stage >= PSCHED_MAX_COLLECTIVES)
        return psched_fail(PSCHED_EINVAL, "append: collective index (%u) must be < %u", stage,
                           PSCHED_MAX_COLLECTIVES);
    if (kind != PSCHED_OP_COLLECTIVE && stage != device)
        return psched_fail(PSCHED_EINVAL,
                           "append: %s shard (%u) must be the device's own index (%u)", name,
                           stage, device);
    if (mb >= mbs)
        return psched_fail(PSCHED_EINVAL, "append: microbatch (%u) must be < microbatches per "
                                          "chain (%u)", mb, mbs);
    if (flags)
        return psched_fail(PSCHED_EINVAL, "append: %s takes no flags (0x%x)", name, flags);
    return PSCHED_OK;
}

#if defined(__GNUC__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define UNLIKELY(x) (x)
#endif

typedef struct dev_list {
    psched_op *ops;
    size_t len, cap;
} dev_list;

struct psched_builder {
    const psched_plan *plan;
    uint32_t devices, stages, mbs;
    uint32_t *stage_device; /* resolved once: appends never walk the placement */
    uint16_t *stage_chunk;
    /* Contiguous mode: devices before `tail` are complete, `tail` is being
     * appended at ops[len], later devices have no ops yet. first[d] is the
     * first op of device d <= tail; it becomes the schedule's offsets. */
    psched_op *ops;
    size_t len, cap;
    uint32_t tail; /* UINT32_MAX in list mode */
    size_t *first; /* devices + 1 entries */
    dev_list *dev; /* list mode: per-device lists; NULL while contiguous */
    /* Compact mode: codes[len] instead of ops (NULL otherwise) */
    uint32_t *code;
    uint32_t *stage_of; /* [device*chunks + chunk] -> stage */
    unsigned chunk_bits;
    uint32_t mb_limit;  /* micro-batches a code holds */
    psched_status status;
    bool solved; /* psched_builder_set_solve_status() was called */
    psched_solve_status solve_status;
    double solve_gap;
};

/* A compute schedule has at most three ops (F, B, W) per (stage,
 * micro-batch), so its array is reserved at that bound up front and never
 * moves: growing it would copy it (or hold old and new at once while the
 * allocator moves it between heap and mmap). The reservation is address
 * space: pages no op is written to are never resident, and finish trims
 * the rest. A hint only: when it cannot be had, appends grow the array. */
static void reserve_bound(psched_builder *b, size_t bound)
{
    if (bound == 0 || bound > PSCHED_MAX_OPS)
        return;
    b->ops = psched__reallocarray(NULL, bound, sizeof *b->ops);
    b->cap = b->ops ? bound : 0;
    psched__advise_huge(b->ops, b->cap * sizeof *b->ops);
}

psched_status psched__builder_create(const psched_plan *plan, psched_builder **out)
{
    return psched__builder_create_for(plan, (size_t)3 * plan->devices * plan->chunks *
                                                psched__plan_chain_mbs(plan), out);
}

psched_status psched__builder_create_for(const psched_plan *plan, size_t ops,
                                         psched_builder **out)
{
    psched_builder *b = psched__calloc(1, sizeof *b);
    if (!b)
        return PSCHED_ENOMEM_FAIL();
    b->plan = plan;
    b->devices = plan->devices;
    b->stages = plan->devices * plan->chunks;
    b->mbs = psched__plan_chain_mbs(plan);
    b->first = psched__calloc((size_t)b->devices + 1, sizeof *b->first);
    b->stage_device = psched__calloc(b->stages, sizeof *b->stage_device);
    b->stage_chunk = psched__calloc(b->stages, sizeof *b->stage_chunk);
    if (!b->first || !b->stage_device || !b->stage_chunk) {
        psched__builder_destroy(b);
        return PSCHED_ENOMEM_FAIL();
    }
    uint32_t *seen = NULL;
    if (plan->placement == PSCHED_PLACEMENT_CUSTOM) {
        seen = psched__calloc(b->devices, sizeof *seen);
        if (!seen) {
            psched__builder_destroy(b);
            return PSCHED_ENOMEM_FAIL();
        }
    }
    for (uint32_t s = 0; s < b->stages; s++) {
        uint32_t d = psched_plan_stage_device(plan, s);
        b->stage_device[s] = d;
        b->stage_chunk[s] = (uint16_t)(seen ? seen[d]++ : psched_plan_stage_chunk(plan, s));
    }
    psched__dealloc(seen);
    reserve_bound(b, ops);
    *out = b;
    return PSCHED_OK;
}

void psched__builder_destroy(psched_builder *b)
{
    if (!b)
        return;
    if (b->dev) {
        for (uint32_t d = 0; d < b->devices; d++)
            psched__dealloc(b->dev[d].ops);
    }
    psched__dealloc(b->dev);
    psched__dealloc(b->ops);
    psched__dealloc(b->code);
    psched__dealloc(b->stage_of);
    psched__dealloc(b->first);
    psched__dealloc(b->stage_device);
    psched__dealloc(b->stage_chunk);
    psched__dealloc(b);
}

/* Room for `extra` more ops in *ops (length len, capacity *cap): exactly
 * when `exact` (a reservation), else at least doubling. */
static bool grow(psched_builder *b, psched_op **ops, size_t len, size_t *cap, size_t extra,
                 bool exact)
{
    if (len + extra <= *cap)
        return true;
    size_t want = exact ? len + extra : (*cap ? *cap * 2 : 64);
    if (want < len + extra)
        want = len + extra;
    psched_op *grown = psched__reallocarray(*ops, want, sizeof *grown);
    if (!grown) {
        b->status = PSCHED_ENOMEM_FAIL();
        return false;
    }
    *ops = grown;
    *cap = want;
    return true;
}

/* grow() for the codes of compact mode. */
static bool grow_codes(psched_builder *b, size_t extra, bool exact)
{
    if (b->len + extra <= b->cap)
        return true;
    size_t want = exact ? b->len + extra : (b->cap ? b->cap * 2 : 64);
    if (want < b->len + extra)
        want = b->len + extra;
    uint32_t *grown = psched__reallocarray(b->code, want, sizeof *grown);
    if (!grown) {
        b->status = PSCHED_ENOMEM_FAIL();
        return false;
    }
    b->code = grown;
    b->cap = want;
    return true;
}

/* A code (layout in internal.h) and back. */
static inline uint32_t code_of(const psched_builder *b, psched_op_kind kind, uint32_t stage,
                               uint32_t mb, uint32_t flags)
{
    return (uint32_t)kind | (flags ? PSCHED_CODE_OVERLAP : 0) |
           ((uint32_t)b->stage_chunk[stage] << PSCHED_CODE_SHIFT) |
           (mb << (PSCHED_CODE_SHIFT + b->chunk_bits));
}

static inline psched_op code_op(const uint32_t *stage_of, uint32_t chunks, unsigned chunk_bits,
                                uint32_t device, uint32_t code)
{
    uint32_t chunk = (code >> PSCHED_CODE_SHIFT) & ((1u << chunk_bits) - 1);
    psched_op op = {stage_of[(size_t)device * chunks + chunk], code >> (PSCHED_CODE_SHIFT + chunk_bits),
                    (uint16_t)chunk, (uint8_t)(code & 3u),
                    (uint8_t)(code & PSCHED_CODE_OVERLAP ? PSCHED_OP_OVERLAP_NEXT : 0)};
    return op;
}

/* Leaves compact mode: the codes so far become psched_ops (the array keeps
 * its capacity: the reservation of address space). */
static bool leave_compact(psched_builder *b)
{
    size_t cap = b->cap ? b->cap : 1;
    psched_op *ops = psched__reallocarray(NULL, cap, sizeof *ops);
    if (!ops) {
        b->status = PSCHED_ENOMEM_FAIL();
        return false;
    }
    psched__advise_huge(ops, cap * sizeof *ops);
    uint32_t chunks = b->plan->chunks;
    for (uint32_t d = 0; d <= b->tail && d < b->devices; d++) {
        size_t end = d < b->tail ? b->first[d + 1] : b->len;
        for (size_t i = b->first[d]; i < end; i++)
            ops[i] = code_op(b->stage_of, chunks, b->chunk_bits, d, b->code[i]);
    }
    psched__dealloc(b->code);
    b->code = NULL;
    b->ops = ops;
    b->cap = cap;
    return true;
}

size_t psched_builder_count(const psched_builder *b, uint32_t device)
{
    if (!b || device >= b->devices)
        return 0;
    if (b->dev)
        return b->dev[device].len;
    if (device < b->tail)
        return b->first[device + 1] - b->first[device];
    return device == b->tail ? b->len - b->first[device] : 0;
}

/* Leaves contiguous mode: every device's ops so far into its own list. */
static bool to_lists(psched_builder *b)
{
    dev_list *dev = psched__calloc(b->devices, sizeof *dev);
    if (!dev) {
        b->status = PSCHED_ENOMEM_FAIL();
        return false;
    }
    for (uint32_t d = 0; d < b->devices; d++) {
        size_t n = psched_builder_count(b, d);
        if (n && !grow(b, &dev[d].ops, 0, &dev[d].cap, n, true)) {
            for (uint32_t e = 0; e < d; e++)
                psched__dealloc(dev[e].ops);
            psched__dealloc(dev);
            return false;
        }
        if (n)
            memcpy(dev[d].ops, b->ops + b->first[d], n * sizeof *b->ops);
        dev[d].len = n;
    }
    psched__dealloc(b->ops);
    b->ops = NULL;
    b->len = b->cap = 0;
    b->tail = UINT32_MAX;
    b->dev = dev;
    return true;
}

/* Makes `device` the device appended at the end of the contiguous array
 * (devices skipped on the way have no ops), or leaves contiguous mode when
 * the generator goes back to an earlier device. */
static bool select_device(psched_builder *b, uint32_t device)
{
    if (b->dev || device == b->tail)
        return true;
    if (device < b->tail)
        return (!b->code || leave_compact(b)) && to_lists(b);
    for (uint32_t d = b->tail + 1; d <= device; d++)
        b->first[d] = b->len;
    b->tail = device;
    return true;
}

psched_status psched_builder_reserve(psched_builder *b, uint32_t device, size_t count)
{
    if (!b)
        return psched_fail(PSCHED_EINVAL, "builder is NULL");
    if (b->status)
        return b->status;
    if (device >= b->devices)
        return b->status = psched_fail(PSCHED_EINVAL, "reserve: device (%u) must be < devices (%u)",
                                       device, b->devices);
    if (!b->dev && device >= b->tail) {
        /* The reservation is for the tail device or one about to follow
         * it. Generators reserve device by device, so exact growth would
         * move the whole array p times; doubling moves it O(1) times per
         * op, and finish hands the unused capacity back (never touched, it
         * was never resident). */
        if (b->code)
            grow_codes(b, count, false);
        else
            grow(b, &b->ops, b->len, &b->cap, count, false);
        return b->status;
    }
    if (b->dev) {
        dev_list *l = &b->dev[device];
        grow(b, &l->ops, l->len, &l->cap, count, true);
    }
    return b->status; /* an earlier device: it turns into lists when appended to */
}

static psched_status check_op(psched_builder *b, uint32_t device, psched_op_kind kind,
                              uint32_t stage, uint32_t mb, uint32_t flags)
{
    if (device >= b->devices)
        return psched_fail(PSCHED_EINVAL, "append: device (%u) must be < devices (%u)", device,
                           b->devices);
    if ((unsigned)kind > PSCHED_OP_COLLECTIVE)
        return psched_fail(PSCHED_EINVAL, "append: kind (%d) is not a psched_op_kind", (int)kind);
    if (kind >= PSCHED_OP_VOCAB_S)
        return psched__check_collective_op(device, kind, stage, mb, b->mbs, flags);
    if (stage >= b->stages)
        return psched_fail(PSCHED_EINVAL, "append: stage (%u) must be < stages (%u)", stage,
                           b->stages);
    if (mb >= b->mbs)
        return psched_fail(PSCHED_EINVAL, "append: microbatch (%u) must be < microbatches per "
                                          "chain (%u)", mb, b->mbs);
    if (flags & ~(uint32_t)(PSCHED_OP_OVERLAP_NEXT | PSCHED_OP_BATCH_NEXT))
        return psched_fail(PSCHED_EINVAL, "append: flags (0x%x) has unknown bits", flags);
    if (b->stage_device[stage] != device)
        return psched_fail(PSCHED_EINVAL, "append: stage %u belongs to device %u, not device %u",
                           stage, b->stage_device[stage], device);
    return PSCHED_OK;
}

/* Any append that is not "room left on the tail device". */
static psched_status append_slow(psched_builder *b, uint32_t device, psched_op op)
{
    if (!select_device(b, device))
        return b->status;
    if (b->code) {
        /* still compact: op.kind, flags and micro-batch fit a code */
        if (!grow_codes(b, 1, false))
            return b->status;
        b->code[b->len++] = code_of(b, (psched_op_kind)op.kind, op.stage, op.microbatch,
                                    op.flags);
        return PSCHED_OK;
    }
    if (b->dev) {
        dev_list *l = &b->dev[device];
        if (!grow(b, &l->ops, l->len, &l->cap, 1, false))
            return b->status;
        l->ops[l->len++] = op;
        return PSCHED_OK;
    }
    if (!grow(b, &b->ops, b->len, &b->cap, 1, false))
        return b->status;
    b->ops[b->len++] = op;
    return PSCHED_OK;
}

psched_status psched_builder_append(psched_builder *b, uint32_t device, psched_op_kind kind,
                                    uint32_t stage, uint32_t microbatch, uint32_t flags)
{
    if (UNLIKELY(!b))
        return psched_fail(PSCHED_EINVAL, "builder is NULL");
    if (UNLIKELY(b->status))
        return b->status;
    if (UNLIKELY(kind >= PSCHED_OP_VOCAB_S) && device < b->devices &&
        (unsigned)kind <= PSCHED_OP_COLLECTIVE) {
        /* vocabulary passes and collectives: `stage` is a shard or an index */
        psched_status st = psched__check_collective_op(device, kind, stage, microbatch, b->mbs,
                                                       flags);
        if (st)
            return b->status = st;
        psched_op op = {stage, microbatch, 0, (uint8_t)kind, 0};
        if (b->code && !leave_compact(b)) /* a code holds only F, B, W, BW */
            return b->status;
        return append_slow(b, device, op);
    }
    if (UNLIKELY(device >= b->devices || (unsigned)kind > PSCHED_OP_RELOAD ||
                 stage >= b->stages || microbatch >= b->mbs ||
                 (flags & ~(uint32_t)(PSCHED_OP_OVERLAP_NEXT | PSCHED_OP_BATCH_NEXT)) ||
                 b->stage_device[stage] != device))
        return b->status = check_op(b, device, kind, stage, microbatch, flags);
    psched_op op = {stage, microbatch, b->stage_chunk[stage], (uint8_t)kind, (uint8_t)flags};
    if (UNLIKELY(b->code != NULL)) {
        if (UNLIKELY(kind > PSCHED_OP_BW || (flags & PSCHED_OP_BATCH_NEXT) ||
                     microbatch >= b->mb_limit) && !leave_compact(b))
            return b->status;
        if (b->code) {
            if (UNLIKELY(device != b->tail || b->len == b->cap))
                return append_slow(b, device, op);
            b->code[b->len++] = code_of(b, kind, stage, microbatch, flags);
            return PSCHED_OK;
        }
    }
    if (UNLIKELY(device != b->tail || b->len == b->cap))
        return append_slow(b, device, op);
    b->ops[b->len++] = op;
    return PSCHED_OK;
}

psched_status psched_builder_append_pair(psched_builder *b, uint32_t device,
                                         psched_op_kind kind1, uint32_t stage1,
                                         uint32_t microbatch1, psched_op_kind kind2,
                                         uint32_t stage2, uint32_t microbatch2)
{
    psched_status st = psched_builder_append(b, device, kind1, stage1, microbatch1,
                                             PSCHED_OP_OVERLAP_NEXT);
    if (st)
        return st;
    return psched_builder_append(b, device, kind2, stage2, microbatch2, 0);
}

const psched_plan *psched_builder_plan(const psched_builder *b)
{
    return b ? b->plan : NULL;
}

/* List mode: one array from the per-device lists, offsets into b->first. */
static bool gather_lists(psched_builder *b)
{
    size_t total = 0;
    for (uint32_t d = 0; d < b->devices; d++)
        total += b->dev[d].len;
    psched_op *ops = psched__reallocarray(NULL, total ? total : 1, sizeof *ops);
    if (!ops) {
        b->status = PSCHED_ENOMEM_FAIL();
        return false;
    }
    size_t at = 0;
    for (uint32_t d = 0; d < b->devices; d++) {
        b->first[d] = at;
        if (b->dev[d].len)
            memcpy(ops + at, b->dev[d].ops, b->dev[d].len * sizeof *ops);
        at += b->dev[d].len;
    }
    b->ops = ops;
    b->len = b->cap = total;
    return true;
}

psched_status psched__builder_finish(psched_builder *b, psched_plan *plan, const char *name,
                                     psched_schedule **out)
{
    if (b->status)
        return b->status;
    if (b->code && !leave_compact(b))
        return b->status;
    psched_schedule *s = psched__calloc(1, sizeof *s);
    if (!s)
        return PSCHED_ENOMEM_FAIL();
    if (b->dev ? !gather_lists(b) : !grow(b, &b->ops, 0, &b->cap, 1, true)) {
        psched__dealloc(s);
        return b->status;
    }
    if (!b->dev) {
        for (uint32_t d = b->tail + 1; d < b->devices; d++)
            b->first[d] = b->len;
        if (b->cap > b->len && b->len > 0) {
            /* hand back the unused tail of a reservation; keep it if that fails */
            psched_op *fit = psched__reallocarray(b->ops, b->len, sizeof *fit);
            if (fit)
                b->ops = fit;
        }
    }
    b->first[b->devices] = b->len;
    s->offset = b->first;
    s->ops = b->ops;
    b->first = NULL;
    b->ops = NULL;
    s->devices = b->devices;
    s->plan = plan;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->solved = b->solved;
    s->solve_status = b->solve_status;
    s->solve_gap = b->solve_gap;
    *out = s;
    return PSCHED_OK;
}

psched_status psched_builder_set_solve_status(psched_builder *b, psched_solve_status status,
                                              double gap)
{
    if (!b)
        return psched_fail(PSCHED_EINVAL, "builder is NULL");
    if (status != PSCHED_SOLVE_OPTIMAL && status != PSCHED_SOLVE_FEASIBLE)
        return psched_fail(PSCHED_EINVAL, "solve status (%d) must be optimal or feasible: a "
                                          "schedule always exists once built", (int)status);
    if (!(gap >= 0) || (status == PSCHED_SOLVE_OPTIMAL && gap != 0))
        return psched_fail(PSCHED_EINVAL, "solve gap (%g) must be >= 0 (+inf when unknown), and "
                                          "0 when optimal", gap);
    b->solved = true;
    b->solve_status = status;
    b->solve_gap = gap;
    return PSCHED_OK;
}

/* ---- compact mode (psched_generate_write) ---- */

psched_status psched__builder_create_compact(const psched_plan *plan, psched_builder **out)
{
    psched_builder *b;
    psched_status st = psched__builder_create_for(plan, 0, &b);
    if (st != PSCHED_OK)
        return st;
    uint32_t v = plan->chunks;
    unsigned bits = 0;
    while (bits < 16 && (1u << bits) < v)
        bits++;
    uint32_t *stage_of = psched__reallocarray(NULL, b->stages ? b->stages : 1, sizeof *stage_of);
    if (!stage_of) {
        psched__builder_destroy(b);
        return PSCHED_ENOMEM_FAIL();
    }
    memset(stage_of, 0xff, (size_t)b->stages * sizeof *stage_of);
    /* every (device, chunk) holds exactly one stage, or no codes */
    bool fits = (1u << bits) >= v;
    for (uint32_t s = 0; s < b->stages && fits; s++) {
        size_t at = (size_t)b->stage_device[s] * v + b->stage_chunk[s];
        fits = b->stage_chunk[s] < v && stage_of[at] == UINT32_MAX;
        if (fits)
            stage_of[at] = s;
    }
    size_t bound = (size_t)3 * b->stages * b->mbs;
    if (!fits || bound == 0 || bound > PSCHED_MAX_OPS) {
        psched__dealloc(stage_of);
        reserve_bound(b, bound);
        *out = b;
        return PSCHED_OK;
    }
    b->stage_of = stage_of;
    b->chunk_bits = bits;
    b->mb_limit = 1u << (32 - PSCHED_CODE_SHIFT - bits);
    /* reserved at the compute bound, as reserve_bound does for ops */
    b->code = psched__reallocarray(NULL, bound, sizeof *b->code);
    b->cap = b->code ? bound : 0;
    psched__advise_huge(b->code, b->cap * sizeof *b->code);
    if (!b->code) {
        b->code = psched__reallocarray(NULL, 64, sizeof *b->code);
        b->cap = b->code ? 64 : 0;
        if (!b->code) {
            psched__builder_destroy(b);
            return PSCHED_ENOMEM_FAIL();
        }
    }
    *out = b;
    return PSCHED_OK;
}

psched_status psched__builder_finish_compact(psched_builder *b, psched_plan *plan,
                                             const char *name, psched_schedule **sout,
                                             psched_compact **cout)
{
    if (b->status)
        return b->status;
    if (!b->code)
        return psched__builder_finish(b, plan, name, sout);
    psched_compact *c = psched__calloc(1, sizeof *c);
    if (!c)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t d = b->tail + 1; d < b->devices; d++)
        b->first[d] = b->len;
    b->first[b->devices] = b->len;
    if (b->cap > b->len && b->len > 0) {
        uint32_t *fit = psched__reallocarray(b->code, b->len, sizeof *fit);
        if (fit)
            b->code = fit;
    }
    c->plan = plan;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->devices = b->devices;
    c->chunks = plan->chunks;
    c->chunk_bits = b->chunk_bits;
    c->offset = b->first;
    c->code = b->code;
    c->stage_of = b->stage_of;
    b->first = NULL;
    b->code = NULL;
    b->stage_of = NULL;
    *cout = c;
    return PSCHED_OK;
}

void psched__compact_destroy(psched_compact *c)
{
    if (!c)
        return;
    psched_plan_destroy(c->plan);
    psched__dealloc(c->offset);
    psched__dealloc(c->code);
    psched__dealloc(c->stage_of);
    psched__dealloc(c);
}

void psched__compact_decode(const psched_compact *c, uint32_t device, size_t first, size_t n,
                            psched_op *out)
{
    const uint32_t *code = c->code + c->offset[device] + first;
    for (size_t i = 0; i < n; i++)
        out[i] = code_op(c->stage_of, c->chunks, c->chunk_bits, device, code[i]);
}

psched_status psched__compact_expand(psched_compact *c, psched_schedule **out)
{
    size_t total = c->offset[c->devices];
    psched_schedule *s = psched__calloc(1, sizeof *s);
    psched_op *ops = psched__reallocarray(NULL, total ? total : 1, sizeof *ops);
    if (!s || !ops) {
        psched__dealloc(s);
        psched__dealloc(ops);
        psched__compact_destroy(c);
        return PSCHED_ENOMEM_FAIL();
    }
    for (uint32_t d = 0; d < c->devices; d++)
        psched__compact_decode(c, d, 0, c->offset[d + 1] - c->offset[d], ops + c->offset[d]);
    s->plan = c->plan;
    snprintf(s->name, sizeof s->name, "%s", c->name);
    s->devices = c->devices;
    s->offset = c->offset;
    s->ops = ops;
    c->plan = NULL;
    c->offset = NULL;
    psched__compact_destroy(c);
    *out = s;
    return PSCHED_OK;
}
