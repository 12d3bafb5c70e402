"""One training step of a small model under pipesched schedules, executed by
PyTorch's own pipelining runtime on CPU processes (gloo), checked against
the same step without a pipeline.

    python3 pytorch_pipeline.py --devices 2                   # every schedule, 2 processes
    python3 pytorch_pipeline.py --devices 4 --schedule v-zb --lowering pipesched
    torchrun --nproc-per-node 4 pytorch_pipeline.py --schedule zb-h1

Needs torch==2.13.0 and the pipesched package (pip install .[torch]).
Exits non-zero when a gradient or loss differs from the non-pipelined step
by more than 1e-9.
"""
import argparse
import datetime
import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage

import pipesched
import pipesched.torch as pt

SCHEDULES = ["gpipe", "1f1b", "interleaved", "interleaved-zb", "looped-bfs", "zb-h1",
             "zb-h2", "zb", "v-min", "v-half", "v-zb", "dualpipev"]
WIDTH, ROWS = 16, 4  # features of every block; rows of one micro-batch


def blocks_for(n_stages):
    """The model: one Linear+tanh block per pipeline stage, float64, the
    same on every process (fixed seed)."""
    torch.manual_seed(0)
    return [torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH, dtype=torch.float64),
                                torch.nn.Tanh()) for _ in range(n_stages)]


def loss_fn(output, target):
    return torch.nn.functional.mse_loss(output, target)


def data(m):
    g = torch.Generator().manual_seed(1)
    return (torch.randn(m * ROWS, WIDTH, generator=g, dtype=torch.float64),
            torch.randn(m * ROWS, WIDTH, generator=g, dtype=torch.float64))


def reference_step(n_stages, m):
    """Losses and gradients of the same step without a pipeline: the mean
    of the micro-batch losses, as PyTorch's schedules scale them."""
    blocks = blocks_for(n_stages)
    model = torch.nn.Sequential(*blocks)
    x, y = data(m)
    losses = [loss_fn(model(xs), ys) for xs, ys in zip(x.chunk(m), y.chunk(m))]
    (sum(losses) / m).backward()
    return [v.item() for v in losses], [[p.grad for p in b.parameters()] for b in blocks]


def pipelined_step(rank, name, p, m, lowering):
    """One step on this rank; returns the largest difference from the
    reference on this rank's stages."""
    schedule = pipesched.generate(name, devices=p, microbatches=m)
    n_stages = schedule.stages
    blocks = blocks_for(n_stages)
    mine = pt.stages_of_rank(schedule, rank)  # V placement: rank 0 holds stages 0 and 2p-1
    stages = [PipelineStage(blocks[s], s, n_stages, torch.device("cpu")) for s in mine]
    runtime = pt.make_schedule(stages, schedule, m, loss_fn, lowering=lowering)

    x, y = data(m)
    first, last = 0 in mine, n_stages - 1 in mine
    losses = []
    runtime.step(*((x,) if first else ()), target=y if last else None,
                 losses=losses if last else None)

    want_losses, want_grads = reference_step(n_stages, m)
    worst = max((abs(a.item() - b) for a, b in zip(losses, want_losses)), default=0.0)
    for s in mine:
        for param, want in zip(blocks[s].parameters(), want_grads[s]):
            worst = max(worst, (param.grad - want).abs().max().item())
    return worst


def run(rank, p, args):
    failed = False
    for name in args.schedule:
        for lowering in args.lowering:
            m = args.microbatches or 2 * p  # dualpipev needs m >= 2p
            worst = torch.tensor(pipelined_step(rank, name, p, m, lowering), dtype=torch.float64)
            dist.all_reduce(worst, op=dist.ReduceOp.MAX)
            ok = worst.item() <= 1e-9
            failed |= not ok
            if rank == 0:
                print(f"{name:15} p={p} m={m} lowering={lowering:9} max |diff| = "
                      f"{worst.item():.1e}  {'ok' if ok else 'FAILED'}", flush=True)
    return failed


def worker(rank, p, port, args):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=p, timeout=datetime.timedelta(seconds=120))
    try:
        if run(rank, p, args):
            sys.exit(1)
    finally:
        dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=2, help="processes (ignored under torchrun)")
    parser.add_argument("--microbatches", type=int, default=0, help="default: 2 * devices")
    parser.add_argument("--schedule", action="append", choices=SCHEDULES,
                        help="repeatable; default: every schedule")
    parser.add_argument("--lowering", action="append", choices=["pytorch", "pipesched"],
                        help="repeatable; default: both")
    args = parser.parse_args()
    args.schedule = args.schedule or SCHEDULES
    args.lowering = args.lowering or ["pytorch", "pipesched"]

    if "RANK" in os.environ:  # started by torchrun: one process per rank
        dist.init_process_group("gloo")
        try:
            return 1 if run(dist.get_rank(), dist.get_world_size(), args) else 0
        finally:
            dist.destroy_process_group()

    with socket.socket() as s:  # a free port on this machine only
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # fork where the platform has it: the workers start with torch already
    # imported (spawn re-imports it in every process, seconds each).
    method = "fork" if "fork" in torch.multiprocessing.get_all_start_methods() else "spawn"
    try:
        torch.multiprocessing.start_processes(worker, args=(args.devices, port, args),
                                              nprocs=args.devices, start_method=method)
    except torch.multiprocessing.ProcessExitedException:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
