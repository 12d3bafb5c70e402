/* pipesched-bench: throughput of generate, validate, simulate, hash and CSV
 * export/import for every registered generator over a range of sizes.
 * Median of repeated runs after a warm-up, with min and max.
 *
 *   pipesched-bench [--json] [--quick] [--schedule NAME]
 */
#define _POSIX_C_SOURCE 200809L
#include "pipesched.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct size3 {
    uint32_t p, m, v;
} size3;

static const size3 full_sizes[] = {
    {4, 8, 0}, {8, 64, 0}, {16, 256, 0}, {32, 1024, 0}, {64, 4096, 0}, {64, 4096, 4}, {128, 1024, 0},
};
static const size3 quick_sizes[] = {{4, 8, 0}, {8, 64, 0}, {16, 256, 0}};

enum { OP_GENERATE, OP_VALIDATE, OP_SIMULATE, OP_HASH, OP_CSV_EXPORT, OP_CSV_IMPORT, N_OPS };
static const char *const op_names[N_OPS] = {"generate", "validate", "simulate",
                                            "hash",     "csv_export", "csv_import"};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct ctx {
    const char *name;
    psched_plan *plan;
    psched_schedule *sched;
    char *csv;
    size_t csv_len;
} ctx;

/* One timed call of operation `op`; false when it fails. */
static bool run_op(ctx *c, int op)
{
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    char *text = NULL;
    uint64_t h;
    psched_status st = PSCHED_OK;
    switch (op) {
    case OP_GENERATE: st = psched_generate(c->plan, c->name, &s); break;
    case OP_VALIDATE: st = psched_validate(c->sched); break;
    case OP_SIMULATE: st = psched_simulate(c->sched, NULL, &r); break;
    case OP_HASH: st = psched_schedule_hash(c->sched, &h); break;
    case OP_CSV_EXPORT: st = psched_export(c->sched, NULL, PSCHED_FORMAT_CSV, 0, &text, NULL); break;
    case OP_CSV_IMPORT:
        st = psched_import_csv(c->csv, c->csv_len, psched_schedule_plan(c->sched), &s);
        break;
    }
    psched_schedule_destroy(s);
    psched_report_destroy(r);
    psched_free(text);
    return st == PSCHED_OK;
}

static void measure(ctx *c, int op, int reps, double out[3])
{
    double *t = malloc(sizeof *t * (size_t)reps);
    run_op(c, op); /* warm-up */
    for (int i = 0; i < reps; i++) {
        double t0 = now();
        run_op(c, op);
        t[i] = now() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    out[0] = t[reps / 2];
    out[1] = t[0];
    out[2] = t[reps - 1];
    free(t);
}

static bool bench_one(const char *name, size3 z, bool json, bool *first)
{
    ctx c = {name, NULL, NULL, NULL, 0};
    psched_plan_create(&c.plan);
    psched_plan_set_devices(c.plan, z.p);
    psched_plan_set_microbatches(c.plan, z.m);
    psched_plan_set_chunks(c.plan, z.v);
    if (psched_generate(c.plan, name, &c.sched) != PSCHED_OK) {
        psched_plan_destroy(c.plan);
        return false; /* this generator does not take this size */
    }
    psched_export(c.sched, NULL, PSCHED_FORMAT_CSV, 0, &c.csv, &c.csv_len);
    size_t ops = psched_schedule_total_ops(c.sched);
    uint32_t v = psched_plan_chunks(psched_schedule_plan(c.sched));
    int reps = ops > 1000000 ? 3 : ops > 50000 ? 7 : 21;
    for (int op = 0; op < N_OPS; op++) {
        double t[3];
        measure(&c, op, reps, t);
        double bytes = op == OP_HASH ? (double)ops * sizeof(psched_op)
                       : (op == OP_CSV_EXPORT || op == OP_CSV_IMPORT) ? (double)c.csv_len : 0;
        if (json) {
            printf("%s{\"schedule\":\"%s\",\"devices\":%u,\"microbatches\":%u,\"chunks\":%u,"
                   "\"ops\":%zu,\"operation\":\"%s\",\"median_s\":%.9g,\"min_s\":%.9g,"
                   "\"max_s\":%.9g,\"ns_per_op\":%.4g,\"mops_per_s\":%.4g,\"mb_per_s\":%.4g}",
                   *first ? "" : ",\n", name, z.p, z.m, v, ops, op_names[op], t[0], t[1], t[2],
                   1e9 * t[0] / (double)ops, (double)ops / t[0] / 1e6,
                   bytes > 0 ? bytes / t[0] / 1e6 : 0);
        } else {
            printf("%-15s %4u %5u %2u %9zu  %-10s %10.3f ms %8.2f ns/op %8.1f Mops/s",
                   name, z.p, z.m, v, ops, op_names[op], 1e3 * t[0], 1e9 * t[0] / (double)ops,
                   (double)ops / t[0] / 1e6);
            if (bytes > 0)
                printf(" %8.1f MB/s", bytes / t[0] / 1e6);
            printf("\n");
        }
        *first = false;
    }
    psched_free(c.csv);
    psched_schedule_destroy(c.sched);
    psched_plan_destroy(c.plan);
    return true;
}

int main(int argc, char **argv)
{
    bool json = false, quick = false;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--schedule") && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: pipesched-bench [--json] [--quick] [--schedule NAME]\n");
            return 2;
        }
    }
    const size3 *sizes = quick ? quick_sizes : full_sizes;
    size_t nsizes = quick ? sizeof quick_sizes / sizeof *quick_sizes
                          : sizeof full_sizes / sizeof *full_sizes;
    bool first = true;
    if (json)
        printf("[\n");
    else
        printf("%-15s %4s %5s %2s %9s  %-10s %13s\n", "schedule", "p", "m", "v", "ops",
               "operation", "median");
    for (size_t g = 0; g < psched_generator_count(); g++) {
        const char *name = psched_generator_at(g)->name;
        if (only && strcmp(only, name))
            continue;
        for (size_t i = 0; i < nsizes; i++)
            bench_one(name, sizes[i], json, &first);
    }
    if (json)
        printf("\n]\n");
    return 0;
}
