/* The model the optimizer partitions: an ordered list of layer groups,
 * built through the API, read from a CSV layer profile, or derived from
 * transformer hyper-parameters. */
#include "model.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

psched_status psched_model_create(psched_model **out)
{
    if (!out)
        return psched_fail(PSCHED_EINVAL, "model output pointer is NULL");
    psched_model *m = psched__calloc(1, sizeof *m);
    if (!m)
        return PSCHED_ENOMEM_FAIL();
    *out = m;
    return PSCHED_OK;
}

void psched_model_destroy(psched_model *model)
{
    if (!model)
        return;
    psched__dealloc(model->groups);
    psched__dealloc(model);
}

static psched_status check_value(const char *what, double x)
{
    if (!isfinite(x) || x < 0)
        return psched_fail(PSCHED_EINVAL, "%s (%g) must be finite and >= 0", what, x);
    return PSCHED_OK;
}

static psched_status check_type_name(const char *type)
{
    if (!type)
        return psched_fail(PSCHED_EINVAL, "layer type name is NULL");
    size_t n = strlen(type);
    if (n == 0 || n > 31)
        return psched_fail(PSCHED_EINVAL, "layer type name \"%s\" must have 1..31 characters",
                           type);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)type[i];
        if (c <= ' ' || c >= 127 || c == ',' || c == '"')
            return psched_fail(PSCHED_EINVAL,
                               "layer type name \"%s\" has character %zu outside printable "
                               "ASCII without space, comma or quote",
                               type, i + 1);
    }
    return PSCHED_OK;
}

psched_status psched_model_add_layers(psched_model *model, const char *type, uint32_t count,
                                      double f, double b, double w, double act_bytes,
                                      double param_bytes)
{
    if (!model)
        return psched_fail(PSCHED_EINVAL, "model is NULL");
    psched_status st = check_type_name(type);
    if (st)
        return st;
    if (count == 0)
        return psched_fail(PSCHED_EINVAL, "layer count of group \"%s\" must be >= 1", type);
    if (model->layer_count > UINT32_MAX - count)
        return psched_fail(PSCHED_EINVAL, "layer count (%u + %u) exceeds %u",
                           model->layer_count, count, UINT32_MAX);
    if ((st = check_value("forward time", f)) || (st = check_value("backward time", b)) ||
        (st = check_value("weight backward time", w)) ||
        (st = check_value("activation bytes", act_bytes)) ||
        (st = check_value("parameter bytes", param_bytes)))
        return st;
    psched__group *g = psched__reallocarray(model->groups, model->group_count + 1, sizeof *g);
    if (!g)
        return PSCHED_ENOMEM_FAIL();
    model->groups = g;
    g = &model->groups[model->group_count];
    memset(g, 0, sizeof *g);
    memcpy(g->type, type, strlen(type) + 1);
    g->count = count;
    g->f = f;
    g->b = b;
    g->w = w;
    g->param = param_bytes;
    g->variant[PSCHED_RECOMPUTE_NONE] = (psched__variant){act_bytes, 0, true};
    model->group_count++;
    model->layer_count += count;
    return PSCHED_OK;
}

psched_status psched_model_set_recompute(psched_model *model, uint32_t group,
                                         psched_recompute kind, double act_bytes,
                                         double extra_time)
{
    if (!model)
        return psched_fail(PSCHED_EINVAL, "model is NULL");
    if (group >= model->group_count)
        return psched_fail(PSCHED_EINVAL, "group (%u) must be < group count (%u)", group,
                           model->group_count);
    if (kind != PSCHED_RECOMPUTE_SELECTIVE && kind != PSCHED_RECOMPUTE_FULL)
        return psched_fail(PSCHED_EINVAL,
                           "recompute kind (%d) must be selective (1) or full (2)", (int)kind);
    psched_status st;
    if ((st = check_value("recompute activation bytes", act_bytes)) ||
        (st = check_value("recompute extra time", extra_time)))
        return st;
    model->groups[group].variant[kind] = (psched__variant){act_bytes, extra_time, true};
    return PSCHED_OK;
}

uint32_t psched_model_groups(const psched_model *model)
{
    return model ? model->group_count : 0;
}

uint32_t psched_model_layers(const psched_model *model)
{
    return model ? model->layer_count : 0;
}

psched_status psched_model_group(const psched_model *model, uint32_t group, const char **type,
                                 uint32_t *count, double *f, double *b, double *w,
                                 double *act_bytes, double *param_bytes)
{
    if (!model || group >= psched_model_groups(model))
        return psched_fail(PSCHED_EINVAL, "group (%u) must be < group count (%u)", group,
                           psched_model_groups(model));
    const psched__group *g = &model->groups[group];
    if (type)
        *type = g->type;
    if (count)
        *count = g->count;
    if (f)
        *f = g->f;
    if (b)
        *b = g->b;
    if (w)
        *w = g->w;
    if (act_bytes)
        *act_bytes = g->variant[PSCHED_RECOMPUTE_NONE].act;
    if (param_bytes)
        *param_bytes = g->param;
    return PSCHED_OK;
}

psched_status psched_model_group_recompute(const psched_model *model, uint32_t group,
                                           psched_recompute kind, double *act_bytes,
                                           double *extra_time)
{
    if (!model || group >= psched_model_groups(model))
        return psched_fail(PSCHED_EINVAL, "group (%u) must be < group count (%u)", group,
                           psched_model_groups(model));
    if ((unsigned)kind >= PSCHED__RECOMPUTE_KINDS)
        return psched_fail(PSCHED_EINVAL, "recompute kind (%d) must be 0, 1 or 2", (int)kind);
    const psched__variant *v = &model->groups[group].variant[kind];
    if (!v->present)
        return psched_fail(PSCHED_ENOTFOUND, "group %u (%s) has no recompute variant %d", group,
                           model->groups[group].type, (int)kind);
    if (act_bytes)
        *act_bytes = v->act;
    if (extra_time)
        *extra_time = v->extra;
    return PSCHED_OK;
}

/* ---- CSV layer profiles ---- */

#define CSV_MAX_CELLS 11

typedef struct csv_cell {
    const char *text;
    size_t len;
    size_t column; /* 1-based column of the cell's first character */
} csv_cell;

/* Split one line (without its end) at commas, trimming blanks. Returns the
 * number of cells, or CSV_MAX_CELLS + 1 when there are more. */
static size_t split_cells(const char *line, size_t len, csv_cell *cells)
{
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && line[i] != ',')
            continue;
        if (n == CSV_MAX_CELLS)
            return CSV_MAX_CELLS + 1;
        size_t a = start, b = i;
        while (a < b && (line[a] == ' ' || line[a] == '\t'))
            a++;
        while (b > a && (line[b - 1] == ' ' || line[b - 1] == '\t'))
            b--;
        cells[n++] = (csv_cell){line + a, b - a, a + 1};
        start = i + 1;
    }
    return n;
}

static psched_status parse_number(const csv_cell *c, size_t line, const char *what, double *out)
{
    char buf[64];
    if (c->len == 0 || c->len >= sizeof buf)
        return psched_fail(PSCHED_EPARSE, "line %zu, column %zu: %s must be a number, got \"%.*s\"",
                           line, c->column, what, (int)(c->len < 40 ? c->len : 40), c->text);
    memcpy(buf, c->text, c->len);
    buf[c->len] = '\0';
    char *end;
    errno = 0;
    double x = strtod(buf, &end);
    /* strtod sets ERANGE on underflow too: 1e-320 is a fine (subnormal or
     * zero) value >= 0; only overflow is out of range. */
    if (*end == '\0' && errno == ERANGE && fabs(x) > 1.0)
        return psched_fail(PSCHED_EPARSE,
                           "line %zu, column %zu: %s \"%s\" is beyond the largest double (%g)",
                           line, c->column, what, buf, DBL_MAX);
    if (*end != '\0' || !isfinite(x) || x < 0)
        return psched_fail(PSCHED_EPARSE,
                           "line %zu, column %zu: %s must be a finite number >= 0, got \"%s\"",
                           line, c->column, what, buf);
    *out = x;
    return PSCHED_OK;
}

static psched_status parse_count(const csv_cell *c, size_t line, uint32_t *out)
{
    uint64_t v = 0;
    if (c->len == 0 || c->len > 10)
        return psched_fail(PSCHED_EPARSE, "line %zu, column %zu: count must be 1..%u, got \"%.*s\"",
                           line, c->column, UINT32_MAX, (int)(c->len < 40 ? c->len : 40), c->text);
    for (size_t i = 0; i < c->len; i++) {
        if (c->text[i] < '0' || c->text[i] > '9')
            return psched_fail(PSCHED_EPARSE,
                               "line %zu, column %zu: count must be a whole number, got \"%.*s\"",
                               line, c->column + i, (int)c->len, c->text);
        v = v * 10 + (uint64_t)(c->text[i] - '0');
    }
    if (v == 0 || v > UINT32_MAX)
        return psched_fail(PSCHED_EPARSE, "line %zu, column %zu: count must be 1..%u, got %.*s",
                           line, c->column, UINT32_MAX, (int)c->len, c->text);
    *out = (uint32_t)v;
    return PSCHED_OK;
}

/* An optional (act, extra) pair in cells [k, k+1]: both empty means absent. */
static psched_status parse_variant(psched_model *m, const csv_cell *cells, size_t k, size_t line,
                                   psched_recompute kind)
{
    if (cells[k].len == 0 && cells[k + 1].len == 0)
        return PSCHED_OK;
    const char *name = kind == PSCHED_RECOMPUTE_SELECTIVE ? "selective" : "full";
    char what_act[32], what_extra[32];
    snprintf(what_act, sizeof what_act, "act_%s", name);
    snprintf(what_extra, sizeof what_extra, "extra_%s", name);
    double act = 0, extra = 0;
    psched_status st;
    if ((st = parse_number(&cells[k], line, what_act, &act)) ||
        (st = parse_number(&cells[k + 1], line, what_extra, &extra)))
        return st;
    return psched_model_set_recompute(m, m->group_count - 1, kind, act, extra);
}

static psched_status parse_row(psched_model *m, const csv_cell *cells, size_t n, size_t line)
{
    static const char *const names[] = {"f", "b", "w", "act", "param"};
    char type[32];
    if (cells[0].len == 0 || cells[0].len > 31)
        return psched_fail(PSCHED_EPARSE, "line %zu, column %zu: type must have 1..31 characters",
                           line, cells[0].column);
    memcpy(type, cells[0].text, cells[0].len);
    type[cells[0].len] = '\0';
    if (check_type_name(type)) {
        char why[512]; /* psched_fail writes the buffer psched_last_error() returns */
        snprintf(why, sizeof why, "%s", psched_last_error());
        return psched_fail(PSCHED_EPARSE, "line %zu, column %zu: %s", line, cells[0].column, why);
    }
    uint32_t count = 0;
    double v[5] = {0};
    psched_status st = parse_count(&cells[1], line, &count);
    for (size_t i = 0; !st && i < 5; i++)
        st = parse_number(&cells[2 + i], line, names[i], &v[i]);
    if (st)
        return st;
    if (m->layer_count > UINT32_MAX - count)
        return psched_fail(PSCHED_EPARSE, "line %zu, column %zu: total layer count exceeds %u",
                           line, cells[1].column, UINT32_MAX);
    if ((st = psched_model_add_layers(m, type, count, v[0], v[1], v[2], v[3], v[4])))
        return st;
    if (n >= 9 && (st = parse_variant(m, cells, 7, line, PSCHED_RECOMPUTE_SELECTIVE)))
        return st;
    if (n == 11 && (st = parse_variant(m, cells, 9, line, PSCHED_RECOMPUTE_FULL)))
        return st;
    return PSCHED_OK;
}

static bool blank_line(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t')
            return false;
    return true;
}

static psched_status load_lines(psched_model *m, const char *text, size_t length)
{
    size_t pos = 0, line = 0, header_cells = 0;
    csv_cell cells[CSV_MAX_CELLS];
    while (pos < length) {
        size_t end = pos;
        while (end < length && text[end] != '\n')
            end++;
        size_t len = end - pos;
        if (len > 0 && text[pos + len - 1] == '\r')
            len--;
        line++;
        const char *s = text + pos;
        pos = end + 1;
        const char *nul = memchr(s, '\0', len);
        if (nul)
            return psched_fail(PSCHED_EPARSE, "line %zu, column %zu: NUL byte in the input", line,
                               (size_t)(nul - s) + 1);
        if (blank_line(s, len) || s[0] == '#')
            continue;
        size_t n = split_cells(s, len, cells);
        if (n != 7 && n != 9 && n != 11)
            return psched_fail(PSCHED_EPARSE,
                               "line %zu, column 1: %s has %s%zu cells, expected 7, 9 or 11 "
                               "(type,count,f,b,w,act,param[,act_selective,extra_selective]"
                               "[,act_full,extra_full])",
                               line, header_cells ? "row" : "header row",
                               n > CSV_MAX_CELLS ? "more than " : "",
                               n > CSV_MAX_CELLS ? (size_t)CSV_MAX_CELLS : n);
        if (!header_cells) {
            header_cells = n;
            continue;
        }
        if (n != header_cells)
            return psched_fail(PSCHED_EPARSE, "line %zu, column 1: row has %zu cells, the header %zu",
                               line, n, header_cells);
        psched_status st = parse_row(m, cells, n, line);
        if (st)
            return st;
    }
    if (!header_cells)
        return psched_fail(PSCHED_EPARSE, "line %zu, column 1: no header row", line + 1);
    if (m->layer_count == 0)
        return psched_fail(PSCHED_EPARSE, "line %zu, column 1: the profile has no layer", line + 1);
    return PSCHED_OK;
}

psched_status psched_model_load_csv(const char *text, size_t length, psched_model **out)
{
    if (!out || (!text && length))
        return psched_fail(PSCHED_EINVAL, "model CSV text or output pointer is NULL");
    psched_model *m;
    psched_status st = psched_model_create(&m);
    if (st)
        return st;
    st = load_lines(m, text ? text : "", length);
    if (st) {
        psched_model_destroy(m);
        return st;
    }
    *out = m;
    return PSCHED_OK;
}

/* ---- transformer hyper-parameters ---- */

static psched_status check_transformer(const psched_transformer *c)
{
    const struct {
        const char *name;
        uint32_t value;
    } f[] = {{"hidden", c->hidden},       {"ffn", c->ffn},
             {"heads", c->heads},         {"kv_heads", c->kv_heads},
             {"layers", c->layers},       {"vocab", c->vocab},
             {"sequence", c->sequence},   {"microbatch", c->microbatch},
             {"tensor_parallel", c->tensor_parallel}, {"dtype_bytes", c->dtype_bytes}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].value == 0)
            return psched_fail(PSCHED_EINVAL, "transformer %s must be >= 1", f[i].name);
    if (c->kv_heads > c->heads)
        return psched_fail(PSCHED_EINVAL, "transformer kv_heads (%u) must be <= heads (%u)",
                           c->kv_heads, c->heads);
    if (c->experts > 1 && (c->top_k == 0 || c->top_k > c->experts))
        return psched_fail(PSCHED_EINVAL, "transformer top_k (%u) must be 1..experts (%u)",
                           c->top_k, c->experts);
    if (c->flash_attention > 1)
        return psched_fail(PSCHED_EINVAL, "transformer flash_attention (%u) must be 0 or 1",
                           c->flash_attention);
    if (c->causal > 1)
        return psched_fail(PSCHED_EINVAL, "transformer causal (%u) must be 0 or 1", c->causal);
    return PSCHED_OK;
}

/* A version-1 caller's struct ends before `flash_attention`: copy only
 * its prefix and give the appended fields the version-1 meaning
 * (materialized scores, head_dim = hidden/heads, no causal halving), so
 * its numbers never change. */
static psched_status read_transformer(const psched_transformer *in, psched_transformer *c)
{
    if (!in)
        return psched_fail(PSCHED_EINVAL, "transformer configuration is NULL");
    if (in->version == 0 || in->version > PSCHED_TRANSFORMER_VERSION)
        return psched_fail(PSCHED_EINVAL, "transformer configuration version (%u) must be 1..%u",
                           in->version, PSCHED_TRANSFORMER_VERSION);
    memset(c, 0, sizeof *c);
    memcpy(c, in, in->version == 1 ? offsetof(psched_transformer, flash_attention) : sizeof *c);
    return check_transformer(c);
}

/* One transformer layer; see docs/optimizer.md for the formulas and their
 * sources. All figures are per device (divided by the tensor-parallel
 * size t, with sequence parallelism for the activations). */
static psched_status add_transformer_layers(psched_model *m, const psched_transformer *c,
                                            const char *type, uint32_t count, bool moe)
{
    double h = c->hidden, ffn = c->ffn, a = c->heads, kv = c->kv_heads, s = c->sequence;
    double b = c->microbatch, t = c->tensor_parallel, d = c->dtype_bytes;
    double experts = moe ? c->experts : 1, k = moe ? c->top_k : 1;
    double tokens = b * s;
    /* Query width a·head_dim (h unless head_dim says otherwise, as in
     * Gemma2-9B: 16 heads of 256 on a 3584 hidden size). */
    double q = c->head_dim ? a * c->head_dim : h;
    /* Weights: Q and O (h·q each), K and V (h·q·kv/a each), a gated MLP
     * (three h·ffn matrices) per expert, the router, two norms. */
    double attn_w = 2 * h * q + 2 * h * q * kv / a;
    double mlp_w = 3 * h * ffn;
    double params = attn_w + experts * mlp_w + (moe ? h * experts : 0) + 2 * h;
    /* Forward FLOPs: 2 per multiply-add over the weights a token visits,
     * plus the attention scores and their product with V (2·s·q each);
     * under a causal mask only the lower triangle is computed, so that
     * core is halved (Megatron-LM's count). */
    double core = 4 * tokens * s * q * (c->causal ? 0.5 : 1);
    double flops = 2 * tokens * (attn_w + k * mlp_w + (moe ? h * experts : 0)) + core;
    double fwd = flops / t / 1e12;
    /* Activations (Korthikanti et al. 2022, §4.1, 16-bit): 34·s·b·h +
     * 5·a·s²·b bytes, of which the MLP's 19·s·b·h scale with ffn/(4h) and
     * the routed experts k, and the attention's Q, K, V and context
     * (8·s·b·h) with q/h; selective recompute drops the 5·a·s²·b
     * attention-core term; full recompute keeps the layer input.
     * FlashAttention never stores the scores: no 5·a·s²·b term, and so
     * no selective variant (it would save nothing). */
    double scale = d / 2;
    double attn_act = (7 * h + 8 * q) * tokens, mlp_act = 19 * tokens * h * (ffn / (4 * h)) * k;
    double core_act = c->flash_attention ? 0 : 5 * a * s * s * b;
    double act = (attn_act + mlp_act + core_act) * scale / t;
    double act_sel = (attn_act + mlp_act) * scale / t;
    double act_full = 2 * tokens * h * scale / t;
    /* Adam with mixed precision: weights and gradients in dtype, fp32
     * master weights and two moments (16 bytes per parameter for bf16). */
    double param_bytes = params * (2 * d + 12) / t;
    psched_status st = psched_model_add_layers(m, type, count, fwd, fwd, fwd, act, param_bytes);
    uint32_t g = m->group_count - 1;
    if (!st && !c->flash_attention)
        st = psched_model_set_recompute(m, g, PSCHED_RECOMPUTE_SELECTIVE, act_sel,
                                        core / t / 1e12);
    if (!st)
        st = psched_model_set_recompute(m, g, PSCHED_RECOMPUTE_FULL, act_full, fwd);
    return st;
}

/* Embedding: a lookup (no FLOPs worth counting), V·h weights, keeps its
 * output. Head: final norm, the V·h output projection and the
 * cross-entropy over fp32 logits. */
static psched_status add_embedding_and_head(psched_model *m, const psched_transformer *c,
                                            bool head)
{
    double h = c->hidden, v = c->vocab, tokens = (double)c->microbatch * c->sequence;
    double t = c->tensor_parallel, d = c->dtype_bytes;
    double param_bytes = v * h * (2 * d + 12) / t;
    if (!head)
        return psched_model_add_layers(m, "embedding", 1, 0, 0, 0, tokens * h * d / t,
                                       param_bytes);
    double fwd = 2 * tokens * h * v / t / 1e12;
    double act = (tokens * h * d + tokens * v * 4) / t;
    return psched_model_add_layers(m, "head", 1, fwd, fwd, fwd, act, param_bytes + h * 4);
}

psched_status psched_model_transformer(const psched_transformer *in, psched_model **out)
{
    psched_transformer copy;
    const psched_transformer *config = &copy;
    psched_status st = read_transformer(in, &copy);
    if (st)
        return st;
    if (!out)
        return psched_fail(PSCHED_EINVAL, "model output pointer is NULL");
    psched_model *m;
    if ((st = psched_model_create(&m)))
        return st;
    st = add_embedding_and_head(m, config, false);
    uint32_t every = config->moe_every ? config->moe_every : 1;
    if (config->experts <= 1) {
        if (!st)
            st = add_transformer_layers(m, config, "layer", config->layers, false);
    } else {
        /* Layers 1..L: every `every`-th one is MoE, grouped in runs. */
        for (uint32_t l = 1; !st && l <= config->layers;) {
            bool moe = l % every == 0;
            uint32_t run = 1;
            while (l + run <= config->layers && (((l + run) % every == 0) == moe))
                run++;
            st = add_transformer_layers(m, config, moe ? "moe" : "dense", run, moe);
            l += run;
        }
    }
    if (!st)
        st = add_embedding_and_head(m, config, true);
    if (st) {
        psched_model_destroy(m);
        return st;
    }
    *out = m;
    return PSCHED_OK;
}
