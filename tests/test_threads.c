/* Threads: distinct handles from distinct threads, one handle read from
 * many, and the registry growing while others read it.
 *
 * Every expected value (hash, makespan, CSV and JSON text) is computed by a
 * single-threaded run before any thread starts; the threads must reproduce
 * it exactly, iteration after iteration. Run under ThreadSanitizer in CI
 * (-Db_sanitize=thread), which also checks that no data race occurs.
 *
 * Iterations per thread: argv[1], else $PSCHED_THREAD_ITERATIONS, else 1000. */
#include "pipesched.h"
#include "testutil.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define THREADS 8
#define REGISTERED 200 /* more than the registry's static room of 64 */

typedef struct config {
    const char *name;
    uint32_t p, m, v;
} config;

/* One of each built-in generator, with small, cheap shapes. */
static const config configs[] = {
    {"gpipe", 4, 8, 0},       {"1f1b", 4, 8, 0},        {"interleaved", 2, 4, 2},
    {"looped-bfs", 3, 6, 2},  {"zb-h1", 4, 8, 0},       {"zb-h2", 3, 6, 0},
    {"v-zb", 2, 4, 0},        {"dualpipev", 2, 4, 0},   {"dualpipe", 2, 4, 0},
    {"interleaved-zb", 2, 4, 2}, {"zb", 3, 6, 0},       {"v-half", 4, 8, 0},
    {"v-min", 3, 6, 0},       {"thread-gen-base", 3, 5, 0},
};
#define CONFIGS (sizeof configs / sizeof *configs)

typedef struct result {
    uint64_t hash;
    double makespan;
    char *csv, *json;
} result;

static result expected[CONFIGS];
static result shared_expected;
static psched_schedule *shared_schedule;
static long iterations = 1000;

/* ------------------------------------------- a generator registered late */

/* All forwards, then the full backwards in reverse micro-batch order. */
static psched_status reverse_generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    for (uint32_t d = 0; d < p; d++) {
        for (uint32_t k = 0; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_F, d, k, 0);
        for (uint32_t k = m; k-- > 0;)
            psched_builder_append(b, d, PSCHED_OP_BW, d, k, 0);
    }
    return psched_builder_reserve(b, 0, 0);
}

static char registered_names[REGISTERED + 1][32];
static psched_generator registered[REGISTERED + 1];

static psched_status register_reverse(size_t i, const char *name)
{
    snprintf(registered_names[i], sizeof registered_names[i], "%s", name);
    registered[i] = (psched_generator){
        .abi_version = PSCHED_GENERATOR_ABI,
        .name = registered_names[i],
        .description = "reverse GPipe (thread test)",
        .constraints = "v = 1",
        .placement = PSCHED_PLACEMENT_LOOP,
        .default_chunks = 1,
        .chains = 1,
        .generate = reverse_generate,
    };
    return psched_register_generator(&registered[i]);
}

/* ------------------------------------------------------------ one run */

/* generate -> validate -> simulate -> hash -> export; 0 on success. */
static int run_schedule(const psched_schedule *s, result *out)
{
    psched_report *r = NULL;
    size_t length;
    memset(out, 0, sizeof *out);
    if (psched_validate(s) != PSCHED_OK || psched_simulate(s, NULL, &r) != PSCHED_OK)
        return -1;
    out->makespan = psched_report_makespan(r);
    int rc = psched_schedule_hash(s, &out->hash) == PSCHED_OK &&
                     psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &out->csv, &length) == PSCHED_OK &&
                     psched_export(s, r, PSCHED_FORMAT_JSON, 0, &out->json, &length) == PSCHED_OK
                 ? 0
                 : -1;
    psched_report_destroy(r);
    return rc;
}

static int run_config(const config *c, result *out)
{
    psched_plan *plan;
    psched_schedule *s = NULL;
    if (psched_plan_create(&plan) != PSCHED_OK)
        return -1;
    int rc = psched_plan_set_devices(plan, c->p) == PSCHED_OK &&
                     psched_plan_set_microbatches(plan, c->m) == PSCHED_OK &&
                     psched_plan_set_chunks(plan, c->v) == PSCHED_OK &&
                     psched_generate(plan, c->name, &s) == PSCHED_OK
                 ? run_schedule(s, out)
                 : -1;
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return rc;
}

static void result_free(result *r)
{
    psched_free(r->csv);
    psched_free(r->json);
}

/* Same ops and times; the JSON also names the generator. */
static bool same_order(const result *a, const result *b)
{
    return a->hash == b->hash && a->makespan == b->makespan && a->csv && b->csv &&
           strcmp(a->csv, b->csv) == 0;
}

static bool same(const result *a, const result *b)
{
    return same_order(a, b) && a->json && b->json && strcmp(a->json, b->json) == 0;
}

/* ------------------------------------------------------------ threads */

typedef struct worker {
    pthread_t thread;
    unsigned index;
    long mismatches, registry_errors, error_mixups;
} worker;

/* The registry as a reader sees it while it grows: a consistent prefix. */
static void read_registry(worker *w)
{
    size_t n = psched_generator_count();
    for (size_t i = 0; i < n; i++) {
        const psched_generator *g = psched_generator_at(i), *found;
        if (!g || psched_generator_find(g->name, &found) != PSCHED_OK || found != g)
            w->registry_errors++;
    }
}

/* A failure message is the calling thread's own. */
static void check_own_error(worker *w, psched_plan *plan, long it)
{
    uint32_t bad = PSCHED_MAX_DEVICES + 1 + w->index * 100000u + (uint32_t)(it % 1000);
    char want[32];
    snprintf(want, sizeof want, "devices (%u)", bad);
    if (psched_plan_set_devices(plan, bad) != PSCHED_EINVAL || !strstr(psched_last_error(), want))
        w->error_mixups++;
}

static void *work(void *arg)
{
    worker *w = arg;
    psched_plan *plan = NULL;
    if (psched_plan_create(&plan) != PSCHED_OK)
        return NULL;
    for (long it = 0; it < iterations; it++) {
        /* Each thread walks the configs in its own order. */
        size_t c = ((size_t)it * (2 * w->index + 1) + w->index) % CONFIGS;
        result got, shared_got;
        if (run_config(&configs[c], &got) != 0 || !same(&got, &expected[c]))
            w->mismatches++;
        result_free(&got);
        if (run_schedule(shared_schedule, &shared_got) != 0 || !same(&shared_got, &shared_expected))
            w->mismatches++;
        result_free(&shared_got);
        if (it % 16 == 0)
            read_registry(w);
        check_own_error(w, plan, it);
    }
    psched_plan_destroy(plan);
    return NULL;
}

static void *registrar(void *arg)
{
    long *failures = arg;
    for (size_t i = 1; i <= REGISTERED; i++) {
        char name[32];
        snprintf(name, sizeof name, "thread-gen-%zu", i);
        if (register_reverse(i, name) != PSCHED_OK)
            (*failures)++;
    }
    return NULL;
}

/* -------------------------------------------------------------- tests */

static void test_concurrent_runs_equal_the_single_threaded_run(void)
{
    worker w[THREADS];
    pthread_t reg;
    long reg_failures = 0;
    size_t before = psched_generator_count();
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (worker){.index = i};
        CHECK_EQ_INT(pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
    }
    CHECK_EQ_INT(pthread_create(&reg, NULL, registrar, &reg_failures), 0);
    for (unsigned i = 0; i < THREADS; i++) {
        CHECK_EQ_INT(pthread_join(w[i].thread, NULL), 0);
        CHECK_EQ_INT(w[i].mismatches, 0);
        CHECK_EQ_INT(w[i].registry_errors, 0);
        CHECK_EQ_INT(w[i].error_mixups, 0);
    }
    CHECK_EQ_INT(pthread_join(reg, NULL), 0);
    CHECK_EQ_INT(reg_failures, 0);
    CHECK_EQ_INT(psched_generator_count(), before + REGISTERED);
}

/* Every generator registered during the run works like the first one. */
static void test_generators_registered_under_load_all_work(void)
{
    const config *base = &configs[CONFIGS - 1];
    for (size_t i = 1; i <= REGISTERED; i++) {
        config c = *base;
        c.name = registered_names[i];
        result got;
        CHECK_EQ_INT(run_config(&c, &got), 0);
        CHECK(same_order(&got, &expected[CONFIGS - 1]));
        result_free(&got);
    }
}

static long iterations_from(int argc, char **argv)
{
    const char *text = argc > 1 ? argv[1] : getenv("PSCHED_THREAD_ITERATIONS");
    long n = text ? strtol(text, NULL, 10) : 1000;
    return n > 0 ? n : 1000;
}

int main(int argc, char **argv)
{
    iterations = iterations_from(argc, argv);
    int setup_failed = register_reverse(0, "thread-gen-base") != PSCHED_OK;
    for (size_t c = 0; c < CONFIGS && !setup_failed; c++) {
        if (run_config(&configs[c], &expected[c]) != 0) {
            fprintf(stderr, "single-threaded %s failed: %s\n", configs[c].name,
                    psched_last_error());
            setup_failed = 1;
        }
    }
    psched_plan *plan = NULL;
    if (!setup_failed && (psched_plan_create(&plan) != PSCHED_OK ||
                          psched_plan_set_devices(plan, 4) != PSCHED_OK ||
                          psched_plan_set_microbatches(plan, 12) != PSCHED_OK ||
                          psched_plan_set_chunks(plan, 2) != PSCHED_OK ||
                          psched_generate(plan, "interleaved", &shared_schedule) != PSCHED_OK ||
                          run_schedule(shared_schedule, &shared_expected) != 0))
        setup_failed = 1;
    psched_plan_destroy(plan);
    if (setup_failed) {
        printf("Bail out! single-threaded setup failed\n");
        return 1;
    }
    RUN(test_concurrent_runs_equal_the_single_threaded_run);
    RUN(test_generators_registered_under_load_all_work);
    for (size_t c = 0; c < CONFIGS; c++)
        result_free(&expected[c]);
    result_free(&shared_expected);
    psched_schedule_destroy(shared_schedule);
    TEST_MAIN_END();
}
