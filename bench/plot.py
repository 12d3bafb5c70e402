#!/usr/bin/env python3
"""Turn `pipesched-bench --json` output into the figures of the docs.

    plot.py BENCH.json --svg OUT.svg [--html OUT.html] [--schedule NAME]

--svg writes a log-log plot of time per call against the schedule's op
count, one line per operation (generate, validate, simulate, lower, the
rendezvous check of the lowered schedule (lower_check), hash,
CSV export and import), for one generator (default: interleaved) over the
sizes the benchmark ran, with a dashed slope-1 line: cost linear in ops.
--html writes the tables docs/performance.md includes: the targets with
what was measured, every generator at the largest size it ran, and the
search-based generators' time per schedule.

Standard library only, so the docs build needs nothing beyond Python.
"""
import argparse
import html
import json
import math
import sys

OPERATIONS = ["generate", "validate", "simulate", "lower", "lower_check", "hash", "csv_export",
              "csv_import"]
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#bcbd22", "#9467bd", "#8c564b",
           "#e377c2"]

W, H = 760, 470
LEFT, RIGHT, TOP, BOTTOM = 78, 150, 46, 58


def series(results, schedule):
    """{operation: [(ops, median_s, min_s, max_s)]} of one generator, by size."""
    out = {}
    for r in results:
        if r["section"] != "table" or r["schedule"] != schedule:
            continue
        out.setdefault(r["operation"], []).append(
            (r["ops"], r["median_s"], r["min_s"], r["max_s"]))
    for points in out.values():
        points.sort()
    return out


def decades(lo, hi):
    return list(range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1))


def fmt_seconds(exp):
    units = [(-9, "ns"), (-6, "µs"), (-3, "ms"), (0, "s")]
    for base, name in reversed(units):
        if exp >= base:
            return f"{10 ** (exp - base):g} {name}"
    return f"1e{exp} s"


def svg_plot(data, schedule, clock):
    xs = [p[0] for pts in data.values() for p in pts]
    ys = [v for pts in data.values() for p in pts for v in p[1:]]
    xd, yd = decades(min(xs), max(xs)), decades(min(ys), max(ys))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(x):
        return LEFT + pw * (math.log10(x) - xd[0]) / (xd[-1] - xd[0])

    def py(y):
        return TOP + ph * (1 - (math.log10(y) - yd[0]) / (yd[-1] - yd[0]))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{LEFT}" y="24" font-size="14">pipesched: time per call against schedule '
           f'size ({html.escape(schedule)}; {html.escape(clock)})</text>']
    for e in xd:
        x = px(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + ph + 18}" text-anchor="middle">10<tspan '
                   f'dy="-6" font-size="9">{e}</tspan></text>')
    for e in yd:
        y = py(10 ** e)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{fmt_seconds(e)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" '
               f'stroke="#444"/>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 14}" text-anchor="middle">ops in the '
               f'schedule (log)</text>')
    out.append(f'<text transform="translate(16 {TOP + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">median time per call (log)</text>')
    # slope 1 through the middle of the simulate points: linear cost
    ref = data.get("simulate") or next(iter(data.values()))
    x0, y0 = ref[len(ref) // 2][0], ref[len(ref) // 2][1]
    lo, hi = 10 ** xd[0], 10 ** xd[-1]
    a, b = max(lo, x0 * 10 ** yd[0] / y0), min(hi, x0 * 10 ** yd[-1] / y0)
    out.append(f'<line x1="{px(a):.1f}" y1="{py(y0 * a / x0):.1f}" x2="{px(b):.1f}" '
               f'y2="{py(y0 * b / x0):.1f}" stroke="#999" stroke-dasharray="6 4"/>')
    legend_y = TOP + 8
    for name, colour in zip(OPERATIONS, COLOURS):
        pts = data.get(name)
        if not pts:
            continue
        path = " ".join(f"{px(p[0]):.1f},{py(p[1]):.1f}" for p in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                   f'stroke-width="2"/>')
        for p in pts:
            x = px(p[0])
            out.append(f'<line x1="{x:.1f}" y1="{py(p[2]):.1f}" x2="{x:.1f}" '
                       f'y2="{py(p[3]):.1f}" stroke="{colour}"/>')
            out.append(f'<circle cx="{x:.1f}" cy="{py(p[1]):.1f}" r="3" fill="{colour}"/>')
        out.append(f'<line x1="{W - RIGHT + 14}" y1="{legend_y}" x2="{W - RIGHT + 38}" '
                   f'y2="{legend_y}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{W - RIGHT + 44}" y="{legend_y + 4}">{name}</text>')
        legend_y += 20
    out.append(f'<line x1="{W - RIGHT + 14}" y1="{legend_y}" x2="{W - RIGHT + 38}" '
               f'y2="{legend_y}" stroke="#999" stroke-dasharray="6 4"/>')
    out.append(f'<text x="{W - RIGHT + 44}" y="{legend_y + 4}">slope 1 (linear)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def cell(text, header=False):
    tag = "th" if header else "td"
    return f"<{tag}>{html.escape(str(text))}</{tag}>"


def row(cells, header=False):
    return "<tr>" + "".join(cell(c, header) for c in cells) + "</tr>"


def targets_table(targets):
    rows = [row(["target", "limit", "measured", "", "worst case at"], header=True)]
    for t in targets:
        limit = f'{"≥" if t["at_least"] else "≤"} {t["limit"]:g} {t["unit"]}'
        if t["measured"] is None:
            rows.append(row([t["target"], limit, "not run", "", ""]))
            continue
        rows.append(row([t["target"], limit, f'{t["measured"]:.4g} {t["unit"]}',
                         "met" if t["met"] else "MISSED", t["where"]]))
    return "<table>\n" + "\n".join(rows) + "\n</table>\n"


def generators_table(results):
    """Each generator at the largest size it ran: ns/op of every operation."""
    largest = {}
    for r in results:
        if r["section"] == "table":
            key = r["schedule"]
            if key not in largest or r["ops"] > largest[key]:
                largest[key] = r["ops"]
    by = {}
    for r in results:
        if r["section"] == "table" and r["ops"] == largest[r["schedule"]]:
            by.setdefault(r["schedule"], {})[r["operation"]] = r
    head = ["schedule", "p", "m", "v", "ops"] + [f"{op} ns/op" for op in OPERATIONS] + \
           ["B/op generating (peak)", "B/op generated (kept)", "B/op simulating (peak)"]
    rows = [row(head, header=True)]
    for name, ops in by.items():
        any_r = next(iter(ops.values()))
        cells = [name, any_r["devices"], any_r["microbatches"], any_r["chunks"], any_r["ops"]]
        cells += [f'{ops[op]["ns_per_op"]:.3g}' if op in ops else "-" for op in OPERATIONS]
        for op, key in (("generate", "bytes_per_op"), ("generate", "kept_bytes_per_op"),
                        ("simulate", "bytes_per_op")):
            b = ops.get(op, {}).get(key)
            cells.append(f"{b:.1f}" if b is not None else "-")
        rows.append(row(cells))
    return "<table>\n" + "\n".join(rows) + "\n</table>\n"


def heuristic_table(results):
    rows = [row(["schedule", "p", "m", "ops", "costs", "median ms", "min ms", "max ms"],
                header=True)]
    for r in results:
        if r["section"] == "heuristic":
            rows.append(row([r["schedule"], r["devices"], r["microbatches"], r["ops"], r["note"],
                             f'{1e3 * r["median_s"]:.2f}', f'{1e3 * r["min_s"]:.2f}',
                             f'{1e3 * r["max_s"]:.2f}']))
    return "<table>\n" + "\n".join(rows) + "\n</table>\n"


def html_tables(bench):
    results = bench["results"]
    clock = "thread CPU time" if bench.get("clock") == "cpu" else "wall clock"
    parts = [f'<p>pipesched {html.escape(bench.get("version", ""))}, '
             f'{html.escape(bench.get("buildtype", "unknown"))} build, on '
             f'{html.escape(bench.get("cpu", "an unknown CPU"))}; '
             f'{html.escape(bench.get("sizes", ""))} sizes, {clock}; times are medians of '
             f'repeated calls after a warm-up.</p>\n',
             "<h3>Targets</h3>\n", targets_table(bench.get("targets", [])),
             "<h3>Every generator at the largest size it ran (ns per op)</h3>\n",
             generators_table(results),
             "<h3>Search-based generators: time per schedule</h3>\n",
             heuristic_table(results)]
    return "".join(parts)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", help="output of pipesched-bench --json")
    ap.add_argument("--svg", help="write the log-log plot here")
    ap.add_argument("--html", help="write the tables here (an HTML fragment)")
    ap.add_argument("--schedule", default="interleaved", help="generator to plot")
    args = ap.parse_args(argv)
    with open(args.bench, encoding="utf-8") as f:
        bench = json.load(f)
    if args.svg:
        data = series(bench["results"], args.schedule)
        if not data:
            sys.exit(f"plot.py: no table results for schedule {args.schedule!r}")
        clock = "thread CPU time" if bench.get("clock") == "cpu" else "wall clock"
        with open(args.svg, "w", encoding="utf-8") as f:
            f.write(svg_plot(data, args.schedule, clock))
    if args.html:
        with open(args.html, "w", encoding="utf-8") as f:
            f.write(html_tables(bench))


if __name__ == "__main__":
    main(sys.argv[1:])
