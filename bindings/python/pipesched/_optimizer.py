"""The optimizer (issue 5): layer profiles, the partitioner and the planner.

    import pipesched
    model = pipesched.Model.from_csv(open("docs/examples/llama70b.csv").read())
    plan = pipesched.Plan(devices=8, microbatches=64, mem_limit=80e9)
    part = pipesched.partition(model, plan, "interleaved", chunks=2)
    print(part.status, part.makespan, [s.count for s in part.stages])
    best = pipesched.plan_search(model, plan).best      # fastest plan that fits
    print(best.schedule, best.chunks, best.makespan, best.partition.status)

The ctypes declarations of the optimizer's C functions live here; results
are copied out of the C handles at once, so every object is plain Python.
"""
from __future__ import annotations

import ctypes
import math as _math
import os as _os
import threading as _threading
import typing as _t

from . import _lib
from ._errors import check as _check, error as _error
from . import Plan as _Plan, _read_source  # defined before the package imports this module
from ._handle import (INTERNAL as _INTERNAL, _Handle, internal_only as _internal_only,
                      invalid as _invalid, of_type as _of_type, real as _real,
                      text as _text_arg, u32 as _u32, using as _using)

__all__ = ["Model", "LayerGroup", "Partition", "StagePartition", "DeviceMemory",
           "Alternative", "SearchResult", "partition", "plan_search",
           "METHODS", "RECOMPUTE"]

# psched_recompute, psched_partition_method, psched_solve_status
RECOMPUTE = ("none", "selective", "full")
METHODS = ("ilp", "dp", "even", "even-accounted", "dp-time")
_STATUS = ("optimal", "feasible", "infeasible")
_ALLOW_EMPTY = 0x1
_ONE_ROUND = 0x100
_PARTITION_OPTIONS_VERSION = 1
_SEARCH_OPTIONS_VERSION = 1
_TRANSFORMER_VERSION = 2

_u32t = ctypes.c_uint32
_dbl = ctypes.c_double
_vp = ctypes.c_void_p
_st = _lib.status_t
_dout = ctypes.POINTER(ctypes.c_double)
_uout = ctypes.POINTER(ctypes.c_uint32)


class _PartitionOptions(ctypes.Structure):
    """Mirror of psched_partition_options (version 1)."""
    _fields_ = [("version", ctypes.c_uint32), ("method", ctypes.c_int),
                ("time_limit", ctypes.c_double), ("flags", ctypes.c_uint32)]


class _SearchOptions(ctypes.Structure):
    """Mirror of psched_search_options (version 1)."""
    _fields_ = [("version", ctypes.c_uint32), ("time_limit", ctypes.c_double),
                ("flags", ctypes.c_uint32)]


_TRANSFORMER_FIELDS = ("hidden", "ffn", "heads", "kv_heads", "layers", "vocab", "sequence",
                       "microbatch", "tensor_parallel", "dtype_bytes", "experts", "top_k",
                       "moe_every", "flash_attention", "head_dim", "causal")


class _Transformer(ctypes.Structure):
    """Mirror of psched_transformer (version 2)."""
    _fields_ = [(name, ctypes.c_uint32) for name in ("version",) + _TRANSFORMER_FIELDS]


_PROTOTYPES = {
    "psched_model_create": (_st, [_lib.handle_out]),
    "psched_model_destroy": (None, [_vp]),
    "psched_model_add_layers": (_st, [_vp, ctypes.c_char_p, _u32t] + [_dbl] * 5),
    "psched_model_set_recompute": (_st, [_vp, _u32t, ctypes.c_int, _dbl, _dbl]),
    "psched_model_groups": (_u32t, [_vp]),
    "psched_model_layers": (_u32t, [_vp]),
    "psched_model_group": (_st, [_vp, _u32t, ctypes.POINTER(ctypes.c_char_p), _uout]
                           + [_dout] * 5),
    "psched_model_group_recompute": (_st, [_vp, _u32t, ctypes.c_int, _dout, _dout]),
    "psched_model_load_csv": (_st, [ctypes.c_char_p, _lib.size_t, _lib.handle_out]),
    "psched_model_transformer": (_st, [ctypes.POINTER(_Transformer), _lib.handle_out]),

    "psched_partition": (_st, [_vp, _vp, ctypes.c_char_p, ctypes.POINTER(_PartitionOptions),
                               _lib.handle_out]),
    "psched_partition_result_destroy": (None, [_vp]),
    "psched_partition_status": (ctypes.c_int, [_vp]),
    "psched_partition_gap": (_dbl, [_vp]),
    "psched_partition_objective": (_dbl, [_vp]),
    "psched_partition_solve_time": (_dbl, [_vp]),
    "psched_partition_min_memory": (_dbl, [_vp]),
    "psched_partition_stages": (_u32t, [_vp]),
    "psched_partition_stage": (_st, [_vp, _u32t, _uout, _uout, _dout, _dout]),
    "psched_partition_layer_recompute": (ctypes.c_int, [_vp, _u32t]),
    "psched_partition_plan": (_vp, [_vp]),
    "psched_partition_makespan": (_dbl, [_vp]),
    "psched_partition_bubble_ratio": (_dbl, [_vp]),
    "psched_partition_device": (_st, [_vp, _u32t, _dout, _dout, _dout]),

    "psched_plan_search": (_st, [_vp, _vp, ctypes.POINTER(ctypes.c_char_p), _lib.size_t,
                                 ctypes.POINTER(_SearchOptions), _lib.handle_out]),
    "psched_search_result_destroy": (None, [_vp]),
    "psched_search_count": (_lib.size_t, [_vp]),
    "psched_search_solve_time": (_dbl, [_vp]),
    "psched_search_schedule": (ctypes.c_char_p, [_vp, _lib.size_t]),
    "psched_search_chunks": (_u32t, [_vp, _lib.size_t]),
    "psched_search_vocab": (_u32t, [_vp, _lib.size_t]),
    "psched_search_error": (_st, [_vp, _lib.size_t]),
    "psched_search_error_message": (ctypes.c_char_p, [_vp, _lib.size_t]),
    "psched_search_status": (ctypes.c_int, [_vp, _lib.size_t]),
    "psched_search_fits": (ctypes.c_int, [_vp, _lib.size_t]),
    "psched_search_makespan": (_dbl, [_vp, _lib.size_t]),
    "psched_search_bubble_ratio": (_dbl, [_vp, _lib.size_t]),
    "psched_search_peak_memory": (_dbl, [_vp, _lib.size_t]),
    "psched_search_even_makespan": (_dbl, [_vp, _lib.size_t]),
    "psched_search_partition": (_vp, [_vp, _lib.size_t]),

    "psched_partition_evaluate": (_st, [_vp, _vp, ctypes.c_char_p, _uout, _u32t,
                                        ctypes.POINTER(ctypes.c_int), _lib.handle_out]),
    "psched_partition_from_layout": (_st, [_vp, _vp, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                           _u32t, _lib.handle_out]),
    "psched_partition_to_megatron": (_st, [_vp, _vp, ctypes.c_char_p,
                                           ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.POINTER(_lib.size_t)]),
    "psched_partition_to_torchtitan": (_st, [_vp, _vp, ctypes.c_char_p, ctypes.c_char_p,
                                             ctypes.POINTER(ctypes.c_void_p),
                                             ctypes.POINTER(_lib.size_t)]),
}

_lock = _threading.Lock()
_ready: _t.Any = None


def _c() -> _t.Any:
    """The library with the optimizer's prototypes declared (once)."""
    global _ready
    if _ready is None:
        with _lock:
            if _ready is None:
                lib = _lib.load()
                for name, (restype, argtypes) in _PROTOTYPES.items():
                    fn = getattr(lib, name, None)
                    if fn is None:
                        raise _error(_lib.EUNSUPPORTED,
                                     f"{_lib.loaded_path()} has no {name}: the library "
                                     "predates this part of the optimizer")
                    fn.restype = restype
                    fn.argtypes = argtypes
                _ready = lib
    return _ready


def _nan_none(x: _t.Optional[float]) -> _t.Optional[float]:
    return None if x is None or _math.isnan(x) else x


class LayerGroup(_t.NamedTuple):
    """A group of identical layers: type name, count, per-layer times f, b
    (backward for inputs), w (backward for weights), activation bytes per
    micro-batch, parameter bytes; selective and full are (act, extra_time)
    recompute variants or None."""
    type: str
    count: int
    f: float
    b: float
    w: float
    act: float
    param: float
    selective: _t.Optional[_t.Tuple[float, float]]
    full: _t.Optional[_t.Tuple[float, float]]


class Model(_Handle):
    """A layer profile: an ordered list of layer groups (the model order).

    Build it with add_layers(), Model.from_csv(text) (the CLI's CSV layer
    profile) or Model.from_transformer(...) (analytic formulas, see the
    docs' optimizer page). close() frees the C handle at once; the object is
    also a context manager.
    """

    _destroy_name = "psched_model_destroy"
    _what = "model"

    def __init__(self) -> None:
        out = ctypes.c_void_p()
        _check(_c().psched_model_create(ctypes.byref(out)))
        super().__init__(out)

    @classmethod
    def _adopt(cls, ptr: ctypes.c_void_p) -> "Model":
        m = cls.__new__(cls)
        _c()  # declares psched_model_destroy's prototype before _Handle looks it up
        _Handle.__init__(m, ptr)
        return m

    @classmethod
    def from_csv(cls, source: _t.Union[str, bytes, bytearray, memoryview,
                                       _os.PathLike[str], _os.PathLike[bytes]]) -> "Model":
        """Read `type,count,f,b,w,act,param[,act_selective,extra_selective]
        [,act_full,extra_full]` rows after a header row; raises ParseError
        naming the line and column. `source`: the text (str), its bytes, or a
        path (os.PathLike, e.g. pathlib.Path); a str is always the text."""
        data = _read_source(source, "source")
        out = ctypes.c_void_p()
        _check(_c().psched_model_load_csv(data, len(data), ctypes.byref(out)))
        return cls._adopt(out)

    @classmethod
    def from_csv_file(cls, path: _t.Union[str, bytes, _os.PathLike[str],
                                          _os.PathLike[bytes]]) -> "Model":
        """Model.from_csv of the file at `path`."""
        with open(path, "rb") as f:
            return cls.from_csv(f.read())

    @classmethod
    def from_transformer(cls, hidden: int, ffn: int, heads: int, layers: int, vocab: int,
                         sequence: int, kv_heads: _t.Optional[int] = None, microbatch: int = 1,
                         tensor_parallel: int = 1, dtype_bytes: int = 2, experts: int = 0,
                         top_k: int = 0, moe_every: int = 0, flash_attention: bool = True,
                         head_dim: _t.Optional[int] = None, causal: bool = True) -> "Model":
        """A profile from decoder-only transformer hyper-parameters (times in
        TFLOP per device, bytes per device): an embedding, the layers (or
        alternating dense/moe groups) and a head; see psched_model_transformer.
        flash_attention (default on) drops the 5·a·s²·b attention-score
        activations, head_dim (None: hidden/heads) sets the per-head size,
        causal (default on) halves the attention score and score-times-V
        FLOPs. Every value is a uint32 (InvalidArgument naming it otherwise)."""
        values = {"hidden": hidden, "ffn": ffn, "heads": heads,
                  "kv_heads": heads if kv_heads is None else kv_heads, "layers": layers,
                  "vocab": vocab, "sequence": sequence, "microbatch": microbatch,
                  "tensor_parallel": tensor_parallel, "dtype_bytes": dtype_bytes,
                  "experts": experts, "top_k": top_k, "moe_every": moe_every,
                  "flash_attention": 1 if flash_attention else 0,
                  "head_dim": 0 if head_dim is None else head_dim,
                  "causal": 1 if causal else 0}
        cfg = _Transformer(_TRANSFORMER_VERSION,
                           *(_u32(name, values[name]) for name in _TRANSFORMER_FIELDS))
        out = ctypes.c_void_p()
        _check(_c().psched_model_transformer(ctypes.byref(cfg), ctypes.byref(out)))
        return cls._adopt(out)

    def add_layers(self, type: str, count: int, f: float, b: float, w: float, act: float,
                   param: float, selective: _t.Optional[_t.Tuple[float, float]] = None,
                   full: _t.Optional[_t.Tuple[float, float]] = None) -> "Model":
        """Append `count` layers; selective / full are (act_bytes, extra_time)."""
        lib = _c()
        name = _text_arg("type", type)
        n = _u32("count", count)
        nums = [_real(k, v) for k, v in (("f", f), ("b", b), ("w", w), ("act", act),
                                         ("param", param))]
        variants = []
        for kind, label, variant in ((1, "selective", selective), (2, "full", full)):
            if variant is not None:
                try:
                    a, extra = variant
                except (TypeError, ValueError):
                    raise TypeError(f"{label} must be a pair (act_bytes, extra_time), not "
                                    f"{variant!r}") from None
                variants.append((kind, _real(f"{label}[0]", a), _real(f"{label}[1]", extra)))
        with self._use() as h:
            _check(lib.psched_model_add_layers(h, name, n, *nums))
            group = lib.psched_model_groups(h) - 1
            for kind, a, extra in variants:
                _check(lib.psched_model_set_recompute(h, group, kind, a, extra))
        return self

    @property
    def layers(self) -> int:
        """Total layer count."""
        with self._use() as h:
            return _c().psched_model_layers(h)

    @property
    def groups(self) -> _t.List[LayerGroup]:
        """The groups as LayerGroup tuples, in model order."""
        lib = _c()
        out = []
        with self._use() as h:
            for g in range(lib.psched_model_groups(h)):
                name, count = ctypes.c_char_p(), ctypes.c_uint32()
                vals = [ctypes.c_double() for _ in range(5)]
                _check(lib.psched_model_group(h, g, ctypes.byref(name), ctypes.byref(count),
                                              *(ctypes.byref(v) for v in vals)))
                variants = []
                for kind in (1, 2):
                    a, extra = ctypes.c_double(), ctypes.c_double()
                    st = lib.psched_model_group_recompute(h, g, kind, ctypes.byref(a),
                                                          ctypes.byref(extra))
                    variants.append((a.value, extra.value) if st == _lib.OK else None)
                out.append(LayerGroup(name.value.decode(), count.value,  # type: ignore[union-attr]
                                      *(v.value for v in vals), *variants))
        return out

    def __repr__(self) -> str:
        if self.handle is None:
            return "<pipesched.Model closed>"
        return f"<pipesched.Model layers={self.layers} groups={len(self.groups)}>"


class _PartitionResult(_Handle):
    """A psched_partition_result: kept by the Partition made from it, for
    its emitters (freed when that Partition is)."""
    _destroy_name = "psched_partition_result_destroy"
    _what = "partition result"


class _SearchHandle(_Handle):
    """A psched_search_result: kept by its alternatives' Partitions, whose
    results it holds (freed when the last of them is)."""
    _destroy_name = "psched_search_result_destroy"
    _what = "plan search result"


class StagePartition(_t.NamedTuple):
    """One virtual stage: its device and chunk, layers [first, first+count),
    recompute counts {"none": n, "selective": n, "full": n}, time (forward +
    backward of one micro-batch) and memory (parameters + activations ×
    in-flight micro-batches)."""
    stage: int
    device: _t.Optional[int]
    chunk: _t.Optional[int]
    first: int
    count: int
    recompute: _t.Dict[str, int]
    time: float
    memory: float


class DeviceMemory(_t.NamedTuple):
    """A device's parameter bytes, the model's memory bound (held to the
    limit) and the simulated peak (parameters + activation peak)."""
    device: int
    params: float
    memory: float
    peak_memory: float


class Partition:
    """A partition (psched_partition()): everything copied out of the C result.

    status "optimal", "feasible" or "infeasible"; gap ((step time - bound) /
    step time: 0 when optimal, None when infeasible or from evaluate(); the
    uncertified methods' to the floor every partition obeys), objective, solve_time, min_memory (for an infeasible
    limit: the smallest limit that fits when above the limit; at most the limit when the time ran out
    before a partition was found; None when it was not proven in the time limit), makespan and
    bubble_ratio (simulated), stages (StagePartition),
    devices (DeviceMemory), recompute (per layer: "none", "selective" or
    "full"), plan (a pipesched.Plan with the partition's costs written in).
    Figures are None when no partition was found.
    """

    status: str
    gap: _t.Optional[float]
    objective: _t.Optional[float]
    solve_time: float
    min_memory: _t.Optional[float]
    makespan: _t.Optional[float]
    bubble_ratio: _t.Optional[float]
    stages: _t.List[StagePartition]
    devices: _t.List[DeviceMemory]
    recompute: _t.List[str]
    plan: _t.Optional[_Plan]

    def __init__(self, ptr: _t.Any, _token: object = None) -> None:
        _internal_only(_token, "Partition", "partition() or plan_search()")
        lib = _c()
        self.status = _STATUS[lib.psched_partition_status(ptr)]
        self.gap = _nan_none(lib.psched_partition_gap(ptr))
        self.objective = _nan_none(lib.psched_partition_objective(ptr))
        self.solve_time = lib.psched_partition_solve_time(ptr)
        self.min_memory = _nan_none(lib.psched_partition_min_memory(ptr))
        self.makespan = _nan_none(lib.psched_partition_makespan(ptr))
        self.bubble_ratio = _nan_none(lib.psched_partition_bubble_ratio(ptr))
        self.stages, self.devices, self.recompute, self.plan = [], [], [], None
        plan = lib.psched_partition_plan(ptr)
        if not plan:
            return
        self.plan = _Plan._adopt(self._clone(plan))
        for s in range(lib.psched_partition_stages(ptr)):
            first, count = ctypes.c_uint32(), ctypes.c_uint32()
            time, mem = ctypes.c_double(), ctypes.c_double()
            _check(lib.psched_partition_stage(ptr, s, ctypes.byref(first), ctypes.byref(count),
                                              ctypes.byref(time), ctypes.byref(mem)))
            kinds = [RECOMPUTE[lib.psched_partition_layer_recompute(ptr, layer)]
                     for layer in range(first.value, first.value + count.value)]
            self.recompute.extend(kinds)
            self.stages.append(StagePartition(
                s, self.plan.stage_device(s), self.plan.stage_chunk(s), first.value,
                count.value, {k: kinds.count(k) for k in RECOMPUTE}, time.value, mem.value))
        for d in range(self.plan.devices):
            vals = [ctypes.c_double() for _ in range(3)]
            _check(lib.psched_partition_device(ptr, d, *(ctypes.byref(v) for v in vals)))
            self.devices.append(DeviceMemory(d, *(v.value for v in vals)))

    @staticmethod
    def _clone(plan: _t.Any) -> ctypes.c_void_p:
        out = ctypes.c_void_p()
        _check(_lib.load().psched_plan_clone(plan, ctypes.byref(out)))
        return out

    _source: _t.Optional[_t.Tuple["Model", str, _Handle, _t.Any]] = None

    def _attach(self, model: "Model", schedule: str, owner: _Handle,
                ptr: _t.Any) -> "Partition":
        """Keep the C result the emitters read: `ptr`, alive as long as
        `owner` (the handle that frees it: the result itself, or the plan
        search's result that holds it) is, and the model it partitions."""
        self._source = (model, schedule, owner, ptr)
        return self

    @classmethod
    def _own(cls, out: ctypes.c_void_p, model: "Model", schedule: str) -> "Partition":
        """A Partition of a psched_partition_result the caller got and
        hands over (freed with the Partition)."""
        owner = _PartitionResult(out)
        return cls(owner.handle, _INTERNAL)._attach(model, schedule, owner, owner.handle)

    @property
    def schedule(self) -> _t.Optional[str]:
        """The generator the partition was computed for."""
        return self._source[1] if self._source else None

    def _emit(self, fn: str, *extra: _t.Optional[bytes]) -> str:
        # the library's own result: its refusals (no partition, DualPipe's
        # two copies, a Vocabulary Parallelism candidate, a model changed
        # since) are the library's messages
        assert self._source is not None  # every maker attaches it
        model, _schedule, owner, ptr = self._source
        lib = _c()
        text, length = ctypes.c_void_p(), _lib.size_t()
        try:
            with _using(model, owner) as (m, _):
                _check(getattr(lib, fn)(ptr, m, *extra, ctypes.byref(text),
                                        ctypes.byref(length)))
            return ctypes.string_at(text, length.value).decode()
        finally:
            if text:
                lib.psched_free(text)

    def to_megatron(self, map: _t.Optional[_t.Mapping[str, str]] = None) -> str:
        """Megatron-LM flags: --pipeline-model-parallel-size, the layout
        --pipeline-model-parallel-layout and the recompute options, with
        comment lines where Megatron-LM's options cannot say the plan (see
        psched_partition_to_megatron). map: layout letter -> profile group
        name, e.g. {"m": "mtp_block"}. Raises Unsupported for a plan a
        layout cannot place: DualPipe (every layer twice) or a Vocabulary
        Parallelism candidate (Alternative.vocab > 0, the head split over
        every device); to_torchtitan likewise."""
        return self._emit("psched_partition_to_megatron", _map_arg(map))

    def to_torchtitan(self, fqn: _t.Union[str, _t.Mapping[str, _t.Union[str, _t.Sequence[str]]],
                                          None] = None,
                      map: _t.Optional[_t.Mapping[str, str]] = None) -> str:
        """A torchtitan TOML snippet ([parallelism] and [activation_checkpoint]).
        fqn: module names per layout letter, {i} the index among that
        letter, e.g. {"E": "tok_embeddings", "t": "layers.{i}", "L": ["norm",
        "output"]} (the default), or the C template string
        "E=tok_embeddings;t=layers.{i};L=norm,output"."""
        return self._emit("psched_partition_to_torchtitan", _map_arg(map), _fqn_arg(fqn))

    @classmethod
    def evaluate(cls, model: "Model", plan: _Plan, schedule: str, counts: _t.Sequence[int],
                 recompute: _t.Optional[_t.Sequence[str]] = None) -> "Partition":
        """Simulate a partition you give (psched_partition_evaluate()):
        counts[s] consecutive layers on stage s in model order (p·v
        entries; DualPipe: its p ranges, or 2p as its results list them),
        recompute per layer ("none", "selective" or "full"; None: none).
        Returns a Partition as partition() does, status "feasible" when
        every device's memory bound fits plan.mem_limit, "infeasible"
        otherwise (the partition is still there), gap None. Raises
        InvalidArgument naming the count, stage or layer that is wrong."""
        _check_plan(model, plan)
        name = _text_arg("schedule", schedule)
        if isinstance(counts, (str, bytes)) or not hasattr(counts, "__len__"):
            raise TypeError(f"counts must be a sequence of integers, not "
                            f"{type(counts).__name__}")
        values = [_u32(f"counts[{i}]", c) for i, c in enumerate(counts)]
        arr = (ctypes.c_uint32 * max(1, len(values)))(*values)
        kinds = None
        if recompute is not None:
            if isinstance(recompute, (str, bytes)) or not hasattr(recompute, "__len__"):
                raise TypeError(f"recompute must be a sequence of str, not "
                                f"{type(recompute).__name__}")
            choice = []
            for i, k in enumerate(recompute):
                if k not in RECOMPUTE:
                    raise _invalid(f"recompute[{i}] ({k!r}) must be one of "
                                   f"{', '.join(RECOMPUTE)}")
                choice.append(RECOMPUTE.index(k))
            kinds = (ctypes.c_int * max(1, len(choice)))(*choice)
        lib = _c()
        out = ctypes.c_void_p()
        with _using(model, plan) as (m, p):
            _check(lib.psched_partition_evaluate(m, p, name, arr, len(values), kinds,
                                                 ctypes.byref(out)))
        return cls._own(out, model, schedule)

    @classmethod
    def from_megatron(cls, layout: str, model: "Model", plan: _Plan, schedule: str = "1f1b",
                      recompute_granularity: _t.Optional[str] = None,
                      recompute_method: _t.Optional[str] = None,
                      recompute_num_layers: int = 0,
                      map: _t.Optional[_t.Mapping[str, str]] = None) -> "Partition":
        """Evaluate a Megatron-LM --pipeline-model-parallel-layout (and its
        recompute options, spelled as Megatron-LM's flags) on `model` for
        `plan` and `schedule`: step time, bubble, per-device memory; status
        "feasible" when it fits the memory limit, "infeasible" otherwise.
        Raises InvalidArgument naming the column of a malformed layout."""
        _check_plan(model, plan)
        args = [_text_arg("schedule", schedule), _text_arg("layout", layout), _map_arg(map),
                None if recompute_granularity is None
                else _text_arg("recompute_granularity", recompute_granularity),
                None if recompute_method is None
                else _text_arg("recompute_method", recompute_method),
                _u32("recompute_num_layers", recompute_num_layers)]
        lib = _c()
        out = ctypes.c_void_p()
        with _using(model, plan) as (m, p):
            _check(lib.psched_partition_from_layout(m, p, *args, ctypes.byref(out)))
        return cls._own(out, model, schedule)

    def __repr__(self) -> str:
        return (f"<pipesched.Partition {self.status} makespan={self.makespan} "
                f"stages={[s.count for s in self.stages]}>")


def _map_arg(map: _t.Optional[_t.Mapping[str, str]]) -> _t.Optional[bytes]:
    if map is None:
        return None
    if not isinstance(map, _t.Mapping):
        raise TypeError(f"map must be a mapping letter -> group name, not {type(map).__name__}")
    return _text_arg("map", ",".join(f"{k}={v}" for k, v in map.items()))


def _fqn_arg(fqn: object) -> _t.Optional[bytes]:
    if fqn is None or isinstance(fqn, str):
        return None if fqn is None else _text_arg("fqn", fqn)
    if not isinstance(fqn, _t.Mapping):
        raise TypeError(f"fqn must be a str or a mapping letter -> names, not "
                        f"{type(fqn).__name__}")
    parts = []
    for k, v in fqn.items():
        names = [v] if isinstance(v, str) else list(v)
        parts.append(f"{k}=" + ",".join(names))
    return _text_arg("fqn", ";".join(parts))


def _check_plan(model: object, plan: object) -> None:
    _of_type("model", model, Model)
    _of_type("plan", plan, _Plan)


def _method(method: object) -> int:
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, not {type(method).__name__}")
    if method not in METHODS:
        raise _invalid(f"method ({method!r}) must be one of {', '.join(METHODS)}")
    return METHODS.index(method)


def partition(model: Model, plan: _Plan, schedule: str, method: str = "ilp",
              time_limit: float = 10.0, allow_empty: bool = False,
              chunks: _t.Optional[int] = None) -> Partition:
    """Partition `model` over the stages of `schedule` (a generator name) for
    `plan` (a pipesched.Plan: devices, microbatches, chunks, mem_limit in
    bytes, comm).

    method: "ilp" (exact where a DP is exact: v = 1, v = 2 with loop or V
    placement; else the GLPK MILP), "dp", "even", "even-accounted" or
    "dp-time". time_limit bounds the whole call in seconds. chunks, when
    given, overrides the plan's v. An infeasible memory limit is not an
    error: the Partition says so (status "infeasible", min_memory).
    """
    _check_plan(model, plan)
    name = _text_arg("schedule", schedule)
    kind = _method(method)
    limit = _real("time_limit", time_limit)
    v = None if chunks is None else _u32("chunks", chunks)
    lib = _c()
    opts = _PartitionOptions(_PARTITION_OPTIONS_VERSION, kind, limit,
                             _ALLOW_EMPTY if allow_empty else 0)
    own = plan.copy() if v is not None else plan
    out = ctypes.c_void_p()
    try:
        with _using(model, own) as (m, p):
            if v is not None:
                _check(lib.psched_plan_set_chunks(p, v))
            _check(lib.psched_partition(m, p, name, ctypes.byref(opts), ctypes.byref(out)))
    finally:
        if own is not plan:
            own.close()
    return Partition._own(out, model, schedule)


class Alternative(_t.NamedTuple):
    """One (schedule, v) of a search: status "optimal", "feasible",
    "infeasible" or "error"; fits (within the memory limit); simulated
    makespan, bubble_ratio, peak_memory; even_makespan (Megatron's even
    split of the same schedule, None when it does not fit); error (the
    library's message when the generator accepts none of the chunk counts,
    e.g. chimera with an odd number of devices); partition (a Partition, None on error); vocab (the generator
    option vocab of a Vocabulary Parallelism candidate, 0 for a plain one)."""
    schedule: str
    chunks: int
    status: str
    fits: bool
    makespan: _t.Optional[float]
    bubble_ratio: _t.Optional[float]
    peak_memory: _t.Optional[float]
    even_makespan: _t.Optional[float]
    error: _t.Optional[str]
    partition: _t.Optional[Partition]
    vocab: int = 0


class SearchResult:
    """Ranked alternatives of plan_search(): those that fit by step time,
    then misfits by the memory they need, then failures. best is the first
    alternative when it fits, else None."""

    solve_time: float
    alternatives: _t.List[Alternative]

    def __init__(self, ptr: _t.Any, _token: object = None,
                 model: _t.Optional[Model] = None) -> None:
        _internal_only(_token, "SearchResult", "plan_search()")
        lib = _c()
        owner = _SearchHandle(ptr)
        self.solve_time = lib.psched_search_solve_time(ptr)
        self.alternatives = []
        for i in range(lib.psched_search_count(ptr)):
            failed = lib.psched_search_error(ptr, i) != _lib.OK
            part = lib.psched_search_partition(ptr, i)
            self.alternatives.append(Alternative(
                lib.psched_search_schedule(ptr, i).decode(),
                lib.psched_search_chunks(ptr, i),
                "error" if failed else _STATUS[lib.psched_search_status(ptr, i)],
                bool(lib.psched_search_fits(ptr, i)),
                _nan_none(lib.psched_search_makespan(ptr, i)),
                _nan_none(lib.psched_search_bubble_ratio(ptr, i)),
                _nan_none(lib.psched_search_peak_memory(ptr, i)),
                _nan_none(lib.psched_search_even_makespan(ptr, i)),
                lib.psched_search_error_message(ptr, i).decode() if failed else None,
                Partition(part, _INTERNAL)._attach(
                    model, lib.psched_search_schedule(ptr, i).decode(), owner, part)
                if part else None,
                lib.psched_search_vocab(ptr, i)))

    @property
    def best(self) -> _t.Optional[Alternative]:
        """The fastest alternative that fits, None when none does."""
        a = self.alternatives
        return a[0] if a and a[0].fits else None

    def __repr__(self) -> str:
        b = self.best
        head = f"{b.schedule} v={b.chunks} makespan={b.makespan}" if b else "nothing fits"
        return f"<pipesched.SearchResult {head}, {len(self.alternatives)} alternatives>"


def plan_search(model: Model, plan: _Plan,
                schedules: _t.Union[str, _t.Sequence[str], None] = None,
                time_limit: float = 1.0, allow_empty: bool = False,
                one_round: bool = False) -> SearchResult:
    """The fastest plan that fits: every schedule (or those named) × v in
    {1, 2, 4} (only plan.chunks when it is not 0) × partition × recompute,
    each partition given `time_limit` seconds (the time candidates leave goes
    to a second round of those not proven optimal, at most as long as the
    first; one_round=True skips it, about half the time), simulated and
    ranked. The memory limit is plan.mem_limit (bytes)."""
    _check_plan(model, plan)
    lib = _c()
    names = None
    count = 0
    if schedules is not None:
        if isinstance(schedules, str):
            schedules = [schedules]
        encoded = [_text_arg(f"schedules[{i}]", s) for i, s in enumerate(schedules)]
        names = (ctypes.c_char_p * len(encoded))(*encoded)
        count = len(encoded)
    opts = _SearchOptions(_SEARCH_OPTIONS_VERSION, _real("time_limit", time_limit),
                          (_ALLOW_EMPTY if allow_empty else 0) |
                          (_ONE_ROUND if one_round else 0))
    out = ctypes.c_void_p()
    with _using(model, plan) as (m, p):
        _check(lib.psched_plan_search(m, p, names, count, ctypes.byref(opts),
                                      ctypes.byref(out)))
    return SearchResult(out, _INTERNAL, model)
