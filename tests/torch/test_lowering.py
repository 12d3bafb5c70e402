"""Comm lowering that does not stall (issue 14 item 4), on the two
configurations of PyTorch's reports: pytorch#172668 (Interleaved1F1B,
p=2, v=2, m=4: rank 0 posts 2RECV_F0 before the independent 0F1) and
pytorch#188833 (Interleaved1F1B warm-up, p=8, v=2; m=8 and 16), plus
every other schedule family at p=4. For the order pipesched.torch hands
to PyTorch with lowering="pipesched":

1. every RECV comes after each compute op of its rank that ends, in the
   compute-only simulation, no later than the producer of the received
   tensor (a RECV posted before such an op is posted earlier than needed:
   the data cannot be there before that op finishes). The same check
   finds PyTorch's own insertion (_add_send_recv) breaking it in both
   reported configurations, so it is not vacuous;
2. it never deadlocks: pipesched's rendezvous validator accepts it (each
   call on its own, as PyTorch posts them) and the stream model
   (streams.py) finishes with one stream per pair of ranks and with one
   per rank;
3. with zero comm latency, the stream model's step time equals the
   compute-only simulation, also with one stream per rank, where
   PyTorch's insertion shows the #188833 warm-up stall;
4. with latency c > 0 the step should be no slower than the compute-only
   simulation with latency c (which already pays every unavoidable
   transfer). pipesched's lowering does not meet this today: it places a
   RECV right before its consumer when the two ranks are not idle together
   (rendezvous model), so the transfer's latency is never hidden behind
   compute. Printed as expected failures (TAP "# TODO"), each with its
   numbers; one that starts passing says so, so the list can shrink when
   lib/core/lower.c is fixed.

Exit 77 (skip) where torch is absent, a failure under CI=true.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import streams  # noqa: E402

REPORTED = [("interleaved", 2, 2, 4, "pytorch#172668"),
            ("interleaved", 8, 2, 8, "pytorch#188833"),
            ("interleaved", 8, 2, 16, "pytorch#188833")]
OTHERS = [(n, 4, v, 8, "") for n, v in (("gpipe", 1), ("1f1b", 1), ("zb-h1", 1), ("zb-h2", 1),
                                        ("interleaved-zb", 2), ("looped-bfs", 2), ("v-half", 2),
                                        ("v-zb", 2), ("dualpipev", 2))]
LATENCIES = (0.0, 0.25, 1.0)


def cost(kind, stage):
    return {"F": 1.0, "I": 1.0, "W": 1.0, "B": 2.0}.get(kind, 0.0)


def tuples(order):
    return {r: [streams.parse(a) for a in acts if a.computation_type.value != "REDUCE_GRAD"]
            for r, acts in order.items()}


def early_recvs(order, times, producer_end, stage_rank):
    """RECVs posted before a compute op of their rank that ends no later
    than their producer (position-based; times from the compute-only
    simulation). Returns ["rank r: 2RECV_F0 before 0F1", ...]."""
    bad = []
    for r, acts in order.items():
        compute = [(i, a) for i, a in enumerate(acts) if a[0] not in streams.COMM]
        for i, a in enumerate(acts):
            if not a[0].startswith("RECV"):
                continue
            consumer = ("F" if a[0] == "RECV_F" else None, a[1], a[2])
            t_prod = producer_end[(a[0], a[1], a[2])]
            for j, c in compute:
                if j < i:
                    continue
                subs = c[1] if c[0] == "OVERLAP" else [c]
                if any(s[1] == a[1] and s[2] == a[2] and
                       (s[0] == "F" if consumer[0] else s[0] in ("I", "B")) for s in subs):
                    break  # reached the consumer
                if times[r][id(c)] <= t_prod + 1e-9:
                    bad.append(f"rank {r}: {_s(a)} before {_s(c)}")
                    break
    return bad


def _s(a):
    if a[0] == "OVERLAP":
        return "(" + ";".join(_s(s) for s in a[1]) + ")OVERLAP_F_B"
    return f"{a[1]}{a[0]}{'' if a[2] is None else a[2]}"


def compute_times(schedule, order):
    """{rank: {id(action): end}} from pipesched's compute-only simulation,
    and {(RECV kind, stage, mb): end of the producer}."""
    import pipesched.torch as pt
    report = schedule.simulate()
    ends = {}
    by_op = {}
    for d in range(schedule.devices):
        for op, (_, e) in zip(schedule.ops(d), report.op_times(d)):
            by_op[(op.kind, op.stage, op.microbatch)] = e
    kind_of = {"F": "F", "I": "B", "W": "W", "B": "BW"}
    for r, acts in order.items():
        ends[r] = {}
        for a in acts:
            if a[0] in streams.COMM:
                continue
            subs = a[1] if a[0] == "OVERLAP" else [a]
            ends[r][id(a)] = max(by_op[(kind_of[s[0]], s[1], s[2])] for s in subs)
    producer_end = {}
    for (kind, st, mb), e in by_op.items():
        if kind == "F":
            producer_end[("RECV_F", st + 1, mb)] = e
        elif kind in ("B", "BW"):
            producer_end[("RECV_B", st - 1, mb)] = e
    del pt
    return ends, producer_end


def main():
    harness.require_torch()
    from torch.distributed.pipelining import schedules as pts
    import pipesched
    import pipesched.torch as pt

    n = failed = 0
    expected_failures = []

    def check(ok, text, details=()):
        nonlocal n, failed
        n += 1
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} {n} - {text}")
        for line in details:
            print(f"#   {line}")

    for name, p, v, m, why in REPORTED + OTHERS:
        tag = f"{name} p={p} v={v} m={m}" + (f" ({why})" if why else "")
        for c in LATENCIES:
            with pipesched.generate(name, devices=p, microbatches=m, chunks=v,
                                    cost=(1, 1, 1), comm=c) as s:
                st = pt.stage_to_rank(s)
                t_compute = s.simulate().makespan
                mine_actions = pt.to_pipeline_order_with_comms(s)
                mine = tuples(mine_actions)
                theirs = tuples(pts._add_send_recv(
                    {r: list(a) for r, a in pt.to_pipeline_order(s).items()},
                    lambda x: st[x], s.stages))
                times, prod = compute_times(s, mine)
                times_t, _ = compute_times(s, theirs)
                text = "\n".join(",".join(str(a) for a in mine_actions[r]
                                          if a.computation_type.value != "REDUCE_GRAD")
                                 for r in range(p)) + "\n"
                with pipesched.from_csv(text) as flat:
                    try:
                        flat.validate()
                        verdict = None
                    except pipesched.Error as e:
                        verdict = f"{type(e).__name__}: {e}"

            early = early_recvs(mine, times, prod, st)
            check(not early, f"{tag} c={c}: every RECV posted no earlier than needed", early[:3])
            if why and c == 0:
                theirs_early = early_recvs(theirs, times_t, prod, st)
                check(bool(theirs_early), f"{tag}: the check finds PyTorch's early RECVs "
                      f"({len(theirs_early)}, e.g. {theirs_early[:1]})")
            check(verdict is None, f"{tag} c={c}: deadlock-free under pipesched's rendezvous "
                  "validator, one call at a time", [verdict] if verdict else ())
            spans = {}
            for per in ("pair", "device"):
                try:
                    spans[per] = streams.run(mine, st, cost, c, per)[0]
                except streams.Deadlock as e:
                    spans[per] = None
                    check(False, f"{tag} c={c}: stream model ({per}) finishes", [str(e)])
            if c == 0:
                for per, span in spans.items():
                    if span is not None:
                        check(abs(span - t_compute) < 1e-9, f"{tag} c=0: step {span:g} in the "
                              f"stream model ({per}) equals the compute-only {t_compute:g}")
                if why == "pytorch#188833" and m == 16:
                    t_pt = streams.run(theirs, st, cost, c, "device")[0]
                    check(t_pt > t_compute, f"{tag}: the stream model reproduces the report: "
                          f"PyTorch's insertion takes {t_pt:g} > {t_compute:g} with one stream "
                          "per rank")
            else:
                span = spans["pair"]
                if span is not None:
                    ok = span <= t_compute + 1e-9
                    expected_failures.append((ok, f"{tag} c={c}: step {span:g} (pair streams) "
                                              f"<= compute-only {t_compute:g}"))

    # Expected failures (item 4's latency bound, see the module docstring).
    for ok, text in expected_failures:
        n += 1
        if ok:
            print(f"ok {n} - {text} # TODO passes now: drop it from the expected failures")
        else:
            print(f"not ok {n} - {text} # TODO lib/core/lower.c does not hide latency yet")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
