"""Broken schedules never train silently (issue 14 item 2, negative test),
on 2 gloo processes: a W before its B is refused by make_schedule on every
rank before anything is sent; forced past pipesched's validation, PyTorch's
own check refuses it; forced past both, step() raises on every rank.
dualpipe and chimera (two chains) are refused with Unsupported naming why, and stages
that do not match the schedule's placement with InvalidArgument.

Exit 77 (skip) where torch is absent, a failure under CI=true.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

# zb-h1 at p=2, m=2 with each rank's first W moved before everything: the
# W of micro-batch 0 runs before its B (PyTorch "I").
W_FIRST = "0W0,0F0,0F1,0I0,0I1,0W1\n1W0,1F0,1I0,1F1,1I1,1W1\n"


def _stages(rank, sched):
    import torch
    from torch.distributed.pipelining import PipelineStage
    import pipesched.torch as pt
    blocks = harness.build_blocks(sched.stages)
    return [PipelineStage(blocks[s], s, sched.stages, torch.device("cpu"))
            for s in pt.stages_of_rank(sched, rank)], blocks


def case_refused(rank, world, lowering):
    import pipesched
    import pipesched.torch as pt
    sched = pipesched.from_csv(W_FIRST)
    stages, _ = _stages(rank, sched)
    try:
        pt.make_schedule(stages, sched, 2, harness.loss_fn, lowering=lowering)
    except pipesched.InvalidSchedule as e:
        if f"{rank}W0" not in str(e) and "0W0" not in str(e):
            return f"refused, but the message does not name the W: {e}"
        return None
    return "make_schedule accepted a schedule with a W before its B"


def case_forced_pytorch_check(rank, world, lowering):
    import pipesched
    import pipesched.torch as pt
    sched = pipesched.from_csv(W_FIRST)
    stages, _ = _stages(rank, sched)
    try:
        pt.make_schedule(stages, sched, 2, harness.loss_fn, lowering=lowering, validate=False)
    except pipesched.InvalidSchedule as e:
        # pipesched's lowering simulates the order, so it cannot be forced.
        return None if lowering == "pipesched" else f"refused by pipesched: {e}"
    except AssertionError as e:
        if "Backward Weight" not in str(e):
            return f"PyTorch refused, but not for the W: {str(e)[:200]}"
        return None
    return "validate=False and PyTorch's own check both accepted a W before its B"


def case_forced_runtime(rank, world, lowering):
    """Past both checks, the step itself must raise, not return gradients."""
    from torch.distributed.pipelining import schedules
    import pipesched
    import pipesched.torch as pt
    sched = pipesched.from_csv(W_FIRST)
    stages, blocks = _stages(rank, sched)
    real = schedules._validate_schedule

    def mapping_only(actions, pp_group_size, num_stages, num_microbatches):
        return {a.stage_index: r for r, acts in actions.items() for a in acts
                if a is not None and a.stage_index >= 0}
    schedules._validate_schedule = mapping_only
    try:
        runtime = pt.make_schedule(stages, sched, 2, harness.loss_fn, lowering=lowering,
                                   validate=False)
    except pipesched.InvalidSchedule:
        # pipesched's lowering simulates the order, so it cannot be forced.
        return None if lowering == "pipesched" else "refused by pipesched despite validate=False"
    finally:
        schedules._validate_schedule = real
    x, y = harness.batch(2)
    try:
        runtime.step(*((x,) if rank == 0 else ()), target=y if rank == 1 else None)
    except Exception:  # noqa: BLE001  (any loud failure is the expected outcome)
        return None
    return "step() ran a W before its B without raising"


def refuse_two_chains(rank, name, microbatches, lowering):
    import torch
    from torch.distributed.pipelining import PipelineStage
    import pipesched
    import pipesched.torch as pt
    blocks = harness.build_blocks(4)
    mine = [rank, 3 - rank]  # V placement of 4 stages on 2 ranks
    stages = [PipelineStage(blocks[s], s, 4, torch.device("cpu")) for s in mine]
    try:
        pt.make_schedule(stages, name, microbatches, harness.loss_fn, lowering=lowering)
    except pipesched.Unsupported as e:
        if "2 chains" not in str(e) or "dualpipev" not in str(e):
            return f"Unsupported, but the message does not say why: {e}"
        return None
    return f"{name} was accepted"


def case_dualpipe(rank, world, lowering):
    return refuse_two_chains(rank, "dualpipe", 4, lowering)


def case_chimera(rank, world, lowering):
    # Chimera's two pipelines are two chains like DualPipe's: refused alike
    return refuse_two_chains(rank, "chimera", 2, lowering)


def case_wrong_stages(rank, world, lowering):
    import pipesched
    import pipesched.torch as pt
    # v-min places stages {0, 3} on rank 0; give each rank the loop ones.
    sched = pipesched.generate("v-min", devices=2, microbatches=2)
    import torch
    from torch.distributed.pipelining import PipelineStage
    blocks = harness.build_blocks(4)
    stages = [PipelineStage(blocks[s], s, 4, torch.device("cpu")) for s in (rank, rank + 2)]
    try:
        pt.make_schedule(stages, sched, 2, harness.loss_fn, lowering=lowering)
    except pipesched.InvalidArgument as e:
        return None if "stages_of_rank" in str(e) else f"wrong message: {e}"
    return "stages of the loop placement were accepted for a V schedule"


CASES = [case_refused, case_forced_pytorch_check, case_forced_runtime, case_dualpipe,
         case_chimera, case_wrong_stages]


def run(rank, world, case):
    fn, lowering = case
    return CASES[fn](rank, world, lowering)


def main():
    harness.require_torch()
    cases = [(i, low) for i in range(len(CASES)) for low in ("pytorch", "pipesched")]
    failures = harness.run_pool(2, run, cases, timeout_s=30)
    failed = 0
    for i, (fn, low) in enumerate(cases):
        bad = failures.get(i)
        print(f"{'not ok' if bad else 'ok'} {i + 1} - {CASES[fn].__name__} lowering={low}")
        for rank, msg in bad or ():
            print(f"#   rank {rank}: {msg}".replace("\n", "\n#   "))
        failed += bool(bad)
    for rank, msg in failures.get("pool", ()):
        failed += 1
        print(f"not ok - pool, rank {rank}: {msg}")
    print(f"1..{len(cases)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
