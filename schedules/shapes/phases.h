/* Shared shapes of generator orders.
 *
 * Most classic schedules are one shape: a device runs some forwards
 * (warm-up), then alternates one forward with one backward (steady state),
 * then runs the backwards that are left (cool-down). They differ only in
 * the warm-up count and in the order in which the device visits its
 * (chunk, micro-batch) cells. A psched_seq describes that order without
 * allocating; psched__emit_1f1b() turns two of them into ops.
 *
 * GPipe and looped BFS are the degenerate case warm-up = every forward.
 *
 * Also here: the plan checks generators repeat (placement, chunk range), so
 * their messages read the same everywhere. psched_generate() already
 * rejects a placement other than the descriptor's unless the descriptor
 * says custom; the placement check is for callers that need it anyway. */
#ifndef PSCHED_PHASES_H
#define PSCHED_PHASES_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One cell of a device's work: its local chunk and a micro-batch. The stage
 * is the plan's psched_plan_device_stage(device, chunk), so one sequence
 * serves every device and every placement. */
typedef struct psched_slot {
    uint32_t chunk;
    uint32_t microbatch;
} psched_slot;

/* A device's visiting order over `count` slots. Either an explicit table
 * or the grouped order (see psched__seq_grouped), optionally read with
 * chunks mirrored and/or back to front. Build with the functions below;
 * the struct is a value and cheap to copy. */
typedef struct psched_seq {
    size_t count;
    const psched_slot *table; /* explicit slots, or NULL for the grouped order */
    uint32_t microbatches;    /* grouped order only */
    uint32_t chunks;          /* chunk count: grouped order and mirroring */
    uint32_t group;           /* grouped order: micro-batches per group */
    bool mirror;              /* chunk c reads as chunks-1-c */
    bool reverse;             /* slot k reads as slot count-1-k */
} psched_seq;

/* Megatron's schedule table: micro-batches in groups of `group` (the last
 * group holds whatever remains, fewer than `group` when it does not divide
 * `microbatches`), each group listed chunk-major: chunk 0 for every
 * micro-batch of the group, then chunk 1, ... Requires 1 <= group, and
 * microbatches, chunks >= 1. group = microbatches gives the breadth-first
 * order (every micro-batch of chunk 0, then of chunk 1, ...); with
 * chunks = 1 that is simply micro-batches 0..m-1. */
PSCHED_INTERNAL psched_seq psched__seq_grouped(uint32_t microbatches, uint32_t chunks,
                                               uint32_t group);

/* The slots of `table` in order; `chunks` bounds their chunk (for mirroring).
 * The table is borrowed and must outlive the sequence. */
PSCHED_INTERNAL psched_seq psched__seq_table(const psched_slot *table, size_t count,
                                             uint32_t chunks);

/* The same order with chunk c read as chunks-1-c: a backward pass walks the
 * model's chunks from the last one. */
PSCHED_INTERNAL psched_seq psched__seq_mirrored(psched_seq seq);

/* The same order back to front. */
PSCHED_INTERNAL psched_seq psched__seq_reversed(psched_seq seq);

/* Slot k (k < seq->count). */
PSCHED_INTERNAL psched_slot psched__seq_at(const psched_seq *seq, size_t k);

/* Reads a sequence in order from a given slot, each step O(1) without the
 * divisions of psched__seq_at: the emitters' hot path. */
typedef struct psched_seq_cursor {
    const psched_seq *seq;
    size_t index;      /* table order: position of the next slot */
    size_t base, size; /* grouped order: first micro-batch and size of the group */
    size_t chunk, off; /* grouped order: chunk and offset in the group of the next slot */
} psched_seq_cursor;

/* A cursor at slot k (k <= seq->count; at count nothing may be read). */
PSCHED_INTERNAL psched_seq_cursor psched__seq_cursor(const psched_seq *seq, size_t k);

/* The slot at the cursor, then one step on. The caller stays within count. */
static inline psched_slot psched__seq_next(psched_seq_cursor *c)
{
    const psched_seq *s = c->seq;
    psched_slot slot;
    if (s->table) {
        slot = s->table[c->index];
        c->index = s->reverse ? c->index - 1 : c->index + 1;
    } else {
        slot.chunk = (uint32_t)c->chunk;
        slot.microbatch = (uint32_t)(c->base + c->off);
        if (!s->reverse) {
            if (++c->off == c->size) {
                c->off = 0;
                if (++c->chunk == s->chunks) {
                    c->chunk = 0;
                    c->base += c->size;
                    c->size = s->microbatches - c->base < s->group ? s->microbatches - c->base
                                                                   : s->group;
                }
            }
        } else if (c->off > 0) {
            c->off--;
        } else if (c->chunk > 0) {
            c->chunk--;
            c->off = c->size - 1;
        } else if (c->base > 0) { /* every group before the last one is full */
            c->base -= s->group;
            c->size = s->group;
            c->chunk = s->chunks - 1;
            c->off = c->size - 1;
        }
    }
    if (s->mirror)
        slot.chunk = s->chunks - 1 - slot.chunk;
    return slot;
}

/* Stage of each chunk of one device, looked up once instead of per op. */
typedef struct psched_stage_map {
    uint32_t chunks; /* entries filled: the plan's v */
    uint32_t stage[PSCHED_MAX_CHUNKS];
} psched_stage_map;

/* Fills `map` for `device`. */
PSCHED_INTERNAL void psched__stage_map(psched_stage_map *map, const psched_plan *plan,
                                       uint32_t device);

/* The stage of a slot's chunk on the mapped device; UINT32_MAX for a chunk
 * the plan does not have, which the builder refuses with a message. */
static inline uint32_t psched__stage_of(const psched_stage_map *map, psched_slot slot)
{
    return slot.chunk < map->chunks ? map->stage[slot.chunk] : UINT32_MAX;
}

/* Appends ops of `kind` for slots [first, first + count) of `seq` on
 * `device`. Returns the builder's status (stops at the first error). */
PSCHED_INTERNAL psched_status psched__emit_run(psched_builder *b, uint32_t device,
                                               psched_op_kind kind, const psched_seq *seq,
                                               size_t first, size_t count);

/* The 1F1B shape on one device: forwards fwd[0..w) with w = min(warmup,
 * fwd->count); then while forwards remain and backwards are left, forward
 * fwd[w+k] followed by backward bwd[k]; then any forwards left over (only
 * when bwd is shorter than the steady state), then the remaining backwards.
 * Backwards are of kind `bwd_kind` (PSCHED_OP_BW, or PSCHED_OP_B for split
 * backward schedules that place W themselves). Reserves fwd->count +
 * bwd->count ops on the device first. Returns the builder's status. */
PSCHED_INTERNAL psched_status psched__emit_1f1b(psched_builder *b, uint32_t device,
                                                const psched_seq *fwd, const psched_seq *bwd,
                                                size_t warmup, psched_op_kind bwd_kind);

/* Fails with PSCHED_EINVAL unless the plan's placement is `want`:
 * "placement (vshape) must be loop for interleaved". */
PSCHED_INTERNAL psched_status psched__check_placement(const psched_plan *plan,
                                                      psched_placement want, const char *name);

/* Fails with PSCHED_EINVAL unless min <= v <= max (max 0: no upper bound):
 * "chunks (1) must be >= 2 for interleaved", "chunks (2) must be 1 for gpipe". */
PSCHED_INTERNAL psched_status psched__check_chunks(const psched_plan *plan, uint32_t min,
                                                   uint32_t max, const char *name);

/* Micro-batch group size N of the interleaved schedules (Megatron table):
 * the "group-size" option when set (p <= N <= m, and the last group must
 * fill the pipeline: m mod N = 0 or >= p), else PyTorch's default
 * rounds = max(1, m div p), N = m / rounds (rounds must divide m). Messages
 * name the generator. */
PSCHED_INTERNAL psched_status psched__interleaved_group(const psched_plan *plan,
                                                        const char *name, uint32_t *out);

/* The one option of the interleaved schedules, as their descriptors
 * declare it (one entry): "group-size", 1..2^32-1, default from the plan. */
PSCHED_INTERNAL extern const psched_generator_option_desc psched__group_size_option[];

#endif
