/*
 * Compute ops and buffers of one device, for both backends.
 *
 * SPDX-License-Identifier: MIT
 */
#include "stages.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace rt {

namespace {

[[noreturn]] void broken(const std::string &why) { throw std::runtime_error(why); }

Tensor take(std::optional<Tensor> &from, const char *what)
{
    if (!from)
        broken(what);
    Tensor t = std::move(*from);
    from.reset();
    return t;
}

std::size_t bytes(const Tensor &t) { return t.size() * sizeof(double); }

std::size_t bytes(const std::optional<Tensor> &t) { return t ? bytes(*t) : 0; }

std::size_t bytes(const std::vector<Tensor> &ts)
{
    std::size_t n = 0;
    for (const Tensor &t : ts)
        n += bytes(t);
    return n;
}

} // namespace

bool is_comm(std::uint8_t kind) { return kind >= PSCHED_OP_SEND_F && kind <= PSCHED_OP_RECV_B; }

bool is_copy(std::uint8_t kind) { return kind == PSCHED_OP_OFFLOAD || kind == PSCHED_OP_RELOAD; }

bool is_send(std::uint8_t kind) { return kind == PSCHED_OP_SEND_F || kind == PSCHED_OP_SEND_B; }

std::size_t end_of_unit(const std::vector<psched_op> &ops, std::size_t i)
{
    std::uint32_t link = is_comm(ops[i].kind) ? PSCHED_OP_BATCH_NEXT : PSCHED_OP_OVERLAP_NEXT;
    std::size_t end = i + 1;
    while (end < ops.size() && (ops[end - 1].flags & link))
        end++;
    return end;
}

Stages::Stages(std::uint32_t device, const Topology &topo, const std::vector<Model> &models,
               StageGrads &grads)
    : id_(device), topo_(topo), models_(models), grads_(grads),
      slots_(static_cast<std::size_t>(topo.stages) * topo.microbatches)
{
    for (std::uint32_t s = 0; s < topo.stages; s++)
        if (topo.device_of[s] == device)
            mine_.push_back(s);
}

/* The bytes are read from the tensors themselves, not counted by op kind:
 * what F saved, what B added, and every tensor waiting to be sent or
 * consumed. */
void Stages::measure()
{
    activation_bytes = in_flight_bytes = 0;
    for (std::uint32_t s : mine_) {
        for (std::uint32_t k = 0; k < topo_.microbatches; k++) {
            const Slot &x = slot(s, k);
            if (x.act)
                activation_bytes += bytes(x.act->x) + bytes(x.act->y) + bytes(x.act->dz) +
                                    bytes(x.act->out);
            in_flight_bytes += bytes(x.fwd_in) + bytes(x.bwd_in) + bytes(x.fwd_out) +
                               bytes(x.bwd_out);
        }
    }
    if (vocab) /* the S passes' logits, kept until their T pass */
        activation_bytes += vocab->bytes(id_);
    host_bytes = 0;
    for (const auto &entry : host_)
        host_bytes += entry.second.values.size() * sizeof(double);
    activation_peak = std::max(activation_peak, activation_bytes);
    in_flight_peak = std::max(in_flight_peak, in_flight_bytes);
    host_peak = std::max(host_peak, host_bytes);
}

/* ---- compute ops ---- */

void Stages::compute(const psched_op &op)
{
    const Topology &t = topo_;
    if (op.kind >= PSCHED_OP_VOCAB_S) {
        if (!vocab)
            broken("a vocabulary pass or collective, but the runtime runs no vocabulary layer");
        /* the broadcast's root sends the last stage's output */
        std::uint32_t last = t.stages - 1;
        const Tensor *x = nullptr;
        if (op.kind == PSCHED_OP_COLLECTIVE && op.stage == 0 && t.device_of[last] == id_) {
            Slot &s = slot(last, op.microbatch);
            if (!s.act)
                broken("the broadcast before the last stage's F");
            x = &s.act->out;
        }
        vocab->run(id_, op, x);
        return;
    }
    if (op.stage >= t.stages || t.device_of[op.stage] != id_ || op.microbatch >= t.microbatches)
        broken("the placement puts this stage on another device, or no such stage/micro-batch");
    if (op.flags & PSCHED_OP_BATCH_NEXT)
        broken("a compute op inside a batched comm group");
    Slot &s = slot(op.stage, op.microbatch);
    switch (op.kind) {
    case PSCHED_OP_F: {
        if (s.act || host_.count({op.stage, op.microbatch}))
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
        Tensor out = forward(models_[t.chain(op.stage)], t.layers(op.stage), in, *s.act);
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
    case PSCHED_OP_OFFLOAD:
        offload(op, s);
        break;
    case PSCHED_OP_RELOAD:
        reload(op, s);
        break;
    default:
        broken("unknown op kind");
    }
}

void Stages::backward_input_of(const psched_op &op, Slot &s)
{
    const Topology &t = topo_;
    if (!s.act && host_.count({op.stage, op.microbatch}))
        broken("its activations are in the host store: no RELOAD brought them back");
    if (!s.act)
        broken("B before its F (or after its W)");
    if (s.b_done)
        broken("B ran twice");
    Tensor dy;
    if (t.last_in_chain(op.stage) && vocab)
        dy = vocab->input_grad(op.microbatch); /* from the vocabulary layer's last collective */
    else if (t.last_in_chain(op.stage))
        dy = loss_grad(s.act->out, sample_target(t.chain(op.stage), op.microbatch, t.microbatches),
                       t.microbatches);
    else if (t.device_of[op.stage + 1] == id_)
        dy = take(slot(op.stage + 1, op.microbatch).bwd_out,
                  "the next stage, on this device, has not run its B");
    else
        dy = take(s.bwd_in, "no RECV_B delivered the gradient");
    Tensor dx = backward_input(models_[t.chain(op.stage)], t.layers(op.stage), dy, *s.act);
    s.b_done = true;
    if (!t.first_in_chain(op.stage))
        s.bwd_out = std::move(dx);
}

void Stages::backward_weight_of(const psched_op &op, Slot &s)
{
    if (!s.act || !s.b_done)
        broken("W before its B: the gradients it needs do not exist yet");
    grads_[op.stage][op.microbatch] = backward_weight(topo_.layers(op.stage), *s.act);
    s.act.reset();
}

/* ---- activation copies (PipeOffload) ----
 * OFFLOAD copies what F saved into the host store and frees the device
 * record: the device's live bytes drop by the F's bytes once the copy is
 * done (the simulator frees them at the OFFLOAD's end). RELOAD allocates a
 * new device record and copies them back (taken at the RELOAD's start).
 * Between the two the backward has nothing to run on. */

void Stages::offload(const psched_op &op, Slot &s)
{
    if (!s.act)
        broken(host_.count({op.stage, op.microbatch}) ? "offloaded twice"
                                                       : "OFFLOAD before its F (or after its W)");
    if (s.b_done)
        broken("OFFLOAD after its B: only what F saved is copied to the host");
    HostCopy h;
    const Activations &a = *s.act;
    h.layers = a.x.size();
    if (a.y.size() != h.layers || !a.dz.empty())
        broken("the F record has an unexpected shape");
    for (const std::vector<Tensor> *ts : {&a.x, &a.y})
        for (const Tensor &t : *ts)
            h.values.insert(h.values.end(), t.begin(), t.end());
    h.out = a.out.size();
    h.values.insert(h.values.end(), a.out.begin(), a.out.end());
    host_.emplace(std::make_pair(op.stage, op.microbatch), std::move(h));
    s.act.reset(); /* the device copy is gone */
}

void Stages::reload(const psched_op &op, Slot &s)
{
    auto it = host_.find({op.stage, op.microbatch});
    if (it == host_.end())
        broken(s.act ? "RELOAD of activations that are on the device (no OFFLOAD ran)"
                     : "RELOAD before its OFFLOAD");
    const HostCopy &h = it->second;
    std::size_t tensor = h.layers ? (h.values.size() - h.out) / (2 * h.layers) : 0;
    auto a = std::make_unique<Activations>();
    const double *at = h.values.data();
    for (std::vector<Tensor> *ts : {&a->x, &a->y})
        for (std::size_t l = 0; l < h.layers; l++, at += tensor)
            ts->emplace_back(at, at + tensor);
    a->out.assign(at, at + h.out);
    s.act = std::move(a);
    host_.erase(it); /* the host copy is released */
}

/* ---- comm ops ---- */

/* SEND_F / RECV_B talk to stage + 1, RECV_F / SEND_B to stage - 1, always
 * within the chain and on another device. */
std::uint32_t Stages::peer_of(const psched_op &op) const
{
    const Topology &t = topo_;
    bool next = op.kind == PSCHED_OP_SEND_F || op.kind == PSCHED_OP_RECV_B;
    if (op.stage >= t.stages || t.device_of[op.stage] != id_ || op.microbatch >= t.microbatches ||
        (next ? t.last_in_chain(op.stage) : t.first_in_chain(op.stage)))
        broken("no neighbour stage to talk to");
    std::uint32_t peer = t.device_of[next ? op.stage + 1 : op.stage - 1];
    if (peer == id_)
        broken("the neighbour stage is on this device");
    return peer;
}

std::optional<Tensor> &Stages::buffer_of(const psched_op &op)
{
    if (!is_comm(op.kind))
        broken("a compute op inside a batched comm group");
    peer_of(op); /* checks stage, micro-batch and neighbour */
    Slot &s = slot(op.stage, op.microbatch);
    std::optional<Tensor> &buffer = op.kind == PSCHED_OP_SEND_F   ? s.fwd_out
                                    : op.kind == PSCHED_OP_SEND_B ? s.bwd_out
                                    : op.kind == PSCHED_OP_RECV_F ? s.fwd_in
                                                                  : s.bwd_in;
    if (is_send(op.kind) && !buffer)
        broken("nothing to send: the op producing the tensor has not run");
    if (!is_send(op.kind) && buffer)
        broken("a tensor received earlier for this op is still unused");
    return buffer;
}

void Stages::sent(const psched_op &op)
{
    Slot &s = slot(op.stage, op.microbatch);
    if (op.kind == PSCHED_OP_SEND_F)
        s.fwd_out.reset();
    else if (op.kind == PSCHED_OP_SEND_B)
        s.bwd_out.reset();
}

} // namespace rt
