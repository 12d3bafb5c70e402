/* Fuzz target: the CLI's --costs-file reader (tools/cli_costs.c), compiled
 * in with the CLI's own file and message helpers. cli_apply_costs_file()
 * takes a path, so each input is written to one private temporary file.
 *
 * Input: p - 1 (mod 8), v - 1 (mod 4), then the file contents. Whatever
 * the reader accepts must leave finite, non-negative costs, and the plan
 * must still generate and simulate. The reader prints its errors on
 * stderr: run with -close_fd_mask=2 to keep the log quiet. */
#include "cli.h"
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];
static int fd = -1;

/* The file is unlinked at once and read back through /proc/self/fd, so
 * nothing is left behind however the run ends. */
static void write_input(const uint8_t *data, size_t size)
{
    if (fd < 0) {
        char tmpl[] = "/tmp/pipesched-fuzz-costs-XXXXXX";
        fd = mkstemp(tmpl);
        if (fd < 0 || unlink(tmpl) != 0) {
            perror(tmpl);
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
        perror(path);
        abort();
    }
}

static void check_costs(const psched_plan *plan)
{
    for (uint32_t s = 0; s < psched_plan_stages(plan); s++) {
        double c[3], mem[3];
        if (psched_plan_stage_cost(plan, s, &c[0], &c[1], &c[2]) != PSCHED_OK ||
            psched_plan_stage_mem(plan, s, &mem[0], &mem[1], &mem[2]) != PSCHED_OK)
            fuzz_fail("reading a stage of the plan failed", PSCHED_EINVAL);
        for (int i = 0; i < 3; i++) {
            if (!isfinite(c[i]) || c[i] < 0 || !isfinite(mem[i]))
                fuzz_fail("the costs file set a non-finite or negative value", PSCHED_OK);
        }
    }
}

static void run_plan(const psched_plan *plan)
{
    psched_schedule *s = NULL;
    psched_status st = psched_generate(plan, "looped-bfs", &s);
    /* Finite costs whose sums overflow (1e307 on a stage) are refused by
     * the library with a message naming the cost (issue 12 item 2). */
    if (st == PSCHED_EINVAL && s == NULL && strstr(psched_last_error(), "overflows to infinity"))
        return;
    if (st != PSCHED_OK)
        fuzz_fail("looped-bfs refused a plan with loaded costs", st);
    psched_report *r = NULL;
    st = psched_simulate(s, NULL, &r);
    if (st != PSCHED_OK)
        fuzz_fail("simulating with loaded costs failed", st);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    psched_plan *plan;
    if (psched_plan_create(&plan) != PSCHED_OK)
        fuzz_fail("plan_create", PSCHED_ENOMEM);
    (void)psched_plan_set_devices(plan, 1 + data[0] % 8);
    (void)psched_plan_set_chunks(plan, 1 + data[1] % 4);
    (void)psched_plan_set_microbatches(plan, 4);
    write_input(data + 2, size - 2);
    if (cli_apply_costs_file(plan, path) == CLI_OK) {
        check_costs(plan);
        run_plan(plan);
    }
    psched_plan_destroy(plan);
    return 0;
}
