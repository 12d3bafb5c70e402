/* `pipesched plan`: the holistic planner — every schedule × chunk count,
 * partitioned with recomputation, ranked by simulated step time. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char cli_help_plan[] =
    "Usage: pipesched plan --model FILE.csv --devices P --microbatches M\n"
    "                      --mem-limit BYTES [options]\n"
    "\n"
    "Find the fastest plan that fits in memory: try every schedule (or those\n"
    "given) with every chunk count v in {1, 2, 4} it accepts, partition the\n"
    "layers over its stages with recomputation (as 'pipesched partition'\n"
    "does), simulate each, and rank them. Prints the ranked alternatives and\n"
    "the best plan's stages.\n"
    "\n"
    "  --model FILE          layer profile, CSV rows type,count,f,b,w,act,param\n"
    "                        [,act_selective,extra_selective][,act_full,extra_full]\n"
    "  --devices P           pipeline devices (required)\n"
    "  --microbatches M      micro-batches per step (required)\n"
    "  --mem-limit BYTES     device memory, > 0 (required)\n"
    "  --comm C              latency on every dependency between two devices (0)\n"
    "  --microbatch-weights W1,W2,...|FILE\n"
    "                        weight of each micro-batch: the step time is simulated\n"
    "                        with micro-batch k's times and memory scaled by it (all 1)\n"
    "  --schedules A,B,...   generators to try (default: every registered one)\n"
    "  --chunks V            only this v (default: 1, 2 and 4)\n"
    "  --time-limit S        seconds for each candidate's partition (1); the time\n"
    "                        they leave goes to those not proven optimal, again\n"
    "  --allow-empty         a stage may receive no layer\n"
    "  --one-round           no second round for the candidates not proven\n"
    "                        (about half the time: for autotuning loops)\n"
    "  --json                print one JSON object: solve_time, memory_limit,\n"
    "                        best (index of the best alternative or null),\n"
    "                        alternatives [{rank, schedule, chunks, vocab, fits, status,\n"
    "                        gap, makespan, bubble_ratio, peak_memory,\n"
    "                        even_makespan, speedup, min_memory, solve_time,\n"
    "                        error}], and plan: the best alternative's {schedule,\n"
    "                        chunks, vocab, status, objective, stages [...], devices\n"
    "                        [...]} as in 'pipesched partition --json', or null\n"
    "  --format FMT          text (the default) or json (the same as --json)\n"
    "  --emit FRAMEWORK      print the best plan the framework can take as megatron\n"
    "                        flags or a torchtitan TOML snippet instead of the\n"
    "                        table: megatron the fastest 1f1b (v = 1) or interleaved\n"
    "                        (v > 1); neither takes dualpipe's two copies or a vocab\n"
    "                        candidate's split head; faster plans passed over are\n"
    "                        named in comments\n"
    "  --layout-map C=GROUP,...\n"
    "                        layout letter of profile groups (defaults: embedding E,\n"
    "                        head/loss/output L, mtp m, others t)\n"
    "  --fqn TEMPLATE        torchtitan module names, E=..;t=..{i};L=..,..\n"
    "                        (E=tok_embeddings;t=layers.{i};L=norm,output)\n"
    "\n"
    "Status: optimal (the partition is proven best for that schedule and v\n"
    "under the optimizer's model), feasible (time limit: gap shown), infeasible\n"
    "(does not fit), error (the generator accepts none of the chunk counts,\n"
    "e.g. chimera with an odd number of devices).\n"
    "\n"
    "Exit status: 0 a plan fits, 1 nothing fits the memory limit, 2 bad usage.\n";

static const char *const status_names[] = {"optimal", "feasible", "infeasible"};

typedef struct plan_opts {
    cli_model_flags shape;
    char *schedules;      /* comma-separated copy, split in place */
    const char **names;
    size_t name_count;
    psched_search_options options;
    cli_emit_flags emit;
    bool json, help;
} plan_opts;

static int split_names(plan_opts *o, const char *list)
{
    free(o->schedules);
    free(o->names);
    o->schedules = strdup(list);
    o->names = calloc(strlen(list) / 2 + 2, sizeof *o->names);
    o->name_count = 0;
    if (!o->schedules || !o->names) {
        cli_error("plan: out of memory");
        return CLI_USAGE;
    }
    for (char *save = NULL, *t = strtok_r(o->schedules, ",", &save); t;
         t = strtok_r(NULL, ",", &save))
        o->names[o->name_count++] = t;
    if (o->name_count == 0) {
        cli_error("plan: --schedules needs at least one name");
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int parse_value(const char *flag, const char *value, plan_opts *o)
{
    bool ok = true;
    int rc = CLI_OK;
    if (cli_model_flag(&o->shape, flag, value, &rc) ||
        cli_emit_flag("plan", &o->emit, flag, value, &rc))
        return rc;
    else if (strcmp(flag, "--format") == 0)
        return cli_flag_result_format("plan", value, &o->json);
    else if (strcmp(flag, "--schedules") == 0)
        return split_names(o, value);
    else if (strcmp(flag, "--time-limit") == 0)
        ok = cli_strtod(value, &o->options.time_limit) == 0 && o->options.time_limit > 0;
    else {
        cli_error("plan: unknown option %s (see 'pipesched plan --help')", flag);
        return CLI_USAGE;
    }
    if (!ok) {
        cli_error("plan: invalid value for %s: '%s'", flag, value);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int parse(int argc, char **argv, int first, plan_opts *o)
{
    static const psched_search_options defaults = PSCHED_SEARCH_OPTIONS_INIT;
    memset(o, 0, sizeof *o);
    o->options = defaults;
    o->shape.mem_limit = INFINITY;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        int rc = CLI_OK;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->help = true;
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--allow-empty") == 0) {
            o->options.flags |= PSCHED_PARTITION_ALLOW_EMPTY;
        } else if (strcmp(a, "--one-round") == 0) {
            o->options.flags |= PSCHED_SEARCH_ONE_ROUND;
        } else {
            char name[CLI_FLAG_NAME];
            const char *value;
            rc = cli_flag_value("plan", argc, argv, &i, name, &value);
            if (rc == CLI_OK)
                rc = parse_value(name, value, o);
        }
        if (rc != CLI_OK)
            return rc;
    }
    if (!o->help && (!o->shape.model || !o->shape.devices || !o->shape.microbatches ||
                     !o->shape.have_limit)) {
        cli_error("plan: --model, --devices, --microbatches and --mem-limit are required");
        return CLI_USAGE;
    }
    if (o->emit.framework && o->json) {
        cli_error("plan: --emit prints text; it cannot be combined with --json");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Word for an alternative's outcome. */
static const char *outcome(const psched_search_result *r, size_t i)
{
    if (psched_search_error(r, i) != PSCHED_OK)
        return "error";
    return status_names[psched_search_status(r, i)];
}

static void print_alternative_json(FILE *f, const psched_search_result *r, size_t i)
{
    const psched_partition_result *pr = psched_search_partition(r, i);
    fprintf(f, "%s\n    {\"rank\": %zu, \"schedule\": ", i ? "," : "", i + 1);
    cli_json_string(f, psched_search_schedule(r, i));
    fprintf(f, ", \"chunks\": %u, \"vocab\": %u, \"fits\": %s, \"status\": \"%s\", \"gap\": ",
            psched_search_chunks(r, i), psched_search_vocab(r, i),
            psched_search_fits(r, i) ? "true" : "false", outcome(r, i));
    cli_json_number(f, pr ? psched_partition_gap(pr) : NAN);
    fputs(", \"makespan\": ", f);
    cli_json_number(f, psched_search_makespan(r, i));
    fputs(", \"bubble_ratio\": ", f);
    cli_json_number(f, psched_search_bubble_ratio(r, i));
    fputs(", \"peak_memory\": ", f);
    cli_json_number(f, psched_search_peak_memory(r, i));
    fputs(", \"even_makespan\": ", f);
    cli_json_number(f, psched_search_even_makespan(r, i));
    fputs(", \"speedup\": ", f);
    cli_json_number(f, psched_search_even_makespan(r, i) / psched_search_makespan(r, i));
    fputs(", \"min_memory\": ", f);
    cli_json_number(f, pr ? psched_partition_min_memory(pr) : NAN);
    fputs(", \"solve_time\": ", f);
    cli_json_number(f, pr ? psched_partition_solve_time(pr) : NAN);
    fputs(", \"error\": ", f);
    if (psched_search_error(r, i) != PSCHED_OK)
        cli_json_string(f, psched_search_error_message(r, i));
    else
        fputs("null", f);
    fputs("}", f);
}

static void print_json(FILE *f, const plan_opts *o, const psched_search_result *r)
{
    size_t n = psched_search_count(r);
    bool found = n > 0 && psched_search_fits(r, 0);
    fputs("{\n  \"solve_time\": ", f);
    cli_json_number(f, psched_search_solve_time(r));
    fputs(",\n  \"memory_limit\": ", f);
    cli_json_number(f, o->shape.mem_limit);
    fputs(found ? ",\n  \"best\": 0,\n  \"alternatives\": [" : ",\n  \"best\": null,\n  \"alternatives\": [", f);
    for (size_t i = 0; i < n; i++)
        print_alternative_json(f, r, i);
    fputs(n ? "\n  ],\n  \"plan\": " : "],\n  \"plan\": ", f);
    if (!found) {
        fputs("null\n}\n", f);
        return;
    }
    const psched_partition_result *pr = psched_search_partition(r, 0);
    fputs("{\n    \"schedule\": ", f);
    cli_json_string(f, psched_search_schedule(r, 0));
    fprintf(f, ",\n    \"chunks\": %u,\n    \"vocab\": %u,\n    \"status\": \"%s\",\n    \"objective\": ",
            psched_search_chunks(r, 0), psched_search_vocab(r, 0), outcome(r, 0));
    cli_json_number(f, psched_partition_objective(pr));
    fputs(",\n", f);
    cli_partition_json_stages(f, pr, "    ");
    fputs("\n  }\n}\n", f);
}

/* The status column: the outcome, with the gap of a partition stopped by
 * its time limit, or the memory a misfit would need (or that it is not
 * known: not proven in the candidate's time). */
static void describe(const psched_search_result *r, size_t i, char *out, size_t size)
{
    const psched_partition_result *pr = psched_search_partition(r, i);
    double gap = pr ? psched_partition_gap(pr) : NAN;
    double need = pr ? psched_partition_min_memory(pr) : NAN;
    if (!pr)
        snprintf(out, size, "error: %s", psched_search_error_message(r, i));
    else if (psched_search_status(r, i) == PSCHED_SOLVE_INFEASIBLE && isfinite(need))
        snprintf(out, size, "infeasible (needs %.4g)", need);
    else if (psched_search_status(r, i) == PSCHED_SOLVE_INFEASIBLE)
        snprintf(out, size, "infeasible (smallest memory not proven)");
    else if (!psched_search_fits(r, i) && psched_search_status(r, i) != PSCHED_SOLVE_INFEASIBLE)
        snprintf(out, size, "%s (simulated peak above the limit)", outcome(r, i));
    else if (psched_search_status(r, i) == PSCHED_SOLVE_FEASIBLE && isfinite(gap))
        snprintf(out, size, "feasible (gap %.2g%%)", 100 * gap);
    else
        snprintf(out, size, "%s", outcome(r, i));
}

/* "1f1b", or "1f1b vocab=2" for a Vocabulary Parallelism candidate. */
static const char *alt_name(const psched_search_result *r, size_t i, char *buf, size_t size)
{
    if (!psched_search_vocab(r, i))
        return psched_search_schedule(r, i);
    snprintf(buf, size, "%s vocab=%u", psched_search_schedule(r, i), psched_search_vocab(r, i));
    return buf;
}

static void print_table(FILE *f, const psched_search_result *r)
{
    char nm[64];
    fprintf(f, "%-5s %-15s %-3s %12s %8s %13s %9s  %s\n", "rank", "schedule", "v", "step time",
            "bubble", "peak memory", "vs even", "status");
    for (size_t i = 0; i < psched_search_count(r); i++) {
        char status[320];
        describe(r, i, status, sizeof status);
        double t = psched_search_makespan(r, i);
        if (isnan(t)) { /* the candidate failed: no figures, only its reason */
            fprintf(f, "%-5zu %-15s %-3u %12s %8s %13s %9s  %s\n", i + 1,
                    alt_name(r, i, nm, sizeof nm), psched_search_chunks(r, i), "-", "-", "-", "-",
                    status);
            continue;
        }
        /* an all-zero model has no speed-up (0 / 0): '-' */
        double speedup = psched_search_even_makespan(r, i) / t;
        char vs[32] = "-";
        if (isfinite(speedup))
            snprintf(vs, sizeof vs, "%.3fx", speedup);
        fprintf(f, "%-5zu %-15s %-3u %12.2f %7.1f%% %13.4g %9s  %s\n", i + 1,
                alt_name(r, i, nm, sizeof nm), psched_search_chunks(r, i), t,
                100 * psched_search_bubble_ratio(r, i), psched_search_peak_memory(r, i), vs,
                status);
    }
}

static void print_text(FILE *f, const plan_opts *o, const psched_search_result *r)
{
    char nm[64];
    print_table(f, r);
    if (psched_search_count(r) == 0 || !psched_search_fits(r, 0)) {
        /* Say the real cause: the memory limit only when some candidate
         * could be partitioned at all, else the first candidate's error. */
        size_t n = psched_search_count(r);
        bool all_failed = true;
        for (size_t i = 0; i < n; i++)
            all_failed = all_failed && psched_search_error(r, i) != PSCHED_OK;
        if (n > 0 && all_failed)
            fprintf(f, "\nno plan: no candidate could be partitioned (%s, v = %u: %s)\n",
                    psched_search_schedule(r, 0), psched_search_chunks(r, 0),
                    psched_search_error_message(r, 0));
        else
            fprintf(f, "\nno plan fits the memory limit %.6g\n", o->shape.mem_limit);
        fprintf(f, "search time %.3f s\n", psched_search_solve_time(r));
        return;
    }
    const psched_partition_result *pr = psched_search_partition(r, 0);
    double mk = psched_search_makespan(r, 0), even = psched_search_even_makespan(r, 0);
    fprintf(f, "\nbest plan: %s, v = %u: step time %.6g, bubble %.1f%%, peak memory %.6g "
               "(limit %.6g)\n",
            alt_name(r, 0, nm, sizeof nm), psched_search_chunks(r, 0), mk,
            100 * psched_search_bubble_ratio(r, 0), psched_search_peak_memory(r, 0),
            o->shape.mem_limit);
    if (isfinite(even) && isfinite(even / mk))
        fprintf(f, "even split of %s, v = %u: step time %.6g (speed-up %.3fx)\n",
                psched_search_schedule(r, 0), psched_search_chunks(r, 0), even, even / mk);
    else if (isfinite(even))
        fprintf(f, "even split of %s, v = %u: step time %.6g (speed-up -)\n",
                psched_search_schedule(r, 0), psched_search_chunks(r, 0), even);
    else
        fprintf(f, "even split of %s, v = %u: does not fit\n", psched_search_schedule(r, 0),
                psched_search_chunks(r, 0));
    if (psched_partition_status(pr) == PSCHED_SOLVE_OPTIMAL)
        fprintf(f, "partition: proven optimal for %s, v = %u (objective %.6g)\n",
                psched_search_schedule(r, 0), psched_search_chunks(r, 0),
                psched_partition_objective(pr));
    else
        fprintf(f, "partition: feasible, not proven optimal (gap %.3g%% at the time limit)\n",
                100 * psched_partition_gap(pr));
    fputs("\n", f);
    cli_partition_text_stages(f, pr);
    fprintf(f, "\nsearch time %.3f s\n", psched_search_solve_time(r));
}

/* Whether Megatron-LM runs alternative i as simulated: 1F1B with v = 1,
 * interleaved 1F1B (loop placement) with v > 1. */
static bool megatron_runs(const psched_search_result *r, size_t i)
{
    const char *s = psched_search_schedule(r, i);
    return psched_search_vocab(r, i) == 0 &&
           (psched_search_chunks(r, i) == 1 ? strcmp(s, "1f1b") == 0
                                            : strcmp(s, "interleaved") == 0);
}

/* --emit: the fastest alternative that fits and that the framework can
 * take. One holding every layer twice (DualPipe's two chains, Chimera) or
 * splitting the output layer over every device (a Vocabulary Parallelism
 * candidate) cannot be handed over (PSCHED_EUNSUPPORTED). For Megatron-LM,
 * which runs 1F1B and interleaved 1F1B only, the fastest of those is
 * preferred to a faster schedule it does not run; when none fits, the
 * fastest that can be handed over is, its comments naming the schedule.
 * A comment line first names each faster alternative passed over, and why. */
static int emit_best(FILE *f, const plan_opts *o, const psched_search_result *r,
                     const psched_model *model)
{
    bool megatron = strcmp(o->emit.framework, "megatron") == 0;
    size_t n = psched_search_count(r), fitting = 0;
    while (fitting < n && psched_search_fits(r, fitting))
        fitting++;
    bool runs_any = false;
    for (size_t i = 0; megatron && i < fitting; i++)
        runs_any = runs_any || megatron_runs(r, i);
    static const char *const why[] = {
        "splits the output layer over every device (Vocabulary Parallelism), which no "
        "layout or module list can say",
        "holds every layer twice (two copies of the model), which no layout or module list "
        "can say",
        "is a schedule Megatron-LM does not run (it runs 1F1B for v = 1 and interleaved 1F1B "
        "for v > 1)"};
    unsigned char *reason = calloc(fitting + 1, 1);
    if (!reason) {
        cli_error("plan: out of memory");
        return CLI_INVALID;
    }
    psched_status st = PSCHED_OK;
    char *text = NULL;
    size_t length = 0, i = 0;
    for (; i < fitting; i++) {
        st = cli_emit_text(&o->emit, psched_search_partition(r, i), model, &text, &length);
        if (st && st != PSCHED_EUNSUPPORTED)
            break;
        if (!st && (!runs_any || megatron_runs(r, i)))
            break; /* handed over */
        psched_free(text);
        text = NULL;
        reason[i] = psched_search_vocab(r, i) ? 0 : st ? 1 : 2;
        st = PSCHED_OK;
    }
    if (st || i == fitting) {
        free(reason);
        /* nothing that fits can be handed over: the best's own refusal says why */
        return st ? cli_fail(st, "--emit")
                  : cli_emit(f, &o->emit, psched_search_partition(r, 0), model);
    }
    for (size_t k = 0; k < i; k++) {
        fprintf(f, "# rank %zu (%s", k + 1, psched_search_schedule(r, k));
        if (psched_search_vocab(r, k))
            fprintf(f, " vocab=%u", psched_search_vocab(r, k));
        fprintf(f, ", v = %u, step time %.6g) is faster but %s; this is rank %zu, the fastest "
                "plan that fits and that %s can take\n",
                psched_search_chunks(r, k), psched_search_makespan(r, k), why[reason[k]], i + 1,
                megatron ? "Megatron-LM" : "torchtitan");
    }
    free(reason);
    fwrite(text, 1, length, f);
    psched_free(text);
    return CLI_OK;
}

static int run(const plan_opts *o, psched_model *model)
{
    psched_plan *plan = NULL;
    psched_search_result *r = NULL;
    psched_status st = cli_model_plan(&o->shape, &plan);
    int rc = CLI_OK;
    if (!st && (rc = cli_model_weights(&o->shape, plan)) != CLI_OK) {
        psched_plan_destroy(plan);
        return rc;
    }
    if (!st)
        st = psched_plan_search(model, plan, o->names, o->name_count, &o->options, &r);
    if (st) {
        rc = cli_fail(st, "plan");
    } else {
        cli_membuf out;
        rc = cli_membuf_open(&out);
        if (rc == CLI_OK) {
            bool best = psched_search_count(r) > 0 && psched_search_fits(r, 0);
            if (o->emit.framework && best)
                rc = emit_best(out.f, o, r, model);
            else if (o->json)
                print_json(out.f, o, r);
            else
                print_text(out.f, o, r);
            int frc = cli_membuf_finish(&out, rc == CLI_OK);
            rc = rc == CLI_OK ? frc : rc;
        }
        if (rc == CLI_OK && (psched_search_count(r) == 0 || !psched_search_fits(r, 0)))
            rc = CLI_INVALID;
    }
    psched_search_result_destroy(r);
    psched_plan_destroy(plan);
    return rc;
}

int cli_plan_main(int argc, char **argv, int first)
{
    plan_opts o;
    int rc = parse(argc, argv, first, &o);
    if (rc == CLI_OK && o.help) {
        rc = cli_write_stdout(cli_help_plan, strlen(cli_help_plan));
    } else if (rc == CLI_OK) {
        psched_model *model = NULL;
        rc = cli_load_model(o.shape.model, &model);
        if (rc == CLI_OK)
            rc = run(&o, model);
        psched_model_destroy(model);
    }
    free(o.schedules);
    free(o.names);
    return rc;
}
