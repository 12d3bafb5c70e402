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

psched_seq_cursor psched__seq_cursor(const psched_seq *seq, size_t k)
{
    psched_seq_cursor c = {0};
    c.seq = seq;
    if (k >= seq->count)
        return c; /* at the end: nothing is read */
    size_t i = seq->reverse ? seq->count - 1 - k : k;
    if (seq->table) {
        c.index = i;
        return c;
    }
    /* grouped_slot's arithmetic, kept as state the steps update */
    size_t m = seq->microbatches, v = seq->chunks, n = seq->group;
    size_t last_start = ((m - 1) / n) * n;
    if (i >= last_start * v) {
        c.base = last_start;
        c.size = m - last_start;
        i -= last_start * v;
    } else {
        c.base = (i / (n * v)) * n;
        c.size = n;
        i %= n * v;
    }
    c.chunk = i / c.size;
    c.off = i % c.size;
    return c;
}

void psched__stage_map(psched_stage_map *map, const psched_plan *plan, uint32_t device)
{
    uint32_t v = psched_plan_chunks(plan);
    map->chunks = v < PSCHED_MAX_CHUNKS ? v : PSCHED_MAX_CHUNKS;
    for (uint32_t c = 0; c < map->chunks; c++)
        map->stage[c] = psched_plan_device_stage(plan, device, c);
}

/* Appends `count` ops of `kind` from the cursor. Inlined into the
 * emitters so the cursor lives in registers. */
static inline psched_status emit_cursor(psched_builder *b, uint32_t device,
                                        psched_op_kind kind, const psched_stage_map *map,
                                        psched_seq_cursor *c, size_t count)
{
    psched_status st = PSCHED_OK;
    for (size_t k = 0; k < count && st == PSCHED_OK; k++) {
        psched_slot slot = psched__seq_next(c);
        st = psched_builder_append(b, device, kind, psched__stage_of(map, slot), slot.microbatch,
                                   0);
    }
    return st;
}

psched_status psched__emit_run(psched_builder *b, uint32_t device, psched_op_kind kind,
                               const psched_seq *seq, size_t first, size_t count)
{
    psched_stage_map map;
    psched__stage_map(&map, psched_builder_plan(b), device);
    psched_seq_cursor c = psched__seq_cursor(seq, first);
    return emit_cursor(b, device, kind, &map, &c, count);
}

psched_status psched__emit_1f1b(psched_builder *b, uint32_t device, const psched_seq *fwd,
                                const psched_seq *bwd, size_t warmup, psched_op_kind bwd_kind)
{
    size_t nf = fwd->count, nb = bwd->count;
    size_t w = warmup < nf ? warmup : nf;
    size_t steady = nf - w < nb ? nf - w : nb;
    psched_stage_map map;
    psched__stage_map(&map, psched_builder_plan(b), device);
    psched_seq_cursor f = psched__seq_cursor(fwd, 0), k = psched__seq_cursor(bwd, 0);

    psched_status st = psched_builder_reserve(b, device, nf + nb);
    if (st == PSCHED_OK)
        st = emit_cursor(b, device, PSCHED_OP_F, &map, &f, w);
    for (size_t i = 0; i < steady && st == PSCHED_OK; i++) {
        psched_slot sf = psched__seq_next(&f), sb = psched__seq_next(&k);
        st = psched_builder_append(b, device, PSCHED_OP_F, psched__stage_of(&map, sf),
                                   sf.microbatch, 0);
        if (st == PSCHED_OK)
            st = psched_builder_append(b, device, bwd_kind, psched__stage_of(&map, sb),
                                       sb.microbatch, 0);
    }
    if (st == PSCHED_OK)
        st = emit_cursor(b, device, PSCHED_OP_F, &map, &f, nf - w - steady);
    if (st == PSCHED_OK)
        st = emit_cursor(b, device, bwd_kind, &map, &k, nb - steady);
    return st;
}

psched_status psched__check_placement(const psched_plan *plan, psched_placement want,
                                      const char *name)
{
    psched_placement have = psched_plan_placement(plan);
    if (have != want)
        return psched_fail(PSCHED_EINVAL, "placement (%s) must be %s for %s",
                           psched_placement_str(have), psched_placement_str(want), name);
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

const psched_generator_option_desc psched__group_size_option[] = {{
    .name = "group-size",
    .description = "micro-batches per group N: p <= N <= m, m mod N = 0 or >= p; "
                   "default m / max(1, m div p) (PyTorch's rounds)",
    .min = 1,
    .max = UINT32_MAX,
    .flags = PSCHED_OPTION_DEFAULT_FROM_PLAN,
}};

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
