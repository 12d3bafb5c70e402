"""The benchmark's --json output and bench/plot.py, the pipeline behind
docs/performance.md: a short run (gpipe, sizes of the quick set, tiny
sample time) must give a record for every operation at every size, with
consistent figures, and the plot and tables must come out of it.

    test_bench.py PIPESCHED_BENCH PLOT_PY
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

BENCH, PLOT = sys.argv[1], sys.argv[2]
OPERATIONS = ["generate", "validate", "simulate", "lower", "lower_check", "hash", "csv_export",
              "csv_import"]
# gpipe takes v = 1 only, so the quick set's p=64, m=1024, v=4 size is skipped
GPIPE_SIZES = [(4, 8), (8, 32), (16, 128), (32, 256)]
TARGETS = 12 + 7  # issue 7's and issue 13's


def run_bench():
    out = subprocess.run([BENCH, "--json", "--schedule", "gpipe", "--only", "table",
                          "--min-time", "0.001"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class BenchJson(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bench = run_bench()

    def test_json_has_every_operation_at_every_size(self):
        got = {(r["devices"], r["microbatches"], r["operation"]) for r in self.bench["results"]}
        want = {(p, m, op) for p, m in GPIPE_SIZES for op in OPERATIONS}
        self.assertEqual(got, want)

    def test_op_count_is_two_per_stage_and_microbatch(self):
        # gpipe: one F and one fused backward per (stage, micro-batch), S = p
        for r in self.bench["results"]:
            self.assertEqual(r["ops"], 2 * r["devices"] * r["microbatches"])

    def test_figures_agree_with_each_other(self):
        for r in self.bench["results"]:
            with self.subTest(record=(r["devices"], r["operation"])):
                self.assertLessEqual(r["min_s"], r["median_s"])
                self.assertLessEqual(r["median_s"], r["max_s"])
                self.assertGreater(r["min_s"], 0)
                self.assertAlmostEqual(r["ns_per_op"], 1e9 * r["median_s"] / r["ops"],
                                       delta=1e-3 * r["ns_per_op"])
                has_bytes = r["operation"] in ("hash", "csv_export", "csv_import")
                self.assertEqual(r["mb_per_s"] is not None, has_bytes)
                if r["operation"] == "hash":  # 12-byte op records
                    self.assertAlmostEqual(r["mb_per_s"], 12 * r["ops"] / r["median_s"] / 1e6,
                                           delta=1e-3 * r["mb_per_s"])

    def test_every_target_is_reported(self):
        self.assertEqual(len(self.bench["targets"]), TARGETS)
        for t in self.bench["targets"]:
            if t["measured"] is not None:
                met = t["measured"] >= t["limit"] if t["at_least"] else t["measured"] <= t["limit"]
                self.assertEqual(t["met"], met, t["target"])


class Plot(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        src = os.path.join(cls.dir.name, "bench.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(run_bench(), f)
        cls.svg = os.path.join(cls.dir.name, "plot.svg")
        cls.html = os.path.join(cls.dir.name, "tables.html")
        subprocess.run([sys.executable, PLOT, src, "--schedule", "gpipe", "--svg", cls.svg,
                        "--html", cls.html], check=True)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_plot_draws_one_line_per_operation(self):
        root = ET.parse(self.svg).getroot()
        lines = root.findall("{http://www.w3.org/2000/svg}polyline")
        self.assertEqual(len(lines), len(OPERATIONS))
        for line in lines:
            self.assertEqual(len(line.get("points").split()), len(GPIPE_SIZES))

    def test_tables_list_every_target_and_generator(self):
        with open(self.html, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text.count("<table>"), 3)
        self.assertIn("<td>gpipe</td>", text)
        self.assertEqual(text.count("<tr>"), (1 + TARGETS) + (1 + 1) + 1)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
