#!/usr/bin/env python3
"""tandem against stock PyTorch on a training step, side by side in one run (docs/PYTORCH.md).

Each program (examples/pytorch/*.py) runs under every variant, one `torchrun --standalone` launch
each, interleaved round-robin and repeated --rounds times: stock PyTorch; the knobs its users already
have (TORCH_NCCL_HIGH_PRIORITY=1, NCCL CTA settings through the environment, FSDP2's symmetric-memory
all-gather, PyTorch's SM carveout for its GEMMs); `tandem run --policy P`; the program's own `--tandem P` (tandem.torch); and the bounds
(--mode no-comm, --mode comm-only). Per variant: the median over rounds of each launch's median step
time, its spread, the speed-up over stock, the efficiency against the bound and whether the loss
after N steps equals stock's. Writes JSON (--out) and prints a table last; --tables renders the
Markdown tables of docs/PYTORCH.md from such files.

    scripts/pytorch-compare.py --nproc 2 --rounds 3 --policies priority,copy-engine --out cmp.json
    scripts/pytorch-compare.py --programs ddp_mlp --variants stock,no-comm,comm-only -- --steps 10
    scripts/pytorch-compare.py --tables cmp.json [more.json...]

NCCL's CTA settings can also be given per communicator, through ProcessGroupNCCL options
(`opts = dist.ProcessGroupNCCL.Options(); opts.config.max_ctas = 16; opts.config.cga_cluster_size = 1;
dist.init_process_group("nccl", pg_options=opts)`): the same ncclConfig_t fields the environment
variables set, and the route tandem.torch takes. The environment variants stand for both here.
"""
import argparse
import datetime
import itertools
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT_PREFIX = "TANDEM_RESULT "
# Relative loss difference accepted as "within tolerance": 2^-8, one bf16 unit in the last place
# (8 significand bits). A reduction in another order (another NCCL algorithm, a tandem exchange, a
# GEMM on fewer SMs) rounds differently in the bf16 matmuls; anything above this is a real change.
LOSS_TOLERANCE = 2.0 ** -8
# Always in the children: NVLink multicast stays off on shared machines.
ALWAYS_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
PROGRAMS = ("ddp_mlp", "fsdp2_mlp")
KINDS = ("stock", "high-priority", "nccl-env", "symm-mem", "sm-carveout", "tandem-run", "tandem-torch", "no-comm",
         "comm-only")
# PyTorch's own SM carveout (torch._C._set_sm_carveout_experimental): its GEMMs leave this many SMs to
# the collectives, the stock counterpart of tandem's sm-target.
SM_CARVEOUTS = (16, 32)
# NCCL's CTA knobs through the environment (name: variables): fewer CTAs need less room beside
# compute; single CTAs instead of clusters of 4 fit in the gaps it leaves.
NCCL_ENV_VARIANTS = {
    "nccl-max-ctas-16": {"NCCL_MAX_CTAS": "16"},
    "nccl-max-ctas-16-cga-1": {"NCCL_MAX_CTAS": "16", "NCCL_CGA_CLUSTER_SIZE": "1"},
}
BOUND_VARIANTS = ("no-comm", "comm-only")


class UserError(Exception):
    """A bad argument or input: main prints it as one line."""


# ---------------------------------------------------------------- variants and launch command lines

def variant(name, kind, env=None, prefix=None, program_args=None, pythonpath=None):
    return {"name": name, "kind": kind, "env": env or {}, "prefix": prefix or [], "program_args": program_args or [],
            "pythonpath": pythonpath or []}


def policy_label(policy):
    """A policy as a variant names it: the text, or the file's name for @FILE."""
    return "@" + os.path.basename(policy[1:]) if policy.startswith("@") else policy


def make_variants(program, kinds, policies, tandem_bin, pythonpath, extra_env_variants=None, carveouts=SM_CARVEOUTS):
    """Every variant of one program, in a fixed order (stock first, the bounds last)."""
    out = []
    if "stock" in kinds:
        out.append(variant("stock", "stock"))
    if "high-priority" in kinds:
        out.append(variant("stock+high-priority", "high-priority", env={"TORCH_NCCL_HIGH_PRIORITY": "1"}))
    if "nccl-env" in kinds:
        for name, env in {**NCCL_ENV_VARIANTS, **(extra_env_variants or {})}.items():
            out.append(variant("stock+" + name, "nccl-env", env=env))
    if "symm-mem" in kinds and program == "fsdp2_mlp":
        # PyTorch's own copy-engine all-gather: FSDP2's buffers in NCCL symmetric memory, zero-CTA policy.
        out.append(variant("stock+symm-mem-ce", "symm-mem", env={"NCCL_CTA_POLICY": "2"}, program_args=["--symm-mem"]))
    if "sm-carveout" in kinds:
        for sms in carveouts:
            out.append(variant(f"stock+sm-carveout-{sms}", "sm-carveout", program_args=["--sm-carveout", str(sms)]))
    for policy in policies:
        if "tandem-run" in kinds:
            out.append(variant("tandem-run " + policy_label(policy), "tandem-run",
                               prefix=[tandem_bin, "run", "--policy", policy, "--"]))
    for policy in policies:
        if "tandem-torch" in kinds:
            out.append(variant("tandem.torch " + policy_label(policy), "tandem-torch",
                               program_args=["--tandem", policy], pythonpath=pythonpath))
    for mode in BOUND_VARIANTS:
        if mode in kinds:
            out.append(variant(mode, mode, program_args=["--mode", mode]))
    return out


def launch_argv(v, torchrun, nproc, program_path, program_args):
    """One launch: [tandem run ... --] torchrun --standalone --nproc-per-node N PROGRAM ARGS VARIANT-ARGS."""
    return (list(v["prefix"]) + list(torchrun) + ["--standalone", "--nproc-per-node", str(nproc), program_path] +
            list(program_args) + list(v["program_args"]))


def launch_env(v, base):
    """The child's environment: ours, NVLink multicast off, the variant's variables, and for
    tandem.torch the package's folders ahead on PYTHONPATH."""
    env = dict(base)
    env.update(ALWAYS_ENV)
    env.update(v["env"])
    if v["pythonpath"]:
        env["PYTHONPATH"] = os.pathsep.join(v["pythonpath"] + ([base["PYTHONPATH"]] if base.get("PYTHONPATH") else []))
    return env


def shown_env(v):
    """The variables a launch sets beyond the caller's environment, as recorded and printed."""
    env = {**ALWAYS_ENV, **v["env"]}
    if v["pythonpath"]:
        env["PYTHONPATH"] = os.pathsep.join(v["pythonpath"]) + os.pathsep + "..."
    return env


def schedule(programs, variants_of, rounds):
    """Round-robin: every round runs each program's variants once, the order rotated by one each round
    so that no variant always runs first (after a cold start) or right after the same neighbour."""
    out = []
    for r in range(rounds):
        for program in programs:
            vs = variants_of[program]
            k = r % len(vs) if vs else 0
            out += [(r + 1, program, v) for v in vs[k:] + vs[:k]]
    return out


# ---------------------------------------------------------------- reading a launch's output

def results_of(lines):
    """Every TANDEM_RESULT line's JSON object, in order. Ranks share torchrun's output, so another
    rank's text may follow the JSON on the same line: decode the object and ignore the rest."""
    out = []
    for line in lines:
        at = line.find(RESULT_PREFIX)
        while at >= 0:
            try:
                result, _ = json.JSONDecoder().raw_decode(line, at + len(RESULT_PREFIX))
                if isinstance(result, dict):
                    out.append(result)
            except ValueError:
                pass
            at = line.find(RESULT_PREFIX, at + 1)
    return out


def parse_result(output):
    """The last TANDEM_RESULT line's JSON (None when there is none)."""
    results = results_of(output.splitlines())
    return results[-1] if results else None


def result_problem(result):
    """Why a program's TANDEM_RESULT is no result (one line), or None: its median step must be a positive
    finite number of ms (not NaN, not true, not negative), its loss a finite number or null."""
    step, loss = result.get("step_ms_median"), result.get("loss")
    if not is_number(step) or step <= 0:
        return f"the program reported step_ms_median {shown(step)}, not a step time in ms"
    if loss is not None and not is_number(loss):
        return f"the program reported loss {shown(loss)}, not a finite number"
    return None


def tail(text, lines=20):
    return "\n".join(text.splitlines()[-lines:])


CAUSE = re.compile(r"Error|error:|Traceback|terminate called|Abort|what\(\)")


def failure_text(output):
    """What a failed launch leaves in the record: the first lines naming an error (torchrun's summary
    at the end names only exit codes), then the output's last lines."""
    causes = [line for line in output.splitlines() if CAUSE.search(line)][:15]
    return ("\n".join(causes) + "\n...\n" if causes else "") + tail(output)


# ---------------------------------------------------------------- statistics

def median(values):
    """The middle value; for an even count the mean of the two middle ones."""
    return statistics.median(values) if values else None


def efficiency(t_stock, t, t_bound):
    """The share of what overlap could gain that the variant gains: (t_stock - t) / (t_stock - t_bound).
    None when there is nothing to gain (t_stock <= t_bound) or a time is missing."""
    if None in (t_stock, t, t_bound) or t_stock <= t_bound:
        return None
    return (t_stock - t) / (t_stock - t_bound)


def loss_agreement(losses, reference, tolerance=LOSS_TOLERANCE):
    """'bitwise' when every loss equals the reference exactly, 'within tolerance' when each differs by
    at most tolerance * |reference|, else 'differs'; None without losses or a reference."""
    losses = [x for x in losses if x is not None]
    if not losses or reference is None:
        return None
    if all(x == reference for x in losses):
        return "bitwise"
    if all(abs(x - reference) <= tolerance * abs(reference) for x in losses):
        return "within tolerance"
    return "differs"


def summarize(runs):
    """Per program and variant, in first-seen order: runs ok and failed, the median over rounds of the
    launches' median step times, the spread (min, max) of those, speed-up over stock, efficiency
    against the bound max(no-comm, comm-only), the loss against stock's first successful launch."""
    groups = {}
    for run in runs:
        groups.setdefault((run["program"], run["variant"]), []).append(run)
    medians_of = {key: [r["result"]["step_ms_median"] for r in rs if r["ok"]] for key, rs in groups.items()}
    times = {key: median(medians) for key, medians in medians_of.items()}
    out = []
    for (program, name), rs in groups.items():
        ok = [r for r in rs if r["ok"]]
        medians, t = medians_of[(program, name)], times[(program, name)]
        t_stock = times.get((program, "stock"))
        bounds = [times.get((program, b)) for b in BOUND_VARIANTS]
        t_bound = max(bounds) if None not in bounds else None
        stock_losses = [r["result"].get("loss") for r in groups.get((program, "stock"), []) if r["ok"]]
        reference = stock_losses[0] if stock_losses else None
        is_bound = rs[0]["kind"] in BOUND_VARIANTS
        losses = [r["result"].get("loss") for r in ok]
        out.append({
            "program": program, "variant": name, "kind": rs[0]["kind"],
            "runs_ok": len(ok), "runs_failed": len(rs) - len(ok),
            "step_ms": t, "spread_ms": [min(medians), max(medians)] if medians else None,
            # Device memory in use after the steps (rank 0's view of the GPU), median over the launches.
            "device_memory_gib": median([r["result"]["device_memory_used_bytes"] / 2 ** 30 for r in ok
                                         if isinstance(r["result"].get("device_memory_used_bytes"), (int, float))]),
            "t_stock_ms": t_stock, "t_bound_ms": t_bound,
            "speedup": t_stock / t if t and t_stock and not is_bound else None,
            "efficiency": None if is_bound else efficiency(t_stock, t, t_bound),
            "losses": losses,
            # The bounds change the training (no-comm: no gradient averaging) or do none (comm-only).
            "loss_vs_stock": None if is_bound else loss_agreement(losses, reference),
        })
    return out


# ---------------------------------------------------------------- text and Markdown

def fmt(x, spec, missing="—"):
    return missing if x is None else format(x, spec)


def percent(x):
    return fmt(None if x is None else 100 * x, ".1f") + ("" if x is None else " %")


def row_cells(s):
    spread = s["spread_ms"]
    runs = "%d/%d" % (s["runs_ok"], s["runs_ok"] + s["runs_failed"])
    return [s["program"], s["variant"], runs, fmt(s["step_ms"], ".3f"),
            "%.3f–%.3f" % tuple(spread) if spread else "—", fmt(s["speedup"], ".3f"), percent(s["efficiency"]),
            {None: "n/a"}.get(s["loss_vs_stock"], s["loss_vs_stock"]), fmt(s.get("device_memory_gib"), ".2f")]


HEADER = ["program", "variant", "runs ok", "step ms (median)", "spread ms (min–max)", "speed-up", "efficiency",
          "loss vs stock", "device GiB"]


def text_table(summary):
    rows = [HEADER] + [row_cells(s) for s in summary]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


# ---------------------------------------------------------------- reading result documents
# One place for every script's --table/--tables: a result document is read strictly (JSON with no NaN or
# Infinity), its kind checked, and every field its table reads checked for its type, or refused with one
# line naming the file and the field; never a traceback, never a table from a document that is not a result.

NUMBER = "a finite number"  # shape: an int or float that is neither NaN, infinite, true nor false


class Maybe:
    """Shape: null, or the shape given."""

    def __init__(self, shape):
        self.shape = shape


class MapOf:
    """Shape: an object whose every value has the shape given (its keys any)."""

    def __init__(self, shape):
        self.shape = shape


class Rows:
    """Shape: a list of at least one item of the shape given."""

    def __init__(self, shape):
        self.shape = shape


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def shown(value, limit=60):
    """A value as one printable line of JSON, cut at `limit` characters."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "..."


TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", dict: "an object", list: "a list"}


def shape_problem(value, shape, where=""):
    """Why `value` does not have `shape`, as one line naming the field (None when it does). A shape is a type
    (str, int, bool, dict, list), NUMBER, Maybe, MapOf, Rows, [item shape], (shape, shape...) for a list of
    exactly those, or {key: shape} for an object with those keys ("?key": optional; other keys allowed)."""
    name = where or "the document"
    if isinstance(shape, Maybe):
        return None if value is None else shape_problem(value, shape.shape, where)
    if isinstance(shape, (dict, MapOf)):
        if not isinstance(value, dict):
            return f"{name} is {shown(value)}, not an object"
        items = shape.items() if isinstance(shape, dict) else ((k, shape.shape) for k in value)
        for key, sub in items:
            field = key[1:] if key.startswith("?") else key
            if field not in value:
                if key.startswith("?"):
                    continue
                return f"{name} has no {shown(field)}"
            problem = shape_problem(value[field], sub, f"{where}.{field}" if where else field)
            if problem:
                return problem
        return None
    if isinstance(shape, (list, tuple, Rows)):
        if not isinstance(value, list):
            return f"{name} is {shown(value)}, not a list"
        if isinstance(shape, tuple) and len(value) != len(shape):
            return f"{name} is {shown(value)}, not a list of {len(shape)}"
        if isinstance(shape, Rows) and not value:
            return f"{name} is [], not a list of at least one row"
        subs = shape if isinstance(shape, tuple) else [shape.shape if isinstance(shape, Rows) else shape[0]] * len(value)
        for i, (item, sub) in enumerate(zip(value, subs)):
            problem = shape_problem(item, sub, f"{name}[{i}]")
            if problem:
                return problem
        return None
    if shape == NUMBER:
        return None if is_number(value) else f"{name} is {shown(value)}, not {NUMBER}"
    if isinstance(value, shape) and (shape is bool or not isinstance(value, bool)):
        return None
    return f"{name} is {shown(value)}, not {TYPE_NAMES[shape]}"


def check_shape(path, value, shape, where=""):
    """`value` (read from `path`), or a one-line UserError naming the file and the field that is wrong."""
    problem = shape_problem(value, shape, where)
    if problem:
        raise UserError(f"'{path}': {problem}")
    return value


def refuse_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def load_json(path, what="JSON"):
    """The JSON document in `path`, strictly (NaN and Infinity refused), or a one-line UserError naming it."""
    try:
        with open(path) as f:
            return json.load(f, parse_constant=refuse_constant)
    except (OSError, ValueError, RecursionError) as e:
        raise UserError(f"cannot read {what} '{path}': {str(e).splitlines()[0] if str(e) else type(e).__name__}")


def read_record(path, kind, shape=None, what="JSON", key="kind"):
    """A result document of `kind` (its `key` field: "kind", or "tool" for the timeline scripts) with every
    field of `shape`, or a one-line UserError naming the file and what is wrong."""
    record = load_json(path, what)
    if not isinstance(record, dict) or record.get(key) != kind:
        what_it_is = f"its {key} is {shown(record.get(key))}" if isinstance(record, dict) else f"it is {shown(record)}"
        raise UserError(f"'{path}' is not a {kind} record ({what_it_is})")
    return check_shape(path, record, shape or {})


PROVENANCE = {"?gpus": [str], "?versions": MapOf(Maybe(str)), "?commit": Maybe(str), "?date": Maybe(str)}
SUMMARY_ROW = {"program": str, "variant": str, "runs_ok": int, "runs_failed": int, "step_ms": Maybe(NUMBER),
               "spread_ms": Maybe((NUMBER, NUMBER)), "speedup": Maybe(NUMBER), "efficiency": Maybe(NUMBER),
               "loss_vs_stock": Maybe(str)}
RECORD = {**PROVENANCE, "config": {"rounds": int, "nproc": int}, "summary": Rows(SUMMARY_ROW)}


def markdown_tables(paths):
    """docs/PYTORCH.md's tables: per file, where and how it was measured, then one row per variant."""
    lines = []
    for path in paths:
        record = read_record(path, "pytorch-compare", RECORD, "comparison JSON")
        versions = ", ".join("%s %s" % kv for kv in sorted(record.get("versions", {}).items()) if kv[1])
        lines += ["%s: %s; %s; tandem %s; %s; %d rounds, %d ranks." % (
            os.path.basename(path), ", ".join(record.get("gpus") or ["GPU unknown"]), versions or "versions unknown",
            record.get("commit") or "?", (record.get("date") or "")[:10], record["config"]["rounds"],
            record["config"]["nproc"]), "",
            "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        for s in record["summary"]:
            lines.append("| " + " | ".join(row_cells(s)) + " |")
        lines.append("")
    lines.append("Efficiency: (t_stock − t) / (t_stock − t_bound), t_bound = max(no-comm, comm-only); "
                 "loss within tolerance: |Δ| ≤ 2^-8 · |loss_stock|.")
    return "\n".join(lines)


# ---------------------------------------------------------------- provenance

def capture(argv, cwd=None):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def gpu_count():
    return sum(1 for line in capture(["nvidia-smi", "-L"]).splitlines() if line.startswith("GPU"))


def provenance(tandem_bin, python):
    """What ran: tandem's version and commit (as scripts/reliability-record.py reads them), whether the
    tree was clean, GPUs and driver, torch, its CUDA and NCCL."""
    version = capture([tandem_bin, "--version"]) if shutil.which(tandem_bin) or os.path.exists(tandem_bin) else ""
    commit = re.search(r"\(([0-9a-f]+(?:-dirty)?)\)", version)
    git_commit = capture(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT) or None
    status = capture(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT)
    # "|"-separated: an empty CUDA version (a CPU build of torch) keeps its place.
    torch_probe = capture([python, "-c", "import torch\n"
                           "nccl = '.'.join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else ''\n"
                           "print(torch.__version__, torch.version.cuda or '', nccl, sep='|')"])
    torch_versions = [v or None for v in torch_probe.split("|")] if torch_probe else []
    gpus = capture(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).splitlines()
    return {
        "tandem": version or None,
        "commit": commit[1] if commit else git_commit,
        "git_commit": git_commit,
        "clean_tree": None if git_commit is None else status == "",
        "gpus": gpus,
        "versions": {**dict(itertools.zip_longest(("torch", "cuda", "nccl"), torch_versions[:3])),
                     "driver": gpus[0].split(",")[-1].strip() if gpus else None},
    }


def record_head(kind, argv, tandem_bin, python):
    """A record's first fields: its kind, when and by which command line it was made, and what ran."""
    return {"schema_version": 1, "kind": kind,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": shlex.join([os.path.relpath(sys.argv[0], ROOT)] + argv), **provenance(tandem_bin, python)}


# ---------------------------------------------------------------- the comparison

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--programs", default=",".join(PROGRAMS),
                        help="examples/pytorch programs by name, or programs by path (*.py), comma-separated "
                             "(default %(default)s)")
    parser.add_argument("--nproc", type=int, default=2, help="ranks per launch (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every variant (default 3)")
    parser.add_argument("--policies", default="", help="tandem policies, comma-separated (each its own variants)")
    parser.add_argument("--policy-file", action="append", default=[], help="a policy file (tandem tune's), repeatable")
    parser.add_argument("--variants", default=",".join(KINDS),
                        help="kinds of variant to run, comma-separated (default: all of %(default)s)")
    parser.add_argument("--sm-carveouts", default=",".join(map(str, SM_CARVEOUTS)),
                        help="the sm-carveout variants' SMs left free of PyTorch's GEMMs, comma-separated "
                             "(default %(default)s)")
    parser.add_argument("--env-variant", action="append", default=[], metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                        help="another stock variant with these NCCL/PyTorch variables, repeatable")
    parser.add_argument("--tandem-bin", default=os.path.join(ROOT, "build", "bin", "tandem"),
                        help="the tandem command for `tandem run` (default build/bin/tandem)")
    parser.add_argument("--pythonpath", default=None,
                        help="where tandem.torch is found, ':'-separated (default: build/python/, then python/)")
    parser.add_argument("--torchrun", default=None,
                        help="the launcher command (default: torchrun on PATH, else python -m torch.distributed.run)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per launch (default 300)")
    parser.add_argument("--out", default=None, help="write the JSON record here")
    parser.add_argument("--dry-run", action="store_true", help="print each launch's environment and command, run none")
    parser.add_argument("program_args", nargs="*", help="after --: arguments for every program (e.g. --steps 10)")
    args = parser.parse_args(argv)
    if args.nproc < 1:
        raise UserError(f"--nproc must be at least 1, not {args.nproc}")
    if args.rounds < 1:
        raise UserError(f"--rounds must be at least 1, not {args.rounds}")
    args.programs = [p for p in args.programs.split(",") if p]
    for p in args.programs:
        if not os.path.exists(program_path(p)):
            raise UserError(f"no program '{p}' (no {program_path(p)})")
    args.kinds = [k for k in args.variants.split(",") if k]
    for k in args.kinds:
        if k not in KINDS:
            raise UserError(f"unknown variant kind '{k}'; accepted: {', '.join(KINDS)}")
    try:
        args.carveouts = [int(x) for x in args.sm_carveouts.split(",") if x.strip()]
    except ValueError:
        args.carveouts = []
    if not args.carveouts or any(n < 1 for n in args.carveouts):
        raise UserError(f"--sm-carveouts '{args.sm_carveouts}' is not a comma-separated list of positive SM counts")
    args.policy_list = ([p.strip() for p in args.policies.split(",") if p.strip()] +
                        ["@" + os.path.abspath(f) for f in args.policy_file])
    args.extra_env = {}
    for spec in args.env_variant:
        name, _, assignments = spec.partition(":")
        pairs = [a.partition("=") for a in assignments.split(",") if a]
        if not name or not pairs or any(not k or not sep for k, sep, _ in pairs):
            raise UserError(f"--env-variant '{spec}' is not NAME:VAR=VALUE[,VAR=VALUE]")
        args.extra_env[name] = {k: v for k, _, v in pairs}
    if args.out:
        folder = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise UserError(f"--out '{args.out}': cannot write in '{folder}'")
        if os.path.isdir(args.out):
            raise UserError(f"--out '{args.out}' is a folder")
    return launch_paths(args)


def launch_paths(args):
    """--pythonpath and --torchrun as lists. By default the build tree's assembled package (its extension
    modules beside the Python files) first: the source folder python/ holds the same package without
    them, and the first one found is imported; and torchrun on PATH, else python -m torch.distributed.run."""
    args.pythonpath = ([p for p in args.pythonpath.split(os.pathsep) if p] if args.pythonpath is not None
                       else [os.path.join(ROOT, "build", "python"), os.path.join(ROOT, "python")])
    if args.torchrun is None:
        args.torchrun = ["torchrun"] if shutil.which("torchrun") else [sys.executable, "-m", "torch.distributed.run"]
    else:
        args.torchrun = shlex.split(args.torchrun)
    return args


def launcher_python(torchrun):
    """The Python the launches run (the one that has torch): the launcher's own interpreter, read from
    torchrun's #! line, or the python named in --torchrun."""
    first = shutil.which(torchrun[0]) or torchrun[0]
    if "python" in os.path.basename(first):
        return first
    try:
        with open(first, "rb") as f:
            line = f.readline().decode(errors="replace")
        if line.startswith("#!") and "python" in line:
            return line[2:].split()[0]
    except OSError:
        pass
    return sys.executable


def program_path(name):
    """An examples/pytorch program by name, or any program by its path (ending in .py), such as
    examples/reach/llama_train.py."""
    if name.endswith(".py"):
        return name if os.path.isabs(name) else os.path.join(ROOT, name)
    return os.path.join(ROOT, "examples", "pytorch", name + ".py")


def plan(args):
    variants_of = {p: make_variants(p, args.kinds, args.policy_list, args.tandem_bin, args.pythonpath, args.extra_env,
                                    args.carveouts)
                   for p in args.programs}
    return schedule(args.programs, variants_of, args.rounds)


def run_child(argv, env, timeout):
    """Exit code and output of one launch. The launch leads a session of its own, so that a timeout,
    or this script being stopped, ends torchrun and every rank it started, not torchrun alone."""
    try:
        p = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace", start_new_session=True)
    except OSError as e:
        return 127, f"cannot start {argv[0]}: {e}"
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out + err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return 124, out + err + f"\n(timed out after {timeout:g} s)"
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise


def finite_json(obj):
    """`obj` with every NaN or infinite float (a program's own output may hold them) spelt as a string, so
    that what is written is valid JSON, which has no such numbers."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return json.dumps(obj)
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def write_json_atomically(path, obj):
    """A reader never sees half a file: a fresh temporary file (mkstemp: never an existing name or
    link) beside PATH, renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".pytorch-compare-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(finite_json(obj), f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def launch(round_, program, v, args):
    argv = launch_argv(v, args.torchrun, args.nproc, program_path(program), args.program_args)
    env = launch_env(v, os.environ)
    run = {"round": round_, "program": program, "variant": v["name"], "kind": v["kind"],
           "command": shlex.join(argv), "env": shown_env(v)}
    start = time.monotonic()
    code, output = run_child(argv, env, args.timeout)
    run["seconds"] = round(time.monotonic() - start, 2)
    run["exit_code"] = code
    result = parse_result(output) if code == 0 else None
    if code != 0:
        problem = None
    else:
        problem = "no TANDEM_RESULT line" if result is None else result_problem(result)
    run["ok"] = code == 0 and not problem
    run["result"] = result if run["ok"] else None  # a run that failed gives no figure
    if not run["ok"]:
        run["failure"] = problem or f"exit {code}"
        run["output_tail"] = failure_text(output) + (f"\n({problem})" if problem else "")
    return run


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--tables"]:
        if len(argv) < 2:
            raise UserError("--tables needs at least one comparison JSON file")
        print(markdown_tables(argv[1:]))
        return 0
    args = parse_args(argv)
    launches = plan(args)
    if args.dry_run:
        for round_, program, v in launches:
            extra = " ".join(f"{k}={shlex.quote(val)}" for k, val in shown_env(v).items())
            print(f"round {round_} {program:10s} {v['name']:28s} {extra} "
                  f"{shlex.join(launch_argv(v, args.torchrun, args.nproc, program_path(program), args.program_args))}")
        return 0
    record = {**record_head("pytorch-compare", argv, args.tandem_bin, launcher_python(args.torchrun)),
              "config": {"programs": args.programs, "nproc": args.nproc, "rounds": args.rounds,
                         "policies": args.policy_list, "variants": args.kinds, "program_args": args.program_args,
                         "always_env": ALWAYS_ENV, "loss_tolerance_relative": LOSS_TOLERANCE,
                         "pythonpath_for_tandem_torch": args.pythonpath},
              "runs": [], "summary": [], "complete": False}

    def save():
        if args.out:
            write_json_atomically(args.out, record)

    for i, (round_, program, v) in enumerate(launches, 1):
        run = launch(round_, program, v, args)
        record["runs"].append(run)
        state = ("%.3f ms" % run["result"]["step_ms_median"]) if run["ok"] else "FAILED (%s)" % run["failure"]
        print(f"[{i}/{len(launches)}] round {round_} {program} {v['name']}: {state}, {run['seconds']:.0f} s",
              file=sys.stderr, flush=True)
        if not run["ok"]:
            print(run["output_tail"].split("\n...\n")[0][-2000:] if "\n...\n" in run["output_tail"]
                  else tail(run["output_tail"], 5), file=sys.stderr)
        record["summary"] = summarize(record["runs"])
        save()  # after every launch: a comparison cut short keeps what it measured
    record["complete"] = True
    for r in record["runs"]:  # versions the launches themselves reported, where the probe found none
        if r["ok"]:
            for key in ("torch", "nccl"):
                record["versions"][key] = record["versions"].get(key) or r["result"].get(key)
    save()
    print("# %s; %s" % (record["command"], ", ".join(record["gpus"]) or "no GPU seen"))
    print(text_table(record["summary"]))
    failed = [r for r in record["runs"] if not r["ok"]]
    print("# %s: %d launches, %d failed" % ("OK" if not failed else "FAILED", len(record["runs"]), len(failed)))
    return 1 if failed else 0


def run_script(main, name):
    """Runs a measurement script's main: SIGTERM (gpu-check's timeout) as an exception, so that the runs in
    flight are ended and its JSON keeps what finished ("complete": false); a UserError as one line, exit 2."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        sys.exit(main())
    except UserError as e:
        print(f"{name}: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    run_script(main, "pytorch-compare")
