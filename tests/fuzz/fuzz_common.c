/* Helpers shared by the libFuzzer targets; see fuzz_common.h. */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fuzz_fail(const char *what, psched_status status)
{
    fprintf(stderr, "fuzz invariant broken: %s (%s: %s)\n", what, psched_status_str(status),
            psched_last_error());
    abort();
}

uint8_t fuzz_byte(fuzz_input *in)
{
    return in->at < in->size ? in->data[in->at++] : 0;
}

uint32_t fuzz_u32(fuzz_input *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)fuzz_byte(in) << (8 * i);
    return v;
}

double fuzz_double(fuzz_input *in)
{
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits |= (uint64_t)fuzz_byte(in) << (8 * i);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static const psched_format all_formats[] = {
    PSCHED_FORMAT_CSV,       PSCHED_FORMAT_ASCII,  PSCHED_FORMAT_JSON,
    PSCHED_FORMAT_CSV_COMMS, PSCHED_FORMAT_CHROME, PSCHED_FORMAT_SVG,
    PSCHED_FORMAT_CSV_COMMS_PYTORCH,
};

static void export_one(const psched_schedule *s, const psched_report *r, psched_format format,
                       uint32_t flags, bool must_succeed)
{
    char *text = NULL;
    size_t length = 0;
    psched_status st = psched_export(s, r, format, flags, &text, &length);
    if (st == PSCHED_OK && strlen(text) != length)
        fuzz_fail("export length differs from strlen", st);
    if (must_succeed && st != PSCHED_OK)
        fuzz_fail("export of a valid schedule failed", st);
    psched_free(text);
}

/* Every format once with the report (NULL for an invalid schedule, where
 * the exports must fail cleanly or succeed), the coloured grid, and JSON
 * without times. Exports dominate the run time, hence no more. */
static bool has_vocab(const psched_schedule *s);

static void export_all(const psched_schedule *s, const psched_report *r, bool valid)
{
    /* PyTorch's compute_comms dialect has no spelling for vocabulary passes
     * and collectives: it must refuse them (EUNSUPPORTED), nothing else */
    bool vocab = has_vocab(s);
    for (size_t f = 0; f < sizeof all_formats / sizeof *all_formats; f++)
        export_one(s, r, all_formats[f], 0,
                   valid && !(vocab && all_formats[f] == PSCHED_FORMAT_CSV_COMMS_PYTORCH));
    if (valid && vocab) {
        char *text = NULL;
        psched_status st = psched_export(s, r, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &text, NULL);
        psched_free(text);
        if (st != PSCHED_EUNSUPPORTED)
            fuzz_fail("PyTorch's dialect did not refuse vocabulary ops", st);
    }
    export_one(s, r, PSCHED_FORMAT_ASCII, PSCHED_EXPORT_COLOR, valid);
    if (r)
        export_one(s, NULL, PSCHED_FORMAT_JSON, 0, valid);
}

static void read_ops(const psched_schedule *s)
{
    uint32_t p = psched_schedule_devices(s);
    for (uint32_t d = 0; d < p; d++) {
        size_t n = psched_schedule_op_count(s, d);
        /* A caller built against a newer header passes a larger record. */
        size_t size = sizeof(psched_op) + 8;
        unsigned char *buf = malloc(n * size + 1);
        if (!buf)
            abort();
        psched_status st = psched_schedule_ops(s, d, 0, n, (psched_op *)(void *)buf, size);
        if (st != PSCHED_OK)
            fuzz_fail("copying every op of a device failed", st);
        free(buf);
    }
}

static void read_report(const psched_report *r)
{
    uint32_t p = psched_report_devices(r);
    (void)psched_report_makespan(r);
    (void)psched_report_span(r);
    (void)psched_report_bubble_ratio(r);
    (void)psched_report_peak_memory_M(r);
    for (uint32_t d = 0; d < p; d++) {
        double busy, idle, peak;
        if (psched_report_device(r, d, &busy, &idle, &peak) != PSCHED_OK)
            fuzz_fail("report of an existing device failed", PSCHED_EINVAL);
    }
}

/* Exported CSV read back against the schedule's own plan is the same
 * schedule: same hash. */
static void csv_round_trip(const psched_schedule *s, uint64_t hash)
{
    char *text;
    size_t length;
    psched_status st = psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &text, &length);
    if (st != PSCHED_OK)
        fuzz_fail("CSV export of a valid schedule failed", st);
    psched_schedule *back;
    st = psched_import_csv(text, length, psched_schedule_plan(s), &back);
    psched_free(text);
    if (st != PSCHED_OK)
        fuzz_fail("re-import of an exported CSV failed", st);
    uint64_t again;
    if (psched_schedule_hash(back, &again) != PSCHED_OK || again != hash)
        fuzz_fail("CSV round trip changed the schedule hash", PSCHED_OK);
    psched_schedule_destroy(back);
}

/* Both lowerings (rendezvous and async) of a valid schedule must succeed
 * and give a schedule that validates under their semantics. */
static void lower(const psched_schedule *s, bool valid)
{
    for (int mode = 0; mode <= 1; mode++) {
        psched_lower_options o = PSCHED_LOWER_OPTIONS_INIT;
        o.mode = mode ? PSCHED_LOWER_ASYNC : PSCHED_LOWER_RENDEZVOUS;
        psched_schedule *l = NULL;
        psched_status st = psched_lower_comm_ex(s, NULL, &o, &l);
        if (valid && st != PSCHED_OK)
            fuzz_fail(mode ? "async lowering of a valid schedule failed"
                           : "lowering a valid schedule failed", st);
        if (st != PSCHED_OK)
            return;
        psched_report *r = NULL;
        st = psched_simulate(l, NULL, &r);
        if (st != PSCHED_OK)
            fuzz_fail(mode ? "an async-lowered schedule does not validate"
                           : "a lowered schedule does not validate", st);
        export_one(l, r, PSCHED_FORMAT_CSV_COMMS, 0, true);
        export_one(l, r, PSCHED_FORMAT_JSON, 0, true);
        psched_report_destroy(r);
        psched_schedule_destroy(l);
    }
}

/* Whether any op of s satisfies `match`. */
static bool any_op(const psched_schedule *s, bool (*match)(const psched_op *))
{
    uint32_t p = psched_schedule_devices(s);
    for (uint32_t d = 0; d < p; d++) {
        size_t n = psched_schedule_op_count(s, d);
        for (size_t i = 0; i < n; i++) {
            psched_op op;
            if (psched_schedule_ops(s, d, i, 1, &op, sizeof op) != PSCHED_OK)
                fuzz_fail("copying one op failed", PSCHED_EINVAL);
            if (match(&op))
                return true;
        }
    }
    return false;
}

/* Vocabulary passes or collectives (issue 19). */
static bool is_vocab(const psched_op *op)
{
    return op->kind >= PSCHED_OP_VOCAB_S;
}

static bool has_vocab(const psched_schedule *s)
{
    return any_op(s, is_vocab);
}

/* Lowered schedules (comm ops) are not lowered again, and their batched
 * groups do not survive the compute CSV, so neither applies to them (nor
 * to activation copies, which lowering refuses); vocabulary passes and
 * collectives go through both. */
static bool is_comm_or_batch(const psched_op *op)
{
    return (op->kind > PSCHED_OP_BW && op->kind < PSCHED_OP_VOCAB_S) ||
           (op->flags & PSCHED_OP_BATCH_NEXT);
}

static bool has_comm_or_batch(const psched_schedule *s)
{
    return any_op(s, is_comm_or_batch);
}

static bool is_copy(const psched_op *op)
{
    return op->kind == PSCHED_OP_OFFLOAD || op->kind == PSCHED_OP_RELOAD;
}

/* Issue 17's first requirement: the lower bounds hold for every valid
 * schedule of the plan, whatever its order; so the schedule's bound
 * (psched_schedule_bound(), vocabulary passes counted when it holds them)
 * is at most its simulated makespan and span. The memory term only where
 * the schedule keeps within the limit and copies no activations (an
 * offloaded activation leaves the device). A plan the bound does not take
 * (chains that do not split it) must say why. */
static void check_bound(const psched_schedule *s, const psched_report *r)
{
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    const psched_plan *plan = psched_schedule_plan(s);
    double limit = psched_plan_memory_limit(plan);
    bool within = !any_op(s, is_copy);
    for (uint32_t d = 0; within && d < psched_schedule_devices(s); d++) {
        double busy, idle, peak;
        if (psched_report_device(r, d, &busy, &idle, &peak) != PSCHED_OK)
            fuzz_fail("report_device failed", PSCHED_EINVAL);
        within = !(peak > limit);
    }
    psched_bound_options o = {PSCHED_BOUND_OPTIONS_VERSION, within ? 0 : PSCHED_BOUND_IGNORE_MEMORY};
    psched_status st = psched_schedule_bound(s, &o, &b);
    if (st != PSCHED_OK) {
        if (psched_last_error()[0] == '\0')
            fuzz_fail("a refused bound left no message", st);
        /* a schedule that keeps within the limit disproves "infeasible" */
        if (st != PSCHED_EINVAL && (st != PSCHED_EINFEASIBLE || within))
            fuzz_fail("bound failed", st);
        return;
    }
    double makespan = psched_report_makespan(r), span = psched_report_span(r);
    double slack = 1e-9 * (1 + makespan);
    if (!(b.makespan <= makespan + slack) || !(b.span <= span + slack)) {
        fprintf(stderr, "bound makespan %.17g span %.17g (work %.17g, critical path %.17g, "
                "device path %.17g, memory %.17g); simulated makespan %.17g span %.17g\n",
                b.makespan, b.span, b.work, b.critical_path, b.device_path, b.memory,
                makespan, span);
        fuzz_fail("a lower bound exceeds the simulated schedule", PSCHED_OK);
    }
}

psched_status fuzz_exercise(const psched_schedule *s)
{
    psched_status valid = psched_validate(s);
    psched_report *r = NULL;
    psched_status sim = psched_simulate(s, NULL, &r);
    if ((valid == PSCHED_OK) != (sim == PSCHED_OK))
        fuzz_fail("simulate and validate disagree", sim);
    uint64_t hash;
    psched_status st = psched_schedule_hash(s, &hash);
    if (st != PSCHED_OK)
        fuzz_fail("hash failed", st);
    read_ops(s);
    if (r) {
        read_report(r);
        check_bound(s, r);
    }
    export_all(s, r, valid == PSCHED_OK);
    psched_report_destroy(r);
    if (!has_comm_or_batch(s)) {
        if (valid == PSCHED_OK)
            csv_round_trip(s, hash);
        lower(s, valid == PSCHED_OK);
    }
    return valid;
}
