/*
 * pipeline_runtime: train a small MLP for one step under any pipesched
 * schedule, one thread per device (or, under mpirun, one process per
 * device), and check the result against a single-threaded reference step
 * and the simulator.
 *
 *   pipeline_runtime --schedule NAME --devices P --microbatches M [--chunks V]
 *   pipeline_runtime --csv FILE          a PyTorch compute_only or csv-comms CSV
 *   pipeline_runtime --all               every generator over the grid
 *   ... --offload all|selective|budget=X [--pcie-bandwidth B]
 *                                        the same after activation offload
 *   mpirun -np P pipeline_runtime ...    the same, one MPI process per device
 *
 * Exit status: 0 everything matched, 1 a check failed, 2 bad usage.
 *
 * SPDX-License-Identifier: MIT
 */
#include "check.hpp"
#include "mpi_backend.hpp"
#include "stages.hpp"

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
    std::string schedule, breakage, backend;
    std::vector<std::string> csv;
    std::uint32_t devices = 0, microbatches = 0, chunks = 0, group_size = 0, vocab = 0;
    bool all = false, via_csv = false;
    double f = 1.0, b = 1.0, w = 1.0, comm = 0.0;
    bool offload = false;
    psched_offload_policy policy = PSCHED_OFFLOAD_ALL;
    double budget = 0.0, pcie = 0.0; /* pcie 0: not given (copies take no time) */
    rt::CheckOptions options;
};

const char kUsage[] =
    "Usage: pipeline_runtime --schedule NAME --devices P --microbatches M [--chunks V]\n"
    "                        [--group-size N] [options]\n"
    "       pipeline_runtime --csv FILE [--csv FILE ...] [options]\n"
    "       pipeline_runtime --all [--via-csv] [--csv FILE ...] [--cost F,B,W] [--comm C]\n"
    "       mpirun -np P pipeline_runtime ...   (one process per device)\n"
    "\n"
    "Runs one training step of a 16-layer MLP under the schedule (after comm lowering),\n"
    "one thread per device or one MPI process per device, and checks the weight\n"
    "gradients against a non-pipelined reference step and each device's measured peak\n"
    "of activation bytes against the simulator's under the byte-valued memory model.\n"
    "\n"
    "  --schedule NAME    a generator name ('pipesched list')\n"
    "  --vocab N          generator option vocab (1f1b, v-half): 1 Vocab-1, 2 Vocab-2; the\n"
    "                     MLP then ends in a softmax output layer of 3 classes per device,\n"
    "                     split by vocabulary shards\n"
    "  --csv FILE         run a CSV file instead: PyTorch compute_only (lowered here) or\n"
    "                     compute_comms / csv-comms (run as it is, batched groups included)\n"
    "  --all              every registered generator except exact ones (optimal: a\n"
    "                     search per plan), p in {2,3,4} (under MPI: p = the process\n"
    "                     count), v in {1..4}, m in {p, 2p, 3p+1}, wherever the\n"
    "                     generator accepts the plan\n"
    "  --via-csv          with --all: also run each lowered schedule read back from its\n"
    "                     csv-comms file\n"
    "  --backend B        threads or mpi (default: mpi when started by mpirun)\n"
    "  --mem F,B,W        memory model in bytes per stage (default: the MLP's own)\n"
    "  --cost F,B,W       per-stage times of F, B and W (1,1,1): they order the comm ops\n"
    "  --comm C           latency of a transfer between devices (0)\n"
    "  --offload POLICY   activation offload first (psched_offload): all, selective or\n"
    "                     budget=X (X: peak per device in units of one F's activations);\n"
    "                     OFFLOAD copies what F saved to a host-side store, RELOAD brings\n"
    "                     it back before the backward\n"
    "  --pcie-bandwidth B copy bandwidth the offload policy plans with (activation units\n"
    "                     per time unit of --cost; default: copies take no time)\n"
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

double to_bytes(const std::string &text)
{
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v > -1e18 && v < 1e18))
        usage_error("--mem expects F,B,W in bytes, got '" + text + "'");
    return v;
}

void to_mem(const std::string &text, Args &a)
{
    std::size_t c1 = text.find(','), c2 = c1 == std::string::npos ? c1 : text.find(',', c1 + 1);
    if (c2 == std::string::npos)
        usage_error("--mem expects F,B,W in bytes, got '" + text + "'");
    a.options.mem_given = true;
    a.options.mem_f = to_bytes(text.substr(0, c1));
    a.options.mem_b = to_bytes(text.substr(c1 + 1, c2 - c1 - 1));
    a.options.mem_w = to_bytes(text.substr(c2 + 1));
}

void to_offload(const std::string &text, Args &a)
{
    a.offload = true;
    if (text == "all") {
        a.policy = PSCHED_OFFLOAD_ALL;
    } else if (text == "selective") {
        a.policy = PSCHED_OFFLOAD_SELECTIVE;
    } else if (text.rfind("budget=", 0) == 0) {
        std::string x = text.substr(7);
        char *end = nullptr;
        a.policy = PSCHED_OFFLOAD_BUDGET;
        a.budget = std::strtod(x.c_str(), &end);
        if (x.empty() || *end != '\0' || !(a.budget > 0.0 && a.budget < 1e18))
            usage_error("--offload budget=X expects X > 0 (peak memory per device), got '" +
                        text + "'");
    } else {
        usage_error("--offload expects all, selective or budget=X, got '" + text + "'");
    }
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
        else if (flag == "--vocab") a.vocab = to_count(flag, value());
        else if (flag == "--csv") a.csv.push_back(value());
        else if (flag == "--via-csv") a.via_csv = true;
        else if (flag == "--backend") a.backend = value();
        else if (flag == "--mem") to_mem(value(), a);
        else if (flag == "--cost") to_costs(value(), a);
        else if (flag == "--comm") a.comm = to_time(flag, value());
        else if (flag == "--offload") to_offload(value(), a);
        else if (flag == "--pcie-bandwidth") {
            a.pcie = to_time(flag, value());
            if (!(a.pcie > 0.0))
                usage_error("--pcie-bandwidth expects a bandwidth > 0, got '" +
                            std::string(argv[i]) + "'");
        }
        else if (flag == "--all") a.all = true;
        else if (flag == "--show") a.options.show = true;
        else if (flag == "--force") a.options.force = true;
        else if (flag == "--break") a.options.breakage = value();
        else if (flag == "--timeout") a.options.timeout_s = to_time(flag, value());
        else if (flag == "--help") { std::cout << kUsage; std::exit(0); }
        else usage_error("unknown argument '" + flag + "'");
    }
    if (!a.schedule.empty() + (!a.csv.empty() || a.all) != 1)
        usage_error("give --schedule, or --csv and/or --all");
    if (a.via_csv && !a.all)
        usage_error("--via-csv needs --all");
    if (!a.backend.empty() && a.backend != "threads" && a.backend != "mpi")
        usage_error("--backend expects threads or mpi, got '" + a.backend + "'");
    if (!a.schedule.empty() && !a.microbatches)
        usage_error("--schedule needs --devices and --microbatches");
    if (!(a.options.timeout_s > 0.0))
        usage_error("--timeout must be above 0");
    if (a.pcie > 0.0 && !a.offload)
        usage_error("--pcie-bandwidth needs --offload");
    if (!a.options.breakage.empty() && !rt::known_breakage(a.options.breakage))
        usage_error("--break expects w-before-b, send-order or unbatch, got '" +
                    a.options.breakage + "'");
    return a;
}

std::string label(const std::string &name, std::uint32_t p, std::uint32_t v, std::uint32_t m)
{
    /* The name may be a file path of any length: pad it, never cut it. */
    char shape[64];
    std::snprintf(shape, sizeof shape, " p=%u v=%u m=%u", p, v, m);
    std::string out = name;
    if (out.size() < 14)
        out.resize(14, ' ');
    return out + shape;
}

/* Lowering or the check itself may throw a library error: a failed check. */
bool check(const pipesched::Schedule &s, const pipesched::Plan *costs, const std::string &what,
           const rt::CheckOptions &o, std::ostream &out)
{
    try {
        return rt::check_schedule(s, costs, what, o, out);
    } catch (const pipesched::Error &e) {
        out << "FAIL " << what << "\n  " << e.status_name() << ": " << e.what() << "\n";
        return false;
    }
}

pipesched::Plan make_plan(const Args &a, std::uint32_t p, std::uint32_t m, std::uint32_t v)
{
    pipesched::Plan plan(p, m, v);
    plan.cost(a.f, a.b, a.w).comm(a.comm);
    if (a.pcie > 0.0)
        pipesched::set_pcie_bandwidth(plan, a.pcie);
    if (a.group_size)
        plan.option("group-size", a.group_size);
    if (a.vocab)
        plan.option("vocab", a.vocab);
    return plan;
}

/* --offload: the schedule with OFFLOAD/RELOAD ops, the policy planning with
 * the costs and PCIe bandwidth of @p costs (NULL: the schedule's plan). */
pipesched::Schedule offloaded(const Args &a, pipesched::Schedule s, const pipesched::Plan *costs)
{
    if (!a.offload)
        return s;
    return pipesched::offload(s, a.policy, a.budget, costs);
}

/* The same schedule lowered, written as a csv-comms file and read back: what
 * an engine reading our files executes. */
bool check_via_csv(const pipesched::Schedule &s, const std::string &what,
                   const rt::CheckOptions &o, std::ostream &out)
{
    try {
        pipesched::Schedule lowered = s.lower();
        pipesched::Schedule back = pipesched::from_csv(lowered.to_csv_comms());
        return check(back, nullptr, what + " via csv-comms", o, out);
    } catch (const pipesched::Error &e) {
        out << "FAIL " << what << " via csv-comms\n  " << e.status_name() << ": " << e.what()
            << "\n";
        return false;
    }
}

/* Every generator over the grid; p_only != 0 restricts it to one p (under
 * MPI, the process count). */
int run_grid(const Args &a, std::uint32_t p_only, std::ostream &out)
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
        for (std::uint32_t p = p_only ? p_only : 2; p <= (p_only ? p_only : 4); p++) {
            for (std::uint32_t v = 1; v <= 4; v++) {
                for (std::uint32_t m : {p, 2 * p, 3 * p + 1}) {
                    pipesched::Plan plan = make_plan(a, p, m, v);
                    std::optional<pipesched::Schedule> s;
                    try {
                        s.emplace(offloaded(a, pipesched::generate(plan, g.name), nullptr));
                    } catch (const pipesched::Error &e) {
                        /* EINVAL is the generator's check: not a plan it runs */
                        if (e.status() == PSCHED_EINVAL) {
                            rejected++;
                            continue;
                        }
                        out << "FAIL " << label(g.name, p, v, m) << ": generate: "
                            << e.status_name() << ": " << e.what() << "\n";
                        failed++;
                        continue;
                    }
                    ran++;
                    failed += !check(*s, nullptr, label(g.name, p, v, m), options, out);
                    if (a.via_csv) {
                        ran++;
                        failed += !check_via_csv(*s, label(g.name, p, v, m), options, out);
                    }
                }
            }
        }
    }
    out << ran << " schedules executed (" << rejected
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


/* The whole run on this process; rank 0 (or the only process) prints. */
int run(const Args &a, std::uint32_t world, std::ostream &out)
{
    int status = 0;
    if (a.all)
        status = run_grid(a, world, out);
    for (const std::string &path : a.csv) {
        pipesched::Schedule s = pipesched::from_csv(read_file(path));
        pipesched::Plan costs = s.plan();
        costs.cost(a.f, a.b, a.w).comm(a.comm);
        if (a.pcie > 0.0)
            pipesched::set_pcie_bandwidth(costs, a.pcie);
        s = offloaded(a, std::move(s), &costs);
        if (!check(s, &costs, label(path, costs.devices(), costs.chunks(), costs.microbatches()),
                   a.options, out))
            status = 1;
    }
    if (!a.schedule.empty()) {
        std::uint32_t devices = a.devices ? a.devices : world;
        pipesched::Plan plan = make_plan(a, devices, a.microbatches, a.chunks);
        pipesched::Schedule s = offloaded(a, pipesched::generate(plan, a.schedule), nullptr);
        pipesched::Plan resolved = s.plan();
        status = check(s, nullptr, label(a.schedule, devices, resolved.chunks(), a.microbatches),
                       a.options, out) ? 0 : 1;
    }
    return status;
}

} // namespace

int main(int argc, char **argv)
{
    Args a = parse(argc, argv);
    bool mpi = a.backend == "mpi" || (a.backend.empty() && rt::launched_by_mpirun());
    if (!mpi) {
        if (!a.schedule.empty() && !a.devices)
            usage_error("--schedule needs --devices and --microbatches");
        try {
            return run(a, 0, std::cout);
        } catch (const pipesched::Error &e) {
            std::cerr << "pipeline_runtime: " << e.status_name() << ": " << e.what() << "\n";
            return 1;
        }
    }
#ifdef PIPELINE_RUNTIME_MPI
    /* Every rank generates, lowers and checks the same schedules; only rank
     * 0 prints (the others write to a stream without a buffer). */
    int rank = rt::mpi_start(&argc, &argv);
    std::ostream quiet(nullptr);
    a.options.runner = rt::run_step_mpi;
    int status = 1;
    try {
        status = run(a, static_cast<std::uint32_t>(rt::mpi_size()), rank == 0 ? std::cout : quiet);
    } catch (const pipesched::Error &e) {
        if (rank == 0)
            std::cerr << "pipeline_runtime: " << e.status_name() << ": " << e.what() << "\n";
    }
    std::cout.flush();
    rt::mpi_finish(status);
#else
    usage_error("this pipeline_runtime was built without MPI (meson option -Dmpi)");
#endif
}
