#!/usr/bin/env python3
"""Every document of the repository (README.md, docs/*.md and the other README.md files git tracks)
cites only files of the repository: each relative Markdown link names a file or folder that exists,
each path in the text that starts at one of the repository's top-level folders exists (braces
expanded, globs matching at least one file, from the top or from the document's folder; a program
built from a source of that name counts; a placeholder such as FILE.json or PART2.json excepted),
and each Markdown file named by itself (DESIGN.md) is one of the repository's. docs/log/ keeps the
sessions' history as it was written and is left out. Stdlib and git only.

  python3 tests/scripts/test_docs_citations.py      (ctest: docs_citations)
"""
import glob
import itertools
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A path in the text: a top-level folder of the repository, then path characters (braces and globs too).
PATH = re.compile(r"(?<![\w./$-])((?:%s)/[\w.{},*?/+%%-]*)")
MARKDOWN = re.compile(r"(?<![\w./$-])([\w-]+\.md)\b")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(\.\w+)?$")  # FILE.json, PART2.json, DIR


def tracked():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def documents(files):
    return [f for f in files if f.endswith(".md") and not f.startswith("docs/log/")
            and (f.startswith("docs/") and f.count("/") == 1 or os.path.basename(f) == "README.md")]


def expand_braces(text):
    """'a-{b,c}.json' -> ['a-b.json', 'a-c.json'], 'a{1..3}' -> ['a1', 'a2', 'a3'] (every group, as a shell)."""
    parts = re.split(r"\{([^{}]*)\}", text)
    choices = []
    for i, p in enumerate(parts):
        span = re.fullmatch(r"(\d+)\.\.(\d+)", p) if i % 2 else None
        choices.append([p] if i % 2 == 0 else
                       [str(n) for n in range(int(span[1]), int(span[2]) + 1)] if span else p.split(","))
    return ["".join(c) for c in itertools.product(*choices)]


def exists(one, here):
    """Whether a cited path names something of the repository: from the top or from the document's folder,
    a glob matching at least one file, or a program built from a source of that name (tests/.../nccl_route_matrix)."""
    return any(glob.glob(os.path.join(base, one)) or glob.glob(os.path.join(base, one) + ".*")
               for base in (ROOT, here))


def missing_citations(document, text, folders, names):
    """The citations of `document` (its text) that name no file of the repository, as 'line N: citation'."""
    here = os.path.dirname(os.path.join(ROOT, document))
    path = re.compile(PATH.pattern % "|".join(map(re.escape, folders)))
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for target in LINK.findall(line):
            target = target.split("#")[0]
            if target and not re.match(r"^[a-z]+:", target) and not os.path.exists(os.path.join(here, target)):
                out.append(f"line {number}: link {target}")
        for cited in path.findall(line):
            cited = cited.rstrip(".,:;")
            for one in expand_braces(cited):
                if PLACEHOLDER.match(os.path.basename(one.rstrip("/"))):
                    continue
                if not exists(one, here):
                    out.append(f"line {number}: path {one}")
        for name in MARKDOWN.findall(line):
            if name not in names:
                out.append(f"line {number}: document {name}")
    return out


class DocsCitations(unittest.TestCase):
    def setUp(self):
        self.files = tracked()
        self.folders = sorted({f.split("/")[0] for f in self.files if "/" in f and not f.startswith(".")})
        self.names = {os.path.basename(f) for f in self.files}

    def test_every_document_cites_files_of_the_repository(self):
        docs = documents(self.files)
        self.assertIn("docs/BENCH_JSON.md", docs)
        self.assertIn("README.md", docs)
        problems = []
        for document in docs:
            with open(os.path.join(ROOT, document), encoding="utf-8") as f:
                text = f.read()
            problems += [f"{document}: {p}" for p in missing_citations(document, text, self.folders, self.names)]
        self.assertEqual(problems, [], "\n".join(problems))

    def test_the_checker_finds_what_is_missing(self):
        text = ("as DESIGN.md says; see [the run](RUN.md#x), [a file](../scripts/absent.py), [web](https://x.org/a.md), "
                "`scripts/reach-check.py`, `scripts/nope.py`, `bench/results/h200x1-2026-12-01-hta-compare-"
                "{balanced,absent}-shared-gpu.json`, `bench/results/FILE.json`, `tests/mutants/*.mutant`, "
                "`tests/mutants/*.absent`, docs/RUN.md, `bench/results/h200x2-2026-11-30-gemm-count{1..5}.json`.")
        self.assertEqual(missing_citations("docs/X.md", text, self.folders, self.names),
                         ["line 1: link ../scripts/absent.py", "line 1: path scripts/nope.py",
                          "line 1: path bench/results/h200x1-2026-12-01-hta-compare-absent-shared-gpu.json",
                          "line 1: path tests/mutants/*.absent",
                          "line 1: path bench/results/h200x2-2026-11-30-gemm-count5.json", "line 1: document DESIGN.md"])


if __name__ == "__main__":
    unittest.main()
