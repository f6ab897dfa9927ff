#!/usr/bin/env python3
"""Plants each bug of the mutant catalogue (tests/mutants/*.mutant) alone, rebuilds only the tests it
names, runs them and reports whether they caught it.

Each mutant names a file, a snippet that must occur in it exactly once (whitespace runs match any
whitespace, so reformatting keeps it valid), its replacement and the tests expected to fail. Snippets rather than line numbers keep the catalogue valid while the code
around them changes; a snippet that no longer occurs exactly once is reported as "stale" and fails
the run, so the catalogue cannot rot silently (every run checks the whole catalogue for this, also
the mutants it does not plant).

The mutants are applied to the source tree in place and built in its existing build directory: a
copy of the tree would need a build from scratch (tens of minutes on a 2-core CI machine), while an
incremental build of one object and the tests that link it takes seconds. Every mutated file is
restored byte for byte afterwards, also on Ctrl-C or SIGTERM (which also end the build it started);
a run killed outright (SIGKILL) leaves a journal (<build>/mutants-journal.json) from which the next
run restores the originals before it starts (let any compiler it left running finish first).
The last step rebuilds the tests it touched from the restored sources, so the build directory is
left as it was found.

    scripts/mutants.py --subset ci        # the fixed subset CI runs after ctest
    scripts/mutants.py --all              # the whole catalogue
    scripts/mutants.py --only occ-        # the mutants whose name starts with "occ-"
    scripts/mutants.py --list             # the catalogue, without running anything
    scripts/mutants.py --subset ci --no-rebuild   # CI: leaves the tests built from the last mutant

A .mutant file:

    file: src/core/occupancy.cpp
    tests: test_occupancy test_occupancy_fixtures
    subset: ci
    why: the launch check forgets to round a block's warps up to the register subpartitions
    --- original
      const int64_t regs_checked = per_warp * round_up(warps, d.reg_subpartitions);
    --- mutant
      const int64_t regs_checked = per_warp * warps;

Each section is whole lines, matched without its final line break (so a snippet may be part of a
line); an empty mutant section deletes the snippet.
`tests` lists GoogleTest executables (CMake targets, built and run from <build>/tests), Python test
scripts (paths ending in .py, run with python3 from the source root) and the Python package's pytest
files (paths under tests/python/, run as ctest runs them: the build's Python, its PYTHONPATH, the
package assembled in the build tree, which is rebuilt first; TANDEM_REQUIRE_TORCH=1, so that a test
skipped for want of PyTorch fails the check without mutants rather than let every mutant pass). A
mutant is caught when any of them fails (or times out). Exit status: 0 when every mutant selected
was caught, 1 otherwise.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "tests" / "mutants"
TEST_TIMEOUT_S = 300
PACKAGE_TESTS = "tests/python/"
# The target that assembles the Python package in the build tree (python/CMakeLists.txt).
PACKAGE_TARGET = "tandem_python_core"


def read(path):
    # newline="": line endings as they are, so a restored file is the original byte for byte.
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


class Mutant:
    def __init__(self, path):
        self.name = path.stem
        self.path = path
        fields, sections, current = {}, {}, None
        for line in read(path).splitlines(keepends=True):
            if line.startswith("--- "):
                current = line[4:].strip()
                sections[current] = []
            elif current is not None:
                sections[current].append(line)
            elif line.strip() and not line.startswith("#"):
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
        missing = [k for k in ("file", "tests", "why") if k not in fields]
        missing += [s for s in ("original", "mutant") if s not in sections]
        if missing:
            raise SystemExit(f"{path}: missing {', '.join(missing)}")
        self.file = fields["file"]
        self.tests = fields["tests"].split()
        self.subsets = fields.get("subset", "").split()
        self.why = fields["why"]
        # A section is whole lines; the snippet is their text less the last line break, so it may
        # also be part of one line.
        self.original = "".join(sections["original"])[:-1]
        self.replacement = "".join(sections["mutant"])[:-1]
        if not self.original:
            raise SystemExit(f"{path}: empty original snippet")
        if self.original == self.replacement:
            raise SystemExit(f"{path}: the mutant is the original")

    def targets(self):
        built = [t for t in self.tests if not t.endswith(".py")]
        if any(is_package_test(t) for t in self.tests):
            built.append(PACKAGE_TARGET)
        return built


def is_package_test(test):
    return test.startswith(PACKAGE_TESTS) and test.endswith(".py")


def load_catalogue():
    return [Mutant(p) for p in sorted(CATALOGUE.glob("*.mutant"))]


class Journal:
    """The original text of every file while a mutant is applied, on disk so a killed run can recover."""

    def __init__(self, build):
        self.path = build / "mutants-journal.json"

    def recover(self):
        if not self.path.exists():
            return
        originals = json.loads(read(self.path))
        for rel, text in originals.items():
            write(ROOT / rel, text)  # newer than any object built from the mutant, so rebuilt
            print(f"restored {rel} from an interrupted run", flush=True)
        self.path.unlink()

    def apply(self, mutant, text):
        write(self.path, json.dumps({mutant.file: text}))
        match = snippet_pattern(mutant.original).search(text)
        # The match starts at the snippet's first word, after the file's own indentation: the
        # replacement's first line comes without its own, or Python would see it indented twice.
        replacement = mutant.replacement.lstrip(" \t")
        write(ROOT / mutant.file, text[:match.start()] + replacement + text[match.end():])

    def revert(self, mutant, text):
        write(ROOT / mutant.file, text)
        self.path.unlink()


def run(cmd, timeout=None, cwd=ROOT, env=None):
    """(return code or None on timeout, combined output). The command runs in a process group of its
    own, ended whole on a timeout or an interruption: a compiler left running would otherwise write
    an object built from a mutant after the source was restored, newer than it, so never rebuilt."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, env=env)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        stop(p)
        out, _ = p.communicate()
        return None, out
    except BaseException:
        stop(p)
        raise


def stop(p):
    # SIGTERM first: ninja runs each compiler in a process group of its own and ends them all when it
    # is terminated, which a SIGKILL of its group would not reach.
    os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def build(build_dir, targets, jobs):
    if not targets:
        return 0, ""
    return run(["cmake", "--build", str(build_dir), "-j", str(jobs), "--target", *targets])


def package_test_command(build_dir):
    """(command less its folder argument, environment) of ctest's python_package test
    (tests/CMakeLists.txt): the Python tandem._core was built for, with the build tree's package."""
    code, out = run(["ctest", "--test-dir", str(build_dir), "-R", "^python_package$", "--show-only=json-v1"])
    tests = json.loads(out)["tests"] if code == 0 else []
    if not tests:
        raise SystemExit(f"{build_dir} has no python_package test (no Python with nanobind at configure time?)")
    env = dict(os.environ, TANDEM_REQUIRE_TORCH="1")
    for prop in tests[0].get("properties", []):
        if prop["name"] == "ENVIRONMENT":
            env.update(v.split("=", 1) for v in prop["value"])
    return tests[0]["command"][:-1], env


def run_tests(build_dir, tests):
    """Names of the tests that failed or timed out."""
    failed = []
    for test in tests:
        env = None
        if is_package_test(test):
            pytest, env = package_test_command(build_dir)
            cmd = pytest + [str(ROOT / test)]
        elif test.endswith(".py"):
            cmd = [sys.executable, str(ROOT / test)]
        else:
            cmd = [str(build_dir / "tests" / test)]
        code, _ = run(cmd, timeout=TEST_TIMEOUT_S, env=env)
        if code is None:
            failed.append(test + " (timeout)")
        elif code != 0:
            failed.append(test)
    return failed


def snippet_pattern(snippet):
    """The snippet with every run of whitespace matching any run of whitespace: reformatting the code
    (scripts/format-check.sh --fix) moves line breaks and indentation, not the code a mutant plants
    its bug in."""
    words = snippet.split()
    return re.compile(r"\s+".join(re.escape(w) for w in words))


def check_applies(mutant):
    path = ROOT / mutant.file
    if not path.exists():
        return None, f"{mutant.file} does not exist"
    text = read(path)
    count = len(snippet_pattern(mutant.original).findall(text))
    if count != 1:
        return None, f"the original snippet occurs {count} times in {mutant.file}, not once"
    return text, ""


def try_mutant(mutant, build_dir, journal, jobs):
    """(verdict, detail): caught, missed, stale (no longer applies) or broken (does not build)."""
    text, why = check_applies(mutant)
    if text is None:
        return "stale", why
    journal.apply(mutant, text)
    try:
        code, out = build(build_dir, mutant.targets(), jobs)
        if code != 0:
            tail = "\n".join(out.splitlines()[-15:])
            return "broken", "the mutant does not build:\n" + tail
        failed = run_tests(build_dir, mutant.tests)
    finally:
        journal.revert(mutant, text)
    if failed:
        return "caught", "by " + ", ".join(failed)
    return "missed", "no test failed among " + " ".join(mutant.tests)


def select(mutants, args):
    if args.all:
        return mutants
    if args.only:
        return [m for m in mutants if m.name.startswith(args.only)]
    return [m for m in mutants if args.subset in m.subsets]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--all", action="store_true", help="every mutant of the catalogue")
    group.add_argument("--subset", help="the mutants marked with this subset (ci)")
    group.add_argument("--only", help="the mutants whose name starts with this text")
    group.add_argument("--list", action="store_true", help="print the catalogue and exit")
    parser.add_argument("--build", default=str(ROOT / "build"), help="the configured build directory (build)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="parallel build jobs (2)")
    parser.add_argument("--no-rebuild", action="store_true",
                        help="leave the tests built from the last mutant (CI: nothing runs after this)")
    args = parser.parse_args()

    mutants = load_catalogue()
    if args.list:
        for m in mutants:
            print(f"{m.name:44} {m.file:42} {' '.join(m.tests)}\n    {m.why}")
        return 0
    chosen = select(mutants, args)
    if not chosen:
        print("no mutant selected", file=sys.stderr)
        return 1
    build_dir = Path(args.build).resolve()
    if not (build_dir / "CMakeCache.txt").exists():
        print(f"{build_dir} is not a configured build directory (run cmake first)", file=sys.stderr)
        return 1
    journal = Journal(build_dir)
    journal.recover()
    # SIGTERM (a CI timeout) unwinds like Ctrl-C, through the finally that restores the file.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    # Build the untouched tests first: a test that fails without any mutant would "catch" everything.
    targets = sorted({t for m in chosen for t in m.targets()})
    code, out = build(build_dir, targets, args.jobs)
    if code != 0:
        print(out[-4000:], file=sys.stderr)
        print("the tests do not build without mutants", file=sys.stderr)
        return 1
    # ... and pass without any: a test failing already would "catch" every mutant.
    failing = run_tests(build_dir, sorted({t for m in chosen for t in m.tests}))
    if failing:
        print("these tests fail without any mutant: " + ", ".join(failing), file=sys.stderr)
        return 1
    start = time.monotonic()
    verdicts = []
    try:
        for m in chosen:
            began = time.monotonic()
            verdict, detail = try_mutant(m, build_dir, journal, args.jobs)
            verdicts.append(verdict)
            print(f"{verdict:7} {m.name:44} {time.monotonic() - began:5.0f} s  {detail}", flush=True)
            if verdict != "caught":
                print(f"        {m.file}: {m.why}", flush=True)
    except KeyboardInterrupt:
        print("interrupted: the sources are restored; the next build rebuilds what the mutants touched",
              file=sys.stderr)
        return 130
    # The targets were last built from a mutant: rebuild them from the restored sources (the restored
    # files are newer than the objects, so a later build would rebuild them anyway).
    code = 0
    if not args.no_rebuild:
        code, out = build(build_dir, targets, args.jobs)
        if code != 0:
            print(out[-4000:], file=sys.stderr)
    caught = verdicts.count("caught")
    print(f"{caught} caught of {len(chosen)} ({time.monotonic() - start:.0f} s)")
    for verdict in ("missed", "stale", "broken"):
        if verdicts.count(verdict):
            print(f"{verdicts.count(verdict)} {verdict}")
    # The mutants not selected are only checked to apply (reading files, no build): a subset run is
    # what CI does, and a catalogue entry outside it would otherwise go stale unseen.
    stale_elsewhere = [m for m in mutants if m not in chosen and check_applies(m)[0] is None]
    for m in stale_elsewhere:
        print(f"stale   {m.name:44} (not selected)  {check_applies(m)[1]}")
    return 0 if caught == len(chosen) and code == 0 and not stale_elsewhere else 1


if __name__ == "__main__":
    sys.exit(main())
