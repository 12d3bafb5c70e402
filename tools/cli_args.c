/* Command-line parsing of the pipesched tool: long options (`--flag value`
 * or `--flag=value`), strict numbers, and which command accepts which flag.
 *
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum opt_id {
    OPT_HELP,
    OPT_JSON,
    OPT_SCHEDULE,
    OPT_DEVICES,
    OPT_MICROBATCHES,
    OPT_CHUNKS,
    OPT_GROUP_SIZE,
    OPT_VOCAB,
    OPT_COST,
    OPT_COSTS_FILE,
    OPT_COMM,
    OPT_MEM,
    OPT_MEM_LIMIT,
    OPT_FORMAT,
    OPT_OUTPUT,
    OPT_PLACEMENT,
    OPT_FILE,
    OPT_INPUT,
    OPT_CHAINS,
    OPT_PYTORCH,
    OPT_OPTION,
    OPT_COSTMODEL /* cli_costmodel.c */
};

/* Every command that works on a schedule takes it from a generator or a file. */
#define PLAN_CMDS (CMD_GENERATE | CMD_SIMULATE | CMD_VALIDATE | CMD_HASH | CMD_BOUND)

static const struct opt_def {
    const char *name;
    enum opt_id id;
    bool takes_value;
    unsigned commands;
} opt_defs[] = {
    {"help", OPT_HELP, false, CMD_LIST | PLAN_CMDS},
    {"json", OPT_JSON, false, CMD_LIST | PLAN_CMDS},
    {"schedule", OPT_SCHEDULE, true, PLAN_CMDS},
    {"input", OPT_INPUT, true, PLAN_CMDS},
    {"devices", OPT_DEVICES, true, PLAN_CMDS},
    {"microbatches", OPT_MICROBATCHES, true, PLAN_CMDS},
    {"chunks", OPT_CHUNKS, true, PLAN_CMDS},
    {"group-size", OPT_GROUP_SIZE, true, PLAN_CMDS},
    {"option", OPT_OPTION, true, PLAN_CMDS},
    {"cost", OPT_COST, true, PLAN_CMDS},
    {"costs-file", OPT_COSTS_FILE, true, PLAN_CMDS},
    {"comm", OPT_COMM, true, PLAN_CMDS},
    {"mem", OPT_MEM, true, PLAN_CMDS},
    {"mem-limit", OPT_MEM_LIMIT, true, PLAN_CMDS},
    {"format", OPT_FORMAT, true, CMD_LIST | PLAN_CMDS},
    {"output", OPT_OUTPUT, true, CMD_GENERATE},
    {"placement", OPT_PLACEMENT, true, PLAN_CMDS},
    {"file", OPT_FILE, true, CMD_HASH}, /* the spelling before --input; kept */
    {"chains", OPT_CHAINS, true, PLAN_CMDS},
    {"pytorch", OPT_PYTORCH, false, CMD_GENERATE},
    {"overlap", OPT_COSTMODEL, true, PLAN_CMDS},
    {"microbatch-weights", OPT_COSTMODEL, true, PLAN_CMDS},
    {"comm-bytes", OPT_COSTMODEL, true, PLAN_CMDS},
    {"devices-per-node", OPT_COSTMODEL, true, PLAN_CMDS},
    {"intra-node", OPT_COSTMODEL, true, PLAN_CMDS},
    {"inter-node", OPT_COSTMODEL, true, PLAN_CMDS},
    {"pcie-bandwidth", OPT_COSTMODEL, true, PLAN_CMDS},
    {"offload", OPT_COSTMODEL, true, PLAN_CMDS},
    {"vocab", OPT_VOCAB, true, PLAN_CMDS},
    {"vocab-cost", OPT_COSTMODEL, true, PLAN_CMDS},
    {"vocab-mem", OPT_COSTMODEL, true, PLAN_CMDS},
    {"collective-bytes", OPT_COSTMODEL, true, PLAN_CMDS},
    {"model", OPT_COSTMODEL, true, PLAN_CMDS},
};

static const char *command_name(enum cli_command command)
{
    switch (command) {
    case CMD_LIST:
        return "list";
    case CMD_GENERATE:
        return "generate";
    case CMD_SIMULATE:
        return "simulate";
    case CMD_VALIDATE:
        return "validate";
    case CMD_HASH:
        return "hash";
    case CMD_BOUND:
        return "bound";
    }
    return "?";
}

int cli_strtou32(const char *text, uint32_t *out)
{
    if (!isdigit((unsigned char)text[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int cli_strtod(const char *text, double *out)
{
    /* strtod would skip leading blanks and accept "nan" and "inf". */
    if (text[0] == '\0' || isspace((unsigned char)text[0]))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (*end != '\0' || !isfinite(v) || (errno == ERANGE && fabs(v) > 1.0))
        return -1;
    *out = v;
    return 0;
}

int cli_flag_u32(const char *flag, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
    if (cli_strtou32(text, out) != 0 || *out < min || *out > max) {
        cli_error("--%s '%s': expected an integer in %u..%u", flag, text, (unsigned)min,
                  (unsigned)max);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_flag_mem_limit(const char *text, double *out)
{
    /* One rule for every command: the limit is in the unit of the memory
     * deltas, which are bytes when they come from a layer profile. */
    if (cli_strtod(text, out) != 0 || !(*out > 0)) {
        cli_error("--mem-limit '%s': must be a finite number > 0 (bytes or memory units)", text);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_flag_comm(const char *text, double *out)
{
    if (cli_strtod(text, out) != 0 || *out < 0) {
        cli_error("--comm '%s': expected a finite number >= 0", text);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_flag_result_format(const char *command, const char *text, bool *json)
{
    if (strcmp(text, "json") == 0)
        *json = true;
    else if (strcmp(text, "text") != 0) {
        cli_error("--format '%s': %s prints text or json", text, command);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* "F,B,W": exactly three finite numbers, non-negative when @p costs. */
static int flag_triple(const char *flag, const char *text, bool costs, double out[3])
{
    char buf[256];
    size_t len = strlen(text);
    int fields = 0;
    if (len < sizeof buf) {
        memcpy(buf, text, len + 1);
        char *field = buf;
        for (fields = 0; field && fields < 3; fields++) {
            char *comma = strchr(field, ',');
            if (comma)
                *comma = '\0';
            if (cli_strtod(field, &out[fields]) != 0 || (costs && out[fields] < 0))
                break;
            field = comma ? comma + 1 : NULL;
        }
        if (fields == 3 && field == NULL)
            return CLI_OK;
    }
    cli_error("--%s '%s': expected F,B,W: three comma-separated finite numbers%s", flag, text,
              costs ? " >= 0" : "");
    return CLI_USAGE;
}

int cli_flag_value(const char *command, int argc, char **argv, int *i, char name[CLI_FLAG_NAME],
                   const char **value)
{
    const char *a = argv[*i];
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    if (eq) {
        snprintf(name, CLI_FLAG_NAME, "%.*s", (int)(eq - a), a);
        *value = eq + 1;
        return CLI_OK;
    }
    if (*i + 1 >= argc) {
        cli_error("%s: option %s needs a value", command, a);
        return CLI_USAGE;
    }
    snprintf(name, CLI_FLAG_NAME, "%s", a);
    *value = argv[++*i];
    return CLI_OK;
}

/* One more generator option (--option, --group-size, --vocab; `shown` is
 * the flag's value, for the message). */
static int push_option(cli_opts *o, const char *key, int64_t value, const char *shown)
{
    if (o->options == CLI_OPTIONS_MAX) {
        cli_error("'%s': at most %d generator options (--option, --group-size, --vocab)", shown,
                  CLI_OPTIONS_MAX);
        return CLI_USAGE;
    }
    snprintf(o->option_key[o->options], sizeof o->option_key[0], "%s", key);
    o->option_value[o->options++] = value;
    return CLI_OK;
}

/* --option KEY=VALUE: a generator option (psched_plan_set_option()), the
 * key checked by the library (its characters here, whether the generator
 * takes it when it runs), the value a base-10 integer. */
static int flag_option(cli_opts *o, const char *v)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || eq - v > 31) {
        cli_error("--option '%s': expected KEY=VALUE (a key of 1 to 31 characters), an "
                  "integer generator option such as time-limit=5 (see 'pipesched list --json' "
                  "for each generator's)", v);
        return CLI_USAGE;
    }
    const char *num = eq + 1;
    char *end;
    errno = 0;
    long long value = strtoll(num, &end, 10);
    if (!(isdigit((unsigned char)num[0]) || (num[0] == '-' && isdigit((unsigned char)num[1]))) ||
        errno != 0 || *end != '\0') {
        cli_error("--option '%s': the value '%s' is not a base-10 integer within 64 bits", v,
                  num);
        return CLI_USAGE;
    }
    char key[32];
    memcpy(key, v, (size_t)(eq - v));
    key[eq - v] = '\0';
    return push_option(o, key, value, v);
}

static int set_value(cli_opts *o, const struct opt_def *d, const char *v)
{
    switch (d->id) {
    case OPT_SCHEDULE:
        o->schedule = v;
        return CLI_OK;
    case OPT_DEVICES:
        o->have_devices = true;
        return cli_flag_u32(d->name, v, 1, PSCHED_MAX_DEVICES, &o->devices);
    case OPT_MICROBATCHES:
        o->have_microbatches = true;
        return cli_flag_u32(d->name, v, 1, PSCHED_MAX_MICROBATCHES, &o->microbatches);
    case OPT_CHUNKS:
        o->have_chunks = true;
        return cli_flag_u32(d->name, v, 0, PSCHED_MAX_CHUNKS, &o->chunks);
    case OPT_GROUP_SIZE: { /* the option group-size, spelled as its own flag */
        uint32_t n;
        int rc = cli_flag_u32(d->name, v, 1, PSCHED_MAX_MICROBATCHES, &n);
        return rc == CLI_OK ? push_option(o, "group-size", n, v) : rc;
    }
    case OPT_VOCAB: { /* the option vocab (Vocabulary Parallelism), its own flag */
        uint32_t n;
        if (cli_strtou32(v, &n) != 0 || n > 2) {
            cli_error("--vocab '%s': expected 0 (off), 1 (Vocab-1) or 2 (Vocab-2)", v);
            return CLI_USAGE;
        }
        return push_option(o, "vocab", n, v);
    }
    case OPT_COST:
        o->have_cost = true;
        return flag_triple(d->name, v, true, o->cost);
    case OPT_MEM:
        o->have_mem = true;
        return flag_triple(d->name, v, false, o->mem);
    case OPT_COMM:
        o->have_comm = true;
        return cli_flag_comm(v, &o->comm);
    case OPT_MEM_LIMIT:
        o->have_mem_limit = true;
        return cli_flag_mem_limit(v, &o->mem_limit);
    case OPT_COSTS_FILE:
        o->costs_file = v;
        return CLI_OK;
    case OPT_FORMAT: {
        o->have_format = true;
        if (o->command != CMD_GENERATE) {
            o->format = v;
            return cli_flag_result_format(command_name(o->command), v, &o->json);
        }
        static const char *const formats[] = {"csv", "csv-comms", "ascii", "json", "chrome", "svg"};
        size_t k = 0;
        while (k < sizeof formats / sizeof formats[0] && strcmp(v, formats[k]) != 0)
            k++;
        if (k == sizeof formats / sizeof formats[0]) {
            cli_error("--format '%s': expected csv, csv-comms, ascii, json, chrome or svg", v);
            return CLI_USAGE;
        }
        o->format = v;
        return CLI_OK;
    }
    case OPT_OUTPUT:
        o->output = v;
        return CLI_OK;
    case OPT_FILE:
    case OPT_INPUT:
        if (o->input) {
            cli_error("%s: one input file only ('%s' and '%s')", command_name(o->command),
                      o->input, v);
            return CLI_USAGE;
        }
        o->input = v;
        return CLI_OK;
    case OPT_PLACEMENT: {
        /* the placements a plan can be given; names from the library */
        static const psched_placement settable[] = {PSCHED_PLACEMENT_LOOP,
                                                    PSCHED_PLACEMENT_VSHAPE};
        for (size_t i = 0; i < sizeof settable / sizeof settable[0]; i++)
            if (strcmp(v, psched_placement_str(settable[i])) == 0) {
                o->placement = settable[i];
                o->have_placement = true;
                return CLI_OK;
            }
        cli_error("--placement '%s': expected %s or %s", v, psched_placement_str(settable[0]),
                  psched_placement_str(settable[1]));
        return CLI_USAGE;
    }
    case OPT_CHAINS:
        return cli_flag_u32("chains", v, 1, 2, &o->chains);
    case OPT_OPTION:
        return flag_option(o, v);
    case OPT_COSTMODEL:
        return cli_costmodel_flag(&o->costmodel, d->name, v);
    case OPT_HELP:
    case OPT_JSON:
    case OPT_PYTORCH:
        break;
    }
    return CLI_OK;
}

static const struct opt_def *find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof opt_defs / sizeof opt_defs[0]; i++)
        if (strlen(opt_defs[i].name) == len && strncmp(opt_defs[i].name, name, len) == 0)
            return &opt_defs[i];
    return NULL;
}

static void set_defaults(enum cli_command command, cli_opts *o)
{
    memset(o, 0, sizeof *o);
    o->command = command;
    o->cost[0] = o->cost[1] = o->cost[2] = 1.0;
    o->mem[0] = 1.0;
    o->mem[1] = 0.0;
    o->mem[2] = -1.0;
    o->format = "csv";
    cli_costmodel_defaults(&o->costmodel);
}

static int positional(enum cli_command command, cli_opts *o, const char *arg)
{
    if (command == CMD_VALIDATE && !o->input) {
        o->input = arg;
        return CLI_OK;
    }
    cli_error("%s: unexpected argument '%s' (see 'pipesched %s --help')", command_name(command),
              arg, command_name(command));
    return CLI_USAGE;
}

/* One `--name[=value]` at argv[*i]; consumes the next argument as the value
 * when the flag takes one and no '=' was given. */
static int parse_flag(enum cli_command command, int argc, char **argv, int *i, cli_opts *o)
{
    const char *arg = argv[*i];
    const char *name = arg[1] == '-' ? arg + 2 : arg + 1;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct opt_def *d = strcmp(arg, "-h") == 0 ? &opt_defs[0]
                              : arg[1] == '-'        ? find_opt(name, len)
                                                     : NULL;
    if (!d || !(d->commands & command)) {
        cli_error("%s: unknown option '%.*s' (see 'pipesched %s --help')", command_name(command),
                  (int)(name - arg + (ptrdiff_t)len), arg, command_name(command));
        return CLI_USAGE;
    }
    if (!d->takes_value) {
        if (eq) {
            cli_error("%s: option '--%s' takes no value", command_name(command), d->name);
            return CLI_USAGE;
        }
        if (d->id == OPT_HELP) {
            o->help = true;
        } else if (d->id == OPT_PYTORCH) {
            o->pytorch = true;
        } else if (command == CMD_GENERATE) {
            /* generate prints a schedule: --json is --format json */
            o->format = "json";
            o->have_format = true;
        } else {
            o->json = true;
        }
        return CLI_OK;
    }
    const char *value = eq ? eq + 1 : NULL;
    if (!value) {
        if (*i + 1 >= argc) {
            cli_error("%s: option '--%s' needs a value", command_name(command), d->name);
            return CLI_USAGE;
        }
        value = argv[++*i];
    }
    return set_value(o, d, value);
}

int cli_parse_args(enum cli_command command, int argc, char **argv, int first, cli_opts *o)
{
    set_defaults(command, o);
    bool only_positional = false;
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        int rc;
        if (only_positional || arg[0] != '-' || strcmp(arg, "-") == 0)
            rc = positional(command, o, arg);
        else if (strcmp(arg, "--") == 0) {
            only_positional = true;
            rc = CLI_OK;
        } else
            rc = parse_flag(command, argc, argv, &i, o);
        if (rc != CLI_OK)
            return rc;
    }
    return CLI_OK;
}
