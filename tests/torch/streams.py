"""A small timing model of PyTorch's runtime executing a compute_comms
order on NCCL (what `_PipelineScheduleRuntime._step_microbatches` does):
SEND and RECV are posted one by one without blocking the compute side
(isend / irecv), and a compute op waits only for the RECV that feeds it.
Point-to-point calls between two ranks run on that pair's own stream in
posting order, and each call completes only when the peer's matching call
runs (a rendezvous: NCCL's behaviour behind pytorch#165664, #172668 and
#188833, where a RECV posted early holds up the calls behind it). A
transfer completes `comm` after the later of its two starts. Two heads of
a pair stream that are not each other's match (two SENDs, two RECVs) wait
forever: the run reports the deadlock.

Pure Python, no torch: actions are (kind, stage, micro-batch) tuples or
("OVERLAP", [sub-actions]); kinds F, I, W, B, SEND_F, RECV_F, SEND_B,
RECV_B; other kinds (REDUCE_GRAD) take no time.
"""
import re

COMM = {"SEND_F", "RECV_F", "SEND_B", "RECV_B"}


class Deadlock(RuntimeError):
    pass


def parse(action):
    """A PyTorch action (or its string) as a tuple."""
    text = str(action)
    if text.endswith("OVERLAP_F_B"):
        return ("OVERLAP", [parse(s) for s in text[1:text.index(")")].split(";")])
    st, kind, mb = re.match(r"(\d+)([A-Z_]+?)(\d*)$", text).groups()
    return (kind, int(st), int(mb) if mb else None)


def peer_of(op, stage_to_rank):
    kind, st, _ = op
    return stage_to_rank[st + 1] if kind in ("SEND_F", "RECV_B") else stage_to_rank[st - 1]


def _input_recv(op, r, stage_to_rank):
    """The RECV key (stage, kind, mb) feeding compute op `op` on rank r, or
    None when its input is local (first/last stage, same-rank neighbour)."""
    kind, st, mb = op
    if kind == "F":
        src, key = st - 1, (st, "RECV_F", mb)
    elif kind in ("I", "B"):
        src, key = st + 1, (st, "RECV_B", mb)
    else:
        return None
    if not 0 <= src < len(stage_to_rank) or stage_to_rank[src] == r:
        return None
    return key


def run(order, stage_to_rank, cost, comm, per="pair"):
    """order: {rank: [tuple]}; cost(kind, stage) -> time. per="pair": one
    stream per pair of ranks (ProcessGroupNCCL's point-to-point
    communicators); per="device": one stream per rank for all its calls
    (the setting of pytorch#165664, where a RECV blocks the SENDs behind
    it). Returns (makespan, {(stage, RECV kind, mb): completion}); raises
    Deadlock."""
    ranks = sorted(order)
    pos = {r: 0 for r in ranks}
    clock = {r: 0.0 for r in ranks}
    queue = {}  # (rank, peer) -> [(post time, op)] not yet completed, in posting order
    free = {}  # (rank, peer) -> the pair stream is free from
    recv_done = {}
    end = 0.0
    progress = True
    while progress:
        progress = False
        for r in ranks:
            while pos[r] < len(order[r]):
                op = order[r][pos[r]]
                if op[0] in COMM:
                    q = peer_of(op, stage_to_rank) if per == "pair" else None
                    queue.setdefault((r, q), []).append((clock[r], op))
                    pos[r] += 1
                    progress = True
                    continue
                subs = op[1] if op[0] == "OVERLAP" else [op]
                ready, blocked = clock[r], False
                for sub in subs:
                    key = _input_recv(sub, r, stage_to_rank)
                    if key is None:
                        continue
                    if key not in recv_done:
                        blocked = True
                        break
                    ready = max(ready, recv_done[key])
                if blocked:
                    break
                clock[r] = ready + sum(cost(s[0], s[1]) for s in subs)
                end = max(end, clock[r])
                pos[r] += 1
                progress = True
        for (r, q0), mine in list(queue.items()):
            while mine:
                q = peer_of(mine[0][1], stage_to_rank)
                theirs = queue.get((q, q0 if q0 is None else r), [])
                if not theirs:
                    break
                (pa, a), (pb, b) = mine[0], theirs[0]
                if not _match(a, b):
                    break
                ka, kb = (r, q0), (q, q0 if q0 is None else r)
                t = max(pa, free.get(ka, 0.0), pb, free.get(kb, 0.0)) + comm
                free[ka] = free[kb] = t
                recv = a if a[0].startswith("RECV") else b
                recv_done[(recv[1], recv[0], recv[2])] = t
                end = max(end, t)
                mine.pop(0)
                theirs.pop(0)
                progress = True
    stuck = sorted({r for r in ranks if pos[r] < len(order[r])} |
                   {r for (r, _), qd in queue.items() if qd})
    if stuck:
        heads = {f"{r}->{q}": str(qd[0][1]) for (r, q), qd in queue.items() if qd}
        raise Deadlock(f"ranks {stuck} never finish; pair-stream heads {heads}")
    return end, recv_done


def _match(a, b):
    """Whether comm ops a and b are the two ends of one transfer."""
    send, recv = (a, b) if a[0].startswith("SEND") else (b, a)
    if not send[0].startswith("SEND") or not recv[0].startswith("RECV"):
        return False
    if send[0] == "SEND_F":
        return recv == ("RECV_F", send[1] + 1, send[2])
    return recv == ("RECV_B", send[1] - 1, send[2])
