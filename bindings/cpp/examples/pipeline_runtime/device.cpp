/*
 * The per-device loop of the thread backend. A device walks its op list
 * once, in order:
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

} // namespace

/* ---- the main loop ---- */

void Device::run() noexcept
{
    try {
        for (std::size_t i = 0; i < ops_.size();) {
            if (sh_.abort.load())
                throw Aborted{};
            std::size_t end = end_of_unit(ops_, i);
            unit_first.store(i);
            unit_end.store(end);
            if (is_comm(ops_[i].kind)) {
                communicate(i, end);
                stages.measure();
            } else {
                for (current_ = i; current_ < end; current_++) {
                    stages.compute(ops_[current_]);
                    stages.measure();
                }
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

/* ---- comm ops ---- */

/* Post every op of the group, then wait for all: a batched group completes
 * together (batch_isend_irecv + wait), a lone op is a blocking call. */
void Device::communicate(std::size_t first, std::size_t end)
{
    for (current_ = first; current_ < end; current_++) {
        const psched_op &op = ops_[current_];
        std::optional<Tensor> &buffer = stages.buffer_of(op);
        std::uint32_t peer = stages.peer_of(op);
        bool send = is_send(op.kind);
        if (!send)
            buffer.emplace();
        Request &r = requests_[current_];
        r.owner = id_;
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
    for (std::size_t i = first; i < end; i++) /* a sent tensor's buffer is free again */
        if (is_send(ops_[i].kind))
            stages.sent(ops_[i]);
}

} // namespace rt
