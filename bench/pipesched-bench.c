/* pipesched-bench: throughput and memory of generate, validate, simulate,
 * lower, hash and CSV export/import for every registered generator over a
 * range of sizes; the time per schedule of the search-based generators; the
 * whole interleaved pipeline at cluster scale; and a scaling run that
 * doubles the op count and prints the time ratio per doubling.
 *
 * Every time is the median of repeated samples after a warm-up call, with
 * the fastest and slowest sample; by default on the thread's CPU-time clock
 * (--clock wall for the wall clock). Memory is the peak resident size one
 * call adds, divided by the schedule's op count, and for generate also what
 * the generated schedule keeps (bench.h says how). A last section checks
 * the targets of issue 7 against what ran.
 *
 *   pipesched-bench [--full] [--json] [--schedule NAME] [--only SECTIONS]
 *                   [--clock cpu|wall] [--min-time SECONDS] [--no-memory]
 */
#include "bench.h"
#include "pipesched.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct size3 {
    uint32_t p, m, v; /* v = 0: the generator's default */
} size3;

/* The quick set (the default, and what `meson test --benchmark` and the docs run)
 * reaches half a million ops through the v = 4 size, which only the
 * generators with free v accept; --full goes to cluster scale. */
static const size3 quick_sizes[] = {{4, 8, 0}, {8, 32, 0}, {16, 128, 0}, {32, 256, 0},
                                    {64, 1024, 4}};
static const size3 full_sizes[] = {{4, 8, 0},     {8, 32, 0},     {16, 128, 0},
                                   {32, 256, 0},  {32, 1024, 0},  {64, 1024, 4},
                                   {64, 4096, 0}, {64, 4096, 4},  {128, 1024, 0}};

enum { SEC_TABLE = 1, SEC_HEURISTIC = 2, SEC_PIPELINE = 4, SEC_SCALING = 8, SEC_ALL = 15 };

typedef struct options {
    bool json, full, memory;
    const char *only_schedule;
    unsigned sections;
    bench_cfg cfg;
} options;

/* ------------------------------------------------------------ operations */

/* What one (generator, size) measurement works on. */
typedef struct ctx {
    const char *name;
    psched_plan *plan;
    psched_schedule *sched;
    char *csv;
    size_t csv_len, ops;
    psched_schedule *lowered; /* made at the first lower_check call */
} ctx;

static bool op_generate(void *arg)
{
    ctx *c = arg;
    psched_schedule *s = NULL;
    bool ok = psched_generate(c->plan, c->name, &s) == PSCHED_OK;
    psched_schedule_destroy(s);
    return ok;
}

static bool op_validate(void *arg)
{
    return psched_validate(((ctx *)arg)->sched) == PSCHED_OK;
}

static bool op_simulate(void *arg)
{
    psched_report *r = NULL;
    bool ok = psched_simulate(((ctx *)arg)->sched, NULL, &r) == PSCHED_OK;
    psched_report_destroy(r);
    return ok;
}

static bool op_lower(void *arg)
{
    psched_schedule *l = NULL;
    bool ok = psched_lower_comm(((ctx *)arg)->sched, NULL, &l) == PSCHED_OK;
    psched_schedule_destroy(l);
    return ok;
}

/* The rendezvous engine's check of a lowered schedule (psched_validate of
 * the output of psched_lower_comm): what a runtime runs before it trusts
 * the lowering. The warm-up call lowers. */
static bool op_lower_check(void *arg)
{
    ctx *c = arg;
    if (!c->lowered && psched_lower_comm(c->sched, NULL, &c->lowered) != PSCHED_OK)
        return false;
    return psched_validate(c->lowered) == PSCHED_OK;
}

static bool op_hash(void *arg)
{
    uint64_t h;
    return psched_schedule_hash(((ctx *)arg)->sched, &h) == PSCHED_OK;
}

static bool op_csv_export(void *arg)
{
    char *text = NULL;
    bool ok = psched_export(((ctx *)arg)->sched, NULL, PSCHED_FORMAT_CSV, 0, &text, NULL) ==
              PSCHED_OK;
    psched_free(text);
    return ok;
}

static bool op_csv_import(void *arg)
{
    ctx *c = arg;
    psched_schedule *s = NULL;
    bool ok = psched_import_csv(c->csv, c->csv_len, psched_schedule_plan(c->sched), &s) ==
              PSCHED_OK;
    psched_schedule_destroy(s);
    return ok;
}

/* The whole pipeline of the CLI's `generate --format csv`: generate,
 * simulate (which validates first), export. */
static bool op_pipeline(void *arg)
{
    ctx *c = arg;
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    char *text = NULL;
    bool ok = psched_generate(c->plan, c->name, &s) == PSCHED_OK &&
              psched_simulate(s, NULL, &r) == PSCHED_OK &&
              psched_export(s, r, PSCHED_FORMAT_CSV, 0, &text, NULL) == PSCHED_OK;
    psched_free(text);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    return ok;
}

/* Throughput in bytes: of op records (hash) or of CSV text (export, import). */
enum { BYTES_NONE, BYTES_RECORDS, BYTES_CSV };

typedef struct op_def {
    const char *name;
    bench_fn fn;
    int bytes;
} op_def;

static const op_def operations[] = {
    {"generate", op_generate, BYTES_NONE},     {"validate", op_validate, BYTES_NONE},
    {"simulate", op_simulate, BYTES_NONE},     {"lower", op_lower, BYTES_NONE},
    {"lower_check", op_lower_check, BYTES_NONE},
    {"hash", op_hash, BYTES_RECORDS},          {"csv_export", op_csv_export, BYTES_CSV},
    {"csv_import", op_csv_import, BYTES_CSV},
};
#define N_OPERATIONS (sizeof operations / sizeof operations[0])

static void ctx_free(ctx *c)
{
    psched_free(c->csv);
    psched_schedule_destroy(c->lowered);
    psched_schedule_destroy(c->sched);
    psched_plan_destroy(c->plan);
    memset(c, 0, sizeof *c);
}

/* False when the generator does not take this size (or memory ran out). */
static bool ctx_init(ctx *c, const char *name, size3 z, double f, double b, double w,
                     double comm)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    bool ok = psched_plan_create(&c->plan) == PSCHED_OK &&
              psched_plan_set_devices(c->plan, z.p) == PSCHED_OK &&
              psched_plan_set_microbatches(c->plan, z.m) == PSCHED_OK &&
              psched_plan_set_chunks(c->plan, z.v) == PSCHED_OK &&
              psched_plan_set_cost(c->plan, f, b, w) == PSCHED_OK &&
              psched_plan_set_comm(c->plan, comm) == PSCHED_OK &&
              psched_generate(c->plan, name, &c->sched) == PSCHED_OK &&
              psched_export(c->sched, NULL, PSCHED_FORMAT_CSV, 0, &c->csv, &c->csv_len) ==
                  PSCHED_OK;
    if (!ok) {
        ctx_free(c);
        return false;
    }
    c->ops = psched_schedule_total_ops(c->sched);
    return true;
}

/* Resident bytes a generated schedule holds: VmRSS with it, minus before. */
static double kept_by_generate(ctx *c)
{
    double before = bench_resident_bytes();
    psched_schedule *s = NULL;
    if (before < 0 || psched_generate(c->plan, c->name, &s) != PSCHED_OK)
        return -1;
    double after = bench_resident_bytes();
    psched_schedule_destroy(s);
    return after < 0 ? -1 : after - before;
}

static uint32_t ctx_chunks(const ctx *c)
{
    return psched_plan_chunks(psched_schedule_plan(c->sched));
}

/* ---------------------------------------------------------------- output */

typedef bench_record record;

/* Every record, for the targets at the end. */
static record *all_records;
static size_t n_records, cap_records;

static void keep(const record *r)
{
    if (n_records == cap_records) {
        size_t cap = cap_records ? 2 * cap_records : 256;
        record *grown = realloc(all_records, cap * sizeof *grown);
        if (!grown)
            return; /* the targets then miss this record; the table still has it */
        all_records = grown;
        cap_records = cap;
    }
    all_records[n_records++] = *r;
}

static bool json_first = true;

static void json_num(const char *key, double x, bool valid)
{
    if (valid)
        printf(",\"%s\":%.6g", key, x);
    else
        printf(",\"%s\":null", key);
}

static void print_json(const record *r)
{
    double ops = (double)r->ops;
    printf("%s\n  {\"section\":\"%s\",\"schedule\":\"%s\",\"operation\":\"%s\",\"note\":\"%s\","
           "\"devices\":%u,\"microbatches\":%u,\"chunks\":%u,\"ops\":%zu,\"samples\":%d,"
           "\"batch\":%ld",
           json_first ? "" : ",", r->section, r->schedule, r->operation, r->note ? r->note : "",
           r->p, r->m, r->v, r->ops, r->t.samples, r->t.batch);
    json_first = false;
    json_num("median_s", r->t.median, true);
    json_num("min_s", r->t.min, true);
    json_num("max_s", r->t.max, true);
    json_num("ns_per_op", 1e9 * r->t.median / ops, true);
    json_num("mops_per_s", ops / r->t.median / 1e6, true);
    json_num("mb_per_s", r->bytes / r->t.median / 1e6, r->bytes > 0);
    json_num("bytes_per_op", r->mem / ops, r->mem >= 0);
    json_num("kept_bytes_per_op", r->kept / ops, r->kept >= 0);
    json_num("ratio", r->ratio, r->ratio > 0);
    printf("}");
}

static void print_table_header(const char *title)
{
    printf("\n%s\n%-15s %4s %5s %2s %9s  %-10s %10s %10s %10s %9s %9s %8s %7s %7s\n", title,
           "schedule", "p", "m", "v", "ops", "operation", "median ms", "min ms", "max ms",
           "ns/op", "Mops/s", "MB/s", "B/op", "kept");
}

static void print_row(const record *r)
{
    double ops = (double)r->ops;
    printf("%-15s %4u %5u %2u %9zu  %-10s %10.4f %10.4f %10.4f %9.2f %9.1f", r->schedule, r->p,
           r->m, r->v, r->ops, r->operation, 1e3 * r->t.median, 1e3 * r->t.min, 1e3 * r->t.max,
           1e9 * r->t.median / ops, ops / r->t.median / 1e6);
    if (r->bytes > 0)
        printf(" %8.0f", r->bytes / r->t.median / 1e6);
    else
        printf(" %8s", "-");
    if (r->mem >= 0)
        printf(" %7.1f", r->mem / ops);
    else
        printf(" %7s", "-");
    if (r->kept >= 0)
        printf(" %7.1f", r->kept / ops);
    else
        printf(" %7s", "-");
    if (r->note)
        printf("  %s", r->note);
    printf("\n");
}

static void emit(const options *o, const record *r)
{
    keep(r);
    if (o->json)
        print_json(r);
    else
        print_row(r);
    fflush(stdout);
}

/* --------------------------------------------------------------- sections */

static double op_bytes(const ctx *c, int kind)
{
    if (kind == BYTES_RECORDS)
        return (double)c->ops * (double)sizeof(psched_op);
    return kind == BYTES_CSV ? (double)c->csv_len : 0;
}

static bool wanted(const options *o, const char *name)
{
    return !o->only_schedule || strcmp(o->only_schedule, name) == 0;
}

/* Every operation on one generator at one size. */
static void table_one(const options *o, const char *name, size3 z)
{
    ctx c;
    if (!ctx_init(&c, name, z, 1, 1, 1, 0))
        return; /* the generator does not take this size */
    for (size_t k = 0; k < N_OPERATIONS; k++) {
        record r = {.section = "table", .schedule = name, .operation = operations[k].name,
                    .p = z.p, .m = z.m, .v = ctx_chunks(&c), .ops = c.ops,
                    .bytes = op_bytes(&c, operations[k].bytes), .mem = -1, .kept = -1};
        if (!bench_time(operations[k].fn, &c, &o->cfg, &r.t)) {
            if (!o->json)
                printf("%-15s %4u %5u %2u %9zu  %-10s failed: %s\n", name, z.p, z.m, r.v, c.ops,
                       r.operation, psched_last_error());
            continue;
        }
        if (o->memory) {
            r.mem = bench_peak_bytes(operations[k].fn, &c);
            if (operations[k].fn == op_generate)
                r.kept = kept_by_generate(&c);
        }
        emit(o, &r);
    }
    ctx_free(&c);
}

static void section_table(const options *o)
{
    const size3 *sizes = o->full ? full_sizes : quick_sizes;
    size_t n = o->full ? sizeof full_sizes / sizeof *full_sizes
                       : sizeof quick_sizes / sizeof *quick_sizes;
    if (!o->json)
        print_table_header("Throughput per generator and size (unit costs; B/op: peak resident "
                           "bytes one call adds, per op; kept: what a generated schedule holds)");
    for (size_t g = 0; g < psched_generator_count(); g++) {
        const char *name = psched_generator_at(g)->name;
        if (wanted(o, name))
            for (size_t i = 0; i < n; i++)
                table_one(o, name, sizes[i]);
    }
}

/* The search-based generators at p = 32, m = 256: the time per schedule,
 * with unit costs and with uneven costs and a comm latency (the heuristics
 * take other paths when ties disappear). Target: 50 ms. */
static void section_heuristic(const options *o)
{
    static const char *const names[] = {"zb", "v-min", "v-half"};
    static const size3 z = {32, 256, 0};
    if (!o->json)
        print_table_header("Search-based generators at p = 32, m = 256: time per schedule "
                           "(target <= 50 ms)");
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        for (int uneven = 0; uneven < 2; uneven++) {
            ctx c;
            if (!wanted(o, names[i]) ||
                !ctx_init(&c, names[i], z, 1, uneven ? 2.0 : 1, uneven ? 1.5 : 1,
                          uneven ? 0.25 : 0))
                continue;
            record r = {.section = "heuristic", .schedule = names[i], .operation = "generate",
                        .note = uneven ? "costs F 1, B 2, W 1.5, comm 0.25" : "unit costs",
                        .p = z.p, .m = z.m, .v = ctx_chunks(&c), .ops = c.ops, .mem = -1,
                        .kept = -1};
            if (bench_time(op_generate, &c, &o->cfg, &r.t)) {
                if (o->memory) {
                    r.mem = bench_peak_bytes(op_generate, &c);
                    r.kept = kept_by_generate(&c);
                }
                emit(o, &r);
            }
            ctx_free(&c);
        }
    }
}

/* Generate, validate, simulate and export CSV of the interleaved schedule
 * at p = 64, m = 4096, v = 4 in one call: what `pipesched generate
 * --format csv` does. Target: under one second. */
static void section_pipeline(const options *o)
{
    static const size3 z = {64, 4096, 4};
    ctx c;
    if (!wanted(o, "interleaved") || !ctx_init(&c, "interleaved", z, 1, 1, 1, 0))
        return;
    if (!o->json)
        print_table_header("The interleaved pipeline at cluster scale: generate + validate + "
                           "simulate + CSV export (target < 1 s)");
    record r = {.section = "pipeline", .schedule = "interleaved", .operation = "pipeline",
                .note = "generate, simulate (validates), export csv", .p = z.p, .m = z.m,
                .v = z.v, .ops = c.ops, .bytes = (double)c.csv_len, .mem = -1, .kept = -1};
    bench_cfg cfg = o->cfg;
    cfg.min_samples = 3;
    if (bench_time(op_pipeline, &c, &cfg, &r.t)) {
        if (o->memory)
            r.mem = bench_peak_bytes(op_pipeline, &c);
        emit(o, &r);
    }
    ctx_free(&c);
}

/* One doubling series: every operation at each size, with the ratio of its
 * time to the previous size's (2.00 when the cost is linear in ops). */
static void scaling_series(const options *o, const char *series, const size3 *z, size_t n)
{
    double prev[N_OPERATIONS] = {0};
    for (size_t i = 0; i < n; i++) {
        ctx c;
        if (!ctx_init(&c, "interleaved", z[i], 1, 1, 1, 0))
            continue;
        for (size_t k = 0; k < N_OPERATIONS; k++) {
            record r = {.section = "scaling", .schedule = "interleaved",
                        .operation = operations[k].name, .note = series, .p = z[i].p,
                        .m = z[i].m, .v = z[i].v, .ops = c.ops,
                        .bytes = op_bytes(&c, operations[k].bytes), .mem = -1, .kept = -1};
            if (!bench_time(operations[k].fn, &c, &o->cfg, &r.t))
                continue;
            r.ratio = prev[k] > 0 ? r.t.median / prev[k] : 0;
            prev[k] = r.t.median;
            if (o->json) {
                emit(o, &r);
                continue;
            }
            keep(&r);
            printf("%s%-10s %9.3f ms ", k % 4 ? "  " : k ? "\n   " : "   ", r.operation,
                   1e3 * r.t.median);
            if (r.ratio > 0)
                printf("x%-5.2f", r.ratio);
            else
                printf("%-6s", "-");
        }
        if (!o->json)
            printf("   [%s p=%u m=%u v=%u, %zu ops]\n", series, z[i].p, z[i].m, z[i].v, c.ops);
        ctx_free(&c);
    }
}

static void section_scaling(const options *o)
{
    size3 by_m[8], by_p[6];
    size_t nm = o->full ? 8 : 5, np = o->full ? 6 : 4;
    for (size_t i = 0; i < nm; i++)
        by_m[i] = (size3){16, 64u << i, 2};
    for (size_t i = 0; i < np; i++)
        by_p[i] = (size3){4u << i, 1024, 2};
    if (!o->json)
        printf("\nScaling: interleaved, v = 2; each row doubles the op count; xR is the time "
               "over the previous row's (linear = x2.00)\n");
    scaling_series(o, "doubling m", by_m, nm);
    scaling_series(o, "doubling p", by_p, np);
}

/* ------------------------------------------------------------------- main */

static const char usage[] =
    "usage: pipesched-bench [--full] [--quick] [--json] [--schedule NAME] [--only SECTIONS]\n"
    "                       [--clock cpu|wall] [--min-time SECONDS] [--no-memory]\n"
    "  --full            sizes up to p=64, m=4096, v=4 and p=128, m=1024 (default: quick set)\n"
    "  --json            one JSON object: version, buildtype, cpu, clock, sizes,\n"
    "                    results (one record per measurement) and targets\n"
    "  --schedule NAME   only this generator\n"
    "  --only SECTIONS   comma list of table, heuristic, pipeline, scaling\n"
    "  --clock cpu|wall  thread CPU time (default) or wall clock\n"
    "  --min-time S      seconds of samples per measurement (default 0.05 quick, 0.3 full)\n"
    "  --no-memory       skip the resident memory measurements\n";

static unsigned parse_sections(const char *list)
{
    static const char *const names[] = {"table", "heuristic", "pipeline", "scaling"};
    unsigned mask = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < 4 && strcmp(tok, names[i]) != 0)
            i++;
        if (i == 4)
            return 0;
        mask |= 1u << i;
    }
    return mask;
}

static bool parse_args(int argc, char **argv, options *o)
{
    double min_time = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json"))
            o->json = true;
        else if (!strcmp(a, "--full"))
            o->full = true;
        else if (!strcmp(a, "--quick"))
            o->full = false;
        else if (!strcmp(a, "--no-memory"))
            o->memory = false;
        else if (!strcmp(a, "--schedule") && next && ++i)
            o->only_schedule = next;
        else if (!strcmp(a, "--only") && next && ++i)
            o->sections = parse_sections(next);
        else if (!strcmp(a, "--clock") && next && ++i &&
                 (!strcmp(next, "cpu") || !strcmp(next, "wall")))
            o->cfg.clock = !strcmp(next, "cpu") ? BENCH_CLOCK_CPU : BENCH_CLOCK_WALL;
        else if (!strcmp(a, "--min-time") && next && ++i && (min_time = atof(next)) > 0)
            continue;
        else
            return false;
    }
    o->cfg.min_time = min_time > 0 ? min_time : o->full ? 0.3 : 0.05;
    return o->sections != 0;
}

#ifndef PSCHED_BENCH_BUILDTYPE
#define PSCHED_BENCH_BUILDTYPE "unknown"
#endif

/* "model name" of the first CPU in /proc/cpuinfo, or "unknown". */
static void cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n\"\\")] = '\0';
            snprintf(buf, size, "%s", colon);
            break;
        }
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    options o = {.memory = true, .sections = SEC_ALL,
                 .cfg = {.clock = BENCH_CLOCK_CPU, .sample_s = 2e-4, .min_samples = 5,
                         .max_samples = 201}};
    if (!parse_args(argc, argv, &o)) {
        fputs(usage, stderr);
        return 2;
    }
    o.memory = o.memory && bench_memory_available();
    const char *clock = o.cfg.clock == BENCH_CLOCK_CPU ? "thread CPU time" : "wall clock";
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    if (o.json)
        printf("{\"version\":\"%s\",\"buildtype\":\"%s\",\"cpu\":\"%s\",\"clock\":\"%s\","
               "\"sizes\":\"%s\",\"results\":[",
               psched_version(), PSCHED_BENCH_BUILDTYPE, cpu,
               o.cfg.clock == BENCH_CLOCK_CPU ? "cpu" : "wall", o.full ? "full" : "quick");
    else
        printf("pipesched %s benchmark (%s build, %s), %s sizes; %s, median of samples after a "
               "warm-up (min and max shown)%s\n", psched_version(), PSCHED_BENCH_BUILDTYPE, cpu,
               o.full ? "full" : "quick", clock, o.memory ? "" : "; memory not measured");
    if (o.sections & SEC_TABLE)
        section_table(&o);
    if (o.sections & SEC_HEURISTIC)
        section_heuristic(&o);
    if (o.sections & SEC_PIPELINE)
        section_pipeline(&o);
    if (o.sections & SEC_SCALING)
        section_scaling(&o);
    if (o.json)
        printf("\n],\n\"targets\":[");
    bench_targets(all_records, n_records, o.json);
    if (o.json)
        printf("\n]}\n");
    free(all_records);
    return 0;
}
