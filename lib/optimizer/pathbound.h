/* The critical-path (Lagrangian) bound of the partition certificate
 * (pathbound.c). Used by certify.c only. Not installed. */
#ifndef PSCHED_PATHBOUND_H
#define PSCHED_PATHBOUND_H

#include "optimizer.h"

/* A pool of paths of the schedule's DAG, each as per problem stage r the
 * number of its F, B and W ops (coef[3r], coef[3r+1], coef[3r+2]) and its
 * latencies (coef[3S]); and the cuts of the master LP: partitions as
 * vectors x (per stage its F, B (with recompute) and W time, x[3r..3r+2];
 * per device its memory over the limit less one, x[3S + d], 0 without a
 * limit). */
typedef struct psched__paths {
    uint32_t S, D;
    size_t stride, xstride;
    size_t n, cap;
    double *coef;
    bool *critical; /* per path: a simulation's critical path (not only a device's) */
    size_t nx, xcap;
    double *xv;
    bool memory; /* a finite memory limit: multipliers on it */
} psched__paths;

/* Multipliers and the DP they give: the weight of each stage's F, B, W
 * time (w[3s..3s+2]), μ per device (of memory over the limit), the
 * constant Σ λ K − Σ μ, and g[s·(L+1) + a]: the least weighted cost of
 * stages s.. starting at layer a (INFINITY: none within the frontier
 * table). value = constant + g[0]: a lower bound of every fitting
 * partition's step time that uses only the table's ranges. arg_len and
 * arg_k (NULL when not kept): the DP's choice per (s, a). */
typedef struct psched__mult {
    double *w, *mu, *g;
    uint32_t *arg_len;
    int32_t *arg_k;
    double constant, value;
} psched__mult;

PSCHED_INTERNAL psched_status psched__paths_init(psched__paths *pp, const psched__problem *pb);
PSCHED_INTERNAL void psched__paths_free(psched__paths *pp);

/* Whether the path bound holds: the plain cost model and compute ops only
 * (the caller also checks that the order does not depend on the costs). */
PSCHED_INTERNAL bool psched__paths_applies(const psched_plan *plan, const psched_schedule *sched);

/* The critical path of a simulated schedule into the pool, and with
 * every_device the longest path into each device's last op; *added false
 * when the pool held them all already. */
PSCHED_INTERNAL psched_status psched__paths_extract(psched__paths *pp, const psched__problem *pb,
                                                    const psched_schedule *sched,
                                                    const psched_report *rep, bool every_device,
                                                    bool *added);

/* x of a solution (3S + D doubles). */
PSCHED_INTERNAL void psched__paths_vector(const psched__problem *pb, const psched__solution *sol,
                                          double *x);
PSCHED_INTERNAL psched_status psched__paths_add_cut(psched__paths *pp, const double *x);
PSCHED_INTERNAL double psched__paths_length(const psched__paths *pp, size_t path, const double *x);
/* The longest path of the pool at x among those with use[path] (NULL:
 * all; 0 for none). */
PSCHED_INTERNAL double psched__paths_max(const psched__paths *pp, const bool *use,
                                         const double *x);

/* argmin: keep the DP's choices for psched__mult_argmin() (the node
 * bounds' sets need only g). */
PSCHED_INTERNAL psched_status psched__mult_init(psched__mult *m, const psched__problem *pb,
                                                bool argmin);
PSCHED_INTERNAL void psched__mult_free(psched__mult *m);
PSCHED_INTERNAL void psched__mult_copy(const psched__problem *pb, const psched__mult *from,
                                       psched__mult *to);

/* Weighted cost of stage s holding [i, i + len) with recompute time
 * `extra` and activation bytes `act` per micro-batch. */
PSCHED_INTERNAL double psched__mult_stage(const psched__problem *pb, const psched__mult *m,
                                          uint32_t s, uint32_t i, uint32_t len, double extra,
                                          double act);

/* The weighted cost of a complete solution (from its choices): at most
 * its simulated step time when it fits (the soundness the tests check). */
PSCHED_INTERNAL double psched__mult_value(const psched__problem *pb, const psched__mult *m,
                                          const psched__solution *sol);

/* The DP over pb->table (each range alone must fit the memory limit). */
PSCHED_INTERNAL void psched__mult_dp(const psched__problem *pb, psched__mult *m);

/* The DP's minimiser into sol (false when there is none). */
PSCHED_INTERNAL bool psched__mult_argmin(const psched__problem *pb, const psched__mult *m,
                                         psched__solution *sol);

/* Choose λ over the pool and μ in [0, mu_cap] by the master LP over the
 * cuts (GLPK), run the DP for them into m; *upper gets the LP's value (an
 * upper bound of every choice's DP value over the cuts so far, INFINITY
 * without GLPK, where m gets the best single path's DP); xi (NULL, or nx
 * entries) the cuts' weights in the LP's dual: the mix of partitions whose
 * averaged costs price new paths. */
PSCHED_INTERNAL psched_status psched__mult_choose(const psched__problem *pb,
                                                  const psched__paths *pp, double mu_cap,
                                                  psched__mult *m, double *upper,
                                                  double *xi);

/* The DP of one path of the pool alone (λ = 1 on it, μ = 0) into m. */
PSCHED_INTERNAL void psched__mult_single(const psched__problem *pb, const psched__paths *pp,
                                         size_t path, psched__mult *m);

/* The run MILP (docs/optimizer.md, "Where v = 4 is proven"): a model
 * whose layers 1 .. L-2 are one group (identical layers), layer 0 and
 * layer L-1 either in it or alone (an embedding, a head). A partition is
 * then, per stage, how many layers of the run it holds with each recompute
 * variant (layer 0 always goes to stage 0, layer L-1 to the last), every
 * stage cost is linear in those counts, and the least step time over the
 * pool's paths, min z s.t. z >= L_P(x(k)) for every P, memory rows per
 * device, is a MILP of S x variants integers (GLPK's branch and cut): a
 * lower bound of every fitting partition's step time (each path of the
 * pool is a path of every partition) that, unlike the Lagrangian DP, sees
 * that layers are whole. */
typedef struct psched__run {
    uint32_t first, count; /* the run: layers [first, first + count) */
    bool head, tail;       /* layer 0 / layer L-1 outside the run */
} psched__run;

/* Whether pb has that shape (and at least two stages, none empty). */
PSCHED_INTERNAL bool psched__run_shape(const psched__problem *pb, psched__run *run);

/* The MILP over the pool's paths with use[path] (NULL: all), or, with an
 * order `dag` (NULL: the paths), over its whole DAG (a column per op's
 * end, a row per dependency: its optimum is the least step time of every
 * partition with that order, docs/optimizer.md "The run MILP"; with
 * stride > 1 only the inputs of each chain's micro-batches 0, stride,
 * 2·stride, … and its last, a relaxation whose optimum is a lower bound),
 * for step
 * times below `below` only (z < below; each device's own work, m x its
 * layers' time, below it too), into sol (its minimiser) and *z (GLPK's optimum,
 * a lower bound within its tolerances); `start` (NULL: none), a partition,
 * is GLPK's first incumbent, at its step time over the DAG (its ends and
 * step time from `start_times`, its simulation with the order `dag`;
 * without them no start is taken) or its longest path of the rows over
 * the paths, and z may reach that value (an optimum there means that no
 * partition is below `below`); *solved false when GLPK did not
 * prove an optimum by `until` (a psched__now() value) (or is absent); *none when GLPK proved
 * that no partition is below `below` over those paths (or that DAG). When GLPK stopped
 * first, sol->found says whether its incumbent is in sol, and *tree_bound
 * gets what its search tree proves (0: nothing): the
 * least of the largest open-node bound it saw, its incumbent and `below`,
 * less 10^-6 of it (GLPK's tolerances), a lower bound of every fitting partition's step
 * time (those at `below` or more included). `found` (NULL: none) gets
 * each integer solution GLPK finds on its way and, when it stopped first,
 * its last incumbent, each a partition of every layer (GLPK's tolerances
 * may let one a little over a memory limit), in `sol`; a status it returns
 * stops the search and is returned. */
typedef psched_status (*psched__run_found)(void *ctx, const psched__solution *sol);
PSCHED_INTERNAL psched_status psched__run_milp(const psched__problem *pb,
                                               const psched__paths *pp,
                                               const psched__run *run, const bool *use,
                                               const psched_schedule *dag, uint32_t stride,
                                               double below, double until,
                                               const psched__solution *start,
                                               const psched_report *start_times,
                                               psched__run_found found, void *found_ctx,
                                               psched__solution *sol, double *z, bool *solved,
                                               bool *none, double *tree_bound);

/* The units of an order's DAG: its ops, an overlapped pair counted once
 * (the size of the run MILP's DAG rows, psched__run_milp()). */
PSCHED_INTERNAL size_t psched__run_dag_units(const psched_schedule *sched);

/* Which rows the run MILP takes for an order of `units` units
 * (psched__run_dag_units()) and `chunks` stages per device with `left`
 * seconds left: the stride of its DAG (psched__run_milp()'s `stride`; 1:
 * the whole DAG, exact), or 0 for the pool's paths (the rule and its
 * measurements: certify.c). */
PSCHED_INTERNAL uint32_t psched__run_dag_stride(size_t units, uint32_t chunks, double left);

/* Test hook: GLPK's search stops after this many node selections (0: by
 * the time limit only), this thread. */
PSCHED_INTERNAL void psched__run_milp_test_selects(size_t selects);

/* Test hook: partitions the run MILP proved optimal on this thread (since
 * psched__certify_test_hooks()). */
PSCHED_INTERNAL size_t psched__certify_test_run_proofs(void);

/* Test hook: the bound the last certificate took from a stopped run
 * MILP's tree (0: none), this thread. */
PSCHED_INTERNAL double psched__certify_test_run_tree(void);

/* Test hooks: whether the run MILP takes the reference order's DAG as its
 * rows (0: by psched__run_dag_stride(), 1: never, the paths, 2:
 * always), this thread; and the optimum of the DAG's MILP when the last
 * certificate solved it to the end (0: it did not). */
PSCHED_INTERNAL void psched__certify_test_run_dag(int mode);
/* Test hook: with mode 2 above, the stride of the DAG the run MILP takes
 * (psched__run_milp()'s `stride`; 0 or 1: the whole DAG), this thread. */
PSCHED_INTERNAL void psched__certify_test_run_stride(uint32_t stride);
PSCHED_INTERNAL double psched__certify_test_run_dag_z(void);

/* Test hook: the DAG rows built with one column per pair of mirrored
 * units (a mirror-symmetric two-chain order), this thread. */
PSCHED_INTERNAL size_t psched__run_dag_test_mirrored(void);

/* Test hook: the run MILP's integer solutions handed to the certificate
 * (psched__run_milp()'s `found`) that became the best (since
 * psched__certify_test_hooks()), this thread. */
PSCHED_INTERNAL size_t psched__certify_test_run_incumbents(void);

/* Test hooks: the integer solutions GLPK found on the run MILP's way and
 * the certificate simulated (since psched__certify_test_hooks()), this
 * thread; and the i-th (per stage its layer count, per layer its
 * recompute variant), false when i is past the first 32 or its plan has
 * more than 16 stages or 64 layers, or more than `stages` and `layers`. */
PSCHED_INTERNAL size_t psched__certify_test_run_found(void);
PSCHED_INTERNAL bool psched__certify_test_run_solution(size_t i, uint32_t *count,
                                                       uint32_t stages, uint8_t *choice,
                                                       uint32_t layers);

#endif
