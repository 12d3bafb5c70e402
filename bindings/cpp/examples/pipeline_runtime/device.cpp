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
#include "device.hpp"

#include <stdexcept>

namespace rt {

namespace {

/* Thrown in a device stopped because another one failed. */
struct Aborted {};

[[noreturn]] void broken(const std::string &why) { throw std::runtime_error(why); }

bool is_comm(std::uint8_t kind) { return kind >= PSCHED_OP_SEND_F; }

Tensor take(std::optional<Tensor> &from, const char *what)
{
    if (!from)
        broken(what);
    Tensor t = std::move(*from);
    from.reset();
    return t;
}

} // namespace

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

} // namespace rt
