"""pipesched: pipeline-parallel training schedules, from Python.

A ctypes binding (standard library only) of libpipesched's public C API:
generate a schedule, simulate it, get PyTorch action lists, draw it::

    import pipesched
    s = pipesched.generate("zb-h1", pipesched.Plan(devices=4, microbatches=8))
    print(s.simulate().bubble_ratio)          # 1 - busy / (p * makespan)
    actions = s.to_pytorch_actions()          # actions[rank] == ["0F0", "0F1", ...]
    open("zb-h1.svg", "w").write(s.to_svg())  # timeline, one lane per device

The library is found through $PIPESCHED_LIBRARY, else a libpipesched.so.1
next to this package, else ctypes.util.find_library("pipesched").

Names: our B is the backward for inputs (PyTorch "I"), BW the full backward
(PyTorch "B"), W the backward for weights. Failures raise pipesched.Error
subclasses carrying .status (the psched_status code) and .message (the
library's text). Plan, Schedule and Report own C handles: close() frees one
at once, and each is a context manager; the garbage collector frees the rest.
"""
import collections
import ctypes
import functools
import math
import operator
import os

from . import _lib
from ._errors import (AlreadyExists, Deadlock, Error, Infeasible, InvalidArgument,
                      InvalidSchedule, IOFailure, NotFound, OutOfMemory, ParseError,
                      PluginError, SolverError, Unsupported, check as _check,
                      error as _error)
from ._handle import _Handle
from ._lib import LibraryNotFound

__all__ = [
    "Plan", "Schedule", "Report", "Op", "Generator", "GeneratorInfo", "GeneratorOption",
    "generate", "from_csv", "schedules", "schedule_info", "load_plugin", "version",
    "library_path", "OVERLAP_NEXT", "BATCH_NEXT",
    "Error", "InvalidArgument", "OutOfMemory", "NotFound", "Infeasible",
    "InvalidSchedule", "Deadlock", "ParseError", "IOFailure", "PluginError",
    "Unsupported", "SolverError", "AlreadyExists", "LibraryNotFound",
]

OVERLAP_NEXT = _lib.OP_OVERLAP_NEXT
BATCH_NEXT = _lib.OP_BATCH_NEXT

Op = collections.namedtuple("Op", "kind stage microbatch chunk overlapped")
Op.__doc__ = """One op of a device's list.

kind: "F", "B" (backward for inputs), "W", "BW" (full backward), or after
lowering "SEND_F", "RECV_F", "SEND_B", "RECV_B"; stage: virtual stage;
microbatch: numbered from 0 within its chain; chunk: chunk of the stage on
its device; overlapped: runs overlapped with the next op (DualPipe F&B)."""

Generator = collections.namedtuple("Generator", "name description constraints")
GeneratorInfo = collections.namedtuple(
    "GeneratorInfo",
    "name description constraints placement default_chunks chains aliases options")
GeneratorInfo.__doc__ = """A generator's descriptor: aliases is a tuple of the other
names it answers to (PyTorch's class names), options a tuple of
GeneratorOption, both read from the library (psched_generator_alias,
psched_generator_option)."""
GeneratorOption = collections.namedtuple(
    "GeneratorOption", "name description min max default")
GeneratorOption.__doc__ = """An integer option a generator declares; default is
None when it depends on the plan (the description says how)."""



@functools.lru_cache(maxsize=None)
def _kinds():
    """Op-kind names by kind value, from the library's one table
    (psched_op_kind_str), read once."""
    lib, names = _lib.load(), []
    while True:
        name = lib.psched_op_kind_str(len(names), _lib.NAMING_PIPESCHED)
        if name is None:
            return tuple(names)
        names.append(name.decode())


@functools.lru_cache(maxsize=None)
def _placement_names():
    """{placement value: name}, from psched_placement_str, read once."""
    lib, names = _lib.load(), {}
    while True:
        name = lib.psched_placement_str(len(names))
        if name is None:
            return names
        names[len(names)] = name.decode()


def _kind_name(kind):
    names = _kinds()
    return names[kind] if kind < len(names) else str(kind)


def _placement_name(value):
    return _placement_names().get(value, str(value))
_U32_MAX = 0xFFFFFFFF


def _invalid(message):
    return _error(_lib.EINVAL, message)


def _u32(name, value):
    """An integer argument for a uint32_t parameter; ctypes would wrap -1."""
    try:
        v = operator.index(value)
    except TypeError:
        raise _invalid(f"{name} ({value!r}) must be an integer") from None
    if not 0 <= v <= _U32_MAX:
        raise _invalid(f"{name} ({v}) must be between 0 and {_U32_MAX}")
    return v


def _triple(name, value):
    try:
        f, b, w = (float(x) for x in value)
    except (TypeError, ValueError):
        raise _invalid(f"{name} ({value!r}) must be three numbers (F, B, W)") from None
    return f, b, w


def _text(raw):
    return raw.decode("utf-8", "replace") if raw is not None else None


class Plan(_Handle):
    """Everything a generator and the simulator need.

    devices p, microbatches m (total over chains), chunks v (0: the
    generator's default; inferred from stage_costs or a custom placement when
    those give the stage count), cost (t_F, t_B, t_W of every stage), comm
    (latency of a cross-device dependency), mem (memory deltas of F, B, W),
    mem_limit (per device, None = unlimited), placement ("loop", "vshape",
    None = the generator's, or a list giving each stage's device),
    group_size (interleaved's micro-batch group), stage_costs / stage_mem
    (one (f, b, w) per stage), chains (1, or 2 for DualPipe), options (other
    named integer generator options).
    """
    _destroy_name = "psched_plan_destroy"
    _what = "plan"

    def __init__(self, devices=4, microbatches=8, chunks=0, cost=(1, 1, 1), comm=0,
                 mem=(1, 0, -1), mem_limit=None, placement=None, group_size=None,
                 stage_costs=None, chains=None, stage_mem=None, options=None):
        lib = _lib.load()
        out = ctypes.c_void_p()
        _check(lib.psched_plan_create(ctypes.byref(out)))
        super().__init__(out)
        try:
            self._configure(lib, devices, microbatches, chunks, cost, comm, mem, mem_limit,
                            placement, group_size, stage_costs, chains, stage_mem, options)
        except BaseException:
            self.close()
            raise

    @classmethod
    def _adopt(cls, ptr):
        plan = cls.__new__(cls)
        _Handle.__init__(plan, ptr)
        return plan

    def _configure(self, lib, devices, microbatches, chunks, cost, comm, mem, mem_limit,
                   placement, group_size, stage_costs, chains, stage_mem, options):
        h = self.handle
        p = _u32("devices", devices)
        _check(lib.psched_plan_set_devices(h, p))
        _check(lib.psched_plan_set_microbatches(h, _u32("microbatches", microbatches)))
        stage_map = None
        if placement is not None and not isinstance(placement, str):
            stage_map = [_u32("placement device", d) for d in placement]
        chunks = _u32("chunks", chunks)
        if chunks == 0:
            chunks = self._implied_chunks(p, stage_costs, stage_mem, stage_map)
        _check(lib.psched_plan_set_chunks(h, chunks))
        if chains is not None:
            _check(lib.psched_plan_set_chains(h, _u32("chains", chains)))
        self._set_placement(lib, placement, stage_map)
        _check(lib.psched_plan_set_cost(h, *_triple("cost", cost)))
        _check(lib.psched_plan_set_mem(h, *_triple("mem", mem)))
        for stage, c in enumerate(stage_costs or ()):
            _check(lib.psched_plan_set_stage_cost(h, stage, *_triple(f"stage_costs[{stage}]", c)))
        for stage, c in enumerate(stage_mem or ()):
            _check(lib.psched_plan_set_stage_mem(h, stage, *_triple(f"stage_mem[{stage}]", c)))
        _check(lib.psched_plan_set_comm(h, float(comm)))
        if mem_limit is not None:
            _check(lib.psched_plan_set_memory_limit(h, float(mem_limit)))
        opts = dict(options or {})
        if group_size is not None:
            opts["group-size"] = group_size
        for key, value in opts.items():
            _check(lib.psched_plan_set_option(h, str(key).encode(), operator.index(value)))

    @staticmethod
    def _implied_chunks(p, *per_stage):
        """v given by the first per-stage list, when v was left open."""
        for values in per_stage:
            if values:
                n = len(values)
                if n % p:
                    raise _invalid(f"{n} per-stage entries are not a multiple of "
                                   f"devices ({p}); set chunks explicitly")
                return n // p
        return 0

    def _set_placement(self, lib, placement, stage_map):
        h = self.handle
        if stage_map is not None:
            _check(lib.psched_plan_set_placement(h, _lib.PLACEMENT_CUSTOM))
            for stage, device in enumerate(stage_map):
                _check(lib.psched_plan_set_stage_device(h, stage, device))
        elif placement is not None:
            kind = {n: v for v, n in _placement_names().items()}.get(placement)
            if kind is None or kind == _lib.PLACEMENT_CUSTOM:
                raise _invalid(f"placement ({placement!r}) must be 'loop', 'vshape', None "
                               "or a list of each stage's device")
            _check(lib.psched_plan_set_placement(h, kind))

    def copy(self):
        """An independent deep copy."""
        out = ctypes.c_void_p()
        _check(_lib.load().psched_plan_clone(self._ptr(), ctypes.byref(out)))
        return Plan._adopt(out)

    @property
    def devices(self):
        return _lib.load().psched_plan_devices(self._ptr())

    @property
    def microbatches(self):
        return _lib.load().psched_plan_microbatches(self._ptr())

    @property
    def chunks(self):
        return _lib.load().psched_plan_chunks(self._ptr())

    @property
    def chains(self):
        return _lib.load().psched_plan_chains(self._ptr())

    @property
    def stages(self):
        return _lib.load().psched_plan_stages(self._ptr())

    @property
    def placement(self):
        """"auto", "loop", "vshape" or "custom"."""
        kind = _lib.load().psched_plan_placement(self._ptr())
        return _placement_name(kind)

    @property
    def comm(self):
        return _lib.load().psched_plan_comm(self._ptr())

    @property
    def mem_limit(self):
        """Per-device memory limit, None when unlimited."""
        limit = _lib.load().psched_plan_memory_limit(self._ptr())
        return None if math.isinf(limit) else limit

    def _stage_triple(self, fn, stage):
        f, b, w = ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
        _check(fn(self._ptr(), _u32("stage", stage), ctypes.byref(f), ctypes.byref(b),
                  ctypes.byref(w)))
        return (f.value, b.value, w.value)

    def stage_cost(self, stage):
        """(t_F, t_B, t_W) of a stage."""
        return self._stage_triple(_lib.load().psched_plan_stage_cost, stage)

    def stage_mem(self, stage):
        """Memory deltas (F, B, W) of a stage."""
        return self._stage_triple(_lib.load().psched_plan_stage_mem, stage)

    def stage_device(self, stage):
        """Device of a stage, None while the placement is left to the generator."""
        d = _lib.load().psched_plan_stage_device(self._ptr(), _u32("stage", stage))
        return None if d == _U32_MAX else d

    def stage_chunk(self, stage):
        c = _lib.load().psched_plan_stage_chunk(self._ptr(), _u32("stage", stage))
        return None if c == _U32_MAX else c

    def option(self, key):
        """A named generator option's value, None when unset."""
        value = ctypes.c_int64()
        status = _lib.load().psched_plan_get_option(self._ptr(), str(key).encode(),
                                                     ctypes.byref(value))
        if status == _lib.ENOTFOUND:
            return None
        _check(status)
        return value.value

    def __repr__(self):
        if self.closed:
            return "<pipesched.Plan closed>"
        return (f"<pipesched.Plan devices={self.devices} microbatches={self.microbatches} "
                f"chunks={self.chunks} placement={self.placement}>")


class Report(_Handle):
    """A simulation of a schedule (Schedule.simulate()).

    makespan (latest op end), span (max over devices of last end − first
    start: the zero-bubble papers' figure), bubble_ratio (1 − Σ busy /
    (p · makespan)), peak_memory_M (max peak / Σ mem_F, NaN when that sum is
    0), and per device: busy, idle, peak_memory lists. op_times(device) needs
    the report open; the figures stay readable after close().
    """
    _destroy_name = "psched_report_destroy"
    _what = "report"

    def __init__(self, ptr, op_counts):
        super().__init__(ptr)
        lib = _lib.load()
        h = self.handle
        self._op_counts = list(op_counts)
        self.devices = lib.psched_report_devices(h)
        self.makespan = lib.psched_report_makespan(h)
        self.span = lib.psched_report_span(h)
        self.bubble_ratio = lib.psched_report_bubble_ratio(h)
        self.peak_memory_M = lib.psched_report_peak_memory_M(h)
        self.busy, self.idle, self.peak_memory = [], [], []
        for d in range(self.devices):
            busy, idle, peak = ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
            _check(lib.psched_report_device(h, d, ctypes.byref(busy), ctypes.byref(idle),
                                            ctypes.byref(peak)))
            self.busy.append(busy.value)
            self.idle.append(idle.value)
            self.peak_memory.append(peak.value)

    def op_times(self, device):
        """[(start, end)] of every op of `device`, in list order; both ops of
        an overlapped pair get the pair's times."""
        device = _u32("device", device)
        n = self._op_counts[device] if device < len(self._op_counts) else 0
        start, end = (ctypes.c_double * n)(), (ctypes.c_double * n)()
        _check(_lib.load().psched_report_op_times(self._ptr(), device, 0, n, start, end))
        return list(zip(start, end))

    def __repr__(self):
        return (f"<pipesched.Report makespan={self.makespan:g} span={self.span:g} "
                f"bubble_ratio={self.bubble_ratio:.4f} peak_memory={self.peak_memory}>")


class Schedule(_Handle):
    """p ordered op lists, one per device, with the resolved plan.

    Made by generate(), from_csv() or Schedule.lower(); close() (or a with
    block) frees it.
    """
    _destroy_name = "psched_schedule_destroy"
    _what = "schedule"

    def _plan_ptr(self):
        return _lib.load().psched_schedule_plan(self._ptr())

    @property
    def devices(self):
        return _lib.load().psched_schedule_devices(self._ptr())

    @property
    def name(self):
        """Generator name, or "csv" for an imported schedule."""
        return _text(_lib.load().psched_schedule_name(self._ptr()))

    @property
    def microbatches(self):
        return _lib.load().psched_plan_microbatches(self._plan_ptr())

    @property
    def chunks(self):
        return _lib.load().psched_plan_chunks(self._plan_ptr())

    @property
    def stages(self):
        return _lib.load().psched_plan_stages(self._plan_ptr())

    @property
    def plan(self):
        """A copy of the resolved plan (a new Plan the caller owns)."""
        out = ctypes.c_void_p()
        _check(_lib.load().psched_plan_clone(self._plan_ptr(), ctypes.byref(out)))
        return Plan._adopt(out)

    @property
    def total_ops(self):
        return _lib.load().psched_schedule_total_ops(self._ptr())

    @property
    def hash(self):
        """XXH3-64 of plan shape and op lists: equal across ranks and platforms."""
        out = ctypes.c_uint64()
        _check(_lib.load().psched_schedule_hash(self._ptr(), ctypes.byref(out)))
        return out.value

    def _raw_ops(self, device):
        lib = _lib.load()
        device = _u32("device", device)
        n = lib.psched_schedule_op_count(self._ptr(), device)
        ops = (_lib.psched_op * n)()
        _check(lib.psched_schedule_ops(self._ptr(), device, 0, n, ops,
                                       ctypes.sizeof(_lib.psched_op)))
        return ops

    def ops(self, device):
        """The ops of `device` in execution order, as Op tuples."""
        return [Op(_kind_name(o.kind), o.stage,
                   o.microbatch, o.chunk, bool(o.flags & OVERLAP_NEXT))
                for o in self._raw_ops(device)]

    def op_flags(self, device):
        """Raw flags of `device`'s ops (OVERLAP_NEXT, BATCH_NEXT bits)."""
        return [o.flags for o in self._raw_ops(device)]

    def validate(self):
        """Check the dependency rules; raise InvalidSchedule or Deadlock naming
        the first violated rule, device, position and op."""
        _check(_lib.load().psched_validate(self._ptr()))

    def simulate(self, costs=None):
        """Simulate in order on every device → Report. `costs`: a Plan whose
        per-stage costs and memory deltas replace the schedule's own."""
        lib = _lib.load()
        out = ctypes.c_void_p()
        _check(lib.psched_simulate(self._ptr(), costs._ptr() if costs is not None else None,
                                   ctypes.byref(out)))
        counts = [lib.psched_schedule_op_count(self.handle, d) for d in range(self.devices)]
        return Report(out, counts)

    def lower(self, plan=None):
        """Insert SEND/RECV ops for a runtime with rendezvous point-to-point
        calls (psched_lower_comm) → a new Schedule."""
        lib = _lib.load()
        if not hasattr(lib, "psched_lower_comm"):
            raise _error(_lib.EUNSUPPORTED, f"{library_path()} has no psched_lower_comm")
        out = ctypes.c_void_p()
        _check(lib.psched_lower_comm(self._ptr(), plan._ptr() if plan is not None else None,
                                     ctypes.byref(out)))
        return Schedule(out)

    def _export(self, fmt, report=None, flags=0):
        lib = _lib.load()
        text, length = ctypes.c_void_p(), ctypes.c_size_t()
        _check(lib.psched_export(self._ptr(), report._ptr() if report is not None else None,
                                 fmt, flags, ctypes.byref(text), ctypes.byref(length)))
        try:
            return ctypes.string_at(text, length.value).decode("utf-8")
        finally:
            lib.psched_free(text)

    def _export_timed(self, fmt, report):
        if report is not None:
            return self._export(fmt, report)
        with self.simulate() as own:
            return self._export(fmt, own)

    def to_csv(self):
        """PyTorch compute_only CSV (one row per device, `_load_csv` format)."""
        return self._export(_lib.FORMAT_CSV)

    def to_csv_comms(self):
        """PyTorch compute_comms CSV (for a lowered schedule)."""
        return self._export(_lib.FORMAT_CSV_COMMS)

    def to_pytorch_actions(self):
        """One list per rank of torch.distributed.pipelining action strings,
        e.g. "0F0", "1I3" (our B), "1B3" (our BW), "(0F7;7B3)OVERLAP_F_B"."""
        comm = any(o.kind >= _kinds().index("SEND_F") for d in range(self.devices)
                   for o in self._raw_ops(d))
        rows = (self.to_csv_comms() if comm else self.to_csv()).split("\n")
        return [[cell for cell in rows[d].split(",") if cell] if d < len(rows) else []
                for d in range(self.devices)]

    def to_json(self, report=None):
        """JSON: format_version, plan, op lists, and times when `report` is given."""
        return self._export(_lib.FORMAT_JSON, report)

    def to_ascii(self, report=None, color=False):
        """Terminal grid, ops at their simulated start (ANSI colours if `color`)."""
        return self._export(_lib.FORMAT_ASCII, report, _lib.EXPORT_COLOR if color else 0)

    def to_chrome(self, report=None):
        """Chrome / Perfetto trace (JSON) of `report`, or of a fresh simulation."""
        return self._export_timed(_lib.FORMAT_CHROME, report)

    def to_svg(self, report=None):
        """SVG timeline of `report`, or of a fresh simulation."""
        return self._export_timed(_lib.FORMAT_SVG, report)

    def __repr__(self):
        if self.closed:
            return "<pipesched.Schedule closed>"
        return (f"<pipesched.Schedule {self.name} devices={self.devices} "
                f"ops={self.total_ops}>")


def generate(name, plan=None, **plan_args):
    """Generate the schedule `name` (see schedules()) for `plan`; without a
    plan, one is made from the keyword arguments (Plan's parameters)."""
    if plan is not None and plan_args:
        raise TypeError("generate() takes a plan or Plan keyword arguments, not both")
    own = Plan(**plan_args) if plan is None else None
    try:
        chosen = own if plan is None else plan
        out = ctypes.c_void_p()
        _check(_lib.load().psched_generate(chosen._ptr(), str(name).encode(),
                                           ctypes.byref(out)))
        return Schedule(out)
    finally:
        if own is not None:
            own.close()


def from_csv(text, plan=None):
    """Import a PyTorch compute_only CSV (str or bytes). With `plan`, its
    shape and costs are used and checked; otherwise they are inferred."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    out = ctypes.c_void_p()
    _check(_lib.load().psched_import_csv(data, len(data),
                                         plan._ptr() if plan is not None else None,
                                         ctypes.byref(out)))
    return Schedule(out)


def _aliases(name):
    lib, out, alias = _lib.load(), [], ctypes.c_char_p()
    while True:
        _check(lib.psched_generator_alias(name, len(out), ctypes.byref(alias)))
        if alias.value is None:
            return tuple(out)
        out.append(alias.value.decode())


def _options(name):
    lib, count = _lib.load(), ctypes.c_size_t()
    _check(lib.psched_generator_option_count(name, ctypes.byref(count)))
    out = []
    for i in range(count.value):
        info = _lib.psched_option_info(version=_lib.OPTION_INFO_VERSION)
        _check(lib.psched_generator_option(name, i, ctypes.byref(info)))
        default = (None if info.flags & _lib.OPTION_DEFAULT_FROM_PLAN
                   else info.default_value)
        out.append(GeneratorOption(_text(info.name), _text(info.description), info.min,
                                   info.max, default))
    return tuple(out)


def _info(g):
    return GeneratorInfo(_text(g.name), _text(g.description), _text(g.constraints),
                         _placement_name(g.placement), g.default_chunks, g.chains,
                         _aliases(g.name), _options(g.name))


def schedules():
    """[(name, description, constraints)] of every registered generator,
    built-ins first."""
    lib = _lib.load()
    result = []
    for i in range(lib.psched_generator_count()):
        g = lib.psched_generator_at(i)
        if g:
            info = _info(g.contents)
            result.append(Generator(info.name, info.description, info.constraints))
    return result


def schedule_info(name):
    """GeneratorInfo of one generator: also its placement, default chunks
    and chains. Raises NotFound listing the known names."""
    g = ctypes.POINTER(_lib.psched_generator)()
    _check(_lib.load().psched_generator_find(str(name).encode(), ctypes.byref(g)))
    return _info(g.contents)


def load_plugin(path):
    """Load a generator plug-in (shared object exporting psched_plugin_init);
    it stays loaded for the life of the process."""
    _check(_lib.load().psched_plugin_load(os.fsencode(path)))


def version():
    """Library version "MAJOR.MINOR.PATCH"."""
    return _text(_lib.load().psched_version())


def library_path():
    """The path or name the library was loaded from."""
    return _lib.loaded_path()


# The optimizer (Model, partition, plan_search) builds on Plan, so it is
# imported once everything above exists.
from ._optimizer import (Alternative, DeviceMemory, LayerGroup, Model,  # noqa: E402
                         Partition, SearchResult, StagePartition, partition, plan_search)

__all__ += ["Model", "LayerGroup", "Partition", "StagePartition", "DeviceMemory",
            "Alternative", "SearchResult", "partition", "plan_search"]
