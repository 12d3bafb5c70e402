/*
 * Starting a step: the topology from the plan, a thread per device, and the
 * watchdog that turns a hang into a failure naming what each device waits
 * for.
 *
 * SPDX-License-Identifier: MIT
 */
#include "runtime.hpp"

#include "device.hpp"

#include <chrono>
#include <sstream>
#include <thread>

namespace rt {

Topology Topology::of(const psched_plan *plan)
{
    Topology t;
    t.devices = psched_plan_devices(plan);
    t.stages = psched_plan_stages(plan);
    t.chains = psched_plan_chains(plan);
    t.microbatches = psched_plan_microbatches(plan) / t.chains;
    for (std::uint32_t s = 0; s < t.stages; s++)
        t.device_of.push_back(psched_plan_stage_device(plan, s));
    return t;
}

std::string op_text(const psched_op &op)
{
    const char *kind = psched_op_kind_str(static_cast<psched_op_kind>(op.kind),
                                          PSCHED_NAMING_PYTORCH);
    return std::to_string(op.stage) + (kind ? kind : "?") + std::to_string(op.microbatch);
}

std::string waiting_op(std::uint32_t device, std::size_t index, const psched_op &op)
{
    bool send = op.kind == PSCHED_OP_SEND_F || op.kind == PSCHED_OP_SEND_B;
    return "device " + std::to_string(device) + " op " + std::to_string(index) + " (" +
           op_text(op) + ", " + (send ? "send" : "receive") + " not matched)";
}

namespace {

/* ---- the watchdog ---- */

std::string hang_report(const std::vector<std::unique_ptr<Device>> &devices, double timeout_s)
{
    std::ostringstream out;
    out << "watchdog: no op completed for " << timeout_s << " s; waiting:";
    const char *sep = " ";
    for (std::size_t d = 0; d < devices.size(); d++) {
        const Device &dev = *devices[d];
        if (dev.state.load() != Device::waiting)
            continue;
        for (std::size_t i = dev.unit_first.load(); i < dev.unit_end.load(); i++) {
            if (!dev.request(i).done.load()) {
                out << sep << waiting_op(static_cast<std::uint32_t>(d), i, dev.ops()[i]);
                sep = "; ";
            }
        }
    }
    return out.str();
}

/* Returns true when the step hung: no unit completed for timeout_s. */
bool watch(Shared &sh, const std::vector<std::unique_ptr<Device>> &devices, double timeout_s)
{
    using clock = std::chrono::steady_clock;
    std::uint64_t seen = sh.progress.load();
    clock::time_point last = clock::now();
    std::unique_lock<std::mutex> lock(sh.mutex);
    while (sh.finished < sh.topo.devices && !sh.abort.load()) {
        sh.finished_cv.wait_for(lock, std::chrono::milliseconds(20));
        std::uint64_t now_seen = sh.progress.load();
        if (now_seen != seen) {
            seen = now_seen;
            last = clock::now();
        } else if (clock::now() - last > std::chrono::duration<double>(timeout_s)) {
            lock.unlock();
            sh.fail(hang_report(devices, timeout_s));
            return true;
        }
    }
    return false;
}

} // namespace

StepResult run_step(const Topology &topo, const std::vector<std::vector<psched_op>> &lists,
                    const std::vector<Model> &models, double timeout_s)
{
    StepResult result;
    result.grads.assign(topo.stages, std::vector<std::vector<LayerGrad>>(topo.microbatches));
    Shared sh(topo, models, result.grads);
    if (topo.vocab)
        sh.vocab = std::make_unique<VocabState>(topo.vocab, topo.devices, topo.microbatches,
                                                *topo.vocab_layer, sh.abort);
    std::vector<std::unique_ptr<Device>> devices;
    for (std::uint32_t d = 0; d < topo.devices; d++)
        devices.push_back(std::make_unique<Device>(d, lists[d], sh));
    std::vector<std::thread> threads;
    for (auto &dev : devices)
        threads.emplace_back([&dev] { dev->run(); });
    bool hung = watch(sh, devices, timeout_s);
    for (std::thread &t : threads)
        t.join();
    if (!sh.failure.empty()) {
        result.status = hung ? StepResult::Status::hang : StepResult::Status::error;
        result.message = sh.failure;
    }
    if (sh.vocab)
        result.vocab_w = sh.vocab->weight_grad();
    for (auto &dev : devices) {
        result.peak.push_back(dev->stages.activation_peak);
        result.live_at_end.push_back(dev->stages.activation_bytes);
        result.in_flight_peak.push_back(dev->stages.in_flight_peak);
        result.host_peak.push_back(dev->stages.host_peak);
        result.host_at_end.push_back(dev->stages.host_bytes);
    }
    return result;
}

} // namespace rt
