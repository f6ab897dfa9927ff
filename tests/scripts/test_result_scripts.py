#!/usr/bin/env python3
"""Tests scripts/results-table.py (its three tables) and scripts/clock_phases.py (stamp, summarize) on
small hand-made inputs whose expected numbers are worked out in the comments. Python stdlib only.

  python3 tests/scripts/test_result_scripts.py      (ctest: result_scripts)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
RESULTS_TABLE = os.path.join(SCRIPTS, "results-table.py")
CLOCK_PHASES = os.path.join(SCRIPTS, "clock_phases.py")
MIB = 1 << 20


def run(script, *args, stdin=None):
    p = subprocess.run([sys.executable, script, *args], input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"{os.path.basename(script)} {' '.join(args)} failed:\n{p.stderr}")
    return p.stdout


def row(policy, t_overlap, **fields):
    r = {"workload": "stream", "collective": "all-reduce", "bytes": 64 * MIB, "count": 3, "policy": policy,
         "tuned": False, "tune_role": "", "t_compute_ms": 4.0, "t_comm_ms": 3.0, "t_seq_ms": 7.0,
         "t_overlap_ms": t_overlap, "t_overlap_min_ms": t_overlap, "t_overlap_max_ms": t_overlap,
         "t_bound_ms": 4.0, "t_chain_ms": 4.0, "reduction": 1 - t_overlap / 7.0,
         "efficiency": (7.0 - t_overlap) / 3.0, "compute_slowdown": 1.0, "comm_slowdown": 1.0, "wrong": 0}
    r.update(fields)
    return r


def document(rows):
    return {"gpus": 2, "gpu": "NVIDIA H200", "nccl": "2.28.3", "cuda": "13.0", "commit": "abc1234",
            "date": "2026-11-30T00:00:00Z", "command": "tandem bench", "rows": rows}


def table_lines(text):
    """The Markdown table rows (not the header or the separator), split into stripped cells."""
    lines = [l for l in text.splitlines() if l.startswith("| ") and not l.startswith("| workload")]
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines]


class ResultsTable(unittest.TestCase):
    def table(self, rows, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(document(rows), f)
        try:
            return run(RESULTS_TABLE, f.name, *args)
        finally:
            os.unlink(f.name)

    def test_every_row_with_its_metrics(self):
        # 5 ms of 7: reduction 2/7 = 28.6 %, efficiency 2/3 = 66.7 %; spread (5.5 - 4.5) / 5 = 20.0 %.
        out = self.table([row("priority", 5.0, t_overlap_min_ms=4.5, t_overlap_max_ms=5.5, wrong=2),
                          row("concurrent", 7.0, efficiency=None)])
        self.assertIn("2 x NVIDIA H200, NCCL 2.28.3, CUDA 13.0, commit abc1234", out)
        self.assertIn("`tandem bench`", out)
        lines = table_lines(out)
        self.assertEqual(len(lines), 2)
        first = lines[0]
        self.assertEqual(first[:5], ["stream", "all-reduce", "64 MiB", "3", "`priority`"])
        self.assertEqual(first[5:10], ["4.000", "3.000", "7.000", "5.000", "4.000"])
        self.assertEqual(first[10:], ["28.6", "66.7", "1.00", "1.00", "20.0", "2"])
        self.assertEqual(lines[1][11], "\u2014")  # no efficiency: nothing to gain

    def test_undefined_figures_read_as_a_dash(self):
        # A one-rank row of an overlap run: every figure null (docs/BENCH_JSON.md).
        out = self.table([row("priority", 5.0, reduction=None, efficiency=None, compute_slowdown=None,
                              comm_slowdown=None)])
        self.assertEqual(table_lines(out)[0][10:14], ["\u2014"] * 4)

    def test_a_one_gpu_run_is_its_compute_tax(self):
        # 2.5 ms under the policy against 2.0 alone: tax 25.0 %; an undefined tax reads as a dash.
        taxed = row("shape:2", 2.3, t_compute_ms=2.0, t_compute_policy_ms=2.5, t_compute_policy_min_ms=2.4,
                    t_compute_policy_max_ms=2.7, compute_tax=0.25)
        noisy = row("priority", 2.3, t_compute_ms=2.0, t_compute_policy_ms=2.0, t_compute_policy_min_ms=1.9,
                    t_compute_policy_max_ms=2.1, compute_tax=None)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dict(document([taxed, noisy]), one_gpu=True), f)
        try:
            out = run(RESULTS_TABLE, f.name)
        finally:
            os.unlink(f.name)
        lines = table_lines(out)
        self.assertEqual(lines[0], ["stream", "3", "`shape:2`", "2.000", "2.500 (2.400..2.700)", "25.0", "0"])
        self.assertEqual(lines[1][5], "\u2014")

    def test_policies_filter(self):
        out = self.table([row("priority", 5.0), row("concurrent", 7.0), row("comm-first", 6.0)],
                         "--policies", "comm-first,priority")
        self.assertEqual([l[4] for l in table_lines(out)], ["`priority`", "`comm-first`"])

    def tuned_case(self, workload, naive, paper, tuned, paper_policy, tuned_policy):
        search = [row("concurrent", 9.0, workload=workload), row(tuned_policy, 1.0, workload=workload)]
        finals = [row("concurrent", naive, workload=workload, tune_role="naive"),
                  row(paper_policy, paper, workload=workload, tune_role="paper"),
                  row(tuned_policy, tuned, workload=workload, tune_role="tuned", tuned=True)]
        return search + finals

    def test_tuned_reads_the_final_round_and_averages_geometrically(self):
        # Case 1: tuned 6.3 of 7 ms: reduction 0.1; case 2: 4.2 of 7: reduction 0.4. Geometric mean
        # sqrt(0.1 x 0.4) = 0.2. Efficiencies (7 - t) / 3: naive 6.7 -> 10.0 %, paper 6.4 -> 20.0 %,
        # tuned 6.3 -> 23.3 %.
        rows = (self.tuned_case("stream", 6.7, 6.4, 6.3, "shape:3+priority", "comm-first") +
                self.tuned_case("tiled-gemm", 6.1, 5.5, 4.2, "priority", "shape:2+priority"))
        out = self.table(rows, "--tuned")
        lines = table_lines(out)
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[0][:10], ["stream", "all-reduce", "64 MiB", "3", "10.0", "`shape:3+priority`", "20.0",
                                         "`comm-first`", "23.3", "10.0"])
        self.assertEqual(lines[0][10:], ["7.000", "6.300", "4.000"])
        self.assertEqual(lines[1][7], "`shape:2+priority`")
        self.assertEqual(lines[1][9], "40.0")
        self.assertIn("geometric-mean tuned reduction over 2 cases: 20.0 %", out)

    def test_tuned_without_final_rounds_takes_the_best_paper_policy(self):
        # A file written before tune_role existed: the search's own rows. The paper row is the fastest of the
        # paper's policies (priority alone, shape:N+priority): shape:2+priority at 6.1 ms, not priority (6.5),
        # shape:4+priority (6.8) or the faster policies that are not the paper's (shape:3 without priority 5.0,
        # priority+nccl-ctas:..8 5.5, the tuned comm-first 4.9). Efficiencies (7 - t) / 3: naive 7.0 -> 0.0 %,
        # paper 6.1 -> 30.0 %, tuned 4.9 -> 70.0 %.
        rows = [row("concurrent", 7.0), row("priority", 6.5), row("shape:4+priority", 6.8),
                row("shape:2+priority", 6.1), row("shape:3", 5.0), row("priority+nccl-ctas:..8", 5.5),
                row("comm-first", 4.9, tuned=True)]
        lines = table_lines(self.table(rows, "--tuned"))
        self.assertEqual(len(lines), 1)
        self.assertEqual(lines[0][4:9], ["0.0", "`shape:2+priority`", "30.0", "`comm-first`", "70.0"])
        # The same search in another order: the choice is the fastest, not the first or the last one listed.
        lines = table_lines(self.table(rows[::-1], "--tuned"))
        self.assertEqual(lines[0][5:7], ["`shape:2+priority`", "30.0"])

    def test_scenario_targets(self):
        # Tuned 8 ms against one stream's 10 (x 1.250), naive 9 (x 1.125) and the bound 4 (2.000).
        rows = [row("concurrent", 9.0, t_seq_ms=10.0, tune_role="naive", workload="dp-backward", t_chain_ms=5.5),
                row("priority", 8.5, t_seq_ms=10.0, tune_role="paper", workload="dp-backward", t_chain_ms=5.5),
                row("comm-first", 8.0, t_seq_ms=10.0, tune_role="tuned", tuned=True, workload="dp-backward",
                    t_chain_ms=5.5)]
        lines = table_lines(self.table(rows, "--scenario-targets"))
        self.assertEqual(lines, [["dp-backward", "all-reduce", "3", "4.00", "3.00", "5.50", "10.00", "9.00",
                                  "`comm-first`", "8.00", "4.00", "1.250", "1.125", "2.000"]])


class ClockPhases(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_stamp_prefixes_every_line_with_the_time(self):
        out = run(CLOCK_PHASES, "stamp", "--prefix", "run-a ", stdin="first\nsecond\n").splitlines()
        self.assertEqual(len(out), 2)
        for line, text in zip(out, ("first", "second")):
            t, rest = line.split(" ", 1)
            self.assertGreater(float(t), 1.6e9)  # seconds since 1970, after 2020
            self.assertEqual(rest, "run-a " + text)

    def test_summarize_per_phase_and_gpu(self):
        # GPU 0: idle at t=0.1 (reason 0x1); phase A (marks at 0.5 .. 3.5) holds t=1, 2, 3, phase B
        # (3.5 .. end) t=4, 5, 6; the "end of run" mark closes nothing and starts no phase. GPU 1
        # has one sample in phase B only.
        samples = self.write("samples.txt", "\n".join([
            "0.1 0, 345, 80, 0x0000000000000001",
            "1.0 0, 1000, 500, 0x0000000000000004",
            "2.0 0, 1100, 600, 0x0000000000000004",
            "3.0 0, 1200, 700, 0x0000000000000000",
            "4.0 0, 1500, 650, 0x0000000000000008",
            "5.0 0, 1600, 640, 0x0000000000000000",
            "6.0 0, 1700, 630, 0x0000000000000000",
            "4.5 1, 1800, 300, 0x0000000000000000",
            "garbage line",
            "7.0 0, [N/A], 1, 0x0",
        ]) + "\n")
        marks = self.write("marks.txt", "0.5 [1/2] tandem bench: run A\n3.5 [2/2] tandem bench: run B\n"
                                        "6.5 tandem bench: end of run\n")
        out_json = os.path.join(self.tmp.name, "phases.json")
        run(CLOCK_PHASES, "summarize", samples, marks, "--json", out_json)
        with open(out_json) as f:
            phases = {(p["phase"], p["gpu"]): p for p in json.load(f)["phases"]}
        self.assertEqual(set(phases), {("idle (GPU idle clock-event reason)", 0), ("[1/2] run A", 0),
                                       ("[2/2] run B", 0), ("[2/2] run B", 1)})
        idle = phases[("idle (GPU idle clock-event reason)", 0)]
        self.assertEqual((idle["samples"], idle["sm_clock_mhz"], idle["power_w"]), (1, 345, 80))
        a = phases[("[1/2] run A", 0)]
        self.assertEqual((a["samples"], a["sm_clock_mhz"], a["power_w"]), (3, 1100, 600))
        self.assertAlmostEqual(a["sw_power_cap_share"], 2 / 3)
        self.assertEqual(a["hw_slowdown_share"], 0)
        b = phases[("[2/2] run B", 0)]
        self.assertEqual((b["samples"], b["sm_clock_mhz"], b["power_w"]), (3, 1600, 640))
        self.assertEqual(b["sw_power_cap_share"], 0)
        self.assertAlmostEqual(b["hw_slowdown_share"], 1 / 3)
        self.assertEqual(phases[("[2/2] run B", 1)]["samples"], 1)

    def test_after_keeps_only_the_marks_that_contain_it(self):
        samples = self.write("samples.txt", "1.0 0, 1000, 500, 0x0\n2.0 0, 1200, 500, 0x0\n3.0 0, 1400, 500, 0x0\n")
        marks = self.write("marks.txt", "0.5 warm-up\n1.5 policy-x [1/1] measure\n2.5 policy-x other\n")
        out_json = os.path.join(self.tmp.name, "phases.json")
        run(CLOCK_PHASES, "summarize", samples, marks, "--after", "[1/1]", "--json", out_json)
        with open(out_json) as f:
            phases = json.load(f)["phases"]
        # Only the "[1/1]" mark starts a phase; it runs to the next mark (any mark), so it holds t=2.
        self.assertEqual([(p["phase"], p["samples"], p["sm_clock_mhz"]) for p in phases],
                         [("policy-x measure", 1, 1200)])


if __name__ == "__main__":
    unittest.main()
