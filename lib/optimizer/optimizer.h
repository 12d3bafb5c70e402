/* The optimizer's internal header (one per folder; the model has its
 * own, model.h, because it depends on nothing here). Not installed.
 *
 * Modules, each depending only on those above it, never back:
 *   model.h/model.c        the model (layer groups, recompute variants)
 *   clock.c                the deadline's clock (and the tests' clock)
 *   fronts.c               recompute frontiers of layer ranges
 *   problem.c              the partition problem: layers, in-flight counts,
 *                          objective weights, solutions, their evaluation
 *   baselines.c            Megatron's even splits, uniform recompute
 *   dp.c                   the stage DP, the min-max split
 *   partition_pair.c       the two-walker DP (two chunks per device)
 *   partition_glpk.c       GLPK: the column MILP's solver
 *   milp.c                 the MILP glue: columns, seed, min memory
 *   pathbound.c/.h         the critical-path (Lagrangian) bound
 *   certify.c              simulated step time: proof or honest gap
 *   result.c               the result object and its getters
 *   partition.c            psched_partition(): checks, method dispatch
 *   plan_search.c          psched_plan_search() over psched_partition()
 *   layout.c               given partitions: evaluation, Megatron-LM layouts
 *   emit.c                 Megatron-LM flags and torchtitan TOML of a result
 *   bound.c                psched_bound() (core only) */
#ifndef PSCHED_OPTIMIZER_H
#define PSCHED_OPTIMIZER_H

#include "model.h"


/* The most layers a model may have to be partitioned (docs/optimizer.md,
 * "Limits"): real models have a few hundred; the tables are sized in
 * size_t from it, and memory stays O(L x stages) plus the capped frontier
 * store. A model may hold more (its count is a uint32_t); partition and
 * plan search refuse it with a message naming both numbers. */
#define PSCHED__PARTITION_MAX_LAYERS 100000u

/* A point of a layer range's recompute frontier: the range's extra
 * backward time and activation bytes for one mix of choices. `prev` is the
 * index of the point of the range one layer shorter it extends (or -1) and
 * `choice` the recompute kind of the range's last layer, so the per-layer
 * choices can be read back. */
typedef struct psched__point {
    double extra, act;
    int32_t prev;
    uint8_t choice;
} psched__point;

/* The recompute frontiers of the ranges that start at one layer: the
 * points of [start, start+len) are pts[first[len] .. first[len+1]), for
 * len 0..maxlen. Built per start and on demand, so the stage DP holds one
 * start's frontiers at a time (memory linear in the layers); the two-chunk
 * DP and the MILP keep a table of every start, capped in points. */
typedef struct psched__fronts {
    psched__point *pts;
    size_t *first;       /* maxlen + 2 entries */
    size_t npts, pcap, fcap;
    uint32_t start, maxlen;
} psched__fronts;

/* The most frontier points the optimizer holds at once, over every start
 * (docs/optimizer.md, "Limits"): 4 Mi points, about 100 MB. Beyond it the
 * longest ranges (or, for one start alone, the rest of its ranges) are left
 * out and the result is no longer claimed optimal. */
#define PSCHED__FRONT_POINT_CAP ((size_t)1 << 22)

/* The problem as the solvers see it. Times and memory of a stage with
 * layers [i, j) and frontier point k: time = base[i..j) + extra_k,
 * memory = param[i..j) + inflight[s] * act_k. */
typedef struct psched__problem {
    uint32_t layers, stages, devices, chunks, microbatches;
    /* Two chains (DualPipe) are solved folded: `stages` are the p layer
     * ranges both chains share (chain 0's stage r and chain 1's stage p + r
     * hold range r), `devices` the p/2 mirrored pairs {k, p-1-k} (which hold
     * the same two ranges, k and p-1-k: a V placement), `microbatches` the
     * m/2 of each chain and inflight[r] the larger of the two stages'
     * counts. plan_stages and plan_devices are the plan's own (equal to
     * stages and devices with one chain); plan_inflight its per-stage
     * counts (NULL with one chain). */
    uint32_t chains, plan_stages, plan_devices;
    double *plan_inflight;
    /* per plan stage: the caller's overlap saving (psched_plan_set_overlap_saving()),
     * NULL when none is set; written with each partition's costs, capped at
     * the stage's shorter op (psched__write_costs()) */
    double *overlap;
    bool allow_empty;
    double limit;        /* device memory, INFINITY when unconstrained */
    double kappa;        /* weight of the fill/drain term */
    double lambda;       /* weight of the largest stage against the largest device */
    double *inflight;    /* per stage */
    double nmin;         /* fewest in-flight micro-batches of any stage */
    double wmin;         /* the lightest micro-batch weight (1 without weights): the
                            certificate's bounds charge every micro-batch that much */
    uint32_t *device_of; /* per stage */
    double *time_prefix, *param_prefix; /* L + 1 prefix sums: f+b+w, param */
    double time_total;   /* Σ base time of every layer */
    double *minact_prefix; /* L + 1 prefix sums of each layer's smallest activation */
    double *f_prefix, *b_prefix; /* L + 1 prefix sums of f and of b (no recompute) */
    const psched_model *model;
    uint32_t *group_of;  /* per layer */
    double tau_max;      /* no range slower than this is worth a frontier */
    bool thinned;        /* some range offered only part of its frontier */
    bool truncated;      /* the point cap left some ranges out */
    psched__fronts *table; /* per start 0..L, when built (psched__fronts_table) */
    size_t table_points;
    uint32_t widest;     /* most points of one range in the table */
    double deadline;     /* psched__now() value the whole call must end by */
    size_t certify_ops, certify_nodes; /* the certificate's budgets */
    /* The smallest memory, computed once per call (partition.c): the
     * check before the search, the witness when nothing fits and the
     * figure an infeasible result reports share it. mm_split is the
     * search's best split (minmem.c), when it ran and found one. */
    bool mm_done, mm_searched, mm_search_done;
    double mm_value, mm_search_value;
    struct psched__solution *mm_split;
} psched__problem;

/* A complete solution: per stage a layer range, per layer a recompute
 * choice (a psched_recompute). */
typedef struct psched__solution {
    uint32_t *first, *count; /* per stage */
    uint8_t *choice;         /* per layer */
    bool found;
} psched__solution;

/* The points of [fr->start, fr->start + len), len <= fr->maxlen. */
static inline const psched__point *psched__front(const psched__fronts *fr, uint32_t len,
                                                 uint32_t *n)
{
    *n = (uint32_t)(fr->first[len + 1] - fr->first[len]);
    return fr->pts + fr->first[len];
}

/* The range (problem stage) plan stage s holds. */
static inline uint32_t psched__range_of(const psched__problem *pb, uint32_t s)
{
    return pb->chains == 2 ? s % pb->stages : s;
}

/* The problem device (the mirrored pair with two chains) plan device d
 * belongs to: d itself with one chain; with two, d or p - 1 - d, whichever
 * is in the first half (the pair's index). Range r, chain 0's stage r on
 * plan device r, is on pair psched__pair_of(pb, r). */
static inline uint32_t psched__pair_of(const psched__problem *pb, uint32_t d)
{
    uint32_t p = pb->plan_devices;
    return pb->chains == 2 && d >= p / 2 ? p - 1 - d : d;
}

static inline double psched__range_time(const psched__problem *pb, uint32_t i, uint32_t len)
{
    return pb->time_prefix[i + len] - pb->time_prefix[i];
}

static inline double psched__range_param(const psched__problem *pb, uint32_t i, uint32_t len)
{
    return pb->param_prefix[i + len] - pb->param_prefix[i];
}

/* Stage s's memory holding layers [i, i + len), each at its leanest
 * variant: their parameters and their activations times s's in-flight
 * count. */
static inline double psched__lean_memory_at(const psched__problem *pb, double inflight,
                                            uint32_t i, uint32_t len)
{
    return psched__range_param(pb, i, len) +
           inflight * (pb->minact_prefix[i + len] - pb->minact_prefix[i]);
}

static inline double psched__lean_memory(const psched__problem *pb, uint32_t s, uint32_t i,
                                         uint32_t len)
{
    return psched__lean_memory_at(pb, pb->inflight[s], i, len);
}

/* Monotonic wall-clock seconds (or the test clock, when one is set). */
PSCHED_INTERNAL double psched__now(void);

/* GLPK's time limit (tm_lim, milliseconds) until `deadline` on that clock:
 * at least 1 (a call made late still gets a try), at most 2e9 (an int). */
PSCHED_INTERNAL int psched__glpk_ms_left(double deadline);

/* Test hook: on this thread psched__now() returns clock() instead of the
 * monotonic clock (NULL restores it), so tests check that every method
 * stops at its deadline without depending on wall-clock time. */
PSCHED_INTERNAL void psched__set_test_clock(double (*clock)(void));

static inline bool psched__expired(const psched__problem *pb)
{
    return psched__now() > pb->deadline;
}

/* Build the frontiers of the ranges starting at layer i into fr (its
 * buffers are reused), up to the first length that cannot fit the memory
 * limit or whose base time exceeds pb->tau_max, or whose points would pass
 * `point_cap` (then *capped is set). */
PSCHED_INTERNAL psched_status psched__fronts_build(const psched__problem *pb, uint32_t i,
                                                   size_t point_cap, psched__fronts *fr,
                                                   bool *capped);

PSCHED_INTERNAL void psched__fronts_free(psched__fronts *fr);

/* Per-layer recompute choices of frontier point k of [fr->start, +len). */
PSCHED_INTERNAL void psched__fill_choices(const psched__fronts *fr, uint32_t len, int32_t k,
                                          uint8_t *choice);

/* ---- the exact DP for two chunks per device (partition_pair.c) ---- */

/* True when every device holds stage k (k < p) and either stage p+k (loop)
 * or stage 2p-1-k (V shape): the layouts the two-walker DP handles. */
PSCHED_INTERNAL bool psched__pair_applies(const psched__problem *pb);

/* Outcome of the two-walker DP. `complete` says whether the search ended
 * before the deadline; when it did, `found` means the solution is optimal
 * and !found means no partition fits. When it did not, `bound` is a proven
 * lower bound of the objective. */
typedef struct psched__pair_outcome {
    bool found, complete;
    double objective, bound;
} psched__pair_outcome;

/* Minimize the objective exactly over the pair layouts. `incumbent` is the
 * objective of a known feasible partition (INFINITY when none); sol gets
 * a solution at least as good when one is found. */
PSCHED_INTERNAL psched_status psched__pair_solve(const psched__problem *pb, double incumbent,
                                                 psched__solution *sol,
                                                 psched__pair_outcome *out);

/* Smallest largest device memory over the pair layouts, every layer at its
 * leanest variant. When the limit is met, *value may be any fitting figure
 * <= limit (the exact minimum is only needed for infeasible limits);
 * otherwise the exact minimum. NAN when the deadline passed first. */
PSCHED_INTERNAL psched_status psched__pair_min_memory(const psched__problem *pb, double *value);

/* Smallest largest device memory over every split of any placement, every
 * layer at its leanest variant, exactly, when the layers between the first
 * and the last are identical (psched__run_shape(); minmem.c), and with
 * sol (NULL: none; initialized for the problem's stages and layers) a
 * split that takes it; *done false (*value and sol untouched) when the
 * model is not of that shape. */
PSCHED_INTERNAL psched_status psched__run_min_memory(const psched__problem *pb,
                                                     psched__solution *sol, double *value,
                                                     bool *done);

/* Smallest largest device memory over every split of any model and
 * placement, every layer at its leanest variant, by a depth-first search
 * over the stage boundaries (minmem.c), given a third of the time left
 * and a step cap. *value is the best split's figure (NAN if it found
 * none) and sol (initialized for the problem's stages and layers) that
 * split; *done is true when the search ended,
 * so *value is the minimum. Not with empty stages allowed (*done false,
 * *value NAN). */
PSCHED_INTERNAL psched_status psched__search_min_memory(const psched__problem *pb,
                                                        psched__solution *sol, double *value,
                                                        bool *done);

/* One MILP column: stage `stage` takes layers [first, first+len) with the
 * recompute mix of frontier point `point`, costing `time` per micro-batch
 * and `mem` bytes on its device. */
typedef struct psched__column {
    uint32_t stage, first, len;
    int32_t point;
    double time, mem;
} psched__column;

/* The column MILP: choose one column per stage such that consecutive
 * stages' ranges meet; minimize zcoef·max(max_d Σ time, lambda·max_s
 * time) + kappa·Σ time subject to Σ mem <= limit per device, or
 * (minimize_memory) max_d Σ mem. */
typedef struct psched__milp {
    uint32_t stages, devices, layers;
    const uint32_t *device_of;
    const psched__column *cols;
    size_t ncols;
    double limit, zcoef, kappa, lambda;
    bool minimize_memory;
    const int32_t *seed; /* per stage a column index, or NULL */
} psched__milp;

/* Solve the column MILP with GLPK. On PSCHED_OK: *found says whether a
 * solution exists (chosen[] then holds one column index per stage),
 * *optimal whether it is proven, *bound the best proven lower bound of the
 * objective (-INFINITY when none). ESOLVER when GLPK
 * fails (the process is unharmed), EUNSUPPORTED in a build without GLPK. */
PSCHED_INTERNAL psched_status psched__milp_solve(const psched__milp *in, double time_limit,
                                                 int32_t *chosen, bool *found, bool *optimal,
                                                 double *bound);

/* Test hook: cap GLPK's memory at `mb` megabytes for the following solves
 * on this thread (0 lifts the cap). */
PSCHED_INTERNAL void psched__glpk_set_mem_limit(int mb);

/* Test hook: on this thread the ILP method solves the column MILP (seeded
 * by the stage DP) even where a DP is exact, so tests can check the MILP
 * against the DPs and the brute-force oracle. */
PSCHED_INTERNAL void psched__partition_force_milp(bool on);

/* Test hook: on this thread the ILP and DP methods return the solver's
 * answer for the estimate without the simulated-time certificate, so
 * tests can check the solvers against the estimate's oracle. */
PSCHED_INTERNAL void psched__partition_skip_certify(bool on);

/* psched_partition(), and when !want_min_memory an infeasible result
 * leaves min_memory NAN instead of computing it (the planner's baseline
 * needs only whether the even split fits); `planner` gives the
 * certificate the planner's smaller budgets. */
PSCHED_INTERNAL psched_status psched__partition(const psched_model *model,
                                                const psched_plan *plan, const char *schedule,
                                                const psched_partition_options *options,
                                                bool want_min_memory, bool planner,
                                                psched_partition_result **out);

/* True when the build has GLPK. */
PSCHED_INTERNAL bool psched__have_glpk(void);

/* ---- the problem (problem.c) ---- */

static inline const psched__group *psched__layer_group(const psched__problem *pb, uint32_t layer)
{
    return &pb->model->groups[pb->group_of[layer]];
}

PSCHED_INTERNAL void psched__problem_free(psched__problem *pb);

/* Prefix sums and the layer-to-group map of the model. */
PSCHED_INTERNAL psched_status psched__problem_layers(psched__problem *pb,
                                                     const psched_model *model);

/* Generate the schedule with unit costs: stage map, in-flight counts,
 * kappa and lambda; *resolved gets the resolved plan (caller's comm). */
PSCHED_INTERNAL psched_status psched__probe_schedule(const psched_plan *plan, const char *name,
                                                     psched__problem *pb,
                                                     psched_plan **resolved);

/* Refuse all-zero times and sums that overflow (after probe and layers). */
PSCHED_INTERNAL psched_status psched__problem_check(const psched__problem *pb);

PSCHED_INTERNAL psched_status psched__solution_init(psched__solution *sol, uint32_t stages,
                                                    uint32_t layers);
PSCHED_INTERNAL void psched__solution_free(psched__solution *sol);
PSCHED_INTERNAL void psched__solution_copy(const psched__problem *pb,
                                           const psched__solution *from, psched__solution *to);

/* Figures of a solution (arrays sized by the caller: stages, devices). */
typedef struct psched__evaluation {
    double *stage_time, *stage_mem, *dev_param, *dev_mem, *dev_time;
    double objective, max_mem;
} psched__evaluation;

/* Allocate the arrays of `ev` for pb's stages and devices (zeroed); free
 * them with psched__evaluation_free(), also after a failure. */
PSCHED_INTERNAL psched_status psched__evaluation_init(const psched__problem *pb,
                                                      psched__evaluation *ev);
PSCHED_INTERNAL void psched__evaluation_free(psched__evaluation *ev);
PSCHED_INTERNAL void psched__evaluate(const psched__problem *pb, const psched__solution *sol,
                                      psched__evaluation *ev);
PSCHED_INTERNAL bool psched__fits(const psched__problem *pb, double mem);

/* The memory a device may hold: the limit with the relative slack of
 * 1e-12 every comparison with it shares (psched__fits()), so a figure
 * summed in another order than the smallest memory's still fits at a
 * limit set to that figure. */
static inline double psched__room(const psched__problem *pb)
{
    return pb->limit * (1 + 1e-12);
}

/* Each stage's summed costs (recompute time added to B) and activation
 * bytes (held from F to W) into the plan. */
PSCHED_INTERNAL psched_status psched__write_costs(const psched__problem *pb,
                                                  const psched__solution *sol, psched_plan *plan);

/* ---- frontiers (fronts.c) ---- */

/* Every start's frontiers into pb->table, within PSCHED__FRONT_POINT_CAP. */
PSCHED_INTERNAL psched_status psched__fronts_table(psched__problem *pb);

/* Fastest point of [fr->start, +len) fitting `budget` on stage s, or -1. */
PSCHED_INTERNAL int32_t psched__first_fitting(const psched__problem *pb, uint32_t s,
                                              const psched__fronts *fr, uint32_t len,
                                              double budget);

/* Range lengths stage s may take from fr->start. */
PSCHED_INTERNAL void psched__length_bounds(const psched__problem *pb, uint32_t s,
                                           const psched__fronts *fr, uint32_t *lo,
                                           uint32_t *hi);

/* ---- baselines (baselines.c) ---- */

PSCHED_INTERNAL psched_status psched__even_split(const psched__problem *pb, bool accounted,
                                                 psched__solution *sol);
PSCHED_INTERNAL void psched__uniform_recompute(const psched__problem *pb, psched__solution *sol,
                                               psched__evaluation *ev);

/* ---- DPs (dp.c) ---- */

PSCHED_INTERNAL psched_status psched__stage_dp(const psched__problem *pb, psched__solution *sol,
                                               bool *complete);
PSCHED_INTERNAL double psched__minmax_split(const psched__problem *pb, bool memory,
                                            psched__solution *sol, psched_status *status);
/* The recompute kind of a group with the smallest activations (the first
 * on a tie: no recompute where it saves nothing); problem.c. */
PSCHED_INTERNAL uint8_t psched__lean_kind(const psched__group *g);
PSCHED_INTERNAL psched_status psched__lean_split(const psched__problem *pb, psched__solution *sol,
                                                 double *out);

/* ---- the MILP glue (milp.c) ---- */

typedef struct psched__ilp_outcome {
    bool optimal;
    double gap;
} psched__ilp_outcome;

PSCHED_INTERNAL psched_status psched__solve_ilp(psched__problem *pb, psched__evaluation *ev,
                                                const psched__solution *seed_in,
                                                double seed_objective, psched__solution *sol,
                                                psched__ilp_outcome *res);
PSCHED_INTERNAL psched_status psched__milp_min_memory(const psched__problem *pb, double *out);
/* Test hook: the most columns a MILP of this thread listed since the last
 * call, and in *cut whether a list stopped at its cap (the columns whose
 * setup fits the MILP's share of the time left); both are reset. */
PSCHED_INTERNAL size_t psched__milp_test_most_columns(bool *cut);

/* ---- the certificate for the simulated step time (certify.c) ---- */

/* Simulated ops and search nodes one certification may spend
 * (docs/optimizer.md): enough to enumerate every small instance, bounded
 * for large ones (then the result is `feasible` with its gap). */
#define PSCHED__CERTIFY_OPS ((size_t)1 << 23)
#define PSCHED__CERTIFY_NODES ((size_t)1000000)
/* The planner's, per candidate (it certifies many; issue 17 item 4's; the
 * nodes enough for the Mixtral-like profile's four-chunk candidates). */
#define PSCHED__CERTIFY_OPS_PLANNER ((size_t)1 << 20)
#define PSCHED__CERTIFY_NODES_PLANNER ((size_t)200000)

typedef struct psched__certificate {
    bool proven;      /* no partition simulates faster than `makespan` */
    double makespan;  /* simulated step time of the returned solution */
    double bound;     /* proven lower bound of every partition's step time */
    double count_bound; /* the layer count bound alone (certify.c; 0: does not apply):
                           the least T at which every device's start, m x its layers'
                           time and tail fit, so T + c bounds a schedule that adds
                           c of work to every device between its first and last op */
    size_t simulated; /* partitions simulated */
} psched__certificate;

/* Among the candidates (each fitting the memory limit, any may be
 * !found) keep the fastest by simulated step time, then search every
 * contiguous split x recompute mix (branch and bound on lower bounds of
 * the step time) within PSCHED__CERTIFY_OPS and the deadline; sol gets
 * the fastest found. `plan` is the resolved plan with the caller's comm. */
PSCHED_INTERNAL psched_status psched__certify(psched__problem *pb, const char *name,
                                              const psched_plan *plan,
                                              const psched__solution *const *candidates,
                                              size_t count, psched__solution *sol,
                                              psched__certificate *out);

/* A lower bound of every partition's step time that needs no search (the
 * gap of the uncertified methods even, even-accounted and dp-time): the
 * shared work m·max(Σ time / p, slowest layer), one micro-batch's Σ f +
 * Σ b, each micro-batch at the lightest weight; with an overlap saving the
 * busy time less the most each F op can hide. */
PSCHED_INTERNAL double psched__partition_floor(const psched__problem *pb);

/* Test hooks: on this thread the certificate's search stops after
 * node_cap nodes (0: its budget), and with `check` every fitting partition
 * it simulates is checked against every multiplier set of the
 * critical-path bound (pathbound.c); psched__certify_test_worst() gives the
 * largest (bound - step time) / step time seen (-INFINITY: none) and
 * *checks how many. */
PSCHED_INTERNAL void psched__certify_test_hooks(size_t node_cap, bool check);
PSCHED_INTERNAL double psched__certify_test_worst(size_t *checks);
/* Test hook: on this thread the certificate stops after its local search
 * (no bounds, no search: the result is the local search's, not proven). */
PSCHED_INTERNAL void psched__certify_test_improve_only(bool only);
/* Test hook: with psched__certify_test_improve_only(), mode 1 runs the
 * descents from the balanced counts (certify.c, count_descents()) after
 * the local search too, and the result is the faster; mode 2 the same
 * without their second orientation (each device's larger shares where the
 * most micro-batches are in flight); 0 neither. */
PSCHED_INTERNAL void psched__certify_test_descents(int mode);
/* Test hook: generate every partition's schedule again even when the
 * generator's order ignores the costs (the result must not change). */
PSCHED_INTERNAL void psched__certify_test_regenerate(bool always);
/* Test hook: off = true skips the device search (devsearch.h) on this
 * thread, so the other bounds and the search are exercised. */
PSCHED_INTERNAL void psched__certify_test_no_device_search(bool off);
/* Test hooks: off = true skips the device search's bound passes on this
 * thread; the count of passes that ended below their threshold since
 * psched__certify_test_hooks(). */
PSCHED_INTERNAL void psched__certify_test_no_bound_passes(bool off);
PSCHED_INTERNAL size_t psched__certify_test_bound_passes(void);
/* Test hook: off = true skips the local search on this thread (the
 * search and the bounds start from the solver's and the baselines' best). */
PSCHED_INTERNAL void psched__certify_test_no_improve(bool off);
/* Test hook: the certificate starts from the slowest of the candidates
 * alone instead of the fastest (the device search's polish then has
 * something to do). */
PSCHED_INTERNAL void psched__certify_test_slowest_start(bool slowest);
/* Test hook: the layer count bound of the last certificate on this thread
 * (0: it did not apply or was not computed). */
PSCHED_INTERNAL double psched__certify_test_count_bound(void);
/* Test hook: the count bound takes each layer's recompute whole up to
 * this many run layers per device (UINT32_MAX: its own limit, 256), the
 * fractional mix beyond. */
PSCHED_INTERNAL void psched__certify_test_whole_max(uint32_t layers);
/* Test hook: the balanced-count candidate of the last certificate on this
 * thread (per stage its layer count, per layer its recompute kind); false
 * when it made none (or it has more stages or layers than the hook keeps,
 * or than `stages` and `layers`). */
PSCHED_INTERNAL bool psched__certify_test_candidate(uint32_t *count, uint32_t stages,
                                                    uint8_t *choice, uint32_t layers);

/* ---- the result (result.c) ---- */

struct psched_partition_result {
    psched_solve_status status;
    double gap, objective, solve_time, min_memory, makespan, bubble;
    uint32_t stages, devices, layers;
    bool has_partition;
    uint32_t *first, *count;
    uint8_t *choice;
    double *stage_time, *stage_mem;
    double *dev_param, *dev_mem, *dev_peak;
    psched_plan *plan;
    char *schedule; /* the generator's name, for the emitters (layout.c) */
    double limit;   /* the caller's device memory limit */
    double count_bound; /* the certificate's layer count bound (0: none; plan_search.c) */
};

PSCHED_INTERNAL psched_partition_result *psched__result_alloc(const psched__problem *pb);

/* Copy the solution in, write its costs into *plan (taken over) and
 * simulate it. Nothing when !sol->found. */
PSCHED_INTERNAL psched_status psched__result_fill(const psched__problem *pb,
                                                  const psched__solution *sol, const char *name,
                                                  psched_plan **plan, psched__evaluation *ev,
                                                  psched_partition_result *r);

/* ---- given partitions and Megatron-LM layouts (layout.c) ---- */

/* Megatron-LM's recompute options as one setting: none, selective (every
 * transformer layer with a selective variant), full uniform with one layer
 * per group (every transformer layer), or full block N (the first N
 * transformer layers of every virtual stage). */
typedef enum psched__rc_kind {
    PSCHED__RC_NONE,
    PSCHED__RC_SELECTIVE,
    PSCHED__RC_FULL,
    PSCHED__RC_BLOCK
} psched__rc_kind;

typedef struct psched__rc_setting {
    psched__rc_kind kind;
    uint32_t layers; /* N of block */
} psched__rc_setting;

/* The layout letter of every group of the model (E, t, m or L): the map
 * "c=GROUP,..." first, then the names embedding (E), head, loss, output
 * (L), mtp (m), everything else t. EINVAL naming a bad map entry. */
PSCHED_INTERNAL psched_status psched__layout_classes(const psched_model *model, const char *map,
                                                     char *cls);

/* The model's layers as layout letters and groups; e_marker (l_marker)
 * when no layer is E (L): Megatron-LM's E (L) then stands for nothing of
 * the profile. EINVAL when an E or L layer is not the single first (last). */
typedef struct layer_classes {
    char *of_layer;
    uint32_t *group_of;
    bool e_marker, l_marker;
} layer_classes;

PSCHED_INTERNAL psched_status psched__layer_classes(const psched_model *model, const char *cls,
                                                    layer_classes *lc);
PSCHED_INTERNAL void psched__layer_classes_free(layer_classes *lc);

/* Per-layer choices of a setting over the stages [first[s], +count[s]);
 * EINVAL (message naming the group) when a layer it recomputes has no
 * such variant. */
PSCHED_INTERNAL psched_status psched__rc_choices(const psched_model *model, const char *cls,
                                                 const uint32_t *first, const uint32_t *count,
                                                 uint32_t stages, psched__rc_setting set,
                                                 uint8_t *choice);

/* Evaluate a given partition (per stage a layer count, per layer a
 * psched_recompute): psched_partition_evaluate() with uint8_t choices. */
PSCHED_INTERNAL psched_status psched__evaluate_given(const psched_model *model,
                                                     const psched_plan *plan,
                                                     const char *schedule,
                                                     const uint32_t *counts, uint32_t stages,
                                                     const uint8_t *choice,
                                                     psched_partition_result **out);

#endif
