/* The holistic planner: every candidate schedule × chunk count,
 * partitioned (with recomputation) by psched_partition(), measured by the
 * simulator, and ranked. DESIGN §6, docs/optimizer.md. */
#include "optimizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct search_alt {
    char schedule[32];
    uint32_t chunks;
    uint32_t vocab;             /* generator option vocab (0: none) */
    size_t order;               /* candidate order, for stable ranking */
    psched_status error;
    char message[256];
    psched_partition_result *partition;
    double makespan, bubble, peak, even, need;
    bool fits;
} search_alt;

struct psched_search_result {
    search_alt *alts;
    size_t count, cap;
    double solve_time;
    char dropped[256]; /* the first refusal not kept as an alternative */
    char sched_first[256]; /* the current schedule's first refusal */
};

static const uint32_t chunk_choices[] = {1, 2, 4};

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void psched_search_result_destroy(psched_search_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++)
        psched_partition_result_destroy(r->alts[i].partition);
    psched__dealloc(r->alts);
    psched__dealloc(r);
}

static psched_status push_alt(psched_search_result *r, const search_alt *a)
{
    search_alt *v = psched__grow(r->alts, &r->cap, r->count, sizeof *r->alts, 16);
    if (!v)
        return PSCHED_ENOMEM_FAIL();
    r->alts = v;
    r->alts[r->count++] = *a;
    return PSCHED_OK;
}

/* Largest simulated device memory and whether both it and the model's
 * bound are within the limit. */
static void measure(search_alt *a, double limit)
{
    const psched_partition_result *pr = a->partition;
    a->makespan = a->bubble = a->peak = NAN;
    a->need = psched_partition_min_memory(pr);
    a->fits = false;
    const psched_plan *plan = psched_partition_plan(pr);
    if (!plan)
        return;
    a->makespan = psched_partition_makespan(pr);
    a->bubble = psched_partition_bubble_ratio(pr);
    double peak = 0, bound = 0;
    for (uint32_t d = 0; d < psched_plan_devices(plan); d++) {
        double m = 0, pk = 0;
        psched_partition_device(pr, d, NULL, &m, &pk);
        peak = fmax(peak, pk);
        bound = fmax(bound, m);
    }
    a->peak = peak;
    a->fits = psched_partition_status(pr) != PSCHED_SOLVE_INFEASIBLE &&
              bound <= limit * (1 + 1e-12) && peak <= limit * (1 + 1e-12);
    if (!a->fits && isnan(a->need))
        a->need = fmax(bound, peak);
}

/* Makespan of the even split of the same (schedule, v) into *out, NAN
 * when it does not apply or does not fit; only ENOMEM is an error. */
static psched_status even_makespan(const psched_model *model, const psched_plan *plan,
                                   const char *name, uint32_t flags, double *out)
{
    psched_partition_options o = PSCHED_PARTITION_OPTIONS_INIT;
    o.method = PSCHED_PARTITION_EVEN;
    o.flags = flags;
    psched_partition_result *r = NULL;
    psched_status st = psched__partition(model, plan, name, &o, false, true, &r);
    *out = NAN;
    if (st == PSCHED_OK && psched_partition_status(r) != PSCHED_SOLVE_INFEASIBLE)
        *out = psched_partition_makespan(r);
    psched_partition_result_destroy(r);
    return st == PSCHED_ENOMEM ? st : PSCHED_OK;
}

/* The search flags a partition takes (#PSCHED_SEARCH_ONE_ROUND is the
 * search's own). */
static uint32_t partition_flags(const psched_search_options *o)
{
    return o->flags & PSCHED_PARTITION_ALLOW_EMPTY;
}

/* A bound for a Vocabulary Parallelism candidate. Its order depends on the
 * costs (the passes are woven in by replaying the pipeline order), so the
 * certificate's order-based bounds do not apply and its gap is the work
 * bound's. But the weave keeps every device's pipeline ops in the plain
 * generator's order and only adds ops (the S and T passes, collectives)
 * and dependencies, so for every partition its step time is at least the
 * plain schedule's on the same model without its head; and every bound of
 * the plain schedule over all partitions, memory unlimited, bounds that.
 * Second, the plain certificate's layer count bound plus the vocabulary
 * work every device runs between its first pipeline op and its last:
 * its S passes come after its first op (S of a micro-batch needs the last
 * stage's forward of it, which needs this device's) and before its last
 * (the backward of the last micro-batch needs the head's input gradient,
 * which S computes with Vocab-2 and T with Vocab-1), and with Vocab-1 its
 * T passes too; with Vocab-2 the T passes (the head's weight gradient)
 * may come after the last op and are left out. So a device is busy
 * between its start and its tail for its layers' time and m x S (m x (S
 * + T) with Vocab-1); the count bound is the least T at which start, m x
 * the layers' time and tail fit on every device (docs/optimizer.md,
 * "Vocabulary Parallelism candidates"). Both bounds of the plain schedule
 * depend on neither vocab nor the limit, so plain[0] and plain[1] cache
 * them for the candidates of one (schedule, v) (NAN: not computed; NULL:
 * no cache). r's gap is lowered to the larger where it is higher. */
static void vocab_bound(const psched_model *model, const psched_plan *plan, const char *name,
                        const psched_partition_options *po, bool planner, double *plain,
                        psched_partition_result *r)
{
    if (!r->has_partition || r->status != PSCHED_SOLVE_FEASIBLE || !(r->makespan > 0))
        return;
    double lower = plain ? plain[0] : NAN, count = plain ? plain[1] : NAN;
    if (isnan(lower)) {
        psched_plan *base = NULL;
        psched_partition_result *b = NULL;
        psched_partition_options bo = *po;
        bo.time_limit = po->time_limit / 4;
        lower = count = -INFINITY;
        if (!psched_plan_clone(plan, &base) && !psched_plan_set_option(base, "vocab", 0) &&
            !psched_plan_set_memory_limit(base, INFINITY) &&
            !psched__partition(model, base, name, &bo, false, planner, &b) &&
            b->has_partition && !isnan(b->gap) &&
            (b->status == PSCHED_SOLVE_OPTIMAL || b->status == PSCHED_SOLVE_FEASIBLE)) {
            lower = b->status == PSCHED_SOLVE_OPTIMAL ? b->makespan : b->makespan * (1 - b->gap);
            count = b->count_bound > 0 ? b->count_bound : -INFINITY;
        }
        psched_partition_result_destroy(b);
        psched_plan_destroy(base);
        if (plain) {
            plain[0] = lower;
            plain[1] = count;
        }
    }
    /* every device's vocabulary work before its last op */
    double all, before;
    psched__vocab_work(plan, &all, &before);
    if (isfinite(count))
        lower = fmax(lower, count + before);
    double now = isnan(r->gap) ? -INFINITY : r->makespan * (1 - r->gap);
    if (lower > now) {
        r->gap = fmax(0, (r->makespan - lower) / r->makespan);
        if (lower >= r->makespan * (1 - 1e-12)) {
            /* within the count bound's bisection (10^-12 of it) */
            r->status = PSCHED_SOLVE_OPTIMAL;
            r->gap = 0;
        }
    }
}

/* The limit left beside `held`: a holding at or above the limit leaves a
 * limit nothing fits. */
static double limit_beside(double limit, double held)
{
    return fmax(limit - held, limit * 1e-12);
}

/* A Vocabulary Parallelism candidate's partition (the model without its
 * head): every device also holds the vocabulary layers' shard, `shard`
 * (the head's and the embedding's parameters / p), so the layers are
 * partitioned under the limit less the shard and the result's device
 * figures include it. The S pass's logits
 * (the head's activations / p, held until the T pass) are outside the
 * partitioner's memory model; the simulation counts them, and when its
 * peak passes the limit the layers are partitioned again under a limit
 * lowered by the excess, at most twice (docs/optimizer.md, "Vocabulary
 * Parallelism candidates"). `plan` holds the caller's limit, which it
 * holds again on return. */
static psched_status vocab_partition(const psched_model *model, psched_plan *plan,
                                     const char *name, const psched_partition_options *po,
                                     bool want_min_memory, bool planner, double shard,
                                     double *plain, psched_partition_result **out)
{
    double limit = psched_plan_memory_limit(plan), reserve = shard;
    psched_partition_result *best = NULL;
    psched_status st = PSCHED_OK;
    for (int round = 0; round < 3; round++) {
        st = psched_plan_set_memory_limit(plan, limit_beside(limit, reserve));
        psched_partition_result *r = NULL;
        if (!st)
            st = psched__partition(model, plan, name, po, want_min_memory, planner, &r);
        if (st)
            break;
        psched_partition_result_destroy(best);
        best = r;
        r->limit = limit;
        if (r->plan)
            psched_plan_set_memory_limit(r->plan, limit);
        if (!isnan(r->min_memory))
            r->min_memory += shard;
        double excess = 0;
        for (uint32_t d = 0; r->has_partition && d < r->devices; d++) {
            r->dev_param[d] += shard;
            r->dev_mem[d] += shard;
            r->dev_peak[d] += shard;
            excess = fmax(excess, r->dev_peak[d] - limit);
        }
        if (!(excess > limit * 1e-12) || r->status == PSCHED_SOLVE_INFEASIBLE)
            break;
        reserve += excess;
    }
    psched_plan_set_memory_limit(plan, limit);
    if (st && (st == PSCHED_ENOMEM || !best)) {
        psched_partition_result_destroy(best);
        return st;
    }
    vocab_bound(model, plan, name, po, planner, plain, best);
    *out = best;
    return PSCHED_OK;
}

/* Partition one (schedule, v). *taken says whether it became an
 * alternative: generator rejections (EINVAL) are not, unless `keep`. */
static psched_status try_candidate(const psched_model *model, const psched_plan *base,
                                   const char *name, uint32_t v, uint32_t vocab, double shard,
                                   double *plain, const psched_search_options *o, bool keep,
                                   psched_search_result *r, bool *taken)
{
    psched_plan *plan = NULL;
    psched_status st = psched_plan_clone(base, &plan);
    if (!st)
        st = psched_plan_set_chunks(plan, v);
    if (st) {
        psched_plan_destroy(plan);
        return st;
    }
    psched_partition_options po = PSCHED_PARTITION_OPTIONS_INIT;
    po.time_limit = o->time_limit;
    po.flags = partition_flags(o);
    search_alt a;
    memset(&a, 0, sizeof a);
    snprintf(a.schedule, sizeof a.schedule, "%s", name);
    a.chunks = v;
    a.vocab = vocab;
    a.order = r->count;
    a.error = vocab ? vocab_partition(model, plan, name, &po, true, true, shard, plain,
                                      &a.partition)
                    : psched__partition(model, plan, name, &po, true, true, &a.partition);
    *taken = a.error == PSCHED_OK || (a.error != PSCHED_EINVAL && a.error != PSCHED_ENOMEM) || keep;
    if (a.error == PSCHED_ENOMEM || !*taken) {
        if (a.error == PSCHED_EINVAL && !r->dropped[0])
            snprintf(r->dropped, sizeof r->dropped, "%s", psched_last_error());
        if (a.error == PSCHED_EINVAL && !r->sched_first[0])
            snprintf(r->sched_first, sizeof r->sched_first, "%s", psched_last_error());
        psched_plan_destroy(plan);
        return a.error == PSCHED_ENOMEM ? a.error : PSCHED_OK;
    }
    if (a.error) {
        /* A named schedule no v fits is kept once, with its first
         * refusal (v = 1's, e.g. fewer layers than stages) rather than
         * the last (e.g. "chunks (4) must be 1"). */
        snprintf(a.message, sizeof a.message, "%s",
                 keep && a.error == PSCHED_EINVAL && r->sched_first[0] ? r->sched_first
                                                                      : psched_last_error());
        a.makespan = a.bubble = a.peak = a.even = a.need = NAN;
    } else {
        double limit = psched_plan_memory_limit(base);
        measure(&a, limit);
        /* the even split fits when its layers fit beside the head's shard */
        st = psched_plan_set_memory_limit(plan, limit_beside(limit, shard));
        if (!st)
            st = even_makespan(model, plan, name, partition_flags(o), &a.even);
    }
    psched_plan_destroy(plan);
    if (!st)
        st = push_alt(r, &a);
    if (st)
        psched_partition_result_destroy(a.partition);
    return st;
}

static bool is_head(const char *type)
{
    return strcmp(type, "head") == 0 || strcmp(type, "loss") == 0 || strcmp(type, "output") == 0;
}

static bool declares_vocab(const char *name)
{
    size_t n = 0;
    psched_option_info info = {.version = PSCHED_OPTION_INFO_VERSION};
    if (psched_generator_option_count(name, &n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (psched_generator_option(name, i, &info) == PSCHED_OK &&
            strcmp(info.name, "vocab") == 0)
            return true;
    return false;
}

/* The Vocabulary Parallelism candidate of algorithm `vocab`: the model
 * without its head groups (head, loss, output), whose cost becomes the S
 * and T passes split over the p devices (docs/schedules.md "vocab"):
 * S = (F [+ B for Vocab-2]) / p, T = (W [+ B for Vocab-1]) / p, the S pass
 * holding the head's activations / p until the T pass. *shard is what
 * every device holds of the vocabulary layers: the head's and the
 * embedding's parameters / p. *out_model is NULL when the model has no head
 * or nothing else. */
static psched_status vocab_variant(const psched_model *model, const psched_plan *plan,
                                   uint32_t vocab, psched_model **out_model,
                                   psched_plan **out_plan, double *shard)
{
    *out_model = NULL;
    *out_plan = NULL;
    *shard = 0;
    double head[5] = {0};
    bool any_head = false, any_body = false;
    psched_model *m = NULL;
    psched_status st = psched_model_create(&m);
    for (uint32_t g = 0; !st && g < psched_model_groups(model); g++) {
        const char *type;
        uint32_t count;
        double f, b, w, act, param;
        psched_model_group(model, g, &type, &count, &f, &b, &w, &act, &param);
        if (is_head(type)) {
            any_head = true;
            head[0] += f * count, head[1] += b * count, head[2] += w * count;
            head[3] += act * count;
            head[4] += param * count;
            continue;
        }
        any_body = any_body || count > 0;
        /* the input embedding is split by vocabulary too: its compute and
         * activations stay on the first stage, its parameters join the shard
         * every device holds (as `simulate --vocab --model` counts them) */
        bool embedding = strcmp(type, "embedding") == 0;
        if (embedding)
            head[4] += param * count;
        st = psched_model_add_layers(m, type, count, f, b, w, act, embedding ? 0 : param);
        uint32_t added = psched_model_groups(m) - 1;
        for (int k = PSCHED_RECOMPUTE_SELECTIVE; !st && k <= PSCHED_RECOMPUTE_FULL; k++) {
            double ra, rx;
            if (psched_model_group_recompute(model, g, (psched_recompute)k, &ra, &rx) == PSCHED_OK)
                st = psched_model_set_recompute(m, added, (psched_recompute)k, ra, rx);
        }
    }
    if (st || !any_head || !any_body) {
        psched_model_destroy(m);
        return st == PSCHED_ENOMEM ? st : PSCHED_OK;
    }
    uint32_t p = psched_plan_devices(plan);
    psched_plan *pl = NULL;
    st = psched_plan_clone(plan, &pl);
    if (!st)
        st = psched_plan_set_option(pl, "vocab", vocab);
    if (!st)
        st = psched_plan_set_vocab_cost(pl, (head[0] + (vocab == 2 ? head[1] : 0)) / p,
                                        (head[2] + (vocab == 1 ? head[1] : 0)) / p);
    if (!st)
        st = psched_plan_set_vocab_mem(pl, head[3] / p, -head[3] / p);
    if (st) {
        psched_model_destroy(m);
        psched_plan_destroy(pl);
        return st == PSCHED_ENOMEM ? st : PSCHED_OK;
    }
    *out_model = m;
    *out_plan = pl;
    *shard = head[4] / p;
    return PSCHED_OK;
}

static psched_status search_schedule(const psched_model *model, const psched_plan *plan,
                                     const char *name, bool named,
                                     const psched_search_options *o, psched_search_result *r)
{
    uint32_t fixed = psched_plan_chunks(plan);
    size_t n = fixed ? 1 : sizeof chunk_choices / sizeof chunk_choices[0];
    bool any = false;
    r->sched_first[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        uint32_t v = fixed ? fixed : chunk_choices[k];
        bool taken = false;
        psched_status st = try_candidate(model, plan, name, v, 0, 0, NULL, o,
                                         named && !any && k == n - 1, r, &taken);
        if (st)
            return st;
        any = any || taken;
    }
    /* Vocabulary Parallelism joins as two more candidates per v where the
     * generator takes the option, the model has a head and the caller did
     * not fix the option. */
    int64_t given;
    if (!declares_vocab(name) || psched_plan_get_option(plan, "vocab", &given) == PSCHED_OK)
        return PSCHED_OK;
    /* the plain schedule's bounds per v, shared by vocab = 1 and 2 */
    double plain[sizeof chunk_choices / sizeof chunk_choices[0]][2];
    for (size_t k = 0; k < n; k++)
        plain[k][0] = plain[k][1] = NAN;
    for (uint32_t vocab = 1; vocab <= 2; vocab++) {
        psched_model *vm = NULL;
        psched_plan *vp = NULL;
        double shard = 0;
        psched_status st = vocab_variant(model, plan, vocab, &vm, &vp, &shard);
        for (size_t k = 0; !st && vm && k < n; k++) {
            bool taken = false;
            st = try_candidate(vm, vp, name, fixed ? fixed : chunk_choices[k], vocab, shard,
                               plain[k], o, false, r, &taken);
        }
        psched_model_destroy(vm);
        psched_plan_destroy(vp);
        if (st)
            return st;
    }
    return PSCHED_OK;
}

/* Whether partition b (found, optimal or feasible) is better than a:
 * faster, or as fast and proven (or with a smaller gap). */
static bool better(const psched_partition_result *a, const psched_partition_result *b)
{
    psched_solve_status sb = psched_partition_status(b);
    double ma = psched_partition_makespan(a), mb = psched_partition_makespan(b);
    if ((sb != PSCHED_SOLVE_OPTIMAL && sb != PSCHED_SOLVE_FEASIBLE) || !(mb <= ma * (1 + 1e-12)))
        return false;
    if (mb < ma * (1 - 1e-12))
        return true;
    bool pa = psched_partition_status(a) == PSCHED_SOLVE_OPTIMAL;
    bool pb = sb == PSCHED_SOLVE_OPTIMAL;
    if (pa != pb)
        return pb;
    return !pa && psched_partition_gap(b) < psched_partition_gap(a);
}

/* The second round's order: the most chunks first (the most stages, so
 * the least time per stage in the first round), then the smallest gap
 * (the likeliest to be closed). */
static bool runs_before(const search_alt *a, const search_alt *b)
{
    if (a->chunks != b->chunks)
        return a->chunks > b->chunks;
    double ga = psched_partition_gap(a->partition), gb = psched_partition_gap(b->partition);
    return ga < gb || (ga == gb && a->order < b->order);
}

/* The time the first round's candidates (its alternatives) did not use
 * (each was given time_limit), at most as long as the first round took, goes to those
 * that fit but are not proven optimal, again, in runs_before()'s order,
 * each given what is left, at most 5 time_limit, while that is more than
 * 1.5 time_limit, with psched_partition()'s budgets rather than the first
 * round's smaller ones (Gemma2-9B's interleaved and interleaved-zb at
 * v = 4 and 60 GB: not proven in 1 s, proven in 2-4 s). The faster or
 * better proven of the two results is kept (a vocabulary-parallel
 * variant's model is made again). */
static psched_status second_round(const psched_model *model, const psched_plan *plan,
                                  const psched_search_options *o, psched_search_result *r,
                                  double t0)
{
    double now = seconds();
    double until = fmin(t0 + (double)r->count * o->time_limit, now + (now - t0));
    size_t *idx = psched__calloc(r->count + 1, sizeof *idx), n = 0;
    if (!idx)
        return PSCHED_ENOMEM_FAIL();
    for (size_t i = 0; i < r->count; i++) {
        const search_alt *a = &r->alts[i];
        if (!a->error && a->fits &&
            psched_partition_status(a->partition) == PSCHED_SOLVE_FEASIBLE)
            idx[n++] = i;
    }
    /* runs_before()'s order (insertion sort: a few candidates) */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && runs_before(&r->alts[idx[j]], &r->alts[idx[j - 1]]); j--) {
            size_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    psched_status st = PSCHED_OK;
    for (size_t k = 0; !st && k < n; k++) {
        double share = fmin(until - seconds(), 5 * o->time_limit);
        if (!(share > 1.5 * o->time_limit))
            break;
        search_alt *a = &r->alts[idx[k]];
        /* a vocabulary-parallel variant partitions its own model */
        psched_model *vm = NULL;
        psched_plan *vp = NULL, *pl = NULL;
        double shard = 0;
        if (a->vocab)
            st = vocab_variant(model, plan, a->vocab, &vm, &vp, &shard);
        if (!st && a->vocab && !vm)
            continue;
        st = st ? st : psched_plan_clone(a->vocab ? vp : plan, &pl);
        if (!st)
            st = psched_plan_set_chunks(pl, a->chunks);
        psched_partition_options po = PSCHED_PARTITION_OPTIONS_INIT;
        po.time_limit = share;
        po.flags = partition_flags(o);
        psched_partition_result *again = NULL;
        if (!st) /* as psched_partition() would, in its time */
            st = a->vocab ? vocab_partition(vm, pl, a->schedule, &po, true, false, shard, NULL,
                                            &again)
                          : psched__partition(model, pl, a->schedule, &po, true, false, &again);
        psched_plan_destroy(pl);
        psched_plan_destroy(vp);
        psched_model_destroy(vm);
        if (st == PSCHED_ENOMEM)
            break;
        st = PSCHED_OK; /* the first result stands */
        if (again && better(a->partition, again)) {
            psched_partition_result_destroy(a->partition);
            a->partition = again;
            again = NULL;
            measure(a, psched_plan_memory_limit(plan));
        }
        psched_partition_result_destroy(again);
    }
    psched__dealloc(idx);
    return st;
}

/* Fitting first by makespan, then misfits by the memory they need, then
 * failures; candidate order breaks ties. */
static int rank(const search_alt *a)
{
    return a->error ? 2 : a->fits ? 0 : 1;
}

static int alt_cmp(const void *x, const void *y)
{
    const search_alt *a = x, *b = y;
    int ra = rank(a), rb = rank(b);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    double ka = ra == 0 ? a->makespan : a->need, kb = ra == 0 ? b->makespan : b->need;
    if (ra < 2 && ka != kb && !(isnan(ka) && isnan(kb))) {
        if (isnan(ka) || isnan(kb))
            return isnan(ka) ? 1 : -1;
        return ka < kb ? -1 : 1;
    }
    return a->order < b->order ? -1 : a->order > b->order;
}

static psched_status check_search(const psched_model *model, const psched_plan *plan,
                                  const char *const *schedules, size_t count,
                                  const psched_search_options *o, psched_search_result **out)
{
    if (!model || !plan || !out)
        return psched_fail(PSCHED_EINVAL, "model, plan and output must be non-NULL");
    if (!schedules != !count)
        return psched_fail(PSCHED_EINVAL,
                           "schedule list (%s) and its count (%zu) must both be given or both "
                           "be empty",
                           schedules ? "given" : "NULL", count);
    for (size_t i = 0; i < count; i++) {
        const psched_generator *g;
        if (!schedules[i])
            return psched_fail(PSCHED_EINVAL, "schedule name %zu is NULL", i);
        psched_status st = psched_generator_find(schedules[i], &g);
        if (st)
            return st;
    }
    if (o->version == 0 || o->version > PSCHED_SEARCH_OPTIONS_VERSION)
        return psched_fail(PSCHED_EINVAL, "search options version (%u) must be 1..%u", o->version,
                           PSCHED_SEARCH_OPTIONS_VERSION);
    if (!(o->time_limit > 0) || !isfinite(o->time_limit))
        return psched_fail(PSCHED_EINVAL, "search time limit (%g s) must be finite and > 0",
                           o->time_limit);
    if (o->flags & ~(PSCHED_PARTITION_ALLOW_EMPTY | PSCHED_SEARCH_ONE_ROUND))
        return psched_fail(PSCHED_EINVAL, "search flags (0x%x) has unknown bits", o->flags);
    if (psched_model_layers(model) == 0)
        return psched_fail(PSCHED_EINVAL, "the model has no layer");
    if (psched_model_layers(model) > PSCHED__PARTITION_MAX_LAYERS)
        return psched_fail(PSCHED_EINVAL,
                           "the model has %u layers; the partitioner handles at most %u "
                           "(its tables grow with the layer count)",
                           psched_model_layers(model), PSCHED__PARTITION_MAX_LAYERS);
    if (!(psched_plan_memory_limit(plan) > 0))
        return psched_fail(PSCHED_EINVAL, "memory limit (%g) must be > 0",
                           psched_plan_memory_limit(plan));
    /* Every candidate would refuse overflowing times (psched_partition's
     * own check); refusing them once names the cause instead of a table
     * of identical failures. Fewer layers than devices is left to the
     * candidates: each alternative names it, and with none accepted the
     * search says so below. */
    double total = 0;
    for (uint32_t g = 0; g < psched_model_groups(model); g++) {
        uint32_t layers = 0;
        double f = 0, b = 0, w = 0;
        psched_model_group(model, g, NULL, &layers, &f, &b, &w, NULL, NULL);
        total += (f + b + w) * layers;
    }
    if (!isfinite(total * ((double)psched_plan_microbatches(plan) + 4.0 * psched_plan_devices(plan))))
        return psched_fail(PSCHED_EINVAL,
                           "the model's times overflow: %u layers sum to %g (f+b+w), times "
                           "m + 4p; scale the times down",
                           psched_model_layers(model), total);
    return PSCHED_OK;
}

psched_status psched_plan_search(const psched_model *model, const psched_plan *plan,
                                 const char *const *schedules, size_t schedule_count,
                                 const psched_search_options *options,
                                 psched_search_result **out)
{
    static const psched_search_options defaults = PSCHED_SEARCH_OPTIONS_INIT;
    const psched_search_options *o = options ? options : &defaults;
    if (out)
        *out = NULL; /* a failed call leaves no handle to free */
    psched_status st = check_search(model, plan, schedules, schedule_count, o, out);
    if (st)
        return st;
    double t0 = seconds();
    psched_search_result *r = psched__calloc(1, sizeof *r);
    if (!r)
        return PSCHED_ENOMEM_FAIL();
    size_t n = schedules ? schedule_count : psched_generator_count();
    for (size_t i = 0; !st && i < n; i++) {
        /* every generator but the exact ones, which take their time limit
         * per candidate and accept only the smallest plans */
        if (!schedules && psched_generator_is_exact(psched_generator_at(i)))
            continue;
        const char *name = schedules ? schedules[i] : psched_generator_at(i)->name;
        st = search_schedule(model, plan, name, schedules != NULL, o, r);
    }
    if (!st && !(o->flags & PSCHED_SEARCH_ONE_ROUND))
        st = second_round(model, plan, o, r, t0);
    if (st) {
        psched_search_result_destroy(r);
        return st;
    }
    /* Over every registered schedule, nothing could be partitioned and
     * some schedule refused the plan itself (e.g. fewer layers than its
     * stages): name that refusal rather than return an empty ranking or
     * only the other failures. (Named schedules are kept as failed
     * alternatives, each with its message.) */
    bool any_ok = false;
    for (size_t i = 0; i < r->count; i++)
        any_ok = any_ok || r->alts[i].error == PSCHED_OK;
    if (!any_ok && r->dropped[0] && !schedules) {
        char why[256];
        snprintf(why, sizeof why, "%s", r->dropped);
        psched_search_result_destroy(r);
        return psched_fail(PSCHED_EINVAL, "no schedule accepts this plan; the first refusal: %s",
                           why);
    }
    if (r->count)
        qsort(r->alts, r->count, sizeof *r->alts, alt_cmp);
    r->solve_time = seconds() - t0;
    *out = r;
    return PSCHED_OK;
}

/* ---- getters ---- */

static const search_alt *alt_at(const psched_search_result *r, size_t i)
{
    return r && i < r->count ? &r->alts[i] : NULL;
}

size_t psched_search_count(const psched_search_result *r)
{
    return r ? r->count : 0;
}

double psched_search_solve_time(const psched_search_result *r)
{
    return r ? r->solve_time : NAN;
}

const char *psched_search_schedule(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->schedule : NULL;
}

uint32_t psched_search_chunks(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->chunks : 0;
}

uint32_t psched_search_vocab(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->vocab : 0;
}

psched_status psched_search_error(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    if (!a)
        return psched_fail(PSCHED_EINVAL, "alternative (%zu) must be < count (%zu)", i,
                           psched_search_count(r));
    return a->error;
}

const char *psched_search_error_message(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->message : "";
}

psched_solve_status psched_search_status(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a && a->partition ? psched_partition_status(a->partition) : PSCHED_SOLVE_INFEASIBLE;
}

int psched_search_fits(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a && a->fits;
}

double psched_search_makespan(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->makespan : NAN;
}

double psched_search_bubble_ratio(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->bubble : NAN;
}

double psched_search_peak_memory(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->peak : NAN;
}

double psched_search_even_makespan(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->even : NAN;
}

const psched_partition_result *psched_search_partition(const psched_search_result *r, size_t i)
{
    const search_alt *a = alt_at(r, i);
    return a ? a->partition : NULL;
}
