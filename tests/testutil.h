/* Minimal test harness: each test file defines test functions and lists
 * them in main() with RUN(). A failed CHECK prints file:line and the
 * expression and marks the test failed; the binary exits 1 if any failed. */
#ifndef PSCHED_TESTUTIL_H
#define PSCHED_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipesched.h"

static int tu_failed_checks;
static int tu_failed_tests;
static int tu_run_tests;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            tu_failed_checks++;                                                        \
        }                                                                              \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                             \
    do {                                                                               \
        long long tu_a = (long long)(a), tu_b = (long long)(b);                        \
        if (tu_a != tu_b) {                                                            \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__,        \
                    __LINE__, #a, #b, tu_a, tu_b);                                     \
            tu_failed_checks++;                                                        \
        }                                                                              \
    } while (0)

#define CHECK_EQ_DBL(a, b)                                                             \
    do {                                                                               \
        double tu_a = (double)(a), tu_b = (double)(b);                                 \
        if (!(tu_a == tu_b || fabs(tu_a - tu_b) <= 1e-9 * fmax(1.0, fabs(tu_b)))) {    \
            fprintf(stderr, "%s:%d: %s == %s failed: %.17g != %.17g\n", __FILE__,      \
                    __LINE__, #a, #b, tu_a, tu_b);                                     \
            tu_failed_checks++;                                                        \
        }                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                \
    do {                                                                               \
        const char *tu_a = (a), *tu_b = (b);                                           \
        if (!tu_a || !tu_b || strcmp(tu_a, tu_b) != 0) {                               \
            fprintf(stderr, "%s:%d: %s == %s failed:\n  got:      %s\n  expected: %s\n", \
                    __FILE__, __LINE__, #a, #b, tu_a ? tu_a : "(null)",                \
                    tu_b ? tu_b : "(null)");                                           \
            tu_failed_checks++;                                                        \
        }                                                                              \
    } while (0)

/* Substring check, for error messages. */
#define CHECK_CONTAINS(hay, needle)                                                    \
    do {                                                                               \
        const char *tu_h = (hay), *tu_n = (needle);                                    \
        if (!tu_h || !strstr(tu_h, tu_n)) {                                            \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__,       \
                    __LINE__, tu_h ? tu_h : "(null)", tu_n);                           \
            tu_failed_checks++;                                                        \
        }                                                                              \
    } while (0)

#define CHECK_OK(expr)                                                                 \
    do {                                                                               \
        psched_status tu_st = (expr);                                                  \
        if (tu_st != PSCHED_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr,  \
                    psched_status_str(tu_st), psched_last_error());                    \
            tu_failed_checks++;                                                        \
        }                                                                              \
    } while (0)

/* A plan of p devices, m micro-batches and v chunks per device (0: the
 * generator's default); a setter that fails fails the test. */
static inline psched_plan *tu_plan(uint32_t p, uint32_t m, uint32_t v)
{
    psched_plan *plan = NULL;
    CHECK_OK(psched_plan_create(&plan));
    if (!plan)
        return NULL;
    CHECK_OK(psched_plan_set_devices(plan, p));
    CHECK_OK(psched_plan_set_microbatches(plan, m));
    CHECK_OK(psched_plan_set_chunks(plan, v));
    return plan;
}

/* tu_plan() with a memory limit */
static inline psched_plan *tu_plan_limited(uint32_t p, uint32_t m, uint32_t v, double limit)
{
    psched_plan *plan = tu_plan(p, m, v);
    if (plan)
        CHECK_OK(psched_plan_set_memory_limit(plan, limit));
    return plan;
}

/* The benchmark grid's profile (bench/bench_partition.c, docs/optimizer.md
 * "Benchmarks"): an embedding, `layers` − 2 identical layers with
 * selective and full recompute, a head. */
static inline psched_model *tu_grid_model(uint32_t layers)
{
    psched_model *model = NULL;
    CHECK_OK(psched_model_create(&model));
    if (!model)
        return NULL;
    CHECK_OK(psched_model_add_layers(model, "embedding", 1, 0.2, 0.2, 0.2, 1, 40));
    CHECK_OK(psched_model_add_layers(model, "layer", layers - 2, 1, 1, 1, 4, 10));
    CHECK_OK(psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_SELECTIVE, 2, 0.25));
    CHECK_OK(psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_FULL, 0.5, 1));
    CHECK_OK(psched_model_add_layers(model, "head", 1, 3, 3, 3, 8, 40));
    return model;
}

/* TEST_ONLY=substring runs only the tests whose name contains it (for a
 * developer; the suite never sets it). */
#define RUN(fn)                                                                        \
    do {                                                                               \
        if (getenv("TEST_ONLY") && !strstr(#fn, getenv("TEST_ONLY")))                  \
            break;                                                                     \
        int tu_before = tu_failed_checks;                                              \
        tu_run_tests++;                                                                \
        fn();                                                                          \
        if (tu_failed_checks != tu_before) {                                           \
            tu_failed_tests++;                                                         \
            printf("not ok %d - %s\n", tu_run_tests, #fn);                             \
        } else {                                                                       \
            printf("ok %d - %s\n", tu_run_tests, #fn);                                 \
        }                                                                              \
    } while (0)

#define TEST_MAIN_END()                                                                \
    do {                                                                               \
        printf("1..%d\n", tu_run_tests);                                               \
        return tu_failed_tests ? 1 : 0;                                                \
    } while (0)

#endif
