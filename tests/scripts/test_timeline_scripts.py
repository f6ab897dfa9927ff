#!/usr/bin/env python3
"""Tests scripts/hta-compare.py (both definitions of the share hidden on a profiler trace, HTA's own
figure when holistictraceanalysis is importable, a whole run through a fake torchrun and tandem) and scripts/timeline-record.py (the overhead and
its tables) on small hand-made inputs whose expected numbers are worked out in the comments.

  python3 tests/scripts/test_timeline_scripts.py      (ctest: timeline_scripts)
"""
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
sys.path.insert(0, HERE)
import torch_launch  # noqa: E402


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(SCRIPTS, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hta_compare = load("hta_compare", "hta-compare.py")
timeline_record = load("timeline_record", "timeline-record.py")


def kineto_trace(rank):
    """Computation [1000,1400); NCCL [1300,1600) and [1650,1750); a copy [1600,1700) (in us).
    Communication busy 400. HTA's definition: overlapped [1300,1400) = 100 -> 25 %. tandem's (the copy
    is computation): also [1650,1700) -> 150 -> 37.5 %."""
    def event(name, ts, dur, cat="kernel", stream=7):
        return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                "args": {"device": 0, "stream": stream, "correlation": int(ts), "external id": 1}}
    return {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
            "deviceProperties": [], "displayTimeUnit": "ms",
            "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#0", "pid": 100, "tid": 100,
                             "ts": 1000, "dur": 2000, "args": {"External id": 1}},
                            event("gemm_kernel", 1000, 400),
                            event("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1300, 300, stream=13),
                            event("Memcpy DtoD (Device -> Device)", 1600, 100, cat="gpu_memcpy"),
                            event("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1650, 100, stream=13)]}


class HtaCompare(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        for rank in (0, 1):
            with open(os.path.join(self.dir.name, f"rank{rank}.json"), "w") as f:
                json.dump(kineto_trace(rank), f)

    def tearDown(self):
        self.dir.cleanup()

    def test_both_definitions_on_the_profilers_trace(self):
        rank, shares = hta_compare.shares_of_trace(os.path.join(self.dir.name, "rank1.json"))
        self.assertEqual(rank, 1)
        self.assertAlmostEqual(shares["hta_definition"], 0.25)
        self.assertAlmostEqual(shares["tandem_definition"], 0.375)
        self.assertAlmostEqual(shares["communication_us"], 400)

    def test_htas_own_figure_is_its_definition(self):
        shares, error = hta_compare.hta_shares(self.dir.name)
        if shares is None and "not importable" in (error or ""):
            self.skipTest(error)
        self.assertIsNone(error)
        self.assertEqual(shares, {0: 0.25, 1: 0.25})

    def test_summary_compares_medians_of_rank_means(self):
        runs = [{"kind": "tandem", "shares": {0: 0.30, 1: 0.40}},
                {"kind": "tandem", "shares": {0: 0.40, 1: 0.50}},
                {"kind": "profiler", "hta": {0: 0.25, 1: 0.25},
                 "recomputed": {"0": {"tandem_definition": 0.375, "hta_definition": 0.25}}},
                {"kind": "profiler", "hta": {0: 0.35, 1: 0.35},
                 "recomputed": {"0": {"tandem_definition": 0.375, "hta_definition": 0.35}}}]
        s = hta_compare.summarize("ddp_mlp", runs)
        self.assertAlmostEqual(s["tandem"], 0.40)  # median of 0.35 and 0.45
        self.assertAlmostEqual(s["hta"], 0.30)
        self.assertAlmostEqual(s["difference_points"], 10.0)
        self.assertFalse(s["within_5_points"])
        # The table: the medians, the difference, and each figure's range over the rounds.
        for i, r in enumerate(runs):
            r.update(program="ddp_mlp", round=i // 2 + 1)
        doc = {"nproc": 2, "shared_gpu": True, "date": "2026-12-01T00:00:00Z", "program_args": ["--steps", "10"],
               "provenance": {"gpus": ["NVIDIA H200, 580.159"], "commit": "abc123"}, "runs": runs, "summary": [s]}
        table = hta_compare.markdown_table(doc)
        self.assertIn("tandem abc123, 2026-12-01; the programs' arguments: --steps 10; 2 rounds", table)
        self.assertIn("| ddp_mlp | 40.0 % | 30.0 % | +10.0 pp | 37.5 % | 30.0 % | 35.0–45.0 % | 25.0–35.0 % | — |", table)
        # The profile made inside tandem run --timeline: HTA's figure on it, and whether tandem stepped aside.
        under = {"kind": "profiler-under-tandem", "exit_code": 0, "tandem_stepped_aside": True, "hta": {0: 0.3, 1: 0.32},
                 "recomputed": {}, "program": "ddp_mlp", "round": 1}
        s = hta_compare.summarize("ddp_mlp", runs + [under])
        self.assertAlmostEqual(s["hta"], 0.30)  # the profile made alone only
        self.assertEqual(hta_compare.under_tandem_text(s), "31.0 %, tandem stepped aside")
        under.update(exit_code=1, tandem_stepped_aside=False)
        self.assertEqual(hta_compare.under_tandem_text(hta_compare.summarize("ddp_mlp", runs + [under])),
                         "31.0 %, no warning from tandem, exit 1")


# A torchrun that writes the hand-made trace of each rank into --profile DIR (and nothing else), and a
# `tandem` whose `run` writes each rank's share hidden into --stats, says that the program's profiler
# took CUPTI when the program profiles itself, and runs the program.
FAKE_TORCHRUN = """#!{python}
import json, sys
sys.path.insert(0, {here!r})
from test_timeline_scripts import kineto_trace
argv = sys.argv[1:]
if "--profile" in argv:
    folder = argv[argv.index("--profile") + 1]
    for rank in (0, 1):
        with open(folder + "/rank%d.json" % rank, "w") as f:
            json.dump(kineto_trace(rank), f)
"""
FAKE_TANDEM = """#!{python}
import json, subprocess, sys
argv = sys.argv[1:]
program = argv[argv.index("--") + 1:]
if "--stats" in argv:
    for rank, share in ((0, 0.5), (1, 0.25)):
        with open(argv[argv.index("--stats") + 1].replace("%p", str(rank)), "w") as f:
            json.dump({{"timeline": {{"rank": rank, "devices": [{{"hidden_share": share}}]}}}}, f)
if "--profile" in program:
    print("tandem[1]: warn: timeline: the program's profiler registered CUPTI's activity callbacks")
sys.exit(subprocess.run(program).returncode)
"""


def fake_hta(share):
    """holistictraceanalysis as far as hta-compare uses it: every rank's overlap is `share` (in %)."""
    class TraceAnalysis:
        def __init__(self, trace_dir):
            self.ranks = sorted(range(len(os.listdir(trace_dir))))

        def get_comm_comp_overlap(self, visualize):
            return {"rank": self.ranks, "comp_comm_overlap_pctg": [share] * len(self.ranks)}
    return {"hta": types.ModuleType("hta"), "hta.trace_analysis": types.SimpleNamespace(TraceAnalysis=TraceAnalysis)}


class HtaCompareWholeRun(unittest.TestCase):
    def run_compare(self, d, hta_modules, torchrun=FAKE_TORCHRUN):
        """hta-compare through the fake torchrun and tandem, with `hta_modules` as holistictraceanalysis
        (None each: not importable): its exit status, what it printed and its JSON."""
        tools = {name: torch_launch.fake_program(d, text, name, here=HERE)
                 for name, text in (("torchrun", torchrun), ("tandem", FAKE_TANDEM))}
        out = os.path.join(d, "hta.json")
        printed = io.StringIO()
        with mock.patch.dict(sys.modules, hta_modules), contextlib.redirect_stdout(printed), \
                contextlib.redirect_stderr(printed):
            status = hta_compare.main(["--tandem", tools["tandem"], "--torchrun", tools["torchrun"], "--programs",
                                       "ddp_mlp", "--rounds", "2", "--traces", os.path.join(d, "traces"),
                                       "--out", out, "--", "--steps", "2"])
        with open(out) as f:
            return status, printed.getvalue(), json.load(f), tools

    def test_without_htas_figure_the_run_fails_and_says_why(self):
        with tempfile.TemporaryDirectory() as d:
            status, printed, doc, _ = self.run_compare(d, {"hta": None, "hta.trace_analysis": None})
        self.assertEqual(status, 1, printed)
        self.assertIn("ddp_mlp: no HTA figure: holistictraceanalysis not importable", printed)
        self.assertTrue(printed.rstrip().endswith("# FAILED: 1 programs, 1 figures missing"), printed)
        self.assertIn("Missing: ddp_mlp: no HTA figure: holistictraceanalysis not importable",
                      hta_compare.markdown_table(doc))
        # A profiled run that leaves no trace: said so, not handed to HTA.
        with tempfile.TemporaryDirectory() as d:
            status, printed, doc, _ = self.run_compare(d, fake_hta(25.0), torchrun="#!{python}\n")
        self.assertEqual(status, 1, printed)
        self.assertIn("ddp_mlp: no HTA figure: the profiled run left no profiler trace in ", printed)

    def test_rounds_alternate_and_the_profile_inside_tandem_run_is_its_own(self):
        with tempfile.TemporaryDirectory() as d:
            status, printed, doc, tools = self.run_compare(d, fake_hta(25.0))
        self.assertEqual(status, 0, printed)
        self.assertTrue(printed.rstrip().endswith("# OK: 1 programs, 0 figures missing"), printed)
        self.assertAlmostEqual(doc["summary"][0]["hta"], 0.25)
        self.assertIn("tandem stepped aside", printed)
        # Round 1: tandem, profiler, then the profile made inside tandem run; round 2 the other way round.
        self.assertEqual([(r["round"], r["kind"]) for r in doc["runs"]],
                         [(1, "tandem"), (1, "profiler"), (1, "profiler-under-tandem"), (2, "profiler"), (2, "tandem")])
        s = doc["summary"][0]
        self.assertAlmostEqual(s["tandem"], 0.375)  # the ranks' 50 % and 25 %
        self.assertAlmostEqual(s["tandem_definition_on_profiler_trace"], 0.375)  # kineto_trace's
        under = s["profiled_under_tandem"]
        self.assertEqual((under["runs"], under["exit_codes"], under["tandem_stepped_aside"]), (1, [0], True))
        self.assertTrue(doc["runs"][2]["command"].startswith(tools["tandem"] + " run --policy concurrent --timeline"))


# A `tandem run --timeline` that writes the job's figures into --timeline-json and prints the program's
# TANDEM_RESULT line with the step time $FAKE_STEP (JSON text).
FAKE_TIMELINE_TANDEM = """#!{python}
import json, os, sys
argv = sys.argv[1:]
with open(argv[argv.index("--timeline-json") + 1], "w") as f:
    json.dump({{"job": {{"summary": {{"step_ms": 10.0, "steps": 3}}}}, "records_lost": 0}}, f)
print('TANDEM_RESULT {{"step_ms_median": %s, "loss": 0.5}}' % os.environ["FAKE_STEP"])
"""


class TimelineRecord(unittest.TestCase):
    def test_a_step_that_is_no_time_fails_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            tandem = torch_launch.fake_program(d, FAKE_TIMELINE_TANDEM, "tandem")
            for step, ok in (("10.5", True), ("NaN", False), ("true", False), ("-2.0", False), ("Infinity", False)):
                printed = io.StringIO()
                with mock.patch.dict(os.environ, FAKE_STEP=step), contextlib.redirect_stdout(printed), \
                        contextlib.redirect_stderr(printed):
                    status = timeline_record.main(["--tandem", tandem, "--parts", "figures", "--programs", "ddp_mlp",
                                                   "--out", os.path.join(d, "t.json")])
                with open(os.path.join(d, "t.json")) as f:
                    doc = json.load(f, parse_constant=lambda c: self.fail(f"{c} in the JSON"))
                self.assertEqual(status, 0 if ok else 1, printed.getvalue())
                self.assertEqual([r["ok"] for r in doc["runs"]], [ok, ok])
                if not ok:
                    self.assertIn(f"ddp_mlp concurrent: FAILED (the program reported step_ms_median {step}, not a "
                                  "step time in ms)", printed.getvalue())
                    self.assertEqual([r["program_step_ms"] for r in doc["figures"]], [None, None])
    def test_a_timeline_run_without_the_jobs_summary_fails(self):
        # tandem run --timeline wrote no summary (no step common to the ranks, nothing recorded): the run has no
        # figures to give, and fails, said so.
        with tempfile.TemporaryDirectory() as d:
            tandem = torch_launch.fake_program(d, FAKE_TIMELINE_TANDEM.replace(
                '{{"summary": {{"step_ms": 10.0, "steps": 3}}}}', '{{"summary": None}}'), "tandem")
            printed = io.StringIO()
            with mock.patch.dict(os.environ, FAKE_STEP="10.5"), contextlib.redirect_stdout(printed), \
                    contextlib.redirect_stderr(printed):
                status = timeline_record.main(["--tandem", tandem, "--parts", "figures", "--programs", "ddp_mlp",
                                               "--out", os.path.join(d, "t.json")])
            with open(os.path.join(d, "t.json")) as f:
                doc = json.load(f)
        self.assertEqual(status, 1, printed.getvalue())
        self.assertEqual([r["ok"] for r in doc["runs"]], [False, False])
        self.assertIn("no timeline summary from tandem run", printed.getvalue())

    def test_overhead_is_the_change_of_the_median_step(self):
        runs = [{"timeline": False, "ok": True, "step_ms_median": v} for v in (40.0, 41.0, 39.0)]
        runs += [{"timeline": True, "ok": True, "step_ms_median": v} for v in (40.4, 40.8, 40.2)]
        o = timeline_record.overhead(runs)
        self.assertEqual(o["rounds"], 3)
        self.assertAlmostEqual(o["overhead"], (40.4 - 40.0) / 40.0)
        self.assertAlmostEqual(o["without_spread_ms"], 2.0)
        self.assertAlmostEqual(o["with_spread_ms"], 0.6)  # 40.8 - 40.2
        # A run that failed is in neither median.
        o = timeline_record.overhead(runs + [{"timeline": True, "ok": False, "step_ms_median": None}])
        self.assertEqual(len(o["with_ms"]), 3)

    def test_tables_name_shared_gpus(self):
        doc = {"nproc": 2, "shared_gpu": True, "date": "2026-12-01T00:00:00Z",
               "provenance": {"gpus": ["NVIDIA H200, 580.159"], "commit": "abc123"},
               "figures": [{"program": "ddp_mlp", "policy": "priority", "compile": False, "program_step_ms": 41.0,
                            "tandem_step_ms": 40.5, "computation_ms": 30.0, "communication_ms": 12.0,
                            "overlapped_ms": 9.0, "exposed_communication_ms": 3.0, "idle_ms": 1.5,
                            "hidden_share": 0.75}],
               "overhead": {"program": "ddp_mlp", "rounds": 3, "without_median_ms": 40.0, "with_median_ms": 40.4,
                            "overhead": 0.01, "without_spread_ms": 2.0, "with_spread_ms": 0.6}}
        table = timeline_record.markdown_table(doc)
        self.assertIn("ranks sharing one GPU", table)
        self.assertIn("| ddp_mlp | priority | no | 41.000 | 40.500 | 30.000 | 12.000 | 3.000 | 1.500 | 75.0 % |", table)
        self.assertIn("40.400 ms with it (spread 0.600 ms): +1.00 %.", table)
        self.assertIn("75.0%", timeline_record.text_table(doc))
        # The cost measured with one rank per GPU says so; with ranks sharing one, that too.
        doc["overhead"].update(nproc=1, shared_gpu=False)
        self.assertIn("Cost of recording (ddp_mlp under priority, 1 rank, 3 interleaved rounds;", timeline_record.markdown_table(doc))
        # A file of the cost alone has no figures table, and no ranks-sharing header over it.
        alone = dict(doc, figures=[])
        self.assertTrue(timeline_record.markdown_table(alone).startswith("Cost of recording"))
        doc["overhead"].update(nproc=2, shared_gpu=True)
        self.assertIn("(3 rounds, ddp_mlp, 2 ranks sharing one GPU)", timeline_record.text_table(doc))

    def test_overhead_runs_take_one_rank_per_gpu(self):
        args = timeline_record.parse_args(["--tandem", "/t/tandem", "--nproc", "2"])
        args.gpus = 1
        argv = timeline_record.launch_argv(args, "ddp_mlp", "priority", False, nproc=1)
        self.assertEqual(argv[argv.index("--nproc-per-node") + 1], "1")
        self.assertFalse(any(a.endswith("shared_gpu_rank.py") for a in argv))
        argv = timeline_record.launch_argv(args, "ddp_mlp", "priority", False)
        self.assertEqual(argv[argv.index("--nproc-per-node") + 1], "2")
        self.assertTrue(any(a.endswith("shared_gpu_rank.py") for a in argv))


if __name__ == "__main__":
    unittest.main()
