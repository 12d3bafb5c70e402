/* "Optimal" for the simulated step time (issue 17 item 4). The solvers
 * minimise a linear estimate of the step time; the simulator is the
 * judge. This module simulates the candidates (the solver's partition and
 * the baselines that fit) and keeps the fastest, then searches every
 * contiguous split x recompute mix by branch and bound: a partial
 * partition is dropped when a lower bound of the step time of every
 * completion reaches the best simulated time; a complete one is simulated.
 * When the search ends the best is proven optimal; when the op budget or
 * the deadline stops it, the result keeps an honest gap to a bound every
 * partition shares.
 *
 * Lower bounds (every schedule of the plan, comm latency >= 0 only adds;
 * with micro-batch weights every micro-batch counts pb->wmin, the
 * lightest weight, where the bounds below say one):
 *  - a device runs its stages' m micro-batches of F, B, W one at a time,
 *    and none before F of the first layer it holds has run for some
 *    micro-batch: start_d + m·Σ_{s on d} (f_s + b_s + w_s), start_d = Σ f
 *    of the layers before its first stage;
 *  - the last B of stage s ends after all of stage s's F and B, which
 *    start no earlier than Σ f before it, and is followed by the B of every
 *    earlier layer for the same micro-batch: Σ f_<i + m·(f_s + b_s) + Σ b_<i;
 *  - the devices share all the work: m·(Σ time + recompute) / p;
 *  - one micro-batch runs every F, then every B: Σ f + Σ b;
 *  - psched_bound() of the partial partition (below);
 *  - the layer count: a device's remaining stages hold at most the
 *    cheapest layers left that fit its capacity under the best time
 *    (count_cut);
 *  - for a fixed-order generator and the plain cost model, the
 *    critical-path (Lagrangian) bound of pathbound.c: a DP per multiplier
 *    set, O(1) per node and set (path_root, path_library).
 * Where the layers between the first and the last are identical (a run),
 * two exact methods may prove the best before the search: the run MILP
 * (pathbound.c, run_certify) and the device search (devsearch.c,
 * device_certify), which places whole devices and bounds each node by the
 * fixed order's step time with the devices not placed at their least cost.
 *
 * Recompute mixes: a fixed-order generator's step time can only grow when
 * a stage's cost grows, so per range only the frontier's points (no mix
 * faster and leaner) are tried, and with one stage per device only the
 * fastest that fits. A generator whose order depends on the costs (zb's
 * greedy) is detected by comparing its order for two cost sets; then the
 * result is never claimed proven. */
#include "devsearch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct certify {
    psched__problem *pb;
    const char *name;
    psched_plan *work;       /* resolved plan the candidates' costs go into */
    psched_plan *partial;    /* the partial partition's costs, 0 on stages not placed */
    bool use_partial;        /* psched_bound() of `partial` bounds every completion */
    psched__solution cur, best_sol;
    double best;             /* best simulated step time */
    double *dev_work, *dev_mem, *dev_start; /* per device, of the partial partition */
    uint32_t *dev_stages;    /* stages of the device placed so far */
    bool *last_on_device;    /* per stage: no later stage on its device */
    uint32_t *group_end;     /* per layer group: one past its last layer */
    uint32_t *lens;          /* per depth: range lengths in the order tried */
    double extra_sum;        /* recompute time of the partial partition */
    size_t ops, budget, simulated, nodes;
    bool stopped;            /* budget or deadline */
    psched_status st;
    /* the critical-path bound (pathbound.c), when it holds */
    bool use_paths;
    uint32_t run_stride;     /* > 0: the run MILP takes ref's DAG as its rows, of every
                                micro-batch (1) or every run_stride-th (run_certify()) */
    psched_schedule *ref;    /* the order every partition's schedule must have */
    psched__paths paths;
    psched__mult mult, trial;
    bool have_mult;
    psched__mult *lib;       /* the node bounds' multipliers: the best, then single paths */
    size_t nlib, lib_cap;
    double *pre;             /* [t·(S+1) + depth]: lib[t]'s weighted cost of the stages placed */
    double *stage_w;         /* [t]: lib[t]'s cost of the stage being placed */
    double *xbuf;            /* a partition's vector (3S + D) */
    double path_lb;          /* best value of the Lagrangian DP */
    double count_lb;         /* the count bound's value for the tails as they
                                are (count_value(); NAN: not computed) */
    size_t path_nodes;       /* nodes cut by it */
    bool order_changed;      /* some partition's order differed from the reference */
    bool searching;          /* the search runs: new paths join the library */
    psched_schedule *static_order; /* the order when the generator reads no stage cost or
                                      memory delta (every partition's), else NULL */
    uint32_t *by_time;       /* layer groups by base time, rising (when few) */
    uint32_t *left_on;       /* per device: its stages not placed yet */
    size_t count_cuts;       /* nodes cut by the layer count bound */
    int64_t *tail_stage;     /* per device: the stage of its last op when that is a
                                backward (the stages before it run their backward
                                after it), else -1; NULL when unknown */
    bool tail_w;             /* the order has no B op: each backward after a
                                device's last op is a BW (b + w) */
    void *dev_state;         /* the device search stopped early, to resume (devsearch.h) */
    double dev_lb;           /* the device search's bound when it stopped early (0: none;
                                the reference order's, as path_lb) */
} certify;

/* Test hooks (optimizer.h): a node cap and the soundness check. */
static _Thread_local size_t test_node_cap;
static _Thread_local bool test_check;
static _Thread_local double test_worst = -INFINITY;
static _Thread_local size_t test_checks;
static _Thread_local size_t test_run_proofs;
static _Thread_local double test_run_tree;
static _Thread_local int test_run_dag; /* 0: by psched__run_dag_stride(), 1: never, 2: always */
static _Thread_local double test_run_dag_z;
static _Thread_local uint32_t test_run_stride;
static _Thread_local size_t test_run_incumbents;
static _Thread_local bool test_improve_only;
/* with test_improve_only, count_descents() too: 1 as it runs, 2 without
 * its second orientation */
static _Thread_local int test_descents;
static _Thread_local bool test_regenerate;
static _Thread_local bool test_no_device_search;
static _Thread_local bool test_no_bound_passes;
static _Thread_local size_t test_bound_passes;
static _Thread_local bool test_no_improve;
static _Thread_local bool test_slowest_start;
static _Thread_local double test_count_bound;
static _Thread_local uint32_t test_whole_max = UINT32_MAX; /* UINT32_MAX: COUNT_WHOLE_MAX */
/* the last balanced-count candidate (count_candidate()), when small */
#define TEST_CAND_STAGES 64
#define TEST_CAND_LAYERS 256
static _Thread_local bool test_cand_made;
static _Thread_local uint32_t test_cand_count[TEST_CAND_STAGES];
static _Thread_local uint8_t test_cand_choice[TEST_CAND_LAYERS];
/* the run MILP's integer solutions handed to run_found(), the first few
 * when small */
#define TEST_FOUND_MAX 32
#define TEST_FOUND_STAGES 16
#define TEST_FOUND_LAYERS 64
static _Thread_local size_t test_found;
static _Thread_local uint32_t test_found_count[TEST_FOUND_MAX][TEST_FOUND_STAGES];
static _Thread_local uint8_t test_found_choice[TEST_FOUND_MAX][TEST_FOUND_LAYERS];
static _Thread_local bool test_found_kept[TEST_FOUND_MAX];

void psched__certify_test_no_device_search(bool off)
{
    test_no_device_search = off;
}

void psched__certify_test_no_bound_passes(bool off)
{
    test_no_bound_passes = off;
}

size_t psched__certify_test_bound_passes(void)
{
    return test_bound_passes;
}

void psched__certify_test_no_improve(bool off)
{
    test_no_improve = off;
}

void psched__certify_test_slowest_start(bool slowest)
{
    test_slowest_start = slowest;
}

double psched__certify_test_count_bound(void)
{
    return test_count_bound;
}

void psched__certify_test_whole_max(uint32_t layers)
{
    test_whole_max = layers;
}

bool psched__certify_test_candidate(uint32_t *count, uint32_t stages, uint8_t *choice,
                                    uint32_t layers)
{
    if (!test_cand_made || stages > TEST_CAND_STAGES || layers > TEST_CAND_LAYERS)
        return false;
    memcpy(count, test_cand_count, stages * sizeof *count);
    memcpy(choice, test_cand_choice, layers * sizeof *choice);
    return true;
}

void psched__certify_test_regenerate(bool always)
{
    test_regenerate = always;
}

void psched__certify_test_improve_only(bool only)
{
    test_improve_only = only;
}

void psched__certify_test_descents(int mode)
{
    test_descents = mode;
}

size_t psched__certify_test_run_proofs(void)
{
    return test_run_proofs;
}

double psched__certify_test_run_tree(void)
{
    return test_run_tree;
}

void psched__certify_test_run_dag(int mode)
{
    test_run_dag = mode;
}

void psched__certify_test_run_stride(uint32_t stride)
{
    test_run_stride = stride;
}

double psched__certify_test_run_dag_z(void)
{
    return test_run_dag_z;
}

size_t psched__certify_test_run_incumbents(void)
{
    return test_run_incumbents;
}

size_t psched__certify_test_run_found(void)
{
    return test_found;
}

bool psched__certify_test_run_solution(size_t i, uint32_t *count, uint32_t stages,
                                       uint8_t *choice, uint32_t layers)
{
    if (i >= test_found || i >= TEST_FOUND_MAX || !test_found_kept[i] ||
        stages > TEST_FOUND_STAGES || layers > TEST_FOUND_LAYERS)
        return false;
    memcpy(count, test_found_count[i], stages * sizeof *count);
    memcpy(choice, test_found_choice[i], layers * sizeof *choice);
    return true;
}

void psched__certify_test_hooks(size_t node_cap, bool check)
{
    test_node_cap = node_cap;
    test_check = check;
    test_worst = -INFINITY;
    test_checks = 0;
    test_run_proofs = 0;
    test_run_incumbents = 0;
    test_bound_passes = 0;
    test_found = 0;
}

double psched__certify_test_worst(size_t *checks)
{
    if (checks)
        *checks = test_checks;
    return test_worst;
}

/* The library's cap: the best combination and single critical paths, at
 * most 128 (each costs every node that is not cut a step) and at most
 * LIB_BYTES of DP tables. */
#define LIB_MAX 128
#define LIB_BYTES ((size_t)32 << 20)
/* The critical-path bound is skipped where one DP would pass this many
 * (stage x frontier point) steps: its rounds would eat the search's time. */
#define PATH_DP_STEPS_MAX 2e7

/* Every bound of the library at a fitting partition against its
 * simulated step time (tests only). */
static void check_sound(const certify *c, const psched__solution *sol, double mk)
{
    if (!test_check || !c->have_mult)
        return;
    for (size_t t = 0; t < c->nlib; t++) {
        double v = psched__mult_value(c->pb, &c->lib[t], sol);
        test_worst = fmax(test_worst, (v - mk) / mk);
        test_checks++;
    }
}

/* Each stage's recompute time and activation bytes of a solution. */
static void stage_extra_act(const psched__problem *pb, const psched__solution *sol, uint32_t s,
                            double *extra, double *act)
{
    *extra = *act = 0;
    for (uint32_t l = sol->first[s]; l < sol->first[s] + sol->count[s]; l++) {
        const psched__variant *x = &psched__layer_group(pb, l)->variant[sol->choice[l]];
        *extra += x->extra;
        *act += x->act;
    }
}

/* The newest path of the pool alone into the library, with its prefix
 * costs along sol (the search's current stack, complete). */
static psched_status lib_add_newest(certify *c, const psched__solution *sol)
{
    psched__problem *pb = c->pb;
    if (c->nlib >= c->lib_cap || !c->lib)
        return PSCHED_OK;
    size_t t = c->nlib, S1 = (size_t)pb->stages + 1;
    psched_status st = psched__mult_init(&c->lib[t], pb, false);
    if (st) {
        psched__mult_free(&c->lib[t]);
        return st;
    }
    c->nlib++;
    psched__mult_single(pb, &c->paths, c->paths.n - 1, &c->lib[t]);
    c->path_lb = fmax(c->path_lb, c->lib[t].value);
    double *pre = c->pre + t * S1;
    pre[0] = c->lib[t].constant;
    for (uint32_t s = 0; s < pb->stages; s++) {
        double extra, act;
        stage_extra_act(pb, sol, s, &extra, &act);
        pre[s + 1] = pre[s] + psched__mult_stage(pb, &c->lib[t], s, sol->first[s],
                                                 sol->count[s], extra, act);
    }
    return PSCHED_OK;
}

static bool same_order(const psched_schedule *a, const psched_schedule *b, uint32_t devices);

/* Simulate sol: its step time into *makespan, the sum over devices of
 * their last op's end into *ends (NULL: not wanted; the local search's
 * second key), the generated schedule into *keep (NULL: destroyed). */
static psched_status simulate_solution(certify *c, const psched__solution *sol, double *makespan,
                                       double *ends, psched_schedule **keep)
{
    psched_schedule *sched = NULL;
    psched_report *rep = NULL;
    psched_status st = psched__write_costs(c->pb, sol, c->work);
    /* an order that ignores the costs is every partition's: simulate it
     * with this partition's costs instead of generating it again */
    const psched_schedule *run = c->static_order && !keep ? c->static_order : NULL;
    if (!st && !run)
        st = psched_generate(c->work, c->name, &sched);
    if (!run)
        run = sched;
    if (!st)
        st = psched_simulate(run, run == sched ? NULL : c->work, &rep);
    if (!st) {
        *makespan = psched_report_makespan(rep);
        if (ends)
            *ends = 0;
        for (uint32_t d = 0; d < c->pb->plan_devices; d++) {
            size_t n = psched_schedule_op_count(run, d);
            double end = 0;
            if (ends && n)
                psched_report_op_times(rep, d, n - 1, 1, NULL, &end);
            if (ends)
                *ends += end;
            c->ops += n;
        }
        c->simulated++;
    }
    if (!st && c->use_paths) {
        /* every partition must have the reference order, or the paths of
         * one are not paths of the others */
        if (run == sched && !same_order(sched, c->ref, c->pb->plan_devices)) {
            c->use_paths = false;
            c->have_mult = false;
            c->order_changed = true;
            for (uint32_t e = 0; c->tail_stage && e < c->pb->devices; e++)
                c->tail_stage[e] = -1; /* the tails came from the reference order */
        } else {
            psched__paths_vector(c->pb, sol, c->xbuf);
            bool added = false;
            if (psched__paths_max(&c->paths, NULL, c->xbuf) < *makespan * (1 - 1e-9))
                st = psched__paths_extract(&c->paths, c->pb, run, rep, false, &added);
            if (!st && added && c->searching && c->have_mult)
                st = lib_add_newest(c, sol);
        }
    }
    psched_report_destroy(rep);
    if (keep && !st)
        *keep = sched;
    else
        psched_schedule_destroy(sched);
    return st;
}

/* Whether two schedules list the same ops in the same order per device. */
static bool same_order(const psched_schedule *a, const psched_schedule *b, uint32_t devices)
{
    for (uint32_t d = 0; d < devices; d++) {
        size_t n = psched_schedule_op_count(a, d);
        if (n != psched_schedule_op_count(b, d))
            return false;
        for (size_t i = 0; i < n; i++) {
            psched_op x, y;
            psched_schedule_ops(a, d, i, 1, &x, sizeof x);
            psched_schedule_ops(b, d, i, 1, &y, sizeof y);
            if (x.kind != y.kind || x.stage != y.stage || x.microbatch != y.microbatch)
                return false;
        }
    }
    return true;
}

/* Whether the step time may be trusted to grow with the costs: the order
 * for the even split with every layer at its slowest-to-run mix equals
 * the order with unit stage costs (the probe's). */
static psched_status order_is_fixed(certify *c, const psched__solution *sol, bool *fixed)
{
    if (c->static_order) {
        *fixed = true; /* the generator read no cost: one order for every partition */
        return PSCHED_OK;
    }
    psched_schedule *a = NULL, *b = NULL;
    double mk;
    psched_status st = simulate_solution(c, sol, &mk, NULL, &a);
    psched_plan *unit = NULL;
    if (!st)
        st = psched_plan_clone(c->work, &unit);
    if (!st)
        st = psched_plan_set_cost(unit, 1, 1, 1);
    if (!st)
        st = psched_generate(unit, c->name, &b);
    *fixed = !st && same_order(a, b, c->pb->plan_devices);
    psched_schedule_destroy(a);
    psched_schedule_destroy(b);
    psched_plan_destroy(unit);
    return st;
}

static void consider(certify *c, const psched__solution *sol)
{
    double mk = INFINITY;
    if (!c->st)
        c->st = simulate_solution(c, sol, &mk, NULL, NULL);
    if (!c->st)
        check_sound(c, sol, mk);
    if (!c->st && mk < c->best) {
        c->best = mk;
        psched__solution_copy(c->pb, sol, &c->best_sol);
    }
    if (c->ops > c->budget || psched__expired(c->pb))
        c->stopped = true;
}

/* Lengths of stage s's range from start i in the order to try: the range
 * whose time is closest to an even share of what is left first. */
static uint32_t order_lengths(const certify *c, uint32_t s, uint32_t i, uint32_t lo, uint32_t hi,
                              uint32_t *out)
{
    const psched__problem *pb = c->pb;
    double share = (pb->time_prefix[pb->layers] - pb->time_prefix[i]) / (pb->stages - s);
    uint32_t n = 0, mid = lo;
    while (mid < hi && psched__range_time(pb, i, mid + 1) <= share)
        mid++;
    /* mid, mid+1, mid-1, mid+2, mid-2, ... within [lo, hi] */
    out[n++] = mid;
    for (uint32_t k = 1; mid + k <= hi || mid >= lo + k; k++) {
        if (mid + k <= hi)
            out[n++] = mid + k;
        if (mid >= lo + k)
            out[n++] = mid - k;
    }
    return n;
}

/* Write range s's costs (or zeros) into every plan stage that holds it. */
static psched_status set_partial(certify *c, uint32_t s, double f, double b, double w)
{
    const psched__problem *pb = c->pb;
    psched_status st = PSCHED_OK;
    for (uint32_t t = s; !st && t < pb->plan_stages; t += pb->stages)
        st = psched_plan_set_stage_cost(c->partial, t, f, b, w);
    return st;
}

/* The cheapest layer (f, b and w apart) of layers [lo, hi]. */
static void window_min(const certify *c, uint32_t lo, uint32_t hi, double *f, double *b, double *w)
{
    const psched__problem *pb = c->pb;
    *f = *b = *w = INFINITY;
    for (uint32_t l = lo; l <= hi;) {
        uint32_t g = pb->group_of[l];
        const psched__group *gr = &pb->model->groups[g];
        *f = fmin(*f, gr->f);
        *b = fmin(*b, gr->b);
        *w = fmin(*w, gr->w);
        l = c->group_end[g];
    }
}

/* Costs of the stages after s, placed with stage s ending at layer j:
 * stage t gets at least one layer (unless stages may be empty) within
 * [j + (t - s - 1), L - (S - t)], so it costs at least that window's
 * cheapest layer (recompute only adds); stage s + 1 holds layer j, stage
 * S - 1 layer L - 1, and when s + 1 = S - 1 its range is [j, L). */
static psched_status set_unplaced(certify *c, uint32_t s, uint32_t j)
{
    const psched__problem *pb = c->pb;
    psched_status st = PSCHED_OK;
    uint32_t L = pb->layers;
    for (uint32_t t = s + 1; !st && t < pb->stages; t++) {
        double f = 0, b = 0, w = 0;
        uint32_t lo = j + (t - s - 1), hi = L - (pb->stages - t);
        if (pb->allow_empty || lo > hi) {
            /* may be empty: 0 */
        } else if (t == s + 1 && t == pb->stages - 1) {
            /* the last stage left: exactly [j, L), without recompute */
            f = pb->f_prefix[L] - pb->f_prefix[j];
            b = pb->b_prefix[L] - pb->b_prefix[j];
            w = psched__range_time(pb, j, L - j) - f - b;
        } else {
            /* the next stage starts at layer j, the last ends at layer L-1 */
            if (t == s + 1)
                hi = lo;
            else if (t == pb->stages - 1)
                lo = hi;
            window_min(c, lo, hi, &f, &b, &w);
        }
        st = set_partial(c, t, f, b, w);
    }
    return st;
}

/* psched_bound() of the partial partition: its terms (work, critical
 * path, device paths: head + Σ(f + b) + max(Σ w, tail), with F charged
 * less its overlap saving) never fall when a stage's cost rises, and the
 * stages not placed yet cost at least their set_unplaced() figures, so the
 * bound holds for every completion. 0 (no bound) when it cannot be computed. */
static double partial_bound(certify *c)
{
    psched_bound_options o = {.version = PSCHED_BOUND_OPTIONS_VERSION,
                              .flags = PSCHED_BOUND_IGNORE_MEMORY};
    psched_bound_info info;
    memset(&info, 0, sizeof info);
    info.version = PSCHED_BOUND_INFO_VERSION;
    if (psched_bound(c->partial, &o, &info) != PSCHED_OK) {
        c->use_partial = false;
        return 0;
    }
    return info.makespan;
}

/* The most layer groups the count bound sorts (per node O(groups x devices)). */
#define COUNT_GROUPS_MAX 16

/* The layer count bound (integral): every device e runs all its ops after
 * its start (Σ f before its first stage), so in a completion faster than
 * the best its remaining stages hold layers of base time at most cap_e =
 * (best - start_e - work_e) / m; it can hold at most n_e layers of
 * [j, L), the count of the cheapest whose times fit cap_e. Every layer
 * goes to one device: Σ n_e < L - j (or n_e below its stages left) cuts
 * the node. d is the device of the stage just placed (its start and
 * work include it: start_d, work_d). */
/* Each device's last op in `order` (the reference order, or the order
 * of every partition): a B or BW of stage t is followed by the B of every
 * earlier stage for its micro-batch. */
static psched_status find_tails(certify *c, const psched_schedule *order)
{
    const psched__problem *pb = c->pb;
    c->tail_stage = psched__calloc(pb->devices, sizeof(int64_t));
    c->count_lb = NAN;
    if (!c->tail_stage)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t e = 0; e < pb->devices; e++) {
        c->tail_stage[e] = -1;
        size_t n = psched_schedule_op_count(order, e);
        psched_op op;
        if (n && psched_schedule_ops(order, e, n - 1, 1, &op, sizeof op) == PSCHED_OK &&
            (op.kind == PSCHED_OP_B || op.kind == PSCHED_OP_BW))
            c->tail_stage[e] = op.stage;
    }
    c->tail_w = true;
    for (uint32_t e = 0; e < pb->devices && c->tail_w; e++) {
        size_t n = psched_schedule_op_count(order, e);
        for (size_t i = 0; i < n && c->tail_w; i++) {
            psched_op op;
            c->tail_w = psched_schedule_ops(order, e, i, 1, &op, sizeof op) == PSCHED_OK &&
                        op.kind != PSCHED_OP_B;
        }
    }
    return PSCHED_OK;
}

/* The backward time of the layers before layer n, each micro-batch at the
 * lightest weight: their B, with their W when the order runs them fused
 * (c->tail_w). */
static double tail_time(const certify *c, uint32_t n)
{
    const psched__problem *pb = c->pb;
    double b = pb->b_prefix[n];
    if (c->tail_w)
        b = pb->time_prefix[n] - pb->f_prefix[n];
    return pb->wmin * b;
}

/* Σ b of the layers before stage t's first (a lower bound while stage t
 * is not placed: stages s and before are, the next starts at layer j). */
static double tail_of(const certify *c, uint32_t e, uint32_t s, uint32_t i, uint32_t j)
{
    if (!c->tail_stage || c->tail_stage[e] < 0)
        return 0;
    uint32_t t = (uint32_t)c->tail_stage[e];
    uint32_t first = t < s ? c->cur.first[t] : t == s ? i : j;
    return tail_time(c, first);
}

static bool count_cut(const certify *c, uint32_t s, uint32_t i, uint32_t j, uint32_t d,
                      double start_d, double work_d)
{
    const psched__problem *pb = c->pb;
    if (!c->by_time || pb->allow_empty)
        return false;
    uint32_t need = pb->layers - j;
    if (need == 0)
        return false;
    const psched_model *model = pb->model;
    uint32_t g0 = pb->group_of[j];
    double total = 0;
    for (uint32_t e = 0; e < pb->devices; e++) {
        uint32_t left = c->left_on[e];
        if (left == 0)
            continue;
        double start = e == d ? start_d
                       : c->dev_stages[e] ? c->dev_start[e]
                       : pb->wmin * pb->f_prefix[j];
        double work = e == d ? work_d : c->dev_work[e];
        double cap = (c->best * (1 - 1e-12) - start - work - tail_of(c, e, s, i, j)) /
                     (pb->microbatches * pb->wmin);
        uint32_t n = 0;
        for (uint32_t q = 0; q < model->group_count && cap >= 0; q++) {
            uint32_t g = c->by_time[q];
            if (g < g0)
                continue;
            const psched__group *gr = &model->groups[g];
            double t = gr->f + gr->b + gr->w;
            uint32_t avail = g == g0 ? c->group_end[g] - j : gr->count;
            uint32_t k = t > 0 ? (uint32_t)fmin((double)avail, floor(cap / t)) : avail;
            n += k;
            cap -= k * t;
            if (k < avail)
                break;
        }
        if (n < left)
            return true;
        total += n;
        if (total >= need)
            return false;
    }
    return total < need;
}

/* Swap two library entries and their prefix rows. */
static void lib_swap(certify *c, size_t a, size_t b)
{
    size_t S1 = (size_t)c->pb->stages + 1;
    psched__mult t = c->lib[a];
    c->lib[a] = c->lib[b];
    c->lib[b] = t;
    for (size_t k = 0; k < S1; k++) {
        double x = c->pre[a * S1 + k];
        c->pre[a * S1 + k] = c->pre[b * S1 + k];
        c->pre[b * S1 + k] = x;
    }
}

static void search(certify *c, uint32_t s, uint32_t i, double lb)
{
    psched__problem *pb = c->pb;
    if (c->stopped || c->st)
        return;
    size_t cap = test_node_cap ? test_node_cap : pb->certify_nodes;
    if (++c->nodes > cap || (c->nodes % 1024 == 0 && psched__expired(pb))) {
        c->stopped = true;
        return;
    }
    if (s == pb->stages) {
        consider(c, &c->cur);
        return;
    }
    const psched__fronts *fr = &pb->table[i];
    uint32_t lo, hi;
    psched__length_bounds(pb, s, fr, &lo, &hi);
    if (lo > hi)
        return;
    uint32_t *lens = c->lens + (size_t)s * (pb->layers + 1);
    uint32_t n = order_lengths(c, s, i, lo, hi, lens);
    uint32_t d = pb->device_of[s];
    /* every micro-batch weighs at least wmin (1 without weights) */
    double m = pb->microbatches * pb->wmin, w1 = pb->wmin;
    double avg_rest = m * (pb->time_total + c->extra_sum) / pb->devices;
    for (uint32_t q = 0; q < n && !c->stopped && !c->st; q++) {
        uint32_t len = lens[q], np;
        const psched__point *pts = psched__front(fr, len, &np);
        double base = psched__range_time(pb, i, len), param = psched__range_param(pb, i, len);
        double fs = pb->f_prefix[i + len] - pb->f_prefix[i];
        double bs = pb->b_prefix[i + len] - pb->b_prefix[i];
        uint32_t k0 = 0, k1 = np;
        /* A slower mix only helps its device's memory: where no stage of
         * the device is left to place (or memory is unlimited), the fastest
         * mix that fits is at least as good as every other. */
        if (c->last_on_device[s] || !isfinite(pb->limit)) {
            int32_t k = psched__first_fitting(pb, s, fr, len,
                                              psched__room(pb) - c->dev_mem[d]);
            if (k < 0)
                continue;
            k0 = (uint32_t)k;
            k1 = k0 + 1;
        }
        for (uint32_t k = k0; k < k1 && !c->stopped && !c->st; k++) {
            double mem = param + pb->inflight[s] * pts[k].act;
            if (!psched__fits(pb, c->dev_mem[d] + mem))
                continue;
            double t = base + pts[k].extra;
            double start = c->dev_stages[d] ? c->dev_start[d] : w1 * pb->f_prefix[i];
            double here =
                fmax(lb, start + c->dev_work[d] + m * t + tail_of(c, d, s, i, i + len));
            here = fmax(here, w1 * (pb->f_prefix[i] + pb->b_prefix[i]) +
                                  m * (fs + bs + pts[k].extra));
            here = fmax(here, avg_rest + m * pts[k].extra / pb->devices);
            if (here >= c->best * (1 - 1e-12))
                continue;
            c->left_on[d]--;
            bool counted = count_cut(c, s, i, i + len, d, start, c->dev_work[d] + m * t);
            c->left_on[d]++;
            if (counted) {
                c->count_cuts++;
                continue;
            }
            if (c->have_mult) {
                /* the Lagrangian DPs' least cost of every completion */
                size_t S1 = (size_t)pb->stages + 1, at = (size_t)(s + 1) * (pb->layers + 1) + i + len;
                size_t cut = SIZE_MAX;
                for (size_t u = 0; u < c->nlib && cut == SIZE_MAX; u++) {
                    c->stage_w[u] = psched__mult_stage(pb, &c->lib[u], s, i, len, pts[k].extra,
                                                       pts[k].act);
                    if (c->pre[u * S1 + s] + c->stage_w[u] + c->lib[u].g[at] >=
                        c->best * (1 - 1e-9))
                        cut = u;
                }
                if (cut != SIZE_MAX) {
                    c->path_nodes++;
                    if (cut > 1)
                        lib_swap(c, cut, 1); /* the entry that cut is tried early */
                    continue;
                }
                for (size_t u = 0; u < c->nlib; u++)
                    c->pre[u * S1 + s + 1] = c->pre[u * S1 + s] + c->stage_w[u];
            }
            if (c->use_partial) {
                if (set_partial(c, s, fs, bs + pts[k].extra, base - fs - bs) ||
                    set_unplaced(c, s, i + len)) {
                    c->use_partial = false;
                } else {
                    here = fmax(here, partial_bound(c));
                    if (here >= c->best * (1 - 1e-12))
                        continue;

                }
            }
            double saved_start = c->dev_start[d];
            c->dev_start[d] = start;
            c->dev_work[d] += m * t;
            c->dev_mem[d] += mem;
            c->dev_stages[d]++;
            c->left_on[d]--;
            c->extra_sum += pts[k].extra;
            c->cur.first[s] = i;
            c->cur.count[s] = len;
            psched__fill_choices(fr, len, (int32_t)k, c->cur.choice);
            search(c, s + 1, i + len, here);
            c->extra_sum -= pts[k].extra;
            c->left_on[d]++;
            c->dev_stages[d]--;
            c->dev_mem[d] -= mem;
            c->dev_work[d] -= m * t;
            c->dev_start[d] = saved_start;
        }
    }
}

/* The critical-path bound at the root: paths of the candidates, then
 * Kelley's cutting planes. Each round chooses λ and μ over the pool and
 * the cuts, runs the DP, keeps the best multipliers, and simulates the
 * DP's minimiser: a new cut, a new critical path when the pool does not
 * explain its step time, and a new incumbent when it fits and is faster. */
#define PATH_ROUNDS 200
#define PATH_STALL 20

/* Simulate the reference order with the averaged costs of the cuts
 * weighted by xi; its critical path into the pool when longer than the
 * LP's value (*priced: one was added). */
static psched_status price_mix(certify *c, const double *xi, psched_plan *avg, double upper,
                               bool *priced)
{
    psched__problem *pb = c->pb;
    const psched__paths *pp = &c->paths;
    *priced = false;
    if (!psched__have_glpk() || pp->nx == 0)
        return PSCHED_OK;
    double *xb = c->xbuf;
    for (size_t k = 0; k < pp->xstride; k++)
        xb[k] = 0;
    for (size_t j = 0; j < pp->nx; j++)
        for (size_t k = 0; k < pp->xstride; k++)
            xb[k] += xi[j] * pp->xv[j * pp->xstride + k];
    psched_status st = PSCHED_OK;
    for (uint32_t s = 0; !st && s < pb->plan_stages; s++) {
        uint32_t r = psched__range_of(pb, s);
        st = psched_plan_set_stage_cost(avg, s, fmax(0, xb[3 * r]), fmax(0, xb[3 * r + 1]),
                                        fmax(0, xb[3 * r + 2]));
    }
    psched_report *rep = NULL;
    if (!st)
        st = psched_simulate(c->ref, avg, &rep);
    if (!st) {
        double mk = psched_report_makespan(rep);
        for (uint32_t d = 0; d < pb->plan_devices; d++)
            c->ops += psched_schedule_op_count(c->ref, d);
        if (mk > upper * (1 + 1e-9) && psched__paths_max(pp, NULL, xb) < mk * (1 - 1e-9))
            st = psched__paths_extract(&c->paths, pb, c->ref, rep, true, priced);
    }
    psched_report_destroy(rep);
    return st;
}

static void path_root(certify *c, const psched__solution *const *candidates, size_t count)
{
    psched__problem *pb = c->pb;
    psched__solution x;
    memset(&x, 0, sizeof x);
    psched_status st = psched__solution_init(&x, pb->stages, pb->layers);
    for (size_t k = 0; !st && k < count; k++) {
        if (!candidates[k] || !candidates[k]->found)
            continue;
        double mk;
        st = simulate_solution(c, candidates[k], &mk, NULL, NULL);
        if (!st) {
            psched__paths_vector(pb, candidates[k], c->xbuf);
            st = psched__paths_add_cut(&c->paths, c->xbuf);
        }
    }
    /* μ's box: a device over its limit by all of it costs at most a
     * hundred best step times */
    double mu_cap = 100 * c->best;
    double *xi = NULL;
    psched_plan *avg = NULL;
    if (!st)
        st = psched_plan_clone(c->work, &avg);
    /* at most three fifths of the time left: the search needs the rest */
    double until = psched__now() + 0.6 * fmax(0, pb->deadline - psched__now());
    double lb_before = -INFINITY; /* the bound PATH_STALL rounds ago */
    /* the planner certifies many candidates: a quarter of the rounds */
    int rounds = pb->certify_nodes < PSCHED__CERTIFY_NODES ? PATH_ROUNDS / 4 : PATH_ROUNDS;
    for (int round = 0; !st && c->use_paths && round < rounds; round++) {
        if (c->ops > c->budget || psched__now() > until)
            break;
        /* stalled: the bound rose by less than 10^-4 in PATH_STALL rounds */
        if (round % PATH_STALL == 0) {
            if (round > 0 && c->path_lb <= lb_before + 1e-4 * fabs(lb_before))
                break;
            lb_before = c->path_lb;
        }
        double upper = INFINITY;
        double *t = psched__reallocarray(xi, c->paths.nx + 1, sizeof(double));
        if (!t) {
            st = PSCHED_ENOMEM_FAIL();
            break;
        }
        xi = t;
        st = psched__mult_choose(pb, &c->paths, mu_cap, &c->trial, &upper, xi);
        if (st == PSCHED_ESOLVER) {
            /* the master LP failed: the bound keeps what it has */
            st = PSCHED_OK;
            break;
        }
        if (st || !(c->trial.value > -INFINITY))
            break;
        if (!c->have_mult || c->trial.value > c->mult.value) {
            psched__mult_copy(pb, &c->trial, &c->mult);
            c->have_mult = true;
            c->path_lb = fmax(c->path_lb, c->trial.value);
        }
        if (c->path_lb >= c->best * (1 - 1e-9) || !psched__have_glpk())
            break;
        if (!psched__mult_argmin(pb, &c->trial, &x))
            break; /* no partition within the table: none is faster than best */
        size_t paths_before = c->paths.n;
        /* pricing: the critical path of the LP's mix of partitions (the
         * paths' lengths are linear, so the mix's averaged costs) */
        bool priced = false;
        st = price_mix(c, xi, avg, upper, &priced);
        if (st)
            break;
        double mk;
        st = simulate_solution(c, &x, &mk, NULL, NULL);
        if (st || !c->use_paths)
            break;
        psched__paths_vector(pb, &x, c->xbuf);
        bool fits = true;
        for (uint32_t d = 0; d < pb->devices; d++)
            fits = fits && c->xbuf[3 * (size_t)pb->stages + d] <= 1e-12;
        if (fits && test_check) {
            test_worst = fmax(test_worst, (psched__mult_value(pb, &c->trial, &x) - mk) / mk);
            test_checks++;
        }
        if (fits && mk < c->best) {
            c->best = mk;
            psched__solution_copy(pb, &x, &c->best_sol);
        }
        st = psched__paths_add_cut(&c->paths, c->xbuf);
        /* converged: the LP's value is reached and no path is new */
        if (c->paths.n == paths_before && upper - c->trial.value <= 1e-9 * fabs(upper))
            break;
        (void)priced;
    }
    if (st && !c->st)
        c->st = st;
    psched__dealloc(xi);
    psched_plan_destroy(avg);
    psched__solution_free(&x);
}

/* The node bounds' multipliers: the best combination, then each path of
 * the pool alone (a node's heavy device is some path's, which the root's
 * combination averages away); the search adds the paths it finds. */
static psched_status path_library(certify *c)
{
    psched__problem *pb = c->pb;
    size_t S1 = (size_t)pb->stages + 1;
    c->lib_cap = LIB_BYTES / (S1 * ((size_t)pb->layers + 1) * sizeof(double));
    c->lib_cap = c->lib_cap < 2 ? 2 : c->lib_cap > LIB_MAX ? LIB_MAX : c->lib_cap;
    size_t n = 1 + c->paths.n;
    if (n > c->lib_cap)
        n = c->lib_cap;
    c->lib = psched__calloc(c->lib_cap, sizeof *c->lib);
    c->pre = psched__calloc(c->lib_cap * S1, sizeof(double));
    c->stage_w = psched__calloc(c->lib_cap, sizeof(double));
    if (!c->lib || !c->pre || !c->stage_w)
        return PSCHED_ENOMEM_FAIL();
    psched_status st = PSCHED_OK;
    /* the newest critical paths first (a device's path alone rarely cuts) */
    size_t next = c->paths.n;
    for (size_t t = 0; !st && t < n && !psched__expired(pb); t++) {
        if (t > 0) {
            while (next > 0 && !c->paths.critical[next - 1])
                next--;
            if (next == 0)
                break;
            next--;
        }
        st = psched__mult_init(&c->lib[t], pb, false);
        if (st) {
            psched__mult_free(&c->lib[t]);
            break;
        }
        c->nlib = t + 1;
        if (t == 0)
            psched__mult_copy(pb, &c->mult, &c->lib[0]);
        else
            psched__mult_single(pb, &c->paths, next, &c->lib[t]);
        c->path_lb = fmax(c->path_lb, c->lib[t].value);
        c->pre[t * S1] = c->lib[t].constant;
    }
    return st;
}

/* The run MILP's rounds (pathbound.h): at most this many, each adding
 * the critical path of the MILP's minimiser to the pool. */
#define RUN_ROUNDS 400
/* GLPK's tolerances: the MILP's optimum proves the best optimal when it
 * is within this fraction of it (feasibility and optimality tolerances
 * are 10^-7 relative). */
#define RUN_TOL 1e-7
/* Seconds the certificate must have left for the run MILP to start: GLPK's
 * setup and first solve of a few hundred rows take about that, so with
 * less (the planner's autotuning setting, --time-limit 0.1) the MILP would
 * only overrun the deadline and take the search's time. */
#define RUN_MIN_SECONDS 0.25
/* The run MILP takes the reference order's whole DAG as its rows (exact:
 * one tree, no rounds, no pool) up to this many units (ops, an overlapped
 * pair once); beyond, its nodes' LPs are too slow for short time limits
 * (the grid at p = 8, v = 4, 2 048 and 3 072 units: within 5 s its tree
 * has no bound, the paths' gives 2.6-3.6%; docs/optimizer-passes.md,
 * nineteenth pass). */
#define RUN_DAG_UNITS 2000
/* Beyond, up to RUN_DAG_UNITS_LONG units, it takes the DAG when the time
 * left gives it RUN_DAG_SECONDS_PER_UNIT per unit: on the grid at p = 8,
 * v = 4 (2 048 and 3 072 units) the DAG's tree ends nearer the optimum
 * than the paths and the device search from a 17 s limit on (L = 80
 * interleaved 2.15% -> 0.45%; at 60 s 1.87% -> 0.05%, and given 196 s it
 * proves the optimum), worse at 10 s (2.4% -> 4.1%); at p = 16 (4 096 and
 * 6 144 units) worse or the same even at 60 s (docs/optimizer-passes.md,
 * twenty-third pass). */
#define RUN_DAG_UNITS_LONG 3200
#define RUN_DAG_SECONDS_PER_UNIT 0.0075
/* The DAG's MILP's share of the time left: the search after it rarely
 * proves what the exact MILP did not (the paths' rounds keep 0.6). */
#define RUN_DAG_SHARE 0.9

/* Where the whole DAG has not the time (above RUN_DAG_UNITS, up to
 * RUN_DAG_UNITS_LONG), the run MILP takes instead of the paths the DAG
 * with the inputs of each chain's micro-batches 0, RUN_DAG_STRIDE,
 * 2·RUN_DAG_STRIDE, … and its last only: a relaxation (fewer rows, so
 * its optimum and its tree's bound bound every partition) with about a
 * quarter of the columns, whose tree passes the paths' bound within
 * seconds. The grid at p = 8, v = 4 and 5 s, gaps with the paths / with
 * micro-batch 0 and the last only / stride 16 / 8 / 4 / 3: L = 80
 * interleaved 2.62 / 1.23 / 1.19 / 0.96 / 0.68 / 0.71%, interleaved-zb
 * 2.44 / 2.16 / 1.69 / 1.1 / 1.36 / 2.6% (no tree bound in time), L = 128
 * interleaved 3.28 / 2.21 / 2.15 / 1.98 / 1.78 / 1.75%, interleaved-zb
 * 3.60 / 2.34 / 1.54 / 1.11 / 1.07 / 1.07%, looped-bfs 0.11% each; at
 * 10 s stride 4 gives 0.55, 1.02, 1.75 and 1.02%, the whole DAG 4.14,
 * 2.44, 1.83 and 1.13%, so the whole DAG keeps its rule above. Beyond
 * RUN_DAG_UNITS_LONG (p = 16 at v = 4) it is worse than the paths with
 * any stride (L = 80 interleaved 2.47% -> 4.74%, L = 128 interleaved-zb
 * 1.62% -> 1.73%): the paths stay there; and with one stage per device
 * (1F1B on 16 devices, m = 64: 2 048 units), where the paths prove the
 * grid's L = 128 row in 3.4-3.7 s and the stride's MILP leaves it at 1.8%
 * (docs/optimizer-passes.md, twenty-fourth pass). */
#define RUN_DAG_STRIDE 4

/* The run MILP's rows for an order of `units` units and `chunks` stages
 * per device with `left` seconds left: the whole DAG (1), every
 * RUN_DAG_STRIDE-th micro-batch's, or the paths (0). */
uint32_t psched__run_dag_stride(size_t units, uint32_t chunks, double left)
{
    if (units <= RUN_DAG_UNITS ||
        (units <= RUN_DAG_UNITS_LONG && left >= RUN_DAG_SECONDS_PER_UNIT * (double)units))
        return 1;
    return chunks >= 2 && units <= RUN_DAG_UNITS_LONG ? RUN_DAG_STRIDE : 0;
}

/* Lazy path generation over the run MILP: solve it over the pool, simulate
 * its minimiser (a new incumbent when it fits and is faster), add the
 * minimiser's critical path (its step time exceeds every path of the
 * pool at it, unless the MILP's value is reached), and repeat. Every
 * round's optimum is a lower bound of every fitting partition's step time
 * (the pool's paths are paths of every partition: the reference order is
 * checked on each simulation); the best is proven optimal when the
 * optimum reaches it. The paths only grow, so the optimum never falls. */
/* Whether a partition of the run MILP fits every device's limit (GLPK's
 * tolerances may let one a little over in); fills c->xbuf. */
static bool run_fits(certify *c, const psched__solution *x)
{
    psched__paths_vector(c->pb, x, c->xbuf);
    for (uint32_t d = 0; d < c->pb->devices; d++)
        if (c->xbuf[3 * (size_t)c->pb->stages + d] > 1e-12)
            return false;
    return true;
}

/* An integer solution the run MILP hands over (each GLPK finds on its way,
 * and its last when stopped; over the paths its rows are a relaxation, so
 * the solution with the least bound is not always the fastest simulated;
 * over the DAG its z is its step time, and GLPK's solutions only get
 * faster): simulated, and the best when it fits and is faster. */
static psched_status run_found(void *ctx, const psched__solution *sol)
{
    certify *c = ctx;
    size_t i = test_found++;
    uint32_t S = c->pb->stages, L = c->pb->layers;
    if (i < TEST_FOUND_MAX) {
        test_found_kept[i] = S <= TEST_FOUND_STAGES && L <= TEST_FOUND_LAYERS;
        if (test_found_kept[i]) {
            memcpy(test_found_count[i], sol->count, S * sizeof *sol->count);
            memcpy(test_found_choice[i], sol->choice, L * sizeof *sol->choice);
        }
    }
    double mk;
    psched_status st = simulate_solution(c, sol, &mk, NULL, NULL);
    if (!st && c->use_paths && run_fits(c, sol) && mk < c->best) {
        c->best = mk;
        psched__solution_copy(c->pb, sol, &c->best_sol);
        test_run_incumbents++;
    }
    return st;
}

static bool run_certify(certify *c)
{
    psched__problem *pb = c->pb;
    psched__run run;
    if (!c->use_paths || !psched__have_glpk() || !psched__run_shape(pb, &run) ||
        pb->deadline - psched__now() < RUN_MIN_SECONDS)
        return false;
    psched__solution x;
    memset(&x, 0, sizeof x);
    psched_status st = psched__solution_init(&x, pb->stages, pb->layers);
    bool proven = false, *use = NULL;
    size_t first_new = c->paths.n;
    /* at most three fifths of the time left with the paths (nine tenths
     * with the DAG): the search needs the rest when the MILP does not
     * close */
    const psched_schedule *dag = c->run_stride ? c->ref : NULL;
    double share = dag ? RUN_DAG_SHARE : 0.6;
    double until = psched__now() + share * fmax(0, pb->deadline - psched__now());
    for (int round = 0; !st && round < RUN_ROUNDS && c->use_paths; round++) {
        /* time only: a round simulates one partition, GLPK takes the time */
        if (psched__now() > until)
            break;
        double z = 0;
        bool solved = false;
        size_t before = c->paths.n;
        /* the rows: the critical paths and every path the rounds add (any
         * subset of the pool gives a lower bound; fewer rows keep GLPK's
         * tree smaller) */
        bool *t = psched__reallocarray(use, c->paths.n + 1, sizeof *t);
        if (!t) {
            st = PSCHED_ENOMEM_FAIL();
            break;
        }
        use = t;
        for (size_t i = 0; i < c->paths.n; i++)
            use[i] = i >= first_new || c->paths.critical[i];
        bool none = false;
        double tree = 0;
        /* the best partition, GLPK's first incumbent; over the DAG with
         * its simulated op ends (the reference order with its costs) */
        const psched__solution *start = c->best_sol.found ? &c->best_sol : NULL;
        psched_report *times = NULL;
        if (start && dag) {
            st = psched__write_costs(pb, start, c->work);
            if (!st)
                st = psched_simulate(c->ref, c->work, &times);
            if (st)
                break;
        }
        st = psched__run_milp(pb, &c->paths, &run, use, dag, c->run_stride,
                              c->best * (1 - RUN_TOL), until,
                              start, times, run_found, c, &x, &z, &solved, &none, &tree);
        psched_report_destroy(times);
        if (!st && none) {
            proven = true;
            break;
        }
        if (!st && !solved && tree > 0) {
            /* stopped: what its tree proves (the grid's L = 80, p = 16
             * interleaved at v = 4: 1277.07 against the root's 1215.93) */
            c->path_lb = fmax(c->path_lb, tree);
            test_run_tree = fmax(test_run_tree, tree);
        }
        if (st || !solved)
            break;
        if (dag)
            test_run_dag_z = z;
        /* over the paths, the optimum at the rounded minimiser, from the
         * pool itself; over the DAG GLPK's optimum (which may be the best
         * partition, GLPK's first incumbent, whose pool paths can be
         * shorter than its step time) */
        psched__paths_vector(pb, &x, c->xbuf);
        if (!dag)
            z = fmin(z, psched__paths_max(&c->paths, NULL, c->xbuf));
        c->path_lb = fmax(c->path_lb, z);
        if (z >= c->best * (1 - RUN_TOL)) {
            proven = true;
            break;
        }
        double mk;
        st = simulate_solution(c, &x, &mk, NULL, NULL);
        if (st || !c->use_paths)
            break;
        if (!run_fits(c, &x))
            break; /* GLPK's tolerance let a partition over the limit in */
        if (mk < c->best) {
            c->best = mk;
            psched__solution_copy(pb, &x, &c->best_sol);
        }
        if (z >= c->best * (1 - RUN_TOL)) {
            proven = true;
            break;
        }
        if (c->paths.n == before || dag)
            break; /* no new path (rounding), or the DAG's optimum: no progress */
    }
    if (st && !c->st)
        c->st = st;
    psched__solution_free(&x);
    psched__dealloc(use);
    if (proven && c->use_paths)
        test_run_proofs++;
    return proven && c->use_paths;
}

/* ---- local search: a better incumbent before the proofs ----
 *
 * The candidates are the solvers' minimisers of a linear estimate and the
 * baselines; on stages of two or three identical layers their step times
 * differ by percents from partitions a few layer moves away (LLaMA-70B
 * interleaved v = 4: 1884.03 from the estimate's split, 1851.66 with the
 * three-layer stages moved ten stages later). An iterated local search
 * (docs/optimizer.md, "Local search") improves the best before the bounds
 * and the search run: a faster incumbent is itself the better answer and
 * cuts more nodes. Moves: one layer from a range to another (the layers
 * between shift one range over and keep their recompute choices; ranges on
 * one device first, then neighbouring ranges, then any pair) and one
 * layer's recompute kind; first improvement, each move kept only when the
 * partition fits and simulates faster. Then kicks: a few random moves
 * between ranges of one device from the best, and a descent over the
 * cheaper neighbourhood (one device's ranges, neighbours, kinds), until
 * IMPROVE_KICKS kicks in a row gain nothing; last, a descent over every
 * pair of ranges from the best. Deterministic (a fixed-seed generator); it
 * stops early at IMPROVE_SHARE of the time left or after an op budget of
 * its own (the certificate's, at least PSCHED__CERTIFY_OPS), which the
 * search's budget does not count. */
#define IMPROVE_SHARE 0.2
#define IMPROVE_KICKS 16
#define IMPROVE_KICK_MOVES 3

typedef struct improver {
    certify *c;
    /* what it improves: the certificate's best, or another partition
     * (count_descents()), and its simulated step time */
    psched__solution *best;
    double *best_time;
    psched__solution x, y; /* the descent's partition, a neighbour */
    double x_time;         /* x's simulated step time */
    double x_ends;         /* x's sum over devices of their last op's end */
    double best_ends;      /* the best's (the same key breaks its ties) */
    psched__evaluation ev;
    double until;
    size_t ops_cap;
    uint64_t rng;
} improver;

static bool improve_over(const improver *im)
{
    return im->c->st || im->c->ops > im->ops_cap || psched__now() > im->until;
}

static uint64_t improve_rand(improver *im)
{
    /* xorshift64 */
    im->rng ^= im->rng << 13;
    im->rng ^= im->rng >> 7;
    im->rng ^= im->rng << 17;
    return im->rng;
}

/* y = x with one layer moved from range a to range b; false when range a
 * cannot give one. */
static bool transfer(const psched__problem *pb, const psched__solution *x, psched__solution *y,
                     uint32_t a, uint32_t b)
{
    if (a == b || x->count[a] == 0 || (x->count[a] == 1 && !pb->allow_empty))
        return false;
    psched__solution_copy(pb, x, y);
    y->count[a]--;
    y->count[b]++;
    if (a < b)
        for (uint32_t t = a + 1; t <= b; t++)
            y->first[t]--;
    else
        for (uint32_t t = b + 1; t <= a; t++)
            y->first[t]++;
    return true;
}

/* y = transfer(x, a, b) with the moved layer carrying its recompute kind
 * and every other range keeping its kinds (transfer() shifts the layers
 * between one range over with their kinds, which changes the kinds, and
 * so the memory, of every range between): rewrites y's kinds. false when
 * a layer would get a kind its group lacks or y's kinds stay transfer()'s. */
static bool carry_kinds(const psched__problem *pb, const psched__solution *x,
                        psched__solution *y, uint32_t a, uint32_t b)
{
    bool differs = false;
    for (uint32_t t = 0; t < pb->stages; t++) {
        const uint8_t *from = x->choice + x->first[t];
        uint8_t *to = y->choice + y->first[t];
        uint32_t n = x->count[t];
        if (t == a) { /* loses the layer at b's side */
            n--;
            if (a > b)
                from++;
        }
        uint32_t at = 0;
        if (t == b && a < b)
            to[at++] = x->choice[x->first[a] + x->count[a] - 1];
        for (uint32_t k = 0; k < n; k++)
            to[at++] = from[k];
        if (t == b && a > b)
            to[at++] = x->choice[x->first[a]];
    }
    for (uint32_t l = 0; l < pb->layers; l++) {
        if (!psched__layer_group(pb, l)->variant[y->choice[l]].present)
            return false;
        /* transfer() keeps every layer's kind */
        differs = differs || y->choice[l] != x->choice[l];
    }
    return differs;
}

/* Whether layer l is the first of range [from, l] with its group and
 * kind in sol (the moves try it for the others: their costs are the same). */
static bool first_of_kind(const psched__problem *pb, const psched__solution *sol, uint32_t from,
                          uint32_t l)
{
    for (uint32_t e = from; e < l; e++)
        if (pb->group_of[e] == pb->group_of[l] && sol->choice[e] == sol->choice[l])
            return false;
    return true;
}

/* Simulate y when it fits; when faster than x it becomes x (and the best
 * when faster than that). */
static bool improve_try(improver *im)
{
    certify *c = im->c;
    psched__evaluate(c->pb, &im->y, &im->ev);
    if (!psched__fits(c->pb, im->ev.max_mem))
        return false;
    double mk;
    double ends;
    psched_status st = simulate_solution(c, &im->y, &mk, &ends, NULL);
    if (st) {
        c->st = st;
        return false;
    }
    /* faster, or as fast with the devices ending earlier in all: where
     * several devices are critical (a binding memory limit, every device
     * at the step time) no single move shortens the step, and without the
     * second key the descent stops on that plateau */
    if (!(mk < im->x_time * (1 - 1e-12) ||
          (mk <= im->x_time && ends < im->x_ends * (1 - 1e-12))))
        return false;
    psched__solution_copy(c->pb, &im->y, &im->x);
    im->x_time = mk;
    im->x_ends = ends;
    if (mk < *im->best_time || (mk <= *im->best_time && ends < im->best_ends)) {
        *im->best_time = mk;
        im->best_ends = ends;
        psched__solution_copy(c->pb, &im->y, im->best);
    }
    return true;
}

/* The kind of the pair (a, b): 0 one device, 1 neighbouring ranges, 2 any. */
static int pair_class(const psched__problem *pb, uint32_t a, uint32_t b)
{
    if (pb->device_of[a] == pb->device_of[b])
        return 0;
    return a + 1 == b || b + 1 == a ? 1 : 2;
}

/* Kind swaps: two layers of one group on different ranges of one device
 * exchange their recompute kinds (the device's memory and work stay; the
 * recompute moves to another chunk's range). First improvement over
 * every pair of ranges of a device and every pair of kinds; per range the
 * first layer of each (group, kind) stands for the others. */
static bool swap_kinds(improver *im)
{
    const psched__problem *pb = im->c->pb;
    bool moved = false;
    for (uint32_t a = 0; a < pb->stages && !improve_over(im); a++)
        for (uint32_t b = a + 1; b < pb->stages && !improve_over(im); b++) {
            if (pb->device_of[a] != pb->device_of[b])
                continue;
            uint32_t ia = im->x.first[a], na = im->x.count[a];
            uint32_t ib = im->x.first[b], nb = im->x.count[b];
            for (uint32_t la = ia; la < ia + na && !improve_over(im); la++) {
                if (!first_of_kind(pb, &im->x, ia, la))
                    continue;
                for (uint32_t lb = ib; lb < ib + nb && !improve_over(im); lb++) {
                    if (pb->group_of[lb] != pb->group_of[la] ||
                        im->x.choice[lb] == im->x.choice[la] || !first_of_kind(pb, &im->x, ib, lb))
                        continue;
                    psched__solution_copy(pb, &im->x, &im->y);
                    im->y.choice[la] = im->x.choice[lb];
                    im->y.choice[lb] = im->x.choice[la];
                    moved = improve_try(im) || moved;
                }
            }
        }
    return moved;
}

/* First-improvement descent from x; classes 0 .. last of pairs. */
static void descend(improver *im, int last)
{
    const psched__problem *pb = im->c->pb;
    bool moved = true;
    while (moved && !improve_over(im)) {
        moved = false;
        for (int k = 0; k <= last && !improve_over(im); k++)
            for (uint32_t a = 0; a < pb->stages && !improve_over(im); a++)
                for (uint32_t b = 0; b < pb->stages && !improve_over(im); b++)
                    if (a != b && pair_class(pb, a, b) == k &&
                        transfer(pb, &im->x, &im->y, a, b)) {
                        if (improve_try(im))
                            moved = true;
                        else if (carry_kinds(pb, &im->x, &im->y, a, b))
                            moved = improve_try(im) || moved;
                    }
        /* recompute kinds: per range, the first layer of each (group,
         * kind) stands for the others */
        for (uint32_t s = 0; s < pb->stages && !improve_over(im); s++) {
            uint32_t i = im->x.first[s], n = im->x.count[s];
            for (uint32_t l = i; l < i + n && !improve_over(im); l++) {
                bool seen = !first_of_kind(pb, &im->x, i, l);
                const psched__group *gr = psched__layer_group(pb, l);
                for (uint8_t v = 0; !seen && v < PSCHED__RECOMPUTE_KINDS && !improve_over(im);
                     v++) {
                    if (!gr->variant[v].present || v == im->x.choice[l])
                        continue;
                    psched__solution_copy(pb, &im->x, &im->y);
                    im->y.choice[l] = v;
                    moved = improve_try(im) || moved;
                }
            }
        }
        if (pb->stages > pb->devices)
            moved = swap_kinds(im) || moved;
    }
}

/* One random move between ranges of one device (of neighbouring ranges
 * when the device holds one) on x. */
static bool kick_move(improver *im)
{
    const psched__problem *pb = im->c->pb;
    uint32_t S = pb->stages, a = (uint32_t)(improve_rand(im) % S);
    uint32_t same = 0;
    for (uint32_t t = 0; t < S; t++)
        same += t != a && pb->device_of[t] == pb->device_of[a];
    uint32_t b;
    if (same) {
        uint32_t k = (uint32_t)(improve_rand(im) % same);
        for (b = 0; b < S; b++)
            if (b != a && pb->device_of[b] == pb->device_of[a] && k-- == 0)
                break;
    } else {
        b = a + 1 < S && (a == 0 || improve_rand(im) % 2) ? a + 1 : a - 1;
    }
    if (!transfer(pb, &im->x, &im->y, a, b))
        return false;
    psched__solution_copy(pb, &im->y, &im->x);
    return true;
}

/* The descent restarts from the best. */
static void from_best(improver *im)
{
    certify *c = im->c;
    psched__solution_copy(c->pb, im->best, &im->x);
    im->x_time = *im->best_time;
    /* its devices' ends, the second key: known once improve_try() set the
     * best, simulated once for a best from before the local search */
    if (!isfinite(im->best_ends)) {
        double mk;
        psched_status st = simulate_solution(c, &im->x, &mk, &im->best_ends, NULL);
        if (st) {
            c->st = st;
            im->best_ends = INFINITY;
        }
    }
    im->x_ends = im->best_ends;
}

/* The local search from `best` (its step time *best_time), which it
 * improves in place, with at most `share` of the time left and `ops`
 * simulated ops. */
static void improve_for(certify *c, psched__solution *best, double *best_time, double share,
                        size_t ops)
{
    psched__problem *pb = c->pb;
    if (!best->found || pb->stages < 2 || psched__expired(pb))
        return;
    improver im;
    memset(&im, 0, sizeof im);
    im.c = c;
    im.best = best;
    im.best_time = best_time;
    im.until = psched__now() + share * (pb->deadline - psched__now());
    /* its own op budget: the search's starts again after it */
    size_t ops_before = c->ops;
    im.ops_cap = c->ops + ops;
    im.rng = 0x9e3779b97f4a7c15u;
    im.best_ends = INFINITY;
    psched_status st = psched__solution_init(&im.x, pb->stages, pb->layers);
    if (!st)
        st = psched__solution_init(&im.y, pb->stages, pb->layers);
    if (!st)
        st = psched__evaluation_init(pb, &im.ev);
    if (st) {
        c->st = st;
    } else {
        from_best(&im);
        descend(&im, 1);
    }
    /* the kicks' descents: one device's ranges where devices hold several */
    int kick_class = pb->stages > pb->devices ? 0 : 1;
    for (int idle = 0; idle < IMPROVE_KICKS && !improve_over(&im); idle++) {
        double before = *best_time;
        from_best(&im);
        bool moved = false;
        for (int k = 0; k < IMPROVE_KICK_MOVES; k++)
            moved = kick_move(&im) || moved;
        /* the kicked partition is the descent's start whatever its time */
        psched__solution_copy(pb, &im.x, &im.y);
        im.x_time = im.x_ends = INFINITY;
        if (moved && improve_try(&im))
            descend(&im, kick_class);
        if (*best_time < before)
            idle = -1;
    }
    /* last, every pair from the best */
    if (!improve_over(&im)) {
        from_best(&im);
        descend(&im, 2);
    }
    c->ops = ops_before;
    psched__solution_free(&im.x);
    psched__solution_free(&im.y);
    psched__evaluation_free(&im.ev);
}

/* The local search from the certificate's best with its share of the
 * time left and its own op budget (the certificate's, at least
 * PSCHED__CERTIFY_OPS). */
static void improve(certify *c)
{
    improve_for(c, &c->best_sol, &c->best, IMPROVE_SHARE,
                c->budget > PSCHED__CERTIFY_OPS ? c->budget : PSCHED__CERTIFY_OPS);
}

/* The layer count bound as a value (for the gap), where the layers
 * between the first and the last are identical (psched__run_shape). Device
 * e holds a whole number n_e of the run's layers; it runs all its ops
 * after its start and before its tail, so every partition takes at least
 * start_e + m·(n_e·t + fixed_e + r_e(n_e)) + tail_e, with t the run
 * layer's time without recompute, fixed_e the first and last layers' on e
 * (without recompute), start_e the F of the layers before e's first stage
 * (at least one per earlier stage: f_prefix[k_e]), tail_e the B of the
 * layers before its tail stage (tail_of), and r_e(n) the least recompute
 * time n run layers need to fit e's memory: e's memory is at least its
 * parameters, the first and last layers' at their leanest, and the run
 * layers' activations times the fewest micro-batches any of e's stages
 * holds, so the run layers' activations per micro-batch are at most a
 * budget A_e(n), and no mix of recompute variants with that much costs
 * less than n·h(A_e(n)/n), h the lower convex hull of the run layer's
 * (activations, extra time) variants (the fractional choice, a relaxation
 * of the per-layer one). The least T at which the counts each device can
 * hold cover the run (and each of e's stages that must hold a run layer
 * gets one; with one chain and device e holding stage e alone, the start
 * and tail from every layer before e, chain_fits()) bounds every
 * partition's step time: the rounding is what the
 * averaged bounds miss (LLaMA-70B at v = 4: every device holds exactly 10
 * of the 80 layers), the recompute what they do at a binding limit (1 000
 * identical layers of 1F1B at twice the even parameter share: the first
 * device keeps p micro-batches and has to recompute most of its layers). */
typedef struct counts {
    psched__run run;
    double t, m;      /* the run layer's time without recompute; m·wmin */
    double param;     /* the run layer's parameters */
    /* its variants by rising extra time (ties: fewer activations first) */
    double act[PSCHED__RECOMPUTE_KINDS], extra[PSCHED__RECOMPUTE_KINDS];
    uint8_t kind[PSCHED__RECOMPUTE_KINDS];
    uint32_t kinds;
    double *base;     /* per device: start + tail + m·fixed */
    uint32_t *need;   /* per device: its stages that need a run layer */
    double *mfix;     /* per device: memory of its layers outside the run, at least */
    double *nin;      /* per device: fewest micro-batches in flight of its stages */
    /* one chain with device e holding stage e alone (1F1B and the other
     * v = 1 schedules): start and tail from the layers before e (chain_base()) */
    bool chain;
    double *fixed;    /* per device: m x its layers outside the run */
    /* each layer's recompute whole up to this many run layers per device
     * (counts_whole()), the fractional mix beyond */
    uint32_t whole;
} counts;

static void counts_free(counts *k)
{
    psched__dealloc(k->base);
    psched__dealloc(k->need);
    psched__dealloc(k->mfix);
    psched__dealloc(k->nin);
    psched__dealloc(k->fixed);
}

/* The parts above that do not depend on T; false (k freed) when the
 * bound does not apply. */
static bool counts_init(const certify *c, counts *k)
{
    const psched__problem *pb = c->pb;
    memset(k, 0, sizeof *k);
    if (!psched__run_shape(pb, &k->run))
        return false;
    uint32_t L = pb->layers, S = pb->stages, D = pb->devices;
    k->m = pb->microbatches * pb->wmin; /* every micro-batch weighs at least wmin */
    /* times without recompute: every layer has that variant, and the
     * others only add time */
    k->t = psched__range_time(pb, k->run.first, 1);
    k->param = psched__range_param(pb, k->run.first, 1);
    double ends[2] = {psched__range_time(pb, 0, 1), psched__range_time(pb, L - 1, 1)};
    if (!(k->t > 0))
        return false;
    const psched__group *g = &pb->model->groups[pb->group_of[k->run.first]];
    for (uint8_t v = 0; v < PSCHED__RECOMPUTE_KINDS; v++) {
        if (!g->variant[v].present)
            continue;
        uint32_t j = k->kinds++;
        for (; j > 0 && (k->extra[j - 1] > g->variant[v].extra ||
                         (k->extra[j - 1] == g->variant[v].extra &&
                          k->act[j - 1] > g->variant[v].act));
             j--) {
            k->act[j] = k->act[j - 1];
            k->extra[j] = k->extra[j - 1];
            k->kind[j] = k->kind[j - 1];
        }
        k->act[j] = g->variant[v].act;
        k->extra[j] = g->variant[v].extra;
        k->kind[j] = v;
    }
    k->base = psched__calloc(D, sizeof(double));
    k->need = psched__calloc(D, sizeof(uint32_t));
    k->mfix = psched__calloc(D, sizeof(double));
    k->nin = psched__calloc(D, sizeof(double));
    k->fixed = psched__calloc(D, sizeof(double));
    bool *seen = psched__calloc(D, sizeof(bool));
    if (!k->base || !k->need || !k->mfix || !k->nin || !k->fixed || !seen || !k->kinds) {
        psched__dealloc(seen);
        counts_free(k);
        return false;
    }
    for (uint32_t e = 0; e < D; e++)
        k->nin[e] = INFINITY;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t e = pb->device_of[s];
        if (!seen[e]) {
            seen[e] = true;
            k->base[e] += pb->wmin * pb->f_prefix[s]; /* one layer per earlier stage */
            if (c->tail_stage && c->tail_stage[e] >= 0)
                k->base[e] += tail_time(c, (uint32_t)c->tail_stage[e]);
        }
        bool head = s == 0 && k->run.head, tail = s == S - 1 && k->run.tail;
        for (int i = 0; i < 2; i++) {
            uint32_t l = i ? L - 1 : 0;
            if (!(i ? tail : head))
                continue;
            k->base[e] += k->m * ends[i];
            k->fixed[e] += k->m * ends[i];
            k->mfix[e] += psched__lean_memory(pb, s, l, 1);
        }
        k->need[e] += !(head || tail);
        k->nin[e] = fmin(k->nin[e], pb->inflight[s]);
    }
    psched__dealloc(seen);
    k->chain = pb->chains == 1 && S == D;
    for (uint32_t s = 0; s < S && k->chain; s++)
        k->chain = pb->device_of[s] == s &&
                   !(c->tail_stage && c->tail_stage[s] >= 0 && (uint32_t)c->tail_stage[s] != s);
    return true;
}

/* With k->chain: device e's start and tail when the stages before it hold
 * `before` run layers (and the first layer, when outside the run): the F
 * of all of them, and, when its last op is its stage's backward, their B
 * (each micro-batch at the lightest weight), and its fixed layers. */
static double chain_base(const counts *k, const certify *c, uint32_t e, uint32_t before)
{
    const psched__problem *pb = c->pb;
    uint32_t n = (e > 0 && k->run.head) + before;
    double b = pb->wmin * pb->f_prefix[n] + k->fixed[e];
    if (c->tail_stage && c->tail_stage[e] >= 0)
        b += tail_time(c, n);
    return b;
}

/* The least extra time per layer of a mix of the run layer's variants
 * whose activations average at most a (INFINITY: none). */
static double counts_hull(const counts *k, double a)
{
    double h = INFINITY;
    for (uint32_t i = 0; i < k->kinds; i++) {
        if (k->act[i] <= a) {
            h = fmin(h, k->extra[i]);
            continue;
        }
        for (uint32_t j = 0; j < k->kinds; j++) {
            if (k->act[j] > a)
                continue;
            /* i at share q, j at 1 - q, averaging exactly a */
            double q = (a - k->act[j]) / (k->act[i] - k->act[j]);
            h = fmin(h, q * k->extra[i] + (1 - q) * k->extra[j]);
        }
    }
    return h;
}

/* Up to this many run layers on a device the count bound takes each
 * layer's recompute whole (counts_whole(): O(n) per device and T), beyond
 * it the fractional mix (counts_hull()). */
#define COUNT_WHOLE_MAX 256

/* The least extra time of n run layers whose activations sum to at most
 * `room` when each layer takes one variant (INFINITY: none fits): per
 * count of the variant with the most extra time, the other two split at
 * the most layers of the faster that fit (exact for three variants). */
static double counts_whole(const counts *k, uint32_t n, double room)
{
    uint32_t nk = k->kinds, a = 0, b = nk > 1 ? 1 : 0, z = nk > 2 ? 2 : b;
    double best = INFINITY;
    for (uint32_t x2 = 0; x2 <= (nk > 2 ? n : 0); x2++) {
        uint32_t r = n - x2;
        double left = room - x2 * k->act[z];
        double x0;
        if (r * k->act[a] <= left)
            x0 = r;
        else if (k->act[a] <= k->act[b] || r * k->act[b] > left)
            continue;
        else
            x0 = fmin(r, floor((left - r * k->act[b]) / (k->act[a] - k->act[b])));
        best = fmin(best, (r - x0) * k->extra[b] + x2 * k->extra[z] + x0 * k->extra[a]);
    }
    return best;
}

/* Device e's least step time with n run layers (INFINITY: they cannot
 * fit its memory). */
static double counts_time(const counts *k, const psched__problem *pb, uint32_t e, double base,
                          uint32_t n)
{
    double r = 0;
    if (isfinite(pb->limit)) {
        double room = pb->limit * (1 + 1e-9) - k->mfix[e] - n * k->param;
        if (room < 0)
            return INFINITY;
        if (n > 0 && k->nin[e] > 0 && isfinite(k->nin[e])) {
            double a = room / k->nin[e]; /* the run layers' activations, at most */
            r = n <= k->whole ? counts_whole(k, n, a) : n * counts_hull(k, a / n);
            if (!isfinite(r))
                return INFINITY;
        } else if (n > 0) {
            r = n * counts_hull(k, INFINITY);
        }
    }
    return base + k->m * (n * k->t + r);
}

/* The most run layers device e can hold within T (-1: none, not even 0):
 * counts_time() does not fall as n rises. */
static int64_t counts_most(const counts *k, const psched__problem *pb, uint32_t e, double base,
                           double T)
{
    if (!(counts_time(k, pb, e, base, 0) <= T))
        return -1;
    uint32_t lo = 0, hi = k->run.count; /* time(lo) <= T */
    if (counts_time(k, pb, e, base, hi) <= T)
        return hi;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (counts_time(k, pb, e, base, mid) <= T)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* With k->chain: whether counts n_e (each at least need_e, summing to the
 * run) exist whose devices each fit T with the start and tail the layers
 * before them give (chain_base()). The sums of the first e counts that
 * can be reached form an interval [lo, hi]: from prefix q device e can
 * take need_e to most(q) layers, most() does not rise with q, and q +
 * most(q) does not fall (a layer more before e costs it at most
 * wmin·(f + b + w) <= m·t, the time of a layer of its own), so the next
 * interval is [lo + need_e, q* + most(q*)], q* the largest q <= hi with
 * most(q) >= need_e. */
static bool chain_fits(const counts *k, const certify *c, double T)
{
    const psched__problem *pb = c->pb;
    uint32_t lo = 0, hi = 0;
    for (uint32_t e = 0; e < pb->devices; e++) {
        int64_t need = k->need[e];
        if (counts_most(k, pb, e, chain_base(k, c, e, lo), T) < need)
            return false;
        uint32_t a = lo, b = hi; /* most(a) >= need; find the largest such q */
        while (b > a) {
            uint32_t mid = a + (b - a + 1) / 2;
            if (counts_most(k, pb, e, chain_base(k, c, e, mid), T) >= need)
                a = mid;
            else
                b = mid - 1;
        }
        int64_t top = a + counts_most(k, pb, e, chain_base(k, c, e, a), T);
        lo += (uint32_t)need;
        hi = top > (int64_t)k->run.count ? k->run.count : (uint32_t)top;
        if (lo > k->run.count)
            return false;
    }
    return lo <= k->run.count && k->run.count <= hi;
}

/* Whether the most run layers each device holds within T, each on its
 * own (start and tail at one layer per earlier stage), cover the run,
 * each device getting the ones its stages need. */
static bool counts_cover(const counts *k, const certify *c, double T)
{
    uint64_t held = 0;
    for (uint32_t e = 0; e < c->pb->devices; e++) {
        int64_t n = counts_most(k, c->pb, e, k->base[e], T);
        if (n < (int64_t)k->need[e])
            return false;
        held += (uint64_t)n;
    }
    return held >= k->run.count;
}

/* The least T the counts fit (the count bound) by bisection: *lo short
 * of it (the bound), *hi fitting (or, when nothing fits in any, the
 * bisection's end). */
static void count_least(const counts *k, const certify *c, double *lo_out, double *hi_out)
{
    const psched__problem *pb = c->pb;
    uint32_t D = pb->devices;
    /* feasibility grows with T: bisect between a T that fits nothing and
     * one that fits everything (or, when nothing fits in any, any T: the
     * answer is the largest T seen short) */
    double lo = 0, hi = 0, most = k->extra[k->kinds - 1];
    for (uint32_t e = 0; e < D; e++)
        hi = fmax(hi, k->base[e] + k->m * (k->t + most) * k->run.count +
                          pb->wmin * (pb->f_prefix[pb->layers] + pb->b_prefix[pb->layers]));
    for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; it++) {
        double T = 0.5 * (lo + hi);
        if (k->chain ? chain_fits(k, c, T) : counts_cover(k, c, T))
            hi = T;
        else
            lo = T;
    }
    *lo_out = lo;
    *hi_out = hi;
}

static double count_bound(const certify *c)
{
    counts k;
    if (!counts_init(c, &k))
        return 0;
    k.whole = test_whole_max != UINT32_MAX ? test_whole_max : COUNT_WHOLE_MAX;
    double lo, hi;
    count_least(&k, c, &lo, &hi);
    counts_free(&k);
    test_count_bound = lo;
    return lo;
}

/* The count bound's value, computed once for the tails it depends on
 * (find_tails() and the end's reset of the tails compute it again). */
static double count_value(certify *c)
{
    if (isnan(c->count_lb))
        c->count_lb = count_bound(c);
    return c->count_lb;
}

/* Whether the count bound proves the best. */
static bool count_proves(certify *c)
{
    return count_value(c) >= c->best * (1 - 1e-9);
}

/* The balanced-count candidate's recompute: the run layer's variants on
 * the lower convex hull of (activations, extra time), by falling
 * activations (rising extra), and per stage its run layers at each hull
 * point (scratch). */
typedef struct mixer {
    const counts *k;
    const certify *c;
    uint8_t hull[PSCHED__RECOMPUTE_KINDS];
    double act[PSCHED__RECOMPUTE_KINDS], extra[PSCHED__RECOMPUTE_KINDS];
    uint32_t nh;
    uint32_t *cnt; /* per stage: its run layers */
    uint32_t *at;  /* per stage s and hull point h: [s·nh + h] */
    bool most_first; /* a device's larger shares where the most are in flight */
} mixer;

static bool mixer_init(mixer *x, const counts *k, const certify *c)
{
    const psched__problem *pb = c->pb;
    memset(x, 0, sizeof *x);
    x->k = k;
    x->c = c;
    /* k's variants by falling activations, then rising extra */
    uint32_t v[PSCHED__RECOMPUTE_KINDS], n = k->kinds;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i;
        for (; j > 0 && (k->act[v[j - 1]] < k->act[i] ||
                         (k->act[v[j - 1]] == k->act[i] && k->extra[v[j - 1]] > k->extra[i]));
             j--)
            v[j] = v[j - 1];
        v[j] = i;
    }
    for (uint32_t i = 0; i < n; i++) {
        double act = k->act[v[i]], extra = k->extra[v[i]];
        while (x->nh && extra <= x->extra[x->nh - 1] && act <= x->act[x->nh - 1])
            x->nh--; /* as fast with fewer activations: the last is beaten */
        while (x->nh >= 2) {
            /* the last point above the chord from the one before to this */
            double a0 = x->act[x->nh - 2], e0 = x->extra[x->nh - 2];
            double a1 = x->act[x->nh - 1], e1 = x->extra[x->nh - 1];
            if ((e1 - e0) * (a0 - act) < (extra - e0) * (a0 - a1))
                break;
            x->nh--;
        }
        if (x->nh && act >= x->act[x->nh - 1])
            continue;
        x->hull[x->nh] = k->kind[v[i]];
        x->act[x->nh] = act;
        x->extra[x->nh++] = extra;
    }
    x->cnt = psched__calloc(pb->stages, sizeof(uint32_t));
    x->at = psched__calloc((size_t)pb->stages * PSCHED__RECOMPUTE_KINDS, sizeof(uint32_t));
    return x->nh && x->cnt && x->at;
}

static void mixer_free(mixer *x)
{
    psched__dealloc(x->cnt);
    psched__dealloc(x->at);
}

/* Device e's n run layers split over its stages (at most one apart, the
 * larger shares on the stages with the fewest micro-batches in flight, or
 * with x->most_first the most)
 * and their recompute: every layer at the fastest hull point, then,
 * while the device's memory passes the limit, layers moved one hull point
 * leaner where that saves the most memory per extra time (the stage's
 * in-flight count times the activations saved), as many at once as the
 * excess needs. Returns the extra time per micro-batch (INFINITY: no fit,
 * or a stage that needs a run layer gets none), x->cnt and x->at set. */
static double mixer_mix(mixer *x, uint32_t e, uint32_t n);

static double mixer_device(mixer *x, uint32_t e, uint32_t n)
{
    const psched__problem *pb = x->c->pb;
    uint32_t S = pb->stages, nst = 0;
    for (uint32_t s = 0; s < S; s++)
        nst += pb->device_of[s] == e;
    uint32_t each = nst ? n / nst : 0, more = nst ? n % nst : 0;
    for (uint32_t s = 0; s < S; s++)
        if (pb->device_of[s] == e)
            x->cnt[s] = each;
    for (; more > 0; more--) {
        uint32_t best = S;
        for (uint32_t s = S; s-- > 0;)
            if (pb->device_of[s] == e && x->cnt[s] == each &&
                (best == S || (x->most_first ? pb->inflight[s] > pb->inflight[best]
                                             : pb->inflight[s] < pb->inflight[best])))
                best = s;
        x->cnt[best]++;
    }
    double extra = mixer_mix(x, e, n);
    if (isfinite(extra) || nst < 2)
        return extra;
    /* no fit: the leanest split instead, one layer on each stage that
     * needs one and the rest on the stage with the fewest in flight */
    uint32_t lean = S, left = n;
    for (uint32_t s = 0; s < S; s++) {
        if (pb->device_of[s] != e)
            continue;
        bool ends = (s == 0 && x->k->run.head) || (s == S - 1 && x->k->run.tail);
        x->cnt[s] = !ends && left ? 1 : 0;
        left -= x->cnt[s];
        if (lean == S || pb->inflight[s] < pb->inflight[lean])
            lean = s;
    }
    x->cnt[lean] += left;
    return mixer_mix(x, e, n);
}

/* The recompute of device e's n run layers on its stages' counts x->cnt
 * (mixer_device()). */
static double mixer_mix(mixer *x, uint32_t e, uint32_t n)
{
    const psched__problem *pb = x->c->pb;
    const counts *k = x->k;
    uint32_t S = pb->stages, nh = x->nh;
    double mem = k->mfix[e] + n * k->param, extra = 0;
    for (uint32_t s = 0; s < S; s++) {
        if (pb->device_of[s] != e)
            continue;
        bool ends = (s == 0 && k->run.head) || (s == S - 1 && k->run.tail);
        if (!x->cnt[s] && !ends)
            return INFINITY;
        memset(x->at + (size_t)s * nh, 0, nh * sizeof *x->at);
        x->at[(size_t)s * nh] = x->cnt[s];
        mem += pb->inflight[s] * x->cnt[s] * x->act[0];
    }
    double excess = mem - psched__room(pb);
    while (excess > 0) {
        uint32_t bs = S, bh = 0;
        double ratio = -1;
        for (uint32_t s = 0; s < S; s++) {
            if (pb->device_of[s] != e)
                continue;
            for (uint32_t h = 0; h + 1 < nh; h++) {
                if (!x->at[(size_t)s * nh + h])
                    continue;
                double save = pb->inflight[s] * (x->act[h] - x->act[h + 1]);
                double r = save / fmax(x->extra[h + 1] - x->extra[h], 1e-300);
                if (save > 0 && r > ratio) {
                    ratio = r;
                    bs = s;
                    bh = h;
                }
                break; /* its leaner points save less per time (convex) */
            }
        }
        if (bs == S)
            return INFINITY;
        uint32_t *from = &x->at[(size_t)bs * nh + bh];
        double save = pb->inflight[bs] * (x->act[bh] - x->act[bh + 1]);
        double want = ceil(excess / save);
        uint32_t q = want < *from ? (uint32_t)want : *from;
        *from -= q;
        from[1] += q;
        excess -= q * save;
        extra += q * (x->extra[bh + 1] - x->extra[bh]);
    }
    return extra;
}

static double mixer_time(mixer *x, uint32_t e, uint32_t n)
{
    return x->k->fixed[e] + x->k->m * (n * x->k->t + mixer_device(x, e, n));
}

/* The most run layers (at least `need`) device e holds within T, -1 when
 * not even that many (the time rising with n, nearly: a binary search). */
static int64_t mixer_most(mixer *x, uint32_t e, double T)
{
    uint32_t lo = x->k->need[e], hi = x->k->run.count;
    if (lo > hi || !(mixer_time(x, e, lo) <= T))
        return -1;
    if (mixer_time(x, e, hi) <= T)
        return hi;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (mixer_time(x, e, mid) <= T)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* A partition with balanced devices (one chain, a run of identical layers
 * between the first and the last, a memory limit): the run layers per
 * device whose per-micro-batch time with its recompute (mixer_device())
 * has the least largest (the slowest device paces the order), trimmed
 * where their sum passes the run at the slowest; each device's layers
 * split evenly over its stages. At scale, where the solvers' tables do not
 * fit the time, it is far faster than their partitions (1 000 layers of
 * 1F1B at 1 s: 15 772 against the even split's 19 500, which had full
 * recompute everywhere). With `most_first` each device's larger shares go
 * where the most micro-batches are in flight instead (count_descents()).
 * True with sol (initialised here; the caller frees it) set to a partition
 * that fits. */
static bool count_partition(certify *c, bool most_first, psched__solution *sol)
{
    const psched__problem *pb = c->pb;
    counts k;
    memset(sol, 0, sizeof *sol);
    if (pb->chains != 1 || !isfinite(pb->limit) || !counts_init(c, &k))
        return false;
    uint32_t D = pb->devices, S = pb->stages, L = pb->layers;
    uint32_t *n = psched__calloc((size_t)D + 1, sizeof(uint32_t));
    mixer x;
    bool ok = mixer_init(&x, &k, c) && n;
    x.most_first = most_first;
    double lo = 0, hi = 0;
    for (uint32_t e = 0; ok && e < D; e++)
        hi = fmax(hi, k.fixed[e] + k.m * (k.t + x.extra[x.nh - 1]) * k.run.count);
    for (int it = 0; ok && it < 60 && hi - lo > 1e-9 * hi; it++) {
        double T = 0.5 * (lo + hi), held = 0;
        bool fit = true;
        for (uint32_t e = 0; e < D && fit; e++) {
            int64_t most = mixer_most(&x, e, T);
            fit = most >= 0;
            held += (double)most;
        }
        if (fit && held >= k.run.count)
            hi = T;
        else
            lo = T;
    }
    uint64_t held = 0;
    for (uint32_t e = 0; ok && e < D; e++) {
        int64_t most = mixer_most(&x, e, hi);
        ok = most >= 0;
        n[e] = ok ? (uint32_t)most : 0;
        held += n[e];
    }
    ok = ok && held >= k.run.count;
    for (; ok && held > k.run.count; held--) {
        /* one layer off the slowest device that can spare one */
        uint32_t at = D;
        double slowest = -INFINITY;
        for (uint32_t e = 0; e < D; e++) {
            double t = mixer_time(&x, e, n[e]);
            if (n[e] > k.need[e] && t > slowest) {
                slowest = t;
                at = e;
            }
        }
        ok = at < D;
        if (ok)
            n[at]--;
    }
    ok = ok && psched__solution_init(sol, S, L) == PSCHED_OK;
    /* each device's split and recompute again (a device's call writes its
     * own stages' slots of x only) */
    for (uint32_t e = 0; ok && e < D; e++)
        ok = isfinite(mixer_device(&x, e, n[e]));
    for (uint32_t s = 0, l = 0; ok && s < S; s++) {
        bool head = s == 0 && k.run.head, tail = s == S - 1 && k.run.tail;
        sol->first[s] = l;
        sol->count[s] = x.cnt[s] + head + tail;
        if (head)
            sol->choice[l++] = psched__lean_kind(&pb->model->groups[pb->group_of[0]]);
        for (uint32_t h = 0; h < x.nh; h++)
            for (uint32_t i = 0; i < x.at[(size_t)s * x.nh + h]; i++)
                sol->choice[l++] = x.hull[h];
        if (tail)
            sol->choice[l++] = psched__lean_kind(&pb->model->groups[pb->group_of[L - 1]]);
        ok = l <= L && (s + 1 < S || l == L);
    }
    /* the problem's own memory rule, as every candidate meets it */
    psched__evaluation ev;
    memset(&ev, 0, sizeof ev);
    if (ok) {
        sol->found = true;
        ok = psched__evaluation_init(pb, &ev) == PSCHED_OK;
        if (ok)
            psched__evaluate(pb, sol, &ev);
        ok = ok && psched__fits(pb, ev.max_mem);
        psched__evaluation_free(&ev);
    }
    mixer_free(&x);
    counts_free(&k);
    psched__dealloc(n);
    return ok;
}

/* Of the time left, what each descent of count_descents() takes at most
 * (the certificate's op budget stops it sooner: 0.01-0.09 s on the grid's
 * p = 8 and 16 rows; 2^20 ops a descent in the planner). */
#define COUNT_DESCENT_SHARE (IMPROVE_SHARE / 2)

/* Descents from the balanced counts (twenty-fifth pass of issue 17 item
 * 5): where devices hold two stages or more and the order is every
 * partition's (elsewhere each simulation generates the order again: v-half
 * took 0.15-0.59 s a candidate in the planner, for nothing faster), the
 * local search from the balanced-count partition with each device's larger
 * shares where the fewest micro-batches are in flight and, again, where
 * the most are (on a V placement, more layers on the first chunk with
 * recompute: the grid's L = 80, p = 16 v-zb 1215.35 -> 1191.7, a region
 * the descent from the solvers' partition does not reach), each with
 * COUNT_DESCENT_SHARE of the time left and the certificate's op budget.
 * Each descent improves its own start; the faster end goes to `aside`
 * (its step time to `aside_time`), not to the best: started from it, the
 * searches end elsewhere (L = 128, p = 16 v-zb: 1861.95 where they reach
 * 1833.2 from their own), so psched__certify() compares it last. Runs
 * once a certificate (nothing when `aside` is already set up); in the
 * test hooks' improve-only certificate only with test_descents. */
static void count_descents(certify *c, psched__solution *aside, double *aside_time)
{
    psched__problem *pb = c->pb;
    if (aside->first || pb->stages <= pb->devices || !c->best_sol.found || !c->static_order ||
        test_no_improve || test_slowest_start || (test_improve_only && !test_descents))
        return;
    c->st = psched__solution_init(aside, pb->stages, pb->layers);
    for (int most = 0; most < (test_descents == 2 ? 1 : 2) && !c->st && !psched__expired(pb);
         most++) {
        psched__solution start;
        double t = INFINITY;
        if (count_partition(c, most, &start))
            c->st = simulate_solution(c, &start, &t, NULL, NULL);
        if (!c->st && isfinite(t)) {
            improve_for(c, &start, &t, COUNT_DESCENT_SHARE, c->budget);
            if (t < *aside_time) {
                *aside_time = t;
                psched__solution_copy(pb, &start, aside);
            }
        }
        psched__solution_free(&start);
    }
}

/* The balanced-count partition (count_partition()), considered like a
 * candidate. */
static void count_candidate(certify *c)
{
    psched__solution sol;
    if (count_partition(c, false, &sol)) {
        consider(c, &sol);
        uint32_t S = c->pb->stages, L = c->pb->layers;
        if (S <= TEST_CAND_STAGES && L <= TEST_CAND_LAYERS) {
            test_cand_made = true;
            memcpy(test_cand_count, sol.count, S * sizeof *sol.count);
            memcpy(test_cand_choice, sol.choice, L * sizeof *sol.choice);
        }
    }
    psched__solution_free(&sol);
}

/* The device search's op budget: this many times PSCHED__CERTIFY_OPS (a
 * node evaluates the whole order once; LLaMA-70B at v = 4 needs 15 000 to
 * 55 000 nodes of 6 144 ops), in the planner too, where the time limit
 * bounds it (the planner's smaller certificate budget capped it at about
 * a second, whatever the time: Gemma2-9B's interleaved at v = 4 was not
 * proven in 5 s). */
#define DEVSEARCH_OPS_FACTOR 256
/* Shares of the time left: the first pass and the second (after the run
 * MILP), which resumes it. With them the LLaMA-70B interleaved v = 4
 * search fits the planner's 1 s per candidate (a first share of 35% did
 * not at the fourth pass). The first was 70% from the ninth pass (DualPipe
 * at L = 80, p = 8 on the grid was then proven at 5 s with 70%, not with
 * half) and is half again since the bound passes (seventeenth pass): the
 * grid's rows the first pass does not prove gain more from the time left
 * to the run MILP and the bound passes (L = 80, p = 16 DualPipe 2.06% ->
 * 1.1%), DualPipe at p = 8 is proven in 1.5 and 2.8 s with half, and no
 * example profile's status or step time changes, in `partition` at 5 s or
 * in the planner at 1 s per candidate. The second (resumed) pass had 60%
 * until then; a quarter leaves the bound passes more (L = 128, p = 16
 * interleaved at v = 4 6.17% -> 5.78%, interleaved-zb 2.10% -> 1.78%; a
 * tenth gave the same) and the profiles do not move, Gemma2-9B
 * interleaved-zb at 60 GB in the planner at 5 s per candidate included
 * (proven by the resumed pass). */
#define DEVSEARCH_FIRST_SHARE 0.5
/* DualPipe's first share where the run MILP takes the whole DAG: GLPK,
 * started from the best partition, proves the grid's DualPipe rows sooner
 * than the device search (L = 80 and 128, p = 8: 1.4 -> 0.4 s and 2.7 ->
 * 0.5 s; p = 16, L = 80: proven in 3.9 s, `feasible` at 0.06% before;
 * L = 128 0.11% -> 0.03%), and the example profiles' DualPipe candidates
 * are proven as before (docs/optimizer-passes.md, twentieth pass). */
#define DEVSEARCH_FIRST_SHARE_DAG 0.05
#define DEVSEARCH_SECOND_SHARE 0.25

static psched_status device_consider(void *ctx, const psched__solution *sol, double *makespan,
                                     double *best)
{
    certify *c = ctx;
    psched_status st = simulate_solution(c, sol, makespan, NULL, NULL);
    if (!st && *makespan < c->best) {
        c->best = *makespan;
        psched__solution_copy(c->pb, sol, &c->best_sol);
    }
    *best = c->best;
    return st;
}

/* The device search (devsearch.h) where the order is every partition's
 * and the layers form a run: each device holds between lo and hi run
 * layers, hi from the layer count bound at the best step time (a device
 * with more cannot be in a faster partition) and lo from the others' hi.
 * True when it proves the best optimal; *unfinished when it ran and
 * stopped early, *dove when its pass ended after a dive that found a
 * faster partition (psched__devsearch.dove), *below when it searched
 * everything below `threshold` (> 0: a bound pass, from the root; 0: the
 * search for the best, resumed where it stopped). Until `until`. */
static bool device_run(certify *c, double until, double threshold, bool *unfinished, bool *dove,
                       bool *below)
{
    *unfinished = *dove = *below = false;
    psched__problem *pb = c->pb;
    if (!c->static_order || !isfinite(c->best) ||
        !psched__devsearch_applies(pb, c->work, c->static_order))
        return false;
    uint32_t D = pb->devices;
    counts k;
    uint32_t *lo = psched__calloc(D, sizeof(uint32_t));
    uint32_t *hi = psched__calloc(D, sizeof(uint32_t));
    bool proven = false, have = lo && hi && counts_init(c, &k);
    if (have) {
        /* a device with more (its recompute included) cannot be in a
         * faster partition */
        double sum_hi = 0;
        for (uint32_t e = 0; e < D; e++) {
            int64_t n = counts_most(&k, pb, e, k.base[e], c->best * (1 + 1e-9));
            hi[e] = n <= 0 ? 0 : (uint32_t)n;
            sum_hi += hi[e];
        }
        for (uint32_t e = 0; e < D; e++) {
            double others = sum_hi - hi[e];
            lo[e] = others >= k.run.count ? 0 : k.run.count - (uint32_t)others;
        }
        psched__devsearch ds;
        memset(&ds, 0, sizeof ds);
        ds.pb = pb;
        ds.run = &k.run;
        ds.order = c->static_order;
        ds.lo = lo;
        ds.hi = hi;
        ds.base = k.base;
        ds.until = until;
        ds.ops_budget = DEVSEARCH_OPS_FACTOR * PSCHED__CERTIFY_OPS;
        ds.best = c->best;
        ds.threshold = threshold;
        ds.best_sol = &c->best_sol;
        ds.consider = device_consider;
        ds.ctx = c;
        ds.state = c->dev_state;
        psched_status st = psched__devsearch_run(&ds);
        c->dev_state = ds.state;
        if (st && !c->st)
            c->st = st;
        proven = !st && ds.complete;
        *dove = !st && ds.dove;
        *below = !st && ds.below;
        *unfinished = !st && !ds.complete && ds.nodes > 0;
        if (!st)
            c->dev_lb = fmax(c->dev_lb, ds.bound);
    }
    if (have)
        counts_free(&k);
    psched__dealloc(lo);
    psched__dealloc(hi);
    return proven;
}

/* The device search for the best with `share` of the time left. */
static bool device_certify(certify *c, double share, bool *unfinished, bool *dove)
{
    bool below;
    double until = psched__now() + share * fmax(0, c->pb->deadline - psched__now());
    return device_run(c, until, 0, unfinished, dove, &below);
}

/* Bound passes (docs/optimizer.md, "The device search", *Bound passes*):
 * where the search for the best stopped with its bound at its root (depth
 * first, the open bound rises only when a root child is closed, and under
 * the best the subtrees hold millions of nodes), passes from the root that
 * search only below a threshold T between the bound and the best: each
 * that ends proves every partition at least T (or finds a faster one),
 * and the nodes below T grow about tenfold for every fifth of the gap
 * (L = 80, p = 16 interleaved-zb at v = 4: 75, 456, 4 783 and 79 200 nodes
 * at 0.8, 1.8, 3.8 and 7.8 above the root's 1216.2, best 1230.2). The
 * step starts at a sixteenth of the gap and doubles while a pass takes
 * less than a tenth of the time left; a pass stopped by the time or its
 * budget still bounds (its open subtrees' least, children by rising
 * bound). True when a pass proves the best. At most `share` of the time
 * left. */
#define BOUND_PASS_FIRST_STEP (1.0 / 16)
/* of the time left after the other bounds (the search gets the rest) */
#define BOUND_PASS_SHARE 0.7
static bool device_bound_passes(certify *c, double share)
{
    psched__problem *pb = c->pb;
    double until = psched__now() + share * fmax(0, pb->deadline - psched__now());
    double lb = fmax(fmax(c->path_lb, c->dev_lb), count_value(c));
    double step = (c->best - lb) * BOUND_PASS_FIRST_STEP;
    while (!c->st && lb < c->best * (1 - 1e-9) && psched__now() < until) {
        double t = fmin(lb + step, c->best), t0 = psched__now();
        bool unfinished, dove, below;
        if (device_run(c, until, t, &unfinished, &dove, &below))
            return true;
        if (!below)
            break; /* stopped: its bound is in c->dev_lb */
        lb = t; /* (a best found below t would have made the pass a proof) */
        test_bound_passes++;
        if (psched__now() - t0 < 0.1 * (until - psched__now()))
            step *= 2;
    }
    return false;
}

static double overlap_bound(const psched__problem *pb);

/* A bound every partition's step time respects (for the gap when the
 * search stops early): the shared work and one micro-batch's path, each
 * micro-batch at the lightest weight; with an overlap saving, the busy
 * time's (overlap_bound()). */
double psched__partition_floor(const psched__problem *pb)
{
    if (pb->overlap)
        return overlap_bound(pb);
    double m = pb->microbatches * pb->wmin, slowest = 0;
    for (uint32_t l = 0; l < pb->layers; l++)
        slowest = fmax(slowest, psched__range_time(pb, l, 1));
    double work = m * fmax(pb->time_total / pb->devices, slowest);
    return fmax(work, pb->wmin * (pb->f_prefix[pb->layers] + pb->b_prefix[pb->layers]));
}

/* With an overlap saving (pb->overlap) the bounds above, which charge
 * every op its full time, do not hold: an overlapped F&B pair takes
 * t_F + t_B − s. What does: every pair holds one F, so the devices' busy
 * time is at least the ops' time less s_max for each F op (m per stage
 * of each chain), each micro-batch at the lightest weight, shared by the
 * devices. */
static double overlap_bound(const psched__problem *pb)
{
    double smax = 0;
    for (uint32_t s = 0; s < pb->plan_stages; s++)
        smax = fmax(smax, pb->overlap[s]);
    double per_chain = (double)pb->plan_stages / pb->chains;
    double busy = (double)pb->microbatches * pb->chains * pb->wmin *
                  (pb->time_total - per_chain * smax);
    return fmax(0, busy / pb->plan_devices);
}

psched_status psched__certify(psched__problem *pb, const char *name, const psched_plan *plan,
                              const psched__solution *const *candidates, size_t count,
                              psched__solution *sol, psched__certificate *out)
{
    certify c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    test_count_bound = 0;
    test_run_tree = 0;
    test_run_dag_z = 0;
    test_cand_made = false;
    psched__devsearch_test_forget();
    c.pb = pb;
    c.name = name;
    c.best = INFINITY;
    c.count_lb = NAN;
    c.budget = pb->certify_ops;

    psched_status st = psched_plan_clone(plan, &c.work);
    if (!st)
        st = psched_plan_clone(plan, &c.partial);
    c.use_partial = true;
    for (uint32_t t = 0; !st && t < pb->plan_stages && c.use_partial; t++)
        c.use_partial = psched_plan_set_stage_cost(c.partial, t, 0, 0, 0) == PSCHED_OK &&
                        psched_plan_set_stage_mem(c.partial, t, 0, 0, 0) == PSCHED_OK;
    if (!st)
        st = psched__solution_init(&c.cur, pb->stages, pb->layers);
    if (!st)
        st = psched__solution_init(&c.best_sol, pb->stages, pb->layers);
    c.cur.found = true; /* complete whenever the search simulates it */
    c.dev_work = psched__calloc(pb->devices, sizeof(double));
    c.dev_mem = psched__calloc(pb->devices, sizeof(double));
    c.dev_start = psched__calloc(pb->devices, sizeof(double));
    c.dev_stages = psched__calloc(pb->devices, sizeof(uint32_t));
    c.lens = psched__calloc(((size_t)pb->layers + 1) * pb->stages, sizeof(uint32_t));
    c.last_on_device = psched__calloc(pb->stages, sizeof(bool));
    c.left_on = psched__calloc(pb->devices, sizeof(uint32_t));
    if (pb->model->group_count <= COUNT_GROUPS_MAX)
        c.by_time = psched__calloc(pb->model->group_count + 1, sizeof(uint32_t));
    c.group_end = psched__calloc(pb->model->group_count + 1, sizeof(uint32_t));
    if (!st && !c.group_end)
        st = PSCHED_ENOMEM_FAIL();
    for (uint32_t g = 0, end = 0; !st && g < pb->model->group_count; g++)
        c.group_end[g] = end += pb->model->groups[g].count;
    if (!st && (!c.dev_work || !c.dev_mem || !c.dev_start || !c.dev_stages || !c.lens ||
                !c.last_on_device || !c.left_on))
        st = PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; !st && s < pb->stages; s++)
        c.left_on[pb->device_of[s]]++;
    /* groups by base time (insertion sort: few) */
    for (uint32_t g = 0; c.by_time && g < pb->model->group_count; g++) {
        const psched__group *x = &pb->model->groups[g];
        uint32_t q = g;
        while (q > 0) {
            const psched__group *y = &pb->model->groups[c.by_time[q - 1]];
            if (y->f + y->b + y->w <= x->f + x->b + x->w)
                break;
            c.by_time[q] = c.by_time[q - 1];
            q--;
        }
        c.by_time[q] = g;
    }
    for (uint32_t s = 0; !st && s < pb->stages; s++) {
        c.last_on_device[s] = true;
        for (uint32_t t = s + 1; t < pb->stages && c.last_on_device[s]; t++)
            c.last_on_device[s] = pb->device_of[t] != pb->device_of[s];
    }
    /* Whether the generator's order ignores the costs (it read none). */
    if (!st && !test_regenerate) {
        st = psched_generate(c.work, name, &c.static_order);
        if (!st && !psched__schedule_order_ignores_costs(c.static_order)) {
            psched_schedule_destroy(c.static_order);
            c.static_order = NULL;
        }
    }
    /* Candidates first, the solver's first: ties keep it. */
    size_t slowest = SIZE_MAX;
    double slowest_time = -INFINITY;
    for (size_t k = 0; !st && k < count; k++) {
        if (!candidates[k] || !candidates[k]->found)
            continue;
        if (test_slowest_start) {
            double mk;
            st = simulate_solution(&c, candidates[k], &mk, NULL, NULL);
            if (!st && mk > slowest_time) {
                slowest_time = mk;
                slowest = k;
            }
            continue;
        }
        consider(&c, candidates[k]);
        st = c.st;
    }
    if (!st && slowest != SIZE_MAX) {
        consider(&c, candidates[slowest]); /* test hook: from the slowest alone */
        st = c.st;
    }

    /* a better incumbent first: the bounds and the search start from it */
    if (!st && !test_no_improve) {
        improve(&c);
        st = c.st;
        if (test_improve_only)
            c.stopped = true; /* the test checks the local search's answer alone */
    }
    bool fixed = false, run_proven = false, dev_proven = false, count_proven = false;
    psched__solution aside; /* count_descents()' best */
    memset(&aside, 0, sizeof aside);
    double aside_time = INFINITY;
    if (!st && c.best_sol.found)
        st = order_is_fixed(&c, &c.best_sol, &fixed);
    /* The layer count bound first (cheap, its tails from every partition's
     * order): where it reaches the best, the best is proven and nothing
     * below runs (the grid's L = 80, p = 4 looped-bfs at v = 4: its device
     * search has too many options to start) */
    if (!st && c.best_sol.found && !c.tail_stage && c.static_order && pb->chains == 1)
        st = find_tails(&c, c.static_order);
    if (!st && c.best_sol.found && !pb->overlap && !test_improve_only)
        count_proven = count_proves(&c);
    /* The solvers' frontiers stop at a bound of the estimate; the step
     * time's own: a stage whose m micro-batches alone take longer than the
     * best simulated time cannot be in a faster partition. */
    if (!st && c.best_sol.found) {
        if (pb->table) {
            for (uint32_t i = 0; i <= pb->layers; i++)
                psched__fronts_free(&pb->table[i]);
            psched__dealloc(pb->table);
            pb->table = NULL;
        }
        pb->tau_max = c.best / (pb->microbatches * pb->wmin) * (1 + 1e-9);
        pb->truncated = false;
        st = psched__fronts_table(pb);
    }
    /* the critical-path bound where it holds */
    if (!st && c.best_sol.found && fixed && !test_improve_only && !pb->truncated && c.best > 0 &&
        !count_proven && (double)pb->stages * (double)pb->table_points <= PATH_DP_STEPS_MAX) {
        st = psched__write_costs(pb, &c.best_sol, c.work);
        if (!st)
            st = psched_generate(c.work, name, &c.ref);
        if (!st && pb->chains == 1 && !c.tail_stage)
            st = find_tails(&c, c.ref);
        /* whether the run MILP can take the order's whole DAG (exact), or
         * else the DAG of some of its micro-batches (a bound) */
        psched__run run;
        uint32_t stride = 0;
        if (!st && psched__have_glpk() && psched__run_shape(pb, &run) && test_run_dag != 1)
            stride = test_run_dag == 2 ? (test_run_stride > 1 ? test_run_stride : 1)
                                       : psched__run_dag_stride(psched__run_dag_units(c.ref),
                                                                pb->stages / pb->devices,
                                                                pb->deadline - psched__now());
        /* the device search first with half the time (it proves
         * LLaMA-70B's v = 4 candidates in under a second; DualPipe's, where
         * the DAG's MILP follows, a twentieth), then the run MILP, which
         * often finds a much faster incumbent (Gemma2-9B), then the device
         * search again, resumed where it stopped (devsearch.h), with a
         * quarter of what is left */
        double first = pb->chains == 2 && stride == 1 ? DEVSEARCH_FIRST_SHARE_DAG
                                                      : DEVSEARCH_FIRST_SHARE;
        bool dev_again = false, dove = false;
        if (!st && !test_no_device_search)
            dev_proven = device_certify(&c, first, &dev_again, &dove);
        st = st ? st : c.st;
        if (!st && !dev_proven && dove) {
            /* the dive's partition is a new start for the local search
             * (LLaMA-70B looped-bfs at v = 4 and 60 GB: 2169.44 -> 2165.8,
             * the optimum, which the search's root bound then proves at
             * once), then the search itself */
            if (!test_no_improve)
                improve(&c);
            st = c.st;
            if (!st)
                dev_proven = device_certify(&c, first, &dev_again, &dove);
            st = st ? st : c.st;
        }
        /* the device search's polish and dive may have found a faster
         * partition: the count bound again */
        if (!st && !dev_proven && !test_improve_only)
            count_proven = count_proves(&c);
        /* what the device search did not prove: descents from the balanced
         * counts, kept aside to the end */
        if (!st && !dev_proven && !count_proven) {
            count_descents(&c, &aside, &aside_time);
            st = c.st;
        }
        double before_run = c.best;
        if (!st && !dev_proven && !count_proven && psched__paths_applies(c.work, c.ref)) {
            st = psched__paths_init(&c.paths, pb);
            if (!st)
                st = psched__mult_init(&c.mult, pb, false);
            if (!st)
                st = psched__mult_init(&c.trial, pb, true);
            c.xbuf = psched__calloc(3 * (size_t)pb->stages + pb->devices, sizeof(double));
            if (!st && !c.xbuf)
                st = PSCHED_ENOMEM_FAIL();
            c.use_paths = !st;
        }
        /* the run MILP over the reference order's DAG where it is small
         * enough (exact), or over some of its micro-batches (a bound) */
        c.run_stride = c.use_paths ? stride : 0;
        if (!st && c.use_paths) {
            path_root(&c, candidates, count);
            st = c.st;
        }
        /* unless the root's bound proved the best already (the DAG's MILP
         * would search its tree to prove it again: LLaMA-70B's dualpipev
         * and v-half candidates in the planner 0.7 -> 3 s) */
        if (!st && c.use_paths && c.path_lb < c.best * (1 - 1e-9))
            run_proven = run_certify(&c);
        st = st ? st : c.st;
        if (!st && !run_proven && !dev_proven && (dev_again || c.best < before_run) &&
            !test_no_device_search)
            dev_proven = device_certify(&c, DEVSEARCH_SECOND_SHARE, &dev_again, &dove);
        st = st ? st : c.st;
        /* a faster partition from the run MILP or the second pass may
         * meet the count bound: the rest is then skipped (the grid's
         * L = 128, p = 4 looped-bfs at v = 4: the second pass's 1706.6 is
         * the count bound's, proven in 4.7 s, not at the deadline) */
        if (!st && !run_proven && !dev_proven && !count_proven && c.best < before_run &&
            !test_improve_only)
            count_proven = count_proves(&c);
        if (!st && c.have_mult && !run_proven && !dev_proven && !count_proven)
            st = path_library(&c);
        if (!st && !run_proven && !dev_proven && !count_proven && !test_no_device_search &&
            !test_no_bound_passes)
            dev_proven = device_bound_passes(&c, BOUND_PASS_SHARE);
        st = st ? st : c.st;
    }
    /* the descents where the bounds above did not run them (or, in a
     * test, after the local search alone) */
    if (!st && !run_proven && !dev_proven && !count_proven) {
        count_descents(&c, &aside, &aside_time);
        st = c.st;
    }
    /* its cuts charge every op its full time: not with an overlap saving */
    if (!st && c.best_sol.found && !c.stopped && !run_proven && !dev_proven && !count_proven &&
        !pb->overlap) {
        c.stopped = false;
        c.searching = true;
        search(&c, 0, 0, 0);
        st = c.st;
    }
    /* Last, the balanced counts where they apply: a faster partition than
     * the searches left (at scale, where they had no time), never their
     * start (the local search, the device search's dive and the search
     * from a different incumbent end elsewhere: LLaMA-70B looped-bfs at
     * v = 4 and 60 GB was no longer proven, 2171.13 for 2165.8) */
    if (!st && !test_slowest_start) {
        count_candidate(&c);
        st = c.st;
    }
    /* the descents' best where it is faster (a faster partition than a
     * proof's best would be the proof's error: then only the bounds prove) */
    if (!st && aside.found && aside_time < c.best) {
        consider(&c, &aside);
        st = c.st;
        run_proven = dev_proven = count_proven = false;
        c.stopped = true;
    }
    /* the tails for the count bound where the critical-path pass did not
     * run (too large a table): every partition's order's */
    if (!st && c.best_sol.found && fixed && !c.order_changed && !c.tail_stage &&
        c.static_order && pb->chains == 1)
        st = find_tails(&c, c.static_order);
    if (!st && c.best_sol.found) {
        psched__solution_copy(pb, &c.best_sol, sol);
        out->makespan = c.best;
        fixed = fixed && !c.order_changed;
        /* the run MILP covers every partition, the table's or not */
        out->proven = fixed && !c.stopped && !pb->overlap &&
                      (run_proven || dev_proven || (!pb->truncated && !psched__expired(pb)));
        /* with an overlap saving only the busy-time bound (overlap_bound()):
         * the others charge every op its full time */
        double lb = psched__partition_floor(pb);
        if (!pb->overlap) {
            if (fixed && c.path_lb > 0)
                lb = fmax(lb, c.path_lb);
            if (fixed)
                lb = fmax(lb, c.dev_lb);
            /* its tails hold for the reference order only */
            if (!fixed && c.tail_stage) {
                for (uint32_t e = 0; e < pb->devices; e++)
                    c.tail_stage[e] = -1;
                c.count_lb = NAN;
            }
            out->count_bound = count_value(&c);
            lb = fmax(lb, out->count_bound);
        }
        /* a bound of every partition at the best proves it (any order) */
        out->proven = out->proven || lb >= c.best * (1 - 1e-9);
        out->bound = out->proven ? c.best : fmin(c.best, lb);
        out->simulated = c.simulated;
    }
    psched_plan_destroy(c.work);
    psched_plan_destroy(c.partial);
    psched_schedule_destroy(c.ref);
    psched_schedule_destroy(c.static_order);
    psched__paths_free(&c.paths);
    psched__mult_free(&c.mult);
    psched__mult_free(&c.trial);
    psched__dealloc(c.pre);
    psched__dealloc(c.stage_w);
    for (size_t t = 0; t < c.nlib; t++)
        psched__mult_free(&c.lib[t]);
    psched__dealloc(c.lib);
    psched__dealloc(c.xbuf);
    psched__solution_free(&c.cur);
    psched__solution_free(&c.best_sol);
    psched__solution_free(&aside);
    psched__dealloc(c.dev_work);
    psched__dealloc(c.dev_mem);
    psched__dealloc(c.dev_start);
    psched__dealloc(c.dev_stages);
    psched__dealloc(c.lens);
    psched__dealloc(c.last_on_device);
    psched__dealloc(c.left_on);
    psched__dealloc(c.by_time);
    psched__dealloc(c.tail_stage);
    psched__dealloc(c.group_end);
    psched__devsearch_free(&c.dev_state);
    return st;
}
