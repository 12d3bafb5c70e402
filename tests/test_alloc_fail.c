/* Allocation failure: fail the N-th allocation, for N = 0, 1, 2, ... until
 * the call succeeds, in generate, validate, simulate, hash, export,
 * import and comm lowering (partition: tests/test_partition.c; given
 * partitions, layouts and their emitters: tests/test_layout.c). Each
 * failing call returns PSCHED_ENOMEM, leaves its output NULL and its inputs
 * usable (run under valgrind / ASan for the leak check). */
#include "internal.h"
#include "testutil.h"

static psched_schedule *make(const char *name, uint32_t p, uint32_t m, uint32_t v)
{
    psched_plan *plan;
    psched_schedule *s = NULL;
    psched_plan_create(&plan);
    psched_plan_set_devices(plan, p);
    psched_plan_set_microbatches(plan, m);
    psched_plan_set_chunks(plan, v);
    psched_generate(plan, name, &s);
    psched_plan_destroy(plan);
    return s;
}

/* Runs `call` with the N-th allocation failing for growing N; returns the
 * number of failing runs seen before it succeeded. */
#define FAIL_EACH_ALLOCATION(call, cleanup)                                          \
    do {                                                                             \
        int ok = 0;                                                                  \
        for (long n = 0; n < 100000 && !ok; n++) {                                   \
            psched__alloc_fail_after(n);                                             \
            psched_status st_ = (call);                                              \
            psched__alloc_fail_after(-1);                                            \
            if (st_ == PSCHED_OK) {                                                  \
                ok = 1;                                                              \
            } else {                                                                 \
                CHECK_EQ_INT(st_, PSCHED_ENOMEM);                                    \
                if (st_ != PSCHED_ENOMEM)                                            \
                    fprintf(stderr, "  at allocation %ld: %s\n", n, psched_last_error()); \
            }                                                                        \
            cleanup;                                                                 \
        }                                                                            \
        CHECK(ok);                                                                   \
    } while (0)

static void test_generate_survives_every_allocation_failure(void)
{
    /* the registry is initialised outside the loop: it is process-wide */
    CHECK(psched_generator_count() > 0);
    for (size_t g = 0; g < psched_generator_count(); g++) {
        const char *name = psched_generator_at(g)->name;
        psched_plan *plan;
        psched_plan_create(&plan);
        psched_plan_set_devices(plan, 4);
        psched_plan_set_microbatches(plan, 8);
        psched_schedule *s = NULL;
        FAIL_EACH_ALLOCATION(psched_generate(plan, name, &s),
                             (psched_schedule_destroy(s), s = NULL));
        CHECK_EQ_INT(psched_plan_devices(plan), 4); /* input intact */
        psched_plan_destroy(plan);
    }
}

static void test_validate_simulate_hash_survive_allocation_failures(void)
{
    psched_schedule *s = make("interleaved", 4, 8, 2);
    psched_report *r = NULL;
    uint64_t h0, h1;
    CHECK_OK(psched_schedule_hash(s, &h0));
    FAIL_EACH_ALLOCATION(psched_validate(s), (void)0);
    FAIL_EACH_ALLOCATION(psched_simulate(s, NULL, &r), (psched_report_destroy(r), r = NULL));
    FAIL_EACH_ALLOCATION(psched_schedule_hash(s, &h1), (void)0);
    CHECK(h0 == h1);
    CHECK_OK(psched_validate(s)); /* the schedule is still usable */
    psched_schedule_destroy(s);
}

static void test_exports_and_import_survive_allocation_failures(void)
{
    psched_schedule *s = make("1f1b", 3, 5, 1);
    static const psched_format formats[] = {PSCHED_FORMAT_CSV, PSCHED_FORMAT_ASCII,
                                            PSCHED_FORMAT_JSON};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) {
        char *text = NULL;
        FAIL_EACH_ALLOCATION(psched_export(s, NULL, formats[i], 0, &text, NULL),
                             (psched_free(text), text = NULL));
    }
    char *csv;
    size_t len;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &csv, &len));
    psched_schedule *back = NULL;
    FAIL_EACH_ALLOCATION(psched_import_csv(csv, len, NULL, &back),
                         (psched_schedule_destroy(back), back = NULL));
    psched_free(csv);
    psched_schedule_destroy(s);
}

/* A write callback appending to a fixed buffer. */
typedef struct collected {
    char text[8192];
    size_t len;
} collected;

static int collect(void *user, const char *data, size_t length)
{
    collected *c = user;
    if (c->len + length > sizeof c->text)
        return 1;
    memcpy(c->text + c->len, data, length);
    c->len += length;
    return 0;
}

/* The streaming exports fail with ENOMEM at every allocation (the compact
 * builder and its check, the fallback to a whole schedule, the CSV
 * window) and, once they succeed, have written exactly the export. */
static void test_streaming_exports_survive_allocation_failures(void)
{
    static const char *const names[] = {"1f1b", "interleaved", "zb-h1", "dualpipev"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        psched_plan *plan;
        psched_plan_create(&plan);
        psched_plan_set_devices(plan, 4);
        psched_plan_set_microbatches(plan, 8);
        psched_schedule *s = NULL;
        CHECK_OK(psched_generate(plan, names[i], &s));
        char *want = NULL;
        size_t want_len = 0;
        CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &want, &want_len));
        collected *c = calloc(1, sizeof *c);
        FAIL_EACH_ALLOCATION(psched_generate_write(plan, names[i], PSCHED_FORMAT_CSV, 0,
                                                   collect, c),
                             (void)0);
        CHECK(c->len >= want_len && memcmp(c->text + c->len - want_len, want, want_len) == 0);
        c->len = 0;
        FAIL_EACH_ALLOCATION(psched_export_write(s, NULL, PSCHED_FORMAT_CSV, 0, collect, c),
                             (void)0);
        CHECK(c->len == want_len && memcmp(c->text, want, want_len) == 0);
        free(c);
        psched_free(want);
        psched_schedule_destroy(s);
        psched_plan_destroy(plan);
    }
}

static void test_lowering_survives_allocation_failures(void)
{
    psched_schedule *s = make("interleaved", 4, 8, 2);
    psched_schedule *low = NULL;
    FAIL_EACH_ALLOCATION(psched_lower_comm(s, NULL, &low),
                         (psched_schedule_destroy(low), low = NULL));
    CHECK_OK(psched_lower_comm(s, NULL, &low));
    FAIL_EACH_ALLOCATION(psched_validate(low), (void)0); /* the rendezvous engine */
    psched_schedule_destroy(low);
    psched_schedule_destroy(s);
}

/* Vocabulary Parallelism (issue 19): the weave's scratch schedule and
 * tables, the collective index of the engine, the CSV reader and the
 * lowering around collectives all fail with ENOMEM and nothing else. */
static void test_vocabulary_schedules_survive_allocation_failures(void)
{
    psched_plan *plan;
    CHECK_OK(psched_plan_create(&plan));
    CHECK_OK(psched_plan_set_devices(plan, 3));
    CHECK_OK(psched_plan_set_microbatches(plan, 5));
    FAIL_EACH_ALLOCATION(psched_plan_set_option(plan, "vocab", 1), (void)0);
    FAIL_EACH_ALLOCATION(psched_plan_set_vocab_cost(plan, 0.5, 0.5), (void)0);
    FAIL_EACH_ALLOCATION(psched_plan_set_collective_bytes(plan, 1, 4), (void)0);
    psched_schedule *s = NULL;
    FAIL_EACH_ALLOCATION(psched_generate(plan, "1f1b", &s),
                         (psched_schedule_destroy(s), s = NULL));
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    psched_report *r = NULL;
    FAIL_EACH_ALLOCATION(psched_simulate(s, NULL, &r), (psched_report_destroy(r), r = NULL));
    char *csv;
    size_t len;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &csv, &len));
    psched_schedule *back = NULL;
    FAIL_EACH_ALLOCATION(psched_import_csv(csv, len, NULL, &back),
                         (psched_schedule_destroy(back), back = NULL));
    psched_free(csv);
    psched_schedule *low = NULL;
    FAIL_EACH_ALLOCATION(psched_lower_comm(s, NULL, &low),
                         (psched_schedule_destroy(low), low = NULL));
    CHECK_OK(psched_lower_comm(s, NULL, &low));
    FAIL_EACH_ALLOCATION(psched_validate(low), (void)0);
    psched_schedule_destroy(low);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_plan_setters_survive_allocation_failures(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    CHECK_OK(psched_plan_set_devices(p, 4));
    CHECK_OK(psched_plan_set_chunks(p, 2));
    FAIL_EACH_ALLOCATION(psched_plan_set_stage_cost(p, 7, 1, 2, 3), (void)0);
    FAIL_EACH_ALLOCATION(psched_plan_set_option(p, "group-size", 4), (void)0);
    FAIL_EACH_ALLOCATION(psched_plan_set_placement(p, PSCHED_PLACEMENT_CUSTOM), (void)0);
    psched_plan *c = NULL;
    FAIL_EACH_ALLOCATION(psched_plan_clone(p, &c), (psched_plan_destroy(c), c = NULL));
    double f;
    CHECK_OK(psched_plan_stage_cost(p, 7, NULL, &f, NULL));
    CHECK_EQ_DBL(f, 2);
    psched_plan_destroy(p);
}

int main(void)
{
    RUN(test_generate_survives_every_allocation_failure);
    RUN(test_validate_simulate_hash_survive_allocation_failures);
    RUN(test_exports_and_import_survive_allocation_failures);
    RUN(test_streaming_exports_survive_allocation_failures);
    RUN(test_lowering_survives_allocation_failures);
    RUN(test_vocabulary_schedules_survive_allocation_failures);
    RUN(test_plan_setters_survive_allocation_failures);
    TEST_MAIN_END();
}
