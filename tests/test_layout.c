/* Given partitions and framework layouts (issue 16 items 2-4), through the
 * public API: psched_partition_evaluate(), psched_partition_from_layout()
 * (Megatron-LM's layout grammar, megatron/core/transformer/
 * pipeline_parallel_layer_layout.py), psched_partition_to_megatron() and
 * psched_partition_to_torchtitan(). Every expected string, time and byte
 * count below is derived by hand in the comments from the model the test
 * builds; emit then parse must give the same partition back for every plan
 * the optimizer produces here; every allocation may fail. */
#include "internal.h"
#include "pipesched.h"
#include "testutil.h"

#include <stdbool.h>
#include <stdint.h>

/* The small model of most tests:
 *   embedding x1: f = b = w = 0, act 1, param 100
 *   layer x4:     f = b = w = 1, act 4, param 10;
 *                 selective: act 2, +0.25 on b; full: act 0.5, +1 on b
 *   head x1:      f = b = w = 0, act 2, param 5
 * so a stage's time is 3 per transformer layer it holds. */
static psched_model *small_model(uint32_t body)
{
    psched_model *m = NULL;
    CHECK_OK(psched_model_create(&m));
    CHECK_OK(psched_model_add_layers(m, "embedding", 1, 0, 0, 0, 1, 100));
    CHECK_OK(psched_model_add_layers(m, "layer", body, 1, 1, 1, 4, 10));
    CHECK_OK(psched_model_set_recompute(m, 1, PSCHED_RECOMPUTE_SELECTIVE, 2, 0.25));
    CHECK_OK(psched_model_set_recompute(m, 1, PSCHED_RECOMPUTE_FULL, 0.5, 1));
    CHECK_OK(psched_model_add_layers(m, "head", 1, 0, 0, 0, 2, 5));
    return m;
}

static void check_counts(const psched_partition_result *r, const uint32_t *want, uint32_t n)
{
    CHECK_EQ_INT(psched_partition_stages(r), n);
    uint32_t at = 0;
    for (uint32_t s = 0; s < n && s < psched_partition_stages(r); s++) {
        uint32_t first = 99, count = 99;
        CHECK_OK(psched_partition_stage(r, s, &first, &count, NULL, NULL));
        CHECK_EQ_INT(first, at);
        CHECK_EQ_INT(count, want[s]);
        at += want[s];
    }
}

static char *megatron(const psched_partition_result *r, const psched_model *m)
{
    char *text = NULL;
    size_t length = 0;
    CHECK_OK(psched_partition_to_megatron(r, m, NULL, &text, &length));
    if (text)
        CHECK_EQ_INT(length, strlen(text));
    return text;
}

static char *torchtitan(const psched_partition_result *r, const psched_model *m, const char *fqn)
{
    char *text = NULL;
    size_t length = 0;
    CHECK_OK(psched_partition_to_torchtitan(r, m, NULL, fqn, &text, &length));
    if (text)
        CHECK_EQ_INT(length, strlen(text));
    return text;
}

/* A prefix of a text. */
#define CHECK_PREFIX(text, prefix) CHECK((text) && strncmp((text), (prefix), strlen(prefix)) == 0)

/* ---- evaluate ---- */

/* p = 2, m = 4, 1F1B, stages E t t | t t L: both stages F = B = W = 2, so
 * the makespan is (m + p - 1)·(F + B + W) = 5·6 = 30 and the bubble
 * 1 - 2·(4·6) / (2·30) = 0.2. Memory (1F1B stage s holds min(p - s, m)
 * micro-batches): device 0 = 100 + 2·10 + 2·(1 + 4 + 4) = 138, device 1 =
 * 2·10 + 5 + 1·(4 + 4 + 2) = 35. A limit of 138 fits, 137.5 does not. */
static void test_evaluate_figures_and_fit(void)
{
    psched_model *m = small_model(4);
    static const uint32_t counts[] = {3, 3};
    for (int tight = 0; tight < 2; tight++) {
        psched_plan *plan = tu_plan_limited(2, 4, 1, tight ? 137.5 : 138);
        psched_partition_result *r = NULL;
        CHECK_OK(psched_partition_evaluate(m, plan, "1f1b", counts, 2, NULL, &r));
        CHECK(r != NULL);
        if (r) {
            CHECK_EQ_INT(psched_partition_status(r),
                         tight ? PSCHED_SOLVE_INFEASIBLE : PSCHED_SOLVE_FEASIBLE);
            check_counts(r, counts, 2);
            CHECK_EQ_DBL(psched_partition_makespan(r), 30);
            CHECK_EQ_DBL(psched_partition_bubble_ratio(r), 0.2);
            CHECK(isnan(psched_partition_gap(r)));
            CHECK(isnan(psched_partition_min_memory(r)));
            double time, memory, params, bound;
            CHECK_OK(psched_partition_stage(r, 0, NULL, NULL, &time, &memory));
            CHECK_EQ_DBL(time, 6);
            CHECK_EQ_DBL(memory, 138);
            CHECK_OK(psched_partition_device(r, 0, &params, &bound, NULL));
            CHECK_EQ_DBL(params, 120);
            CHECK_EQ_DBL(bound, 138);
            CHECK_OK(psched_partition_device(r, 1, &params, &bound, NULL));
            CHECK_EQ_DBL(params, 25);
            CHECK_EQ_DBL(bound, 35);
        }
        psched_partition_result_destroy(r);
        psched_plan_destroy(plan);
    }
    psched_model_destroy(m);
}

/* Full recomputation of stage 0's two layers: stage 0 is F 2, B 2 + 2·1,
 * W 2 (8 in all), stage 1 stays at 6; device 0 keeps 100 + 20 + 2·(1 +
 * 0.5 + 0.5) = 124. The 1F1B run (stage 0: F1 F2 B1 F3 B2 F4 B3 B4, stage
 * 1: F1 B1 F2 B2 ...; BW 6 on stage 0, 4 on stage 1), by hand:
 *   d0 F1 0-2, F2 2-4;  d1 F1 2-4, B1 4-8;  d0 B1 8-14, F3 14-16;
 *   d1 F2 8-10, B2 10-14;  d0 B2 16-22, F4 22-24;  d1 F3 16-18, B3 18-22;
 *   d0 B3 24-30;  d1 F4 24-26, B4 26-30;  d0 B4 30-36: makespan 36. */
static void test_evaluate_recompute(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    static const uint32_t counts[] = {3, 3};
    static const psched_recompute rc[] = {0, 2, 2, 0, 0, 0};
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition_evaluate(m, plan, "1f1b", counts, 2, rc, &r));
    if (r) {
        CHECK_EQ_INT(psched_partition_status(r), PSCHED_SOLVE_FEASIBLE);
        CHECK_EQ_DBL(psched_partition_makespan(r), 36);
        double time, bound;
        CHECK_OK(psched_partition_stage(r, 0, NULL, NULL, &time, NULL));
        CHECK_EQ_DBL(time, 8);
        CHECK_OK(psched_partition_device(r, 0, NULL, &bound, NULL));
        CHECK_EQ_DBL(bound, 124);
        for (uint32_t l = 0; l < 6; l++)
            CHECK_EQ_INT(psched_partition_layer_recompute(r, l), rc[l]);
    }
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

static void expect_fail(psched_status got, psched_status want, const char *names)
{
    CHECK_EQ_INT(got, want);
    CHECK_CONTAINS(psched_last_error(), names);
}

static void test_evaluate_bad_arguments(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    static const uint32_t counts[] = {3, 3}, short_counts[] = {3, 2};
    static const psched_recompute bad_kind[] = {0, 3, 0, 0, 0, 0};
    static const psched_recompute emb_full[] = {2, 0, 0, 0, 0, 0};
    psched_partition_result *r = (psched_partition_result *)&tu_run_tests; /* poison */
    expect_fail(psched_partition_evaluate(NULL, plan, "1f1b", counts, 2, NULL, &r),
                PSCHED_EINVAL, "model must be non-NULL");
    CHECK(r == NULL);
    expect_fail(psched_partition_evaluate(m, NULL, "1f1b", counts, 2, NULL, &r), PSCHED_EINVAL,
                "must be non-NULL");
    expect_fail(psched_partition_evaluate(m, plan, "1f1b", NULL, 2, NULL, &r), PSCHED_EINVAL,
                "stage counts");
    expect_fail(psched_partition_evaluate(m, plan, "1f1b", counts, 2, NULL, NULL), PSCHED_EINVAL,
                "output must be non-NULL");
    expect_fail(psched_partition_evaluate(m, plan, "1f1b", short_counts, 2, NULL, &r),
                PSCHED_EINVAL, "the stages hold 5 layers in all; the model has 6");
    expect_fail(psched_partition_evaluate(m, plan, "1f1b", (const uint32_t[]){2, 2, 2}, 3, NULL,
                                          &r),
                PSCHED_EINVAL, "3 stages given; schedule 1f1b with p = 2, v = 1 has 2 stages");
    expect_fail(psched_partition_evaluate(m, plan, "1f1b", counts, 2, bad_kind, &r),
                PSCHED_EINVAL, "recompute choice of layer 1 (3) must be 0 (none)");
    expect_fail(psched_partition_evaluate(m, plan, "1f1b", counts, 2, emb_full, &r),
                PSCHED_EINVAL, "layer 0 (group 'embedding') has no full recompute variant");
    expect_fail(psched_partition_evaluate(m, plan, "no-such-schedule", counts, 2, NULL, &r),
                PSCHED_ENOTFOUND, "no-such-schedule");
    CHECK(r == NULL);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* ---- reading layouts ---- */

typedef struct grammar_case {
    const char *layout;
    uint32_t body, p, v; /* v 0: from the layout */
    uint32_t stages;
    uint32_t counts[8];
} grammar_case;

/* Counts include the embedding (first stage) and the head (last). */
static const grammar_case grammar_cases[] = {
    /* plain */
    {"Ett|ttL", 4, 2, 1, 2, {3, 3}},
    /* repetition of one element */
    {"Et*3|t*3L", 6, 2, 1, 2, {4, 4}},
    /* commas are cosmetic, anywhere */
    {"E,t,t|t,,tL,", 4, 2, 1, 2, {3, 3}},
    /* a repeated group: E | tt | tt | L, v = 2 from the layout */
    {"E|(tt|)*2,L", 4, 2, 0, 4, {1, 2, 2, 1}},
    /* '|*2' is two separators: an empty stage between */
    {"Et|*2tt|tL", 4, 2, 0, 4, {2, 0, 2, 2}},
    /* empty first and last stages of their own */
    {"E|tttt|L", 4, 3, 1, 3, {1, 4, 1}},
    /* a group with a repeated element inside: Ett | t*2 x 2 ... */
    {"Ett|(t*2|)*2,tL", 7, 4, 1, 4, {3, 2, 2, 2}},
    /* DeepSeek-style start: E t t t | then groups */
    {"Et*3|(t|)*2,tL", 6, 4, 1, 4, {4, 1, 1, 2}},
    /* repeat count 1 */
    {"E(tt|)*1,ttL", 4, 2, 1, 2, {3, 3}},
};

/* DualPipe's two chains hold the same ranges: its results list the p = 2
 * ranges twice (plan stage t holds range t mod 2), and the ranges are
 * given once or as listed, with the same result. With p = 2 each device
 * holds both ranges (a device and its mirror), so every parameter: 100 +
 * 8·10 + 5 = 185 on each. Megatron-LM's layout and torchtitan's module
 * lists place each layer once: the emitters refuse the two copies. */
static void test_evaluate_dualpipe_ranges_once_or_twice(void)
{
    psched_model *m = small_model(8);
    psched_plan *plan = tu_plan_limited(2, 4, 2, INFINITY);
    static const uint32_t once[] = {5, 5}, twice[] = {5, 5, 5, 5}, uneven[] = {5, 5, 4, 6},
                          three[] = {4, 3, 3};
    psched_partition_result *a = NULL, *b = NULL, *r = NULL;
    CHECK_OK(psched_partition_evaluate(m, plan, "dualpipe", once, 2, NULL, &a));
    CHECK_OK(psched_partition_evaluate(m, plan, "dualpipe", twice, 4, NULL, &b));
    CHECK(a != NULL && b != NULL);
    if (a && b) {
        CHECK_EQ_INT(psched_partition_stages(a), 4);
        CHECK_EQ_INT(psched_partition_stages(b), 4);
        for (uint32_t t = 0; t < 4; t++) {
            uint32_t fa = 99, ca = 99, fb = 99, cb = 99;
            CHECK_OK(psched_partition_stage(a, t, &fa, &ca, NULL, NULL));
            CHECK_OK(psched_partition_stage(b, t, &fb, &cb, NULL, NULL));
            CHECK_EQ_INT(fa, t % 2 ? 5 : 0);
            CHECK_EQ_INT(ca, 5);
            CHECK_EQ_INT(fb, fa);
            CHECK_EQ_INT(cb, ca);
        }
        CHECK(psched_partition_makespan(a) > 0);
        CHECK_EQ_DBL(psched_partition_makespan(b), psched_partition_makespan(a));
        for (uint32_t d = 0; d < 2; d++) {
            double params = 0;
            CHECK_OK(psched_partition_device(b, d, &params, NULL, NULL));
            CHECK_EQ_DBL(params, 185);
        }
        char *text = (char *)"poison";
        expect_fail(psched_partition_to_megatron(a, m, NULL, &text, NULL), PSCHED_EUNSUPPORTED,
                    "two copies of the model");
        CHECK(text == NULL);
        text = (char *)"poison";
        expect_fail(psched_partition_to_torchtitan(b, m, NULL, NULL, &text, NULL),
                    PSCHED_EUNSUPPORTED, "dualpipev");
        CHECK(text == NULL);
    }
    expect_fail(psched_partition_evaluate(m, plan, "dualpipe", uneven, 4, NULL, &r),
                PSCHED_EINVAL, "stage 2 holds 4 layers and stage 0 5");
    expect_fail(psched_partition_evaluate(m, plan, "dualpipe", three, 3, NULL, &r),
                PSCHED_EINVAL, "3 stages given; schedule dualpipe with p = 2, v = 2 has 2 ranges");
    /* twice the layers with one chain: the sum is wrong */
    psched_plan *loop = tu_plan_limited(2, 4, 2, INFINITY);
    expect_fail(psched_partition_evaluate(m, loop, "interleaved", twice, 4, NULL, &r),
                PSCHED_EINVAL, "the stages hold 20 layers in all; the model has 10");
    CHECK(r == NULL);
    psched_partition_result_destroy(a);
    psched_partition_result_destroy(b);
    psched_plan_destroy(loop);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

static void test_layout_grammar(void)
{
    for (size_t i = 0; i < sizeof grammar_cases / sizeof *grammar_cases; i++) {
        const grammar_case *c = &grammar_cases[i];
        psched_model *m = small_model(c->body);
        psched_plan *plan = tu_plan_limited(c->p, 2 * c->p, c->v, INFINITY);
        const char *sched = c->stages == c->p ? "1f1b" : "interleaved";
        psched_partition_result *r = NULL;
        psched_status st = psched_partition_from_layout(m, plan, sched, c->layout, NULL, NULL,
                                                        NULL, 0, &r);
        if (st != PSCHED_OK)
            fprintf(stderr, "layout %s: %s\n", c->layout, psched_last_error());
        CHECK_OK(st);
        if (r)
            check_counts(r, c->counts, c->stages);
        psched_partition_result_destroy(r);
        psched_plan_destroy(plan);
        psched_model_destroy(m);
    }
}

/* A profile without embedding and head groups: Megatron-LM's E and L then
 * stand for nothing, and the emitter writes them back. */
static void test_layout_markers_without_embedding_or_head(void)
{
    psched_model *m = NULL;
    CHECK_OK(psched_model_create(&m));
    CHECK_OK(psched_model_add_layers(m, "block", 4, 1, 1, 1, 4, 10));
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition_from_layout(m, plan, "1f1b", "Et|tttL", NULL, NULL, NULL, 0, &r));
    if (r) {
        check_counts(r, (const uint32_t[]){1, 3}, 2);
        char *text = megatron(r, m);
        CHECK_CONTAINS(text, "--pipeline-model-parallel-layout \"Et|t*3L\"\n");
        psched_free(text);
        /* the markers stand for the modules the profile leaves out, so
         * torchtitan's lists name them too */
        text = torchtitan(r, m, "E=emb;t=blocks.{i};L=out");
        CHECK_CONTAINS(text, "pipeline_parallel_module_fqns_per_model_part = [\n"
                             "    [\"emb\", \"blocks.0\"],\n"
                             "    [\"blocks.1\", \"blocks.2\", \"blocks.3\", \"out\"]\n"
                             "]\n");
        psched_free(text);
        text = (char *)&tu_run_tests;
        expect_fail(psched_partition_to_torchtitan(r, m, NULL, "t=blocks.{i}", &text, NULL),
                    PSCHED_EINVAL, "module-name template has no entry for 'E' layers");
        CHECK(text == NULL);
        psched_free(text);
    }
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* A group the default letters make 't' mapped to m (MTP) by name. */
static void test_layout_map_names_a_group(void)
{
    psched_model *m = NULL;
    CHECK_OK(psched_model_create(&m));
    CHECK_OK(psched_model_add_layers(m, "embedding", 1, 0, 0, 0, 1, 100));
    CHECK_OK(psched_model_add_layers(m, "layer", 4, 1, 1, 1, 4, 10));
    CHECK_OK(psched_model_add_layers(m, "predict", 1, 1, 1, 1, 4, 10));
    CHECK_OK(psched_model_add_layers(m, "head", 1, 0, 0, 0, 2, 5));
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    psched_partition_result *r = NULL;
    /* unmapped, 'predict' is a t: the layout has 4 t, the model 5 */
    expect_fail(psched_partition_from_layout(m, plan, "1f1b", "Ett|ttmL", NULL, NULL, NULL, 0,
                                             &r),
                PSCHED_EINVAL, "layout: 4 't' elements (transformer layers); the model has 5");
    CHECK_OK(psched_partition_from_layout(m, plan, "1f1b", "Ett|ttmL", "m=predict", NULL, NULL,
                                          0, &r));
    if (r) {
        check_counts(r, (const uint32_t[]){3, 4}, 2);
        char *text = NULL;
        CHECK_OK(psched_partition_to_megatron(r, m, "m=predict", &text, NULL));
        CHECK_CONTAINS(text, "--pipeline-model-parallel-layout \"Ett|ttmL\"\n");
        psched_free(text);
        CHECK_OK(psched_partition_to_torchtitan(r, m, "m=predict",
                                                "E=emb;t=layers.{i};m=mtp.{i};L=out", &text,
                                                NULL));
        CHECK_CONTAINS(text, "    [\"emb\", \"layers.0\", \"layers.1\"],\n"
                             "    [\"layers.2\", \"layers.3\", \"mtp.0\", \"out\"]\n");
        psched_free(text);
    }
    psched_partition_result_destroy(r);
    expect_fail(psched_partition_from_layout(m, plan, "1f1b", "Ett|ttmL", "m=nothing", NULL,
                                             NULL, 0, &r),
                PSCHED_EINVAL, "layout map entry 'm=nothing': the model has no layer group "
                               "named 'nothing'");
    expect_fail(psched_partition_from_layout(m, plan, "1f1b", "Ett|ttmL", "x=predict", NULL,
                                             NULL, 0, &r),
                PSCHED_EINVAL, "layout map entry 'x=predict' must be LETTER=GROUP");
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* Recompute options: Megatron-LM's spelling onto per-layer choices. */
static void test_layout_recompute_options(void)
{
    psched_model *m = small_model(6);
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    psched_partition_result *r = NULL;
    /* block 2: the first two t of each stage full */
    CHECK_OK(psched_partition_from_layout(m, plan, "1f1b", "Et*3|t*3L", NULL, "full", "block", 2,
                                          &r));
    static const psched_recompute block2[] = {0, 2, 2, 0, 2, 2, 0, 0};
    for (uint32_t l = 0; r && l < 8; l++)
        CHECK_EQ_INT(psched_partition_layer_recompute(r, l), block2[l]);
    psched_partition_result_destroy(r);
    /* uniform 1: every t full; selective: every t selective */
    CHECK_OK(psched_partition_from_layout(m, plan, "1f1b", "Et*3|t*3L", NULL, "full", "uniform",
                                          1, &r));
    for (uint32_t l = 0; r && l < 8; l++)
        CHECK_EQ_INT(psched_partition_layer_recompute(r, l), l == 0 || l == 7 ? 0 : 2);
    psched_partition_result_destroy(r);
    CHECK_OK(psched_partition_from_layout(m, plan, "1f1b", "Et*3|t*3L", NULL, "selective", NULL,
                                          0, &r));
    for (uint32_t l = 0; r && l < 8; l++)
        CHECK_EQ_INT(psched_partition_layer_recompute(r, l), l == 0 || l == 7 ? 0 : 1);
    psched_partition_result_destroy(r);
    CHECK_OK(psched_partition_from_layout(m, plan, "1f1b", "Et*3|t*3L", NULL, "none", "", 0,
                                          &r));
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

typedef struct bad_layout {
    const char *layout;
    const char *granularity, *method;
    uint32_t num_layers;
    const char *names;
} bad_layout;

/* Model: small_model(4) (E t t t t L), p = 2, v = 1. */
static const bad_layout bad_layouts[] = {
    {"Ett|(tt|L", NULL, NULL, 0, "layout: '(' at column 5 is never closed"},
    {"Ett|tt)|L", NULL, NULL, 0, "layout: ')' at column 7 closes no '('"},
    {"Ett|(tt|)L", NULL, NULL, 0, "')' at column 9 must be followed by *n"},
    {"E((tt|)*1)*1,ttL", NULL, NULL, 0, "'(' at column 3 is inside the group opened at column 2"},
    {"E()*2tt|ttL", NULL, NULL, 0, "layout: empty parentheses at column 2"},
    {"Ett|tt|L", NULL, NULL, 0, "layout: 3 stages is not a multiple of the 2 devices"},
    {"Ett|tt|t|L", NULL, NULL, 0, "layout: 4 stages; the plan's p = 2, v = 1 needs 2"},
    {"Ettt|ttL", NULL, NULL, 0, "layout: 5 't' elements (transformer layers); the model has 4"},
    {"Ett|tL", NULL, NULL, 0, "layout: 3 't' elements (transformer layers); the model has 4"},
    {"Ett|txL", NULL, NULL, 0, "layout: 'x' at column 6 is not a Megatron-LM layout element"},
    {"Ett|t\x01L", NULL, NULL, 0, "layout: byte 0x01 at column 6"},
    {"Ett|tmtL", NULL, NULL, 0, "element 'm' at column 6 (MTP layer) stands for no layer group"},
    {"tEt|ttL", NULL, NULL, 0, "the first element must be E (the embedding)"},
    {"|", NULL, NULL, 0, "the first element must be E (the embedding), as Megatron-LM "
                           "requires; the layout has none"},
    {"Ett|tLt", NULL, NULL, 0, "the last element must be L (the loss), as Megatron-LM requires; "
                               "column 7 is 't'"},
    {"EEt|ttL", NULL, NULL, 0, "layout: 2 'E' elements; Megatron-LM's layout has exactly one"},
    {"Ett|t*L", NULL, NULL, 0, "'*' at column 6 must be followed by a repeat count"},
    {"Ett|ttL*0", NULL, NULL, 0, "the last element must be L (the loss), as Megatron-LM "
                                 "requires; column 6 is 't'"},
    {"*2Ett|ttL", NULL, NULL, 0, "layout: '*' at column 1 repeats nothing"},
    {"Et*2*2|ttL", NULL, NULL, 0, "layout: '*' at column 5 repeats a repetition"},
    {"Et*99999999999|ttL", NULL, NULL, 0, "layout: repeat count at column 4 exceeds"},
    {"Ett|ttL", "fast", NULL, 0, "recompute granularity 'fast' must be none, selective or full"},
    {"Ett|ttL", "full", NULL, 0, "recompute granularity full needs a method: uniform or block"},
    {"Ett|ttL", "full", "every", 1, "recompute method 'every' must be uniform or block"},
    {"Ett|ttL", "full", "uniform", 2, "recompute method uniform with 2 layers per group"},
    {"Ett|ttL", "selective", "block", 1, "recompute method 'block' and layer count 1 apply to "
                                         "granularity full only (granularity: selective)"},
    {"Ett|ttL", NULL, NULL, 3, "apply to granularity full only (granularity: none)"},
};

static void test_bad_layouts_name_the_rule_and_the_column(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    for (size_t i = 0; i < sizeof bad_layouts / sizeof *bad_layouts; i++) {
        const bad_layout *c = &bad_layouts[i];
        psched_partition_result *r = (psched_partition_result *)&tu_run_tests;
        psched_status st = psched_partition_from_layout(m, plan, "1f1b", c->layout, NULL,
                                                        c->granularity, c->method, c->num_layers,
                                                        &r);
        if (st != PSCHED_EINVAL || !strstr(psched_last_error(), c->names))
            fprintf(stderr, "layout \"%s\": got %s \"%s\"\n", c->layout, psched_status_str(st),
                    psched_last_error());
        expect_fail(st, PSCHED_EINVAL, c->names);
        CHECK(r == NULL);
    }
    /* an element falling on a layer of another letter: m where the model
     * has its MTP group at the end */
    psched_model *mtp = NULL;
    CHECK_OK(psched_model_create(&mtp));
    CHECK_OK(psched_model_add_layers(mtp, "embedding", 1, 0, 0, 0, 1, 1));
    CHECK_OK(psched_model_add_layers(mtp, "layer", 2, 1, 1, 1, 1, 1));
    CHECK_OK(psched_model_add_layers(mtp, "mtp", 1, 1, 1, 1, 1, 1));
    CHECK_OK(psched_model_add_layers(mtp, "head", 1, 1, 1, 1, 1, 1));
    psched_partition_result *r = NULL;
    expect_fail(psched_partition_from_layout(mtp, plan, "1f1b", "Etm|tL", NULL, NULL, NULL, 0,
                                             &r),
                PSCHED_EINVAL, "layout: element 'm' at column 3 falls on layer 2 of the model, a "
                               "'t' layer (group 'layer')");
    /* no selective variant anywhere: selective is refused */
    expect_fail(psched_partition_from_layout(mtp, plan, "1f1b", "Ett|mL", NULL, "selective",
                                             NULL, 0, &r),
                PSCHED_EINVAL, "no transformer layer group of the profile has a selective variant");
    expect_fail(psched_partition_from_layout(mtp, plan, "1f1b", "Ett|mL", NULL, "full",
                                             "uniform", 1, &r),
                PSCHED_EINVAL, "full recomputation of layer 1: its group 'layer' has no full "
                               "recompute variant in the profile");
    psched_model_destroy(mtp);
    /* NULL arguments */
    expect_fail(psched_partition_from_layout(m, plan, "1f1b", NULL, NULL, NULL, NULL, 0, &r),
                PSCHED_EINVAL, "model, plan, schedule name, layout and output must be non-NULL");
    expect_fail(psched_partition_from_layout(NULL, plan, "1f1b", "Ett|ttL", NULL, NULL, NULL, 0,
                                             &r),
                PSCHED_EINVAL, "must be non-NULL");
    expect_fail(psched_partition_from_layout(m, plan, "1f1b", "Ett|ttL", NULL, NULL, NULL, 0,
                                             NULL),
                PSCHED_EINVAL, "must be non-NULL");
    CHECK(r == NULL);
    /* a profile whose embedding is not first cannot be written as a layout */
    psched_model *late = NULL;
    CHECK_OK(psched_model_create(&late));
    CHECK_OK(psched_model_add_layers(late, "layer", 2, 1, 1, 1, 1, 1));
    CHECK_OK(psched_model_add_layers(late, "embedding", 1, 1, 1, 1, 1, 1));
    CHECK_OK(psched_model_add_layers(late, "layer", 2, 1, 1, 1, 1, 1));
    expect_fail(psched_partition_from_layout(late, plan, "1f1b", "Ett|ttL", NULL, NULL, NULL, 0,
                                             &r),
                PSCHED_EINVAL, "layer 2 (group 'embedding') is an embedding (E), but "
                               "Megatron-LM's layout has exactly one E, the first layer");
    psched_model_destroy(late);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* ---- emitting ---- */

static psched_partition_result *evaluate(const psched_model *m, const psched_plan *plan,
                                         const char *sched, const uint32_t *counts,
                                         uint32_t stages, const psched_recompute *rc)
{
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition_evaluate(m, plan, sched, counts, stages, rc, &r));
    return r;
}

/* p = 2, v = 1, 1F1B (the figures of test_evaluate_figures_and_fit). */
static void test_megatron_and_torchtitan_v1(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    psched_partition_result *r = evaluate(m, plan, "1f1b", (const uint32_t[]){3, 3}, 2, NULL);
    char *text = r ? megatron(r, m) : NULL;
    CHECK_STR(text, "# pipesched plan for Megatron-LM: schedule 1f1b, p = 2, v = 1, m = 4: "
                    "simulated step time 30, bubble 20.0%, largest device memory 138\n"
                    "# micro-batches: --global-batch-size = 4 x --micro-batch-size x the "
                    "data-parallel size\n"
                    "--pipeline-model-parallel-size 2 \\\n"
                    "--pipeline-model-parallel-layout \"Ett|ttL\"\n");
    psched_free(text);
    text = r ? torchtitan(r, m, NULL) : NULL;
    CHECK_STR(text, "# pipesched plan for torchtitan: schedule 1f1b, p = 2, v = 1, m = 4: "
                    "simulated step time 30, bubble 20.0%, largest device memory 138\n"
                    "[parallelism]\n"
                    "pipeline_parallel_degree = 2\n"
                    "pipeline_parallel_schedule = \"1F1B\"\n"
                    "num_pp_microbatches = 4\n"
                    "pipeline_parallel_module_fqns_per_model_part = [\n"
                    "    [\"tok_embeddings\", \"layers.0\", \"layers.1\"],\n"
                    "    [\"layers.2\", \"layers.3\", \"norm\", \"output\"]\n"
                    "]\n"
                    "\n"
                    "[activation_checkpoint]\n"
                    "mode = \"none\"\n");
    psched_free(text);
    /* the default template spelled out gives the same names */
    char *spelled = r ? torchtitan(r, m, PSCHED_TORCHTITAN_LLAMA_FQN) : NULL;
    CHECK_CONTAINS(spelled, "[\"layers.2\", \"layers.3\", \"norm\", \"output\"]");
    psched_free(spelled);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* p = 2, v = 2, interleaved 1F1B, stages E t | t | t | t L: every chunk
 * costs t = 3, so the makespan is (m·v + p - 1)·t = (8 + 1)·3 = 27
 * (Narayanan et al. 2021: the bubble shrinks by v) and the bubble
 * 1 - 2·24 / (2·27) = 1/9 = 11.1%. */
static void test_megatron_and_torchtitan_v2(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 2, INFINITY);
    psched_partition_result *r =
        evaluate(m, plan, "interleaved", (const uint32_t[]){2, 1, 1, 2}, 4, NULL);
    if (r)
        CHECK_EQ_DBL(psched_partition_makespan(r), 27);
    char *text = r ? megatron(r, m) : NULL;
    CHECK_PREFIX(text, "# pipesched plan for Megatron-LM: schedule interleaved, p = 2, v = 2, "
                    "m = 4: simulated step time 27, bubble 11.1%, largest device memory ");
    /* (the memory figure comes from interleaved 1F1B's in-flight counts) */
    const char *tail = text ? strstr(text, "\n# micro-batches") : NULL;
    CHECK_STR(tail, "\n# micro-batches: --global-batch-size = 4 x --micro-batch-size x the "
                    "data-parallel size\n"
                    "# --num-virtual-stages-per-pipeline-rank 2: implied by the layout "
                    "(Megatron-LM refuses the two flags together)\n"
                    "--pipeline-model-parallel-size 2 \\\n"
                    "--pipeline-model-parallel-layout \"Et|t|t|tL\"\n");
    psched_free(text);
    text = r ? torchtitan(r, m, NULL) : NULL;
    tail = text ? strstr(text, "[parallelism]") : NULL;
    CHECK_STR(tail, "[parallelism]\n"
                    "pipeline_parallel_degree = 2\n"
                    "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                    "num_pp_microbatches = 4\n"
                    "pipeline_parallel_module_fqns_per_model_part = [\n"
                    "    [\"tok_embeddings\", \"layers.0\"],\n"
                    "    [\"layers.1\"],\n"
                    "    [\"layers.2\"],\n"
                    "    [\"layers.3\", \"norm\", \"output\"]\n"
                    "]\n"
                    "\n"
                    "[activation_checkpoint]\n"
                    "mode = \"none\"\n");
    psched_free(text);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* Runs of three or more become t*n, repeated stages (...|)*n where
 * shorter: 10 layers over p = 5, stages Ett | tt | tt | tt | ttL; and
 * Et*3 | t*3L for 6 layers over 2. */
static void test_megatron_compacts_runs_and_stages(void)
{
    psched_model *m = small_model(10);
    psched_plan *plan = tu_plan_limited(5, 10, 1, INFINITY);
    psched_partition_result *r =
        evaluate(m, plan, "1f1b", (const uint32_t[]){3, 2, 2, 2, 3}, 5, NULL);
    char *text = r ? megatron(r, m) : NULL;
    CHECK_CONTAINS(text, "--pipeline-model-parallel-size 5 \\\n"
                         "--pipeline-model-parallel-layout \"Ett|(tt|)*3,ttL\"\n");
    psched_free(text);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    m = small_model(6);
    plan = tu_plan_limited(2, 4, 1, INFINITY);
    r = evaluate(m, plan, "1f1b", (const uint32_t[]){4, 4}, 2, NULL);
    text = r ? megatron(r, m) : NULL;
    CHECK_CONTAINS(text, "--pipeline-model-parallel-layout \"Et*3|t*3L\"\n");
    psched_free(text);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* Expressible recomputation prints its flags: every t full is uniform 1;
 * the first t of each stage full is block 1. */
static void test_megatron_expressible_recompute(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    static const uint32_t counts[] = {3, 3};
    psched_partition_result *r =
        evaluate(m, plan, "1f1b", counts, 2, (const psched_recompute[]){0, 2, 2, 2, 2, 0});
    char *text = r ? megatron(r, m) : NULL;
    CHECK_CONTAINS(text, "--pipeline-model-parallel-layout \"Ett|ttL\" \\\n"
                         "--recompute-granularity full \\\n"
                         "--recompute-method uniform \\\n"
                         "--recompute-num-layers 1\n");
    CHECK(text && !strstr(text, "# recompute"));
    psched_free(text);
    text = r ? torchtitan(r, m, NULL) : NULL;
    CHECK_CONTAINS(text, "]\n\n[activation_checkpoint]\nmode = \"full\"\n");
    psched_free(text);
    psched_partition_result_destroy(r);
    r = evaluate(m, plan, "1f1b", counts, 2, (const psched_recompute[]){0, 2, 0, 2, 0, 0});
    text = r ? megatron(r, m) : NULL;
    CHECK_CONTAINS(text, "--pipeline-model-parallel-layout \"Ett|ttL\" \\\n"
                         "--recompute-granularity full \\\n"
                         "--recompute-method block \\\n"
                         "--recompute-num-layers 1\n");
    psched_free(text);
    psched_partition_result_destroy(r);
    r = evaluate(m, plan, "1f1b", counts, 2, (const psched_recompute[]){0, 1, 1, 1, 1, 0});
    text = r ? megatron(r, m) : NULL;
    CHECK_CONTAINS(text, "\"Ett|ttL\" \\\n--recompute-granularity selective\n");
    psched_free(text);
    text = r ? torchtitan(r, m, NULL) : NULL;
    CHECK_CONTAINS(text, "[activation_checkpoint]\nmode = \"selective\"\n"
                         "selective_ac_option = \"op\"\n");
    psched_free(text);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

/* Stage 0's two layers full, stage 1's none: no global option says it.
 * Limit 130. Candidates on the same stages (1F1B, p = 2, m = 4):
 *   none:      device 0 = 120 + 2·(1 + 4 + 4) = 138 > 130, does not fit;
 *   selective: device 0 = 120 + 2·(1 + 2 + 2) = 130 fits, device 1 = 25 +
 *              (2 + 2 + 2) = 31; both stages F 2, B 2.5, W 2: makespan
 *              5·6.5 = 32.5;
 *   full:      device 0 = 120 + 2·2 = 124 fits; stages 8: makespan 40;
 *   block 1:   device 0 = 120 + 2·(1 + 0.5 + 4) = 131 > 130.
 * Nearest: selective (fits, fastest). The plan itself: 36, 124 (test_
 * evaluate_recompute). Mix per stage (none/selective/full): 0: 1/0/2,
 * 1: 3/0/0. */
static void test_megatron_inexpressible_recompute_prints_the_nearest(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 1, 130);
    psched_partition_result *r = evaluate(m, plan, "1f1b", (const uint32_t[]){3, 3}, 2,
                                          (const psched_recompute[]){0, 2, 2, 0, 0, 0});
    char *text = r ? megatron(r, m) : NULL;
    CHECK_STR(text, "# pipesched plan for Megatron-LM: schedule 1f1b, p = 2, v = 1, m = 4: "
                    "simulated step time 36, bubble 22.2%, largest device memory 124 "
                    "(limit 130)\n"
                    "# micro-batches: --global-batch-size = 4 x --micro-batch-size x the "
                    "data-parallel size\n"
                    "# recompute: the plan's mix per stage (none/selective/full) is 0: 1/0/2, "
                    "1: 3/0/0; Megatron-LM's global options cannot express it\n"
                    "# nearest expressible: --recompute-granularity selective: simulated step "
                    "time 32.5 (the plan's 36), largest device memory 130, fits the limit\n"
                    "--pipeline-model-parallel-size 2 \\\n"
                    "--pipeline-model-parallel-layout \"Ett|ttL\" \\\n"
                    "--recompute-granularity selective\n");
    psched_free(text);
    text = r ? torchtitan(r, m, NULL) : NULL;
    CHECK_CONTAINS(text, "# nearest expressible: [activation_checkpoint] mode selective, option "
                         "op: simulated step time 32.5 (the plan's 36), largest device memory "
                         "130, fits the limit\n[parallelism]\n");
    CHECK_CONTAINS(text, "]\n\n[activation_checkpoint]\nmode = \"selective\"\n"
                         "selective_ac_option = \"op\"\n");
    psched_free(text);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

static void test_emit_bad_arguments(void)
{
    psched_model *m = small_model(4), *other = small_model(6);
    psched_plan *plan = tu_plan_limited(2, 4, 1, INFINITY);
    psched_partition_result *r = evaluate(m, plan, "1f1b", (const uint32_t[]){3, 3}, 2, NULL);
    char *text = (char *)&tu_run_tests;
    size_t length = 7;
    expect_fail(psched_partition_to_megatron(NULL, m, NULL, &text, &length), PSCHED_EINVAL,
                "partition result and model must be non-NULL");
    CHECK(text == NULL && length == 0);
    expect_fail(psched_partition_to_megatron(r, NULL, NULL, &text, NULL), PSCHED_EINVAL,
                "partition result and model must be non-NULL");
    expect_fail(psched_partition_to_megatron(r, m, NULL, NULL, NULL), PSCHED_EINVAL,
                "text output must be non-NULL");
    expect_fail(psched_partition_to_torchtitan(r, m, NULL, NULL, NULL, NULL), PSCHED_EINVAL,
                "text output must be non-NULL");
    expect_fail(psched_partition_to_megatron(r, other, NULL, &text, NULL), PSCHED_EINVAL,
                "the model has 8 layers; the partition covers 6");
    expect_fail(psched_partition_to_torchtitan(r, other, NULL, NULL, &text, NULL), PSCHED_EINVAL,
                "the model has 8 layers; the partition covers 6");
    expect_fail(psched_partition_to_megatron(r, m, "E=nothing", &text, NULL), PSCHED_EINVAL,
                "layout map entry 'E=nothing'");
    expect_fail(psched_partition_to_torchtitan(r, m, NULL, "E=emb;t=layers.{i}", &text, NULL),
                PSCHED_EINVAL, "module-name template has no entry for 'L' layers (give L=NAME)");
    expect_fail(psched_partition_to_torchtitan(r, m, NULL, "E=emb;q=x;t=l;L=o", &text, NULL),
                PSCHED_EINVAL, "module-name template entry 'q=x' must be LETTER=NAME");
    CHECK(text == NULL);
    /* a result with no partition: the ILP finds none under a limit of 1 */
    psched_plan *tight = tu_plan_limited(2, 4, 1, 1);
    psched_partition_result *none = NULL;
    CHECK_OK(psched_partition(m, tight, "1f1b", NULL, &none));
    if (none) {
        CHECK_EQ_INT(psched_partition_status(none), PSCHED_SOLVE_INFEASIBLE);
        expect_fail(psched_partition_to_megatron(none, m, NULL, &text, NULL), PSCHED_EINFEASIBLE,
                    "the result holds no partition to emit");
        expect_fail(psched_partition_to_torchtitan(none, m, NULL, NULL, &text, NULL),
                    PSCHED_EINFEASIBLE, "the result holds no partition to emit");
    }
    psched_partition_result_destroy(none);
    psched_plan_destroy(tight);
    /* an embedding that is not the first layer has no Megatron-LM layout */
    psched_model *late = NULL;
    CHECK_OK(psched_model_create(&late));
    CHECK_OK(psched_model_add_layers(late, "layer", 3, 1, 1, 1, 1, 1));
    CHECK_OK(psched_model_add_layers(late, "head", 1, 1, 1, 1, 1, 1));
    CHECK_OK(psched_model_add_layers(late, "layer", 2, 1, 1, 1, 1, 1));
    psched_partition_result *lr = evaluate(late, plan, "1f1b", (const uint32_t[]){3, 3}, 2, NULL);
    expect_fail(psched_partition_to_megatron(lr, late, NULL, &text, NULL), PSCHED_EINVAL,
                "layer 3 (group 'head') is a loss layer (L), but Megatron-LM's layout has "
                "exactly one L, the last layer");
    psched_partition_result_destroy(lr);
    psched_model_destroy(late);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(other);
    psched_model_destroy(m);
}

/* ---- emit then parse ---- */

/* The value of `flag` on a line of `text` that is not a comment. */
static bool flag_value(const char *text, const char *flag, char *out, size_t cap)
{
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        size_t fl = strlen(flag);
        if (line[0] != '#' && n > fl + 1 && strncmp(line, flag, fl) == 0 && line[fl] == ' ') {
            const char *v = line + fl + 1;
            size_t k = 0;
            if (*v == '"')
                v++;
            while (v + k < line + n && v[k] != '"' && v[k] != ' ' && k + 1 < cap)
                k++;
            memcpy(out, v, k);
            out[k] = '\0';
            return true;
        }
        line = end ? end + 1 : NULL;
    }
    return false;
}

/* Emit, read back the layout and recompute flags, and compare: the same
 * stages; the plan's step time when its recomputation is expressible,
 * else the nearest setting's as printed. */
static void round_trip(const psched_model *m, const psched_plan *plan, const char *sched,
                       const psched_partition_result *r)
{
    char *text = megatron(r, m);
    if (!text)
        return;
    char layout[512], gran[32] = "", method[32] = "", num[32] = "0";
    CHECK(flag_value(text, "--pipeline-model-parallel-layout", layout, sizeof layout));
    flag_value(text, "--recompute-granularity", gran, sizeof gran);
    flag_value(text, "--recompute-method", method, sizeof method);
    flag_value(text, "--recompute-num-layers", num, sizeof num);
    psched_partition_result *back = NULL;
    CHECK_OK(psched_partition_from_layout(m, plan, sched, layout, NULL, gran, method,
                                          (uint32_t)strtoul(num, NULL, 10), &back));
    if (back) {
        uint32_t S = psched_partition_stages(r);
        CHECK_EQ_INT(psched_partition_stages(back), S);
        for (uint32_t s = 0; s < S; s++) {
            uint32_t c1 = 0, c2 = 1;
            psched_partition_stage(r, s, NULL, &c1, NULL, NULL);
            psched_partition_stage(back, s, NULL, &c2, NULL, NULL);
            CHECK_EQ_INT(c1, c2);
        }
        const char *near = strstr(text, "# nearest expressible: ");
        double want = psched_partition_makespan(r);
        if (near) {
            const char *at = strstr(near, "simulated step time ");
            CHECK(at != NULL);
            want = at ? strtod(at + strlen("simulated step time "), NULL) : NAN;
            /* printed with 6 significant digits */
            CHECK(fabs(psched_partition_makespan(back) - want) <= 1e-5 * fabs(want));
        } else {
            CHECK_EQ_DBL(psched_partition_makespan(back), want);
            for (uint32_t l = 0; l < psched_model_layers(m); l++)
                CHECK_EQ_INT(psched_partition_layer_recompute(back, l),
                             psched_partition_layer_recompute(r, l));
        }
    }
    psched_partition_result_destroy(back);
    psched_free(text);
}

static void test_emit_then_parse_gives_the_same_partition(void)
{
    static const struct {
        uint32_t body, p, v;
        const char *sched;
        double limit;
    } cases[] = {
        {4, 2, 1, "1f1b", INFINITY},    {4, 2, 1, "1f1b", 130},
        {8, 2, 1, "1f1b", 160},         {8, 4, 1, "1f1b", INFINITY},
        {8, 2, 2, "interleaved", INFINITY}, {8, 2, 2, "interleaved", 200},
        {12, 4, 1, "zb-h1", 150},       {10, 5, 1, "1f1b", INFINITY},
    };
    int runs = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        psched_model *m = small_model(cases[i].body);
        psched_plan *plan =
            tu_plan_limited(cases[i].p, 2 * cases[i].p, cases[i].v, cases[i].limit);
        for (int method = 0; method < 3; method++) {
            psched_partition_options o = PSCHED_PARTITION_OPTIONS_INIT;
            o.method = method == 0   ? PSCHED_PARTITION_ILP
                       : method == 1 ? PSCHED_PARTITION_EVEN
                                     : PSCHED_PARTITION_DP;
            psched_partition_result *r = NULL;
            CHECK_OK(psched_partition(m, plan, cases[i].sched, &o, &r));
            if (r && psched_partition_plan(r)) {
                round_trip(m, plan, cases[i].sched, r);
                runs++;
            }
            psched_partition_result_destroy(r);
        }
        psched_plan_destroy(plan);
        psched_model_destroy(m);
    }
    CHECK_EQ_INT(runs, 24);
}

/* ---- allocation failures ---- */

#define FAIL_EACH_ALLOCATION(call, cleanup)                                          \
    do {                                                                             \
        int ok_ = 0, fails_ = 0;                                                     \
        for (long n = 0; n < 100000 && !ok_; n++) {                                  \
            psched__alloc_fail_after(n);                                             \
            psched_status st_ = (call);                                              \
            psched__alloc_fail_after(-1);                                            \
            if (st_ == PSCHED_OK) {                                                  \
                ok_ = 1;                                                             \
            } else {                                                                 \
                fails_++;                                                            \
                CHECK_EQ_INT(st_, PSCHED_ENOMEM);                                    \
                if (st_ != PSCHED_ENOMEM) {                                          \
                    fprintf(stderr, "  at allocation %ld: %s\n", n, psched_last_error()); \
                    n = 100000;                                                      \
                }                                                                    \
            }                                                                        \
            cleanup;                                                                 \
        }                                                                            \
        CHECK(ok_);                                                                  \
        CHECK(fails_ > 3);                                                           \
    } while (0)

/* After a failure the output must be NULL; either way it is released. */
static void drop_result(psched_status st, psched_partition_result **r)
{
    CHECK(st == PSCHED_OK || *r == NULL);
    psched_partition_result_destroy(*r);
    *r = NULL;
}

static void drop_text(psched_status st, char **text)
{
    CHECK(st == PSCHED_OK || *text == NULL);
    psched_free(*text);
    *text = NULL;
}

static void test_every_allocation_may_fail(void)
{
    psched_model *m = small_model(4);
    psched_plan *plan = tu_plan_limited(2, 4, 1, 130);
    static const uint32_t counts[] = {3, 3};
    static const psched_recompute rc[] = {0, 2, 2, 0, 0, 0};
    psched_partition_result *r = NULL;
    char *text = NULL;
    FAIL_EACH_ALLOCATION(psched_partition_evaluate(m, plan, "1f1b", counts, 2, rc, &r),
                         drop_result(st_, &r));
    FAIL_EACH_ALLOCATION(psched_partition_from_layout(m, plan, "1f1b", "E,t*2|(tt)*1,L", NULL,
                                                      "full", "block", 1, &r),
                         drop_result(st_, &r));
    /* the inexpressible mix: the emitters evaluate every candidate */
    CHECK_OK(psched_partition_evaluate(m, plan, "1f1b", counts, 2, rc, &r));
    FAIL_EACH_ALLOCATION(psched_partition_to_megatron(r, m, NULL, &text, NULL),
                         drop_text(st_, &text));
    FAIL_EACH_ALLOCATION(psched_partition_to_torchtitan(r, m, NULL, NULL, &text, NULL),
                         drop_text(st_, &text));
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
}

int main(void)
{
    RUN(test_evaluate_figures_and_fit);
    RUN(test_evaluate_recompute);
    RUN(test_evaluate_bad_arguments);
    RUN(test_evaluate_dualpipe_ranges_once_or_twice);
    RUN(test_layout_grammar);
    RUN(test_layout_markers_without_embedding_or_head);
    RUN(test_layout_map_names_a_group);
    RUN(test_layout_recompute_options);
    RUN(test_bad_layouts_name_the_rule_and_the_column);
    RUN(test_megatron_and_torchtitan_v1);
    RUN(test_megatron_and_torchtitan_v2);
    RUN(test_megatron_compacts_runs_and_stages);
    RUN(test_megatron_expressible_recompute);
    RUN(test_megatron_inexpressible_recompute_prints_the_nearest);
    RUN(test_emit_bad_arguments);
    RUN(test_emit_then_parse_gives_the_same_partition);
    RUN(test_every_allocation_may_fail);
    TEST_MAIN_END();
}
