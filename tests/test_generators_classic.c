/* Golden orders and closed forms of the classic generators: gpipe, 1f1b,
 * interleaved, looped-bfs. Every expected order is written out by hand from
 * the specification (issue 2) or copied from the reference worked example;
 * op text is PyTorch's: our BW prints as "B". */
#include "testgolden.h"

#include <stdint.h>


static void check_order(const psched_schedule *s, const char *const *expected)
{
    char buf[4096];
    if (!s)
        return;
    for (uint32_t d = 0; d < psched_schedule_devices(s); d++) {
        tg_device_text(s, d, buf, sizeof buf);
        CHECK_STR(buf, expected[d]);
    }
    CHECK_OK(psched_validate(s));
}

static void expect_einval(const char *name, uint32_t p, uint32_t v, uint32_t m, int64_t group,
                          const char *needle1, const char *needle2)
{
    psched_schedule *s = NULL;
    CHECK_EQ_INT(tg_generate(name, p, v, m, group, &s), PSCHED_EINVAL);
    CHECK(s == NULL);
    CHECK_CONTAINS(psched_last_error(), needle1);
    CHECK_CONTAINS(psched_last_error(), needle2);
    psched_schedule_destroy(s);
}

/* ---- golden orders ---- */

static void test_interleaved_p2_v2_m4_matches_worked_example(void)
{
    /* tests/data/reference/README.md, "Interleaved 1F1B", idle removed. */
    static const char *const expected[] = {
        "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3",
        "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3",
    };
    psched_schedule *s = tg_generate_ok("interleaved", 2, 2, 4, NO_GROUP);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_interleaved_default_chunks_is_2(void)
{
    /* Same example with v left to the generator. */
    psched_schedule *s = tg_generate_ok("interleaved", 2, 0, 4, NO_GROUP);
    if (s) {
        CHECK_EQ_INT(psched_plan_chunks(psched_schedule_plan(s)), 2);
        CHECK_EQ_INT(psched_schedule_op_count(s, 0), 16);
    }
    psched_schedule_destroy(s);
}

static void test_1f1b_p4_m8_by_hand(void)
{
    /* Warm-up min(m, p-d-1) = 3, 2, 1, 0 forwards, then F/BW pairs, then
     * the remaining BW. */
    static const char *const expected[] = {
        "0F0,0F1,0F2,0F3,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,0B5,0B6,0B7",
        "1F0,1F1,1F2,1B0,1F3,1B1,1F4,1B2,1F5,1B3,1F6,1B4,1F7,1B5,1B6,1B7",
        "2F0,2F1,2B0,2F2,2B1,2F3,2B2,2F4,2B3,2F5,2B4,2F6,2B5,2F7,2B6,2B7",
        "3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3F4,3B4,3F5,3B5,3F6,3B6,3F7,3B7",
    };
    psched_schedule *s = tg_generate_ok("1f1b", 4, 0, 8, NO_GROUP);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_1f1b_warmup_capped_by_microbatches(void)
{
    /* p=4, m=2: warm-up min(2, p-d-1) = 2, 2, 1, 0. */
    static const char *const expected[] = {
        "0F0,0F1,0B0,0B1",
        "1F0,1F1,1B0,1B1",
        "2F0,2F1,2B0,2B1",
        "3F0,3B0,3F1,3B1",
    };
    psched_schedule *s = tg_generate_ok("1f1b", 4, 0, 2, NO_GROUP);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_gpipe_p2_m3_by_hand(void)
{
    static const char *const expected[] = {
        "0F0,0F1,0F2,0B0,0B1,0B2",
        "1F0,1F1,1F2,1B0,1B1,1B2",
    };
    psched_schedule *s = tg_generate_ok("gpipe", 2, 0, 3, NO_GROUP);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_looped_bfs_p2_v2_m3_by_hand(void)
{
    /* Forwards chunk 0 then chunk 1, micro-batches ascending; backwards
     * chunk 1 then chunk 0, micro-batches descending (PyTorch
     * ScheduleLoopedBFS). */
    static const char *const expected[] = {
        "0F0,0F1,0F2,2F0,2F1,2F2,2B2,2B1,2B0,0B2,0B1,0B0",
        "1F0,1F1,1F2,3F0,3F1,3F2,3B2,3B1,3B0,1B2,1B1,1B0",
    };
    psched_schedule *s = tg_generate_ok("looped-bfs", 2, 2, 3, NO_GROUP);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_looped_bfs_v1_is_gpipe_with_descending_backward(void)
{
    static const char *const expected[] = {
        "0F0,0F1,0B1,0B0",
        "1F0,1F1,1B1,1B0",
        "2F0,2F1,2B1,2B0",
    };
    psched_schedule *s = tg_generate_ok("looped-bfs", 3, 1, 2, NO_GROUP);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_interleaved_m_not_multiple_of_p_default_group(void)
{
    /* p=3, v=2, m=4: rounds = max(1, 4 div 3) = 1, N = 4, one group.
     * Table: (0,c0) (1,c0) (2,c0) (3,c0) (0,c1) (1,c1) (2,c1) (3,c1);
     * chunk 1 of device d is stage 3+d. Warm-up W_d = min(2(2-d) + 4, 8)
     * = 8, 6, 4. */
    static const char *const expected[] = {
        "0F0,0F1,0F2,0F3,3F0,3F1,3F2,3F3,3B0,3B1,3B2,3B3,0B0,0B1,0B2,0B3",
        "1F0,1F1,1F2,1F3,4F0,4F1,4F2,4B0,4F3,4B1,4B2,4B3,1B0,1B1,1B2,1B3",
        "2F0,2F1,2F2,2F3,5F0,5B0,5F1,5B1,5F2,5B2,5F3,5B3,2B0,2B1,2B2,2B3",
    };
    psched_schedule *s = tg_generate_ok("interleaved", 3, 2, 4, NO_GROUP);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_interleaved_explicit_group_with_remainder(void)
{
    /* p=2, v=2, m=5, N=3: 5 mod 3 = 2 >= p, so the last group is {3, 4}.
     * Table k: 0:(0,c0) 1:(1,c0) 2:(2,c0) 3:(0,c1) 4:(1,c1) 5:(2,c1)
     *          6:(3,c0) 7:(4,c0) 8:(3,c1) 9:(4,c1); backward k mirrors the
     * chunk. W_0 = 2 + 3 = 5, W_1 = 3. */
    static const char *const expected[] = {
        "0F0,0F1,0F2,2F0,2F1,2F2,2B0,0F3,2B1,0F4,2B2,2F3,0B0,2F4,0B1,0B2,2B3,2B4,0B3,0B4",
        "1F0,1F1,1F2,3F0,3B0,3F1,3B1,3F2,3B2,1F3,1B0,1F4,1B1,3F3,1B2,3F4,3B3,3B4,1B3,1B4",
    };
    psched_schedule *s = tg_generate_ok("interleaved", 2, 2, 5, 3);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_interleaved_explicit_group_equal_to_p_matches_default(void)
{
    /* Megatron's default N = p: for p=2, m=4 it is the worked example. */
    static const char *const expected[] = {
        "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3",
        "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3",
    };
    psched_schedule *s = tg_generate_ok("interleaved", 2, 2, 4, 2);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

static void test_interleaved_one_group_of_all_microbatches(void)
{
    /* p=2, v=2, m=4, N=4: table chunk 0 of mb 0..3, then chunk 1.
     * W_0 = 2 + 4 = 6, W_1 = 4. */
    static const char *const expected[] = {
        "0F0,0F1,0F2,0F3,2F0,2F1,2F2,2B0,2F3,2B1,2B2,2B3,0B0,0B1,0B2,0B3",
        "1F0,1F1,1F2,1F3,3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,1B0,1B1,1B2,1B3",
    };
    psched_schedule *s = tg_generate_ok("interleaved", 2, 2, 4, 4);
    check_order(s, expected);
    psched_schedule_destroy(s);
}

/* ---- checks ---- */

static void test_interleaved_rejects_one_chunk(void)
{
    expect_einval("interleaved", 2, 1, 4, NO_GROUP, "chunks (1)", ">= 2");
}

static void test_interleaved_rejects_group_smaller_than_devices(void)
{
    expect_einval("interleaved", 4, 2, 8, 2, "group-size (2)", "devices (4)");
}

static void test_interleaved_rejects_group_larger_than_microbatches(void)
{
    expect_einval("interleaved", 2, 2, 4, 5, "group-size (5)", "microbatches (4)");
}

static void test_interleaved_rejects_short_last_group(void)
{
    /* 6 mod 4 = 2, and 0 < 2 < p = 4: Megatron rejects it. */
    expect_einval("interleaved", 4, 2, 6, 4, "group-size (4)", "microbatches (6)");
    expect_einval("interleaved", 4, 2, 6, 4, "= 2", "devices (4)");
}

static void test_interleaved_default_group_needs_rounds_dividing_m(void)
{
    /* p=2, m=5: rounds = 2 does not divide 5; 4 is a valid m. */
    expect_einval("interleaved", 2, 2, 5, NO_GROUP, "microbatches (5)", "rounds (2)");
    expect_einval("interleaved", 2, 2, 5, NO_GROUP, "microbatches 4", "group-size");
    /* p=4, m=11: rounds = 2; 10 is a valid m. */
    expect_einval("interleaved", 4, 2, 11, NO_GROUP, "rounds (2)", "microbatches 10");
}

/* m < p: PyTorch runs one round with group size m. The rows are PyTorch
 * 2.13.0's own ScheduleInterleaved1F1B(stages, m).pipeline_order, built
 * with stand-in stages (group_size p, the rank's v stage indices) and
 * printed with str(action), idle steps dropped; tests/test_pytorch_orders.py
 * compares all 84 such configurations at p 2..8, v 2..4 against torch. */
static void test_interleaved_m_below_p_matches_pytorch(void)
{
    static const char *const p4_v2_m3[] = {
        "0F0,0F1,0F2,4F0,4F1,4F2,4B0,4B1,4B2,0B0,0B1,0B2",
        "1F0,1F1,1F2,5F0,5F1,5F2,5B0,5B1,5B2,1B0,1B1,1B2",
        "2F0,2F1,2F2,6F0,6F1,6F2,6B0,6B1,6B2,2B0,2B1,2B2",
        "3F0,3F1,3F2,7F0,7B0,7F1,7B1,7F2,7B2,3B0,3B1,3B2",
    };
    static const char *const p3_v3_m2[] = {
        "0F0,0F1,3F0,3F1,6F0,6F1,6B0,6B1,3B0,3B1,0B0,0B1",
        "1F0,1F1,4F0,4F1,7F0,7F1,7B0,7B1,4B0,4B1,1B0,1B1",
        "2F0,2F1,5F0,5F1,8F0,8B0,8F1,8B1,5B0,5B1,2B0,2B1",
    };
    psched_schedule *s = tg_generate_ok("interleaved", 4, 2, 3, NO_GROUP);
    check_order(s, p4_v2_m3);
    psched_schedule_destroy(s);
    s = tg_generate_ok("interleaved", 3, 3, 2, NO_GROUP);
    check_order(s, p3_v3_m2);
    psched_schedule_destroy(s);
}

/* PyTorch's class names find the same generator, in any case; the
 * schedule is named by pipesched's own name. */
static void test_pytorch_class_names_are_aliases(void)
{
    static const struct {
        const char *alias, *name;
    } want[] = {{"GPipe", "gpipe"},
                {"1F1B", "1f1b"},
                {"Interleaved1F1B", "interleaved"},
                {"LoopedBFS", "looped-bfs"},
                {"InterleavedZeroBubble", "interleaved-zb"},
                {"ZBVZeroBubble", "v-zb"},
                {"DualPipeV", "dualpipev"},
                {"interleaved1f1b", "interleaved"},
                {"LOOPEDBFS", "looped-bfs"},
                {"GPIPE", "gpipe"},
                {"Interleaved-ZB", "interleaved-zb"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const psched_generator *g = NULL;
        CHECK_OK(psched_generator_find(want[i].alias, &g));
        if (g)
            CHECK_STR(g->name, want[i].name);
    }
    /* The alias is listed by the query, then NULL past the end. */
    const char *alias = "x";
    CHECK_OK(psched_generator_alias("interleaved", 0, &alias));
    CHECK_STR(alias, "Interleaved1F1B");
    CHECK_OK(psched_generator_alias("INTERLEAVED1F1B", 1, &alias));
    CHECK(alias == NULL);
    CHECK_OK(psched_generator_alias("zb", 0, &alias));
    CHECK(alias == NULL);
    CHECK_EQ_INT(psched_generator_alias("Interleaved1F1", 0, &alias), PSCHED_ENOTFOUND);
    /* Generating through an alias is generating the named schedule. */
    psched_schedule *s = tg_generate_ok("Interleaved1F1B", 4, 2, 8, NO_GROUP);
    if (s)
        CHECK_STR(psched_schedule_name(s), "interleaved");
    psched_schedule_destroy(s);
}


static psched_status noop_generate(const psched_plan *plan, psched_builder *b)
{
    (void)plan;
    (void)b;
    return PSCHED_OK;
}

/* The one name table (issue 13 item 5), against the header's table of
 * kinds: ours and PyTorch's spelling, NULL past the last kind. */
static void test_op_kind_and_placement_names(void)
{
    /* OFFLOAD and RELOAD are pipesched's activation copies: PyTorch has no
     * such action, so both namings spell them the same way. */
    static const char *const ours[] = {"F",      "B",      "W",      "BW",      "SEND_F",
                                       "RECV_F", "SEND_B", "RECV_B", "OFFLOAD", "RELOAD",
                                       "VOCAB_S", "VOCAB_T", "COLLECTIVE"};
    static const char *const torch[] = {"F",      "I",      "W",      "B",       "SEND_F",
                                        "RECV_F", "SEND_B", "RECV_B", "OFFLOAD", "RELOAD",
                                        "VOCAB_S", "VOCAB_T", "COLLECTIVE"};
    for (int k = 0; k < 13; k++) {
        CHECK_STR(psched_op_kind_str((psched_op_kind)k, PSCHED_NAMING_PIPESCHED), ours[k]);
        CHECK_STR(psched_op_kind_str((psched_op_kind)k, PSCHED_NAMING_PYTORCH), torch[k]);
    }
    CHECK(psched_op_kind_str((psched_op_kind)13, PSCHED_NAMING_PIPESCHED) == NULL);
    CHECK(psched_op_kind_str((psched_op_kind)-1, PSCHED_NAMING_PIPESCHED) == NULL);
    CHECK(psched_op_kind_str(PSCHED_OP_F, (psched_naming)2) == NULL);
    CHECK_STR(psched_placement_str(PSCHED_PLACEMENT_AUTO), "auto");
    CHECK_STR(psched_placement_str(PSCHED_PLACEMENT_LOOP), "loop");
    CHECK_STR(psched_placement_str(PSCHED_PLACEMENT_VSHAPE), "vshape");
    CHECK_STR(psched_placement_str(PSCHED_PLACEMENT_CUSTOM), "custom");
    CHECK(psched_placement_str((psched_placement)4) == NULL);
    CHECK(psched_placement_str((psched_placement)-1) == NULL);
}

/* Declared options, read back through the query API (issue 13 item 5). */
static void test_generator_options_are_declared_and_queryable(void)
{
    size_t n = 99;
    CHECK_OK(psched_generator_option_count("interleaved", &n));
    CHECK_EQ_INT(n, 1);
    CHECK_OK(psched_generator_option_count("InterleavedZeroBubble", &n));
    CHECK_EQ_INT(n, 1);
    CHECK_OK(psched_generator_option_count("1f1b", &n));
    CHECK_EQ_INT(n, 1); /* vocab (issue 19) */
    CHECK_OK(psched_generator_option_count("gpipe", &n));
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(psched_generator_option_count("nope", &n), PSCHED_ENOTFOUND);
    psched_option_info info = {.version = PSCHED_OPTION_INFO_VERSION};
    CHECK_OK(psched_generator_option("interleaved", 0, &info));
    CHECK_STR(info.name, "group-size");
    CHECK(info.description && strstr(info.description, "p <= N <= m"));
    CHECK(info.min == 1 && info.max == UINT32_MAX);
    CHECK_EQ_INT(info.flags, PSCHED_OPTION_DEFAULT_FROM_PLAN);
    CHECK_EQ_INT(psched_generator_option("interleaved", 1, &info), PSCHED_ENOTFOUND);
    CHECK_CONTAINS(psched_last_error(), "option index (1) must be < 1");
    info.version = 2;
    CHECK_EQ_INT(psched_generator_option("interleaved", 0, &info), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "option info version (2) must be 1");
    /* A declared option in range generates; the same key on a generator
     * that does not declare it is refused, naming it. */
    psched_plan *plan = tu_plan(4, 8, 0);
    psched_schedule *s = NULL;
    CHECK_OK(psched_plan_set_option(plan, "group-size", 4));
    CHECK_OK(psched_generate(plan, "interleaved", &s));
    psched_schedule_destroy(s);
    s = NULL;
    CHECK_EQ_INT(psched_generate(plan, "gpipe", &s), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "option \"group-size\" is not an option of gpipe (it takes none)");
    CHECK_EQ_INT(psched_generate(plan, "1f1b", &s), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "option \"group-size\" is not an option of 1f1b (it takes vocab)");
    CHECK(s == NULL);
    psched_plan_destroy(plan);
}

/* A plug-in built against the ABI 1 header passes a shorter descriptor:
 * the registry must read none of the fields ABI 2 appended (valgrind and
 * ASan see a read past this exact-size copy), gives it no aliases and no
 * options, and passes it every plan option unchecked. */
typedef struct descriptor_v1 {
    uint32_t abi_version;
    const char *name, *description, *constraints;
    psched_placement placement;
    uint32_t default_chunks, chains;
    psched_status (*check)(const psched_plan *);
    psched_status (*generate)(const psched_plan *, psched_builder *);
} descriptor_v1;

static psched_status noop_generate(const psched_plan *plan, psched_builder *b);

static void test_abi_1_descriptor_is_read_to_its_size(void)
{
    descriptor_v1 *d = malloc(sizeof *d);
    if (!d)
        return;
    *d = (descriptor_v1){1, "abi-one", "ABI 1 plug-in (test)", "", PSCHED_PLACEMENT_LOOP, 1, 1,
                         NULL, noop_generate};
    CHECK_OK(psched_register_generator((const psched_generator *)(void *)d));
    free(d); /* the registry keeps its own copy */
    const psched_generator *g = NULL;
    CHECK_OK(psched_generator_find("ABI-ONE", &g));
    if (g) {
        CHECK_EQ_INT(g->abi_version, 1);
        CHECK(g->aliases == NULL && g->options == NULL && g->option_count == 0);
    }
    psched_plan *plan = NULL;
    psched_schedule *s = NULL;
    CHECK_OK(psched_plan_create(&plan));
    CHECK_OK(psched_plan_set_option(plan, "anything", 7));
    CHECK_OK(psched_generate(plan, "abi-one", &s));
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* An alias another generator already answers to is refused, whatever
 * its case; an alias equal to the generator's own name is no conflict. */
static void test_alias_conflicts_are_refused(void)
{
    static const char *const taken[] = {"gpipe-copy", "LoopedBfs", NULL};
    static const char *const own[] = {"Mine-Twice", NULL};
    static const char *const bad[] = {"has space", NULL};
    psched_generator g = {.abi_version = PSCHED_GENERATOR_ABI,
                          .name = "alias-test",
                          .placement = PSCHED_PLACEMENT_LOOP,
                          .chains = 1,
                          .generate = noop_generate,
                          .aliases = taken};
    CHECK_EQ_INT(psched_register_generator(&g), PSCHED_EEXIST);
    CHECK_STR(psched_last_error(), "alias \"LoopedBfs\" of generator \"alias-test\" is already "
                                   "a registered name or alias");
    g.aliases = bad;
    CHECK_EQ_INT(psched_register_generator(&g), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "alias \"has space\" of generator \"alias-test\" may only "
                                   "use [A-Za-z0-9-]");
    g.name = "mine-twice";
    g.aliases = own;
    CHECK_OK(psched_register_generator(&g));
    const psched_generator *found = NULL;
    CHECK_OK(psched_generator_find("MINE-TWICE", &found));
    if (found) {
        CHECK_STR(found->name, "mine-twice");
        /* default_chunks 0 means 1, and the registered copy says so. */
        CHECK_EQ_INT(found->default_chunks, 1);
    }
}

static void test_single_chunk_generators_reject_two_chunks(void)
{
    expect_einval("gpipe", 2, 2, 4, NO_GROUP, "chunks (2)", "gpipe");
    expect_einval("1f1b", 2, 2, 4, NO_GROUP, "chunks (2)", "1f1b");
}

static void test_generators_reject_vshape_placement(void)
{
    psched_plan *plan = tu_plan(2, 4, 2);
    psched_schedule *s = NULL;
    CHECK_OK(psched_plan_set_placement(plan, PSCHED_PLACEMENT_VSHAPE));
    CHECK_EQ_INT(psched_generate(plan, "interleaved", &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "vshape");
    CHECK_CONTAINS(psched_last_error(), "loop");
    CHECK_EQ_INT(psched_generate(plan, "looped-bfs", &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "vshape");
    CHECK_CONTAINS(psched_last_error(), "loop");
    CHECK(s == NULL);
    psched_plan_destroy(plan);
}

static void test_descriptors(void)
{
    static const struct {
        const char *name;
        uint32_t default_chunks;
    } want[] = {{"gpipe", 1}, {"1f1b", 1}, {"interleaved", 2}, {"looped-bfs", 2}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const psched_generator *g = NULL;
        CHECK_OK(psched_generator_find(want[i].name, &g));
        if (!g)
            continue;
        CHECK_STR(g->name, want[i].name);
        CHECK_EQ_INT(g->abi_version, PSCHED_GENERATOR_ABI);
        CHECK_EQ_INT(g->placement, PSCHED_PLACEMENT_LOOP);
        CHECK_EQ_INT(g->default_chunks, want[i].default_chunks);
        CHECK_EQ_INT(g->chains, 1);
        CHECK(g->description && g->description[0]);
        CHECK(g->constraints && g->constraints[0]);
    }
}

/* ---- closed forms, unit costs, comm 0 ---- */

static void check_span(const char *name, uint32_t p, uint32_t m)
{
    psched_schedule *s = tg_generate_ok(name, p, 0, m, NO_GROUP);
    psched_report *r = NULL;
    if (!s)
        return;
    CHECK_OK(psched_simulate(s, NULL, &r));
    if (r) {
        /* F = 1, BW = 2: (m + p - 1) * 3 */
        CHECK_EQ_DBL(psched_report_span(r), (double)(m + p - 1) * 3.0);
    }
    psched_report_destroy(r);
    psched_schedule_destroy(s);
}

static void test_gpipe_and_1f1b_span_is_3_m_plus_p_minus_1(void)
{
    static const uint32_t shapes[][2] = {{1, 1}, {1, 5}, {2, 2}, {2, 7}, {3, 3},
                                         {4, 8}, {4, 3}, {5, 12}, {8, 16}, {8, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_span("gpipe", shapes[i][0], shapes[i][1]);
        check_span("1f1b", shapes[i][0], shapes[i][1]);
    }
}

static void test_1f1b_peak_memory_is_min_m_p_minus_d(void)
{
    static const uint32_t shapes[][2] = {{1, 4}, {4, 8}, {4, 2}, {6, 3}, {8, 16}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        uint32_t p = shapes[i][0], m = shapes[i][1];
        psched_schedule *s = tg_generate_ok("1f1b", p, 0, m, NO_GROUP);
        psched_report *r = NULL;
        if (!s)
            continue;
        CHECK_OK(psched_simulate(s, NULL, &r));
        for (uint32_t d = 0; r && d < p; d++) {
            double peak = -1;
            CHECK_OK(psched_report_device(r, d, NULL, NULL, &peak));
            CHECK_EQ_DBL(peak, m < p - d ? m : p - d);
        }
        psched_report_destroy(r);
        psched_schedule_destroy(s);
    }
}

static void test_gpipe_peak_memory_is_m(void)
{
    psched_schedule *s = tg_generate_ok("gpipe", 3, 0, 5, NO_GROUP);
    psched_report *r = NULL;
    if (!s)
        return;
    CHECK_OK(psched_simulate(s, NULL, &r));
    for (uint32_t d = 0; r && d < 3; d++) {
        double peak = -1;
        CHECK_OK(psched_report_device(r, d, NULL, NULL, &peak));
        CHECK_EQ_DBL(peak, 5);
    }
    psched_report_destroy(r);
    psched_schedule_destroy(s);
}

int main(void)
{
    RUN(test_interleaved_p2_v2_m4_matches_worked_example);
    RUN(test_interleaved_default_chunks_is_2);
    RUN(test_1f1b_p4_m8_by_hand);
    RUN(test_1f1b_warmup_capped_by_microbatches);
    RUN(test_gpipe_p2_m3_by_hand);
    RUN(test_looped_bfs_p2_v2_m3_by_hand);
    RUN(test_looped_bfs_v1_is_gpipe_with_descending_backward);
    RUN(test_interleaved_m_not_multiple_of_p_default_group);
    RUN(test_interleaved_explicit_group_with_remainder);
    RUN(test_interleaved_explicit_group_equal_to_p_matches_default);
    RUN(test_interleaved_one_group_of_all_microbatches);
    RUN(test_interleaved_rejects_one_chunk);
    RUN(test_interleaved_rejects_group_smaller_than_devices);
    RUN(test_interleaved_rejects_group_larger_than_microbatches);
    RUN(test_interleaved_rejects_short_last_group);
    RUN(test_interleaved_default_group_needs_rounds_dividing_m);
    RUN(test_interleaved_m_below_p_matches_pytorch);
    RUN(test_pytorch_class_names_are_aliases);
    RUN(test_alias_conflicts_are_refused);
    RUN(test_op_kind_and_placement_names);
    RUN(test_generator_options_are_declared_and_queryable);
    RUN(test_abi_1_descriptor_is_read_to_its_size);
    RUN(test_single_chunk_generators_reject_two_chunks);
    RUN(test_generators_reject_vshape_placement);
    RUN(test_descriptors);
    RUN(test_gpipe_and_1f1b_span_is_3_m_plus_p_minus_1);
    RUN(test_1f1b_peak_memory_is_min_m_p_minus_d);
    RUN(test_gpipe_peak_memory_is_m);
    TEST_MAIN_END();
}
