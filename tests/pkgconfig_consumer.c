/* An out-of-tree consumer: built by test_pkgconfig.py against the installed
 * library with nothing but `pkg-config --cflags --libs pipesched`. Prints
 * what the test compares with closed forms and the in-tree tool. */
#include <pipesched.h>

#include <inttypes.h>
#include <stdio.h>

static int fail(const char *what, psched_status st)
{
    fprintf(stderr, "consumer: %s: %s: %s\n", what, psched_status_str(st), psched_last_error());
    return 1;
}

int main(void)
{
    psched_plan *plan = NULL;
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    uint64_t hash = 0;
    psched_status st = psched_plan_create(&plan);
    if (st == PSCHED_OK)
        st = psched_plan_set_devices(plan, 4);
    if (st == PSCHED_OK)
        st = psched_plan_set_microbatches(plan, 8);
    if (st != PSCHED_OK)
        return fail("plan", st);
    if ((st = psched_generate(plan, "1f1b", &s)) != PSCHED_OK)
        return fail("generate", st);
    if ((st = psched_validate(s)) != PSCHED_OK)
        return fail("validate", st);
    if ((st = psched_simulate(s, NULL, &r)) != PSCHED_OK)
        return fail("simulate", st);
    if ((st = psched_schedule_hash(s, &hash)) != PSCHED_OK)
        return fail("hash", st);
    printf("version %s\n", psched_version());
    printf("ops %zu\n", psched_schedule_total_ops(s));
    printf("span %g\n", psched_report_span(r));
    printf("hash %016" PRIx64 "\n", hash);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return 0;
}
