/* `pipesched partition`: split a layer profile over the stages of a
 * schedule with the library's optimizer and print the plan. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char cli_help_partition[] =
    "Usage: pipesched partition --model FILE.csv --devices P --microbatches M\n"
    "                           --schedule NAME [options]\n"
    "\n"
    "Assign every virtual stage a contiguous range of layers and every layer a\n"
    "recompute choice so the schedule's step time is smallest while each\n"
    "device's parameters and activations fit the memory limit.\n"
    "\n"
    "  --model FILE          layer profile, CSV rows type,count,f,b,w,act,param\n"
    "                        [,act_selective,extra_selective][,act_full,extra_full]\n"
    "                        after a header row ('#' comments)\n"
    "  --devices P           pipeline devices (required)\n"
    "  --microbatches M      micro-batches per step (required)\n"
    "  --chunks V            model chunks per device; 0 = the schedule's default (0)\n"
    "  --schedule NAME       generator name, see 'pipesched list' (required)\n"
    "  --mem-limit BYTES     device memory, > 0 (unlimited)\n"
    "  --comm C              latency on every dependency between two devices (0)\n"
    "  --microbatch-weights W1,W2,...|FILE\n"
    "                        weight of each micro-batch: the step time is simulated\n"
    "                        with micro-batch k's times and memory scaled by it (all 1)\n"
    "  --method M            ilp (default), dp, even, even-accounted or dp-time\n"
    "  --time-limit S        seconds the whole call may take (10)\n"
    "  --allow-empty         a stage may receive no layer\n"
    "  --json                print one JSON object: method, schedule, status,\n"
    "                        gap, objective, solve_time, makespan, even_makespan,\n"
    "                        speedup, min_memory, stages [{stage, device, chunk,\n"
    "                        first, count, recompute {none, selective, full},\n"
    "                        time, memory}], devices [{device, params, memory,\n"
    "                        peak_memory}]\n"
    "  --format FMT          text (the default) or json (the same as --json)\n"
    "  --emit FRAMEWORK      print the partition as megatron flags or a torchtitan\n"
    "                        TOML snippet instead of the table\n"
    "  --layout TEXT         evaluate this Megatron-LM layout (E, t, m, L, '|',\n"
    "                        x*n, (...)*n) instead of optimizing\n"
    "  --layout-map C=GROUP,...\n"
    "                        layout letter of profile groups (defaults: embedding E,\n"
    "                        head/loss/output L, mtp m, others t)\n"
    "  --recompute-granularity G\n"
    "                        with --layout: none (default), selective or full\n"
    "  --recompute-method M  with --layout and full: uniform or block\n"
    "  --recompute-num-layers N\n"
    "                        with --layout and full: layers per group (uniform: 1)\n"
    "                        or per stage (block)\n"
    "  --fqn TEMPLATE        torchtitan module names, E=..;t=..{i};L=..,..\n"
    "                        (E=tok_embeddings;t=layers.{i};L=norm,output)\n"
    "\n"
    "The layer profile is read as text, at most 16 MiB.\n"
    "\n"
    "Exit status: 0 a plan fits, 1 no plan fits the memory limit, 2 bad usage.\n";

typedef struct part_opts {
    cli_model_flags shape;
    const char *schedule;
    cli_emit_flags emit;
    const char *layout, *granularity, *method;
    uint32_t num_layers;
    psched_partition_options options;
    bool json, help;
} part_opts;

static const char *const method_names[] = {"ilp", "dp", "even", "even-accounted", "dp-time"};
static const char *const status_names[] = {"optimal", "feasible", "infeasible"};

static int parse_value(const char *flag, const char *value, part_opts *o)
{
    bool ok = true;
    int rc = CLI_OK;
    if (cli_model_flag(&o->shape, flag, value, &rc) ||
        cli_emit_flag("partition", &o->emit, flag, value, &rc)) {
        return rc;
    } else if (strcmp(flag, "--layout") == 0) {
        o->layout = value;
    } else if (strcmp(flag, "--recompute-granularity") == 0) {
        o->granularity = value;
    } else if (strcmp(flag, "--recompute-method") == 0) {
        o->method = value;
    } else if (strcmp(flag, "--recompute-num-layers") == 0) {
        return cli_flag_u32("recompute-num-layers", value, 0, UINT32_MAX, &o->num_layers);
    } else if (strcmp(flag, "--format") == 0) {
        return cli_flag_result_format("partition", value, &o->json);
    } else if (strcmp(flag, "--schedule") == 0) {
        o->schedule = value;
    } else if (strcmp(flag, "--time-limit") == 0) {
        ok = cli_strtod(value, &o->options.time_limit) == 0 && o->options.time_limit > 0;
    } else if (strcmp(flag, "--method") == 0) {
        ok = false;
        for (size_t i = 0; i < sizeof method_names / sizeof method_names[0]; i++)
            if (strcmp(value, method_names[i]) == 0) {
                o->options.method = (psched_partition_method)i;
                ok = true;
            }
    } else {
        cli_error("partition: unknown option %s (see 'pipesched partition --help')", flag);
        return CLI_USAGE;
    }
    if (!ok) {
        cli_error("partition: invalid value for %s: '%s'", flag, value);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int parse(int argc, char **argv, int first, part_opts *o)
{
    static const psched_partition_options defaults = PSCHED_PARTITION_OPTIONS_INIT;
    memset(o, 0, sizeof *o);
    o->options = defaults;
    o->shape.mem_limit = INFINITY;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->help = true;
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--allow-empty") == 0) {
            o->options.flags |= PSCHED_PARTITION_ALLOW_EMPTY;
        } else {
            char name[CLI_FLAG_NAME];
            const char *value;
            int rc = cli_flag_value("partition", argc, argv, &i, name, &value);
            if (rc == CLI_OK)
                rc = parse_value(name, value, o);
            if (rc != CLI_OK)
                return rc;
        }
    }
    if (o->help)
        return CLI_OK;
    if (!o->shape.model || !o->schedule || !o->shape.devices || !o->shape.microbatches) {
        cli_error("partition: --model, --schedule, --devices and --microbatches are required");
        return CLI_USAGE;
    }
    if (!o->layout && (o->granularity || o->method || o->num_layers)) {
        cli_error("partition: --recompute-granularity, --recompute-method and "
                  "--recompute-num-layers apply to --layout");
        return CLI_USAGE;
    }
    if (o->emit.framework && o->json) {
        cli_error("partition: --emit prints text; it cannot be combined with --json");
        return CLI_USAGE;
    }
    return CLI_OK;
}

bool cli_model_flag(cli_model_flags *f, const char *flag, const char *value, int *rc)
{
    *rc = CLI_OK;
    if (strcmp(flag, "--model") == 0)
        f->model = value;
    else if (strcmp(flag, "--devices") == 0)
        *rc = cli_flag_u32("devices", value, 1, PSCHED_MAX_DEVICES, &f->devices);
    else if (strcmp(flag, "--microbatches") == 0)
        *rc = cli_flag_u32("microbatches", value, 1, PSCHED_MAX_MICROBATCHES, &f->microbatches);
    else if (strcmp(flag, "--chunks") == 0)
        *rc = cli_flag_u32("chunks", value, 0, PSCHED_MAX_CHUNKS, &f->chunks);
    else if (strcmp(flag, "--mem-limit") == 0)
        f->have_limit = (*rc = cli_flag_mem_limit(value, &f->mem_limit)) == CLI_OK;
    else if (strcmp(flag, "--comm") == 0)
        *rc = cli_flag_comm(value, &f->comm);
    else if (strcmp(flag, "--microbatch-weights") == 0)
        f->weights = value;
    else
        return false;
    return true;
}

psched_status cli_model_plan(const cli_model_flags *f, psched_plan **plan)
{
    psched_status st = psched_plan_create(plan);
    if (!st)
        st = psched_plan_set_devices(*plan, f->devices);
    if (!st)
        st = psched_plan_set_microbatches(*plan, f->microbatches);
    if (!st)
        st = psched_plan_set_chunks(*plan, f->chunks);
    if (!st)
        st = psched_plan_set_memory_limit(*plan, f->mem_limit);
    if (!st)
        st = psched_plan_set_comm(*plan, f->comm);
    return st;
}

int cli_model_weights(const cli_model_flags *f, psched_plan *plan)
{
    if (!f->weights)
        return CLI_OK;
    cli_costmodel c;
    cli_costmodel_defaults(&c);
    c.weights = f->weights;
    return cli_apply_costmodel(plan, &c);
}

int cli_load_model(const char *path, psched_model **model)
{
    char *text;
    size_t length;
    int rc = cli_read_file(path, CLI_MAX_TABLE_BYTES, &text, &length);
    if (rc != CLI_OK)
        return rc;
    psched_status st = psched_model_load_csv(text, length, model);
    free(text);
    return st == PSCHED_OK ? CLI_OK : cli_fail(st, path);
}

static void count_choices(const psched_partition_result *r, uint32_t first, uint32_t count,
                          uint32_t n[3])
{
    n[0] = n[1] = n[2] = 0;
    for (uint32_t l = first; l < first + count; l++)
        n[psched_partition_layer_recompute(r, l)]++;
}

static void print_json(FILE *f, const part_opts *o, const psched_partition_result *r,
                       double even)
{
    fprintf(f, "{\n  \"method\": \"%s\",\n  \"schedule\": ", method_names[o->options.method]);
    cli_json_string(f, o->schedule);
    fprintf(f, ",\n  \"status\": \"%s\",\n  \"gap\": ", status_names[psched_partition_status(r)]);
    cli_json_number(f, psched_partition_gap(r));
    fputs(",\n  \"objective\": ", f);
    cli_json_number(f, psched_partition_objective(r));
    fputs(",\n  \"solve_time\": ", f);
    cli_json_number(f, psched_partition_solve_time(r));
    fputs(",\n  \"makespan\": ", f);
    cli_json_number(f, psched_partition_makespan(r));
    fputs(",\n  \"even_makespan\": ", f);
    cli_json_number(f, even);
    fputs(",\n  \"speedup\": ", f);
    cli_json_number(f, even / psched_partition_makespan(r));
    fputs(",\n  \"min_memory\": ", f);
    cli_json_number(f, psched_partition_min_memory(r));
    fputs(",\n", f);
    cli_partition_json_stages(f, r, "  ");
    fputs("\n}\n", f);
}

void cli_partition_json_stages(FILE *f, const psched_partition_result *r, const char *in)
{
    const psched_plan *plan = psched_partition_plan(r);
    fprintf(f, "%s\"stages\": [", in);
    for (uint32_t s = 0; plan && s < psched_partition_stages(r); s++) {
        uint32_t first, count, n[3];
        double time, mem;
        psched_partition_stage(r, s, &first, &count, &time, &mem);
        count_choices(r, first, count, n);
        fprintf(f, "%s\n%s  {\"stage\": %u, \"device\": %u, \"chunk\": %u, \"first\": %u, "
                   "\"count\": %u, \"recompute\": {\"none\": %u, \"selective\": %u, "
                   "\"full\": %u}, \"time\": ",
                s ? "," : "", in, s, psched_plan_stage_device(plan, s),
                psched_plan_stage_chunk(plan, s), first, count, n[0], n[1], n[2]);
        cli_json_number(f, time);
        fputs(", \"memory\": ", f);
        cli_json_number(f, mem);
        fputs("}", f);
    }
    if (plan)
        fprintf(f, "\n%s],\n%s\"devices\": [", in, in);
    else
        fprintf(f, "],\n%s\"devices\": [", in);
    for (uint32_t d = 0; plan && d < psched_plan_devices(plan); d++) {
        double params, mem, peak;
        psched_partition_device(r, d, &params, &mem, &peak);
        fprintf(f, "%s\n%s  {\"device\": %u, \"params\": ", d ? "," : "", in, d);
        cli_json_number(f, params);
        fputs(", \"memory\": ", f);
        cli_json_number(f, mem);
        fputs(", \"peak_memory\": ", f);
        cli_json_number(f, peak);
        fputs("}", f);
    }
    fprintf(f, plan ? "\n%s]" : "]", in);
}

void cli_partition_text_stages(FILE *f, const psched_partition_result *r)
{
    const psched_plan *plan = psched_partition_plan(r);
    fprintf(f, "%-6s %-6s %-5s %-13s %-26s %12s %14s\n", "stage", "device", "chunk", "layers",
            "recompute (none/sel/full)", "time", "memory");
    for (uint32_t s = 0; s < psched_partition_stages(r); s++) {
        uint32_t first, count, n[3];
        double time, mem;
        char range[32], rec[32];
        psched_partition_stage(r, s, &first, &count, &time, &mem);
        count_choices(r, first, count, n);
        if (count)
            snprintf(range, sizeof range, "%u-%u (%u)", first, first + count - 1, count);
        else
            snprintf(range, sizeof range, "empty");
        snprintf(rec, sizeof rec, "%u/%u/%u", n[0], n[1], n[2]);
        fprintf(f, "%-6u %-6u %-5u %-13s %-26s %12.6g %14.6g\n", s,
                psched_plan_stage_device(plan, s), psched_plan_stage_chunk(plan, s), range, rec,
                time, mem);
    }
    fputs("\ndevice  params          memory (bound)  peak memory (simulated)\n", f);
    for (uint32_t d = 0; d < psched_plan_devices(plan); d++) {
        double params, mem, peak;
        psched_partition_device(r, d, &params, &mem, &peak);
        fprintf(f, "%-7u %-15.6g %-15.6g %.6g\n", d, params, mem, peak);
    }
}

static void print_text(FILE *f, const part_opts *o, const psched_partition_result *r,
                       double even)
{
    const psched_plan *plan = psched_partition_plan(r);
    psched_solve_status status = psched_partition_status(r);
    if (plan) {
        cli_partition_text_stages(f, r);
        fprintf(f, "\nsimulated makespan: %.6g\n", psched_partition_makespan(r));
        double speedup = even / psched_partition_makespan(r);
        /* an all-zero model has no speed-up: 0 / 0 prints '-' */
        if (isfinite(even) && isfinite(speedup))
            fprintf(f, "even split makespan: %.6g (speed-up %.3fx)\n", even, speedup);
        else if (isfinite(even))
            fprintf(f, "even split makespan: %.6g (speed-up -)\n", even);
        fprintf(f, "objective: %.6g\n", psched_partition_objective(r));
    }
    if (o->layout) {
        fprintf(f, "layout: %s the memory limit\n",
                status == PSCHED_SOLVE_INFEASIBLE ? "does not fit" : "fits");
        return;
    }
    fprintf(f, "method: %s, status: %s", method_names[o->options.method], status_names[status]);
    if (status == PSCHED_SOLVE_FEASIBLE && isfinite(psched_partition_gap(r)))
        fprintf(f, " (gap %.3g%%)", 100 * psched_partition_gap(r));
    fprintf(f, ", solve time %.3f s\n", psched_partition_solve_time(r));
    if (status != PSCHED_SOLVE_INFEASIBLE)
        return;
    /* psched_partition_min_memory(): above the limit the smallest that
     * fits; at most the limit, the time ran out first; NaN, not proven */
    double least = psched_partition_min_memory(r);
    if (least > o->shape.mem_limit * (1 + 1e-12))
        fprintf(f, "no partition fits; the smallest memory limit that fits is %.6g\n", least);
    else if (isfinite(least))
        fprintf(f, "no partition found in the time limit, though one fits in %.6g; give it "
                   "more time (--time-limit)\n",
                least);
    else
        fprintf(f, "no partition found; the smallest memory limit that fits was not proven in "
                   "the time limit (--time-limit)\n");
}

/* Makespan of Megatron's even split for comparison (NAN when it does not
 * apply to this model or does not fit). The ilp and dp methods keep the
 * even split when it fits and is faster, so when theirs is infeasible the
 * even split does not fit: no second call, which would also look for the
 * smallest memory again (up to a third of the time limit more). */
static double even_makespan(const psched_model *model, const psched_plan *plan, const part_opts *o,
                            const psched_partition_result *main)
{
    if (!o->layout && psched_partition_status(main) == PSCHED_SOLVE_INFEASIBLE &&
        (o->options.method == PSCHED_PARTITION_ILP || o->options.method == PSCHED_PARTITION_DP))
        return NAN;
    psched_partition_options eo = o->options;
    eo.method = PSCHED_PARTITION_EVEN;
    psched_partition_result *r = NULL;
    double x = NAN;
    if (psched_partition(model, plan, o->schedule, &eo, &r) == PSCHED_OK &&
        psched_partition_status(r) != PSCHED_SOLVE_INFEASIBLE)
        x = psched_partition_makespan(r);
    psched_partition_result_destroy(r);
    return x;
}

int cli_partition_main(int argc, char **argv, int first)
{
    part_opts o;
    int rc = parse(argc, argv, first, &o);
    if (rc != CLI_OK || o.help)
        return rc != CLI_OK ? rc : cli_write_stdout(cli_help_partition, strlen(cli_help_partition));
    psched_model *model = NULL;
    psched_plan *plan = NULL;
    psched_partition_result *r = NULL;
    if ((rc = cli_load_model(o.shape.model, &model)) != CLI_OK)
        return rc;
    psched_status st = cli_model_plan(&o.shape, &plan);
    if (!st && (rc = cli_model_weights(&o.shape, plan)) != CLI_OK) {
        psched_plan_destroy(plan);
        psched_model_destroy(model);
        return rc;
    }
    if (!st && o.layout)
        st = psched_partition_from_layout(model, plan, o.schedule, o.layout, o.emit.map,
                                          o.granularity, o.method, o.num_layers, &r);
    else if (!st)
        st = psched_partition(model, plan, o.schedule, &o.options, &r);
    if (st) {
        rc = cli_fail(st, "partition");
    } else {
        double even = o.emit.framework ? NAN : even_makespan(model, plan, &o, r);
        cli_membuf out;
        rc = cli_membuf_open(&out);
        if (rc == CLI_OK) {
            if (o.emit.framework)
                rc = cli_emit(out.f, &o.emit, r, model);
            else if (o.json)
                print_json(out.f, &o, r, even);
            else
                print_text(out.f, &o, r, even);
            int frc = cli_membuf_finish(&out, rc == CLI_OK);
            rc = rc == CLI_OK ? frc : rc;
        }
        if (rc == CLI_OK && psched_partition_status(r) == PSCHED_SOLVE_INFEASIBLE)
            rc = CLI_INVALID;
    }
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(model);
    return rc;
}

bool cli_emit_flag(const char *command, cli_emit_flags *e, const char *flag, const char *value,
                   int *rc)
{
    *rc = CLI_OK;
    if (strcmp(flag, "--emit") == 0) {
        if (strcmp(value, "megatron") != 0 && strcmp(value, "torchtitan") != 0) {
            cli_error("%s: --emit must be megatron or torchtitan, not '%s'", command, value);
            *rc = CLI_USAGE;
        }
        e->framework = value;
    } else if (strcmp(flag, "--layout-map") == 0) {
        e->map = value;
    } else if (strcmp(flag, "--fqn") == 0) {
        e->fqn = value;
    } else {
        return false;
    }
    return true;
}

psched_status cli_emit_text(const cli_emit_flags *e, const psched_partition_result *r,
                            const psched_model *model, char **text, size_t *length)
{
    return strcmp(e->framework, "megatron") == 0
               ? psched_partition_to_megatron(r, model, e->map, text, length)
               : psched_partition_to_torchtitan(r, model, e->map, e->fqn, text, length);
}

int cli_emit(FILE *f, const cli_emit_flags *e, const psched_partition_result *r,
             const psched_model *model)
{
    char *text = NULL;
    size_t length = 0;
    psched_status st = cli_emit_text(e, r, model, &text, &length);
    if (st)
        return cli_fail(st, "--emit");
    fwrite(text, 1, length, f);
    psched_free(text);
    return CLI_OK;
}
