/* Fuzz target: plans built from fuzzed parameters, driven through every
 * registered generator: generate -> validate -> simulate -> export (every
 * format) -> hash -> CSV round trip -> lowering (fuzz_exercise()).
 *
 * Input bytes, in order: generator index (modulo the registered count:
 * each seed's file name begins with its generator's name, which the test
 * fuzz-seeds checks), p, m, v, chains, placement,
 * cost mode, costs, memory mode, memory deltas, comm, memory limit,
 * group-size, then a device per stage for a custom map, then (issue 19)
 * the vocab option for a generator that declares it (0..2), the S and T
 * pass times and the bytes of collectives 0..2. Shapes stay
 * small (p <= 16, m <= 64, v <= 4) so one input runs in milliseconds;
 * values that the setters refuse (NaN, negative costs, ...) leave the
 * default in place, as they would for a caller who checks the status.
 *
 * A schedule a generator returns must validate: anything else is a bug. */
#include "fuzz_common.h"

#include <stdio.h>
#include <string.h>

/* A small non-negative value in steps of 1/4, or now and then raw bits. */
static double cost_value(fuzz_input *in, uint8_t mode)
{
    return mode % 4 == 3 ? fuzz_double(in) : fuzz_byte(in) / 4.0;
}

static void set_costs(psched_plan *plan, fuzz_input *in, uint32_t stages)
{
    uint8_t mode = fuzz_byte(in);
    double f = cost_value(in, mode), b = cost_value(in, mode), w = cost_value(in, mode);
    (void)psched_plan_set_cost(plan, f, b, w);
    if (mode & 4) {
        for (uint32_t s = 0; s < stages; s++)
            (void)psched_plan_set_stage_cost(plan, s, cost_value(in, mode),
                                             cost_value(in, mode), cost_value(in, mode));
    }
}

/* Memory deltas: the default, a signed small triple (which need not sum
 * to zero), or raw bits. */
static void set_mem(psched_plan *plan, fuzz_input *in, uint32_t stages)
{
    uint8_t mode = fuzz_byte(in);
    if (mode % 4 == 0)
        return;
    for (uint32_t s = 0; s <= ((mode & 4) ? stages : 0); s++) {
        double d[3];
        for (int i = 0; i < 3; i++)
            d[i] = mode % 4 == 3 ? fuzz_double(in) : (int8_t)fuzz_byte(in) / 8.0;
        if (s == 0)
            (void)psched_plan_set_mem(plan, d[0], d[1], d[2]);
        else
            (void)psched_plan_set_stage_mem(plan, s - 1, d[0], d[1], d[2]);
    }
}

static psched_plan *plan_from(fuzz_input *in)
{
    psched_plan *plan;
    if (psched_plan_create(&plan) != PSCHED_OK)
        fuzz_fail("plan_create", PSCHED_ENOMEM);
    uint32_t p = 1 + fuzz_byte(in) % 16, m = 1 + fuzz_byte(in) % 64, v = fuzz_byte(in) % 5;
    uint8_t chains = fuzz_byte(in), placement = fuzz_byte(in);
    (void)psched_plan_set_devices(plan, p);
    (void)psched_plan_set_microbatches(plan, m);
    (void)psched_plan_set_chunks(plan, v);
    (void)psched_plan_set_chains(plan, 1 + chains % 2);
    uint32_t stages = p * (v ? v : 2);
    set_costs(plan, in, stages);
    set_mem(plan, in, stages);
    uint8_t comm = fuzz_byte(in), limit = fuzz_byte(in), group = fuzz_byte(in);
    (void)psched_plan_set_comm(plan, comm / 8.0);
    if (limit)
        (void)psched_plan_set_memory_limit(plan, limit / 4.0);
    if (group)
        (void)psched_plan_set_option(plan, "group-size", (int8_t)group);
    if (psched_plan_set_placement(plan, (psched_placement)(placement % 4)) == PSCHED_OK &&
        placement % 4 == PSCHED_PLACEMENT_CUSTOM) {
        for (uint32_t s = 0; s < p * v; s++)
            (void)psched_plan_set_stage_device(plan, s, fuzz_byte(in) % p);
    }
    return plan;
}

/* Vocabulary Parallelism where the generator declares the option; bytes
 * past the end read as 0, so older seeds keep it off. */
static void set_vocab(psched_plan *plan, const psched_generator *g, fuzz_input *in)
{
    uint8_t vocab = fuzz_byte(in) % 3;
    bool declared = false;
    for (size_t i = 0; i < g->option_count; i++)
        declared |= strcmp(g->options[i].name, "vocab") == 0;
    if (!vocab || !declared)
        return;
    (void)psched_plan_set_option(plan, "vocab", vocab);
    (void)psched_plan_set_vocab_cost(plan, fuzz_byte(in) / 8.0, fuzz_byte(in) / 8.0);
    for (uint32_t j = 0; j < 3; j++)
        (void)psched_plan_set_collective_bytes(plan, j, fuzz_byte(in));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0};
    size_t count = psched_generator_count();
    const psched_generator *g = psched_generator_at(fuzz_byte(&in) % count);
    /* an exact generator takes up to its time limit per plan: no fuzz target */
    if (psched_generator_is_exact(g))
        return 0;
    psched_plan *plan = plan_from(&in);
    set_vocab(plan, g, &in);
    psched_schedule *s = NULL;
    psched_status st = psched_generate(plan, g->name, &s);
    if (st == PSCHED_OK) {
        psched_status valid = fuzz_exercise(s);
        if (valid != PSCHED_OK) {
            char what[96];
            snprintf(what, sizeof what, "generator %s returned an invalid schedule", g->name);
            fuzz_fail(what, valid);
        }
    } else if (s || psched_last_error()[0] == '\0') {
        fuzz_fail("a failed generate returned a schedule or left no message", st);
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return 0;
}
