#!/usr/bin/env python3
"""Proof by execution: the pipeline_runtime example trains a 16-layer MLP for
one step under every schedule, one thread per device (or, in TestMpi, one
MPI process per device), after comm lowering.

Usage: test_runtime.py PATH/TO/pipeline_runtime REFERENCE_DIR [TEST ...]
TestMpi runs mpirun from the environment variable PIPESCHED_MPIRUN (meson
sets it when the runtime was built with MPI).

Expected values come from the generators' documented constraints (which
grid points exist), closed forms with unit costs (1F1B's peak on device d is
min(m, p-d)), hand-derived op orders and the shared reference files; never
from the program's own earlier output.

Memory is in bytes, measured from the runtime's tensors: a tensor is
kRows x kWidth = 2 x 8 float64 values = 128 bytes; with L layers per stage an
F saves 2L + 1 tensors (each layer's input and output, the stage output), a
B adds L (pre-activation gradients), a W frees all 3L + 1.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

RUNTIME = None
REFERENCE = None

BUILTINS = ["gpipe", "1f1b", "interleaved", "looped-bfs", "v-zb", "dualpipev", "dualpipe",
            "chimera", "interleaved-zb", "zb-h1", "zb-h2", "zb", "v-half", "v-min"]


def run(*args):
    return subprocess.run([RUNTIME, *args], capture_output=True, text=True, timeout=120)


TENSOR = 2 * 8 * 8  # bytes


def f_bytes(layers):
    return (2 * layers + 1) * TENSOR


# Grid points p in {2,3,4}, v in {1..4}, m in {p, 2p, 3p+1} each generator's
# constraints accept ('pipesched list'):
#  v = 1 only (gpipe, 1f1b, zb-h1, zb-h2, zb): 3 p x 3 m = 9 each;
#  looped-bfs, v >= 1: 4 v x 9 = 36;
#  interleaved and interleaved-zb, v >= 2 and m mod p = 0 or >= p with the
#    default group size p: 3 v x 3 p x 2 m (3p+1 leaves remainder 1) = 18 each;
#  v-zb, v-half, v-min, v = 2: 9 each;
#  dualpipev, m >= 2p: 3 p x 2 m = 6;
#  dualpipe, p even, m even, m >= 2p: (p=2, m=4) and (p=4, m=8) = 2;
#  chimera, v = 2, p even, m a multiple of p: m in {p, 2p} for p in {2, 4} = 4.
EXPECTED_RUNS = {**{n: 9 for n in ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb",
                                   "v-zb", "v-half", "v-min"]},
                 "looped-bfs": 36, "interleaved": 18, "interleaved-zb": 18,
                 "dualpipev": 6, "dualpipe": 2, "chimera": 4}


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

    def check_grid(self, out, expected=None, grid_points=36):
        runs = {}
        lines = out.splitlines()
        for line in lines[:-1]:
            self.assertRegex(line, r"^ok   \S+ +p=\d v=\d m=\d+( via csv-comms)?: gradient diff 0, "
                                   r"peak bytes [\d ]+ = simulator$")
            runs[line.split()[1]] = runs.get(line.split()[1], 0) + 1
        # a generator registered later must pass too, with at least one run
        for name, n in (expected or EXPECTED_RUNS).items():
            self.assertEqual(runs.get(name, 0), n, name)
        m = re.fullmatch(r"(\d+) schedules executed \((\d+) grid points not accepted by "
                         r"their generator\): all match", lines[-1])
        self.assertIsNotNone(m, lines[-1])
        self.assertEqual(int(m.group(1)), sum(runs.values()))
        # 3 p x 4 v x 3 m = 36 grid points per registered generator (12 for one p)
        self.assertEqual((int(m.group(1)) // (2 if expected else 1) + int(m.group(2)))
                         % grid_points, 0)


class TestGrid(RuntimeCase):
    def test_every_generator_trains_like_the_reference_over_the_grid(self):
        self.assertEqual(sorted(EXPECTED_RUNS), sorted(BUILTINS))
        self.assertEqual(sum(EXPECTED_RUNS.values()), 156)
        self.check_grid(self.passes("--all"))

    def test_every_lowered_schedule_runs_from_its_csv_comms_file(self):
        # lowered, written as csv-comms ([a;b]BATCH groups, the chains
        # header), read back and executed as it is: no deadlock, same results
        out = self.passes("--all", "--via-csv")
        self.check_grid(out, {n: 2 * k for n, k in EXPECTED_RUNS.items()})
        self.assertEqual(out.count(" via csv-comms: gradient diff 0"), 156)

    def test_pytorch_comms_file_runs_as_it_is(self):
        out = self.passes("--csv", os.path.join(REFERENCE, "pytorch",
                                                "zb1p_2rank_2stagep_comms.csv"))
        self.assertIn("lowered: 80 compute ops, 96 comm ops, 0 batched groups", out)
        self.assertIn("max |pipelined - reference| = 0 ", out)

    def test_grid_also_matches_with_uneven_costs_and_comm_latency(self):
        # Costs move the comm ops and change the batched groups; the
        # gradients and the list-order memory peaks must not change.
        self.check_grid(self.passes("--all", "--cost", "1,2,1", "--comm", "0.5"))


class TestOneSchedule(RuntimeCase):
    def test_1f1b_prints_gradient_check_and_peak_next_to_the_simulator(self):
        out = self.passes("--schedule", "1f1b", "--devices", "4", "--microbatches", "8")
        self.assertTrue(out.startswith("OK   1f1b"), out)
        self.assertIn("gradients: max |pipelined - reference| = 0 over 1 chain", out)
        # 1F1B keeps min(m, p - d) micro-batches on device d, each an F of a
        # 4-layer stage: 9 tensors of 128 bytes = 1152 (BW frees what F saved)
        self.assertIn("peak activation bytes per device: runtime 4608 3456 2304 1152, "
                      "simulator 4608 3456 2304 1152", out)
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

    def test_chimera_replicas_sum_to_the_whole_batch_gradient(self):
        # Chimera's two pipelines are two replicas of one model; each device
        # sums its two stages' gradients. Per chain the gradients equal the
        # reference over that chain's m/2 micro-batches exactly; half their
        # sum equals the whole-batch (m) reference up to summation order.
        out = self.passes("--schedule", "chimera", "--devices", "4", "--microbatches", "8")
        self.assertIn("max |pipelined - reference| = 0 over 2 chains", out)
        m = re.search(r"replicas: max \|\(chain 0 \+ chain 1\)/2 - whole-batch reference\| = "
                      r"(\S+)\n", out)
        self.assertIsNotNone(m, out)
        self.assertLessEqual(float(m.group(1)), 1e-12)
        # the paper's activation memory, D/2 + 1 = 3 stage activations on the
        # end devices and D = 4 in the middle, of 4-layer stages (1152 bytes)
        self.assertEqual(3 * f_bytes(4), 3456)
        self.assertIn("runtime 3456 4608 4608 3456, simulator 3456 4608 4608 3456", out)

    def test_torchtitan_csv_runs_the_same_way(self):
        path = os.path.join(REFERENCE, "torchtitan", "custom_schedule.csv")
        if not os.path.exists(path):
            self.fail(f"reference file {path} is missing (tests/data/reference)")
        out = self.passes("--csv", path)
        self.assertIn("p=2 v=2 m=8", out)
        self.assertIn("max |pipelined - reference| = 0 ", out)
        # every device runs its 16 forwards (2 stages x 8, 4 layers each) before
        # any W, then one I adds its 4 pre-activation gradients before its W:
        # 16 x 1152 + 4 x 128 = 18944
        self.assertEqual(16 * f_bytes(4) + 4 * TENSOR, 18944)
        self.assertIn("runtime 18944 18944, simulator 18944 18944", out)


class TestVocab(RuntimeCase):
    """Vocabulary Parallelism (issue 19): the MLP ends in a softmax output
    layer of 3 classes per device split by shards; S and T passes and the
    collectives run on the threads, and the gradients of every layer and of
    the output layer equal the non-pipelined cross-entropy step's (up to the
    order of float64 sums: the shards' softmax statistics are merged), the
    peaks the simulator's with the logits held from S to T."""

    def test_1f1b_and_v_half_with_vocab_1_and_2_train_like_the_reference(self):
        for name in ("1f1b", "v-half"):
            for vocab in ("1", "2"):
                for p in (2, 3, 4):
                    for m in (p, 2 * p, 3 * p + 1):
                        with self.subTest(schedule=name, vocab=vocab, p=p, m=m):
                            out = self.passes("--schedule", name, "--vocab", vocab, "--devices",
                                              str(p), "--microbatches", str(m))
                            diff = float(re.search(r"max \|pipelined - reference\| = (\S+)",
                                                   out).group(1))
                            self.assertLessEqual(diff, 1e-12, out)
                            peaks = re.search(r"runtime ([\d ]+), simulator ([\d ]+)\n", out)
                            self.assertEqual(peaks.group(1), peaks.group(2), out)

    def test_vocab_2_holds_one_micro_batch_less_than_vocab_1(self):
        # 1F1B on 4 devices, m = 8: the first device holds p + 2 stage
        # activations under Vocab-1 and p + 1 under Vocab-2 (the paper's
        # figures). A 4-layer stage's F keeps 9 tensors of 128 bytes (1152);
        # an S pass keeps its logits, 2 rows x 3 classes of 8 bytes (48),
        # until its T pass.
        one = self.passes("--schedule", "1f1b", "--vocab", "1", "--devices", "4",
                          "--microbatches", "8")
        two = self.passes("--schedule", "1f1b", "--vocab", "2", "--devices", "4",
                          "--microbatches", "8")
        first = lambda out: int(re.search(r"runtime (\d+)", out).group(1))
        self.assertEqual(first(one) // 1152, 6)
        self.assertEqual(first(two) // 1152, 5)
        self.assertEqual(first(one) % 1152 % 48, 0)


class TestMemory(RuntimeCase):
    def test_zb_h1_measures_the_input_gradients_b_keeps_until_w(self):
        # ZB-H1 p = 2, m = 2, 8 layers per stage. Device 0 runs
        # 0F0 0F1 0I0 0W0 0I1 0W1: its peak is after 0I0, 2 F + 1 B; device 1
        # runs 1F0 1I0 1F1 1I1 1W0 1W1: after 1I1, 2 F + 2 B. Counting
        # records (+1 per F) would give 2 and 2.
        out = self.passes("--schedule", "zb-h1", "--devices", "2", "--microbatches", "2", "--show")
        self.assertIn("device 0: 0F0 0SEND_F0 0F1 {0SEND_F1;0RECV_B0} 0I0 0W0 0RECV_B1 0I1 0W1",
                      out)
        self.assertIn("device 1: 1RECV_F0 1F0 1I0 {1SEND_B0;1RECV_F1} 1F1 1I1 1SEND_B1 1W0 1W1",
                      out)
        d0, d1 = 2 * f_bytes(8) + 8 * TENSOR, 2 * f_bytes(8) + 2 * 8 * TENSOR
        self.assertIn(f"peak activation bytes per device: runtime {d0} {d1}, simulator {d0} {d1}\n",
                      out)

    def test_a_record_counting_memory_model_mismatches_the_measured_bytes(self):
        # --mem 1,0,-1 is the simulator's default (one unit per F): the
        # simulator then predicts records while the runtime measures bytes
        out = self.fails("--schedule", "1f1b", "--devices", "2", "--microbatches", "4",
                         "--mem", "1,0,-1")
        self.assertIn("gradients: max |pipelined - reference| = 0 ", out)
        # 1F1B p = 2 keeps 2 and 1 F of 8 layers: 2 x 2176 and 2176 bytes
        self.assertIn("peak activation bytes per device: runtime 4352 2176, simulator 2 1: "
                      "MISMATCH", out)

    def test_the_byte_model_given_by_hand_matches(self):
        # p = 2: 8 layers per stage, F = 17 tensors, B = 8, W = -25
        out = self.passes("--schedule", "1f1b", "--devices", "2", "--microbatches", "4",
                          "--mem", f"{f_bytes(8)},{8 * TENSOR},{-25 * TENSOR}")
        self.assertIn("runtime 4352 2176, simulator 4352 2176", out)


class TestOffload(RuntimeCase):
    """Activation offload (PipeOffload): OFFLOAD copies what an F saved into
    the runtime's host-side store and frees it on the device, RELOAD copies it
    back before the backward. The runtime copies in list order (each copy
    done before the next op), so its measured peak is compared with the
    simulator's under the byte model with copies taking no time."""

    def test_every_generator_trains_under_each_offload_policy(self):
        # --pcie-bandwidth 1 with unit costs: a copy takes 1 (one F's
        # activations per time unit); selective moves what lives >= 2
        for policy in (["all"], ["selective", "--pcie-bandwidth", "1"], ["budget=2"]):
            with self.subTest(policy=policy[0]):
                self.check_grid(self.passes("--all", "--offload", *policy))

    def test_offloaded_schedules_run_from_their_csv_comms_files(self):
        # lowered with the copies in place, written as csv-comms (OFFLOAD and
        # RELOAD cells beside SEND/RECV), read back and executed as it is
        out = self.passes("--all", "--via-csv", "--offload", "all")
        self.check_grid(out, {n: 2 * k for n, k in EXPECTED_RUNS.items()})
        self.assertEqual(out.count(" via csv-comms: gradient diff 0"), 156)

    def test_gpipe_holds_two_activations_instead_of_all(self):
        # GPipe p = 2, m = 4, 8 layers per stage (F = 17 tensors = 2176 bytes):
        # without offload each device holds all 4 F records, 8704 bytes.
        # Offloaded, an F's record leaves after it; RELOAD(k) comes one
        # compute op ahead of the backward of k (before F3 for k = 0), so
        # at most the reloaded record and the one just made are on the device:
        # 2 x 2176 = 4352. The host store holds F0..F2 before RELOAD0, then
        # F1..F3: 3 x 2176 = 6528.
        self.assertIn("runtime 8704 8704, simulator 8704 8704",
                      self.passes("--schedule", "gpipe", "--devices", "2", "--microbatches", "4"))
        out = self.passes("--schedule", "gpipe", "--devices", "2", "--microbatches", "4",
                          "--offload", "all", "--show")
        self.assertIn("device 0: 0F0 0OFFLOAD0 0SEND_F0 0F1 0OFFLOAD1 0SEND_F1 0F2 0OFFLOAD2 "
                      "0RELOAD0 0SEND_F2 0F3 0OFFLOAD3 0RELOAD1 0SEND_F3 0RECV_B0 0B0 ", out)
        # 8 (stage, micro-batch) pairs, an OFFLOAD and a RELOAD each
        self.assertIn("lowered: 16 compute ops, 16 comm ops, 0 batched groups, "
                      "16 activation copies (OFFLOAD/RELOAD)", out)
        self.assertIn("max |pipelined - reference| = 0 over 1 chain", out)
        self.assertIn("peak activation bytes per device: runtime 4352 4352, simulator 4352 4352\n",
                      out)
        self.assertIn("peak bytes in the host store (offloaded activations) per device: "
                      "6528 6528\n", out)

    def test_1f1b_offload_policies_by_hand(self):
        # 1F1B p = 4, m = 8, 4 layers per stage (F = 9 tensors = 1152 bytes):
        # the plain peak is min(m, p - d) records: 4608 3456 2304 1152.
        # all: a device holds the F running and the record reloaded for the
        # backward after it: 2 records (1 on the last device, whose
        # backward follows its F); the host store holds the warm-up F's
        # before the first RELOAD, p - 1 - d of them (1 on the last device).
        base = ["--schedule", "1f1b", "--devices", "4", "--microbatches", "8"]
        out = self.passes(*base, "--offload", "all")
        self.assertIn("64 activation copies", out)
        self.assertIn("runtime 2304 2304 2304 1152, simulator 2304 2304 2304 1152", out)
        self.assertIn("per device: 3456 2304 1152 1152\n", out)
        # selective at bandwidth 1 (a copy takes one F): the last device's
        # records live 0 < 2 copies and stay; 3 devices x 8 pairs x 2 copies
        out = self.passes(*base, "--offload", "selective", "--pcie-bandwidth", "1")
        self.assertIn("48 activation copies", out)
        self.assertIn("runtime 2304 2304 2304 1152, simulator 2304 2304 2304 1152", out)
        self.assertIn("per device: 3456 2304 1152 0\n", out)
        # budget=2 (units of one F's record): only devices 0 and 1 exceed it
        out = self.passes(*base, "--offload", "budget=2")
        self.assertIn("runtime 2304 2304 2304 1152, simulator 2304 2304 2304 1152", out)
        self.assertIn("per device: 3456 2304 0 0\n", out)

    def test_a_backward_before_its_reload_is_caught_twice(self):
        # p = 1, m = 1: 0F0 0OFFLOAD0 0B0 0RELOAD0 (PyTorch text: B = full
        # backward) -- the validator refuses it, and forced, the runtime stops
        # because the activations are still in the host store
        path = os.path.join(self.tmp, "reload_late.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("0F0,0OFFLOAD0,0B0,0RELOAD0\n")
        out = self.fails("--csv", path)
        self.assertIn("validator: PSCHED_EINVALID: device 0 op 2 (0B0): needs device 0 op 3 "
                      "(0RELOAD0), which comes later on the same device", out)
        out = self.fails("--csv", path, "--force")
        self.assertIn("runtime: device 0 op 2 (0B0): its activations are in the host store: "
                      "no RELOAD brought them back", out)

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()


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
        # the runtime stopped: no gradients were compared
        self.assertNotIn("gradients:", out)

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
        # the gradients alone fail it: without a simulated peak the memory
        # line is informative, not a check
        self.assertRegex(out, r"peak activation bytes per device: runtime \d+ \d+, simulator n/a "
                              r"\(invalid schedule\)\n")

    def test_forced_run_of_a_valid_schedule_passes(self):
        # --force changes nothing when the validator accepts: the forced
        # breakage runs above fail because of the damage, not because of --force
        self.passes("--schedule", "zb-h2", "--devices", "2", "--microbatches", "4", "--force")


def expected_runs_for(p):
    """Grid points of one p (v in 1..4, m in {p, 2p, 3p+1}) each generator
    accepts, as EXPECTED_RUNS sums them over p in {2, 3, 4}."""
    runs = {n: 3 for n in ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb", "v-zb", "v-half", "v-min"]}
    runs.update({"looped-bfs": 12, "interleaved": 6, "interleaved-zb": 6, "dualpipev": 2,
                 "dualpipe": 1 if p in (2, 4) else 0, "chimera": 2 if p in (2, 4) else 0})
    return runs


MPIRUN = os.environ.get("PIPESCHED_MPIRUN")


@unittest.skipUnless(MPIRUN, "PIPESCHED_MPIRUN is not set (runtime built without MPI)")
class TestMpi(RuntimeCase):
    """One MPI process per device (Open MPI, oversubscribed on small
    machines): every generator, p in {2, 3, 4}, directly and read back from
    its csv-comms file, and the reference CSVs; one mpirun per p."""

    def mpirun(self, p, *args):
        env = dict(os.environ)
        # Open MPI: more processes than cores, yield while waiting, and root
        # in containers; other MPIs ignore these variables
        env.update({"OMPI_MCA_rmaps_base_oversubscribe": "1",
                    "OMPI_MCA_mpi_yield_when_idle": "1",
                    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
        # Under AddressSanitizer (CI's asan-ubsan stage), Open MPI's own
        # allocations, kept until exit by the library and its dlopen'd
        # components, are reported as leaks; the runtime's code is
        # leak-checked by the thread backend's tests, which run the same
        # stage code. Every other ASan and UBSan check stays on.
        if "ASAN_OPTIONS" in env:
            env["ASAN_OPTIONS"] += ":detect_leaks=0"
        return subprocess.run([MPIRUN, "-np", str(p), RUNTIME, *args], capture_output=True,
                              text=True, timeout=300, env=env)

    def grid(self, p, *csvs):
        args = ["--all", "--via-csv"]
        for c in csvs:
            args += ["--csv", os.path.join(REFERENCE, c)]
        r = self.mpirun(p, *args)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        # the grid, then one block per CSV file
        end = next(i for i, line in enumerate(lines) if " schedules executed " in line)
        expected = {n: 2 * k for n, k in expected_runs_for(p).items()}  # direct + via csv-comms
        self.check_grid("\n".join(lines[:end + 1]), expected, 12)
        self.assertEqual(sum(" via csv-comms: " in line for line in lines[:end]),
                         sum(expected_runs_for(p).values()))
        return lines[end + 1:]

    def test_p2_every_generator_and_the_reference_csvs(self):
        rest = "\n".join(self.grid(2, "torchtitan/custom_schedule.csv",
                                   "pytorch/zb1p_2rank_2stagep_compute.csv",
                                   "pytorch/zb1p_2rank_2stagep_comms.csv"))
        self.assertEqual(rest.count("\nOK   ") + rest.startswith("OK   "), 3, rest)
        self.assertEqual(rest.count("max |pipelined - reference| = 0 "), 3, rest)
        self.assertIn("runtime 18944 18944, simulator 18944 18944", rest)
        # PyTorch's comms file runs as it is (no groups, and none needed)
        self.assertIn("lowered: 80 compute ops, 96 comm ops, 0 batched groups", rest)

    def test_p3_every_generator(self):
        self.assertEqual(self.grid(3), [])

    def test_p4_every_generator_and_dualpipev_reference(self):
        rest = "\n".join(self.grid(4, "pytorch/dualpipev_4rank_10mb.csv"))
        self.assertTrue(rest.startswith("OK   "), rest)
        self.assertIn("p=4 v=2 m=10", rest)

    def test_p3_every_generator_offloaded(self):
        # the host-side store is the same code on both backends
        r = self.mpirun(3, "--all", "--via-csv", "--offload", "selective", "--pcie-bandwidth", "1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_grid(r.stdout, {n: 2 * k for n, k in expected_runs_for(3).items()}, 12)

    def test_1f1b_offloaded_on_4_processes_matches_the_thread_backend_figures(self):
        r = self.mpirun(4, "--schedule", "1f1b", "--microbatches", "8", "--offload", "all")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("max |pipelined - reference| = 0 over 1 chain", r.stdout)
        self.assertIn("runtime 2304 2304 2304 1152, simulator 2304 2304 2304 1152", r.stdout)
        self.assertIn("(offloaded activations) per device: 3456 2304 1152 1152\n", r.stdout)

    def test_vocab_1_and_2_on_3_processes_match_the_thread_backend_figures(self):
        # collectives as MPI_Iallgather, posted where the list reaches them;
        # the same gradients (within 1e-12) and peaks as the threads
        for vocab in ("1", "2"):
            with self.subTest(vocab=vocab):
                r = self.mpirun(3, "--schedule", "1f1b", "--vocab", vocab, "--microbatches", "7")
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                threads = self.passes("--schedule", "1f1b", "--vocab", vocab, "--devices", "3",
                                      "--microbatches", "7")
                peaks = re.search(r"peak activation bytes per device: .*\n", threads).group(0)
                self.assertIn(peaks, r.stdout)
                diff = float(re.search(r"max \|pipelined - reference\| = (\S+)",
                                       r.stdout).group(1))
                self.assertLessEqual(diff, 1e-12)

    def test_1f1b_on_4_processes_matches_the_thread_backend_figures(self):
        r = self.mpirun(4, "--schedule", "1f1b", "--microbatches", "8")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("max |pipelined - reference| = 0 over 1 chain", r.stdout)
        self.assertIn("peak activation bytes per device: runtime 4608 3456 2304 1152, "
                      "simulator 4608 3456 2304 1152", r.stdout)

    def test_unbatched_sends_deadlock_and_the_watchdog_names_them(self):
        # MPI_Issend is synchronous: like NCCL, a send without its group waits
        r = self.mpirun(2, "--schedule", "1f1b", "--microbatches", "4", "--break", "unbatch",
                        "--force", "--timeout", "0.5")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("runtime: watchdog: no op completed for 0.5 s; waiting: "
                      "device 0 op 3 (0SEND_F1, send not matched); "
                      "device 1 op 3 (1SEND_B0, send not matched)", r.stdout)

    def test_w_before_b_stops_the_rank(self):
        r = self.mpirun(2, "--schedule", "zb-h1", "--microbatches", "4", "--break", "w-before-b",
                        "--force", "--timeout", "0.5")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("runtime: device 0 op 5 (0W0): W before its B", r.stdout)

    def test_swapped_sends_give_wrong_gradients(self):
        # interleaved-zb p=2 m=4 has a swappable send pair (1SEND_F2, 1SEND_B1);
        # zb-h2, in the zero-bubble authors' order, has none at that size.
        r = self.mpirun(2, "--schedule", "interleaved-zb", "--microbatches", "4", "--break",
                        "send-order", "--force")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"gradients: max \|pipelined - reference\| = \S+ .*: MISMATCH")

    def test_a_schedule_for_another_process_count_is_refused(self):
        r = self.mpirun(3, "--schedule", "1f1b", "--devices", "2", "--microbatches", "4")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("runtime: the schedule has 2 devices but mpirun started 3 processes", r.stdout)


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
                     ["--schedule", "1f1b", "--devices", "0", "--microbatches", "2"],
                     ["--all", "--offload", "some"], ["--all", "--offload", "budget=0"],
                     ["--all", "--offload", "budget=x"],
                     ["--all", "--offload", "all", "--pcie-bandwidth", "0"],
                     ["--all", "--pcie-bandwidth", "2"]]:
            r = run(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.startswith("pipeline_runtime: "), r.stderr)

    def test_unknown_schedule_exits_1_with_the_library_message(self):
        r = run("--schedule", "nope", "--devices", "2", "--microbatches", "2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("PSCHED_ENOTFOUND", r.stderr)


if __name__ == "__main__":
    # Further arguments name single cases (meson's runtime-break-* tests).
    RUNTIME, REFERENCE = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
