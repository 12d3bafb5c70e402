/* A plug-in built as a separate shared module, loaded at run time through
 * the installed-style shared library, generates a schedule that validates. */
#include "pipesched.h"
#include "testutil.h"

static const char *plugin_path;

static void test_plugin_generates_a_valid_schedule(void)
{
    size_t before = psched_generator_count();
    CHECK_OK(psched_plugin_load(plugin_path));
    CHECK_EQ_INT(psched_generator_count(), before + 1);
    const psched_generator *g;
    CHECK_OK(psched_generator_find("reverse-gpipe", &g));
    psched_plan *plan = tu_plan(3, 4, 0);
    psched_schedule *s;
    CHECK_OK(psched_generate(plan, "reverse-gpipe", &s));
    CHECK_OK(psched_validate(s));
    psched_op ops[8];
    CHECK_OK(psched_schedule_ops(s, 2, 4, 4, ops, sizeof *ops));
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(ops[i].kind, PSCHED_OP_BW);
        CHECK_EQ_INT(ops[i].microbatch, 3 - i);
    }
    psched_report *r;
    CHECK_OK(psched_simulate(s, NULL, &r));
    /* 3 devices, 4 micro-batches, unit F, BW 2: the last device finishes its
     * forwards at 6, then 4 BW of 2, then device 0 waits for the chain:
     * 0BW0 of device 0 is its last op. Makespan (m + p - 1) * 3 = 18. */
    CHECK_EQ_DBL(psched_report_makespan(r), 18);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    /* loading it twice registers the same name twice: refused */
    CHECK_EQ_INT(psched_plugin_load(plugin_path), PSCHED_EPLUGIN);
    CHECK_CONTAINS(psched_last_error(), "already registered");
    psched_plan_destroy(plan);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-plugin PLUGIN.so\n");
        return 2;
    }
    plugin_path = argv[1];
    RUN(test_plugin_generates_a_valid_schedule);
    TEST_MAIN_END();
}
