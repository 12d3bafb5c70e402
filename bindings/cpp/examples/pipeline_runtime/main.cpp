/*
 * pipeline_runtime: train a small MLP for one step under any pipesched
 * schedule, one thread per device, and check the result against a
 * single-threaded reference step and the simulator.
 *
 *   pipeline_runtime --schedule NAME --devices P --microbatches M [--chunks V]
 *   pipeline_runtime --csv FILE          a PyTorch compute_only CSV
 *   pipeline_runtime --all               every generator over the grid
 *
 * Exit status: 0 everything matched, 1 a check failed, 2 bad usage.
 *
 * SPDX-License-Identifier: MIT
 */
#include "check.hpp"

#include <pipesched.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Args {
    std::string schedule, csv, breakage;
    std::uint32_t devices = 0, microbatches = 0, chunks = 0, group_size = 0;
    bool all = false;
    double f = 1.0, b = 1.0, w = 1.0, comm = 0.0;
    rt::CheckOptions options;
};

const char kUsage[] =
    "Usage: pipeline_runtime --schedule NAME --devices P --microbatches M [--chunks V]\n"
    "                        [--group-size N] [options]\n"
    "       pipeline_runtime --csv FILE [options]\n"
    "       pipeline_runtime --all [--cost F,B,W] [--comm C] [--timeout S]\n"
    "\n"
    "Runs one training step of a 16-layer MLP under the schedule (after comm lowering),\n"
    "one thread per device, and checks the weight gradients against a non-pipelined\n"
    "reference step and each device's peak live activations against the simulator.\n"
    "\n"
    "  --schedule NAME    a generator name ('pipesched list')\n"
    "  --csv FILE         run a PyTorch compute_only CSV instead\n"
    "  --all              every registered generator, p in {2,3,4}, v in {1..4},\n"
    "                     m in {p, 2p, 3p+1}, wherever the generator accepts the plan\n"
    "  --cost F,B,W       per-stage times of F, B and W (1,1,1): they order the comm ops\n"
    "  --comm C           latency of a transfer between devices (0)\n"
    "  --show             print the lowered op lists ({batched group}, (overlapped pair))\n"
    "  --break KIND       negative check: w-before-b, send-order or unbatch\n"
    "  --force            run even when the validator rejects the schedule\n"
    "  --timeout S        watchdog: seconds without progress before a hang fails (5)\n"
    "\n"
    "Exit status: 0 everything matched, 1 a check failed, 2 bad usage.\n";

[[noreturn]] void usage_error(const std::string &message)
{
    std::cerr << "pipeline_runtime: " << message << "\n" << kUsage;
    std::exit(2);
}

double to_time(const std::string &flag, const std::string &text)
{
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v >= 0.0 && v < 1e9))
        usage_error(flag + " expects a time >= 0, got '" + text + "'");
    return v;
}

void to_costs(const std::string &text, Args &a)
{
    std::size_t c1 = text.find(','), c2 = c1 == std::string::npos ? c1 : text.find(',', c1 + 1);
    if (c2 == std::string::npos)
        usage_error("--cost expects F,B,W, got '" + text + "'");
    a.f = to_time("--cost", text.substr(0, c1));
    a.b = to_time("--cost", text.substr(c1 + 1, c2 - c1 - 1));
    a.w = to_time("--cost", text.substr(c2 + 1));
}

std::uint32_t to_count(const std::string &flag, const std::string &text)
{
    char *end = nullptr;
    unsigned long v = std::strtoul(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v == 0 || v > 1000000)
        usage_error(flag + " expects a positive integer, got '" + text + "'");
    return static_cast<std::uint32_t>(v);
}

Args parse(int argc, char **argv)
{
    Args a;
    for (int i = 1; i < argc; i++) {
        std::string flag = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc)
                usage_error(flag + " needs a value");
            return argv[++i];
        };
        if (flag == "--schedule") a.schedule = value();
        else if (flag == "--devices") a.devices = to_count(flag, value());
        else if (flag == "--microbatches") a.microbatches = to_count(flag, value());
        else if (flag == "--chunks") a.chunks = to_count(flag, value());
        else if (flag == "--group-size") a.group_size = to_count(flag, value());
        else if (flag == "--csv") a.csv = value();
        else if (flag == "--cost") to_costs(value(), a);
        else if (flag == "--comm") a.comm = to_time(flag, value());
        else if (flag == "--all") a.all = true;
        else if (flag == "--show") a.options.show = true;
        else if (flag == "--force") a.options.force = true;
        else if (flag == "--break") a.options.breakage = value();
        else if (flag == "--timeout") a.options.timeout_s = to_time(flag, value());
        else if (flag == "--help") { std::cout << kUsage; std::exit(0); }
        else usage_error("unknown argument '" + flag + "'");
    }
    int modes = !a.schedule.empty() + !a.csv.empty() + a.all;
    if (modes != 1)
        usage_error("give exactly one of --schedule, --csv and --all");
    if (!a.schedule.empty() && (!a.devices || !a.microbatches))
        usage_error("--schedule needs --devices and --microbatches");
    if (!(a.options.timeout_s > 0.0))
        usage_error("--timeout must be above 0");
    if (!a.options.breakage.empty() && !rt::known_breakage(a.options.breakage))
        usage_error("--break expects w-before-b, send-order or unbatch, got '" +
                    a.options.breakage + "'");
    return a;
}

std::string label(const std::string &name, std::uint32_t p, std::uint32_t v, std::uint32_t m)
{
    char buf[96];
    std::snprintf(buf, sizeof buf, "%-14s p=%u v=%u m=%u", name.c_str(), p, v, m);
    return buf;
}

/* Lowering or the check itself may throw a library error: a failed check. */
bool check(const pipesched::Schedule &s, const pipesched::Plan *costs, const std::string &what,
           const rt::CheckOptions &o)
{
    try {
        return rt::check_schedule(s, costs, what, o, std::cout);
    } catch (const pipesched::Error &e) {
        std::cout << "FAIL " << what << "\n  " << e.status_name() << ": " << e.what() << "\n";
        return false;
    }
}

pipesched::Plan make_plan(const Args &a, std::uint32_t p, std::uint32_t m, std::uint32_t v)
{
    pipesched::Plan plan(p, m, v);
    plan.cost(a.f, a.b, a.w).comm(a.comm);
    if (a.group_size)
        plan.option("group-size", a.group_size);
    return plan;
}

int run_grid(const Args &a)
{
    rt::CheckOptions options = a.options;
    options.brief = true;
    std::size_t ran = 0, failed = 0, rejected = 0;
    for (const pipesched::GeneratorInfo &g : pipesched::generators()) {
        /* an exact generator takes up to its time limit per plan */
        const psched_generator *desc = nullptr;
        if (psched_generator_find(g.name.c_str(), &desc) == PSCHED_OK &&
            psched_generator_is_exact(desc))
            continue;
        for (std::uint32_t p = 2; p <= 4; p++) {
            for (std::uint32_t v = 1; v <= 4; v++) {
                for (std::uint32_t m : {p, 2 * p, 3 * p + 1}) {
                    pipesched::Plan plan = make_plan(a, p, m, v);
                    std::optional<pipesched::Schedule> s;
                    try {
                        s.emplace(pipesched::generate(plan, g.name));
                    } catch (const pipesched::Error &e) {
                        /* EINVAL is the generator's check: not a plan it runs */
                        if (e.status() == PSCHED_EINVAL) {
                            rejected++;
                            continue;
                        }
                        std::cout << "FAIL " << label(g.name, p, v, m) << ": generate: "
                                  << e.status_name() << ": " << e.what() << "\n";
                        failed++;
                        continue;
                    }
                    ran++;
                    failed += !check(*s, nullptr, label(g.name, p, v, m), options);
                }
            }
        }
    }
    std::cout << ran << " schedules executed (" << rejected
              << " grid points not accepted by their generator): "
              << (failed ? std::to_string(failed) + " FAILED" : "all match") << "\n";
    return failed ? 1 : 0;
}

std::string read_file(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        usage_error("cannot read '" + path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

int main(int argc, char **argv)
{
    Args a = parse(argc, argv);
    if (a.all)
        return run_grid(a);
    try {
        if (!a.csv.empty()) {
            pipesched::Schedule s = pipesched::from_csv(read_file(a.csv));
            pipesched::Plan costs = s.plan();
            costs.cost(a.f, a.b, a.w).comm(a.comm);
            return check(s, &costs, label(a.csv, costs.devices(), costs.chunks(),
                                          costs.microbatches()), a.options) ? 0 : 1;
        }
        pipesched::Plan plan = make_plan(a, a.devices, a.microbatches, a.chunks);
        pipesched::Schedule s = pipesched::generate(plan, a.schedule);
        pipesched::Plan resolved = s.plan();
        return check(s, nullptr, label(a.schedule, a.devices, resolved.chunks(), a.microbatches),
                     a.options) ? 0 : 1;
    } catch (const pipesched::Error &e) {
        std::cerr << "pipeline_runtime: " << e.status_name() << ": " << e.what() << "\n";
        return 1;
    }
}
