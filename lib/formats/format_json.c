/*
 * JSON export: one object, format_version 1.
 *
 *   format_version  1
 *   schedule        generator name ("csv" for an imported schedule)
 *   hash            psched_schedule_hash as 16 lowercase hex digits
 *   devices, microbatches, chunks, chains    the resolved plan's p, m, v, chains
 *   placement       "loop" | "vshape" | "custom"
 *   stage_device    [device of stage s for s = 0..S-1]
 *   costs           [{"f","b","w"} per stage]: t_F, t_B, t_W
 *   memory          [{"f","b","w"} per stage]: memory deltas
 *   comm            latency on cross-device edges
 *   memory_limit    per-device limit, null when unlimited
 *   ops             one array per device, in list order, of
 *                   {"kind": "F|B|W|BW|SEND_F|RECV_F|SEND_B|RECV_B",
 *                    "stage", "microbatch", "chunk",
 *                    "overlap_next": true (only when set),
 *                    "batch_next": true (only when set),
 *                    "peer", "group" (comm ops only: the device at the other
 *                      end, and the index of the comm unit on this device,
 *                      from 0 in list order; the ops of one batched group
 *                      share it, a lone SEND/RECV has its own),
 *                    "start", "end" (only with a report)}
 *   report          (only with a report) {"makespan", "span", "bubble_ratio",
 *                   "peak_memory_M", "busy": [...], "idle": [...],
 *                   "peak_memory": [...]} with one entry per device
 *
 * Kinds are pipesched's names (B = backward for inputs, PyTorch "I"; BW =
 * full backward, PyTorch "B"). Numbers use "%.17g", which round-trips every
 * double and prints integral values without a fraction; NaN and infinities
 * are written as null.
 */
#include "formats.h"

#include <inttypes.h>
#include <math.h>

static void put_cost3(psched_buf *b, psched_cost3 c)
{
    psched__buf_puts(b, "{\"f\": ");
    psched__buf_json_num(b, c.f);
    psched__buf_puts(b, ", \"b\": ");
    psched__buf_json_num(b, c.b);
    psched__buf_puts(b, ", \"w\": ");
    psched__buf_json_num(b, c.w);
    psched__buf_puts(b, "}");
}

static void put_plan(psched_buf *b, const psched_plan *plan)
{
    uint32_t stages = plan->devices * plan->chunks;
    psched__buf_printf(b, "  \"devices\": %u,\n  \"microbatches\": %u,\n  \"chunks\": %u,\n"
                       "  \"chains\": %u,\n  \"placement\": ",
                       plan->devices, plan->microbatches, plan->chunks, plan->chains);
    psched__buf_json_str(b, psched__placement_name(plan->placement));
    psched__buf_puts(b, ",\n  \"stage_device\": [");
    for (uint32_t s = 0; s < stages; s++)
        psched__buf_printf(b, "%s%u", s ? ", " : "", psched_plan_stage_device(plan, s));
    psched__buf_puts(b, "],\n  \"costs\": [");
    for (uint32_t s = 0; s < stages; s++) {
        psched__buf_puts(b, s ? ", " : "");
        put_cost3(b, psched__plan_cost(plan, s));
    }
    psched__buf_puts(b, "],\n  \"memory\": [");
    for (uint32_t s = 0; s < stages; s++) {
        psched__buf_puts(b, s ? ", " : "");
        put_cost3(b, psched__plan_mem(plan, s));
    }
    psched__buf_puts(b, "],\n  \"comm\": ");
    psched__buf_json_num(b, plan->comm);
    psched__buf_puts(b, ",\n  \"memory_limit\": ");
    psched__buf_json_num(b, plan->memory_limit);
    psched__buf_puts(b, ",\n");
}

/* *group: the comm unit counter of the device, advanced past each unit. */
static psched_status put_op(psched_buf *b, const psched_schedule *s, const psched_op *op,
                            const psched_report *report, uint32_t device, size_t index,
                            uint32_t *group)
{
    psched__buf_puts(b, "{\"kind\": ");
    psched__buf_json_str(b, psched__kind_name(op->kind));
    psched__buf_printf(b, ", \"stage\": %u, \"microbatch\": %u, \"chunk\": %u", op->stage,
                       op->microbatch, (unsigned)op->chunk);
    if (op->flags & PSCHED_OP_OVERLAP_NEXT)
        psched__buf_puts(b, ", \"overlap_next\": true");
    if (op->flags & PSCHED_OP_BATCH_NEXT)
        psched__buf_puts(b, ", \"batch_next\": true");
    if (op->kind >= PSCHED_OP_SEND_F && op->kind <= PSCHED_OP_RECV_B) { /* not the copies */
        /* SEND_F and RECV_B talk to the next stage of the chain, RECV_F and
         * SEND_B to the previous one; the validator checks the stage exists,
         * a schedule that was never validated may name none. */
        bool next = op->kind == PSCHED_OP_SEND_F || op->kind == PSCHED_OP_RECV_B;
        uint32_t stages = s->plan->devices * s->plan->chunks;
        if (op->stage < stages && !(next ? psched__stage_last(s->plan, op->stage)
                                         : psched__stage_first(s->plan, op->stage)))
            psched__buf_printf(b, ", \"peer\": %u",
                               psched_plan_stage_device(s->plan, next ? op->stage + 1
                                                                      : op->stage - 1));
        else
            psched__buf_puts(b, ", \"peer\": null");
        psched__buf_printf(b, ", \"group\": %u", *group);
        if (!(op->flags & PSCHED_OP_BATCH_NEXT))
            (*group)++;
    }
    if (report) {
        double start, end;
        psched_status st = psched_report_op_times(report, device, index, 1, &start, &end);
        if (st != PSCHED_OK)
            return st;
        psched__buf_puts(b, ", \"start\": ");
        psched__buf_json_num(b, start);
        psched__buf_puts(b, ", \"end\": ");
        psched__buf_json_num(b, end);
    }
    psched__buf_puts(b, "}");
    return PSCHED_OK;
}

static psched_status put_ops(psched_buf *b, const psched_schedule *s, const psched_report *report)
{
    psched__buf_puts(b, "  \"ops\": [");
    for (uint32_t d = 0; d < s->devices; d++) {
        size_t first = s->offset[d], last = s->offset[d + 1];
        uint32_t group = 0;
        psched__buf_puts(b, d ? ",\n    [" : "\n    [");
        for (size_t i = first; i < last; i++) {
            psched__buf_puts(b, i > first ? ",\n      " : "\n      ");
            psched_status st = put_op(b, s, &s->ops[i], report, d, i - first, &group);
            if (st != PSCHED_OK)
                return st;
        }
        psched__buf_puts(b, last > first ? "\n    ]" : "]");
    }
    psched__buf_puts(b, s->devices ? "\n  ]" : "]");
    return PSCHED_OK;
}

/* One array of a per-device figure; which = 0 busy, 1 idle, 2 peak memory. */
static void put_device_figures(psched_buf *b, const psched_report *r, const char *key, int which)
{
    psched__buf_printf(b, ",\n    \"%s\": [", key);
    for (uint32_t d = 0; d < psched_report_devices(r); d++) {
        double fig[3] = {0, 0, 0};
        psched_report_device(r, d, &fig[0], &fig[1], &fig[2]);
        psched__buf_puts(b, d ? ", " : "");
        psched__buf_json_num(b, fig[which]);
    }
    psched__buf_puts(b, "]");
}

static void put_report(psched_buf *b, const psched_report *r)
{
    psched__buf_puts(b, ",\n  \"report\": {\n    \"makespan\": ");
    psched__buf_json_num(b, psched_report_makespan(r));
    psched__buf_puts(b, ",\n    \"span\": ");
    psched__buf_json_num(b, psched_report_span(r));
    psched__buf_puts(b, ",\n    \"bubble_ratio\": ");
    psched__buf_json_num(b, psched_report_bubble_ratio(r));
    psched__buf_puts(b, ",\n    \"peak_memory_M\": ");
    psched__buf_json_num(b, psched_report_peak_memory_M(r));
    put_device_figures(b, r, "busy", 0);
    put_device_figures(b, r, "idle", 1);
    put_device_figures(b, r, "peak_memory", 2);
    psched__buf_puts(b, "\n  }");
}

psched_status psched__export_json(const psched_schedule *s, const psched_report *report,
                                  char **text, size_t *length)
{
    uint64_t hash = 0;
    psched_status st = psched_schedule_hash(s, &hash);
    if (st != PSCHED_OK)
        return st;
    psched_buf b = {0};
    psched__buf_puts(&b, "{\n  \"format_version\": 1,\n  \"schedule\": ");
    psched__buf_json_str(&b, s->name);
    psched__buf_printf(&b, ",\n  \"hash\": \"%016" PRIx64 "\",\n", hash);
    put_plan(&b, s->plan);
    st = put_ops(&b, s, report);
    if (st != PSCHED_OK) {
        psched__dealloc(b.data);
        return st;
    }
    if (report)
        put_report(&b, report);
    psched__buf_puts(&b, "\n}\n");
    return psched__buf_finish(&b, text, length);
}
