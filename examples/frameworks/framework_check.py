#!/usr/bin/env python3
"""Megatron-core and DeepSpeed under tandem: every configuration of examples/frameworks stock and under
`tandem run` with each policy, losses against stock, the reach by route and reason, what the policy's
other controls reached, and the timeline with each framework's overlap option on and off
(docs/FRAMEWORKS.md; scripts/gpu-check.sh frameworks).

The rows are scripts/reach-check.py's, run by its own machinery (its launches, time limits, stats sums,
verdicts and table): this script adds the framework programs to its program list and runs the stock row
of each program once and its `tandem run` row under every policy, all in one pool of `--jobs` launches
with the timeline runs (on SIGTERM, what finished is still written and tabled). Each policy gets one reach-check
record (frameworks-reach-<policy>.json, which `scripts/reach-check.py --table` prints again) holding the
stock rows and that policy's rows, and its table on stdout; a policy without copy-engine has no reach to
speak of (its collectives all stay with NCCL, `not-requested`), but its losses, its communicators and
NCCL launches (priority, nccl-*) and its shaped launches (shape, sm-target) are shown. Ranks share one
GPU (NCCL_HOSTID per rank, tests/tools/shared_gpu_rank.py): results must be stock's, times mean nothing.

    examples/frameworks/framework_check.py --out-dir out/ --jobs 3
    examples/frameworks/framework_check.py --only 'megatron-*' --policies copy-engine --out-dir out/
    examples/frameworks/framework_check.py --timeline-only --out-dir out/   # overlap on/off, no rows
    examples/frameworks/framework_check.py --dry-run                        # the command lines
"""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import re
import shlex
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("reach_check", os.path.join(ROOT, "scripts", "reach-check.py"))
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)
pc = rc.pc

MEGATRON = "examples/frameworks/megatron_train.py"
DEEPSPEED = "examples/frameworks/deepspeed_train.py"
# The configurations issue 40 asks for (Megatron-core's DP with overlap_grad_reduce, the distributed
# optimizer with overlap_param_gather, TP=2 without and with sequence parallelism, PP=2; DeepSpeed ZeRO-1, 2
# and 3 with overlap_comm, and ZeRO-2 started by DeepSpeed's own launcher with `tandem run` around it).
# tandem.torch has no hook into either framework's own collectives: stock and tandem-run.
FRONT_ENDS = ("stock", "tandem-run")
# Megatron's default bucket (40 M parameters or more) would hold the whole small model: one bucket, reduced
# once backward has ended, whatever overlap_grad_reduce says. 1 M parameters a bucket gives several.
MEGATRON_BUCKET = ["--bucket-size", "1000000"]
PROGRAMS = {
    "megatron-dp": {"launch": "torchrun", "script": MEGATRON, "args": ["--overlap-grad-reduce"] + MEGATRON_BUCKET},
    "megatron-distopt": {"launch": "torchrun", "script": MEGATRON,
                         "args": ["--distributed-optimizer", "--overlap-param-gather"] + MEGATRON_BUCKET},
    "megatron-tp2": {"launch": "torchrun", "script": MEGATRON, "args": ["--tp", "2"] + MEGATRON_BUCKET},
    # Sequence parallelism: the tensor-parallel all-reduces become all-gathers and reduce-scatters along the
    # sequence, and the norms' gradients are all-reduced over the TP group (megatron_train.py's
    # SequenceParallelTorchNorm, as neither Apex nor Transformer Engine installs on the GPU machine).
    "megatron-tp2-sp": {"launch": "torchrun", "script": MEGATRON,
                        "args": ["--tp", "2", "--sequence-parallel"] + MEGATRON_BUCKET},
    "megatron-pp2": {"launch": "torchrun", "script": MEGATRON, "args": ["--pp", "2"] + MEGATRON_BUCKET},
    "deepspeed-zero1": {"launch": "torchrun", "script": DEEPSPEED, "args": ["--zero-stage", "1", "--overlap-comm"]},
    "deepspeed-zero2": {"launch": "torchrun", "script": DEEPSPEED, "args": ["--zero-stage", "2", "--overlap-comm"]},
    "deepspeed-zero3": {"launch": "torchrun", "script": DEEPSPEED, "args": ["--zero-stage", "3", "--overlap-comm"]},
    "deepspeed-zero2-launcher": {"launch": "deepspeed", "script": DEEPSPEED,
                                 "args": ["--zero-stage", "2", "--overlap-comm"]},
}
for _spec_of in PROGRAMS.values():
    _spec_of["front_ends"] = FRONT_ENDS
# The timeline pairs: each framework's overlap option on and off (and Megatron's DP overlap with
# CUDA_DEVICE_MAX_CONNECTIONS=1, which tensor-parallel overlap asks for and which its users report defeats
# data-parallel overlap).
TIMELINE = [
    ("megatron-dp", "overlap-on", MEGATRON, ["--overlap-grad-reduce"] + MEGATRON_BUCKET, {}),
    ("megatron-dp", "overlap-off", MEGATRON, ["--no-overlap-grad-reduce"] + MEGATRON_BUCKET, {}),
    ("megatron-dp", "overlap-on, CUDA_DEVICE_MAX_CONNECTIONS=1", MEGATRON, ["--overlap-grad-reduce"] + MEGATRON_BUCKET,
     {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
    ("deepspeed-zero2", "overlap-on", DEEPSPEED, ["--zero-stage", "2", "--overlap-comm"], {}),
    ("deepspeed-zero2", "overlap-off", DEEPSPEED, ["--zero-stage", "2", "--no-overlap-comm"], {}),
]
POLICIES = ("copy-engine", "priority+nccl-ctas:2..4", "shape:2+priority")


def _normalized_results(program, results, _original=rc.normalized_results):
    """The framework programs report losses as the Llama programs do: every step's, then the final one."""
    if program in PROGRAMS:
        r = results[0] if results else {}
        return {"losses": (r.get("losses") or []) + ([r["loss"]] if r.get("loss") is not None else [])}
    return _original(program, results)


def install():
    """reach-check's machinery with the framework programs as its program list."""
    rc.PROGRAMS.clear()
    rc.PROGRAMS.update(PROGRAMS)
    rc.normalized_results = _normalized_results


def slug(policy):
    return re.sub(r"[^A-Za-z0-9]+", "-", policy).strip("-")


def framework_versions(python):
    out = {}
    for name, code in (("megatron-core", "from megatron.core import package_info as p; print(p.__version__)"),
                       ("deepspeed", "import deepspeed; print(deepspeed.__version__)")):
        text = pc.capture([python, "-W", "ignore", "-c", code])
        out[name] = text.splitlines()[-1] if text else None
    return out


def shaping_of(stats_dir):
    """The targeted compute controls' counts over a row's rank processes (not torchrun's)."""
    docs, _ = rc.read_stats(stats_dir)
    docs = [d for d in docs if d.get("launches", {}).get("compute")]
    return {"processes": len(docs),
            "compute_launches": sum(d["launches"].get("compute", 0) for d in docs),
            "shaped": sum(d.get("compute_shaped", 0) for d in docs),
            "left_alone_no_collective": sum(d.get("skipped", {}).get("no-collective-in-flight", 0) for d in docs),
            "skipped": {k: sum(d.get("skipped", {}).get(k, 0) for d in docs)
                        for k in sorted({k for d in docs for k in d.get("skipped", {})})},
            "gemms_capped_beside": sum(d.get("cublas", {}).get("gemms_capped_beside_collective", 0) for d in docs),
            "gemms_left_alone": sum(d.get("cublas", {}).get("gemms_left_alone", 0) for d in docs)}


def run_row(row, cfg, work, timeout):
    """reach-check's run_row, with the shaped launches of a tandem-run row."""
    r = rc.run_row(row, cfg, work, timeout)
    r["policy"] = cfg["policy"] if row["front_end"] == "tandem-run" else None
    if row["front_end"] == "tandem-run":
        r["shaping"] = shaping_of(os.path.join(r["logs"], "stats"))
    return r


def shaping_table(rows, policy):
    names = rc.token_names(policy)
    if not any(n in ("shape", "sm-target") for n in names):
        return []
    lines = ["", "The targeted compute controls (`tandem run`, summed over the ranks):", "",
             "| program | ranks | compute launches | shaped beside a collective | left alone (no collective in flight) "
             "| other skips | GEMMs capped / left every SM |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r.get("shaping")
        if r["front_end"] != "tandem-run" or not s:
            continue
        other = "; ".join(f"{k} {v}" for k, v in s["skipped"].items() if k != "no-collective-in-flight" and v)
        lines.append(f"| {r['program']} | {r['ranks']} | {s['compute_launches']} | {s['shaped']} | "
                     f"{s['left_alone_no_collective']} | {other or 'none'} | {s['gemms_capped_beside']} / "
                     f"{s['gemms_left_alone']} |")
    return lines


def policy_table(record):
    """reach-check's table for one policy, plus the shaped launches; without copy-engine the reach line
    says the route was not asked instead of listing every row."""
    text = rc.markdown_table(record)
    policy = record["config"]["policy"]
    if "copy-engine" not in rc.token_names(policy):
        text = re.sub(r"Rows below 99 % of the bytes between ranks through the route: .*",
                      "The policy has no copy-engine: every collective stays with NCCL (`not-requested`).", text)
    return "\n".join([text] + shaping_table(record["rows"], policy))


def timeline_pairs(args):
    only = [p.strip() for p in args.only.split(",") if p.strip()]
    return [t for t in TIMELINE if not only or any(rc.fnmatch.fnmatchcase(t[0], p.split("/")[0]) for p in only)]


def timeline_run(pair, args, cfg, work):
    """`tandem run --policy concurrent --timeline` of one configuration: the job's summary and every step."""
    program, label, script, extra, env = pair
    folder = rc.fresh_folder(os.path.join(work, "timeline", slug(program + "-" + label)))
    tl_json = os.path.join(folder, "timeline.json")
    argv = ([cfg["tandem_bin"], "run", "--policy", "concurrent", "--step-range", "step", "--timeline-json", tl_json,
             "--"] + list(cfg["torchrun"]) + ["--standalone", "--nproc-per-node", str(args.timeline_ranks),
                                              os.path.join(ROOT, rc.SHARED_GPU_RANK), os.path.join(ROOT, script)]
            + extra + shlex.split(args.program_args) + shlex.split(args.timeline_args))
    launch = {"argv": argv, "env": {**rc.ALWAYS_ENV, **env}}
    start = time.monotonic()
    [(code, output)] = rc.run_processes([launch], args.timeout, folder)
    entry = {"program": program, "variant": label, "command": shlex.join(argv), "env": env, "exit_code": code,
             "seconds": round(time.monotonic() - start, 1)}
    try:
        with open(tl_json) as f:
            job = json.load(f).get("job") or {}
        entry["summary"] = job.get("summary")
        entry["steps"] = [{k: s.get(k) for k in ("index", "step_ns", "computation_ns", "communication_ns",
                                                 "overlapped_ns", "exposed_communication_ns", "idle_ns",
                                                 "hidden_share")} for s in job.get("steps", [])]
    except (OSError, ValueError) as e:
        entry["summary"] = None
        entry["error"] = f"no timeline JSON: {e}"
    result = rc.results_of(output.splitlines())
    entry["losses"] = (result[-1].get("losses") if result else None)
    if code != 0:
        entry["failure"] = pc.failure_text(output)[-2000:]
    print(f"timeline {program} {label}: exit {code}, {entry['seconds']:.0f} s", file=sys.stderr, flush=True)
    return entry


def timeline_table(entries):
    lines = ["", "The timeline (`tandem run --policy concurrent --timeline --step-range step`, each step's slowest "
             "rank, medians over the timed steps; ranks sharing one GPU: the communication goes over sockets and the "
             "times are not speed results):", "",
             "| program | overlap option | step ms | computation ms | communication ms | overlapped ms "
             "| exposed communication ms | idle ms | hidden | exposed ms, step by step |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for e in entries:
        s = e.get("summary")
        if not s:
            why = f"FAILED (exit {e['exit_code']})" if e["exit_code"] else "no timeline recorded"
            lines.append(f"| {e['program']} | {e['variant']} | {why} | | | | | | | |")
            continue
        per_step = ", ".join("%.2f" % (x["exposed_communication_ns"] / 1e6) for x in e.get("steps") or []
                             if x.get("exposed_communication_ns") is not None)
        lines.append("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.1f %% | %s |" % (
            e["program"], e["variant"], s["step_ms"], s["computation_ms"], s["communication_ms"], s["overlapped_ms"],
            s["exposed_communication_ms"], s["idle_ms"], 100 * (s.get("hidden_share") or 0), per_step or "—"))
    # The option's effect: overlap on must hide more than off (the check these frameworks' users lack), and
    # change no result (at 2 ranks every variant's losses are the same, bitwise).
    for program in sorted({e["program"] for e in entries}):
        losses = {e["variant"]: e.get("losses") for e in entries if e["program"] == program and e.get("losses")}
        if len(losses) > 1:
            same = len({tuple(v) for v in losses.values()}) == 1
            lines.append(f"- {program}: losses {'the same bitwise' if same else 'DIFFER'} over "
                         f"{', '.join(sorted(losses))}")
    by = {(e["program"], e["variant"]): e.get("summary") for e in entries}
    for program in sorted({e["program"] for e in entries}):
        on, off = by.get((program, "overlap-on")), by.get((program, "overlap-off"))
        if on and off and on.get("hidden_share") is not None and off.get("hidden_share") is not None:
            verdict = "hides more with the option on" if on["hidden_share"] > off["hidden_share"] else \
                "does NOT hide more with the option on"
            lines.append(f"- {program}: {verdict} ({100 * on['hidden_share']:.1f} % against "
                         f"{100 * off['hidden_share']:.1f} % of the communication hidden; exposed "
                         f"{on['exposed_communication_ms']:.3f} ms against {off['exposed_communication_ms']:.3f} ms)")
    return lines


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--ranks", default="2", help="rank counts, comma-separated (default 2)")
    parser.add_argument("--only", default="", help="programs or rows (patterns over PROGRAM/RANKS/FRONT-END)")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        help="the tandem-run rows' policies, comma-separated (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=3, help="launches at once on the GPU (default 3)")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per launch (default 240)")
    parser.add_argument("--program-args", default="", help="more arguments for every program (e.g. '--steps 3')")
    parser.add_argument("--timeline", action=argparse.BooleanOptionalAction, default=True,
                        help="the overlap on/off timeline runs (default on)")
    parser.add_argument("--timeline-only", action="store_true", help="only the timeline runs")
    parser.add_argument("--timeline-ranks", type=int, default=2, help="ranks of the timeline runs (default 2)")
    parser.add_argument("--timeline-args", default="--steps 6 --warmup 2",
                        help="the timeline runs' program arguments (default: %(default)s)")
    parser.add_argument("--tandem-bin", default=os.path.join(ROOT, "build", "bin", "tandem"))
    parser.add_argument("--pythonpath", default=None, help="where tandem.torch is found (reach-check's default)")
    parser.add_argument("--torchrun", default=None, help="the launcher (default torchrun, else python -m torch.distributed.run)")
    parser.add_argument("--python", default=None, help="the Python of the programs (default: torchrun's)")
    parser.add_argument("--work-dir", default=None, help="logs and stats per launch (default: a new temporary folder)")
    parser.add_argument("--out-dir", default=None, help="write the JSON records here")
    parser.add_argument("--dry-run", action="store_true", help="print every launch's command line, run none")
    args = parser.parse_args(argv)
    try:
        args.rank_list = [int(x) for x in args.ranks.split(",") if x.strip()]
    except ValueError:
        raise rc.UserError(f"--ranks '{args.ranks}' is not a comma-separated list of numbers")
    if not args.rank_list or any(n < 2 for n in args.rank_list):
        raise rc.UserError(f"--ranks '{args.ranks}': every rank count must be at least 2")
    args.policy_list = [p.strip() for p in args.policies.split(",") if p.strip()]
    if args.jobs < 1 or args.timeout <= 0:
        raise rc.UserError("--jobs must be at least 1 and --timeout positive")
    if args.out_dir and not os.path.isdir(args.out_dir):
        raise rc.UserError(f"--out-dir '{args.out_dir}': not a folder")
    pc.launch_paths(args)
    args.python = args.python or pc.launcher_python(args.torchrun)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    install()
    args = parse_args(argv)
    rows = rc.select_rows(rc.all_rows(args.rank_list), args.only)
    stock = [r for r in rows if r["front_end"] == "stock"]
    policy_rows = {p: [r for r in rows if r["front_end"] == "tandem-run"] for p in args.policy_list}
    base = {"tandem_bin": args.tandem_bin, "overlap_bin": None, "pythonpath": args.pythonpath,
            "torchrun": args.torchrun, "python": args.python, "llama_args": [], "jax_args": [], "policy": "concurrent"}
    extra = shlex.split(args.program_args)
    if extra:
        for spec in rc.PROGRAMS.values():
            spec["args"] = spec["args"] + extra
    if args.dry_run:
        for row in stock:
            for launch in rc.row_launches(row, base, "STATS_DIR", 29500):
                print(f"{row['id']:34s} {shlex.join(launch['argv'])}")
        for policy, prow in policy_rows.items():
            for row in prow:
                for launch in rc.row_launches(row, {**base, "policy": policy}, "STATS_DIR", 29500):
                    print(f"{row['id']:34s} {shlex.join(launch['argv'])}")
        return 0
    work = args.work_dir or tempfile.mkdtemp(prefix="framework-check-")
    os.makedirs(work, exist_ok=True)
    print(f"# framework-check: logs in {work}", file=sys.stderr, flush=True)
    head = pc.record_head("reach-check", argv, args.tandem_bin, args.python)
    head["versions"].update(rc.versions_of(args.python))
    head["versions"].update(framework_versions(args.python))
    # Every launch in one pool, `--jobs` at a time: the stock rows, each policy's rows, the timeline runs.
    tasks = [] if args.timeline_only else (
        [(row, base, os.path.join(work, "stock")) for row in stock] +
        [(row, {**base, "policy": p}, os.path.join(work, slug(p))) for p, prow in policy_rows.items() for row in prow])
    pairs = timeline_pairs(args) if (args.timeline or args.timeline_only) else []
    done, results, entries = 0, {}, {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    stopped = False
    try:
        futures = {pool.submit(run_row, row, cfg, folder, args.timeout): ("row", i)
                   for i, (row, cfg, folder) in enumerate(tasks)}
        futures.update({pool.submit(timeline_run, pair, args, base, work): ("timeline", i)
                        for i, pair in enumerate(pairs)})
        for future in concurrent.futures.as_completed(futures):
            kind, i = futures[future]
            if kind == "timeline":
                entries[i] = future.result()
                continue
            r = future.result()
            results[i] = r
            done += 1
            print(rc.progress_line(done, len(tasks), r) + (f" ({r['policy']})" if r["policy"] else ""),
                  file=sys.stderr, flush=True)
            if not r["ok"]:
                print(r.get("failure", "")[-1500:], file=sys.stderr, flush=True)
        pool.shutdown(wait=True)
    except BaseException:
        # Stopped (gpu-check's timeout: SIGTERM) or broken: nothing starts again, the launches in flight are
        # killed, and what finished is written and tabled ("complete": false) before the exception goes on.
        stopped = True
        rc._STOPPING.set()
        pool.shutdown(wait=False, cancel_futures=True)
        rc.kill_all_live()
        print(f"# STOPPED: {done} of {len(tasks)} rows and {len(entries)} of {len(pairs)} timeline runs finished",
              file=sys.stderr, flush=True)
    try:
        bad = report(args, head, tasks, stock, policy_rows, results, [entries[i] for i in sorted(entries)], stopped)
    finally:
        if stopped:
            raise SystemExit(143)
    print("# %s: %s" % ("OK" if not bad else "FAILED", ", ".join(bad) if bad else "every row ran, results stock's"))
    return 1 if bad else 0


def report(args, head, tasks, stock, policy_rows, results, entries, stopped):
    """Every policy's record (JSON in --out-dir) and table, then the timeline's; the rows that failed."""
    bad = []
    stock_records = [results[i] for i, (row, _, _) in enumerate(tasks) if row["front_end"] == "stock" and i in results]
    for policy, prow in policy_rows.items():
        if args.timeline_only:
            break
        records = [results[i] for i, (row, cfg, _) in enumerate(tasks)
                   if row["front_end"] == "tandem-run" and cfg["policy"] == policy and i in results]
        record = {**head, "config": {"policy": policy, "ranks": args.rank_list,
                                     "rows": [r["id"] for r in stock + prow], "timeout_s": args.timeout,
                                     "jobs": args.jobs, "always_env": rc.ALWAYS_ENV,
                                     "programs": {k: {"script": v["script"], "args": v["args"]}
                                                  for k, v in rc.PROGRAMS.items()},
                                     "loss_tolerance_relative": pc.LOSS_TOLERANCE,
                                     "tolerance_rule": rc.TOLERANCE_RULE,
                                     # The window pool's cap, where reach-check records it (its table checks it).
                                     **({"route_pool_max_bytes": rc.route_pool_max(os.environ)}
                                        if hasattr(rc, "route_pool_max") else {})},
                  "rows": rc.verdicts([dict(r) for r in stock_records] + records), "complete": not stopped}
        if args.out_dir:
            pc.write_json_atomically(os.path.join(args.out_dir, f"frameworks-reach-{slug(policy)}.json"), record)
        print(f"\n## policy {policy}\n")
        print(policy_table(record), flush=True)
        bad += [f"{r['id']} ({policy})" for r in record["rows"]
                if not r["ok"] or r["vs_stock"].startswith(("wrong", "differs", rc.NOTHING_MEASURED))]
    if entries:
        if args.out_dir:
            pc.write_json_atomically(os.path.join(args.out_dir, "frameworks-timeline.json"),
                                     {**head, "kind": "framework-timeline", "entries": entries})
        print("\n".join(timeline_table(entries)), flush=True)
        bad += [f"timeline {e['program']} {e['variant']}" for e in entries if e["exit_code"] != 0 or not e["summary"]]
        for program in sorted({e["program"] for e in entries}):
            if len({tuple(e["losses"]) for e in entries if e["program"] == program and e.get("losses")}) > 1:
                bad.append(f"timeline {program}: losses differ between its variants")
    # A stock row is in every policy's record: named once.
    return list(dict.fromkeys(b if "/stock" not in b else b.split(" (")[0] for b in bad))


if __name__ == "__main__":
    pc.run_script(main, "framework-check")
