/*
 * The MPI backend: one process per device (mpirun -np P), point-to-point
 * transfers with rendezvous semantics, gradients and memory gathered to
 * rank 0. Built when meson finds MPI (option -Dmpi=auto|enabled|disabled).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_MPI_BACKEND_HPP
#define PIPELINE_RUNTIME_MPI_BACKEND_HPP

#include "runtime.hpp"

#include <vector>

namespace rt {

/** True when the process was started by mpirun (Open MPI's, MPICH's or a
 *  PMI launcher's environment). */
bool launched_by_mpirun();

#ifdef PIPELINE_RUNTIME_MPI

/** MPI_Init; returns this process's rank. */
int mpi_start(int *argc, char ***argv);

/** Processes in MPI_COMM_WORLD. */
int mpi_size();

/**
 * Ends every rank with rank 0's @p status: MPI_Finalize, or MPI_Abort when a
 * failed step left transfers that can never complete (a synchronous send to
 * a peer that stopped cannot be cancelled).
 */
[[noreturn]] void mpi_finish(int status);

/**
 * One training step, this process being device MPI rank of @p topo: it
 * executes @p lists[rank] in order (MPI_Issend/MPI_Irecv for every op of a
 * comm unit, then wait for all of them, with a per-rank watchdog), then the
 * ranks gather their status, measured memory and weight gradients to rank
 * 0, whose StepResult holds all devices (the others' only their own).
 */
StepResult run_step_mpi(const Topology &topo, const std::vector<std::vector<psched_op>> &lists,
                        const std::vector<Model> &models, double timeout_s);

#endif

} // namespace rt

#endif
