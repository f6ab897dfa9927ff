#!/usr/bin/env python3
"""Megatron-LM's own training script, pretrain_gpt.py, stock and under `tandem run`, on ranks sharing one GPU
(docs/FRAMEWORKS.md): what a Megatron-LM user types, unchanged, with its mock data and its own loop, logs and
overlap options.

    scripts/megatron-lm-source.sh                         # .whl/megatron-lm: the pinned checkout's files
    python3 examples/frameworks/megatron_lm_check.py --tandem-bin build/bin/tandem --out-dir OUT

Each configuration runs once stock and once under `tandem run --policy P --stats ...` per policy, as
`torchrun --standalone --nproc-per-node N --no-python [tandem run ... --] python tests/tools/shared_gpu_rank.py
pretrain_gpt.py ARGS`. Checked per row: every rank exits 0; the losses Megatron-LM prints each iteration
("lm loss: %.6E", the last rank's) are the stock row's, string for string; under copy-engine, the share of
the collective bytes between ranks the route took (reach-check's reading of the stats files); under every
policy, the communicators configured and the NCCL launches elevated. Megatron-LM prints its losses to 7
significant digits, so "identical" here is to that precision (examples/frameworks/megatron_train.py, which
drives Megatron-core's API itself, compares exact floats).

Prints a Markdown table; writes megatron-lm-check.json (commit, versions, commands, every row) into
--out-dir. Exit 0 when every row ran and matched stock, 1 otherwise.
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

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("reach_check", os.path.join(ROOT, "scripts", "reach-check.py"))
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)
pc = rc.pc

# A small GPT (hidden 256, 4 layers, seq 256, vocab 8192, bf16) on Megatron-LM's mock data, with Megatron-core's
# local layers (no Transformer Engine or Apex on the GPU machine: the fused paths off), 8 iterations, every
# iteration logged, no evaluation or checkpoint; buckets of 1 M parameters, so that the small model's gradients
# are reduced in several buckets during the backward, as a large model's are.
MODEL = ["--transformer-impl", "local", "--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "8",
         "--seq-length", "256", "--max-position-embeddings", "256", "--position-embedding-type", "learned_absolute",
         "--micro-batch-size", "2", "--train-iters", "8", "--lr", "1e-4", "--min-lr", "1e-5",
         "--lr-decay-style", "constant", "--bf16", "--mock-data", "--tokenizer-type", "NullTokenizer",
         "--vocab-size", "8192", "--log-interval", "1", "--eval-iters", "0", "--eval-interval", "1000", "--seed", "1234",
         "--no-gradient-accumulation-fusion", "--no-masked-softmax-fusion", "--no-bias-gelu-fusion",
         "--no-bias-dropout-fusion", "--no-persist-layer-norm", "--no-rope-fusion", "--ddp-bucket-size", "1000000"]
CONFIGS = {
    "megatron-lm-dp": ["--overlap-grad-reduce"],
    "megatron-lm-distopt": ["--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather"],
}
POLICIES = ("copy-engine", "priority+nccl-ctas:2..4")
LOSS_LINE = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*?lm loss: ([-+0-9.Ee]+)")


def losses_of(output):
    """{iteration: the printed loss} from Megatron-LM's training log lines."""
    return {int(m.group(1)): m.group(2) for m in LOSS_LINE.finditer(output)}


def launch(config, ranks, policy, megatron_lm, args, stats_dir):
    program = [args.python] + rc.shared_gpu_program(os.path.join(megatron_lm, "pretrain_gpt.py"),
                                                    MODEL + ["--global-batch-size", str(2 * ranks)] + CONFIGS[config])
    head = list(args.torchrun) + ["--standalone", "--nproc-per-node", str(ranks), "--no-python"]
    if policy:
        head += rc.tandem_run_prefix(args.tandem_bin, policy, stats_dir)
    env = dict(rc.ALWAYS_ENV)
    env["PYTHONPATH"] = os.pathsep.join([megatron_lm] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH")
                                                          else []))
    return {"argv": head + program, "env": env}


def run_row(config, ranks, policy, megatron_lm, args, work):
    folder = rc.fresh_folder(os.path.join(work, f"{config}_{ranks}_{re.sub(r'[^A-Za-z0-9]+', '-', policy or 'stock')}"))
    stats_dir = rc.fresh_folder(os.path.join(folder, "stats"))
    one = launch(config, ranks, policy, megatron_lm, args, stats_dir)
    [(code, output)] = rc.run_processes([one], args.timeout, folder)
    row = {"config": config, "ranks": ranks, "policy": policy, "command": shlex.join(one["argv"]), "exit_code": code,
           "losses": losses_of(output), "logs": folder}
    row["ok"] = code == 0 and len(row["losses"]) == 8
    if not row["ok"]:
        row["failure"] = "\n".join(output.splitlines()[-25:])
    if policy:
        docs, bad = rc.read_stats(stats_dir)
        route = rc.aggregate_stats(docs)
        row["route"] = {"calls": route["calls"], "bytes": route["bytes"], "total_calls": route["total_calls"],
                        "total_bytes": route["total_bytes"], "share_between_ranks": rc.share_between_ranks(route),
                        "staged_bytes": route["staged_bytes"], "pool_bytes_per_route": route["pool_bytes_per_route"],
                        "fell_back": {name: c["nccl"] for name, c in route["collectives"].items() if c["nccl"]},
                        "not_routed": route["not_routed"], "controls": route["controls"], "unreadable": bad}
        if not docs or bad:
            # No counts, or counts of only some processes: the row's figures would look valid and be wrong.
            row["ok"] = False
            row["failure"] = (row.get("failure", "") + "\nstats files: " + ("; ".join(bad) if bad else
                              f"none in {stats_dir}")).strip()
    return row


def verdicts(rows):
    stock = {(r["config"], r["ranks"]): r for r in rows if r["policy"] is None}
    for r in rows:
        base = stock.get((r["config"], r["ranks"]))
        if r["policy"] is None:
            r["vs_stock"] = "stock"
        elif not (r["ok"] and base and base["ok"]):
            r["vs_stock"] = "not compared (a run failed)"
        else:
            r["vs_stock"] = "identical" if r["losses"] == base["losses"] else "differs"
    return rows


def table(rows):
    lines = ["| configuration | ranks | policy | losses vs stock (8 iterations) | collectives (calls / bytes) "
             "| through the route | share of the bytes between ranks | staged per routed byte "
             "| communicators configured / created | NCCL launches elevated / all |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        route = r.get("route")
        if not route:
            lines.append(f"| {r['config']} | {r['ranks']} | (stock) | {'ran' if r['ok'] else 'FAILED'} | | | | | | |")
            continue
        share = route["share_between_ranks"]
        comms = route["controls"]["communicators"]
        copy = "copy-engine" in r["policy"]
        lines.append("| %s | %d | `%s` | %s | %s | %s | %s | %s | %d / %d | %d / %d |" % (
            r["config"], r["ranks"], r["policy"], r["vs_stock"],
            rc.calls_bytes({"calls": route["total_calls"], "bytes": route["total_bytes"]}),
            rc.calls_bytes(route) if copy else "—",
            f"{100 * share:.2f} %" if copy and share is not None else "—",
            f"{route['staged_bytes'] / route['bytes']:.2f}" if copy and route["bytes"] else "—",
            comms["configured"], comms["created"], route["controls"]["elevated"], route["controls"]["nccl_launches"]))
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megatron-lm", default=os.path.join(ROOT, ".whl", "megatron-lm"),
                        help="the Megatron-LM tree (default .whl/megatron-lm, scripts/megatron-lm-source.sh)")
    parser.add_argument("--tandem-bin", default=os.path.join(ROOT, "build", "bin", "tandem"))
    parser.add_argument("--ranks", default="2", help="comma-separated rank counts (default 2)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated (default %(default)s)")
    parser.add_argument("--only", default="", help="comma-separated configurations (default all)")
    parser.add_argument("--jobs", type=int, default=3, help="rows at a time (default 3)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per row (default 300)")
    parser.add_argument("--torchrun", default=None, help="the launcher (default torchrun)")
    parser.add_argument("--python", default=None, help="the ranks' Python (default torchrun's)")
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--out-dir", default=None)
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.megatron_lm, "pretrain_gpt.py")):
        parser.error(f"--megatron-lm {args.megatron_lm}: no pretrain_gpt.py there (scripts/megatron-lm-source.sh)")
    try:
        args.rank_list = [int(n) for n in args.ranks.split(",")]
    except ValueError:
        parser.error(f"--ranks {args.ranks!r}: not a list of integers")
    if any(n < 2 for n in args.rank_list):
        parser.error(f"--ranks {args.ranks}: every rank count must be at least 2")
    args.configs = [c for c in args.only.split(",") if c] or list(CONFIGS)
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown:
        parser.error(f"--only {unknown[0]}: not one of {', '.join(CONFIGS)}")
    args.policy_list = [p for p in args.policies.split(",") if p]
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    args.pythonpath = ""
    pc.launch_paths(args)
    args.python = args.python or pc.launcher_python(args.torchrun)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    work = args.work_dir or tempfile.mkdtemp(prefix="megatron-lm-check-")
    print(f"# megatron-lm-check: logs in {work}", file=sys.stderr, flush=True)
    plan = [(c, n, p) for n in args.rank_list for c in args.configs for p in [None] + args.policy_list]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(lambda t: run_row(*t, args.megatron_lm, args, work), plan))
    verdicts(rows)
    for r in rows:
        print(f"[{r['config']}/{r['ranks']}/{r['policy'] or 'stock'}] {'ok' if r['ok'] else 'FAILED'} "
              f"{r['vs_stock']}", file=sys.stderr)
        if not r["ok"]:
            print(r.get("failure", ""), file=sys.stderr)
    head = pc.record_head("megatron-lm-check", argv, args.tandem_bin, args.python)
    with open(os.path.join(args.megatron_lm, "COMMIT")) as f:
        head["versions"]["megatron-lm"] = f.read().strip()
    record = {**head, "rows": rows}
    if args.out_dir:
        with open(os.path.join(args.out_dir, "megatron-lm-check.json"), "w") as f:
            json.dump(record, f, indent=1)
    print(table(rows))
    bad = [f"{r['config']}/{r['ranks']}/{r['policy'] or 'stock'}" for r in rows
           if not r["ok"] or r["vs_stock"] not in ("stock", "identical")]
    print("# %s: %s" % ("OK" if not bad else "FAILED", ", ".join(bad) if bad else "every row ran, losses stock's"))
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except rc.UserError as e:
        sys.exit(f"megatron-lm-check: {e}")
