/* Vocabulary Parallelism and collectives on the command line (issue 19,
 * docs/schedules.md "Vocabulary Parallelism"): --vocab N, --vocab-cost S,T,
 * --vocab-mem S,T, --collective-bytes B0,B1,... and --model FILE, which
 * turns a layer profile into per-stage costs (and, with --vocab, into the
 * S and T passes of the output layer split over every device).
 *
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* Comma-separated finite numbers (>= 0 unless @p signed_ok); how many, or
 * -1 when a field does not parse or there are more than @p max. */
static int list(const char *text, double *out, int max, bool signed_ok)
{
    char buf[512];
    if (strlen(text) >= sizeof buf)
        return -1;
    strcpy(buf, text);
    int n = 0;
    for (char *field = buf; field; n++) {
        char *comma = strchr(field, ',');
        if (comma)
            *comma = '\0';
        if (n == max || cli_strtod(field, &out[n]) != 0 || (!signed_ok && out[n] < 0))
            return -1;
        field = comma ? comma + 1 : NULL;
    }
    return n;
}

int cli_vocab_flag(cli_costmodel *c, const char *flag, const char *v)
{
    if (strcmp(flag, "vocab-cost") == 0) {
        if (list(v, c->vocab_cost, 2, false) != 2) {
            cli_error("--vocab-cost '%s': expected S,T: the times >= 0 of one S pass and one T "
                      "pass on one device", v);
            return CLI_USAGE;
        }
        c->have_vocab_cost = true;
    } else if (strcmp(flag, "vocab-mem") == 0) {
        if (list(v, c->vocab_mem, 2, true) != 2) {
            cli_error("--vocab-mem '%s': expected S,T: the memory changes of the S and T passes "
                      "(finite numbers)", v);
            return CLI_USAGE;
        }
        c->have_vocab_mem = true;
    } else if (strcmp(flag, "collective-bytes") == 0) {
        int n = list(v, c->coll_bytes, (int)PSCHED_MAX_COLLECTIVES, false);
        if (n < 1) {
            cli_error("--collective-bytes '%s': expected B0[,B1,...]: at most %u byte counts >= "
                      "0, one per collective index of a micro-batch", v,
                      (unsigned)PSCHED_MAX_COLLECTIVES);
            return CLI_USAGE;
        }
        c->coll_bytes_count = n;
    } else if (strcmp(flag, "model") == 0) {
        c->model = v;
    }
    return CLI_OK;
}

/* Layer groups by role: the embedding, the head (head, loss or output, as
 * docs/optimizer.md names them) and the transformer body. */
typedef struct body_layer {
    double f, b, w, act;
} body_layer;

/* Fills the plan's per-stage costs from the profile: the body's layers in
 * model order, split evenly over the S stages (the first L mod S stages
 * take one more), the embedding added to stage 0 and, without vocab, the
 * head to stage S-1; with vocab the head becomes the S and T passes, its
 * cost divided by p: S = (F [+ B for Vocab-2]) / p, T = (W [+ B for
 * Vocab-1]) / p, and its activations (the logits) held from S to T. */
static int apply_model(psched_plan *plan, const psched_model *model, uint32_t vocab)
{
    uint32_t p = psched_plan_devices(plan), S = psched_plan_stages(plan);
    uint32_t groups = psched_model_groups(model), L = 0;
    double emb[4] = {0}, head[4] = {0};
    body_layer *body = calloc(psched_model_layers(model) + 1, sizeof *body);
    if (!body) {
        cli_error("--model: out of memory");
        return CLI_INVALID;
    }
    for (uint32_t g = 0; g < groups; g++) {
        const char *type;
        uint32_t count;
        body_layer x;
        psched_model_group(model, g, &type, &count, &x.f, &x.b, &x.w, &x.act, NULL);
        double *role = strcmp(type, "embedding") == 0 ? emb
                     : (strcmp(type, "head") == 0 || strcmp(type, "loss") == 0 ||
                        strcmp(type, "output") == 0) ? head : NULL;
        for (uint32_t i = 0; i < count; i++) {
            if (role) {
                role[0] += x.f, role[1] += x.b, role[2] += x.w, role[3] += x.act;
            } else {
                body[L++] = x;
            }
        }
    }
    if (L < S) {
        free(body);
        cli_error("--model: the profile has %u transformer layers (groups other than "
                  "embedding and head), fewer than the %u stages", L, S);
        return CLI_USAGE;
    }
    psched_status st = PSCHED_OK;
    for (uint32_t s = 0, at = 0; s < S && !st; s++) {
        uint32_t n = L / S + (s < L % S ? 1 : 0);
        double c[4] = {0};
        for (uint32_t i = 0; i < n; i++, at++) {
            c[0] += body[at].f, c[1] += body[at].b, c[2] += body[at].w, c[3] += body[at].act;
        }
        for (int k = 0; k < 4; k++) {
            c[k] += s == 0 ? emb[k] : 0;
            c[k] += s == S - 1 && !vocab ? head[k] : 0;
        }
        st = psched_plan_set_stage_cost(plan, s, c[0], c[1], c[2]);
        if (!st)
            st = psched_plan_set_stage_mem(plan, s, c[3], 0, -c[3]);
    }
    free(body);
    if (!st && vocab) {
        double s_time = (head[0] + (vocab == 2 ? head[1] : 0)) / p;
        double t_time = (head[2] + (vocab == 1 ? head[1] : 0)) / p;
        st = psched_plan_set_vocab_cost(plan, s_time, t_time);
        if (!st)
            st = psched_plan_set_vocab_mem(plan, head[3] / p, -head[3] / p);
    }
    return st ? cli_fail(st, "--model") : CLI_OK;
}

int cli_apply_vocab(psched_plan *plan, const cli_costmodel *c)
{
    psched_status st = PSCHED_OK;
    const char *flag = NULL;
    if (c->model) {
        char *text;
        size_t length;
        int rc = cli_read_file(c->model, CLI_MAX_TABLE_BYTES, &text, &length);
        if (rc != CLI_OK)
            return rc;
        psched_model *model = NULL;
        st = psched_model_load_csv(text, length, &model);
        free(text);
        if (st)
            return cli_fail(st, c->model);
        int64_t vocab = 0;
        if (psched_plan_get_option(plan, "vocab", &vocab) != PSCHED_OK)
            vocab = 0;
        rc = apply_model(plan, model, (uint32_t)vocab);
        psched_model_destroy(model);
        if (rc != CLI_OK)
            return rc;
    }
    if (c->have_vocab_cost &&
        (st = psched_plan_set_vocab_cost(plan, c->vocab_cost[0], c->vocab_cost[1])))
        flag = "--vocab-cost";
    if (!st && c->have_vocab_mem &&
        (st = psched_plan_set_vocab_mem(plan, c->vocab_mem[0], c->vocab_mem[1])))
        flag = "--vocab-mem";
    for (int j = 0; !st && j < c->coll_bytes_count; j++)
        if ((st = psched_plan_set_collective_bytes(plan, (uint32_t)j, c->coll_bytes[j])))
            flag = "--collective-bytes";
    return st ? cli_fail(st, flag) : CLI_OK;
}
