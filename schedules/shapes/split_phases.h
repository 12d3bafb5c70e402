/* Phase shapes of split-backward schedules (the zero-bubble family).
 *
 * Once the backward is split into B (input gradient) and W (weight
 * gradient), a device's order is a few phases, each a short pattern of
 * kinds repeated: ZB-H1 is F^(p-d) (B F)^d (B W F)^* (B W)^* W^d, ZB-H2 and
 * interleaved ZB1P are similar words. A psched_split walks one device
 * through its forward and backward visiting orders (phases.h sequences) and
 * appends the next op of each kind a pattern names.
 *
 * W always completes the oldest B that has no W yet (a FIFO), and B runs in
 * visiting order, so the k-th W belongs to the k-th B: a counter is the
 * whole queue. */
#ifndef PSCHED_SPLIT_PHASES_H
#define PSCHED_SPLIT_PHASES_H

#include "phases.h"

/* One device's progress through its F, B and W. Initialise with
 * psched__split_begin(); the sequences are borrowed. */
typedef struct psched_split {
    psched_builder *builder;
    uint32_t device;
    const psched_seq *fwd; /* F k runs fwd[k] */
    const psched_seq *bwd; /* B k and W k run bwd[k] */
    size_t f, b, w;        /* next F, B, W index */
    psched_seq_cursor at_f, at_b, at_w; /* the same three positions, read in O(1) */
    psched_stage_map map;  /* the device's stage of each chunk */
} psched_split;

/* Starts device `device` and reserves exactly its fwd->count F plus
 * bwd->count B and bwd->count W. Returns the builder's status. */
PSCHED_INTERNAL psched_status psched__split_begin(psched_split *s, psched_builder *b,
                                                  uint32_t device, const psched_seq *fwd,
                                                  const psched_seq *bwd);

/* Appends `pattern` (a string of 'F', 'B', 'W') `repeat` times, each letter
 * the next op of that kind. The caller keeps the counts within the
 * sequences; running past one, or a W overtaking its B, is a generator bug
 * reported as PSCHED_EINVAL. Returns the builder's status. */
PSCHED_INTERNAL psched_status psched__split_run(psched_split *s, const char *pattern,
                                                size_t repeat);

/* Appends every W still pending (B done, W not yet), oldest first. */
PSCHED_INTERNAL psched_status psched__split_drain(psched_split *s);

/* One phase of a device's word: `pattern` repeated `repeat` times. */
typedef struct psched_split_phase {
    const char *pattern;
    size_t repeat;
} psched_split_phase;

/* A whole device: begin, every phase in order, then drain the pending W.
 * Generators describe their order as data: ZB-H1 is
 * {{"F", w}, {"BF", r}, {"BWF", s}, {"BW", w}}. */
PSCHED_INTERNAL psched_status psched__split_device(psched_builder *b, uint32_t device,
                                                   const psched_seq *fwd, const psched_seq *bwd,
                                                   const psched_split_phase *phases,
                                                   size_t count);

#endif
