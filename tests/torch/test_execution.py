"""Proof by execution (issue 14 item 2): every pipesched schedule, run by
PyTorch's own _PipelineScheduleRuntime on p gloo processes (CPU), gives the
per-micro-batch losses and every parameter gradient of a single-process,
non-pipelined step (max abs difference <= 1e-9), with both lowerings.

argv: tests/data/reference [plug-in sample module]. Exit 77 (skip) where
torch is absent, a failure under CI=true.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

# (schedule, v, [m, ...]) per p: every generator, m not a multiple of p
# where the generator allows it, v > 2 for the looped ones. The exact
# generator `optimal` on plans it proves without a search (its seed meets
# a bound), so every rank builds the same order.
GRID = {
    2: [("gpipe", 1, [2, 3]), ("1f1b", 1, [2, 3, 5]),
        ("interleaved", 2, [2, 3, 4]), ("interleaved", 3, [3]),
        ("interleaved-zb", 2, [2, 3]), ("interleaved-zb", 3, [4]),
        ("looped-bfs", 2, [1, 3]), ("looped-bfs", 3, [2]),
        ("zb-h1", 1, [2, 3]), ("zb-h2", 1, [3, 4]), ("zb", 1, [2, 3]),
        ("v-min", 2, [1, 3]), ("v-half", 2, [2, 3]), ("v-zb", 2, [3, 4]),
        ("dualpipev", 2, [4, 5]), ("optimal", 1, [3])],
    4: [("gpipe", 1, [4, 5]), ("1f1b", 1, [4, 6]),
        ("interleaved", 2, [4, 6]), ("interleaved-zb", 2, [4, 5]),
        ("looped-bfs", 2, [3]), ("zb-h1", 1, [5]), ("zb-h2", 1, [7]), ("zb", 1, [5]),
        ("v-min", 2, [3]), ("v-half", 2, [4]), ("v-zb", 2, [7]),
        ("dualpipev", 2, [8, 9]), ("optimal", 1, [5])],
}
LOWERINGS = ("pytorch", "pipesched")


def cases_for(p, reference_dir, plugin):
    cases = []
    for name, v, ms in GRID[p]:
        for m in ms:
            for low in LOWERINGS:
                cases.append({"name": name, "v": v, "m": m, "lowering": low})
    csvs = {2: ["torchtitan/custom_schedule.csv"], 4: ["pytorch/dualpipev_4rank_10mb.csv"]}
    for rel in csvs[p]:
        with open(os.path.join(reference_dir, rel)) as f:
            text = f.read()
        for low in LOWERINGS:
            cases.append({"csv": rel, "text": text, "lowering": low})
            # The same file through PyTorch's own _load_csv (torchtitan's path).
            cases.append({"csv": rel, "text": text, "lowering": low, "load_csv": True})
    if p == 2:
        # A generator name plus plan arguments instead of a Schedule.
        for name, m, low in (("interleaved", 3, "pytorch"), ("v-zb", 4, "pipesched")):
            cases.append({"name": name, "v": 2, "m": m, "lowering": low, "by_name": True})
    if plugin and p == 2:
        for low in LOWERINGS:
            cases.append({"name": "reverse-gpipe", "v": 1, "m": 3, "lowering": low,
                          "plugin": plugin})
    return cases


def describe(case):
    what = case.get("csv") or f"{case['name']} v={case['v']} m={case['m']}"
    extra = " via _load_csv" if case.get("load_csv") else ""
    extra += " (by name)" if case.get("by_name") else ""
    return f"{what} lowering={case['lowering']}{extra}"


_refs = {}


def run_case(rank, world, case):
    import tempfile
    import torch
    from torch.distributed.pipelining import PipelineStage
    import pipesched
    import pipesched.torch as pt

    if "plugin" in case and "reverse-gpipe" not in [g.name for g in pipesched.schedules()]:
        pipesched.load_plugin(case["plugin"])
    if "text" in case:
        sched = pipesched.from_csv(case["text"])
    else:
        sched = pipesched.generate(case["name"], devices=world, microbatches=case["m"],
                                   chunks=case["v"])
    with sched:
        S, m = sched.stages, sched.microbatches
        mine = pt.stages_of_rank(sched, rank)
        blocks = harness.build_blocks(S)
        stages = [PipelineStage(blocks[s], s, S, torch.device("cpu")) for s in mine]
        if case.get("load_csv"):
            fmt = "compute_comms" if case["lowering"] == "pipesched" else "compute_only"
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "schedule.csv")
                pt.write_csv(sched, path, format=fmt)
                runtime = torch.distributed.pipelining.schedules._PipelineScheduleRuntime(
                    stages, m, loss_fn=harness.loss_fn)
                runtime._load_csv(path, format=fmt)
        elif case.get("by_name"):
            runtime = pt.make_schedule(stages, case["name"], m, harness.loss_fn,
                                       lowering=case["lowering"])
        else:
            runtime = pt.make_schedule(stages, sched, m, harness.loss_fn,
                                       lowering=case["lowering"])
    x, y = harness.batch(m)
    first, last = 0 in mine, S - 1 in mine
    losses = [] if last else None
    runtime.step(*((x,) if first else ()), target=y if last else None, losses=losses)

    if (S, m) not in _refs:
        _refs[(S, m)] = harness.reference(S, m)
    ref_losses, ref_grads = _refs[(S, m)]
    worst, where = 0.0, ""
    if last:
        if len(losses) != m:
            return f"{len(losses)} losses for {m} micro-batches"
        for k, (got, want) in enumerate(zip(losses, ref_losses)):
            d = abs(got.item() - want)
            if d > worst:
                worst, where = d, f"loss of micro-batch {k}"
    for s in mine:
        for j, (prm, want) in enumerate(zip(blocks[s].parameters(), ref_grads[s])):
            if prm.grad is None:
                return f"stage {s} parameter {j} has no gradient"
            d = float((prm.grad - want).abs().max())
            if d > worst:
                worst, where = d, f"stage {s} parameter {j}"
    if not worst <= harness.TOL:
        return f"max abs difference {worst:.3g} at {where} (> {harness.TOL})"
    return None


def main():
    harness.require_torch()
    reference_dir = sys.argv[1]
    plugin = sys.argv[2] if len(sys.argv) > 2 else None
    worlds = [int(w) for w in os.environ.get("PIPESCHED_TORCH_WORLDS", "2,4").split(",")]
    failed = total = 0
    for p in worlds:
        cases = cases_for(p, reference_dir, plugin)
        failures = harness.run_pool(p, run_case, cases, timeout_s=60)
        for i, case in enumerate(cases):
            total += 1
            bad = failures.get(i)
            print(f"{'not ok' if bad else 'ok'} {total} - p={p} {describe(case)}")
            for rank, msg in bad or ():
                print(f"#   rank {rank}: {msg}".replace("\n", "\n#   "))
            failed += bool(bad)
        for rank, msg in failures.get("pool", ()):
            failed += 1
            print(f"not ok - p={p} pool, rank {rank}: {msg}")
    print(f"1..{total}")
    print(f"# {total - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
