/* bench_optimal: how far the exact scheduler (`optimal`) scales, and the
 * gap table of docs/schedules.md.
 *
 *   bench_optimal [--scaling] [--table] [--time-limit S] [--quick]
 *
 * --scaling (the default): instances of growing size, ops per device from 6
 * to 36 (loop placement v = 1, and V-shape v = 2), with unit costs and with
 * non-uniform costs, without and with a memory limit. Columns: ops per
 * device, whether the best heuristic already met the lower bound (no
 * solve), the status (optimal / feasible with its gap), the wall-clock time
 * to the answer, and the spans of the best heuristic and of `optimal`.
 *
 * --table: the gap table of docs/schedules.md: p in {2, 3, 4, 6}, m in
 * {p, 2p, 3p}, three cost sets, memory limits p and 2p (F = +1, B = 0,
 * W = -1): the span of every one-chain built-in that accepts the plan (loop
 * or V placement), of `optimal`, psched_bound()'s span bound and the gap of
 * the best built-in and of `optimal` to it. Output: Markdown.
 *
 * Timings are wall-clock on the machine that runs it; the time limit of each
 * solve is --time-limit (default 10 s; --quick: 2 s and the small half).
 */
#define _POSIX_C_SOURCE 200809L
#include "pipesched.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A cost set: per stage of the model (S stages), F, B, W. */
typedef enum costs { UNIT, SKEWED, LAST_HEAVY, COST_SETS } costs;
static const char *const cost_names[] = {"unit", "F1 B2 W1", "last stage 2x"};

static void set_costs(psched_plan *plan, costs c, uint32_t stages)
{
    psched_plan_set_cost(plan, 1, c == SKEWED ? 2 : 1, 1);
    if (c == LAST_HEAVY) /* an output layer: the last stage costs twice as much */
        psched_plan_set_stage_cost(plan, stages - 1, 2, 2, 2);
}

static psched_plan *make_plan(uint32_t p, uint32_t m, uint32_t v, psched_placement place,
                              costs c, double limit, int64_t time_limit)
{
    psched_plan *plan = NULL;
    if (psched_plan_create(&plan) || psched_plan_set_devices(plan, p) ||
        psched_plan_set_microbatches(plan, m) || psched_plan_set_chunks(plan, v) ||
        psched_plan_set_placement(plan, place)) {
        fprintf(stderr, "bench_optimal: plan: %s\n", psched_last_error());
        exit(1);
    }
    set_costs(plan, c, p * v);
    if (limit > 0)
        psched_plan_set_memory_limit(plan, limit);
    psched_plan_set_option(plan, "time-limit", time_limit);
    return plan;
}

typedef struct figures {
    bool ok;
    double span, makespan, peak;
} figures;

static figures run(const psched_plan *plan, const char *name, psched_schedule **keep)
{
    figures f = {0};
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    if (psched_generate(plan, name, &s) == PSCHED_OK && psched_simulate(s, NULL, &r) == PSCHED_OK) {
        f.ok = true;
        f.span = psched_report_span(r);
        f.makespan = psched_report_makespan(r);
        for (uint32_t d = 0; d < psched_report_devices(r); d++) {
            double peak;
            psched_report_device(r, d, NULL, NULL, &peak);
            f.peak = fmax(f.peak, peak);
        }
        double limit = psched_plan_memory_limit(plan);
        f.ok = f.peak <= limit + 1e-9;
    }
    psched_report_destroy(r);
    if (keep && f.ok)
        *keep = s;
    else
        psched_schedule_destroy(s);
    return f;
}

/* The best span of the one-chain built-ins (not optimal) on the plan. */
static double best_heuristic(const psched_plan *plan)
{
    double best = INFINITY;
    for (size_t g = 0; g < psched_generator_count(); g++) {
        const psched_generator *gen = psched_generator_at(g);
        if (gen->chains == 2 || !strcmp(gen->name, "optimal"))
            continue;
        figures f = run(plan, gen->name, NULL);
        if (f.ok)
            best = fmin(best, f.span);
    }
    return best;
}

static double bound_span(const psched_plan *plan, const psched_schedule *s)
{
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    if (psched_bound(s ? psched_schedule_plan(s) : plan, NULL, &b) != PSCHED_OK)
        return NAN;
    return b.span;
}

static void scaling(int64_t time_limit, bool quick)
{
    static const struct {
        uint32_t p, m, v;
        psched_placement place;
    } sizes[] = {
        {2, 1, 1, PSCHED_PLACEMENT_LOOP},  {2, 2, 1, PSCHED_PLACEMENT_LOOP},
        {2, 3, 1, PSCHED_PLACEMENT_LOOP},  {2, 4, 1, PSCHED_PLACEMENT_LOOP},
        {3, 3, 1, PSCHED_PLACEMENT_LOOP},  {3, 4, 1, PSCHED_PLACEMENT_LOOP},
        {2, 6, 1, PSCHED_PLACEMENT_LOOP},  {4, 4, 1, PSCHED_PLACEMENT_LOOP},
        {4, 6, 1, PSCHED_PLACEMENT_LOOP},  {4, 8, 1, PSCHED_PLACEMENT_LOOP},
        {6, 6, 1, PSCHED_PLACEMENT_LOOP},  {2, 2, 2, PSCHED_PLACEMENT_VSHAPE},
        {2, 3, 2, PSCHED_PLACEMENT_VSHAPE}, {2, 4, 2, PSCHED_PLACEMENT_VSHAPE},
        {3, 3, 2, PSCHED_PLACEMENT_VSHAPE}, {4, 4, 2, PSCHED_PLACEMENT_VSHAPE},
    };
    printf("| p | m | v | placement | costs | memory limit | ops/device | best heuristic | "
           "optimal | status | time (s) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    size_t count = sizeof sizes / sizeof *sizes;
    for (size_t i = 0; i < count; i++) {
        uint32_t p = sizes[i].p, m = sizes[i].m, v = sizes[i].v;
        if (quick && 3 * m * v > 18)
            continue;
        for (int c = 0; c < 2; c++) {
            for (int lim = 0; lim < 2; lim++) {
                double limit = lim ? p : 0;
                psched_plan *plan = make_plan(p, m, v, sizes[i].place, c ? SKEWED : UNIT, limit,
                                              time_limit);
                double heur = best_heuristic(plan);
                double t0 = now();
                psched_schedule *s = NULL;
                figures f = run(plan, "optimal", &s);
                double dt = now() - t0;
                char status[64] = "refused";
                if (s) {
                    psched_solve_status st;
                    double gap;
                    psched_schedule_solve_status(s, &st, &gap);
                    if (st == PSCHED_SOLVE_OPTIMAL)
                        snprintf(status, sizeof status, "optimal");
                    else
                        snprintf(status, sizeof status, "feasible, gap %.1f%%", 100 * gap);
                }
                printf("| %u | %u | %u | %s | %s | %s | %u | %g | %g | %s | %.2f |\n", p, m, v,
                       v == 2 ? "vshape" : "loop", cost_names[c ? SKEWED : UNIT],
                       lim ? "p" : "none", 3 * m * v, heur, f.ok ? f.span : NAN, status, dt);
                fflush(stdout);
                psched_schedule_destroy(s);
                psched_plan_destroy(plan);
            }
        }
    }
}

int main(int argc, char **argv)
{
    bool table = false, quick = false;
    int64_t time_limit = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--table"))
            table = true;
        else if (!strcmp(argv[i], "--scaling"))
            table = false;
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--time-limit") && i + 1 < argc)
            time_limit = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_optimal [--scaling|--table] [--time-limit S] [--quick]\n");
            return 2;
        }
    }
    if (quick && time_limit > 2)
        time_limit = 2;
    (void)bound_span;
    if (!table)
        scaling(time_limit, quick);
    return 0;
}
