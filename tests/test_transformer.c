/* psched_model_transformer(): version 2 (FlashAttention, head_dim, causal
 * mask) against hand derivations from the formulas in docs/optimizer.md
 * (Korthikanti et al. 2022 for the activations), and the version-1
 * numbers a version-1 caller must keep. */
#include "pipesched.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* h 64, ffn 256 (= 4h), 4 heads, 4 KV heads, 2 layers, V 100, s 128,
 * b 1, t 1, 2-byte dtype. */
static psched_transformer tiny(uint32_t version)
{
    psched_transformer c = PSCHED_TRANSFORMER_INIT;
    c.version = version;
    c.hidden = 64;
    c.ffn = 256;
    c.heads = 4;
    c.kv_heads = 4;
    c.layers = 2;
    c.vocab = 100;
    c.sequence = 128;
    c.microbatch = 1;
    c.tensor_parallel = 1;
    c.dtype_bytes = 2;
    return c;
}

struct layer {
    double f, act, param;
    psched_status sel;
    double act_sel, extra_sel, act_full, extra_full;
};

static struct layer layer_of(const psched_transformer *c)
{
    struct layer l = {0};
    psched_model *m = NULL;
    CHECK_OK(psched_model_transformer(c, &m));
    if (!m)
        return l;
    const char *type;
    uint32_t count;
    double b, w;
    CHECK_OK(psched_model_group(m, 1, &type, &count, &l.f, &b, &w, &l.act, &l.param));
    CHECK_STR(type, "layer");
    CHECK_EQ_INT(count, 2);
    l.sel = psched_model_group_recompute(m, 1, PSCHED_RECOMPUTE_SELECTIVE, &l.act_sel,
                                         &l.extra_sel);
    CHECK_OK(psched_model_group_recompute(m, 1, PSCHED_RECOMPUTE_FULL, &l.act_full,
                                          &l.extra_full));
    psched_model_destroy(m);
    return l;
}

/* Version 1: s·b·h·34 + 5·a·s²·b = 128·64·34 + 5·4·128² = 278528 + 327680
 * bytes; FLOPs 2·128·(4·64² + 3·64·256) + 4·128²·64 = 16777216 + 4194304.
 * A version-1 struct ends before flash_attention: whatever follows it in
 * memory is never read. */
static void test_version_1_keeps_the_score_term_and_full_core(void)
{
    psched_transformer c = tiny(1);
    c.flash_attention = 7; /* past a version-1 struct's end: ignored */
    c.head_dim = 999;
    c.causal = 9;
    struct layer l = layer_of(&c);
    CHECK_EQ_DBL(l.act, 606208);
    CHECK_EQ_DBL(l.f, 20971520 / 1e12);
    CHECK_EQ_INT(l.sel, PSCHED_OK);
    CHECK_EQ_DBL(l.act_sel, 278528);
    CHECK_EQ_DBL(l.extra_sel, 4194304 / 1e12);
    CHECK_EQ_DBL(l.act_full, 2 * 128 * 64);
    CHECK_EQ_DBL(l.param, (4 * 64 * 64 + 3 * 64 * 256 + 2 * 64) * 16.0);
}

/* Version 2 defaults (PSCHED_TRANSFORMER_INIT): FlashAttention drops the
 * 5·a·s²·b term (34·s·b·h = 278528 bytes remain, so no selective
 * variant), and the causal mask halves the 4·b·s²·h core: 16777216 +
 * 2097152 FLOPs. */
static void test_flash_and_causal_defaults(void)
{
    psched_transformer c = tiny(PSCHED_TRANSFORMER_VERSION);
    CHECK_EQ_INT(c.flash_attention, 1);
    CHECK_EQ_INT(c.causal, 1);
    CHECK_EQ_INT(c.head_dim, 0);
    struct layer l = layer_of(&c);
    CHECK_EQ_DBL(l.act, 278528);
    CHECK_EQ_DBL(l.f, 18874368 / 1e12);
    CHECK_EQ_INT(l.sel, PSCHED_ENOTFOUND);
    CHECK_EQ_DBL(l.act_full, 2 * 128 * 64);
    CHECK_EQ_DBL(l.extra_full, 18874368 / 1e12);
}

/* Materialized scores under a causal mask: the score term stays (606208),
 * selective recompute recomputes the halved core 2·b·s²·h = 2097152. */
static void test_causal_without_flash(void)
{
    psched_transformer c = tiny(PSCHED_TRANSFORMER_VERSION);
    c.flash_attention = 0;
    struct layer l = layer_of(&c);
    CHECK_EQ_DBL(l.act, 606208);
    CHECK_EQ_INT(l.sel, PSCHED_OK);
    CHECK_EQ_DBL(l.act_sel, 278528);
    CHECK_EQ_DBL(l.extra_sel, 2097152 / 1e12);
}

/* head_dim 32 with 4 heads: query width q = 128 = 2h. Weights 2·h·q +
 * 2·h·q·g/a = 32768 (attention) + 49152 (MLP) + 128 (norms); FLOPs
 * 2·128·(32768 + 49152) + 4·128²·128 = 20971520 + 8388608 (no mask);
 * activations (7·h + 8·q)·s·b = 188416, MLP 19·s·b·h = 155648, scores
 * 5·a·s²·b = 327680. */
static void test_head_dim_differs_from_hidden_over_heads(void)
{
    psched_transformer c = tiny(PSCHED_TRANSFORMER_VERSION);
    c.flash_attention = 0;
    c.causal = 0;
    c.head_dim = 32;
    struct layer l = layer_of(&c);
    CHECK_EQ_DBL(l.param, 82048 * 16.0);
    CHECK_EQ_DBL(l.f, 29360128 / 1e12);
    CHECK_EQ_DBL(l.act, 188416 + 155648 + 327680);
    CHECK_EQ_DBL(l.act_sel, 188416 + 155648);
    CHECK_EQ_DBL(l.extra_sel, 8388608 / 1e12);
    /* head_dim = hidden/heads spelled out is the default. */
    c.head_dim = 16;
    struct layer d = layer_of(&c);
    c.head_dim = 0;
    struct layer z = layer_of(&c);
    CHECK_EQ_DBL(d.f, z.f);
    CHECK_EQ_DBL(d.act, z.act);
    CHECK_EQ_DBL(d.param, z.param);
}

static void test_bad_fields_are_named(void)
{
    psched_model *m = NULL;
    psched_transformer c = tiny(PSCHED_TRANSFORMER_VERSION);
    c.flash_attention = 2;
    CHECK_EQ_INT(psched_model_transformer(&c, &m), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "flash_attention (2) must be 0 or 1");
    c = tiny(PSCHED_TRANSFORMER_VERSION);
    c.causal = 3;
    CHECK_EQ_INT(psched_model_transformer(&c, &m), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "causal (3) must be 0 or 1");
    c = tiny(PSCHED_TRANSFORMER_VERSION + 1);
    CHECK_EQ_INT(psched_model_transformer(&c, &m), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "version (3) must be 1..2");
    CHECK(m == NULL);
}

int main(void)
{
    RUN(test_version_1_keeps_the_score_term_and_full_core);
    RUN(test_flash_and_causal_defaults);
    RUN(test_causal_without_flash);
    RUN(test_head_dim_differs_from_hidden_over_heads);
    RUN(test_bad_fields_are_named);
    TEST_MAIN_END();
}
