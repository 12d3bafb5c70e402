/*
 * A device of the runtime: its thread, its tensors in flight, and what the
 * device threads share (channels, the abort flag, the first failure).
 * Internal to the example; runtime.hpp is its interface.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_DEVICE_HPP
#define PIPELINE_RUNTIME_DEVICE_HPP

#include "channel.hpp"
#include "runtime.hpp"
#include "stages.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rt {

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
    std::unique_ptr<VocabState> vocab; /* the collectives' board (vocab mode) */

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

/* One device: run() is its thread, executing its op list in order; its
 * Stages hold the tensors in flight and measure its memory. */
class Device {
public:
    enum State { running, waiting, done, failed };

    Device(std::uint32_t id, const std::vector<psched_op> &ops, Shared &shared)
        : id_(id), ops_(ops), sh_(shared), stages(id, shared.topo, shared.models, shared.grads),
          requests_(new Request[ops.size() + 1])
    {
        stages.vocab = shared.vocab.get();
    }

    void run() noexcept;

    /* Read by the watchdog while the thread runs. */
    std::atomic<int> state{running};
    std::atomic<std::size_t> unit_first{0}, unit_end{0};
    const std::vector<psched_op> &ops() const { return ops_; }
    const Request &request(std::size_t i) const { return requests_[i]; }

private:
    void communicate(std::size_t first, std::size_t end);

    std::uint32_t id_;
    const std::vector<psched_op> &ops_;
    Shared &sh_;

public:
    Stages stages; /* read after the thread has finished */

private:
    std::unique_ptr<Request[]> requests_; /* requests_[i]: the posted op i */
    std::size_t current_ = 0;            /* op being executed, for messages */
};

} // namespace rt

#endif
