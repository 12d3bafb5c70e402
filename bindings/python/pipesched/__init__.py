"""pipesched: pipeline-parallel training schedules, from Python.

A ctypes binding (standard library only) of libpipesched's public C API:
generate a schedule, simulate it, get PyTorch action lists, draw it::

    import pipesched
    s = pipesched.generate("zb-h1", pipesched.Plan(devices=4, microbatches=8))
    print(s.simulate().bubble_ratio)          # 1 - busy / (p * makespan)
    actions = s.to_pytorch_actions()          # actions[rank] == ["0F0", "0F1", ...]
    open("zb-h1.svg", "w").write(s.to_svg())  # timeline, one lane per device

The library is found through, in order: $PIPESCHED_LIBRARY, the copy inside
this package (pip install), the library of the same prefix (meson install),
the system loader (see pipesched._lib).

Names: our B is the backward for inputs (PyTorch "I"), BW the full backward
(PyTorch "B"), W the backward for weights. Failures raise pipesched.Error
subclasses carrying .status (the psched_status code) and .message (the
library's text); a wrong argument type raises TypeError and an integer out
of its C range InvalidArgument (a ValueError) naming the parameter. Plan,
Schedule, Report and Model own C handles: close() frees one at once (safe
while other threads use it: they finish first), and each is a context
manager; the garbage collector frees the rest.
"""
from __future__ import annotations

import ctypes as _ctypes
import math as _math
import os as _os
import threading as _threading
import typing as _t

from . import _lib
from ._errors import (AlreadyExists, Deadlock, Error, Infeasible, InvalidArgument,
                      InvalidSchedule, IOFailure, NotFound, OutOfMemory, ParseError,
                      PluginError, SolverError, Unsupported, check as _check,
                      error as _error)
from ._handle import (INTERNAL as _INTERNAL, U32_MAX as _U32_MAX, _Handle,
                      internal_only as _internal_only, invalid as _invalid,
                      of_type as _of_type, real as _real, text as _text_arg,
                      triple as _triple, u32 as _u32, i64 as _i64, using as _using)
from ._lib import LibraryNotFound

__all__ = [
    "Plan", "Schedule", "Report", "Op", "Generator", "GeneratorInfo", "GeneratorOption",
    "generate", "from_csv", "schedules", "schedule_info", "load_plugin", "version",
    "library_path", "OVERLAP_NEXT", "BATCH_NEXT", "LOWER_MODES",
    "Error", "InvalidArgument", "OutOfMemory", "NotFound", "Infeasible",
    "InvalidSchedule", "Deadlock", "ParseError", "IOFailure", "PluginError",
    "Unsupported", "SolverError", "AlreadyExists", "LibraryNotFound",
]

OVERLAP_NEXT: int = _lib.OP_OVERLAP_NEXT
BATCH_NEXT: int = _lib.OP_BATCH_NEXT
#: Schedule.lower() modes, indexed by psched_lower_mode.
LOWER_MODES: _t.Tuple[str, ...] = ("rendezvous", "async")


class Op(_t.NamedTuple):
    """One op of a device's list.

    kind: "F", "B" (backward for inputs), "W", "BW" (full backward), or after
    lowering "SEND_F", "RECV_F", "SEND_B", "RECV_B"; stage: virtual stage;
    microbatch: numbered from 0 within its chain; chunk: chunk of the stage on
    its device; overlapped: runs overlapped with the next op (DualPipe F&B)."""
    kind: str
    stage: int
    microbatch: int
    chunk: int
    overlapped: bool


class Generator(_t.NamedTuple):
    """A registered generator: name, description, constraints."""
    name: str
    description: str
    constraints: str


class GeneratorOption(_t.NamedTuple):
    """An integer option a generator declares (psched_generator_option);
    default is None when it depends on the plan (the description says how)."""
    name: str
    description: str
    min: int
    max: int
    default: _t.Optional[int]


class GeneratorInfo(_t.NamedTuple):
    """A generator's descriptor: also its placement ("loop", "vshape",
    "custom" or "auto"), default chunks and chains, the other names it
    answers to (aliases: PyTorch's class names) and the options it declares,
    all read from the library."""
    name: str
    description: str
    constraints: str
    placement: str
    default_chunks: int
    chains: int
    aliases: _t.Tuple[str, ...] = ()
    options: _t.Tuple[GeneratorOption, ...] = ()


_NAMES_LOCK = _threading.Lock()
_NAMES: _t.Dict[str, _t.Any] = {}


def _kinds() -> _t.Tuple[str, ...]:
    """Op-kind names by kind value, from the library's one table
    (psched_op_kind_str, called with 0, 1, ... until NULL), read once."""
    with _NAMES_LOCK:
        if "kinds" not in _NAMES:
            lib, names = _lib.load(), []
            while True:
                name = lib.psched_op_kind_str(len(names), _lib.NAMING_PIPESCHED)
                if name is None:
                    break
                names.append(name.decode())
            _NAMES["kinds"] = tuple(names)
        return _NAMES["kinds"]


def _placement_names() -> _t.Dict[int, str]:
    """{placement value: name}, from psched_placement_str, read once."""
    with _NAMES_LOCK:
        if "placements" not in _NAMES:
            lib, names = _lib.load(), {}
            while True:
                name = lib.psched_placement_str(len(names))
                if name is None:
                    break
                names[len(names)] = name.decode()
            _NAMES["placements"] = names
        return _NAMES["placements"]


def _kind_name(kind: int) -> str:
    names = _kinds()
    return names[kind] if kind < len(names) else str(kind)


def _placement_name(value: int) -> str:
    return _placement_names().get(value, str(value))

_Triple = _t.Tuple[float, float, float]
_Number = _t.Union[int, float]


def _text(raw: _t.Optional[bytes]) -> _t.Optional[str]:
    return raw.decode("utf-8", "replace") if raw is not None else None


class Plan(_Handle):
    """Everything a generator and the simulator need.

    devices p and microbatches m (total over chains) are required. chunks v
    (0: the generator's default; inferred from stage_costs or a custom
    placement when those give the stage count), cost (t_F, t_B, t_W of every
    stage), comm (latency of a cross-device dependency), mem (memory deltas
    of F, B, W), mem_limit (per device, None = unlimited), placement
    ("loop", "vshape", None = the generator's, or a list giving each stage's
    device), group_size (interleaved's micro-batch group), stage_costs /
    stage_mem (one (f, b, w) per stage), chains (1, or 2 for DualPipe),
    options (other named integer generator options).
    """
    _destroy_name = "psched_plan_destroy"
    _what = "plan"

    def __init__(self, devices: int, microbatches: int, *, chunks: int = 0,
                 cost: _t.Sequence[_Number] = (1, 1, 1), comm: _Number = 0,
                 mem: _t.Sequence[_Number] = (1, 0, -1), mem_limit: _t.Optional[_Number] = None,
                 placement: _t.Union[str, _t.Sequence[int], None] = None,
                 group_size: _t.Optional[int] = None,
                 stage_costs: _t.Optional[_t.Sequence[_t.Sequence[_Number]]] = None,
                 chains: _t.Optional[int] = None,
                 stage_mem: _t.Optional[_t.Sequence[_t.Sequence[_Number]]] = None,
                 options: _t.Optional[_t.Mapping[str, int]] = None) -> None:
        lib = _lib.load()
        out = _ctypes.c_void_p()
        _check(lib.psched_plan_create(_ctypes.byref(out)))
        super().__init__(out)
        try:
            with self._use() as h:
                self._configure(lib, h, devices, microbatches, chunks, cost, comm, mem,
                                mem_limit, placement, group_size, stage_costs, chains,
                                stage_mem, options)
        except BaseException:
            self.close()
            raise

    @classmethod
    def _adopt(cls, ptr: _ctypes.c_void_p) -> "Plan":
        plan = cls.__new__(cls)
        _Handle.__init__(plan, ptr)
        return plan

    def _configure(self, lib: _t.Any, h: _ctypes.c_void_p, devices: object,
                   microbatches: object, chunks: object, cost: object, comm: object,
                   mem: object, mem_limit: object, placement: object, group_size: object,
                   stage_costs: object, chains: object, stage_mem: object,
                   options: object) -> None:
        p = _u32("devices", devices)
        _check(lib.psched_plan_set_devices(h, p))
        _check(lib.psched_plan_set_microbatches(h, _u32("microbatches", microbatches)))
        stage_map = None
        if placement is not None and not isinstance(placement, str):
            stage_map = [_u32(f"placement[{i}]", d) for i, d in enumerate(placement)]
        costs = [_triple(f"stage_costs[{s}]", c) for s, c in enumerate(stage_costs or ())]
        mems = [_triple(f"stage_mem[{s}]", c) for s, c in enumerate(stage_mem or ())]
        v = _u32("chunks", chunks)
        if v == 0:
            v = self._implied_chunks(p, costs, mems, stage_map)
        _check(lib.psched_plan_set_chunks(h, v))
        if chains is not None:
            _check(lib.psched_plan_set_chains(h, _u32("chains", chains)))
        self._set_placement(lib, h, placement, stage_map)
        _check(lib.psched_plan_set_cost(h, *_triple("cost", cost)))
        _check(lib.psched_plan_set_mem(h, *_triple("mem", mem)))
        for stage, c in enumerate(costs):
            _check(lib.psched_plan_set_stage_cost(h, stage, *c))
        for stage, c in enumerate(mems):
            _check(lib.psched_plan_set_stage_mem(h, stage, *c))
        _check(lib.psched_plan_set_comm(h, _real("comm", comm)))
        if mem_limit is not None:
            _check(lib.psched_plan_set_memory_limit(h, _real("mem_limit", mem_limit)))
        if options is not None and not isinstance(options, _t.Mapping):
            raise TypeError(f"options must be a mapping of str to int, not "
                            f"{type(options).__name__}")
        opts = dict(options or {})
        if group_size is not None:
            opts["group-size"] = group_size
        for key, value in opts.items():
            _check(lib.psched_plan_set_option(h, _text_arg("option name", key),
                                              _i64(f"option {key!r}", value)))

    @staticmethod
    def _implied_chunks(p: int, *per_stage: _t.Optional[_t.Sequence[object]]) -> int:
        """v given by the first per-stage list, when v was left open."""
        for values in per_stage:
            if values:
                n = len(values)
                if n % p:
                    raise _invalid(f"{n} per-stage entries are not a multiple of "
                                   f"devices ({p}); set chunks explicitly")
                return n // p
        return 0

    @staticmethod
    def _set_placement(lib: _t.Any, h: _ctypes.c_void_p, placement: object,
                       stage_map: _t.Optional[_t.List[int]]) -> None:
        if stage_map is not None:
            _check(lib.psched_plan_set_placement(h, _lib.PLACEMENT_CUSTOM))
            for stage, device in enumerate(stage_map):
                _check(lib.psched_plan_set_stage_device(h, stage, device))
        elif placement is not None:
            kind = {n: v for v, n in _placement_names().items()}.get(
                placement)  # type: ignore[call-overload]
            if kind is None or kind == _lib.PLACEMENT_CUSTOM:
                raise _invalid(f"placement ({placement!r}) must be 'loop', 'vshape', None "
                               "or a list of each stage's device")
            _check(lib.psched_plan_set_placement(h, kind))

    def copy(self) -> "Plan":
        """An independent deep copy."""
        out = _ctypes.c_void_p()
        with self._use() as h:
            _check(_lib.load().psched_plan_clone(h, _ctypes.byref(out)))
        return Plan._adopt(out)

    def _get(self, name: str, *args: object) -> _t.Any:
        with self._use() as h:
            return getattr(_lib.load(), name)(h, *args)

    @property
    def devices(self) -> int:
        return self._get("psched_plan_devices")

    @property
    def microbatches(self) -> int:
        return self._get("psched_plan_microbatches")

    @property
    def chunks(self) -> int:
        return self._get("psched_plan_chunks")

    @property
    def chains(self) -> int:
        return self._get("psched_plan_chains")

    @property
    def stages(self) -> int:
        return self._get("psched_plan_stages")

    @property
    def placement(self) -> str:
        """"auto", "loop", "vshape" or "custom"."""
        kind = self._get("psched_plan_placement")
        return _placement_name(kind)

    @property
    def comm(self) -> float:
        return self._get("psched_plan_comm")

    @property
    def mem_limit(self) -> _t.Optional[float]:
        """Per-device memory limit, None when unlimited."""
        limit = self._get("psched_plan_memory_limit")
        return None if _math.isinf(limit) else limit

    def _stage_triple(self, name: str, stage: int) -> _Triple:
        f, b, w = _ctypes.c_double(), _ctypes.c_double(), _ctypes.c_double()
        _check(self._get(name, _u32("stage", stage), _ctypes.byref(f), _ctypes.byref(b),
                         _ctypes.byref(w)))
        return (f.value, b.value, w.value)

    def stage_cost(self, stage: int) -> _Triple:
        """(t_F, t_B, t_W) of a stage."""
        return self._stage_triple("psched_plan_stage_cost", stage)

    def stage_mem(self, stage: int) -> _Triple:
        """Memory deltas (F, B, W) of a stage."""
        return self._stage_triple("psched_plan_stage_mem", stage)

    def stage_device(self, stage: int) -> _t.Optional[int]:
        """Device of a stage, None while the placement is left to the generator."""
        d = self._get("psched_plan_stage_device", _u32("stage", stage))
        return None if d == _U32_MAX else d

    def stage_chunk(self, stage: int) -> _t.Optional[int]:
        """Chunk of a stage on its device, None while the placement is open."""
        c = self._get("psched_plan_stage_chunk", _u32("stage", stage))
        return None if c == _U32_MAX else c

    def option(self, key: str) -> _t.Optional[int]:
        """A named generator option's value, None when unset."""
        value = _ctypes.c_int64()
        status = self._get("psched_plan_get_option", _text_arg("key", key),
                           _ctypes.byref(value))
        if status == _lib.ENOTFOUND:
            return None
        _check(status)
        return value.value

    def __repr__(self) -> str:
        if self.closed:
            return "<pipesched.Plan closed>"
        return (f"<pipesched.Plan devices={self.devices} microbatches={self.microbatches} "
                f"chunks={self.chunks} placement={self.placement}>")


def _plan_state(lib: _t.Any, plan: _ctypes.c_void_p) -> _t.Dict[str, _t.Any]:
    """Everything of a resolved plan that Plan() needs to rebuild it for an
    import: shape, placement, per-stage costs and memory, latency, limit.
    (Generator options are not listed by the C API; an import ignores them.)"""
    stages = lib.psched_plan_stages(plan)

    def triples(fn: _t.Any) -> _t.List[_Triple]:
        out = []
        for s in range(stages):
            f, b, w = _ctypes.c_double(), _ctypes.c_double(), _ctypes.c_double()
            _check(fn(plan, s, _ctypes.byref(f), _ctypes.byref(b), _ctypes.byref(w)))
            out.append((f.value, b.value, w.value))
        return out

    kind = lib.psched_plan_placement(plan)
    if kind == _lib.PLACEMENT_CUSTOM:
        placement: _t.Any = [lib.psched_plan_stage_device(plan, s) for s in range(stages)]
    else:
        placement = None if kind == _lib.PLACEMENT_AUTO else _placement_name(kind)
    limit = lib.psched_plan_memory_limit(plan)
    return {"devices": lib.psched_plan_devices(plan),
            "microbatches": lib.psched_plan_microbatches(plan),
            "chunks": lib.psched_plan_chunks(plan),
            "chains": lib.psched_plan_chains(plan),
            "placement": placement,
            "stage_costs": triples(lib.psched_plan_stage_cost),
            "stage_mem": triples(lib.psched_plan_stage_mem),
            "comm": lib.psched_plan_comm(plan),
            "mem_limit": None if _math.isinf(limit) else limit}


def _plan_content(lib: _t.Any, plan: _ctypes.c_void_p) -> _t.Tuple[object, ...]:
    """What Schedule equality compares of the plan: the shape, the stage →
    device map and every cost (not the placement kind: a custom map equal
    to loop order is the same plan; not the generator options)."""
    state = _plan_state(lib, plan)
    stages = lib.psched_plan_stages(plan)
    devices = tuple(lib.psched_plan_stage_device(plan, s) for s in range(stages))
    return (state["devices"], state["microbatches"], state["chunks"], state["chains"],
            devices, tuple(state["stage_costs"]), tuple(state["stage_mem"]), state["comm"],
            state["mem_limit"])


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

    devices: int
    makespan: float
    span: float
    bubble_ratio: float
    peak_memory_M: float
    busy: _t.List[float]
    idle: _t.List[float]
    peak_memory: _t.List[float]

    def __init__(self, ptr: _ctypes.c_void_p, op_counts: _t.Sequence[int],
                 _token: object = None) -> None:
        _internal_only(_token, "Report", "Schedule.simulate()")
        super().__init__(ptr)
        lib = _lib.load()
        self._op_counts = list(op_counts)
        with self._use() as h:
            self.devices = lib.psched_report_devices(h)
            self.makespan = lib.psched_report_makespan(h)
            self.span = lib.psched_report_span(h)
            self.bubble_ratio = lib.psched_report_bubble_ratio(h)
            self.peak_memory_M = lib.psched_report_peak_memory_M(h)
            self.busy, self.idle, self.peak_memory = [], [], []
            for d in range(self.devices):
                busy, idle, peak = _ctypes.c_double(), _ctypes.c_double(), _ctypes.c_double()
                _check(lib.psched_report_device(h, d, _ctypes.byref(busy), _ctypes.byref(idle),
                                                _ctypes.byref(peak)))
                self.busy.append(busy.value)
                self.idle.append(idle.value)
                self.peak_memory.append(peak.value)

    def op_times(self, device: int) -> _t.List[_t.Tuple[float, float]]:
        """[(start, end)] of every op of `device`, in list order; both ops of
        an overlapped pair get the pair's times."""
        device = _u32("device", device)
        n = self._op_counts[device] if device < len(self._op_counts) else 0
        start, end = (_ctypes.c_double * n)(), (_ctypes.c_double * n)()
        with self._use() as h:
            _check(_lib.load().psched_report_op_times(h, device, 0, n, start, end))
        return list(zip(start, end))

    def __repr__(self) -> str:
        return (f"<pipesched.Report makespan={self.makespan:g} span={self.span:g} "
                f"bubble_ratio={self.bubble_ratio:.4f} peak_memory={self.peak_memory}>")


class Schedule(_Handle):
    """p ordered op lists, one per device, with the resolved plan.

    Made by generate(), from_csv() or Schedule.lower(); close() (or a with
    block) frees it. Two schedules are equal (==, and equal hash()) when
    their op lists (kind, stage, micro-batch, chunk, flags) and plans (shape,
    stage → device map, costs, memory deltas, latency, limit) are; the
    generator name does not count. A schedule pickles (for
    torch.distributed.broadcast_object_list and the like): the copy is equal
    to the original and keeps its name.
    """
    _destroy_name = "psched_schedule_destroy"
    _what = "schedule"

    def __init__(self, ptr: _ctypes.c_void_p, _token: object = None) -> None:
        _internal_only(_token, "Schedule", "generate(), from_csv() or Schedule.lower()")
        super().__init__(ptr)
        # Set by lower() and by unpickling: what pickling needs beyond the
        # op lists (a lowered schedule's BATCH_NEXT flags have no CSV form).
        self._name: _t.Optional[str] = None
        self._lowered_from: _t.Optional[_t.Tuple[_t.Dict[str, _t.Any], _t.Any, str]] = None

    def _get(self, name: str, *args: object) -> _t.Any:
        with self._use() as h:
            return getattr(_lib.load(), name)(h, *args)

    def _plan_get(self, name: str) -> _t.Any:
        lib = _lib.load()
        with self._use() as h:
            return getattr(lib, name)(lib.psched_schedule_plan(h))

    @property
    def devices(self) -> int:
        return self._get("psched_schedule_devices")

    @property
    def lower_mode(self) -> str:
        """Semantics its comm ops run with: "async" for a Schedule.lower(...,
        mode="async") result, else "rendezvous" (psched_schedule_lower_mode)."""
        if not _lib.has("psched_schedule_lower_mode"):
            return "rendezvous"
        return LOWER_MODES[self._get("psched_schedule_lower_mode")]

    @property
    def name(self) -> str:
        """Generator name, or "csv" for an imported schedule."""
        if self._name is not None:
            return self._name
        return _text(self._get("psched_schedule_name")) or ""

    @property
    def microbatches(self) -> int:
        return self._plan_get("psched_plan_microbatches")

    @property
    def chunks(self) -> int:
        return self._plan_get("psched_plan_chunks")

    @property
    def stages(self) -> int:
        return self._plan_get("psched_plan_stages")

    @property
    def plan(self) -> Plan:
        """A copy of the resolved plan (a new Plan the caller owns)."""
        lib = _lib.load()
        out = _ctypes.c_void_p()
        with self._use() as h:
            _check(lib.psched_plan_clone(lib.psched_schedule_plan(h), _ctypes.byref(out)))
        return Plan._adopt(out)

    @property
    def total_ops(self) -> int:
        return self._get("psched_schedule_total_ops")

    @property
    def hash(self) -> int:
        """XXH3-64 of plan shape and op lists: equal across ranks and platforms."""
        out = _ctypes.c_uint64()
        _check(self._get("psched_schedule_hash", _ctypes.byref(out)))
        return out.value

    @staticmethod
    def _device_ops(lib: _t.Any, h: _ctypes.c_void_p, device: int) -> _t.Any:
        n = lib.psched_schedule_op_count(h, device)
        ops = (_lib.psched_op * n)()
        _check(lib.psched_schedule_ops(h, device, 0, n, ops, _ctypes.sizeof(_lib.psched_op)))
        return ops

    def _raw_ops(self, device: int) -> _t.Any:
        device = _u32("device", device)
        with self._use() as h:
            return self._device_ops(_lib.load(), h, device)

    def ops(self, device: int) -> _t.List[Op]:
        """The ops of `device` in execution order, as Op tuples."""
        return [Op(_kind_name(o.kind), o.stage,
                   o.microbatch, o.chunk, bool(o.flags & OVERLAP_NEXT))
                for o in self._raw_ops(device)]

    def op_flags(self, device: int) -> _t.List[int]:
        """Raw flags of `device`'s ops (OVERLAP_NEXT, BATCH_NEXT bits)."""
        return [o.flags for o in self._raw_ops(device)]

    def _content(self) -> _t.Tuple[object, ...]:
        lib = _lib.load()
        with self._use() as h:
            lists = tuple(tuple((o.stage, o.microbatch, o.chunk, o.kind, o.flags)
                                for o in self._device_ops(lib, h, d))
                          for d in range(lib.psched_schedule_devices(h)))
            return (_plan_content(lib, lib.psched_schedule_plan(h)), lists)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        if other is self:
            return True
        # The library's hash settles most inequalities at once; equal hashes
        # are confirmed op by op (a hash may collide).
        return self.hash == other.hash and self._content() == other._content()

    def __hash__(self) -> int:
        return self.hash

    def __reduce__(self) -> _t.Tuple[_t.Any, _t.Tuple[_t.Dict[str, _t.Any]]]:  # type: ignore[override]
        return (_restore_schedule, (self._state(),))

    def _state(self) -> _t.Dict[str, _t.Any]:
        """Pickle state, format 1: the name, and either the op lists as CSV
        with the plan, or (lowered schedules) the compute schedule's state and
        the lowering plan, lowered again on load."""
        state: _t.Dict[str, _t.Any] = {"format": 1, "name": self.name}
        if self._lowered_from is not None:
            state["lowered_from"], state["lower_plan"], mode = self._lowered_from
            if mode != "rendezvous":
                state["lower_mode"] = mode
            return state
        lib = _lib.load()
        with self._use() as h:
            state["plan"] = _plan_state(lib, lib.psched_schedule_plan(h))
        send_f = _kinds().index("SEND_F")  # kinds from here on are comm ops
        comm = any(o.kind >= send_f for d in range(self.devices) for o in self._raw_ops(d))
        state["csv"] = self.to_csv_comms() if comm else self.to_csv()
        return state

    def validate(self) -> None:
        """Check the dependency rules; raise InvalidSchedule or Deadlock naming
        the first violated rule, device, position and op."""
        _check(self._get("psched_validate"))

    def simulate(self, costs: _t.Optional[Plan] = None) -> Report:
        """Simulate in order on every device → Report. `costs`: a Plan whose
        per-stage costs and memory deltas replace the schedule's own."""
        if costs is not None:
            _of_type("costs", costs, Plan)
        lib = _lib.load()
        out = _ctypes.c_void_p()
        with _using(self, costs) as (h, c):
            _check(lib.psched_simulate(h, c, _ctypes.byref(out)))
            counts = [lib.psched_schedule_op_count(h, d)
                      for d in range(lib.psched_schedule_devices(h))]
        return Report(out, counts, _INTERNAL)

    def lower(self, plan: _t.Optional[Plan] = None, mode: str = "rendezvous") -> "Schedule":
        """Insert SEND/RECV ops → a new Schedule. `plan`: costs used to
        place the comm ops (None: the schedule's own). `mode`: "rendezvous"
        (psched_lower_comm: blocking calls, batched groups) or "async"
        (psched_lower_comm_ex with PSCHED_LOWER_ASYNC: non-blocking
        isend/irecv, transfers overlap compute; validate() and simulate()
        then use async semantics)."""
        if plan is not None:
            _of_type("plan", plan, Plan)
        if mode not in LOWER_MODES:
            raise _error(_lib.EINVAL, f"mode ({mode!r}) must be 'rendezvous' or 'async'")
        lib = _lib.load()
        name = "psched_lower_comm" if mode == "rendezvous" else "psched_lower_comm_ex"
        if not hasattr(lib, name):
            raise _error(_lib.EUNSUPPORTED, f"{library_path()} has no {name}")
        out = _ctypes.c_void_p()
        with _using(self, plan) as (h, p):
            if mode == "rendezvous":
                _check(lib.psched_lower_comm(h, p, _ctypes.byref(out)))
            else:
                opts = _lib.psched_lower_options(_lib.LOWER_OPTIONS_VERSION, _lib.LOWER_ASYNC)
                _check(lib.psched_lower_comm_ex(h, p, _ctypes.byref(opts), _ctypes.byref(out)))
            lower_plan = _plan_state(lib, p) if p is not None else None
        lowered = Schedule(out, _INTERNAL)
        try:
            lowered._lowered_from = (self._state(), lower_plan, mode)
        except BaseException:
            lowered.close()
            raise
        return lowered

    def _export(self, fmt: int, report: _t.Optional[Report] = None, flags: int = 0) -> str:
        if report is not None:
            _of_type("report", report, Report)
        lib = _lib.load()
        text, length = _ctypes.c_void_p(), _ctypes.c_size_t()
        with _using(self, report) as (h, r):
            _check(lib.psched_export(h, r, fmt, flags, _ctypes.byref(text),
                                     _ctypes.byref(length)))
        try:
            return _ctypes.string_at(text, length.value).decode("utf-8")
        finally:
            lib.psched_free(text)

    def _export_timed(self, fmt: int, report: _t.Optional[Report]) -> str:
        if report is not None:
            return self._export(fmt, report)
        with self.simulate() as own:
            return self._export(fmt, own)

    def to_csv(self) -> str:
        """PyTorch compute_only CSV (one row per device, `_load_csv` format)."""
        return self._export(_lib.FORMAT_CSV)

    def to_csv_comms(self) -> str:
        """compute_comms CSV of a lowered schedule, batched groups as
        `[a;b]BATCH` cells (docs/formats.md)."""
        return self._export(_lib.FORMAT_CSV_COMMS)

    def to_pytorch_actions(self) -> _t.List[_t.List[str]]:
        """One list per rank of torch.distributed.pipelining action strings,
        e.g. "0F0", "1I3" (our B), "1B3" (our BW), "(0F7;7B3)OVERLAP_F_B"."""
        devices = self.devices
        # PyTorch's own dialect: no batched-group cells, no chains header
        rows = self._export(_lib.FORMAT_CSV_COMMS_PYTORCH).split("\n")
        return [[cell for cell in rows[d].split(",") if cell] if d < len(rows) else []
                for d in range(devices)]

    def to_json(self, report: _t.Optional[Report] = None) -> str:
        """JSON: format_version, plan, op lists, and times when `report` is given."""
        return self._export(_lib.FORMAT_JSON, report)

    def to_ascii(self, report: _t.Optional[Report] = None, color: bool = False) -> str:
        """Terminal grid, ops at their simulated start (ANSI colours if `color`)."""
        return self._export(_lib.FORMAT_ASCII, report, _lib.EXPORT_COLOR if color else 0)

    def to_chrome(self, report: _t.Optional[Report] = None) -> str:
        """Chrome / Perfetto trace (JSON) of `report`, or of a fresh simulation."""
        return self._export_timed(_lib.FORMAT_CHROME, report)

    def to_svg(self, report: _t.Optional[Report] = None) -> str:
        """SVG timeline of `report`, or of a fresh simulation."""
        return self._export_timed(_lib.FORMAT_SVG, report)

    def __repr__(self) -> str:
        if self.closed:
            return "<pipesched.Schedule closed>"
        return (f"<pipesched.Schedule {self.name} devices={self.devices} "
                f"ops={self.total_ops}>")


def _restore_schedule(state: _t.Dict[str, _t.Any]) -> Schedule:
    """Unpickle a Schedule (see Schedule._state)."""
    if not isinstance(state, dict) or state.get("format") != 1:
        raise _invalid("not a pickled pipesched.Schedule of format 1")
    if "lowered_from" in state:
        with _restore_schedule(state["lowered_from"]) as compute:
            lower_plan = state["lower_plan"]
            mode = state.get("lower_mode", "rendezvous")
            if lower_plan is None:
                s = compute.lower(mode=mode)
            else:
                with Plan(**lower_plan) as p:
                    s = compute.lower(p, mode=mode)
    else:
        with Plan(**state["plan"]) as p:
            s = from_csv(state["csv"], p)
    s._name = state["name"]
    return s


def generate(name: _t.Union[str, Plan, None] = None, plan: _t.Union[Plan, str, None] = None,
             **plan_args: _t.Any) -> Schedule:
    """Generate the schedule `name` (see schedules()) for `plan`; without a
    plan, one is made from the keyword arguments (Plan's parameters).

    Argument order: name and plan may be given by keyword
    (generate(name="1f1b", plan=p)), positionally as generate("1f1b", p), or
    in the C and C++ order generate(p, "1f1b"); a Plan and a str are told
    apart by type, so the order never matters.
    """
    if isinstance(name, Plan) and (plan is None or isinstance(plan, str)):
        name, plan = plan, name  # the C / C++ order: (plan, name)
    if plan is not None and plan_args:
        raise TypeError("generate() takes a plan or Plan keyword arguments, not both")
    encoded = _text_arg("name", name)
    if plan is not None:
        _of_type("plan", plan, Plan)
    own = Plan(**plan_args) if plan is None else None
    try:
        chosen = own if plan is None else plan
        out = _ctypes.c_void_p()
        with chosen._use() as h:  # type: ignore[union-attr]
            _check(_lib.load().psched_generate(h, encoded, _ctypes.byref(out)))
        return Schedule(out, _INTERNAL)
    finally:
        if own is not None:
            own.close()


_CsvSource = _t.Union[str, bytes, bytearray, memoryview, _os.PathLike[str], _os.PathLike[bytes]]


def _read_source(source: object, what: str) -> bytes:
    """The bytes of a CSV source: a str is the text itself, bytes-like the
    raw file contents, an os.PathLike (e.g. pathlib.Path) a file to read."""
    if isinstance(source, str):
        return source.encode("utf-8", "surrogateescape")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, _os.PathLike):
        with open(source, "rb") as f:
            return f.read()
    raise TypeError(f"{what} must be CSV text (str), bytes or a path (os.PathLike), not "
                    f"{type(source).__name__}")


def _path_hint(err: Error, source: object) -> Error:
    """A parse error for a str that names an existing file: say how to read it."""
    if isinstance(source, str) and "\n" not in source and _os.path.isfile(source):
        return _error(err.status, f"{err.message} (a str is read as CSV text; to read the "
                                  f"file {source!r} pass pathlib.Path({source!r}))")
    return err


def from_csv(source: _CsvSource, plan: _t.Optional[Plan] = None) -> Schedule:
    """Import a PyTorch compute_only (or compute_comms) CSV.

    `source`: the CSV text (str), its bytes, or a path to the file
    (os.PathLike, e.g. pathlib.Path). A str is always the text itself, never
    a file name (a one-line str naming an existing file gets a hint in the
    ParseError); pass pathlib.Path(name) to read a file. With `plan`, its
    shape and costs are used and checked; otherwise they are inferred.
    """
    data = _read_source(source, "source")
    if plan is not None:
        _of_type("plan", plan, Plan)
    out = _ctypes.c_void_p()
    with _using(plan) as p:
        try:
            _check(_lib.load().psched_import_csv(data, len(data), p, _ctypes.byref(out)))
        except Error as e:
            hinted = _path_hint(e, source)
            if hinted is e:
                raise
            raise hinted from None
    return Schedule(out, _INTERNAL)


def _aliases(name: bytes) -> _t.Tuple[str, ...]:
    lib, out, alias = _lib.load(), [], _ctypes.c_char_p()
    while True:
        _check(lib.psched_generator_alias(name, len(out), _ctypes.byref(alias)))
        if alias.value is None:
            return tuple(out)
        out.append(alias.value.decode())


def _options(name: bytes) -> _t.Tuple[GeneratorOption, ...]:
    lib, count = _lib.load(), _ctypes.c_size_t()
    _check(lib.psched_generator_option_count(name, _ctypes.byref(count)))
    out = []
    for i in range(count.value):
        info = _lib.psched_option_info(version=_lib.OPTION_INFO_VERSION)
        _check(lib.psched_generator_option(name, i, _ctypes.byref(info)))
        default = (None if info.flags & _lib.OPTION_DEFAULT_FROM_PLAN
                   else info.default_value)
        out.append(GeneratorOption(_text(info.name) or "", _text(info.description) or "",
                                   info.min, info.max, default))
    return tuple(out)


def _info(g: _t.Any) -> GeneratorInfo:
    return GeneratorInfo(_text(g.name) or "", _text(g.description) or "",
                         _text(g.constraints) or "", _placement_name(g.placement),
                         g.default_chunks, g.chains, _aliases(g.name), _options(g.name))


def schedules() -> _t.List[Generator]:
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


def schedule_info(name: str) -> GeneratorInfo:
    """GeneratorInfo of one generator: also its placement, default chunks
    and chains. Raises NotFound listing the known names."""
    g = _ctypes.POINTER(_lib.psched_generator)()
    _check(_lib.load().psched_generator_find(_text_arg("name", name), _ctypes.byref(g)))
    return _info(g.contents)


def load_plugin(path: _t.Union[str, bytes, _os.PathLike[str], _os.PathLike[bytes]]) -> None:
    """Load a generator plug-in (shared object exporting psched_plugin_init);
    it stays loaded for the life of the process."""
    if not isinstance(path, (str, bytes, _os.PathLike)):
        raise TypeError(f"path must be a str, bytes or os.PathLike, not {type(path).__name__}")
    raw = _os.fsencode(path)
    if b"\0" in raw:
        raise _invalid(f"path ({path!r}) contains a NUL character")
    _check(_lib.load().psched_plugin_load(raw))


def version() -> str:
    """Library version "MAJOR.MINOR.PATCH" (psched_version())."""
    return _text(_lib.load().psched_version()) or ""


def library_path() -> str:
    """The path or name the library was loaded from."""
    return _lib.loaded_path()  # type: ignore[return-value]


def __getattr__(name: str) -> str:
    # __version__ is the loaded library's version, read on first use so
    # that importing the package never needs the library.
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'pipesched' has no attribute {name!r}")


def __dir__() -> _t.List[str]:
    return sorted(set(__all__) | {"__version__", "__all__", "__doc__", "__file__",
                                  "__name__", "__path__", "__spec__", "__loader__",
                                  "__package__"})


# The optimizer (Model, partition, plan_search) builds on Plan, so it is
# imported once everything above exists.
from ._optimizer import (Alternative, DeviceMemory, LayerGroup, Model,  # noqa: E402
                         Partition, SearchResult, StagePartition, partition, plan_search)

__all__ += ["Model", "LayerGroup", "Partition", "StagePartition", "DeviceMemory",
            "Alternative", "SearchResult", "partition", "plan_search"]


# ---- cost model extensions (docs/simulator.md, "Cost model extensions") ----
# Plan and Schedule methods of ABI 1.1; setters return the plan, so calls
# chain. Not part of a pickled Plan's state yet.

def _costmodel_fn(name: str) -> _t.Any:
    lib = _lib.load()
    if not hasattr(lib, name):
        raise _error(_lib.EUNSUPPORTED, f"{library_path()} has no {name}")
    return getattr(lib, name)


def _call(obj: _t.Any, name: str, *args: _t.Any) -> _t.Any:
    fn = _costmodel_fn(name)
    with _using(obj) as h:
        return fn(h, *args)


def _plan_set_overlap_saving(self: Plan, saving: float,
                             stage: _t.Optional[int] = None) -> Plan:
    """Time an overlapped F&B pair saves (0 <= s <= min(t_F, t_B)): on every
    stage, or on `stage` only."""
    if stage is None:
        _check(_call(self, "psched_plan_set_overlap_saving", float(saving)))
    else:
        _check(_call(self, "psched_plan_set_stage_overlap_saving", _u32("stage", stage),
                     float(saving)))
    return self


def _plan_overlap_saving(self: Plan, stage: int) -> float:
    """The overlap saving of a stage."""
    value = _call(self, "psched_plan_stage_overlap_saving", _u32("stage", stage))
    if _math.isnan(value):
        raise _invalid(f"stage ({stage}) must be < stages ({self.stages})")
    return value


def _plan_set_microbatch_weights(self: Plan,
                                 weights: _t.Optional[_t.Sequence[float]]) -> Plan:
    """One weight w_k > 0 per micro-batch (times, memory and bytes of
    micro-batch k scale by it); None or [] goes back to all 1."""
    values = [float(w) for w in (weights or ())]
    array = (_ctypes.c_double * max(1, len(values)))(*values)
    _check(_call(self, "psched_plan_set_microbatch_weights", array if values else None,
                 len(values)))
    return self


def _plan_microbatch_weight(self: Plan, microbatch: int) -> float:
    value = _call(self, "psched_plan_microbatch_weight", _u32("microbatch", microbatch))
    if _math.isnan(value):
        raise _invalid(f"microbatch ({microbatch}) must be < microbatches ({self.microbatches})")
    return value


def _plan_set_comm_bytes(self: Plan, forward: float, backward: _t.Optional[float] = None,
                         stage: _t.Optional[int] = None) -> Plan:
    """Bytes a stage sends forward (activations) and backward (gradients;
    default: as forward): on every stage, or on `stage` only."""
    backward = forward if backward is None else backward
    if stage is None:
        _check(_call(self, "psched_plan_set_comm_bytes", float(forward), float(backward)))
    else:
        _check(_call(self, "psched_plan_set_stage_comm_bytes", _u32("stage", stage),
                     float(forward), float(backward)))
    return self


def _plan_comm_bytes(self: Plan, stage: int) -> _t.Tuple[float, float]:
    """(forward, backward) bytes of a stage."""
    f, b = _ctypes.c_double(), _ctypes.c_double()
    _check(_call(self, "psched_plan_stage_comm_bytes", _u32("stage", stage), _ctypes.byref(f),
                 _ctypes.byref(b)))
    return (f.value, b.value)


def _plan_set_topology(self: Plan, devices_per_node: int = 0,
                       intra: _t.Tuple[float, float] = (_math.inf, 0.0),
                       inter: _t.Tuple[float, float] = (_math.inf, 0.0)) -> Plan:
    """Devices per node (0: one node) and the (bandwidth, latency) of links
    inside a node and between nodes."""
    _check(_call(self, "psched_plan_set_topology", _u32("devices_per_node", devices_per_node),
                 float(intra[0]), float(intra[1]), float(inter[0]), float(inter[1])))
    return self


def _plan_topology(
        self: Plan) -> _t.Tuple[int, _t.Tuple[float, float], _t.Tuple[float, float]]:
    """(devices_per_node, (intra bandwidth, latency), (inter bandwidth, latency))."""
    g = _ctypes.c_uint32()
    v = [_ctypes.c_double() for _ in range(4)]
    _check(_call(self, "psched_plan_topology", _ctypes.byref(g),
                 *[_ctypes.byref(x) for x in v]))
    return (g.value, (v[0].value, v[1].value), (v[2].value, v[3].value))


Plan.set_overlap_saving = _plan_set_overlap_saving
Plan.overlap_saving = _plan_overlap_saving
Plan.set_microbatch_weights = _plan_set_microbatch_weights
Plan.microbatch_weight = _plan_microbatch_weight
Plan.set_comm_bytes = _plan_set_comm_bytes
Plan.comm_bytes = _plan_comm_bytes
Plan.set_topology = _plan_set_topology
Plan.topology = _plan_topology


# ---- activation offload (docs/simulator.md, "Activation offload") ----

_OFFLOAD_POLICIES = {"all": 1, "selective": 2, "budget": 3}


def _plan_set_pcie_bandwidth(self: Plan, bandwidth: float) -> Plan:
    """Memory units a device copies to or from the host per time unit (> 0;
    math.inf: copies take no time)."""
    _check(_call(self, "psched_plan_set_pcie_bandwidth", float(bandwidth)))
    return self


def _plan_pcie_bandwidth(self: Plan) -> float:
    return _call(self, "psched_plan_pcie_bandwidth")


def _schedule_offload(self: Schedule, policy: str = "selective",
                      budget: _t.Optional[float] = None,
                      costs: _t.Optional[Plan] = None) -> Schedule:
    """PipeOffload (psched_offload) → a new Schedule with OFFLOAD/RELOAD ops:
    policy "all", "selective" or "budget" (with `budget`, the peak memory
    per device to reach)."""
    kind = _OFFLOAD_POLICIES.get(policy)
    if kind is None:
        raise _invalid(f"offload policy ({policy!r}) must be 'all', 'selective' or 'budget'")
    if costs is not None:
        _of_type("costs", costs, Plan)
    fn = _costmodel_fn("psched_offload")
    out = _ctypes.c_void_p()
    with _using(self, costs) as (h, c):
        _check(fn(h, c, kind, float(budget if budget is not None else 0), _ctypes.byref(out)))
    return Schedule(out, _INTERNAL)


_to_pytorch_actions_plain = Schedule.to_pytorch_actions


def _to_pytorch_actions(self: Schedule) -> _t.List[_t.List[str]]:
    kinds = _kinds()
    vocab = kinds.index("VOCAB_S") if "VOCAB_S" in kinds else len(kinds)
    offload = kinds.index("OFFLOAD")  # OFFLOAD, RELOAD: activation copies
    found = {o.kind for d in range(self.devices) for o in self._raw_ops(d) if o.kind >= offload}
    if any(k >= vocab for k in found):
        raise _error(_lib.EUNSUPPORTED,
                     "VOCAB_S, VOCAB_T and COLLECTIVE are pipesched's own op kinds "
                     "(Vocabulary Parallelism); torch.distributed.pipelining has no such "
                     "action: generate the schedule without the vocab option")
    if found:
        raise _error(_lib.EUNSUPPORTED,
                     "OFFLOAD/RELOAD are pipesched's own op kinds (activation copies); "
                     "torch.distributed.pipelining has no such action: export the schedule "
                     "before psched_offload")
    return _to_pytorch_actions_plain(self)


Plan.set_pcie_bandwidth = _plan_set_pcie_bandwidth
Plan.pcie_bandwidth = _plan_pcie_bandwidth


# ---- Vocabulary Parallelism and collectives (docs/schedules.md, "vocab") ----

def _pair_getter(self: Plan, name: str) -> _t.Tuple[float, float]:
    a, b = _ctypes.c_double(), _ctypes.c_double()
    _check(_call(self, name, _ctypes.byref(a), _ctypes.byref(b)))
    return (a.value, b.value)


def _plan_set_vocab_cost(self: Plan, s: float, t: float) -> Plan:
    """Times of one vocabulary S pass and one T pass on one device (finite,
    >= 0): the output layer's cost split over the p devices."""
    _check(_call(self, "psched_plan_set_vocab_cost", float(s), float(t)))
    return self


def _plan_vocab_cost(self: Plan) -> _t.Tuple[float, float]:
    return _pair_getter(self, "psched_plan_vocab_cost")


def _plan_set_vocab_mem(self: Plan, s: float, t: float) -> Plan:
    """Memory changes of the S and T passes (finite; (+a, -a): the S pass
    holds its shard's logits until the T pass)."""
    _check(_call(self, "psched_plan_set_vocab_mem", float(s), float(t)))
    return self


def _plan_vocab_mem(self: Plan) -> _t.Tuple[float, float]:
    return _pair_getter(self, "psched_plan_vocab_mem")


def _plan_set_collective_bytes(self: Plan, index: int, nbytes: float) -> Plan:
    """Bytes of collective `index` (< 8) of each micro-batch: it takes
    t_comm + link latency + bytes / bandwidth."""
    _check(_call(self, "psched_plan_set_collective_bytes", _u32("index", index), float(nbytes)))
    return self


def _plan_collective_bytes(self: Plan, index: int) -> float:
    return _call(self, "psched_plan_collective_bytes", _u32("index", index))


Plan.set_vocab_cost = _plan_set_vocab_cost
Plan.vocab_cost = _plan_vocab_cost
Plan.set_vocab_mem = _plan_set_vocab_mem
Plan.vocab_mem = _plan_vocab_mem
Plan.set_collective_bytes = _plan_set_collective_bytes
Plan.collective_bytes = _plan_collective_bytes
Schedule.offload = _schedule_offload
Schedule.to_pytorch_actions = _to_pytorch_actions


# ---- streaming output (psched_export_write, psched_generate_write) ----

#: Format names of Schedule.write() and generate_to(), as the CLI's --format.
_FORMATS = {"csv": _lib.FORMAT_CSV, "ascii": _lib.FORMAT_ASCII, "json": _lib.FORMAT_JSON,
            "csv-comms": _lib.FORMAT_CSV_COMMS, "chrome": _lib.FORMAT_CHROME,
            "svg": _lib.FORMAT_SVG, "csv-comms-pytorch": _lib.FORMAT_CSV_COMMS_PYTORCH}

_Sink = _t.Union[str, _os.PathLike, _t.BinaryIO]


class _Writer:
    """The write callback for C: pieces go to a binary file object, or to
    a path opened at the first piece (so a failure before it creates
    nothing). An exception in Python stops the export and is re-raised."""

    def __init__(self, file: object) -> None:
        self.path: _t.Optional[_t.Union[str, _os.PathLike]] = None
        self.file: _t.Any = None
        self.own = None
        self.error: _t.Optional[BaseException] = None
        if isinstance(file, (str, _os.PathLike)):
            self.path = file
        elif callable(getattr(file, "write", None)):
            self.file = file
        else:
            raise TypeError("file must be a path (str or os.PathLike) or a binary file "
                            f"object with write(), not {type(file).__name__}")
        self.callback = _lib.write_fn(self._write)

    def _write(self, user: object, data: object, length: int) -> int:
        try:
            if self.file is None:
                self.own = open(self.path, "wb")  # type: ignore[arg-type]
                self.file = self.own
            self.file.write(_ctypes.string_at(data, length))
            return 0
        except BaseException as e:  # noqa: BLE001 - re-raised by finish()
            self.error = e
            return 1

    def finish(self, status: int) -> None:
        if self.own is not None:
            self.own.close()
            if status != _lib.OK:
                _os.unlink(self.path)  # type: ignore[arg-type]
        elif self.path is not None and status == _lib.OK:
            open(self.path, "wb").close()  # nothing written: an empty file
        if self.error is not None:
            raise self.error
        _check(status)


def _format_code(format: object) -> int:
    if not isinstance(format, str):
        raise TypeError(f"format must be a str, not {type(format).__name__}")
    code = _FORMATS.get(format)
    if code is None:
        raise _invalid(f"format ({format!r}) must be one of {', '.join(_FORMATS)}")
    return code


def _schedule_write(self: Schedule, file: _Sink, format: str = "csv",
                    report: _t.Optional[Report] = None, color: bool = False) -> None:
    """Write the export in `format` (the CLI's names: "csv", "json", ...) to
    `file`, a path or a binary file object, piece by piece
    (psched_export_write: the CSV formats never hold the whole text); the
    same bytes as the matching to_*() method. A path is created at the
    first piece and removed again if the export fails."""
    code = _format_code(format)
    if report is not None:
        _of_type("report", report, Report)
    fn = _costmodel_fn("psched_export_write")
    w = _Writer(file)
    with _using(self, report) as (h, r):
        st = fn(h, r, code, _lib.EXPORT_COLOR if color else 0, w.callback, None)
    w.finish(st)


def generate_to(file: _Sink, name: _t.Union[str, Plan, None] = None,
                plan: _t.Union[Plan, str, None] = None, format: str = "csv",
                **plan_args: _t.Any) -> None:
    """Generate the schedule `name` for `plan` (or Plan keyword arguments,
    as generate()), validate it and write its export to `file` (a path or a
    binary file object) piece by piece (psched_generate_write): for "csv"
    the ops are held at 4 bytes each and the text never whole, so outputs
    of hundreds of millions of ops fit in memory. An invalid schedule
    raises InvalidSchedule or Deadlock and writes nothing."""
    if isinstance(name, Plan) and (plan is None or isinstance(plan, str)):
        name, plan = plan, name
    if plan is not None and plan_args:
        raise TypeError("generate_to() takes a plan or Plan keyword arguments, not both")
    encoded = _text_arg("name", name)
    code = _format_code(format)
    if plan is not None:
        _of_type("plan", plan, Plan)
    fn = _costmodel_fn("psched_generate_write")
    w = _Writer(file)
    own = Plan(**plan_args) if plan is None else None
    try:
        chosen = own if plan is None else plan
        with chosen._use() as h:  # type: ignore[union-attr]
            st = fn(h, encoded, code, 0, w.callback, None)
    finally:
        if own is not None:
            own.close()
    w.finish(st)


Schedule.write = _schedule_write
__all__ += ["generate_to"]


# ---- lower bounds and proofs (issue 17; docs/simulator.md "Lower bounds") ----

class Bound(_t.NamedTuple):
    """Lower bounds every valid schedule of a plan obeys (psched_bound()):
    makespan and span (the largest of the terms), and the terms: work (the
    busiest device), critical_path (one micro-batch through its chain),
    device_path (fill + work + drain of a device), memory (the memory
    limit's term, 0 without a limit). A schedule's gap is
    report.span / bound.span - 1."""
    makespan: float
    span: float
    work: float
    critical_path: float
    device_path: float
    memory: float


class SolveStatus(_t.NamedTuple):
    """What an exact generator (`optimal`) proved about the schedule it
    built: status "optimal" (no valid schedule of the plan has a smaller
    span) or "feasible", and gap, (span − its best lower bound) / span: 0
    when optimal, inf when no bound is known."""
    status: str
    gap: float


def _bound(h: _ctypes.c_void_p, flags: int, name: str = "psched_bound") -> Bound:
    fn = _costmodel_fn(name)
    options = _lib.psched_bound_options(_lib.BOUND_OPTIONS_VERSION, flags)
    info = _lib.psched_bound_info(version=_lib.BOUND_INFO_VERSION)
    _check(fn(h, _ctypes.byref(options), _ctypes.byref(info)))
    return Bound(*(getattr(info, f) for f in Bound._fields))


def _bound_flags(ignore_memory: object, vocab_passes: object) -> int:
    for name, value in (("ignore_memory", ignore_memory), ("vocab_passes", vocab_passes)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return ((_lib.BOUND_IGNORE_MEMORY if ignore_memory else 0) |
            (_lib.BOUND_VOCAB_PASSES if vocab_passes else 0))


def _plan_bound(self: Plan, *, ignore_memory: bool = False,
                vocab_passes: bool = False) -> Bound:
    """Lower bounds on makespan and span for every valid schedule of this
    plan, whose chunks and placement must be set (a schedule's plan always
    has them; otherwise InvalidArgument names what is missing).
    ignore_memory: bound the plan without its memory limit. vocab_passes:
    every schedule bounded holds vocabulary passes (Plan.set_vocab_cost()),
    so their work counts. Raises Infeasible when the memory limit is below
    one micro-batch's activation on some device."""
    flags = _bound_flags(ignore_memory, vocab_passes)
    with self._use() as h:
        return _bound(h, flags)


def _schedule_bound(self: Schedule, *, ignore_memory: bool = False,
                    vocab_passes: _t.Optional[bool] = None) -> Bound:
    """Lower bounds on makespan and span that every valid schedule of this
    schedule's plan obeys (Plan.bound()); vocab_passes defaults to whether
    this schedule holds VOCAB_S ops, as `pipesched simulate` does. The gap
    of this order: self.simulate().span / self.bound().span - 1."""
    if vocab_passes is None:
        # the library reads the ops (psched_schedule_bound())
        flags = _bound_flags(ignore_memory, False)
        with self._use() as h:
            return _bound(h, flags, "psched_schedule_bound")
    flags = _bound_flags(ignore_memory, vocab_passes)
    with self._use() as h:
        return _bound(_lib.load().psched_schedule_plan(h), flags)


def _schedule_solve_status(self: Schedule) -> _t.Optional[SolveStatus]:
    """SolveStatus recorded by an exact generator (`optimal`); None for a
    schedule whose generator proved nothing (every heuristic, imported and
    lowered schedules)."""
    fn = _costmodel_fn("psched_schedule_solve_status")
    status, gap = _ctypes.c_int(), _ctypes.c_double()
    with self._use() as h:
        st = fn(h, _ctypes.byref(status), _ctypes.byref(gap))
    if st == _lib.ENOTFOUND:
        return None
    _check(st)
    return SolveStatus(("optimal", "feasible", "infeasible")[status.value], gap.value)


def _generator_exact(self: GeneratorInfo) -> bool:
    """True for an exact generator (`optimal`): it solves an NP-hard problem,
    may take up to its time limit on a small plan and refuses large ones;
    sweeps over every generator give it small limits or skip it."""
    g = _ctypes.POINTER(_lib.psched_generator)()
    _check(_lib.load().psched_generator_find(_text_arg("name", self.name), _ctypes.byref(g)))
    return bool(_costmodel_fn("psched_generator_is_exact")(g))


Plan.bound = _plan_bound
Schedule.bound = _schedule_bound
Schedule.solve_status = _schedule_solve_status
GeneratorInfo.exact = property(_generator_exact)  # type: ignore[attr-defined]
__all__ += ["Bound", "SolveStatus"]
