#!/usr/bin/env python3
"""Tests scripts/ab-compare.py (gpu-check.sh ab) on hand-made old and new results: what passes (the
same rows, timings within noise) and each thing that fails it. Python stdlib only.

  python3 tests/scripts/test_ab_compare.py      (ctest: ab_compare)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "ab-compare.py")


def row(policy, median, low, high, wrong=0, workload="stream"):
    return {"workload": workload, "collective": "all-reduce", "bytes": 1 << 24, "ranks": 2, "policy": policy,
            "count": 3, "t_overlap_ms": median, "t_overlap_min_ms": low, "t_overlap_max_ms": high,
            "t_seq_ms": 7.0, "t_compute_ms": 4.0, "t_comm_ms": 3.0, "compute_slowdown": 1.1,
            "comm_slowdown": 1.2, "wrong": wrong}


# The old run: priority (4.0, at most 4.1) is separated from concurrent (at least 4.5).
OLD = {"rows": [row("concurrent", 4.6, 4.5, 4.8), row("priority", 4.0, 3.9, 4.1)],
       "notes": ["shape:2+priority skipped for gemm: cuBLASLt's kernels are closed"]}


def write_pair(folder, new):
    """OLD and `new` as old.json and new.json in `folder`; their paths."""
    paths = []
    for name, doc in (("old", OLD), ("new", new)):
        paths.append(os.path.join(folder, name + ".json"))
        with open(paths[-1], "w") as f:
            json.dump(doc, f)
    return paths


class AbCompare(unittest.TestCase):
    def compare(self, new):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([sys.executable, SCRIPT, "suite", *write_pair(d, new)], capture_output=True, text=True)
        return p.returncode, p.stdout

    def test_the_same_results_pass_and_a_slower_median_is_marked(self):
        new = {"rows": [row("concurrent", 4.9, 4.8, 5.0), row("priority", 4.05, 4.0, 4.1)],
               # The reason's words may change; the skipped policy may not.
               "notes": ["shape:2+priority skipped for gemm: another wording"]}
        code, out = self.compare(new)
        self.assertEqual(code, 0, out)
        self.assertIn("ab: OK", out)
        self.assertIn("4.900*", out)  # outside the old 4.5..4.8
        self.assertIn("suite: 1 of 2 new medians outside", out)

    def test_a_missing_row_a_wrong_element_or_a_new_skip_fails(self):
        for new, why in (({"rows": [row("priority", 4.0, 3.9, 4.1)], "notes": OLD["notes"]}, "only in the old run"),
                         ({"rows": [row("concurrent", 4.6, 4.5, 4.8), row("priority", 4.0, 3.9, 4.1, wrong=3)],
                           "notes": OLD["notes"]}, "3 wrong elements"),
                         ({"rows": OLD["rows"], "notes": []}, "skipped policies differ")):
            code, out = self.compare(new)
            self.assertEqual(code, 1, out)
            self.assertIn(why, out)

    def test_undefined_slowdowns_read_as_a_dash(self):
        rows = [dict(r, compute_slowdown=None, comm_slowdown=None) for r in OLD["rows"]]
        code, out = self.compare({"rows": rows, "notes": OLD["notes"]})
        self.assertEqual(code, 0, out)
        self.assertIn("| 1.10/\u2014 | 1.20/\u2014 |", out)

    def test_a_separated_best_policy_must_stay_best(self):
        new = {"rows": [row("concurrent", 3.7, 3.6, 3.8), row("priority", 4.0, 3.9, 4.1)], "notes": OLD["notes"]}
        code, out = self.compare(new)
        self.assertEqual(code, 1, out)
        self.assertIn("the best policy was priority (separated by the old run's spread), now concurrent "
                      "(separated by the new run's)", out)

    def test_a_new_best_within_the_new_runs_spread_is_a_tie_not_a_reversal(self):
        # concurrent's slowest step (4.0) is not faster than priority's fastest (3.95): a tie, as the
        # shared-GPU runs' few samples give; the table says so and the verdict stays OK.
        new = {"rows": [row("concurrent", 3.97, 3.94, 4.0), row("priority", 3.98, 3.95, 4.1)], "notes": OLD["notes"]}
        code, out = self.compare(new)
        self.assertEqual(code, 0, out)
        self.assertIn("| priority (yes) | concurrent | no (a tie in the new run) |", out)
        self.assertIn("ab: OK", out)

    def test_a_record_of_the_pairs_gives_the_same_comparison(self):
        new = {"rows": [row("concurrent", 3.7, 3.6, 3.8), row("priority", 4.0, 3.9, 4.1)], "notes": OLD["notes"]}
        with tempfile.TemporaryDirectory() as d:
            record = os.path.join(d, "record.json")
            first = subprocess.run([sys.executable, SCRIPT, "--record", record, "suite", *write_pair(d, new)],
                                   capture_output=True, text=True)
            again = subprocess.run([sys.executable, SCRIPT, record], capture_output=True, text=True)
        self.assertEqual((first.returncode, again.returncode), (1, 1), first.stdout + again.stdout)
        self.assertEqual(first.stdout, again.stdout)
        self.assertIn("now concurrent", again.stdout)


if __name__ == "__main__":
    unittest.main()
