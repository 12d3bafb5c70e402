/* Fuzz target: psched_import_csv, without a plan (shape, chunks and
 * placement inferred from the file) and with one.
 *
 * Input: CSV text, optionally followed by a NUL byte and plan bytes
 * (p, m, v, chains, placement, then a device per stage for a custom map).
 * The text is also imported without a plan; every schedule that imports
 * goes through fuzz_exercise(). */
#include "fuzz_common.h"

#include <string.h>

#define MAX_SLOTS (1u << 20)

/* Devices and micro-batches of the given plan stay small so one input runs
 * in milliseconds; the file itself may claim anything. */
static psched_plan *plan_from(fuzz_input *in)
{
    psched_plan *plan;
    if (psched_plan_create(&plan) != PSCHED_OK)
        fuzz_fail("plan_create", PSCHED_ENOMEM);
    uint32_t p = 1 + fuzz_byte(in) % 8, m = 1 + fuzz_byte(in) % 16, v = fuzz_byte(in) % 4;
    uint8_t chains = fuzz_byte(in), placement = fuzz_byte(in);
    (void)psched_plan_set_devices(plan, p);
    (void)psched_plan_set_microbatches(plan, m);
    (void)psched_plan_set_chunks(plan, v);
    (void)psched_plan_set_chains(plan, 1 + chains % 2);
    if (psched_plan_set_placement(plan, (psched_placement)(placement % 4)) == PSCHED_OK &&
        placement % 4 == PSCHED_PLACEMENT_CUSTOM) {
        for (uint32_t s = 0; s < p * v; s++)
            (void)psched_plan_set_stage_device(plan, s, fuzz_byte(in) % p);
    }
    return plan;
}

static void import_and_exercise(const char *text, size_t length, const psched_plan *plan)
{
    psched_schedule *s = NULL;
    psched_status st = psched_import_csv(text, length, plan, &s);
    if (st != PSCHED_OK) {
        if (s)
            fuzz_fail("a failed import returned a schedule", st);
        if (psched_last_error()[0] == '\0')
            fuzz_fail("a failed import left no message", st);
        return;
    }
    /* The validator indexes every (stage, micro-batch) slot: O(S x m) time
     * and 16 bytes per slot, whatever the op count. A few bytes of text can
     * claim m in the millions ("4F5888888"), so such files are only
     * imported here, not validated. */
    const psched_plan *shape = psched_schedule_plan(s);
    if ((uint64_t)psched_plan_stages(shape) * psched_plan_microbatches(shape) <= MAX_SLOTS)
        fuzz_exercise(s);
    psched_schedule_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const uint8_t *nul = memchr(data, '\0', size);
    size_t length = nul ? (size_t)(nul - data) : size;
    import_and_exercise(text, length, NULL);
    if (nul) {
        fuzz_input in = {nul + 1, size - length - 1, 0};
        psched_plan *plan = plan_from(&in);
        import_and_exercise(text, length, plan);
        psched_plan_destroy(plan);
        /* The NUL byte itself is part of the text here: a parse error. */
        import_and_exercise(text, size, NULL);
    }
    return 0;
}
