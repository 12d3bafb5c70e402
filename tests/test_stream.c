/* Streaming output (issue 13): psched_export_write() hands the same text
 * as psched_export() to a callback in pieces; psched_generate_write()
 * writes what psched_generate() + psched_validate() + psched_export() give,
 * and nothing for an invalid schedule; the compact form it generates into
 * (lib/core/builder.c's compact mode, lib/core/compact.c's check) agrees
 * with the fast engine on generated schedules and corrupted copies. */
#include "internal.h"
#include "testsched.h"
#include "testutil.h"

#include <stdint.h>

static const char *const generators[] = {
    "gpipe", "1f1b", "interleaved", "looped-bfs", "interleaved-zb", "zb-h1", "zb-h2",
    "zb",    "v-zb", "v-half",      "v-min",      "dualpipe",       "dualpipev",
};

/* A write callback collecting the pieces; refuses the piece numbered
 * `refuse` (from 1; 0: none) with `refuse_rc`. */
typedef struct sink {
    char *data;
    size_t len, cap;
    int calls, refuse, refuse_rc;
    size_t largest;
} sink;

static int sink_write(void *user, const char *data, size_t length)
{
    sink *k = user;
    k->calls++;
    if (k->refuse && k->calls == k->refuse)
        return k->refuse_rc;
    CHECK(length > 0);
    if (k->len + length + 1 > k->cap) {
        size_t cap = (k->len + length + 1) * 2;
        char *grown = realloc(k->data, cap);
        if (!grown)
            return -1;
        k->data = grown;
        k->cap = cap;
    }
    memcpy(k->data + k->len, data, length);
    k->len += length;
    k->data[k->len] = '\0';
    if (length > k->largest)
        k->largest = length;
    return 0;
}

static void sink_reset(sink *k)
{
    free(k->data);
    memset(k, 0, sizeof *k);
}

static uint64_t rng = 0x2545f4914f6cdd1du;

/* Hand-derived: 1F1B on p = 2, m = 2 (device 0 warms up with one F;
 * PyTorch's "B" is pipesched's full backward BW). */
static void test_hand_derived_1f1b(void)
{
    psched_plan *plan = tu_plan(2, 2, 1);
    sink k = {0};
    CHECK_OK(psched_generate_write(plan, "1f1b", PSCHED_FORMAT_CSV, 0, sink_write, &k));
    CHECK_STR(k.data, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
    CHECK_EQ_INT(k.calls, 1);
    sink_reset(&k);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    CHECK_OK(psched_export_write(s, NULL, PSCHED_FORMAT_CSV, 0, sink_write, &k));
    CHECK_STR(k.data, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
    sink_reset(&k);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Over every generator and a grid of shapes: the streamed text of every
 * format equals psched_export()'s, and psched_generate_write() writes the
 * CSV that psched_export() gives of the generated schedule. */
static void test_streamed_text_equals_export(void)
{
    static const uint32_t ps[] = {1, 2, 3, 4, 5}, ms[] = {1, 2, 3, 4, 6, 8, 9}, vs[] = {0, 1, 2, 3};
    static const psched_format formats[] = {
        PSCHED_FORMAT_CSV,  PSCHED_FORMAT_ASCII,  PSCHED_FORMAT_JSON,
        PSCHED_FORMAT_CSV_COMMS, PSCHED_FORMAT_CHROME, PSCHED_FORMAT_SVG,
        PSCHED_FORMAT_CSV_COMMS_PYTORCH,
    };
    int generated = 0;
    for (size_t gi = 0; gi < sizeof generators / sizeof *generators; gi++)
        for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
            for (size_t b = 0; b < sizeof ms / sizeof *ms; b++)
                for (size_t c = 0; c < sizeof vs / sizeof *vs; c++) {
                    psched_plan *plan = tu_plan(ps[a], ms[b], vs[c]);
                    psched_schedule *s = NULL;
                    if (!plan || psched_generate(plan, generators[gi], &s) != PSCHED_OK) {
                        psched_plan_destroy(plan);
                        continue; /* the generator does not take this shape */
                    }
                    generated++;
                    for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
                        char *text = NULL;
                        size_t len = 0;
                        CHECK_OK(psched_export(s, NULL, formats[f], 0, &text, &len));
                        sink k = {0};
                        CHECK_OK(psched_export_write(s, NULL, formats[f], 0, sink_write, &k));
                        CHECK_EQ_INT(k.len, len);
                        CHECK(k.data && text && memcmp(k.data, text, len) == 0);
                        sink_reset(&k);
                        CHECK_OK(psched_generate_write(plan, generators[gi], formats[f], 0,
                                                       sink_write, &k));
                        CHECK_EQ_INT(k.len, len);
                        CHECK(k.data && text && memcmp(k.data, text, len) == 0);
                        sink_reset(&k);
                        psched_free(text);
                    }
                    /* the compact form holds every generated schedule here
                     * and its check accepts it */
                    psched_schedule *es = NULL;
                    psched_compact *cs = NULL;
                    CHECK_OK(psched__generate_ex(plan, generators[gi], true, &es, &cs));
                    CHECK(cs != NULL && es == NULL);
                    if (cs)
                        CHECK(psched__compact_valid(cs));
                    psched__compact_destroy(cs);
                    psched_schedule_destroy(es);
                    psched_schedule_destroy(s);
                    psched_plan_destroy(plan);
                }
    CHECK(generated > 250);
    printf("# %d generated schedules streamed in 7 formats\n", generated);
}

/* A schedule larger than the writer's 1 MiB window arrives in several
 * pieces, none larger than the window, and joins to the export. */
static void test_large_text_comes_in_pieces(void)
{
    psched_plan *plan = tu_plan(8, 20000, 1);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    char *text = NULL;
    size_t len = 0;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &text, &len));
    CHECK(len > 2u << 20);
    sink k = {0};
    CHECK_OK(psched_generate_write(plan, "1f1b", PSCHED_FORMAT_CSV, 0, sink_write, &k));
    CHECK(k.calls >= 2);
    CHECK(k.largest <= 1u << 20);
    CHECK(k.len == len && memcmp(k.data, text, len) == 0);
    sink_reset(&k);
    CHECK_OK(psched_export_write(s, NULL, PSCHED_FORMAT_CSV, 0, sink_write, &k));
    CHECK(k.calls >= 2);
    CHECK(k.len == len && memcmp(k.data, text, len) == 0);
    /* a refused piece stops the export with EIO naming the bytes */
    sink_reset(&k);
    k.refuse = 2;
    k.refuse_rc = 7;
    CHECK_EQ_INT(psched_generate_write(plan, "1f1b", PSCHED_FORMAT_CSV, 0, sink_write, &k),
                 PSCHED_EIO);
    CHECK_CONTAINS(psched_last_error(), "returned 7 for bytes [1048");
    CHECK_EQ_INT(k.calls, 2);
    sink_reset(&k);
    k.refuse = 1;
    k.refuse_rc = -1;
    CHECK_EQ_INT(psched_export_write(s, NULL, PSCHED_FORMAT_JSON, 0, sink_write, &k), PSCHED_EIO);
    CHECK_CONTAINS(psched_last_error(), "returned -1 for bytes [0, ");
    sink_reset(&k);
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Lowered schedules (comm ops, batched groups as one cell or, for
 * PyTorch's dialect, as separate cells) stream the same text too. */
static void test_lowered_schedules_stream_the_same_text(void)
{
    static const char *const names[] = {"1f1b", "interleaved", "zb-h1", "dualpipev"};
    int lowered = 0, grouped = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        for (int mode = 0; mode < 2; mode++) {
            psched_plan *plan = tu_plan(4, 8, 0);
            psched_schedule *s = NULL, *low = NULL;
            CHECK_OK(psched_generate(plan, names[i], &s));
            psched_lower_options lo = PSCHED_LOWER_OPTIONS_INIT;
            lo.mode = mode ? PSCHED_LOWER_ASYNC : PSCHED_LOWER_RENDEZVOUS;
            CHECK_OK(psched_lower_comm_ex(s, NULL, &lo, &low));
            for (int f = 0; low && f < 3; f++) {
                psched_format format = f == 0   ? PSCHED_FORMAT_CSV
                                       : f == 1 ? PSCHED_FORMAT_CSV_COMMS
                                                : PSCHED_FORMAT_CSV_COMMS_PYTORCH;
                char *text = NULL;
                size_t len = 0;
                CHECK_OK(psched_export(low, NULL, format, 0, &text, &len));
                sink k = {0};
                CHECK_OK(psched_export_write(low, NULL, format, 0, sink_write, &k));
                CHECK(text && k.len == len && memcmp(k.data, text, len) == 0);
                CHECK(strstr(text, "SEND_F") != NULL);
                grouped += text && strstr(text, "]BATCH") != NULL;
                sink_reset(&k);
                psched_free(text);
                lowered++;
            }
            psched_schedule_destroy(low);
            psched_schedule_destroy(s);
            psched_plan_destroy(plan);
        }
    CHECK_EQ_INT(lowered, 24);
    CHECK(grouped >= 4); /* batched groups as cells were among them */
}

/* One random corruption of a device-ordered op list that keeps every op
 * on its device (the builder refuses the rest): a swap, another
 * micro-batch or kind, a copy, an overlap flag toggled. */
static void mutate(psched_schedule *s)
{
    size_t n = s->offset[s->devices];
    uint32_t mbs = psched__plan_chain_mbs(s->plan);
    size_t i = ts_rand(&rng, (uint32_t)n), j = ts_rand(&rng, (uint32_t)n);
    psched_op *o = &s->ops[i], t;
    switch (ts_rand(&rng, 6)) {
    case 0:
        if (i + 1 < n) {
            t = s->ops[i];
            s->ops[i] = s->ops[i + 1];
            s->ops[i + 1] = t;
        }
        break;
    case 1:
        t = s->ops[i];
        s->ops[i] = s->ops[j];
        s->ops[j] = t;
        break;
    case 2:
        o->microbatch = ts_rand(&rng, mbs);
        break;
    case 3:
        o->kind = (uint8_t)ts_rand(&rng, 4);
        break;
    case 4:
        *o = s->ops[j];
        break;
    default:
        o->flags ^= PSCHED_OP_OVERLAP_NEXT;
        break;
    }
}

/* The schedule's ops appended to a compact builder in list order: NULL when
 * the builder refuses an op (out of place) or leaves compact mode. */
static psched_compact *compact_of(const psched_schedule *s)
{
    psched_plan *plan = NULL;
    psched_builder *b = NULL;
    psched_compact *c = NULL;
    psched_schedule *full = NULL;
    if (psched_plan_clone(s->plan, &plan) || psched__builder_create_compact(plan, &b))
        goto done;
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; d < s->devices && !st; d++)
        for (size_t g = s->offset[d]; g < s->offset[d + 1] && !st; g++)
            st = psched_builder_append(b, d, (psched_op_kind)s->ops[g].kind, s->ops[g].stage,
                                       s->ops[g].microbatch, s->ops[g].flags);
    if (!st && psched__builder_finish_compact(b, plan, "mutant", &full, &c) == PSCHED_OK)
        plan = NULL;
done:
    psched__builder_destroy(b);
    psched_plan_destroy(plan);
    psched_schedule_destroy(full);
    return c;
}

/* The compact check agrees with the fast engine (and so with
 * psched_validate) on corrupted copies, and its expansion decodes the
 * ops it was given. */
static void test_compact_check_agrees_on_mutants(void)
{
    static const uint32_t ps[] = {1, 2, 3, 4}, ms[] = {1, 2, 4, 6, 9}, vs[] = {0, 1, 2, 3};
    int valid = 0, invalid = 0;
    for (size_t gi = 0; gi < sizeof generators / sizeof *generators; gi++)
        for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
            for (size_t b = 0; b < sizeof ms / sizeof *ms; b++)
                for (size_t c = 0; c < sizeof vs / sizeof *vs; c++) {
                    psched_plan *plan = tu_plan(ps[a], ms[b], vs[c]);
                    psched_schedule *s = NULL;
                    if (!plan || psched_generate(plan, generators[gi], &s) != PSCHED_OK) {
                        psched_plan_destroy(plan);
                        continue;
                    }
                    size_t n = s->offset[s->devices];
                    psched_op *keep = malloc((n + 1) * sizeof *keep);
                    memcpy(keep, s->ops, n * sizeof *keep);
                    for (int k = 0; k < 12; k++) {
                        memcpy(s->ops, keep, n * sizeof *keep);
                        for (int t = 1 + (int)ts_rand(&rng, 3); t > 0; t--)
                            mutate(s);
                        psched_compact *cs = compact_of(s);
                        if (!cs)
                            continue;
                        bool fast = psched__execute_fast(s, NULL, NULL, NULL, NULL);
                        bool compact = psched__compact_valid(cs);
                        CHECK_EQ_INT(compact, fast);
                        if (compact)
                            CHECK_OK(psched_validate(s));
                        *(psched_validate(s) == PSCHED_OK ? &valid : &invalid) += 1;
                        psched_schedule *back = NULL;
                        CHECK_OK(psched__compact_expand(cs, &back));
                        CHECK(back && back->offset[back->devices] == n &&
                              memcmp(back->ops, s->ops, n * sizeof *keep) == 0);
                        psched_schedule_destroy(back);
                    }
                    free(keep);
                    psched_schedule_destroy(s);
                    psched_plan_destroy(plan);
                }
    CHECK(valid > 100);
    CHECK(invalid > 1000);
    printf("# compact check on %d valid and %d invalid mutants\n", valid, invalid);
}

/* Test generators: one that deadlocks (every device runs its backward
 * before its forward would be ready), one that appends devices last to
 * first (the builder leaves compact mode). */
static psched_status gen_deadlock(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    for (uint32_t d = 0; d < p; d++) {
        for (uint32_t k = 0; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_BW, d, k, 0);
        for (uint32_t k = 0; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_F, d, k, 0);
    }
    return psched_builder_reserve(b, 0, 0);
}

static psched_status gen_backwards(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    for (uint32_t d = p; d-- > 0;) {
        for (uint32_t k = 0; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_F, d, k, 0);
        for (uint32_t k = 0; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_BW, d, k, 0);
    }
    return psched_builder_reserve(b, 0, 0);
}

/* gpipe whose activations are offloaded after each F and reloaded before
 * each backward: copies leave the compact form part way through device 0. */
static psched_status gen_offloading(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    for (uint32_t d = 0; d < p; d++) {
        psched_builder_append(b, d, PSCHED_OP_F, d, 0, 0);
        for (uint32_t k = 1; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_F, d, k, 0);
        psched_builder_append(b, d, PSCHED_OP_OFFLOAD, d, 0, 0);
        psched_builder_append(b, d, PSCHED_OP_RELOAD, d, 0, 0);
        for (uint32_t k = 0; k < m; k++)
            psched_builder_append(b, d, PSCHED_OP_BW, d, k, 0);
    }
    return psched_builder_reserve(b, 0, 0);
}

static const psched_generator offloading_gen = {
    .abi_version = PSCHED_GENERATOR_ABI, .name = "test-stream-offloading",
    .description = "gpipe with one offloaded activation (test)", .constraints = "loop, v = 1",
    .placement = PSCHED_PLACEMENT_LOOP, .default_chunks = 1, .chains = 1,
    .generate = gen_offloading,
};

static const psched_generator deadlock_gen = {
    .abi_version = PSCHED_GENERATOR_ABI, .name = "test-stream-deadlock",
    .description = "backward before forward (test)", .constraints = "loop, v = 1",
    .placement = PSCHED_PLACEMENT_LOOP, .default_chunks = 1, .chains = 1,
    .generate = gen_deadlock,
};
static const psched_generator backwards_gen = {
    .abi_version = PSCHED_GENERATOR_ABI, .name = "test-stream-backwards",
    .description = "gpipe appended last device first (test)", .constraints = "loop, v = 1",
    .placement = PSCHED_PLACEMENT_LOOP, .default_chunks = 1, .chains = 1,
    .generate = gen_backwards,
};

static void test_invalid_schedule_writes_nothing(void)
{
    CHECK_OK(psched_register_generator(&deadlock_gen));
    psched_plan *plan = tu_plan(3, 4, 1);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "test-stream-deadlock", &s));
    psched_status want = psched_validate(s);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", psched_last_error());
    CHECK(want == PSCHED_EINVALID || want == PSCHED_EDEADLOCK);
    static const psched_format formats[] = {PSCHED_FORMAT_CSV, PSCHED_FORMAT_JSON,
                                            PSCHED_FORMAT_CSV_COMMS_PYTORCH};
    for (size_t f = 0; f < 3; f++) {
        sink k = {0};
        CHECK_EQ_INT(psched_generate_write(plan, "test-stream-deadlock", formats[f], 0,
                                           sink_write, &k),
                     want);
        CHECK_STR(psched_last_error(), msg);
        CHECK_EQ_INT(k.calls, 0);
        sink_reset(&k);
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_fallback_when_not_compact(void)
{
    CHECK_OK(psched_register_generator(&backwards_gen));
    psched_plan *plan = tu_plan(3, 4, 1);
    psched_schedule *es = NULL;
    psched_compact *cs = NULL;
    CHECK_OK(psched__generate_ex(plan, "test-stream-backwards", true, &es, &cs));
    CHECK(es != NULL && cs == NULL); /* went back to an earlier device */
    char *text = NULL;
    CHECK_OK(psched_export(es, NULL, PSCHED_FORMAT_CSV, 0, &text, NULL));
    /* hand-derived: gpipe rows whatever the order of appending */
    CHECK_STR(text, "0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n1F0,1F1,1F2,1F3,1B0,1B1,1B2,1B3\n"
                    "2F0,2F1,2F2,2F3,2B0,2B1,2B2,2B3\n");
    sink k = {0};
    CHECK_OK(psched_generate_write(plan, "test-stream-backwards", PSCHED_FORMAT_CSV, 0,
                                   sink_write, &k));
    CHECK_STR(k.data, text);
    sink_reset(&k);
    psched_free(text);
    psched_schedule_destroy(es);
    psched_plan_destroy(plan);
}

/* An op the codes cannot hold (an activation copy) part way through: the
 * builder turns its codes into psched_ops and carries on; the written text
 * is the export of the schedule psched_generate() gives, hand-derived
 * here, and psched_validate()'s verdict on it holds. */
static void test_leaving_compact_mode_part_way(void)
{
    CHECK_OK(psched_register_generator(&offloading_gen));
    psched_plan *plan = tu_plan(2, 3, 1);
    psched_schedule *es = NULL;
    psched_compact *cs = NULL;
    CHECK_OK(psched__generate_ex(plan, "test-stream-offloading", true, &es, &cs));
    CHECK(es != NULL && cs == NULL);
    CHECK_OK(psched_validate(es));
    psched_schedule_destroy(es);
    sink k = {0};
    CHECK_OK(psched_generate_write(plan, "test-stream-offloading", PSCHED_FORMAT_CSV, 0,
                                   sink_write, &k));
    CHECK_STR(k.data, "0F0,0F1,0F2,0OFFLOAD0,0RELOAD0,0B0,0B1,0B2\n"
                      "1F0,1F1,1F2,1OFFLOAD0,1RELOAD0,1B0,1B1,1B2\n");
    sink_reset(&k);
    psched_plan_destroy(plan);
}

int main(void)
{
    RUN(test_hand_derived_1f1b);
    RUN(test_streamed_text_equals_export);
    RUN(test_large_text_comes_in_pieces);
    RUN(test_lowered_schedules_stream_the_same_text);
    RUN(test_compact_check_agrees_on_mutants);
    RUN(test_invalid_schedule_writes_nothing);
    RUN(test_fallback_when_not_compact);
    RUN(test_leaving_compact_mode_part_way);
    TEST_MAIN_END();
}
