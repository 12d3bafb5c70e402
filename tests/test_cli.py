#!/usr/bin/env python3
"""Tests of the pipesched command-line tool.

Usage: test_cli.py PATH/TO/pipesched REFERENCE_DIR

Expected values are closed forms with unit costs (DESIGN.md section 3),
orders derived by hand from the generator rules, or the shared reference
files; never the tool's own earlier output.
"""
import itertools
import json
import math
import os
import stat
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

TOOL = None
REFERENCE = None

PLAN_1F1B_P4_M8 = ["--schedule", "1f1b", "--devices", "4", "--microbatches", "8"]


def run(*args, stdin=None):
    return subprocess.run([TOOL, *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


class CliCase(unittest.TestCase):
    def ok(self, *args, stdin=None):
        r = run(*args, stdin=stdin)
        self.assertEqual(r.returncode, 0, f"{args}: stderr {r.stderr!r}")
        self.assertEqual(r.stderr, "")
        return r.stdout

    def fails(self, code, *args, stdin=None):
        """The command exits with `code`, prints nothing on stdout and one
        line 'pipesched: ...' on stderr; returns that line."""
        r = run(*args, stdin=stdin)
        self.assertEqual(r.returncode, code, f"{args}: stdout {r.stdout!r} stderr {r.stderr!r}")
        self.assertEqual(r.stdout, "", f"{args}: partial output")
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, f"{args}: stderr {r.stderr!r}")
        self.assertTrue(lines[0].startswith("pipesched: "), lines[0])
        return lines[0]

    def simulate_json(self, *args):
        return json.loads(self.ok("simulate", *args, "--json"))

    def reference(self, *parts):
        path = os.path.join(REFERENCE, *parts)
        if not os.path.exists(path):
            self.fail(f"reference file {path} is missing (tests/data/reference)")
        return path

    def tmpdir(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        return d.name

    def write(self, name, text):
        path = os.path.join(self.tmpdir(), name)
        with open(path, "w") as f:
            f.write(text)
        return path


class TestList(CliCase):
    def test_list_json_has_the_classic_generators(self):
        entries = json.loads(self.ok("list", "--json"))
        names = [e["name"] for e in entries]
        for name in ("gpipe", "1f1b", "interleaved", "looped-bfs"):
            self.assertIn(name, names)
        self.assertEqual(len(names), len(set(names)))
        for e in entries:
            self.assertEqual(set(e), {"name", "description", "constraints", "placement",
                                      "default_chunks", "chains", "aliases", "options"})
            self.assertIn(e["placement"], ("loop", "vshape", "custom"))
            self.assertTrue(e["description"], e["name"])

    def test_list_shows_pytorch_class_names_as_aliases_that_generate(self):
        # Issue 11 item 5: PyTorch's / torchtitan's class names, any case.
        want = {"gpipe": ["GPipe"], "1f1b": ["1F1B"], "interleaved": ["Interleaved1F1B"],
                "looped-bfs": ["LoopedBFS"], "interleaved-zb": ["InterleavedZeroBubble"],
                "v-zb": ["ZBVZeroBubble"], "dualpipev": ["DualPipeV"]}
        entries = {e["name"]: e["aliases"] for e in json.loads(self.ok("list", "--json"))}
        for name, aliases in want.items():
            self.assertEqual(entries[name], aliases)
            for alias in aliases + [a.upper() for a in aliases]:
                rep = self.simulate_json("--schedule", alias, "--devices", "4",
                                         "--microbatches", "8")
                self.assertEqual(rep["schedule"], name)
        # Options come from the library's declarations, defaults included.
        options = {e["name"]: e["options"] for e in json.loads(self.ok("list", "--json"))}
        self.assertEqual([(o["name"], o["min"], o["max"], o["default"])
                          for o in options["interleaved"]],
                         [("group-size", 1, 2**32 - 1, None)])
        self.assertEqual(options["zb"], [])
        table = self.ok("list")
        for aliases in want.values():
            self.assertIn(aliases[0], table)

    def test_list_table_shows_every_registered_name_and_description(self):
        entries = json.loads(self.ok("list", "--json"))
        lines = self.ok("list").splitlines()
        self.assertEqual(len(lines), len(entries) + 1)
        self.assertTrue(lines[0].startswith("name"))
        for e, line in zip(entries, lines[1:]):
            self.assertTrue(line.startswith(e["name"] + " "), line)
            self.assertTrue(line.endswith(e["description"]), line)
            self.assertIn(e["constraints"], line)
        # Aligned: the constraints column starts at the same offset on every row.
        offsets = {line.index(e["constraints"]) for e, line in zip(entries, lines[1:])
                   if e["constraints"]}
        self.assertEqual(len(offsets), 1)

    def test_every_generator_simulates_with_its_defaults(self):
        for e in json.loads(self.ok("list", "--json")):
            p, m = 4, 16
            rep = self.simulate_json("--schedule", e["name"], "--devices", str(p),
                                     "--microbatches", str(m))
            self.assertEqual(rep["schedule"], e["name"])
            self.assertEqual(rep["devices"], p)
            self.assertEqual(rep["chunks"], max(1, e["default_chunks"]))
            self.assertEqual(len(rep["peak_memory"]), p)


class TestGenerate(CliCase):
    def test_1f1b_p2_m2_csv_is_the_hand_derived_order(self):
        # device 0: min(m, p-d-1) = 1 warm-up F, pair (F1, BW0), then BW1;
        # device 1: no warm-up, pairs (F0, BW0), (F1, BW1). BW is PyTorch "B".
        out = self.ok("generate", "--schedule", "1f1b", "--devices", "2", "--microbatches", "2")
        self.assertEqual(out, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")

    def test_gpipe_p2_m2_csv_is_all_forwards_then_all_backwards(self):
        out = self.ok("generate", "--schedule", "gpipe", "--devices", "2", "--microbatches", "2",
                      "--format", "csv")
        self.assertEqual(out, "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n")

    def test_interleaved_p2_v2_m4_csv_is_the_reference_worked_example(self):
        out = self.ok("generate", "--schedule", "interleaved", "--devices", "2", "--chunks", "2",
                      "--microbatches", "4")
        self.assertEqual(out,
                         "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3\n"
                         "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3\n")

    def test_json_format_is_one_json_object(self):
        out = self.ok("generate", *PLAN_1F1B_P4_M8, "--format", "json")
        self.assertIsInstance(json.loads(out), dict)

    def test_ascii_format_has_one_row_per_device_and_no_colour_in_a_pipe(self):
        out = self.ok("generate", *PLAN_1F1B_P4_M8, "--format", "ascii")
        self.assertNotIn("\x1b[", out)
        self.assertGreaterEqual(len(out.splitlines()), 4)

    def test_output_writes_the_file_atomically_and_leaves_no_temporary(self):
        d = self.tmpdir()
        path = os.path.join(d, "sched.csv")
        r = run("generate", *PLAN_1F1B_P4_M8, "--output", path)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        with open(path) as f:
            self.assertEqual(f.read(), self.ok("generate", *PLAN_1F1B_P4_M8))
        self.assertEqual(os.listdir(d), ["sched.csv"])

    def test_streamed_csv_equals_the_simulated_path(self):
        # generate --format csv streams (psched_generate_write: compact ops,
        # the file written piece by piece); --mem-limit makes the tool
        # simulate the whole schedule and export it in one piece instead.
        # The bytes are the same, to a file and to standard output.
        d = self.tmpdir()
        for plan in (PLAN_1F1B_P4_M8,
                     ("--schedule", "interleaved", "--devices", "4", "--chunks", "2",
                      "--microbatches", "8"),
                     ("--schedule", "dualpipev", "--devices", "4", "--microbatches", "10"),
                     ("--schedule", "zb-h1", "--devices", "3", "--microbatches", "5")):
            streamed = os.path.join(d, "streamed.csv")
            whole = os.path.join(d, "whole.csv")
            self.ok("generate", *plan, "--output", streamed)
            self.ok("generate", *plan, "--mem-limit", "1e30", "--output", whole)
            with open(streamed) as f, open(whole) as g:
                text = f.read()
                self.assertEqual(text, g.read(), plan)
            self.assertEqual(self.ok("generate", *plan), text, plan)
            self.assertEqual(sorted(os.listdir(d)), ["streamed.csv", "whole.csv"])

    def test_output_to_a_device_writes_in_place(self):
        # Renaming a temporary over /dev/null (as root) would replace the
        # device with a regular file: devices and pipes are written in place.
        r = run("generate", *PLAN_1F1B_P4_M8, "--output", "/dev/null")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))

    def test_output_replaces_an_existing_file(self):
        d = self.tmpdir()
        path = os.path.join(d, "sched.csv")
        with open(path, "w") as f:
            f.write("old contents that are longer than the new schedule\n" * 100)
        self.ok("generate", "--schedule", "1f1b", "--devices", "2", "--microbatches", "2",
                "--output", path)
        with open(path) as f:
            self.assertEqual(f.read(), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")
        self.assertEqual(os.listdir(d), ["sched.csv"])

    def test_failed_request_with_output_leaves_no_file(self):
        d = self.tmpdir()
        path = os.path.join(d, "sched.csv")
        # interleaved needs v >= 2: a configuration error, exit 2.
        self.fails(2, "generate", "--schedule", "interleaved", "--devices", "2", "--chunks", "1",
                   "--microbatches", "4", "--output", path)
        self.assertEqual(os.listdir(d), [])

    def test_output_into_a_missing_directory_fails_cleanly(self):
        d = self.tmpdir()
        msg = self.fails(2, "generate", *PLAN_1F1B_P4_M8, "--output",
                         os.path.join(d, "missing", "x.csv"))
        self.assertIn("--output", msg)
        self.assertEqual(os.listdir(d), [])


class TestSimulate(CliCase):
    def test_1f1b_p4_m8_span_and_memory_closed_forms(self):
        rep = self.simulate_json(*PLAN_1F1B_P4_M8)
        # (m + p - 1)(F + B + W) with unit costs; peak on device d = min(m, p - d).
        self.assertEqual(rep["makespan"], 33)
        self.assertEqual(rep["span"], 33)
        self.assertEqual(rep["peak_memory"], [4, 3, 2, 1])
        self.assertEqual(rep["busy"], [24, 24, 24, 24])
        self.assertEqual(rep["idle"], [9, 9, 9, 9])
        self.assertAlmostEqual(rep["bubble_ratio"], 1 - 96 / (4 * 33), places=12)
        # max peak 4 over sum of mem_F over 4 stages = 1 M
        self.assertEqual(rep["peak_memory_M"], 1)
        self.assertEqual((rep["schedule"], rep["devices"], rep["microbatches"], rep["chunks"],
                          rep["placement"]), ("1f1b", 4, 8, 1, "loop"))

    def test_json_integers_print_without_decimals(self):
        out = self.ok("simulate", *PLAN_1F1B_P4_M8, "--json")
        self.assertRegex(out, r'"makespan": 33[,\n]')
        self.assertRegex(out, r'"peak_memory": \[4, 3, 2, 1\]')

    def test_gpipe_p4_m8_span_closed_form(self):
        rep = self.simulate_json("--schedule", "gpipe", "--devices", "4", "--microbatches", "8")
        self.assertEqual(rep["span"], 33)
        self.assertEqual(rep["makespan"], 33)
        self.assertEqual(rep["peak_memory"], [8, 8, 8, 8])

    def test_hash_is_16_hex_digits_and_stable_between_runs(self):
        a = self.simulate_json(*PLAN_1F1B_P4_M8)["hash"]
        b = self.simulate_json(*PLAN_1F1B_P4_M8)["hash"]
        self.assertRegex(a, r"^[0-9a-f]{16}$")
        self.assertEqual(a, b)
        gpipe = self.simulate_json("--schedule", "gpipe", "--devices", "4", "--microbatches", "8")
        self.assertNotEqual(a, gpipe["hash"])

    def test_hash_matches_the_validated_csv_export(self):
        gen = self.simulate_json(*PLAN_1F1B_P4_M8)
        path = self.write("1f1b.csv", self.ok("generate", *PLAN_1F1B_P4_M8))
        val = json.loads(self.ok("validate", path, "--json"))
        self.assertEqual(val["hash"], gen["hash"])

    def test_acceptance_interleaved_p4_v2_m8_prints_the_figures(self):
        rep = self.simulate_json("--schedule", "interleaved", "--devices", "4", "--chunks", "2",
                                 "--microbatches", "8")
        for key in ("schedule", "devices", "microbatches", "chunks", "makespan", "span",
                    "bubble_ratio", "peak_memory", "peak_memory_M", "hash", "busy", "idle",
                    "placement"):
            self.assertIn(key, rep)
        self.assertEqual((rep["devices"], rep["microbatches"], rep["chunks"]), (4, 8, 2))
        # every device runs 2 chunks x 8 micro-batches x (F + BW) = 48 time units;
        # Megatron's interleaved bubble is (p - 1)(F + BW) per chunk = 9
        self.assertEqual(rep["busy"], [48, 48, 48, 48])
        self.assertEqual(rep["makespan"], 57)
        self.assertAlmostEqual(rep["bubble_ratio"], 1 - 4 * 48 / (4 * 57), places=12)
        # warm-up 2(p - d - 1) + (v - 1)N forwards (N = 4), then one more F
        # before the first BW
        self.assertEqual(rep["peak_memory"], [11, 9, 7, 5])

    def test_text_summary_names_the_figures(self):
        out = self.ok("simulate", *PLAN_1F1B_P4_M8)
        self.assertRegex(out, r"(?m)^makespan\s+33$")
        self.assertRegex(out, r"(?m)^span\s+33$")
        self.assertRegex(out, r"(?m)^hash\s+[0-9a-f]{16}$")
        self.assertRegex(out, r"(?m)^\s*3\s+24\s+9\s+1$")  # device, busy, idle, peak

    def test_cost_flag_scales_the_closed_form(self):
        # (m + p - 1)(F + B + W) = 11 * (2 + 3 + 1)
        rep = self.simulate_json(*PLAN_1F1B_P4_M8, "--cost", "2,3,1")
        self.assertEqual(rep["span"], 66)

    def test_comm_latency_adds_to_every_cross_device_edge(self):
        # 1f1b p=2 m=1, c = 0.5: stage 0 F [0, 1], stage 1 F [1.5, 2.5] and
        # BW [2.5, 4.5], stage 0 BW [5, 7].
        rep = self.simulate_json("--schedule", "1f1b", "--devices", "2", "--microbatches", "1",
                                 "--comm", "0.5")
        self.assertEqual(rep["makespan"], 7)

    def test_mem_flag_sets_the_memory_deltas(self):
        rep = self.simulate_json(*PLAN_1F1B_P4_M8, "--mem", "2,0,-2")
        self.assertEqual(rep["peak_memory"], [8, 6, 4, 2])

    def test_costs_file_with_a_3x_last_stage(self):
        # The last stage (device 3) takes 3 + 6 per micro-batch and never
        # waits after its first F at t = 3: it ends its last BW at 3 + 8 * 9 = 75,
        # then BW7 runs back through stages 2, 1, 0 (2 each): 81.
        path = self.write("costs.csv", "# a large vocabulary head\n"
                                       "stage,F,B,W\n"
                                       "3, 3, 3, 3\n")
        rep = self.simulate_json(*PLAN_1F1B_P4_M8, "--costs-file", path)
        self.assertEqual(rep["makespan"], 81)
        self.assertEqual(rep["span"], 81)
        self.assertEqual(rep["busy"], [24, 24, 24, 72])
        self.assertEqual(rep["peak_memory"], [4, 3, 2, 1])

    def test_costs_file_memory_columns(self):
        path = self.write("costs.csv", "0,1,1,1,2,0,-2\n")
        rep = self.simulate_json(*PLAN_1F1B_P4_M8, "--costs-file", path)
        self.assertEqual(rep["peak_memory"], [8, 3, 2, 1])
        self.assertEqual(rep["peak_memory_M"], 8 / 5)

    def test_costs_file_errors_name_the_file_line(self):
        cases = {
            "0,1,1,1\n4,1,1,1\n": ":2: stage 4 out of range",
            "0,1,1\n": ":1: expected 4 or 7 fields",
            "stage,F,B,W\n1,1,x,1\n": ":2: column 3 (B) 'x'",
            "0,1,1,1\n0,2,2,2\n": ":2: stage 0 already set on line 1",
            "0,1,-1,1\n": ":1: column 3 (B) '-1'",
            "0,1,1,nan\n": ":1: column 4 (W) 'nan'",
            "0,1,1,1\nstage,F,B,W\n": ":2: expected a stage index",
        }
        for text, expected in cases.items():
            with self.subTest(text=text):
                path = self.write("costs.csv", text)
                msg = self.fails(2, "simulate", *PLAN_1F1B_P4_M8, "--costs-file", path)
                self.assertIn(path + expected, msg)

    def test_mem_limit_below_the_peak_is_infeasible(self):
        msg = self.fails(1, "simulate", *PLAN_1F1B_P4_M8, "--mem-limit", "3")
        self.assertIn("--mem-limit 3", msg)
        self.ok("simulate", *PLAN_1F1B_P4_M8, "--mem-limit", "4")

    def test_group_size_reaches_the_generator(self):
        base = ["--schedule", "interleaved", "--devices", "2", "--chunks", "2",
                "--microbatches", "4"]
        self.assertEqual(self.simulate_json(*base, "--group-size", "2")["hash"],
                         self.simulate_json(*base)["hash"])
        self.assertNotEqual(self.simulate_json(*base, "--group-size", "4")["hash"],
                            self.simulate_json(*base)["hash"])
        # N < p is Megatron's first rule
        self.fails(2, "simulate", *base, "--group-size", "1")


class TestValidate(CliCase):
    def test_accepts_torchtitan_custom_schedule(self):
        path = self.reference("torchtitan", "custom_schedule.csv")
        rep = json.loads(self.ok("validate", path, "--json"))
        self.assertIs(rep["valid"], True)
        self.assertIsNone(rep["error"])
        self.assertEqual((rep["devices"], rep["microbatches"], rep["chunks"], rep["placement"]),
                         (2, 8, 2, "loop"))

    def test_accepts_pytorch_zb1p_compute_csv(self):
        path = self.reference("pytorch", "zb1p_2rank_2stagep_compute.csv")
        self.ok("validate", path)
        rep = json.loads(self.ok("validate", path, "--json", "--devices", "2",
                                 "--microbatches", "8", "--placement", "loop"))
        self.assertEqual((rep["devices"], rep["microbatches"], rep["chunks"]), (2, 8, 2))

    def test_accepts_pytorch_dualpipev_csv_as_vshape(self):
        path = self.reference("pytorch", "dualpipev_4rank_10mb.csv")
        rep = json.loads(self.ok("validate", path, "--json"))
        self.assertEqual((rep["devices"], rep["microbatches"], rep["chunks"], rep["placement"]),
                         (4, 10, 2, "vshape"))

    def test_text_output_is_the_simulation_summary(self):
        path = self.write("s.csv", "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")
        out = self.ok("validate", path)
        self.assertTrue(out.startswith(path + ": valid\n"))
        # (m + p - 1) * 3 with unit costs
        self.assertRegex(out, r"(?m)^span\s+9$")

    def test_reads_standard_input(self):
        out = self.ok("validate", "-", "--json", stdin="0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")
        self.assertEqual(json.loads(out)["span"], 9)

    def test_missing_op_is_invalid_with_exit_1(self):
        path = self.write("missing.csv", "0F0,0F1,0B0,0B1\n1F0,1B0,1F1\n")
        msg = self.fails(1, "validate", path)
        self.assertIn(path, msg)
        self.assertRegex(msg, r"1[BI]1")

    def test_missing_op_json_says_invalid(self):
        path = self.write("missing.csv", "0F0,0F1,0B0,0B1\n1F0,1B0,1F1\n")
        r = run("validate", path, "--json")
        self.assertEqual(r.returncode, 1)
        rep = json.loads(r.stdout)
        self.assertIs(rep["valid"], False)
        self.assertIn(rep["error"], r.stderr)

    def test_syntax_error_exits_2_with_line_and_column(self):
        path = self.write("syntax.csv", "0F0,0X1\n1F0\n")
        msg = self.fails(2, "validate", path)
        self.assertIn("line 1 column 6", msg)  # the X

    def test_b_before_its_f_is_invalid(self):
        path = self.write("order.csv", "0F0,0F1,0B0,0B1\n1B0,1F0,1F1,1B1\n")
        self.fails(1, "validate", path)

    def test_shape_flags_that_do_not_fit_the_file(self):
        path = self.write("s.csv", "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")
        self.fails(2, "validate", path, "--devices", "3")
        # asking for more micro-batches than the file runs: ops are missing
        self.fails(1, "validate", path, "--microbatches", "3")
        self.fails(2, "validate", path, "--placement", "diagonal")

    def test_missing_file_exits_2(self):
        msg = self.fails(2, "validate", os.path.join(self.tmpdir(), "nope.csv"))
        self.assertIn("nope.csv", msg)
        self.fails(2, "validate")


# 1F1B p=2 m=2 by hand with unit costs (BW = B + W = 2): (name, device, start, end).
HAND_1F1B_P2_M2 = [
    ("0F0", 0, 0, 1), ("0F1", 0, 1, 2), ("0B0", 0, 4, 6), ("0B1", 0, 7, 9),
    ("1F0", 1, 1, 2), ("1B0", 1, 2, 4), ("1F1", 1, 4, 5), ("1B1", 1, 5, 7),
]
PLAN_1F1B_P2_M2 = ["--schedule", "1f1b", "--devices", "2", "--microbatches", "2"]
SVG = "{http://www.w3.org/2000/svg}"


def svg_classes(root):
    """Class tokens of every element, as a list of sets."""
    return [set((e.get("class") or "").split()) for e in root.iter()]


class TestExports(CliCase):
    def test_chrome_has_one_x_event_per_compute_op_at_the_simulated_times(self):
        trace = json.loads(self.ok("generate", *PLAN_1F1B_P2_M2, "--format", "chrome"))
        events = trace["traceEvents"]
        complete = [e for e in events if e["ph"] == "X"]
        # one cost unit is 1000 microseconds (docs/formats.md)
        self.assertEqual(sorted((e["name"], e["tid"], e["ts"], e["ts"] + e["dur"])
                                for e in complete),
                         sorted((n, d, 1000 * a, 1000 * b) for n, d, a, b in HAND_1F1B_P2_M2))
        self.assertEqual({e["pid"] for e in events}, {0})
        names = {e["tid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        self.assertEqual(names, {0: "device 0", 1: "device 1"})
        self.assertEqual({e["cat"] for e in complete}, {"F", "BW"})
        self.assertEqual(complete[0]["args"], {"stage": 0, "microbatch": 0, "chunk": 0})

    def test_chrome_of_dualpipev_counts_every_op_of_the_csv(self):
        plan = ["--schedule", "dualpipev", "--devices", "4", "--microbatches", "8"]
        csv = self.ok("generate", *plan)
        # an overlapped pair "(a;b)OVERLAP_F_B" holds two compute ops
        ops = sum(2 if "OVERLAP" in cell else 1
                  for row in csv.splitlines() for cell in row.split(","))
        trace = json.loads(self.ok("generate", *plan, "--format", "chrome"))
        complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        self.assertEqual(len(complete), ops)
        pairs = [e for e in complete if e["args"].get("overlapped")]
        self.assertEqual(len(pairs), 2 * csv.count("OVERLAP_F_B"))

    def test_csv_comms_is_the_lowered_hand_example(self):
        # issue 4's hand example; a batched group is one [..;..]BATCH cell
        out = self.ok("generate", *PLAN_1F1B_P2_M2, "--format", "csv-comms")
        self.assertEqual(out, "0F0,0SEND_F0,0F1,[0SEND_F1;0RECV_B0]BATCH,0B0,0RECV_B1,0B1\n"
                              "1RECV_F0,1F0,1B0,[1SEND_B0;1RECV_F1]BATCH,1F1,1B1,1SEND_B1\n")

    def test_csv_comms_of_interleaved_has_a_send_and_a_recv_per_transfer(self):
        # p = 4, v = 2, loop placement: every edge s -> s+1 of the S = 8
        # stages crosses devices, so each micro-batch has 7 forward and 7
        # backward transfers
        out = self.ok("generate", "--schedule", "interleaved", "--devices", "4",
                      "--microbatches", "8", "--format", "csv-comms")
        cells = [c for row in out.splitlines() for c in re.split("[,;]", row)]
        for kind in ("SEND_F", "RECV_F", "SEND_B", "RECV_B"):
            self.assertEqual(sum(kind in c for c in cells), 7 * 8, kind)
        self.assertEqual(len(cells), 4 * 7 * 8 + 2 * 8 * 8)

    def test_svg_parses_as_xml_with_one_op_box_per_compute_op(self):
        root = ET.fromstring(self.ok("generate", *PLAN_1F1B_P2_M2, "--format", "svg"))
        self.assertEqual(root.tag, SVG + "svg")
        classes = svg_classes(root)
        self.assertEqual(sum("op" in c for c in classes), 8)
        self.assertEqual(sum({"op", "F"} <= c for c in classes), 4)
        self.assertEqual(sum({"op", "BW"} <= c for c in classes), 4)
        self.assertEqual(sum("legend" in c for c in classes), 1)
        title = root.find(SVG + "title").text
        self.assertEqual(title, "1f1b: p=2 m=2 v=1, makespan 9, bubble 33.3%")
        lanes = [e.text for e in root.iter(SVG + "text") if "device" in (e.get("class") or "")]
        self.assertEqual(lanes, ["device 0", "device 1"])

    def test_svg_of_dualpipev_draws_pairs_as_split_boxes(self):
        plan = ["--schedule", "dualpipev", "--devices", "4", "--microbatches", "8"]
        pairs = self.ok("generate", *plan).count("OVERLAP_F_B")
        out = os.path.join(self.tmpdir(), "dualpipev.svg")
        self.assertEqual(self.ok("generate", *plan, "--format", "svg", "--output", out), "")
        root = ET.parse(out).getroot()
        groups = [g for g in root.iter(SVG + "g") if g.get("class") == "pair"]
        self.assertEqual(len(groups), pairs)
        for g in groups:
            halves = [r for r in g if "op" in (r.get("class") or "").split()]
            self.assertEqual(len(halves), 2)
            self.assertEqual(halves[0].get("x"), halves[1].get("x"))
            self.assertEqual(float(halves[1].get("y")) - float(halves[0].get("y")),
                             float(halves[0].get("height")))


class TestGallery(CliCase):
    """docs/gallery.md shows every generator, and its pasted figures are what
    `pipesched simulate` prints (the page says so)."""

    def docs(self, name):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", name)
        with open(path) as f:
            return f.read()

    def test_gallery_draws_every_generator(self):
        page, build = self.docs("gallery.md"), self.docs("meson.build")
        for e in json.loads(self.ok("list", "--json")):
            with self.subTest(schedule=e["name"]):
                self.assertIn("\\image html %s.svg" % e["name"], page)
                self.assertIn("'%s'" % e["name"], build)

    def test_gallery_figures_are_the_simulated_ones(self):
        rows = re.findall(r"^\| `([a-z0-9-]+)` \|(.*)\|$", self.docs("gallery.md"), re.M)
        self.assertEqual(len(rows), len(json.loads(self.ok("list", "--json"))))
        for name, cells in rows:
            with self.subTest(schedule=name):
                r = self.simulate_json("--schedule", name, "--devices", "4",
                                       "--microbatches", "8")
                want = [str(r["chunks"]), "%g" % r["makespan"], "%g" % r["span"],
                        "%.1f %%" % (100 * r["bubble_ratio"]),
                        ", ".join("%g" % x for x in r["peak_memory"]),
                        "%g" % r["peak_memory_M"]]
                self.assertEqual([c.strip() for c in cells.split("|")], want,
                                 "update the row of %s in docs/gallery.md" % name)


class TestUsage(CliCase):
    def test_bad_flags_exit_2_with_one_line(self):
        base = ["simulate", *PLAN_1F1B_P4_M8]
        cases = [
            (["simulate", *PLAN_1F1B_P4_M8, "--frobnicate"], "--frobnicate"),
            (["simulate", "--schedule", "1f1b", "--devices", "0", "--microbatches", "8"],
             "--devices '0'"),
            ([*base, "--cost", "1,2"], "--cost '1,2'"),
            ([*base, "--cost", "1,2,3,4"], "--cost '1,2,3,4'"),
            ([*base, "--cost", "-1,1,1"], "--cost '-1,1,1'"),
            (["simulate", "--schedule", "no-such-schedule", "--devices", "4",
              "--microbatches", "8"], "no-such-schedule"),
            (["simulate", "--schedule", "1f1b", "--devices", "abc", "--microbatches", "8"],
             "--devices 'abc'"),
            (["simulate", "--schedule", "1f1b", "--devices", "-1", "--microbatches", "8"],
             "--devices '-1'"),
            (["simulate", "--schedule", "1f1b", "--devices", "4", "--microbatches", "1,2"],
             "--microbatches '1,2'"),
            ([*base, "--comm", "nan"], "--comm 'nan'"),
            ([*base, "--comm", "-1"], "--comm '-1'"),
            ([*base, "--mem-limit", "inf"], "--mem-limit 'inf'"),
            ([*base, "--mem-limit", "0"], "--mem-limit '0'"),
            ([*base, "--mem", "1,0,x"], "--mem '1,0,x'"),
            ([*base, "--chunks", "2.5"], "--chunks '2.5'"),
            ([*base, "--devices"], "--devices"),
            ([*base, "--json=yes"], "--json"),
            ([*base, "--format", "csv"], "--format"),
            (["generate", *PLAN_1F1B_P4_M8, "--format", "png"], "--format 'png'"),
            ([*base, "--format", "svg"], "--format 'svg'"),
            (["simulate", "--devices", "4", "--microbatches", "8"], "--schedule"),
            (["simulate", "--schedule", "1f1b", "--microbatches", "8"], "--devices"),
            (["simulate", "--schedule", "1f1b", "--devices", "4"], "--microbatches"),
            (["list", "extra"], "extra"),
            (["frobnicate"], "frobnicate"),
            ([*base, "--costs-file", "/nonexistent/costs.csv"], "/nonexistent/costs.csv"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                self.assertIn(needle, self.fails(2, *args))

    def test_configuration_the_generator_rejects_exits_2_with_its_rule(self):
        msg = self.fails(2, "simulate", "--schedule", "interleaved", "--devices", "4",
                         "--chunks", "1", "--microbatches", "8")
        self.assertRegex(msg, r"\b1\b")

    def test_equals_form_of_flags(self):
        out = self.ok("generate", "--schedule=1f1b", "--devices=2", "--microbatches=2")
        self.assertEqual(out, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")

    def test_help_for_every_command(self):
        self.assertIn("Usage: pipesched", self.ok("--help"))
        for cmd in ("list", "generate", "simulate", "validate"):
            with self.subTest(cmd=cmd):
                out = self.ok(cmd, "--help")
                self.assertTrue(out.startswith(f"Usage: pipesched {cmd}"), out)
        self.assertIn("--costs-file", self.ok("generate", "--help"))

    def test_version(self):
        self.assertRegex(self.ok("--version"), r"^pipesched \d+\.\d+\.\d+\n$")

    def test_no_command_is_usage_error(self):
        r = run()
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertIn("Usage:", r.stderr)


class TestHash(CliCase):
    # Pinned in tests/test_hash_golden.c from an encoding built independently
    # of the library, from the hand-derived 1F1B order and PyTorch's DualPipeV CSV.
    GOLDEN_1F1B_P4_M8 = "e806250ca75c090a"
    GOLDEN_DUALPIPEV_P4_M10 = "9fbbf9faa18a168c"

    def test_hash_of_1f1b_p4_m8_is_the_golden_value(self):
        self.assertEqual(self.ok("hash", *PLAN_1F1B_P4_M8), self.GOLDEN_1F1B_P4_M8 + "\n")

    def test_hash_equals_the_hash_key_of_simulate_json(self):
        self.assertEqual(self.simulate_json(*PLAN_1F1B_P4_M8)["hash"], self.GOLDEN_1F1B_P4_M8)

    def test_hash_of_the_exported_csv_file_is_the_same(self):
        path = os.path.join(self.tmpdir(), "1f1b.csv")
        self.ok("generate", *PLAN_1F1B_P4_M8, "--format", "csv", "--output", path)
        self.assertEqual(self.ok("hash", "--file", path), self.GOLDEN_1F1B_P4_M8 + "\n")
        with open(path) as f:
            self.assertEqual(self.ok("hash", "--file", "-", stdin=f.read()),
                             self.GOLDEN_1F1B_P4_M8 + "\n")

    def test_pytorch_dualpipev_csv_hashes_like_the_generated_schedule(self):
        # A rank that loads PyTorch's file and one that generates agree.
        path = self.reference("pytorch", "dualpipev_4rank_10mb.csv")
        want = self.GOLDEN_DUALPIPEV_P4_M10 + "\n"
        self.assertEqual(self.ok("hash", "--file", path), want)
        self.assertEqual(self.ok("hash", "--schedule", "dualpipev", "--devices", "4",
                                 "--microbatches", "10"), want)

    def test_hash_ignores_costs_and_latency(self):
        out = self.ok("hash", *PLAN_1F1B_P4_M8, "--cost", "3,2,1", "--comm", "0.5",
                      "--mem", "2,0,-2")
        self.assertEqual(out, self.GOLDEN_1F1B_P4_M8 + "\n")

    def test_hash_json_is_the_hash_and_the_schedule_export(self):
        doc = json.loads(self.ok("hash", *PLAN_1F1B_P4_M8, "--json"))
        self.assertEqual(set(doc), {"hash", "schedule"})
        self.assertEqual(doc["hash"], self.GOLDEN_1F1B_P4_M8)
        sched = doc["schedule"]
        self.assertEqual(sched["schedule"], "1f1b")
        self.assertEqual(sched["hash"], self.GOLDEN_1F1B_P4_M8)
        self.assertEqual([len(ops) for ops in sched["ops"]], [16] * 4)
        self.assertNotIn("report", sched)

    def test_hash_usage_errors_exit_2(self):
        self.assertIn("--file", self.fails(2, "hash"))
        self.assertIn("exclude", self.fails(2, "hash", "--file", "x.csv", "--schedule", "1f1b"))
        self.assertIn("/nonexistent.csv", self.fails(2, "hash", "--file", "/nonexistent.csv"))

    def test_hash_of_an_invalid_file_exits_1(self):
        # Device 1 runs 1B0 before its own 1F0.
        msg = self.fails(1, "hash", "--file", "-", stdin="0F0,0B0\n1B0,1F0\n")
        self.assertIn("1B0", msg)

    def test_hash_help(self):
        out = self.ok("hash", "--help")
        self.assertTrue(out.startswith("Usage: pipesched hash"), out)
        self.assertIn("--file", out)
        self.assertIn("hash", self.ok("--help"))

# A 1F1B order with split backwards, p = 2, m = 2, written by hand.
TINY_CSV = "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1W0,1F1,1I1,1W1\n"


class TestInput(CliCase):
    """One grammar: every schedule command reads --input FILE ('-' is stdin)
    with the same cost flags as a generator."""

    def tiny(self):
        return self.write("tiny.csv", TINY_CSV)

    def test_simulate_input_at_given_costs_is_the_hand_derived_timeline(self):
        # F = 1, I = 2, W = 1. Device 0: 0F0 [0,1] 0F1 [1,2]; device 1: 1F0
        # [1,2] 1I0 [2,4] 1W0 [4,5] 1F1 [5,6] 1I1 [6,8] 1W1 [8,9]; device 0:
        # 0I0 [4,6] 0W0 [6,7] 0I1 [8,10] 0W1 [10,11]. Peak: two F's held on
        # device 0 before its first W, one on device 1.
        rep = self.simulate_json("--input", self.tiny(), "--cost", "1,2,1")
        self.assertEqual((rep["makespan"], rep["span"]), (11, 11))
        self.assertEqual(rep["busy"], [8, 8])
        self.assertEqual(rep["peak_memory"], [2, 1])
        self.assertEqual((rep["schedule"], rep["devices"], rep["microbatches"]), ("csv", 2, 2))

    def test_chains_2_reads_a_dualpipe_file_without_its_header(self):
        # DualPipe's CSV without the '# pipesched: chains=2' line reads as one
        # V, where stage 4 (chain 1's first stage) would need stage 3: refused.
        # With --chains 2 it is the generated schedule again (same hash).
        text = self.ok("generate", "--schedule", "dualpipe", "--devices", "4",
                       "--microbatches", "8")
        self.assertTrue(text.startswith("# pipesched: chains=2\n"))
        bare = self.write("bare.csv", text.split("\n", 1)[1])
        self.assertIn("needs device 3", self.fails(1, "validate", bare))
        want = self.ok("hash", "--schedule", "dualpipe", "--devices", "4", "--microbatches", "8")
        self.assertEqual(self.ok("hash", "--input", bare, "--chains", "2"), want)
        full = self.write("full.csv", text)
        self.assertEqual(self.ok("hash", "--input", full, "--chains", "2"), want)
        self.assertIn("--chains 1 but the file's first line says chains=2",
                      self.fails(2, "hash", "--input", full, "--chains", "1"))
        self.assertIn("--chains describes a file",
                      self.fails(2, "hash", "--schedule", "1f1b", "--devices", "2",
                                 "--microbatches", "2", "--chains", "2"))
        self.assertIn("--chains '3': expected an integer in 1..2",
                      self.fails(2, "hash", "--input", full, "--chains", "3"))

    def test_pytorch_writes_pytorchs_compute_comms_dialect(self):
        # 1F1B p=2 m=2 lowered: device 0's SEND_F1 and RECV_B0 form a batched
        # group (posted together, or the two devices' blocking sends wait for
        # each other). pipesched's csv-comms marks the group. PyTorch's
        # runtime posts isend/irecv without blocking, so --pytorch writes the
        # async lowering: unit costs (BW 2), comm 0: 0F0 0..1, 0F1 1..2, 1F0
        # 1..2, 1B0 2..4, 1F1 4..5, 1B1 5..7, 0B0 4..6, 0B1 7..9. Each SEND
        # right after its producer; each RECV after its rank's ops ending by
        # the producer's end: 1RECV_F1 (0F1 ends 2) after 1F0 (ends 2),
        # 0RECV_B0 (1B0 ends 4) after 0F1, 0RECV_B1 (7) after 0B0 (6).
        args = ("generate", "--schedule", "1f1b", "--devices", "2", "--microbatches", "2",
                "--format", "csv-comms")
        self.assertEqual(self.ok(*args).splitlines()[0],
                         "0F0,0SEND_F0,0F1,[0SEND_F1;0RECV_B0]BATCH,0B0,0RECV_B1,0B1")
        self.assertEqual(self.ok(*args, "--pytorch").splitlines(),
                         ["0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1",
                          "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1"])
        self.assertIn("needs --format csv-comms, not 'csv'",
                      self.fails(2, "generate", "--schedule", "1f1b", "--devices", "2",
                                 "--microbatches", "2", "--pytorch"))

    def test_csv_comms_keeps_offload_copies_in_place(self):
        # issue 18 item 4: the hand example with every activation offloaded
        # (tests/test_lower_copies.c derives it): each copy stays right
        # behind the compute op it follows, the comm ops land as without
        # copies; the file reads back and validates under rendezvous
        # semantics. PyTorch's dialect has no OFFLOAD/RELOAD action.
        args = (*PLAN_1F1B_P2_M2, "--offload", "all")
        out = self.ok("generate", *args, "--format", "csv-comms")
        self.assertEqual(out.splitlines(), [
            "0F0,0OFFLOAD0,0RELOAD0,0SEND_F0,0F1,0OFFLOAD1,0RELOAD1,[0SEND_F1;0RECV_B0]BATCH,"
            "0B0,0RECV_B1,0B1",
            "1RECV_F0,1F0,1OFFLOAD0,1RELOAD0,1B0,[1SEND_B0;1RECV_F1]BATCH,1F1,1OFFLOAD1,"
            "1RELOAD1,1B1,1SEND_B1"])
        path = self.write("offloaded-comms.csv", out)
        self.assertIn("valid", self.ok("validate", "--input", path))
        self.assertEqual(self.ok("generate", "--input", path), out)
        self.assertIn("device 0 op 1 (0OFFLOAD0): PyTorch's compute_comms dialect has no "
                      "OFFLOAD/RELOAD actions",
                      self.fails(2, "generate", *args, "--format", "csv-comms", "--pytorch"))

    def test_input_takes_comm_mem_and_costs_file(self):
        # comm 1 on both cross-device edges: 1F0 [2,3] 1I0 [3,5] 1W0 [5,6]
        # 1F1 [6,7] 1I1 [7,9] 1W1 [9,10]; 0I0 [6,8] 0W0 [8,9] 0I1 [10,12] 0W1 [12,13].
        tiny = self.tiny()
        self.assertEqual(self.simulate_json("--input", tiny, "--cost", "1,2,1",
                                            "--comm", "1")["makespan"], 13)
        self.assertEqual(self.simulate_json("--input", tiny, "--mem", "2,0,-2")["peak_memory"],
                         [4, 2])
        costs = self.write("costs.csv", "0,1,2,1\n1,1,2,1\n")
        self.assertEqual(self.simulate_json("--input", tiny, "--costs-file", costs)["makespan"],
                         11)
        msg = self.fails(1, "simulate", "--input", tiny, "--mem-limit", "1")
        self.assertIn("exceeds --mem-limit 1 for " + tiny, msg)

    def test_standard_input(self):
        rep = json.loads(self.ok("simulate", "--input", "-", "--cost", "1,2,1", "--json",
                                 stdin=TINY_CSV))
        self.assertEqual(rep["makespan"], 11)

    def test_torchtitan_custom_schedule_at_costs_1_2_1(self):
        # p = 2, v = 2, m = 8: 16 F (1 each) and 16 I+W (3 each) per device
        # = 64 busy; after the forwards (device 1 ends 3F7 at 17) the I/W
        # pairs alternate between the devices in rounds of 12, the last
        # 0W7 ending at 67. Every F is held until its W: peak 16.
        path = self.reference("torchtitan", "custom_schedule.csv")
        rep = self.simulate_json("--input", path, "--cost", "1,2,1")
        self.assertEqual(rep["makespan"], 67)
        self.assertEqual(rep["busy"], [64, 64])
        self.assertEqual(rep["peak_memory"], [16, 16])
        text = self.ok("simulate", "--input", path, "--cost", "1,2,1")
        self.assertRegex(text, r"(?m)^makespan\s+67$")
        self.assertRegex(text, r"(?m)^\s*0\s+64\s+3\s+16$")

    def test_generate_converts_the_torchtitan_file_to_svg_at_those_costs(self):
        path = self.reference("torchtitan", "custom_schedule.csv")
        root = ET.fromstring(self.ok("generate", "--input", path, "--cost", "1,2,1",
                                     "--format", "svg"))
        self.assertIn("makespan 67", root.find(SVG + "title").text)
        ops = [e for e in root.iter() if "op" in (e.get("class") or "").split()]
        self.assertEqual(len(ops), 2 * 48)
        # the widest box is an I (2 units) and the narrowest an F or W (1)
        widths = sorted({float(e.get("width")) for e in ops})
        self.assertAlmostEqual(widths[-1] / widths[0], 2, delta=0.1)

    def test_generate_converts_to_every_format(self):
        tiny = self.tiny()
        self.assertEqual(self.ok("generate", "--input", tiny), TINY_CSV)
        trace = json.loads(self.ok("generate", "--input", tiny, "--cost", "1,2,1",
                                   "--format", "chrome"))
        ends = {e["name"]: (e["ts"] + e["dur"]) / 1000 for e in trace["traceEvents"]
                if e["ph"] == "X"}
        self.assertEqual((ends["0W1"], ends["1W1"], ends["1I0"]), (11, 9, 4))
        self.assertEqual(json.loads(self.ok("generate", "--input", tiny, "--json")),
                         json.loads(self.ok("generate", "--input", tiny, "--format", "json")))
        self.assertIn("SEND_F", self.ok("generate", "--input", tiny, "--format", "csv-comms"))
        self.assertEqual(len(self.ok("generate", "--input", tiny, "--format", "ascii")
                             .splitlines()) >= 2, True)

    def test_validate_hash_and_bound_take_input_and_generators(self):
        tiny = self.tiny()
        by_path = json.loads(self.ok("validate", tiny, "--json"))
        self.assertEqual(json.loads(self.ok("validate", "--input", tiny, "--json")), by_path)
        self.assertEqual(self.ok("hash", "--input", tiny), self.ok("hash", "--file", tiny))
        self.assertEqual(self.ok("hash", "--input", tiny).strip(), by_path["hash"])
        gen = json.loads(self.ok("validate", *PLAN_1F1B_P4_M8, "--json"))
        self.assertIs(gen["valid"], True)
        self.assertEqual(gen["span"], 33)
        # unit costs: work 2 * 3 = 6; device 1 starts at 1 and its last
        # B's tail (W0) is covered by its own W's: device path 1 + 6 = 7
        bound = json.loads(self.ok("bound", "--input", tiny, "--json"))
        self.assertEqual((bound["lower_bound"]["makespan"], bound["lower_bound"]["span"]), (7, 6))

    def test_grammar_errors(self):
        tiny = self.tiny()
        self.assertIn("exclude", self.fails(2, "simulate", "--input", tiny,
                                            *PLAN_1F1B_P4_M8))
        self.assertIn("--schedule or --input", self.fails(2, "simulate"))
        self.assertIn("--group-size", self.fails(2, "simulate", "--input", tiny,
                                                 "--group-size", "2"))
        self.assertIn("one input file", self.fails(2, "validate", tiny, "--input", tiny))

    def test_json_and_format_json_are_synonyms_on_every_command(self):
        for args in (["list"], ["simulate", *PLAN_1F1B_P4_M8], ["bound", *PLAN_1F1B_P4_M8],
                     ["hash", *PLAN_1F1B_P4_M8], ["validate", *PLAN_1F1B_P4_M8]):
            with self.subTest(args=args):
                self.assertEqual(self.ok(*args, "--json"), self.ok(*args, "--format", "json"))
                self.assertEqual(self.ok(*args), self.ok(*args, "--format", "text"))

    def test_partition_and_plan_take_comm(self):
        # One layer per stage, unit costs: the partition is the plain 1F1B
        # schedule, so its simulated makespan is simulate's at the same comm.
        model = self.write("four.csv", "type,count,f,b,w,act,param\nlayer,4,1,1,1,1,1\n")
        want = self.simulate_json(*PLAN_1F1B_P4_M8, "--comm", "0.5")["makespan"]
        self.assertNotEqual(want, 33)
        d = json.loads(self.ok("partition", "--model", model, "--devices", "4",
                               "--microbatches", "8", "--schedule", "1f1b", "--comm", "0.5",
                               "--json"))
        self.assertEqual(d["makespan"], want)
        d = json.loads(self.ok("plan", "--model", model, "--devices", "4", "--microbatches",
                               "8", "--schedules", "1f1b", "--mem-limit", "1e9", "--comm", "0.5",
                               "--format", "json"))
        self.assertEqual(d["alternatives"][0]["makespan"], want)


    def test_partition_and_plan_take_microbatch_weights(self):
        # 8 identical layers, 1F1B p = 2, m = 4, weights (1, 1, 1, 4): the
        # split [4, 4] (F 4, BW 8 per stage, micro-batch 3 four times as
        # long) ends at 132 by hand (tests/test_partition_sim.c), 60 with
        # unit weights; micro-batch 3 counts 4 in flight: device 0 holds
        # 1, 2, 1, 2, 1, 5, 4, 0 micro-batches of 4 layers, 5·4 + 4 = 24.
        model = self.write("eight.csv", "type,count,f,b,w,act,param\nlayer,8,1,1,1,1,1\n")
        shape = ["--model", model, "--devices", "2", "--microbatches", "4"]
        d = json.loads(self.ok("partition", *shape, "--schedule", "1f1b", "--json"))
        self.assertEqual(d["makespan"], 60)
        d = json.loads(self.ok("partition", *shape, "--schedule", "1f1b",
                               "--microbatch-weights", "1,1,1,4", "--json"))
        self.assertEqual(d["makespan"], 132)
        self.assertEqual((d["devices"][0]["memory"], d["devices"][0]["peak_memory"]), (24, 24))
        # below 24 no split fits (max(6k, 5(8 - k)) >= 24)
        r = run("partition", *shape, "--schedule", "1f1b", "--microbatch-weights", "1,1,1,4",
                "--mem-limit", "23", "--json")
        self.assertEqual(r.returncode, 1, r.stderr)
        d = json.loads(r.stdout)
        self.assertEqual((d["status"], d["min_memory"]), ("infeasible", 24))
        d = json.loads(self.ok("plan", *shape, "--schedules", "1f1b", "--mem-limit", "1e9",
                               "--microbatch-weights", "1,1,1,4", "--format", "json"))
        self.assertEqual(d["alternatives"][0]["makespan"], 132)
        once = json.loads(self.ok("plan", *shape, "--schedules", "1f1b", "--mem-limit", "1e9",
                                  "--microbatch-weights", "1,1,1,4", "--one-round", "--json"))
        self.assertEqual(once["alternatives"][0]["makespan"], 132)
        for cmd in ("partition", "plan"):
            with self.subTest(command=cmd):
                pick = ["--schedule" if cmd == "partition" else "--schedules", "1f1b"]
                msg = self.fails(2, cmd, *shape, *pick, "--mem-limit", "1e9",
                                 "--microbatch-weights", "1,1,4")
                self.assertIn("--microbatch-weights '1,1,4': expected 4 weights", msg)


class TestSameFlagsEverywhere(CliCase):
    def test_partition_and_plan_take_the_equals_form_and_the_shared_checks(self):
        model = self.write("four.csv", "type,count,f,b,w,act,param\nlayer,4,1,1,1,1,1\n")
        spaced = self.ok("partition", "--model", model, "--devices", "2", "--microbatches", "4",
                         "--schedule", "1f1b", "--json")
        joined = self.ok("partition", "--model=" + model, "--devices=2", "--microbatches=4",
                         "--schedule=1f1b", "--json")
        self.assertEqual(json.loads(spaced)["makespan"], json.loads(joined)["makespan"])
        for cmd in ("partition", "plan"):
            with self.subTest(command=cmd):
                msg = self.fails(2, cmd, "--model", model, "--devices", "0",
                                 "--microbatches", "4", "--schedule", "1f1b")
                self.assertIn("--devices '0': expected an integer in 1..65536", msg)
                msg = self.fails(2, cmd, "--model", model, "--devices", "2",
                                 "--microbatches", "4", "--comm", "-1")
                self.assertIn("--comm '-1': expected a finite number >= 0", msg)
        msg = self.fails(2, "simulate", *PLAN_1F1B_P4_M8, "--comm", "-1")
        self.assertIn("--comm '-1': expected a finite number >= 0", msg)

    def test_subnormal_costs_are_numbers_not_errors(self):
        # 1e-320 underflows strtod (ERANGE) but is a finite number >= 0
        rep = self.simulate_json(*PLAN_1F1B_P4_M8, "--cost", "1e-320,1,1")
        self.assertEqual(rep["busy"][0], 8 * (1e-320 + 2))
        costs = self.write("costs.csv", "0,1e-320,1,1\n")
        self.simulate_json(*PLAN_1F1B_P4_M8, "--costs-file", costs)


class TestBound(CliCase):
    """docs/simulator.md, worked example: p = 4, m = 8, unit costs, loop:
    work 24, critical path 4 + 4 + 1 = 9, device path 3 + 24 = 27; with a
    limit of 2 units the memory term is 8 * 7 / 2 = 28."""

    WANT = {"makespan": 27, "span": 24, "work": 24, "critical_path": 9, "device_path": 27,
            "memory": 0}

    def test_bound_of_1f1b_p4_m8_is_the_worked_example(self):
        d = json.loads(self.ok("bound", *PLAN_1F1B_P4_M8, "--json"))
        self.assertEqual(d["lower_bound"], self.WANT)
        # 1F1B runs (m + p - 1) * 3 = 33: gap = figure / bound - 1
        self.assertEqual((d["makespan"], d["span"]), (33, 33))
        self.assertAlmostEqual(d["gap"]["makespan"], 33 / 27 - 1, places=12)
        self.assertEqual(d["gap"]["span"], 33 / 24 - 1)

    def test_memory_limit_term(self):
        d = json.loads(self.ok("bound", *PLAN_1F1B_P4_M8, "--mem-limit", "2", "--json"))
        self.assertEqual(d["lower_bound"]["memory"], 28)
        self.assertEqual(d["lower_bound"]["makespan"], 28)

    def test_bound_text_names_every_term(self):
        out = self.ok("bound", *PLAN_1F1B_P4_M8)
        for line in (r"makespan bound\s+27\b", r"work\s+24$", r"critical path\s+9$",
                     r"device path\s+27$", r"memory\s+0$", r"span bound\s+24\b",
                     r"makespan\s+33 \(gap 22.2%\)$", r"span\s+33 \(gap 37.5%\)$"):
            self.assertRegex(out, "(?m)^\\s*" + line)

    def test_simulate_reports_lower_bound_and_gap(self):
        rep = self.simulate_json(*PLAN_1F1B_P4_M8)
        self.assertEqual(rep["lower_bound"], self.WANT)
        self.assertEqual(rep["gap"]["span"], 0.375)
        out = self.ok("simulate", *PLAN_1F1B_P4_M8)
        self.assertRegex(out, r"(?m)^lower bound\s+makespan 27, span 24$")
        self.assertRegex(out, r"(?m)^gap\s+makespan 22.2%, span 37.5%$")

    def test_zb_h2_meets_the_span_bound(self):
        # zero bubble for m >= 2p - 1 (DESIGN.md 3): span = work = 24
        rep = self.simulate_json("--schedule", "zb-h2", "--devices", "4", "--microbatches", "8")
        self.assertEqual((rep["span"], rep["lower_bound"]["span"], rep["gap"]["span"]),
                         (24, 24, 0))


class TestSolveStatus(CliCase):
    """What the exact generator proved (psched_schedule_solve_status()) in
    simulate and bound, and --option KEY=VALUE reaching its options."""

    P3_M3 = ["--schedule", "optimal", "--devices", "3", "--microbatches", "3"]
    # tests/test_optimal.c: one node cannot close p = 2, m = 2 on the
    # V-shape; the answer is v-zb's 14 against the work 2 x 2 x 3 = 12.
    VSHAPE = ["--schedule", "optimal", "--devices", "2", "--microbatches", "2", "--chunks", "2",
              "--placement", "vshape", "--option", "node-limit=1", "--option", "time-limit=86400"]

    def test_a_proof_psched_bound_does_not_see_is_stated(self):
        # p = 3, m = 3, unit costs: ZB-H1's 3m + p - 1 = 11; psched_bound()
        # has the work 9 only, the generator's fill bound adds device 0's
        # 2 idle units before its first backward: optimal with no search.
        rep = self.simulate_json(*self.P3_M3, "--option", "node-limit=1")
        self.assertEqual((rep["span"], rep["lower_bound"]["span"]), (11, 9))
        self.assertEqual(rep["solve_status"], {"status": "optimal", "gap": 0})
        out = self.ok("simulate", *self.P3_M3, "--option", "node-limit=1")
        self.assertRegex(out, r"(?m)^solve status\s+optimal \(proven")
        out = self.ok("bound", *self.P3_M3, "--option", "node-limit=1")
        self.assertRegex(out, r"(?m)^solve status\s+optimal \(proven")

    def test_a_stopped_search_states_feasible_with_its_gap(self):
        d = json.loads(self.ok("bound", *self.VSHAPE, "--json"))
        self.assertEqual(d["span"], 14)
        self.assertEqual(d["solve_status"]["status"], "feasible")
        self.assertGreater(d["solve_status"]["gap"], 0)
        self.assertLessEqual(d["solve_status"]["gap"], 2 / 14 + 1e-12)
        out = self.ok("simulate", *self.VSHAPE)
        self.assertRegex(out, r"(?m)^solve status\s+feasible \(the exact generator stopped")

    def test_heuristics_state_nothing(self):
        rep = self.simulate_json(*PLAN_1F1B_P4_M8)
        self.assertIsNone(rep["solve_status"])
        self.assertNotIn("solve status", self.ok("simulate", *PLAN_1F1B_P4_M8))
        self.assertIsNone(json.loads(self.ok("bound", *PLAN_1F1B_P4_M8, "--json"))["solve_status"])

    def test_option_is_the_generator_option(self):
        plan = ["--schedule", "interleaved", "--devices", "2", "--microbatches", "4",
                "--chunks", "2"]
        # the default group is p = 2 micro-batches; 4 is another order
        self.assertEqual(self.ok("generate", *plan, "--option", "group-size=4"),
                         self.ok("generate", *plan, "--group-size", "4"))
        self.assertNotEqual(self.ok("generate", *plan, "--option", "group-size=4"),
                            self.ok("generate", *plan))

    def test_bad_options_are_named(self):
        err = self.fails(2, "simulate", *PLAN_1F1B_P4_M8, "--option", "time-limit=5")
        self.assertIn('"time-limit" is not an option of 1f1b (it takes vocab)', err)
        err = self.fails(2, "simulate", *self.P3_M3, "--option", "time-limit=0")
        self.assertIn("time-limit (0) must be in [1, 86400]", err)
        for bad in ("time-limit=x", "time-limit=", "time-limit=1.5", "time-limit=99999999999999999999"):
            err = self.fails(2, "simulate", *self.P3_M3, "--option", bad)
            self.assertIn("not a base-10 integer", err)
        for bad in ("=3", "time-limit", "k" * 32 + "=1"):
            err = self.fails(2, "simulate", *self.P3_M3, "--option", bad)
            self.assertIn("expected KEY=VALUE", err)
        err = self.fails(2, "simulate", *self.P3_M3, "--option", "Bad=3")
        self.assertIn('"Bad"', err)
        err = self.fails(2, "simulate", "--input", "-", "--option", "node-limit=3",
                         stdin="0F0,0B0\n")
        self.assertIn("node-limit is a generator option", err)
        err = self.fails(2, "simulate", "--input", "-", "--group-size", "2", stdin="0F0,0B0\n")
        self.assertIn("group-size is a generator option", err)
        # --vocab is one of them too, with its own reason, wherever it stands
        for flags in (["--vocab", "1", "--option", "node-limit=3"],
                      ["--option", "node-limit=3", "--vocab", "0"]):
            err = self.fails(2, "simulate", "--input", "-", *flags, stdin="0F0,0B0\n")
            self.assertIn("--vocab is a generator option", err)
            self.assertIn("holds its VOCAB_S, VOCAB_T and COLLECTIVE ops itself", err)
        # ... set in the order given: --vocab N is --option vocab=N
        vocab = ["generate", "--schedule", "1f1b", "--devices", "2", "--microbatches", "4"]
        self.assertEqual(self.ok(*vocab, "--vocab", "2"), self.ok(*vocab, "--option", "vocab=2"))
        self.assertEqual(self.ok(*vocab, "--vocab", "2", "--option", "vocab=1"),
                         self.ok(*vocab, "--vocab", "1"))
        self.assertNotEqual(self.ok(*vocab, "--vocab", "1"), self.ok(*vocab, "--vocab", "2"))
        self.assertNotEqual(self.ok(*vocab, "--vocab", "1"), self.ok(*vocab))
        too_many = [a for i in range(33) for a in ("--option", f"node-limit={i}")]
        err = self.fails(2, "simulate", *self.P3_M3, *too_many)
        self.assertIn("at most 32 generator options", err)


def help_flags(text):
    """The flags a --help text defines: lines that start with two spaces and
    a flag (prose mentioning flags is indented further)."""
    return {m.group(1) for m in re.finditer(r"(?m)^  (--[a-z][a-z-]*)", text)}


class TestCliDoc(CliCase):
    """docs/cli.md's tables list exactly the flags each command's --help
    defines and the JSON keys each command prints."""

    COMMANDS = ("list", "generate", "simulate", "validate", "hash", "bound", "partition", "plan")

    def doc(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "cli.md")
        with open(path) as f:
            return f.read()

    def table(self, heading):
        section = self.doc().split("## " + heading, 1)[1].split("\n## ", 1)[0]
        rows = re.findall(r"^\| `([^`]+)`[^|]*\| ([^|]+) \|", section, re.M)
        self.assertTrue(rows, heading)
        return rows

    def test_flag_table_matches_every_help(self):
        documented = {c: set() for c in ("pipesched",) + self.COMMANDS}
        for flag, commands in self.table("Flags"):
            names = [c.strip() for c in commands.split(",")]
            for c in names:
                self.assertIn(c, documented, f"{flag}: unknown command {c}")
                documented[c].add(flag.split()[0])
        self.assertEqual(help_flags(self.ok("--help")), documented["pipesched"])
        for c in self.COMMANDS:
            with self.subTest(command=c):
                self.assertEqual(help_flags(self.ok(c, "--help")) | {"--help"}, documented[c])

    def test_json_key_table_matches_the_output(self):
        model = self.write("m.csv", "type,count,f,b,w,act,param\nlayer,4,1,1,1,1,1\n")
        shape = ["--devices", "4", "--microbatches", "8"]
        outputs = {
            "list": json.loads(self.ok("list", "--json"))[0],
            "simulate": self.simulate_json(*PLAN_1F1B_P4_M8),
            "validate": json.loads(self.ok("validate", *PLAN_1F1B_P4_M8, "--json")),
            "hash": json.loads(self.ok("hash", *PLAN_1F1B_P4_M8, "--json")),
            "bound": json.loads(self.ok("bound", *PLAN_1F1B_P4_M8, "--json")),
            "partition": json.loads(self.ok("partition", "--model", model, *shape,
                                            "--schedule", "1f1b", "--json")),
            "plan": json.loads(self.ok("plan", "--model", model, *shape, "--mem-limit", "1e9",
                                       "--schedules", "1f1b", "--json")),
        }
        rows = dict((c, k) for c, k in self.table("JSON keys"))
        self.assertEqual(set(rows), set(outputs))
        for c, keys in rows.items():
            with self.subTest(command=c):
                want = set(re.findall(r"`([A-Za-z_]+)`", keys))
                self.assertEqual(set(outputs[c]), want)

    def test_top_level_help_and_readme_list_every_format(self):
        readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
        with open(readme) as f:
            text = f.read()
        top = self.ok("--help")
        for fmt in ("csv", "csv-comms", "ascii", "json", "chrome", "svg"):
            with self.subTest(format=fmt):
                self.assertRegex(top, r"\b%s\b" % fmt)
                self.assertTrue("`%s`" % fmt in text, "README does not name the format " + fmt)

    def test_getting_started_installs_glpk(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs",
                            "getting-started.md")
        with open(path) as f:
            installs = [l for l in f if "apt-get install" in l]
        self.assertTrue(installs)
        self.assertTrue(all("libglpk-dev" in l for l in installs), installs)


HEAD_HEAVY = """type,count,f,b,w,act,param
embedding,1,0.1,0.1,0.1,1,1
layer,16,1,1,1,1,1
head,1,4.6,4.6,4.6,1,1
"""


def one_f_one_b_makespan(forward):
    """Makespan of 1F1B (DESIGN §4: warm-up min(m, p-d-1) F, then (F, BW)
    pairs, then BW) with m = 8 and stage s's F, B and W each costing
    forward[s], by event simulation written here from the contract (DESIGN
    §2-3), independent of the library's simulator."""
    p, m = len(forward), 8
    orders = []
    for d in range(p):
        warm = min(m, p - d - 1)
        order = [("F", k) for k in range(warm)]
        for k in range(warm, m):
            order += [("F", k), ("BW", k - warm)]
        order += [("BW", k) for k in range(m - warm, m)]
        orders.append(order)
    end, free, pos = {}, [0.0] * p, [0] * p
    while any(pos[d] < len(orders[d]) for d in range(p)):
        moved = False
        for d in range(p):
            while pos[d] < len(orders[d]):
                kind, k = orders[d][pos[d]]
                if kind == "F":
                    ready = end.get(("F", d - 1, k)) if d else 0.0
                else:
                    ready = end.get(("BW", d + 1, k)) if d < p - 1 else end.get(("F", d, k))
                if ready is None:
                    break
                start = max(free[d], ready)
                end[(kind, d, k)] = free[d] = start + forward[d] * (1 if kind == "F" else 2)
                pos[d] += 1
                moved = True
        assert moved, "the 1F1B order deadlocked"
    return max(free)


class TestLayouts(CliCase):
    """--layout reads Megatron-LM's layout grammar, --emit writes it back;
    expected strings derived by hand from the grammar
    (megatron/core/transformer/pipeline_parallel_layer_layout.py)."""

    HEADER = "type,count,f,b,w,act,param,act_selective,extra_selective,act_full,extra_full\n"

    def model(self, body, mtp=False):
        text = (self.HEADER + "embedding,1,0,0,0,1,1,,,,\n"
                f"layer,{body},1,1,1,4,10,2,0.25,0.5,1\n"
                + ("mtp,1,1,1,1,4,10,,,,\n" if mtp else "") + "head,1,2,2,2,8,4,,,,\n")
        return self.write("m.csv", text)

    def layout(self, path, p, layout, *extra, schedule="1f1b", m="8"):
        return ["partition", "--model", path, "--devices", str(p), "--microbatches", m,
                "--schedule", schedule, "--layout", layout, *extra]

    def test_deepseek_example_reads_and_writes_back(self):
        # Megatron-LM's documented DeepSeek-V3 layout: 61 decoder layers, one
        # MTP layer, p = 16, v = 2: stage 0 = E + 3 t, stages 1..29 = 2 t,
        # stage 30 = m, stage 31 = L.
        path = self.model(61, mtp=True)
        args = self.layout(path, 16, "Et*3|(tt|)*29,m|L", schedule="interleaved", m="32")
        out = json.loads(self.ok(*args, "--json"))
        counts = [s["count"] for s in out["stages"]]
        self.assertEqual(counts, [4] + [2] * 29 + [1, 1])
        text = self.ok(*args, "--emit", "megatron")
        self.assertIn('--pipeline-model-parallel-layout "Et*3|(tt|)*29,m|L"', text)
        self.assertIn("--pipeline-model-parallel-size 16 \\\n", text)
        self.assertIn("# --num-virtual-stages-per-pipeline-rank 2", text)

    def test_repeated_stages_are_grouped(self):
        path = self.model(10)
        text = self.ok(*self.layout(path, 5, "Ett|tt|tt|tt|ttL"), "--emit", "megatron")
        flags = [l for l in text.splitlines() if not l.startswith("#")]
        self.assertEqual(flags, ["--pipeline-model-parallel-size 5 \\",
                                 '--pipeline-model-parallel-layout "Ett|(tt|)*3,ttL"'])

    def test_block_recompute_reads_and_writes_back(self):
        path = self.model(6)
        args = self.layout(path, 2, "Ettt|tttL", "--recompute-granularity", "full",
                           "--recompute-method", "block", "--recompute-num-layers", "2")
        out = json.loads(self.ok(*args, "--json"))
        # stage 0: E (none), first 2 t full, 1 none; stage 1: 2 full, 1 none, L none
        self.assertEqual([s["recompute"] for s in out["stages"]],
                         [{"none": 2, "selective": 0, "full": 2}] * 2)
        text = self.ok(*args, "--emit", "megatron")
        flags = [l for l in text.splitlines() if not l.startswith("#")]
        self.assertEqual(flags, ["--pipeline-model-parallel-size 2 \\",
                                 '--pipeline-model-parallel-layout "Et*3|t*3L" \\',
                                 "--recompute-granularity full \\",
                                 "--recompute-method block \\",
                                 "--recompute-num-layers 2"])

    def test_torchtitan_snippet(self):
        path = self.model(4)
        text = self.ok(*self.layout(path, 2, "Et|tttL", "--recompute-granularity", "full",
                                    "--recompute-method", "uniform",
                                    "--recompute-num-layers", "1"), "--emit", "torchtitan")
        body = text[text.index("[parallelism]"):]
        self.assertEqual(body, "[parallelism]\n"
                               "pipeline_parallel_degree = 2\n"
                               'pipeline_parallel_schedule = "1F1B"\n'
                               "num_pp_microbatches = 8\n"
                               "pipeline_parallel_module_fqns_per_model_part = [\n"
                               '    ["tok_embeddings", "layers.0"],\n'
                               '    ["layers.1", "layers.2", "layers.3", "norm", "output"]\n'
                               "]\n\n"
                               "[activation_checkpoint]\n"
                               'mode = "full"\n')

    def test_schedule_without_a_pytorch_class_gets_a_csv(self):
        path = self.model(4)
        text = self.ok(*self.layout(path, 2, "Ett|ttL", schedule="zb-h1"), "--emit",
                       "torchtitan")
        self.assertIn('pipeline_parallel_schedule = "PipelineScheduleSingle"\n'
                      'pipeline_parallel_schedule_csv = "zb-h1.csv"\n', text)

    def test_plan_emit_passes_over_dualpipe_s_two_copies(self):
        # 6 layers, p = 2, m = 8, memory to spare: DualPipe's two copies
        # reach the work bound, (6 x 3 + 6) x 8 / 2 = 96, and rank first. A
        # Megatron-LM layout or torchtitan's module lists place each layer
        # once, so --emit hands over rank 2 and a comment names rank 1.
        path = self.model(6)
        shape = ["plan", "--model", path, "--devices", "2", "--microbatches", "8",
                 "--mem-limit", "1000", "--schedules", "dualpipe,interleaved,1f1b"]
        ranked = json.loads(self.ok(*shape, "--json"))["alternatives"]
        self.assertEqual((ranked[0]["schedule"], ranked[0]["makespan"]), ("dualpipe", 96))
        second = ranked[1]
        self.assertNotEqual(second["schedule"], "dualpipe")
        for framework, name in (("megatron", "Megatron-LM"), ("torchtitan", "torchtitan")):
            with self.subTest(framework=framework):
                lines = self.ok(*shape, "--emit", framework).splitlines()
                self.assertEqual(
                    lines[0], "# rank 1 (dualpipe, v = 2, step time 96) is faster but holds "
                    "every layer twice (two copies of the model), which no layout or module "
                    f"list can say; this is rank 2, the fastest plan that fits and that {name} "
                    "can take")
                self.assertIn(f"schedule {second['schedule']}, p = 2, "
                              f"v = {second['chunks']}, m = 8", lines[1])
        # The layout handed over is rank 2's plan: read back, its step time.
        text = self.ok(*shape, "--emit", "megatron")
        layout = re.search(r'layout "([^"]*)"', text).group(1)
        back = json.loads(self.ok(*self.layout(path, 2, layout, schedule=second["schedule"]),
                                  "--mem-limit", "1000", "--json"))
        self.assertAlmostEqual(back["makespan"], second["makespan"], places=6)
        # Only DualPipe fits the list: nothing can be handed over.
        line = self.fails(2, *shape[:-1], "dualpipe", "--emit", "torchtitan")
        self.assertIn("dualpipev runs one copy in a V and can be handed over", line)

    def test_plan_emit_megatron_hands_over_a_schedule_megatron_runs(self):
        # Megatron-LM runs 1F1B (v = 1) and interleaved 1F1B (v > 1) only, so
        # its flags are for the fastest of those; faster plans of other
        # schedules are named. torchtitan loads any schedule's CSV, so it gets
        # the fastest plan a module list can say.
        path = self.model(6)
        shape = ["plan", "--model", path, "--devices", "2", "--microbatches", "8",
                 "--mem-limit", "1000", "--schedules", "v-half,1f1b,zb-h1"]
        ranked = [a for a in json.loads(self.ok(*shape, "--json"))["alternatives"]
                  if a["fits"]]
        runs = [k for k, a in enumerate(ranked) if a["schedule"] == "1f1b" and not a["vocab"]]
        self.assertTrue(runs and runs[0] > 0, ranked)  # something faster than plain 1F1B
        lines = self.ok(*shape, "--emit", "megatron").splitlines()
        for k in range(runs[0]):
            a = ranked[k]
            self.assertTrue(lines[k].startswith(f"# rank {k + 1} ({a['schedule']}"), lines[k])
            self.assertIn("splits the output layer" if a["vocab"] else
                          "is a schedule Megatron-LM does not run (it runs 1F1B for v = 1 and "
                          "interleaved 1F1B for v > 1)", lines[k])
            self.assertTrue(lines[k].endswith(f"this is rank {runs[0] + 1}, the fastest plan "
                                              "that fits and that Megatron-LM can take"))
        self.assertIn("schedule 1f1b, p = 2, v = 1", lines[runs[0]])
        # the figures by hand: 6 layers of f = b = w = 1 and a head of 2, 2, 2
        # (an embedding of no time) split 4 | 2 + head give both stages 12 per
        # micro-batch, every other split one stage of 15 or more; 1F1B over
        # equal stages takes (m + p - 1)(f + b + w) = 9 x 12 = 108
        self.assertIn("simulated step time 108,", lines[runs[0]])
        self.assertIn('--pipeline-model-parallel-layout "Et*4|ttL"', lines)
        # torchtitan: the first that is not a vocab candidate
        first = next(k for k, a in enumerate(ranked) if not a["vocab"])
        head = self.ok(*shape, "--emit", "torchtitan").splitlines()[first]
        self.assertIn(f"schedule {ranked[first]['schedule']}, p = 2, "
                      f"v = {ranked[first]['chunks']}", head)
        self.assertIn("cannot be combined with --json",
                      self.fails(2, *shape, "--emit", "megatron", "--json"))

    def test_layout_step_time_equals_the_optimizer_s(self):
        path = self.model(10)
        shape = ["--devices", "4", "--microbatches", "8", "--schedule", "1f1b",
                 "--mem-limit", "60"]
        text = self.ok("partition", "--model", path, *shape, "--emit", "megatron")
        layout = re.search(r'layout "([^"]*)"', text).group(1)
        flags = "\n".join(l for l in text.splitlines() if not l.startswith("#"))
        rec = re.findall(r"--(recompute-[a-z-]+) (\S+)", flags)
        self.assertTrue(rec)  # the limit of 60 needs recomputation
        args = ["partition", "--model", path, *shape, "--layout", layout, "--json"]
        for flag, value in rec:
            args += ["--" + flag, value]
        back = json.loads(self.ok(*args))
        near = re.search(r"nearest expressible: .*: simulated step time (\S+) ", text)
        want = float(near.group(1)) if near else json.loads(self.ok(
            "partition", "--model", path, *shape, "--json"))["makespan"]
        self.assertAlmostEqual(back["makespan"], want, places=3)

    def test_bad_layouts_name_the_rule_and_the_column(self):
        path = self.model(10)
        for layout, p, words in (
                ("Et*3|(t*3|*2,tL", 4, "'(' at column 6 is never closed"),
                ("Et*3|t*3)|t*3|tL", 4, "')' at column 9 closes no '('"),
                ("Et*3|((t*3|)*2)*1,tL", 4, "one level of parentheses"),
                ("Et*5|t*5L", 4, "2 stages is not a multiple of the 4 devices"),
                ("Et*4|t*3|t*3|tL", 4, "11 't' elements (transformer layers); the model has 10"),
                ("Et*3|t*3|t*3|txL", 4, "'x' at column 15"),
                ("Et*3|t*3|t*3|tmL", 4, "element 'm' at column 15"),
                ("tE*3|t*3|t*3|tL", 4, "first element must be E"),
                ("Et**3|t*3|t*3|tL", 4, "'*' at column 3 must be followed by a repeat count"),
                ("()*2Et*3|t*3|t*3|tL", 4, "empty parentheses at column 1")):
            with self.subTest(layout=layout):
                line = self.fails(2, *self.layout(path, p, layout))
                self.assertIn(words, line)
        self.assertIn("uniform", self.fails(2, *self.layout(
            path, 4, "Et*3|t*3|t*3|tL", "--recompute-granularity", "full",
            "--recompute-method", "uniform", "--recompute-num-layers", "2")))
        self.assertIn("--layout", self.fails(2, "partition", "--model", path, "--devices", "4",
                                             "--microbatches", "8", "--schedule", "1f1b",
                                             "--recompute-method", "block"))
        self.assertIn("megatron or torchtitan", self.fails(
            2, *self.layout(path, 4, "Et*3|t*3|t*3|tL"), "--emit", "deepspeed"))


class TestOptimizer(CliCase):
    """pipesched partition / plan. Model: embedding 0.1, 16 layers of 1 and a
    head of 4.6 (each of F, B, W), p = 4, m = 8, 1f1b. Even split: emb+4 |
    4 | 4 | 4+head, makespan 12.1 + 8·25.8 + 24.2 = 242.7 (by hand); the
    bottleneck-balanced emb+5 | 5 | 5 | 1+head gives 15.1 + 8·16.8 + 30.2 =
    179.7 (by hand), and emb+6 | 5 | 5 | head, whose first stage is the
    slowest but whose head fills the pipe sooner, 179.1 (one_f_one_b_makespan):
    the best of the 1f1b splits (the brute force of tests/test_partition_sim.c)."""

    def head_heavy(self):
        return self.write("head_heavy.csv", HEAD_HEAVY)

    def test_partition_json_has_the_documented_keys_and_the_hand_figures(self):
        d = json.loads(self.ok("partition", "--model", self.head_heavy(), "--devices", "4",
                               "--microbatches", "8", "--schedule", "1f1b", "--json"))
        for key in ("method", "schedule", "status", "gap", "objective", "solve_time",
                    "makespan", "even_makespan", "speedup", "min_memory", "stages", "devices"):
            self.assertIn(key, d)
        self.assertEqual(d["status"], "optimal")
        self.assertAlmostEqual(one_f_one_b_makespan([5.1, 5, 5, 5.6]), 179.7, places=9)
        self.assertAlmostEqual(one_f_one_b_makespan([4.1, 4, 4, 8.6]), 242.7, places=9)
        self.assertAlmostEqual(d["makespan"], one_f_one_b_makespan([6.1, 5, 5, 4.6]), places=9)
        self.assertAlmostEqual(d["makespan"], 179.1, places=9)
        self.assertAlmostEqual(d["even_makespan"], 242.7, places=9)
        # every split of the 18 layers by this event simulation: the fastest
        # are emb+6 | 5 | 5 | head and emb+6 | 6 | 4 | head, both 179.1;
        # either is right
        layers = [0.1] + [1] * 16 + [4.6]
        fastest, best = [], math.inf
        for i, j, k in itertools.combinations(range(1, 18), 3):
            t = round(one_f_one_b_makespan(
                [sum(layers[:i]), sum(layers[i:j]), sum(layers[j:k]), sum(layers[k:])]), 9)
            if t < best:
                fastest, best = [], t
            if t == best:
                fastest.append([i, j - i, k - j, 18 - k])
        self.assertAlmostEqual(best, 179.1, places=9)
        self.assertEqual(fastest, [[7, 5, 5, 1], [7, 6, 4, 1]])
        self.assertIn([s["count"] for s in d["stages"]], fastest)
        self.assertEqual(d["stages"][3]["recompute"], {"none": 1, "selective": 0, "full": 0})
        self.assertEqual(len(d["devices"]), 4)

    def test_partition_text_names_status_and_speedup(self):
        out = self.ok("partition", "--model", self.head_heavy(), "--devices", "4",
                      "--microbatches", "8", "--schedule", "1f1b")
        self.assertIn("status: optimal", out)
        self.assertIn("simulated makespan: 179.1", out)
        self.assertIn("speed-up 1.355x", out)  # 242.7 / 179.1

    def test_partition_below_the_minimum_exits_1_with_the_minimum(self):
        # 4 layers (param 10, act 5), p = 2, m = 4: the smallest device
        # memory is 40 (splits 1+3: 20/45, 2+2: 40/30, 3+1: 60/15).
        model = self.write("four.csv", "type,count,f,b,w,act,param\nlayer,4,1,1,1,5,10\n")
        r = run("partition", "--model", model, "--devices", "2", "--microbatches", "4",
                "--schedule", "1f1b", "--mem-limit", "39", "--json")
        self.assertEqual(r.returncode, 1, r.stderr)
        d = json.loads(r.stdout)
        self.assertEqual((d["status"], d["min_memory"], d["stages"]), ("infeasible", 40, []))

    def test_partition_text_names_the_smallest_memory_or_says_it_is_unknown(self):
        model = self.write("four.csv", "type,count,f,b,w,act,param\nlayer,4,1,1,1,5,10\n")
        r = run("partition", "--model", model, "--devices", "2", "--microbatches", "4",
                "--schedule", "1f1b", "--mem-limit", "39")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no partition fits; the smallest memory limit that fits is 40\n", r.stdout)
        # 78 layers alternating dense (param 10) and MoE (param 30) on p = 8
        # at four chunks: neither the search over the stage boundaries (it
        # stops at its step cap, 2^26, without a proof) nor the MILP proves
        # the smallest memory, so the call says it is unknown, not just
        # "infeasible" (docs/optimizer.md, the Status paragraph)
        rows = ["type,count,f,b,w,act,param,act_full,extra_full", "embedding,1,1,1,1,1,40,,"]
        rows += ["dense,1,1,1,1,4,10,0.5,1" if i % 2 == 0 else "moe,1,2,2,2,6,30,0.5,2"
                 for i in range(78)]
        rows.append("head,1,3,3,3,8,40,,")
        alternating = self.write("alternating.csv", "\n".join(rows) + "\n")
        shape = ["--model", alternating, "--devices", "8", "--microbatches", "32",
                 "--mem-limit", "1", "--time-limit", "1"]
        r = run("partition", *shape, "--schedule", "interleaved", "--chunks", "4")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no partition found; the smallest memory limit that fits was not proven "
                      "in the time limit (--time-limit)\n", r.stdout)
        r = run("plan", *shape, "--schedules", "interleaved", "--chunks", "4", "--one-round")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("infeasible (smallest memory not proven)", r.stdout)

    def test_partition_usage_errors_exit_2(self):
        model = self.head_heavy()
        self.fails(2, "partition", "--model", model, "--devices", "4", "--microbatches", "8")
        self.fails(2, "partition", "--model", model, "--devices", "4", "--microbatches", "8",
                   "--schedule", "1f1b", "--method", "simplex")
        bad = self.write("bad.csv", "type,count,f,b,w,act,param\nlayer,2,1,1,x1,1,1\n")
        msg = self.fails(2, "partition", "--model", bad, "--devices", "2", "--microbatches",
                         "4", "--schedule", "1f1b")
        self.assertIn("line 2, column 13", msg)

    def test_plan_ranks_schedules_and_prints_the_best_stages(self):
        out = self.ok("plan", "--model", self.head_heavy(), "--devices", "4",
                      "--microbatches", "8", "--mem-limit", "1e9",
                      "--schedules", "1f1b,interleaved,dualpipe,chimera")
        self.assertIn("best plan:", out)
        self.assertIn("proven optimal", out)
        table = out.split("best plan:")[0]
        rows = [l.split() for l in table.splitlines() if re.match(r"\d+ ", l)]
        # dualpipe's two chains are partitioned together (issue 17 item 5):
        # a ranked alternative like the others, not an error
        dualpipe = [r for r in rows if r[1:3] == ["dualpipe", "2"]]
        self.assertEqual(len(dualpipe), 1)
        self.assertNotIn("error", " ".join(dualpipe[0]))
        self.assertIn(["1f1b", "1"], [r[1:3] for r in rows])

    def test_plan_json_best_is_the_fastest_fitting_alternative(self):
        d = json.loads(self.ok("plan", "--model", self.head_heavy(), "--devices", "4",
                               "--microbatches", "8", "--mem-limit", "1e9", "--json",
                               "--schedules", "1f1b,interleaved"))
        # Without GLPK, interleaved with v = 4 (a MILP case) is an error,
        # ranked last.
        alts = [a for a in d["alternatives"] if a["status"] != "error"]
        self.assertEqual(alts, d["alternatives"][:len(alts)])
        self.assertEqual(d["best"], 0)
        self.assertTrue(all(a["fits"] for a in alts))
        self.assertEqual([a["makespan"] for a in alts], sorted(a["makespan"] for a in alts))
        one = next(a for a in alts if a["schedule"] == "1f1b" and a["vocab"] == 0)
        self.assertAlmostEqual(one["makespan"], one_f_one_b_makespan([6.1, 5, 5, 4.6]), places=9)
        # the model has a head: Vocabulary Parallelism joins as vocab=1 and 2
        # (issue 19), for 1f1b, which declares the option, not interleaved
        self.assertEqual(sorted(a["vocab"] for a in d["alternatives"] if a["schedule"] == "1f1b"),
                         [0, 1, 2])
        self.assertEqual({a["vocab"] for a in d["alternatives"]
                          if a["schedule"] == "interleaved"}, {0})
        self.assertAlmostEqual(one["even_makespan"], 242.7, places=9)
        self.assertEqual(d["plan"]["schedule"], alts[0]["schedule"])
        # a vocab plan partitions the model without its head (one layer)
        self.assertEqual(d["plan"]["vocab"], alts[0]["vocab"])
        self.assertEqual(sum(s["count"] for s in d["plan"]["stages"]),
                         18 - (1 if d["plan"]["vocab"] else 0))

    def test_plan_emit_passes_over_vocabulary_parallel_candidates(self):
        # Here both Vocabulary Parallelism candidates rank ahead of plain
        # 1F1B; their head is split over every device, which neither a
        # Megatron-LM layout nor torchtitan's module lists can say (the
        # emitter refuses them), so --emit hands over plain 1F1B, whose best
        # step time is the split [6.1, 5, 5, 4.6]'s by the hand simulation
        # (the test above).
        shape = ["plan", "--model", self.head_heavy(), "--devices", "4", "--microbatches",
                 "8", "--mem-limit", "1e9", "--schedules", "1f1b"]
        ranked = json.loads(self.ok(*shape, "--json"))["alternatives"]
        self.assertEqual([a["vocab"] for a in ranked[:2]], [1, 2])
        lines = self.ok(*shape, "--emit", "megatron").splitlines()
        for k in (0, 1):
            self.assertTrue(lines[k].startswith(
                f"# rank {k + 1} (1f1b vocab={k + 1}, v = 1, step time "), lines[k])
            self.assertIn("is faster but splits the output layer over every device "
                          "(Vocabulary Parallelism), which no layout or module list can say; "
                          "this is rank 3,", lines[k])
        want = one_f_one_b_makespan([6.1, 5, 5, 4.6])
        got = float(re.search(r"simulated step time (\S+),", lines[2]).group(1))
        self.assertAlmostEqual(got, want, places=4)
        self.assertTrue(any(l.startswith("--pipeline-model-parallel-layout ") for l in lines))

    def test_vocab_candidates_hold_the_vocabulary_shards_and_fit(self):
        # A Vocabulary Parallelism candidate partitions the model without its
        # head, and every device holds 1/p of the head's and the embedding's
        # parameters ((1 + 1) / 4 = 0.5 here; the embedding's compute stays
        # on the first stage) and the S pass's logits. At a limit of 24 the
        # shard and the logits used to be left out of the partitioner's
        # accounting (the embedding whole on device 0): vocab=2's split
        # simulated to 24.25 and did not fit. Now its layers are partitioned
        # beside the shard (and again below the excess the simulation shows).
        d = json.loads(self.ok("plan", "--model", self.head_heavy(), "--devices", "4",
                               "--microbatches", "8", "--mem-limit", "24", "--json",
                               "--schedules", "1f1b"))
        best = d["alternatives"][0]
        self.assertEqual((best["schedule"], best["vocab"], best["fits"]), ("1f1b", 2, True))
        self.assertLessEqual(best["peak_memory"], 24)
        stages, devices = d["plan"]["stages"], d["plan"]["devices"]
        # every parameter of the model is on some device: 1 + 16 + 1
        self.assertAlmostEqual(sum(x["params"] for x in devices), 18, places=9)
        for x in devices:
            layers = sum(s["count"] for s in stages if s["device"] == x["device"])
            # layer parameters 1 each, the embedding (layer 0) none of its own
            body = layers - (1 if x["device"] == 0 else 0)
            self.assertAlmostEqual(x["params"], body + 0.5, places=9)
            self.assertLessEqual(x["peak_memory"], 24)
            self.assertLessEqual(x["memory"], 24)
        # the one that does not fit needs more than the limit, shard included
        vocab1 = next(a for a in d["alternatives"] if a["vocab"] == 1)
        self.assertFalse(vocab1["fits"])
        self.assertGreater(vocab1["min_memory"], 24)

    def test_vocab_bound_is_the_larger_hand_bound(self):
        # A vocab candidate's order depends on the costs, but it keeps the
        # plain 1F1B order of the model without its head and only adds the
        # S and T passes and collectives, so (1) that model's best plain
        # 1F1B step time bounds it: here (no memory limit) the least
        # hand-simulated 1F1B makespan over every split of the embedding
        # (0.1) and 16 layers (1) into 4 stages, 133.5. (2) Between its
        # first op and its last every device also runs its S passes, and
        # with Vocab-1 its T passes (which compute the head's input
        # gradient the last backward needs): 8 x 3 x 4.6 / 4 = 27.6 with
        # Vocab-1, 8 x 2 x 4.6 / 4 = 18.4 with Vocab-2 (S = F + B of the
        # head / p; T, its weight gradient, may come after). So a device's
        # start (the forward of the layers before it), m x its layers' F +
        # B + W and its tail (their B and W: 1F1B's last op on a device is
        # its last backward, then the earlier stages' for that micro-batch)
        # plus that bound it too: over every split the least busiest such
        # device is 123.3 (5, 4, 4, 3 layers after the embedding: the
        # third device, 9.1 + 96 + 18.2), so the bounds are 150.9 and
        # 141.7, above the work bound (124.2).
        import itertools
        layers = [0.1] + [1.0] * 16
        splits = [[layers[a:b] for a, b in zip((0,) + cuts, cuts + (17,))]
                  for cuts in itertools.combinations(range(1, 17), 3)]
        plain = min(one_f_one_b_makespan([sum(st) for st in split]) for split in splits)
        self.assertAlmostEqual(plain, 133.5, places=9)
        chain = min(max(sum(map(sum, split[:d])) + 8 * 3 * sum(split[d]) +
                        2 * sum(map(sum, split[:d])) for d in range(4))
                    for split in splits)
        self.assertAlmostEqual(chain, 123.3, places=9)
        expected = {1: max(plain, chain + 8 * 3 * 4.6 / 4),
                    2: max(plain, chain + 8 * 2 * 4.6 / 4)}
        self.assertAlmostEqual(expected[1], 150.9, places=9)
        self.assertAlmostEqual(expected[2], 141.7, places=9)
        d = json.loads(self.ok("plan", "--model", self.head_heavy(), "--devices", "4",
                               "--microbatches", "8", "--mem-limit", "1e9", "--json",
                               "--schedules", "1f1b"))
        vocab = [a for a in d["alternatives"] if a["vocab"]]
        self.assertEqual(len(vocab), 2)
        for a in vocab:
            with self.subTest(vocab=a["vocab"]):
                self.assertEqual(a["status"], "feasible")
                self.assertAlmostEqual(a["makespan"] * (1 - a["gap"]), expected[a["vocab"]],
                                       places=6)

    def test_plan_with_nothing_fitting_exits_1(self):
        r = run("plan", "--model", self.head_heavy(), "--devices", "4", "--microbatches", "8",
                "--mem-limit", "1", "--schedules", "1f1b", "--json")
        self.assertEqual(r.returncode, 1, r.stderr)
        d = json.loads(r.stdout)
        self.assertIsNone(d["best"])
        self.assertIsNone(d["plan"])
        self.assertFalse(d["alternatives"][0]["fits"])

    def test_plan_usage_errors_exit_2(self):
        model = self.head_heavy()
        self.fails(2, "plan", "--model", model, "--devices", "4", "--microbatches", "8")
        msg = self.fails(2, "plan", "--model", model, "--devices", "4", "--microbatches", "8",
                         "--mem-limit", "1e9", "--schedules", "no-such-schedule")
        self.assertIn("no-such-schedule", msg)
        self.assertTrue(self.ok("plan", "--help").startswith("Usage: pipesched plan"))
        self.assertIn("plan", self.ok("--help"))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: test_cli.py PATH/TO/pipesched REFERENCE_DIR")
    TOOL = os.path.abspath(sys.argv[1])
    REFERENCE = sys.argv[2]
    unittest.main(argv=[sys.argv[0], "-v"], verbosity=2)
