#!/usr/bin/env python3
"""Proof by execution: the pipeline_runtime example trains a 16-layer MLP for
one step under every schedule, one thread per device, after comm lowering.

Usage: test_runtime.py PATH/TO/pipeline_runtime REFERENCE_DIR

Expected values come from the generators' documented constraints (which
grid points exist), closed forms with unit costs (1F1B's peak on device d is
min(m, p-d)), hand-derived op orders and the shared reference files; never
from the program's own earlier output.
"""
import os
import re
import subprocess
import sys
import unittest

RUNTIME = None
REFERENCE = None

BUILTINS = ["gpipe", "1f1b", "interleaved", "looped-bfs", "v-zb", "dualpipev", "dualpipe",
            "interleaved-zb", "zb-h1", "zb-h2", "zb", "v-half", "v-min"]


def run(*args):
    return subprocess.run([RUNTIME, *args], capture_output=True, text=True, timeout=120)


# Grid points p in {2,3,4}, v in {1..4}, m in {p, 2p, 3p+1} each generator's
# constraints accept ('pipesched list'):
#  v = 1 only (gpipe, 1f1b, zb-h1, zb-h2, zb): 3 p x 3 m = 9 each;
#  looped-bfs, v >= 1: 4 v x 9 = 36;
#  interleaved and interleaved-zb, v >= 2 and m mod p = 0 or >= p with the
#    default group size p: 3 v x 3 p x 2 m (3p+1 leaves remainder 1) = 18 each;
#  v-zb, v-half, v-min, v = 2: 9 each;
#  dualpipev, m >= 2p: 3 p x 2 m = 6;
#  dualpipe, p even, m even, m >= 2p: (p=2, m=4) and (p=4, m=8) = 2.
EXPECTED_RUNS = {**{n: 9 for n in ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb",
                                   "v-zb", "v-half", "v-min"]},
                 "looped-bfs": 36, "interleaved": 18, "interleaved-zb": 18,
                 "dualpipev": 6, "dualpipe": 2}


class RuntimeCase(unittest.TestCase):
    def passes(self, *args):
        r = run(*args)
        self.assertEqual(r.returncode, 0, f"{args}:\n{r.stdout}{r.stderr}")
        return r.stdout

    def fails(self, *args):
        r = run(*args)
        self.assertEqual(r.returncode, 1, f"{args}:\n{r.stdout}{r.stderr}")
        self.assertTrue(r.stdout.startswith("FAIL "), r.stdout)
        return r.stdout

    def check_grid(self, out):
        runs = {}
        lines = out.splitlines()
        for line in lines[:-1]:
            self.assertRegex(line, r"^ok   \S+ +p=\d v=\d m=\d+: gradient diff 0, peak [\d ]+ = "
                                   r"simulator$")
            runs[line.split()[1]] = runs.get(line.split()[1], 0) + 1
        # a generator registered later must pass too, with at least one run
        for name, n in EXPECTED_RUNS.items():
            self.assertEqual(runs.get(name), n, name)
        m = re.fullmatch(r"(\d+) schedules executed \((\d+) grid points not accepted by "
                         r"their generator\): all match", lines[-1])
        self.assertIsNotNone(m, lines[-1])
        self.assertEqual(int(m.group(1)), sum(runs.values()))
        # 3 p x 4 v x 3 m = 36 grid points per registered generator
        self.assertEqual((int(m.group(1)) + int(m.group(2))) % 36, 0)


class TestGrid(RuntimeCase):
    def test_every_generator_trains_like_the_reference_over_the_grid(self):
        self.assertEqual(sorted(EXPECTED_RUNS), sorted(BUILTINS))
        self.assertEqual(sum(EXPECTED_RUNS.values()), 152)
        self.check_grid(self.passes("--all"))

    def test_grid_also_matches_with_uneven_costs_and_comm_latency(self):
        # Costs move the comm ops and change the batched groups; the
        # gradients and the list-order memory peaks must not change.
        self.check_grid(self.passes("--all", "--cost", "1,2,1", "--comm", "0.5"))


class TestOneSchedule(RuntimeCase):
    def test_1f1b_prints_gradient_check_and_peak_next_to_the_simulator(self):
        out = self.passes("--schedule", "1f1b", "--devices", "4", "--microbatches", "8")
        self.assertTrue(out.startswith("OK   1f1b"), out)
        self.assertIn("gradients: max |pipelined - reference| = 0 over 1 chain", out)
        # 1F1B keeps min(m, p - d) micro-batches on device d
        self.assertIn("peak live activations per device: runtime 4 3 2 1, simulator 4 3 2 1",
                      out)
        # 16 F, 16 BW on 4 devices; 3 boundaries x 8 micro-batches x 2
        # directions x (send + receive) = 96 comm ops
        self.assertIn("lowered: 64 compute ops, 96 comm ops", out)

    def test_show_prints_1f1b_steady_state_as_batched_groups(self):
        out = self.passes("--schedule", "1f1b", "--devices", "2", "--microbatches", "4", "--show")
        # Megatron's send_forward_recv_backward and send_backward_recv_forward
        self.assertIn("device 0: 0F0 0SEND_F0 0F1 {0SEND_F1;0RECV_B0} 0B0", out)
        self.assertIn("device 1: 1RECV_F0 1F0 1B0 {1SEND_B0;1RECV_F1} 1F1", out)

    def test_dualpipe_two_chains_match_per_chain(self):
        out = self.passes("--schedule", "dualpipe", "--devices", "4", "--microbatches", "8")
        self.assertIn("over 2 chains", out)
        self.assertIn("max |pipelined - reference| = 0 ", out)

    def test_torchtitan_csv_runs_the_same_way(self):
        path = os.path.join(REFERENCE, "torchtitan", "custom_schedule.csv")
        if not os.path.exists(path):
            self.fail(f"reference file {path} is missing (tests/data/reference)")
        out = self.passes("--csv", path)
        self.assertIn("p=2 v=2 m=8", out)
        self.assertIn("max |pipelined - reference| = 0 ", out)
        # every device runs its 16 forwards (2 stages x 8) before any W
        self.assertIn("runtime 16 16, simulator 16 16", out)


class TestBrokenSchedules(RuntimeCase):
    """Each breakage is caught by the validator, and when forced to run, by the
    runtime itself: the check can fail."""

    def test_w_before_b_is_rejected_by_the_validator(self):
        out = self.fails("--schedule", "zb-h1", "--devices", "2", "--microbatches", "4",
                         "--break", "w-before-b")
        self.assertIn("rejected by the validator", out)
        self.assertIn("validator: PSCHED_EINVALID: device 0 op 5 (0W0): needs", out)
        self.assertNotIn("runtime:", out)

    def test_w_before_b_forced_fails_in_the_runtime(self):
        out = self.fails("--schedule", "zb-h1", "--devices", "2", "--microbatches", "4",
                         "--break", "w-before-b", "--force")
        self.assertIn("runtime: device 0 op 5 (0W0): W before its B", out)

    def test_unbatched_sends_deadlock_in_the_validator(self):
        out = self.fails("--schedule", "1f1b", "--devices", "2", "--microbatches", "4",
                         "--break", "unbatch")
        self.assertIn("validator: PSCHED_EDEADLOCK", out)

    def test_unbatched_sends_forced_hang_and_the_watchdog_names_them(self):
        # Device 0 after 0F1 sends 0SEND_F1 (op 3) while device 1 after 1B0
        # sends 1SEND_B0 (op 3): each send waits for a receive the other
        # device only posts after its own send.
        out = self.fails("--schedule", "1f1b", "--devices", "2", "--microbatches", "4",
                         "--break", "unbatch", "--force", "--timeout", "0.5")
        self.assertIn("runtime: watchdog: no op completed for 0.5 s; waiting: "
                      "device 0 op 3 (0SEND_F1, send not matched); "
                      "device 1 op 3 (1SEND_B0, send not matched)", out)

    def test_swapped_send_order_is_rejected_by_the_validator(self):
        # interleaved-zb p=2 m=4: device 1 posts 1SEND_F2 and 1SEND_B1 to
        # device 0 with no other traffic to it in between (zb-h2 no longer
        # has such a pair since it follows the zero-bubble authors' order).
        out = self.fails("--schedule", "interleaved-zb", "--devices", "2", "--microbatches", "4",
                         "--break", "send-order")
        self.assertIn("validator: PSCHED_EINVALID", out)
        self.assertIn("posting order", out)

    def test_swapped_send_order_forced_gives_wrong_gradients(self):
        out = self.fails("--schedule", "interleaved-zb", "--devices", "2", "--microbatches", "4",
                         "--break", "send-order", "--force")
        self.assertIn("broken: swapped 1SEND_F2 and 1SEND_B1", out)
        m = re.search(r"gradients: max \|pipelined - reference\| = (\S+) .*: MISMATCH", out)
        self.assertIsNotNone(m, out)
        self.assertGreater(float(m.group(1)), 1e-6)


class TestGuidePage(unittest.TestCase):
    ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

    def test_code_quoted_in_the_guide_is_the_example_code(self):
        src_dir = os.path.join(self.ROOT, "bindings", "cpp", "examples", "pipeline_runtime")
        sources = "\n".join(open(os.path.join(src_dir, f), encoding="utf-8").read()
                            for f in sorted(os.listdir(src_dir)) if f.endswith((".cpp", ".hpp")))
        with open(os.path.join(self.ROOT, "docs", "runtime.md"), encoding="utf-8") as f:
            blocks = re.findall(r"^```cpp\n(.*?)^```$", f.read(), re.S | re.M)
        self.assertGreaterEqual(len(blocks), 5)
        for block in blocks:
            self.assertIn(block, sources, "docs/runtime.md quotes code the example no longer has")


class TestUsage(unittest.TestCase):
    def test_bad_usage_exits_2(self):
        for args in [[], ["--schedule", "1f1b"], ["--all", "--break", "nope"],
                     ["--schedule", "1f1b", "--devices", "0", "--microbatches", "2"]]:
            r = run(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.startswith("pipeline_runtime: "), r.stderr)

    def test_unknown_schedule_exits_1_with_the_library_message(self):
        r = run("--schedule", "nope", "--devices", "2", "--microbatches", "2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("PSCHED_ENOTFOUND", r.stderr)


if __name__ == "__main__":
    RUNTIME, REFERENCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]], verbosity=2)
