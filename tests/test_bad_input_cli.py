#!/usr/bin/env python3
"""Bad input through the command-line tool.

Usage: test_bad_input_cli.py PATH/TO/pipesched

Every case is one invocation with one bad value. The tool must exit with
the case's status (2: bad usage or input; 1: the request cannot be met),
print exactly one line "pipesched: ..." on stderr that names the offending
value, print nothing on stdout, never show a stack trace or a sanitizer
report, and with --output leave neither the output file nor a temporary
file behind.
"""
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = None

PLAN = ["--schedule", "1f1b", "--devices", "2", "--microbatches", "4"]
PROFILE_HEADER = b"type,count,f,b,w,act,param\n"
TEN_MB = 10 << 20


def run(args, stdin=None):
    """`stdin` is bytes, or an open file such as /dev/zero."""
    if hasattr(stdin, "read"):
        return subprocess.run([TOOL, *args], stdin=stdin, capture_output=True, timeout=120)
    return subprocess.run([TOOL, *args], input=stdin, capture_output=True, timeout=120)


class BadInput(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.addCleanup(self._dir.cleanup)
        self.dir = self._dir.name

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def check_failure(self, args, code, names, stdin=None):
        """One clean failure: exit `code`, empty stdout, one stderr line
        "pipesched: ..." containing `names`."""
        r = run(args, stdin)
        stderr = r.stderr.decode("utf-8", "replace")
        self.assertEqual(r.returncode, code, f"{args}: stderr {stderr!r}")
        self.assertEqual(r.stdout, b"", f"{args}: printed on stdout")
        lines = stderr.splitlines()
        self.assertEqual(len(lines), 1, f"{args}: stderr {stderr!r}")
        self.assertTrue(lines[0].startswith("pipesched: "), lines[0])
        for marker in ("Traceback", "Sanitizer", "Segmentation", "core dumped", "Aborted"):
            self.assertNotIn(marker, stderr)
        self.assertIn(names, lines[0])
        return lines[0]

    def check_case(self, args, code, names, stdin=None):
        """The failure, and again with --output into an empty directory
        (for commands that write one): nothing may appear there."""
        self.check_failure(args, code, names, stdin)
        if args[0] != "generate":
            return
        out_dir = os.path.join(self.dir, "out")
        os.mkdir(out_dir)
        self.check_failure([*args, "--output", os.path.join(out_dir, "result.txt")], code,
                           names, stdin)
        self.assertEqual(os.listdir(out_dir), [], "a partial or temporary file was left")
        os.rmdir(out_dir)


# (what, args, exit status, text the message must contain)
VALUE_CASES = [
    ("devices 0", ["generate", "--schedule", "1f1b", "--devices", "0", "--microbatches", "4"],
     2, "'0'"),
    ("devices 2^31", ["generate", "--schedule", "1f1b", "--devices", "2147483648",
                      "--microbatches", "4"], 2, "'2147483648'"),
    ("devices 2^32", ["generate", "--schedule", "1f1b", "--devices", "4294967296",
                      "--microbatches", "4"], 2, "'4294967296'"),
    ("devices negative", ["generate", "--schedule", "1f1b", "--devices", "-2",
                          "--microbatches", "4"], 2, "'-2'"),
    ("microbatches 0", ["generate", "--schedule", "1f1b", "--devices", "2",
                        "--microbatches", "0"], 2, "'0'"),
    ("microbatches 2^31", ["generate", "--schedule", "1f1b", "--devices", "2",
                           "--microbatches", "2147483648"], 2, "'2147483648'"),
    ("chunks 2^31", [*PLAN, "--chunks", "2147483648"], 2, "2147483648"),
    ("chimera m not a multiple of p", ["generate", "--schedule", "chimera", "--devices", "4",
                                       "--microbatches", "6"], 2,
     "microbatches (6) must be a multiple of devices (4) for chimera"),
    ("vocab 3", ["generate", *PLAN, "--vocab", "3"], 2, "--vocab '3'"),
    ("vocab on gpipe", ["generate", "--schedule", "gpipe", "--devices", "2",
                        "--microbatches", "4", "--vocab", "1"], 2,
     "option \"vocab\" is not an option of gpipe"),
    ("vocab with --input", ["simulate", "--input", "-", "--vocab", "1"], 2,
     "--vocab is a generator option"),
    ("vocab-cost one value", ["generate", *PLAN, "--vocab-cost", "1"], 2, "--vocab-cost '1'"),
    ("vocab-cost negative", ["generate", *PLAN, "--vocab-cost", "1,-1"], 2,
     "--vocab-cost '1,-1'"),
    ("vocab-mem NaN", ["generate", *PLAN, "--vocab-mem", "nan,0"], 2, "--vocab-mem 'nan,0'"),
    ("collective-bytes nine", ["generate", *PLAN, "--collective-bytes", "1,1,1,1,1,1,1,1,1"], 2,
     "--collective-bytes '1,1,1,1,1,1,1,1,1'"),
    ("model missing file", ["simulate", *PLAN, "--model", "/nonexistent/profile.csv"], 2,
     "/nonexistent/profile.csv"),
    ("op count over 2^31", ["generate", "--schedule", "gpipe", "--devices", "1024",
                            "--microbatches", "2097152"], 2,
     "3 x stages (1024) x microbatches (2097152)"),
    ("op count at the limits", ["generate", "--schedule", "looped-bfs", "--devices", "65536",
                                "--microbatches", "16777216", "--chunks", "1024"], 2,
     "stages (67108864) x microbatches (16777216)"),
    ("offloaded schedule in PyTorch's compute_comms dialect",
     [*PLAN, "--offload", "all", "--format", "csv-comms", "--pytorch"], 2, "0OFFLOAD0"),
    ("cost NaN", ["generate", *PLAN[0:], "--cost", "nan,1,1"], 2, "'nan,1,1'"),
    ("cost infinite", ["generate", *PLAN, "--cost", "1,inf,1"], 2, "'1,inf,1'"),
    ("cost negative", ["generate", *PLAN, "--cost", "1,1,-1"], 2, "'1,1,-1'"),
    ("cost with two values", ["generate", *PLAN, "--cost", "1,1"], 2, "'1,1'"),
    ("memory delta NaN", ["generate", *PLAN, "--mem", "1,nan,-1"], 2, "'1,nan,-1'"),
    ("comm negative", ["generate", *PLAN, "--comm", "-1"], 2, "'-1'"),
    ("memory limit 0", ["generate", *PLAN, "--mem-limit", "0"], 2,
     "--mem-limit '0': must be a finite number > 0 (bytes or memory units)"),
    ("memory limit 0, simulate", ["simulate", *PLAN, "--mem-limit", "0"], 2,
     "--mem-limit '0': must be a finite number > 0 (bytes or memory units)"),
    ("memory limit negative", ["generate", *PLAN, "--mem-limit", "-5"], 2,
     "--mem-limit '-5': must be a finite number > 0 (bytes or memory units)"),
    ("unknown schedule", ["generate", "--schedule", "1f1c", "--devices", "2",
                          "--microbatches", "4"], 2, '"1f1c"'),
    ("unknown format", ["generate", *PLAN, "--format", "xml"], 2, "xml"),
    ("unknown flag", ["generate", *PLAN, "--colour"], 2, "--colour"),
    ("unknown command", ["frobnicate"], 2, "frobnicate"),
    ("chunks 1f1b cannot use", ["generate", *PLAN, "--chunks", "2"], 2,
     "chunks (2) must be 1"),
    ("placement 1f1b cannot use", ["validate", "-", "--placement", "diagonal"], 2, "diagonal"),
    ("zb: deltas that do not sum to zero under a limit",
     ["generate", "--schedule", "zb", "--devices", "2", "--microbatches", "8",
      "--mem", "1,0,0", "--mem-limit", "4"], 1, "memory limit (4)"),
    ("simulate: memory limit below the peak",
     ["simulate", *PLAN, "--mem-limit", "1"], 1, "1"),
]


class TestBadValues(BadInput):
    def test_every_bad_value_fails_cleanly_and_names_it(self):
        for what, args, code, names in VALUE_CASES:
            if args[0] not in ("generate", "simulate", "validate", "frobnicate"):
                args = ["generate", *args]
            with self.subTest(what):
                self.check_case(args, code, names, stdin=b"0F0,0B0\n")


class TestBadFiles(BadInput):
    def costs_case(self, data, names, code=2):
        path = self.write("costs.csv", data)
        self.check_case(["generate", *PLAN, "--costs-file", path], code, names)

    def validate_case(self, data, names, code=2):
        path = self.write("schedule.csv", data)
        self.check_failure(["validate", path], code, names)
        # the same through standard input
        self.check_failure(["validate", "-"], code, names, stdin=data)

    def partition_case(self, data, names, code=2):
        path = self.write("model.csv", data)
        self.check_failure(["partition", "--model", path, "--devices", "2", "--microbatches",
                            "4", "--schedule", "1f1b", "--method", "even"], code, names)

    def test_files_that_do_not_exist(self):
        missing = os.path.join(self.dir, "missing.csv")
        self.check_case(["generate", *PLAN, "--costs-file", missing], 2, missing)
        self.check_failure(["validate", missing], 2, missing)
        self.check_failure(["partition", "--model", missing, "--devices", "2",
                            "--microbatches", "4", "--schedule", "1f1b"], 2, missing)

    def test_a_directory_as_input(self):
        self.check_failure(["validate", self.dir], 2, self.dir)

    def test_costs_file_bad_values(self):
        self.costs_case(b"0,nan,1,1\n", "'nan'")
        self.costs_case(b"0,1,inf,1\n", "'inf'")
        self.costs_case(b"1,1,1,-2\n", "'-2'")
        self.costs_case(b"2,1,1,1\n", "stage 2 out of range")
        self.costs_case(b"0,1,1,1\n4294967296,1,1,1\n", "'4294967296'")
        self.costs_case(b"0,1,1\n", "got 3")

    def test_costs_file_first_row_with_a_stage_beyond_32_bits(self):
        path = self.write("costs.csv", b"4294967296,1,1,1\n")
        self.costs_case(b"4294967296,1,1,1\n", "'4294967296'")

    def test_costs_file_bad_bytes(self):
        self.costs_case(b"0,1,1,1\n1,1\x00,1,1\n", "NUL byte")
        self.costs_case(b"0,1,1,1\n1,\xff\xfe,1,1\n", ":2:")
        self.costs_case(b"0,1,1,1\n1,1,", ":2:")  # truncated
        self.costs_case(b"0," + b"1" * TEN_MB + b",1,1\n", ":1:")

    def test_schedule_csv_bad_bytes(self):
        self.validate_case(b"", "empty input")
        self.validate_case(b"0F0,0B0\n1F0,\xff\xfe\n", "line 2 column 5")
        self.validate_case(b"0F0\x00,0B0\n", "NUL byte at byte offset 3 (line 1, column 4)")
        self.validate_case(b"0F0,0I0,0W0\n1F", "line 2 column 3")
        self.validate_case(b"0" * TEN_MB + b"\n", "line 1 column 10485761")
        self.validate_case(b"4294967296F0\n", "does not fit in 32 bits")
        self.validate_case(b"1023F0,0F699051\n", "stages (1024) x microbatches (699052)")

    def test_invalid_schedule_is_status_1(self):
        # well-formed, but 0B0 never runs on stage 0
        self.validate_case(b"0F0\n", "0I0 is missing", code=1)

    def test_layer_profile_bad_input(self):
        self.partition_case(b"", "no header row")
        self.partition_case(PROFILE_HEADER + b"layer,2,nan,1,1,1,1\n", '"nan"')
        self.partition_case(PROFILE_HEADER + b"layer,2,1,inf,1,1,1\n", '"inf"')
        self.partition_case(PROFILE_HEADER + b"layer,2,1,1,-3,1,1\n", '"-3"')
        self.partition_case(PROFILE_HEADER + b"layer,0,1,1,1,1,1\n", "got 0")
        self.partition_case(PROFILE_HEADER + b"layer,2,1,1", "row has 4 cells")
        self.partition_case(PROFILE_HEADER + b"x" * TEN_MB + b",1,1,1,1,1,1\n",
                            "type must have 1..31 characters")
        self.partition_case(PROFILE_HEADER + b"lay\xff,2,1,1,1,1,1\n", "line 2")

    def test_optimizer_microbatch_weights_bad_input(self):
        path = self.write("model.csv", PROFILE_HEADER + b"layer,2,1,1,1,1,1\n")
        missing = os.path.join(self.dir, "no-weights.txt")
        for weights, names in (("1,0,1,1", "weight 1 '0' is not a finite number > 0"),
                               ("1,1", "expected 4 weights (one per micro-batch), got 2"),
                               (missing, missing)):
            for cmd, pick in (("partition", "--schedule"), ("plan", "--schedules")):
                with self.subTest(command=cmd, weights=weights):
                    self.check_failure([cmd, "--model", path, "--devices", "2",
                                        "--microbatches", "4", pick, "1f1b", "--mem-limit",
                                        "1e9", "--microbatch-weights", weights], 2, names)

    def test_layer_profile_nul_byte(self):
        data = PROFILE_HEADER + b"lay\x00er,2,1,1,1,1,1\n"
        self.partition_case(data, "NUL byte at byte offset 30 (line 2, column 4)")


class TestIssue12Findings(BadInput):
    """Issue 12 items 1, 2 and 6 as the tool shows them: each command of the
    issue's reproductions now fails cleanly with the message naming the
    value and the rule (before: SIGSEGV, uninitialised reads, a misleading
    "infeasible" table)."""

    def profile(self, rows):
        return self.write("model.csv", PROFILE_HEADER + rows)

    def test_layer_counts_past_the_partitioner_limit(self):
        # item 1: L + 1 wrapped to 0 in uint32 and the partitioner crashed
        for rows in (b"layer,4294967295,1,1,1,1e8,1e9\n",
                     b"layer,4294967294,1,1,1,1e8,1e9\nhead,1,1,1,1,1,1\n"):
            model = self.profile(rows)
            shape = ["--model", model, "--devices", "4", "--microbatches", "8",
                     "--mem-limit", "80e9"]
            with self.subTest(rows=rows):
                self.check_failure(["partition", *shape, "--schedule", "1f1b"], 2,
                                   "partition: the model has 4294967295 layers; the "
                                   "partitioner handles at most 100000")
                self.check_failure(["plan", *shape], 2,
                                   "plan: the model has 4294967295 layers; the partitioner "
                                   "handles at most 100000")
        model = self.profile(b"layer,4294967295,1,1,1,1e8,1e9\nhead,2,1,1,1,1,1\n")
        self.check_failure(["partition", "--model", model, "--devices", "2", "--microbatches",
                            "4", "--schedule", "1f1b"], 2,
                           "line 3, column 6: total layer count exceeds 4294967295")

    def test_costs_whose_sums_overflow(self):
        # item 2: zb read uninitialised memory when every span was infinite
        zb = ["--schedule", "zb", "--devices", "4", "--microbatches", "8"]
        rule = "is too large: devices (4) x (stages (4) x microbatches (8) x (F + B + W) + " \
               "2 x stages x microbatches x comm) overflows to infinity"
        self.check_case(["simulate", *zb, "--cost", "1e308,1e308,1e308"], 2,
                        "F cost of stage 0 (1e+308) " + rule)
        self.check_case(["generate", *zb, "--cost", "1e308,1e308,1e308"], 2,
                        "F cost of stage 0 (1e+308) " + rule)
        self.check_case(["simulate", *zb, "--comm", "1e308"], 2,
                        "comm latency (1e+308) " + rule)
        costs = self.write("costs.csv", b"2,1e307,1e307,1e307\n")
        self.check_case(["simulate", *zb, "--costs-file", costs], 2,
                        "F cost of stage 2 (1e+307) " + rule)

    def test_layer_times_whose_sums_overflow(self):
        # item 6: every row said "infeasible (needs 280)", with or without a limit
        model = self.profile(b"layer,8,1e308,1e308,1e308,1,1\n")
        shape = ["--model", model, "--devices", "4", "--microbatches", "8"]
        self.check_failure(["plan", *shape, "--mem-limit", "1e9"], 2,
                           "plan: the model's times overflow: 8 layers sum to inf (f+b+w), "
                           "times m + 4p; scale the times down")
        self.check_failure(["partition", *shape, "--schedule", "1f1b"], 2,
                           "partition: the model's times overflow: 8 layers sum to inf")


MEM_LIMIT_RULE = "must be a finite number > 0 (bytes or memory units)"
GIB = 1 << 30
TABLE_CAP = 16 << 20


class TestBoundedReads(BadInput):
    """Issue 12 item 4: no read without a bound. Every case stops after the
    first 64 KiB chunk (or before reading, from the file size), so each
    runs in milliseconds whatever the source could still deliver."""

    def model_args(self, path):
        return ["partition", "--model", path, "--devices", "2", "--microbatches", "4",
                "--schedule", "1f1b", "--method", "even"]

    def test_dev_zero_stops_at_the_first_nul(self):
        want = "/dev/zero: NUL byte at byte offset 0 (line 1, column 1): not a text file"
        self.check_failure(["validate", "/dev/zero"], 2, want)
        self.check_failure(["simulate", "--input", "/dev/zero"], 2, want)
        self.check_failure(["generate", *PLAN, "--costs-file", "/dev/zero"], 2, want)
        self.check_failure(self.model_args("/dev/zero"), 2, want)
        self.check_failure(["plan", "--model", "/dev/zero", "--devices", "2", "--microbatches",
                            "4", "--mem-limit", "1e9"], 2, want)

    def test_standard_input_from_dev_zero(self):
        want = "standard input: NUL byte at byte offset 0 (line 1, column 1)"
        for args in (["validate", "-"], ["hash", "--input", "-"],
                     ["simulate", *PLAN, "--costs-file", "-"], self.model_args("-")):
            with self.subTest(args=args), open("/dev/zero", "rb") as zero:
                self.check_failure(args, 2, want, stdin=zero)

    def test_a_nul_after_text_names_its_offset(self):
        data = b"0F0,0I0,0W0\n" * 10000 + b"\x00"
        self.check_failure(["validate", "-"], 2,
                           "NUL byte at byte offset 120000 (line 10001, column 1)", stdin=data)

    def test_control_bytes_are_not_text(self):
        path = self.write("s.csv", b"0F0,\x01\n")
        self.check_failure(["validate", path], 2,
                           "control byte 0x01 at byte offset 4 (line 1, column 5): not a text")

    def sparse(self, name, size):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.truncate(size)
        return path

    def test_oversized_files_are_refused_from_their_size(self):
        # sparse files: no disk space, and the size check reads nothing
        big = self.sparse("big.csv", GIB + 1)
        self.check_failure(["validate", big], 2, big + ": larger than the 1 GiB input cap")
        self.check_failure(["generate", "--input", big], 2, "larger than the 1 GiB input cap")
        costs = self.sparse("costs.csv", TABLE_CAP + 1)
        self.check_failure(["simulate", *PLAN, "--costs-file", costs], 2,
                           costs + ": larger than the 16 MiB input cap")
        model = self.sparse("model.csv", TABLE_CAP + 1)
        self.check_failure(self.model_args(model), 2, "larger than the 16 MiB input cap")

    def test_oversized_standard_input_stops_at_the_cap(self):
        data = b"#" * TABLE_CAP + b"\n"
        self.check_failure(["simulate", *PLAN, "--costs-file", "-"], 2,
                           "standard input: larger than the 16 MiB input cap", stdin=data)

    def test_files_at_the_cap_are_read(self):
        # a comment line filling the costs cap exactly is still a valid file
        path = self.write("costs.csv", b"#" * (TABLE_CAP - 1) + b"\n")
        r = run(["simulate", *PLAN, "--costs-file", path])
        self.assertEqual(r.returncode, 0, r.stderr)


class TestMessages(BadInput):
    """Issue 12 item 6, the messages the tool writes itself."""

    def test_mem_limit_rule_is_the_same_in_every_command(self):
        model = self.write("m.csv", PROFILE_HEADER + b"layer,4,1,1,1,1,1\n")
        for args in (["simulate", *PLAN], ["bound", *PLAN], ["validate", *PLAN],
                     ["partition", "--model", model, "--devices", "2", "--microbatches", "4",
                      "--schedule", "1f1b"],
                     ["plan", "--model", model, "--devices", "2", "--microbatches", "4"]):
            with self.subTest(command=args[0]):
                self.check_failure([*args, "--mem-limit", "0"], 2,
                                   "--mem-limit '0': " + MEM_LIMIT_RULE)

    def test_all_zero_model_prints_no_nan(self):
        model = self.write("zero.csv", PROFILE_HEADER + b"layer,4,0,0,0,0,0\n")
        shape = ["--model", model, "--devices", "2", "--microbatches", "4"]
        for args in (["partition", *shape, "--schedule", "1f1b"],
                     ["plan", *shape, "--mem-limit", "10", "--schedules", "1f1b"]):
            with self.subTest(command=args[0]):
                r = run(args)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotIn(b"nan", r.stdout.lower())
                self.assertIn(b"(speed-up -)", r.stdout)

    def test_plan_with_more_devices_than_layers_names_the_cause(self):
        model = self.write("two.csv", PROFILE_HEADER + b"layer,2,1,1,1,1,1\n")
        r = run(["plan", "--model", model, "--devices", "4", "--microbatches", "4",
                 "--mem-limit", "1e9", "--schedules", "1f1b"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(b"no plan: no candidate could be partitioned (1f1b, v = ", r.stdout)
        self.assertNotIn(b"fits the memory limit", r.stdout)

    def test_byte_order_mark_is_dropped_from_every_input(self):
        bom = b"\xef\xbb\xbf"
        # costs file without a header: the first row is data, not a header
        costs = self.write("costs.csv", bom + b"1,3,3,3\n")
        r = run(["simulate", *PLAN, "--costs-file", costs, "--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        # 1F1B p = 2, m = 4 with stage 1 at 3 + 6 per micro-batch: 36 busy
        self.assertIn(b'"busy": [12, 36]', r.stdout)
        r = run(["validate", "-", "--json"], stdin=bom + b"0F0,0I0,0W0\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        model = self.write("m.csv", bom + PROFILE_HEADER + b"layer,2,1,1,1,1,1\n")
        r = run(["partition", "--model", model, "--devices", "2", "--microbatches", "4",
                 "--schedule", "1f1b", "--method", "even"])
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_cr_only_line_endings_are_explained(self):
        why = "carriage return without a line feed at byte offset 7 (line 1): lines end " \
              "with LF or CR LF"
        costs = self.write("costs.csv", b"0,1,1,1\r1,1,1,1\r")
        self.check_failure(["simulate", *PLAN, "--costs-file", costs], 2, why)
        self.check_failure(["validate", "-"], 2, why, stdin=b"0F0,0B0\r1F0,1B0\r")
        self.check_failure(["validate", "-"], 2, "byte offset 11 (line 1)",
                           stdin=b"0F0,0I0,0W0\r")
        # CR LF is fine
        r = run(["validate", "-"], stdin=b"0F0,0I0,0W0\r\n")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_messages_escape_bytes_a_terminal_cannot_show(self):
        r = subprocess.run([TOOL.encode(), b"simulate", b"--schedule", b"1f1b", b"--devices",
                            b"\x01\x1b[31m\xff", b"--microbatches", b"4"],
                           capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 2)
        line = r.stderr.decode("utf-8")  # valid UTF-8: strict decoding
        self.assertEqual(line, "pipesched: --devices '\\x01\\x1b[31m\\xff': expected an integer "
                               "in 1..65536\n")
        path = os.path.join(self.dir.encode(), b"caf\xc3\xa9\x07.csv")
        r = run(["validate", path])
        self.assertIn("café\\x07.csv", r.stderr.decode("utf-8"))

    def test_long_messages_stay_under_300_characters(self):
        r = run(["simulate", "--schedule", "1f1b", "--devices", "9" * 5000,
                 "--microbatches", "4"])
        line = r.stderr.decode("utf-8").rstrip("\n")
        self.assertLess(len(line), 300)
        self.assertTrue(line.startswith("pipesched: --devices '999"), line)
        self.assertTrue(line.endswith("999': expected an integer in 1..65536"), line)
        self.assertIn(" ... ", line)


LAYOUT_PROFILE = (b"type,count,f,b,w,act,param,act_selective,extra_selective,act_full,"
                  b"extra_full\n"
                  b"embedding,1,0,0,0,1,100,,,,\n"
                  b"layer,4,1,1,1,4,10,2,0.25,0.5,1\n"
                  b"head,1,0,0,0,2,5,,,,\n")

# (what, --layout, extra flags, message); model E t t t t L, p = 2, 1f1b
LAYOUT_CASES = [
    ("unclosed parenthesis", "Ett|(tt|L", [], "partition: layout: '(' at column 5 is never closed"),
    ("')' closing nothing", "Ett|tt)|L", [], "partition: layout: ')' at column 7 closes no '('"),
    ("nested parentheses", "E((tt|)*1)*1,ttL", [],
     "partition: layout: '(' at column 3 is inside the group opened at column 2; Megatron-LM's "
     "layout has one level of parentheses"),
    ("3 stages over 2 devices", "Ett|tt|L", [],
     "partition: layout: 3 stages is not a multiple of the 2 devices (Megatron-LM: p x v "
     "stages)"),
    ("more transformer layers than the profile", "Ettt|ttL", [],
     "partition: layout: 5 't' elements (transformer layers); the model has 4"),
    ("unknown element", "Ett|txL", [],
     "partition: layout: 'x' at column 6 is not a Megatron-LM layout element (E, t, m, L, '|', "
     "'(...)*n', 'x*n')"),
    ("m without an MTP group", "Ett|tmtL", [],
     "partition: layout: element 'm' at column 6 (MTP layer) stands for no layer group of the "
     "model; map it to the group it means (m=GROUP)"),
    ("E not first", "tEt|ttL", [],
     "partition: layout: the first element must be E (the embedding), as Megatron-LM requires"),
    ("L not last", "Ett|tLt", [],
     "partition: layout: the last element must be L (the loss), as Megatron-LM requires; "
     "column 7 is 't'"),
    ("granularity fast", "Ett|ttL", ["--recompute-granularity", "fast"],
     "partition: recompute granularity 'fast' must be none, selective or full"),
    ("full without a method", "Ett|ttL", ["--recompute-granularity", "full"],
     "partition: recompute granularity full needs a method: uniform or block"),
    ("method every", "Ett|ttL", ["--recompute-granularity", "full", "--recompute-method",
                                 "every", "--recompute-num-layers", "1"],
     "partition: recompute method 'every' must be uniform or block"),
    ("uniform in groups of 2", "Ett|ttL", ["--recompute-granularity", "full",
                                           "--recompute-method", "uniform",
                                           "--recompute-num-layers", "2"],
     "partition: recompute method uniform with 2 layers per group: the layer profile models "
     "recomputation layer by layer (1) only"),
    ("selective with a method", "Ett|ttL", ["--recompute-granularity", "selective",
                                            "--recompute-method", "block"],
     "partition: recompute method 'block' and layer count 0 apply to granularity full only "
     "(granularity: selective)"),
    ("map of a missing group", "Ett|ttL", ["--layout-map", "m=mtp"],
     "partition: layout map entry 'm=mtp': the model has no layer group named 'mtp'"),
    ("num-layers not a number", "Ett|ttL", ["--recompute-num-layers", "x"],
     "--recompute-num-layers 'x': expected an integer in 0..4294967295"),
]


class TestLayouts(BadInput):
    """Issue 16: --layout, its recompute flags and --emit."""

    def shape(self):
        path = self.write("m.csv", LAYOUT_PROFILE)
        return ["--model", path, "--devices", "2", "--microbatches", "4"]

    def test_bad_layouts(self):
        shape = self.shape()
        for what, layout, extra, names in LAYOUT_CASES:
            with self.subTest(what):
                self.check_failure(["partition", *shape, "--schedule", "1f1b", "--layout",
                                    layout, *extra], 2, names)

    def test_recompute_flags_without_a_layout(self):
        self.check_failure(["partition", *self.shape(), "--schedule", "1f1b",
                            "--recompute-method", "block"], 2,
                           "partition: --recompute-granularity, --recompute-method and "
                           "--recompute-num-layers apply to --layout")

    def test_bad_emit_values(self):
        shape = self.shape()
        self.check_failure(["partition", *shape, "--schedule", "1f1b", "--emit", "deepspeed"],
                           2, "partition: --emit must be megatron or torchtitan, not "
                              "'deepspeed'")
        self.check_failure(["plan", *shape, "--mem-limit", "1000", "--emit", "json"], 2,
                           "plan: --emit must be megatron or torchtitan, not 'json'")
        self.check_failure(["partition", *shape, "--schedule", "1f1b", "--emit", "megatron",
                            "--json"], 2,
                           "partition: --emit prints text; it cannot be combined with --json")
        # the template is checked when the text is written: nothing on stdout
        self.check_failure(["partition", *shape, "--schedule", "1f1b", "--emit", "torchtitan",
                            "--fqn", "E=tok_embeddings;t=layers.{i}"], 2,
                           "--emit: module-name template has no entry for 'L' layers "
                           "(give L=NAME)")
        self.check_failure(["partition", *shape, "--schedule", "1f1b", "--emit", "megatron",
                            "--layout-map", "E"], 2,
                           "--emit: layout map entry 'E' must be LETTER=GROUP with LETTER one "
                           "of E, t, m, L")


def main():
    global TOOL
    if len(sys.argv) < 2:
        sys.exit("usage: test_bad_input_cli.py PATH/TO/pipesched")
    TOOL = sys.argv.pop(1)
    unittest.main()


if __name__ == "__main__":
    main()
