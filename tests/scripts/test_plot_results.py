#!/usr/bin/env python3
"""Tests scripts/plot-results.py on small tandem JSON fixtures (tests/scripts/fixtures, cut from real
results: a tune, a scenario tune and a bench size sweep): the files it writes, the text and bars of its
SVG, and its errors; what every figure must have (error bars from each row's spread, cases sorted by
name, outliers clipped with their value printed, the project's targets only when asked); and how
tandem_results.py groups rows into measured cases.

  python3 tests/scripts/test_plot_results.py      (ctest: plot_results)
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

try:
    import matplotlib  # noqa: F401  (the script's one dependency: a missing one fails, never skips)
except ImportError:
    sys.exit("test_plot_results: FAILED: matplotlib is missing: install python3-matplotlib "
             "(scripts/install-deps.sh does)")

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "plot-results.py")
FIXTURES = os.path.join(HERE, "fixtures")
SVG = "{http://www.w3.org/2000/svg}"


def plot(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def load_script():
    """plot-results.py as a module, to read the figures it draws without going through SVG."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("plot_results", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(SCRIPT))
    spec.loader.exec_module(module)
    return module


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def read_svg(path):
    """(text of every <text>, ids of the bars, ids of the lines) of one SVG figure."""
    root = ET.parse(path).getroot()
    texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    ids = [g.get("id") or "" for g in root.iter(SVG + "g")]
    return texts, [i for i in ids if i.startswith("bar-")], [i for i in ids if i.startswith("line-")]


class PlotCase(unittest.TestCase):
    """Runs the script once on one fixture into a fresh folder."""
    fixture_name = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_ = plot(os.path.join(FIXTURES, cls.fixture_name), "--out", cls.tmp.name)
        cls.doc = fixture(cls.fixture_name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def figure(self, name):
        path = os.path.join(self.tmp.name, name)
        self.assertTrue(os.path.isfile(path), f"{name} not written; stderr: {self.run_.stderr}")
        return read_svg(path)

    def assert_written(self, names):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.run_.stdout.split(), [os.path.join(self.tmp.name, n) for n in names])
        self.assertEqual(sorted(os.listdir(self.tmp.name)), sorted(names))

    def assert_provenance(self, texts, file_name):
        d = self.doc
        merged = f", merged from {len(d['commands'])} runs" if "commands" in d else ""
        line = f"{d['gpus']} × {d['gpu']}, NCCL {d['nccl']}, commit {d['commit']}, {d['date']} ({file_name}{merged})"
        self.assertIn(line, texts)


class TuneFigures(PlotCase):
    fixture_name = "tune.json"
    figures = ["tune-gemm-all-reduce-efficiency.svg", "tune-stream-all-reduce-efficiency.svg",
               "tune-summary-efficiency.svg"]

    def test_writes_one_figure_per_case_and_a_summary(self):
        self.assert_written(self.figures)

    def test_every_figure_names_gpu_nccl_commit_and_date(self):
        for name in self.figures:
            self.assert_provenance(self.figure(name)[0], "tune.json")

    def test_one_bar_per_overlapped_policy(self):
        for workload, expected in (("gemm", 4), ("stream", 3)):
            policies = {r["policy"] for r in self.doc["rows"] if r["workload"] == workload} - {"sequential"}
            self.assertEqual(len(policies), expected)  # the fixture as cut
            texts, bars, _ = self.figure(f"tune-{workload}-all-reduce-efficiency.svg")
            self.assertEqual(len(bars), expected, bars)
            for policy in policies:
                self.assertTrue(any(t.startswith(policy) for t in texts), policy)

    def test_naive_paper_and_tuned_are_labelled(self):
        texts, bars, _ = self.figure("tune-gemm-all-reduce-efficiency.svg")
        for label in ("concurrent (naive)", "priority (paper)", "comm-first+nccl-cga:1 (tuned)", "comm-first"):
            self.assertIn(label, texts)
        self.assertEqual(sorted(b.rsplit("-", 1)[0] for b in bars), ["bar-naive", "bar-other", "bar-paper", "bar-tuned"])
        texts, bars, _ = self.figure("tune-stream-all-reduce-efficiency.svg")  # the paper's policy won the tune
        self.assertIn("shape:4+priority (paper, tuned)", texts)
        policies = sorted({r["policy"] for r in self.doc["rows"] if r["workload"] == "stream"})
        self.assertIn(f"bar-paper-tuned-{policies.index('shape:4+priority')}", bars)  # bars sorted by policy
        self.assertIn("100 %: fully hidden", texts)

    def test_final_round_values_not_the_search(self):
        final = {r["policy"]: r for r in self.doc["rows"] if r["workload"] == "gemm" and r["tune_role"]}
        texts = self.figure("tune-gemm-all-reduce-efficiency.svg")[0]
        self.assertIn(f" {100 * final['concurrent']['efficiency']:.1f}", texts)

    def test_summary_has_three_bars_per_case_and_the_geometric_mean(self):
        texts, bars, _ = self.figure("tune-summary-efficiency.svg")
        self.assertEqual(sorted(bars), sorted(f"bar-{role}-{j}" for role in ("naive", "paper", "tuned") for j in (0, 1)))
        tuned = [r["reduction"] for r in self.doc["rows"] if r["tune_role"] == "tuned"]
        geomean = 100 * math.exp(sum(map(math.log, tuned)) / len(tuned))
        self.assertTrue(any(f"geometric-mean reduction of the tuned policies {geomean:.1f} %" in t for t in texts), texts[-3:])

    def test_svg_is_deterministic(self):
        with tempfile.TemporaryDirectory() as again:
            self.assertEqual(plot(os.path.join(FIXTURES, "tune.json"), "--out", again).returncode, 0)
            for name in self.figures:
                with open(os.path.join(self.tmp.name, name), "rb") as a, open(os.path.join(again, name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)


class ScenarioFigure(PlotCase):
    fixture_name = "scenario-tune.json"

    def test_one_summary_with_workloads_and_no_targets_unless_asked(self):
        self.assert_written(["scenario-tune-scenarios.svg"])
        texts, bars, _ = self.figure("scenario-tune-scenarios.svg")
        self.assert_provenance(texts, "scenario-tune.json")
        for label in ("fsdp", "copy-engine", "tp-attention (count 2)",
                      "tp-attention (count 4)", "priority+copy-engine"):  # a tick label's lines are two texts
            self.assertIn(label, texts)
        self.assertFalse(any("target" in t for t in texts), texts)  # a user's run is not judged by our goals
        with tempfile.TemporaryDirectory() as out:
            self.assertEqual(plot(os.path.join(FIXTURES, self.fixture_name), "--targets", "--out", out).returncode, 0)
            texts = read_svg(os.path.join(out, "scenario-tune-scenarios.svg"))[0]
        for label in ("target 1.15", "target 1.05", "target 1.10"):
            self.assertIn(label, texts)
        # Three cases: naive and tuned against one stream, tuned against naive, tuned against the bound.
        self.assertEqual(len(bars), 3 * 4, bars)
        fsdp = next(r for r in self.doc["rows"] if r["workload"] == "fsdp" and r["tune_role"] == "tuned")
        self.assertIn(f" {fsdp['t_seq_ms'] / fsdp['t_overlap_ms']:.3f}", texts)
        self.assertIn(f" {fsdp['t_overlap_ms'] / fsdp['t_bound_ms']:.3f}", texts)


class BenchFigures(PlotCase):
    fixture_name = "bench.json"

    def test_sequential_is_left_out_and_the_best_measured_marked(self):
        self.assert_written(["bench-tiled-gemm-all-reduce-efficiency.svg", "bench-summary-efficiency.svg"])
        texts, bars, _ = self.figure("bench-tiled-gemm-all-reduce-efficiency.svg")
        self.assert_provenance(texts, "bench.json")
        self.assertIn("sequential", {r["policy"] for r in self.doc["rows"]})
        self.assertFalse(any(t.startswith("sequential") for t in texts), texts)
        self.assertEqual(len(bars), len(self.doc["rows"]) - 1, bars)
        self.assertIn("priority (paper, best)", texts)  # tiled-gemm: priority beats shape:3+priority here
        texts, bars, _ = self.figure("bench-summary-efficiency.svg")
        self.assertEqual(sorted(bars), ["bar-best-0", "bar-naive-0", "bar-paper-0"])
        self.assertFalse(any("geometric-mean" in t for t in texts))  # no tuned policies, no claim


class SizeSweepFigure(PlotCase):
    fixture_name = "sweep.json"

    def test_lines_against_size(self):
        self.assert_written(["sweep-stream-all-reduce-efficiency.svg", "sweep-summary-efficiency.svg"])
        texts, bars, lines = self.figure("sweep-stream-all-reduce-efficiency.svg")
        self.assert_provenance(texts, "sweep.json")
        self.assertEqual(bars, [])
        self.assertEqual(len(lines), 3, lines)  # concurrent, comm-first, shape:3+priority
        for label in ("concurrent (naive)", "comm-first", "shape:3+priority", "32 MiB", "128 MiB", "512 MiB", "1 GiB"):
            self.assertIn(label, texts)
        texts, bars, _ = self.figure("sweep-summary-efficiency.svg")
        self.assertEqual(len(bars), 3 * 4)  # naive, paper, best measured at four sizes
        self.assertIn("stream × all-reduce, 32 MiB", texts)


class MeasuredCases(unittest.TestCase):
    """tandem_results.measured_cases: which rows make one measured case."""

    @staticmethod
    def row(policy, t_seq, role="", workload="tp-attention"):
        return {"workload": workload, "collective": "all-gather+reduce-scatter", "bytes": 1 << 30,
                "policy": policy, "tune_role": role, "t_seq_ms": t_seq, "t_compute_ms": t_seq - 3}

    def cases(self, rows):
        sys.path.insert(0, os.path.dirname(SCRIPT))
        from tandem_results import measured_cases
        return [[(r["policy"], r["tune_role"]) for r in case] for case in measured_cases(rows)]

    def test_final_rounds_join_their_search_though_each_round_has_its_own_baselines(self):
        # Two configurations of one scenario merged: the same identity, other baselines.
        rows = [self.row("priority", 10.0), self.row("copy-engine", 10.0), self.row("concurrent", 10.2, "naive"),
                self.row("priority", 10.3, "paper"), self.row("copy-engine", 10.1, "tuned"),
                self.row("priority", 9.0), self.row("concurrent", 9.1, "naive"), self.row("priority", 9.2, "paper"),
                self.row("priority", 9.2, "tuned")]
        self.assertEqual(self.cases(rows), [
            [("priority", ""), ("copy-engine", ""), ("concurrent", "naive"), ("priority", "paper"),
             ("copy-engine", "tuned")],
            [("priority", ""), ("concurrent", "naive"), ("priority", "paper"), ("priority", "tuned")]])

    def test_a_file_cut_down_to_final_rounds_keeps_its_cases_apart(self):
        rows = [self.row("concurrent", 10.2, "naive"), self.row("priority", 10.3, "paper"),
                self.row("copy-engine", 10.1, "tuned"), self.row("concurrent", 9.1, "naive"),
                self.row("concurrent", 20.0, "naive", workload="moe")]
        self.assertEqual(self.cases(rows), [
            [("concurrent", "naive"), ("priority", "paper"), ("copy-engine", "tuned")],
            [("concurrent", "naive")], [("concurrent", "naive")]])


class ScenarioLabels(unittest.TestCase):
    """plot-results.scenario_labels: one scenario at several configurations is told apart by what its
    runs' commands do not share."""

    @classmethod
    def setUpClass(cls):
        cls.plot = load_script()

    @staticmethod
    def case(workload, count=2):
        return [{"workload": workload, "count": count}]

    def test_the_options_one_run_has_and_its_siblings_lack(self):
        commands = ["tandem tune --workload tp-attention --sequence-parallel -n 20 --json /tmp/a.json",
                    "tandem tune --workload tp-attention --sequence-parallel --in-place -n 20 --json /tmp/b.json",
                    "tandem tune --workload tp-attention --sequence-parallel --in-place --micro-batches 4 --out x",
                    "tandem tune --workload moe --experts 128 --json /tmp/c.json"]
        cases = [self.case("tp-attention"), self.case("tp-attention"), self.case("tp-attention", 4), self.case("moe")]
        self.assertEqual(self.plot.scenario_labels(cases, commands),
                         ["tp-attention", "tp-attention (--in-place)", "tp-attention (--in-place, --micro-batches 4)",
                          "moe"])

    def test_without_one_command_per_case_the_count_tells_them_apart(self):
        cases = [self.case("tp-attention"), self.case("tp-attention", 4), self.case("tp-attention", 4)]
        self.assertEqual(self.plot.scenario_labels(cases, ["tandem bench --workload tp-attention"]),
                         ["tp-attention (count 2)", "tp-attention (count 4)", "tp-attention (count 4) #2"])


class FigureRules(unittest.TestCase):
    """What every figure must have, read from the matplotlib figures the script draws: error bars from
    each row's spread, cases and policies sorted by name, outliers clipped with their value printed."""

    @classmethod
    def setUpClass(cls):
        cls.plot = load_script()
        import matplotlib.pyplot as plt
        cls.plt = plt

    def draw(self, doc, name="fixture.json", metric="efficiency", targets=False):
        figures = dict(self.plot.figures(doc, name, metric, targets))
        for fig in figures.values():
            self.addCleanup(self.plt.close, fig)
        return figures

    @staticmethod
    def bars(ax):
        """gid -> (left end, right end) of every bar of one axes."""
        return {p.get_gid(): (p.get_x(), p.get_x() + p.get_width()) for p in ax.patches if p.get_gid()}

    @staticmethod
    def error_bars(ax):
        """gid -> (low, high) of every horizontal error bar of one axes."""
        out = {}
        for c in ax.collections:
            if (c.get_gid() or "").startswith("err-"):
                (x0, _), (x1, _) = c.get_segments()[0]
                out[c.get_gid()] = (min(x0, x1), max(x0, x1))
        return out

    @staticmethod
    def tick_labels(ax):
        """The y tick labels from the top of the figure down."""
        ticks = sorted(zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()]), reverse=True)
        return [text.split("\n")[0] for _, text in ticks]

    @staticmethod
    def efficiency(r, t):  # the definition in docs/BENCH_JSON.md, in %
        return 100 * (r["t_seq_ms"] - t) / (r["t_seq_ms"] - r["t_bound_ms"])

    def test_summary_bars_carry_the_spread_of_their_rows(self):
        doc = fixture("tune.json")
        ax = self.draw(doc)["fixture-summary-efficiency"].axes[0]
        errors = self.error_bars(ax)
        final = [r for r in doc["rows"] if r["tune_role"]]
        self.assertEqual(len(errors), len(final))  # one per bar: naive, paper and tuned of two cases
        for j, workload in enumerate(("gemm", "stream")):
            for r in (r for r in final if r["workload"] == workload):
                low, high = errors[f"err-bar-{r['tune_role']}-{j}"]
                self.assertAlmostEqual(low, self.efficiency(r, r["t_overlap_max_ms"]), places=6)
                self.assertAlmostEqual(high, self.efficiency(r, r["t_overlap_min_ms"]), places=6)
                self.assertLess(low, high)

    def test_scenario_bars_carry_the_spread_of_their_rows(self):
        doc = fixture("scenario-tune.json")
        fig = self.draw(doc)["fixture-scenarios"]
        tuned = [r for r in doc["rows"] if r["tune_role"] == "tuned"]  # fsdp, tp-attention at 2 and at 4
        one_stream, of_bound = self.error_bars(fig.axes[0]), self.error_bars(fig.axes[2])
        self.assertEqual(len(one_stream), 2 * len(tuned))  # naive and tuned
        for j, r in enumerate(tuned):
            low, high = one_stream[f"err-bar-tuned-0-{j}"]
            self.assertAlmostEqual(low, r["t_seq_ms"] / r["t_overlap_max_ms"], places=6)
            self.assertAlmostEqual(high, r["t_seq_ms"] / r["t_overlap_min_ms"], places=6)
            low, high = of_bound[f"err-bar-tuned-2-{j}"]
            self.assertAlmostEqual(low, r["t_overlap_min_ms"] / r["t_bound_ms"], places=6)
            self.assertAlmostEqual(high, r["t_overlap_max_ms"] / r["t_bound_ms"], places=6)

    def test_error_bars_reach_the_svg(self):
        with tempfile.TemporaryDirectory() as out:
            self.assertEqual(plot(os.path.join(FIXTURES, "tune.json"), "--out", out).returncode, 0)
            root = ET.parse(os.path.join(out, "tune-summary-efficiency.svg")).getroot()
        ids = {g.get("id") for g in root.iter(SVG + "g")}
        self.assertTrue({f"err-bar-{role}-{j}" for role in ("naive", "paper", "tuned") for j in (0, 1)} <= ids, ids)

    def test_cases_policies_and_scenarios_are_sorted_by_name(self):
        doc = fixture("tune.json")
        doc["rows"] = ([r for r in doc["rows"] if r["workload"] == "stream"] +
                       [r for r in doc["rows"] if r["workload"] == "gemm"])  # file order: stream first
        figures = self.draw(doc)
        self.assertEqual(self.tick_labels(figures["fixture-summary-efficiency"].axes[0]),
                         ["gemm × all-reduce", "stream × all-reduce"])
        policies = sorted({r["policy"] for r in doc["rows"] if r["workload"] == "gemm"} - {"sequential"})
        self.assertNotEqual(policies, list(dict.fromkeys(r["policy"] for r in doc["rows"] if r["workload"] == "gemm")))
        labels = self.tick_labels(figures["fixture-gemm-all-reduce-efficiency"].axes[0])
        self.assertEqual([label.split(" (")[0] for label in labels], policies)

        doc = fixture("scenario-tune.json")
        del doc["commands"]  # labels from the counts alone
        doc["rows"] = doc["rows"][::-1]  # tp-attention at 4, at 2, then fsdp; each case's rows reversed too
        labels = self.tick_labels(self.draw(doc)["fixture-scenarios"].axes[0])
        self.assertEqual(labels, ["fsdp", "tp-attention (count 2)", "tp-attention (count 4)"])

    def test_an_outlier_is_clipped_with_its_value_printed_on_the_bar(self):
        doc = fixture("tune.json")
        # comm-first: a candidate of the search only (a finalist's bar shows its final round)
        r = next(r for r in doc["rows"] if r["workload"] == "gemm" and r["policy"] == "comm-first")
        # The outlier of the issue: a policy 269.5 % worse than sequential against the ideal saving.
        r["efficiency"] = -2.695
        r["t_overlap_ms"] = r["t_seq_ms"] + 2.695 * (r["t_seq_ms"] - r["t_bound_ms"])
        r["t_overlap_min_ms"], r["t_overlap_max_ms"] = 0.99 * r["t_overlap_ms"], 1.01 * r["t_overlap_ms"]
        fig = self.draw(doc)["fixture-gemm-all-reduce-efficiency"]
        ax = fig.axes[0]
        low, high = ax.get_xlim()
        others = [100 * x["efficiency"] for x in doc["rows"]
                  if x["workload"] == "gemm" and x["policy"] not in ("comm-first", "sequential")]
        self.assertGreater(low, -269.5)  # the outlier does not set the range ...
        self.assertLess(low, min(others + [0]))  # ... which still holds every other bar and zero
        self.assertGreaterEqual(high, 100)  # and the fully-hidden line
        bars = self.bars(ax)
        policies = sorted({x["policy"] for x in doc["rows"] if x["workload"] == "gemm"} - {"sequential"})
        clipped = bars[f"bar-other-{policies.index('comm-first')}"]
        self.assertAlmostEqual(min(clipped), low)  # drawn to the axis' edge
        self.assertAlmostEqual(max(clipped), 0)
        texts = [(t.get_text(), t.get_position()[0]) for t in ax.texts]
        self.assertIn((" -269.5, clipped ", low), texts)  # printed on the bar, from its clipped end
        for gid, (left, right) in bars.items():  # the other bars are drawn to their values
            if gid != f"bar-other-{policies.index('comm-first')}":
                self.assertGreater(left, low)
        for x_low, x_high in self.error_bars(ax).values():
            self.assertGreaterEqual(x_low, low)  # error bars clipped too
            self.assertLessEqual(x_high, high)

    def test_nothing_is_clipped_without_an_outlier(self):
        # Negative values close to zero are no outliers: the tables show naive overlap at -4 %.
        bars = [(v, None) for v in (-4.0, 2.0, 60.0, 85.0)]
        low, high = self.plot.axis_limits(bars, [0, 100])
        self.assertLess(low, -4.0)
        self.assertGreater(high, 100)
        low, high = self.plot.axis_limits([(-269.5, None)] + bars[1:], [0, 100])
        self.assertGreater(low, -269.5)
        self.assertLess(low, 0)
        # A spread is shown whole unless it reaches past the others by more than their whole range.
        low, high = self.plot.axis_limits([(60.0, (-20.0, 70.0))] + bars[1:], [0, 100])
        self.assertLess(low, -20.0)
        low, high = self.plot.axis_limits([(60.0, (-900.0, 70.0))] + bars[1:], [0, 100])
        self.assertGreater(low, -900.0)


class Errors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assert_fails(self, paths, message):
        out = os.path.join(self.tmp.name, "figures")
        run = plot(*paths, "--out", out)
        self.assertNotEqual(run.returncode, 0)
        self.assertEqual(run.stderr.strip().count("\n"), 0, run.stderr)  # one line, no traceback
        self.assertIn(message, run.stderr)
        self.assertFalse(os.path.exists(out), "figures written although a file was bad")

    def test_missing_file(self):
        self.assert_fails([os.path.join(FIXTURES, "tune.json"), "/no/such/results.json"],
                          "plot-results: /no/such/results.json: no such file")

    def test_not_json(self):
        self.assert_fails([self.write("cut.json", '{"rows": [')], "cut.json: not JSON")

    def test_no_rows(self):
        self.assert_fails([self.write("clocks.json", '{"phases": []}')], "clocks.json: no `rows` list")

    def test_row_without_fields(self):
        doc = fixture("tune.json")
        del doc["rows"][2]["t_seq_ms"], doc["rows"][2]["efficiency"]
        self.assert_fails([self.write("bad.json", json.dumps(doc))], "bad.json: row 2 lacks t_seq_ms, efficiency")

    def test_header_without_provenance(self):
        doc = fixture("tune.json")
        del doc["commit"]
        self.assert_fails([self.write("anon.json", json.dumps(doc))], "anon.json: the header lacks commit")


if __name__ == "__main__":
    unittest.main(verbosity=2)
