/*
 * The execution check: lower a schedule, validate it, run one training step
 * under it and compare gradients and memory with the reference and the
 * simulator.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_CHECK_HPP
#define PIPELINE_RUNTIME_CHECK_HPP

#include "runtime.hpp"

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
    StepRunner runner = run_step; /* the backend: threads, or MPI (mpi_backend.hpp) */
    bool mem_given = false;       /* --mem F,B,W: bytes per stage instead of the MLP's */
    double mem_f = 0, mem_b = 0, mem_w = 0;
};

/** The breakages the negative check applies to a lowered schedule. */
bool known_breakage(const std::string &name);

/**
 * Lower @p compute (comm ops ordered by the costs of @p costs, NULL: the
 * schedule's own; a schedule that already has comm ops, read from a
 * csv-comms file, runs as it is; OFFLOAD/RELOAD copies stay in place, as
 * psched_lower_comm() keeps them), apply the requested breakage, validate,
 * simulate under the byte-valued memory model, run one step with the
 * backend of @p options, and compare. Prints what it found to @p out under
 * @p label.
 * @return true when the gradients match the reference within
 *         kGradTolerance, the run finished, and every device's measured peak
 *         of activation bytes equals the simulator's peak_memory.
 */
bool check_schedule(const pipesched::Schedule &compute, const pipesched::Plan *costs,
                    const std::string &label, const CheckOptions &options, std::ostream &out);

} // namespace rt

#endif
