/*
 * The execution check: lower a schedule, validate it, run one training step
 * under it and compare gradients and memory with the reference and the
 * simulator.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_CHECK_HPP
#define PIPELINE_RUNTIME_CHECK_HPP

#include <pipesched.hpp>

#include <ostream>
#include <string>

namespace rt {

/** Largest accepted |pipelined − reference| gradient difference. */
constexpr double kGradTolerance = 1e-12;

struct CheckOptions {
    double timeout_s = 5.0; /* watchdog: seconds without progress */
    bool force = false;     /* run even when the validator rejects the schedule */
    bool show = false;      /* print the lowered op lists */
    bool brief = false;     /* one line per schedule (the grid) */
    std::string breakage;   /* "", "w-before-b", "send-order" or "unbatch" */
};

/** The breakages the negative check applies to a lowered schedule. */
bool known_breakage(const std::string &name);

/**
 * Lower @p compute (comm ops ordered by the costs of @p costs, NULL: the
 * schedule's own), apply the requested breakage, validate, simulate, run
 * one step with a thread per device, and compare. Prints what it found to
 * @p out under @p label.
 * @return true when the gradients match the reference within
 *         kGradTolerance, the run finished, and every device's measured peak
 *         of live activations equals the simulator's peak_memory.
 */
bool check_schedule(const pipesched::Schedule &compute, const pipesched::Plan *costs,
                    const std::string &label, const CheckOptions &options, std::ostream &out);

} // namespace rt

#endif
