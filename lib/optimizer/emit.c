/* A partition as a framework's configuration: Megatron-LM flags
 * (`--pipeline-model-parallel-layout` and the recompute options) and a
 * torchtitan TOML snippet. Recomputation a framework's global options
 * cannot say is never dropped silently: the nearest setting they can say
 * is printed with a comment naming the difference and both simulated step
 * times. docs/optimizer.md, "Handing a plan to Megatron-LM and torchtitan". */
#include "optimizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct emitter {
    const psched_partition_result *r;
    const psched_model *model;
    char *cls;
    layer_classes lc;
    psched_buf out;
} emitter;

static psched_status emitter_open(emitter *em, const psched_partition_result *r,
                                  const psched_model *model, const char *map)
{
    memset(em, 0, sizeof *em);
    if (!r || !model)
        return psched_fail(PSCHED_EINVAL, "partition result and model must be non-NULL");
    if (!r->has_partition || !r->schedule)
        return psched_fail(PSCHED_EINFEASIBLE, "the result holds no partition to emit");
    int64_t vocab = 0;
    if (r->plan && psched_plan_get_option(r->plan, "vocab", &vocab) == PSCHED_OK && vocab > 0)
        return psched_fail(PSCHED_EUNSUPPORTED,
                           "schedule %s with vocab = %lld splits the output layer over every "
                           "device (Vocabulary Parallelism), which neither a Megatron-LM layout "
                           "nor torchtitan's module lists can say; partition it without vocab",
                           r->schedule, (long long)vocab);
    if (r->layers != model->layer_count)
        return psched_fail(PSCHED_EINVAL, "the model has %u layers; the partition covers %u",
                           model->layer_count, r->layers);
    uint64_t held = 0;
    for (uint32_t s = 0; s < r->stages; s++)
        held += r->count[s];
    if (held != r->layers)
        return psched_fail(PSCHED_EUNSUPPORTED,
                           "schedule %s holds every layer on two devices (a device and its "
                           "mirror: two copies of the model); a Megatron-LM layout and "
                           "torchtitan's module lists place each layer once (dualpipev runs "
                           "one copy in a V and can be handed over)",
                           r->schedule);
    em->r = r;
    em->model = model;
    if (!(em->cls = psched__calloc(model->group_count ? model->group_count : 1, 1)))
        return PSCHED_ENOMEM_FAIL();
    psched_status st = psched__layout_classes(model, map, em->cls);
    return st ? st : psched__layer_classes(model, em->cls, &em->lc);
}

static void emitter_close(emitter *em)
{
    psched__dealloc(em->cls);
    psched__layer_classes_free(&em->lc);
    psched__dealloc(em->out.data);
}

/* ---- recompute: the plan's choice against a framework's settings ---- */

/* True when both choice vectors give every stage the same number of each
 * recompute kind in each group, hence the same costs. */
static bool same_costs(const emitter *em, const uint8_t *a, const uint8_t *b, int32_t *tally)
{
    const psched_partition_result *r = em->r;
    size_t n = (size_t)em->model->group_count * 3;
    for (uint32_t s = 0; s < r->stages; s++) {
        memset(tally, 0, n * sizeof *tally);
        for (uint32_t l = r->first[s]; l < r->first[s] + r->count[s]; l++) {
            tally[em->lc.group_of[l] * 3 + a[l]]++;
            tally[em->lc.group_of[l] * 3 + b[l]]--;
        }
        for (size_t k = 0; k < n; k++)
            if (tally[k])
                return false;
    }
    return true;
}

typedef struct verdict {
    int match;          /* index of the setting equal to the plan, or -1 */
    int nearest;        /* otherwise the nearest: fastest that fits, else leanest */
    double makespan, peak;
    bool fits;
} verdict;

static psched_status evaluate_setting(const emitter *em, const uint8_t *choice, double *makespan,
                                      double *peak, bool *fits)
{
    psched_plan *plan = NULL;
    psched_partition_result *e = NULL;
    psched_status st = psched_plan_clone(em->r->plan, &plan);
    if (!st)
        st = psched_plan_set_memory_limit(plan, em->r->limit);
    if (!st)
        st = psched__evaluate_given(em->model, plan, em->r->schedule, em->r->count, em->r->stages,
                                    choice, &e);
    if (!st) {
        *makespan = e->makespan;
        *peak = 0;
        for (uint32_t d = 0; d < e->devices; d++)
            *peak = fmax(*peak, e->dev_mem[d]);
        *fits = e->status != PSCHED_SOLVE_INFEASIBLE;
    }
    psched_partition_result_destroy(e);
    psched_plan_destroy(plan);
    return st;
}

static psched_status judge(const emitter *em, const psched__rc_setting *sets, int count,
                           verdict *v)
{
    const psched_partition_result *r = em->r;
    uint8_t *choice = psched__calloc(r->layers ? r->layers : 1, 1);
    int32_t *tally = psched__calloc((size_t)em->model->group_count * 3 + 1, sizeof *tally);
    psched_status st = choice && tally ? PSCHED_OK : PSCHED_ENOMEM_FAIL();
    v->match = v->nearest = -1;
    v->fits = false;
    v->makespan = v->peak = INFINITY;
    for (int k = 0; !st && k < count && v->match < 0; k++) {
        psched_status bad = psched__rc_choices(em->model, em->cls, r->first, r->count, r->stages,
                                               sets[k], choice);
        if (bad)
            continue; /* a layer it recomputes has no such variant: not a candidate */
        if (same_costs(em, r->choice, choice, tally)) {
            v->match = k;
            break;
        }
        double t, peak;
        bool fits;
        if ((st = evaluate_setting(em, choice, &t, &peak, &fits)))
            break;
        bool better = v->nearest < 0 || (fits && !v->fits) ||
                      (fits == v->fits && (fits ? t < v->makespan : peak < v->peak));
        if (better) {
            v->nearest = k;
            v->makespan = t;
            v->peak = peak;
            v->fits = fits;
        }
    }
    psched__dealloc(choice);
    psched__dealloc(tally);
    return st;
}

/* "stage 0: 2 of 4 full; stage 1: 1 selective, ..." for the comment. */
static void describe_mix(emitter *em, psched_buf *b)
{
    const psched_partition_result *r = em->r;
    for (uint32_t s = 0; s < r->stages; s++) {
        uint32_t n[3] = {0, 0, 0};
        for (uint32_t l = r->first[s]; l < r->first[s] + r->count[s]; l++)
            n[r->choice[l]]++;
        psched__buf_printf(b, "%s%u: %u/%u/%u", s ? ", " : "", s, n[0], n[1], n[2]);
    }
}

static double device_peak(const psched_partition_result *r)
{
    double m = 0;
    for (uint32_t d = 0; d < r->devices; d++)
        m = fmax(m, r->dev_mem[d]);
    return m;
}

static void header(emitter *em, const char *framework)
{
    const psched_partition_result *r = em->r;
    const psched_plan *plan = r->plan;
    psched__buf_printf(&em->out,
                       "# pipesched plan for %s: schedule %s, p = %u, v = %u, m = %u: simulated "
                       "step time %.6g, bubble %.1f%%, largest device memory %.6g",
                       framework, r->schedule, psched_plan_devices(plan), psched_plan_chunks(plan),
                       psched_plan_microbatches(plan), r->makespan, 100 * r->bubble,
                       device_peak(r));
    if (isfinite(r->limit))
        psched__buf_printf(&em->out, " (limit %.6g)", r->limit);
    psched__buf_puts(&em->out, "\n");
}

static void recompute_comment(emitter *em, const verdict *v, const char *framework,
                              const char *nearest)
{
    if (v->match >= 0)
        return;
    psched__buf_printf(&em->out,
                       "# recompute: the plan's mix per stage (none/selective/full) is ");
    describe_mix(em, &em->out);
    psched__buf_printf(&em->out, "; %s's global options cannot express it\n", framework);
    if (v->nearest < 0) {
        psched__buf_puts(&em->out, "# no setting those options can express applies to this "
                                   "profile; the recompute options are left out\n");
        return;
    }
    psched__buf_printf(&em->out,
                       "# nearest expressible: %s: simulated step time %.6g (the plan's %.6g), "
                       "largest device memory %.6g, %s the limit\n",
                       nearest, v->makespan, em->r->makespan, v->peak,
                       v->fits ? "fits" : "exceeds");
}

static psched_status finish(emitter *em, char **text, size_t *length)
{
    psched_status st = psched__buf_finish(&em->out, text, length);
    em->out.data = NULL;
    return st;
}

/* ---- Megatron-LM ---- */

static void stage_text(emitter *em, uint32_t s, psched_buf *b)
{
    const psched_partition_result *r = em->r;
    char run = 0;
    uint32_t n = 0;
    for (uint32_t k = 0;; k++) {
        char c = 0;
        bool lead = s == 0 && em->lc.e_marker, tail = s == r->stages - 1 && em->lc.l_marker;
        uint32_t total = r->count[s] + lead + tail;
        if (k < total) {
            if (lead && k == 0)
                c = 'E';
            else if (tail && k == total - 1)
                c = 'L';
            else
                c = em->lc.of_layer[r->first[s] + k - lead];
        }
        if (c == run && c) {
            n++;
            continue;
        }
        if (n >= 3)
            psched__buf_printf(b, "%c*%u", run, n);
        else
            for (uint32_t i = 0; i < n; i++)
                psched__buf_append(b, &run, 1);
        if (!c)
            break;
        run = c;
        n = 1;
    }
}

static psched_status layout_text(emitter *em, psched_buf *out)
{
    const psched_partition_result *r = em->r;
    uint32_t S = r->stages;
    psched_buf *st = psched__calloc(S, sizeof *st);
    if (!st)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; s < S; s++)
        stage_text(em, s, &st[s]);
    bool failed = false;
    for (uint32_t s = 0; s < S; s++)
        failed |= st[s].failed;
    for (uint32_t s = 0; s < S && !failed;) {
        const char *a = st[s].data ? st[s].data : "";
        uint32_t k = 1;
        while (s + k < S - 1 && strcmp(a, st[s + k].data ? st[s + k].data : "") == 0)
            k++;
        /* a run that stops before the last stage: "(a|)*k" when shorter */
        size_t len = strlen(a);
        char digits[16];
        int nd = snprintf(digits, sizeof digits, "%u", k);
        if (s + k <= S - 1 && k >= 2 && len + 4 + (size_t)nd < k * (len + 1)) {
            psched__buf_printf(out, "(%s|)*%u", a, k);
            if (s + k < S)
                psched__buf_puts(out, ",");
            s += k;
            continue;
        }
        psched__buf_puts(out, a);
        if (s + 1 < S)
            psched__buf_puts(out, "|");
        s++;
    }
    for (uint32_t s = 0; s < S; s++)
        psched__dealloc(st[s].data);
    psched__dealloc(st);
    if (failed)
        out->failed = true;
    return PSCHED_OK;
}

static uint32_t max_transformer_layers(const emitter *em)
{
    uint32_t most = 0;
    for (uint32_t s = 0; s < em->r->stages; s++) {
        uint32_t n = 0;
        for (uint32_t l = em->r->first[s]; l < em->r->first[s] + em->r->count[s]; l++)
            n += em->lc.of_layer[l] == 't';
        most = n > most ? n : most;
    }
    return most;
}

static void megatron_setting(psched_buf *b, psched__rc_setting set, const char *sep)
{
    switch (set.kind) {
    case PSCHED__RC_NONE:
        break;
    case PSCHED__RC_SELECTIVE:
        psched__buf_printf(b, "--recompute-granularity selective");
        break;
    case PSCHED__RC_FULL:
        psched__buf_printf(b, "--recompute-granularity full%s--recompute-method uniform%s"
                              "--recompute-num-layers 1",
                           sep, sep);
        break;
    case PSCHED__RC_BLOCK:
        psched__buf_printf(b, "--recompute-granularity full%s--recompute-method block%s"
                              "--recompute-num-layers %u",
                           sep, sep, set.layers);
        break;
    }
}

psched_status psched_partition_to_megatron(const psched_partition_result *result,
                                           const psched_model *model, const char *map,
                                           char **text, size_t *length)
{
    if (text)
        *text = NULL;
    if (length)
        *length = 0;
    if (!text)
        return psched_fail(PSCHED_EINVAL, "text output must be non-NULL");
    emitter em;
    psched_status st = emitter_open(&em, result, model, map);
    uint32_t most = st ? 0 : max_transformer_layers(&em);
    psched__rc_setting *sets = st ? NULL : psched__calloc(most + 3, sizeof *sets);
    if (!st && !sets)
        st = PSCHED_ENOMEM_FAIL();
    int count = 0;
    verdict v = {0};
    if (!st) {
        sets[count++] = (psched__rc_setting){PSCHED__RC_NONE, 0};
        sets[count++] = (psched__rc_setting){PSCHED__RC_SELECTIVE, 0};
        sets[count++] = (psched__rc_setting){PSCHED__RC_FULL, 0};
        for (uint32_t n = 1; n < most; n++)
            sets[count++] = (psched__rc_setting){PSCHED__RC_BLOCK, n};
        st = judge(&em, sets, count, &v);
    }
    if (!st) {
        const psched_plan *plan = result->plan;
        uint32_t p = psched_plan_devices(plan), vv = psched_plan_chunks(plan);
        header(&em, "Megatron-LM");
        if (psched_plan_placement(plan) != PSCHED_PLACEMENT_LOOP)
            psched__buf_printf(&em.out,
                               "# placement: Megatron-LM runs virtual stage k on rank k mod p; "
                               "this plan places its stages as '%s', so Megatron-LM's step time "
                               "will differ from the one above\n",
                               psched_placement_str(psched_plan_placement(plan)));
        if (strcmp(result->schedule, vv > 1 ? "interleaved" : "1f1b") != 0)
            psched__buf_printf(&em.out,
                               "# schedule: Megatron-LM runs %s for this v; the step time "
                               "above is %s's\n",
                               vv > 1 ? "interleaved 1F1B" : "1F1B", result->schedule);
        psched__buf_printf(&em.out,
                           "# micro-batches: --global-batch-size = %u x --micro-batch-size x "
                           "the data-parallel size\n",
                           psched_plan_microbatches(plan));
        if (vv > 1)
            psched__buf_printf(&em.out,
                               "# --num-virtual-stages-per-pipeline-rank %u: implied by the "
                               "layout (Megatron-LM refuses the two flags together)\n",
                               vv);
        psched_buf near = {0};
        if (v.match < 0 && v.nearest >= 0)
            megatron_setting(&near, sets[v.nearest], " ");
        recompute_comment(&em, &v, "Megatron-LM",
                          near.data ? near.data : "no recomputation");
        psched__dealloc(near.data);
        psched__buf_printf(&em.out, "--pipeline-model-parallel-size %u \\\n"
                                    "--pipeline-model-parallel-layout \"",
                           p);
        st = layout_text(&em, &em.out);
        psched__buf_puts(&em.out, "\"");
        int chosen = v.match >= 0 ? v.match : v.nearest;
        if (chosen > 0) {
            psched__buf_puts(&em.out, " \\\n");
            megatron_setting(&em.out, sets[chosen], " \\\n");
        }
        psched__buf_puts(&em.out, "\n");
    }
    if (!st)
        st = finish(&em, text, length);
    psched__dealloc(sets);
    emitter_close(&em);
    return st;
}

/* ---- torchtitan ---- */

/* torch.distributed.pipelining's get_schedule_class() names (torch 2.13). */
static const char *const torch_classes[] = {"1F1B", "Interleaved1F1B", "GPipe", "LoopedBFS",
                                            "InterleavedZeroBubble", "ZBVZeroBubble",
                                            "DualPipeV"};

static const char *torch_class(const char *schedule)
{
    for (size_t i = 0;; i++) {
        const char *alias = NULL;
        if (psched_generator_alias(schedule, i, &alias) || !alias)
            return NULL;
        for (size_t k = 0; k < sizeof torch_classes / sizeof *torch_classes; k++)
            if (strcmp(alias, torch_classes[k]) == 0)
                return torch_classes[k];
    }
}

static bool is_letter_fqn(char c)
{
    return c == 'E' || c == 't' || c == 'm' || c == 'L';
}

/* The module names of element letter c from the template
 * "E=a;t=layers.{i};L=norm,output": the text after "c=" up to ';'. */
static psched_status fqn_entry(const char *tmpl, char c, const char **at, size_t *len)
{
    for (const char *p = tmpl; *p;) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n < 2 || p[1] != '=' || !is_letter_fqn(p[0]))
            return psched_fail(PSCHED_EINVAL,
                               "module-name template entry '%.*s' must be LETTER=NAME[,NAME...] "
                               "with LETTER one of E, t, m, L",
                               (int)n, p);
        if (p[0] == c) {
            *at = p + 2;
            *len = n - 2;
            return PSCHED_OK;
        }
        p += n;
        if (*p == ';')
            p++;
    }
    return psched_fail(PSCHED_EINVAL, "module-name template has no entry for '%c' layers "
                                      "(give %c=NAME)",
                       c, c);
}

/* Append the quoted names of one element, {i} replaced by its index. */
static void fqn_names(psched_buf *b, const char *at, size_t len, uint32_t index, bool *first)
{
    size_t i = 0;
    while (i <= len) {
        size_t j = i;
        while (j < len && at[j] != ',')
            j++;
        psched__buf_puts(b, *first ? "\"" : ", \"");
        *first = false;
        for (size_t k = i; k < j; k++) {
            if (k + 3 <= j && memcmp(at + k, "{i}", 3) == 0) {
                psched__buf_printf(b, "%u", index);
                k += 2;
            } else if (at[k] == '"' || at[k] == '\\') {
                char esc[2] = {'\\', at[k]};
                psched__buf_append(b, esc, 2);
            } else {
                psched__buf_append(b, at + k, 1);
            }
        }
        psched__buf_puts(b, "\"");
        i = j + 1;
    }
}

static psched_status module_lists(emitter *em, const char *tmpl)
{
    const psched_partition_result *r = em->r;
    uint32_t index[128] = {0};
    psched__buf_puts(&em->out, "pipeline_parallel_module_fqns_per_model_part = [\n");
    for (uint32_t s = 0; s < r->stages; s++) {
        bool first = true;
        psched__buf_puts(&em->out, "    [");
        bool lead = s == 0 && em->lc.e_marker, tail = s == r->stages - 1 && em->lc.l_marker;
        uint32_t total = r->count[s] + lead + tail;
        for (uint32_t k = 0; k < total; k++) {
            char c = lead && k == 0             ? 'E'
                     : tail && k == total - 1 ? 'L'
                                              : em->lc.of_layer[r->first[s] + k - lead];
            const char *at = NULL;
            size_t len = 0;
            psched_status st = fqn_entry(tmpl, c, &at, &len);
            if (st)
                return st;
            fqn_names(&em->out, at, len, index[(unsigned char)c]++, &first);
        }
        psched__buf_puts(&em->out, s + 1 < r->stages ? "],\n" : "]\n");
    }
    psched__buf_puts(&em->out, "]\n");
    return PSCHED_OK;
}

static const char *titan_name(psched__rc_setting set)
{
    switch (set.kind) {
    case PSCHED__RC_SELECTIVE: return "[activation_checkpoint] mode selective, option op";
    case PSCHED__RC_FULL: return "[activation_checkpoint] mode full";
    default: return "[activation_checkpoint] mode none";
    }
}

static const char *titan_setting(psched__rc_setting set)
{
    switch (set.kind) {
    case PSCHED__RC_SELECTIVE: return "mode = \"selective\"\nselective_ac_option = \"op\"";
    case PSCHED__RC_FULL: return "mode = \"full\"";
    default: return "mode = \"none\"";
    }
}

psched_status psched_partition_to_torchtitan(const psched_partition_result *result,
                                             const psched_model *model, const char *map,
                                             const char *fqn, char **text, size_t *length)
{
    if (text)
        *text = NULL;
    if (length)
        *length = 0;
    if (!text)
        return psched_fail(PSCHED_EINVAL, "text output must be non-NULL");
    if (!fqn || !*fqn)
        fqn = PSCHED_TORCHTITAN_LLAMA_FQN;
    emitter em;
    psched_status st = emitter_open(&em, result, model, map);
    static const psched__rc_setting sets[] = {
        {PSCHED__RC_NONE, 0}, {PSCHED__RC_SELECTIVE, 0}, {PSCHED__RC_FULL, 0}};
    verdict v = {0};
    if (!st)
        st = judge(&em, sets, 3, &v);
    if (!st) {
        const psched_plan *plan = result->plan;
        uint32_t vv = psched_plan_chunks(plan);
        const char *cls = torch_class(result->schedule);
        bool vshape = psched_plan_placement(plan) == PSCHED_PLACEMENT_VSHAPE;
        header(&em, "torchtitan");
        if (!cls) {
            psched__buf_printf(&em.out,
                               "# schedule: PyTorch has no class for %s; write its CSV with "
                               "'pipesched generate --schedule %s --devices %u --microbatches %u "
                               "--chunks %u --format csv' and load it through the class below\n",
                               result->schedule, result->schedule, psched_plan_devices(plan),
                               psched_plan_microbatches(plan), vv);
            if (vshape)
                psched__buf_puts(&em.out, "# placement: torchtitan places stages in a V only "
                                          "for ZBVZeroBubble and DualPipeV, which load no CSV; "
                                          "this plan's V placement needs stage_ids_this_rank "
                                          "with style \"v\"\n");
        }
        int chosen = v.match >= 0 ? v.match : v.nearest;
        recompute_comment(&em, &v, "torchtitan",
                          v.nearest >= 0 ? titan_name(sets[v.nearest]) : "");
        psched__buf_printf(&em.out, "[parallelism]\npipeline_parallel_degree = %u\n",
                           psched_plan_devices(plan));
        if (cls)
            psched__buf_printf(&em.out, "pipeline_parallel_schedule = \"%s\"\n", cls);
        else
            psched__buf_printf(&em.out,
                               "pipeline_parallel_schedule = \"%s\"\n"
                               "pipeline_parallel_schedule_csv = \"%s.csv\"\n",
                               vv > 1 ? "PipelineScheduleMulti" : "PipelineScheduleSingle",
                               result->schedule);
        psched__buf_printf(&em.out, "num_pp_microbatches = %u\n", psched_plan_microbatches(plan));
        st = module_lists(&em, fqn);
        if (!st && chosen >= 0)
            psched__buf_printf(&em.out, "\n[activation_checkpoint]\n%s\n", titan_setting(sets[chosen]));
    }
    if (!st)
        st = finish(&em, text, length);
    emitter_close(&em);
    return st;
}
