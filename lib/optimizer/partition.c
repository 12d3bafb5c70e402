/* psched_partition(): argument checks, the problem, the method's solver
 * (baselines, DPs, two-walker DP, MILP), the certificate for the simulated
 * step time, and the result. The driver: it calls every module, none calls
 * it. DESIGN §6, docs/optimizer.md. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local bool force_milp;

void psched__partition_force_milp(bool on)
{
    force_milp = on;
}

static _Thread_local bool skip_certify;

void psched__partition_skip_certify(bool on)
{
    skip_certify = on;
}

/* The incumbent the exact searches start from: the best fitting of
 * Megatron's even split, the accounted even split and the stage DP's
 * solution (each stage held to 1/v of the memory), so no search returns a
 * partition the baselines beat. The even splits come first: their best
 * objective bounds every stage's time in a better partition (a stage's
 * device takes at least its time, and kappa >= 0 weighs at least the base
 * time), so pb->tau_max keeps the frontiers to ranges that can matter.
 * seed->found is false when none fits; *objective is then INFINITY.
 * *dp_complete says whether the stage DP ran to its end. */
static psched_status best_seed(psched__problem *pb, psched__evaluation *ev, psched__solution *seed,
                               double *objective, bool *dp_complete)
{
    psched__solution cand;
    psched_status st = psched__solution_init(&cand, pb->stages, pb->layers);
    *objective = INFINITY;
    *dp_complete = false;
    seed->found = false;
    for (int k = 0; !st && k < 3; k++) {
        cand.found = false;
        if (k == 2) {
            double c = (pb->microbatches - 1.0) * fmax(1, pb->lambda);
            if (isfinite(*objective) && c > 0 && pb->kappa >= 0) {
                double tau = (*objective - pb->kappa * pb->time_total) / c;
                pb->tau_max = tau + 1e-9 * fmax(1, fabs(tau));
            }
            st = psched__stage_dp(pb, &cand, dp_complete);
        } else if (psched__even_split(pb, k == 1, &cand) == PSCHED_OK) {
            psched__uniform_recompute(pb, &cand, ev);
        } else {
            cand.found = false;
        }
        if (st || !cand.found)
            continue;
        psched__evaluate(pb, &cand, ev);
        if (psched__fits(pb, ev->max_mem) && ev->objective < *objective) {
            *objective = ev->objective;
            psched__solution_copy(pb, &cand, seed);
        }
    }
    psched__solution_free(&cand);
    return st;
}

/* The search for the smallest memory (minmem.c), run once per call: its
 * figure and whether it is the minimum, and its best split in
 * pb->mm_split when it found one. */
static psched_status search_min_memory(psched__problem *pb, double *value, bool *done)
{
    if (!pb->mm_searched) {
        psched__solution *split = psched__calloc(1, sizeof *split);
        psched_status st = split ? psched__solution_init(split, pb->stages, pb->layers)
                                 : PSCHED_ENOMEM_FAIL();
        if (!st)
            st = psched__search_min_memory(pb, split, &pb->mm_search_value, &pb->mm_search_done);
        if (st) {
            if (split)
                psched__solution_free(split);
            psched__dealloc(split);
            return st;
        }
        pb->mm_split = split;
        pb->mm_searched = true;
    }
    *value = pb->mm_search_value;
    *done = pb->mm_search_done;
    return PSCHED_OK;
}

/* Whether the witness in sol, whose leanest memory is `lean`, fits: then
 * the result is that split, feasible. */
static bool witness_fits(psched__problem *pb, psched__evaluation *ev, psched__solution *sol,
                         double lean, psched_solve_status *status)
{
    if (!sol->found || !psched__fits(pb, lean))
        return false;
    psched__evaluate(pb, sol, ev);
    if (!psched__fits(pb, ev->max_mem))
        return false;
    *status = PSCHED_SOLVE_FEASIBLE;
    return true;
}

/* When the method found no partition: the witness of the smallest memory
 * (every layer at its leanest variant, the split of the smallest stage
 * memory) if it fits, while there is time; then the split of the smallest
 * device memory (minmem.c: what a limit at or just above that minimum
 * needs; in closed form when the layers between the first and the last
 * are identical, else the search's best split; both cheap enough to try
 * after the deadline too, the search then held to 2^14 steps). Without
 * the first a limit that witness meets came back infeasible whenever the
 * MILP had no time to find a partition (Gemma2-9B, interleaved-zb, v = 4,
 * 60 GB, in the planner's 1 s: "needs 5.916e10"). Not the solvers' seed: a poor
 * seed bounds the MILP's columns by its own objective and changes the
 * search GLPK makes. */
static psched_status lean_fallback(psched__problem *pb, psched__evaluation *ev,
                                   psched__solution *sol, psched_solve_status *status)
{
    if (sol->found || !isfinite(pb->limit))
        return PSCHED_OK;
    double lean = INFINITY;
    bool done = false;
    psched_status st = PSCHED_OK;
    if (!psched__expired(pb) && !(st = psched__lean_split(pb, sol, &lean)) &&
        witness_fits(pb, ev, sol, lean, status))
        return PSCHED_OK;
    /* the smallest memory's split: in closed form, else the search's */
    sol->found = false;
    if (!st && !(st = psched__run_min_memory(pb, sol, &lean, &done)) && !done &&
        !(st = search_min_memory(pb, &lean, &done)) && isfinite(lean))
        psched__solution_copy(pb, pb->mm_split, sol);
    if (!st && witness_fits(pb, ev, sol, lean, status))
        return PSCHED_OK;
    sol->found = false;
    return st;
}

/* A lower bound of the objective over every partition: the largest
 * device takes at least the average and at least the slowest layer; with
 * kappa < 0 the recompute time could lower it without bound, so 0. */
static double objective_floor(const psched__problem *pb)
{
    if (pb->kappa < 0)
        return 0;
    double lb = pb->time_total / pb->devices;
    for (uint32_t l = 0; l < pb->layers; l++)
        lb = fmax(lb, psched__range_time(pb, l, 1));
    return (pb->microbatches - 1.0) * lb + pb->kappa * pb->time_total;
}

/* Smallest device memory any split fits in, every layer at its most
 * memory-saving variant; when the limit is met, possibly only some fitting
 * figure <= the limit (nothing needs more). Exact by DP with one chunk per
 * device and with the two-chunk layouts, and with any layout when the
 * layers between the first and the last are identical (minmem.c); else by
 * the search over the stage boundaries (minmem.c), and by MILP where that
 * stops first, each given a third of the time left. NAN when unknown: no
 * GLPK, or the time ran out first. */
static psched_status min_memory_once(psched__problem *pb, double *out)
{
    psched_status st;
    if (pb->chunks == 1) {
        *out = psched__minmax_split(pb, true, NULL, &st);
        return st;
    }
    if ((st = psched__lean_split(pb, NULL, out)) || psched__fits(pb, *out))
        return st;
    if (psched__pair_applies(pb))
        return psched__pair_min_memory(pb, out);
    bool done = false;
    if ((st = psched__run_min_memory(pb, NULL, out, &done)) || done)
        return st;
    if ((st = search_min_memory(pb, out, &done)) || done)
        return st;
    return psched__milp_min_memory(pb, out);
}

/* min_memory_once(), computed once per call: the check before the search
 * and the figure of an infeasible result are the same (a figure at most
 * the limit, when the check found one, still says the time ran out), and
 * when it is unknown a second try would only have less time. */
static psched_status min_memory(psched__problem *pb, double *out)
{
    if (!pb->mm_done) {
        psched_status st = min_memory_once(pb, &pb->mm_value);
        if (st)
            return st;
        pb->mm_done = true;
    }
    *out = pb->mm_value;
    return PSCHED_OK;
}


static psched_status check_options(const psched_partition_options *o)
{
    if (o->version == 0 || o->version > PSCHED_PARTITION_OPTIONS_VERSION)
        return psched_fail(PSCHED_EINVAL, "partition options version (%u) must be 1..%u",
                           o->version, PSCHED_PARTITION_OPTIONS_VERSION);
    if ((unsigned)o->method > PSCHED_PARTITION_DP_TIME)
        return psched_fail(PSCHED_EINVAL, "partition method (%d) must be 0..%d", (int)o->method,
                           (int)PSCHED_PARTITION_DP_TIME);
    if (!(o->time_limit > 0) || !isfinite(o->time_limit))
        return psched_fail(PSCHED_EINVAL, "partition time limit (%g s) must be finite and > 0",
                           o->time_limit);
    if (o->flags & ~PSCHED_PARTITION_ALLOW_EMPTY)
        return psched_fail(PSCHED_EINVAL, "partition flags (0x%x) has unknown bits", o->flags);
    return PSCHED_OK;
}

/* Two chunks per device in a loop or V layout: the exact two-walker DP
 * (partition_pair.c), started from the seed. */
static psched_status solve_pair(psched__problem *pb, const psched__solution *seed,
                                double incumbent, psched__solution *sol,
                                psched_solve_status *status, double *gap)
{
    if (seed->found)
        psched__solution_copy(pb, seed, sol);
    psched__pair_outcome res;
    psched_status st = psched__fronts_table(pb);
    if (!st)
        st = psched__pair_solve(pb, incumbent, sol, &res);
    if (st)
        return st;
    if (!sol->found) {
        *status = PSCHED_SOLVE_INFEASIBLE;
        return PSCHED_OK;
    }
    if (res.complete && !pb->thinned) {
        *status = PSCHED_SOLVE_OPTIMAL;
        *gap = 0;
        return PSCHED_OK;
    }
    /* The DP's bound covers the ranges it saw; with some left out only
     * the floor every partition shares holds. */
    double bound = pb->thinned || !isfinite(res.bound) ? objective_floor(pb) : res.bound;
    *status = PSCHED_SOLVE_FEASIBLE;
    *gap = fmax(0, (res.objective - bound) / res.objective);
    return PSCHED_OK;
}

/* The ILP and DP methods. Where a DP is exact it proves the optimum:
 * the stage DP with one chunk per device, the two-walker DP with two
 * chunks in a loop or V layout. Elsewhere the ILP method solves the column
 * MILP seeded with the stage DP's solution, and the DP method returns that
 * heuristic solution (each stage held to 1/v of the memory). */
static psched_status solve_optimizer(psched__problem *pb, psched_partition_method method,
                                     psched__evaluation *ev, psched__solution *sol,
                                     psched_solve_status *status, double *gap, double *min_mem)
{
    psched_status st;
    bool milp = method == PSCHED_PARTITION_ILP && psched__have_glpk();
    bool pair = pb->chunks == 2 && pb->kappa >= 0 && psched__pair_applies(pb);
    bool exact = (pb->chunks == 1 || pair) && !(milp && force_milp);
    /* A limit below the smallest fitting memory needs no search. */
    if (isfinite(pb->limit) && (milp || pb->chunks == 1 || pair)) {
        if ((st = min_memory(pb, min_mem)))
            return st;
        if (*min_mem > psched__room(pb)) { /* (not when unknown, NaN) */
            *status = PSCHED_SOLVE_INFEASIBLE;
            return PSCHED_OK;
        }
        *min_mem = NAN;
    }
    psched__solution seed;
    double incumbent = INFINITY;
    bool dp_complete = false;
    if ((st = psched__solution_init(&seed, pb->stages, pb->layers)))
        return st;
    st = best_seed(pb, ev, &seed, &incumbent, &dp_complete);
    if (!st && exact && pair) {
        st = solve_pair(pb, &seed, incumbent, sol, status, gap);
    } else if (!st && milp && !exact) {
        psched__ilp_outcome res = {false, NAN};
        st = psched__solve_ilp(pb, ev, &seed, incumbent, sol, &res);
        *status = !sol->found ? PSCHED_SOLVE_INFEASIBLE
                  : res.optimal ? PSCHED_SOLVE_OPTIMAL
                                : PSCHED_SOLVE_FEASIBLE;
        *gap = res.optimal ? 0 : res.gap;
        if (!st)
            st = lean_fallback(pb, ev, sol, status);
    } else if (!st && method == PSCHED_PARTITION_ILP && !exact) {
        st = psched_fail(PSCHED_EUNSUPPORTED,
                         "the ILP needs GLPK for %u chunks per device in this layout and this "
                         "build has none; use v <= 2 with loop or V placement, or the dp method",
                         pb->chunks);
    } else if (!st) {
        /* The seed is the stage DP's solution unless a baseline beat it. */
        psched__solution_copy(pb, &seed, sol);
        bool from_dp = sol->found;
        if (!sol->found && !exact)
            st = lean_fallback(pb, ev, sol, status);
        if (st || !sol->found) {
            *status = PSCHED_SOLVE_INFEASIBLE;
        } else if (exact && dp_complete && from_dp) {
            *status = PSCHED_SOLVE_OPTIMAL;
            *gap = 0;
        } else {
            /* A heuristic (v > 1), or the deadline or the point cap cut
             * the DP: feasible, with the gap to the floor every partition
             * shares. */
            psched__evaluate(pb, sol, ev);
            *status = PSCHED_SOLVE_FEASIBLE;
            *gap = fmax(0, (ev->objective - objective_floor(pb)) / ev->objective);
        }
    }
    psched__solution_free(&seed);
    return st;
}

/* Run the method; sets *status. */
static psched_status run_method(psched__problem *pb, const psched_partition_options *o,
                                psched__evaluation *ev, psched__solution *sol, psched_solve_status *status,
                                double *gap, double *min_mem)
{
    psched_status st = PSCHED_OK;
    *gap = NAN;
    switch (o->method) {
    case PSCHED_PARTITION_EVEN:
    case PSCHED_PARTITION_EVEN_ACCOUNTED:
        if ((st = psched__even_split(pb, o->method == PSCHED_PARTITION_EVEN_ACCOUNTED, sol)))
            return st;
        psched__uniform_recompute(pb, sol, ev);
        break;
    case PSCHED_PARTITION_DP_TIME:
        if (isnan(psched__minmax_split(pb, false, sol, &st)) && !st) {
            /* The deadline came first: Megatron's split, which the
             * time-balanced one would only have improved. */
            if ((st = psched__even_split(pb, false, sol)))
                return st;
        }
        if (st)
            return st;
        break;
    case PSCHED_PARTITION_DP:
    case PSCHED_PARTITION_ILP:
        return solve_optimizer(pb, o->method, ev, sol, status, gap, min_mem);
    }
    if (!sol->found) {
        *status = PSCHED_SOLVE_INFEASIBLE;
        return PSCHED_OK;
    }
    psched__evaluate(pb, sol, ev);
    *status = psched__fits(pb, ev->max_mem) ? PSCHED_SOLVE_FEASIBLE : PSCHED_SOLVE_INFEASIBLE;
    return PSCHED_OK;
}

/* The baselines that fit, for the certificate: Megatron's even split,
 * the accounted one (both with one recompute choice for every layer) and
 * the time-balanced split with the same choice. found is false for one
 * that does not apply or does not fit. */
static psched_status baseline_candidates(psched__problem *pb, psched__evaluation *ev,
                                         psched__solution base[3])
{
    psched_status st = PSCHED_OK;
    for (int k = 0; !st && k < 3; k++) {
        if ((st = psched__solution_init(&base[k], pb->stages, pb->layers)))
            break;
        if (k < 2) {
            if (psched__even_split(pb, k == 1, &base[k]) != PSCHED_OK) {
                base[k].found = false;
                continue;
            }
        } else if (!(psched__minmax_split(pb, false, &base[k], &st) < INFINITY) || st) {
            base[k].found = false;
            continue;
        }
        psched__uniform_recompute(pb, &base[k], ev);
        psched__evaluate(pb, &base[k], ev);
        base[k].found = psched__fits(pb, ev->max_mem);
    }
    return st;
}

/* Replace the solver's answer by the fastest partition in simulation and
 * state what is proven about it (certify.c). */
static psched_status certify_result(psched__problem *pb, const char *schedule,
                                    const psched_plan *resolved, psched__evaluation *ev,
                                    psched__solution *sol, psched_solve_status *status,
                                    double *gap, double *count_bound)
{
    psched__solution base[3];
    memset(base, 0, sizeof base);
    psched_status st = baseline_candidates(pb, ev, base);
    const psched__solution *cands[4] = {sol, &base[0], &base[1], &base[2]};
    psched__certificate cert;
    if (!st)
        st = psched__certify(pb, schedule, resolved, cands, 4, sol, &cert);
    if (!st && sol->found) {
        *status = cert.proven ? PSCHED_SOLVE_OPTIMAL : PSCHED_SOLVE_FEASIBLE;
        *gap = cert.proven ? 0 : fmax(0, (cert.makespan - cert.bound) / cert.makespan);
        *count_bound = cert.count_bound;
    }
    for (int k = 0; k < 3; k++)
        psched__solution_free(&base[k]);
    return st;
}

static psched_status check_args(const psched_model *model, const psched_plan *plan,
                                const char *schedule, psched_partition_result **out)
{
    if (!model || !plan || !schedule || !out)
        return psched_fail(PSCHED_EINVAL, "model, plan, schedule name and output must be non-NULL");
    if (model->layer_count == 0)
        return psched_fail(PSCHED_EINVAL, "the model has no layer");
    if (model->layer_count > PSCHED__PARTITION_MAX_LAYERS)
        return psched_fail(PSCHED_EINVAL,
                           "the model has %u layers; the partitioner handles at most %u "
                           "(its tables grow with the layer count)",
                           model->layer_count, PSCHED__PARTITION_MAX_LAYERS);
    double limit = psched_plan_memory_limit(plan);
    if (!(limit > 0))
        return psched_fail(PSCHED_EINVAL, "memory limit (%g) must be > 0", limit);
    return PSCHED_OK;
}

static psched_status partition_problem(psched__problem *pb, const psched_partition_options *o,
                                       bool want_min_memory,
                                       const char *schedule, psched_plan **resolved,
                                       psched_partition_result **out)
{
    psched__solution sol = {0};
    psched__evaluation ev = {0};
    psched_partition_result *r = psched__result_alloc(pb);
    psched_status st = r ? psched__solution_init(&sol, pb->stages, pb->layers) : PSCHED_ENOMEM_FAIL();
    if (!st)
        st = psched__evaluation_init(pb, &ev);
    if (!st)
        st = run_method(pb, o, &ev, &sol, &r->status, &r->gap, &r->min_memory);
    bool optimizer = o->method == PSCHED_PARTITION_ILP || o->method == PSCHED_PARTITION_DP;
    if (!st && optimizer && sol.found && r->status != PSCHED_SOLVE_INFEASIBLE && !skip_certify)
        st = certify_result(pb, schedule, *resolved, &ev, &sol, &r->status, &r->gap,
                            &r->count_bound);
    if (!st)
        st = psched__result_fill(pb, &sol, schedule, resolved, &ev, r);
    if (!st && !optimizer && r->status == PSCHED_SOLVE_FEASIBLE) {
        /* not certified: the gap to the bound every partition obeys (0
         * for a model whose layers take no time: every split takes 0) */
        r->gap = r->makespan > 0
                     ? fmax(0, (r->makespan - psched__partition_floor(pb)) / r->makespan)
                     : 0;
    }
    if (!st && r->status == PSCHED_SOLVE_INFEASIBLE && isnan(r->min_memory))
        st = want_min_memory ? min_memory(pb, &r->min_memory) : PSCHED_OK;
    psched__evaluation_free(&ev);
    psched__solution_free(&sol);
    if (st) {
        psched_partition_result_destroy(r);
        return st;
    }
    *out = r;
    return PSCHED_OK;
}

psched_status psched_partition(const psched_model *model, const psched_plan *plan,
                               const char *schedule, const psched_partition_options *options,
                               psched_partition_result **out)
{
    return psched__partition(model, plan, schedule, options, true, false, out);
}

psched_status psched__partition(const psched_model *model, const psched_plan *plan,
                                const char *schedule, const psched_partition_options *options,
                                bool want_min_memory, bool planner,
                                psched_partition_result **out)
{
    static const psched_partition_options defaults = PSCHED_PARTITION_OPTIONS_INIT;
    const psched_partition_options *o = options ? options : &defaults;
    if (out)
        *out = NULL; /* a failed call leaves no handle to free */
    psched_status st = check_args(model, plan, schedule, out);
    if (st || (st = check_options(o)))
        return st;
    double t0 = psched__now();
    psched__problem pb = {0};
    psched_plan *resolved = NULL;
    pb.allow_empty = (o->flags & PSCHED_PARTITION_ALLOW_EMPTY) != 0;
    pb.deadline = t0 + o->time_limit;
    pb.certify_ops = planner ? PSCHED__CERTIFY_OPS_PLANNER : PSCHED__CERTIFY_OPS;
    pb.certify_nodes = planner ? PSCHED__CERTIFY_NODES_PLANNER : PSCHED__CERTIFY_NODES;
    pb.tau_max = INFINITY;
    pb.limit = psched_plan_memory_limit(plan);
    st = psched__probe_schedule(plan, schedule, &pb, &resolved);
    if (!st && !pb.allow_empty && model->layer_count < pb.stages)
        st = psched_fail(PSCHED_EINVAL,
                         "the model has %u layers, fewer than the %u stages of %s; allow empty "
                         "stages to partition it",
                         model->layer_count, pb.stages, schedule);
    if (!st)
        st = psched__problem_layers(&pb, model);
    if (!st)
        st = psched__problem_check(&pb);
    psched_partition_result *r = NULL;
    if (!st)
        st = partition_problem(&pb, o, want_min_memory, schedule, &resolved, &r);
    psched_plan_destroy(resolved);
    psched__problem_free(&pb);
    if (st)
        return st;
    r->solve_time = psched__now() - t0;
    *out = r;
    return PSCHED_OK;
}
