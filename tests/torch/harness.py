"""Shared pieces of the torch tests: the torch check (SKIP/FAIL), the tiny
float64 model, its non-pipelined reference step, and a pool of p gloo
processes on 127.0.0.1 that runs many cases in one process group.

Run with the system python; meson sets PIPESCHED_LIBRARY and PYTHONPATH.
"""
import os
import socket
import sys
import traceback

SKIP = 77  # meson's skip exit code
HIDDEN = 6  # width of every block
ROWS = 2  # rows of one micro-batch
TOL = 1e-9


def require_torch():
    """Import torch or leave: SKIP (77) where torch is absent, a failure
    under CI=true (CI must run these tests)."""
    try:
        import torch  # noqa: F401
        import torch.distributed.pipelining  # noqa: F401
    except ImportError as e:
        reason = f"torch is not installed ({e}); pip install torch==2.13.0"
        if os.environ.get("CI", "").lower() == "true":
            print(f"FAIL: {reason} (CI=true: a missing torch is a failure)")
            sys.exit(1)
        print(f"SKIP: {reason}")
        sys.exit(SKIP)
    import torch
    if not torch.__version__.startswith("2.13.0"):
        print(f"FAIL: torch {torch.__version__} is installed; pipesched pins torch==2.13.0")
        sys.exit(1)


def build_blocks(n_stages, seed=1234):
    """One Linear+tanh block per stage, float64, deterministic."""
    import torch
    g = torch.Generator().manual_seed(seed)
    blocks = []
    for _ in range(n_stages):
        lin = torch.nn.Linear(HIDDEN, HIDDEN, dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(HIDDEN, HIDDEN, generator=g, dtype=torch.float64) * 0.5)
            lin.bias.copy_(torch.randn(HIDDEN, generator=g, dtype=torch.float64) * 0.1)
        blocks.append(torch.nn.Sequential(lin, torch.nn.Tanh()))
    return blocks


def batch(m, seed=99):
    import torch
    g = torch.Generator().manual_seed(seed + m)
    x = torch.randn(m * ROWS, HIDDEN, generator=g, dtype=torch.float64)
    y = torch.randn(m * ROWS, HIDDEN, generator=g, dtype=torch.float64)
    return x, y


def loss_fn(out, target):
    import torch
    return torch.nn.functional.mse_loss(out, target)


def reference(n_stages, m):
    """The non-pipelined step: per-micro-batch losses and every block's
    gradients of mean(losses), in one process."""
    import torch
    blocks = build_blocks(n_stages)
    model = torch.nn.Sequential(*blocks)
    x, y = batch(m)
    losses = []
    for xs, ys in zip(x.chunk(m), y.chunk(m)):
        losses.append(loss_fn(model(xs), ys))
    (sum(losses) / m).backward()
    grads = [[p.grad.clone() for p in b.parameters()] for b in blocks]
    return [v.item() for v in losses], grads


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, fn, cases, queue, timeout_s):
    import datetime
    import time
    import torch.distributed as dist
    times = os.environ.get("PIPESCHED_TORCH_TIMES")
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world,
                                timeout=datetime.timedelta(seconds=timeout_s))
    except Exception as e:  # noqa: BLE001
        queue.put((rank, None, f"init_process_group failed: {e}"))
        return
    try:
        for i, case in enumerate(cases):
            t = time.monotonic()
            try:
                msg = fn(rank, world, case)
            except Exception:  # noqa: BLE001
                msg = "raised:\n" + traceback.format_exc()
            if times and rank == 0:
                print(f"# case {i}: {time.monotonic() - t:.2f} s", file=sys.stderr, flush=True)
            queue.put((rank, i, msg))
            # Keep the ranks aligned case by case, so one broken case cannot
            # feed its messages to the next.
            dist.barrier()
    except Exception:  # noqa: BLE001
        queue.put((rank, None, "aborted:\n" + traceback.format_exc()))
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass


def run_pool(world, fn, cases, timeout_s=60, deadline_s=600):
    """Run fn(rank, world, case) for every case on `world` spawned gloo
    processes (one process group for all cases). fn returns None when the
    case passed, else a message. Returns {case index: [(rank, message)]}
    of failures; missing results (a crash or hang) count as failures."""
    import queue as queue_mod
    import time
    import torch.multiprocessing as mp
    # fork: the workers inherit the imported torch and pipesched instead of
    # importing them again (seconds each on a busy 2-core machine); the
    # parent has run no torch op, so no thread pool is forked half-started.
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    q = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, fn, cases, q, timeout_s),
                         daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    results = {}
    failures = {}
    expected = world * len(cases)
    end = time.monotonic() + deadline_s
    got = 0
    while got < expected:
        left = end - time.monotonic()
        if left <= 0:
            break
        try:
            rank, i, msg = q.get(timeout=min(left, 5))
        except queue_mod.Empty:
            if not any(p.is_alive() for p in procs):
                break
            continue
        if i is None:
            failures.setdefault("pool", []).append((rank, msg))
            continue
        got += 1
        results[(rank, i)] = msg
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
            p.join()
    for i in range(len(cases)):
        for r in range(world):
            if (r, i) not in results:
                failures.setdefault(i, []).append((r, "no result (crash or hang)"))
            elif results[(r, i)] is not None:
                failures.setdefault(i, []).append((r, results[(r, i)]))
    return failures
