/* V-shape building-block schedules ("Pipeline Parallelism with Controllable
 * Memory", Qi et al. 2024): the machinery V-Min and V-Half share. They
 * differ only in where device i puts the four ops of micro-batch 0 in its
 * first building block; micro-batch k repeats them 6k slots later.
 *
 * From those slots: W go into the first free slot after their backward,
 * the warm-up and cool-down are squeezed (every op moves to the earliest
 * free slot its dependencies allow, unless that raises the peak memory of
 * the block, counted in chunk activations: a forward holds one until its
 * W), the slots are compacted to unit-time earliest starts, the cool-down
 * is squeezed once more with W re-placed, and each device emits its ops in
 * slot order. Real costs do not change that order: timing it with them
 * keeps every device's ops in slot order, so the order is emitted as is and
 * the simulator times it.
 *
 * Any m >= 1 works: micro-batch k's ops exist only for k < m, which is the
 * full block with the ops of the missing micro-batches dropped. */
#ifndef PSCHED_VBLOCK_H
#define PSCHED_VBLOCK_H

#include "internal.h"

#include <stdint.h>

/* Op slots of micro-batch 0 in device `device`'s first block, in this
 * order: chunk-0 forward (stage device), chunk-1 forward (stage
 * 2p-1-device), chunk-1 input backward, chunk-0 input backward. Slots are
 * distinct modulo 6 and respect the dependencies across devices. */
typedef void (*psched_vblock_pattern)(uint32_t devices, uint32_t device, int64_t slot[4]);

/* The plan check both generators share: vshape placement, v = 2. */
PSCHED_INTERNAL psched_status psched__vblock_check(const psched_plan *plan, const char *name);

/* Builds the schedule of `pattern` for the plan's p and m and appends every
 * device's ops. Returns PSCHED_OK, PSCHED_ENOMEM or the builder's status. */
PSCHED_INTERNAL psched_status psched__vblock_generate(const psched_plan *plan, psched_builder *b,
                                                      psched_vblock_pattern pattern);

#endif
