/* The C++17 wrapper, used the way a training framework's runtime uses it:
 * only pipesched.hpp, linked against the shared library, built with
 * -Wall -Wextra -Werror. Expected values are closed forms with unit costs,
 * hand-derived orders and the shared reference README's worked examples. */
#include <pipesched.hpp>

#include "testutil.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

/* Runs fn, which must throw pipesched::Error with @p status; returns what(). */
template <typename Fn> std::string expect_error(psched_status status, Fn &&fn, int line)
{
    try {
        fn();
    } catch (const pipesched::Error &e) {
        if (e.status() != status) {
            fprintf(stderr, "%s:%d: expected %s, got %s: %s\n", __FILE__, line,
                    psched_status_str(status), e.status_name(), e.what());
            tu_failed_checks++;
        }
        return e.what();
    }
    fprintf(stderr, "%s:%d: expected %s, nothing was thrown\n", __FILE__, line,
            psched_status_str(status));
    tu_failed_checks++;
    return "";
}
#define EXPECT_ERROR(status, body) expect_error(status, [&] { body; }, __LINE__)

/* CHECK_STR on a temporary std::string's c_str() would read freed memory. */
void check_string(const std::string &got, const std::string &want, const char *expr, int line)
{
    if (got != want) {
        fprintf(stderr, "%s:%d: %s: got \"%s\", expected \"%s\"\n", __FILE__, line, expr,
                got.c_str(), want.c_str());
        tu_failed_checks++;
    }
}
#define CHECK_STRING(a, b) check_string((a), (b), #a, __LINE__)

struct Expected {
    psched_op_kind kind;
    uint32_t microbatch;
};

void check_ops(const std::vector<psched_op> &ops, uint32_t stage,
               const std::vector<Expected> &want)
{
    CHECK_EQ_INT(ops.size(), want.size());
    for (size_t i = 0; i < ops.size() && i < want.size(); i++) {
        CHECK_EQ_INT(ops[i].stage, stage);
        CHECK_EQ_INT(ops[i].kind, want[i].kind);
        CHECK_EQ_INT(ops[i].microbatch, want[i].microbatch);
        CHECK_EQ_INT(ops[i].chunk, 0);
        CHECK_EQ_INT(ops[i].flags, 0);
    }
}

/* 1F1B with t_F = 1 and t_BW = t_B + t_W = 2: the pipeline fills and drains
 * once, (m + p - 1) · 3 = 33. Device d holds the forwards in flight below it,
 * min(m, p - d) activations at most. */
void test_1f1b_span_is_33_and_device_d_peaks_at_p_minus_d()
{
    pipesched::Plan plan(4, 8);
    pipesched::Schedule s = pipesched::generate(plan, "1f1b");
    CHECK_STRING(s.name(), "1f1b");
    CHECK_EQ_INT(s.devices(), 4);
    CHECK_EQ_INT(s.total_ops(), 64);
    s.validate();
    pipesched::Report r = s.simulate();
    CHECK_EQ_DBL(r.span(), 33);
    CHECK_EQ_DBL(r.makespan(), 33);
    CHECK_EQ_INT(r.devices(), 4);
    for (uint32_t d = 0; d < 4; d++) {
        CHECK_EQ_DBL(r.peak_memory(d), 4 - d);
        CHECK_EQ_DBL(r.busy(d), 8 * 3);
        CHECK_EQ_DBL(r.idle(d), 33 - 8 * 3);
    }
    /* the papers' M: peak 4 over Σ mem_F = 4 stages · 1 */
    CHECK_EQ_DBL(r.peak_memory_M(), 1);
    CHECK_EQ_DBL(r.bubble_ratio(), 1.0 - 4.0 * 24 / (4 * 33));
    /* The last device starts when three upstream forwards are done and never
     * waits again until its own chain ends: F at 3, BW at [4, 6), ... */
    std::vector<std::pair<double, double>> t = r.op_times(3);
    CHECK_EQ_INT(t.size(), 16);
    if (t.size() == 16) {
        CHECK_EQ_DBL(t[0].first, 3);
        CHECK_EQ_DBL(t[0].second, 4);
        CHECK_EQ_DBL(t[1].first, 4);
        CHECK_EQ_DBL(t[1].second, 6);
    }
    EXPECT_ERROR(PSCHED_EINVAL, r.op_times(4));
    EXPECT_ERROR(PSCHED_EINVAL, r.busy(4));
}

/* Device p-1 warms up with p-d-1 = 0 forwards: F0, BW0, F1, BW1, ... */
void test_1f1b_last_device_alternates_f_and_bw()
{
    pipesched::Schedule s = pipesched::generate(pipesched::Plan(4, 8), "1f1b");
    std::vector<Expected> want;
    for (uint32_t mb = 0; mb < 8; mb++) {
        want.push_back({PSCHED_OP_F, mb});
        want.push_back({PSCHED_OP_BW, mb});
    }
    std::vector<psched_op> ops = s.ops(3);
    check_ops(ops, 3, want);
    /* the range is iterable like any container */
    size_t forwards = 0;
    for (const psched_op &op : s.ops(0))
        forwards += op.kind == PSCHED_OP_F;
    CHECK_EQ_INT(forwards, 8);
    EXPECT_ERROR(PSCHED_EINVAL, s.ops(4));
}

/* reference/README.md, ZB-H1 p=4 m=8, S3:
 * F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7 */
void test_zb_h1_last_stage_matches_the_paper()
{
    pipesched::Schedule s = pipesched::Schedule::generate(pipesched::Plan(4, 8), "zb-h1");
    const psched_op_kind F = PSCHED_OP_F, B = PSCHED_OP_B, W = PSCHED_OP_W;
    check_ops(s.ops(3), 3,
              {{F, 0}, {B, 0}, {F, 1}, {B, 1}, {F, 2}, {B, 2}, {F, 3}, {B, 3},
               {W, 0}, {F, 4}, {B, 4}, {W, 1}, {F, 5}, {B, 5}, {W, 2}, {F, 6},
               {B, 6}, {W, 3}, {F, 7}, {B, 7}, {W, 4}, {W, 5}, {W, 6}, {W, 7}});
}

void test_bad_devices_throws_einval_naming_the_value()
{
    std::string msg = EXPECT_ERROR(PSCHED_EINVAL, pipesched::Plan(0, 8));
    CHECK_CONTAINS(msg.c_str(), "devices (0)");
    pipesched::Plan plan;
    msg = EXPECT_ERROR(PSCHED_EINVAL, plan.cost(-1, 1, 1));
    CHECK(!msg.empty());
}

void test_unknown_schedule_throws_enotfound()
{
    pipesched::Plan plan(4, 8);
    std::string msg = EXPECT_ERROR(PSCHED_ENOTFOUND, pipesched::generate(plan, "no-such"));
    CHECK_CONTAINS(msg.c_str(), "no-such");
}

void test_moved_from_objects_are_safe_to_destroy_and_refuse_use()
{
    pipesched::Plan a(2, 4);
    pipesched::Plan b(std::move(a));
    CHECK(!a);
    CHECK(static_cast<bool>(b));
    CHECK_EQ_INT(b.devices(), 2);
    std::string msg = EXPECT_ERROR(PSCHED_EINVAL, a.devices());
    CHECK_CONTAINS(msg.c_str(), "moved-from");
    EXPECT_ERROR(PSCHED_EINVAL, pipesched::generate(a, "1f1b"));

    pipesched::Schedule s1 = pipesched::generate(b, "gpipe");
    pipesched::Schedule s2 = std::move(s1);
    CHECK(!s1);
    EXPECT_ERROR(PSCHED_EINVAL, s1.hash());
    pipesched::Report r1 = s2.simulate();
    pipesched::Report r2(std::move(r1));
    CHECK(!r1);
    EXPECT_ERROR(PSCHED_EINVAL, r1.span());
    CHECK(r2.span() > 0);

    /* move-assignment releases the target's old handle */
    pipesched::Plan c(3, 3);
    c = std::move(b);
    CHECK_EQ_INT(c.devices(), 2);
    s2 = pipesched::generate(c, "1f1b");
    CHECK_STRING(s2.name(), "1f1b");
}

void test_plan_setters_chain_and_read_back()
{
    pipesched::Plan plan = pipesched::Plan(2, 4, 2)
                               .cost(3, 2, 1)
                               .stage_cost(1, 5, 4, 3)
                               .mem(2, 0, -2)
                               .comm(0.5)
                               .memory_limit(8)
                               .option("group-size", 2);
    CHECK_EQ_INT(plan.devices(), 2);
    CHECK_EQ_INT(plan.microbatches(), 4);
    CHECK_EQ_INT(plan.chunks(), 2);
    CHECK_EQ_INT(plan.stages(), 4);
    CHECK_EQ_DBL(plan.comm(), 0.5);
    CHECK_EQ_DBL(plan.memory_limit(), 8);
    pipesched::KindValues c0 = plan.stage_cost(0), c1 = plan.stage_cost(1);
    CHECK_EQ_DBL(c0.f, 3);
    CHECK_EQ_DBL(c0.b, 2);
    CHECK_EQ_DBL(c0.w, 1);
    CHECK_EQ_DBL(c1.f, 5);
    CHECK_EQ_DBL(c1.w, 3);
    CHECK_EQ_DBL(plan.stage_mem(3).w, -2);
    CHECK(plan.option("group-size") == 2);
    CHECK(!plan.option("absent").has_value());
    EXPECT_ERROR(PSCHED_EINVAL, plan.stage_cost(4));
    EXPECT_ERROR(PSCHED_EINVAL, plan.option("Bad Key", 1));

    plan.placement(PSCHED_PLACEMENT_CUSTOM).stage_device(0, 1).stage_device(1, 0);
    CHECK_EQ_INT(plan.placement(), PSCHED_PLACEMENT_CUSTOM);
    CHECK_EQ_INT(plan.stage_device(0), 1);
    CHECK_EQ_INT(plan.device_stage(0, 0), 1);

    pipesched::Plan copy = plan.clone();
    copy.devices(4);
    CHECK_EQ_INT(copy.devices(), 4);
    CHECK_EQ_INT(plan.devices(), 2);
    pipesched::Plan dual;
    dual.devices(2).microbatches(4).chains(2);
    CHECK_EQ_INT(dual.chains(), 2);
}

/* A compute_only CSV export read back is the same schedule: same hash. */
void test_csv_round_trip_keeps_the_hash()
{
    pipesched::Schedule s = pipesched::generate(pipesched::Plan(4, 8), "1f1b");
    std::string csv = s.to_csv();
    CHECK_EQ_INT(csv.compare(0, 11, "0F0,0F1,0F2"), 0);
    pipesched::Schedule back = pipesched::from_csv(csv);
    CHECK_STRING(back.name(), "csv");
    CHECK(back.hash() == s.hash());
    pipesched::Plan shape = s.plan();
    CHECK_EQ_INT(shape.chunks(), 1);
    CHECK_EQ_INT(shape.placement(), PSCHED_PLACEMENT_LOOP);
    pipesched::Schedule checked = pipesched::from_csv(csv, &shape);
    CHECK(checked.hash() == s.hash());
    std::string msg = EXPECT_ERROR(PSCHED_EPARSE, pipesched::from_csv("0F0,0X0\n"));
    CHECK_CONTAINS(msg.c_str(), "line 1");
}

/* Device 1 lists its full backward 1B0 (PyTorch "B") before the forward
 * 1F0 it needs, so in list order it can never run. */
void test_invalid_csv_schedule_fails_validation()
{
    pipesched::Schedule s = pipesched::from_csv("0F0,0B0\n1B0,1F0\n");
    psched_status st = PSCHED_OK;
    try {
        s.validate();
    } catch (const pipesched::Error &e) {
        st = e.status();
    }
    CHECK(st == PSCHED_EINVALID || st == PSCHED_EDEADLOCK);
}

void test_exports_and_generator_list()
{
    pipesched::Schedule s = pipesched::generate(pipesched::Plan(2, 4), "gpipe");
    pipesched::Report r = s.simulate();
    std::string json = s.to_json(&r);
    CHECK(json.find("\"format_version\"") != std::string::npos);
    CHECK(!s.to_ascii(&r).empty());
    CHECK(!s.to_ascii().empty());

    /* 1F1B p = 2, m = 2 lowered by hand: device 0 posts SEND_F1 with RECV_B0
     * as one batched group; PyTorch's dialect lists the two, pipesched's
     * marks the group. */
    pipesched::Schedule low = pipesched::generate(pipesched::Plan(2, 2), "1f1b").lower();
    CHECK_STRING(low.to_csv_comms_pytorch(),
                 "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
                 "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n");
    CHECK(low.to_csv_comms().find("[0SEND_F1;0RECV_B0]BATCH") != std::string::npos);
    CHECK_EQ_INT(low.lower_mode(), PSCHED_LOWER_RENDEZVOUS);
    /* async mode (docs/runtime.md), unit costs, comm 0: 1RECV_F1 goes after
     * 1F0, which ends when 0F1 does (2), so it overlaps 1B0 */
    pipesched::Schedule async_low =
        pipesched::generate(pipesched::Plan(2, 2), "1f1b").lower(PSCHED_LOWER_ASYNC);
    CHECK_STRING(async_low.to_csv_comms_pytorch(),
                 "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
                 "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n");
    CHECK_EQ_INT(async_low.lower_mode(), PSCHED_LOWER_ASYNC);
    async_low.validate();

    std::vector<pipesched::GeneratorInfo> gens = pipesched::generators();
    bool found = false;
    for (const pipesched::GeneratorInfo &g : gens)
        CHECK(g.exact == (g.name == "optimal")); /* the one exact generator */
    for (const pipesched::GeneratorInfo &g : gens)
        if (g.name == "1f1b") {
            found = true;
            CHECK_EQ_INT(g.placement, PSCHED_PLACEMENT_LOOP);
            CHECK_EQ_INT(g.default_chunks, 1);
            CHECK(!g.description.empty());
            CHECK(g.aliases.size() == 1 && g.aliases[0] == "1F1B");
            CHECK(g.options.size() == 1 && g.options[0].name == "vocab" &&
                  g.options[0].min == 0 && g.options[0].max == 2);
        } else if (g.name == "interleaved") {
            CHECK(g.options.size() == 1 && g.options[0].name == "group-size" &&
                  g.options[0].default_from_plan);
        }
    CHECK(found);
    /* Names come from the library's one table; aliases reach the registry. */
    CHECK_STRING(pipesched::op_kind_name(PSCHED_OP_BW), "BW");
    CHECK_STRING(pipesched::op_kind_name(PSCHED_OP_BW, PSCHED_NAMING_PYTORCH), "B");
    CHECK_STRING(pipesched::placement_name(PSCHED_PLACEMENT_VSHAPE), "vshape");
    CHECK_STRING(pipesched::generate(pipesched::Plan(4, 8), "LoopedBFS").name(), "looped-bfs");
    CHECK_STRING(pipesched::version(), psched_version());
}

/* docs/simulator.md's worked example: p = 4, m = 8, unit costs: work 24,
 * critical path 9, device path 27; a limit of 2 units makes the memory
 * term 8 * 7 / 2 = 28. */
void test_bound_of_1f1b_p4_m8_is_the_worked_example()
{
    pipesched::Schedule s = pipesched::generate(pipesched::Plan(4, 8), "1f1b");
    psched_bound_info b = s.bound();
    CHECK_EQ_DBL(b.makespan, 27);
    CHECK_EQ_DBL(b.span, 24);
    CHECK_EQ_DBL(b.work, 24);
    CHECK_EQ_DBL(b.critical_path, 9);
    CHECK_EQ_DBL(b.device_path, 27);
    CHECK_EQ_DBL(b.memory, 0);
    pipesched::Plan limited = s.plan();
    limited.memory_limit(2);
    CHECK_EQ_DBL(pipesched::bound(limited).makespan, 28);
    CHECK_EQ_DBL(pipesched::bound(limited, PSCHED_BOUND_IGNORE_MEMORY).makespan, 27);
    /* v left to a generator: the plan cannot be bounded */
    EXPECT_ERROR(PSCHED_EINVAL, pipesched::bound(pipesched::Plan(4, 8)));
    /* A schedule's bound counts the vocabulary passes it holds
     * (psched_schedule_bound()): p = 2, m = 2, Vocab-1, S = 0.5, T = 0.25:
     * work 6 + 2 x 0.75 = 7.5; device 1 starts at 1 and its tail (B0 + W0
     * = 2) is covered by its W's: 8.5. Its plan alone: 7. */
    pipesched::Plan vocab(2, 2);
    vocab.option("vocab", 1);
    pipesched::set_vocab_cost(vocab, 0.5, 0.25);
    pipesched::Schedule v = pipesched::generate(vocab, "1f1b");
    CHECK_EQ_DBL(v.bound().work, 7.5);
    CHECK_EQ_DBL(v.bound().makespan, 8.5);
    CHECK_EQ_DBL(pipesched::bound(v.plan()).makespan, 7);
    CHECK_EQ_DBL(pipesched::bound(v.plan(), PSCHED_BOUND_VOCAB_PASSES).makespan, 8.5);
}

/* The exact generator proves its order at p = 4, m = 8 (span 24, the span
 * bound above: ZB-H2 meets it); heuristics and lowered schedules record
 * nothing. */
void test_solve_status_of_the_exact_generator()
{
    pipesched::Schedule s = pipesched::generate(pipesched::Plan(4, 8), "optimal");
    auto proved = s.solve_status();
    CHECK(proved.has_value());
    CHECK_EQ_INT(proved->first, PSCHED_SOLVE_OPTIMAL);
    CHECK_EQ_DBL(proved->second, 0);
    CHECK_EQ_DBL(s.simulate().span(), 24);
    CHECK(!pipesched::generate(pipesched::Plan(4, 8), "1f1b").solve_status().has_value());
    CHECK(!s.lower().solve_status().has_value());
}

/* ---- the optimizer and the builder ---- */

/* Four identical layers (F = B = W = 1 each) over two devices under 1F1B:
 * the only split with no slow stage is [2, 2], so every stage costs
 * (2, 2, 2) and the 1F1B span (m + p - 1)(F + B + W) is 5 · 6 = 30 at m = 4. */
void test_partition_splits_four_layers_two_and_two()
{
    pipesched::Model model;
    model.add_layers("layer", 4, 1, 1, 1, 10, 100);
    CHECK_EQ_INT(model.layers(), 4);
    CHECK_EQ_INT(model.groups(), 1);
    pipesched::Plan plan(2, 4);
    plan.memory_limit(1e9);
    pipesched::Partition part = pipesched::partition(model, plan, "1f1b");
    CHECK(part.status() != PSCHED_SOLVE_INFEASIBLE);
    CHECK_EQ_INT(part.stages(), 2);
    for (uint32_t s = 0; s < 2; s++) {
        pipesched::PartitionStage st = part.stage(s);
        CHECK_EQ_INT(st.first, 2 * s);
        CHECK_EQ_INT(st.count, 2);
    }
    CHECK_EQ_DBL(part.makespan(), 30);
    CHECK_EQ_DBL(part.device(0).params, 200);
    pipesched::KindValues c = part.plan().stage_cost(1);
    CHECK_EQ_DBL(c.f, 2);
    CHECK_EQ_DBL(c.w, 2);
    CHECK_EQ_INT(part.layer_recompute(0), PSCHED_RECOMPUTE_NONE);
}

/* A layer group reads back with its recompute variants; a missing variant
 * is nullopt, and a bad group throws EINVAL. */
void test_model_groups_read_back_with_their_variants()
{
    pipesched::Model model = pipesched::Model::from_csv(
        "type,count,f,b,w,act,param,act_selective,extra_selective\n"
        "layer,3,1,2,3,40,7,10,0.5\n");
    CHECK_EQ_INT(model.layers(), 3);
    pipesched::LayerGroup g = model.group(0);
    CHECK_STRING(g.type, "layer");
    CHECK_EQ_INT(g.count, 3);
    CHECK_EQ_DBL(g.b, 2);
    CHECK_EQ_DBL(g.act_bytes, 40);
    CHECK(g.selective.has_value());
    CHECK_EQ_DBL(g.selective->act_bytes, 10);
    CHECK_EQ_DBL(g.selective->extra_time, 0.5);
    CHECK(!g.full.has_value());
    EXPECT_ERROR(PSCHED_EINVAL, model.group(1));
    pipesched::Model empty;
    EXPECT_ERROR(PSCHED_EINVAL, pipesched::partition(empty, pipesched::Plan(2, 4), "1f1b"));
}

/* GPipe and 1F1B take the same time at p = 2, m = 4 with two equal stages
 * ((m + p - 1)(F + B + W) = 30), so the search ranks both as fitting with
 * makespan 30, ties in the order the names were given. */
void test_plan_search_ranks_fitting_alternatives()
{
    pipesched::Model model;
    model.add_layers("layer", 4, 1, 1, 1, 10, 100);
    pipesched::Plan plan(2, 4);
    plan.memory_limit(1e9);
    pipesched::SearchResult r = pipesched::plan_search(model, plan, {"1f1b", "gpipe"});
    CHECK_EQ_INT(r.size(), 2);
    pipesched::SearchAlternative a = r.at(0), b = r.at(1);
    CHECK_STRING(a.schedule, "1f1b");
    CHECK_STRING(b.schedule, "gpipe");
    CHECK(a.fits && b.fits);
    CHECK_EQ_DBL(a.makespan, 30);
    CHECK_EQ_DBL(b.makespan, 30);
    CHECK_EQ_INT(a.error, PSCHED_OK);
    std::optional<pipesched::PartitionView> p0 = r.partition(0);
    CHECK(p0.has_value());
    CHECK_EQ_INT(p0->stage(1).count, 2);
    EXPECT_ERROR(PSCHED_EINVAL, r.at(2));
    EXPECT_ERROR(PSCHED_ENOTFOUND, pipesched::plan_search(model, plan, {"no-such"}));
}

/* Framework layouts. Profile: embedding (free, act 1, param 100), four
 * layers (F = B = W = 1, act 4, param 10; full recompute: act 0.5, +1 on
 * B), head (free, act 2, param 5). The stages E t t | t t L under 1F1B at
 * p = 2, m = 4 cost (2, 2, 2) each: span (m + p - 1)·6 = 30; device 0
 * holds 100 + 20 + 2 micro-batches of 1 + 4 + 4 = 138 bytes, device 1
 * 20 + 5 + 1·(4 + 4 + 2) = 35. */
pipesched::Model layout_model()
{
    pipesched::Model model;
    model.add_layers("embedding", 1, 0, 0, 0, 1, 100)
        .add_layers("layer", 4, 1, 1, 1, 4, 10)
        .recompute(1, PSCHED_RECOMPUTE_FULL, 0.5, 1)
        .add_layers("head", 1, 0, 0, 0, 2, 5);
    return model;
}

void test_evaluate_and_emit_a_given_partition()
{
    pipesched::Model model = layout_model();
    pipesched::Plan plan(2, 4);
    plan.memory_limit(138);
    pipesched::Partition part = pipesched::evaluate_partition(model, plan, "1f1b", {3, 3});
    CHECK_EQ_INT(part.status(), PSCHED_SOLVE_FEASIBLE);
    CHECK_EQ_DBL(part.makespan(), 30);
    CHECK_EQ_DBL(part.device(0).memory, 138);
    CHECK_EQ_DBL(part.device(1).memory, 35);
    CHECK_STRING(part.to_megatron(model),
                 "# pipesched plan for Megatron-LM: schedule 1f1b, p = 2, v = 1, m = 4: "
                 "simulated step time 30, bubble 20.0%, largest device memory 138 (limit 138)\n"
                 "# micro-batches: --global-batch-size = 4 x --micro-batch-size x the "
                 "data-parallel size\n"
                 "--pipeline-model-parallel-size 2 \\\n"
                 "--pipeline-model-parallel-layout \"Ett|ttL\"\n");
    std::string titan = part.to_torchtitan(model, "E=embed;t=blocks.{i};L=norm,lm_head");
    CHECK_STRING(titan.substr(titan.find("[parallelism]")),
                 "[parallelism]\n"
                 "pipeline_parallel_degree = 2\n"
                 "pipeline_parallel_schedule = \"1F1B\"\n"
                 "num_pp_microbatches = 4\n"
                 "pipeline_parallel_module_fqns_per_model_part = [\n"
                 "    [\"embed\", \"blocks.0\", \"blocks.1\"],\n"
                 "    [\"blocks.2\", \"blocks.3\", \"norm\", \"lm_head\"]\n"
                 "]\n"
                 "\n"
                 "[activation_checkpoint]\n"
                 "mode = \"none\"\n");
    /* the default template is torchtitan's Llama */
    std::string llama = part.to_torchtitan(model);
    CHECK(llama.find("[\"tok_embeddings\", \"layers.0\", \"layers.1\"]") != std::string::npos);
    /* a limit of 137: the same partition no longer fits */
    plan.memory_limit(137);
    CHECK_EQ_INT(pipesched::evaluate_partition(model, plan, "1f1b", {3, 3}).status(),
                 PSCHED_SOLVE_INFEASIBLE);
    std::string what = EXPECT_ERROR(
        PSCHED_EINVAL, pipesched::evaluate_partition(model, plan, "1f1b", {3, 2}));
    CHECK(what.find("the stages hold 5 layers in all; the model has 6") != std::string::npos);
    EXPECT_ERROR(PSCHED_EINVAL, pipesched::evaluate_partition(model, plan, "1f1b", {3, 3},
                                                              {PSCHED_RECOMPUTE_NONE}));
    what = EXPECT_ERROR(PSCHED_EINVAL, part.to_torchtitan(model, "E=embed;t=blocks.{i}"));
    CHECK(what.find("no entry for 'L' layers") != std::string::npos);
}

/* Megatron-LM's block recomputation read from a layout: on E t t | t t L,
 * block 1 recomputes the first transformer layer of each stage: stages cost F 2, B 2 + 1, W 2 = 7 each, span
 * 5·7 = 35; device 0 keeps 120 + 2·(1 + 0.5 + 4) = 131. Emitting gives the
 * same flags back. */
void test_from_layout_reads_megatron_recompute_and_writes_it_back()
{
    pipesched::Model model = layout_model();
    pipesched::Plan plan(2, 4);
    pipesched::MegatronRecompute block{"full", "block", 1};
    pipesched::Partition part = pipesched::from_layout(model, plan, "1f1b", "E,t*2|(tt)*1,L",
                                                       block);
    CHECK_EQ_INT(part.stages(), 2);
    CHECK_EQ_INT(part.stage(0).count, 3);
    CHECK_EQ_INT(part.stage(1).count, 3);
    CHECK_EQ_DBL(part.makespan(), 35);
    CHECK_EQ_DBL(part.device(0).memory, 131);
    CHECK_EQ_INT(part.layer_recompute(1), PSCHED_RECOMPUTE_FULL);
    CHECK_EQ_INT(part.layer_recompute(2), PSCHED_RECOMPUTE_NONE);
    CHECK_EQ_INT(part.layer_recompute(3), PSCHED_RECOMPUTE_FULL);
    std::string flags = part.to_megatron(model);
    CHECK(flags.find("--pipeline-model-parallel-layout \"Ett|ttL\" \\\n"
                     "--recompute-granularity full \\\n"
                     "--recompute-method block \\\n"
                     "--recompute-num-layers 1\n") != std::string::npos);
    /* v from the layout: four stages over p = 2 under interleaved 1F1B */
    pipesched::Partition v2 = pipesched::from_layout(model, plan, "interleaved", "Et|t|t|tL");
    CHECK_EQ_INT(v2.stages(), 4);
    CHECK_EQ_INT(psched_plan_chunks(v2.plan().get()), 2);
    std::string what =
        EXPECT_ERROR(PSCHED_EINVAL, pipesched::from_layout(model, plan, "1f1b", "Ett|(tt|L"));
    CHECK(what.find("layout: '(' at column 5 is never closed") != std::string::npos);
    what = EXPECT_ERROR(PSCHED_EINVAL, pipesched::from_layout(model, plan, "1f1b", "Ett|tmtL"));
    CHECK(what.find("element 'm' at column 6") != std::string::npos);
    what = EXPECT_ERROR(PSCHED_EINVAL,
                        pipesched::from_layout(model, plan, "1f1b", "Ett|ttL", {"full", "", 0}));
    CHECK(what.find("needs a method") != std::string::npos);
    EXPECT_ERROR(PSCHED_EINVAL,
                 pipesched::from_layout(model, plan, "1f1b", "Ett|ttL", {}, "m=nothing"));
}

/* A generator written in C++ through pipesched::Builder: GPipe on two
 * devices and two micro-batches, hand-written. */
psched_status cpp_gpipe(const psched_plan *plan, psched_builder *raw)
{
    try {
        pipesched::Builder b(raw);
        uint32_t m = psched_plan_microbatches(plan);
        for (uint32_t d = 0; d < 2; d++) {
            b.reserve(d, 2 * m);
            for (uint32_t k = 0; k < m; k++)
                b.append(d, PSCHED_OP_F, d, k);
            for (uint32_t k = 0; k < m; k++)
                b.append(d, PSCHED_OP_BW, d, k);
        }
        CHECK_EQ_INT(b.count(1), 2 * m);
        CHECK(b.plan() == plan);
        return PSCHED_OK;
    } catch (const pipesched::Error &e) {
        return e.status();
    }
}

psched_status cpp_bad(const psched_plan *, psched_builder *raw)
{
    try {
        pipesched::Builder(raw).append(7, PSCHED_OP_F, 0, 0);
        return PSCHED_OK;
    } catch (const pipesched::Error &e) {
        return e.status();
    }
}

void test_builder_writes_a_generator_in_cpp()
{
    static const psched_generator gen = {PSCHED_GENERATOR_ABI, "cpp-gpipe", "GPipe via C++",
                                         "p = 2", PSCHED_PLACEMENT_LOOP, 1, 1, nullptr,
                                         cpp_gpipe, nullptr, nullptr, 0};
    static const psched_generator bad = {PSCHED_GENERATOR_ABI, "cpp-bad", "appends to device 7",
                                         "none", PSCHED_PLACEMENT_LOOP, 1, 1, nullptr, cpp_bad,
                                         nullptr, nullptr, 0};
    CHECK_EQ_INT(psched_register_generator(&gen), PSCHED_OK);
    CHECK_EQ_INT(psched_register_generator(&bad), PSCHED_OK);
    pipesched::Schedule s = pipesched::generate(pipesched::Plan(2, 2), "cpp-gpipe");
    s.validate();
    check_ops(s.ops(1), 1,
              {{PSCHED_OP_F, 0}, {PSCHED_OP_F, 1}, {PSCHED_OP_BW, 0}, {PSCHED_OP_BW, 1}});
    /* GPipe p = 2, m = 2, unit costs: (m + p - 1)(F + B + W) = 9. */
    CHECK_EQ_DBL(s.simulate().span(), 9);
    EXPECT_ERROR(PSCHED_EINVAL, pipesched::generate(pipesched::Plan(2, 2), "cpp-bad"));
}

} // namespace

int main()
{
    RUN(test_1f1b_span_is_33_and_device_d_peaks_at_p_minus_d);
    RUN(test_1f1b_last_device_alternates_f_and_bw);
    RUN(test_zb_h1_last_stage_matches_the_paper);
    RUN(test_bad_devices_throws_einval_naming_the_value);
    RUN(test_unknown_schedule_throws_enotfound);
    RUN(test_moved_from_objects_are_safe_to_destroy_and_refuse_use);
    RUN(test_plan_setters_chain_and_read_back);
    RUN(test_csv_round_trip_keeps_the_hash);
    RUN(test_invalid_csv_schedule_fails_validation);
    RUN(test_exports_and_generator_list);
    RUN(test_partition_splits_four_layers_two_and_two);
    RUN(test_model_groups_read_back_with_their_variants);
    RUN(test_plan_search_ranks_fitting_alternatives);
    RUN(test_evaluate_and_emit_a_given_partition);
    RUN(test_from_layout_reads_megatron_recompute_and_writes_it_back);
    RUN(test_builder_writes_a_generator_in_cpp);
    RUN(test_bound_of_1f1b_p4_m8_is_the_worked_example);
    RUN(test_solve_status_of_the_exact_generator);
    TEST_MAIN_END();
}
