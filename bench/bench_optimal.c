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

/* ---- the gap table ---- */

typedef struct family {
    const char *title;
    uint32_t v;
    psched_placement place;
} family;

static const family families[] = {
    {"Loop placement, v = 1", 1, PSCHED_PLACEMENT_LOOP},
    {"V-shape placement, v = 2", 2, PSCHED_PLACEMENT_VSHAPE},
    {"Loop placement, v = 2 (interleaved)", 2, PSCHED_PLACEMENT_LOOP},
};

/* The same model whatever v: a stage's costs and memory deltas are the
 * per-device figures divided by v, so every family has the same work per
 * device and a memory limit counts micro-batches of one device's activation. */
static psched_plan *table_plan(const family *f, uint32_t p, uint32_t m, costs c, double limit)
{
    psched_plan *plan = NULL;
    double v = f->v;
    if (psched_plan_create(&plan) || psched_plan_set_devices(plan, p) ||
        psched_plan_set_microbatches(plan, m) || psched_plan_set_chunks(plan, f->v) ||
        psched_plan_set_placement(plan, f->place)) {
        fprintf(stderr, "bench_optimal: plan: %s\n", psched_last_error());
        exit(1);
    }
    psched_plan_set_cost(plan, 1 / v, (c == SKEWED ? 2 : 1) / v, 1 / v);
    if (c == LAST_HEAVY)
        psched_plan_set_stage_cost(plan, p * f->v - 1, 2 / v, 2 / v, 2 / v);
    psched_plan_set_mem(plan, 1 / v, 0, -1 / v);
    psched_plan_set_memory_limit(plan, limit);
    return plan;
}

/* Built-ins of a family: the one-chain generators that accept its plan. */
static size_t family_members(const family *f, const char **names, size_t cap)
{
    size_t n = 0;
    for (size_t g = 0; g < psched_generator_count() && n < cap; g++) {
        const psched_generator *gen = psched_generator_at(g);
        if (gen->chains == 2 || psched_generator_is_exact(gen))
            continue;
        /* accepted at p = 4, m = 12 (every m rule of the built-ins holds) */
        psched_plan *plan = table_plan(f, 4, 12, UNIT, INFINITY);
        psched_schedule *s = NULL;
        if (psched_generate(plan, gen->name, &s) == PSCHED_OK)
            names[n++] = gen->name;
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
    return n;
}

static void cell(double x)
{
    if (isnan(x))
        printf(" — |");
    else
        printf(" %g |", x);
}

static void table_row(const family *f, const char **names, size_t count, uint32_t p, uint32_t m,
                      costs c, uint32_t limit_factor, int64_t time_limit)
{
    double limit = (double)(limit_factor * p);
    psched_plan *plan = table_plan(f, p, m, c, limit);
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    double bound = psched_bound(plan, NULL, &b) == PSCHED_OK ? b.span : NAN;
    printf("| %u × %u | %s | %s |", p, m, cost_names[c], limit_factor == 1 ? "p" : "2p");
    cell(bound);
    double best = INFINITY, spans[32];
    for (size_t i = 0; i < count; i++) {
        figures fg = run(plan, names[i], NULL);
        spans[i] = fg.ok ? fg.span : NAN;
        cell(spans[i]);
        if (fg.ok)
            best = fmin(best, fg.span);
    }
    psched_plan_set_option(plan, "time-limit", time_limit);
    psched_schedule *s = NULL;
    figures o = run(plan, "optimal", &s);
    char status[64] = "—";
    if (s) {
        psched_solve_status st;
        double gap;
        psched_schedule_solve_status(s, &st, &gap);
        if (st == PSCHED_SOLVE_OPTIMAL)
            snprintf(status, sizeof status, "optimal");
        else
            snprintf(status, sizeof status, "feasible, gap %.1f%%", 100 * gap);
    }
    cell(o.ok ? o.span : NAN);
    printf(" %s |", status);
    if (isfinite(best) && isfinite(bound))
        printf(" %.1f%% |\n", 100 * (best - bound) / best);
    else
        printf(" — |\n");
    /* heuristics that optimal beats by more than 5% */
    for (size_t i = 0; o.ok && i < count; i++)
        if ((!strcmp(names[i], "zb") || !strcmp(names[i], "v-half") ||
             !strcmp(names[i], "v-min")) &&
            !isnan(spans[i]) && spans[i] > o.span * 1.05 + 1e-9)
            fprintf(stderr, "NOTE %s: p=%u m=%u %s limit %s: %g vs optimal %g (%.1f%%)\n",
                    names[i], p, m, cost_names[c], limit_factor == 1 ? "p" : "2p", spans[i],
                    o.span, 100 * (spans[i] - o.span) / spans[i]);
    fflush(stdout);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void gap_table(int64_t time_limit, bool quick)
{
    static const uint32_t ps[] = {2, 3, 4, 6};
    for (size_t fi = 0; fi < sizeof families / sizeof *families; fi++) {
        const family *f = &families[fi];
        const char *names[32];
        size_t count = family_members(f, names, 32);
        printf("\n#### %s\n\n| p × m | costs | limit | bound |", f->title);
        for (size_t i = 0; i < count; i++)
            printf(" `%s` |", names[i]);
        printf(" `optimal` | status | best built-in's gap |\n|---|---|---|---|");
        for (size_t i = 0; i < count + 3; i++)
            printf("---|");
        printf("\n");
        for (size_t pi = 0; pi < (quick ? 2 : 4); pi++)
            for (uint32_t k = 1; k <= 3; k++)
                for (int c = 0; c < COST_SETS; c++)
                    for (uint32_t lim = 1; lim <= 2; lim++)
                        table_row(f, names, count, ps[pi], k * ps[pi], (costs)c, lim,
                                  time_limit);
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
    if (!table)
        scaling(time_limit, quick);
    else
        gap_table(time_limit, quick);
    return 0;
}
