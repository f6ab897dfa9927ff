#!/usr/bin/env python3
"""One JSON record of gpu-check.sh's reliability sections (interposer-programs, faults, interrupt),
for bench/results/ and docs/RELIABILITY.md: each test case and its outcome (from GoogleTest's JSON),
each fault's exit status and time, each interrupted run, the dlsym probe, and what ran them.

    reliability-record.py --logs LOGS_DIR --tandem BIN --command TEXT > reliability.json
    reliability-record.py --tables reliability.json     # the Markdown tables of docs/RELIABILITY.md
"""
import argparse
import datetime
import importlib.util
import json
import os
import re
import sys

_spec = importlib.util.spec_from_file_location(
    "pytorch_compare", os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch-compare.py"))
pc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pc)


def gtest_cases(path):
    """Every test case of a --gtest_output=json file: name and outcome (passed, failed, skipped)."""
    if not os.path.exists(path):
        return None
    doc = json.load(open(path))
    cases = []
    for suite in doc.get("testsuites", []):
        for case in suite.get("testsuite", []):
            if case.get("failures"):
                outcome = "failed"
            elif case.get("result") == "SKIPPED":
                outcome = "skipped"
            else:
                outcome = "passed"
            cases.append({"name": "%s.%s" % (suite["name"], case["name"]), "outcome": outcome,
                          "seconds": float(str(case.get("time", "0")).rstrip("s") or 0)})
    return cases


FAULT_LINE = re.compile(r"^\[ {10}\] (\w+)/(\w+): rank 0 exited with status (-?\d+) ([\d.]+) s after the fault")
NAMED_LINE = re.compile(r"^\[ {10}\] rank 1 named by (.+)$")


def fault_timings(path):
    """From test_faults_gpu's log: launcher, fault, rank 0's exit status and seconds, who named rank 1."""
    if not os.path.exists(path):
        return None
    out = []
    for line in open(path, errors="replace"):
        if m := FAULT_LINE.match(line):
            out.append({"launcher": m[1], "fault": m[2], "exit_status": int(m[3]), "seconds_after_fault": float(m[4])})
        elif (m := NAMED_LINE.match(line.rstrip("\n"))) and out:
            out[-1]["lost_rank_named_by"] = m[1]
    return out


def summary(cases):
    if cases is None:
        return None
    return {k: sum(c["outcome"] == k for c in cases) for k in ("passed", "failed", "skipped")}


def tables(path):
    """docs/RELIABILITY.md's tables of one record: faults, then programs under the interposer."""
    record = json.load(open(path))
    name = os.path.basename(path)
    where = "%s, tandem %s, %s" % (", ".join(record["gpus"]), record["commit"], record["date"][:10])
    lines = ["Faults injected (`%s`; %s):" % (name, where), "",
             "| launcher | fault | rank 0's exit status | seconds after the fault | lost rank named by |",
             "|---|---|---|---|---|"]
    for t in record["faults"]["timings"] or []:
        lines.append("| %s | %s | %d | %.1f | %s |" % (t["launcher"], t["fault"], t["exit_status"],
                                                       t["seconds_after_fault"], t.get("lost_rank_named_by", "?")))
    for run in record.get("interrupt") or []:
        kept = ("`%s` kept as the best so far" % run["best_so_far"] if "best_so_far" in run else
                "%d rows kept, `complete: %s`" % (run["rows_kept"], str(run["complete"]).lower()))
        lines.append("| SIGINT | `tandem %s` interrupted | %d | — | %s |" % (run["command"], run["exit"], kept))
    programs = record["interposer_programs"]
    by_program = {}
    for case in programs["cases"] or []:
        program = case["name"].split("/")[-1]
        for policy in ("_shape_3_priority", "_sm_target_116", "_priority"):  # test_interposer_programs' names
            if program.endswith(policy):
                program = program[: -len(policy)]
                break
        by_program.setdefault(program, []).append(case["outcome"])
    lines += ["", "Programs with and without `tandem run` (`%s`; %s; %s):" % (name, where,
                                                                          ", ".join(record["python_packages"])),
              "", "| program | policies | identical results |", "|---|---|---|"]
    for program, outcomes in by_program.items():
        lines.append("| %s | %d | %d of %d |" % (program, len(outcomes), outcomes.count("passed"), len(outcomes)))
    if programs.get("dlsym_probe"):
        lines += ["", programs["dlsym_probe"] + "."]
    return "\n".join(lines)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--tables":
        print(tables(sys.argv[2]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", required=True)
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--command", required=True)
    args = parser.parse_args()
    logs = args.logs
    version = pc.capture([args.tandem, "--version"])
    commit = re.search(r"\(([0-9a-f]+(?:-dirty)?)\)", version)
    programs = gtest_cases(os.path.join(logs, "interposer-programs.gtest.json"))
    faults = gtest_cases(os.path.join(logs, "faults.gtest.json"))
    interrupts = None
    if os.path.exists(os.path.join(logs, "interrupt.jsonl")):
        interrupts = [json.loads(line) for line in open(os.path.join(logs, "interrupt.jsonl")) if line.strip()]
    probe = None
    summary_log = os.path.join(logs, "summary.log")
    if os.path.exists(summary_log):
        for line in open(summary_log, errors="replace"):
            if line.startswith("dlsym probe"):
                probe = line.strip()
    record = {
        "schema_version": 1,
        "kind": "reliability",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": args.command,
        "tandem": version,
        "commit": commit[1] if commit else None,
        "gpus": pc.capture(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).splitlines(),
        "python_packages": pc.capture([sys.executable, "-c",
                                "import importlib.metadata as m\n"
                                "for p in ('torch', 'jax', 'cupy-cuda13x'):\n"
                                "    try: print(p, m.version(p))\n"
                                "    except m.PackageNotFoundError: pass"]).splitlines(),
        "interposer_programs": {"summary": summary(programs), "cases": programs, "dlsym_probe": probe},
        "faults": {"summary": summary(faults), "cases": faults,
                   "timings": fault_timings(os.path.join(logs, "faults.log"))},
        "interrupt": interrupts,
    }
    json.dump(record, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
