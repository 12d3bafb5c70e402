/*
 * The MPI backend. Each process is one device and walks its own op list
 * once, in order, exactly as a device thread does; only the transport
 * differs. Every comm unit (a lone SEND/RECV or a batched group) posts one
 * MPI_Issend or MPI_Irecv per op and then waits for all of them: for a
 * group that is MPI_Issend/MPI_Irecv/MPI_Waitall (batch_isend_irecv +
 * wait, or ncclGroupStart/End); for a lone op it is a synchronous send or a
 * receive waited at once, i.e. MPI_Ssend / MPI_Recv. Synchronous mode is
 * the point: a send completes only when the peer has posted the receive,
 * as with NCCL, so a schedule missing a group deadlocks here as it would on
 * a GPU cluster instead of being rescued by MPI's eager buffering. The
 * wait polls (MPI_Testsome) so that a per-rank watchdog can name the
 * unmatched ops instead of hanging.
 *
 * All transfers use one tag: MPI's non-overtaking rule then matches the
 * calls of a device pair in posting order, as NCCL does, so a schedule
 * whose two sides disagree on the order trains on the wrong tensors.
 *
 * SPDX-License-Identifier: MIT
 */
#include "mpi_backend.hpp"

#include <cstdlib>

#ifdef PIPELINE_RUNTIME_MPI

#include "stages.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#endif

namespace rt {

bool launched_by_mpirun()
{
    for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (std::getenv(var))
            return true;
    return false;
}

#ifdef PIPELINE_RUNTIME_MPI

namespace {

constexpr int kTag = 0;
constexpr int kTensor = static_cast<int>(kRows * kWidth); /* doubles per transfer */
constexpr std::size_t kMessage = 1024;                    /* bytes of a rank's failure */

/* Set on every rank when a step failed: its transfers may never complete. */
bool g_pending = false;

/* The watchdog fired: the unmatched ops of this rank. */
struct Hang {
    std::string waiting;
};

/* ---- collectives of Vocabulary Parallelism (vocab.hpp) ----
 * Each collective is one MPI_Iallgather of every rank's part (a length,
 * then at most kVocabPart values), posted where the rank's list reaches
 * it and completed by the first op that needs it: as NCCL runs a
 * collective on its stream and an event makes the consumer wait. Every
 * rank posts the collectives in one order (the validator checks it),
 * which is what MPI requires of collectives on one communicator. */
class MpiVocab : public VocabTransport {
public:
    MpiVocab(MPI_Comm comm, std::uint32_t devices, double timeout_s)
        : comm_(comm), p_(devices), timeout_s_(timeout_s)
    {
    }
    ~MpiVocab() override { drain(); }

    void start(std::uint32_t j, std::uint32_t k, const std::vector<double> &part) override
    {
        Pending &x = pending_[{j, k}];
        x.send.assign(kVocabPart + 1, 0.0);
        x.send[0] = static_cast<double>(part.size());
        std::copy(part.begin(), part.end(), x.send.begin() + 1);
        x.recv.assign((kVocabPart + 1) * p_, 0.0);
        MPI_Iallgather(x.send.data(), kVocabPart + 1, MPI_DOUBLE, x.recv.data(), kVocabPart + 1,
                       MPI_DOUBLE, comm_, &x.request);
    }

    std::vector<std::vector<double>> finish(std::uint32_t j, std::uint32_t k) override
    {
        auto it = pending_.find({j, k});
        if (it == pending_.end())
            throw std::runtime_error("waits for collective " + std::to_string(j) + " of "
                                     "micro-batch " + std::to_string(k) + ", never posted here");
        Pending &x = it->second;
        using clock = std::chrono::steady_clock;
        clock::time_point begin = clock::now();
        for (int done = 0; !done;) {
            MPI_Test(&x.request, &done, MPI_STATUS_IGNORE);
            if (!done && clock::now() - begin > std::chrono::duration<double>(timeout_s_))
                throw std::runtime_error("collective " + std::to_string(j) + " of micro-batch " +
                                         std::to_string(k) + " did not complete");
            if (!done)
                std::this_thread::yield();
        }
        std::vector<std::vector<double>> parts(p_);
        for (std::uint32_t d = 0; d < p_; d++) {
            const double *at = &x.recv[(kVocabPart + 1) * d];
            std::size_t n = static_cast<std::size_t>(at[0]);
            parts[d].assign(at + 1, at + 1 + std::min(n, kVocabPart));
        }
        pending_.erase(it);
        return parts;
    }

    /* Collectives no op of this rank waited for (the input-gradient sum
     * only the last stage's rank needs) still complete. */
    void drain()
    {
        for (auto &entry : pending_)
            MPI_Wait(&entry.second.request, MPI_STATUS_IGNORE);
        pending_.clear();
    }

private:
    struct Pending {
        MPI_Request request = MPI_REQUEST_NULL;
        std::vector<double> send, recv;
    };
    MPI_Comm comm_;
    std::uint32_t p_;
    double timeout_s_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, Pending> pending_;
};

/* ---- the main loop (the template for an NCCL engine) ---- */

class Rank {
public:
    Rank(std::uint32_t id, const std::vector<psched_op> &ops, const Topology &topo,
         const std::vector<Model> &models, StageGrads &grads, MPI_Comm comm, double timeout_s)
        : stages(id, topo, models, grads), id_(id), ops_(ops), comm_(comm), timeout_s_(timeout_s)
    {
    }

    void run()
    {
        for (std::size_t i = 0; i < ops_.size();) {
            std::size_t end = end_of_unit(ops_, i);
            if (is_comm(ops_[i].kind)) {
                communicate(i, end);
            } else {
                for (current_ = i; current_ < end; current_++) {
                    stages.compute(ops_[current_]);
                    stages.measure();
                }
            }
            i = end;
        }
    }

    std::string where() const /* the op being executed, for messages */
    {
        return "device " + std::to_string(id_) + " op " + std::to_string(current_) + " (" +
               op_text(ops_[current_]) + ")";
    }

    Stages stages;

private:
    /* Post every op of the unit, then wait for all of them. */
    void communicate(std::size_t first, std::size_t end)
    {
        std::vector<MPI_Request> requests(end - first, MPI_REQUEST_NULL);
        for (current_ = first; current_ < end; current_++) {
            const psched_op &op = ops_[current_];
            std::optional<Tensor> &buffer = stages.buffer_of(op);
            int peer = static_cast<int>(stages.peer_of(op));
            MPI_Request *request = &requests[current_ - first];
            if (is_send(op.kind)) {
                MPI_Issend(buffer->data(), static_cast<int>(buffer->size()), MPI_DOUBLE, peer,
                           kTag, comm_, request);
            } else {
                buffer.emplace(kRows * kWidth);
                MPI_Irecv(buffer->data(), kTensor, MPI_DOUBLE, peer, kTag, comm_, request);
            }
        }
        current_ = first;
        wait_all(first, requests);
        for (std::size_t i = first; i < end; i++) /* a sent tensor's buffer is free again */
            if (is_send(ops_[i].kind))
                stages.sent(ops_[i]);
        stages.measure();
    }

    /* MPI_Waitall with the watchdog: poll until every request is done, or
     * fail naming the unmatched ones after timeout_s without a completion. */
    void wait_all(std::size_t first, std::vector<MPI_Request> &requests)
    {
        using clock = std::chrono::steady_clock;
        std::vector<int> done(requests.size());
        clock::time_point last = clock::now();
        for (int pending = static_cast<int>(requests.size()); pending > 0;) {
            int n = 0;
            MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &n, done.data(),
                         MPI_STATUSES_IGNORE);
            if (n > 0) {
                pending -= n;
                last = clock::now();
            } else if (clock::now() - last > std::chrono::duration<double>(timeout_s_)) {
                Hang hang;
                for (std::size_t k = 0; k < requests.size(); k++)
                    if (requests[k] != MPI_REQUEST_NULL)
                        hang.waiting += (hang.waiting.empty() ? "" : "; ") +
                                        waiting_op(id_, first + k, ops_[first + k]);
                throw hang;
            } else {
                std::this_thread::sleep_for(std::chrono::microseconds(20));
            }
        }
    }

    std::uint32_t id_;
    const std::vector<psched_op> &ops_;
    MPI_Comm comm_;
    double timeout_s_;
    std::size_t current_ = 0;
};

/* ---- gathering the step to rank 0 ---- */

constexpr std::size_t kLayerValues = kWidth * kWidth + kWidth;

/* Values one rank sends: per stage it owns (ascending) and micro-batch, a
 * flag (a W ran) and the layers' weight and bias gradients. */
std::size_t grad_values(const Topology &t, std::uint32_t device)
{
    std::size_t n = 0;
    for (std::uint32_t s = 0; s < t.stages; s++)
        if (t.device_of[s] == device)
            n += t.microbatches * (1 + t.layers(s).count * kLayerValues);
    return n;
}

std::vector<double> pack_grads(const Topology &t, std::uint32_t device, const StageGrads &g)
{
    std::vector<double> out;
    for (std::uint32_t s = 0; s < t.stages; s++) {
        if (t.device_of[s] != device)
            continue;
        for (std::uint32_t k = 0; k < t.microbatches; k++) {
            bool ran = g[s][k].size() == t.layers(s).count;
            out.push_back(ran ? 1.0 : 0.0);
            for (std::uint32_t l = 0; l < t.layers(s).count; l++) {
                for (std::size_t i = 0; i < kLayerValues; i++)
                    out.push_back(!ran ? 0.0
                                  : i < kWidth * kWidth ? g[s][k][l].w[i]
                                                        : g[s][k][l].b[i - kWidth * kWidth]);
            }
        }
    }
    return out;
}

void unpack_grads(const Topology &t, std::uint32_t device, const double *in, StageGrads &g)
{
    for (std::uint32_t s = 0; s < t.stages; s++) {
        if (t.device_of[s] != device)
            continue;
        for (std::uint32_t k = 0; k < t.microbatches; k++) {
            bool ran = *in++ != 0.0;
            std::vector<LayerGrad> layers(t.layers(s).count);
            for (LayerGrad &lg : layers) {
                lg.w.assign(in, in + kWidth * kWidth);
                lg.b.assign(in + kWidth * kWidth, in + kLayerValues);
                in += kLayerValues;
            }
            g[s][k] = ran ? std::move(layers) : std::vector<LayerGrad>();
        }
    }
}

/* Per rank: status, activation peak, bytes left, in-flight peak, host
 * store peak, host bytes left. */
constexpr int kFigures = 6;

/* status: 0 ok, 1 error, 2 hang; message: the error or the waiting ops. */
void gather(const Topology &t, int rank, int status, const std::string &message,
            const Stages &stages, double timeout_s, StepResult &result)
{
    int size = static_cast<int>(t.devices);
    double figures[kFigures] = {static_cast<double>(status),
                                static_cast<double>(stages.activation_peak),
                                static_cast<double>(stages.activation_bytes),
                                static_cast<double>(stages.in_flight_peak),
                                static_cast<double>(stages.host_peak),
                                static_cast<double>(stages.host_bytes)};
    std::vector<double> all_figures(kFigures * static_cast<std::size_t>(size));
    MPI_Gather(figures, kFigures, MPI_DOUBLE, all_figures.data(), kFigures, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    std::vector<char> text(kMessage, '\0'), all_text(kMessage * size);
    message.copy(text.data(), kMessage - 1);
    MPI_Gather(text.data(), static_cast<int>(kMessage), MPI_CHAR, all_text.data(),
               static_cast<int>(kMessage), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<int> counts(size), offsets(size);
    for (int r = 0, at = 0; r < size; at += counts[r], r++) {
        counts[r] = static_cast<int>(grad_values(t, static_cast<std::uint32_t>(r)));
        offsets[r] = at;
    }
    std::vector<double> mine = pack_grads(t, static_cast<std::uint32_t>(rank), result.grads);
    std::vector<double> all(static_cast<std::size_t>(offsets[size - 1]) + counts[size - 1]);
    MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), counts.data(),
                offsets.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int worst = status;
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    g_pending = g_pending || worst != 0;
    result.peak.assign(t.devices, 0);
    result.live_at_end.assign(t.devices, 0);
    result.in_flight_peak.assign(t.devices, 0);
    result.host_peak.assign(t.devices, 0);
    result.host_at_end.assign(t.devices, 0);
    if (rank != 0)
        return;
    std::string error, waiting;
    for (int r = 0; r < size; r++) {
        const double *f = &all_figures[kFigures * static_cast<std::size_t>(r)];
        result.peak[r] = static_cast<std::uint64_t>(f[1]);
        result.live_at_end[r] = static_cast<std::uint64_t>(f[2]);
        result.in_flight_peak[r] = static_cast<std::uint64_t>(f[3]);
        result.host_peak[r] = static_cast<std::uint64_t>(f[4]);
        result.host_at_end[r] = static_cast<std::uint64_t>(f[5]);
        std::string m(&all_text[kMessage * r]);
        if (f[0] == 1.0 && error.empty())
            error = m;
        else if (f[0] == 2.0)
            waiting += (waiting.empty() ? "" : "; ") + m;
        if (r != 0)
            unpack_grads(t, static_cast<std::uint32_t>(r), &all[offsets[r]], result.grads);
    }
    /* An error stops its rank; its peers then wait for it: the error is the
     * cause, the hangs its consequence. */
    if (!error.empty()) {
        result.status = StepResult::Status::error;
        result.message = error;
    } else if (!waiting.empty()) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
        result.status = StepResult::Status::hang;
        result.message = std::string("watchdog: no op completed for ") + seconds +
                         " s; waiting: " + waiting;
    }
}

} // namespace

int mpi_start(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

int mpi_size()
{
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

void mpi_finish(int status)
{
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::fflush(stdout);
    std::fflush(stderr);
    if (g_pending) {
        MPI_Barrier(MPI_COMM_WORLD); /* every rank's output is out */
        MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
    }
    MPI_Finalize();
    std::exit(status);
}

StepResult run_step_mpi(const Topology &topo, const std::vector<std::vector<psched_op>> &lists,
                        const std::vector<Model> &models, double timeout_s)
{
    StepResult result;
    result.grads.assign(topo.stages, std::vector<std::vector<LayerGrad>>(topo.microbatches));
    int rank = 0, size = mpi_size();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (static_cast<int>(topo.devices) != size) {
        result.status = StepResult::Status::error;
        result.message = "the schedule has " + std::to_string(topo.devices) +
                         " devices but mpirun started " + std::to_string(size) +
                         " processes (one per device)";
        result.peak.assign(topo.devices, 0);
        result.live_at_end.assign(topo.devices, 0);
        result.in_flight_peak.assign(topo.devices, 0);
        result.host_peak.assign(topo.devices, 0);
        result.host_at_end.assign(topo.devices, 0);
        return result;
    }
    /* A communicator per step: transfers a failed step left pending can
     * never match a later step's. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    Rank me(static_cast<std::uint32_t>(rank), lists[rank], topo, models, result.grads, comm,
            timeout_s);
    std::atomic<bool> never{false};
    std::unique_ptr<MpiVocab> transport;
    std::unique_ptr<VocabState> vocab;
    if (topo.vocab) {
        transport = std::make_unique<MpiVocab>(comm, topo.devices, timeout_s);
        vocab = std::make_unique<VocabState>(topo.vocab, topo.devices, topo.microbatches,
                                             *topo.vocab_layer, never, transport.get());
        me.stages.vocab = vocab.get();
    }
    int status = 0;
    std::string message;
    try {
        me.run();
        if (transport)
            transport->drain();
    } catch (const Hang &h) {
        status = 2;
        message = h.waiting;
    } catch (const std::exception &e) {
        status = 1;
        message = me.where() + ": " + e.what();
    }
    if (status == 0)
        MPI_Comm_free(&comm);
    gather(topo, rank, status, message, me.stages, timeout_s, result);
    if (vocab) { /* each rank holds its shard's gradient, zeros elsewhere: the sum is exact */
        std::vector<double> mine = vocab->weight_grad();
        result.vocab_w.assign(mine.size(), 0.0);
        MPI_Reduce(mine.data(), result.vocab_w.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                   MPI_SUM, 0, MPI_COMM_WORLD);
    }
    return result;
}

#endif

} // namespace rt
