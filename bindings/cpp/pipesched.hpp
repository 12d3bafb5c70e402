/*
 * pipesched.hpp — header-only C++17 wrapper over the C API in pipesched.h.
 *
 * Every handle is owned by exactly one object (move-only, freed by the
 * destructor); every failing C call becomes a pipesched::Error carrying the
 * status code and the library's message. Nothing here adds behaviour: the
 * C header remains the manual for what each call does.
 *
 *     pipesched::Plan plan(4, 8);
 *     plan.cost(1, 1, 1).comm(0.1);
 *     auto schedule = pipesched::generate(plan, "zb-h1");
 *     schedule.validate();
 *     for (const psched_op &op : schedule.ops(0)) ...
 *     double span = schedule.simulate().span();
 *
 * The optimizer and generator authoring are wrapped the same way:
 *
 *     pipesched::Model model = pipesched::Model::from_csv(profile_text);
 *     auto part = pipesched::partition(model, plan.memory_limit(80e9), "1f1b");
 *     pipesched::Plan tuned = part.plan();       // per-stage costs
 *     auto ranked = pipesched::plan_search(model, plan, {"1f1b", "zb-h1"});
 *     std::string flags = part.to_megatron(model);  // or to_torchtitan(model)
 *     auto mine = pipesched::from_layout(model, plan, "1f1b", "Et*3|t*3L");
 *     // inside a psched_generator's generate callback:
 *     pipesched::Builder(builder).append(0, PSCHED_OP_F, 0, 0);
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_HPP
#define PIPESCHED_HPP

#include <pipesched.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pipesched {

/** A failed library call: status() is the C status code, what() the
 *  library's message (psched_last_error() at the time of the failure). */
class Error : public std::runtime_error {
public:
    Error(psched_status status, const std::string &message)
        : std::runtime_error(message), status_(status)
    {
    }

    psched_status status() const noexcept { return status_; }
    /** e.g. "PSCHED_EINVAL". */
    const char *status_name() const noexcept { return psched_status_str(status_); }

private:
    psched_status status_;
};

namespace detail {

/* The message is thread-local and overwritten by the next failing call, so
 * it is copied before anything else can run. */
inline void check(psched_status status)
{
    if (status != PSCHED_OK)
        throw Error(status, psched_last_error());
}

/* A moved-from wrapper holds NULL; using it is a caller bug reported as an
 * exception rather than handed to the C library. */
template <typename T> T *require(T *handle, const char *what)
{
    if (!handle)
        throw Error(PSCHED_EINVAL, std::string("use of an empty (moved-from) pipesched::") + what);
    return handle;
}

/* psched_bound() or psched_schedule_bound() (@p fn, of @p object) with the
 * options and result versions of this header. */
template <typename Object>
inline psched_bound_info bound(psched_status (*fn)(const Object *, const psched_bound_options *,
                                                   psched_bound_info *),
                               const Object *object, std::uint32_t flags)
{
    psched_bound_options options{};
    options.version = PSCHED_BOUND_OPTIONS_VERSION;
    options.flags = flags;
    psched_bound_info info{};
    info.version = PSCHED_BOUND_INFO_VERSION;
    check(fn(object, &options, &info));
    return info;
}

struct PlanDeleter {
    void operator()(psched_plan *p) const noexcept { psched_plan_destroy(p); }
};
struct ScheduleDeleter {
    void operator()(psched_schedule *s) const noexcept { psched_schedule_destroy(s); }
};
struct ReportDeleter {
    void operator()(psched_report *r) const noexcept { psched_report_destroy(r); }
};
struct ModelDeleter {
    void operator()(psched_model *m) const noexcept { psched_model_destroy(m); }
};
struct PartitionDeleter {
    void operator()(psched_partition_result *r) const noexcept
    {
        psched_partition_result_destroy(r);
    }
};
struct SearchDeleter {
    void operator()(psched_search_result *r) const noexcept { psched_search_result_destroy(r); }
};
struct FreeDeleter {
    void operator()(char *p) const noexcept { psched_free(p); }
};

} // namespace detail

/** The library version, "MAJOR.MINOR.PATCH". */
inline std::string version() { return psched_version(); }

/** Values of one stage for F, B and W: costs or memory deltas. */
struct KindValues {
    double f;
    double b;
    double w;
};

/** Owner of a psched_plan. Setters mirror psched_plan_set_* and chain:
 *  `Plan(4, 8).cost(1, 2, 1).comm(0.5)`. */
class Plan {
public:
    /** The C defaults: p = 1, m = 1, v = 0, unit costs. */
    Plan()
    {
        psched_plan *p = nullptr;
        detail::check(psched_plan_create(&p));
        handle_.reset(p);
    }

    Plan(std::uint32_t devices, std::uint32_t microbatches, std::uint32_t chunks = 0) : Plan()
    {
        this->devices(devices).microbatches(microbatches).chunks(chunks);
    }

    /** Take ownership of a plan from the C API. */
    static Plan adopt(psched_plan *plan) noexcept { return Plan(plan); }

    Plan(const Plan &) = delete;
    Plan &operator=(const Plan &) = delete;
    Plan(Plan &&) noexcept = default;
    Plan &operator=(Plan &&) noexcept = default;
    ~Plan() = default;

    /** Deep copy (copying is explicit because it allocates). */
    Plan clone() const
    {
        psched_plan *p = nullptr;
        detail::check(psched_plan_clone(get_checked(), &p));
        return Plan(p);
    }

    /* Setters: the lvalue form returns *this, the rvalue form moves it on so
     * a temporary can be configured and stored in one expression. */
    Plan &devices(std::uint32_t n) & { return set(psched_plan_set_devices(raw(), n)); }
    Plan &&devices(std::uint32_t n) && { return std::move(devices(n)); }
    Plan &microbatches(std::uint32_t n) & { return set(psched_plan_set_microbatches(raw(), n)); }
    Plan &&microbatches(std::uint32_t n) && { return std::move(microbatches(n)); }
    Plan &chunks(std::uint32_t n) & { return set(psched_plan_set_chunks(raw(), n)); }
    Plan &&chunks(std::uint32_t n) && { return std::move(chunks(n)); }
    Plan &chains(std::uint32_t n) & { return set(psched_plan_set_chains(raw(), n)); }
    Plan &&chains(std::uint32_t n) && { return std::move(chains(n)); }
    Plan &placement(psched_placement kind) & { return set(psched_plan_set_placement(raw(), kind)); }
    Plan &&placement(psched_placement kind) && { return std::move(placement(kind)); }
    Plan &stage_device(std::uint32_t stage, std::uint32_t device) &
    {
        return set(psched_plan_set_stage_device(raw(), stage, device));
    }
    Plan &&stage_device(std::uint32_t stage, std::uint32_t device) &&
    {
        return std::move(stage_device(stage, device));
    }
    Plan &cost(double f, double b, double w) & { return set(psched_plan_set_cost(raw(), f, b, w)); }
    Plan &&cost(double f, double b, double w) && { return std::move(cost(f, b, w)); }
    Plan &stage_cost(std::uint32_t stage, double f, double b, double w) &
    {
        return set(psched_plan_set_stage_cost(raw(), stage, f, b, w));
    }
    Plan &&stage_cost(std::uint32_t stage, double f, double b, double w) &&
    {
        return std::move(stage_cost(stage, f, b, w));
    }
    Plan &mem(double f, double b, double w) & { return set(psched_plan_set_mem(raw(), f, b, w)); }
    Plan &&mem(double f, double b, double w) && { return std::move(mem(f, b, w)); }
    Plan &stage_mem(std::uint32_t stage, double f, double b, double w) &
    {
        return set(psched_plan_set_stage_mem(raw(), stage, f, b, w));
    }
    Plan &&stage_mem(std::uint32_t stage, double f, double b, double w) &&
    {
        return std::move(stage_mem(stage, f, b, w));
    }
    Plan &comm(double latency) & { return set(psched_plan_set_comm(raw(), latency)); }
    Plan &&comm(double latency) && { return std::move(comm(latency)); }
    Plan &memory_limit(double limit) & { return set(psched_plan_set_memory_limit(raw(), limit)); }
    Plan &&memory_limit(double limit) && { return std::move(memory_limit(limit)); }
    Plan &option(const std::string &key, std::int64_t value) &
    {
        return set(psched_plan_set_option(raw(), key.c_str(), value));
    }
    Plan &&option(const std::string &key, std::int64_t value) &&
    {
        return std::move(option(key, value));
    }

    std::uint32_t devices() const { return psched_plan_devices(get_checked()); }
    std::uint32_t microbatches() const { return psched_plan_microbatches(get_checked()); }
    std::uint32_t chunks() const { return psched_plan_chunks(get_checked()); }
    std::uint32_t chains() const { return psched_plan_chains(get_checked()); }
    std::uint32_t stages() const { return psched_plan_stages(get_checked()); }
    psched_placement placement() const { return psched_plan_placement(get_checked()); }
    /** UINT32_MAX when out of range or while the placement is auto. */
    std::uint32_t stage_device(std::uint32_t stage) const
    {
        return psched_plan_stage_device(get_checked(), stage);
    }
    /** UINT32_MAX when out of range. */
    std::uint32_t stage_chunk(std::uint32_t stage) const
    {
        return psched_plan_stage_chunk(get_checked(), stage);
    }
    /** UINT32_MAX when out of range. */
    std::uint32_t device_stage(std::uint32_t device, std::uint32_t chunk) const
    {
        return psched_plan_device_stage(get_checked(), device, chunk);
    }
    double comm() const { return psched_plan_comm(get_checked()); }
    /** INFINITY when unlimited. */
    double memory_limit() const { return psched_plan_memory_limit(get_checked()); }
    KindValues stage_cost(std::uint32_t stage) const
    {
        KindValues v{};
        detail::check(psched_plan_stage_cost(get_checked(), stage, &v.f, &v.b, &v.w));
        return v;
    }
    KindValues stage_mem(std::uint32_t stage) const
    {
        KindValues v{};
        detail::check(psched_plan_stage_mem(get_checked(), stage, &v.f, &v.b, &v.w));
        return v;
    }
    /** The option's value, or nullopt when it was never set. */
    std::optional<std::int64_t> option(const std::string &key) const
    {
        std::int64_t value = 0;
        psched_status st = psched_plan_get_option(get_checked(), key.c_str(), &value);
        if (st == PSCHED_ENOTFOUND)
            return std::nullopt;
        detail::check(st);
        return value;
    }

    /** The C handle (NULL after a move); still owned by this object. */
    psched_plan *get() noexcept { return handle_.get(); }
    const psched_plan *get() const noexcept { return handle_.get(); }
    /** Give up ownership; the caller destroys the result. */
    psched_plan *release() noexcept { return handle_.release(); }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    explicit Plan(psched_plan *plan) noexcept : handle_(plan) {}

    psched_plan *raw() { return detail::require(handle_.get(), "Plan"); }
    const psched_plan *get_checked() const { return detail::require(handle_.get(), "Plan"); }
    Plan &set(psched_status status)
    {
        detail::check(status);
        return *this;
    }

    std::unique_ptr<psched_plan, detail::PlanDeleter> handle_;
};

/** Owner of a psched_report: the simulated times and memory of a schedule. */
class Report {
public:
    Report(const Report &) = delete;
    Report &operator=(const Report &) = delete;
    Report(Report &&) noexcept = default;
    Report &operator=(Report &&) noexcept = default;
    ~Report() = default;

    double makespan() const { return psched_report_makespan(get_checked()); }
    /** Max over devices of last end − first start (the ZB papers' figure). */
    double span() const { return psched_report_span(get_checked()); }
    double bubble_ratio() const { return psched_report_bubble_ratio(get_checked()); }
    /** Peak memory in the papers' unit M (NaN when Σ mem_F is 0). */
    double peak_memory_M() const { return psched_report_peak_memory_M(get_checked()); }
    std::uint32_t devices() const { return psched_report_devices(get_checked()); }

    double busy(std::uint32_t device) const { return figures(device).busy; }
    double idle(std::uint32_t device) const { return figures(device).idle; }
    double peak_memory(std::uint32_t device) const { return figures(device).peak; }

    /** (start, end) of every op of @p device in list order. */
    std::vector<std::pair<double, double>> op_times(std::uint32_t device) const
    {
        /* An out-of-range device gets n = 0 and the library's own error. */
        std::size_t n = device < op_counts_.size() ? op_counts_[device] : 0;
        std::vector<double> start(n), end(n);
        detail::check(
            psched_report_op_times(get_checked(), device, 0, n, start.data(), end.data()));
        std::vector<std::pair<double, double>> times;
        times.reserve(n);
        for (std::size_t i = 0; i < n; i++)
            times.emplace_back(start[i], end[i]);
        return times;
    }

    psched_report *get() noexcept { return handle_.get(); }
    const psched_report *get() const noexcept { return handle_.get(); }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    friend class Schedule;

    /* The C report has no op counts; the schedule that produced it supplies
     * them so op_times() can size its result. */
    Report(psched_report *report, std::vector<std::size_t> op_counts) noexcept
        : handle_(report), op_counts_(std::move(op_counts))
    {
    }

    struct Figures {
        double busy, idle, peak;
    };
    Figures figures(std::uint32_t device) const
    {
        Figures f{};
        detail::check(psched_report_device(get_checked(), device, &f.busy, &f.idle, &f.peak));
        return f;
    }
    const psched_report *get_checked() const { return detail::require(handle_.get(), "Report"); }

    std::unique_ptr<psched_report, detail::ReportDeleter> handle_;
    std::vector<std::size_t> op_counts_;
};

/** Owner of a psched_schedule: p op lists and the resolved plan. */
class Schedule {
public:
    /** Run the generator @p name on @p plan (psched_generate()). */
    static Schedule generate(const Plan &plan, const std::string &name)
    {
        psched_schedule *s = nullptr;
        detail::check(psched_generate(detail::require(plan.get(), "Plan"), name.c_str(), &s));
        return Schedule(s);
    }

    /** Import a PyTorch compute_only CSV (psched_import_csv()); @p plan, when
     *  given, fixes the shape and costs. */
    static Schedule from_csv(std::string_view text, const Plan *plan = nullptr)
    {
        const psched_plan *p = plan ? detail::require(plan->get(), "Plan") : nullptr;
        psched_schedule *s = nullptr;
        detail::check(psched_import_csv(text.data(), text.size(), p, &s));
        return Schedule(s);
    }

    /** Take ownership of a schedule from the C API. */
    static Schedule adopt(psched_schedule *schedule) noexcept { return Schedule(schedule); }

    Schedule(const Schedule &) = delete;
    Schedule &operator=(const Schedule &) = delete;
    Schedule(Schedule &&) noexcept = default;
    Schedule &operator=(Schedule &&) noexcept = default;
    ~Schedule() = default;

    std::uint32_t devices() const { return psched_schedule_devices(get_checked()); }
    /** The generator's name, or "csv" for an imported schedule. */
    std::string name() const { return psched_schedule_name(get_checked()); }
    std::size_t op_count(std::uint32_t device) const
    {
        return psched_schedule_op_count(get_checked(), device);
    }
    std::size_t total_ops() const { return psched_schedule_total_ops(get_checked()); }
    /** A copy of the resolved plan (chunks, placement and chains filled in). */
    Plan plan() const
    {
        psched_plan *p = nullptr;
        detail::check(psched_plan_clone(psched_schedule_plan(get_checked()), &p));
        return Plan::adopt(p);
    }

    /** The ops of @p device in execution order, copied out. */
    std::vector<psched_op> ops(std::uint32_t device) const
    {
        const psched_schedule *s = get_checked();
        /* op_count is 0 for an out-of-range device, which the copy rejects. */
        std::vector<psched_op> out(psched_schedule_op_count(s, device));
        detail::check(psched_schedule_ops(s, device, 0, out.size(), out.data(), sizeof(psched_op)));
        return out;
    }

    /** Throws Error (PSCHED_EINVALID, PSCHED_EDEADLOCK) naming the first
     *  broken rule. */
    void validate() const { detail::check(psched_validate(get_checked())); }

    /** Lower bounds on makespan and span that every valid schedule of this
     *  schedule's plan obeys, counting its vocabulary passes when it holds
     *  them (psched_schedule_bound(), what `pipesched simulate` prints);
     *  @p flags 0, PSCHED_BOUND_IGNORE_MEMORY, PSCHED_BOUND_VOCAB_PASSES
     *  (count the passes whatever the ops). The gap of a simulation is
     *  `report.span() / bound().span - 1`. */
    psched_bound_info bound(std::uint32_t flags = 0) const
    {
        return detail::bound(psched_schedule_bound, get_checked(), flags);
    }

    /** What an exact generator (`optimal`) proved about this order
     *  (psched_schedule_solve_status()): its status, PSCHED_SOLVE_OPTIMAL or
     *  PSCHED_SOLVE_FEASIBLE, and the gap to its own lower bound; empty for
     *  a schedule whose generator recorded nothing (every heuristic,
     *  imported and lowered schedules). */
    std::optional<std::pair<psched_solve_status, double>> solve_status() const
    {
        psched_solve_status status = PSCHED_SOLVE_FEASIBLE;
        double gap = 0;
        psched_status st = psched_schedule_solve_status(get_checked(), &status, &gap);
        if (st == PSCHED_ENOTFOUND)
            return std::nullopt;
        detail::check(st);
        return std::make_pair(status, gap);
    }

    /** Simulate with the schedule's own costs, or those of @p costs. */
    Report simulate(const Plan *costs = nullptr) const
    {
        const psched_schedule *s = get_checked();
        const psched_plan *c = costs ? detail::require(costs->get(), "Plan") : nullptr;
        std::vector<std::size_t> counts(psched_schedule_devices(s));
        for (std::uint32_t d = 0; d < counts.size(); d++)
            counts[d] = psched_schedule_op_count(s, d);
        psched_report *r = nullptr;
        detail::check(psched_simulate(s, c, &r));
        return Report(r, std::move(counts));
    }

    /** XXH3-64 of plan shape and op lists; equal across ranks and platforms. */
    std::uint64_t hash() const
    {
        std::uint64_t h = 0;
        detail::check(psched_schedule_hash(get_checked(), &h));
        return h;
    }

    /** Insert the SEND/RECV ops a rendezvous runtime needs
     *  (psched_lower_comm()); @p costs orders them (NULL: own costs). */
    Schedule lower(const Plan *costs = nullptr) const
    {
        const psched_plan *c = costs ? detail::require(costs->get(), "Plan") : nullptr;
        psched_schedule *s = nullptr;
        detail::check(psched_lower_comm(get_checked(), c, &s));
        return Schedule(s);
    }

    /** The same in @p mode (ABI 1.1, psched_lower_comm_ex()):
     *  ::PSCHED_LOWER_ASYNC for runtimes whose sends and receives do not
     *  block (torch.distributed isend/irecv), with transfers overlapping
     *  compute; validate() and simulate() then use async semantics. */
    Schedule lower(psched_lower_mode mode, const Plan *costs = nullptr) const
    {
        const psched_plan *c = costs ? detail::require(costs->get(), "Plan") : nullptr;
        psched_lower_options o = PSCHED_LOWER_OPTIONS_INIT;
        o.mode = mode;
        psched_schedule *s = nullptr;
        detail::check(psched_lower_comm_ex(get_checked(), c, &o, &s));
        return Schedule(s);
    }

    /** The semantics its comm ops run with (psched_schedule_lower_mode()). */
    psched_lower_mode lower_mode() const { return psched_schedule_lower_mode(get_checked()); }

    /** Any format of psched_export(); @p report supplies times where the
     *  format shows them. */
    std::string render(psched_format format, const Report *report = nullptr,
                       std::uint32_t flags = 0) const
    {
        const psched_report *r = report ? detail::require(report->get(), "Report") : nullptr;
        char *text = nullptr;
        std::size_t length = 0;
        detail::check(psched_export(get_checked(), r, format, flags, &text, &length));
        std::unique_ptr<char, detail::FreeDeleter> owned(text);
        return std::string(owned.get(), length);
    }
    std::string to_csv() const { return render(PSCHED_FORMAT_CSV); }
    std::string to_csv_comms() const { return render(PSCHED_FORMAT_CSV_COMMS); }
    /** PyTorch's own compute_comms dialect (no batched-group cells). */
    std::string to_csv_comms_pytorch() const { return render(PSCHED_FORMAT_CSV_COMMS_PYTORCH); }
    std::string to_ascii(const Report *report = nullptr, bool color = false) const
    {
        return render(PSCHED_FORMAT_ASCII, report, color ? PSCHED_EXPORT_COLOR : 0u);
    }
    std::string to_json(const Report *report = nullptr) const
    {
        return render(PSCHED_FORMAT_JSON, report);
    }
    std::string to_chrome(const Report &report) const
    {
        return render(PSCHED_FORMAT_CHROME, &report);
    }
    std::string to_svg(const Report &report) const { return render(PSCHED_FORMAT_SVG, &report); }

    psched_schedule *get() noexcept { return handle_.get(); }
    const psched_schedule *get() const noexcept { return handle_.get(); }
    /** Give up ownership; the caller destroys the result. */
    psched_schedule *release() noexcept { return handle_.release(); }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    explicit Schedule(psched_schedule *schedule) noexcept : handle_(schedule) {}

    const psched_schedule *get_checked() const
    {
        return detail::require(handle_.get(), "Schedule");
    }

    std::unique_ptr<psched_schedule, detail::ScheduleDeleter> handle_;
};

/** Schedule::generate(plan, name). */
inline Schedule generate(const Plan &plan, const std::string &name)
{
    return Schedule::generate(plan, name);
}

/** Lower bounds on makespan and span for every valid schedule of @p plan,
 *  whose chunks and placement must be set (psched_bound(): throws Error
 *  PSCHED_EINVAL otherwise, PSCHED_EINFEASIBLE for a memory limit below one
 *  micro-batch's activation). @p flags 0 or PSCHED_BOUND_IGNORE_MEMORY. */
inline psched_bound_info bound(const Plan &plan, std::uint32_t flags = 0)
{
    return detail::bound(psched_bound, detail::require(plan.get(), "Plan"), flags);
}

/** Schedule::from_csv(text, plan). */
inline Schedule from_csv(std::string_view text, const Plan *plan = nullptr)
{
    return Schedule::from_csv(text, plan);
}

/** An integer option a generator declares (psched_generator_option()). */
struct GeneratorOption {
    std::string name;
    std::string description;
    std::int64_t min;
    std::int64_t max;
    std::int64_t default_value;   /**< meaningless when default_from_plan */
    bool default_from_plan;       /**< the default depends on the plan */
};

/** A registered generator's descriptor, copied. */
struct GeneratorInfo {
    std::string name;
    std::string description;
    std::string constraints;
    psched_placement placement;
    std::uint32_t default_chunks;
    std::uint32_t chains;
    std::vector<std::string> aliases;     /**< other names it is found by (PyTorch's) */
    std::vector<GeneratorOption> options; /**< the options it declares */
    /** an exact generator (`optimal`, psched_generator_is_exact()): it may
     *  take up to its time limit on a small plan and refuses large ones, so
     *  sweeps give it small limits or skip it */
    bool exact = false;
};

/** Name of an op kind from the library's one table (psched_op_kind_str());
 *  "?" for an unknown kind. */
inline std::string op_kind_name(psched_op_kind kind,
                                psched_naming naming = PSCHED_NAMING_PIPESCHED)
{
    const char *name = psched_op_kind_str(kind, naming);
    return name ? name : "?";
}

/** Name of a placement (psched_placement_str()); "?" for an unknown one. */
inline std::string placement_name(psched_placement placement)
{
    const char *name = psched_placement_str(placement);
    return name ? name : "?";
}

namespace detail {
inline void fill_aliases_and_options(GeneratorInfo &info)
{
    const char *alias = nullptr;
    for (std::size_t a = 0; psched_generator_alias(info.name.c_str(), a, &alias) == PSCHED_OK &&
                            alias;
         a++)
        info.aliases.emplace_back(alias);
    std::size_t n = 0;
    check(psched_generator_option_count(info.name.c_str(), &n));
    for (std::size_t i = 0; i < n; i++) {
        psched_option_info o{};
        o.version = PSCHED_OPTION_INFO_VERSION;
        check(psched_generator_option(info.name.c_str(), i, &o));
        info.options.push_back({o.name, o.description, o.min, o.max, o.default_value,
                                (o.flags & PSCHED_OPTION_DEFAULT_FROM_PLAN) != 0});
    }
}
} // namespace detail

/** Every registered generator, built-ins first. */
inline std::vector<GeneratorInfo> generators()
{
    std::vector<GeneratorInfo> out;
    std::size_t n = psched_generator_count();
    out.reserve(n);
    for (std::size_t i = 0; i < n; i++) {
        const psched_generator *g = psched_generator_at(i);
        if (!g) /* the table only grows, so this cannot happen; never dereference NULL */
            break;
        out.push_back({g->name, g->description ? g->description : "",
                       g->constraints ? g->constraints : "", g->placement, g->default_chunks,
                       g->chains, {}, {}, psched_generator_is_exact(g) != 0});
        detail::fill_aliases_and_options(out.back());
    }
    return out;
}

/** Non-owning view of the ::psched_builder a generator appends through,
 *  for generators written in C++ (the callbacks of a ::psched_generator).
 *  Every append that fails throws; the builder latches the first error, so
 *  a generator may also catch and return error().status(). */
class Builder {
public:
    explicit Builder(psched_builder *builder) : builder_(detail::require(builder, "Builder")) {}

    /** psched_builder_reserve(): room for @p count more ops on @p device. */
    Builder &reserve(std::uint32_t device, std::size_t count)
    {
        detail::check(psched_builder_reserve(builder_, device, count));
        return *this;
    }
    /** psched_builder_append(): one op at the end of @p device's list. */
    Builder &append(std::uint32_t device, psched_op_kind kind, std::uint32_t stage,
                    std::uint32_t microbatch, std::uint32_t flags = 0)
    {
        detail::check(psched_builder_append(builder_, device, kind, stage, microbatch, flags));
        return *this;
    }
    /** psched_builder_append_pair(): an overlapped F&B pair. */
    Builder &append_pair(std::uint32_t device, psched_op_kind kind1, std::uint32_t stage1,
                         std::uint32_t microbatch1, psched_op_kind kind2, std::uint32_t stage2,
                         std::uint32_t microbatch2)
    {
        detail::check(psched_builder_append_pair(builder_, device, kind1, stage1, microbatch1,
                                                 kind2, stage2, microbatch2));
        return *this;
    }
    /** Ops appended so far to @p device. */
    std::size_t count(std::uint32_t device) const { return psched_builder_count(builder_, device); }
    /** The plan being built for (owned by the library). */
    const psched_plan *plan() const noexcept { return psched_builder_plan(builder_); }
    psched_builder *get() const noexcept { return builder_; }

private:
    psched_builder *builder_;
};

/** A recompute variant of a layer group. */
struct RecomputeVariant {
    double act_bytes;
    double extra_time;
};

/** One layer group of a Model, copied. */
struct LayerGroup {
    std::string type;
    std::uint32_t count;
    double f, b, w;
    double act_bytes;
    double param_bytes;
    std::optional<RecomputeVariant> selective;
    std::optional<RecomputeVariant> full;
};

/** Owner of a psched_model: the layer profile the optimizer partitions. */
class Model {
public:
    Model()
    {
        psched_model *m = nullptr;
        detail::check(psched_model_create(&m));
        handle_.reset(m);
    }
    /** psched_model_load_csv(): a layer-profile CSV. */
    static Model from_csv(std::string_view text)
    {
        psched_model *m = nullptr;
        detail::check(psched_model_load_csv(text.data(), text.size(), &m));
        return Model(m);
    }
    /** psched_model_transformer(): the analytic transformer profile; set
     *  `config.version` or leave it 0 for this header's version. Start
     *  from PSCHED_TRANSFORMER_INIT for the documented defaults
     *  (FlashAttention and causal mask on); a zeroed struct turns both off. */
    static Model transformer(psched_transformer config)
    {
        if (config.version == 0)
            config.version = PSCHED_TRANSFORMER_VERSION;
        psched_model *m = nullptr;
        detail::check(psched_model_transformer(&config, &m));
        return Model(m);
    }

    Model(const Model &) = delete;
    Model &operator=(const Model &) = delete;
    Model(Model &&) noexcept = default;
    Model &operator=(Model &&) noexcept = default;
    ~Model() = default;

    /** psched_model_add_layers(): @p count identical layers at the end. */
    Model &add_layers(const std::string &type, std::uint32_t count, double f, double b, double w,
                      double act_bytes, double param_bytes)
    {
        detail::check(psched_model_add_layers(raw(), type.c_str(), count, f, b, w, act_bytes,
                                              param_bytes));
        return *this;
    }
    /** psched_model_set_recompute(): offer a variant for group @p group. */
    Model &recompute(std::uint32_t group, psched_recompute kind, double act_bytes,
                     double extra_time)
    {
        detail::check(psched_model_set_recompute(raw(), group, kind, act_bytes, extra_time));
        return *this;
    }
    std::uint32_t groups() const { return psched_model_groups(get_checked()); }
    std::uint32_t layers() const { return psched_model_layers(get_checked()); }
    /** Group @p index with its recompute variants. */
    LayerGroup group(std::uint32_t index) const
    {
        LayerGroup g{};
        const char *type = nullptr;
        detail::check(psched_model_group(get_checked(), index, &type, &g.count, &g.f, &g.b, &g.w,
                                         &g.act_bytes, &g.param_bytes));
        g.type = type;
        g.selective = variant(index, PSCHED_RECOMPUTE_SELECTIVE);
        g.full = variant(index, PSCHED_RECOMPUTE_FULL);
        return g;
    }

    const psched_model *get() const noexcept { return handle_.get(); }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    explicit Model(psched_model *m) noexcept : handle_(m) {}
    psched_model *raw() { return detail::require(handle_.get(), "Model"); }
    const psched_model *get_checked() const { return detail::require(handle_.get(), "Model"); }
    std::optional<RecomputeVariant> variant(std::uint32_t index, psched_recompute kind) const
    {
        RecomputeVariant v{};
        psched_status st =
            psched_model_group_recompute(get_checked(), index, kind, &v.act_bytes, &v.extra_time);
        if (st == PSCHED_ENOTFOUND)
            return std::nullopt;
        detail::check(st);
        return v;
    }

    std::unique_ptr<psched_model, detail::ModelDeleter> handle_;
};

/** One virtual stage of a partition. */
struct PartitionStage {
    std::uint32_t first;
    std::uint32_t count;
    double time;
    double memory;
};

/** One device of a partition. */
struct PartitionDevice {
    double params;
    double memory;
    double peak_memory;
};

/** Read-only view of a psched_partition_result's figures; shared by
 *  Partition (which owns its result) and SearchResult::partition() (whose
 *  result the search owns). */
class PartitionView {
public:
    explicit PartitionView(const psched_partition_result *r)
        : result_(detail::require(r, "Partition"))
    {
    }
    psched_solve_status status() const { return psched_partition_status(result_); }
    double gap() const { return psched_partition_gap(result_); }
    double objective() const { return psched_partition_objective(result_); }
    double solve_time() const { return psched_partition_solve_time(result_); }
    double min_memory() const { return psched_partition_min_memory(result_); }
    double makespan() const { return psched_partition_makespan(result_); }
    double bubble_ratio() const { return psched_partition_bubble_ratio(result_); }
    std::uint32_t stages() const { return psched_partition_stages(result_); }
    PartitionStage stage(std::uint32_t s) const
    {
        PartitionStage out{};
        detail::check(psched_partition_stage(result_, s, &out.first, &out.count, &out.time,
                                             &out.memory));
        return out;
    }
    PartitionDevice device(std::uint32_t d) const
    {
        PartitionDevice out{};
        detail::check(psched_partition_device(result_, d, &out.params, &out.memory,
                                              &out.peak_memory));
        return out;
    }
    psched_recompute layer_recompute(std::uint32_t layer) const
    {
        return psched_partition_layer_recompute(result_, layer);
    }
    /** A copy of the plan with the partition's per-stage costs (throws
     *  ::PSCHED_EINFEASIBLE when no partition was found). */
    Plan plan() const
    {
        const psched_plan *p = psched_partition_plan(result_);
        if (!p)
            throw Error(PSCHED_EINFEASIBLE, "the partition has no plan: none was found");
        psched_plan *copy = nullptr;
        detail::check(psched_plan_clone(p, &copy));
        return Plan::adopt(copy);
    }
    /** psched_partition_to_megatron(): Megatron-LM flags (layout and,
     *  where expressible, recompute options) with comment lines. @p map
     *  names layout letters of profile groups ("m=GROUP,..."; empty: the
     *  defaults by group name). */
    std::string to_megatron(const Model &model, const std::string &map = {}) const
    {
        char *text = nullptr;
        std::size_t length = 0;
        detail::check(psched_partition_to_megatron(result_, detail::require(model.get(), "Model"),
                                                   map.empty() ? nullptr : map.c_str(), &text,
                                                   &length));
        std::unique_ptr<char, detail::FreeDeleter> owned(text);
        return std::string(owned.get(), length);
    }
    /** psched_partition_to_torchtitan(): a TOML snippet for `[parallelism]`
     *  and `[activation_checkpoint]`. @p fqn is the module-name template
     *  ("E=NAME;t=NAME{i};L=NAME,NAME"; empty: torchtitan's Llama,
     *  #PSCHED_TORCHTITAN_LLAMA_FQN); @p map as for to_megatron(). */
    std::string to_torchtitan(const Model &model, const std::string &fqn = {},
                              const std::string &map = {}) const
    {
        char *text = nullptr;
        std::size_t length = 0;
        detail::check(psched_partition_to_torchtitan(
            result_, detail::require(model.get(), "Model"), map.empty() ? nullptr : map.c_str(),
            fqn.empty() ? nullptr : fqn.c_str(), &text, &length));
        std::unique_ptr<char, detail::FreeDeleter> owned(text);
        return std::string(owned.get(), length);
    }
    const psched_partition_result *get() const noexcept { return result_; }

private:
    const psched_partition_result *result_;
};

/** Megatron-LM's recompute options as it spells them (see
 *  psched_partition_from_layout()): granularity "" (none), "none",
 *  "selective" or "full"; with full, method "uniform" (num_layers 1) or
 *  "block" (the first num_layers transformer layers of every stage). */
struct MegatronRecompute {
    std::string granularity;
    std::string method;
    std::uint32_t num_layers = 0;
};

class Partition;
Partition evaluate_partition(const Model &, const Plan &, const std::string &,
                             const std::vector<std::uint32_t> &,
                             const std::vector<psched_recompute> &);
Partition from_layout(const Model &, const Plan &, const std::string &, const std::string &,
                      const MegatronRecompute &, const std::string &);

/** Owner of a psched_partition_result (psched_partition()). */
class Partition : public PartitionView {
public:
    Partition(const Partition &) = delete;
    Partition &operator=(const Partition &) = delete;
    Partition(Partition &&) noexcept = default;
    Partition &operator=(Partition &&) noexcept = default;
    ~Partition() = default;

private:
    friend Partition partition(const Model &, const Plan &, const std::string &,
                               const psched_partition_options *);
    friend Partition evaluate_partition(const Model &, const Plan &, const std::string &,
                                        const std::vector<std::uint32_t> &,
                                        const std::vector<psched_recompute> &);
    friend Partition from_layout(const Model &, const Plan &, const std::string &,
                                 const std::string &, const MegatronRecompute &,
                                 const std::string &);
    explicit Partition(psched_partition_result *r) : PartitionView(r), handle_(r) {}
    std::unique_ptr<psched_partition_result, detail::PartitionDeleter> handle_;
};

/** psched_partition(): split @p model over the stages of @p schedule on
 *  @p plan (options NULL: #PSCHED_PARTITION_OPTIONS_INIT). */
inline Partition partition(const Model &model, const Plan &plan, const std::string &schedule,
                           const psched_partition_options *options = nullptr)
{
    psched_partition_result *r = nullptr;
    detail::check(psched_partition(detail::require(model.get(), "Model"),
                                   detail::require(plan.get(), "Plan"), schedule.c_str(),
                                   options, &r));
    return Partition(r);
}

/** psched_partition_evaluate(): the figures of a partition the caller
 *  gives: per stage a layer count (p·v entries), per layer a recompute
 *  choice (empty: none). The status says whether it fits the plan's
 *  memory limit. */
inline Partition evaluate_partition(const Model &model, const Plan &plan,
                                    const std::string &schedule,
                                    const std::vector<std::uint32_t> &counts,
                                    const std::vector<psched_recompute> &recompute = {})
{
    const psched_model *m = detail::require(model.get(), "Model");
    if (!recompute.empty() && recompute.size() != psched_model_layers(m))
        throw Error(PSCHED_EINVAL, "recompute has " + std::to_string(recompute.size()) +
                                       " choices; the model has " +
                                       std::to_string(psched_model_layers(m)) + " layers");
    psched_partition_result *r = nullptr;
    detail::check(psched_partition_evaluate(
        m, detail::require(plan.get(), "Plan"), schedule.c_str(), counts.data(),
        static_cast<std::uint32_t>(counts.size()), recompute.empty() ? nullptr : recompute.data(),
        &r));
    return Partition(r);
}

/** psched_partition_from_layout(): read a Megatron-LM
 *  `--pipeline-model-parallel-layout` (and its recompute options) and
 *  evaluate it on @p model; v comes from the layout when the plan's is 0. */
inline Partition from_layout(const Model &model, const Plan &plan, const std::string &schedule,
                             const std::string &layout, const MegatronRecompute &recompute = {},
                             const std::string &map = {})
{
    psched_partition_result *r = nullptr;
    detail::check(psched_partition_from_layout(
        detail::require(model.get(), "Model"), detail::require(plan.get(), "Plan"),
        schedule.c_str(), layout.c_str(), map.empty() ? nullptr : map.c_str(),
        recompute.granularity.empty() ? nullptr : recompute.granularity.c_str(),
        recompute.method.empty() ? nullptr : recompute.method.c_str(), recompute.num_layers, &r));
    return Partition(r);
}

/** One ranked alternative of a plan search. */
struct SearchAlternative {
    std::string schedule;
    std::uint32_t chunks;
    psched_status error;
    std::string error_message;
    psched_solve_status status;
    bool fits;
    double makespan;
    double bubble_ratio;
    double peak_memory;
    double even_makespan;
    /** generator option vocab of a Vocabulary Parallelism candidate, 0 if plain */
    std::uint32_t vocab = 0;
};

/** Owner of a psched_search_result (psched_plan_search()). */
class SearchResult {
public:
    SearchResult(const SearchResult &) = delete;
    SearchResult &operator=(const SearchResult &) = delete;
    SearchResult(SearchResult &&) noexcept = default;
    SearchResult &operator=(SearchResult &&) noexcept = default;
    ~SearchResult() = default;

    std::size_t size() const { return psched_search_count(get_checked()); }
    double solve_time() const { return psched_search_solve_time(get_checked()); }
    /** Alternative @p i (ranked: fitting ones by makespan first). */
    SearchAlternative at(std::size_t i) const
    {
        const psched_search_result *r = get_checked();
        const char *name = psched_search_schedule(r, i);
        if (!name)
            throw Error(PSCHED_EINVAL, "alternative " + std::to_string(i) + " out of range (" +
                                           std::to_string(size()) + " alternatives)");
        return {name,
                psched_search_chunks(r, i),
                psched_search_error(r, i),
                psched_search_error_message(r, i),
                psched_search_status(r, i),
                psched_search_fits(r, i) != 0,
                psched_search_makespan(r, i),
                psched_search_bubble_ratio(r, i),
                psched_search_peak_memory(r, i),
                psched_search_even_makespan(r, i),
                psched_search_vocab(r, i)};
    }
    /** The partition of alternative @p i, owned by this result (nullopt
     *  when its partition failed). */
    std::optional<PartitionView> partition(std::size_t i) const
    {
        const psched_partition_result *p = psched_search_partition(get_checked(), i);
        if (!p)
            return std::nullopt;
        return PartitionView(p);
    }
    const psched_search_result *get() const noexcept { return handle_.get(); }

private:
    friend SearchResult plan_search(const Model &, const Plan &, const std::vector<std::string> &,
                                    const psched_search_options *);
    explicit SearchResult(psched_search_result *r) noexcept : handle_(r) {}
    const psched_search_result *get_checked() const
    {
        return detail::require(handle_.get(), "SearchResult");
    }
    std::unique_ptr<psched_search_result, detail::SearchDeleter> handle_;
};

/** psched_plan_search(): the fastest plan that fits, over @p schedules
 *  (empty: every registered generator). */
inline SearchResult plan_search(const Model &model, const Plan &plan,
                                const std::vector<std::string> &schedules = {},
                                const psched_search_options *options = nullptr)
{
    std::vector<const char *> names;
    names.reserve(schedules.size());
    for (const std::string &s : schedules)
        names.push_back(s.c_str());
    psched_search_result *r = nullptr;
    detail::check(psched_plan_search(detail::require(model.get(), "Model"),
                                     detail::require(plan.get(), "Plan"),
                                     names.empty() ? nullptr : names.data(), names.size(),
                                     options, &r));
    return SearchResult(r);
}

/** Load a plug-in shared object and register its generators. */
inline void load_plugin(const std::string &path)
{
    detail::check(psched_plugin_load(path.c_str()));
}

/* ---- cost model extensions (docs/simulator.md, "Cost model extensions") ----
 * Free functions on a Plan, so the class stays as it was; each throws
 * pipesched::Error as the Plan setters do and returns the plan for chaining. */

/** Time an overlapped F&B pair saves, every stage (0 <= s <= min(t_F, t_B)). */
inline Plan &set_overlap_saving(Plan &plan, double saving)
{
    detail::check(psched_plan_set_overlap_saving(detail::require(plan.get(), "Plan"), saving));
    return plan;
}
/** Time an overlapped F&B pair of one stage saves. */
inline Plan &set_stage_overlap_saving(Plan &plan, std::uint32_t stage, double saving)
{
    detail::check(
        psched_plan_set_stage_overlap_saving(detail::require(plan.get(), "Plan"), stage, saving));
    return plan;
}
/** Overlap saving of a stage (NAN when out of range). */
inline double overlap_saving(const Plan &plan, std::uint32_t stage)
{
    return psched_plan_stage_overlap_saving(detail::require(plan.get(), "Plan"), stage);
}
/** One weight per micro-batch (empty: all 1). */
inline Plan &set_microbatch_weights(Plan &plan, const std::vector<double> &weights)
{
    detail::check(psched_plan_set_microbatch_weights(detail::require(plan.get(), "Plan"),
                                                     weights.empty() ? nullptr : weights.data(),
                                                     static_cast<std::uint32_t>(weights.size())));
    return plan;
}
/** Weight of a micro-batch (NAN when out of range). */
inline double microbatch_weight(const Plan &plan, std::uint32_t microbatch)
{
    return psched_plan_microbatch_weight(detail::require(plan.get(), "Plan"), microbatch);
}
/** Bytes every stage sends forward (activations) and backward (gradients). */
inline Plan &set_comm_bytes(Plan &plan, double forward, double backward)
{
    detail::check(
        psched_plan_set_comm_bytes(detail::require(plan.get(), "Plan"), forward, backward));
    return plan;
}
/** Bytes one stage sends forward and backward. */
inline Plan &set_stage_comm_bytes(Plan &plan, std::uint32_t stage, double forward, double backward)
{
    detail::check(psched_plan_set_stage_comm_bytes(detail::require(plan.get(), "Plan"), stage,
                                                   forward, backward));
    return plan;
}
/** Devices per node (0: one node) and the intra-/inter-node links. */
inline Plan &set_topology(Plan &plan, std::uint32_t devices_per_node, double intra_bandwidth,
                      double intra_latency, double inter_bandwidth, double inter_latency)
{
    detail::check(psched_plan_set_topology(detail::require(plan.get(), "Plan"), devices_per_node,
                                           intra_bandwidth, intra_latency, inter_bandwidth,
                                           inter_latency));
    return plan;
}

/** Memory units a device copies to or from the host per time unit. */
inline Plan &set_pcie_bandwidth(Plan &plan, double bandwidth)
{
    detail::check(psched_plan_set_pcie_bandwidth(detail::require(plan.get(), "Plan"), bandwidth));
    return plan;
}
/** Times of one vocabulary S pass and one T pass on one device
 *  (psched_plan_set_vocab_cost()). */
inline Plan &set_vocab_cost(Plan &plan, double s, double t)
{
    detail::check(psched_plan_set_vocab_cost(detail::require(plan.get(), "Plan"), s, t));
    return plan;
}
/** Memory changes of the S and T passes (psched_plan_set_vocab_mem()). */
inline Plan &set_vocab_mem(Plan &plan, double s, double t)
{
    detail::check(psched_plan_set_vocab_mem(detail::require(plan.get(), "Plan"), s, t));
    return plan;
}
/** Bytes of collective @p index of each micro-batch
 *  (psched_plan_set_collective_bytes()). */
inline Plan &set_collective_bytes(Plan &plan, std::uint32_t index, double bytes)
{
    detail::check(
        psched_plan_set_collective_bytes(detail::require(plan.get(), "Plan"), index, bytes));
    return plan;
}
/** PipeOffload (psched_offload()): a copy of @p schedule with OFFLOAD/RELOAD
 *  ops; @p budget is used by ::PSCHED_OFFLOAD_BUDGET only. */
inline Schedule offload(const Schedule &schedule, psched_offload_policy policy,
                        double budget = 0, const Plan *costs = nullptr)
{
    const psched_plan *c = costs ? detail::require(costs->get(), "Plan") : nullptr;
    psched_schedule *out = nullptr;
    detail::check(psched_offload(detail::require(schedule.get(), "Schedule"), c, policy, budget,
                                 &out));
    return Schedule::adopt(out);
}

} // namespace pipesched

#endif /* PIPESCHED_HPP */
