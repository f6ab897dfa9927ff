#!/usr/bin/env python3
"""What tandem loads: no ELF file of the build (or of an install) may search a relative, empty or
world-writable folder for its libraries, and no tandem binary run from a folder holding a planted
library may load it (docs/SECURITY.md).

    test_security.py --tree BUILD_OR_INSTALL_DIR [--planted PLANTED_LIB] [--tandem BIN] [--preload LIB]
"""
import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def elf_files(tree):
    for root, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in ("CMakeFiles", ".git")]
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield path


def dynamic_entries(path, tag):
    """The values of one dynamic-section tag (RUNPATH, RPATH, NEEDED), from readelf."""
    out = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True).stdout
    values = []
    for line in out.splitlines():
        if "(%s)" % tag in line:
            match = re.search(r"\[(.*)\]", line)
            if match:
                values.append(match.group(1))
    return values


def unsafe_elements(path):
    """Each RUNPATH/RPATH element the loader could be tricked through, with the reason."""
    problems = []
    origin = os.path.dirname(os.path.abspath(path))
    for tag in ("RUNPATH", "RPATH"):
        for value in dynamic_entries(path, tag):
            for element in value.split(":"):
                if element == "":
                    problems.append("%s has an empty element (the current folder): %r" % (tag, value))
                    continue
                resolved = element.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
                if not os.path.isabs(resolved):
                    problems.append("%s element %r is relative" % (tag, element))
                    continue
                if os.path.isdir(resolved):
                    mode = os.stat(resolved).st_mode
                    if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
                        problems.append("%s element %r is world-writable" % (tag, element))
    return problems


class Runpath(unittest.TestCase):
    def test_no_elf_file_searches_an_unsafe_folder(self):
        files = list(elf_files(ARGS.tree))
        self.assertTrue(files, "no ELF files found under %s" % ARGS.tree)
        problems = {path: unsafe_elements(path) for path in files}
        problems = {p: v for p, v in problems.items() if v}
        self.assertEqual(problems, {}, "\n".join("%s: %s" % (p, "; ".join(v)) for p, v in problems.items()))


class PlantedLibrary(unittest.TestCase):
    """A folder anyone could write to holds a library under every name the binaries need."""

    def setUp(self):
        if not ARGS.planted:
            self.skipTest("no planted library given")
        self.folder = tempfile.mkdtemp(prefix="tandem-planted-")
        self.marker = os.path.join(self.folder, "marker")
        needed = set()
        for binary in filter(None, (ARGS.tandem, ARGS.preload)):
            needed.update(dynamic_entries(binary, "NEEDED"))
        self.assertIn("libc.so.6", needed)
        for name in needed:
            shutil.copy(ARGS.planted, os.path.join(self.folder, name))

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def run_here(self, argv, extra_env=None):
        env = dict(os.environ, TANDEM_PLANTED_MARKER=self.marker, LD_DEBUG="libs")
        env.pop("LD_LIBRARY_PATH", None)
        env.update(extra_env or {})
        result = subprocess.run(argv, cwd=self.folder, env=env, capture_output=True, text=True, timeout=120)
        # LD_DEBUG=libs prints "trying file=PATH" for every candidate: an empty or relative RUNPATH
        # element shows up as a relative PATH, a planted one as a PATH in the folder.
        tried = [line for line in result.stderr.splitlines()
                 if self.folder in line or re.search(r"trying file=(?!/)", line)]
        self.assertEqual(tried, [], "the loader looked in the planted folder:\n" + "\n".join(tried[:10]))
        self.assertFalse(os.path.exists(self.marker), "the planted library was loaded by %s" % argv)
        return result

    def test_tandem_version(self):
        if not ARGS.tandem:
            self.skipTest("no tandem binary given")
        result = self.run_here([ARGS.tandem, "--version"])
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertIn("tandem", result.stdout)

    def test_program_under_tandem_run(self):
        if not ARGS.tandem:
            self.skipTest("no tandem binary given")
        result = self.run_here([ARGS.tandem, "run", "--", "/bin/echo", "unchanged"])
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertEqual(result.stdout, "unchanged\n")

    def test_program_with_the_interposer_preloaded(self):
        if not ARGS.preload:
            self.skipTest("no interposer given")
        result = self.run_here(["/bin/echo", "unchanged"], {"LD_PRELOAD": os.path.abspath(ARGS.preload)})
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertEqual(result.stdout, "unchanged\n")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", required=True, help="a build or install tree whose ELF files are checked")
    parser.add_argument("--planted", help="the library to plant (tests/security/planted_library.cpp)")
    parser.add_argument("--tandem", help="the tandem binary to run from the planted folder")
    parser.add_argument("--preload", help="libtandem_preload.so to preload from the planted folder")
    ARGS, rest = parser.parse_known_args()
    # The planted-library tests run from another folder.
    for name in ("tree", "planted", "tandem", "preload"):
        if getattr(ARGS, name):
            setattr(ARGS, name, os.path.abspath(getattr(ARGS, name)))
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
