#!/usr/bin/env python3
"""Checks the layers of the benchmark and of the program tools (docs/ARCHITECTURE.md): bench/ranks/
includes nothing of the measurement or the reporting and names no benchmark option; bench/report/
includes nothing of the ranks or the measurement; bench/collectives/ nothing of the harness, the
cases or the other layers; program_tools/ includes nothing of the benchmark but its report layer,
and the benchmark nothing of the program tools; src/process/ lies below all of them. Python stdlib
only.

  python3 tests/scripts/test_bench_layers.py      (ctest: bench_layers)
"""
import os
import re
import sys
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".h", ".cpp", ".cu", ".cuh")


def sources(folder):
    for base, _, names in os.walk(os.path.join(ROOT, folder)):
        for name in names:
            if name.endswith(SOURCES):
                yield os.path.join(base, name)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def violations(folder, forbidden):
    """(file, include) for each include of `folder`'s sources that starts with a forbidden root."""
    out = []
    for path in sources(folder):
        for inc in includes(path):
            if inc.split("/")[0] in forbidden:
                out.append((os.path.relpath(path, ROOT), inc))
    return out


MEASUREMENT = {"harness", "scenarios", "workloads", "collectives"}


class Layers(unittest.TestCase):
    def test_the_layer_folders_exist(self):
        # A moved or renamed folder must not make the checks below pass on nothing.
        for folder in ("bench/ranks", "bench/report", "bench/harness", "bench/collectives", "program_tools"):
            self.assertTrue(any(sources(folder)), folder)

    def test_ranks_know_no_measurement_and_no_reporting(self):
        self.assertEqual(violations("bench/ranks", MEASUREMENT | {"report"}), [])

    def test_ranks_know_no_benchmark_options(self):
        found = []
        for path in sources("bench/ranks"):
            with open(path, encoding="utf-8") as f:
                if re.search(r"\bBenchOptions\b|\bSummary\b", f.read()):
                    found.append(os.path.relpath(path, ROOT))
        self.assertEqual(found, [])

    def test_the_collective_layer_lies_below_the_measurement(self):
        # The harness issues every collective through collectives/ and registers its windows there: an
        # include the other way round would make the two one layer.
        self.assertEqual(violations("bench/collectives", MEASUREMENT - {"collectives"} | {"ranks", "report"}), [])

    def test_reporting_knows_no_ranks_and_no_measurement(self):
        self.assertEqual(violations("bench/report", MEASUREMENT | {"ranks"}), [])

    def test_the_process_module_knows_no_benchmark_and_no_command(self):
        # src/process serves `tandem run` (app) and `tandem tune -- CMD` (program_tools): it lies below both.
        self.assertTrue(any(sources("src/process")))
        self.assertEqual(violations("src/process", MEASUREMENT | {"ranks", "report", "app", "program_tools"}), [])

    def test_the_program_tools_know_no_measurement_and_no_ranks(self):
        # `tandem run` and `tandem tune -- CMD` run a user's program, not the benchmark: below them only
        # the report layer's text and JSON helpers, src/process and the library.
        self.assertEqual(violations("program_tools", MEASUREMENT | {"ranks", "app", "preload", "bench"}), [])

    def test_the_benchmark_knows_no_program_tools(self):
        self.assertEqual(violations("bench", {"program_tools"}), [])

    def test_the_checker_sees_a_forbidden_include(self):
        # The regular expression must match includes as the sources write them.
        self.assertEqual(INCLUDE.findall('#include "harness/metrics.h"\n#include <vector>\n'), ["harness/metrics.h"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:])
