/* Vocabulary Parallelism (Yeung et al., "Balancing Pipeline Parallelism
 * with Vocabulary Parallelism", MLSys'25) woven into a pipeline order.
 *
 * The output layer is split over all p devices by vocabulary shards. Per
 * micro-batch k every device d runs, in this order on its list:
 *   COLLECTIVE 0 (broadcast of the last stage's output), VOCAB_S(d, k),
 *   COLLECTIVE 1 (all-reduce of the softmax statistics; Vocab-2 also the
 *   input gradient), VOCAB_T(d, k), and for Vocab-1 COLLECTIVE 2
 *   (all-reduce of the input gradient),
 * and the last stage's backward of k follows the last collective of k.
 * The pipeline's own order is the generator's, built with `extra` more
 * warm-up forwards where the generator has a warm-up (1F1B: one per
 * barrier after the broadcast, so the first device holds p + 2 micro-
 * batches under Vocab-1 and p + 1 under Vocab-2, as the paper states).
 *
 * Where the vocabulary ops go: the base order is replayed on a timeline
 * with the plan's costs, and each device takes its next vocabulary op as
 * soon as it can run (a collective as soon as the device reaches it, since
 * collectives run on the communication stream; an S or T pass once its
 * collective has run), before the pipeline op that would start no
 * earlier. So S and T fill the time the barriers leave, and the barriers
 * run under compute, as in the paper's figures. */
#ifndef PSCHED_VOCAB_H
#define PSCHED_VOCAB_H

#include "internal.h"

/* The generator option "vocab": 0 (none, the default), 1 or 2. */
PSCHED_INTERNAL extern const psched_generator_option_desc psched__vocab_option[];

/* The plan's vocab option (0 when unset). */
PSCHED_INTERNAL uint32_t psched__vocab_of(const psched_plan *plan);

/* Builds the pipeline order with `base` into a scratch builder, weaves in
 * the vocabulary ops of algorithm `vocab` (1 or 2) and appends the result
 * to `b`. */
typedef psched_status (*psched_vocab_base)(const psched_plan *plan, psched_builder *b);
PSCHED_INTERNAL psched_status psched__vocab_generate(const psched_plan *plan, psched_builder *b,
                                                     uint32_t vocab, psched_vocab_base base);

#endif
