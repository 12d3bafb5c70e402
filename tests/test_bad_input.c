/* Bad input, everywhere: every class of bad value a caller can pass through
 * the public API, one table row each, with the exact status code and a
 * piece of the message that names the offending value. A row's call builds
 * what it needs, makes the one failing call last (so no later call can
 * overwrite the thread's message), cleans up and returns the status.
 *
 * Usage: test-bad-input PLUGIN_NO_INIT.so PLUGIN_NEW_ABI.so */
#include "pipesched.h"
#include "testutil.h"

#include <stdbool.h>
#include <stdint.h>

static const char *plugin_no_init, *plugin_new_abi;
/* A handle output that is not NULL after a failure is a leak to the caller. */
static int non_null_outputs;

#define BIG (1u << 31) /* 2^31: beyond every limit, still a valid uint32_t */
#define TEN_MB ((size_t)10 << 20)

/* Generate and expect failure: the output must come back NULL. */
static psched_status generate_fails(psched_plan *plan, const char *name)
{
    psched_schedule *s = (psched_schedule *)&non_null_outputs; /* poison */
    psched_status st = psched_generate(plan, name, &s);
    if (s) {
        non_null_outputs++;
        if (st == PSCHED_OK)
            psched_schedule_destroy(s);
    }
    psched_plan_destroy(plan);
    return st;
}

static psched_status import_text(const char *text, size_t length, const psched_plan *plan)
{
    psched_schedule *s = NULL;
    psched_status st = psched_import_csv(text, length, plan, &s);
    if (s) {
        non_null_outputs++;
        psched_schedule_destroy(s);
    }
    return st;
}

static psched_status import_str(const char *text)
{
    return import_text(text, strlen(text), NULL);
}

static psched_status load_model(const char *text, size_t length)
{
    psched_model *m = NULL;
    psched_status st = psched_model_load_csv(text, length, &m);
    if (m) {
        non_null_outputs++;
        psched_model_destroy(m);
    }
    return st;
}

static psched_status load_model_str(const char *text)
{
    return load_model(text, strlen(text));
}

/* A 10 MB line: `fill` repeated, between `head` and `tail`. */
static psched_status with_long_line(const char *head, char fill, const char *tail,
                                    psched_status (*use)(const char *, size_t))
{
    size_t h = strlen(head), t = strlen(tail), n = h + TEN_MB + t;
    char *text = malloc(n);
    if (!text)
        return PSCHED_ENOMEM;
    memcpy(text, head, h);
    memset(text + h, fill, TEN_MB);
    memcpy(text + h + TEN_MB, tail, t);
    psched_status st = use(text, n);
    free(text);
    return st;
}

static psched_status import_plain(const char *text, size_t length)
{
    return import_text(text, length, NULL);
}

/* ---------------------------------------------------------- plan values */

static psched_status devices_zero(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_devices(p, 0);
    psched_plan_destroy(p);
    return st;
}

static psched_status devices_2_31(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_devices(p, BIG);
    psched_plan_destroy(p);
    return st;
}

static psched_status devices_one_above_max(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_devices(p, PSCHED_MAX_DEVICES + 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status microbatches_zero(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_microbatches(p, 0);
    psched_plan_destroy(p);
    return st;
}

static psched_status microbatches_2_31(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_microbatches(p, BIG);
    psched_plan_destroy(p);
    return st;
}

static psched_status chunks_2_31(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_chunks(p, BIG);
    psched_plan_destroy(p);
    return st;
}

static psched_status chunks_one_above_max(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_chunks(p, PSCHED_MAX_CHUNKS + 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status chains_three(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_chains(p, 3);
    psched_plan_destroy(p);
    return st;
}

static psched_status placement_out_of_enum(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_placement(p, (psched_placement)7);
    psched_plan_destroy(p);
    return st;
}

static psched_status cost_nan(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_cost(p, NAN, 1, 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status cost_infinite(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_cost(p, 1, INFINITY, 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status cost_negative(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_cost(p, 1, 1, -1);
    psched_plan_destroy(p);
    return st;
}

static psched_status stage_cost_negative(void)
{
    psched_plan *p = tu_plan(2, 4, 2);
    psched_status st = psched_plan_set_stage_cost(p, 3, -0.5, 1, 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status stage_cost_stage_out_of_range(void)
{
    psched_plan *p = tu_plan(2, 4, 2);
    psched_status st = psched_plan_set_stage_cost(p, 4, 1, 1, 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status stage_cost_stage_2_31(void)
{
    psched_plan *p = tu_plan(2, 4, 2);
    psched_status st = psched_plan_set_stage_cost(p, BIG, 1, 1, 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status mem_negative_infinity(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_mem(p, 1, -INFINITY, -1);
    psched_plan_destroy(p);
    return st;
}

static psched_status stage_mem_nan(void)
{
    psched_plan *p = tu_plan(2, 2, 1);
    psched_status st = psched_plan_set_stage_mem(p, 1, 1, 0, NAN);
    psched_plan_destroy(p);
    return st;
}

static psched_status comm_negative(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_comm(p, -2);
    psched_plan_destroy(p);
    return st;
}

static psched_status comm_nan(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_comm(p, NAN);
    psched_plan_destroy(p);
    return st;
}

/* Issue 12 item 2: costs whose total overflows to infinity. Before, zb read
 * an unfilled order (every candidate's span was inf) and the simulator
 * reported inf or nan. */
static psched_plan *plan_p4_m8_costs(double f, double comm)
{
    psched_plan *p = tu_plan(4, 8, 0);
    CHECK_OK(psched_plan_set_cost(p, f, f, f));
    CHECK_OK(psched_plan_set_comm(p, comm));
    return p;
}

static psched_status zb_cost_1e308(void)
{
    return generate_fails(plan_p4_m8_costs(1e308, 0), "zb");
}

static psched_status zb_comm_1e308(void)
{
    return generate_fails(plan_p4_m8_costs(1, 1e308), "zb");
}

/* A costs-file row of 1e307 (one stage): 8 micro-batches x 3e307 is
 * finite, times 4 devices is not. */
static psched_status zb_stage_cost_1e307(void)
{
    psched_plan *p = tu_plan(4, 8, 1);
    CHECK_OK(psched_plan_set_stage_cost(p, 2, 1e307, 1e307, 1e307));
    return generate_fails(p, "zb");
}

/* Every built-in generator refuses it the same way; the row returns the
 * first status that is not EINVAL with the value in the message. */
static psched_status every_generator_cost_1e308(void)
{
    static const char *const names[] = {"gpipe", "1f1b", "interleaved", "interleaved-zb",
                                        "looped-bfs", "zb-h1", "zb-h2", "zb", "v-min",
                                        "v-half", "v-zb", "dualpipev", "dualpipe"};
    psched_status st = PSCHED_OK;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        st = generate_fails(plan_p4_m8_costs(1e308, 0), names[i]);
        if (st != PSCHED_EINVAL || !strstr(psched_last_error(), "(1e+308) is too large"))
            return st == PSCHED_EINVAL ? PSCHED_OK : st;
    }
    return st;
}

/* Micro-batch weights scale the costs (the cost model): their sum counts. */
static psched_status zb_weights_1e308(void)
{
    psched_plan *p = tu_plan(4, 8, 0);
    const double w[8] = {1, 1, 1e308, 1, 1, 1, 1, 1};
    CHECK_OK(psched_plan_set_microbatch_weights(p, w, 8));
    return generate_fails(p, "zb");
}

/* The simulator checks the costs it is given, not only the schedule's. */
static psched_status simulate_with_cost_1e308(void)
{
    psched_plan *plan = tu_plan(4, 8, 0);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    psched_plan_destroy(plan);
    psched_plan *costs = plan_p4_m8_costs(1e308, 0);
    CHECK_OK(psched_plan_set_chunks(costs, 1));
    psched_report *r = (psched_report *)&non_null_outputs; /* poison */
    psched_status st = psched_simulate(s, costs, &r);
    if (r) {
        non_null_outputs++;
        if (st == PSCHED_OK)
            psched_report_destroy(r);
    }
    psched_plan_destroy(costs);
    psched_schedule_destroy(s);
    return st;
}

/* Issue 13 item 5: a key the generator does not declare, or a value
 * outside the declared range, is refused naming it (it used to be
 * silently ignored). */
static psched_status option_misspelled(void)
{
    psched_plan *p = tu_plan(4, 8, 2);
    CHECK_OK(psched_plan_set_option(p, "group-sise", 4));
    return generate_fails(p, "interleaved");
}

static psched_status option_not_declared(void)
{
    psched_plan *p = tu_plan(4, 8, 0);
    CHECK_OK(psched_plan_set_option(p, "group-size", 4));
    return generate_fails(p, "zb-h1");
}

static psched_status option_below_min(void)
{
    psched_plan *p = tu_plan(4, 8, 2);
    CHECK_OK(psched_plan_set_option(p, "group-size", -5));
    return generate_fails(p, "interleaved-zb");
}

static psched_status option_above_max(void)
{
    psched_plan *p = tu_plan(4, 8, 2);
    CHECK_OK(psched_plan_set_option(p, "group-size", (int64_t)1 << 32));
    return generate_fails(p, "interleaved");
}

static psched_status memory_limit_zero(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_memory_limit(p, 0);
    psched_plan_destroy(p);
    return st;
}

static psched_status memory_limit_nan(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_memory_limit(p, NAN);
    psched_plan_destroy(p);
    return st;
}

static psched_status option_key_uppercase(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_option(p, "Group-size", 4);
    psched_plan_destroy(p);
    return st;
}

static psched_status option_key_non_utf8(void)
{
    psched_plan *p = tu_plan(1, 1, 0);
    psched_status st = psched_plan_set_option(p, "group\xff\xfe", 4);
    psched_plan_destroy(p);
    return st;
}

static psched_status custom_placement_before_chunks(void)
{
    psched_plan *p = tu_plan(2, 2, 0);
    psched_status st = psched_plan_set_placement(p, PSCHED_PLACEMENT_CUSTOM);
    psched_plan_destroy(p);
    return st;
}

static psched_status stage_device_out_of_range(void)
{
    psched_plan *p = tu_plan(4, 4, 2);
    CHECK_OK(psched_plan_set_placement(p, PSCHED_PLACEMENT_CUSTOM));
    psched_status st = psched_plan_set_stage_device(p, 1, 4);
    psched_plan_destroy(p);
    return st;
}

static psched_status stage_device_without_custom(void)
{
    psched_plan *p = tu_plan(4, 4, 2);
    psched_status st = psched_plan_set_stage_device(p, 5, 0);
    psched_plan_destroy(p);
    return st;
}

/* ------------------------------------------------------------ generate */

static psched_status unknown_schedule_name(void)
{
    return generate_fails(tu_plan(2, 4, 0), "1f1c");
}

static psched_status null_schedule_name(void)
{
    return generate_fails(tu_plan(2, 4, 0), NULL);
}

static psched_status non_utf8_schedule_name(void)
{
    return generate_fails(tu_plan(2, 4, 0), "gpipe\xff\xfe");
}

static psched_status op_count_over_2_31(void)
{
    /* 3 x 1024 stages x 2^21 micro-batches = 3 * 2^31 ops: more than an
     * int32 op index, more than a uint32 too. */
    return generate_fails(tu_plan(1024, 1u << 21, 0), "gpipe");
}

static psched_status op_count_of_the_largest_plan(void)
{
    /* p, v and m at their maxima: S = 2^26, S x m = 2^50. */
    return generate_fails(tu_plan(PSCHED_MAX_DEVICES, PSCHED_MAX_MICROBATCHES,
                                   PSCHED_MAX_CHUNKS), "looped-bfs");
}

static psched_status chunks_that_1f1b_cannot_use(void)
{
    return generate_fails(tu_plan(2, 4, 2), "1f1b");
}

static psched_status placement_that_1f1b_cannot_use(void)
{
    psched_plan *p = tu_plan(2, 4, 2);
    CHECK_OK(psched_plan_set_placement(p, PSCHED_PLACEMENT_VSHAPE));
    return generate_fails(p, "1f1b");
}

static psched_status dualpipe_odd_devices(void)
{
    return generate_fails(tu_plan(3, 12, 0), "dualpipe");
}

static psched_status chimera_partial_unit(void)
{
    return generate_fails(tu_plan(4, 6, 0), "chimera");
}

static psched_status chimera_odd_devices(void)
{
    return generate_fails(tu_plan(3, 6, 0), "chimera");
}

/* ---- Vocabulary Parallelism and collectives (issue 19) ---- */

static psched_status vocab_cost_negative(void)
{
    psched_plan *p = tu_plan(2, 2, 0);
    psched_status st = psched_plan_set_vocab_cost(p, 1, -0.5);
    psched_plan_destroy(p);
    return st;
}

static psched_status vocab_mem_nan(void)
{
    psched_plan *p = tu_plan(2, 2, 0);
    psched_status st = psched_plan_set_vocab_mem(p, NAN, 0);
    psched_plan_destroy(p);
    return st;
}

static psched_status collective_bytes_index_8(void)
{
    psched_plan *p = tu_plan(2, 2, 0);
    psched_status st = psched_plan_set_collective_bytes(p, 8, 1);
    psched_plan_destroy(p);
    return st;
}

static psched_status collective_bytes_infinite(void)
{
    psched_plan *p = tu_plan(2, 2, 0);
    psched_status st = psched_plan_set_collective_bytes(p, 0, INFINITY);
    psched_plan_destroy(p);
    return st;
}

static psched_status vocab_option_3(void)
{
    psched_plan *p = tu_plan(2, 4, 0);
    CHECK_OK(psched_plan_set_option(p, "vocab", 3));
    return generate_fails(p, "1f1b");
}

static psched_status vocab_on_gpipe(void)
{
    psched_plan *p = tu_plan(2, 4, 0);
    CHECK_OK(psched_plan_set_option(p, "vocab", 1));
    return generate_fails(p, "gpipe");
}

static psched_status csv_vocab_shard_on_another_device(void)
{
    return import_str("0F0,1VOCAB_S0,0B0\n1F0,1B0\n");
}

static psched_status csv_collective_index_8(void)
{
    return import_str("0F0,8COLLECTIVE0,0B0\n1F0,8COLLECTIVE0,1B0\n");
}

static psched_status validate_str(const char *text)
{
    psched_schedule *s = NULL;
    psched_status st = psched_import_csv(text, strlen(text), NULL, &s);
    if (!st)
        st = psched_validate(s);
    psched_schedule_destroy(s);
    return st;
}

static psched_status csv_collective_never_reached(void)
{
    return validate_str("0F0,0COLLECTIVE0,0B0\n1F0,1B0\n");
}

static psched_status csv_collectives_out_of_order(void)
{
    return validate_str("0F0,0COLLECTIVE0,1COLLECTIVE0,0B0\n1F0,1COLLECTIVE0,0COLLECTIVE0,1B0\n");
}

static psched_status csv_vocab_pass_missing(void)
{
    return validate_str("0F0,0COLLECTIVE0,0VOCAB_S0,1COLLECTIVE0,0VOCAB_T0,0B0\n"
                        "1F0,0COLLECTIVE0,1VOCAB_S0,1COLLECTIVE0,1B0\n");
}

static psched_status vocab_to_pytorch_dialect(void)
{
    psched_plan *p = tu_plan(2, 4, 0);
    CHECK_OK(psched_plan_set_option(p, "vocab", 2));
    psched_schedule *s = NULL;
    psched_status st = psched_generate(p, "1f1b", &s);
    char *text = NULL;
    if (!st)
        st = psched_export(s, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &text, NULL);
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(p);
    return st;
}

static psched_status dualpipev_too_few_microbatches(void)
{
    return generate_fails(tu_plan(4, 6, 0), "dualpipev");
}

/* zb's memory check: with deltas (+1, 0, 0) nothing is ever freed, so one
 * micro-batch at a time still peaks at m = 8 units, above the limit 4. */
static psched_status zb_memory_deltas_that_do_not_sum_to_zero(void)
{
    psched_plan *p = tu_plan(2, 8, 0);
    CHECK_OK(psched_plan_set_mem(p, 1, 0, 0));
    CHECK_OK(psched_plan_set_memory_limit(p, 4));
    return generate_fails(p, "zb");
}

static psched_status trivial_generate(const psched_plan *plan, psched_builder *b)
{
    (void)plan;
    return psched_builder_reserve(b, 0, 0);
}

static const psched_generator custom_generator = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "bad-input-custom",
    .description = "test generator with a custom placement",
    .constraints = "custom placement",
    .placement = PSCHED_PLACEMENT_CUSTOM,
    .default_chunks = 2,
    .chains = 1,
    .generate = trivial_generate,
};

/* p = 2, v = 2, stages 0, 1, 2 on device 0 and stage 3 on device 1: device 0
 * gets three chunks, device 1 one. */
static psched_status custom_map_with_three_chunks_on_one_device(void)
{
    psched_status st = psched_register_generator(&custom_generator);
    if (st != PSCHED_OK && st != PSCHED_EEXIST)
        return st;
    psched_plan *p = tu_plan(2, 2, 2);
    CHECK_OK(psched_plan_set_placement(p, PSCHED_PLACEMENT_CUSTOM));
    CHECK_OK(psched_plan_set_stage_device(p, 1, 0));
    CHECK_OK(psched_plan_set_stage_device(p, 2, 0));
    CHECK_OK(psched_plan_set_stage_device(p, 3, 1));
    return generate_fails(p, "bad-input-custom");
}

/* ------------------------------------------------ schedule, report, export */

static psched_schedule *small_schedule(void)
{
    psched_plan *p = tu_plan(2, 2, 0);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(p, "1f1b", &s));
    psched_plan_destroy(p);
    return s;
}

static psched_status ops_range_wraps_around(void)
{
    psched_schedule *s = small_schedule();
    psched_op op;
    psched_status st = psched_schedule_ops(s, 0, 1, SIZE_MAX, &op, sizeof op);
    psched_schedule_destroy(s);
    return st;
}

static psched_status ops_device_2_31(void)
{
    psched_schedule *s = small_schedule();
    psched_op op;
    psched_status st = psched_schedule_ops(s, BIG, 0, 1, &op, sizeof op);
    psched_schedule_destroy(s);
    return st;
}

static psched_status ops_record_too_small(void)
{
    psched_schedule *s = small_schedule();
    psched_op op;
    psched_status st = psched_schedule_ops(s, 0, 0, 1, &op, 4);
    psched_schedule_destroy(s);
    return st;
}

static psched_status export_unknown_format(void)
{
    psched_schedule *s = small_schedule();
    char *text = NULL;
    psched_status st = psched_export(s, NULL, (psched_format)99, 0, &text, NULL);
    non_null_outputs += text != NULL;
    psched_schedule_destroy(s);
    return st;
}

static psched_status export_unknown_flags(void)
{
    psched_schedule *s = small_schedule();
    char *text = NULL;
    psched_status st = psched_export(s, NULL, PSCHED_FORMAT_ASCII, 0x80, &text, NULL);
    non_null_outputs += text != NULL;
    psched_schedule_destroy(s);
    return st;
}

/* A write callback that must never be called: the requests below fail
 * before the first byte (a call counts as an output). */
static int never_write(void *user, const char *data, size_t length)
{
    (void)user, (void)data, (void)length;
    non_null_outputs++;
    return 0;
}

static psched_status export_write_null_callback(void)
{
    psched_schedule *s = small_schedule();
    psched_status st = psched_export_write(s, NULL, PSCHED_FORMAT_CSV, 0, NULL, NULL);
    psched_schedule_destroy(s);
    return st;
}

/* An offloaded schedule, lowered, in PyTorch's compute_comms dialect,
 * which has no OFFLOAD/RELOAD action. */
static psched_status export_copies_in_pytorch_comms(void)
{
    psched_schedule *s = small_schedule(), *o = NULL, *l = NULL;
    CHECK_OK(psched_offload(s, NULL, PSCHED_OFFLOAD_ALL, 0, &o));
    CHECK_OK(psched_lower_comm(o, NULL, &l));
    char *text = NULL;
    psched_status st = psched_export(l, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0, &text, NULL);
    non_null_outputs += text != NULL;
    psched_schedule_destroy(l);
    psched_schedule_destroy(o);
    psched_schedule_destroy(s);
    return st;
}

static psched_status export_write_null_schedule(void)
{
    return psched_export_write(NULL, NULL, PSCHED_FORMAT_CSV, 0, never_write, NULL);
}

static psched_status export_write_unknown_format(void)
{
    psched_schedule *s = small_schedule();
    psched_status st = psched_export_write(s, NULL, (psched_format)99, 0, never_write, NULL);
    psched_schedule_destroy(s);
    return st;
}

static psched_status export_write_unknown_flags(void)
{
    psched_schedule *s = small_schedule();
    psched_status st = psched_export_write(s, NULL, PSCHED_FORMAT_CSV, 0x40, never_write, NULL);
    psched_schedule_destroy(s);
    return st;
}

static psched_status export_write_report_of_another_schedule(void)
{
    psched_schedule *s = small_schedule();
    psched_plan *plan = tu_plan(3, 2, 1);
    psched_schedule *other = NULL;
    psched_report *r = NULL;
    CHECK_OK(psched_generate(plan, "1f1b", &other));
    CHECK_OK(psched_simulate(other, NULL, &r));
    psched_status st = psched_export_write(s, r, PSCHED_FORMAT_ASCII, 0, never_write, NULL);
    psched_report_destroy(r);
    psched_schedule_destroy(other);
    psched_plan_destroy(plan);
    psched_schedule_destroy(s);
    return st;
}

static psched_status generate_write_null_callback(void)
{
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_status st = psched_generate_write(plan, "1f1b", PSCHED_FORMAT_CSV, 0, NULL, NULL);
    psched_plan_destroy(plan);
    return st;
}

static psched_status generate_write_null_plan(void)
{
    return psched_generate_write(NULL, "1f1b", PSCHED_FORMAT_CSV, 0, never_write, NULL);
}

static psched_status generate_write_unknown_generator(void)
{
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_status st = psched_generate_write(plan, "1f2b", PSCHED_FORMAT_CSV, 0, never_write,
                                             NULL);
    psched_plan_destroy(plan);
    return st;
}

static psched_status generate_write_unknown_format(void)
{
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_status st = psched_generate_write(plan, "1f1b", (psched_format)7, 0, never_write,
                                             NULL);
    psched_plan_destroy(plan);
    return st;
}

static psched_status generate_write_unknown_flags(void)
{
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_status st = psched_generate_write(plan, "1f1b", PSCHED_FORMAT_CSV, 0x2, never_write,
                                             NULL);
    psched_plan_destroy(plan);
    return st;
}

static psched_status generate_write_plan_the_generator_refuses(void)
{
    psched_plan *plan = tu_plan(2, 4, 1); /* interleaved needs v >= 2 */
    psched_status st = psched_generate_write(plan, "interleaved", PSCHED_FORMAT_CSV, 0,
                                             never_write, NULL);
    psched_plan_destroy(plan);
    return st;
}

static psched_status simulate_with_costs_of_another_shape(void)
{
    psched_schedule *s = small_schedule();
    psched_plan *costs = tu_plan(3, 2, 1);
    psched_report *r = NULL;
    psched_status st = psched_simulate(s, costs, &r);
    non_null_outputs += r != NULL;
    psched_plan_destroy(costs);
    psched_schedule_destroy(s);
    return st;
}

static psched_status report_device_2_31(void)
{
    psched_schedule *s = small_schedule();
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(s, NULL, &r));
    double busy;
    psched_status st = psched_report_device(r, BIG, &busy, NULL, NULL);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    return st;
}

static psched_status lower_a_lowered_schedule(void)
{
    psched_schedule *s = small_schedule(), *l = NULL, *again = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &l));
    psched_status st = psched_lower_comm(l, NULL, &again);
    non_null_outputs += again != NULL;
    psched_schedule_destroy(l);
    psched_schedule_destroy(s);
    return st;
}

/* ----------------------------------------------------------- CSV import */

static psched_status csv_empty(void)
{
    return import_str("");
}

static psched_status csv_10mb_line_of_digits(void)
{
    return with_long_line("", '0', "\n", import_plain);
}

static psched_status csv_10mb_number(void)
{
    return with_long_line("0F0,", '9', "F0\n", import_plain);
}

static psched_status csv_non_utf8(void)
{
    return import_str("0F0,\xff\xfe\n");
}

static psched_status csv_cr_only_line_endings(void)
{
    return import_str("0F0,0B0\r1F0,1B0\r");
}

/* The BOM is skipped: the message quotes the cell after it. */
static psched_status csv_bom_then_bad_cell(void)
{
    return import_str("\xef\xbb\xbfx\n");
}

/* A terminal escape in a message would clear the user's screen. */
static psched_status csv_escape_sequence(void)
{
    return import_str("0\x1b[2J\n");
}

static psched_status csv_group_of_one(void)
{
    return import_str("0F0,[0SEND_F0]BATCH\n1RECV_F0,1F0\n");
}

static psched_status csv_header_chains_3(void)
{
    return import_str("# pipesched: chains=3\n0F0\n");
}

static psched_status csv_nul_byte(void)
{
    return import_text("0F0\0,0I0\n", 9, NULL);
}

/* Nine bytes that claim 5 888 889 micro-batches: validation refuses at
 * once instead of indexing every (stage, micro-batch) slot (found by the
 * fuzzer: it took 13 s and 470 MB before). */
static psched_status csv_claims_millions_of_microbatches(void)
{
    psched_schedule *s = NULL;
    psched_status st = psched_import_csv("4F5888888", 9, NULL, &s);
    if (st == PSCHED_OK)
        st = psched_validate(s);
    psched_schedule_destroy(s);
    return st;
}

static psched_status csv_truncated_in_an_action(void)
{
    return import_str("0F0,0I0,0W0\n1F");
}

static psched_status csv_truncated_in_a_pair(void)
{
    return import_str("(0F0;0I");
}

static psched_status csv_unsupported_action(void)
{
    return import_str("0UNSHARD0\n");
}

static psched_status csv_stage_beyond_32_bits(void)
{
    return import_str("4294967296F0\n");
}

static psched_status csv_stage_beyond_max_chunks(void)
{
    return import_str("1024F0\n");
}

static psched_status csv_microbatch_beyond_max(void)
{
    return import_str("0F16777216\n");
}

/* 1024 stages on one row, m = 699052: 3 * 1024 * 699052 > 2^31 - 1. */
static psched_status csv_op_count_over_the_limit(void)
{
    return import_str("1023F0,0F699051\n");
}

/* Regression (found by fuzz-csv-import): a file of blank rows with a plan
 * whose chunks are 0 took the address of element 0 of a NULL op array. */
static psched_status csv_blank_rows_with_a_plan(void)
{
    psched_plan *p = tu_plan(2, 1, 0);
    psched_status st = import_text(" \n\t\n", 4, p);
    psched_plan_destroy(p);
    return st;
}

static psched_status csv_rows_do_not_match_the_plan(void)
{
    psched_plan *p = tu_plan(3, 1, 1);
    psched_status st = import_text("0F0\n1F0\n", 8, p);
    psched_plan_destroy(p);
    return st;
}

/* Custom map stage 0 -> device 1, stage 1 -> device 0, but the file runs
 * stage 0 in row 0. */
static psched_status csv_stage_on_the_wrong_device_of_a_custom_map(void)
{
    psched_plan *p = tu_plan(2, 1, 1);
    CHECK_OK(psched_plan_set_placement(p, PSCHED_PLACEMENT_CUSTOM));
    CHECK_OK(psched_plan_set_stage_device(p, 0, 1));
    CHECK_OK(psched_plan_set_stage_device(p, 1, 0));
    const char *text = "0F0,0B0\n1F0,1B0\n";
    psched_status st = import_text(text, strlen(text), p);
    psched_plan_destroy(p);
    return st;
}

/* ---------------------------------------------------- layer-profile CSV */

#define PROFILE_HEADER "type,count,f,b,w,act,param\n"

static psched_status profile_empty(void)
{
    return load_model_str("");
}

static psched_status profile_10mb_type_name(void)
{
    return with_long_line(PROFILE_HEADER, 'x', ",1,1,1,1,1,1\n", load_model);
}

static psched_status profile_nan(void)
{
    return load_model_str(PROFILE_HEADER "layer,2,nan,1,1,1,1\n");
}

static psched_status profile_infinite(void)
{
    return load_model_str(PROFILE_HEADER "layer,2,1,inf,1,1,1\n");
}

static psched_status profile_negative(void)
{
    return load_model_str(PROFILE_HEADER "layer,2,1,1,-3,1,1\n");
}

static psched_status profile_count_zero(void)
{
    return load_model_str(PROFILE_HEADER "layer,0,1,1,1,1,1\n");
}

static psched_status profile_count_2_32(void)
{
    return load_model_str(PROFILE_HEADER "layer,4294967296,1,1,1,1,1\n");
}

static psched_status profile_truncated(void)
{
    return load_model_str(PROFILE_HEADER "layer,2,1,1");
}

static psched_status profile_non_utf8_type(void)
{
    return load_model_str(PROFILE_HEADER "lay\xff\xfe,2,1,1,1,1,1\n");
}

static psched_status profile_nul_byte(void)
{
    static const char text[] = PROFILE_HEADER "lay\0er,2,1,1,1,1,1\n";
    return load_model(text, sizeof text - 1);
}

/* ------------------------------------------------------------ optimizer */

/* A profile whose counts sum to 2^32 - 1 (issue 12 item 1): `L + 1`
 * wrapped to 0 in the partitioner's tables, a heap overflow. */
static psched_model *model_of_2_32_minus_1_layers(void)
{
    static const char text[] = PROFILE_HEADER "layer,4294967295,1,1,1,1e8,1e9\n";
    psched_model *m = NULL;
    CHECK_OK(psched_model_load_csv(text, sizeof text - 1, &m));
    return m;
}

static psched_status partition_of_2_32_minus_1_layers(void)
{
    psched_model *m = model_of_2_32_minus_1_layers();
    psched_plan *plan = tu_plan(4, 8, 1);
    CHECK_OK(psched_plan_set_memory_limit(plan, 80e9));
    psched_partition_result *r = (psched_partition_result *)&non_null_outputs; /* poison */
    psched_status st = psched_partition(m, plan, "1f1b", NULL, &r);
    if (r) {
        non_null_outputs++;
        if (st == PSCHED_OK)
            psched_partition_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_status plan_search_of_2_32_minus_1_layers(void)
{
    psched_model *m = model_of_2_32_minus_1_layers();
    psched_plan *plan = tu_plan(4, 8, 1);
    CHECK_OK(psched_plan_set_memory_limit(plan, 80e9));
    psched_search_result *r = NULL;
    psched_status st = psched_plan_search(m, plan, NULL, 0, NULL, &r);
    if (r) {
        non_null_outputs++;
        psched_search_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_status partition_model(psched_model *m, uint32_t p, double limit)
{
    psched_plan *plan = tu_plan(p, 2 * p, 1);
    CHECK_OK(psched_plan_set_memory_limit(plan, limit));
    psched_partition_result *r = NULL;
    psched_status st = psched_partition(m, plan, "1f1b", NULL, &r);
    if (r) {
        non_null_outputs++;
        psched_partition_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_status search_model(psched_model *m, uint32_t p, double limit)
{
    psched_plan *plan = tu_plan(p, 2 * p, 0);
    CHECK_OK(psched_plan_set_memory_limit(plan, limit));
    psched_search_result *r = NULL;
    /* The built-ins by name: this file registers generators of its own. */
    static const char *const names[] = {"1f1b", "interleaved", "zb-h1", "v-half"};
    psched_status st = psched_plan_search(m, plan, names, 4, NULL, &r);
    if (r) {
        non_null_outputs++;
        psched_search_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_model *model_of(uint32_t count, double t)
{
    psched_model *m = NULL;
    CHECK_OK(psched_model_create(&m));
    CHECK_OK(psched_model_add_layers(m, "layer", count, t, t, t, 1, 1));
    return m;
}

/* Layer times of 1e308 overflow every sum: refused, not "infeasible
 * (needs 280)" without a memory limit. */
static psched_status partition_with_times_of_1e308(void)
{
    return partition_model(model_of(4, 1e308), 2, INFINITY);
}

static psched_status plan_search_with_times_of_1e308(void)
{
    return search_model(model_of(4, 1e308), 2, INFINITY);
}

/* ------------------------------------- Megatron-LM layouts and emitters */

/* embedding, 4 transformer layers (selective and full variants), head:
 * the layout of a good split over p = 2 is "Ett|ttL". */
static psched_model *layout_model(void)
{
    static const char text[] =
        "type,count,f,b,w,act,param,act_selective,extra_selective,act_full,extra_full\n"
        "embedding,1,0,0,0,1,100,,,,\n"
        "layer,4,1,1,1,4,10,2,0.25,0.5,1\n"
        "head,1,0,0,0,2,5,,,,\n";
    psched_model *m = NULL;
    CHECK_OK(psched_model_load_csv(text, sizeof text - 1, &m));
    return m;
}

static psched_status read_layout(const char *layout, const char *granularity,
                                 const char *method, uint32_t num_layers)
{
    psched_model *m = layout_model();
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_partition_result *r = (psched_partition_result *)&non_null_outputs; /* poison */
    psched_status st = psched_partition_from_layout(m, plan, "1f1b", layout, NULL, granularity,
                                                    method, num_layers, &r);
    if (r) {
        non_null_outputs++;
        if (st == PSCHED_OK)
            psched_partition_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_status layout_unclosed_parenthesis(void)
{
    return read_layout("Ett|(tt|L", NULL, NULL, 0);
}

static psched_status layout_parenthesis_closing_nothing(void)
{
    return read_layout("Ett|tt)|L", NULL, NULL, 0);
}

static psched_status layout_nested_parentheses(void)
{
    return read_layout("E((tt|)*1)*1,ttL", NULL, NULL, 0);
}

static psched_status layout_group_without_count(void)
{
    return read_layout("Ett|(tt)L", NULL, NULL, 0);
}

static psched_status layout_stages_not_a_multiple_of_p(void)
{
    return read_layout("Ett|tt|L", NULL, NULL, 0);
}

static psched_status layout_more_layers_than_the_profile(void)
{
    return read_layout("Et*3|ttL", NULL, NULL, 0);
}

static psched_status layout_fewer_layers_than_the_profile(void)
{
    return read_layout("Et|tL", NULL, NULL, 0);
}

static psched_status layout_unknown_element(void)
{
    return read_layout("Ett|txL", NULL, NULL, 0);
}

static psched_status layout_mtp_without_a_group(void)
{
    return read_layout("Ett|tmtL", NULL, NULL, 0);
}

static psched_status layout_e_not_first(void)
{
    return read_layout("tEt|ttL", NULL, NULL, 0);
}

static psched_status layout_l_not_last(void)
{
    return read_layout("Ett|tLt", NULL, NULL, 0);
}

static psched_status layout_repeat_without_count(void)
{
    return read_layout("Et*|ttL", NULL, NULL, 0);
}

static psched_status layout_granularity_unknown(void)
{
    return read_layout("Ett|ttL", "fast", NULL, 0);
}

static psched_status layout_full_without_method(void)
{
    return read_layout("Ett|ttL", "full", NULL, 0);
}

static psched_status layout_method_unknown(void)
{
    return read_layout("Ett|ttL", "full", "every", 1);
}

static psched_status layout_uniform_groups_of_two(void)
{
    return read_layout("Ett|ttL", "full", "uniform", 2);
}

static psched_status layout_selective_with_a_method(void)
{
    return read_layout("Ett|ttL", "selective", "block", 1);
}

static psched_status layout_map_of_a_missing_group(void)
{
    psched_model *m = layout_model();
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_partition_result *r = NULL;
    psched_status st = psched_partition_from_layout(m, plan, "1f1b", "Ett|ttL", "m=mtp", NULL,
                                                    NULL, 0, &r);
    if (r) {
        non_null_outputs++;
        psched_partition_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_status evaluate_counts(const uint32_t *counts, uint32_t stages,
                                     const psched_recompute *rc)
{
    psched_model *m = layout_model();
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_partition_result *r = (psched_partition_result *)&non_null_outputs; /* poison */
    psched_status st = psched_partition_evaluate(m, plan, "1f1b", counts, stages, rc, &r);
    if (r) {
        non_null_outputs++;
        if (st == PSCHED_OK)
            psched_partition_result_destroy(r);
    }
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_status evaluate_counts_short_of_the_model(void)
{
    return evaluate_counts((const uint32_t[]){3, 2}, 2, NULL);
}

static psched_status evaluate_three_stages_for_two(void)
{
    return evaluate_counts((const uint32_t[]){2, 2, 2}, 3, NULL);
}

static psched_status evaluate_recompute_choice_3(void)
{
    return evaluate_counts((const uint32_t[]){3, 3}, 2,
                           (const psched_recompute[]){0, 0, 3, 0, 0, 0});
}

static psched_status evaluate_selective_embedding(void)
{
    return evaluate_counts((const uint32_t[]){3, 3}, 2,
                           (const psched_recompute[]){1, 0, 0, 0, 0, 0});
}

/* Emit the partition E t t | t t L with a module-name template. */
static psched_status emit_torchtitan(const char *fqn, bool null_text)
{
    psched_model *m = layout_model();
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition_evaluate(m, plan, "1f1b", (const uint32_t[]){3, 3}, 2, NULL, &r));
    char *text = (char *)&non_null_outputs; /* poison */
    psched_status st =
        psched_partition_to_torchtitan(r, m, NULL, fqn, null_text ? NULL : &text, NULL);
    if (!null_text && text) {
        non_null_outputs++;
        if (st == PSCHED_OK)
            psched_free(text);
    }
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(m);
    return st;
}

static psched_status torchtitan_template_without_l(void)
{
    return emit_torchtitan("E=tok_embeddings;t=layers.{i}", false);
}

static psched_status torchtitan_template_bad_entry(void)
{
    return emit_torchtitan("E=tok_embeddings;layers.{i};L=norm", false);
}

static psched_status torchtitan_null_text(void)
{
    return emit_torchtitan(NULL, true);
}

/* A result from another model (8 layers, not 6). */
static psched_status megatron_of_another_model(void)
{
    psched_model *m = layout_model(), *other = NULL;
    CHECK_OK(psched_model_create(&other));
    CHECK_OK(psched_model_add_layers(other, "layer", 8, 1, 1, 1, 1, 1));
    psched_plan *plan = tu_plan(2, 4, 1);
    psched_partition_result *r = NULL;
    CHECK_OK(psched_partition_evaluate(m, plan, "1f1b", (const uint32_t[]){3, 3}, 2, NULL, &r));
    char *text = (char *)&non_null_outputs; /* poison */
    psched_status st = psched_partition_to_megatron(r, other, NULL, &text, NULL);
    if (text) {
        non_null_outputs++;
        if (st == PSCHED_OK)
            psched_free(text);
    }
    psched_partition_result_destroy(r);
    psched_plan_destroy(plan);
    psched_model_destroy(other);
    psched_model_destroy(m);
    return st;
}

static psched_status profile_number_beyond_double(void)
{
    return load_model_str(PROFILE_HEADER "layer,2,1e309,1,1,1,1\n");
}

/* ------------------------------------------------------------- plug-ins */

static psched_status plugin_path_that_does_not_exist(void)
{
    return psched_plugin_load("/nonexistent/pipesched-plugin.so");
}

static psched_status plugin_empty_path(void)
{
    return psched_plugin_load("");
}

static psched_status plugin_without_init_symbol(void)
{
    return psched_plugin_load(plugin_no_init);
}

static psched_status plugin_with_a_newer_abi(void)
{
    return psched_plugin_load(plugin_new_abi);
}

static psched_status register_newer_abi(void)
{
    psched_generator g = custom_generator;
    g.name = "bad-input-abi";
    g.abi_version = PSCHED_GENERATOR_ABI + 1;
    return psched_register_generator(&g);
}

static psched_status register_abi_zero(void)
{
    psched_generator g = custom_generator;
    g.name = "bad-input-abi";
    g.abi_version = 0;
    return psched_register_generator(&g);
}

static psched_status register_bad_name(void)
{
    psched_generator g = custom_generator;
    g.name = "Bad_Name";
    return psched_register_generator(&g);
}

static psched_status register_taken_name(void)
{
    psched_generator g = custom_generator;
    g.name = "1f1b";
    return psched_register_generator(&g);
}

static psched_status register_auto_placement(void)
{
    psched_generator g = custom_generator;
    g.name = "bad-input-auto";
    g.placement = PSCHED_PLACEMENT_AUTO;
    return psched_register_generator(&g);
}

/* ---------------------------------------------------------------- table */

typedef struct bad_case {
    const char *what;
    psched_status (*call)(void);
    psched_status status;
    const char *names; /* the message must contain this: the offending value */
} bad_case;

static const bad_case cases[] = {
    {"devices 0", devices_zero, PSCHED_EINVAL, "devices (0)"},
    {"devices 2^31", devices_2_31, PSCHED_EINVAL, "devices (2147483648)"},
    {"devices 65537", devices_one_above_max, PSCHED_EINVAL, "devices (65537)"},
    {"microbatches 0", microbatches_zero, PSCHED_EINVAL, "microbatches (0)"},
    {"microbatches 2^31", microbatches_2_31, PSCHED_EINVAL, "microbatches (2147483648)"},
    {"chunks 2^31", chunks_2_31, PSCHED_EINVAL, "chunks (2147483648)"},
    {"chunks 1025", chunks_one_above_max, PSCHED_EINVAL, "chunks (1025)"},
    {"chains 3", chains_three, PSCHED_EINVAL, "chains (3)"},
    {"placement 7", placement_out_of_enum, PSCHED_EINVAL, "placement (7)"},
    {"cost NaN", cost_nan, PSCHED_EINVAL, "cost of F (nan)"},
    {"cost infinite", cost_infinite, PSCHED_EINVAL, "cost of B (inf)"},
    {"cost negative", cost_negative, PSCHED_EINVAL, "cost of W (-1)"},
    {"stage cost negative", stage_cost_negative, PSCHED_EINVAL, "cost of F (-0.5)"},
    {"stage cost of stage S", stage_cost_stage_out_of_range, PSCHED_EINVAL, "stage (4)"},
    {"stage cost of stage 2^31", stage_cost_stage_2_31, PSCHED_EINVAL, "stage (2147483648)"},
    {"memory delta -inf", mem_negative_infinity, PSCHED_EINVAL, "memory delta of B (-inf)"},
    {"stage memory delta NaN", stage_mem_nan, PSCHED_EINVAL, "memory delta of W (nan)"},
    {"comm negative", comm_negative, PSCHED_EINVAL, "comm latency (-2)"},
    {"comm NaN", comm_nan, PSCHED_EINVAL, "comm latency (nan)"},
    {"zb cost 1e308 overflows", zb_cost_1e308, PSCHED_EINVAL,
     "F cost of stage 0 (1e+308) is too large: devices (4) x (stages (4) x microbatches (8)"},
    {"zb comm 1e308 overflows", zb_comm_1e308, PSCHED_EINVAL,
     "comm latency (1e+308) is too large"},
    {"zb stage cost 1e307 overflows", zb_stage_cost_1e307, PSCHED_EINVAL,
     "F cost of stage 2 (1e+307) is too large"},
    {"every generator cost 1e308", every_generator_cost_1e308, PSCHED_EINVAL,
     "(1e+308) is too large"},
    {"zb micro-batch weight 1e308", zb_weights_1e308, PSCHED_EINVAL,
     "micro-batch weights (summing to 1e+308) are too large"},
    {"simulate costs 1e308", simulate_with_cost_1e308, PSCHED_EINVAL,
     "F cost of stage 0 (1e+308) is too large"},
    {"option misspelled", option_misspelled, PSCHED_EINVAL,
     "option \"group-sise\" is not an option of interleaved (it takes group-size)"},
    {"option not declared", option_not_declared, PSCHED_EINVAL,
     "option \"group-size\" is not an option of zb-h1 (it takes none)"},
    {"option below min", option_below_min, PSCHED_EINVAL,
     "option group-size (-5) must be in [1, 4294967295] for interleaved-zb"},
    {"option above max", option_above_max, PSCHED_EINVAL,
     "option group-size (4294967296) must be in [1, 4294967295] for interleaved"},
    {"memory limit 0", memory_limit_zero, PSCHED_EINVAL, "memory limit (0)"},
    {"memory limit NaN", memory_limit_nan, PSCHED_EINVAL, "memory limit (nan)"},
    {"option key uppercase", option_key_uppercase, PSCHED_EINVAL, "\"Group-size\""},
    {"option key non-UTF-8", option_key_non_utf8, PSCHED_EINVAL, "\"group\xff\xfe\""},
    {"custom placement before chunks", custom_placement_before_chunks, PSCHED_EINVAL,
     "chunks is 0"},
    {"stage on device p", stage_device_out_of_range, PSCHED_EINVAL, "device (4) for stage 1"},
    {"stage map without custom placement", stage_device_without_custom, PSCHED_EINVAL,
     "stage 5"},
    {"unknown schedule", unknown_schedule_name, PSCHED_ENOTFOUND, "\"1f1c\""},
    {"NULL schedule name", null_schedule_name, PSCHED_EINVAL, "name"},
    {"non-UTF-8 schedule name", non_utf8_schedule_name, PSCHED_ENOTFOUND, "\"gpipe\xff\xfe\""},
    {"op count 3 * 2^31", op_count_over_2_31, PSCHED_EINVAL,
     "3 x stages (1024) x microbatches (2097152) exceeds 2147483647"},
    {"op count of p, v, m at their maxima", op_count_of_the_largest_plan, PSCHED_EINVAL,
     "stages (67108864) x microbatches (16777216)"},
    {"1f1b with v = 2", chunks_that_1f1b_cannot_use, PSCHED_EINVAL, "chunks (2) must be 1"},
    {"1f1b with vshape", placement_that_1f1b_cannot_use, PSCHED_EINVAL, "placement vshape"},
    {"dualpipe with p = 3", dualpipe_odd_devices, PSCHED_EINVAL, "devices (3)"},
    {"chimera with m = 6, p = 4", chimera_partial_unit, PSCHED_EINVAL,
     "microbatches (6) must be a multiple of devices (4) for chimera"},
    {"chimera with p = 3", chimera_odd_devices, PSCHED_EINVAL, "devices (3) must be even"},
    {"vocab S time negative", vocab_cost_negative, PSCHED_EINVAL,
     "vocabulary T pass time (-0.5) must be finite and >= 0"},
    {"vocab S memory NaN", vocab_mem_nan, PSCHED_EINVAL,
     "vocabulary S pass memory change (nan) must be finite"},
    {"collective bytes index 8", collective_bytes_index_8, PSCHED_EINVAL,
     "collective index (8) must be < 8"},
    {"collective bytes infinite", collective_bytes_infinite, PSCHED_EINVAL,
     "collective bytes (inf) must be finite and >= 0"},
    {"vocab option 3", vocab_option_3, PSCHED_EINVAL, "vocab"},
    {"vocab option on gpipe", vocab_on_gpipe, PSCHED_EINVAL,
     "option \"vocab\" is not an option of gpipe"},
    {"CSV vocabulary shard on another device", csv_vocab_shard_on_another_device,
     PSCHED_EINVAL, "VOCAB_S shard (1) must be the device's own index (0)"},
    {"CSV collective index 8", csv_collective_index_8, PSCHED_EINVAL,
     "collective index (8) must be < 8"},
    {"collective one device never reaches", csv_collective_never_reached, PSCHED_EDEADLOCK,
     "device(s) 1 never reach it"},
    {"collectives in different orders", csv_collectives_out_of_order, PSCHED_EDEADLOCK,
     "devices 0 and 1 reach collectives in different orders"},
    {"vocabulary T pass missing", csv_vocab_pass_missing, PSCHED_EINVALID,
     "1VOCAB_T0 is missing"},
    {"vocab schedule to PyTorch's compute_comms", vocab_to_pytorch_dialect, PSCHED_EUNSUPPORTED,
     "no vocabulary passes or collectives"},
    {"dualpipev with m < 2p", dualpipev_too_few_microbatches, PSCHED_EINVAL,
     "microbatches (6) must be >= 2*devices (8)"},
    {"zb, deltas (+1, 0, 0), limit 4", zb_memory_deltas_that_do_not_sum_to_zero,
     PSCHED_EINFEASIBLE, "memory limit (4) is below the smallest feasible peak (8"},
    {"custom map with 3 chunks on device 0", custom_map_with_three_chunks_on_one_device,
     PSCHED_EINVAL, "puts 3 stages on device 0"},
    {"ops range first + count wraps", ops_range_wraps_around, PSCHED_EINVAL,
     "device 0 has 4 ops"},
    {"ops of device 2^31", ops_device_2_31, PSCHED_EINVAL, "device (2147483648)"},
    {"op record of 4 bytes", ops_record_too_small, PSCHED_EINVAL, "op_size (4)"},
    {"export format 99", export_unknown_format, PSCHED_EINVAL, "unknown format 99"},
    {"export flags 0x80", export_unknown_flags, PSCHED_EINVAL, "unknown flags 0x80"},
    {"export_write NULL callback", export_write_null_callback, PSCHED_EINVAL,
     "schedule and write must not be NULL"},
    {"export_write NULL schedule", export_write_null_schedule, PSCHED_EINVAL,
     "schedule and write must not be NULL"},
    {"export_write format 99", export_write_unknown_format, PSCHED_EINVAL, "unknown format 99"},
    {"export_write flags 0x40", export_write_unknown_flags, PSCHED_EINVAL, "unknown flags 0x40"},
    {"export_write report of another schedule", export_write_report_of_another_schedule,
     PSCHED_EINVAL, "the report has 3 devices but the schedule has 2"},
    {"generate_write NULL callback", generate_write_null_callback, PSCHED_EINVAL,
     "write must not be NULL"},
    {"generate_write NULL plan", generate_write_null_plan, PSCHED_EINVAL, "plan is NULL"},
    {"generate_write unknown generator", generate_write_unknown_generator, PSCHED_ENOTFOUND,
     "1f2b"},
    {"generate_write format 7", generate_write_unknown_format, PSCHED_EINVAL,
     "unknown format 7"},
    {"generate_write flags 0x2", generate_write_unknown_flags, PSCHED_EINVAL,
     "unknown flags 0x2"},
    {"generate_write interleaved with v = 1", generate_write_plan_the_generator_refuses,
     PSCHED_EINVAL, "interleaved"},
    {"export copies in PyTorch's compute_comms", export_copies_in_pytorch_comms,
     PSCHED_EUNSUPPORTED, "device 0 op 1 (0OFFLOAD0): PyTorch's compute_comms dialect has no "
     "OFFLOAD/RELOAD actions"},
    {"simulate with a 3-stage cost plan", simulate_with_costs_of_another_shape, PSCHED_EINVAL,
     "cost plan has 3 stages"},
    {"report of device 2^31", report_device_2_31, PSCHED_EINVAL, "device (2147483648)"},
    {"lowering a lowered schedule", lower_a_lowered_schedule, PSCHED_EINVAL,
     "is already a comm op"},
    {"CSV empty", csv_empty, PSCHED_EPARSE, "line 1 column 1: empty input"},
    {"CSV 10 MB line of digits", csv_10mb_line_of_digits, PSCHED_EPARSE,
     "line 1 column 10485761"},
    {"CSV 10 MB number", csv_10mb_number, PSCHED_EPARSE,
     "line 1 column 5: \"9999999999999999999999999999999999999999...\""},
    {"CSV non-UTF-8 cell", csv_non_utf8, PSCHED_EPARSE, "line 1 column 5: \"\\xff\\xfe\""},
    {"CSV CR-only line endings", csv_cr_only_line_endings, PSCHED_EPARSE,
     "line 1 column 8: carriage return inside a line; rows end with \"\\n\" or \"\\r\\n\" "
     "(CR-only line endings are not read)"},
    {"CSV leading BOM, then a bad cell", csv_bom_then_bad_cell, PSCHED_EPARSE,
     "line 1 column 1: \"x\" is not a whole action"},
    {"CSV escape sequence in a cell", csv_escape_sequence, PSCHED_EPARSE,
     "line 1 column 2: \"0\\x1b[2J\" is not a whole action"},
    {"CSV batched group of one", csv_group_of_one, PSCHED_EPARSE,
     "a batched group holds at least two actions"},
    {"CSV header chains=3", csv_header_chains_3, PSCHED_EPARSE,
     "line 1 column 1: \"# pipesched: chains=3\" is not the header"},
    {"CSV NUL byte", csv_nul_byte, PSCHED_EPARSE, "line 1 column 4: NUL byte"},
    {"CSV claiming millions of micro-batches", csv_claims_millions_of_microbatches,
     PSCHED_EINVALID, "stages (5) x micro-batches (5888889)"},
    {"CSV truncated in an action", csv_truncated_in_an_action, PSCHED_EPARSE,
     "line 2 column 3: \"1F\""},
    {"CSV truncated in a pair", csv_truncated_in_a_pair, PSCHED_EPARSE,
     "line 1 column 8: \"(0F0;0I\""},
    {"CSV UNSHARD action", csv_unsupported_action, PSCHED_EPARSE, "UNSHARD is not supported"},
    {"CSV stage 2^32", csv_stage_beyond_32_bits, PSCHED_EPARSE,
     "\"4294967296F0\" is not a whole action: the number does not fit in 32 bits"},
    {"CSV 1025 stages on one row", csv_stage_beyond_max_chunks, PSCHED_EINVAL,
     "1024F0 has the largest stage, so the file has 1025 stages"},
    {"CSV micro-batch 2^24", csv_microbatch_beyond_max, PSCHED_EINVAL,
     "0F16777216 has micro-batch 16777216"},
    {"CSV op count over the limit", csv_op_count_over_the_limit, PSCHED_EINVAL,
     "stages (1024) x microbatches (699052)"},
    {"CSV blank rows, plan chunks 0", csv_blank_rows_with_a_plan, PSCHED_EINVAL,
     "chunks at 0"},
    {"CSV 2 rows, plan 3 devices", csv_rows_do_not_match_the_plan, PSCHED_EINVAL,
     "the file has 2 rows (devices) but the plan has 3"},
    {"CSV stage on the wrong device of a custom map",
     csv_stage_on_the_wrong_device_of_a_custom_map, PSCHED_EINVAL,
     "line 1 column 1: 0F0 is on device 0 (its row) but the plan's custom placement puts "
     "stage 0 on device 1"},
    {"profile empty", profile_empty, PSCHED_EPARSE, "no header row"},
    {"profile 10 MB type name", profile_10mb_type_name, PSCHED_EPARSE,
     "line 2, column 1: type must have 1..31 characters"},
    {"profile NaN", profile_nan, PSCHED_EPARSE, "f must be a finite number >= 0, got \"nan\""},
    {"profile infinite", profile_infinite, PSCHED_EPARSE,
     "b must be a finite number >= 0, got \"inf\""},
    {"profile negative", profile_negative, PSCHED_EPARSE,
     "w must be a finite number >= 0, got \"-3\""},
    {"profile count 0", profile_count_zero, PSCHED_EPARSE, "got 0"},
    {"profile count 2^32", profile_count_2_32, PSCHED_EPARSE, "got 4294967296"},
    {"profile truncated", profile_truncated, PSCHED_EPARSE, "line 2, column 1: row has 4 cells"},
    {"profile non-UTF-8 type", profile_non_utf8_type, PSCHED_EPARSE, "line 2, column 1"},
    {"plug-in path that does not exist", plugin_path_that_does_not_exist, PSCHED_EPLUGIN,
     "\"/nonexistent/pipesched-plugin.so\""},
    {"plug-in path empty", plugin_empty_path, PSCHED_EINVAL, "empty"},
    {"plug-in without init symbol", plugin_without_init_symbol, PSCHED_EPLUGIN,
     "does not export psched_plugin_init"},
    {"plug-in with a newer ABI", plugin_with_a_newer_abi, PSCHED_EPLUGIN,
     "generator abi_version (3) is not supported"},
    {"register abi_version 2", register_newer_abi, PSCHED_EPLUGIN, "abi_version (3)"},
    {"register abi_version 0", register_abi_zero, PSCHED_EPLUGIN, "abi_version (0)"},
    {"register name Bad_Name", register_bad_name, PSCHED_EINVAL, "\"Bad_Name\""},
    {"register name 1f1b twice", register_taken_name, PSCHED_EEXIST, "\"1f1b\""},
    {"register auto placement", register_auto_placement, PSCHED_EINVAL, "placement (0)"},
    {"profile NUL byte in a type name", profile_nul_byte, PSCHED_EPARSE,
     "line 2, column 4: NUL byte"},
    {"profile non-UTF-8 type name, whole message", profile_non_utf8_type, PSCHED_EPARSE,
     "line 2, column 1: layer type name \"lay\xff\xfe\" has character 4"},
    {"partition of 2^32 - 1 layers", partition_of_2_32_minus_1_layers, PSCHED_EINVAL,
     "the model has 4294967295 layers; the partitioner handles at most 100000"},
    {"plan search of 2^32 - 1 layers", plan_search_of_2_32_minus_1_layers, PSCHED_EINVAL,
     "the model has 4294967295 layers; the partitioner handles at most 100000"},
    {"partition, layer times 1e308", partition_with_times_of_1e308, PSCHED_EINVAL,
     "the model's times overflow: 4 layers sum to inf"},
    {"plan search, layer times 1e308", plan_search_with_times_of_1e308, PSCHED_EINVAL,
     "the model's times overflow: 4 layers sum to inf"},
    {"profile 1e309", profile_number_beyond_double, PSCHED_EPARSE,
     "line 2, column 9: f \"1e309\" is beyond the largest double"},
    {"layout with an unclosed '('", layout_unclosed_parenthesis, PSCHED_EINVAL,
     "layout: '(' at column 5 is never closed"},
    {"layout with a ')' closing nothing", layout_parenthesis_closing_nothing, PSCHED_EINVAL,
     "layout: ')' at column 7 closes no '('"},
    {"layout with nested parentheses", layout_nested_parentheses, PSCHED_EINVAL,
     "layout: '(' at column 3 is inside the group opened at column 2; Megatron-LM's layout has "
     "one level of parentheses"},
    {"layout group without *n", layout_group_without_count, PSCHED_EINVAL,
     "layout: ')' at column 8 must be followed by *n (a repeated group)"},
    {"layout of 3 stages over 2 devices", layout_stages_not_a_multiple_of_p, PSCHED_EINVAL,
     "layout: 3 stages is not a multiple of the 2 devices (Megatron-LM: p x v stages)"},
    {"layout of 5 transformer layers, profile 4", layout_more_layers_than_the_profile,
     PSCHED_EINVAL, "layout: 5 't' elements (transformer layers); the model has 4"},
    {"layout of 2 transformer layers, profile 4", layout_fewer_layers_than_the_profile,
     PSCHED_EINVAL, "layout: 2 't' elements (transformer layers); the model has 4"},
    {"layout with an unknown element", layout_unknown_element, PSCHED_EINVAL,
     "layout: 'x' at column 6 is not a Megatron-LM layout element (E, t, m, L, '|', '(...)*n', "
     "'x*n')"},
    {"layout with m and no MTP group", layout_mtp_without_a_group, PSCHED_EINVAL,
     "layout: element 'm' at column 6 (MTP layer) stands for no layer group of the model; map "
     "it to the group it means (m=GROUP)"},
    {"layout with E not first", layout_e_not_first, PSCHED_EINVAL,
     "layout: the first element must be E (the embedding), as Megatron-LM requires"},
    {"layout with L not last", layout_l_not_last, PSCHED_EINVAL,
     "layout: the last element must be L (the loss), as Megatron-LM requires; column 7 is 't'"},
    {"layout with '*' and no count", layout_repeat_without_count, PSCHED_EINVAL,
     "layout: '*' at column 3 must be followed by a repeat count"},
    {"layout recompute granularity fast", layout_granularity_unknown, PSCHED_EINVAL,
     "recompute granularity 'fast' must be none, selective or full"},
    {"layout recompute full without a method", layout_full_without_method, PSCHED_EINVAL,
     "recompute granularity full needs a method: uniform or block"},
    {"layout recompute method every", layout_method_unknown, PSCHED_EINVAL,
     "recompute method 'every' must be uniform or block"},
    {"layout recompute uniform 2", layout_uniform_groups_of_two, PSCHED_EINVAL,
     "recompute method uniform with 2 layers per group: the layer profile models "
     "recomputation layer by layer (1) only"},
    {"layout recompute selective with block 1", layout_selective_with_a_method, PSCHED_EINVAL,
     "recompute method 'block' and layer count 1 apply to granularity full only (granularity: "
     "selective)"},
    {"layout map of a missing group", layout_map_of_a_missing_group, PSCHED_EINVAL,
     "layout map entry 'm=mtp': the model has no layer group named 'mtp'"},
    {"evaluate 5 of 6 layers", evaluate_counts_short_of_the_model, PSCHED_EINVAL,
     "the stages hold 5 layers in all; the model has 6"},
    {"evaluate 3 stages of 1f1b p = 2", evaluate_three_stages_for_two, PSCHED_EINVAL,
     "3 stages given; schedule 1f1b with p = 2, v = 1 has 2 stages"},
    {"evaluate recompute choice 3", evaluate_recompute_choice_3, PSCHED_EINVAL,
     "recompute choice of layer 2 (3) must be 0 (none), 1 (selective) or 2 (full)"},
    {"evaluate selective embedding", evaluate_selective_embedding, PSCHED_EINVAL,
     "layer 0 (group 'embedding') has no selective recompute variant"},
    {"torchtitan template without L", torchtitan_template_without_l, PSCHED_EINVAL,
     "module-name template has no entry for 'L' layers (give L=NAME)"},
    {"torchtitan template entry without a letter", torchtitan_template_bad_entry, PSCHED_EINVAL,
     "module-name template entry 'layers.{i}' must be LETTER=NAME[,NAME...] with LETTER one of "
     "E, t, m, L"},
    {"torchtitan NULL text", torchtitan_null_text, PSCHED_EINVAL,
     "text output must be non-NULL"},
    {"megatron of another model's partition", megatron_of_another_model, PSCHED_EINVAL,
     "the model has 8 layers; the partition covers 6"},
};


static bool case_holds(const bad_case *c, bool report)
{
    non_null_outputs = 0;
    psched_status st = c->call();
    const char *msg = psched_last_error();
    bool holds = st == c->status && strstr(msg, c->names) && !non_null_outputs;
    if (!holds && report)
        fprintf(stderr, "%s: got %s \"%s\"%s\n  expected %s naming \"%s\"\n", c->what,
                psched_status_str(st), msg, non_null_outputs ? " and a non-NULL output" : "",
                psched_status_str(c->status), c->names);
    return holds;
}

static void test_every_bad_input_fails_with_its_status_and_names_the_value(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (!case_holds(&cases[i], true))
            tu_failed_checks++;
}

/* The plug-in paths are quoted in the messages, so the table's needles
 * cannot hold them: check them here. */
static void test_plugin_messages_name_the_path(void)
{
    CHECK_EQ_INT(psched_plugin_load(plugin_no_init), PSCHED_EPLUGIN);
    CHECK_CONTAINS(psched_last_error(), plugin_no_init);
    CHECK_EQ_INT(psched_plugin_load(plugin_new_abi), PSCHED_EPLUGIN);
    CHECK_CONTAINS(psched_last_error(), plugin_new_abi);
    /* Nothing of the refused plug-in was registered. */
    const psched_generator *g;
    CHECK_EQ_INT(psched_generator_find("future-abi", &g), PSCHED_ENOTFOUND);
}

/* After every refusal the library still works: errors latch nothing. */
static void test_library_still_works_after_bad_input(void)
{
    psched_schedule *s = small_schedule();
    CHECK_OK(psched_validate(s));
    psched_schedule_destroy(s);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test-bad-input PLUGIN_NO_INIT.so PLUGIN_NEW_ABI.so\n");
        return 2;
    }
    plugin_no_init = argv[1];
    plugin_new_abi = argv[2];
    RUN(test_every_bad_input_fails_with_its_status_and_names_the_value);
    RUN(test_plugin_messages_name_the_path);
    RUN(test_library_still_works_after_bad_input);
    TEST_MAIN_END();
}
