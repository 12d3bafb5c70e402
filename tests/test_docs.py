"""docs/schedules.md and the offload table of docs/simulator.md agree with
the simulator, and the simulator agrees with the published closed forms,
at p = 8, m = 32 with unit costs.

The expected values below are the papers' formulas (1F1B, Megatron
interleaved, ZB-H1/H2, ZB1P, V-shape, DualPipe, Chimera), not the code's output; the
page is then checked against the simulator so it cannot drift."""
import json
import os
import re
import subprocess
import sys
import unittest

CLI = os.environ.get("PIPESCHED_CLI", "")
DOCS = os.environ.get("PIPESCHED_DOCS", "")
P, M = 8, 32
F = B = W = 1  # per-stage unit costs; BW = B + W = 2; an F&B pair = F + BW = 3

# schedule -> (span, peak memory in chunk units on the worst device)
FORMULAS = {
    "gpipe": (M * 3 + (P - 1) * (F + B + W), M),
    "1f1b": (M * 3 + (P - 1) * (F + B + W), P),
    # per-chunk costs, v = 2: work 2·3m; Megatron's bubble (p-1)·(stage time)/v
    "interleaved": (2 * M * 3 + (P - 1) * 2 * (F + B + W) // 2, 2 * (P - 1) + (2 - 1) * P + 1),
    "looped-bfs": (2 * M * 3 + (P - 1) * (F + B + W), M * 2),
    # ZB1P in DualPipe's table: (PP-1)(F + B - 2W) with B the full backward
    "interleaved-zb": (2 * M * 3 + (P - 1) * (F + (B + W) - 2 * W), (P - 1) + (2 - 1) * P + 1),
    "zb-h1": (M * 3 + (P - 1) * (F + B - W), P),
    "zb-h2": (M * 3, 2 * P - 1),
    "v-zb": (2 * M * 3, 2 * P),
    "v-min": (None, 2 * ((P + 4) // 3)),
    "v-half": (None, 2 * ((P + 2) // 2)),
    # DualPipe: (PP/2 - 1)(F&B + B - 3W) with B the full backward (2), F&B = 3
    "dualpipev": (2 * M * 3 + (2 * P // 2 - 1) * (3 + 2 - 3 * W), 2 * P + 1),
    "dualpipe": (M * 3 + (P // 2 - 1) * (3 + 2 - 3 * W), P + 1),
    # Chimera states its bubble for a forward and a backward of equal length
    # (checked below); here BW = 2F. Peak: D stage activations (table 2)
    "chimera": (None, P),
}
TWO_CHAINS = ("dualpipe", "chimera")


def simulate(name, *extra):
    out = subprocess.run([CLI, "simulate", "--schedule", name, "--devices", str(P),
                          "--microbatches", str(M), "--json", *extra],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def page_rows():
    rows = {}
    with open(os.path.join(DOCS, "schedules.md"), encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 10 and re.fullmatch(r"[a-z0-9-]+", cells[0]) and cells[1].isdigit():
                rows[cells[0]] = cells
    return rows


class SchedulesPage(unittest.TestCase):
    def test_simulator_meets_the_published_formulas(self):
        for name, (span, peak) in FORMULAS.items():
            with self.subTest(schedule=name):
                r = simulate(name)
                if span is not None:
                    self.assertEqual(r["span"], span)
                self.assertEqual(max(r["peak_memory"]), peak)

    def test_chimera_meets_its_bubble_with_equal_slots(self):
        # Li & Hoefler, table 2: bubble ratio (D-2)/(2N+D-2) with N
        # micro-batches per worker (m: each device runs m/2 of each
        # pipeline) in slots of one forward = one backward; t_F = 2,
        # t_B = t_W = 1 makes BW = F = one slot of 2.
        r = simulate("chimera", "--cost", "2,1,1")
        self.assertEqual(r["span"], 2 * (2 * M + P - 2))
        self.assertEqual(round(r["bubble_ratio"], 9), round((P - 2) / (2 * M + P - 2), 9))

    def test_page_lists_every_schedule_with_the_simulated_figures(self):
        rows = page_rows()
        names = [g["name"] for g in json.loads(subprocess.run(
            [CLI, "list", "--json"], capture_output=True, text=True, check=True).stdout)]
        builtin = [n for n in names if n in FORMULAS or n == "zb"]
        self.assertEqual(sorted(rows), sorted(builtin))
        for name, cells in rows.items():
            with self.subTest(schedule=name):
                r = simulate(name)
                v, span, bubble = int(cells[1]), float(cells[2]), float(cells[3])
                self.assertEqual(r["chunks"], v)
                self.assertEqual(r["span"], span)
                # work per device: m·v·(F+B+W), except that the two chains
                # of DualPipe and Chimera split m between them
                work = M * 3 * v // (2 if name in TWO_CHAINS else 1)
                self.assertEqual(span - bubble, work)
                self.assertEqual(r["makespan"], float(cells[5]))
                self.assertEqual(round(r["bubble_ratio"], 4), float(cells[6]))
                self.assertEqual(max(r["peak_memory"]), float(cells[7]))
                self.assertEqual(round(r["peak_memory_M"], 4), float(cells[9]))


def layout_paths(readme):
    """The paths README.md's "## Layout" block names: the first column of
    each line (text before a run of two spaces), split at ", "."""
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    paths = []
    for line in block.splitlines():
        if not line or line.startswith(" "):
            continue  # the fence's info string, or a wrapped description
        first = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        paths += [p.strip() for p in first.split(",") if p.strip()]
    return paths


def is_build_output(path):
    """A meson build directory or a Python virtual environment: made by a
    user, not part of the repository."""
    if os.path.basename(path).startswith("build"):
        return True  # .gitignore's build*/: meson's, or .ci/run's wheel output
    return any(os.path.exists(os.path.join(path, mark))
               for mark in ("meson-private", "build.ninja", "pyvenv.cfg"))


class ReadmeLayout(unittest.TestCase):
    """Issue 11 item 7: README's Layout lists folders and files that exist,
    and every folder of the repository."""

    def setUp(self):
        self.root = os.path.normpath(os.path.join(DOCS, os.pardir))
        with open(os.path.join(self.root, "README.md"), encoding="utf-8") as f:
            self.paths = layout_paths(f.read())
        self.assertIn("lib/core/", self.paths)  # the parser found the block

    def test_every_listed_path_exists(self):
        for path in self.paths:
            with self.subTest(path=path):
                full = os.path.join(self.root, path)
                if path.endswith("/"):
                    self.assertTrue(os.path.isdir(full), f"README Layout: no folder {path}")
                else:
                    self.assertTrue(os.path.isfile(full), f"README Layout: no file {path}")

    def test_every_folder_is_listed(self):
        listed = {p.rstrip("/") for p in self.paths}
        listed_tops = {p.split("/", 1)[0] for p in listed}
        for name in sorted(os.listdir(self.root)):
            full = os.path.join(self.root, name)
            if (not os.path.isdir(full) or (name.startswith(".") and name != ".ci")
                    or is_build_output(full)):
                continue
            with self.subTest(folder=name):
                self.assertIn(name, listed_tops, f"README Layout does not list {name}/")
        # the folders under lib/ and bindings/ are each described
        for parent in ("lib", "bindings"):
            for name in sorted(os.listdir(os.path.join(self.root, parent))):
                if os.path.isdir(os.path.join(self.root, parent, name)):
                    with self.subTest(folder=f"{parent}/{name}"):
                        self.assertIn(f"{parent}/{name}", listed,
                                      f"README Layout does not list {parent}/{name}/")


def offload_rows():
    """The peak-memory table of docs/simulator.md ("Activation offload"):
    schedule, offload, simulated peak, step time."""
    rows = []
    with open(os.path.join(DOCS, "simulator.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("**Peak activation memory per device**"):]
    for line in table.splitlines()[1:]:
        if line.startswith("| schedule") or line.startswith("|---"):
            continue
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append(cells[:4])
    return rows


# p = 8, m = 32, unit costs, mem_F = 1 per stage: peak in units of M (S
# chunk units) and step time, where a closed form exists. 1F1B holds p
# activations on device 0 (M) and takes (m + p - 1)·3; V-Min holds
# 2⌊(p + 4)/3⌋ chunk units of 2p; with offload a device holds the F running
# and the activation reloaded for the next backward, 2 chunk units, and
# copies hidden at PCIe >= mem_F / t_F = 1 cost no time.
OFFLOAD_FORMULAS = {
    ("1F1B", "none"): (P / P, (M + P - 1) * 3),
    ("V-Min", "none"): (2 * ((P + 4) // 3) / (2 * P), None),
    ("1F1B", "selective"): (2 / P, (M + P - 1) * 3),
    ("1F1B", "all, PCIe ∞"): (2 / P, (M + P - 1) * 3),
    ("1F1B", "all, PCIe 1"): (2 / P, None),
    ("interleaved (v = 2)", "selective"): (2 / (2 * P), None),
    ("V-Min", "selective"): (None, None),
}


class OffloadTable(unittest.TestCase):
    def test_table_rows_are_the_simulated_figures_and_the_closed_forms(self):
        rows = offload_rows()
        self.assertEqual(sorted((r[0], r[1]) for r in rows), sorted(OFFLOAD_FORMULAS))
        for schedule, offload, peak, step in rows:
            with self.subTest(schedule=schedule, offload=offload):
                name, _, v = schedule.partition(" (v = ")
                args = [CLI, "simulate", "--schedule", name.lower(), "--devices", str(P),
                        "--microbatches", str(M), "--json"]
                if v:
                    args += ["--chunks", v.rstrip(")")]
                if offload != "none":
                    policy, _, pcie = offload.partition(", PCIe ")
                    args += ["--offload", policy]
                    if pcie != "∞":
                        args += ["--pcie-bandwidth", pcie or "1"]
                r = json.loads(subprocess.run(args, capture_output=True, text=True,
                                              check=True).stdout)
                self.assertTrue(peak.endswith(" M"), peak)
                self.assertEqual(r["peak_memory_M"], float(peak[:-2]))
                self.assertEqual(r["makespan"], float(step))
                want_peak, want_step = OFFLOAD_FORMULAS[(schedule, offload)]
                if want_peak is not None:
                    self.assertEqual(r["peak_memory_M"], want_peak)
                if want_step is not None:
                    self.assertEqual(r["makespan"], want_step)


# Vocabulary Parallelism (Yeung et al., MLSys'25), docs/schedules.md
# "Vocabulary Parallelism". Unit costs, p = 8, m = 32, S and T passes free:
# the paper's activation memory, p + 2 micro-batches under Vocab-1 and
# p + 1 under Vocab-2 (1F1B alone: p), and 1F1B's span (m + p - 1)(F+B+W),
# which free passes leave unchanged (the extra warm-up forwards run while
# the first backward travels down the pipeline anyway).
VOCAB_UNIT = {0: (P, (M + P - 1) * 3), 1: (P + 2, (M + P - 1) * 3), 2: (P + 1, (M + P - 1) * 3)}
ROOT = os.path.dirname(DOCS)


def profile(path):
    """Groups of a layer profile: (type, count, f, b, w, act, param)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or line.startswith("type,") or not line.strip():
                continue
            c = line.strip().split(",")
            rows.append((c[0], int(c[1])) + tuple(float(x) for x in c[2:7]))
    return rows


def params_per_device(groups, vocab):
    """Parameter bytes of each device under the --model rule (docs/cli.md):
    transformer layers split evenly over the p stages, the first L mod p
    taking one more; the embedding on stage 0 and the head on stage p-1,
    or, with vocab, both split evenly over every device."""
    body = [g[6] for g in groups if g[0] not in ("embedding", "head") for _ in range(g[1])]
    emb = sum(g[6] * g[1] for g in groups if g[0] == "embedding")
    head = sum(g[6] * g[1] for g in groups if g[0] == "head")
    out, at = [], 0
    for s in range(P):
        n = len(body) // P + (1 if s < len(body) % P else 0)
        x = sum(body[at:at + n])
        at += n
        if vocab:
            x += (emb + head) / P
        else:
            x += emb if s == 0 else 0
            x += head if s == P - 1 else 0
        out.append(x)
    return out


def vocab_variant(model, m, variant):
    """Step time and peak memory (GB: parameters + simulated activations on
    the fullest device) of one row of the reproduction table."""
    path = os.path.join(ROOT, "docs", "examples", model)
    base = [CLI, "--devices", str(P), "--microbatches", str(m), "--model", path, "--json"]
    if variant == "redistribution":
        # the exact DP partition: deterministic, unlike a time-limited ILP
        r = json.loads(subprocess.run([CLI, "partition", "--schedule", "1f1b", "--method", "dp"]
                                      + base[1:],
                                      capture_output=True, text=True, check=True).stdout)
        return r["makespan"], max(d["peak_memory"] for d in r["devices"]) / 1e9
    vocab = {"baseline": 0, "Vocab-1": 1, "Vocab-2": 2}[variant]
    r = json.loads(subprocess.run([CLI, "simulate", "--schedule", "1f1b", "--vocab", str(vocab)]
                                  + base[1:], capture_output=True, text=True, check=True).stdout)
    params = params_per_device(profile(path), vocab)
    return r["makespan"], max(a + b for a, b in zip(params, r["peak_memory"])) / 1e9


def vocab_rows():
    rows = []
    with open(os.path.join(DOCS, "schedules.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("**Reproduction**"):]
    for line in table.splitlines()[1:]:
        if line.startswith("| model") or line.startswith("|---"):
            continue
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


class VocabTable(unittest.TestCase):
    def test_unit_costs_meet_the_papers_memory(self):
        for vocab, (peak, span) in VOCAB_UNIT.items():
            with self.subTest(vocab=vocab):
                r = simulate("1f1b", "--vocab", str(vocab))
                self.assertEqual(max(r["peak_memory"]), peak)
                self.assertEqual(r["peak_memory"][0], peak)
                self.assertEqual(r["span"], span)

    def test_reproduction_rows_are_the_simulated_figures(self):
        rows = vocab_rows()
        want = {(mo, m, v) for mo in ("gemma2_9b.csv", "llama3_8b.csv") for m in ("32", "64")
                for v in ("baseline", "redistribution", "Vocab-1", "Vocab-2")}
        self.assertEqual({(r[0], r[1], r[2]) for r in rows}, want)
        base = {}
        for r in rows:
            if r[2] == "baseline":
                base[(r[0], r[1])] = vocab_variant(r[0], int(r[1]), "baseline")
        for model, m, variant, step, gain, peak, *_ in rows:
            with self.subTest(model=model, m=m, variant=variant):
                t, mem = vocab_variant(model, int(m), variant)
                self.assertEqual(round(t, 1), float(step))
                bt = base[(model, m)][0]
                self.assertEqual(round(100 * (bt / t - 1), 1), float(gain.rstrip("%")))
                self.assertEqual(round(mem, 1), float(peak))

    def test_planner_vocab_candidates_hold_what_simulate_holds(self):
        # The planner's Vocabulary Parallelism candidate counts the devices'
        # memory by the rule of the table above: 1/p of the embedding's and
        # the head's parameters on every device, the other layers' where
        # they are. On Llama3-8B at p = 8, m = 32 and 80 GB (nothing binds)
        # its 1F1B Vocab-2 plan is no slower than the table's even split.
        path = os.path.join(ROOT, "docs", "examples", "llama3_8b.csv")
        d = json.loads(subprocess.run(
            [CLI, "plan", "--model", path, "--devices", str(P), "--microbatches", "32",
             "--mem-limit", "80e9", "--schedules", "1f1b", "--time-limit", "0.5",
             "--one-round", "--json"], capture_output=True, text=True, check=True).stdout)
        best = d["alternatives"][0]
        self.assertEqual((best["vocab"], d["plan"]["vocab"]), (2, 2))
        table = {(r[0], r[1], r[2]): float(r[3]) for r in vocab_rows()}
        self.assertLessEqual(best["makespan"], table[("llama3_8b.csv", "32", "Vocab-2")] + 0.05)
        groups = profile(path)
        shard = sum(g[6] * g[1] for g in groups if g[0] in ("embedding", "head")) / P
        # the partitioned model: the embedding (parameters in the shard) and
        # the transformer layers; the head is the S and T passes
        own = [0.0 if g[0] == "embedding" else g[6] for g in groups if g[0] != "head"
               for _ in range(g[1])]
        held = [shard] * P
        for st in d["plan"]["stages"]:
            held[st["device"]] += sum(own[st["first"]:st["first"] + st["count"]])
        for dev in d["plan"]["devices"]:
            with self.subTest(device=dev["device"]):
                self.assertAlmostEqual(dev["params"] / held[dev["device"]], 1, places=9)


if __name__ == "__main__":
    if not CLI or not DOCS:
        sys.exit("PIPESCHED_CLI and PIPESCHED_DOCS must be set")
    unittest.main()
