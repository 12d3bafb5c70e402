/* Shared declarations of the pipesched command-line tool. The tool is a thin
 * shell over the public API: it only includes pipesched.h.
 *
 * Convention: helpers that can fail print one line on stderr and return the
 * process exit code (CLI_USAGE or CLI_INVALID); they return CLI_OK to go on.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_CLI_H
#define PIPESCHED_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pipesched.h"

/* Exit codes: 0 ok, 1 the schedule is invalid or the request infeasible,
 * 2 anything about the invocation (flags, values, names, unreadable or
 * malformed input files). */
enum { CLI_OK = 0, CLI_INVALID = 1, CLI_USAGE = 2 };

enum cli_command {
    CMD_LIST = 1u,
    CMD_GENERATE = 2u,
    CMD_SIMULATE = 4u,
    CMD_VALIDATE = 8u,
    CMD_HASH = 16u,
    CMD_BOUND = 32u
};

/* Input size caps (docs/cli.md): a schedule file may be large (one row per
 * device, up to PSCHED_MAX_OPS actions), a costs file or a layer profile
 * holds one short row per stage or layer group. */
#define CLI_MAX_SCHEDULE_BYTES ((size_t)1 << 30)
#define CLI_MAX_TABLE_BYTES ((size_t)16 << 20)

/* --option flags one command takes, at most */
#define CLI_OPTIONS_MAX 32

/* The cost model extension flags (cli_costmodel.c). */
typedef struct cli_costmodel {
    bool have_overlap, have_bytes, have_topology;
    double overlap, bytes[2];
    const char *weights; /* --microbatch-weights: a list or a file */
    uint32_t node_devices;
    double intra[2], inter[2]; /* bandwidth, latency */
    bool have_pcie;
    double pcie, budget;
    int offload; /* a psched_offload_policy, 0: none */
    /* Vocabulary Parallelism and collectives (cli_vocab.c) */
    bool have_vocab_cost, have_vocab_mem;
    double vocab_cost[2], vocab_mem[2];
    int coll_bytes_count;       /* --collective-bytes B0,B1,... */
    double coll_bytes[PSCHED_MAX_COLLECTIVES];
    const char *model;          /* --model FILE */
} cli_costmodel;

/* Everything the command line can say; "have_*" marks flags that were given. */
typedef struct cli_opts {
    enum cli_command command;
    bool help, json;
    const char *schedule, *costs_file, *format, *output;
    psched_placement placement; /* --placement, when have_placement */
    const char *input; /* --input, --file (hash) or validate's FILE: "-" is stdin */
    uint32_t devices, microbatches, chunks;
    bool have_devices, have_microbatches, have_chunks, have_placement, have_format;
    uint32_t chains; /* --chains with --input: 0 = from the file's header (1 without) */
    bool pytorch;    /* --pytorch: csv-comms in PyTorch's own compute_comms dialect */
    /* generator options: --option KEY=VALUE, --group-size N and --vocab N, in the
     * order given (a later KEY wins) */
    char option_key[CLI_OPTIONS_MAX][32];
    int64_t option_value[CLI_OPTIONS_MAX];
    uint32_t options;
    double cost[3], mem[3], comm, mem_limit;
    bool have_mem_limit, have_cost, have_mem, have_comm;
    cli_costmodel costmodel;
} cli_opts;

/* ---- messages (cli_io.c) ---- */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* @p text with control bytes and bytes that are not UTF-8 written as \xNN,
 * shortened to fit one line under 300 characters with "pipesched: "
 * (malloc'd; NULL when out of memory). cli_error applies it to every
 * message. */
char *cli_clean_message(const char *text);
/* Exit code for a library status (see the enum above). */
int cli_exit_code(psched_status status);
/* Print "pipesched: [context: ]<psched_last_error()>" and return the exit
 * code of @p status. @p context may be NULL. */
int cli_fail(psched_status status, const char *context);

/* ---- files (cli_io.c) ---- */
/* Read a whole text file ("-" is standard input) into a NUL-terminated
 * malloc'd buffer, at most @p cap bytes. Reading stops at the first byte
 * that cannot be in a text file (NUL, other control bytes but tab, LF, CR
 * and form feed, a CR not followed by LF) and at the cap, with an error
 * naming the file and the byte offset. A leading UTF-8 byte order mark is
 * dropped. Returns CLI_OK or CLI_USAGE (message printed). */
int cli_read_file(const char *path, size_t cap, char **data, size_t *length);
/* "1 GiB", "16 MiB": a cap for messages and help. */
const char *cli_size_text(size_t bytes, char buf[32]);
/* Write @p data to @p path through a temporary file in the same directory
 * and a rename, so readers never see a partial file. */
int cli_write_atomic(const char *path, const char *data, size_t length);
/* Write @p data to standard output and flush it. */
int cli_write_stdout(const char *data, size_t length);
/* An output written in pieces (psched_generate_write's callback), with
 * cli_write_atomic's guarantees: the file (a temporary next to @p path,
 * renamed over it by cli_stream_finish) is created at the first piece, so
 * nothing is created when nothing is written; abandoned, it is removed.
 * path NULL: standard output. */
typedef struct cli_stream {
    const char *path;
    char *tmp;   /* temporary file, or NULL when written in place */
    int fd;      /* -1 until the first piece */
    int err;     /* errno of the first failure, 0 if none */
    uint64_t written, synced; /* bytes written, and handed to writeback */
    bool usage;  /* the failure was a bad --output (message printed) */
} cli_stream;
void cli_stream_init(cli_stream *s, const char *path);
/* A psched_write_fn: 0, or -1 after a failure (kept in s->err). */
int cli_stream_write(void *stream, const char *data, size_t length);
/* commit: fsync and rename into place, printing any failure; else remove
 * what was written. Returns CLI_OK or CLI_USAGE. */
int cli_stream_finish(cli_stream *s, bool commit);
/* Output is composed in memory and written at the end, so a failure half
 * way never leaves a partial output behind. */
typedef struct cli_membuf {
    char *data;
    size_t length;
    FILE *f;
} cli_membuf;
int cli_membuf_open(cli_membuf *m);
/* Close @p m and write its contents to standard output when @p emit. */
int cli_membuf_finish(cli_membuf *m, bool emit);

/* ---- arguments (cli_args.c) ---- */
/* Parse argv[first..argc-1] for @p command into @p opts (defaults filled in). */
int cli_parse_args(enum cli_command command, int argc, char **argv, int first, cli_opts *opts);
/* Strict number parsing without messages: the whole string must be the
 * number, no sign on unsigned values; 0 on success, -1 otherwise. */
int cli_strtou32(const char *text, uint32_t *out);
int cli_strtod(const char *text, double *out);
/* The shared value checks of flags, with one message per rule, used by
 * every command so that a flag means and says the same everywhere.
 * Each prints the message and returns CLI_USAGE, or returns CLI_OK. */
int cli_flag_u32(const char *flag, const char *text, uint32_t min, uint32_t max, uint32_t *out);
int cli_flag_mem_limit(const char *text, double *out);
int cli_flag_comm(const char *text, double *out);
/* The value of the option at argv[*i] for the parsers of partition and
 * plan: `--name=value` or `--name value` (then *i advances). @p name gets
 * the option name. Returns CLI_OK or CLI_USAGE (message printed). */
#define CLI_FLAG_NAME 64
int cli_flag_value(const char *command, int argc, char **argv, int *i, char name[CLI_FLAG_NAME],
                   const char **value);
/* --format of a command whose result is text or JSON: "text" or "json"
 * (sets *json), the same as --json. */
int cli_flag_result_format(const char *command, const char *text, bool *json);

/* ---- --emit, --layout-map, --fqn of partition and plan (cli_partition.c) ---- */
typedef struct cli_emit_flags {
    const char *framework; /* "megatron", "torchtitan" or NULL */
    const char *map, *fqn;
} cli_emit_flags;
/* Consume one of the flags (true) and set *rc (CLI_USAGE, message printed). */
bool cli_emit_flag(const char *command, cli_emit_flags *e, const char *flag, const char *value,
                   int *rc);
/* The result as e->framework's text (psched_free()); the library's status. */
psched_status cli_emit_text(const cli_emit_flags *e, const psched_partition_result *r,
                            const psched_model *model, char **text, size_t *length);
/* Print the result for e->framework; CLI_OK or the library's exit code. */
int cli_emit(FILE *f, const cli_emit_flags *e, const psched_partition_result *r,
             const psched_model *model);

/* ---- per-stage costs (cli_costs.c) ---- */
/* Apply a `stage,F,B,W[,mem_F,mem_B,mem_W]` CSV file to @p plan, whose p
 * and v must already be set. */
int cli_apply_costs_file(psched_plan *plan, const char *path);

/* ---- cost model extensions (cli_costmodel.c) ---- */
#define CLI_HELP_COSTMODEL                                                                 \
    "  --overlap S           time an overlapped F&B pair saves, 0 <= S <= min(F,B) (0)\n"  \
    "  --microbatch-weights W1,W2,...|FILE\n"                                               \
    "                        weight of each micro-batch: its times, memory and bytes\n"    \
    "                        scale by it (all 1)\n"                                         \
    "  --comm-bytes F[,B]    bytes a stage sends forward and backward (0)\n"               \
    "  --devices-per-node G  devices sharing a node (all on one node)\n"                   \
    "  --intra-node BW[,LAT] bandwidth and latency of links inside a node (inf,0)\n"       \
    "  --inter-node BW[,LAT] bandwidth and latency of links between nodes (inf,0)\n"    \
    "  --offload all|selective|budget=X\n"                                                  \
    "                        move activations to the host (PipeOffload): all, those\n"     \
    "                        held long enough to hide the copies, or the longest-held\n"   \
    "                        until each device's peak is <= X\n"                           \
    "  --pcie-bandwidth B    memory units a device copies to or from the host per\n"       \
    "                        time unit (inf)\n"                                            \
    "Vocabulary Parallelism and collectives:\n"                                           \
    "  --vocab N             generator option vocab: 0 off, 1 Vocab-1, 2 Vocab-2 (the\n"  \
    "                        output layer split over all devices; 1f1b, v-half)\n"       \
    "  --vocab-cost S,T      time of one S pass and one T pass on one device (0,0)\n"    \
    "  --vocab-mem S,T       memory change of the S and T passes (0,0)\n"                 \
    "  --collective-bytes B0[,B1,...]\n"                                                    \
    "                        bytes of collective index 0, 1, ... of a micro-batch (0)\n"  \
    "  --model FILE          per-stage costs from a layer profile (docs/optimizer.md):\n" \
    "                        layers split evenly over the stages, the embedding on the\n" \
    "                        first, the head on the last; with --vocab the head is\n"     \
    "                        split over the devices as S and T passes instead\n"

void cli_costmodel_defaults(cli_costmodel *c);
/* Reads one of the extension flags (by name, without "--"). */
int cli_costmodel_flag(cli_costmodel *c, const char *flag, const char *value);
/* Applies them to @p plan, whose p, m and costs are set. */
int cli_apply_costmodel(psched_plan *plan, const cli_costmodel *c);
/* --vocab-cost, --vocab-mem, --collective-bytes and --model (cli_vocab.c). */
int cli_vocab_flag(cli_costmodel *c, const char *flag, const char *value);
int cli_apply_vocab(psched_plan *plan, const cli_costmodel *c);
/* --offload: replaces *schedule by its offloaded copy. */
int cli_costmodel_transform(const cli_costmodel *c, psched_schedule **schedule);

/* ---- output (cli_report.c) ---- */
void cli_json_string(FILE *f, const char *s);
/* Shortest text that reads back as the same double ("33", "0.25"); JSON
 * null for NaN and infinities. */
void cli_json_number(FILE *f, double x);
/* The simulate keys, without the enclosing braces, each line starting
 * with ",\n" except the first. */
int cli_report_json_fields(FILE *f, const psched_schedule *schedule, const psched_report *report);
/* The human summary of a simulation. */
int cli_report_text(FILE *f, const psched_schedule *schedule, const psched_report *report);
/* `pipesched bound`: the plan's lower bounds with each term, and the
 * schedule's makespan and span with their gaps. */
int cli_bound_json(FILE *f, const psched_schedule *schedule, const psched_report *report);
int cli_bound_text(FILE *f, const psched_schedule *schedule, const psched_report *report);
/* Name of a placement: "loop", "vshape", "custom" or "auto". */
const char *cli_placement_name(psched_placement placement);

/* ---- partition (cli_partition.c) ---- */
extern const char cli_help_partition[];
/* `pipesched partition`: parses argv[first..] itself. */
int cli_partition_main(int argc, char **argv, int first);
/* Read a CSV layer profile ("-" is standard input). */
int cli_load_model(const char *path, psched_model **model);
/* The flags `partition` and `plan` share: the layer profile and the
 * pipeline shape. */
typedef struct cli_model_flags {
    const char *model;
    uint32_t devices, microbatches, chunks;
    double mem_limit; /* INFINITY until --mem-limit */
    bool have_limit;
    double comm; /* --comm: latency between devices (0) */
    const char *weights; /* --microbatch-weights: a list or a file (NULL: all 1) */
} cli_model_flags;
/* Reads --model, --devices, --microbatches, --chunks, --mem-limit or
 * --comm into @p f: returns true when @p flag is one of them, with *rc the
 * outcome of its value check (message printed). */
bool cli_model_flag(cli_model_flags *f, const char *flag, const char *value, int *rc);
/* A new plan with the shape and memory limit of @p f (the caller destroys
 * it); the library's status on failure. */
psched_status cli_model_plan(const cli_model_flags *f, psched_plan **plan);
/* Sets the --microbatch-weights of @p f on @p plan (nothing without the
 * flag): the optimizer then simulates every step with them. CLI status. */
int cli_model_weights(const cli_model_flags *f, psched_plan *plan);
/* A partition's per-stage and per-device tables (text), and the same as
 * the JSON keys "stages" and "devices", each line indented by @p indent. */
void cli_partition_text_stages(FILE *f, const psched_partition_result *r);
void cli_partition_json_stages(FILE *f, const psched_partition_result *r, const char *indent);

/* ---- plan (cli_plan.c) ---- */
extern const char cli_help_plan[];
/* `pipesched plan`: parses argv[first..] itself. */
int cli_plan_main(int argc, char **argv, int first);

#endif /* PIPESCHED_CLI_H */
