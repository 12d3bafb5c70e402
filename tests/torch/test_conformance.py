"""Conformance with the real library (issue 14 item 3): pipesched's order
of every generator PyTorch also ships equals the pipeline_order of
PyTorch's own class (ScheduleGPipe, Schedule1F1B's runtime order,
ScheduleInterleaved1F1B, ScheduleLoopedBFS, ScheduleInterleavedZeroBubble,
ScheduleZBVZeroBubble, ScheduleDualPipeV), idle steps removed, over
p 2..8, v 2..4 (classes with v stages per rank) and every m in p..4p that
the class accepts. Also: stage_to_rank equals the class's
stage_index_to_group_rank (V placement included).

The classes are built in this one process with stand-in stages
(conformance.py). Exit 77 (skip) where torch is absent, a failure under
CI=true.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def chunk_range(name):
    if name in ("gpipe", "1f1b"):
        return [1]
    if name in ("v-zb", "dualpipev"):
        return [2]
    return [2, 3, 4]


def first_difference(got, want):
    for r in sorted(set(got) | set(want)):
        a, b = got.get(r, []), want.get(r, [])
        if a != b:
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return (f"rank {r} op {i}: pipesched {[str(x) for x in a[i:i + 3]]} "
                    f"PyTorch {[str(x) for x in b[i:i + 3]]}")
    return None


def main():
    harness.require_torch()
    import pipesched
    import pipesched.torch as pt
    import conformance

    n = failed = 0
    for name, cls_name in conformance.CLASSES.items():
        for p in range(2, 9):
            for v in chunk_range(name):
                compared, bad = 0, []
                for m in range(p, 4 * p + 1):
                    try:
                        want = conformance.pytorch_order(name, p, v, m, lower=False)
                    except ValueError:
                        continue  # PyTorch refuses this m (e.g. not a multiple of its rounds)
                    compared += 1
                    try:
                        with pipesched.generate(name, devices=p, microbatches=m,
                                                chunks=v) as s:
                            got = pt.to_pipeline_order(s)
                    except pipesched.Error as e:
                        bad.append(f"m={m}: PyTorch accepts it, pipesched refuses: {e}")
                        continue
                    diff = first_difference(got, want)
                    if diff:
                        bad.append(f"m={m}: {diff}")
                n += 1
                ok = compared > 0 and not bad
                failed += not ok
                print(f"{'ok' if ok else 'not ok'} {n} - {name} = {cls_name} p={p} v={v}: "
                      f"{compared} values of m compared")
                for line in bad:
                    print(f"#   {line}")

    # The placement PyTorch derives (stage_index_to_group_rank after its
    # lowering) equals pipesched's stage_to_rank.
    for name, cls_name in conformance.CLASSES.items():
        if name in ("gpipe", "1f1b"):
            continue
        for p in (2, 3, 4):
            v = chunk_range(name)[-1]
            m = 2 * p if name != "interleaved" else p
            sched = conformance.build_multi(cls_name, p, v, m)
            with pipesched.generate(name, devices=p, microbatches=m, chunks=v) as s:
                mine = pt.stage_to_rank(s)
            n += 1
            ok = mine == sched.stage_index_to_group_rank
            failed += not ok
            print(f"{'ok' if ok else 'not ok'} {n} - stage_to_rank of {name} p={p} v={v} "
                  f"equals {cls_name}.stage_index_to_group_rank")
            if not ok:
                print(f"#   pipesched {mine}\n#   PyTorch   {sched.stage_index_to_group_rank}")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
