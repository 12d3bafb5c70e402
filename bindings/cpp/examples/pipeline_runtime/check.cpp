/*
 * The execution check and the negative check's breakages.
 *
 * SPDX-License-Identifier: MIT
 */
#include "check.hpp"

#include "runtime.hpp"
#include "stages.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

namespace rt {

namespace {

using OpLists = std::vector<std::vector<psched_op>>;

/* ---- turning edited op lists back into a schedule the validator reads ----
 * A generator only receives the plan and a builder, so the lists to replay
 * are handed over through this variable; the check runs on one thread. */
const OpLists *g_replay = nullptr;

psched_status replay_generate(const psched_plan *, psched_builder *builder)
{
    psched_status st = PSCHED_OK;
    for (std::uint32_t d = 0; d < g_replay->size() && !st; d++)
        for (const psched_op &op : (*g_replay)[d])
            st = psched_builder_append(builder, d, static_cast<psched_op_kind>(op.kind), op.stage,
                                       op.microbatch, op.flags);
    return st;
}

/* Registered through the public plug-in interface, one per chain count
 * because a generator fixes the chains; custom placement keeps the plan's. */
pipesched::Schedule replay(const pipesched::Plan &plan, const OpLists &lists)
{
    static const psched_generator one = {PSCHED_GENERATOR_ABI, "runtime-replay",
        "replays op lists edited by pipeline_runtime", "any plan", PSCHED_PLACEMENT_CUSTOM, 0, 1,
        nullptr, replay_generate, nullptr, nullptr, 0};
    static const psched_generator two = {PSCHED_GENERATOR_ABI, "runtime-replay-dual",
        "replays op lists edited by pipeline_runtime (two chains)", "any plan",
        PSCHED_PLACEMENT_CUSTOM, 0, 2, nullptr, replay_generate, nullptr, nullptr, 0};
    static const psched_status registered = [] {
        psched_status st = psched_register_generator(&one);
        return st ? st : psched_register_generator(&two);
    }();
    if (registered)
        throw pipesched::Error(registered, "registering the replay generators failed");
    g_replay = &lists;
    pipesched::Schedule s = pipesched::generate(plan, plan.chains() == 2 ? two.name : one.name);
    g_replay = nullptr;
    return s;
}

/* ---- breakages: each returns what it changed, or "" when it found no
 * place to apply ---- */

std::size_t find_op(const std::vector<psched_op> &ops, std::uint8_t kind, std::uint32_t stage,
                    std::uint32_t mb)
{
    for (std::size_t i = 0; i < ops.size(); i++)
        if (ops[i].kind == kind && ops[i].stage == stage && ops[i].microbatch == mb)
            return i;
    return ops.size();
}

/* Move the first W of the schedule right before its B. */
std::string break_w_before_b(OpLists &lists)
{
    for (std::size_t d = 0; d < lists.size(); d++) {
        std::vector<psched_op> &ops = lists[d];
        for (std::size_t j = 0; j < ops.size(); j++) {
            if (ops[j].kind != PSCHED_OP_W)
                continue;
            std::size_t i = find_op(ops, PSCHED_OP_B, ops[j].stage, ops[j].microbatch);
            if (i >= j)
                continue;
            psched_op w = ops[j];
            std::string what = "moved " + op_text(w) + " on device " + std::to_string(d) +
                               " from op " + std::to_string(j) + " to op " + std::to_string(i) +
                               ", before its " + op_text(ops[i]);
            ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(j));
            ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(i), w);
            return what;
        }
    }
    return "";
}

/* Every comm op becomes a lone blocking call: the sends a group posted
 * together with its receives now block first. */
std::string break_unbatch(OpLists &lists)
{
    std::size_t cleared = 0;
    for (std::vector<psched_op> &ops : lists)
        for (psched_op &op : ops)
            if (op.flags & PSCHED_OP_BATCH_NEXT) {
                op.flags &= static_cast<std::uint8_t>(~PSCHED_OP_BATCH_NEXT);
                cleared++;
            }
    return cleared ? "cleared BATCH_NEXT on " + std::to_string(cleared) +
                         " ops: every SEND is posted alone, before the RECV it was batched with"
                   : "";
}

/* The device at the other end of a comm op. */
std::uint32_t peer(const Topology &t, const psched_op &op)
{
    bool next = op.kind == PSCHED_OP_SEND_F || op.kind == PSCHED_OP_RECV_B;
    return t.device_of[next ? op.stage + 1 : op.stage - 1];
}

/* Position of the compute op producing a SEND's tensor (F for SEND_F, B or
 * BW for SEND_B). */
std::size_t producer(const std::vector<psched_op> &ops, const psched_op &send)
{
    if (send.kind == PSCHED_OP_SEND_F)
        return find_op(ops, PSCHED_OP_F, send.stage, send.microbatch);
    std::size_t b = find_op(ops, PSCHED_OP_B, send.stage, send.microbatch);
    return b < ops.size() ? b : find_op(ops, PSCHED_OP_BW, send.stage, send.microbatch);
}

/* Swap two SENDs to the same peer whose tensors both exist at the first
 * one's place, with no other traffic to that peer between them: the sender
 * still runs, but the receiver takes the tensors in the other order. Flags
 * stay in place, so groups keep their shape. */
std::string break_send_order(OpLists &lists, const Topology &t)
{
    for (std::size_t d = 0; d < lists.size(); d++) {
        std::vector<psched_op> &ops = lists[d];
        for (std::size_t i = 0; i < ops.size(); i++) {
            if (!is_send(ops[i].kind))
                continue;
            for (std::size_t j = i + 1; j < ops.size(); j++) {
                if (!is_comm(ops[j].kind) || peer(t, ops[j]) != peer(t, ops[i]))
                    continue;
                if (!is_send(ops[j].kind) || producer(ops, ops[j]) > i)
                    break;
                std::string what = "swapped " + op_text(ops[i]) + " and " + op_text(ops[j]) +
                                   " (device " + std::to_string(d) + " ops " + std::to_string(i) +
                                   " and " + std::to_string(j) + ", both to device " +
                                   std::to_string(peer(t, ops[i])) + ")";
                std::swap(ops[i].kind, ops[j].kind);
                std::swap(ops[i].stage, ops[j].stage);
                std::swap(ops[i].microbatch, ops[j].microbatch);
                std::swap(ops[i].chunk, ops[j].chunk);
                return what;
            }
        }
    }
    return "";
}

std::string apply_breakage(const std::string &name, OpLists &lists, const Topology &t)
{
    if (name == "w-before-b")
        return break_w_before_b(lists);
    if (name == "unbatch")
        return break_unbatch(lists);
    return break_send_order(lists, t);
}

/* ---- reports ---- */

/* A device's list with batched groups in braces and overlapped pairs in
 * parentheses. */
std::string show_list(const std::vector<psched_op> &ops)
{
    std::string s;
    bool in_group = false, in_pair = false;
    for (const psched_op &op : ops) {
        bool batch = op.flags & PSCHED_OP_BATCH_NEXT, pair = op.flags & PSCHED_OP_OVERLAP_NEXT;
        s += (in_group || in_pair) ? ";" : (s.empty() ? "" : " ");
        if (batch && !in_group)
            s += "{";
        if (pair && !in_pair)
            s += "(";
        s += op_text(op);
        if (in_group && !batch)
            s += "}";
        if (in_pair && !pair)
            s += ")";
        in_group = batch;
        in_pair = pair;
    }
    return s;
}

template <typename T> std::string join(const std::vector<T> &v)
{
    /* appended piece by piece: `"" + std::to_string(x)` inserts at the
     * front, which GCC 12 at -O3 flags as an overlapping memcpy
     * (-Wrestrict, a false positive) */
    std::string s;
    for (T x : v) {
        if (!s.empty())
            s += ' ';
        s += std::to_string(x);
    }
    return s;
}

/* Σ over micro-batches, in order, of the gradients the W ops of each chain
 * wrote, against the reference; "" or why the gradients are missing.
 * Two chains (DualPipe, Chimera) are two replicas of one model, each device
 * holding one stage of each: a real run sums each stage's gradients over the
 * two replicas (an all-reduce) before the update. Chain c's loss is the mean
 * over its m/2 micro-batches, so half that sum must be the gradient of the
 * non-pipelined model over the whole batch of m: `replicas` is that
 * difference (summed in another order, so within the tolerance, not 0). */
std::string compare_gradients(const Topology &t, const StepResult &r,
                              const std::vector<Model> &models, double &diff, double &largest,
                              double &replicas)
{
    diff = largest = replicas = 0.0;
    std::vector<LayerGrad> summed;
    for (std::uint32_t c = 0; c < t.chains; c++) {
        std::vector<std::vector<LayerGrad>> per_mb(t.microbatches);
        for (std::uint32_t k = 0; k < t.microbatches; k++) {
            for (std::uint32_t s = c * t.per_chain(); s < (c + 1) * t.per_chain(); s++) {
                const std::vector<LayerGrad> &g = r.grads[s][k];
                if (g.size() != t.layers(s).count)
                    return "no W ran for stage " + std::to_string(s) + " micro-batch " +
                           std::to_string(k);
                per_mb[k].insert(per_mb[k].end(), g.begin(), g.end());
            }
        }
        std::vector<LayerGrad> chain = sum_in_order(per_mb);
        if (t.vocab) {
            /* the cross-entropy model: layers and the output layer's shards */
            VocabReference ref = reference_step_vocab(models[c], *t.vocab_layer, t.microbatches);
            double d = max_abs_diff(chain, ref.layers);
            if (r.vocab_w.size() != ref.w.size())
                return "no T pass ran for some shard";
            for (std::size_t i = 0; i < ref.w.size(); i++)
                d = std::max(d, std::fabs(r.vocab_w[i] - ref.w[i]));
            diff = d;
            largest = max_abs(ref.layers);
            for (double x : ref.w)
                largest = std::max(largest, std::fabs(x));
            return "";
        }
        std::vector<LayerGrad> reference = reference_step(models[c], c, t.microbatches);
        double d = max_abs_diff(chain, reference);
        diff = (d > diff || d != d) ? d : diff;
        largest = std::max(largest, max_abs(reference));
        summed = summed.empty() ? chain : sum_in_order({summed, chain});
    }
    if (t.chains == 2) {
        for (LayerGrad &g : summed) {
            for (double &x : g.w)
                x *= 0.5;
            for (double &x : g.b)
                x *= 0.5;
        }
        replicas = max_abs_diff(summed, reference_step(models[0], 0, 2 * t.microbatches));
    }
    return "";
}

struct Counts {
    std::size_t compute = 0, comm = 0, groups = 0, copies = 0;
};

Counts count(const OpLists &lists)
{
    Counts n;
    for (const std::vector<psched_op> &ops : lists) {
        for (std::size_t i = 0; i < ops.size(); i++) {
            (is_comm(ops[i].kind) ? n.comm : is_copy(ops[i].kind) ? n.copies : n.compute)++;
            bool batch = ops[i].flags & PSCHED_OP_BATCH_NEXT;
            if (batch && (i == 0 || !(ops[i - 1].flags & PSCHED_OP_BATCH_NEXT)))
                n.groups++;
        }
    }
    return n;
}

/* Judges a finished step: gradients against the reference, each device's
 * measured peak of activation bytes against the simulator's (empty when
 * the validator rejected it). */
bool judge(const Topology &t, const StepResult &r, const std::vector<Model> &models,
           const std::vector<std::uint64_t> &sim_peak, std::ostream &detail, double &diff)
{
    if (r.status != StepResult::Status::ok) {
        detail << "  runtime: " << r.message << "\n";
        return false;
    }
    double largest = 0.0, replicas = 0.0;
    std::string missing = compare_gradients(t, r, models, diff, largest, replicas);
    if (!missing.empty()) {
        detail << "  gradients: " << missing << "\n";
        return false;
    }
    bool match = diff <= kGradTolerance;
    detail << "  gradients: max |pipelined - reference| = " << diff << " over " << t.chains
           << (t.chains == 1 ? " chain" : " chains") << " (largest gradient " << largest << ")"
           << (match ? "" : ": MISMATCH") << "\n";
    if (t.chains == 2) {
        bool same = replicas <= kGradTolerance;
        detail << "  replicas: max |(chain 0 + chain 1)/2 - whole-batch reference| = " << replicas
               << (same ? "" : ": MISMATCH") << "\n";
        match = match && same;
    }
    bool leaked = *std::max_element(r.live_at_end.begin(), r.live_at_end.end()) > 0 ||
                  *std::max_element(r.host_at_end.begin(), r.host_at_end.end()) > 0;
    /* A forced run of a schedule the validator rejected has no simulated
     * peak: only the runtime's own checks judge it, so its exit status says
     * whether the runtime caught the damage. */
    bool mem_ok = (sim_peak.empty() || r.peak == sim_peak) && !leaked;
    detail << "  peak activation bytes per device: runtime " << join(r.peak) << ", simulator "
           << (sim_peak.empty() ? "n/a (invalid schedule)" : join(sim_peak))
           << (leaked ? " (bytes left: " + join(r.live_at_end) + ", in the host store: " +
                            join(r.host_at_end) + ")"
                      : "")
           << (mem_ok ? "" : ": MISMATCH") << "\n";
    detail << "  peak bytes in flight (to send or received) per device: "
           << join(r.in_flight_peak) << "\n";
    if (*std::max_element(r.host_peak.begin(), r.host_peak.end()) > 0)
        detail << "  peak bytes in the host store (offloaded activations) per device: "
               << join(r.host_peak) << "\n";
    return match && mem_ok;
}

/* The simulator's memory model in bytes per stage, from the tensors
 * model.cpp keeps: F saves each layer's input and output and the stage
 * output, 2L + 1 tensors of kRows x kWidth doubles for a stage of L layers;
 * B adds each layer's pre-activation gradient, L tensors; W frees all
 * 3L + 1 (BW = B + W). --mem replaces it with the same figures for every
 * stage. */
pipesched::Plan byte_model(const pipesched::Plan &plan, const Topology &t,
                           const CheckOptions &options)
{
    pipesched::Plan model = plan.clone();
    const double tensor = static_cast<double>(kRows * kWidth * sizeof(double));
    if (t.vocab) { /* an S pass keeps its shard's logits until its T pass */
        double logits = static_cast<double>(kRows * kVocabPerDevice * sizeof(double));
        pipesched::set_vocab_mem(model, logits, -logits);
    }
    for (std::uint32_t s = 0; s < t.stages; s++) {
        double layers = t.layers(s).count;
        if (options.mem_given)
            model.stage_mem(s, options.mem_f, options.mem_b, options.mem_w);
        else
            model.stage_mem(s, (2 * layers + 1) * tensor, layers * tensor,
                            -(3 * layers + 1) * tensor);
    }
    return model;
}

/* A schedule read from a csv-comms file is lowered already: it runs as
 * it is, groups included. */
OpLists ops_of(const pipesched::Schedule &s)
{
    OpLists lists;
    for (std::uint32_t d = 0; d < s.devices(); d++)
        lists.push_back(s.ops(d));
    return lists;
}

bool has_ops(const pipesched::Schedule &s, bool (*which)(std::uint8_t))
{
    for (std::uint32_t d = 0; d < s.devices(); d++)
        for (const psched_op &op : s.ops(d))
            if (which(op.kind))
                return true;
    return false;
}

/* The lists without the ops @p drop selects. */
OpLists without(const OpLists &lists, bool (*drop)(std::uint8_t))
{
    OpLists out(lists.size());
    for (std::size_t d = 0; d < lists.size(); d++)
        for (const psched_op &op : lists[d])
            if (!drop(op.kind))
                out[d].push_back(op);
    return out;
}

/* The schedule lowered; when lowering refuses it (an invalid input), the
 * input as it is, so the validator below names the rule it breaks and
 * --force can still run it. */
pipesched::Schedule lower_or_keep(const pipesched::Schedule &compute, const pipesched::Plan *costs)
{
    try {
        return compute.lower(costs);
    } catch (const pipesched::Error &e) {
        if (e.status() != PSCHED_EINVALID && e.status() != PSCHED_EDEADLOCK)
            throw;
        return replay(compute.plan(), ops_of(compute));
    }
}

} // namespace

bool known_breakage(const std::string &name)
{
    return name == "w-before-b" || name == "send-order" || name == "unbatch";
}

bool check_schedule(const pipesched::Schedule &compute, const pipesched::Plan *costs,
                    const std::string &label, const CheckOptions &options, std::ostream &out)
{
    std::ostringstream detail;
    /* Vocabulary Parallelism (issue 19): an output layer of 3 classes per
     * device, split by shards; the algorithm from the collectives per
     * micro-batch (three: Vocab-1, two: Vocab-2). */
    std::uint32_t vocab = 0;
    for (const std::vector<psched_op> &ops : ops_of(compute))
        for (const psched_op &op : ops)
            if (op.kind == PSCHED_OP_COLLECTIVE && vocab != 1)
                vocab = op.stage == 2 ? 1 : 2;
    /* Comm ops in the input (a csv-comms file): it runs as it is. Else the
     * library lowers it, keeping any OFFLOAD/RELOAD copies in place (right
     * behind the compute op each follows). */
    bool copies = has_ops(compute, is_copy);
    pipesched::Schedule lowered = has_ops(compute, is_comm)
                                      ? replay(compute.plan(), ops_of(compute))
                                      : lower_or_keep(compute, costs);
    pipesched::Plan plan = lowered.plan();
    Topology topo = Topology::of(plan.get());
    VocabLayer vocab_layer = VocabLayer::init(kVocabPerDevice * topo.devices, 77);
    topo.vocab = vocab;
    topo.vocab_layer = vocab ? &vocab_layer : nullptr;
    OpLists lists = ops_of(lowered);
    if (!options.breakage.empty()) {
        std::string what = apply_breakage(options.breakage, lists, topo);
        if (what.empty()) {
            out << "FAIL " << label << ": no place to apply --break " << options.breakage << "\n";
            return false;
        }
        detail << "  broken: " << what << "\n";
        lowered = replay(plan, lists);
    }
    Counts n = count(lists);
    detail << "  lowered: " << n.compute << " compute ops, " << n.comm << " comm ops, " << n.groups
           << " batched groups" << (copies ? ", " + std::to_string(n.copies) +
                                                 " activation copies (OFFLOAD/RELOAD)"
                                           : "") << "\n";
    if (options.show)
        for (std::uint32_t d = 0; d < topo.devices; d++)
            detail << "  device " << d << ": " << show_list(lists[d]) << "\n";

    std::vector<std::uint64_t> sim_peak;
    try {
        pipesched::Plan bytes = byte_model(plan, topo, options);
        std::optional<pipesched::Report> report;
        lowered.validate(); /* the rendezvous engine, copies included */
        if (!copies) {
            report.emplace(lowered.simulate(&bytes));
        } else {
            /* Memory as this runtime copies: in list order, each copy done
             * before the next op, so from the copy projection (comm ops
             * left out) with copies taking no time. */
            pipesched::Schedule with_copies = replay(plan, without(lists, is_comm));
            pipesched::set_pcie_bandwidth(bytes, INFINITY);
            report.emplace(with_copies.simulate(&bytes));
        }
        for (std::uint32_t d = 0; d < topo.devices; d++)
            sim_peak.push_back(static_cast<std::uint64_t>(report->peak_memory(d)));
        detail << "  validator: ok\n";
    } catch (const pipesched::Error &e) {
        detail << "  validator: " << e.status_name() << ": " << e.what() << "\n";
        if (!options.force) {
            out << "FAIL " << label << ": rejected by the validator\n" << detail.str();
            return false;
        }
        detail << "  --force: running it anyway\n";
    }

    std::vector<Model> models(topo.chains, Model::init(2024));
    StepResult r = options.runner(topo, lists, models, options.timeout_s);
    double diff = 0.0;
    bool ok = judge(topo, r, models, sim_peak, detail, diff);
    if (options.brief && ok)
        out << "ok   " << label << ": gradient diff " << diff << ", peak bytes " << join(r.peak)
            << " = simulator\n";
    else
        out << (ok ? "OK   " : "FAIL ") << label << "\n" << detail.str();
    return ok;
}

} // namespace rt
