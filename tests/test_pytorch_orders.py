#!/usr/bin/env python3
"""pipesched's interleaved orders against PyTorch's own, for every
configuration with fewer micro-batches than devices (issue 11 item 5).

PyTorch runs ScheduleInterleaved1F1B and ScheduleInterleavedZeroBubble with
m < p as one round of group size m. The expected order is taken from PyTorch
itself at test time: the schedule classes are constructed with stand-in
stage objects (to build `pipeline_order` the constructors only read
group_size, group_rank, the stage indices and whether submod is a compiled
module; nothing runs and no process group is needed), and each rank's row,
idle steps (None) dropped, must equal the device's order from pipesched.
p 2..8 x v 2..4 x m 1..p-1 is 84 configurations per generator, 168 for the
two.

Run by meson with PIPESCHED_LIBRARY and PYTHONPATH as for test_python.py.
Skips only when torch is absent, visibly: exit status 77, which meson
reports as SKIP; under CI=true a missing torch is a failure, since
torch==2.13.0 is pinned on the project's machines.
"""
import os
import sys
import unittest

import pipesched

try:
    import torch
    from torch.distributed.pipelining import schedules as torch_schedules
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

TORCH_VERSION = "2.13.0"
# PyTorch action letters for pipesched's kinds: its "I" is our B (backward
# for inputs), its "B" our BW (full backward).
TORCH_LETTER = {"F": "F", "B": "I", "W": "W", "BW": "B"}


class _Stage:
    """What the schedule constructors read from a pipeline stage."""

    def __init__(self, devices, index, stages):
        self.group_size = devices
        self.group_rank = 0
        self.stage_index = index
        self.num_stages = stages
        self.is_first = index == 0
        self.is_last = index == stages - 1
        # The zero-bubble constructor refuses torch.compile'd modules; a
        # stand-in that is no nn.Module is skipped by that check.
        self.submod = None


def torch_order(cls, p, v, m):
    stages = [_Stage(p, c * p, p * v) for c in range(v)]
    order = cls(stages, m).pipeline_order
    return [[str(a) for a in order[d] if a is not None] for d in range(p)]


def pipesched_order(name, p, v, m):
    with pipesched.Plan(devices=p, microbatches=m, chunks=v) as plan:
        s = pipesched.generate(name, plan)
    try:
        return [[f"{o.stage}{TORCH_LETTER[o.kind]}{o.microbatch}" for o in s.ops(d)]
                for d in range(p)]
    finally:
        s.close()


def configurations():
    for p in range(2, 9):
        for v in range(2, 5):
            for m in range(1, p):
                yield p, v, m


class TestPyTorchOrders(unittest.TestCase):
    def setUp(self):
        if torch is None:
            self.fail("CI=true but torch is not installed (torch==2.13.0 is pinned)")
        self.assertEqual(torch.__version__.split("+")[0], TORCH_VERSION)

    def check(self, name, cls):
        configs = list(configurations())
        self.assertEqual(len(configs), 84)
        for p, v, m in configs:
            with self.subTest(schedule=name, p=p, v=v, m=m):
                self.assertEqual(pipesched_order(name, p, v, m), torch_order(cls, p, v, m))

    def test_interleaved_matches_schedule_interleaved_1f1b_for_m_below_p(self):
        self.check("interleaved", torch_schedules.ScheduleInterleaved1F1B)

    def test_interleaved_zb_matches_schedule_interleaved_zero_bubble_for_m_below_p(self):
        self.check("interleaved-zb", torch_schedules.ScheduleInterleavedZeroBubble)

    def test_pytorch_class_names_are_aliases(self):
        # The class names a PyTorch user knows, in any case, build the same
        # schedule as pipesched's own name.
        for alias, name in [("Interleaved1F1B", "interleaved"),
                            ("interleavedzerobubble", "interleaved-zb")]:
            self.assertEqual(pipesched_order(alias, 4, 2, 3), pipesched_order(name, 4, 2, 3))


if __name__ == "__main__":
    if torch is None and os.environ.get("CI") != "true":
        print("SKIP: torch is not installed (pipesched pins torch==2.13.0)")
        sys.exit(77)
    unittest.main()
