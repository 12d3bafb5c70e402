/* The cost model extension flags (issue 18, docs/simulator.md "Cost model
 * extensions"): --overlap S, --microbatch-weights LIST|FILE, --comm-bytes
 * F[,B], --devices-per-node G, --intra-node BW[,LAT], --inter-node BW[,LAT],
 * --pcie-bandwidth B and --offload all|selective|budget=X.
 * Kept apart from cli_args.c, which only routes these names here.
 *
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Splits "a,b" into at most @p max finite numbers >= 0; returns how many,
 * or -1 when a field does not parse. */
static int numbers(const char *text, double *out, int max)
{
    char buf[256];
    if (strlen(text) >= sizeof buf)
        return -1;
    strcpy(buf, text);
    int n = 0;
    for (char *field = buf; field; n++) {
        char *comma = strchr(field, ',');
        if (comma)
            *comma = '\0';
        if (n == max || cli_strtod(field, &out[n]) != 0 || out[n] < 0)
            return -1;
        field = comma ? comma + 1 : NULL;
    }
    return n;
}

/* BW[,LAT]: a bandwidth > 0 and an optional latency >= 0. */
static int link_flag(const char *flag, const char *v, double link[2])
{
    double x[2] = {INFINITY, 0};
    int n = numbers(v, x, 2);
    if (n < 1 || x[0] <= 0) {
        cli_error("--%s '%s': expected BANDWIDTH[,LATENCY]: a bandwidth > 0 (bytes per time "
                  "unit) and a latency >= 0", flag, v);
        return CLI_USAGE;
    }
    link[0] = x[0];
    link[1] = x[1];
    return CLI_OK;
}

int cli_costmodel_flag(cli_costmodel *c, const char *flag, const char *v)
{
    double x[2];
    if (strcmp(flag, "overlap") == 0) {
        if (numbers(v, x, 1) != 1) {
            cli_error("--overlap '%s': expected a finite number >= 0 (the time an overlapped "
                      "F&B pair saves)", v);
            return CLI_USAGE;
        }
        c->have_overlap = true;
        c->overlap = x[0];
    } else if (strcmp(flag, "microbatch-weights") == 0) {
        c->weights = v;
    } else if (strcmp(flag, "comm-bytes") == 0) {
        int n = numbers(v, x, 2);
        if (n < 1) {
            cli_error("--comm-bytes '%s': expected FORWARD[,BACKWARD]: bytes >= 0 a stage sends "
                      "forward (activations) and backward (gradients)", v);
            return CLI_USAGE;
        }
        c->have_bytes = true;
        c->bytes[0] = x[0];
        c->bytes[1] = n == 2 ? x[1] : x[0];
    } else if (strcmp(flag, "devices-per-node") == 0) {
        if (cli_strtou32(v, &c->node_devices) != 0 || c->node_devices < 1) {
            cli_error("--devices-per-node '%s': expected an integer >= 1", v);
            return CLI_USAGE;
        }
        c->have_topology = true;
    } else if (strcmp(flag, "intra-node") == 0) {
        c->have_topology = true;
        return link_flag(flag, v, c->intra);
    } else if (strcmp(flag, "inter-node") == 0) {
        c->have_topology = true;
        return link_flag(flag, v, c->inter);
    } else if (strcmp(flag, "pcie-bandwidth") == 0) {
        if (numbers(v, x, 1) != 1 || x[0] <= 0) {
            cli_error("--pcie-bandwidth '%s': expected a number > 0 (memory units copied per "
                      "time unit)", v);
            return CLI_USAGE;
        }
        c->have_pcie = true;
        c->pcie = x[0];
    } else if (strncmp(flag, "vocab", 5) == 0 || strcmp(flag, "collective-bytes") == 0 ||
               strcmp(flag, "model") == 0) {
        return cli_vocab_flag(c, flag, v);
    } else if (strcmp(flag, "offload") == 0) {
        if (strcmp(v, "all") == 0) {
            c->offload = PSCHED_OFFLOAD_ALL;
        } else if (strcmp(v, "selective") == 0) {
            c->offload = PSCHED_OFFLOAD_SELECTIVE;
        } else if (strncmp(v, "budget=", 7) == 0 && numbers(v + 7, x, 1) == 1 && x[0] > 0) {
            c->offload = PSCHED_OFFLOAD_BUDGET;
            c->budget = x[0];
        } else {
            cli_error("--offload '%s': expected all, selective or budget=X (X > 0: peak memory "
                      "per device)", v);
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

void cli_costmodel_defaults(cli_costmodel *c)
{
    memset(c, 0, sizeof *c);
    c->intra[0] = c->inter[0] = INFINITY;
}

/* The weights: a comma list ("1,1,4"), else a file of numbers separated by
 * commas, blanks or newlines, '#' starting a comment. */
static int read_weights(const char *spec, uint32_t m, double **out, uint32_t *count)
{
    char *data = NULL;
    size_t length;
    bool inline_list = spec[0] != '\0' && strspn(spec, "0123456789.,eE+-") == strlen(spec);
    if (!inline_list) {
        int rc = cli_read_file(spec, CLI_MAX_TABLE_BYTES, &data, &length);
        if (rc != CLI_OK)
            return rc;
    }
    const char *text = data ? data : spec;
    double *w = calloc(m ? m : 1, sizeof *w);
    uint32_t n = 0;
    int rc = w ? CLI_OK : CLI_USAGE;
    for (const char *s = text; rc == CLI_OK && *s;) {
        if (*s == '#') {
            s += strcspn(s, "\n");
            continue;
        }
        if (isspace((unsigned char)*s) || *s == ',') {
            s++;
            continue;
        }
        size_t len = strcspn(s, ", \t\r\n#");
        char field[64];
        if (len >= sizeof field || n >= m) {
            cli_error("--microbatch-weights '%s': expected %u weights (one per micro-batch)%s",
                      spec, (unsigned)m, n >= m ? ", got more" : "");
            rc = CLI_USAGE;
            break;
        }
        memcpy(field, s, len);
        field[len] = '\0';
        if (cli_strtod(field, &w[n]) != 0 || !(w[n] > 0)) {
            cli_error("--microbatch-weights '%s': weight %u '%s' is not a finite number > 0",
                      spec, (unsigned)n, field);
            rc = CLI_USAGE;
            break;
        }
        n++;
        s += len;
    }
    if (rc == CLI_OK && n != m) {
        cli_error("--microbatch-weights '%s': expected %u weights (one per micro-batch), got %u",
                  spec, (unsigned)m, (unsigned)n);
        rc = CLI_USAGE;
    }
    free(data);
    if (rc != CLI_OK) {
        free(w);
        return rc;
    }
    *out = w;
    *count = n;
    return CLI_OK;
}

int cli_apply_costmodel(psched_plan *plan, const cli_costmodel *c)
{
    psched_status st = PSCHED_OK;
    const char *flag = NULL;
    if (c->have_overlap && (st = psched_plan_set_overlap_saving(plan, c->overlap)))
        flag = "--overlap";
    if (!st && c->have_bytes && (st = psched_plan_set_comm_bytes(plan, c->bytes[0], c->bytes[1])))
        flag = "--comm-bytes";
    if (!st && c->have_topology &&
        (st = psched_plan_set_topology(plan, c->node_devices, c->intra[0], c->intra[1],
                                       c->inter[0], c->inter[1])))
        flag = "--devices-per-node/--intra-node/--inter-node";
    if (!st && c->have_pcie && (st = psched_plan_set_pcie_bandwidth(plan, c->pcie)))
        flag = "--pcie-bandwidth";
    if (st)
        return cli_fail(st, flag);
    if (c->weights) {
        double *w;
        uint32_t n;
        int rc = read_weights(c->weights, psched_plan_microbatches(plan), &w, &n);
        if (rc != CLI_OK)
            return rc;
        st = psched_plan_set_microbatch_weights(plan, w, n);
        free(w);
        if (st)
            return cli_fail(st, "--microbatch-weights");
    }
    return cli_apply_vocab(plan, c);
}

int cli_costmodel_transform(const cli_costmodel *c, psched_schedule **schedule)
{
    if (!c->offload)
        return CLI_OK;
    psched_schedule *out;
    psched_status st = psched_offload(*schedule, NULL, (psched_offload_policy)c->offload,
                                      c->budget, &out);
    if (st)
        return cli_fail(st, "--offload");
    psched_schedule_destroy(*schedule);
    *schedule = out;
    return CLI_OK;
}
