/* The MILP glue beside the GLPK file: columns from the frontiers, the
 * seed mapped onto them, the solution read back, and the min-memory MILP.
 * partition_glpk.c solves; this file never calls back into the driver. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GLPK's problem setup and LP presolve cannot be interrupted and take
 * about 35 us per column on the project's 2-core machine (40 000 columns:
 * 1.4 s, 133 000: 4.4-5.6 s, whatever the time limit), so a MILP whose
 * setup alone would pass the time it is given is not started: the caller
 * keeps its seed (feasible) or an unknown minimum. docs/optimizer.md. */
#define SETUP_SECONDS_PER_COLUMN 4e-5

/* With more than two chunks GLPK rarely proves the estimate's optimum,
 * so its three tenths of the time grew with the limit while the
 * certificate waited: at `--time-limit 40` the grid's L = 80, p = 4
 * interleaved v = 4 was proven after 13.8 s, 12 of them in this MILP, and
 * LLaMA-70B's interleaved v = 4 at 20 s after 6.2 s. At most this many
 * seconds (three tenths of 5 s, so a limit up to 5 s is as before): 1.8
 * and 1.7 s, the same partitions and statuses (docs/optimizer-passes.md,
 * twentieth pass). */
#define ESTIMATE_SECONDS_MAX 1.5

static _Thread_local size_t test_most_columns;
static _Thread_local bool test_columns_cut;

size_t psched__milp_test_most_columns(bool *cut)
{
    size_t most = test_most_columns;
    *cut = test_columns_cut;
    test_most_columns = 0;
    test_columns_cut = false;
    return most;
}

/* The most columns whose setup fits in `seconds`. */
static size_t columns_max(double seconds)
{
    double n = floor(seconds / SETUP_SECONDS_PER_COLUMN);
    return n < (double)SIZE_MAX / 2 ? (size_t)n : SIZE_MAX / 2;
}

/* Seconds left before the call's deadline, at least 1 ms so that a
 * solver called late still returns its incumbent. */
static double time_left(const psched__problem *pb)
{
    return fmax(1e-3, pb->deadline - psched__now());
}

/* Columns, at most `max`: listing more would take longer than the MILP
 * may (its setup is what bounds them; L = 1 000 layers at v = 4 has tens
 * of millions of columns, about 1 GB, before they were counted and refused),
 * so `over` is set instead and the MILP is not started. */
typedef struct column_list {
    psched__column *v;
    size_t n, cap, max;
    bool over;
} column_list;

static psched_status column_push(column_list *c, psched__column col)
{
    if (c->n >= c->max) {
        c->over = test_columns_cut = true;
        return PSCHED_OK;
    }
    psched__column *v = psched__grow(c->v, &c->cap, c->n, sizeof *c->v, 256);
    if (!v)
        return PSCHED_ENOMEM_FAIL();
    c->v = v;
    c->v[c->n++] = col;
    test_most_columns = c->n > test_most_columns ? c->n : test_most_columns;
    return PSCHED_OK;
}

/* Frontier points offered per (stage, range) with v > 1: a range of k
 * identical layers with two variants has O(k²) Pareto points, far more
 * columns than GLPK handles; beyond this many, evenly spaced ones (the
 * fastest and the leanest always) are kept and the result is no longer
 * claimed optimal. */
#define MAX_POINTS_PER_RANGE 24u

/* Columns of one (stage, start): with one chunk only the fastest mix that
 * fits (memory is per stage), else the frontier points that fit alone. */
static psched_status stage_columns(psched__problem *pb, uint32_t s, uint32_t i, double tau_max,
                                   column_list *out)
{
    const psched__fronts *fr = &pb->table[i];
    uint32_t lo, hi;
    psched__length_bounds(pb, s, fr, &lo, &hi);
    for (uint32_t len = lo; len <= hi; len++) {
        uint32_t nf;
        const psched__point *front = psched__front(fr, len, &nf);
        double base = psched__range_time(pb, i, len), param = psched__range_param(pb, i, len);
        if (nf == 0 || base + front[0].extra > tau_max)
            break;
        uint32_t k0 = 0, k1 = nf;
        if (pb->chunks == 1) {
            int32_t k = psched__first_fitting(pb, s, fr, len, psched__room(pb));
            if (k < 0)
                break;
            k0 = (uint32_t)k;
            k1 = k0 + 1;
        }
        bool any = false;
        uint32_t n = k1 - k0, step_num = 1, step_den = 1;
        if (n > MAX_POINTS_PER_RANGE) {
            pb->thinned = true;
            step_num = n - 1;
            step_den = MAX_POINTS_PER_RANGE - 1;
            k1 = MAX_POINTS_PER_RANGE;
        }
        for (uint32_t q = k0; q < k1; q++) {
            uint32_t k = n > MAX_POINTS_PER_RANGE
                             ? (uint32_t)(((uint64_t)q * step_num + step_den / 2) / step_den)
                             : q;
            const psched__point *pt = &front[k];
            psched__column col = {s, i, len, (int32_t)k, base + pt->extra,
                                  param + pb->inflight[s] * pt->act};
            if (col.mem > psched__room(pb) || col.time > tau_max)
                continue;
            any = true;
            psched_status st = column_push(out, col);
            if (st || out->over)
                return st;
        }
        if (!any && pb->chunks > 1 &&
            param + pb->inflight[s] * front[nf - 1].act > psched__room(pb))
            break;
    }
    return PSCHED_OK;
}

static psched_status build_columns(psched__problem *pb, double tau_max, column_list *out)
{
    for (uint32_t s = 0; s < pb->stages; s++) {
        uint32_t i_lo = pb->allow_empty ? 0 : s, i_hi = s == 0 ? 0 : pb->layers;
        for (uint32_t i = i_lo; i <= i_hi; i++) {
            psched_status st = stage_columns(pb, s, i, tau_max, out);
            if (st || out->over)
                return st;
        }
    }
    return PSCHED_OK;
}

/* Columns that reproduce (or beat) the seed stage by stage, so GLPK starts
 * from it; false when some stage has none. */
static bool map_seed(const column_list *cols, const psched__solution *seed, const psched__evaluation *ev,
                     int32_t *out, uint32_t stages)
{
    for (uint32_t s = 0; s < stages; s++)
        out[s] = -1;
    for (size_t c = 0; c < cols->n; c++) {
        const psched__column *col = &cols->v[c];
        uint32_t s = col->stage;
        if (col->first != seed->first[s] || col->len != seed->count[s])
            continue;
        double tol_t = 1e-9 * fmax(1, ev->stage_time[s]), tol_m = 1e-9 * fmax(1, ev->stage_mem[s]);
        if (col->time <= ev->stage_time[s] + tol_t && col->mem <= ev->stage_mem[s] + tol_m &&
            (out[s] < 0 || col->time < cols->v[out[s]].time))
            out[s] = (int32_t)c;
    }
    for (uint32_t s = 0; s < stages; s++)
        if (out[s] < 0)
            return false;
    return true;
}

static void solution_from_columns(const psched__problem *pb, const column_list *cols,
                                  const int32_t *chosen, psched__solution *sol)
{
    for (uint32_t s = 0; s < pb->stages; s++) {
        const psched__column *col = &cols->v[chosen[s]];
        sol->first[s] = col->first;
        sol->count[s] = col->len;
        psched__fill_choices(&pb->table[col->first], col->len, col->point, sol->choice);
    }
    sol->found = true;
}

/* The MILP seeded with the DP's solution; its objective bounds every
 * column's time (by the largest device time, and by that over lambda for
 * a single stage), which keeps the column count near S·L·(a few lengths). */
psched_status psched__solve_ilp(psched__problem *pb, psched__evaluation *ev, const psched__solution *seed_in,
                               double seed_objective, psched__solution *sol, psched__ilp_outcome *res)
{
    psched__solution seed;
    double tau_max = INFINITY;
    psched_status st = psched__solution_init(&seed, pb->stages, pb->layers);
    if (!st)
        psched__solution_copy(pb, seed_in, &seed);
    if (!st)
        st = psched__fronts_table(pb);
    if (!st && seed.found) {
        psched__evaluate(pb, &seed, ev);
        if (pb->microbatches > 1)
            tau_max = (seed_objective - pb->kappa * pb->time_total) / (pb->microbatches - 1.0);
        tau_max += 1e-9 * fmax(1, fabs(tau_max));
    }
    /* Three quarters of what is left: the MILP only proposes a partition
     * for the estimate; the certificate (certify.c), which decides the
     * status for the simulated step time, searches in the last quarter
     * (enough for the instances it can prove). With more than two chunks
     * the certificate's critical-path bound needs the time more than GLPK
     * does: three tenths, and at most ESTIMATE_SECONDS_MAX. */
    double share = pb->chunks > 2 ? 0.3 : 0.75;
    if (pb->chunks > 2)
        share = fmin(share, ESTIMATE_SECONDS_MAX / time_left(pb));
    column_list cols = {.max = columns_max(share * time_left(pb))};
    int32_t *chosen = psched__calloc(pb->stages, sizeof *chosen);
    int32_t *seed_cols = psched__calloc(pb->stages, sizeof *seed_cols);
    if (!st && (!chosen || !seed_cols))
        st = PSCHED_ENOMEM_FAIL();
    if (!st)
        st = build_columns(pb, tau_max / fmax(1, pb->lambda), &cols);
    if (!st) {
        bool seeded = seed.found && map_seed(&cols, &seed, ev, seed_cols, pb->stages);
        psched__milp in = {pb->stages, pb->devices, pb->layers, pb->device_of, cols.v, cols.n,
                           pb->limit, pb->microbatches - 1.0, pb->kappa, pb->lambda, false,
                           seeded ? seed_cols : NULL};
        bool found = false;
        double bound = -INFINITY;
        res->gap = NAN;
        if (!cols.over)
            st = psched__milp_solve(&in, share * time_left(pb), chosen, &found, &res->optimal,
                                    &bound);
        res->optimal = res->optimal && !pb->thinned;
        if (!st && found) {
            solution_from_columns(pb, &cols, chosen, sol);
            psched__evaluate(pb, sol, ev);
        }
        if (!st && seed.found && (!found || ev->objective > seed_objective)) {
            /* GLPK stopped before it had anything better: keep the seed. */
            psched__solution_copy(pb, &seed, sol);
            res->optimal = false;
        }
        /* The columns left out cost more than the seed, so GLPK's bound
         * holds for every partition unless frontiers were thinned. */
        if (!st && sol->found && !pb->thinned && isfinite(bound)) {
            psched__evaluate(pb, sol, ev);
            res->gap = fmax(0, (ev->objective - bound) / ev->objective);
        }
    }
    psched__dealloc(cols.v);
    psched__dealloc(chosen);
    psched__dealloc(seed_cols);
    psched__solution_free(&seed);
    return st;
}

/* The MILP half of the smallest fitting memory (v >= 3 or custom
 * layouts): every range at its leanest variant is a column; given a third
 * of the time left. *out is NAN when unknown (no GLPK, no time, or no
 * proof). */
psched_status psched__milp_min_memory(const psched__problem *pb, double *out)
{
    psched_status st;
    *out = NAN;
    if (!psched__have_glpk() || psched__expired(pb))
        return PSCHED_OK;
    double share = time_left(pb) / 3;
    column_list cols = {.max = columns_max(share)};
    st = PSCHED_OK;
    for (uint32_t s = 0; !st && !cols.over && s < pb->stages; s++) {
        for (uint32_t i = pb->allow_empty ? 0 : s; !st && !cols.over && i <= (s == 0 ? 0 : pb->layers); i++) {
            uint32_t rest = pb->stages - 1 - s, left = pb->layers - i;
            uint32_t lo = pb->allow_empty ? 0 : 1, hi = left;
            if (!pb->allow_empty)
                hi = left >= rest ? left - rest : 0;
            if (s == pb->stages - 1)
                lo = left;
            for (uint32_t len = lo; !st && !cols.over && len <= hi; len++)
                st = column_push(&cols, (psched__column){s, i, len, -1, 0,
                                                         psched__lean_memory(pb, s, i, len)});
        }
    }
    int32_t *chosen = psched__calloc(pb->stages, sizeof *chosen);
    if (!st && !chosen)
        st = PSCHED_ENOMEM_FAIL();
    if (!st) {
        psched__milp in = {pb->stages, pb->devices, pb->layers, pb->device_of, cols.v, cols.n,
                           INFINITY, 0, 0, 0, true, NULL};
        bool found = false, optimal = false;
        double bound = 0;
        if (!cols.over)
            st = psched__milp_solve(&in, share, chosen, &found, &optimal, &bound);
        /* Only a proven minimum may declare a limit infeasible. */
        if (!st && found && optimal) {
            double *mem = psched__calloc(pb->devices, sizeof *mem);
            if (!mem) {
                st = PSCHED_ENOMEM_FAIL();
            } else {
                double mx = 0;
                for (uint32_t s = 0; s < pb->stages; s++)
                    mem[pb->device_of[s]] += cols.v[chosen[s]].mem;
                for (uint32_t d = 0; d < pb->devices; d++)
                    mx = fmax(mx, mem[d]);
                *out = mx;
                psched__dealloc(mem);
            }
        }
    }
    psched__dealloc(chosen);
    psched__dealloc(cols.v);
    return st;
}
