/*
 * The compute side of one device, shared by both backends (threads and
 * MPI): the tensors in flight for each of its (stage, micro-batch) pairs,
 * the compute ops, the activation copies (OFFLOAD/RELOAD) to and from a
 * host-side store, the buffers comm ops send from and receive into, and the
 * measured bytes of live buffers.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_STAGES_HPP
#define PIPELINE_RUNTIME_STAGES_HPP

#include "runtime.hpp"
#include "vocab.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace rt {

/* One (stage, micro-batch) on a device: the tensors in flight for it. */
struct Slot {
    std::unique_ptr<Activations> act; /* F allocates, B adds to it, W / BW frees it */
    bool b_done = false;
    std::optional<Tensor> fwd_in, bwd_in;   /* delivered by RECV_F / RECV_B */
    std::optional<Tensor> fwd_out, bwd_out; /* F's output / B's input gradient, to send or
                                               to hand to a neighbour stage on this device */
};

/* What an OFFLOAD moved off the device: the F record's tensors, copied
 * into one host buffer (row-major, in the order x..., y..., out). */
struct HostCopy {
    std::vector<double> values;
    std::size_t layers = 0; /* tensors in x and in y */
    std::size_t out = 0;    /* values of the stage output (0: none kept) */
};

/* SEND_F, RECV_F, SEND_B, RECV_B: a transfer between devices. */
bool is_comm(std::uint8_t kind);
bool is_send(std::uint8_t kind);
/* OFFLOAD, RELOAD: an activation copy between the device and the host. */
bool is_copy(std::uint8_t kind);

/* A unit: one compute op, an overlapped pair, or a batched comm group. */
std::size_t end_of_unit(const std::vector<psched_op> &ops, std::size_t i);

class Stages {
public:
    Stages(std::uint32_t device, const Topology &topo, const std::vector<Model> &models,
           StageGrads &grads);

    /** Runs F, B, W, BW, OFFLOAD or RELOAD (the copy stream runs in list
     *  order with compute: a copy is complete before the next op starts).
     *  @throw std::runtime_error naming what is missing. */
    void compute(const psched_op &op);
    /** The device at the other end of a comm op. @throw std::runtime_error. */
    std::uint32_t peer_of(const psched_op &op) const;
    /** The tensor a SEND sends (it must exist) or the empty slot a RECV fills
     *  (it must be free). @throw std::runtime_error. */
    std::optional<Tensor> &buffer_of(const psched_op &op);
    /** A SEND completed: its buffer is free again. */
    void sent(const psched_op &op);
    /** Measures the bytes of every live buffer of the device now and keeps
     *  the peaks (called after every op or comm unit). */
    void measure();

    std::size_t activation_bytes = 0, activation_peak = 0; /* saved for backward */
    std::size_t in_flight_bytes = 0, in_flight_peak = 0;   /* tensors to send or received */
    std::size_t host_bytes = 0, host_peak = 0; /* offloaded activations in the host store */
    VocabState *vocab = nullptr; /* Vocabulary Parallelism's board, NULL when off */

private:
    void backward_input_of(const psched_op &op, Slot &s);
    void backward_weight_of(const psched_op &op, Slot &s);
    void offload(const psched_op &op, Slot &s);
    void reload(const psched_op &op, Slot &s);
    Slot &slot(std::uint32_t stage, std::uint32_t mb)
    {
        return slots_[static_cast<std::size_t>(stage) * topo_.microbatches + mb];
    }

    std::uint32_t id_;
    const Topology &topo_;
    const std::vector<Model> &models_;
    StageGrads &grads_;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> mine_; /* this device's stages */
    /* The host-side store: activations an OFFLOAD moved off the device,
     * by (stage, micro-batch), until their RELOAD. Not device memory. */
    std::map<std::pair<std::uint32_t, std::uint32_t>, HostCopy> host_;
};

} // namespace rt

#endif
