#!/usr/bin/env python3
"""What each `tandem` subcommand costs to start: peak resident memory, the smallest address-space
limit (`ulimit -v`) it runs under, and its wall time (median of --repeat runs). The numbers in
docs/RELIABILITY.md ("Start-up of each subcommand") come from this script, run on the old and the new
build of the same machine:

  python3 tests/tools/cli_footprint.py build/bin/tandem [--repeat 20]

Python stdlib only; no GPU needed (`info`, `bench` and the benchmark's `tune` fail there with "no GPU
visible" after loading what they load, which is what is measured).
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

# (label, arguments after `tandem`)
COMMANDS = [
    ("--version", ["--version"]),
    ("--help", ["--help"]),
    ("plan", ["plan", "--gpu", "h200", "--kernel", "threads=256,regs=64"]),
    ("run -- true", ["run", "--log-level", "error", "--", "true"]),
    ("tune -- true (1 round, 1 candidate)", ["tune", "-q", "--rounds", "1", "--candidates", "priority", "--", "true"]),
    ("info", ["info"]),
    ("bench (no GPU)", ["bench"]),
]


def run(tandem, args, limit_bytes=None, cwd=None):
    """(exit status, peak RSS in KiB, seconds). The peak is GNU time's (%M) when /usr/bin/time is
    there: a child forked from this Python process would count Python's pages as its own."""
    def limit():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    timer = ["/usr/bin/time", "-f", "%M", "-o", os.path.join(cwd, "rss")] if os.path.exists("/usr/bin/time") else []
    start = time.monotonic()
    proc = subprocess.Popen(timer + [tandem] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=limit, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    rss = usage.ru_maxrss
    if timer:
        with open(os.path.join(cwd, "rss")) as f:
            rss = int(f.read().split()[-1])
    return code, rss, seconds


def smallest_limit(tandem, args, expected, cwd):
    """The least RLIMIT_AS (MiB, to 4 MiB) under which the command exits as it does unlimited."""
    low, high = 4, 64 * 1024
    if run(tandem, args, high << 20, cwd)[0] != expected:
        return None
    while high - low > 4:
        mid = (low + high) // 2
        if run(tandem, args, mid << 20, cwd)[0] == expected:
            high = mid
        else:
            low = mid
    return high


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tandem")
    parser.add_argument("--repeat", type=int, default=20)
    a = parser.parse_args()
    a.tandem = os.path.abspath(a.tandem)
    with tempfile.TemporaryDirectory() as cwd:
        print("| subcommand | exit | peak RSS | smallest `ulimit -v` | start-up (median) |")
        print("|---|---|---|---|---|")
        for label, args in COMMANDS:
            code, _, _ = run(a.tandem, args, cwd=cwd)
            samples = [run(a.tandem, args, cwd=cwd) for _ in range(a.repeat)]
            rss = max(s[1] for s in samples)
            seconds = statistics.median(s[2] for s in samples)
            limit = smallest_limit(a.tandem, args, code, cwd) if code == 0 else None
            print(f"| `{label}` | {code} | {rss / 1024:.1f} MiB | {str(limit) + ' MiB' if limit else '-'} | {seconds * 1000:.0f} ms |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
