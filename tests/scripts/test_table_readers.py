#!/usr/bin/env python3
"""Property test of every script's --table reader (scripts/timeline-record.py, hta-compare.py,
reach-check.py --table; pytorch-compare.py --tables): fed documents that are not results - not JSON,
JSON that is not an object, `{}`, another kind, NaN or Infinity anywhere, a required part missing - each
refuses the file in one line naming it (a UserError: exit 2, one line on stderr), never with a
traceback and never with a table; fed the recorded results with fields deleted or given values of the
wrong type at random places (a fixed seed), each either refuses the file so or prints a table that
says nothing of None. Stdlib only.

  python3 tests/scripts/test_table_readers.py      (ctest: table_readers)
"""
import contextlib
import copy
import importlib.util
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(ROOT, "bench", "results")
SEED, MUTANTS_PER_READER = 38, 150
WRONG_VALUES = ["x", "", 1, -1, 2.5, True, None, [], [1], {}, {"a": 1}]


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytorch_compare_record():
    row = {"program": "ddp_mlp", "variant": "stock", "kind": "stock", "runs_ok": 2, "runs_failed": 1,
           "step_ms": 10.0, "spread_ms": [9.5, 10.5], "t_stock_ms": 10.0, "t_bound_ms": 6.0, "speedup": 1.0,
           "efficiency": 0.0, "losses": [0.25, 0.25], "loss_vs_stock": "bitwise"}
    return {"schema_version": 1, "kind": "pytorch-compare", "date": "2026-12-01T00:00:00Z", "commit": "abc",
            "gpus": ["NVIDIA H200, 580.1"], "versions": {"torch": "2.11.0", "nccl": None},
            "config": {"rounds": 3, "nproc": 2},
            "summary": [row, dict(row, variant="comm-only", speedup=None, efficiency=None, loss_vs_stock=None,
                                  spread_ms=None, step_ms=None)]}


def recorded(name):
    with open(os.path.join(RESULTS, name)) as f:
        return json.load(f)


# reader: (the script's module, the module holding its UserError, its table option, a valid document,
# the parts without which it holds no result)
pc = load("pytorch_compare", "pytorch-compare.py")
timeline = load("timeline_record", "timeline-record.py")
hta = load("hta_compare", "hta-compare.py")
reach = load("reach_check", "reach-check.py")
READERS = {
    "pytorch-compare.py": (pc, pc, "--tables", pytorch_compare_record(), ["summary", "config", "kind"]),
    "timeline-record.py": (timeline, timeline.compare, "--table",
                           recorded("h200x1-2026-12-01-timeline-shared-gpu.json"), ["tool", "nproc"]),
    "hta-compare.py": (hta, hta.compare, "--table",
                       recorded("h200x1-2026-12-01-hta-compare-balanced-shared-gpu.json"), ["summary", "tool"]),
    "reach-check.py": (reach, reach.pc, "--table",
                       recorded("h200x1-2026-12-01-reach-coverage-part1-shared-gpu.json"), ["rows", "kind"]),
}
NOT_RESULTS = [b"", b"not json", b"{", b"\xff\xfe{}", b"[" * 100000, b"NaN", b"[]", b"[{}]", b"1", b'"text"',
               b"null", b"true", b"{}", b'{"kind": "reliability"}', b'{"tool": "bench"}']


def paths(value, at=()):
    """Every place in a document: (key or index, ...) of each value below the top."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, sub in items:
        yield at + (key,)
        yield from paths(sub, at + (key,))


def with_value(doc, path, value=None, delete=False):
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


class TableReaders(unittest.TestCase):
    def read(self, script, content):
        """(the UserError's message or None, what was printed) of the reader on a file holding `content`;
        any other exception fails the test with its traceback."""
        module, errors, option, _, _ = READERS[script]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "doc.json")
            with open(path, "wb") as f:
                f.write(content if isinstance(content, bytes) else json.dumps(content).encode())
            printed = io.StringIO()
            try:
                with contextlib.redirect_stdout(printed):
                    module.main([option, path])
            except errors.UserError as e:
                message = str(e)
                self.assertNotIn("\n", message)
                self.assertIn(path, message)
                self.assertEqual(printed.getvalue(), "", f"{script} printed before refusing: {message}")
                return message, ""
        return None, printed.getvalue()

    def refused(self, script, content, what):
        message, printed = self.read(script, content)
        self.assertIsNotNone(message, f"{script} printed a table from {what}:\n{printed[:800]}")
        return message

    def test_the_recorded_results_still_make_tables(self):
        for script, (_, _, _, doc, _) in READERS.items():
            message, printed = self.read(script, doc)
            self.assertIsNone(message, script)
            self.assertIn("|", printed, script)
            self.assertNotIn("None", printed, script)

    def test_what_is_not_a_result_is_refused_in_one_line(self):
        for script, (_, _, _, doc, required) in READERS.items():
            for content in NOT_RESULTS:
                self.refused(script, content, content[:40])
            self.assertIn("is not a", self.refused(script, [doc], "a list"))
            for key in required:
                self.refused(script, with_value(doc, (key,), delete=True), f"no {key}")
            rng = random.Random(SEED)
            numbers = [p for p in paths(doc) if isinstance(self.at(doc, p), (int, float))
                       and not isinstance(self.at(doc, p), bool)]
            for path in rng.sample(numbers, min(20, len(numbers))):
                for bad in (float("nan"), float("inf"), float("-inf")):
                    message = self.refused(script, json.dumps(with_value(doc, path, bad)).encode(), f"{bad} at {path}")
                    self.assertIn("is not a number JSON allows", message)

    @staticmethod
    def at(doc, path):
        for key in path:
            doc = doc[key]
        return doc

    def test_damaged_results_are_refused_or_make_a_whole_table(self):
        for script, (_, _, _, doc, _) in READERS.items():
            rng = random.Random(SEED)
            places = list(paths(doc))
            tables = refusals = 0
            for path in rng.sample(places, min(MUTANTS_PER_READER, len(places))):
                for mutant in [with_value(doc, path, delete=True)] + \
                        [with_value(doc, path, v) for v in rng.sample(WRONG_VALUES, 3)]:
                    message, printed = self.read(script, mutant)
                    if message is None:
                        tables += 1
                        self.assertIn("|", printed, f"{script}, {path}")
                        self.assertNotIn("None", printed, f"{script}: {path} changed, a table says None")
                    else:
                        refusals += 1
            self.assertGreater(refusals, 0, script)  # the sample reached fields the table reads

    def test_the_scripts_exit_2_with_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "nan.json")
            with open(path, "w") as f:
                f.write('{"kind": "reach-check", "rows": [NaN]}')
            for script, (_, _, option, _, _) in READERS.items():
                for target in (path, os.path.join(d, "absent.json"), d):
                    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), option, target],
                                       capture_output=True, text=True, timeout=60)
                    self.assertEqual((p.returncode, p.stdout), (2, ""), f"{script} {target}: {p.stderr}")
                    self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                    self.assertTrue(p.stderr.startswith(script[:-3] + ": ") and target in p.stderr, p.stderr)


if __name__ == "__main__":
    unittest.main()
