/*
 * The pipeline runtime: one thread per device executes that device's op
 * list from pipesched, in order, after comm lowering; a watchdog turns a
 * hang into a failure that names the waiting devices and ops.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_RUNTIME_HPP
#define PIPELINE_RUNTIME_RUNTIME_HPP

#include "model.hpp"
#include "vocab.hpp"

#include <pipesched.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

/** Where each stage runs and how stages form chains, from the schedule's plan. */
struct Topology {
    std::uint32_t devices = 0;
    std::uint32_t stages = 0;       /* S = p·v */
    std::uint32_t chains = 1;       /* 2 for DualPipe */
    std::uint32_t microbatches = 0; /* per chain */
    std::vector<std::uint32_t> device_of; /* [stage] */
    /* Vocabulary Parallelism (vocab.hpp): 0 off, 1 or 2 the algorithm, from
     * the schedule's collectives; the output layer shared by every device */
    std::uint32_t vocab = 0;
    const VocabLayer *vocab_layer = nullptr;

    static Topology of(const psched_plan *plan);

    std::uint32_t per_chain() const { return stages / chains; }
    std::uint32_t chain(std::uint32_t s) const { return s / per_chain(); }
    bool first_in_chain(std::uint32_t s) const { return s % per_chain() == 0; }
    bool last_in_chain(std::uint32_t s) const { return s % per_chain() == per_chain() - 1; }
    LayerRange layers(std::uint32_t s) const { return stage_layers(s % per_chain(), per_chain()); }
};

/** Weight gradients written by each W: [stage][micro-batch][layer of the stage]. */
using StageGrads = std::vector<std::vector<std::vector<LayerGrad>>>;

/** What one training step under a schedule produced. */
struct StepResult {
    enum class Status { ok, error, hang };
    Status status = Status::ok;
    std::string message;                   /* the failure, naming device, op and cause */
    /* Per device, in bytes measured from the tensors: the most activation
     * memory (what F saved for backward, B's additions) alive at once, what
     * no W freed, and the most tensors in flight (to send or received);
     * the most bytes in the host store (offloaded activations) at once, and
     * what no RELOAD took back. */
    std::vector<std::uint64_t> peak, live_at_end, in_flight_peak, host_peak, host_at_end;
    StageGrads grads;
    std::vector<double> vocab_w; /* output layer's weight gradient (vocab mode) */
};

/** The backends: one thread per device, or one MPI process per device. */
using StepRunner = StepResult (*)(const Topology &, const std::vector<std::vector<psched_op>> &,
                                  const std::vector<Model> &, double);

/**
 * Run one training step: a thread per device executes @p lists[d] in order.
 * @param topo stage placement and chains.
 * @param lists every device's lowered op list (compute and comm ops).
 * @param models one model per chain.
 * @param timeout_s seconds without any completed op before the watchdog
 *        declares a hang.
 */
StepResult run_step(const Topology &topo, const std::vector<std::vector<psched_op>> &lists,
                    const std::vector<Model> &models, double timeout_s);

/** How the watchdog names an unmatched comm op: "device 0 op 3 (0SEND_F1,
 *  send not matched)". */
std::string waiting_op(std::uint32_t device, std::size_t index, const psched_op &op);

/** PyTorch action text of an op, as pipesched's messages print it: "2I5",
 *  "0SEND_F3". */
std::string op_text(const psched_op &op);

} // namespace rt

#endif
