/* Simulation results as a human summary or as JSON fields.
 *
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NUM_BUF 40

/* Shortest "%.Ng" that reads back as the same double, so integers print
 * without decimals and 0.1 stays "0.1". */
static const char *fmt_exact(char buf[NUM_BUF], double x)
{
    if (!isfinite(x))
        return "null";
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, NUM_BUF, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return buf;
}

/* For people: whole numbers in full, others to six significant digits. */
static const char *fmt_human(char buf[NUM_BUF], double x)
{
    if (!isfinite(x))
        return "n/a";
    if (x == floor(x) && fabs(x) < 1e15)
        snprintf(buf, NUM_BUF, "%.0f", x);
    else
        snprintf(buf, NUM_BUF, "%.6g", x);
    return buf;
}

/* A gap as a percentage ("22.2%"), "-" when it is not a number. */
static const char *fmt_percent(char buf[NUM_BUF], double x)
{
    if (!isfinite(x))
        return "-";
    snprintf(buf, NUM_BUF, "%.3g%%", 100 * x);
    return buf;
}

void cli_json_number(FILE *f, double x)
{
    char buf[NUM_BUF];
    fputs(fmt_exact(buf, x), f);
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

const char *cli_placement_name(psched_placement placement)
{
    const char *name = psched_placement_str(placement);
    return name ? name : "auto";
}

enum { COL_BUSY, COL_IDLE, COL_PEAK, NCOLS };

/* One per-device figure, or a status on failure (message set by the library). */
static psched_status device_figure(const psched_report *r, uint32_t d, int col, double *out)
{
    double v[NCOLS];
    psched_status st = psched_report_device(r, d, &v[COL_BUSY], &v[COL_IDLE], &v[COL_PEAK]);
    if (st == PSCHED_OK)
        *out = v[col];
    return st;
}

static int json_device_array(FILE *f, const psched_report *r, const char *key, int col)
{
    fprintf(f, ",\n  ");
    cli_json_string(f, key);
    fputs(": [", f);
    for (uint32_t d = 0; d < psched_report_devices(r); d++) {
        double x;
        psched_status st = device_figure(r, d, col, &x);
        if (st != PSCHED_OK)
            return cli_fail(st, "simulation report");
        fputs(d ? ", " : "", f);
        cli_json_number(f, x);
    }
    fputc(']', f);
    return CLI_OK;
}

static void json_key_number(FILE *f, const char *key, double x)
{
    fprintf(f, ",\n  \"%s\": ", key);
    cli_json_number(f, x);
}

/* Lower bounds of the schedule's plan: every valid order of it obeys them
 * (with its vocabulary passes counted when it holds them). */
static psched_status plan_bound(const psched_schedule *s, psched_bound_info *b)
{
    memset(b, 0, sizeof *b);
    b->version = PSCHED_BOUND_INFO_VERSION;
    return psched_schedule_bound(s, NULL, b);
}

/* figure / bound - 1 (documented in docs/simulator.md); 0 when both are 0,
 * NAN (printed null or "-") when only the bound is 0. */
static double gap_of(double figure, double bound)
{
    if (bound > 0)
        return figure / bound - 1;
    return figure == 0 ? 0 : NAN;
}

/* ",\n  "lower_bound": {...},\n  "gap": {...}" or nulls when the library
 * cannot bound this plan. */
static void json_bound_keys(FILE *f, const psched_schedule *s, const psched_report *r)
{
    psched_bound_info b;
    if (plan_bound(s, &b) != PSCHED_OK) {
        fputs(",\n  \"lower_bound\": null,\n  \"gap\": null", f);
        return;
    }
    const char *keys[] = {"makespan", "span", "work", "critical_path", "device_path", "memory"};
    double values[] = {b.makespan, b.span, b.work, b.critical_path, b.device_path, b.memory};
    fputs(",\n  \"lower_bound\": {", f);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", keys[i]);
        cli_json_number(f, values[i]);
    }
    fputs("},\n  \"gap\": {\"makespan\": ", f);
    cli_json_number(f, gap_of(psched_report_makespan(r), b.makespan));
    fputs(", \"span\": ", f);
    cli_json_number(f, gap_of(psched_report_span(r), b.span));
    fputs("}", f);
}

/* What an exact generator proved about the order (psched_schedule_solve_
 * status()): 1 and its status and gap, 0 when it recorded nothing (every
 * heuristic, imported and lowered schedules). */
static int solve_status_of(const psched_schedule *s, psched_solve_status *status, double *gap)
{
    return psched_schedule_solve_status(s, status, gap) == PSCHED_OK;
}

/* ",\n  "solve_status": {"status": ..., "gap": ...}" or null. */
static void json_solve_status_key(FILE *f, const psched_schedule *s)
{
    psched_solve_status status;
    double gap;
    if (!solve_status_of(s, &status, &gap)) {
        fputs(",\n  \"solve_status\": null", f);
        return;
    }
    fprintf(f, ",\n  \"solve_status\": {\"status\": \"%s\", \"gap\": ",
            status == PSCHED_SOLVE_OPTIMAL ? "optimal" : "feasible");
    cli_json_number(f, gap);
    fputc('}', f);
}

/* "solve status ..." for a schedule an exact generator proved something
 * of; nothing otherwise. `label` is the line's padded label. */
static void text_solve_status(FILE *f, const psched_schedule *s, const char *label)
{
    psched_solve_status status;
    double gap;
    if (!solve_status_of(s, &status, &gap))
        return;
    char buf[NUM_BUF];
    if (status == PSCHED_SOLVE_OPTIMAL)
        fprintf(f, "%soptimal (proven: no order of this plan has a shorter span)\n", label);
    else
        fprintf(f, "%sfeasible (the exact generator stopped; (span - its bound) / span = %s)\n",
                label, fmt_percent(buf, gap));
}

/* The shape keys every schedule-printing command starts with. */
static void json_shape_keys(FILE *f, const psched_schedule *s)
{
    const psched_plan *plan = psched_schedule_plan(s);
    fputs("  \"schedule\": ", f);
    cli_json_string(f, psched_schedule_name(s));
    fprintf(f, ",\n  \"placement\": \"%s\"", cli_placement_name(psched_plan_placement(plan)));
    fprintf(f, ",\n  \"devices\": %" PRIu32, psched_plan_devices(plan));
    fprintf(f, ",\n  \"microbatches\": %" PRIu32, psched_plan_microbatches(plan));
    fprintf(f, ",\n  \"chunks\": %" PRIu32, psched_plan_chunks(plan));
    fprintf(f, ",\n  \"chains\": %" PRIu32, psched_plan_chains(plan));
    fprintf(f, ",\n  \"stages\": %" PRIu32, psched_plan_stages(plan));
    fprintf(f, ",\n  \"ops\": %zu", psched_schedule_total_ops(s));
}

int cli_report_json_fields(FILE *f, const psched_schedule *s, const psched_report *r)
{
    uint64_t hash;
    psched_status st = psched_schedule_hash(s, &hash);
    if (st != PSCHED_OK)
        return cli_fail(st, "hash");
    json_shape_keys(f, s);
    json_key_number(f, "makespan", psched_report_makespan(r));
    json_key_number(f, "span", psched_report_span(r));
    json_key_number(f, "bubble_ratio", psched_report_bubble_ratio(r));
    int rc = json_device_array(f, r, "busy", COL_BUSY);
    if (rc == CLI_OK)
        rc = json_device_array(f, r, "idle", COL_IDLE);
    if (rc == CLI_OK)
        rc = json_device_array(f, r, "peak_memory", COL_PEAK);
    if (rc != CLI_OK)
        return rc;
    json_key_number(f, "peak_memory_M", psched_report_peak_memory_M(r));
    fprintf(f, ",\n  \"hash\": \"%016" PRIx64 "\"", hash);
    json_bound_keys(f, s, r);
    json_solve_status_key(f, s);
    return CLI_OK;
}

/* Per-device table with right-aligned columns sized to their widest cell. */
static int device_table(FILE *f, const psched_report *r)
{
    static const char *const heads[NCOLS] = {"busy", "idle", "peak memory"};
    uint32_t p = psched_report_devices(r);
    int width[NCOLS], dev_width = (int)strlen("device");
    char buf[NUM_BUF];
    for (int col = 0; col < NCOLS; col++) {
        width[col] = (int)strlen(heads[col]);
        for (uint32_t d = 0; d < p; d++) {
            double x;
            psched_status st = device_figure(r, d, col, &x);
            if (st != PSCHED_OK)
                return cli_fail(st, "simulation report");
            int w = (int)strlen(fmt_human(buf, x));
            width[col] = w > width[col] ? w : width[col];
        }
    }
    fprintf(f, "%*s  %*s  %*s  %*s\n", dev_width, "device", width[0], heads[0], width[1],
            heads[1], width[2], heads[2]);
    for (uint32_t d = 0; d < p; d++) {
        fprintf(f, "%*" PRIu32, dev_width, d);
        for (int col = 0; col < NCOLS; col++) {
            double x = 0;
            device_figure(r, d, col, &x);
            fprintf(f, "  %*s", width[col], fmt_human(buf, x));
        }
        fputc('\n', f);
    }
    return CLI_OK;
}

int cli_report_text(FILE *f, const psched_schedule *s, const psched_report *r)
{
    const psched_plan *plan = psched_schedule_plan(s);
    uint64_t hash;
    psched_status st = psched_schedule_hash(s, &hash);
    if (st != PSCHED_OK)
        return cli_fail(st, "hash");
    char buf[NUM_BUF];
    fprintf(f, "schedule       %s\n", psched_schedule_name(s));
    fprintf(f, "placement      %s\n", cli_placement_name(psched_plan_placement(plan)));
    fprintf(f, "devices        %" PRIu32 "\n", psched_plan_devices(plan));
    fprintf(f, "microbatches   %" PRIu32 "\n", psched_plan_microbatches(plan));
    fprintf(f, "chunks         %" PRIu32 "\n", psched_plan_chunks(plan));
    if (psched_plan_chains(plan) != 1)
        fprintf(f, "chains         %" PRIu32 "\n", psched_plan_chains(plan));
    fprintf(f, "makespan       %s\n", fmt_human(buf, psched_report_makespan(r)));
    fprintf(f, "span           %s\n", fmt_human(buf, psched_report_span(r)));
    fprintf(f, "bubble ratio   %s\n", fmt_human(buf, psched_report_bubble_ratio(r)));
    fprintf(f, "peak memory M  %s\n", fmt_human(buf, psched_report_peak_memory_M(r)));
    psched_bound_info b;
    if (plan_bound(s, &b) == PSCHED_OK) {
        char buf2[NUM_BUF];
        fprintf(f, "lower bound    makespan %s, span %s\n", fmt_human(buf, b.makespan),
                fmt_human(buf2, b.span));
        fprintf(f, "gap            makespan %s, span %s\n",
                fmt_percent(buf, gap_of(psched_report_makespan(r), b.makespan)),
                fmt_percent(buf2, gap_of(psched_report_span(r), b.span)));
    } else {
        fprintf(f, "lower bound    n/a (%s)\n", psched_last_error());
    }
    text_solve_status(f, s, "solve status   ");
    fprintf(f, "hash           %016" PRIx64 "\n\n", hash);
    return device_table(f, r);
}

int cli_bound_json(FILE *f, const psched_schedule *s, const psched_report *r)
{
    psched_bound_info b;
    psched_status st = plan_bound(s, &b);
    if (st != PSCHED_OK)
        return cli_fail(st, "bound");
    fputs("{\n", f);
    json_shape_keys(f, s);
    json_key_number(f, "makespan", psched_report_makespan(r));
    json_key_number(f, "span", psched_report_span(r));
    json_bound_keys(f, s, r);
    json_solve_status_key(f, s);
    fputs("\n}\n", f);
    return CLI_OK;
}

int cli_bound_text(FILE *f, const psched_schedule *s, const psched_report *r)
{
    psched_bound_info b;
    psched_status st = plan_bound(s, &b);
    if (st != PSCHED_OK)
        return cli_fail(st, "bound");
    const psched_plan *plan = psched_schedule_plan(s);
    char buf[NUM_BUF];
    fprintf(f, "schedule         %s\n", psched_schedule_name(s));
    fprintf(f, "placement        %s\n", cli_placement_name(psched_plan_placement(plan)));
    fprintf(f, "devices          %" PRIu32 "\n", psched_plan_devices(plan));
    fprintf(f, "microbatches     %" PRIu32 "\n", psched_plan_microbatches(plan));
    fprintf(f, "chunks           %" PRIu32 "\n", psched_plan_chunks(plan));
    fprintf(f, "makespan bound   %s (the largest term below)\n", fmt_human(buf, b.makespan));
    fprintf(f, "  work           %s\n", fmt_human(buf, b.work));
    fprintf(f, "  critical path  %s\n", fmt_human(buf, b.critical_path));
    fprintf(f, "  device path    %s\n", fmt_human(buf, b.device_path));
    fprintf(f, "  memory         %s\n", fmt_human(buf, b.memory));
    fprintf(f, "span bound       %s (work)\n", fmt_human(buf, b.span));
    fprintf(f, "makespan         %s", fmt_human(buf, psched_report_makespan(r)));
    fprintf(f, " (gap %s)\n", fmt_percent(buf, gap_of(psched_report_makespan(r), b.makespan)));
    fprintf(f, "span             %s", fmt_human(buf, psched_report_span(r)));
    fprintf(f, " (gap %s)\n", fmt_percent(buf, gap_of(psched_report_span(r), b.span)));
    text_solve_status(f, s, "solve status     ");
    return CLI_OK;
}
