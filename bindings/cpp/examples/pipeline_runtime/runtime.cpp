/*
 * The per-device loop. A device walks its op list once, in order:
 *   - a compute op (F, B, W, BW, or an overlapped pair) runs at once: its
 *     inputs are already on the device, because every RECV precedes the op
 *     that consumes it;
 *   - a comm op and the comm ops chained to it by BATCH_NEXT form one group:
 *     all of them are posted, then the device blocks until all complete.
 * Nothing else decides the order: the schedule is the program.
 *
 * SPDX-License-Identifier: MIT
 */
#include "runtime.hpp"

#include "channel.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace rt {

Topology Topology::of(const psched_plan *plan)
{
    Topology t;
    t.devices = psched_plan_devices(plan);
    t.stages = psched_plan_stages(plan);
    t.chains = psched_plan_chains(plan);
    t.microbatches = psched_plan_microbatches(plan) / t.chains;
    for (std::uint32_t s = 0; s < t.stages; s++)
        t.device_of.push_back(psched_plan_stage_device(plan, s));
    return t;
}

std::string op_text(const psched_op &op)
{
    static const char *const kind[] = {"F", "I", "W", "B", "SEND_F", "RECV_F", "SEND_B", "RECV_B"};
    return std::to_string(op.stage) + (op.kind <= PSCHED_OP_RECV_B ? kind[op.kind] : "?") +
           std::to_string(op.microbatch);
}

namespace {

/* Everything the device threads share. */
struct Shared {
    const Topology &topo;
    const std::vector<Model> &models;
    StageGrads &grads;
    Waiters waiters;
    std::vector<std::unique_ptr<Channel>> channels; /* [from · p + to] */
    std::atomic<bool> abort{false};
    std::atomic<std::uint64_t> progress{0}; /* units completed, for the watchdog */
    std::mutex mutex;                       /* guards failure and finished */
    std::condition_variable finished_cv;
    std::string failure;
    std::uint32_t finished = 0;

    Shared(const Topology &t, const std::vector<Model> &m, StageGrads &g)
        : topo(t), models(m), grads(g), waiters(t.devices)
    {
        for (std::uint32_t a = 0; a < t.devices; a++)
            for (std::uint32_t b = 0; b < t.devices; b++)
                channels.push_back(std::make_unique<Channel>(a, b, kChannelCapacity));
    }

    /* Larger than any batched group a lowering emits between two devices. */
    static constexpr std::size_t kChannelCapacity = 16;

    /* The first failure wins; every blocked device wakes up and stops. */
    void fail(const std::string &message)
    {
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (failure.empty())
                failure = message;
        }
        abort.store(true);
        for (std::uint32_t d = 0; d < topo.devices; d++)
            waiters.wake(d);
        finished_cv.notify_all();
    }
};

/* Thrown in a device stopped because another one failed. */
struct Aborted {};

[[noreturn]] void broken(const std::string &why) { throw std::runtime_error(why); }

bool is_comm(std::uint8_t kind) { return kind >= PSCHED_OP_SEND_F; }

/* One (stage, micro-batch) on a device: the tensors in flight for it. */
struct Slot {
    std::unique_ptr<Activations> act; /* F allocates, W / BW frees: the memory counted */
    bool b_done = false;
    std::optional<Tensor> fwd_in, bwd_in;   /* delivered by RECV_F / RECV_B */
    std::optional<Tensor> fwd_out, bwd_out; /* F's output / B's input gradient, to send or
                                               to hand to a neighbour stage on this device */
};

Tensor take(std::optional<Tensor> &from, const char *what)
{
    if (!from)
        broken(what);
    Tensor t = std::move(*from);
    from.reset();
    return t;
}

class Device {
public:
    enum State { running, waiting, done, failed };

    Device(std::uint32_t id, const std::vector<psched_op> &ops, Shared &shared)
        : id_(id), ops_(ops), sh_(shared), slots_(shared.topo.stages * shared.topo.microbatches),
          requests_(new Request[ops.size() + 1])
    {
    }

    void run() noexcept;

    /* Read by the watchdog while the thread runs. */
    std::atomic<int> state{running};
    std::atomic<std::size_t> unit_first{0}, unit_end{0};
    const std::vector<psched_op> &ops() const { return ops_; }
    const Request &request(std::size_t i) const { return requests_[i]; }
    /* Read after the thread has finished. */
    std::uint32_t live = 0, peak = 0;

private:
    std::size_t end_of_unit(std::size_t i) const;
    void compute(const psched_op &op);
    void backward_input_of(const psched_op &op, Slot &s);
    void backward_weight_of(const psched_op &op, Slot &s);
    void communicate(std::size_t first, std::size_t end);
    std::uint32_t peer_of(const psched_op &op) const;
    Slot &slot(std::uint32_t stage, std::uint32_t mb)
    {
        return slots_[static_cast<std::size_t>(stage) * sh_.topo.microbatches + mb];
    }

    std::uint32_t id_;
    const std::vector<psched_op> &ops_;
    Shared &sh_;
    std::vector<Slot> slots_;
    std::unique_ptr<Request[]> requests_; /* requests_[i]: the posted op i */
    std::size_t current_ = 0;            /* op being executed, for messages */
};

/* ---- the main loop ---- */

void Device::run() noexcept
{
    try {
        for (std::size_t i = 0; i < ops_.size();) {
            if (sh_.abort.load())
                throw Aborted{};
            std::size_t end = end_of_unit(i);
            unit_first.store(i);
            unit_end.store(end);
            if (is_comm(ops_[i].kind)) {
                communicate(i, end);
            } else {
                for (current_ = i; current_ < end; current_++)
                    compute(ops_[current_]);
            }
            sh_.progress.fetch_add(1);
            i = end;
        }
        state.store(done);
    } catch (const Aborted &) {
        state.store(failed);
    } catch (const std::exception &e) {
        state.store(failed);
        sh_.fail("device " + std::to_string(id_) + " op " + std::to_string(current_) + " (" +
                 op_text(ops_[current_]) + "): " + e.what());
    }
    std::lock_guard<std::mutex> lock(sh_.mutex);
    sh_.finished++;
    sh_.finished_cv.notify_all();
}

/* A unit: one compute op, an overlapped pair, or a batched comm group. */
std::size_t Device::end_of_unit(std::size_t i) const
{
    std::uint32_t link = is_comm(ops_[i].kind) ? PSCHED_OP_BATCH_NEXT : PSCHED_OP_OVERLAP_NEXT;
    std::size_t end = i + 1;
    while (end < ops_.size() && (ops_[end - 1].flags & link))
        end++;
    return end;
}

/* ---- compute ops ---- */

void Device::compute(const psched_op &op)
{
    const Topology &t = sh_.topo;
    if (op.stage >= t.stages || t.device_of[op.stage] != id_ || op.microbatch >= t.microbatches)
        broken("the placement puts this stage on another device, or no such stage/micro-batch");
    if (op.flags & PSCHED_OP_BATCH_NEXT)
        broken("a compute op inside a batched comm group");
    Slot &s = slot(op.stage, op.microbatch);
    switch (op.kind) {
    case PSCHED_OP_F: {
        if (s.act)
            broken("F ran twice");
        Tensor in;
        if (t.first_in_chain(op.stage))
            in = sample_input(t.chain(op.stage), op.microbatch, t.microbatches);
        else if (t.device_of[op.stage - 1] == id_) /* e.g. the tip of a V */
            in = take(slot(op.stage - 1, op.microbatch).fwd_out,
                      "the previous stage, on this device, has not run its F");
        else
            in = take(s.fwd_in, "no RECV_F delivered the input");
        s.act = std::make_unique<Activations>();
        Tensor out = forward(sh_.models[t.chain(op.stage)], t.layers(op.stage), in, *s.act);
        if (++live > peak)
            peak = live;
        if (!t.last_in_chain(op.stage))
            s.fwd_out = std::move(out);
        break;
    }
    case PSCHED_OP_B:
        backward_input_of(op, s);
        break;
    case PSCHED_OP_W:
        backward_weight_of(op, s);
        break;
    case PSCHED_OP_BW:
        backward_input_of(op, s);
        backward_weight_of(op, s);
        break;
    default:
        broken("unknown op kind");
    }
}

void Device::backward_input_of(const psched_op &op, Slot &s)
{
    const Topology &t = sh_.topo;
    if (!s.act)
        broken("B before its F (or after its W)");
    if (s.b_done)
        broken("B ran twice");
    Tensor dy;
    if (t.last_in_chain(op.stage))
        dy = loss_grad(s.act->out, sample_target(t.chain(op.stage), op.microbatch, t.microbatches),
                       t.microbatches);
    else if (t.device_of[op.stage + 1] == id_)
        dy = take(slot(op.stage + 1, op.microbatch).bwd_out,
                  "the next stage, on this device, has not run its B");
    else
        dy = take(s.bwd_in, "no RECV_B delivered the gradient");
    Tensor dx = backward_input(sh_.models[t.chain(op.stage)], t.layers(op.stage), dy, *s.act);
    s.b_done = true;
    if (!t.first_in_chain(op.stage))
        s.bwd_out = std::move(dx);
}

void Device::backward_weight_of(const psched_op &op, Slot &s)
{
    if (!s.act || !s.b_done)
        broken("W before its B: the gradients it needs do not exist yet");
    sh_.grads[op.stage][op.microbatch] = backward_weight(sh_.topo.layers(op.stage), *s.act);
    s.act.reset();
    live--;
}

/* ---- comm ops ---- */

/* The device at the other end: SEND_F / RECV_B talk to stage + 1, RECV_F /
 * SEND_B to stage - 1, always within the chain and on another device. */
std::uint32_t Device::peer_of(const psched_op &op) const
{
    const Topology &t = sh_.topo;
    bool next = op.kind == PSCHED_OP_SEND_F || op.kind == PSCHED_OP_RECV_B;
    if (op.stage >= t.stages || t.device_of[op.stage] != id_ || op.microbatch >= t.microbatches ||
        (next ? t.last_in_chain(op.stage) : t.first_in_chain(op.stage)))
        broken("no neighbour stage to talk to");
    std::uint32_t peer = t.device_of[next ? op.stage + 1 : op.stage - 1];
    if (peer == id_)
        broken("the neighbour stage is on this device");
    return peer;
}

/* Post every op of the group, then wait for all: a batched group completes
 * together (batch_isend_irecv + wait), a lone op is a blocking call. */
void Device::communicate(std::size_t first, std::size_t end)
{
    for (current_ = first; current_ < end; current_++) {
        const psched_op &op = ops_[current_];
        if (!is_comm(op.kind))
            broken("a compute op inside a batched comm group");
        std::uint32_t peer = peer_of(op);
        Slot &s = slot(op.stage, op.microbatch);
        Request &r = requests_[current_];
        r.owner = id_;
        bool send = op.kind == PSCHED_OP_SEND_F || op.kind == PSCHED_OP_SEND_B;
        std::optional<Tensor> &buffer = op.kind == PSCHED_OP_SEND_F   ? s.fwd_out
                                        : op.kind == PSCHED_OP_SEND_B ? s.bwd_out
                                        : op.kind == PSCHED_OP_RECV_F ? s.fwd_in
                                                                      : s.bwd_in;
        if (send && !buffer)
            broken("nothing to send: the op producing the tensor has not run");
        if (!send && buffer)
            broken("a tensor received earlier for this op is still unused");
        if (!send)
            buffer.emplace();
        r.buffer = &*buffer;
        std::uint32_t from = send ? id_ : peer, to = send ? peer : id_;
        sh_.channels[from * sh_.topo.devices + to]->post(&r, send, sh_.waiters);
    }
    current_ = first;
    state.store(waiting);
    sh_.waiters.wait(id_, [&] {
        if (sh_.abort.load())
            return true;
        for (std::size_t i = first; i < end; i++)
            if (!requests_[i].done.load(std::memory_order_acquire))
                return false;
        return true;
    });
    if (sh_.abort.load())
        throw Aborted{};
    state.store(running);
    for (std::size_t i = first; i < end; i++) { /* a sent tensor's buffer is free again */
        Slot &s = slot(ops_[i].stage, ops_[i].microbatch);
        if (ops_[i].kind == PSCHED_OP_SEND_F)
            s.fwd_out.reset();
        else if (ops_[i].kind == PSCHED_OP_SEND_B)
            s.bwd_out.reset();
    }
}

/* ---- the watchdog ---- */

std::string hang_report(const std::vector<std::unique_ptr<Device>> &devices, double timeout_s)
{
    std::ostringstream out;
    out << "watchdog: no op completed for " << timeout_s << " s; waiting:";
    const char *sep = " ";
    for (std::size_t d = 0; d < devices.size(); d++) {
        const Device &dev = *devices[d];
        if (dev.state.load() != Device::waiting)
            continue;
        for (std::size_t i = dev.unit_first.load(); i < dev.unit_end.load(); i++) {
            if (dev.request(i).done.load())
                continue;
            const psched_op &op = dev.ops()[i];
            bool send = op.kind == PSCHED_OP_SEND_F || op.kind == PSCHED_OP_SEND_B;
            out << sep << "device " << d << " op " << i << " (" << op_text(op) << ", "
                << (send ? "send" : "receive") << " not matched)";
            sep = "; ";
        }
    }
    return out.str();
}

/* Returns true when the step hung: no unit completed for timeout_s. */
bool watch(Shared &sh, const std::vector<std::unique_ptr<Device>> &devices, double timeout_s)
{
    using clock = std::chrono::steady_clock;
    std::uint64_t seen = sh.progress.load();
    clock::time_point last = clock::now();
    std::unique_lock<std::mutex> lock(sh.mutex);
    while (sh.finished < sh.topo.devices && !sh.abort.load()) {
        sh.finished_cv.wait_for(lock, std::chrono::milliseconds(20));
        std::uint64_t now_seen = sh.progress.load();
        if (now_seen != seen) {
            seen = now_seen;
            last = clock::now();
        } else if (clock::now() - last > std::chrono::duration<double>(timeout_s)) {
            lock.unlock();
            sh.fail(hang_report(devices, timeout_s));
            return true;
        }
    }
    return false;
}

} // namespace

StepResult run_step(const Topology &topo, const std::vector<std::vector<psched_op>> &lists,
                    const std::vector<Model> &models, double timeout_s)
{
    StepResult result;
    result.grads.assign(topo.stages, std::vector<std::vector<LayerGrad>>(topo.microbatches));
    Shared sh(topo, models, result.grads);
    std::vector<std::unique_ptr<Device>> devices;
    for (std::uint32_t d = 0; d < topo.devices; d++)
        devices.push_back(std::make_unique<Device>(d, lists[d], sh));
    std::vector<std::thread> threads;
    for (auto &dev : devices)
        threads.emplace_back([&dev] { dev->run(); });
    bool hung = watch(sh, devices, timeout_s);
    for (std::thread &t : threads)
        t.join();
    if (!sh.failure.empty()) {
        result.status = hung ? StepResult::Status::hang : StepResult::Status::error;
        result.message = sh.failure;
    }
    for (auto &dev : devices) {
        result.peak.push_back(dev->peak);
        result.live_at_end.push_back(dev->live);
    }
    return result;
}

} // namespace rt
