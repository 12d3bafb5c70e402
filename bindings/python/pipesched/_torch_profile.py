"""Measured layer profiles (issue 16 item 1): pipesched.torch.profile_layers.

Runs each layer (any ``torch.nn.Module``; a layer group is a module holding
several) on the device it lives on and measures what the optimizer's layer
profile holds (docs/pytorch.md, "Measured layer profiles"):

- f: the forward, with autograd recording (as in training);
- b, w: the backward split the way the zero-bubble runtimes split it
  (PyTorch's ``stage_backward_input`` then ``stage_backward_weight``, what
  ``_PipelineScheduleRuntime`` runs for I and W): gradients with respect to
  the layer's inputs first, keeping the gradients at the nodes that lead to
  the weights, then the weight gradients from those;
- act: the bytes of the tensors autograd keeps for backward, recorded by a
  ``torch.autograd.graph.saved_tensors_hooks`` pack hook during the forward
  (each storage once, parameters and buffers excluded);
- param: weights + gradients + optimizer state (``optimizer_states`` tensors
  of the parameter's size per trainable parameter: 2 for Adam/AdamW);
- per recompute variant ("selective": the selected submodules run under
  ``torch.utils.checkpoint``; "full": the whole layer does) its act, measured
  the same way, and its extra backward time: the fused backward of the
  variant minus the fused backward without recompute, per repeat.

Times are medians over ``repeats`` runs (each run goes over every layer, so
a burst of load lands on all layers alike), in milliseconds; bytes are bytes.
Importing this module imports torch (``import pipesched`` never does).
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
import typing as _t

import torch
from torch.distributed.pipelining import _backward as _pb
from torch.utils.checkpoint import checkpoint as _checkpoint

__all__ = ["profile_layers", "LayerProfile", "Profile", "PROFILE_RECOMPUTE", "CSV_HEADER",
           "default_selective"]

PROFILE_RECOMPUTE = ("none", "selective", "full")
CSV_HEADER = "type,count,f,b,w,act,param,act_selective,extra_selective,act_full,extra_full"


class LayerProfile(_t.NamedTuple):
    """One measured layer. Times in milliseconds (medians over the
    repeats), sizes in bytes. ``backward`` is the fused backward (inputs
    and weights in one ``torch.autograd.grad``), measured beside b and w.
    ``selective`` and ``full`` are (act bytes, extra backward ms) or None
    (not requested, or, for selective, no submodule selected)."""
    type: str
    f: float
    b: float
    w: float
    backward: float
    act: int
    param_bytes: int
    grad_bytes: int
    optimizer_bytes: int
    selective: _t.Optional[_t.Tuple[int, float]]
    full: _t.Optional[_t.Tuple[int, float]]

    @property
    def param(self) -> int:
        """The CSV's param column: weights + gradients + optimizer state."""
        return self.param_bytes + self.grad_bytes + self.optimizer_bytes


class Profile:
    """The result of profile_layers(): ``layers`` (LayerProfile, model
    order), ``repeats``, ``optimizer_states``. ``to_csv()`` is the layer
    profile ``pipesched partition/plan --model`` read; ``model()`` the same
    as a pipesched.Model."""

    def __init__(self, layers: _t.List[LayerProfile], repeats: int,
                 optimizer_states: int) -> None:
        self.layers = layers
        self.repeats = repeats
        self.optimizer_states = optimizer_states

    def to_csv(self) -> str:
        lines = ["# pipesched.torch.profile_layers: times in milliseconds (median of "
                 f"{self.repeats}), bytes; param = weights + gradients + "
                 f"{self.optimizer_states} optimizer state(s) per trainable parameter",
                 CSV_HEADER]
        for lp in self.layers:
            cells = [lp.type, "1", _ms(lp.f), _ms(lp.b), _ms(lp.w), str(lp.act), str(lp.param)]
            for variant in (lp.selective, lp.full):
                cells += ["", ""] if variant is None else [str(variant[0]), _ms(variant[1])]
            lines.append(",".join(cells))
        return "\n".join(lines) + "\n"

    def write_csv(self, path: _t.Union[str, "os.PathLike[str]"]) -> None:
        with open(os.fspath(path), "w", newline="") as f:
            f.write(self.to_csv())

    def model(self) -> _t.Any:
        import pipesched
        return pipesched.Model.from_csv(self.to_csv())

    def __repr__(self) -> str:
        return f"<pipesched.torch.Profile {len(self.layers)} layers>"


def _ms(seconds_as_ms: float) -> str:
    return format(seconds_as_ms, ".6g")


def default_selective(name: str, module: torch.nn.Module) -> bool:
    """The default choice of what "selective" recomputes: attention blocks,
    i.e. ``torch.nn.MultiheadAttention`` and any module whose class name
    ends in "Attention" (Megatron's ``CoreAttention``/``DotProductAttention``,
    Hugging Face's ``*Attention``); the outermost such module is taken."""
    return isinstance(module, torch.nn.MultiheadAttention) or \
        type(module).__name__.endswith("Attention")


def _type_name(module: torch.nn.Module, given: _t.Optional[str]) -> str:
    name = type(module).__name__ if given is None else given
    if given is None:
        name = "".join(c if 32 < ord(c) < 127 and c not in ',"' else "_" for c in name)[:31]
    elif not (1 <= len(name) <= 31) or any(not 32 < ord(c) < 127 or c in ',"' for c in name):
        raise ValueError(f"names: {name!r} must have 1..31 printable ASCII characters "
                         "without space, comma or quote (a layer-profile type name)")
    return name


def _as_tuple(x: _t.Any, what: str) -> _t.Tuple[torch.Tensor, ...]:
    xs = x if isinstance(x, (tuple, list)) else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what}[{i}] must be a torch.Tensor, not {type(t).__name__} "
                            "(a layer takes and returns tensors or tuples of tensors)")
    return tuple(xs)


def _fresh_inputs(xs: _t.Tuple[torch.Tensor, ...]) -> _t.Tuple[torch.Tensor, ...]:
    """Detached leaves; floating ones require grad, as a stage's inputs do."""
    out = []
    for t in xs:
        t = t.detach()
        if t.is_floating_point() or t.is_complex():
            t.requires_grad_(True)
        out.append(t)
    return tuple(out)


class _SavedBytes:
    """A pack hook that records the storage of every tensor autograd saves
    (each storage once; parameters and buffers excluded)."""

    def __init__(self, exclude: _t.Set[int]) -> None:
        self.exclude = exclude
        self.seen: _t.Dict[int, int] = {}
        self.keep: _t.List[torch.Tensor] = []  # holds storages alive: no pointer reuse

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        try:
            storage = t.untyped_storage()
            ptr, n = storage.data_ptr(), storage.nbytes()
        except (RuntimeError, NotImplementedError, TypeError):
            return t  # a tensor without a plain storage (sparse, nested)
        if ptr not in self.exclude and ptr not in self.seen:
            self.seen[ptr] = n
            self.keep.append(t)
        return t

    @staticmethod
    def unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    @property
    def total(self) -> int:
        return sum(self.seen.values())


@contextlib.contextmanager
def _checkpointed(layer: torch.nn.Module, select: _t.Callable[[str, torch.nn.Module], bool]
                  ) -> _t.Iterator[int]:
    """Run the outermost submodules `select` picks under checkpoint (their
    forward replaced on the instance, restored on exit); yields how many."""
    patched: _t.List[_t.Tuple[torch.nn.Module, bool, _t.Any]] = []
    taken: _t.List[str] = []
    for name, mod in layer.named_modules():
        if not name or any(name.startswith(p + ".") for p in taken) or not select(name, mod):
            continue
        taken.append(name)
        had = "forward" in mod.__dict__
        old = mod.__dict__.get("forward")
        inner = mod.forward

        def run(*args: _t.Any, _inner: _t.Any = inner, **kwargs: _t.Any) -> _t.Any:
            return _checkpoint(_inner, *args, use_reentrant=False, **kwargs)
        mod.forward = run  # type: ignore[method-assign]
        patched.append((mod, had, old))
    try:
        yield len(patched)
    finally:
        for mod, had, old in patched:
            if had:
                mod.forward = old  # type: ignore[method-assign]
            else:
                del mod.forward


def _forward(layer: torch.nn.Module, xs: _t.Tuple[torch.Tensor, ...], variant: str,
             select: _t.Callable[[str, torch.nn.Module], bool]) -> _t.Tuple[torch.Tensor, ...]:
    if variant == "full":
        out = _checkpoint(layer, *xs, use_reentrant=False)
    elif variant == "selective":
        with _checkpointed(layer, select):
            out = layer(*xs)
    else:
        out = layer(*xs)
    return _as_tuple(out, "layer output")


def _backward_input(outs: _t.List[torch.Tensor], grads: _t.List[torch.Tensor],
                    leaves: _t.Tuple[torch.Tensor, ...], params: _t.List[torch.Tensor]
                    ) -> _t.List[_t.Dict[str, _t.Any]]:
    """The I half of PyTorch's zero-bubble split (``stage_backward_input``):
    the gradients of the inputs, with a pre-hook on every node where a
    weight's branch leaves the input's path keeping the gradient flowing
    into it, for ``stage_backward_weight``. Written out here because
    ``stage_backward_input`` ends with ``detach_()`` on the outputs, which
    refuses an output that is a view (a Linear on a 3-d input returns one)."""
    node = _pb._get_grad_fn_or_grad_acc
    groups = _pb.get_param_groups([n for n in map(node, leaves) if n is not None],
                                  [n for n in map(node, params) if n is not None],
                                  _pb.construct_reverse_graph([node(o) for o in outs]))
    handles = []
    for group in groups:
        group["intermediates"] = list(group["intermediates"])
        group["grads"] = [None] * len(group["intermediates"])
        for i, inter in enumerate(group["intermediates"]):
            def keep(grad_inputs: _t.Any, group: _t.Any = group, i: int = i) -> None:
                group["grads"][i] = grad_inputs
            handles.append(inter.register_prehook(keep))
    try:
        torch.autograd.grad(outs, [t for t in leaves if t.requires_grad], grads,
                            retain_graph=True, allow_unused=True)
    finally:
        for h in handles:
            h.remove()
    return groups


class _Timer:
    def __init__(self, cuda: bool) -> None:
        self.cuda = cuda

    def now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


def _differentiable(outs: _t.Tuple[torch.Tensor, ...]) -> _t.List[int]:
    return [i for i, o in enumerate(outs) if o.requires_grad]


def _prepare(layer: torch.nn.Module, xs: _t.Tuple[torch.Tensor, ...], name: str,
             variants: _t.Sequence[str], select: _t.Callable[[str, torch.nn.Module], bool],
             counted: _t.Set[int], optimizer_states: int
             ) -> _t.Tuple[_t.Callable[[bool], None], _t.Callable[[], LayerProfile],
                           _t.Tuple[torch.Tensor, ...]]:
    """Measure a layer's bytes now; return (sample, finish, output): sample(
    record) runs one timed repeat (kept when record), finish() the
    LayerProfile of the medians, output the next layer's input."""
    params = [p for p in layer.parameters() if p.requires_grad]
    exclude = {t.untyped_storage().data_ptr()
               for t in list(layer.parameters()) + list(layer.buffers())}
    cuda = any(t.is_cuda for t in xs) or any(p.is_cuda for p in params)
    clock = _Timer(cuda)
    gen = torch.Generator(device="cpu").manual_seed(0x5eed)

    # Activation bytes per variant, and the layer's output (the next input).
    acts: _t.Dict[str, int] = {}
    selected = 0
    for v in ["none"] + list(variants):
        rec = _SavedBytes(exclude)
        leaves = _fresh_inputs(xs)
        with torch.autograd.graph.saved_tensors_hooks(rec.pack, rec.unpack):
            if v == "selective":
                with _checkpointed(layer, select) as selected:
                    outs = _as_tuple(layer(*leaves), "layer output")
            else:
                outs = _forward(layer, leaves, v, select)
        acts[v] = rec.total
        if v == "none":
            nxt = tuple(o.detach() for o in outs)
            grads = tuple(torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device)
                          if o.is_floating_point() else None for o in outs)
        del outs, rec

    def fused(v: str) -> float:
        leaves = _fresh_inputs(xs)
        outs = _forward(layer, leaves, v, select)
        idx = _differentiable(outs)
        wrt = [t for t in leaves if t.requires_grad] + params
        if not idx or not wrt:
            return 0.0
        t0 = clock.now()
        torch.autograd.grad([outs[i] for i in idx], wrt, [grads[i] for i in idx],
                            allow_unused=True)
        return clock.now() - t0

    def split() -> _t.Tuple[float, float, float]:
        leaves = _fresh_inputs(xs)
        t0 = clock.now()
        outs = _forward(layer, leaves, "none", select)
        t1 = clock.now()
        idx = _differentiable(outs)
        f = t1 - t0
        if not idx:
            return f, 0.0, 0.0
        o, g = [outs[i] for i in idx], [grads[i] for i in idx]
        if not any(t.requires_grad for t in leaves):
            # Nothing to send upstream (token ids): the whole backward is W.
            if not params:
                return f, 0.0, 0.0
            t0 = clock.now()
            torch.autograd.grad(o, params, g, allow_unused=True)
            return f, 0.0, clock.now() - t0
        for p in params:
            p.grad = None
        t0 = clock.now()
        groups = _backward_input(o, g, leaves, params)
        t1 = clock.now()
        _pb.stage_backward_weight(iter(params), groups)
        t2 = clock.now()
        for p in params:
            p.grad = None
        return f, t1 - t0, t2 - t1

    samples: _t.Dict[str, _t.List[float]] = {k: [] for k in ("f", "b", "w", "bw")}
    extra: _t.Dict[str, _t.List[float]] = {v: [] for v in variants}

    def sample(record: bool) -> None:
        f, b, w = split()
        base = fused("none")
        diffs = {v: fused(v) - base for v in variants}
        if not record:
            return
        for k, x in zip(("f", "b", "w", "bw"), (f, b, w, base)):
            samples[k].append(x * 1e3)
        for v in variants:
            extra[v].append(diffs[v] * 1e3)

    pbytes = gbytes = 0
    for p in layer.parameters():
        if id(p) in counted:  # shared (tied) weights count where first seen
            continue
        counted.add(id(p))
        n = p.numel() * p.element_size()
        pbytes += n
        if p.requires_grad:
            gbytes += n

    def finish() -> LayerProfile:
        med = {k: statistics.median(x) for k, x in samples.items()}
        variant = {v: (acts[v], max(0.0, statistics.median(extra[v]))) for v in variants}
        if "selective" in variant and not selected:
            variant.pop("selective")  # nothing selected: no such variant
        return LayerProfile(name, med["f"], med["b"], med["w"], med["bw"], acts["none"],
                            pbytes, gbytes, optimizer_states * gbytes,
                            variant.get("selective"), variant.get("full"))
    return sample, finish, nxt


def profile_layers(layers: _t.Union[torch.nn.Module, _t.Sequence[torch.nn.Module]],
                   sample_input: _t.Any, *, repeats: int = 10,
                   recompute: _t.Sequence[str] = PROFILE_RECOMPUTE,
                   names: _t.Optional[_t.Sequence[str]] = None, warmup: int = 1,
                   optimizer_states: int = 2,
                   selective: _t.Callable[[str, torch.nn.Module], bool] = default_selective,
                   path: _t.Union[str, "os.PathLike[str]", None] = None) -> Profile:
    """Measure every layer of `layers` (a sequence of modules, or a module
    whose children are the layers, e.g. ``nn.Sequential``) on one
    micro-batch: `sample_input` (a tensor or tuple of tensors on the
    layers' device) feeds the first layer, each layer's output the next.

    repeats: timed runs per layer (medians are kept; after `warmup`
    untimed runs). recompute: the variants to measure, from "none",
    "selective", "full" ("none" is always measured: it is the base).
    names: the CSV type name per layer (default: the module's class name).
    optimizer_states: optimizer tensors per trainable parameter, each of the
    parameter's size and dtype (2: Adam/AdamW's exp_avg and exp_avg_sq as
    torch.optim keeps them; 1: SGD with momentum; 0: plain SGD).
    selective: (qualified name, module) -> bool picks the submodules
    "selective" recomputes (default_selective: attention blocks). path:
    also write the CSV there. Returns a Profile.
    """
    if isinstance(layers, torch.nn.Module):
        mods = list(layers.children())
        if not mods:
            mods = [layers]
    else:
        mods = list(layers)
    if not mods:
        raise ValueError("layers is empty: pass the model's layers in order")
    for i, m in enumerate(mods):
        if not isinstance(m, torch.nn.Module):
            raise TypeError(f"layers[{i}] must be a torch.nn.Module, not {type(m).__name__}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats ({repeats!r}) must be an int >= 1")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup ({warmup!r}) must be an int >= 0")
    if isinstance(optimizer_states, bool) or not isinstance(optimizer_states, int) \
            or optimizer_states < 0:
        raise ValueError(f"optimizer_states ({optimizer_states!r}) must be an int >= 0")
    if isinstance(recompute, str):
        recompute = (recompute,)
    for r in recompute:
        if r not in PROFILE_RECOMPUTE:
            raise ValueError(f"recompute: {r!r} is not one of {', '.join(PROFILE_RECOMPUTE)}")
    variants = [v for v in ("selective", "full") if v in recompute]
    if names is not None:
        names = list(names)
        if len(names) != len(mods):
            raise ValueError(f"names has {len(names)} entries for {len(mods)} layers")
    xs = _as_tuple(sample_input, "sample_input")
    counted: _t.Set[int] = set()
    prepared = []
    for i, mod in enumerate(mods):
        name = _type_name(mod, None if names is None else names[i])
        sample, finish, xs = _prepare(mod, xs, name, variants, selective, counted,
                                      optimizer_states)
        prepared.append((sample, finish))
    # Repeat by repeat over all layers, not layer by layer: a burst of load
    # from elsewhere then lands on every layer alike instead of inflating
    # one layer's every sample.
    for r in range(warmup + repeats):
        for sample, _ in prepared:
            sample(r >= warmup)
    out: _t.List[LayerProfile] = []
    for i, (_, finish) in enumerate(prepared):
        lp = finish()
        for field in ("f", "b", "w", "backward"):
            if not math.isfinite(getattr(lp, field)):
                raise RuntimeError(f"layer {i} ({lp.type}): {field} time is not finite")
        out.append(lp)
    prof = Profile(out, repeats, optimizer_states)
    if path is not None:
        prof.write_csv(path)
    return prof
