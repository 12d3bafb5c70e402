/* pipesched: generate, simulate and validate pipeline-parallel schedules
 * from the command line. A thin shell over the public API.
 *
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help_main[] =
    "Usage: pipesched <command> [options]\n"
    "\n"
    "Generate, validate, simulate and export pipeline-parallel training schedules.\n"
    "\n"
    "Commands:\n"
    "  list       show every registered schedule generator\n"
    "  generate   build a schedule, or convert a CSV file, and print it as csv,\n"
    "             csv-comms, ascii, json, chrome or svg\n"
    "  simulate   print a schedule's simulated time and memory, lower bound and gap\n"
    "  validate   check a schedule (a PyTorch compute_only CSV file or a generator)\n"
    "  hash       print the 64-bit hash ranks compare before training\n"
    "  bound      print the lower bounds on makespan and span of a schedule's plan\n"
    "  partition  split a layer profile over the stages of a schedule (optimizer)\n"
    "  plan       find the fastest schedule, chunks and partition that fit in memory\n"
    "\n"
    "Every command that works on a schedule takes it from a generator\n"
    "(--schedule NAME --devices P --microbatches M ...) or from a file\n"
    "(--input FILE, '-' for standard input), with the same cost flags.\n"
    "\n"
    "Formats (generate --format): csv (PyTorch compute_only), csv-comms (PyTorch\n"
    "compute_comms), ascii, json, chrome (Perfetto trace), svg. Every command\n"
    "that prints results takes --json (or --format json).\n"
    "\n"
    "Options:\n"
    "  --help     show this help ('pipesched <command> --help' for a command)\n"
    "  --version  show the library version\n"
    "\n"
    "Exit status: 0 ok, 1 invalid schedule or infeasible request, 2 bad usage.\n";

static const char help_list[] =
    "Usage: pipesched list [--json]\n"
    "\n"
    "Show every registered schedule generator: name, aliases, constraints,\n"
    "description.\n"
    "\n"
    "  --json                print a JSON array of objects {name, description,\n"
    "                        constraints, placement, default_chunks, chains,\n"
    "                        aliases [...], options [{name, description, min,\n"
    "                        max, default}]} (default null: from the plan)\n"
    "  --format FMT          text (the default) or json (the same as --json)\n";

#define HELP_INPUT                                                                         \
    "The schedule comes from a generator:\n"                                               \
    "  --schedule NAME       generator name, see 'pipesched list'\n"                       \
    "  --devices P           pipeline devices, 1..65536 (required with --schedule)\n"      \
    "  --microbatches M      micro-batches per step, 1..16777216 (required with\n"         \
    "                        --schedule)\n"                                                \
    "  --chunks V            model chunks per device; 0 = the schedule's default (0)\n"    \
    "  --group-size N        micro-batch group size of the interleaved schedules\n"        \
    "  --option KEY=VALUE    an integer generator option, repeatable: e.g. optimal's\n"    \
    "                        time-limit=S (seconds, default 10) and node-limit=N\n"       \
    "                        ('pipesched list --json' lists each generator's)\n"          \
    "  --placement KIND      loop or vshape (default: the generator's)\n"                  \
    "or from a file:\n"                                                                    \
    "  --input FILE          a PyTorch compute_only CSV file ('-' reads standard\n"        \
    "                        input; at most 1 GiB): one row per device, actions\n"         \
    "                        <stage><F|I|W|B><mb>. Shape values not given\n"               \
    "                        (--devices, --microbatches, --chunks, --placement)\n"         \
    "                        are inferred from the file\n"                                 \
    "  --chains N            with --input: 2 reads a two-chain (DualPipe) file\n"          \
    "                        written without its '# pipesched: chains=2' line\n"          \
    "With either, the costs and memory model:\n"                                           \
    "  --cost F,B,W          time of forward, backward for inputs and backward for\n"      \
    "                        weights on every stage; a full backward costs B+W (1,1,1)\n"  \
    "  --costs-file FILE     per-stage values, CSV rows stage,F,B,W[,mem_F,mem_B,mem_W\n"  \
    "                        [,overlap[,bytes_F,bytes_B]]]\n"                              \
    "                        ('#' comments, optional header row; stages not listed\n"      \
    "                        keep --cost and --mem; at most 16 MiB)\n"                     \
    "  --comm C              latency on every dependency between two devices (0)\n"        \
    "  --mem F,B,W           memory change of each op kind per stage (1,0,-1)\n"           \
    "  --mem-limit X         per-device memory limit, > 0, in the unit of the memory\n"    \
    "                        changes (unlimited); a schedule whose peak exceeds it\n"      \
    "                        is an infeasible request\n"                                  \
    CLI_HELP_COSTMODEL

static const char help_generate[] =
    "Usage: pipesched generate --schedule NAME --devices P --microbatches M [options]\n"
    "       pipesched generate --input FILE.csv [options]\n"
    "\n"
    "Build a schedule, or read one from a file, and print it in a format.\n"
    "\n" HELP_INPUT
    "Output:\n"
    "  --format FMT          csv (PyTorch compute_only, the default), csv-comms\n"
    "                        (PyTorch compute_comms: the schedule lowered with\n"
    "                        SEND/RECV ops), ascii (a grid of ops at their\n"
    "                        simulated start, coloured on a terminal), json\n"
    "                        (schedule, plan and simulation), chrome (trace for\n"
    "                        Perfetto / chrome://tracing, one cost unit = 1 ms)\n"
    "                        or svg (timeline picture)\n"
    "  --pytorch             with --format csv-comms: PyTorch's own compute_comms\n"
    "                        dialect for _PipelineScheduleRuntime, whose sends and\n"
    "                        receives do not block: the async lowering (each SEND\n"
    "                        after its producer, each RECV posted early enough to\n"
    "                        overlap compute, no groups; a rendezvous engine must\n"
    "                        read the default, whose groups are marked [a;b]BATCH)\n"
    "  --json                the same as --format json\n"
    "  --output FILE         write to FILE (atomically) instead of standard output\n";

static const char help_simulate[] =
    "Usage: pipesched simulate --schedule NAME --devices P --microbatches M [options]\n"
    "       pipesched simulate --input FILE.csv [options]\n"
    "\n"
    "Simulate a schedule and print its makespan, span, bubble ratio, peak memory,\n"
    "the lower bounds on makespan and span every schedule of its plan obeys and\n"
    "the gap to them, busy and idle time and peak memory per device, and its hash.\n"
    "\n" HELP_INPUT
    "Output:\n"
    "  --json                print one JSON object (docs/cli.md lists its keys)\n"
    "  --format FMT          text (the default) or json (the same as --json)\n";

static const char help_validate[] =
    "Usage: pipesched validate FILE.csv [options]\n"
    "       pipesched validate --input FILE.csv [options]\n"
    "       pipesched validate --schedule NAME --devices P --microbatches M [options]\n"
    "\n"
    "Check a schedule against the dependency rules. Prints the first broken\n"
    "rule (exit 1), or the simulation summary as 'simulate' does.\n"
    "\n" HELP_INPUT
    "Output:\n"
    "  --json                print {\"valid\": ..., \"error\": ..., and the simulate\n"
    "                        keys when valid}\n"
    "  --format FMT          text (the default) or json (the same as --json)\n";

static const char help_hash[] =
    "Usage: pipesched hash --schedule NAME --devices P --microbatches M [options]\n"
    "       pipesched hash --input FILE.csv [options]\n"
    "\n"
    "Print the schedule's 64-bit hash as 16 hex digits: XXH3-64 of its shape\n"
    "(p, m, v, chains, stage placement) and every device's op list. It is the\n"
    "same on every platform and for every library version with the same soname,\n"
    "so ranks can compare it before step 0. Costs, memory and latency do not\n"
    "enter it.\n"
    "\n" HELP_INPUT
    "  --file FILE           the same as --input (the older spelling)\n"
    "Output:\n"
    "  --json                print {\"hash\": ..., \"schedule\": the JSON export}\n"
    "  --format FMT          text (the default) or json (the same as --json)\n";

static const char help_bound[] =
    "Usage: pipesched bound --schedule NAME --devices P --microbatches M [options]\n"
    "       pipesched bound --input FILE.csv [options]\n"
    "\n"
    "Print lower bounds on the makespan and the span that hold for every valid\n"
    "schedule of the plan (p, m, v, placement, costs, comm, memory limit), each\n"
    "term of the makespan bound (work, critical path, device path, memory; see\n"
    "docs/simulator.md), and the given schedule's figures and gap to them. When\n"
    "the schedule holds vocabulary passes (--vocab), the bounds are those of\n"
    "every schedule that holds them too, their work counted.\n"
    "\n" HELP_INPUT
    "Output:\n"
    "  --json                print one JSON object (docs/cli.md lists its keys)\n"
    "  --format FMT          text (the default) or json (the same as --json)\n";

/* ---- the schedule a command works on: a generator or a file ---- */

static int require(const char *command, const char *flag, bool given)
{
    if (given)
        return CLI_OK;
    cli_error("%s: --%s is required with --schedule (see 'pipesched %s --help')", command, flag,
              command);
    return CLI_USAGE;
}

static int plan_setting(psched_status st, const char *flag)
{
    return st == PSCHED_OK ? CLI_OK : cli_fail(st, flag);
}

/* The cost and memory flags, on a plan whose p and v are already set (so
 * that --costs-file can check its stage indices). */
static int fill_costs(psched_plan *plan, const cli_opts *o)
{
    int rc = plan_setting(psched_plan_set_cost(plan, o->cost[0], o->cost[1], o->cost[2]),
                          "--cost");
    if (rc == CLI_OK)
        rc = plan_setting(psched_plan_set_mem(plan, o->mem[0], o->mem[1], o->mem[2]), "--mem");
    if (rc == CLI_OK)
        rc = plan_setting(psched_plan_set_comm(plan, o->comm), "--comm");
    if (rc == CLI_OK && o->have_mem_limit)
        rc = plan_setting(psched_plan_set_memory_limit(plan, o->mem_limit), "--mem-limit");
    if (rc == CLI_OK) /* before the file, whose per-stage values win */
        rc = cli_apply_costmodel(plan, &o->costmodel);
    if (rc == CLI_OK && o->costs_file)
        rc = cli_apply_costs_file(plan, o->costs_file);
    return rc;
}

static int fill_plan(psched_plan *plan, const cli_opts *o, const psched_generator *g)
{
    uint32_t chunks = o->chunks ? o->chunks : g->default_chunks; /* registered: >= 1 */
    int rc = plan_setting(psched_plan_set_devices(plan, o->devices), "--devices");
    if (rc == CLI_OK)
        rc = plan_setting(psched_plan_set_microbatches(plan, o->microbatches), "--microbatches");
    if (rc == CLI_OK)
        rc = plan_setting(psched_plan_set_chunks(plan, chunks), "--chunks");
    if (rc == CLI_OK && o->have_placement)
        rc = plan_setting(psched_plan_set_placement(plan, o->placement),
                          "--placement");
    for (uint32_t i = 0; rc == CLI_OK && i < o->options; i++)
        rc = plan_setting(psched_plan_set_option(plan, o->option_key[i], o->option_value[i]),
                          "--option");
    if (rc == CLI_OK)
        rc = fill_costs(plan, o);
    return rc;
}

static const char *input_label(const cli_opts *o)
{
    return strcmp(o->input, "-") == 0 ? "standard input" : o->input;
}

/* Generators with a fixed order cannot honour a memory limit, so the
 * limit is checked on the simulated peak of whatever came out. */
static int check_memory_limit(const cli_opts *o, const psched_schedule *s, const psched_report *r)
{
    if (!o->have_mem_limit)
        return CLI_OK;
    for (uint32_t d = 0; d < psched_report_devices(r); d++) {
        double peak = 0;
        psched_report_device(r, d, NULL, NULL, &peak);
        if (peak > o->mem_limit + 1e-9 * fabs(o->mem_limit)) {
            cli_error("peak memory %g on device %u exceeds --mem-limit %g for %s", peak,
                      (unsigned)d, o->mem_limit, o->input ? input_label(o) : psched_schedule_name(s));
            return CLI_INVALID;
        }
    }
    return CLI_OK;
}

/* The plan the flags describe, for their generator. */
static int generator_plan(const char *command, const cli_opts *o, psched_plan **out)
{
    int rc = require(command, "devices", o->have_devices);
    if (rc == CLI_OK)
        rc = require(command, "microbatches", o->have_microbatches);
    if (rc != CLI_OK)
        return rc;
    const psched_generator *g;
    psched_status st = psched_generator_find(o->schedule, &g);
    if (st != PSCHED_OK)
        return cli_fail(st, "--schedule");
    psched_plan *plan;
    st = psched_plan_create(&plan);
    if (st != PSCHED_OK)
        return cli_fail(st, NULL);
    rc = fill_plan(plan, o, g);
    if (rc != CLI_OK) {
        psched_plan_destroy(plan);
        return rc;
    }
    *out = plan;
    return CLI_OK;
}

/* Generate the schedule the flags describe. */
static int generate(const char *command, const cli_opts *o, psched_schedule **s)
{
    psched_plan *plan = NULL;
    int rc = generator_plan(command, o, &plan);
    psched_status st;
    if (rc == CLI_OK && (st = psched_generate(plan, o->schedule, s)) != PSCHED_OK)
        rc = cli_fail(st, NULL);
    psched_plan_destroy(plan);
    return rc;
}

/* The shape for a file import: the flags given; p and m from @p inferred
 * otherwise. Chunks and placement left open are inferred by the import. */
static int shape_plan(const cli_opts *o, const psched_schedule *inferred, psched_plan **out)
{
    const psched_plan *ip = inferred ? psched_schedule_plan(inferred) : NULL;
    uint32_t p = o->have_devices ? o->devices : psched_plan_devices(ip);
    uint32_t m = o->have_microbatches ? o->microbatches : psched_plan_microbatches(ip);
    psched_plan *plan;
    psched_status st = psched_plan_create(&plan);
    if (st == PSCHED_OK && (st = psched_plan_set_devices(plan, p)) == PSCHED_OK &&
        (st = psched_plan_set_microbatches(plan, m)) == PSCHED_OK && o->chunks)
        st = psched_plan_set_chunks(plan, o->chunks);
    if (st == PSCHED_OK && o->have_placement)
        st = psched_plan_set_placement(plan, o->placement);
    if (st != PSCHED_OK) {
        psched_plan_destroy(plan);
        return cli_fail(st, input_label(o));
    }
    *out = plan;
    return CLI_OK;
}

/* Import @p text: without shape flags the import infers everything; with
 * some, a first import infers p and m where the flags leave them open. */
static psched_status import_shape(const cli_opts *o, const char *text, size_t length,
                                  psched_schedule **out, int *rc)
{
    psched_schedule *inferred = NULL;
    psched_status st = PSCHED_OK;
    bool shaped = o->have_devices || o->have_microbatches || o->chunks || o->have_placement;
    if (!o->have_devices || !o->have_microbatches) {
        st = psched_import_csv(text, length, NULL, &inferred);
        if (st != PSCHED_OK || !shaped) {
            *out = inferred;
            return st;
        }
    }
    psched_plan *plan = NULL;
    *rc = shape_plan(o, inferred, &plan);
    psched_schedule_destroy(inferred);
    if (*rc != CLI_OK)
        return PSCHED_OK;
    st = psched_import_csv(text, length, plan, out);
    psched_plan_destroy(plan);
    return st;
}

/* Import with the cost flags: the shape comes from the file (and the shape
 * flags), then the file is read again with that shape and the costs, so
 * the schedule carries them into the simulation and every export. */
static psched_status import(const cli_opts *o, const char *text, size_t length,
                            psched_schedule **out, int *rc)
{
    psched_schedule *shaped = NULL;
    psched_status st = import_shape(o, text, length, &shaped, rc);
    const cli_costmodel *cm = &o->costmodel;
    bool costs = o->have_cost || o->have_mem || o->have_comm || o->have_mem_limit || o->costs_file ||
                 cm->have_vocab_cost || cm->have_vocab_mem || cm->coll_bytes_count || cm->model;
    if (st != PSCHED_OK || *rc != CLI_OK || !costs) {
        *out = shaped;
        return st;
    }
    psched_plan *plan = NULL;
    st = psched_plan_clone(psched_schedule_plan(shaped), &plan);
    psched_schedule_destroy(shaped);
    if (st != PSCHED_OK) {
        *rc = cli_fail(st, input_label(o));
        return PSCHED_OK;
    }
    *rc = fill_costs(plan, o);
    if (*rc == CLI_OK)
        st = psched_import_csv(text, length, plan, out);
    psched_plan_destroy(plan);
    return st;
}

/* A file that does not parse or breaks a rule: one line on stderr and,
 * for validate --json, {"valid": false, "error": ...} on stdout. */
static int report_invalid(const cli_opts *o, psched_status st, const char *label)
{
    char *message = cli_clean_message(psched_last_error());
    int rc = cli_fail(st, label);
    if (o->command == CMD_VALIDATE && o->json && message) {
        cli_membuf out;
        if (cli_membuf_open(&out) == CLI_OK) {
            fputs("{\n  \"valid\": false,\n  \"error\": ", out.f);
            cli_json_string(out.f, message);
            fputs("\n}\n", out.f);
            cli_membuf_finish(&out, true);
        }
    }
    free(message);
    return rc;
}

/* --chains N for a file: the importer learns a two-chain shape from the
 * header line `# pipesched: chains=N` that pipesched's exporter writes; a
 * file written elsewhere gets that line in front. A header that says
 * otherwise is a contradiction, not something to override. */
static int with_chains_header(const cli_opts *o, char **text, size_t *length)
{
    static const char head[] = "# pipesched: chains=";
    size_t n = sizeof head - 1;
    if (*length > n && memcmp(*text, head, n) == 0) {
        if ((uint32_t)((*text)[n] - '0') != o->chains) {
            cli_error("%s: --chains %u but the file's first line says chains=%c", o->input,
                      (unsigned)o->chains, (*text)[n]);
            return CLI_USAGE;
        }
        return CLI_OK;
    }
    char *joined = malloc(n + 2 + *length + 1);
    if (!joined) {
        cli_error("%s: out of memory", o->input);
        return CLI_USAGE;
    }
    memcpy(joined, head, n);
    joined[n] = (char)('0' + o->chains);
    joined[n + 1] = '\n';
    memcpy(joined + n + 2, *text, *length + 1);
    free(*text);
    *text = joined;
    *length += n + 2;
    return CLI_OK;
}


/* A generated schedule whose plan sets no cost-model extension passed the
 * simulation's cost checks when it was generated (the same checks on the
 * same plan), so when nothing needs the report validation refuses exactly
 * what the simulation would, with the same message. */
static bool validation_suffices(const cli_opts *o)
{
    const cli_costmodel *cm = &o->costmodel;
    return !o->input && !o->have_mem_limit && !cm->have_overlap && !cm->have_bytes &&
           !cm->have_topology && !cm->have_pcie && !cm->weights && !cm->offload &&
           !cm->have_vocab_cost && !cm->coll_bytes_count;
}

/* The schedule of the flags (a generator or --input), validated and
 * simulated: @p r may be NULL when the command needs no report. */
/* The flag combinations load() refuses before reading or generating. */
static int load_usage(const char *command, const cli_opts *o)
{
    if (o->input && o->schedule) {
        cli_error("%s: --input and --schedule exclude each other (a file or a generator)",
                  command);
        return CLI_USAGE;
    }
    if (!o->input && !o->schedule) {
        cli_error("%s: --schedule or --input is required (see 'pipesched %s --help')", command,
                  command);
        return CLI_USAGE;
    }
    if (o->chains && !o->input) {
        cli_error("%s: --chains describes a file: it needs --input (a generator sets its own "
                  "chains)", command);
        return CLI_USAGE;
    }
    if (o->pytorch && strcmp(o->format, "csv-comms") != 0) {
        cli_error("%s: --pytorch selects PyTorch's compute_comms dialect: it needs "
                  "--format csv-comms, not '%s'", command, o->format);
        return CLI_USAGE;
    }
    if (o->input && o->options) {
        bool vocab = false;
        for (uint32_t i = 0; i < o->options; i++)
            vocab = vocab || strcmp(o->option_key[i], "vocab") == 0;
        if (vocab)
            cli_error("%s: --vocab is a generator option: it does not apply to --input (a file "
                      "holds its VOCAB_S, VOCAB_T and COLLECTIVE ops itself)", command);
        else
            cli_error("%s: %s is a generator option (--option, --group-size, --vocab): it does "
                      "not apply to --input", command, o->option_key[0]);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int load(const char *command, const cli_opts *o, psched_schedule **s, psched_report **r)
{
    int usage = load_usage(command, o);
    if (usage != CLI_OK)
        return usage;
    int rc = CLI_OK;
    psched_status st = PSCHED_OK;
    const char *label = NULL;
    if (o->input) {
        char *text;
        size_t length;
        if ((rc = cli_read_file(o->input, CLI_MAX_SCHEDULE_BYTES, &text, &length)) != CLI_OK)
            return rc;
        if (o->chains && (rc = with_chains_header(o, &text, &length)) != CLI_OK) {
            free(text);
            return rc;
        }
        st = import(o, text, length, s, &rc);
        free(text);
        label = input_label(o);
    } else {
        rc = generate(command, o, s);
    }
    if (rc == CLI_OK && st == PSCHED_OK)
        rc = cli_costmodel_transform(&o->costmodel, s);
    if (rc != CLI_OK)
        return rc;
    /* psched_simulate validates first, with psched_validate's errors. A
     * generated schedule whose plan sets no cost-model extension passed
     * the simulation's cost checks when it was generated (the same checks
     * on the same plan), so when nothing needs the report (generate to a
     * CSV, no --mem-limit) validation refuses exactly what the simulation
     * would, with the same message, at a fraction of the cost. */
    bool validate_only = !r && o->command == CMD_GENERATE && validation_suffices(o);
    psched_report *report = NULL;
    if (st == PSCHED_OK)
        st = validate_only ? psched_validate(*s) : psched_simulate(*s, NULL, &report);
    if (st != PSCHED_OK)
        return report_invalid(o, st, label);
    if (validate_only)
        return rc;
    if (o->command != CMD_BOUND)
        rc = check_memory_limit(o, *s, report);
    if (r && rc == CLI_OK)
        *r = report;
    else
        psched_report_destroy(report);
    return rc;
}

/* ---- commands ---- */

/* "options": what the generator declares, read from the library (no copy
 * of any default here); "default" is null when it depends on the plan. */
static void list_options_json(FILE *f, const psched_generator *g)
{
    size_t n = 0;
    (void)psched_generator_option_count(g->name, &n);
    fputs(", \"options\": [", f);
    for (size_t i = 0; i < n; i++) {
        psched_option_info o = {.version = PSCHED_OPTION_INFO_VERSION};
        if (psched_generator_option(g->name, i, &o) != PSCHED_OK)
            break;
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        cli_json_string(f, o.name);
        fputs(", \"description\": ", f);
        cli_json_string(f, o.description);
        fprintf(f, ", \"min\": %" PRId64 ", \"max\": %" PRId64 ", \"default\": ", o.min, o.max);
        if (o.flags & PSCHED_OPTION_DEFAULT_FROM_PLAN)
            fputs("null}", f);
        else
            fprintf(f, "%" PRId64 "}", o.default_value);
    }
    fputs("]", f);
}

static int cmd_list_json(FILE *f)
{
    size_t n = psched_generator_count();
    fputs("[", f);
    for (size_t i = 0; i < n; i++) {
        const psched_generator *g = psched_generator_at(i);
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
        cli_json_string(f, g->name);
        fputs(", \"description\": ", f);
        cli_json_string(f, g->description ? g->description : "");
        fputs(", \"constraints\": ", f);
        cli_json_string(f, g->constraints ? g->constraints : "");
        fprintf(f, ", \"placement\": \"%s\", \"default_chunks\": %u, \"chains\": %u",
                cli_placement_name(g->placement), (unsigned)g->default_chunks,
                (unsigned)g->chains);
        /* Other names the library finds the generator by (PyTorch's). */
        fputs(", \"aliases\": [", f);
        const char *alias;
        for (size_t a = 0; psched_generator_alias(g->name, a, &alias) == PSCHED_OK && alias; a++) {
            fputs(a ? ", " : "", f);
            cli_json_string(f, alias);
        }
        fputs("]", f);
        list_options_json(f, g);
        fputs("}", f);
    }
    fputs(n ? "\n]\n" : "]\n", f);
    return CLI_OK;
}

/* A generator's aliases joined by ", " ("" when it has none). */
static void list_aliases(const psched_generator *g, char *buf, size_t size)
{
    size_t at = 0;
    const char *alias;
    buf[0] = '\0';
    for (size_t a = 0; psched_generator_alias(g->name, a, &alias) == PSCHED_OK && alias; a++) {
        int n = snprintf(buf + at, size - at, "%s%s", a ? ", " : "", alias);
        if (n < 0 || (size_t)n >= size - at)
            break;
        at += (size_t)n;
    }
}

static int cmd_list_text(FILE *f)
{
    size_t n = psched_generator_count();
    int name_w = (int)strlen("name"), cons_w = (int)strlen("constraints");
    int alias_w = (int)strlen("aliases");
    char aliases[512];
    for (size_t i = 0; i < n; i++) {
        const psched_generator *g = psched_generator_at(i);
        int w = (int)strlen(g->name), c = g->constraints ? (int)strlen(g->constraints) : 0;
        list_aliases(g, aliases, sizeof aliases);
        int a = (int)strlen(aliases);
        name_w = w > name_w ? w : name_w;
        cons_w = c > cons_w ? c : cons_w;
        alias_w = a > alias_w ? a : alias_w;
    }
    fprintf(f, "%-*s  %-*s  %-*s  %s\n", name_w, "name", alias_w, "aliases", cons_w,
            "constraints", "description");
    for (size_t i = 0; i < n; i++) {
        const psched_generator *g = psched_generator_at(i);
        list_aliases(g, aliases, sizeof aliases);
        fprintf(f, "%-*s  %-*s  %-*s  %s\n", name_w, g->name, alias_w, aliases, cons_w,
                g->constraints ? g->constraints : "", g->description ? g->description : "");
    }
    return CLI_OK;
}

static int cmd_list(const cli_opts *o)
{
    cli_membuf out;
    int rc = cli_membuf_open(&out);
    if (rc != CLI_OK)
        return rc;
    rc = o->json ? cmd_list_json(out.f) : cmd_list_text(out.f);
    int wrc = cli_membuf_finish(&out, rc == CLI_OK);
    return rc != CLI_OK ? rc : wrc;
}

static psched_format parse_format(const char *name)
{
    if (strcmp(name, "ascii") == 0)
        return PSCHED_FORMAT_ASCII;
    if (strcmp(name, "json") == 0)
        return PSCHED_FORMAT_JSON;
    if (strcmp(name, "chrome") == 0)
        return PSCHED_FORMAT_CHROME;
    if (strcmp(name, "svg") == 0)
        return PSCHED_FORMAT_SVG;
    if (strcmp(name, "csv-comms") == 0)
        return PSCHED_FORMAT_CSV_COMMS;
    return PSCHED_FORMAT_CSV;
}

static bool want_colour(const cli_opts *o)
{
    const char *no_color = getenv("NO_COLOR");
    return !o->output && isatty(STDOUT_FILENO) && !(no_color && no_color[0]);
}

/* csv-comms is the compute_comms CSV of the lowered schedule: the
 * SEND/RECV ops come from psched_lower_comm with the plan's own costs, in
 * pipesched's dialect (batched groups marked), or, for PyTorch's runtime,
 * whose isend/irecv never block, from the async lowering in its dialect. */
static psched_status export_schedule(const psched_schedule *s, const psched_report *r,
                                     psched_format format, bool pytorch, uint32_t flags,
                                     char **text, size_t *length)
{
    if (format != PSCHED_FORMAT_CSV_COMMS)
        return psched_export(s, r, format, flags, text, length);
    psched_schedule *lowered = NULL;
    psched_lower_options lo = PSCHED_LOWER_OPTIONS_INIT;
    lo.mode = pytorch ? PSCHED_LOWER_ASYNC : PSCHED_LOWER_RENDEZVOUS;
    psched_status st = psched_lower_comm_ex(s, NULL, &lo, &lowered);
    if (st == PSCHED_OK)
        st = psched_export(lowered, NULL, pytorch ? PSCHED_FORMAT_CSV_COMMS_PYTORCH : format,
                           flags, text, length);
    psched_schedule_destroy(lowered);
    return st;
}

/* generate --format csv when validation suffices: psched_generate_write
 * generates, validates and writes the file piece by piece (compact ops, no
 * whole text in memory), and writes nothing for an invalid schedule. */
static int generate_streamed(const cli_opts *o)
{
    psched_plan *plan = NULL;
    int rc = load_usage("generate", o);
    if (rc == CLI_OK)
        rc = generator_plan("generate", o, &plan);
    if (rc != CLI_OK)
        return rc;
    cli_stream out;
    cli_stream_init(&out, o->output);
    psched_status st = psched_generate_write(plan, o->schedule, PSCHED_FORMAT_CSV, 0,
                                             cli_stream_write, &out);
    psched_plan_destroy(plan);
    if (st == PSCHED_OK || out.err || out.usage)
        return cli_stream_finish(&out, true); /* commits, or says why writing failed */
    cli_stream_finish(&out, false);
    return report_invalid(o, st, NULL);
}

static int cmd_generate(const cli_opts *o)
{
    psched_format format = parse_format(o->format);
    if (format == PSCHED_FORMAT_CSV && validation_suffices(o))
        return generate_streamed(o);
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    /* the CSV of the order draws no times: no report to make */
    int rc = load("generate", o, &s, format == PSCHED_FORMAT_CSV ? NULL : &r);
    if (rc == CLI_OK) {
        uint32_t flags = format == PSCHED_FORMAT_ASCII && want_colour(o) ? PSCHED_EXPORT_COLOR : 0;
        char *text = NULL;
        size_t length = 0;
        psched_status st = export_schedule(s, r, format, o->pytorch, flags, &text, &length);
        if (st != PSCHED_OK)
            rc = cli_fail(st, "export");
        else if (o->output)
            rc = cli_write_atomic(o->output, text, length);
        else
            rc = cli_write_stdout(text, length);
        psched_free(text);
    }
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    return rc;
}

static int print_report(const cli_opts *o, const psched_schedule *s, const psched_report *r)
{
    bool validate = o->command == CMD_VALIDATE;
    const char *label = o->input ? input_label(o) : psched_schedule_name(s);
    cli_membuf out;
    int rc = cli_membuf_open(&out);
    if (rc != CLI_OK)
        return rc;
    if (o->json) {
        fputs(validate ? "{\n  \"valid\": true,\n  \"error\": null,\n" : "{\n", out.f);
        rc = cli_report_json_fields(out.f, s, r);
        fputs("\n}\n", out.f);
    } else {
        if (validate)
            fprintf(out.f, "%s: valid\n\n", label);
        rc = cli_report_text(out.f, s, r);
    }
    int wrc = cli_membuf_finish(&out, rc == CLI_OK);
    return rc != CLI_OK ? rc : wrc;
}

/* simulate and validate print the same summary (validate says "valid"). */
static int cmd_simulate(const cli_opts *o)
{
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    int rc = load(o->command == CMD_VALIDATE ? "validate" : "simulate", o, &s, &r);
    if (rc == CLI_OK)
        rc = print_report(o, s, r);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    return rc;
}

static int cmd_validate(const cli_opts *o)
{
    if (!o->input && !o->schedule) {
        cli_error("validate: a CSV file is required (see 'pipesched validate --help')");
        return CLI_USAGE;
    }
    return cmd_simulate(o);
}

/* --json: the export, indented one level, as the "schedule" value. */
static int hash_json(FILE *f, const psched_schedule *s, uint64_t hash)
{
    char *text = NULL;
    psched_status st = psched_export(s, NULL, PSCHED_FORMAT_JSON, 0, &text, NULL);
    if (st != PSCHED_OK)
        return cli_fail(st, "export");
    fprintf(f, "{\n  \"hash\": \"%016" PRIx64 "\",\n  \"schedule\": ", hash);
    size_t n = strlen(text);
    while (n && text[n - 1] == '\n')
        n--;
    for (size_t i = 0; i < n; i++) {
        fputc(text[i], f);
        if (text[i] == '\n')
            fputs("  ", f);
    }
    fputs("\n}\n", f);
    psched_free(text);
    return CLI_OK;
}

static int cmd_hash(const cli_opts *o)
{
    if (!o->input && !o->schedule) {
        cli_error("hash: --schedule or --input (--file) is required (see 'pipesched hash "
                  "--help')");
        return CLI_USAGE;
    }
    psched_schedule *s = NULL;
    int rc = load("hash", o, &s, NULL);
    uint64_t hash = 0;
    psched_status st = rc == CLI_OK ? psched_schedule_hash(s, &hash) : PSCHED_OK;
    if (st != PSCHED_OK)
        rc = cli_fail(st, "hash");
    cli_membuf out;
    if (rc == CLI_OK && (rc = cli_membuf_open(&out)) == CLI_OK) {
        if (o->json)
            rc = hash_json(out.f, s, hash);
        else
            fprintf(out.f, "%016" PRIx64 "\n", hash);
        int wrc = cli_membuf_finish(&out, rc == CLI_OK);
        rc = rc != CLI_OK ? rc : wrc;
    }
    psched_schedule_destroy(s);
    return rc;
}

static int cmd_bound(const cli_opts *o)
{
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    int rc = load("bound", o, &s, &r);
    cli_membuf out;
    if (rc == CLI_OK && (rc = cli_membuf_open(&out)) == CLI_OK) {
        rc = o->json ? cli_bound_json(out.f, s, r) : cli_bound_text(out.f, s, r);
        int wrc = cli_membuf_finish(&out, rc == CLI_OK);
        rc = rc != CLI_OK ? rc : wrc;
    }
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    return rc;
}

/* ---- main ---- */

static const struct command {
    const char *name;
    enum cli_command id;
    const char *help;
    int (*run)(const cli_opts *o);
} commands[] = {
    {"list", CMD_LIST, help_list, cmd_list},
    {"generate", CMD_GENERATE, help_generate, cmd_generate},
    {"simulate", CMD_SIMULATE, help_simulate, cmd_simulate},
    {"validate", CMD_VALIDATE, help_validate, cmd_validate},
    {"hash", CMD_HASH, help_hash, cmd_hash},
    {"bound", CMD_BOUND, help_bound, cmd_bound},
};

static int print_text(const char *text)
{
    return cli_write_stdout(text, strlen(text));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(help_main, stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        return print_text(help_main);
    if (strcmp(name, "--version") == 0) {
        printf("pipesched %s\n", psched_version());
        return cli_write_stdout("", 0);
    }
    if (strcmp(name, "partition") == 0)
        return cli_partition_main(argc, argv, 2);
    if (strcmp(name, "plan") == 0)
        return cli_plan_main(argc, argv, 2);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const struct command *c = &commands[i];
        if (strcmp(name, c->name) != 0)
            continue;
        cli_opts o;
        int rc = cli_parse_args(c->id, argc, argv, 2, &o);
        if (rc != CLI_OK)
            return rc;
        return o.help ? print_text(c->help) : c->run(&o);
    }
    cli_error("unknown command '%s' (see 'pipesched --help')", name);
    return CLI_USAGE;
}
