/*
 * Chrome / Perfetto Trace Event Format export (the JSON object form), for
 * chrome://tracing, ui.perfetto.dev and speedscope.
 *
 *   {"displayTimeUnit": "ms",
 *    "otherData": {"schedule", "devices", "microbatches", "chunks", "chains",
 *                  "us_per_cost_unit", "makespan", "bubble_ratio"},
 *    "traceEvents": [
 *     {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": <schedule>}},
 *     {"name": "thread_name", "ph": "M", "pid": 0, "tid": d, "args": {"name": "device d"}},
 *     {"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": d, "args": {"sort_index": d}},
 *     {"name": "3I2", "cat": "B", "ph": "X", "ts": 4000, "dur": 2000, "pid": 0, "tid": d,
 *      "args": {"stage": 3, "microbatch": 2, "chunk": 1}},
 *     ...]}
 *
 * The whole run is one process (pid 0) with one thread per device (tid =
 * device), so every device is one track. Every compute op is one complete
 * ("X") event at its simulated time: `name` is its PyTorch action text,
 * `cat` its pipesched kind (F, B, W, BW). Both ops of an overlapped pair are
 * events with the pair's times and `"overlapped": true` in args; the viewers
 * nest two equal intervals on one track. A comm op (SEND_F, RECV_F, SEND_B,
 * RECV_B) that takes time is an X event too; one that takes no time is a
 * thread-scoped instant ("i") event, so the X events of an unlowered
 * schedule are exactly its compute ops. Activation copies (OFFLOAD,
 * RELOAD) run on a copy stream concurrent with compute, so they go on a
 * track of their own, "device d copies" (tid = devices + d), present only
 * when the schedule has copies. With the link model (bytes and links in
 * the costs), each transfer is an X event named "3F2 -> device 4" (cat
 * "TRANSFER") from the time it leaves its device's link to its arrival,
 * on a track per device and direction, "device d link up" (to higher
 * devices, tid = 3·devices + 2d) and "device d link down" (tid + 1).
 *
 * Times: the trace's unit is the microsecond and the cost model's unit is
 * whatever the plan's costs are in (usually milliseconds of a layer), so
 * one cost unit is written as CHROME_US_PER_UNIT = 1000 µs: a unit-cost op
 * shows as 1 ms, and costs given in milliseconds show at their real length.
 * Numbers use "%.15g": exact for the integers of unit-cost schedules and
 * free of binary noise (0.1 × 1000 prints as 100).
 */
#include "formats.h"

#include <math.h>

#define CHROME_US_PER_UNIT 1000.0

static void put_header(psched_buf *b, const psched_schedule *s, const psched_report *r)
{
    const psched_plan *plan = s->plan;
    psched__buf_puts(b, "{\"displayTimeUnit\": \"ms\",\n \"otherData\": {\"schedule\": ");
    psched__buf_json_str(b, s->name);
    psched__buf_printf(b, ", \"devices\": %u, \"microbatches\": %u, \"chunks\": %u, "
                       "\"chains\": %u, \"us_per_cost_unit\": ",
                       plan->devices, plan->microbatches, plan->chunks, plan->chains);
    psched__buf_json_num(b, CHROME_US_PER_UNIT);
    psched__buf_puts(b, ", \"makespan\": ");
    psched__buf_json_num(b, psched_report_makespan(r));
    psched__buf_puts(b, ", \"bubble_ratio\": ");
    psched__buf_json_num(b, psched_report_bubble_ratio(r));
    psched__buf_puts(b, "},\n \"traceEvents\": [\n  {\"name\": \"process_name\", \"ph\": \"M\", "
                        "\"pid\": 0, \"tid\": 0, \"args\": {\"name\": ");
    psched__buf_json_str(b, s->name);
    psched__buf_puts(b, "}}");
    for (uint32_t d = 0; d < s->devices; d++)
        psched__buf_printf(b, ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
                           "\"tid\": %u, \"args\": {\"name\": \"device %u\"}},\n"
                           "  {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, "
                           "\"tid\": %u, \"args\": {\"sort_index\": %u}}",
                           d, d, d, d);
    bool copies = false;
    for (size_t g = 0; g < s->offset[s->devices] && !copies; g++)
        copies = s->ops[g].kind == PSCHED_OP_OFFLOAD || s->ops[g].kind == PSCHED_OP_RELOAD;
    for (uint32_t d = 0; copies && d < s->devices; d++)
        psched__buf_printf(b, ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
                           "\"tid\": %u, \"args\": {\"name\": \"device %u copies\"}},\n"
                           "  {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, "
                           "\"tid\": %u, \"args\": {\"sort_index\": %u}}",
                           s->devices + d, d, s->devices + d, s->devices + d);
    bool colls = false;
    for (size_t g = 0; g < s->offset[s->devices] && !colls; g++)
        colls = s->ops[g].kind == PSCHED_OP_COLLECTIVE;
    /* collectives run on each device's communication stream: a track each */
    for (uint32_t d = 0; colls && d < s->devices; d++)
        psched__buf_printf(b, ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
                           "\"tid\": %u, \"args\": {\"name\": \"device %u collectives\"}},\n"
                           "  {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, "
                           "\"tid\": %u, \"args\": {\"sort_index\": %u}}",
                           2 * s->devices + d, d, 2 * s->devices + d, 2 * s->devices + d);
}

/* The link tracks and their transfers (report from the link model). */
static void put_links(psched_buf *b, const psched_schedule *s, const psched_report *r)
{
    uint32_t p = s->devices;
    for (uint32_t d = 0; d < p; d++)
        for (uint32_t dir = 0; dir < 2; dir++)
            psched__buf_printf(b, ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, "
                               "\"tid\": %u, \"args\": {\"name\": \"device %u link %s\"}},\n"
                               "  {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, "
                               "\"tid\": %u, \"args\": {\"sort_index\": %u}}",
                               3 * p + 2 * d + dir, d, dir ? "down" : "up", 3 * p + 2 * d + dir,
                               3 * p + 2 * d + dir);
    for (uint32_t d = 0; d < p; d++) {
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            if (isnan(r->leave[g]))
                continue;
            const psched_op *op = &s->ops[g];
            /* an F sends to the next stage, a backward to the one before */
            uint32_t to = psched_plan_stage_device(
                s->plan, op->kind == PSCHED_OP_F ? op->stage + 1 : op->stage - 1);
            char name[48];
            psched__op_text(op, name, sizeof name);
            psched__buf_printf(b, ",\n  {\"name\": \"%s -> device %u\", \"cat\": \"TRANSFER\", "
                               "\"ph\": \"X\", \"ts\": ", name, to);
            psched__buf_json_num(b, r->leave[g] * CHROME_US_PER_UNIT);
            psched__buf_puts(b, ", \"dur\": ");
            psched__buf_json_num(b, (r->arrive[g] - r->leave[g]) * CHROME_US_PER_UNIT);
            psched__buf_printf(b, ", \"pid\": 0, \"tid\": %u, \"args\": {\"stage\": %u, "
                               "\"microbatch\": %u}}",
                               3 * p + 2 * d + (to < d), op->stage, op->microbatch);
        }
    }
}

static void put_event(psched_buf *b, const psched_op *op, uint32_t device, double start,
                      double end, bool overlapped)
{
    char name[48];
    psched__op_text(op, name, sizeof name);
    bool instant = op->kind > PSCHED_OP_BW && op->kind != PSCHED_OP_VOCAB_S &&
                   op->kind != PSCHED_OP_VOCAB_T && !(end > start);
    psched__buf_printf(b, ",\n  {\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"%s\", \"ts\": ",
                       name, psched__kind_name(op->kind), instant ? "i" : "X");
    psched__buf_json_num(b, start * CHROME_US_PER_UNIT);
    if (instant) {
        psched__buf_puts(b, ", \"s\": \"t\"");
    } else {
        psched__buf_puts(b, ", \"dur\": ");
        psched__buf_json_num(b, (end - start) * CHROME_US_PER_UNIT);
    }
    psched__buf_printf(b, ", \"pid\": 0, \"tid\": %u, \"args\": {\"stage\": %u, "
                       "\"microbatch\": %u, \"chunk\": %u%s}}",
                       device, op->stage, op->microbatch, (unsigned)op->chunk,
                       overlapped ? ", \"overlapped\": true" : "");
}

static psched_status put_device(psched_buf *b, const psched_schedule *s, const psched_report *r,
                                uint32_t d)
{
    size_t first = s->offset[d], n = s->offset[d + 1] - first;
    for (size_t i = 0; i < n; i++) {
        double start, end;
        psched_status st = psched_report_op_times(r, d, i, 1, &start, &end);
        if (st != PSCHED_OK)
            return st;
        const psched_op *op = &s->ops[first + i];
        bool overlapped = (op->flags & PSCHED_OP_OVERLAP_NEXT) ||
                          (i > 0 && (s->ops[first + i - 1].flags & PSCHED_OP_OVERLAP_NEXT));
        bool copy = op->kind == PSCHED_OP_OFFLOAD || op->kind == PSCHED_OP_RELOAD;
        uint32_t tid = copy ? s->devices + d
                            : op->kind == PSCHED_OP_COLLECTIVE ? 2 * s->devices + d : d;
        put_event(b, op, tid, start, end, overlapped);
    }
    return PSCHED_OK;
}

psched_status psched__export_chrome(const psched_schedule *s, const psched_report *r,
                                    char **text, size_t *length)
{
    psched_buf b = {0};
    psched_status st = PSCHED_OK;
    put_header(&b, s, r);
    for (uint32_t d = 0; d < s->devices && st == PSCHED_OK; d++)
        st = put_device(&b, s, r, d);
    if (st == PSCHED_OK && r && r->leave && r->arrive)
        put_links(&b, s, r);
    if (st != PSCHED_OK) {
        psched__dealloc(b.data);
        return st;
    }
    psched__buf_puts(&b, "\n ]}\n");
    return psched__buf_finish(&b, text, length);
}
