/* bench_partition: solve time and result of the layer partitioner.
 *
 *   bench_partition [--quick] [--time-limit S] [--profiles DIR]
 *                   [--schedule NAME] [--chunks V] [--no-grid] [--no-profiles]
 *                   [--no-limit]
 *
 * Part 1, a grid: L in {32, 80, 128} layers (an embedding, L-2 transformer
 * layers with selective and full recomputation, a head), p in {4, 8, 16},
 * m = 4p, v = 1 (1f1b), v = 2 (interleaved: loop placement; v-zb: V
 * placement), v = 4 (interleaved, interleaved-zb, looped-bfs) and dualpipe
 * (two chains), where the even split has a layer for every stage.
 * --schedule and --chunks keep only those rows (and skip the planner). The memory limit is 60% of the largest device memory of the
 * even split without recomputation, so recomputation is needed. Columns:
 * solver status, solve time, objective, simulated makespan, the even
 * split's makespan (with Megatron's uniform recompute choice) and the
 * speed-up. --quick: L in {32, 80}, p in {4, 8}. --no-limit: the same grid
 * with no memory limit (the column says "none"; nothing needs
 * recomputation), to tell what the limit costs the certificate from what
 * the order does.
 *
 * Part 2, the profiles of docs/examples (LLaMA-70B-like, Gemma2-9B-like,
 * Mixtral-like) at p = 8, m = 64, 80 GB and 60 GB per device, for the
 * same schedules, and the planner's best plan.
 *
 * Output: Markdown tables (docs/optimizer.md publishes them).
 *
 *   bench_partition --anneal S [--quick] [--time-limit S] [--schedule NAME]
 *                   [--chunks V] [--no-limit]
 *
 * An independent check of the grid's `feasible` rows: simulated annealing
 * through the public API alone (psched_partition_evaluate()), S seconds
 * from the optimizer's partition and S from the even split, against the
 * optimizer's step time and bound (anneal_row()).
 *
 *   bench_partition --scale L [--schedule NAME] [--chunks V] [--time-limit S]
 *
 * Scale: one partition of L identical layers (with selective and full
 * recomputation) over p = 8, m = 32 under a memory limit of twice a
 * device's even share of the parameters; prints the wall time of the
 * psched_partition() call and the process's peak resident memory (issue 12
 * item 5: memory linear in L, the time limit honoured within 10%).
 */
#define _POSIX_C_SOURCE 200809L
#include "pipesched.h"

#include <math.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {"optimal", "feasible", "infeasible"};

static psched_model *grid_model(uint32_t layers)
{
    psched_model *m = NULL;
    if (psched_model_create(&m) ||
        psched_model_add_layers(m, "embedding", 1, 0.2, 0.2, 0.2, 1, 40) ||
        psched_model_add_layers(m, "layer", layers - 2, 1, 1, 1, 4, 10) ||
        psched_model_set_recompute(m, 1, PSCHED_RECOMPUTE_SELECTIVE, 2, 0.25) ||
        psched_model_set_recompute(m, 1, PSCHED_RECOMPUTE_FULL, 0.5, 1) ||
        psched_model_add_layers(m, "head", 1, 3, 3, 3, 8, 40)) {
        fprintf(stderr, "bench_partition: model: %s\n", psched_last_error());
        exit(1);
    }
    return m;
}

static psched_plan *make_plan(uint32_t p, uint32_t m, uint32_t v, double limit)
{
    psched_plan *plan = NULL;
    if (psched_plan_create(&plan) || psched_plan_set_devices(plan, p) ||
        psched_plan_set_microbatches(plan, m) || psched_plan_set_chunks(plan, v) ||
        psched_plan_set_memory_limit(plan, limit)) {
        fprintf(stderr, "bench_partition: plan: %s\n", psched_last_error());
        exit(1);
    }
    return plan;
}

/* Partition with a method; NULL (message printed) on failure. */
static psched_partition_result *run(const psched_model *model, const psched_plan *plan,
                                    const char *schedule, psched_partition_method method,
                                    double time_limit)
{
    psched_partition_options o = PSCHED_PARTITION_OPTIONS_INIT;
    o.method = method;
    o.time_limit = time_limit;
    psched_partition_result *r = NULL;
    if (psched_partition(model, plan, schedule, &o, &r)) {
        fprintf(stderr, "bench_partition: %s: %s\n", schedule, psched_last_error());
        return NULL;
    }
    return r;
}

static double makespan_if_found(const psched_partition_result *r)
{
    return r && psched_partition_status(r) != PSCHED_SOLVE_INFEASIBLE
               ? psched_partition_makespan(r)
               : NAN;
}

/* Largest device memory of the even split without recomputation. */
static double even_memory(const psched_model *model, uint32_t p, uint32_t m, uint32_t v,
                          const char *schedule)
{
    psched_plan *plan = make_plan(p, m, v, INFINITY);
    psched_partition_result *r = run(model, plan, schedule, PSCHED_PARTITION_EVEN, 1);
    double worst = 0;
    for (uint32_t d = 0; r && d < p; d++) {
        double mem = 0;
        psched_partition_device(r, d, NULL, &mem, NULL);
        worst = fmax(worst, mem);
    }
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    return worst;
}

static void print_status(const psched_partition_result *r)
{
    psched_solve_status s = psched_partition_status(r);
    if (s == PSCHED_SOLVE_FEASIBLE && isfinite(psched_partition_gap(r)))
        printf("feasible (gap %.2f%%)", 100 * psched_partition_gap(r));
    else
        printf("%s", status_names[s]);
}

/* One grid case: its model, plan (m = 4p, the limit 60% of the even
 * split's largest device without recomputation, or none), the
 * optimizer's result and the even split's. */
typedef struct grid_case {
    psched_model *model;
    psched_plan *plan;
    psched_partition_result *r, *e;
    double limit;
} grid_case;

static grid_case grid_case_run(uint32_t layers, uint32_t p, uint32_t v, const char *schedule,
                               double time_limit, bool unlimited)
{
    grid_case g;
    g.model = grid_model(layers);
    g.limit = unlimited ? INFINITY : 0.6 * even_memory(g.model, p, 4 * p, v, schedule);
    g.plan = make_plan(p, 4 * p, v, g.limit);
    g.r = run(g.model, g.plan, schedule, PSCHED_PARTITION_ILP, time_limit);
    g.e = run(g.model, g.plan, schedule, PSCHED_PARTITION_EVEN, time_limit);
    return g;
}

static void grid_case_free(grid_case *g)
{
    psched_partition_result_destroy(g->r);
    psched_partition_result_destroy(g->e);
    psched_plan_destroy(g->plan);
    psched_model_destroy(g->model);
}

static void grid_row(uint32_t layers, uint32_t p, uint32_t v, const char *schedule,
                     double time_limit, bool unlimited)
{
    grid_case g = grid_case_run(layers, p, v, schedule, time_limit, unlimited);
    const psched_partition_result *r = g.r, *e = g.e;
    double limit = g.limit;
    double mk = makespan_if_found(r), even = makespan_if_found(e);
    printf("| %u | %u | %u | %s | ", layers, p, v, schedule);
    if (unlimited)
        printf("none | ");
    else
        printf("%.4g | ", limit);
    if (r) {
        print_status(r);
        printf(" | %.3f | %.6g | %.6g | ", psched_partition_solve_time(r),
               psched_partition_objective(r), mk);
    } else {
        printf("error | | | | ");
    }
    if (isfinite(even))
        printf("%.6g | %.3fx |\n", even, even / mk);
    else
        printf("does not fit | |\n");
    fflush(stdout);
    grid_case_free(&g);
}

/* The schedules benchmarked: v = 1, 2 (loop and V placement), 4 (loop:
 * interleaved, interleaved-zb and looped-bfs, whose every micro-batch in
 * flight makes recomputation bind) and DualPipe's two chains (p ranges,
 * each held by two devices). */
static const struct kind {
    uint32_t v, ranges_per_device;
    const char *schedule;
} kinds[] = {{1, 1, "1f1b"},        {2, 2, "interleaved"},    {2, 2, "v-zb"},
             {4, 4, "interleaved"}, {4, 4, "interleaved-zb"}, {4, 4, "looped-bfs"},
             {2, 1, "dualpipe"}};

/* Whether a --schedule / --chunks filter keeps the kind. */
static bool kept(const struct kind *k, const char *schedule, uint32_t chunks)
{
    return (!schedule || strcmp(schedule, k->schedule) == 0) && (!chunks || chunks == k->v);
}

static void anneal_row(uint32_t layers, uint32_t p, uint32_t v, const char *schedule,
                       double time_limit, bool unlimited, double seconds);

/* The grid's rows; with anneal > 0 (seconds per start) only the feasible
 * ones, each with the annealing check (anneal_row()). */
static void grid(bool quick, double time_limit, const char *schedule, uint32_t chunks,
                 bool unlimited, double anneal)
{
    static const uint32_t layer_counts[] = {32, 80, 128}, devices[] = {4, 8, 16};
    size_t nl = quick ? 2 : 3, np = quick ? 2 : 3;
    if (anneal > 0) {
        puts("| L | p | v | schedule | gap | makespan | bound | annealed from it | "
             "annealed from the even split |");
        puts("|---|---|---|---|---|---|---|---|---|");
    } else {
        puts("| L | p | v | schedule | memory limit | status | solve time (s) | objective | "
             "makespan | even makespan | speed-up |");
        puts("|---|---|---|---|---|---|---|---|---|---|---|");
    }
    for (size_t i = 0; i < nl; i++)
        for (size_t j = 0; j < np; j++)
            for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
                if (kept(&kinds[k], schedule, chunks) &&
                    layer_counts[i] - 2 >= devices[j] * kinds[k].ranges_per_device) {
                    if (anneal > 0)
                        anneal_row(layer_counts[i], devices[j], kinds[k].v, kinds[k].schedule,
                                   time_limit, unlimited, anneal);
                    else
                        grid_row(layer_counts[i], devices[j], kinds[k].v, kinds[k].schedule,
                                 time_limit, unlimited);
                }
}

static psched_model *load_profile(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_partition: cannot open %s\n", path);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 65536;
            char *t = realloc(text, cap);
            if (!t)
                break;
            text = t;
        }
        size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    psched_model *m = NULL;
    if (psched_model_load_csv(text, len, &m))
        fprintf(stderr, "bench_partition: %s: %s\n", path, psched_last_error());
    free(text);
    return m;
}

static void profile_best(const psched_model *model, const psched_plan *plan, const char *name,
                         double limit, double time_limit)
{
    psched_search_options so = PSCHED_SEARCH_OPTIONS_INIT;
    so.time_limit = time_limit;
    psched_search_result *s = NULL;
    if (psched_plan_search(model, plan, NULL, 0, &so, &s) || !psched_search_count(s) ||
        !psched_search_fits(s, 0)) {
        printf("| %s | %.0f GB | planner | | nothing fits | | | | |\n", name, limit / 1e9);
    } else {
        double mk = psched_search_makespan(s, 0), even = psched_search_even_makespan(s, 0);
        printf("| %s | %.0f GB | planner: %s | %u | %s | %.3f | %.6g | ", name, limit / 1e9,
               psched_search_schedule(s, 0), psched_search_chunks(s, 0),
               status_names[psched_search_status(s, 0)], psched_search_solve_time(s), mk);
        if (isfinite(even))
            printf("%.6g | %.3fx |\n", even, even / mk);
        else
            printf("does not fit | |\n");
    }
    psched_search_result_destroy(s);
}

static void profiles(const char *dir, bool quick, double time_limit, const char *schedule,
                     uint32_t chunks)
{
    static const char *const names[] = {"llama70b", "gemma2_9b", "mixtral"};
    static const double limits[] = {80e9, 60e9};
    puts("\n| profile | memory | schedule | v | status | solve time (s) | makespan | "
         "even makespan | speed-up |");
    puts("|---|---|---|---|---|---|---|---|---|");
    for (size_t i = 0; i < 3; i++) {
        psched_model *model = load_profile(dir, names[i]);
        for (size_t l = 0; model && l < (quick ? 1u : 2u); l++) {
            for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
                if (!kept(&kinds[k], schedule, chunks))
                    continue;
                psched_plan *plan = make_plan(8, 64, kinds[k].v, limits[l]);
                psched_partition_result *r =
                    run(model, plan, kinds[k].schedule, PSCHED_PARTITION_ILP, time_limit);
                psched_partition_result *e =
                    run(model, plan, kinds[k].schedule, PSCHED_PARTITION_EVEN, time_limit);
                double mk = makespan_if_found(r), even = makespan_if_found(e);
                printf("| %s | %.0f GB | %s | %u | ", names[i], limits[l] / 1e9,
                       kinds[k].schedule, kinds[k].v);
                if (r)
                    print_status(r);
                printf(" | %.3f | %.6g | ", r ? psched_partition_solve_time(r) : NAN, mk);
                if (isfinite(even))
                    printf("%.6g | %.3fx |\n", even, even / mk);
                else
                    printf("does not fit | |\n");
                fflush(stdout);
                psched_partition_result_destroy(r);
                psched_partition_result_destroy(e);
                psched_plan_destroy(plan);
            }
            if (schedule || chunks)
                continue; /* the planner tries every schedule */
            psched_plan *plan = make_plan(8, 64, 0, limits[l]);
            profile_best(model, plan, names[i], limits[l], time_limit < 1 ? time_limit : 1);
            psched_plan_destroy(plan);
        }
        psched_model_destroy(model);
    }
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- an independent check (--anneal S) ----
 *
 * Simulated annealing over the partitions of a grid row, written only
 * against the public API (psched_partition_evaluate() simulates each
 * candidate): a move shifts the boundary between two neighbouring stages
 * by one layer (no stage left empty) or gives one transformer layer
 * another recompute variant; a candidate over the memory limit is
 * rejected. It shares nothing with the optimizer's searches, so where it
 * ends below the optimizer's partition that partition is not the best
 * there is, and where it does not, a `feasible` row's gap is more likely
 * the bound's than the partition's. */
typedef struct anneal_run {
    const psched_model *model;
    const psched_plan *plan;
    const char *schedule;
    uint32_t stages, layers;
    uint64_t rng;
} anneal_run;

static uint64_t anneal_next(anneal_run *a)
{
    a->rng ^= a->rng << 13; /* xorshift64: the same run every time */
    a->rng ^= a->rng >> 7;
    a->rng ^= a->rng << 17;
    return a->rng;
}

/* The simulated step time, INFINITY when it does not fit (or the library
 * refuses the partition). */
static double anneal_eval(const anneal_run *a, const uint32_t *counts,
                          const psched_recompute *rec)
{
    psched_partition_result *r = NULL;
    if (psched_partition_evaluate(a->model, a->plan, a->schedule, counts, a->stages, rec, &r))
        return INFINITY;
    double mk = psched_partition_status(r) == PSCHED_SOLVE_FEASIBLE ? psched_partition_makespan(r)
                                                                     : INFINITY;
    psched_partition_result_destroy(r);
    return mk;
}

/* Anneals from counts/rec (overwritten with the best found) for `seconds`;
 * returns the best step time. The temperature falls linearly from 0.3% of
 * the start's step time. */
static double anneal(anneal_run *a, uint32_t *counts, psched_recompute *rec, double seconds)
{
    uint32_t S = a->stages, L = a->layers;
    uint32_t *cc = malloc(S * sizeof *cc), *bc = malloc(S * sizeof *bc);
    psched_recompute *cr = malloc(L * sizeof *cr), *br = malloc(L * sizeof *br);
    if (!cc || !bc || !cr || !br) {
        fprintf(stderr, "bench_partition: out of memory\n");
        exit(1);
    }
    double cur = anneal_eval(a, counts, rec), best = cur;
    if (!isfinite(cur))
        fprintf(stderr, "bench_partition: %s: the start does not evaluate: %s\n", a->schedule,
                psched_last_error());
    memcpy(bc, counts, S * sizeof *bc);
    memcpy(br, rec, L * sizeof *br);
    double t0 = wall(), t0_temp = 0.003 * (isfinite(cur) ? cur : 1);
    for (;;) {
        double frac = (wall() - t0) / seconds;
        if (frac >= 1)
            break;
        memcpy(cc, counts, S * sizeof *cc);
        memcpy(cr, rec, L * sizeof *cr);
        uint32_t moves = 1 + (uint32_t)(anneal_next(a) % 3);
        for (uint32_t k = 0; k < moves; k++) {
            uint64_t r = anneal_next(a);
            if (r % 2) {
                uint32_t s = (uint32_t)((r >> 1) % (S - 1));
                bool right = (r >> 40) & 1; /* stage s's last layer to s + 1, or back */
                if (right && cc[s] > 1) {
                    cc[s]--;
                    cc[s + 1]++;
                } else if (!right && cc[s + 1] > 1) {
                    cc[s + 1]--;
                    cc[s]++;
                }
            } else {
                /* a transformer layer (not the embedding or the head) */
                uint32_t l = 1 + (uint32_t)((r >> 1) % (L - 2));
                cr[l] = (psched_recompute)((r >> 40) % 3);
            }
        }
        double v = anneal_eval(a, cc, cr);
        double temp = t0_temp * (1 - frac) + 1e-9;
        double u = (double)(anneal_next(a) >> 11) / 9007199254740992.0;
        if (v < cur || (isfinite(v) && exp((cur - v) / temp) > u)) {
            memcpy(counts, cc, S * sizeof *cc);
            memcpy(rec, cr, L * sizeof *cr);
            cur = v;
            if (v < best) {
                best = v;
                memcpy(bc, cc, S * sizeof *bc);
                memcpy(br, cr, L * sizeof *br);
            }
        }
    }
    memcpy(counts, bc, S * sizeof *bc);
    memcpy(rec, br, L * sizeof *br);
    free(cc);
    free(bc);
    free(cr);
    free(br);
    return best;
}

/* A result's counts and recompute choices. */
static void read_partition(const psched_partition_result *r, uint32_t S, uint32_t L,
                           uint32_t *counts, psched_recompute *rec)
{
    for (uint32_t s = 0; s < S; s++)
        psched_partition_stage(r, s, NULL, &counts[s], NULL, NULL);
    for (uint32_t l = 0; l < L; l++)
        rec[l] = psched_partition_layer_recompute(r, l);
}

static void anneal_row(uint32_t layers, uint32_t p, uint32_t v, const char *schedule,
                       double time_limit, bool unlimited, double seconds)
{
    grid_case g = grid_case_run(layers, p, v, schedule, time_limit, unlimited);
    const psched_partition_result *r = g.r, *e = g.e;
    if (!r || !e || psched_partition_status(r) != PSCHED_SOLVE_FEASIBLE) {
        grid_case_free(&g); /* proven or infeasible: nothing to check */
        return;
    }
    uint32_t S = psched_partition_stages(r), held = 0;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t c = 0;
        psched_partition_stage(r, s, NULL, &c, NULL, NULL);
        held += c;
    }
    if (held == 2 * layers)
        S /= 2; /* DualPipe lists its ranges twice: anneal them once */
    uint32_t *counts = malloc(S * sizeof *counts);
    psched_recompute *rec = malloc(layers * sizeof *rec);
    if (!counts || !rec) {
        fprintf(stderr, "bench_partition: out of memory\n");
        exit(1);
    }
    double mk = psched_partition_makespan(r), gap = psched_partition_gap(r);
    anneal_run a = {g.model, g.plan, schedule, S, layers, 0x9e3779b97f4a7c15u};
    read_partition(r, S, layers, counts, rec);
    double from_it = anneal(&a, counts, rec, seconds);
    /* the even split with every transformer layer fully recomputed (the
     * least memory: it fits where any partition does) */
    read_partition(e, S, layers, counts, rec);
    for (uint32_t l = 1; l + 1 < layers; l++)
        rec[l] = PSCHED_RECOMPUTE_FULL;
    a.rng = 0x9e3779b97f4a7c15u;
    double from_even = anneal(&a, counts, rec, seconds);
    printf("| %u | %u | %u | %s | %.2f%% | %.6g | %.6g | %.6g (%+.2f%%) | %.6g (%+.2f%%) |\n",
           layers, p, v, schedule, 100 * gap, mk, mk * (1 - gap), from_it,
           100 * (from_it - mk) / mk, from_even, 100 * (from_even - mk) / mk);
    fflush(stdout);
    free(counts);
    free(rec);
    grid_case_free(&g);
}

static int scale(uint32_t layers, const char *schedule, uint32_t v, double time_limit)
{
    psched_model *model = NULL;
    if (psched_model_create(&model) ||
        psched_model_add_layers(model, "layer", layers, 1, 1, 1, 4, 10) ||
        psched_model_set_recompute(model, 0, PSCHED_RECOMPUTE_SELECTIVE, 2, 0.25) ||
        psched_model_set_recompute(model, 0, PSCHED_RECOMPUTE_FULL, 0.5, 1)) {
        fprintf(stderr, "bench_partition: model: %s\n", psched_last_error());
        return 1;
    }
    psched_plan *plan = make_plan(8, 32, v, 2.0 * 10 * layers / 8);
    double t0 = wall();
    psched_partition_result *r = run(model, plan, schedule, PSCHED_PARTITION_ILP, time_limit);
    double t = wall() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("| %u | %s | %u | %g | ", layers, schedule, v, time_limit);
    if (r)
        print_status(r);
    printf(" | %.2f | %.0f |\n", t, ru.ru_maxrss / 1024.0);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
    return r ? 0 : 1;
}

int main(int argc, char **argv)
{
    uint32_t scale_layers = 0, scale_chunks = 0;
    const char *scale_schedule = NULL;
    bool no_grid = false, no_profiles = false, unlimited = false;
    bool quick = false;
    double time_limit = 10, anneal = 0;
    const char *dir = "docs/examples";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc) {
            time_limit = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--profiles") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) {
            scale_layers = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--schedule") == 0 && i + 1 < argc) {
            scale_schedule = argv[++i];
        } else if (strcmp(argv[i], "--chunks") == 0 && i + 1 < argc) {
            scale_chunks = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--anneal") == 0 && i + 1 < argc) {
            anneal = strtod(argv[++i], NULL);
            if (!(anneal > 0)) {
                fprintf(stderr, "bench_partition: --anneal must be > 0 seconds\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--no-grid") == 0) {
            no_grid = true;
        } else if (strcmp(argv[i], "--no-profiles") == 0) {
            no_profiles = true;
        } else if (strcmp(argv[i], "--no-limit") == 0) {
            unlimited = true;
        } else {
            fprintf(stderr, "usage: bench_partition [--quick] [--time-limit S] [--profiles DIR]\n"
                            "           [--schedule NAME] [--chunks V] [--no-grid] "
                            "[--no-profiles] [--no-limit]\n"
                            "       bench_partition --anneal S [--quick] [--time-limit S] "
                            "[--schedule NAME]\n"
                            "           [--chunks V] [--no-limit]\n"
                            "       bench_partition --scale L [--schedule NAME] [--chunks V] "
                            "[--time-limit S]\n");
            return 2;
        }
    }
    if (!(time_limit > 0)) {
        fprintf(stderr, "bench_partition: --time-limit must be > 0\n");
        return 2;
    }
    if (scale_layers)
        return scale(scale_layers, scale_schedule ? scale_schedule : "1f1b",
                     scale_chunks ? scale_chunks : 1, time_limit);
    printf("pipesched %s, time limit %g s per partition\n\n", psched_version(), time_limit);
    if (anneal > 0) {
        grid(quick, time_limit, scale_schedule, scale_chunks, unlimited, anneal);
        return 0;
    }
    if (!no_grid)
        grid(quick, time_limit, scale_schedule, scale_chunks, unlimited, 0);
    if (!no_profiles)
        profiles(dir, quick, time_limit, scale_schedule, scale_chunks);
    return 0;
}
