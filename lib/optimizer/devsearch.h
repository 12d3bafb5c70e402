/* The device search of the partition certificate (devsearch.c): an exact
 * enumeration of a run's layer counts, one device at a time. Used by
 * certify.c only. Not installed. */
#ifndef PSCHED_DEVSEARCH_H
#define PSCHED_DEVSEARCH_H

#include "pathbound.h"

/* Where the layers between the first and the last are identical (a run,
 * psched__run_shape()) a partition is, per stage, how many run layers it
 * holds with each recompute variant, and the variant of layer 0 and layer
 * L-1 when they are not run layers (an embedding on stage 0, a head on the
 * last stage). Nothing then ties one device's stages to another's but the
 * total, so the search places whole devices: at each node the device
 * with the fewest choices that stay below the best (first fail), first
 * each device's counts (every count vector over its stages whose total
 * the layer count bound allows, narrowed by each device's own work with
 * the recompute its memory forces; its stages at the fastest
 * configuration any of its assignments gives them), then, once every
 * device's counts are chosen, each device's recompute assignment (those
 * that fit the device's memory and that no other fitting assignment of
 * the same counts beats on every stage). A node's bound is the step time of the
 * fixed order with the placed devices' stage costs and every other stage
 * at the least it can cost (its fewest layers, the fastest variant): the
 * step time of a fixed order never falls when a stage's cost rises, so
 * that bounds every completion. It sees what the averaged bounds miss: a
 * device placed with stages of 2 and 3 layers delays the devices around
 * it in the simulated order itself. Each op's end plus its device's later
 * ops counts too the work every completion still gives that device (the
 * recompute its memory forces, the layers the others leave it), and the
 * devices without counts share the layers left at the least largest end.
 * Stopped early, the search's bound is its open subtrees' least. With
 * DualPipe's two chains (folded: pb's stages are the p ranges, its devices
 * the mirrored pairs) a device of the search is a pair and the order's DAG
 * the plan's own, each range's costs on both chains' stages. */
typedef struct psched__devsearch {
    /* in */
    const psched__problem *pb;
    const psched__run *run;
    const psched_schedule *order; /* every partition's order (cost-independent) */
    const uint32_t *lo, *hi;      /* per device: fewest and most run layers */
    const double *base;           /* per device: a lower bound of its step time
                                     without its run layers (count_bound's base) */
    double until;                 /* psched__now() value to stop at */
    size_t ops_budget;            /* evaluated ops, at most */
    double best;                  /* the incumbent's step time */
    /* > 0: a bound pass. Only nodes whose bound is below it (and the
     * best) are searched, children by rising bound, no dive or polish;
     * when it ends every partition is at least the threshold or faster
     * than the best it started with (found: the new best). 0: the search
     * proves or refutes the best. A bound pass starts from the root, keeps
     * no state and leaves `state` as it was given. */
    double threshold;
    const psched__solution *best_sol;
    /* simulates a partition the search found faster (the library's
     * simulator is the judge) into *makespan and returns the incumbent's
     * step time after it */
    psched_status (*consider)(void *ctx, const psched__solution *sol, double *makespan,
                              double *best);
    void *ctx;
    /* in and out: a search stopped early, kept to resume (NULL: none);
     * psched__devsearch_free() frees it */
    void *state;
    /* out */
    size_t nodes, options;
    bool complete; /* the enumeration ended: no partition beats `best` (within 1e-9) */
    bool below;    /* the enumeration below the threshold (or the best) ended */
    bool dove;     /* the pass ended after its first dive (depth first by rising
                      bound, a fixed count of nodes) found a faster partition;
                      the next pass searches from the root */
    /* a lower bound of every partition's step time (within 1e-9; 0: none):
     * when the search stopped early, the least bound of the subtrees it has
     * not searched and the best (every partition outside them is slower
     * than the best) */
    double bound;
} psched__devsearch;

/* Whether the device search applies: one chain or DualPipe's two (the
 * folded problem), a run, the plain cost model and compute ops in `order`
 * with no flag but an overlapped pair's. */
PSCHED_INTERNAL bool psched__devsearch_applies(const psched__problem *pb,
                                               const psched_plan *plan,
                                               const psched_schedule *order);

/* Runs the search, or, when ds->state holds one stopped early, goes on
 * from where it stopped (its options and ranges, built for the incumbent
 * it started from, hold for a faster one; every cut reads ds->best). When
 * it stops early again it is kept in ds->state. */
PSCHED_INTERNAL psched_status psched__devsearch_run(psched__devsearch *ds);

PSCHED_INTERNAL void psched__devsearch_free(void **state);

/* Test hook: partitions the device search proved optimal on this thread. */
PSCHED_INTERNAL size_t psched__devsearch_test_proofs(void);
/* Test hooks: psched__devsearch_run() runs in passes that stop between
 * two children after `nodes` evaluations (0: off), each resuming the last,
 * until the search ends; the passes that resumed a stopped search on this
 * thread. */
PSCHED_INTERNAL void psched__devsearch_test_slice(size_t nodes);
PSCHED_INTERNAL size_t psched__devsearch_test_resumes(void);
/* Test hooks: every pass stops after `nodes` evaluations (0: off); the
 * last search's bound (psched__devsearch.bound; 0 when none ran since a
 * stop was last set, not cleared). */
PSCHED_INTERNAL void psched__devsearch_test_stop(size_t nodes);
PSCHED_INTERNAL double psched__devsearch_test_bound(void);
/* Test hooks: the dive's nodes (0: DEVSEARCH_DIVE_NODES); the passes on
 * this thread that ended after their dive found a faster partition. */
PSCHED_INTERNAL void psched__devsearch_test_dive(size_t nodes);
PSCHED_INTERNAL size_t psched__devsearch_test_dives(void);

/* Test hooks: the last polish on this thread (before a search from the
 * root: each device's recompute assignment of the incumbent's counts
 * searched with the others kept, then single layer moves, until neither
 * gains): false when none ran to its end (or it has more stages or layers
 * than the hook keeps, or than `stages` and `layers`); else its partition
 * (per stage its layer count, per layer its recompute variant) and its
 * step time. And the partitions the polishes on this thread kept (each
 * faster than the last). */
PSCHED_INTERNAL bool psched__devsearch_test_polished(uint32_t *count, uint32_t stages,
                                                     uint8_t *choice, uint32_t layers,
                                                     double *makespan);
PSCHED_INTERNAL size_t psched__devsearch_test_polish_gains(void);
/* Forgets the last polish (each certificate calls it first, so the hook
 * never shows an earlier call's). */
PSCHED_INTERNAL void psched__devsearch_test_forget(void);
/* Test hook: the options of all devices the search takes, at most (0:
 * DEVSEARCH_OPTIONS_MAX); beyond it the search does not start and the
 * polish runs alone, making its groups itself. */
PSCHED_INTERNAL void psched__devsearch_test_options_cap(size_t options);
/* Test hook: off = true skips the polish on this thread (the dive then
 * starts from the incumbent as the certificate has it). */
PSCHED_INTERNAL void psched__devsearch_test_no_polish(bool off);
/* Test hooks: off = true leaves the chain bound out on this thread
 * (devsearch.c, chain_bumps()); the nodes the searches on this thread
 * evaluated, and the evaluations in which the chain bound made an op
 * start later. */
PSCHED_INTERNAL void psched__devsearch_test_no_chain(bool off);
PSCHED_INTERNAL size_t psched__devsearch_test_nodes(void);
PSCHED_INTERNAL size_t psched__devsearch_test_chain_rises(void);
/* Test hooks: with `max` > 0, the searches on this thread record up to
 * `max` of the bounds they give a device's counts at the first depth
 * (every other device without counts; with one chain only), each with the
 * run layers per stage of those counts (UINT32_MAX on the other devices'
 * stages); 0 stops and forgets them. The records kept, and record i's
 * counts (into `stages` values) and bound. */
PSCHED_INTERNAL void psched__devsearch_test_record(size_t max, uint32_t stages);
PSCHED_INTERNAL size_t psched__devsearch_test_records(void);
PSCHED_INTERNAL double psched__devsearch_test_record_at(size_t i, uint32_t *counts);
#endif
