"""The one JSON line each program of this directory prints (tests/gpu/test_interposer_programs.cpp).

{"program": NAME, "ok": BOOL, "digest": {...}, "approx": {NAME: [floats]}}

digest: must be identical with and without `tandem run` (integer-valued or integer results: exact
whatever kernel or algorithm computes them). approx: floating-point results that a different cuBLAS
algorithm (an SM-count target) may change in the last bits; the test compares them with a tolerance.
ok: every result matched an independent reference (so a wrong result fails even when both runs agree).
A program that cannot run here (its framework sees no GPU) prints {"skipped": WHY} as its digest.
"""
import hashlib
import json
import sys


def checksum(data):
    """16 hex digits of SHA-256 over raw bytes (a buffer or bytes)."""
    return hashlib.sha256(bytes(data)).hexdigest()[:16]


def emit(program, digest, approx=None, ok=True):
    line = {"program": program, "ok": bool(ok), "digest": digest, "approx": approx or {}}
    sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0 if ok else 1


def skip(program, why):
    """The program cannot run here: the test reports it skipped, with `why`."""
    return emit(program, {"skipped": why})
