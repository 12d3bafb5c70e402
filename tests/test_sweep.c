/* Property sweep: every registered generator over p = 1..8, v = 1..4 and
 * m = 1..4p. Each accepted configuration validates, has every (stage,
 * micro-batch) with exactly the right ops on the right device, simulates,
 * and survives CSV export -> import with an identical hash. Each rejected
 * configuration's message names the rule it broke. */
#include "testutil.h"
#include "pipesched.h"

#include <stdbool.h>
#include <stdint.h>

static int configs, rejected;

static void check_counts(const psched_schedule *s)
{
    const psched_plan *pl = psched_schedule_plan(s);
    uint32_t S = psched_plan_stages(pl);
    uint32_t mbs = psched_plan_microbatches(pl) / psched_plan_chains(pl);
    uint8_t *n = calloc((size_t)S * mbs * 4, 1);
    for (uint32_t d = 0; d < psched_schedule_devices(s); d++) {
        size_t c = psched_schedule_op_count(s, d);
        psched_op *ops = malloc((c + 1) * sizeof *ops);
        CHECK_OK(psched_schedule_ops(s, d, 0, c, ops, sizeof *ops));
        for (size_t i = 0; i < c; i++) {
            CHECK(ops[i].stage < S && ops[i].microbatch < mbs && ops[i].kind <= PSCHED_OP_BW);
            if (ops[i].stage >= S || ops[i].microbatch >= mbs || ops[i].kind > PSCHED_OP_BW)
                continue;
            CHECK_EQ_INT(psched_plan_stage_device(pl, ops[i].stage), d);
            CHECK_EQ_INT(ops[i].chunk, psched_plan_stage_chunk(pl, ops[i].stage));
            n[((size_t)ops[i].stage * mbs + ops[i].microbatch) * 4 + ops[i].kind]++;
        }
        free(ops);
    }
    for (size_t e = 0; e < (size_t)S * mbs; e++) {
        uint8_t *c = &n[e * 4];
        bool ok = c[PSCHED_OP_F] == 1 &&
                  ((c[PSCHED_OP_BW] == 1 && c[PSCHED_OP_B] == 0 && c[PSCHED_OP_W] == 0) ||
                   (c[PSCHED_OP_BW] == 0 && c[PSCHED_OP_B] == 1 && c[PSCHED_OP_W] == 1));
        if (!ok) {
            fprintf(stderr, "%s: stage %zu mb %zu has F%u B%u W%u BW%u\n", psched_schedule_name(s),
                    e / mbs, e % mbs, c[0], c[1], c[2], c[3]);
            tu_failed_checks++;
            break;
        }
    }
    free(n);
}

static void check_round_trip(const psched_schedule *s)
{
    char *csv;
    size_t len;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &csv, &len));
    psched_schedule *back = NULL;
    CHECK_OK(psched_import_csv(csv, len, psched_schedule_plan(s), &back));
    uint64_t h1 = 0, h2 = 1;
    CHECK_OK(psched_schedule_hash(s, &h1));
    if (back)
        CHECK_OK(psched_schedule_hash(back, &h2));
    CHECK(h1 == h2);
    psched_schedule_destroy(back);
    psched_free(csv);
}

static bool names_a_rule(const char *msg)
{
    static const char *const words[] = {"devices", "microbatches", "chunks", "group", "chains",
                                        "placement", "memory"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        if (strstr(msg, words[i]))
            return strchr(msg, '(') != NULL || strstr(msg, "must") != NULL;
    }
    return false;
}

static void sweep_one(const char *name, uint32_t p, uint32_t v, uint32_t m)
{
    psched_plan *plan = tu_plan(p, m, v);
    psched_schedule *s = NULL;
    psched_status st = psched_generate(plan, name, &s);
    if (st != PSCHED_OK) {
        rejected++;
        if (st != PSCHED_EINVAL || !names_a_rule(psched_last_error())) {
            fprintf(stderr, "%s p=%u v=%u m=%u rejected with %s: \"%s\"\n", name, p, v, m,
                    psched_status_str(st), psched_last_error());
            tu_failed_checks++;
        }
        psched_plan_destroy(plan);
        return;
    }
    configs++;
    int before = tu_failed_checks;
    psched_status vs = psched_validate(s);
    if (vs != PSCHED_OK) {
        fprintf(stderr, "%s p=%u v=%u m=%u invalid: %s\n", name, p, v, m, psched_last_error());
        tu_failed_checks++;
    } else {
        check_counts(s);
        psched_report *r = NULL;
        CHECK_OK(psched_simulate(s, NULL, &r));
        CHECK(r && psched_report_makespan(r) > 0);
        psched_report_destroy(r);
        check_round_trip(s);
    }
    if (tu_failed_checks != before)
        fprintf(stderr, "  (in %s p=%u v=%u m=%u)\n", name, p, v, m);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_every_generator_over_the_grid(void)
{
    size_t n = psched_generator_count();
    CHECK(n >= 4);
    for (size_t i = 0; i < n; i++) {
        const char *name = psched_generator_at(i)->name;
        /* an exact generator takes up to its time limit per plan: tests/test_optimal.c */
        if (psched_generator_is_exact(psched_generator_at(i)))
            continue;
        int accepted_before = configs;
        for (uint32_t p = 1; p <= 8; p++)
            for (uint32_t v = 1; v <= 4; v++)
                for (uint32_t m = 1; m <= 4 * p; m++)
                    sweep_one(name, p, v, m);
        if (configs == accepted_before) {
            fprintf(stderr, "%s accepted no configuration of the grid\n", name);
            tu_failed_checks++;
        }
    }
    printf("# %d configurations generated, %d rejected by checks\n", configs, rejected);
}

int main(void)
{
    RUN(test_every_generator_over_the_grid);
    TEST_MAIN_END();
}
