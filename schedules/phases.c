/* Shared shapes of generator orders: visiting sequences and the
 * warm-up / steady / cool-down emitter. See phases.h. */
#include "phases.h"

#include <inttypes.h>

psched_seq psched__seq_grouped(uint32_t microbatches, uint32_t chunks, uint32_t group)
{
    psched_seq seq = {0};
    seq.count = (size_t)microbatches * chunks;
    seq.microbatches = microbatches;
    seq.chunks = chunks;
    seq.group = group;
    return seq;
}

psched_seq psched__seq_table(const psched_slot *table, size_t count, uint32_t chunks)
{
    psched_seq seq = {0};
    seq.count = count;
    seq.table = table;
    seq.chunks = chunks;
    return seq;
}

psched_seq psched__seq_mirrored(psched_seq seq)
{
    seq.mirror = !seq.mirror;
    return seq;
}

psched_seq psched__seq_reversed(psched_seq seq)
{
    seq.reverse = !seq.reverse;
    return seq;
}

/* Slot k of the grouped order in O(1): every group before the last one is
 * full, so the group of k follows from a division; only the last group has
 * its own (smaller or equal) size. */
static psched_slot grouped_slot(const psched_seq *seq, size_t k)
{
    size_t m = seq->microbatches, v = seq->chunks, n = seq->group;
    size_t last_start = ((m - 1) / n) * n;
    size_t base, size;
    if (k >= last_start * v) {
        base = last_start;
        size = m - last_start;
        k -= last_start * v;
    } else {
        base = (k / (n * v)) * n;
        size = n;
        k %= n * v;
    }
    psched_slot slot = {(uint32_t)(k / size), (uint32_t)(base + k % size)};
    return slot;
}

psched_slot psched__seq_at(const psched_seq *seq, size_t k)
{
    if (seq->reverse)
        k = seq->count - 1 - k;
    psched_slot slot = seq->table ? seq->table[k] : grouped_slot(seq, k);
    if (seq->mirror)
        slot.chunk = seq->chunks - 1 - slot.chunk;
    return slot;
}

static psched_status emit_slot(psched_builder *b, const psched_plan *plan, uint32_t device,
                               psched_op_kind kind, psched_slot slot)
{
    uint32_t stage = psched_plan_device_stage(plan, device, slot.chunk);
    return psched_builder_append(b, device, kind, stage, slot.microbatch, 0);
}

psched_status psched__emit_run(psched_builder *b, uint32_t device, psched_op_kind kind,
                               const psched_seq *seq, size_t first, size_t count)
{
    const psched_plan *plan = psched_builder_plan(b);
    psched_status st = PSCHED_OK;
    for (size_t k = first; k < first + count && st == PSCHED_OK; k++)
        st = emit_slot(b, plan, device, kind, psched__seq_at(seq, k));
    return st;
}

psched_status psched__emit_1f1b(psched_builder *b, uint32_t device, const psched_seq *fwd,
                                const psched_seq *bwd, size_t warmup, psched_op_kind bwd_kind)
{
    const psched_plan *plan = psched_builder_plan(b);
    size_t nf = fwd->count, nb = bwd->count;
    size_t w = warmup < nf ? warmup : nf;
    size_t steady = nf - w < nb ? nf - w : nb;

    psched_status st = psched_builder_reserve(b, device, nf + nb);
    if (st == PSCHED_OK)
        st = psched__emit_run(b, device, PSCHED_OP_F, fwd, 0, w);
    for (size_t k = 0; k < steady && st == PSCHED_OK; k++) {
        st = emit_slot(b, plan, device, PSCHED_OP_F, psched__seq_at(fwd, w + k));
        if (st == PSCHED_OK)
            st = emit_slot(b, plan, device, bwd_kind, psched__seq_at(bwd, k));
    }
    if (st == PSCHED_OK)
        st = psched__emit_run(b, device, PSCHED_OP_F, fwd, w + steady, nf - w - steady);
    if (st == PSCHED_OK)
        st = psched__emit_run(b, device, bwd_kind, bwd, steady, nb - steady);
    return st;
}

psched_status psched__check_placement(const psched_plan *plan, psched_placement want,
                                      const char *name)
{
    psched_placement have = psched_plan_placement(plan);
    if (have != want)
        return psched_fail(PSCHED_EINVAL, "placement (%s) must be %s for %s",
                           psched__placement_name(have), psched__placement_name(want), name);
    return PSCHED_OK;
}

psched_status psched__check_chunks(const psched_plan *plan, uint32_t min, uint32_t max,
                                   const char *name)
{
    uint32_t v = psched_plan_chunks(plan);
    if (min == max && v != min)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be %u for %s", v, min, name);
    if (v < min)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be >= %u for %s", v, min, name);
    if (max != 0 && v > max)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be <= %u for %s", v, max, name);
    return PSCHED_OK;
}

/* Group size from the "group-size" option, with Megatron's limits: a group
 * must fill the pipeline, and so must the last (remainder) group. */
static psched_status explicit_group(uint32_t p, uint32_t m, int64_t n, const char *name,
                                    uint32_t *out)
{
    if (n < (int64_t)p)
        return psched_fail(PSCHED_EINVAL, "group-size (%" PRId64 ") must be >= devices (%u) for %s",
                           n, p, name);
    if (n > (int64_t)m)
        return psched_fail(PSCHED_EINVAL,
                           "group-size (%" PRId64 ") must be <= microbatches (%u) for %s", n, m,
                           name);
    uint32_t rem = m % (uint32_t)n;
    if (rem != 0 && rem < p)
        return psched_fail(PSCHED_EINVAL,
                           "microbatches (%u) mod group-size (%" PRId64 ") = %u must be 0 or "
                           ">= devices (%u) for %s: the last group would not fill the pipeline",
                           m, n, rem, p, name);
    *out = (uint32_t)n;
    return PSCHED_OK;
}

/* PyTorch's default: rounds = max(1, m div p) groups of m / rounds
 * micro-batches, which is Megatron's N = p whenever p divides m. */
static psched_status default_group(uint32_t p, uint32_t m, const char *name, uint32_t *out)
{
    uint32_t rounds = m / p > 1 ? m / p : 1;
    if (m % rounds != 0)
        return psched_fail(PSCHED_EINVAL,
                           "microbatches (%u) must be a multiple of rounds (%u) = max(1, "
                           "microbatches / devices) for %s with the default group size; use "
                           "microbatches %u or set the group-size option",
                           m, rounds, name, m - m % rounds);
    *out = m / rounds;
    return PSCHED_OK;
}

psched_status psched__interleaved_group(const psched_plan *plan, const char *name, uint32_t *out)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    int64_t n;
    psched_status st = psched_plan_get_option(plan, "group-size", &n);
    if (st == PSCHED_OK)
        return explicit_group(p, m, n, name, out);
    if (st != PSCHED_ENOTFOUND)
        return st;
    return default_group(p, m, name, out);
}
