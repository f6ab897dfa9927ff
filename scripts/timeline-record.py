#!/usr/bin/env python3
"""The timeline (`tandem run --timeline`, docs/RUN.md) on real programs: examples/pytorch's DDP and
FSDP2 steps, stock (`--policy concurrent`) and under `--policy priority`, with and without
torch.compile; and what recording costs, interleaved runs with and without --timeline.

Each run is one `tandem run ... -- torchrun --standalone --nproc-per-node N PROGRAM` launch; with fewer
GPUs than ranks, the ranks share GPU 0 (tests/tools/shared_gpu_rank.py: each rank its own
NCCL_HOSTID), which distorts every time (say so wherever the numbers go). Per run: the job's figures
(`--timeline-json`: each step's slowest rank, medians over the steps) and the program's own median
step time (its TANDEM_RESULT line), which tandem's median step should come close to. Writes JSON
(--out) and prints a table; --table renders the Markdown table of such a file.

    scripts/timeline-record.py --tandem build/bin/tandem --nproc 2 --out timeline.json
    scripts/timeline-record.py --parts overhead --rounds 5 --out overhead.json -- --steps 30
    scripts/timeline-record.py --table bench/results/timeline-pytorch-h200-2026-12-01.json
"""
import argparse
import datetime
import importlib.util
import json
import os
import shlex
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("pytorch_compare", os.path.join(ROOT, "scripts", "pytorch-compare.py"))
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)
Maybe, NUMBER = compare.Maybe, compare.NUMBER

PROGRAMS = ("ddp_mlp", "fsdp2_mlp")
PARTS = ("figures", "compile", "overhead")
POLICIES = ("concurrent", "priority")


def launch_argv(args, program, policy, timeline, json_file=None, extra=(), nproc=None):
    """tandem run [--timeline ...] -- torchrun ... PROGRAM ARGS (nproc ranks, default --nproc)."""
    nproc = nproc or args.nproc
    argv = [args.tandem, "run", "--policy", policy, "--log-level", "error"]
    if timeline:
        argv += ["--timeline", "--step-range", "step"]
        if json_file:
            argv += ["--timeline-json", json_file]
    argv += ["--"] + args.torchrun + ["--standalone", "--nproc-per-node", str(nproc)]
    if nproc > args.gpus:
        argv.append(os.path.join(ROOT, "tests", "tools", "shared_gpu_rank.py"))
    argv.append(compare.program_path(program))
    return argv + list(args.program_args) + list(extra)


def one_run(args, program, policy, timeline, extra=(), nproc=None):
    """One launch: its exit code, the program's result line and, with the timeline, the job's figures."""
    with tempfile.TemporaryDirectory(prefix="tandem-timeline-record-") as tmp:
        json_file = os.path.join(tmp, "job.json")
        argv = launch_argv(args, program, policy, timeline, json_file, extra, nproc)
        env = dict(os.environ, **compare.ALWAYS_ENV)
        start = time.monotonic()
        code, output = compare.run_child(argv, env, args.timeout)
        run = {"program": program, "policy": policy, "timeline": timeline, "compile": "--compile" in extra,
               "command": shlex.join(argv), "exit_code": code, "seconds": round(time.monotonic() - start, 2)}
        result = compare.parse_result(output) if code == 0 else None
        problem = "no TANDEM_RESULT line" if result is None else compare.result_problem(result)
        run["step_ms_median"] = None if problem else result.get("step_ms_median")
        run["loss"] = None if problem else result.get("loss")
        if timeline and os.path.exists(json_file):
            with open(json_file) as f:
                run["job"] = json.load(f)["job"]
        if not problem and timeline and not run.get("job", {}).get("summary"):
            problem = "no timeline summary from tandem run"
        run["ok"] = code == 0 and not problem
        if not run["ok"]:
            run["failure"] = problem if code == 0 else f"exit {code}"
            run["output_tail"] = compare.failure_text(output) + (f"\n({problem})" if code == 0 else "")
    return run


def figures_row(run):
    s = (run.get("job") or {}).get("summary") or {}
    return {"program": run["program"], "policy": run["policy"], "compile": run["compile"],
            "program_step_ms": run["step_ms_median"], "tandem_step_ms": s.get("step_ms"),
            "computation_ms": s.get("computation_ms"), "communication_ms": s.get("communication_ms"),
            "overlapped_ms": s.get("overlapped_ms"), "exposed_communication_ms": s.get("exposed_communication_ms"),
            "idle_ms": s.get("idle_ms"), "hidden_share": s.get("hidden_share"), "steps": s.get("steps"),
            "slowest_most_often": s.get("slowest_most_often"), "records_lost": (run.get("job") or {}).get("records_lost")}


def overhead(runs):
    """The median step with and without --timeline over the interleaved rounds, and the cost."""
    plain = [r["step_ms_median"] for r in runs if not r["timeline"] and r["ok"]]
    timed = [r["step_ms_median"] for r in runs if r["timeline"] and r["ok"]]
    out = {"rounds": len(plain), "without_ms": plain, "with_ms": timed}
    if plain and timed:
        a, b = statistics.median(plain), statistics.median(timed)
        out.update({"without_median_ms": a, "with_median_ms": b, "overhead": (b - a) / a,
                    "without_spread_ms": max(plain) - min(plain), "with_spread_ms": max(timed) - min(timed)})
    return out


def ranks_text(o):
    """The overhead runs' ranks, and whether they shared a GPU (older files: not recorded)."""
    if "nproc" not in o:
        return "ranks as above"
    return f"{o['nproc']} rank{'s' if o['nproc'] != 1 else ''}" + (" sharing one GPU" if o.get("shared_gpu") else "")


def fmt(x, spec=".3f"):
    return "—" if x is None else format(x, spec)


# A figures row's times, in the tables' order.
TIMES = ("program_step_ms", "tandem_step_ms", "computation_ms", "communication_ms", "exposed_communication_ms", "idle_ms")


def text_table(doc):
    lines = [f"{'program':10} {'policy':10} {'compile':7} {'step (prog)':>11} {'step':>8} {'comp':>8} {'comm':>8} "
             f"{'exposed':>8} {'idle':>8} {'hidden':>7}"]
    for r in doc.get("figures", []):
        hidden = "—" if r["hidden_share"] is None else f"{100 * r['hidden_share']:.1f}%"
        lines.append(f"{r['program']:10} {r['policy']:10} {str(r['compile']).lower():7} {fmt(r['program_step_ms']):>11} "
                     + " ".join(f"{fmt(r[k]):>8}" for k in TIMES[1:]) + f" {hidden:>7}")
    o = doc.get("overhead")
    if o and "overhead" in o:
        lines.append(f"overhead of --timeline ({o['rounds']} rounds, {o['program']}, {ranks_text(o)}): "
                     f"{o['without_median_ms']:.3f} ms "
                     f"without, {o['with_median_ms']:.3f} ms with: {100 * o['overhead']:+.2f} % (spreads "
                     f"{o['without_spread_ms']:.3f} / {o['with_spread_ms']:.3f} ms)")
    return "\n".join(lines)


def markdown_table(doc):
    p = doc.get("provenance", {})
    where = f"{', '.join(p.get('gpus', [])) or 'GPU'}, tandem {p.get('commit') or '?'}, {doc.get('date', '')[:10]}; " \
            f"the programs' arguments: {' '.join(doc.get('program_args') or []) or 'their defaults'}"
    out = []
    if doc.get("figures"):
        shared = " (ranks sharing one GPU: times distorted)" if doc.get("shared_gpu") else ""
        out += [f"{doc.get('nproc')} ranks on {where}{shared}:", "",
                "| program | policy | torch.compile | step (program) ms | step (tandem) ms | computation ms | "
                "communication ms | exposed ms | idle ms | hidden |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in doc.get("figures", []):
        hidden = "—" if r["hidden_share"] is None else f"{100 * r['hidden_share']:.1f} %"
        out.append("| " + " | ".join([r["program"], r["policy"], "yes" if r["compile"] else "no"]
                                     + [fmt(r[k]) for k in TIMES] + [hidden]) + " |")
    o = doc.get("overhead")
    if o and "overhead" in o:
        out += ([""] if out else []) + [
            f"Cost of recording ({o['program']} under {o.get('policy', 'priority')}, {ranks_text(o)}, {o['rounds']} "
            f"interleaved rounds; {where}): median step {o['without_median_ms']:.3f} ms without --timeline "
            f"(spread {o['without_spread_ms']:.3f} ms), {o['with_median_ms']:.3f} ms with it (spread "
            f"{o['with_spread_ms']:.3f} ms): {100 * o['overhead']:+.2f} %."]
    return "\n".join(out)


FIGURE = {"program": str, "policy": str, "compile": bool, "hidden_share": Maybe(NUMBER),
          **{k: Maybe(NUMBER) for k in TIMES}}
DOC = {"?provenance": compare.PROVENANCE, "?date": str, "?program_args": Maybe([str]), "nproc": int,
       "?shared_gpu": bool, "?figures": [FIGURE], "?overhead": {"program": str, "rounds": int, "?policy": str,
                                                                "?nproc": int, "?shared_gpu": bool}}
# The overhead's figures, where both kinds of run gave some ("overhead" in it).
OVERHEAD = {k: NUMBER for k in ("without_median_ms", "with_median_ms", "overhead", "without_spread_ms",
                                "with_spread_ms")}


def read_doc(path):
    """A timeline-record file with every field its tables read, or a one-line UserError naming what is wrong."""
    doc = compare.read_record(path, "timeline-record", DOC, "timeline JSON", key="tool")
    o = doc.get("overhead") or {}
    if "overhead" in o:
        compare.check_shape(path, o, OVERHEAD, "overhead")
    if not doc.get("figures") and "overhead" not in o:
        raise compare.UserError(f"'{path}' holds no figures and no overhead: nothing was measured")
    return doc


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--tandem", default=os.path.join(ROOT, "build", "bin", "tandem"))
    parser.add_argument("--torchrun", default="torchrun", help="the launcher (split like a shell)")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--parts", default=",".join(PARTS), help="figures, compile, overhead (comma-separated)")
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--rounds", type=int, default=3, help="overhead: interleaved rounds (at least 3)")
    parser.add_argument("--overhead-nproc", type=int, default=None,
                        help="overhead: ranks (default: one per visible GPU, at most --nproc, so that the times "
                             "are not those of ranks sharing a GPU)")
    parser.add_argument("--timeout", type=float, default=420)
    parser.add_argument("--out", help="JSON file")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the Markdown table of these files and stop")
    parser.add_argument("program_args", nargs="*", help="after --: the programs' arguments (default --steps 20 --warmup 5)")
    args = parser.parse_args(argv)
    args.torchrun = shlex.split(args.torchrun)
    args.parts = [p for p in args.parts.split(",") if p]
    args.programs = [p for p in args.programs.split(",") if p]
    if not args.program_args:
        args.program_args = ["--steps", "20", "--warmup", "5"]
    for p in args.parts:
        if p not in PARTS:
            parser.error(f"--parts: {p!r} is not one of {', '.join(PARTS)}")
    if "overhead" in args.parts and args.rounds < 3:
        parser.error("--rounds: the overhead needs at least 3 interleaved rounds")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.table:
        for path in args.table:
            print(markdown_table(read_doc(path)))
        return 0
    gpus = compare.gpu_count()
    args.gpus = gpus
    args.shared_gpu = gpus < args.nproc
    overhead_nproc = args.overhead_nproc or max(1, min(gpus, args.nproc))
    doc = {"tool": "timeline-record", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "command": shlex.join([sys.argv[0]] + (sys.argv[1:] if argv is None else argv)),
           "nproc": args.nproc, "gpus_visible": gpus, "shared_gpu": args.shared_gpu,
           "program_args": args.program_args,
           "provenance": compare.provenance(args.tandem, compare.launcher_python(args.torchrun)),
           "runs": [], "figures": []}

    def save():
        if args.out:
            compare.write_json_atomically(args.out, doc)

    status = 0
    for compiled in [False] * ("figures" in args.parts) + [True] * ("compile" in args.parts):
        for program in args.programs:
            for policy in POLICIES:
                run = one_run(args, program, policy, True, ["--compile"] if compiled else [])
                doc["runs"].append(run)
                doc["figures"].append(figures_row(run))
                print(f"{program} {policy}{' compile' if compiled else ''}: "
                      + ("ok" if run["ok"] else f"FAILED ({run['failure']})\n" + run["output_tail"]), file=sys.stderr)
                status |= 0 if run["ok"] else 1
                save()
    if "overhead" in args.parts:
        program = args.programs[0]
        runs = []
        for round_ in range(args.rounds):
            # Alternate which goes first, so that drift favours neither.
            for timeline in ([False, True] if round_ % 2 == 0 else [True, False]):
                run = one_run(args, program, "priority", timeline, nproc=overhead_nproc)
                run["round"] = round_ + 1
                runs.append(run)
                doc["runs"].append(run)
                status |= 0 if run["ok"] else 1
                save()
        doc["overhead"] = dict(overhead(runs), program=program, policy="priority", nproc=overhead_nproc,
                               shared_gpu=overhead_nproc > gpus)
    save()
    print(text_table(doc))
    return status


if __name__ == "__main__":
    compare.run_script(main, "timeline-record")
