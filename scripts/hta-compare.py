#!/usr/bin/env python3
"""tandem's share of communication hidden against Holistic Trace Analysis' (`holistictraceanalysis`,
TraceAnalysis.get_comm_comp_overlap) on the same training step (docs/RUN.md, "The timeline").

The two cannot record one run together: torch.profiler's Kineto takes CUPTI, and tandem's timeline
hands CUPTI over to it (docs/RUN.md). So each round runs the program twice, interleaved: once under
`tandem run --timeline --step-range step` (each rank's stats file gives its share hidden over the
timed steps) and once with `--profile DIR` (torch.profiler over the same timed steps, one trace per
rank), on which HTA computes its figure per rank. The script also applies both definitions to the
profiler's own trace, so that a difference can be told apart into definition and measurement:

  tandem  overlapped / communication busy over the steps; computation is every kernel, copy and
          memset that is not communication; communication is NCCL's kernels (and tandem's
          copy-engine route, absent here)
  HTA     overlapped / communication busy over the whole trace, per rank; communication is kernels
          named ^nccl.*Kernel, computation every other kernel (copies and memsets, "Memcpy"/"Memset",
          are neither)

    scripts/hta-compare.py --nproc 2 --rounds 2 --out hta.json -- --steps 10 --warmup 3
    scripts/hta-compare.py --table bench/results/h200x1-2026-12-01-hta-compare-balanced-shared-gpu.json
"""
import argparse
import datetime
import glob
import importlib.util
import json
import os
import re
import shlex
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("pytorch_compare", os.path.join(ROOT, "scripts", "pytorch-compare.py"))
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)
Maybe, MapOf, NUMBER = compare.Maybe, compare.MapOf, compare.NUMBER

NCCL_KERNEL = re.compile(r"^nccl.*Kernel")  # HTA's own test (hta/utils/utils.py)
MEMORY = re.compile(r"^(Memcpy|Memset|dma)")


def torchrun_argv(args, program, extra):
    argv = args.torchrun + ["--standalone", "--nproc-per-node", str(args.nproc)]
    if args.shared_gpu:
        argv.append(os.path.join(ROOT, "tests", "tools", "shared_gpu_rank.py"))
    return argv + [compare.program_path(program)] + list(args.program_args) + list(extra)


def merged(intervals):
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def covered(intervals):
    return sum(end - start for start, end in intervals)


def intersection(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append([start, end])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def shares_of_trace(path):
    """A Kineto trace's share hidden under both definitions, and its rank."""
    with open(path) as f:
        trace = json.load(f)
    rank = (trace.get("distributedInfo") or {}).get("rank")
    comm, comp_tandem, comp_hta = [], [], []
    for e in trace.get("traceEvents", []):
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        interval = (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
        name = e.get("name", "")
        if e["cat"] == "kernel" and NCCL_KERNEL.match(name):
            comm.append(interval)
            continue
        comp_tandem.append(interval)
        if e["cat"] == "kernel" and not MEMORY.match(name):
            comp_hta.append(interval)
    comm = merged(comm)
    busy = covered(comm)

    def share(comp):
        return covered(intersection(merged(comp), comm)) / busy if busy else None

    return rank, {"tandem_definition": share(comp_tandem), "hta_definition": share(comp_hta),
                  "communication_us": busy}


def hta_shares(trace_dir):
    """HTA's own figure per rank, or the reason it could not run."""
    try:
        from hta.trace_analysis import TraceAnalysis  # noqa: the package under comparison
    except Exception as e:  # noqa: any import failure is reported, not raised
        return None, f"holistictraceanalysis not importable: {e}"
    try:
        frame = TraceAnalysis(trace_dir=trace_dir).get_comm_comp_overlap(visualize=False)
        return {int(r): float(p) / 100 for r, p in zip(frame["rank"], frame["comp_comm_overlap_pctg"])}, None
    except Exception as e:  # noqa: HTA's failure is a result too
        return None, f"HTA failed: {e}"


def tandem_round(args, program):
    with tempfile.TemporaryDirectory(prefix="tandem-hta-") as tmp:
        argv = [args.tandem, "run", "--policy", "concurrent", "--log-level", "error", "--timeline", "--step-range",
                "step", "--stats", os.path.join(tmp, "stats-%p.json"), "--"] + torchrun_argv(args, program, [])
        code, output = compare.run_child(argv, dict(os.environ, **compare.ALWAYS_ENV), args.timeout)
        shares = {}
        for path in glob.glob(os.path.join(tmp, "stats-*.json")):
            with open(path) as f:
                t = json.load(f).get("timeline") or {}
            for d in t.get("devices", []):
                if t.get("rank") is not None:
                    shares[int(t["rank"])] = d.get("hidden_share")
        run = {"kind": "tandem", "command": shlex.join(argv), "exit_code": code, "shares": shares}
        if code != 0 or not shares:
            run["output_tail"] = compare.failure_text(output)
        return run


PROFILER_TAKES_CUPTI = "the program's profiler registered CUPTI's activity callbacks"  # tandem's warning


def profiler_round(args, program, keep_dir, under_tandem=False):
    """The program under torch.profiler (--profile): alone, or inside `tandem run --timeline`, where the
    profiler's start takes CUPTI over from tandem (docs/RUN.md, "Other profilers"); its profile must be
    what it is alone."""
    trace_dir = tempfile.mkdtemp(prefix="tandem-hta-traces-", dir=keep_dir)
    argv = torchrun_argv(args, program, ["--profile", trace_dir])
    if under_tandem:
        argv = [args.tandem, "run", "--policy", "concurrent", "--timeline", "--step-range", "step", "--"] + argv
    code, output = compare.run_child(argv, dict(os.environ, **compare.ALWAYS_ENV), args.timeout)
    run = {"kind": "profiler-under-tandem" if under_tandem else "profiler", "command": shlex.join(argv),
           "exit_code": code, "trace_dir": trace_dir, "recomputed": {}}
    if under_tandem:
        run["tandem_stepped_aside"] = PROFILER_TAKES_CUPTI in output
    traces = sorted(glob.glob(os.path.join(trace_dir, "*.json")))
    for path in traces:
        rank, shares = shares_of_trace(path)
        run["recomputed"][str(rank)] = shares
    if code != 0:
        run["hta"], run["hta_error"] = None, f"the profiled run failed (exit {code})"
    elif not traces:
        run["hta"], run["hta_error"] = None, f"the profiled run left no profiler trace in {trace_dir}"
    else:
        run["hta"], run["hta_error"] = hta_shares(trace_dir)
    if code != 0:
        run["output_tail"] = compare.failure_text(output)
    return run


def mean(values):
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def summarize(program, runs):
    """Per program: the mean over ranks, median over rounds, of each figure; the difference in points."""
    tandem = [mean(r["shares"].values()) for r in runs if r["kind"] == "tandem"]
    hta = [mean(r["hta"].values()) for r in runs if r["kind"] == "profiler" and r.get("hta")]
    on_trace = [mean(s["tandem_definition"] for s in r["recomputed"].values()) for r in runs if r["kind"] == "profiler"]
    hta_def = [mean(s["hta_definition"] for s in r["recomputed"].values()) for r in runs if r["kind"] == "profiler"]
    med = lambda v: statistics.median([x for x in v if x is not None]) if any(x is not None for x in v) else None
    s = {"program": program, "tandem": med(tandem), "hta": med(hta), "tandem_definition_on_profiler_trace": med(on_trace),
         "hta_definition_recomputed": med(hta_def)}
    under = [r for r in runs if r["kind"] == "profiler-under-tandem"]
    if under:
        s["profiled_under_tandem"] = {
            "runs": len(under), "exit_codes": [r["exit_code"] for r in under],
            "tandem_stepped_aside": all(r.get("tandem_stepped_aside") for r in under),
            "hta": med([mean((r.get("hta") or {}).values()) for r in under])}
    if s["tandem"] is not None and s["hta"] is not None:
        s["difference_points"] = 100 * (s["tandem"] - s["hta"])
        s["within_5_points"] = abs(s["difference_points"]) <= 5
    # Why a figure is missing: the first reason a round gave (a dash alone would read as a result).
    reasons = {"tandem": [f"tandem run (exit {r['exit_code']}) left no rank's share hidden in its stats files"
                          for r in runs if r["kind"] == "tandem" and not r["shares"]],
               "hta": [r["hta_error"] for r in runs if r["kind"] == "profiler" and r.get("hta_error")]}
    missing = {figure: (reasons[figure] or ["no round measured it"])[0] for figure in reasons if s[figure] is None}
    if missing:
        s["missing"] = missing
    return s


def missing_lines(summary):
    """'ddp_mlp: no HTA figure: holistictraceanalysis not importable: ...', one per figure missing."""
    names = {"tandem": "tandem", "hta": "HTA"}
    return [f"{s['program']}: no {names[figure]} figure: {why}"
            for s in summary for figure, why in (s.get("missing") or {}).items()]


def fmt(x):
    return "—" if x is None else f"{100 * x:.1f} %"


def spread(runs, program, kind, figure):
    """'a–b %' over the rounds of one program: each round's mean over ranks."""
    values = [mean(figure(r)) for r in runs if r["program"] == program and r["kind"] == kind]
    values = [v for v in values if v is not None]
    return f"{100 * min(values):.1f}–{100 * max(values):.1f} %" if values else "—"


def under_tandem_text(s):
    """'80.7 %, tandem stepped aside' for the profiled run inside tandem run, '—' where there was none."""
    u = s.get("profiled_under_tandem")
    if not u:
        return "—"
    failed = [c for c in u["exit_codes"] if c != 0]
    return (f"{fmt(u['hta'])}, " + ("tandem stepped aside" if u["tandem_stepped_aside"] else "no warning from tandem")
            + (f", exit {failed[0]}" if failed else ""))


def markdown_table(doc):
    """The comparison of one recorded file, as docs/RUN.md shows it."""
    p = doc.get("provenance", {})
    shared = " (ranks sharing one GPU: times distorted, the shares are each run's own)" if doc.get("shared_gpu") else ""
    rounds = max((r.get("round", 0) for r in doc.get("runs", [])), default=0)
    out = [f"{doc.get('nproc')} ranks on {', '.join(p.get('gpus', [])) or 'GPU'}{shared}, tandem {p.get('commit') or '?'}, "
           f"{doc.get('date', '')[:10]}; the programs' arguments: {' '.join(doc.get('program_args', []))}; "
           f"{rounds} rounds, medians over rounds of the mean over ranks:", "",
           "| program | tandem | HTA | difference | tandem's definition on the profiler's trace | "
           "HTA's definition recomputed | tandem over rounds | HTA over rounds | HTA, profiled inside "
           "`tandem run --timeline` |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    runs = doc.get("runs", [])
    for s in doc.get("summary", []):
        diff = "—" if "difference_points" not in s else f"{s['difference_points']:+.1f} pp"
        out.append(f"| {s['program']} | {fmt(s['tandem'])} | {fmt(s['hta'])} | {diff} | "
                   f"{fmt(s['tandem_definition_on_profiler_trace'])} | {fmt(s['hta_definition_recomputed'])} | "
                   f"{spread(runs, s['program'], 'tandem', lambda r: (r.get('shares') or {}).values())} | "
                   f"{spread(runs, s['program'], 'profiler', lambda r: (r.get('hta') or {}).values())} | "
                   f"{under_tandem_text(s)} |")
    missing = missing_lines(doc.get("summary", []))
    return "\n".join(out + ([""] + [f"Missing: {line}." for line in missing] if missing else []))


SUMMARY = {"program": str, "tandem": Maybe(NUMBER), "hta": Maybe(NUMBER),
           "tandem_definition_on_profiler_trace": Maybe(NUMBER), "hta_definition_recomputed": Maybe(NUMBER),
           "?difference_points": NUMBER, "?missing": MapOf(str),
           "?profiled_under_tandem": {"exit_codes": [int], "tandem_stepped_aside": bool, "hta": Maybe(NUMBER)}}
DOC = {"?provenance": compare.PROVENANCE, "?date": str, "?program_args": [str], "nproc": int, "?shared_gpu": bool,
       "?runs": [{"kind": str, "program": str, "?round": int, "?shares": MapOf(Maybe(NUMBER)),
                  "?hta": Maybe(MapOf(Maybe(NUMBER)))}],
       "summary": compare.Rows(SUMMARY)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--tandem", default=os.path.join(ROOT, "build", "bin", "tandem"))
    parser.add_argument("--torchrun", default="torchrun")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--programs", default="ddp_mlp,fsdp2_mlp")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--traces", default=None, help="keep the profiler's traces in this folder")
    parser.add_argument("--no-under-tandem", dest="under_tandem", action="store_false",
                        help="leave out the run of the profiled program inside `tandem run --timeline` (one per "
                             "program: its profile must be the one it makes alone)")
    parser.add_argument("--out", help="JSON file")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the Markdown table of these files and stop")
    parser.add_argument("program_args", nargs="*")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.table:
        for path in args.table:
            print(markdown_table(compare.read_record(path, "hta-compare", DOC, "hta-compare JSON", key="tool")) + "\n")
        return 0
    args.torchrun = shlex.split(args.torchrun)
    args.program_args = args.program_args or ["--steps", "10", "--warmup", "3"]
    args.shared_gpu = compare.gpu_count() < args.nproc
    keep = args.traces or tempfile.mkdtemp(prefix="tandem-hta-")
    os.makedirs(keep, exist_ok=True)
    doc = {"tool": "hta-compare", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "nproc": args.nproc, "shared_gpu": args.shared_gpu, "program_args": args.program_args,
           "provenance": compare.provenance(args.tandem, compare.launcher_python(args.torchrun)),
           "definitions": {"tandem": "overlapped / communication busy over the NVTX steps; computation = every "
                                     "kernel, copy and memset that is not communication",
                           "hta": "overlapped / communication busy over the whole trace; computation = kernels not "
                                  "named ^nccl.*Kernel, copies and memsets excluded"},
           "runs": [], "summary": []}
    status = 0
    for program in [p for p in args.programs.split(",") if p]:
        runs = []
        for round_ in range(args.rounds):
            steps = [lambda: tandem_round(args, program), lambda: profiler_round(args, program, keep)]
            if round_ % 2:
                steps.reverse()  # which goes first alternates, so that drift favours neither
            if round_ == 0 and args.under_tandem:
                steps.append(lambda: profiler_round(args, program, keep, under_tandem=True))
            for step in steps:
                run = step()
                run.update(program=program, round=round_ + 1)
                runs.append(run)
                status |= 1 if run["exit_code"] != 0 else 0
        doc["runs"] += runs
        doc["summary"].append(summarize(program, runs))
        if args.out:
            compare.write_json_atomically(args.out, doc)
    print(f"{'program':10} {'tandem':>9} {'HTA':>9} {'diff':>8} {'tandem def. on trace':>21} {'HTA def. recomputed':>20}  "
          "HTA profiled inside tandem run")
    for s in doc["summary"]:
        diff = "—" if "difference_points" not in s else f"{s['difference_points']:+.1f} pp"
        print(f"{s['program']:10} {fmt(s['tandem']):>9} {fmt(s['hta']):>9} {diff:>8} "
              f"{fmt(s['tandem_definition_on_profiler_trace']):>21} {fmt(s['hta_definition_recomputed']):>20}  "
              f"{under_tandem_text(s)}")
    for r in doc["runs"]:
        if r.get("hta_error"):
            print(f"{r['program']} round {r['round']}: {r['hta_error']}", file=sys.stderr)
    missing = missing_lines(doc["summary"])
    for line in missing:
        print(line)
    print("# %s: %d programs, %d figures missing" % ("FAILED" if status or missing else "OK", len(doc["summary"]),
                                                    len(missing)))
    return 1 if status or missing else 0


if __name__ == "__main__":
    compare.run_script(main, "hta-compare")
