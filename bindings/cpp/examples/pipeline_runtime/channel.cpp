/*
 * Rendezvous channels: matching posted sends and receives in order.
 *
 * SPDX-License-Identifier: MIT
 */
#include "channel.hpp"

#include <stdexcept>
#include <string>

namespace rt {

void Waiters::wake(std::uint32_t device)
{
    /* Taking the lock orders this wake after the waiter's predicate check:
     * either it saw the new state, or it is already asleep and is notified. */
    Slot &s = slots_[device];
    std::lock_guard<std::mutex> lock(s.mutex);
    s.cv.notify_all();
}

Channel::Channel(std::uint32_t from, std::uint32_t to, std::size_t capacity) : from_(from), to_(to)
{
    sends_.slot.resize(capacity);
    receives_.slot.resize(capacity);
}

void Channel::post(Request *request, bool send, Waiters &waiters)
{
    std::lock_guard<std::mutex> lock(mutex_);
    Queue &mine = send ? sends_ : receives_;
    if (mine.size == mine.slot.size())
        throw std::runtime_error("channel " + std::to_string(from_) + "->" + std::to_string(to_) +
                                 " is full: more than " + std::to_string(mine.slot.size()) +
                                 " unmatched " + (send ? "sends" : "receives") + " posted");
    mine.slot[(mine.head + mine.size++) % mine.slot.size()] = request;
    while (sends_.size > 0 && receives_.size > 0) {
        Request *s = sends_.slot[sends_.head], *r = receives_.slot[receives_.head];
        sends_.head = (sends_.head + 1) % sends_.slot.size();
        receives_.head = (receives_.head + 1) % receives_.slot.size();
        sends_.size--;
        receives_.size--;
        *r->buffer = *s->buffer;
        s->done.store(true, std::memory_order_release);
        r->done.store(true, std::memory_order_release);
        waiters.wake(s->owner);
        waiters.wake(r->owner);
    }
}

} // namespace rt
