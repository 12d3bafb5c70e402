"""bench_partition --anneal: an independent search against the optimizer's
bound. The annealing walks partitions through psched_partition_evaluate()
alone, so every step time it reaches is a partition's that fits, and the
optimizer's bound (makespan x (1 - gap)) must hold for it; from the
optimizer's own partition it can only keep or lower the step time.

    test_anneal.py BENCH_PARTITION
"""
import subprocess
import sys
import unittest

BENCH = sys.argv[1]


def number(cell):
    """'1127.55' or '1127.55 (+0.00%)' -> 1127.55"""
    return float(cell.split()[0])


def annealed_rows(*extra):
    """The --anneal table's rows of the quick grid's four-chunk interleaved
    rows at a 1 s limit, each a list of its 9 cells."""
    out = subprocess.run([BENCH, "--anneal", "1", "--quick", "--time-limit", "1",
                          "--chunks", "4", "--schedule", "interleaved", *extra],
                         capture_output=True, text=True, check=True, timeout=300)
    rows = []
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0].isdigit():
            rows.append(cells)
    return rows


class Anneal(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # under the grid's memory limits, L = 80 on 4 and 8 devices are
        # feasible at a 1 s limit (L = 32 ones are proven and left out);
        # without a limit (--no-limit), L = 80 on 8 devices is
        cls.limited = annealed_rows()
        cls.unlimited = annealed_rows("--no-limit")
        cls.rows = cls.limited + cls.unlimited

    def test_feasible_rows_are_checked(self):
        self.assertGreaterEqual(len(self.limited), 2, self.limited)
        self.assertIn(["80", "8"], [r[:2] for r in self.unlimited])
        for r in self.rows:
            self.assertEqual((r[2], r[3]), ("4", "interleaved"))
            self.assertIn(r[0], ("32", "80"))

    def test_bound_holds_for_every_annealed_partition(self):
        for r in self.rows:
            with self.subTest(row=r[:4]):
                gap = float(r[4].rstrip("%")) / 100
                makespan, bound = number(r[5]), number(r[6])
                self.assertGreater(gap, 0)
                self.assertAlmostEqual(bound, makespan * (1 - gap), delta=1e-3 * makespan)
                # the printed bound is rounded to 6 digits
                for annealed in (number(r[7]), number(r[8])):
                    self.assertGreaterEqual(annealed, bound * (1 - 1e-5))

    def test_annealing_from_the_partition_never_rises(self):
        # it starts at the optimizer's partition, which the library must
        # evaluate to the step time it reported
        for r in self.rows:
            with self.subTest(row=r[:4]):
                self.assertLessEqual(number(r[7]), number(r[5]))

    def test_no_limit_rows_differ_from_the_limited(self):
        # without a limit nothing is recomputed: the same row is faster
        limited = {tuple(r[:4]): number(r[5]) for r in self.limited}
        for r in self.unlimited:
            if tuple(r[:4]) in limited:
                with self.subTest(row=r[:4]):
                    self.assertLess(number(r[5]), limited[tuple(r[:4])])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
