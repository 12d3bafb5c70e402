/* Fuzz target: psched_partition() on small models and plans: the MILP,
 * the DPs, the certificate's searches and bounds, the baselines, the
 * emitters.
 *
 * Input (each read is one byte, 0 past the end): p (1 + b % 4), m
 * (1 + b % 8), the schedule (b % 14 of the list below), v (1 + b % 4),
 * the method (b % 5) and allow_empty (b & 0x80), the memory limit (b % 4:
 * none, else 4·(1 + the next byte)) and the plan search (b & 0x80: also
 * psched_plan_search() over the one schedule), the number of layer groups
 * (1 + b % 4), then per group its layer count (1 + b % 6), f, b, w
 * (b % 16 / 4: zero included), act and param (b % 16 / 2), and a byte
 * whose bits add a selective and a full recompute variant (activations a
 * quarter and a tenth, extra time half and all of f).
 *
 * Invariants: a refusal says why and leaves no result; a result that
 * holds a partition lists stages that cover every layer once per chain
 * (twice for DualPipe's and Chimera's two), a finite step time, a gap in
 * [0, 1] (0 when optimal; NaN only when nothing fits), and evaluates again through psched_partition_evaluate()
 * (its counts and recompute choices) to the same step time; with the ILP
 * method it is no slower than the even split when that fits, and where
 * the layers between the first and the last are identical (every
 * placement's smallest memory in closed form, minmem.c) a limit nothing
 * fits names the smallest memory, at which the call then returns a
 * partition; the
 * emitters succeed or refuse with a message, and what they write is as
 * long as it says; the plan search ranks its alternatives (those that fit
 * by step time, then misfits, then failures with their messages) and each
 * that fits holds a partition as above. */
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const schedules[] = {
    "1f1b", "gpipe", "interleaved", "interleaved-zb", "looped-bfs", "zb-h1", "zb-h2",
    "zb",   "v-min", "v-half",      "v-zb",           "dualpipev",  "dualpipe", "chimera",
};

static void must_say_why(psched_status st, const void *out)
{
    if (st == PSCHED_OK)
        return;
    if (!psched_last_error() || !psched_last_error()[0])
        fuzz_fail("a refusal without a message", st);
    if (out)
        fuzz_fail("a refusal left a result", st);
}

static void emit(const psched_partition_result *r, const psched_model *model, bool torchtitan)
{
    char *text = NULL;
    size_t length = 0;
    psched_status st = torchtitan
                           ? psched_partition_to_torchtitan(r, model, NULL, NULL, &text, &length)
                           : psched_partition_to_megatron(r, model, NULL, &text, &length);
    if (st == PSCHED_OK && (!text || strlen(text) != length))
        fuzz_fail("an emitter's text is not as long as it says", st);
    if (st != PSCHED_OK && !psched_last_error()[0])
        fuzz_fail("an emitter refused without a message", st);
    psched_free(text);
}

/* The ILP method keeps the best of its baselines, the even split among
 * them: never no plan or a slower one where the even split fits. */
static void no_slower_than_even(const psched_model *model, const psched_plan *plan,
                                const char *name, const psched_partition_result *r)
{
    bool fits = psched_partition_status(r) != PSCHED_SOLVE_INFEASIBLE;
    psched_partition_options o = PSCHED_PARTITION_OPTIONS_INIT;
    o.method = PSCHED_PARTITION_EVEN;
    psched_partition_result *even = NULL;
    if (psched_partition(model, plan, name, &o, &even) == PSCHED_OK &&
        psched_partition_status(even) != PSCHED_SOLVE_INFEASIBLE &&
        (!fits || psched_partition_makespan(r) > psched_partition_makespan(even) * (1 + 1e-9)))
        fuzz_fail("the ILP method returned no plan or one slower than the even split, which "
                  "fits",
                  PSCHED_OK);
    psched_partition_result_destroy(even);
}

/* Whether the layers between the first and the last are of one group
 * (and there are at least three). */
static bool run_shaped(const psched_model *model)
{
    uint32_t L = psched_model_layers(model), at = 0, middle = UINT32_MAX;
    if (L < 3)
        return false;
    for (uint32_t g = 0; g < psched_model_groups(model); g++) {
        uint32_t count = 0;
        if (psched_model_group(model, g, NULL, &count, NULL, NULL, NULL, NULL, NULL) != PSCHED_OK)
            return false;
        for (uint32_t k = 0; k < count; k++, at++) {
            if (at == 0 || at + 1 == L)
                continue;
            if (middle == UINT32_MAX)
                middle = g;
            else if (middle != g)
                return false;
        }
    }
    return true;
}

/* The ILP method with no empty stage: a limit nothing fits names the
 * smallest memory, never NaN on a run-shaped model (run_shaped(): it is
 * computed exactly, with no time needed), and at a named smallest memory
 * the call returns a partition on any model (the smallest memory's own
 * split, in closed form or the search's, when nothing else). */
static void smallest_memory_fits(const psched_model *model, const psched_plan *plan,
                                 const char *name, const psched_partition_options *o,
                                 const psched_partition_result *r)
{
    if (o->method != PSCHED_PARTITION_ILP || (o->flags & PSCHED_PARTITION_ALLOW_EMPTY) ||
        psched_partition_status(r) != PSCHED_SOLVE_INFEASIBLE)
        return;
    double least = psched_partition_min_memory(r);
    if (!isfinite(least) && run_shaped(model))
        fuzz_fail("a run-shaped model's smallest memory unknown", PSCHED_OK);
    if (!isfinite(least))
        return;
    psched_plan *at = NULL;
    psched_status st = psched_plan_clone(plan, &at);
    if (st == PSCHED_OK)
        st = psched_plan_set_memory_limit(at, least);
    if (st != PSCHED_OK)
        fuzz_fail("a plan at the smallest memory", st);
    /* a quarter second for it (0.05 s could run out on a loaded machine
     * before a DP of one or two chunks, which has no witness to fall back
     * on) */
    psched_partition_options longer = *o;
    longer.time_limit = 0.25;
    psched_partition_result *again = NULL;
    st = psched_partition(model, at, name, &longer, &again);
    if (st != PSCHED_OK || psched_partition_status(again) == PSCHED_SOLVE_INFEASIBLE)
        fuzz_fail("no partition at the smallest memory the call named", st);
    psched_partition_result_destroy(again);
    psched_plan_destroy(at);
}

/* A result's partition: its stages, figures, evaluation and emitters;
 * `plan` is the plan it was made for. */
static void check(const psched_model *model, const psched_plan *plan, const char *name,
                  const psched_partition_result *r)
{
    if (!psched_partition_plan(r))
        return; /* no partition: nothing more to check */
    uint32_t S = psched_partition_stages(r), L = psched_model_layers(model);
    uint32_t *counts = calloc(S ? S : 1, sizeof *counts);
    psched_recompute *kinds = calloc(L ? L : 1, sizeof *kinds);
    if (!counts || !kinds)
        fuzz_fail("out of memory in the fuzz target", PSCHED_ENOMEM);
    uint64_t held = 0;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t first = 0, count = 0;
        double time = 0, mem = 0;
        psched_status st = psched_partition_stage(r, s, &first, &count, &time, &mem);
        if (st != PSCHED_OK)
            fuzz_fail("a listed stage cannot be read", st);
        if ((uint64_t)first + count > L)
            fuzz_fail("a stage runs past the last layer", PSCHED_OK);
        counts[s] = count;
        held += count;
    }
    uint32_t chains = psched_plan_chains(psched_partition_plan(r));
    if (held != (uint64_t)chains * L)
        fuzz_fail("the stages do not hold every layer once per chain", PSCHED_OK);
    for (uint32_t l = 0; l < L; l++)
        kinds[l] = psched_partition_layer_recompute(r, l);
    double mk = psched_partition_makespan(r), gap = psched_partition_gap(r);
    if (!isfinite(mk) || mk < 0)
        fuzz_fail("a partition's step time is not a finite non-negative number", PSCHED_OK);
    psched_solve_status status = psched_partition_status(r);
    if (status == PSCHED_SOLVE_INFEASIBLE ? !isnan(gap) : !(gap >= 0 && gap <= 1))
        fuzz_fail("a gap outside [0, 1] (or one that is not NaN for no fit)", PSCHED_OK);
    if (status == PSCHED_SOLVE_OPTIMAL && gap != 0)
        fuzz_fail("an optimal partition with a gap", PSCHED_OK);
    psched_partition_result *e = NULL;
    psched_status st = psched_partition_evaluate(model, plan, name, counts, S, kinds, &e);
    if (st != PSCHED_OK)
        fuzz_fail("a returned partition does not evaluate again", st);
    double again = psched_partition_makespan(e);
    if (fabs(again - mk) > 1e-9 * fmax(1, fabs(mk)))
        fuzz_fail("a returned partition evaluates to another step time", PSCHED_OK);
    psched_partition_result_destroy(e);
    emit(r, model, false);
    emit(r, model, true);
    free(counts);
    free(kinds);
}

/* The plan search over the one schedule: the alternatives ranked (those
 * that fit by step time, then the misfits, then the failures), each with
 * a partition that fits checked as above (not the Vocabulary Parallelism
 * candidates: their partitions cover the model without its head). */
static void search(const psched_model *model, const psched_plan *plan, const char *name,
                   uint32_t flags)
{
    psched_search_options o = PSCHED_SEARCH_OPTIONS_INIT;
    o.time_limit = 0.02;
    o.flags = PSCHED_SEARCH_ONE_ROUND | (flags & PSCHED_PARTITION_ALLOW_EMPTY);
    psched_search_result *r = NULL;
    psched_status st = psched_plan_search(model, plan, &name, 1, &o, &r);
    must_say_why(st, r);
    if (st != PSCHED_OK)
        return;
    size_t n = psched_search_count(r);
    int rank_before = 0; /* 0 fits, 1 misfit, 2 failure */
    double before = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        bool failed = psched_search_error(r, i) != PSCHED_OK;
        bool fits = !failed && psched_search_fits(r, i);
        int rank = failed ? 2 : fits ? 0 : 1;
        if (rank < rank_before)
            fuzz_fail("plan search: alternatives out of their ranks", PSCHED_OK);
        double mk = psched_search_makespan(r, i);
        if (fits && rank_before == 0 && mk < before * (1 - 1e-12))
            fuzz_fail("plan search: fitting alternatives not by step time", PSCHED_OK);
        if (failed && !psched_search_error_message(r, i)[0])
            fuzz_fail("plan search: a failed alternative without a message", PSCHED_OK);
        const psched_partition_result *pr = psched_search_partition(r, i);
        if (fits && !pr)
            fuzz_fail("plan search: an alternative that fits has no partition", PSCHED_OK);
        if (fits && psched_partition_makespan(pr) != mk)
            fuzz_fail("plan search: an alternative's step time is not its partition's",
                      PSCHED_OK);
        if (fits && !psched_search_vocab(r, i))
            check(model, psched_partition_plan(pr), name, pr);
        rank_before = rank;
        if (fits)
            before = mk;
    }
    psched_search_result_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0};
    uint32_t p = 1 + fuzz_byte(&in) % 4, m = 1 + fuzz_byte(&in) % 8;
    const char *name = schedules[fuzz_byte(&in) % (sizeof schedules / sizeof *schedules)];
    uint32_t v = 1 + fuzz_byte(&in) % 4;
    uint8_t mb = fuzz_byte(&in);
    psched_partition_method method = (psched_partition_method)(mb % 5);
    uint8_t lb = fuzz_byte(&in);
    double limit = lb % 4 ? 4.0 * (1 + fuzz_byte(&in)) : INFINITY;
    psched_model *model = NULL;
    psched_plan *plan = NULL;
    if (psched_model_create(&model) != PSCHED_OK)
        fuzz_fail("creating a model", PSCHED_ENOMEM);
    uint32_t groups = 1 + fuzz_byte(&in) % 4;
    static const char *const group_names[] = {"embedding", "layer", "mtp", "head"};
    for (uint32_t g = 0; g < groups; g++) {
        uint32_t count = 1 + fuzz_byte(&in) % 6;
        double f = fuzz_byte(&in) % 16 / 4.0, b = fuzz_byte(&in) % 16 / 4.0;
        double w = fuzz_byte(&in) % 16 / 4.0, act = fuzz_byte(&in) % 16 / 2.0;
        double param = fuzz_byte(&in) % 16 / 2.0;
        uint8_t rc = fuzz_byte(&in);
        psched_status st =
            psched_model_add_layers(model, group_names[g], count, f, b, w, act, param);
        must_say_why(st, NULL);
        if (st != PSCHED_OK)
            continue;
        uint32_t at = psched_model_groups(model) - 1;
        if (rc & 1)
            must_say_why(psched_model_set_recompute(model, at, PSCHED_RECOMPUTE_SELECTIVE,
                                                    act / 4, f / 2),
                         NULL);
        if (rc & 2)
            must_say_why(psched_model_set_recompute(model, at, PSCHED_RECOMPUTE_FULL, act / 10,
                                                    f),
                         NULL);
    }
    psched_status st = psched_plan_create(&plan);
    if (st == PSCHED_OK)
        st = psched_plan_set_devices(plan, p);
    if (st == PSCHED_OK)
        st = psched_plan_set_microbatches(plan, m);
    if (st != PSCHED_OK)
        fuzz_fail("creating a plan of p <= 4, m <= 8", st);
    must_say_why(psched_plan_set_chunks(plan, v), NULL);
    must_say_why(psched_plan_set_memory_limit(plan, limit), NULL);
    psched_partition_options o = PSCHED_PARTITION_OPTIONS_INIT;
    o.method = method;
    o.time_limit = 0.05;
    o.flags = mb & 0x80 ? PSCHED_PARTITION_ALLOW_EMPTY : 0;
    psched_partition_result *r = NULL;
    st = psched_partition(model, plan, name, &o, &r);
    must_say_why(st, r);
    if (st == PSCHED_OK) {
        if (!r)
            fuzz_fail("a partition call succeeded without a result", st);
        if (method == PSCHED_PARTITION_ILP)
            no_slower_than_even(model, plan, name, r);
        check(model, plan, name, r);
        smallest_memory_fits(model, plan, name, &o, r);
    }
    if (lb & 0x80)
        search(model, plan, name, o.flags);
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
    return 0;
}
