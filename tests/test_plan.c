/* Plan setters, getters, placement maps, generation plumbing and errors. */
#include "testsched.h"
#include "testutil.h"

static void test_defaults(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    CHECK_EQ_INT(psched_plan_devices(p), 1);
    CHECK_EQ_INT(psched_plan_microbatches(p), 1);
    CHECK_EQ_INT(psched_plan_chunks(p), 0);
    CHECK_EQ_INT(psched_plan_chains(p), 1);
    CHECK_EQ_INT(psched_plan_placement(p), PSCHED_PLACEMENT_AUTO);
    CHECK(isinf(psched_plan_memory_limit(p)));
    CHECK_EQ_DBL(psched_plan_comm(p), 0);
    double f, b, w;
    CHECK_OK(psched_plan_stage_cost(p, 0, &f, &b, &w));
    CHECK(f == 1 && b == 1 && w == 1);
    CHECK_OK(psched_plan_stage_mem(p, 0, &f, &b, &w));
    CHECK(f == 1 && b == 0 && w == -1);
    psched_plan_destroy(p);
}

static void test_setters_reject_values_outside_their_rule(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    CHECK_EQ_INT(psched_plan_set_devices(p, 0), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "devices (0) must be between 1 and 65536");
    CHECK_EQ_INT(psched_plan_set_devices(p, 2147483648u), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "devices (2147483648)");
    CHECK_EQ_INT(psched_plan_set_microbatches(p, 0), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "microbatches (0) must be between 1 and 16777216");
    CHECK_EQ_INT(psched_plan_set_chunks(p, 5000), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "chunks (5000)");
    CHECK_EQ_INT(psched_plan_set_chains(p, 3), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "chains (3) must be 1 or 2");
    CHECK_EQ_INT(psched_plan_set_cost(p, 1, NAN, 1), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "cost of B (nan) must be finite");
    CHECK_EQ_INT(psched_plan_set_cost(p, 1, 1, -2), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "cost of W (-2) must be >= 0");
    CHECK_EQ_INT(psched_plan_set_mem(p, INFINITY, 0, 0), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "memory delta of F (inf) must be finite");
    CHECK_EQ_INT(psched_plan_set_comm(p, -1), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "comm latency (-1) must be finite and >= 0");
    CHECK_EQ_INT(psched_plan_set_memory_limit(p, 0), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_plan_set_option(p, "Group", 4), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "option key \"Group\" may only use [a-z0-9-]");
    CHECK_EQ_INT(psched_plan_set_stage_cost(p, 1, 1, 1, 1), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "stage (1) must be < stages (1 = devices x chunks)");
    CHECK_EQ_INT(psched_plan_set_placement(p, (psched_placement)9), PSCHED_EINVAL);
    /* nothing above changed the plan */
    CHECK_EQ_INT(psched_plan_devices(p), 1);
    CHECK_EQ_INT(psched_plan_microbatches(p), 1);
    psched_plan_destroy(p);
}

static void test_options_round_trip(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    int64_t v = 0;
    CHECK_EQ_INT(psched_plan_get_option(p, "group-size", &v), PSCHED_ENOTFOUND);
    CHECK_OK(psched_plan_set_option(p, "group-size", 4));
    CHECK_OK(psched_plan_set_option(p, "group-size", 6));
    CHECK_OK(psched_plan_get_option(p, "group-size", &v));
    CHECK_EQ_INT(v, 6);
    psched_plan_destroy(p);
}

static void test_loop_and_vshape_maps(void)
{
    psched_plan *p = ts_plan(4, 8, 2, PSCHED_PLACEMENT_LOOP);
    CHECK_EQ_INT(psched_plan_stage_device(p, 5), 1);
    CHECK_EQ_INT(psched_plan_stage_chunk(p, 5), 1);
    CHECK_EQ_INT(psched_plan_device_stage(p, 3, 1), 7);
    CHECK_OK(psched_plan_set_placement(p, PSCHED_PLACEMENT_VSHAPE));
    CHECK_EQ_INT(psched_plan_stage_device(p, 5), 2); /* 2p-1-s = 7-5 */
    CHECK_EQ_INT(psched_plan_stage_chunk(p, 5), 1);
    CHECK_EQ_INT(psched_plan_device_stage(p, 0, 1), 7);
    CHECK_EQ_INT(psched_plan_stage_device(p, 8), UINT32_MAX);
    psched_plan_destroy(p);
}

static void test_custom_map_derives_chunks_in_model_order(void)
{
    psched_plan *p = ts_plan(2, 2, 2, PSCHED_PLACEMENT_CUSTOM);
    /* stages 0,1 on device 0; 2,3 on device 1 */
    CHECK_OK(psched_plan_set_stage_device(p, 1, 0));
    CHECK_OK(psched_plan_set_stage_device(p, 2, 1));
    CHECK_EQ_INT(psched_plan_stage_chunk(p, 1), 1);
    CHECK_EQ_INT(psched_plan_stage_chunk(p, 2), 0);
    CHECK_EQ_INT(psched_plan_device_stage(p, 1, 1), 3);
    CHECK_EQ_INT(psched_plan_set_stage_device(p, 4, 0), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "stage (4) must be < stages (4)");
    CHECK_EQ_INT(psched_plan_set_stage_device(p, 0, 2), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "device (2) for stage 0 must be < devices (2)");
    psched_plan *c;
    CHECK_OK(psched_plan_clone(p, &c));
    CHECK_OK(psched_plan_set_stage_device(p, 1, 1));
    CHECK_EQ_INT(psched_plan_stage_device(c, 1), 0); /* the clone is independent */
    psched_plan_destroy(c);
    psched_plan_destroy(p);
}

static void test_custom_map_with_uneven_devices_is_rejected_at_generation(void)
{
    psched_plan *p = ts_plan(2, 2, 2, PSCHED_PLACEMENT_CUSTOM);
    /* the map starts in loop order (0 1 0 1); moving stage 1 gives 0 0 0 1 */
    CHECK_OK(psched_plan_set_stage_device(p, 1, 0));
    CHECK_EQ_INT(psched__plan_check_resolved(p), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(),
              "custom placement puts 3 stages on device 0; every device must hold exactly chunks (2)");
    psched_plan_destroy(p);
}

static void test_unknown_schedule_lists_known_names(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    psched_schedule *s = (psched_schedule *)1;
    CHECK_EQ_INT(psched_generate(p, "2f2b", &s), PSCHED_ENOTFOUND);
    CHECK(s == NULL);
    CHECK_CONTAINS(psched_last_error(), "unknown schedule \"2f2b\"; known: gpipe, 1f1b");
    psched_plan_destroy(p);
}

static void test_generate_resolves_defaults_without_touching_the_plan(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    CHECK_OK(psched_plan_set_devices(p, 4));
    CHECK_OK(psched_plan_set_microbatches(p, 8));
    psched_schedule *s;
    CHECK_OK(psched_generate(p, "1f1b", &s));
    const psched_plan *r = psched_schedule_plan(s);
    CHECK_EQ_INT(psched_plan_chunks(r), 1);
    CHECK_EQ_INT(psched_plan_placement(r), PSCHED_PLACEMENT_LOOP);
    CHECK_EQ_INT(psched_plan_chunks(p), 0);
    CHECK_STR(psched_schedule_name(s), "1f1b");
    CHECK_EQ_INT(psched_schedule_total_ops(s), 4 * 8 * 2);
    psched_schedule_destroy(s);
    psched_plan_destroy(p);
}

static void test_placement_that_does_not_fit_the_generator(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    CHECK_OK(psched_plan_set_devices(p, 2));
    CHECK_OK(psched_plan_set_chunks(p, 2));
    CHECK_OK(psched_plan_set_placement(p, PSCHED_PLACEMENT_VSHAPE));
    psched_schedule *s;
    CHECK_EQ_INT(psched_generate(p, "interleaved", &s), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(),
              "placement vshape does not fit interleaved, which needs loop placement");
    psched_plan_destroy(p);
}

static void test_op_count_overflow_is_rejected(void)
{
    psched_plan *p;
    CHECK_OK(psched_plan_create(&p));
    CHECK_OK(psched_plan_set_devices(p, 65536));
    CHECK_OK(psched_plan_set_microbatches(p, 16777216));
    psched_schedule *s;
    CHECK_EQ_INT(psched_generate(p, "gpipe", &s), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(),
              "op count 3 x stages (65536) x microbatches (16777216) exceeds 2147483647");
    psched_plan_destroy(p);
}

static void test_ops_copy_honours_the_callers_record_size(void)
{
    psched_plan *plan = ts_plan(1, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1,0I0,0W0,0B1"};
    psched_schedule *s = ts_build(plan, rows);
    /* a caller whose record is larger (a newer header) gets zeroed tail */
    struct bigger { psched_op op; uint32_t extra; } big[2];
    memset(big, 0xab, sizeof big);
    CHECK_OK(psched_schedule_ops(s, 0, 2, 2, &big[0].op, sizeof big[0]));
    CHECK_EQ_INT(big[0].op.kind, PSCHED_OP_B);
    CHECK_EQ_INT(big[1].op.kind, PSCHED_OP_W);
    CHECK_EQ_INT(big[1].op.microbatch, 0);
    CHECK_EQ_INT(big[1].extra, 0);
    psched_op o;
    CHECK_EQ_INT(psched_schedule_ops(s, 0, 4, 2, &o, sizeof o), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "ops [4, 6) out of range: device 0 has 5 ops");
    CHECK_EQ_INT(psched_schedule_ops(s, 0, 0, 1, &o, 4), PSCHED_EINVAL);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_status_names(void)
{
    CHECK_STR(psched_status_str(PSCHED_OK), "PSCHED_OK");
    CHECK_STR(psched_status_str(PSCHED_EDEADLOCK), "PSCHED_EDEADLOCK");
    CHECK_STR(psched_status_str((psched_status)99), "PSCHED_UNKNOWN");
    CHECK(strlen(psched_version()) >= 5);
}

static psched_status noop_generate(const psched_plan *plan, psched_builder *b)
{
    (void)plan;
    (void)b;
    return PSCHED_OK;
}

static void test_registry_rejects_bad_descriptors(void)
{
    psched_generator g = {.abi_version = PSCHED_GENERATOR_ABI, .name = "gpipe",
                          .description = "dup", .constraints = "",
                          .placement = PSCHED_PLACEMENT_LOOP, .default_chunks = 1, .chains = 1,
                          .generate = noop_generate};
    CHECK_EQ_INT(psched_register_generator(&g), PSCHED_EEXIST);
    CHECK_STR(psched_last_error(), "a generator named \"gpipe\" is already registered");
    g.name = "Bad Name";
    CHECK_EQ_INT(psched_register_generator(&g), PSCHED_EINVAL);
    g.name = "future";
    g.abi_version = PSCHED_GENERATOR_ABI + 1;
    CHECK_EQ_INT(psched_register_generator(&g), PSCHED_EPLUGIN);
    CHECK_STR(psched_last_error(), "generator abi_version (3) is not supported: this library accepts 1..2");
    CHECK_EQ_INT(psched_plugin_load("/nonexistent/plugin.so"), PSCHED_EPLUGIN);
    CHECK_CONTAINS(psched_last_error(), "cannot load plug-in \"/nonexistent/plugin.so\"");
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_setters_reject_values_outside_their_rule);
    RUN(test_options_round_trip);
    RUN(test_loop_and_vshape_maps);
    RUN(test_custom_map_derives_chunks_in_model_order);
    RUN(test_custom_map_with_uneven_devices_is_rejected_at_generation);
    RUN(test_unknown_schedule_lists_known_names);
    RUN(test_generate_resolves_defaults_without_touching_the_plan);
    RUN(test_placement_that_does_not_fit_the_generator);
    RUN(test_op_count_overflow_is_rejected);
    RUN(test_ops_copy_honours_the_callers_record_size);
    RUN(test_status_names);
    RUN(test_registry_rejects_bad_descriptors);
    TEST_MAIN_END();
}
