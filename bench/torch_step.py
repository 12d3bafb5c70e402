"""One training step's wall time per schedule and lowering, at p=2 on CPU
(issue 14 item 5a): PyTorch's _PipelineScheduleRuntime runs each pipesched
schedule on 2 gloo processes (127.0.0.1), with PyTorch's send/recv
insertion ("pytorch") and with pipesched's lowering ("pipesched").

Model: one Linear(W, W)+tanh block per stage (float32), m micro-batches of
R rows. Per case: one warm-up step (shape inference), then --steps timed
steps, each between two barriers; the median is printed (milliseconds,
rank 0's clock).

Run: PIPESCHED_LIBRARY=build/lib/libpipesched.so.1 PYTHONPATH=bindings/python \\
     python3 bench/torch_step.py [--width 512 --rows 64 --microbatches 8 --steps 5]
A benchmark, not a test.
"""
import argparse
import datetime
import socket
import statistics
import sys
import time

SCHEDULES = ["gpipe", "1f1b", "interleaved", "interleaved-zb", "looped-bfs", "zb-h1",
             "zb-h2", "zb", "v-min", "v-half", "v-zb", "dualpipev"]
LOWERINGS = ("pytorch", "pipesched")


def worker(rank, world, port, args, out):
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage
    import pipesched
    import pipesched.torch as pt
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=300))
    m, width, rows = args.microbatches, args.width, args.rows
    x = torch.randn(m * rows, width)
    y = torch.randn(m * rows, width)
    for name in SCHEDULES:
        for lowering in LOWERINGS:
            sched = pipesched.generate(name, devices=world, microbatches=m)
            n = sched.stages
            torch.manual_seed(0)
            blocks = [torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh())
                      for _ in range(n)]
            mine = pt.stages_of_rank(sched, rank)
            stages = [PipelineStage(blocks[s], s, n, torch.device("cpu")) for s in mine]
            runtime = pt.make_schedule(stages, sched, m, torch.nn.functional.mse_loss,
                                       lowering=lowering)
            first, last = 0 in mine, n - 1 in mine
            times = []
            for i in range(args.steps + 1):
                dist.barrier()
                t = time.perf_counter()
                runtime.step(*((x,) if first else ()), target=y if last else None)
                dist.barrier()
                if i:
                    times.append(time.perf_counter() - t)
            if rank == 0:
                out.put((name, lowering, statistics.median(times)))
            sched.close()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    import torch
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [ctx.Process(target=worker, args=(r, 2, port, args, out)) for r in range(2)]
    for p in procs:
        p.start()
    results = {}
    for _ in range(len(SCHEDULES) * len(LOWERINGS)):
        name, lowering, t = out.get(timeout=1800)
        results[(name, lowering)] = t
    for p in procs:
        p.join()
    print(f"torch {torch.__version__}, p=2 gloo CPU, width {args.width}, {args.rows} rows x "
          f"{args.microbatches} micro-batches, median of {args.steps} steps (ms)")
    print(f"{'schedule':16} {'pytorch':>9} {'pipesched':>10}")
    for name in SCHEDULES:
        a, b = results[(name, "pytorch")], results[(name, "pipesched")]
        print(f"{name:16} {a * 1e3:9.1f} {b * 1e3:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
