/* The builder generators write through: per-device growable lists, moved
 * into one contiguous array when the schedule is made. Errors latch so a
 * generator can append freely and return the builder's status once. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef struct dev_list {
    psched_op *ops;
    size_t len, cap;
} dev_list;

struct psched_builder {
    const psched_plan *plan;
    uint32_t devices, stages, mbs;
    uint32_t *stage_device; /* resolved once: appends never walk the placement */
    uint16_t *stage_chunk;
    dev_list *dev;
    psched_status status;
};

psched_status psched__builder_create(const psched_plan *plan, psched_builder **out)
{
    psched_builder *b = psched__calloc(1, sizeof *b);
    if (!b)
        return PSCHED_ENOMEM_FAIL();
    b->plan = plan;
    b->devices = plan->devices;
    b->stages = plan->devices * plan->chunks;
    b->mbs = psched__plan_chain_mbs(plan);
    b->dev = psched__calloc(b->devices, sizeof *b->dev);
    b->stage_device = psched__calloc(b->stages, sizeof *b->stage_device);
    b->stage_chunk = psched__calloc(b->stages, sizeof *b->stage_chunk);
    if (!b->dev || !b->stage_device || !b->stage_chunk) {
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
    psched__dealloc(b->stage_device);
    psched__dealloc(b->stage_chunk);
    psched__dealloc(b);
}

static bool grow(psched_builder *b, dev_list *l, size_t extra)
{
    if (l->len + extra <= l->cap)
        return true;
    size_t cap = l->cap ? l->cap * 2 : 64;
    if (cap < l->len + extra)
        cap = l->len + extra;
    psched_op *ops = psched__reallocarray(l->ops, cap, sizeof *ops);
    if (!ops) {
        b->status = PSCHED_ENOMEM_FAIL();
        return false;
    }
    l->ops = ops;
    l->cap = cap;
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
    dev_list *l = &b->dev[device];
    if (l->len + count > l->cap) {
        psched_op *ops = psched__reallocarray(l->ops, l->len + count, sizeof *ops);
        if (!ops)
            return b->status = PSCHED_ENOMEM_FAIL();
        l->ops = ops;
        l->cap = l->len + count;
    }
    return PSCHED_OK;
}

static psched_status check_op(psched_builder *b, uint32_t device, psched_op_kind kind,
                              uint32_t stage, uint32_t mb, uint32_t flags)
{
    if (device >= b->devices)
        return psched_fail(PSCHED_EINVAL, "append: device (%u) must be < devices (%u)", device,
                           b->devices);
    if ((unsigned)kind > PSCHED_OP_RECV_B)
        return psched_fail(PSCHED_EINVAL, "append: kind (%d) is not a psched_op_kind", (int)kind);
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

psched_status psched_builder_append(psched_builder *b, uint32_t device, psched_op_kind kind,
                                    uint32_t stage, uint32_t microbatch, uint32_t flags)
{
    if (!b)
        return psched_fail(PSCHED_EINVAL, "builder is NULL");
    if (b->status)
        return b->status;
    psched_status st = check_op(b, device, kind, stage, microbatch, flags);
    if (st)
        return b->status = st;
    dev_list *l = &b->dev[device];
    if (!grow(b, l, 1))
        return b->status;
    l->ops[l->len++] = (psched_op){stage, microbatch, b->stage_chunk[stage], (uint8_t)kind,
                                   (uint8_t)flags};
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

size_t psched_builder_count(const psched_builder *b, uint32_t device)
{
    return (b && device < b->devices) ? b->dev[device].len : 0;
}

psched_status psched__builder_finish(psched_builder *b, psched_plan *plan, const char *name,
                                     psched_schedule **out)
{
    if (b->status)
        return b->status;
    size_t total = 0;
    for (uint32_t d = 0; d < b->devices; d++)
        total += b->dev[d].len;
    psched_schedule *s = psched__calloc(1, sizeof *s);
    if (!s)
        return PSCHED_ENOMEM_FAIL();
    s->offset = psched__calloc((size_t)b->devices + 1, sizeof *s->offset);
    s->ops = psched__reallocarray(NULL, total ? total : 1, sizeof *s->ops);
    if (!s->offset || !s->ops) {
        psched__dealloc(s->offset);
        psched__dealloc(s->ops);
        psched__dealloc(s);
        return PSCHED_ENOMEM_FAIL();
    }
    size_t at = 0;
    for (uint32_t d = 0; d < b->devices; d++) {
        s->offset[d] = at;
        if (b->dev[d].len)
            memcpy(s->ops + at, b->dev[d].ops, b->dev[d].len * sizeof *s->ops);
        at += b->dev[d].len;
    }
    s->offset[b->devices] = at;
    s->devices = b->devices;
    s->plan = plan;
    snprintf(s->name, sizeof s->name, "%s", name);
    *out = s;
    return PSCHED_OK;
}
