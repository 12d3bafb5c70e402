/* --costs-file: per-stage costs and memory deltas from a small CSV,
 *
 *     # comment
 *     stage,F,B,W,mem_F,mem_B,mem_W      (optional header row)
 *     3,3,6,3                            (the last of four stages 3x slower)
 *
 * and, for the cost model extensions (docs/simulator.md), an 8th column
 * `overlap` (time an overlapped F&B pair of the stage saves) and 9th and
 * 10th `bytes_F,bytes_B` (bytes the stage sends forward and backward).
 *
 * Stages not listed keep the --cost / --mem values. Every error names the
 * file and line.
 *
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 10

static const char *const column_names[MAX_FIELDS] = {
    "stage", "F", "B", "W", "mem_F", "mem_B", "mem_W", "overlap", "bytes_F", "bytes_B"};

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Split @p text at commas into trimmed fields; returns the field count
 * (MAX_FIELDS + 1 when there are more than MAX_FIELDS). */
static int split_fields(char *text, char *fields[MAX_FIELDS])
{
    int n = 0;
    for (char *field = text; field; n++) {
        char *comma = strchr(field, ',');
        if (comma)
            *comma = '\0';
        if (n == MAX_FIELDS)
            return MAX_FIELDS + 1;
        fields[n] = trim(field);
        field = comma ? comma + 1 : NULL;
    }
    return n;
}

typedef struct costs_ctx {
    psched_plan *plan;
    const char *path;
    unsigned line;
    uint32_t stages;
    unsigned *set_on_line; /* per stage: line that set it, 0 if none */
    bool header_allowed;
} costs_ctx;

static int line_error(const costs_ctx *c, const char *what, const char *value)
{
    cli_error("%s:%u: %s '%s'", c->path, c->line, what, value);
    return CLI_USAGE;
}

static int apply_values(costs_ctx *c, uint32_t stage, char *fields[MAX_FIELDS], int n)
{
    double v[MAX_FIELDS];
    for (int i = 1; i < n; i++) {
        bool nonneg = i <= 3 || i >= 7;
        if (cli_strtod(fields[i], &v[i]) != 0 || (nonneg && v[i] < 0)) {
            cli_error("%s:%u: column %d (%s) '%s': expected a finite number%s", c->path, c->line,
                      i + 1, column_names[i], fields[i], nonneg ? " >= 0" : "");
            return CLI_USAGE;
        }
    }
    psched_status st = psched_plan_set_stage_cost(c->plan, stage, v[1], v[2], v[3]);
    if (st == PSCHED_OK && n >= 7)
        st = psched_plan_set_stage_mem(c->plan, stage, v[4], v[5], v[6]);
    if (st == PSCHED_OK && n >= 8)
        st = psched_plan_set_stage_overlap_saving(c->plan, stage, v[7]);
    if (st == PSCHED_OK && n == 10)
        st = psched_plan_set_stage_comm_bytes(c->plan, stage, v[8], v[9]);
    if (st != PSCHED_OK) {
        cli_error("%s:%u: %s", c->path, c->line, psched_last_error());
        return cli_exit_code(st);
    }
    return CLI_OK;
}

static int parse_line(costs_ctx *c, char *text)
{
    char *hash = strchr(text, '#');
    if (hash)
        *hash = '\0';
    text = trim(text);
    if (text[0] == '\0')
        return CLI_OK;
    char *fields[MAX_FIELDS];
    int n = split_fields(text, fields);
    uint32_t stage;
    bool numeric = cli_strtou32(fields[0], &stage) == 0;
    /* A header names its columns; a first cell that looks like a number
     * but does not parse as a stage ("-1", "4294967296") is an error. */
    bool looks_numeric = strchr("0123456789+-.", fields[0][0]) != NULL && fields[0][0] != '\0';
    if (!numeric && !looks_numeric && c->header_allowed) {
        c->header_allowed = false;
        return CLI_OK;
    }
    c->header_allowed = false;
    if (n != 4 && n != 7 && n != 8 && n != 10) {
        cli_error("%s:%u: expected 4 or 7 fields (stage,F,B,W[,mem_F,mem_B,mem_W]), or 8 or 10 "
                  "with the cost model's [,overlap[,bytes_F,bytes_B]], got %s%d",
                  c->path, c->line, n > MAX_FIELDS ? "more than " : "",
                  n > MAX_FIELDS ? MAX_FIELDS : n);
        return CLI_USAGE;
    }
    if (!numeric)
        return line_error(c, "expected a stage index, got", fields[0]);
    if (stage >= c->stages) {
        cli_error("%s:%u: stage %u out of range: the plan has %u stages (0..%u)", c->path, c->line,
                  (unsigned)stage, (unsigned)c->stages, (unsigned)c->stages - 1);
        return CLI_USAGE;
    }
    if (c->set_on_line[stage]) {
        cli_error("%s:%u: stage %u already set on line %u", c->path, c->line, (unsigned)stage,
                  c->set_on_line[stage]);
        return CLI_USAGE;
    }
    c->set_on_line[stage] = c->line;
    return apply_values(c, stage, fields, n);
}

int cli_apply_costs_file(psched_plan *plan, const char *path)
{
    char *data;
    size_t length;
    int rc = cli_read_file(path, CLI_MAX_TABLE_BYTES, &data, &length);
    if (rc != CLI_OK)
        return rc;
    costs_ctx c = {plan, path, 0, psched_plan_stages(plan), NULL, true};
    c.set_on_line = calloc(c.stages ? c.stages : 1, sizeof *c.set_on_line);
    if (!c.set_on_line) {
        cli_error("%s: out of memory", path);
        rc = CLI_USAGE;
    }
    for (char *line = data; rc == CLI_OK && line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        c.line++;
        rc = parse_line(&c, line);
        line = nl ? nl + 1 : NULL;
    }
    free(c.set_on_line);
    free(data);
    return rc;
}
