#!/usr/bin/env python3
"""The cost model extensions (issue 18) through the Python binding and the
command line. Expected values are the hand derivations of
tests/test_costmodel.c (comments there) and the DualPipe paper's bubble.

Environment: PIPESCHED_LIBRARY and PYTHONPATH as for test_python.py,
PIPESCHED_CLI = the built command-line tool.
"""
import json
import math
import os
import subprocess
import tempfile
import unittest

import pipesched

CLI = os.environ.get("PIPESCHED_CLI", "")


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)


def simulate_json(*args):
    r = cli("simulate", "--json", *args)
    if r.returncode != 0:
        raise AssertionError(f"{args}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


class TestPython(unittest.TestCase):
    def test_overlap_saving(self):
        plan = pipesched.Plan(devices=8, microbatches=32)
        self.assertEqual(pipesched.generate("dualpipev", plan).simulate().span, 206)
        self.assertIs(plan.set_overlap_saving(0.5), plan)
        self.assertEqual(plan.overlap_saving(0), 0.5)
        self.assertEqual(pipesched.generate("dualpipev", plan).simulate().span, 179)
        with self.assertRaises(pipesched.InvalidArgument) as e:
            plan.set_overlap_saving(1.5, stage=2)
        self.assertIn("must be <= min(t_F, t_B) = 1", str(e.exception))

    def test_weights(self):
        plan = pipesched.Plan(devices=2, microbatches=3)
        plan.set_microbatch_weights([1, 4, 1])
        self.assertEqual(plan.microbatch_weight(1), 4)
        self.assertEqual(pipesched.generate("1f1b", plan).simulate().makespan, 27)
        plan.set_microbatch_weights(None)
        self.assertEqual(pipesched.generate("1f1b", plan).simulate().makespan, 12)
        with self.assertRaises(pipesched.InvalidArgument):
            plan.set_microbatch_weights([1, 2])

    def test_links(self):
        plan = pipesched.Plan(devices=2, microbatches=3)
        plan.set_comm_bytes(4, 0).set_topology(1, intra=(1, 9), inter=(2, 0.5))
        self.assertEqual(plan.comm_bytes(1), (4, 0))
        self.assertEqual(plan.topology(), (1, (1, 9), (2, 0.5)))
        self.assertEqual(pipesched.generate("gpipe", plan).simulate().makespan, 17)

    def test_offload(self):
        # tests/test_offload.c: selective offload of 1f1b p=8 m=32 at PCIe
        # bandwidth 1 = mem_F / t_F keeps the step time 117, peak M/4
        plan = pipesched.Plan(devices=8, microbatches=32).set_pcie_bandwidth(1)
        self.assertEqual(plan.pcie_bandwidth(), 1)
        s = pipesched.generate("1f1b", plan).offload("selective")
        rep = s.simulate()
        self.assertEqual(rep.makespan, 117)
        self.assertEqual(rep.peak_memory_M, 0.25)
        ops = s.ops(0)
        self.assertEqual([o.kind for o in ops[:3]], ["F", "OFFLOAD", "F"])
        with self.assertRaises(pipesched.Unsupported) as e:
            s.to_pytorch_actions()
        self.assertIn("OFFLOAD/RELOAD are pipesched's own op kinds", str(e.exception))
        with self.assertRaises(pipesched.InvalidArgument):
            pipesched.generate("1f1b", plan).offload("some")
        budget = pipesched.generate("1f1b", plan).offload("budget", budget=3).simulate()
        self.assertLessEqual(max(budget.peak_memory), 3)

    def test_vocabulary_parallelism(self):
        # tests/test_collective.c and docs/schedules.md: 1F1B with vocab at
        # unit costs and free passes keeps the span (m + p - 1)·3 = 117 and
        # holds p + 1 (Vocab-2) and p + 2 (Vocab-1) activations on device 0
        plan = pipesched.Plan(devices=8, microbatches=32, options={"vocab": 2})
        plan.set_vocab_cost(0, 0).set_vocab_mem(0.5, -0.5).set_collective_bytes(1, 64)
        self.assertEqual(plan.vocab_cost(), (0, 0))
        self.assertEqual(plan.vocab_mem(), (0.5, -0.5))
        self.assertEqual(plan.collective_bytes(1), 64)
        self.assertEqual(plan.collective_bytes(0), 0)
        s = pipesched.generate("1f1b", plan)
        self.assertIn("COLLECTIVE", [o.kind for o in s.ops(0)])
        self.assertEqual(sum(o.kind == "VOCAB_S" for o in s.ops(3)), 32)
        rep = s.simulate()
        self.assertEqual(rep.span, 117)
        self.assertEqual(rep.peak_memory[0], 9 + 0.5)
        v1 = pipesched.generate("1f1b", pipesched.Plan(devices=8, microbatches=32,
                                                       options={"vocab": 1})).simulate()
        self.assertEqual(v1.peak_memory[0], 10)
        with self.assertRaises(pipesched.Unsupported) as e:
            s.to_pytorch_actions()
        self.assertIn("VOCAB_S, VOCAB_T and COLLECTIVE are pipesched's own op kinds",
                      str(e.exception))
        back = pipesched.from_csv(s.to_csv())
        self.assertEqual(back.hash, s.hash)


@unittest.skipUnless(CLI, "PIPESCHED_CLI is not set")
class TestCli(unittest.TestCase):
    DUALPIPEV = ["--schedule", "dualpipev", "--devices", "8", "--microbatches", "32"]

    def test_overlap_shows_the_smaller_bubble(self):
        plain = simulate_json(*self.DUALPIPEV)
        saved = simulate_json(*self.DUALPIPEV, "--overlap", "0.5")
        self.assertEqual(plain["span"], 206)
        self.assertEqual(saved["span"], 179)
        # the bubble of the last device: (PP/2 - 1)(F&B + B - 3W) = 7 * 2,
        # then 7 * 1.5 with F&B = F + B - s
        self.assertEqual(plain["idle"][7], 14)
        self.assertEqual(saved["idle"][7], 10.5)
        self.assertLess(saved["bubble_ratio"], plain["bubble_ratio"])

    def test_overlap_out_of_range_is_refused(self):
        r = cli("simulate", *self.DUALPIPEV, "--overlap", "1.5")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--overlap", r.stderr)
        self.assertIn("must be <= min(t_F, t_B) = 1", r.stderr)
        r = cli("simulate", *self.DUALPIPEV, "--overlap", "x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--overlap 'x'", r.stderr)

    def test_microbatch_weights_list_and_file(self):
        base = ["--schedule", "1f1b", "--devices", "2", "--microbatches", "3"]
        rep = simulate_json(*base, "--microbatch-weights", "1,4,1")
        self.assertEqual(rep["makespan"], 27)
        self.assertEqual(rep["peak_memory"], [5, 4])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "w.txt")
            with open(path, "w") as f:
                f.write("# seq lengths / 512\n1\n4\n1\n")
            self.assertEqual(simulate_json(*base, "--microbatch-weights", path)["makespan"], 27)
        r = cli("simulate", *base, "--microbatch-weights", "1,4")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected 3 weights (one per micro-batch), got 2", r.stderr)
        r = cli("simulate", *base, "--microbatch-weights", "1,0,1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("weight 1 '0' is not a finite number > 0", r.stderr)

    def test_comm_bytes_and_topology(self):
        base = ["--schedule", "gpipe", "--devices", "2", "--microbatches", "3"]
        rep = simulate_json(*base, "--comm-bytes", "4,0", "--intra-node", "1")
        self.assertEqual(rep["makespan"], 22)
        rep = simulate_json(*base, "--comm-bytes", "4,0", "--devices-per-node", "1",
                            "--intra-node", "1,9", "--inter-node", "2,0.5")
        self.assertEqual(rep["makespan"], 17)
        r = cli("simulate", *base, "--inter-node", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--inter-node '0'", r.stderr)

    def test_costs_file_overlap_and_bytes_columns(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "costs.csv")
            with open(path, "w") as f:
                f.write("stage,F,B,W,mem_F,mem_B,mem_W,overlap,bytes_F,bytes_B\n"
                        "0,1,1,1,1,0,-1,0,4,0\n")
            base = ["--schedule", "gpipe", "--devices", "2", "--microbatches", "3"]
            rep = simulate_json(*base, "--costs-file", path, "--intra-node", "1")
            self.assertEqual(rep["makespan"], 22)
            with open(path, "w") as f:
                f.write("0,1,1,1,1,0,-1,2\n")
            r = cli("simulate", *base, "--costs-file", path)
            self.assertEqual(r.returncode, 2)
            self.assertIn("overlap_saving of stage 0 (2)", r.stderr)

    def test_offload_selective_lowers_the_peak(self):
        base = ["--schedule", "1f1b", "--devices", "8", "--microbatches", "32"]
        plain = simulate_json(*base)
        rep = simulate_json(*base, "--offload", "selective", "--pcie-bandwidth", "1")
        self.assertEqual(plain["peak_memory_M"], 1)
        self.assertEqual(rep["peak_memory_M"], 0.25)
        self.assertEqual(rep["makespan"], 117)
        slow = simulate_json(*base, "--offload", "selective", "--pcie-bandwidth", "0.5")
        self.assertGreater(slow["makespan"], 117)
        r = cli("generate", "--schedule", "1f1b", "--devices", "2", "--microbatches", "2",
                "--offload", "all", "--pcie-bandwidth", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "0F0,0OFFLOAD0,0RELOAD0,0F1,0OFFLOAD1,0RELOAD1,0B0,0B1\n"
                                   "1F0,1OFFLOAD0,1RELOAD0,1B0,1F1,1OFFLOAD1,1RELOAD1,1B1\n")
        r = cli("simulate", *base, "--offload", "half")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--offload 'half': expected all, selective or budget=X", r.stderr)


if __name__ == "__main__":
    unittest.main()
