/*
 * Point-to-point transport with rendezvous semantics (DESIGN §5): a send
 * completes only when the peer has posted the matching receive, and a
 * device pair's sends and receives are matched in posting order, as NCCL
 * matches them. No tag is compared: like NCCL, a receive posted for one
 * micro-batch takes whatever the peer sent first, so a schedule whose two
 * sides disagree on the order trains on the wrong tensors (and the gradient
 * check sees it).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPELINE_RUNTIME_CHANNEL_HPP
#define PIPELINE_RUNTIME_CHANNEL_HPP

#include "model.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rt {

/** One posted send or receive (like an isend/irecv handle). It must stay
 *  alive, with its buffer, until done is set. */
struct Request {
    std::atomic<bool> done{false};
    Tensor *buffer = nullptr; /* send: the tensor to copy; receive: where it lands */
    std::uint32_t owner = 0;  /* device woken when the request completes */
};

/** Per-device mutex and condition variable a blocked device sleeps on. */
class Waiters {
public:
    explicit Waiters(std::uint32_t devices) : slots_(devices) {}

    /** Wake @p device (it re-checks what it waits for). */
    void wake(std::uint32_t device);

    /** Sleep until pred() holds; pred is evaluated under the device's lock,
     *  so a wake() after the state changed is never lost. */
    template <typename Pred> void wait(std::uint32_t device, Pred pred)
    {
        Slot &s = slots_[device];
        std::unique_lock<std::mutex> lock(s.mutex);
        s.cv.wait(lock, pred);
    }

private:
    struct Slot {
        std::mutex mutex;
        std::condition_variable cv;
    };
    std::vector<Slot> slots_;
};

/**
 * The bounded channel of one directed device pair. It holds at most
 * @p capacity posted, unmatched sends and as many receives: with rendezvous
 * semantics a device posts no more than one batched group before it waits,
 * so the bound is only exceeded by a group larger than the capacity, which
 * post() reports instead of growing.
 */
class Channel {
public:
    Channel(std::uint32_t from, std::uint32_t to, std::size_t capacity);

    /** Post a send (@p send true) or a receive; completes it and its partner
     *  at once when the other side is already posted.
     *  @throw std::runtime_error when the channel is full. */
    void post(Request *request, bool send, Waiters &waiters);

private:
    /* Fixed-size FIFO of posted, unmatched requests. */
    struct Queue {
        std::vector<Request *> slot;
        std::size_t head = 0, size = 0;
    };

    std::uint32_t from_, to_;
    std::mutex mutex_;
    Queue sends_, receives_;
};

} // namespace rt

#endif
