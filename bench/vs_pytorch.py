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

The CLI end to end (issue 13): `pipesched generate --schedule interleaved
--devices 64 --chunks 4 --microbatches 1024 --format csv`, process start
and writing the file included, against PyTorch's ScheduleInterleaved1F1B
building its order (as above) and writing it with its own _dump_csv
(format="compute_only"), alternately, median of --cli-repeat runs (21) of
each: CPU time (the child's user + system time from getrusage, and this
process's for PyTorch) and wall time, and the ratios. The CLI's file must
be byte-identical to PyTorch's order with its idle steps removed, written
by Python's csv.writer with "\n" line ends (_dump_csv writes "\r\n" and an
empty cell per idle step; pipesched writes neither).

Run: PIPESCHED_LIBRARY=build/lib/libpipesched.so.1 \\
     PYTHONPATH=bindings/python:tests/torch python3 bench/vs_pytorch.py \\
     [--cli build/tools/pipesched]
A benchmark, not a test: it prints times and checks nothing but that the
outputs are equal.
"""
import argparse
import csv
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
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


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli_end_to_end(cli, repeat):
    """The CLI's `generate --format csv` against PyTorch's construction plus
    its _dump_csv, alternately; returns 0, or 1 when the outputs differ."""
    name, cls, p, v, m = CASES[0]
    argv = [cli, "generate", "--schedule", name, "--devices", str(p), "--chunks", str(v),
            "--microbatches", str(m), "--format", "csv"]
    ours_cpu, ours_wall, theirs_cpu, theirs_wall = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "pipesched.csv")
        dump = os.path.join(tmp, "pytorch.csv")
        for _ in range(repeat):
            c0, w0 = children_cpu(), time.perf_counter()
            with open(out, "wb") as f:
                subprocess.run(argv, stdout=f, check=True)
            ours_wall.append(time.perf_counter() - w0)
            ours_cpu.append(children_cpu() - c0)
            c0, w0 = time.process_time(), time.perf_counter()
            built = conformance.build_multi(cls, p, v, m, lower=False)
            built._dump_csv(dump, format="compute_only")
            theirs_wall.append(time.perf_counter() - w0)
            theirs_cpu.append(time.process_time() - c0)
        with open(out, "rb") as f:
            got = f.read()
    want = io.StringIO(newline="")
    writer = csv.writer(want, lineterminator="\n")
    order = conformance._compute_only(built.pipeline_order)
    for rank in sorted(order):
        writer.writerow(order[rank])
    n = sum(len(a) for a in order.values())
    if got != want.getvalue().encode():
        print(f"ERROR: {' '.join(argv)}: the CSV differs from PyTorch's order")
        return 1
    oc, ow, tc, tw = (statistics.median(x) for x in (ours_cpu, ours_wall, theirs_cpu,
                                                      theirs_wall))
    print(f"\nCLI end to end, {cls} p={p} v={v} m={m} ({n} actions, {len(got)} bytes, "
          f"identical), median of {repeat}, run alternately")
    print(f"  pipesched: {' '.join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv))}")
    print(f"  PyTorch:   {cls}(...).pipeline_order + _dump_csv(format=\"compute_only\")")
    print(f"{'':12} {'pipesched':>10} {'PyTorch':>10} {'ratio':>7}")
    print(f"{'CPU time':12} {oc * 1e3:8.1f}ms {tc * 1e3:8.1f}ms {tc / oc:6.1f}x")
    print(f"{'wall time':12} {ow * 1e3:8.1f}ms {tw * 1e3:8.1f}ms {tw / ow:6.1f}x")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cli", default=os.environ.get(
        "PIPESCHED_CLI", os.path.join(HERE, "..", "build", "tools", "pipesched")),
                    help="the pipesched CLI for the end-to-end comparison "
                         "(default: $PIPESCHED_CLI or build/tools/pipesched)")
    ap.add_argument("--cli-repeat", type=int, default=21)
    ap.add_argument("--only-cli", action="store_true",
                    help="run only the CLI end-to-end comparison")
    ap.add_argument("--with-comms", action="store_true",
                    help="also time PyTorch's full constructor once (minutes)")
    args = ap.parse_args()
    print(f"torch {conformance.torch.__version__}, pipesched {pipesched.version()}, "
          f"median of {args.repeat}, run alternately")
    if not args.only_cli:
        print(f"{'class':26} {'p':>3} {'v':>2} {'m':>5} {'actions':>8} {'generate':>10} "
              f"{'pipesched':>10} {'PyTorch':>10} {'PyTorch/pipesched':>18} "
              f"{'PyTorch/generate':>17}")
    for name, cls, p, v, m in [] if args.only_cli else CASES:
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
    return cli_end_to_end(args.cli, args.cli_repeat)


if __name__ == "__main__":
    sys.exit(main())
