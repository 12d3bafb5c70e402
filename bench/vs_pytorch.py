"""pipesched's order construction against PyTorch's own (issue 14 item 5b).

For ScheduleInterleaved1F1B at p=64, v=4, m=1024 and ScheduleZBVZeroBubble
at p=32, m=512: the time to build every rank's compute order, alternately
in one process, median of --repeat runs (5), and the ratio.

  pipesched: pipesched.generate (the C generator) + pipesched.torch.
             to_pipeline_order (the same order as PyTorch _Action objects);
             the generate column alone is also printed.
  PyTorch:   the class's pipeline_order, built by its constructor on
             stand-in stages; the constructor's last step, the send/recv
             insertion (_prepare_schedule_with_comms), is skipped because it
             is not part of the order (--with-comms times it too, once).

Run: PIPESCHED_LIBRARY=build/lib/libpipesched.so.1 \\
     PYTHONPATH=bindings/python:tests/torch python3 bench/vs_pytorch.py
A benchmark, not a test: it prints times and checks nothing but that the
two orders are equal.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch"))

import pipesched  # noqa: E402
import pipesched.torch as pt  # noqa: E402
import conformance  # noqa: E402  (PyTorch's classes on stand-in stages)

CASES = [("interleaved", "ScheduleInterleaved1F1B", 64, 4, 1024),
         ("v-zb", "ScheduleZBVZeroBubble", 32, 2, 512)]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--with-comms", action="store_true",
                    help="also time PyTorch's full constructor once (minutes)")
    args = ap.parse_args()
    print(f"torch {conformance.torch.__version__}, pipesched {pipesched.version()}, "
          f"median of {args.repeat}, run alternately")
    print(f"{'class':26} {'p':>3} {'v':>2} {'m':>5} {'actions':>8} {'generate':>10} "
          f"{'pipesched':>10} {'PyTorch':>10} {'PyTorch/pipesched':>18} {'PyTorch/generate':>17}")
    for name, cls, p, v, m in CASES:
        gen, ours, theirs = [], [], []
        for _ in range(args.repeat):
            t_gen, sched = timed(lambda: pipesched.generate(name, devices=p, microbatches=m,
                                                            chunks=v))
            t_conv, order = timed(lambda: pt.to_pipeline_order(sched))
            sched.close()
            gen.append(t_gen)
            ours.append(t_gen + t_conv)
            t_pt, built = timed(lambda: conformance.build_multi(cls, p, v, m, lower=False))
            theirs.append(t_pt)
        want = conformance._compute_only(built.pipeline_order)
        if order != want:
            print(f"ERROR: {cls} p={p} v={v} m={m}: the orders differ")
            return 1
        n = sum(len(a) for a in order.values())
        a, b, c = (statistics.median(x) for x in (gen, ours, theirs))
        print(f"{cls:26} {p:3} {v:2} {m:5} {n:8} {a * 1e3:8.1f}ms {b * 1e3:8.1f}ms "
              f"{c * 1e3:8.1f}ms {c / b:17.1f}x {c / a:16.0f}x")
        if args.with_comms:
            t_full, _ = timed(lambda: conformance.build_multi(cls, p, v, m, lower=True))
            print(f"  PyTorch constructor with its send/recv insertion: {t_full:.1f} s (one run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
