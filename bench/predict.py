"""Is the simulator right? (issue 16 item 5): profile a small transformer on
this machine with pipesched.torch.profile_layers (in both worker processes
at once, so each competes with its sibling for the cores as it does in the
pipelined run; rank 0's profile is used), run the planner on the profile
(plan_search, what `pipesched plan` runs), then execute the top three
one-chain plans (pipesched.torch runs no two-chain schedule: dualpipe and
chimera are left out) and the even split with pipesched.torch on 2 CPU
processes (gloo, 127.0.0.1) and print each plan's
measured step time beside the simulated one, with the ratio.

Model: an embedding, --blocks pre-norm transformer blocks (hidden 256, 4
heads, FFN 1024, explicit softmax attention), a head (LayerNorm + Linear to
--vocab) with cross-entropy; float32; one micro-batch is --rows sequences of
--seq tokens. Every process runs torch with one thread. Each plan's stages
are built from the plan's partition (layer ranges per stage, each layer
wrapped for its recompute choice), its schedule generated from the plan's
own costs, then one warm-up step and --steps timed steps, each between two
barriers, the plans taking turns step by step (round-robin, so load from
elsewhere hits them alike); the median is printed (milliseconds, rank 0's
clock).

Run: PIPESCHED_LIBRARY=build/lib/libpipesched.so.1 PYTHONPATH=bindings/python \\
     python3 bench/predict.py [--blocks 8 --microbatches 8 --steps 7]
A benchmark, not a test (docs/pytorch.md, "Is the simulator right?").
"""
import argparse
import datetime
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "torch"))
import tiny_transformer  # noqa: E402
from tiny_transformer import HIDDEN  # noqa: E402


def build_layers(args):
    """The whole model as a list of layers, identical in every process."""
    return tiny_transformer.layers(args.vocab, args.blocks, fresh_embedding=True)


def loss_fn(out, target):
    import torch
    return torch.nn.functional.cross_entropy(out.flatten(0, 1), target.flatten())


class Recompute:
    """A layer run with its plan's recompute choice."""

    @staticmethod
    def wrap(layer, kind):
        import torch
        from torch.utils.checkpoint import checkpoint
        from pipesched._torch_profile import _checkpointed, default_selective

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = layer

            def forward(self, x):
                if kind == "full":
                    return checkpoint(self.layer, x, use_reentrant=False)
                if kind == "selective":
                    with _checkpointed(self.layer, default_selective):
                        return self.layer(x)
                return self.layer(x)
        return layer if kind == "none" else Wrapped()


def worker(rank, world, port, args, inq, out):
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage
    import pipesched.torch as pt
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=600))
    # The profile is taken where the plans run: both processes profile the
    # model at the same time (so each competes with its sibling for the
    # cores, as in the pipelined run); rank 0's profile is used.
    layers = build_layers(args)
    sample = torch.randint(0, args.vocab, (args.rows, args.seq))
    dist.barrier()
    t = time.perf_counter()
    prof = pt.profile_layers(layers, sample, repeats=args.repeats)
    took = time.perf_counter() - t
    dist.barrier()
    if rank == 0:
        out.put(("profile", (prof.to_csv(), took)))
    del layers, prof
    m = args.microbatches
    g = torch.Generator().manual_seed(7)
    x = torch.randint(0, args.vocab, (m * args.rows, args.seq), generator=g)
    y = torch.randint(0, args.vocab, (m * args.rows, args.seq), generator=g)
    # One activation transfer (a micro-batch's hidden states) between the
    # two ranks: half a ping-pong's round trip, median of 20 after 3.
    act = torch.zeros(args.rows, args.seq, HIDDEN)
    trips = []
    for i in range(23):
        dist.barrier()
        t = time.perf_counter()
        if rank == 0:
            dist.send(act, 1)
            dist.recv(act, 1)
        else:
            dist.recv(act, 0)
            dist.send(act, 0)
        if i >= 3:
            trips.append(time.perf_counter() - t)
    if rank == 0:
        out.put(("comm", statistics.median(trips) / 2 * 1e3))
    cases = inq.get()
    runtimes, times, cpu, failed = {}, {}, {}, {}
    for label, sched, ranges, recompute in cases:
        try:
            layers = build_layers(args)
            n = sched.stages
            mine = pt.stages_of_rank(sched, rank)
            stages = []
            for s in mine:
                first, count = ranges[s]
                mods = [Recompute.wrap(layers[i], recompute[i])
                        for i in range(first, first + count)]
                stages.append(PipelineStage(torch.nn.Sequential(*mods), s, n,
                                            torch.device("cpu")))
            runtime = pt.make_schedule(stages, sched, m, loss_fn)
            runtimes[label] = (runtime, 0 in mine, n - 1 in mine)
            times[label], cpu[label] = [], []
        except Exception as e:  # noqa: BLE001
            failed[label] = f"failed: {type(e).__name__}: {e}"
    # Round-robin: each round steps every plan once (the first round is the
    # warm-up), so a burst of load from elsewhere hits every plan alike.
    for r in range(args.steps + 1):
        for label, (runtime, first, last) in runtimes.items():
            if label in failed:
                continue
            try:
                dist.barrier()
                t, c = time.perf_counter(), time.process_time()
                runtime.step(*((x,) if first else ()), target=y if last else None)
                c = time.process_time() - c
                dist.barrier()
                if r:
                    times[label].append(time.perf_counter() - t)
                    cpu[label].append(c)
            except Exception as e:  # noqa: BLE001
                failed[label] = f"failed: {type(e).__name__}: {e}"
                dist.barrier()
    # Wall time from rank 0; CPU time (all threads of the process, during
    # step() only) from both ranks.
    for label, *_ in cases:
        if label in failed:
            res = failed[label]
        else:
            res = (statistics.median(times[label]) * 1e3, statistics.median(cpu[label]) * 1e3)
        out.put(((label, rank), res))
    dist.destroy_process_group()


def model_rows(csv):
    """(f, b, w) of every CSV row, as objects with those fields."""
    import types
    rows = [ln.split(",") for ln in csv.splitlines() if ln and not ln.startswith("#")][1:]
    return [types.SimpleNamespace(f=float(r[2]), b=float(r[3]), w=float(r[4])) for r in rows]


def simulate_with_comm(cases, label, part, comm):
    """The plan's schedule simulated with every cross-device dependency
    taking `comm` ms (the plan's per-stage costs, the same placement)."""
    import pipesched
    sched = next(c[1] for c in cases if c[0] == label)
    src = part.plan
    costs = pipesched.Plan(devices=src.devices, microbatches=src.microbatches,
                           chunks=src.chunks, placement=src.placement, comm=comm,
                           stage_costs=[src.stage_cost(s) for s in range(src.stages)])
    try:
        return sched.simulate(costs).makespan
    finally:
        costs.close()


def describe(part):
    cells = []
    for s in part.stages:
        rc = "".join(k[0] * n for k, n in s.recompute.items() if n and k != "none")
        cells.append(f"{s.first}-{s.first + s.count - 1}{'/' + rc if rc else ''}")
    return ", ".join(cells)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument("--rows", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=10, help="profile_layers repeats")
    ap.add_argument("--mem-limit", type=float, default=1e12,
                    help="bytes per device for the planner (default: no constraint)")
    ap.add_argument("--profile", help="also write the measured profile CSV here")
    args = ap.parse_args()
    import torch
    import torch.multiprocessing as mp
    import pipesched
    import pipesched.torch as pt
    torch.set_num_threads(1)

    load0 = os.getloadavg()[0]
    ctx = mp.get_context("spawn")
    q, inq = ctx.Queue(), ctx.Queue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [ctx.Process(target=worker, args=(r, 2, port, args, inq, q)) for r in range(2)]
    for p in procs:
        p.start()
    results = dict(q.get(timeout=3600) for _ in range(2))  # the profile, the transfer time
    csv, took = results["profile"]
    comm = results["comm"]
    if args.profile:
        with open(args.profile, "w") as f:
            f.write(csv)
    print(f"torch {torch.__version__}, pipesched {pipesched.version()}, p=2 gloo CPU, "
          f"1 thread per process; profile_layers (both processes at once) took {took:.1f} s:")
    sys.stdout.write("".join("  " + ln + "\n" for ln in csv.splitlines()))

    model = pipesched.Model.from_csv(csv)
    plan = pipesched.Plan(devices=2, microbatches=args.microbatches, mem_limit=args.mem_limit)
    search = pipesched.plan_search(model, plan)
    # pipesched.torch runs one chain: two-chain plans (dualpipe, chimera)
    # are left to the C++ runtime and not measured here.
    fits = [a for a in search.alternatives if a.fits and a.partition is not None
            and pipesched.schedule_info(a.schedule).chains == 1]
    if not fits:
        print("nothing fits")
        for _ in procs:
            inq.put([])
        return 1
    chosen = [(f"#{i + 1} {a.schedule} v={a.chunks}", a.schedule, a.chunks, a.partition)
              for i, a in enumerate(fits[:3])]
    best = fits[0]
    even = pipesched.partition(model, plan, best.schedule, method="even", chunks=best.chunks)
    chosen.append((f"even {best.schedule} v={best.chunks}", best.schedule, best.chunks, even))

    cases, rows = [], []
    for label, name, v, part in chosen:
        sched = pipesched.generate(name, part.plan)
        simulated = sched.simulate(part.plan).makespan
        ranges = {s.stage: (s.first, s.count) for s in part.stages}
        cases.append((label, sched, ranges, part.recompute))
        rows.append((label, describe(part), simulated, part))
    for _ in procs:
        inq.put(cases)
    got = dict(q.get(timeout=3600) for _ in range(2 * len(cases)))
    measured, cpu = {}, {}
    for label, *_ in cases:
        r0, r1 = got.get((label, 0), "missing"), got.get((label, 1), "missing")
        if isinstance(r0, tuple) and isinstance(r1, tuple):
            measured[label], cpu[label] = r0[0], r0[1] + r1[1]
        else:
            measured[label] = r0 if not isinstance(r0, tuple) else r1
    for p in procs:
        p.join()

    print(f"\nload average (1 min) before the runs {load0:.2f}, after {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    print(f"{args.blocks} blocks, vocab {args.vocab}, micro-batch {args.rows}x{args.seq}, "
          f"m={args.microbatches}, median of {args.steps} steps (ms)")
    print(f"one activation transfer (gloo, {args.rows}x{args.seq}x{HIDDEN} float32): "
          f"{comm:.2f} ms; 'with comm' simulates the same schedule with that latency")
    work = args.microbatches * sum(lp.f + lp.b + lp.w for lp in model_rows(csv))
    print(f"compute in the profile, m * sum(f + b + w): {work:.1f} ms; 'CPU' is the two "
          "processes' CPU time during step() (compute, runtime, gloo)")
    print("| plan | stages (layers/recompute) | simulated | with comm | measured | "
          "measured/simulated | measured/with comm | CPU | CPU/compute |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, stages, simulated, part in rows:
        with_comm = simulate_with_comm(cases, label, part, comm)
        got = measured.get(label, "missing")
        if isinstance(got, float):
            c = cpu[label]
            print(f"| {label} | {stages} | {simulated:.1f} | {with_comm:.1f} | {got:.1f} | "
                  f"{got / simulated:.3f} | {got / with_comm:.3f} | {c:.1f} | {c / work:.3f} |")
        else:
            print(f"| {label} | {stages} | {simulated:.1f} | {with_comm:.1f} | {got} | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
