"""pipesched schedules executed by PyTorch's own pipelining runtime.

``torch.distributed.pipelining`` runs any action order through
``_PipelineScheduleRuntime`` (the class behind torchtitan's
``pipeline_parallel_schedule_csv``). This module turns a pipesched
:class:`~pipesched.Schedule` into that runtime's input::

    import pipesched.torch as pt
    order = pt.to_pipeline_order(schedule)     # {rank: [_Action, ...]}
    sched = pt.make_schedule(stages, "zb-h1", n_microbatches=8, loss_fn=loss)
    sched.step(x, target=y, losses=losses)

and measures layer profiles for the optimizer (``profile_layers``, in
``_torch_profile.py``)::

    prof = pt.profile_layers(model.layers, x, path="model.csv")

Importing this module imports torch (``import pipesched`` never does). The
pinned version is torch==2.13.0 (``pip install .[torch]``); the private
PyTorch names used here (``_Action``, ``_PipelineScheduleRuntime``,
``_add_reduce_grad``) are those of that release.

Name mapping (pipesched op → PyTorch action): F → ``F``, B (backward for
inputs) → ``I``, W → ``W``, BW (full backward) → ``B``, an overlapped pair →
``OVERLAP_F_B`` with the two ops as ``sub_actions``, and after lowering
SEND_F/RECV_F/SEND_B/RECV_B by the same names. Stage numbers are the global
(virtual) stage indices; ranks are pipesched's devices.
"""
from __future__ import annotations

import ctypes
import os
import struct
import typing as _t

try:
    import torch  # noqa: F401
    from torch.distributed.pipelining import schedules as _pt
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(f"pipesched.torch needs torch==2.13.0 (pip install 'pipesched[torch]' "
                      f"or pip install torch==2.13.0): {_e}") from _e

import pipesched
from . import _lib
from ._errors import error as _error
from ._torch_profile import (CSV_HEADER, PROFILE_RECOMPUTE, LayerProfile, Profile,  # noqa: F401
                             default_selective, profile_layers)

__all__ = ["to_pipeline_order", "to_pipeline_order_with_comms", "stage_to_rank",
           "stages_of_rank", "resolve", "make_schedule", "write_csv",
           "PipeschedSchedule", "TORCH_VERSION", "profile_layers", "Profile", "LayerProfile",
           "default_selective"]

TORCH_VERSION = "2.13.0"
"""The torch release this module is written and tested against."""

_CT = _pt._ComputationType
_KIND_TO_TYPE: dict = {}


def _kind_to_type():
    """{pipesched kind name: PyTorch's _ComputationType} for every kind
    PyTorch has, matched through the library's PyTorch spelling of each
    kind (psched_op_kind_str with PSCHED_NAMING_PYTORCH) and PyTorch's own
    parser, so neither side's names are written out here."""
    if not _KIND_TO_TYPE:
        lib, table, kind = _lib.load(), {}, 0
        while True:
            ours = lib.psched_op_kind_str(kind, _lib.NAMING_PIPESCHED)
            if ours is None:
                break
            try:
                table[ours.decode()] = _CT.from_str(
                    lib.psched_op_kind_str(kind, _lib.NAMING_PYTORCH).decode())
            except (RuntimeError, ValueError):
                pass  # a kind PyTorch's runtime has no action for
            kind += 1
        _KIND_TO_TYPE.update(table)
    return _KIND_TO_TYPE
LOWERINGS = ("pytorch", "pipesched")


def _raw(schedule, device):
    """(kind name, stage, micro-batch, flags) of every op of a device,
    unpacked in one pass from the library's packed psched_op array."""
    raw = schedule._raw_ops(device)
    fmt = "".join(f[1]._type_ for f in _lib.psched_op._fields_)
    size = ctypes.sizeof(_lib.psched_op)
    if struct.calcsize("=" + fmt) != size:
        raise _error(_lib.EUNSUPPORTED, f"psched_op is {size} bytes, not {fmt}")
    kinds = pipesched._kinds()  # the library's names (psched_op_kind_str)
    fields = [f[0] for f in _lib.psched_op._fields_]
    ik, ist, imb, ifl = (fields.index(n) for n in ("kind", "stage", "microbatch", "flags"))
    return [(kinds[t[ik]] if t[ik] < len(kinds) else str(t[ik]), t[ist], t[imb], t[ifl])
            for t in struct.iter_unpack("=" + fmt, bytes(raw))]


def _actions_of(schedule, device, stage_rank=None):
    """One device's ops as _Actions; an overlapped pair (OVERLAP_NEXT on the
    first op) becomes one OVERLAP_F_B action, shaped as _Action.from_str
    parses "(0F3;3B1)OVERLAP_F_B" (stage -1, no micro-batch). With
    stage_rank (a lowered schedule), each BATCH_NEXT group of comm ops is
    written in rank-parity order (_parity_order)."""
    out, pending, group = [], None, []
    action, types = _pt._Action, _kind_to_type()
    new = tuple.__new__  # _Action(stage, type, mb) without the keyword-default wrapper
    overlap, batch = pipesched.OVERLAP_NEXT, pipesched.BATCH_NEXT
    for kind, stage, mb, flag in _raw(schedule, device):
        t = types.get(kind)
        if t is None:
            raise _error(_lib.EUNSUPPORTED,
                         f"device {device}: op kind {kind!r} has no PyTorch action")
        a = new(action, (stage, t, mb, None))
        if stage_rank is not None and (group or flag & batch):
            group.append(a)
            if not flag & batch:
                out.extend(_parity_order(group, device, stage_rank))
                group = []
        elif pending is not None:
            out.append(action(-1, _CT.OVERLAP_F_B, None, (pending, a)))
            pending = None
        elif flag & overlap:
            pending = a
        else:
            out.append(a)
    if pending is not None or group:
        raise _error(_lib.EINVALID,
                     f"device {device}: the last op is marked overlapped or batched with "
                     "a next op that does not exist")
    return out


def _peer(a, stage_rank):
    if a.computation_type in (_CT.SEND_F, _CT.RECV_B):
        return stage_rank[a.stage_index + 1]
    return stage_rank[a.stage_index - 1]


def _parity_order(group, rank, stage_rank):
    """A batched group of comm ops (posted together under pipesched's
    rendezvous model) as the sequence PyTorch's runtime posts one call at a
    time. Calls between two ranks meet in posting order and each waits for
    its match (NCCL without grouping), so the two sides must not both lead
    with a SEND (or both with a RECV): per peer, the lower rank posts its
    RECVs first and the higher rank its SENDs first (the rank-parity rule
    of pytorch#172668's fix); peers in ascending rank. Sends keep their
    order among themselves, and so do receives, so transfers still pair up
    as the lowering listed them."""
    def key(a):
        peer = _peer(a, stage_rank)
        is_send = a.computation_type in (_CT.SEND_F, _CT.SEND_B)
        return (peer, 0 if is_send == (rank > peer) else 1)
    return sorted(group, key=key)  # stable: keeps list order within a class


def _refuse_chains(schedule):
    chains = schedule.plan.chains
    if chains != 1:
        raise _error(_lib.EUNSUPPORTED,
                     f"schedule '{schedule.name}' runs {chains} chains (DualPipe, Chimera: "
                     "two pipelines in opposite directions over duplicated stage parameters); "
                     "PyTorch's _PipelineScheduleRuntime maps every stage index to exactly "
                     "one rank and holds one copy of each stage, so it cannot run it "
                     "faithfully; use 'dualpipev' (one chain, V placement) instead")


def to_pipeline_order(schedule: pipesched.Schedule) -> dict[int, list[_pt._Action]]:
    """``{rank: [_Action, ...]}``: the compute order of every device, in
    PyTorch's ``pipeline_order`` form (no idle ``None`` slots: the runtime
    runs actions back to back). Raises Unsupported for a two-chain
    (DualPipe, Chimera) schedule."""
    _refuse_chains(schedule)
    return {d: _actions_of(schedule, d) for d in range(schedule.devices)}


def to_pipeline_order_with_comms(schedule: pipesched.Schedule,
                                 costs: pipesched.Plan | None = None,
                                 mode: str = "async") -> dict[int, list[_pt._Action]]:
    """``{rank: [_Action, ...]}`` of pipesched's comm lowering
    (``Schedule.lower(costs, mode=mode)``): compute actions plus SEND_F/
    RECV_F/SEND_B/RECV_B, with a ``REDUCE_GRAD`` after each stage's last
    backward (the action that scales gradients by 1/m in PyTorch's runtime,
    which its own compute_only lowering inserts too).

    mode "async" (default): PyTorch's runtime posts every SEND/RECV as a
    non-blocking isend/irecv and a compute action waits only for the
    receive feeding it, so each SEND goes right after its producer and each
    RECV right after the rank's last compute action ending (in pipesched's
    simulation with ``costs``) by the time its producer ends: the transfer
    overlaps the compute in between. mode "rendezvous": the blocking
    lowering; PyTorch posts comm actions one at a time, so each of its
    batched groups is written in rank-parity order: the lower rank of a
    pair receives first, the higher one sends first, which keeps the order
    deadlock-free where calls rendezvous."""
    _refuse_chains(schedule)
    stage_rank = stage_to_rank(schedule)
    with schedule.lower(costs, mode=mode) as lowered:
        m = schedule.microbatches
        return {d: _pt._add_reduce_grad(_actions_of(lowered, d, stage_rank), m)
                for d in range(lowered.devices)}


def stage_to_rank(schedule: pipesched.Schedule) -> dict[int, int]:
    """``{stage: rank}`` of the schedule's placement (loop, V shape or
    custom): what PyTorch calls ``stage_index_to_group_rank``."""
    _refuse_chains(schedule)
    mapping = {}
    for d in range(schedule.devices):
        for op in schedule.ops(d):
            if op.kind in ("F", "B", "W", "BW"):
                mapping.setdefault(op.stage, d)
    plan = schedule.plan
    try:
        for s in range(plan.stages):
            if s not in mapping:
                dev = plan.stage_device(s)
                if dev is not None:
                    mapping[s] = dev
    finally:
        plan.close()
    return dict(sorted(mapping.items()))


def stages_of_rank(schedule: pipesched.Schedule, rank: int) -> list[int]:
    """The stage indices a rank holds, ascending (build one PipelineStage
    for each, in this order)."""
    return [s for s, r in stage_to_rank(schedule).items() if r == rank]


def resolve(schedule: pipesched.Schedule | str, n_microbatches: int | None = None,
            devices: int | None = None, chunks: int = 0, **plan_args: _t.Any
            ) -> pipesched.Schedule:
    """A pipesched Schedule from a Schedule (returned as is) or a generator
    name plus plan arguments (devices, micro-batches, chunks, cost, ...)."""
    if isinstance(schedule, pipesched.Schedule):
        return schedule
    if not isinstance(schedule, str):
        raise TypeError(f"schedule must be a pipesched.Schedule or a generator name, "
                        f"not {type(schedule).__name__}")
    if devices is None or n_microbatches is None:
        raise _error(_lib.EINVAL, f"schedule '{schedule}' given by name needs devices and "
                     "n_microbatches")
    return pipesched.generate(schedule, devices=devices, microbatches=n_microbatches,
                              chunks=chunks, **plan_args)


def write_csv(schedule: pipesched.Schedule, path: str | os.PathLike[str],
              format: str = "compute_only", costs: pipesched.Plan | None = None) -> None:
    """Write the file PyTorch's ``_PipelineScheduleRuntime._load_csv(path,
    format)`` (torchtitan's ``pipeline_parallel_schedule_csv``) reads: one
    row per rank. "compute_comms" writes pipesched's lowering, including
    the REDUCE_GRAD actions the runtime needs to scale gradients."""
    if format == "compute_only":
        order = to_pipeline_order(schedule)
    elif format == "compute_comms":
        order = to_pipeline_order_with_comms(schedule, costs)
    else:
        raise ValueError(f"format ({format!r}) must be 'compute_only' or 'compute_comms'")
    with open(os.fspath(path), "w", newline="") as f:
        for rank in sorted(order):
            f.write(",".join(str(a) for a in order[rank]) + "\n")


class PipeschedSchedule(_pt._PipelineScheduleRuntime):
    """A PyTorch runtime schedule whose ``step()`` runs a pipesched order.

    ``pipeline_order`` holds the compute order; ``pipeline_order_with_comms``
    what every rank executes: PyTorch's own send/recv insertion of that order
    (lowering "pytorch") or pipesched's (lowering "pipesched"). Build it with
    :func:`make_schedule`.
    """

    def __init__(self, stages: _t.Sequence[_t.Any], n_microbatches: int,
                 loss_fn: _t.Callable[..., _t.Any] | None,
                 order: dict[int, list[_pt._Action]], *,
                 comms: dict[int, list[_pt._Action]] | None = None, scale_grads: bool = True,
                 output_merge_spec: _t.Any = None, defer_pp_recv: bool = False) -> None:
        super().__init__(stages=stages, n_microbatches=n_microbatches, loss_fn=loss_fn,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads,
                         defer_pp_recv=defer_pp_recv)
        self.pipeline_order = {r: list(a) for r, a in order.items()}
        if comms is None:
            self._prepare_schedule_with_comms(self.pipeline_order)
        else:
            self._prepare_schedule_with_comms({r: list(a) for r, a in comms.items()},
                                              format="compute_comms")


def make_schedule(stages: _t.Sequence[_t.Any], schedule: pipesched.Schedule | str,
                  n_microbatches: int, loss_fn: _t.Callable[..., _t.Any] | None = None, *,
                  lowering: str = "pytorch", validate: bool = True,
                  costs: pipesched.Plan | None = None, scale_grads: bool = True,
                  output_merge_spec: _t.Any = None, **plan_args: _t.Any) -> PipeschedSchedule:
    """A ready PyTorch schedule (:class:`PipeschedSchedule`, a
    ``_PipelineScheduleRuntime``) whose ``step()`` executes ``schedule`` on
    this rank's ``stages`` (``PipelineStage`` objects, one per stage index
    of :func:`stages_of_rank`).

    schedule: a pipesched Schedule (generated, imported with from_csv, or
    from a plug-in), or a generator name; a name takes devices from the
    stages' process group, chunks from ``len(stages)`` and the other Plan
    arguments from ``plan_args``. lowering: "pytorch" hands the compute
    order to PyTorch's send/recv insertion; "pipesched" runs pipesched's
    async comm lowering (``Schedule.lower(costs, mode="async")``: the
    runtime's isend/irecv never block, so transfers overlap compute) as a
    compute_comms order.
    validate: run pipesched's validation first (default); every rank does it
    before any process sends anything, so a broken schedule is refused on
    all ranks alike. Raises pipesched errors (InvalidSchedule, Deadlock,
    Unsupported for DualPipe's two chains, InvalidArgument for a mismatch
    between the schedule and the stages).
    """
    if lowering not in LOWERINGS:
        raise _error(_lib.EINVAL, f"lowering ({lowering!r}) must be 'pytorch' or 'pipesched'")
    stages = list(stages)
    if not stages:
        raise _error(_lib.EINVAL, "stages is empty: each rank passes the PipelineStages it holds")
    group_size, rank = stages[0].group_size, stages[0].group_rank
    own = None
    if not isinstance(schedule, pipesched.Schedule):
        own = schedule = resolve(schedule, n_microbatches, devices=group_size,
                                 chunks=plan_args.pop("chunks", len(stages)), **plan_args)
    elif plan_args:
        raise TypeError("plan arguments are only for a schedule given by name: "
                        + ", ".join(sorted(plan_args)))
    try:
        _refuse_chains(schedule)
        if validate:
            schedule.validate()
        _check_shape(schedule, stages, n_microbatches, group_size, rank)
        order = to_pipeline_order(schedule)
        comms = to_pipeline_order_with_comms(schedule, costs) if lowering == "pipesched" else None
    finally:
        if own is not None:
            own.close()
    return PipeschedSchedule(stages, n_microbatches, loss_fn, order, comms=comms,
                             scale_grads=scale_grads, output_merge_spec=output_merge_spec)


def _check_shape(schedule, stages, n_microbatches, group_size, rank):
    """The schedule fits the stages: same rank count, stage count,
    micro-batches, and this rank holds exactly the schedule's stages."""
    if schedule.devices != group_size:
        raise _error(_lib.EINVAL, f"schedule has {schedule.devices} devices but the stages' "
                     f"process group has {group_size} ranks")
    if schedule.microbatches != n_microbatches:
        raise _error(_lib.EINVAL, f"schedule has {schedule.microbatches} micro-batches but "
                     f"n_microbatches is {n_microbatches}")
    num_stages = stages[0].num_stages
    if schedule.stages != num_stages:
        raise _error(_lib.EINVAL, f"schedule has {schedule.stages} stages but the "
                     f"PipelineStages say num_stages={num_stages}")
    want = stages_of_rank(schedule, rank)
    have = sorted(s.stage_index for s in stages)
    if want != have:
        raise _error(_lib.EINVAL, f"rank {rank} holds stages {have} but the schedule "
                     f"places stages {want} on it (pipesched.torch.stages_of_rank)")
