"""The library's files call each other without circles (issue 13 item 4):
no file in lib/ or schedules/ calls a function of a file that calls back
into it, directly or through others (a reference to data, such as the
registry's table of generator descriptors, is not a call); the optimizer's model (model.c) calls nothing
else in the optimizer. Read from the symbols each object of the static
library defines and needs (`nm`, binutils, part of every C toolchain the
build supports). argv: the static library (a thin archive is fine)."""
import collections
import os
import subprocess
import sys


def objects(archive):
    """{object name: (functions defined, symbols used)}. Only functions
    count as callees: the registry's table refers to every generator's
    descriptor (data), and generators call the library through it."""
    out = subprocess.run(["nm", "-A", archive], check=True, capture_output=True,
                         text=True).stdout
    table = collections.defaultdict(lambda: (set(), set()))
    for line in out.splitlines():
        # "archive:member.o:<value> <type> <name>" (value blank for U)
        where, sep, rest = line.partition(".o:")
        if not sep:
            continue
        name = os.path.basename(where).replace(".._", "").replace(".c", "")
        parts = rest.split()
        if len(parts) == 2 and parts[0] == "U":
            table[name][1].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TW":
            table[name][0].add(parts[2])
    return table


def graph(table):
    owner = {s: n for n, (defined, _) in table.items() for s in defined}
    edges = collections.defaultdict(dict)
    for n, (_, needed) in table.items():
        for s in sorted(needed):
            o = owner.get(s)
            if o is not None and o != n:
                edges[n].setdefault(o, []).append(s)
    return edges


def circles(nodes, edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def main():
    table = objects(sys.argv[1])
    edges = graph(table)
    failures = []
    if len(table) < 40 or "core_execute" not in table or "optimizer_model" not in table:
        failures.append(f"expected the library's objects in {sys.argv[1]}, found {sorted(table)}")
    for comp in circles(table, edges):
        calls = [f"{a} -> {b} ({', '.join(edges[a][b][:3])})"
                 for a in comp for b in sorted(edges.get(a, {})) if b in comp]
        failures.append("files calling each other in a circle: " + "; ".join(calls))
    for callee, syms in sorted(edges.get("optimizer_model", {}).items()):
        if callee.startswith("optimizer_"):
            failures.append(f"optimizer model.c calls {callee} ({', '.join(syms[:3])})")
    # The check itself must see calls: execute.c calls into collective.c.
    if "core_collective" not in edges.get("core_execute", {}):
        failures.append("no call from core_execute to core_collective seen: nm output not read")
    for f in failures:
        print("FAIL " + f)
    print(f"{len(table)} objects, {sum(len(e) for e in edges.values())} file-to-file calls")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
