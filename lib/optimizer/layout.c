/* Given partitions: evaluating a partition the caller names (per stage a
 * layer count, per layer a recompute choice) and reading Megatron-LM's
 * `--pipeline-model-parallel-layout` grammar and recompute options into
 * one. docs/optimizer.md, "Handing a plan to Megatron-LM and torchtitan".
 *
 * Megatron-LM's grammar (megatron/core/transformer/pipeline_parallel_layer_
 * layout.py, parse_str_to_list): commas are cosmetic; `(...)*n` repeats a
 * group (one level, never empty); `x*n` repeats one character, `|`
 * included; `|` separates virtual stages, listed in model order (stage k
 * runs on pipeline rank k mod p as virtual stage k div p); letters E
 * (embedding), t (transformer layer), m (MTP layer), L (loss). */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Expanded layouts longer than this are refused: a model has at most
 * PSCHED__PARTITION_MAX_LAYERS layers and each stage adds one '|'. */
#define LAYOUT_MAX_ELEMENTS ((size_t)4 * PSCHED__PARTITION_MAX_LAYERS)

static bool is_letter(char c)
{
    return c == 'E' || c == 't' || c == 'm' || c == 'L';
}

static const char *class_word(char c)
{
    switch (c) {
    case 'E': return "embedding";
    case 'L': return "loss";
    case 'm': return "MTP";
    default: return "transformer";
    }
}

psched_status psched__layout_classes(const psched_model *model, const char *map, char *cls)
{
    for (uint32_t g = 0; g < model->group_count; g++) {
        const char *t = model->groups[g].type;
        if (strcmp(t, "embedding") == 0)
            cls[g] = 'E';
        else if (strcmp(t, "head") == 0 || strcmp(t, "loss") == 0 || strcmp(t, "output") == 0)
            cls[g] = 'L';
        else if (strcmp(t, "mtp") == 0)
            cls[g] = 'm';
        else
            cls[g] = 't';
    }
    if (!map)
        return PSCHED_OK;
    /* "c=GROUP[,c=GROUP...]": each entry names a group of the model. */
    const char *p = map;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n < 3 || p[1] != '=' || !is_letter(p[0]))
            return psched_fail(PSCHED_EINVAL,
                               "layout map entry '%.*s' must be LETTER=GROUP with LETTER one of "
                               "E, t, m, L",
                               (int)n, p);
        bool found = false;
        for (uint32_t g = 0; g < model->group_count; g++) {
            const char *t = model->groups[g].type;
            if (strlen(t) == n - 2 && memcmp(t, p + 2, n - 2) == 0) {
                cls[g] = p[0];
                found = true;
            }
        }
        if (!found)
            return psched_fail(PSCHED_EINVAL, "layout map entry '%.*s': the model has no layer "
                                              "group named '%.*s'",
                               (int)n, p, (int)(n - 2), p + 2);
        p += n;
        if (*p == ',')
            p++;
    }
    return PSCHED_OK;
}

/* ---- recompute settings ---- */

psched_status psched__rc_choices(const psched_model *model, const char *cls,
                                 const uint32_t *first, const uint32_t *count, uint32_t stages,
                                 psched__rc_setting set, uint8_t *choice)
{
    uint32_t g = 0, left = model->layer_count ? model->groups[0].count : 0;
    memset(choice, 0, model->layer_count);
    for (uint32_t s = 0; s < stages; s++) {
        uint32_t done = 0; /* transformer layers of this stage so far */
        for (uint32_t l = first[s]; l < first[s] + count[s]; l++) {
            while (left == 0) /* group of layer l (layers come in stage order) */
                left = model->groups[++g].count;
            left--;
            const psched__group *gr = &model->groups[g];
            if (cls[g] != 't')
                continue;
            uint8_t want = PSCHED_RECOMPUTE_NONE;
            if (set.kind == PSCHED__RC_SELECTIVE && gr->variant[PSCHED_RECOMPUTE_SELECTIVE].present)
                want = PSCHED_RECOMPUTE_SELECTIVE;
            else if (set.kind == PSCHED__RC_FULL ||
                     (set.kind == PSCHED__RC_BLOCK && done < set.layers))
                want = PSCHED_RECOMPUTE_FULL;
            done++;
            if (want == PSCHED_RECOMPUTE_FULL && !gr->variant[want].present)
                return psched_fail(PSCHED_EINVAL,
                                   "full recomputation of layer %u: its group '%s' has no full "
                                   "recompute variant in the profile",
                                   l, gr->type);
            choice[l] = want;
        }
    }
    return PSCHED_OK;
}

/* ---- evaluating a given partition ---- */

static psched_status check_choices(const psched_model *model, const uint8_t *choice)
{
    uint32_t l = 0;
    for (uint32_t g = 0; g < model->group_count; g++) {
        const psched__group *gr = &model->groups[g];
        for (uint32_t k = 0; k < gr->count; k++, l++) {
            if (choice[l] > PSCHED_RECOMPUTE_FULL)
                return psched_fail(PSCHED_EINVAL, "recompute choice of layer %u (%u) must be "
                                                  "0 (none), 1 (selective) or 2 (full)",
                                   l, choice[l]);
            if (choice[l] && !gr->variant[choice[l]].present)
                return psched_fail(PSCHED_EINVAL,
                                   "layer %u (group '%s') has no %s recompute variant", l,
                                   gr->type, choice[l] == 1 ? "selective" : "full");
        }
    }
    return PSCHED_OK;
}

static psched_status fill_given(psched__problem *pb, const char *schedule,
                                const uint32_t *counts, const uint8_t *choice,
                                psched_plan **resolved, psched_partition_result **out)
{
    psched__solution sol = {0};
    psched__evaluation ev = {0};
    psched_partition_result *r = psched__result_alloc(pb);
    psched_status st = r ? psched__solution_init(&sol, pb->stages, pb->layers)
                         : PSCHED_ENOMEM_FAIL();
    if (!st)
        st = psched__evaluation_init(pb, &ev);
    if (!st) {
        uint32_t at = 0;
        for (uint32_t s = 0; s < pb->stages; s++) {
            sol.first[s] = at;
            sol.count[s] = counts[s];
            at += counts[s];
        }
        memcpy(sol.choice, choice, pb->layers);
        sol.found = true;
        st = psched__result_fill(pb, &sol, schedule, resolved, &ev, r);
    }
    if (!st)
        r->status = psched__fits(pb, ev.max_mem) ? PSCHED_SOLVE_FEASIBLE
                                                 : PSCHED_SOLVE_INFEASIBLE;
    psched__evaluation_free(&ev);
    psched__solution_free(&sol);
    if (st) {
        psched_partition_result_destroy(r);
        return st;
    }
    *out = r;
    return PSCHED_OK;
}

psched_status psched__evaluate_given(const psched_model *model, const psched_plan *plan,
                                     const char *schedule, const uint32_t *counts,
                                     uint32_t stages, const uint8_t *choice,
                                     psched_partition_result **out)
{
    if (out)
        *out = NULL;
    if (!model || !plan || !schedule || !counts || !out)
        return psched_fail(PSCHED_EINVAL,
                           "model, plan, schedule name, stage counts and output must be non-NULL");
    if (model->layer_count == 0)
        return psched_fail(PSCHED_EINVAL, "the model has no layer");
    if (model->layer_count > PSCHED__PARTITION_MAX_LAYERS)
        return psched_fail(PSCHED_EINVAL, "the model has %u layers; at most %u can be evaluated",
                           model->layer_count, PSCHED__PARTITION_MAX_LAYERS);
    double limit = psched_plan_memory_limit(plan);
    if (!(limit > 0))
        return psched_fail(PSCHED_EINVAL, "memory limit (%g) must be > 0", limit);
    double t0 = psched__now();
    psched_status st = choice ? check_choices(model, choice) : PSCHED_OK;
    if (st)
        return st;
    uint8_t *none = NULL;
    if (!choice && !(choice = none = psched__calloc(model->layer_count, 1)))
        return PSCHED_ENOMEM_FAIL();
    psched__problem pb = {0};
    psched_plan *resolved = NULL;
    pb.allow_empty = true;
    pb.deadline = INFINITY;
    pb.tau_max = INFINITY;
    pb.limit = limit;
    st = psched__probe_schedule(plan, schedule, &pb, &resolved);
    if (!st && pb.chains == 2 && stages == pb.plan_stages) {
        /* two chains over the same ranges (DualPipe): the ranges twice, as
         * its results list them (plan stage t holds range t mod S) */
        for (uint32_t t = pb.stages; !st && t < stages; t++)
            if (counts[t] != counts[t % pb.stages])
                st = psched_fail(PSCHED_EINVAL,
                                 "stage %u holds %u layers and stage %u %u; schedule %s's two "
                                 "chains hold the same ranges (stage t is range t mod %u)",
                                 t, counts[t], t % pb.stages, counts[t % pb.stages], schedule,
                                 pb.stages);
        stages = pb.stages; /* the ranges, once */
    }
    if (!st && stages != pb.stages)
        st = psched_fail(PSCHED_EINVAL,
                         pb.chains == 2 ? "%u stages given; schedule %s with p = %u, v = %u has %u "
                                          "ranges, each on two devices (give them once, or twice "
                                          "as its results list them)"
                                        : "%u stages given; schedule %s with p = %u, v = %u has "
                                          "%u stages",
                         stages, schedule, pb.plan_devices, pb.chunks, pb.stages);
    uint64_t total = 0;
    for (uint32_t s = 0; !st && s < stages; s++)
        total += counts[s];
    if (!st && total != model->layer_count)
        st = psched_fail(PSCHED_EINVAL, "the stages hold %llu layers in all; the model has %u",
                         (unsigned long long)total, model->layer_count);
    if (!st)
        st = psched__problem_layers(&pb, model);
    if (!st)
        st = psched__problem_check(&pb);
    psched_partition_result *r = NULL;
    if (!st)
        st = fill_given(&pb, schedule, counts, choice, &resolved, &r);
    psched_plan_destroy(resolved);
    psched__problem_free(&pb);
    psched__dealloc(none);
    if (st)
        return st;
    r->solve_time = psched__now() - t0;
    *out = r;
    return PSCHED_OK;
}

psched_status psched_partition_evaluate(const psched_model *model, const psched_plan *plan,
                                        const char *schedule, const uint32_t *counts,
                                        uint32_t stages, const psched_recompute *recompute,
                                        psched_partition_result **out)
{
    if (out)
        *out = NULL;
    if (!model)
        return psched_fail(PSCHED_EINVAL, "model must be non-NULL");
    uint8_t *choice = NULL;
    if (recompute) {
        if (!(choice = psched__calloc(model->layer_count ? model->layer_count : 1, 1)))
            return PSCHED_ENOMEM_FAIL();
        for (uint32_t l = 0; l < model->layer_count; l++) {
            if ((unsigned)recompute[l] > PSCHED_RECOMPUTE_FULL) {
                psched__dealloc(choice);
                return psched_fail(PSCHED_EINVAL, "recompute choice of layer %u (%d) must be "
                                                  "0 (none), 1 (selective) or 2 (full)",
                                   l, (int)recompute[l]);
            }
            choice[l] = (uint8_t)recompute[l];
        }
    }
    psched_status st = psched__evaluate_given(model, plan, schedule, counts, stages, choice, out);
    psched__dealloc(choice);
    return st;
}

/* ---- Megatron-LM's layout grammar ---- */

typedef struct element {
    char c;       /* E t m L or '|' */
    uint32_t col; /* 1-based column in the text */
} element;

typedef struct elements {
    element *e;
    size_t n, cap;
} elements;

static psched_status push(elements *es, char c, uint32_t col)
{
    if (es->n == LAYOUT_MAX_ELEMENTS)
        return psched_fail(PSCHED_EINVAL, "layout expands to more than %zu elements",
                           LAYOUT_MAX_ELEMENTS);
    if (es->n == es->cap) {
        size_t cap = es->cap ? 2 * es->cap : 64;
        element *e = psched__realloc(es->e, cap * sizeof *e);
        if (!e)
            return PSCHED_ENOMEM_FAIL();
        es->e = e;
        es->cap = cap;
    }
    es->e[es->n++] = (element){c, col};
    return PSCHED_OK;
}

/* Append the elements [from, es->n) again `times - 1` times (so they occur
 * `times` times; 0 removes them). */
static psched_status repeat(elements *es, size_t from, uint64_t times)
{
    size_t len = es->n - from;
    if (times == 0) {
        es->n = from;
        return PSCHED_OK;
    }
    if (len && times - 1 > (LAYOUT_MAX_ELEMENTS - es->n) / len)
        return psched_fail(PSCHED_EINVAL, "layout expands to more than %zu elements",
                           LAYOUT_MAX_ELEMENTS);
    for (uint64_t k = 1; k < times; k++)
        for (size_t i = 0; i < len; i++) {
            psched_status st = push(es, es->e[from + i].c, es->e[from + i].col);
            if (st)
                return st;
        }
    return PSCHED_OK;
}

/* At s[i] == '*': read the count; *i is left after its digits. */
static psched_status read_count(const char *s, const uint32_t *col, size_t *i, uint64_t *n)
{
    size_t at = *i, j = at + 1;
    if (s[j] < '0' || s[j] > '9')
        return psched_fail(PSCHED_EINVAL, "layout: '*' at column %u must be followed by a "
                                          "repeat count",
                           col[at]);
    uint64_t v = 0;
    for (; s[j] >= '0' && s[j] <= '9'; j++) {
        v = v * 10 + (uint64_t)(s[j] - '0');
        if (v > LAYOUT_MAX_ELEMENTS)
            return psched_fail(PSCHED_EINVAL, "layout: repeat count at column %u exceeds %zu",
                               col[at + 1], LAYOUT_MAX_ELEMENTS);
    }
    *n = v;
    *i = j;
    return PSCHED_OK;
}

static psched_status bad_char(char c, uint32_t col)
{
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
        return psched_fail(PSCHED_EINVAL, "layout: byte 0x%02x at column %u is not a Megatron-LM "
                                          "layout element (E, t, m, L, '|', '(...)*n', 'x*n')",
                           (unsigned char)c, col);
    return psched_fail(PSCHED_EINVAL, "layout: '%c' at column %u is not a Megatron-LM layout "
                                      "element (E, t, m, L, '|', '(...)*n', 'x*n')",
                       c, col);
}

/* Expand the compacted text s (commas gone; col[i] the column of s[i]). */
static psched_status expand_compact(const char *s, const uint32_t *col, elements *es)
{
    size_t i = 0;
    size_t open = SIZE_MAX;  /* index of the open '(' */
    size_t group_from = 0;   /* first element of the open group */
    bool can_repeat = false; /* '*n' may follow */
    size_t last_from = 0;    /* first element of what '*n' would repeat */
    psched_status st = PSCHED_OK;
    while (s[i]) {
        char c = s[i];
        uint64_t n;
        if (c == '(') {
            if (open != SIZE_MAX)
                return psched_fail(PSCHED_EINVAL,
                                   "layout: '(' at column %u is inside the group opened at "
                                   "column %u; Megatron-LM's layout has one level of parentheses",
                                   col[i], col[open]);
            open = i++;
            group_from = es->n;
            can_repeat = false;
        } else if (c == ')') {
            if (open == SIZE_MAX)
                return psched_fail(PSCHED_EINVAL, "layout: ')' at column %u closes no '('",
                                   col[i]);
            if (i == open + 1)
                return psched_fail(PSCHED_EINVAL, "layout: empty parentheses at column %u",
                                   col[open]);
            if (s[i + 1] != '*')
                return psched_fail(PSCHED_EINVAL, "layout: ')' at column %u must be followed by "
                                                  "*n (a repeated group)",
                                   col[i]);
            i++;
            if ((st = read_count(s, col, &i, &n)) || (st = repeat(es, group_from, n)))
                return st;
            open = SIZE_MAX;
            if (s[i] == '*')
                return psched_fail(PSCHED_EINVAL, "layout: '*' at column %u repeats a repetition",
                                   col[i]);
            can_repeat = false;
        } else if (c == '*') {
            if (!can_repeat)
                return psched_fail(PSCHED_EINVAL, "layout: '*' at column %u repeats nothing",
                                   col[i]);
            if ((st = read_count(s, col, &i, &n)) || (st = repeat(es, last_from, n)))
                return st;
            if (s[i] == '*')
                return psched_fail(PSCHED_EINVAL, "layout: '*' at column %u repeats a repetition",
                                   col[i]);
            can_repeat = false;
        } else if (is_letter(c) || c == '|') {
            last_from = es->n;
            if ((st = push(es, c, col[i])))
                return st;
            can_repeat = true;
            i++;
        } else {
            return bad_char(c, col[i]);
        }
    }
    if (open != SIZE_MAX)
        return psched_fail(PSCHED_EINVAL, "layout: '(' at column %u is never closed", col[open]);
    return PSCHED_OK;
}

/* Expand the text into elements with their columns; commas are dropped
 * first, as Megatron-LM does. */
static psched_status expand(const char *text, elements *es)
{
    size_t len = strlen(text);
    if (len > LAYOUT_MAX_ELEMENTS)
        return psched_fail(PSCHED_EINVAL, "layout is %zu characters long; at most %zu", len,
                           LAYOUT_MAX_ELEMENTS);
    char *s = psched__malloc(len + 1);
    uint32_t *col = psched__calloc(len + 1, sizeof *col);
    psched_status st = PSCHED_OK;
    if (!s || !col) {
        st = PSCHED_ENOMEM_FAIL();
    } else {
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
            if (text[i] != ',') {
                s[n] = text[i];
                col[n++] = (uint32_t)(i + 1);
            }
        s[n] = '\0';
        col[n] = (uint32_t)(len + 1);
        st = expand_compact(s, col, es);
    }
    psched__dealloc(s);
    psched__dealloc(col);
    return st;
}

/* The model's layers as layout letters, and where the E and L markers
 * stand for nothing in the profile. */
psched_status psched__layer_classes(const psched_model *model, const char *cls, layer_classes *lc)
{
    uint32_t L = model->layer_count;
    lc->of_layer = psched__calloc(L ? L : 1, 1);
    lc->group_of = psched__calloc(L ? L : 1, sizeof *lc->group_of);
    if (!lc->of_layer || !lc->group_of)
        return PSCHED_ENOMEM_FAIL();
    uint32_t l = 0, ne = 0, nl = 0;
    for (uint32_t g = 0; g < model->group_count; g++)
        for (uint32_t k = 0; k < model->groups[g].count; k++, l++) {
            lc->of_layer[l] = cls[g];
            lc->group_of[l] = g;
            ne += cls[g] == 'E';
            nl += cls[g] == 'L';
        }
    for (l = 0; l < L; l++) {
        const char *type = model->groups[lc->group_of[l]].type;
        if (lc->of_layer[l] == 'E' && (l != 0 || ne != 1))
            return psched_fail(PSCHED_EINVAL,
                               "layer %u (group '%s') is an embedding (E), but Megatron-LM's "
                               "layout has exactly one E, the first layer",
                               l, type);
        if (lc->of_layer[l] == 'L' && (l != L - 1 || nl != 1))
            return psched_fail(PSCHED_EINVAL,
                               "layer %u (group '%s') is a loss layer (L), but Megatron-LM's "
                               "layout has exactly one L, the last layer",
                               l, type);
    }
    lc->e_marker = ne == 0;
    lc->l_marker = nl == 0;
    return PSCHED_OK;
}

void psched__layer_classes_free(layer_classes *lc)
{
    psched__dealloc(lc->of_layer);
    psched__dealloc(lc->group_of);
}

/* Match the elements to the model's layers: per stage a layer count. */
static psched_status match_layers(const psched_model *model, const elements *es,
                                  const layer_classes *lc, uint32_t *counts)
{
    uint32_t L = model->layer_count, layer = 0, s = 0;
    size_t first_letter = SIZE_MAX, last_letter = SIZE_MAX;
    for (size_t i = 0; i < es->n; i++)
        if (es->e[i].c != '|') {
            if (first_letter == SIZE_MAX)
                first_letter = i;
            last_letter = i;
        }
    if (first_letter == SIZE_MAX || es->e[first_letter].c != 'E')
        return psched_fail(PSCHED_EINVAL,
                           "layout: the first element must be E (the embedding), as Megatron-LM "
                           "requires%s",
                           first_letter == SIZE_MAX ? "; the layout has none" : "");
    if (es->e[last_letter].c != 'L')
        return psched_fail(PSCHED_EINVAL, "layout: the last element must be L (the loss), as "
                                          "Megatron-LM requires; column %u is '%c'",
                           es->e[last_letter].col, es->e[last_letter].c);
    /* Counts per letter first, so a mismatch is named as such. */
    static const char letters[] = "EtmL";
    for (int k = 0; k < 4; k++) {
        size_t in_layout = 0, in_model = 0, first_at = 0;
        for (size_t i = 0; i < es->n; i++)
            if (es->e[i].c == letters[k] && in_layout++ == 0)
                first_at = es->e[i].col;
        for (uint32_t l = 0; l < L; l++)
            in_model += lc->of_layer[l] == letters[k];
        if (letters[k] == 'E' || letters[k] == 'L') {
            if (in_layout != 1)
                return psched_fail(PSCHED_EINVAL, "layout: %zu '%c' elements; Megatron-LM's "
                                                  "layout has exactly one",
                                   in_layout, letters[k]);
            continue;
        }
        if (in_layout && !in_model)
            return psched_fail(PSCHED_EINVAL,
                               "layout: element '%c' at column %zu (%s layer) stands for no "
                               "layer group of the model; map it to the group it means "
                               "(%c=GROUP)",
                               letters[k], first_at, class_word(letters[k]), letters[k]);
        if (in_layout != in_model)
            return psched_fail(PSCHED_EINVAL,
                               "layout: %zu '%c' elements (%s layers); the model has %zu",
                               in_layout, letters[k], class_word(letters[k]), in_model);
    }
    for (size_t i = 0; i < es->n; i++) {
        char c = es->e[i].c;
        if (c == '|') {
            counts[++s] = 0;
            continue;
        }
        if ((c == 'E' && lc->e_marker) || (c == 'L' && lc->l_marker))
            continue;
        if (layer >= L || lc->of_layer[layer] != c)
            return psched_fail(PSCHED_EINVAL,
                               "layout: element '%c' at column %u falls on layer %u of the "
                               "model, a '%c' layer (group '%s')",
                               c, es->e[i].col, layer, layer < L ? lc->of_layer[layer] : '?',
                               layer < L ? model->groups[lc->group_of[layer]].type : "none");
        layer++;
        counts[s]++;
    }
    return PSCHED_OK;
}

static psched_status parse_setting(const char *granularity, const char *method,
                                   uint32_t num_layers, psched__rc_setting *set)
{
    bool none = !granularity || !*granularity || strcmp(granularity, "none") == 0;
    bool has_method = method && *method;
    if (none || strcmp(granularity, "selective") == 0) {
        if (has_method || num_layers)
            return psched_fail(PSCHED_EINVAL, "recompute method '%s' and layer count %u apply "
                                              "to granularity full only (granularity: %s)",
                               has_method ? method : "", num_layers, none ? "none" : granularity);
        set->kind = none ? PSCHED__RC_NONE : PSCHED__RC_SELECTIVE;
        return PSCHED_OK;
    }
    if (strcmp(granularity, "full") != 0)
        return psched_fail(PSCHED_EINVAL, "recompute granularity '%s' must be none, selective "
                                          "or full",
                           granularity);
    if (!has_method)
        return psched_fail(PSCHED_EINVAL, "recompute granularity full needs a method: uniform "
                                          "or block");
    if (strcmp(method, "uniform") == 0) {
        if (num_layers != 1)
            return psched_fail(PSCHED_EINVAL,
                               "recompute method uniform with %u layers per group: the layer "
                               "profile models recomputation layer by layer (1) only",
                               num_layers);
        set->kind = PSCHED__RC_FULL;
        return PSCHED_OK;
    }
    if (strcmp(method, "block") != 0)
        return psched_fail(PSCHED_EINVAL, "recompute method '%s' must be uniform or block",
                           method);
    set->kind = PSCHED__RC_BLOCK;
    set->layers = num_layers;
    return PSCHED_OK;
}

psched_status psched_partition_from_layout(const psched_model *model, const psched_plan *plan,
                                           const char *schedule, const char *layout,
                                           const char *map, const char *granularity,
                                           const char *method, uint32_t num_layers,
                                           psched_partition_result **out)
{
    if (out)
        *out = NULL;
    if (!model || !plan || !schedule || !layout || !out)
        return psched_fail(PSCHED_EINVAL,
                           "model, plan, schedule name, layout and output must be non-NULL");
    psched__rc_setting set = {PSCHED__RC_NONE, 0};
    psched_status st = parse_setting(granularity, method, num_layers, &set);
    if (st)
        return st;
    elements es = {0};
    layer_classes lc = {0};
    char *cls = psched__calloc(model->group_count ? model->group_count : 1, 1);
    uint32_t *counts = NULL, *first = NULL;
    uint8_t *choice = NULL;
    psched_plan *own = NULL;
    if (!cls)
        return PSCHED_ENOMEM_FAIL();
    if ((st = psched__layout_classes(model, map, cls)) || (st = psched__layer_classes(model, cls, &lc)) ||
        (st = expand(layout, &es)))
        goto out;
    uint32_t stages = 1, p = psched_plan_devices(plan), v = psched_plan_chunks(plan);
    for (size_t i = 0; i < es.n; i++)
        stages += es.e[i].c == '|';
    if (p == 0 || stages % p != 0) {
        st = psched_fail(PSCHED_EINVAL, "layout: %u stages is not a multiple of the %u devices "
                                        "(Megatron-LM: p x v stages)",
                         stages, p);
        goto out;
    }
    if (v && stages != p * v) {
        st = psched_fail(PSCHED_EINVAL, "layout: %u stages; the plan's p = %u, v = %u needs %u",
                         stages, p, v, p * v);
        goto out;
    }
    counts = psched__calloc(stages, sizeof *counts);
    first = psched__calloc(stages, sizeof *first);
    choice = psched__calloc(model->layer_count ? model->layer_count : 1, 1);
    if (!counts || !first || !choice) {
        st = PSCHED_ENOMEM_FAIL();
        goto out;
    }
    if ((st = match_layers(model, &es, &lc, counts)))
        goto out;
    for (uint32_t s = 1; s < stages; s++)
        first[s] = first[s - 1] + counts[s - 1];
    if ((st = psched__rc_choices(model, cls, first, counts, stages, set, choice)))
        goto out;
    if (set.kind == PSCHED__RC_SELECTIVE) {
        bool any = false;
        for (uint32_t l = 0; l < model->layer_count; l++)
            any |= choice[l] != 0;
        if (!any) {
            st = psched_fail(PSCHED_EINVAL, "recompute granularity selective: no transformer "
                                            "layer group of the profile has a selective variant");
            goto out;
        }
    }
    if (!v) {
        if ((st = psched_plan_clone(plan, &own)) ||
            (st = psched_plan_set_chunks(own, stages / p)))
            goto out;
    }
    st = psched__evaluate_given(model, own ? own : plan, schedule, counts, stages, choice, out);
out:
    psched_plan_destroy(own);
    psched__dealloc(es.e);
    psched__layer_classes_free(&lc);
    psched__dealloc(cls);
    psched__dealloc(counts);
    psched__dealloc(first);
    psched__dealloc(choice);
    return st;
}
