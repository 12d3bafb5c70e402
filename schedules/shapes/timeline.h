/* Op lists of a one-chunk pipeline (stage j on device j) timed while they
 * grow. Each op is appended at the earliest start after its device's last
 * op and its inputs (plus t_comm when they come from another device), which
 * is exactly when the in-order simulator will run it, and its memory delta
 * joins the device's running sum. A search builds candidate orders on a
 * timeline, compares their spans and keeps the best one's ops.
 *
 * F and B of a stage run in micro-batch order, and so do its W: every list
 * built here has that property (the builders of zb rely on it). */
#ifndef PSCHED_TIMELINE_H
#define PSCHED_TIMELINE_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>

/* One stage (= one device) of a timeline. */
typedef struct psched_tl_stage {
    double tf, tb, tw;   /* costs of a micro-batch of weight 1 */
    double mf, mb, mw;   /* memory deltas of a micro-batch of weight 1 */
    uint32_t nf, nb, nw; /* F, B, W placed: the next of each kind has that micro-batch */
    uint32_t count;      /* ops in the list */
    double end;          /* end of the last op */
    double mem;          /* running memory */
    double idle;         /* waiting time since the first op */
} psched_tl_stage;

typedef struct psched_timeline {
    uint32_t p, m;
    double comm, limit;
    double *w; /* [mb]: micro-batch weights w_k, NULL when all are 1 */
    psched_tl_stage *st;
    double *f_end, *b_end; /* [stage * m + mb] */
    uint32_t *ops;         /* [stage * 3m + k]: (mb << 2) | kind */
    uint32_t *best;        /* the kept order, same layout */
    double best_span;      /* its span (meaningless while has_best is false) */
    bool has_best;         /* a complete order has been kept */
    double max_idle;       /* largest idle over stages */
} psched_timeline;

/* Allocates a timeline for a resolved one-chunk plan (p stages, m
 * micro-batches, its costs, deltas, comm and limit). PSCHED_ENOMEM on
 * failure, with everything released. */
PSCHED_INTERNAL psched_status psched__timeline_init(psched_timeline *t, const psched_plan *plan);
PSCHED_INTERNAL void psched__timeline_free(psched_timeline *t);

/* Empties every list (keeps the kept order). */
PSCHED_INTERNAL void psched__timeline_reset(psched_timeline *t);

/* Weight of micro-batch mb (1 without weights or past the last one): its
 * op's time and memory delta are the stage's figure times it, as in the
 * simulator. */
static inline double psched__timeline_weight(const psched_timeline *t, uint32_t mb)
{
    return t->w && mb < t->m ? t->w[mb] : 1.0;
}

/* Time and memory delta of stage j's next op of `kind`. */
PSCHED_INTERNAL double psched__timeline_cost(const psched_timeline *t, uint32_t j,
                                             psched_op_kind kind);
PSCHED_INTERNAL double psched__timeline_delta(const psched_timeline *t, uint32_t j,
                                              psched_op_kind kind);

/* Whether a running memory value respects the limit. */
PSCHED_INTERNAL bool psched__timeline_fits(const psched_timeline *t, double mem);

/* Appends the next op of `kind` on stage j. False, with nothing changed,
 * when its micro-batch does not exist, an input is not placed yet, or the
 * memory limit would be exceeded. */
PSCHED_INTERNAL bool psched__timeline_put(psched_timeline *t, uint32_t j, psched_op_kind kind);

/* Runs pending W on stage j until an op with memory delta `delta` fits.
 * False when the pending W cannot make room. */
PSCHED_INTERNAL bool psched__timeline_make_room(psched_timeline *t, uint32_t j, double delta);

/* Runs pending W on stage j that end by `arrival` (they delay nothing). */
PSCHED_INTERNAL void psched__timeline_fill(psched_timeline *t, uint32_t j, double arrival);

/* Runs every pending W; false if one breaks the memory limit. */
PSCHED_INTERNAL bool psched__timeline_drain(psched_timeline *t);

/* Time the input of stage j's next F or B arrives on the device (0 when it
 * needs nothing from another device); INFINITY while that input is not
 * placed. */
PSCHED_INTERNAL double psched__timeline_arrival(const psched_timeline *t, uint32_t j,
                                                psched_op_kind kind);

/* Whether stage j has a B without its W. */
static inline bool psched__timeline_w_pending(const psched_timeline *t, uint32_t j)
{
    return t->st[j].nw < t->st[j].nb;
}

/* Places the ops of a one-chunk schedule of the same shape (p, m) in its
 * order, each device's list from an empty one. False when the order breaks
 * the memory limit or is not made of F, B and W in micro-batch order. */
PSCHED_INTERNAL bool psched__timeline_replay(psched_timeline *t, const psched_schedule *s);

/* Span of the lists, when every stage has all its 3m ops; INFINITY
 * otherwise. Keeps the order when its span beats the kept one. */
PSCHED_INTERNAL double psched__timeline_offer(psched_timeline *t);

/* Appends the kept order to the builder; PSCHED_EINVAL naming the
 * generator bug when no complete order was ever offered. */
PSCHED_INTERNAL psched_status psched__timeline_emit(const psched_timeline *t, psched_builder *b);

#endif
