"""PyTorch's own orders, built in one process from its schedule classes
with stand-in stages (no process group: the classes only read the stages'
shape to build pipeline_order). Shared by test_conformance.py and
bench/vs_pytorch.py."""
import torch

from torch.distributed.pipelining import schedules as pts

# pipesched generator -> (PyTorch class name, chunks v or None for v=1)
CLASSES = {
    "gpipe": "ScheduleGPipe",
    "1f1b": "Schedule1F1B",
    "interleaved": "ScheduleInterleaved1F1B",
    "looped-bfs": "ScheduleLoopedBFS",
    "interleaved-zb": "ScheduleInterleavedZeroBubble",
    "v-zb": "ScheduleZBVZeroBubble",
    "dualpipev": "ScheduleDualPipeV",
}


class FakeStage:
    """What the schedule classes read from a PipelineStage when they build
    their order; the recording methods let Schedule1F1B's _step_microbatches
    run without a process group and report its runtime order."""

    def __init__(self, stage_index, num_stages, group_size, group_rank, log=None):
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.stage_index_to_group_rank = {}
        self.submod = torch.nn.Identity()
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1
        self.log = log

    def get_fwd_recv_ops(self, k):
        return []

    get_fwd_send_ops = get_bwd_recv_ops = get_bwd_send_ops = get_fwd_recv_ops

    def forward_one_chunk(self, k, *args, **kwargs):
        self.log.append(pts._Action(self.stage_index, pts.FORWARD, k))

    def backward_one_chunk(self, k, loss=None, full_backward=True, last_backward=False):
        kind = pts.FULL_BACKWARD if full_backward else pts.BACKWARD_INPUT
        self.log.append(pts._Action(self.stage_index, kind, k))

    def perform_reduce_grad(self, factor):
        pass


def _compute_only(order):
    """Idle steps (None) and non-compute actions (REDUCE_GRAD) removed."""
    return {r: [a for a in acts if a is not None and a.is_compute_op]
            for r, acts in order.items()}


def single_stage_order(cls_name, p, m):
    """{rank: [_Action]} of GPipe / 1F1B (one stage per rank).
    Schedule1F1B: the order its _step_microbatches actually runs (its
    _get_pipeline_order is only a drawing); GPipe: _get_pipeline_order."""
    cls = getattr(pts, cls_name)
    out = {}
    for r in range(p):
        log = []
        sched = cls(FakeStage(r, p, p, r, log), m)
        if cls_name == "Schedule1F1B":
            sched._initialize_stage = lambda *a, **k: None
            sched._step_microbatches([()] * m, [{}] * m)
            out[r] = log
        else:
            out[r] = _compute_only(sched.pipeline_order)[r]
    return out


def build_multi(cls_name, p, v, m, lower=True):
    """A PipelineScheduleMulti class with v stand-in stages per rank.
    lower=False skips the constructor's last step, the send/recv lowering
    (_prepare_schedule_with_comms), which runs after pipeline_order is
    complete and does not change it."""
    cls = getattr(pts, cls_name)
    stages = [FakeStage(r, p * v, p, 0) for r in range(v)]
    if lower:
        return cls(stages, m)
    real = pts._PipelineScheduleRuntime._prepare_schedule_with_comms
    pts._PipelineScheduleRuntime._prepare_schedule_with_comms = lambda self, *a, **k: None
    try:
        return cls(stages, m)
    finally:
        pts._PipelineScheduleRuntime._prepare_schedule_with_comms = real


def multi_stage_order(cls_name, p, v, m, lower=True):
    """{rank: [_Action]} of a PipelineScheduleMulti class with v
    stages per rank (loop or V placement, as the class builds it)."""
    return _compute_only(build_multi(cls_name, p, v, m, lower).pipeline_order)


def pytorch_order(name, p, v, m, lower=True):
    cls_name = CLASSES[name]
    if cls_name in ("ScheduleGPipe", "Schedule1F1B"):
        return single_stage_order(cls_name, p, m)
    return multi_stage_order(cls_name, p, v, m, lower)
