#!/usr/bin/env python3
"""How much of a real program's collective traffic tandem's copy-engine route reaches, with every
result compared against stock (docs/PYTORCH.md, "Reach on real programs").

Every row is one program at one rank count (ranks sharing one GPU, each an NCCL "host" of its own)
under one front end: `stock` (the program as its users run it), `tandem-run` (each rank process
under `tandem run --policy copy-engine --stats DIR/stats-%p.json`) and, for the DDP and FSDP2
programs, `tandem-torch` (the program's own `--tandem copy-engine`). Programs: a Transformers Llama
under DDP and FSDP2, each also under torch.compile (examples/reach/llama_train.py); PyTorch's
all_to_all_single, coalesced collectives and a CUDA-graph-captured step
(examples/reach/torch_collectives.py); JAX's psum, all_gather and psum_scatter over jax.distributed
(examples/reach/jax_collectives.py); examples/overlap, one rank per process. Per row: the calls and
bytes through the route and through NCCL by reason (summed over the ranks' stats files, or over
tandem.torch's stats()), the collectives the front end does not see (PyTorch's flight recorder),
and the results against the stock row of the same program and ranks. Writes JSON (--out), rewritten
after every run, and prints the Markdown table last; --table renders it from such a file, or one
table from the parts of one coverage measured apart.

    scripts/reach-check.py --out reach.json --jobs 4        # every row (~11 min on one H200)
    scripts/reach-check.py --only 'llama-ddp/*/*,jax' --ranks 2,3 --out part.json
    scripts/reach-check.py --table reach.json [part2.json ...]
    scripts/reach-check.py --dry-run --only overlap         # the launches' command lines, nothing run
"""
import argparse
import concurrent.futures
import fnmatch
import glob
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("pytorch_compare", os.path.join(ROOT, "scripts", "pytorch-compare.py"))
pc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pc)
UserError = pc.UserError
Maybe, MapOf, NUMBER = pc.Maybe, pc.MapOf, pc.NUMBER
results_of = pc.results_of

POLICY = "copy-engine"
FRONT_ENDS = ("stock", "tandem-run", "tandem-torch")
SHARED_GPU_RANK = os.path.join("tests", "tools", "shared_gpu_rank.py")
# program -> how it is launched, its script and arguments, and the front ends that apply to it.
PROGRAMS = {
    "llama-ddp": {"launch": "torchrun", "script": "examples/reach/llama_train.py", "args": ["--parallel", "ddp"],
                  "front_ends": FRONT_ENDS},
    "llama-ddp-compile": {"launch": "torchrun", "script": "examples/reach/llama_train.py",
                          "args": ["--parallel", "ddp", "--compile"], "front_ends": FRONT_ENDS},
    "llama-fsdp2": {"launch": "torchrun", "script": "examples/reach/llama_train.py", "args": ["--parallel", "fsdp2"],
                    "front_ends": FRONT_ENDS},
    "llama-fsdp2-compile": {"launch": "torchrun", "script": "examples/reach/llama_train.py",
                            "args": ["--parallel", "fsdp2", "--compile"], "front_ends": FRONT_ENDS},
    # tandem.torch reaches DDP's and FSDP2's collectives only: a program's own dist.* calls are not its.
    "torch-collectives": {"launch": "torchrun", "script": "examples/reach/torch_collectives.py", "args": [],
                          "front_ends": ("stock", "tandem-run")},
    "jax": {"launch": "jax", "script": "examples/reach/jax_collectives.py", "args": [],
            "front_ends": ("stock", "tandem-run")},
    "overlap": {"launch": "overlap", "script": None, "args": ["--workload", "stream", "--bytes", str(32 << 20),
                                                              "--iters", "10"],
                "front_ends": ("stock", "tandem-run")},
}
# Every child: NVLink multicast off on a shared machine (pytorch-compare's), NVSHMEM's too.
ALWAYS_ENV = {**pc.ALWAYS_ENV, "NVSHMEM_DISABLE_NVLS": "1"}
# tandem.torch's collectives -> the process-group operation its fallback calls (so that a call the route
# refused, which PyTorch's flight recorder also records, is counted once).
TANDEM_TORCH_FALLBACK = {"ddp_all_reduce": "all_reduce", "ddp_broadcast": "broadcast",
                         "fsdp_all_gather": "_all_gather_base", "fsdp_reduce_scatter": "_reduce_scatter_base"}
# tandem's one stats schema (src/core/stats_schema.cpp, rendered into the Python package): both front ends'
# documents are read by it, and only by it (a document of another version is unreadable).
with open(os.path.join(ROOT, "python", "tandem", "stats_schema.json")) as _schema_file:
    STATS_SCHEMA = json.load(_schema_file)
# What this script reads of a stats document, by the schema's record (tests/scripts/test_reach_check.py
# checks every key is the schema's: a key the schema renames fails there, not as a silent zero here).
STATS_READS = {
    "document": ["schema_version", "nccl_collectives", "nccl_not_routed", "copy_engine_reach", "copy_engine_route",
                 "nccl_communicators", "launches", "nccl_elevated", "nccl_not_elevated", "pid"],
    "collective": ["calls", "bytes", "copy_engine", "nccl"],
    "counts": ["calls", "bytes"],
    "not_routed": ["calls", "bytes"],
    "reach": ["requested", "calls", "bytes", "total_bytes"],
    "copy_engine_route": ["buffer_bytes", "captured", "peer_bytes", "peer_copies_unavailable", "pool_bytes", "routes",
                          "staged_bytes"],
    "nccl_communicators": ["created", "configured", "unconfigured", "overridden_by_variables"],
    "launches": ["nccl"],
}
# PyTorch's flight-recorder operations (nccl:NAME) that reach NCCL through one of the functions tandem
# hooks (ncclAllReduce, ncclReduceScatter, ncclAllGather, ncclAlltoAll, ncclBroadcast, and ncclReduce,
# ncclSend, ncclRecv, which it counts and never routes: every communicating NCCL function PyTorch 2.11
# imports, tests/scripts/test_torch_nccl_reach.py); an operation not listed is reported as not seen.
HOOKED_OPERATIONS = {
    "all_reduce": "ncclAllReduce", "allreduce_coalesced": "ncclAllReduce", "all_reduce_coalesced": "ncclAllReduce",
    "all_reduce_barrier": "ncclAllReduce",
    "_reduce_scatter_base": "ncclReduceScatter", "reduce_scatter_tensor_coalesced": "ncclReduceScatter",
    "REDUCE_SCATTER_coalesced": "ncclReduceScatter",
    "_all_gather_base": "ncclAllGather", "_allgather_base": "ncclAllGather", "all_gather": "ncclAllGather",
    "all_gather_into_tensor_coalesced": "ncclAllGather", "allgather_into_tensor_coalesced": "ncclAllGather",
    "ALLGATHER_coalesced": "ncclAllGather",
    "all_to_all": "ncclAlltoAll",  # all_to_all_single with equal splits, NCCL >= 2.28
    "broadcast": "ncclBroadcast",  # DDP's parameter broadcast, dist.broadcast
    "reduce": "ncclReduce", "send": "ncclSend", "recv": "ncclRecv",  # counted, never routed
    # PyTorch's gather and scatter are groups of sends and receives (it imports no ncclGather/ncclScatter).
    "gather": "ncclSend/ncclRecv", "scatter": "ncclSend/ncclRecv",
    # The record of a block of calls between start and end of coalescing outside the collective fast paths
    # (batch_isend_irecv's group of sends and receives), 0 B: its calls are the hooked functions above,
    # which the rows compare with what the program says it issued (unseen_by_stats).
    "coalesced": "ncclSend/ncclRecv",
}
TOLERANCE_RULE = (
    "At 2 ranks every result must equal stock's bitwise: a sum of two values is one rounded addition in "
    "either order, and the route scales (average, pre-multiplied sum) in the element type as NCCL does. "
    "At 3 and more ranks NCCL's ring rounds each partial sum (in the element type: bf16 for bf16 data) "
    "in an order that depends on the chunk, the route accumulates in fp32 and rounds once, and tandem.torch's "
    "DDP hook divides by the world size where stock DDP multiplies by its inverse: the last bits may differ. "
    "There a loss may differ from stock's by at most 2^-8 of it (pytorch-compare's tolerance, one bf16 unit: "
    "bf16 autocast turns a last-bit change of a weight into at most that in the loss over a few steps), and "
    "a checked collective must still lie within its program's bound of the exact result ((n + 1) u sum |x|, "
    "0 for the integer-valued checks).")


# ---------------------------------------------------------------- rows and their launches

def all_rows(ranks):
    """Every (program, ranks, front end) row, in a fixed order: program, then ranks, stock first."""
    return [{"id": f"{p}/{n}/{fe}", "program": p, "ranks": n, "front_end": fe}
            for p, spec in PROGRAMS.items() for n in ranks for fe in spec["front_ends"]]


def select_rows(rows, only):
    """The rows matching any of the comma-separated patterns (fnmatch over PROGRAM/RANKS/FRONT-END; a
    pattern naming fewer parts matches every row below it: 'jax', 'llama-*/3')."""
    patterns = [p.strip() for p in (only or "").split(",") if p.strip()]
    if not patterns:
        return list(rows)

    def matches(row_id, pattern):
        return any(fnmatch.fnmatchcase(row_id, pattern + tail) for tail in ("", "/*", "/*/*"))

    chosen = [r for r in rows if any(matches(r["id"], p) for p in patterns)]
    if not chosen:
        raise UserError(f"--only '{only}' matches no row (rows look like llama-ddp/2/stock)")
    return chosen


def tandem_run_prefix(tandem_bin, policy, stats_dir):
    """`tandem run --policy P --stats DIR/stats-%p.json --`: one stats file per process of the row."""
    return [tandem_bin, "run", "--policy", policy, "--stats", os.path.join(stats_dir, "stats-%p.json"), "--"]


def shared_gpu_program(script, args):
    """A torchrun or DeepSpeed program started through shared_gpu_rank.py: every rank on GPU 0."""
    return [os.path.join(ROOT, SHARED_GPU_RANK), os.path.join(ROOT, script)] + list(args)


def row_launches(row, cfg, stats_dir, port):
    """The processes one row starts: [{"argv": [...], "env": {...}}] (env: the variables set beyond the
    caller's). torchrun rows are one launch (torchrun starts the ranks; under tandem-run it starts each
    rank as `tandem run ... -- python`); deepspeed rows are one launch of DeepSpeed's own launcher (the
    `deepspeed` command: its runner starts deepspeed.launcher.launch, which starts the ranks) with
    `tandem run` around the whole launcher, as its users would write it, so that every process inherits the
    interposer; jax and overlap rows one process per rank."""
    spec = PROGRAMS[row["program"]]
    n, front_end = row["ranks"], row["front_end"]
    prefix = tandem_run_prefix(cfg["tandem_bin"], cfg["policy"], stats_dir) if front_end == "tandem-run" else []
    env = dict(ALWAYS_ENV)
    if spec["launch"] == "torchrun":
        program = shared_gpu_program(spec["script"], spec["args"])
        program += cfg["llama_args"] if row["program"].startswith("llama") else []
        if front_end == "tandem-torch":
            program += ["--tandem", cfg["policy"]]
            inherited = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
            env["PYTHONPATH"] = os.pathsep.join(cfg["pythonpath"] + inherited)
        head = list(cfg["torchrun"]) + ["--standalone", "--nproc-per-node", str(n)]
        argv = head + (["--no-python"] + prefix + [cfg["python"]] if prefix else []) + program
        return [{"argv": argv, "env": env}]
    if spec["launch"] == "deepspeed":
        # --num_gpus N on one GPU: the launcher sets CUDA_VISIBLE_DEVICES=0,...,N-1, of which CUDA shows the
        # devices before the first that does not exist, and shared_gpu_rank.py puts every rank on GPU 0.
        program = shared_gpu_program(spec["script"], spec["args"])
        argv = prefix + [cfg["python"], "-m", "deepspeed.launcher.runner", "--num_gpus", str(n), "--master_port",
                         str(port)] + program
        return [{"argv": argv, "env": env}]
    out = []
    for i in range(n):
        if spec["launch"] == "jax":
            argv = [cfg["python"], os.path.join(ROOT, spec["script"]), "--coordinator", f"127.0.0.1:{port}",
                    "--num-processes", str(n), "--process-id", str(i)] + spec["args"] + cfg["jax_args"]
            rank_env = {"NCCL_HOSTID": f"tandem-reach-jax-{i}"}
        else:
            argv = [cfg["overlap_bin"]] + spec["args"]
            rank_env = {"RANK": str(i), "WORLD_SIZE": str(n), "LOCAL_RANK": "0",
                        "NCCL_COMM_ID": f"127.0.0.1:{port}", "NCCL_HOSTID": f"tandem-reach-overlap-{i}"}
        out.append({"argv": prefix + argv, "env": {**env, **rank_env}})
    return out


_PORTS_GIVEN = set()
_PORTS_LOCK = threading.Lock()


def free_port():
    """A TCP port free on every interface now (the coordinator's or NCCL's bootstrap), never handed out
    twice in one run, and below Linux's ephemeral range (32768-60999): an outgoing connection of a row
    running beside (NCCL's sockets) takes ports from that range, and could take this one before its
    server binds it (seen: JAX's coordinator failing with "Address already in use")."""
    with _PORTS_LOCK:
        start = 20000 + (os.getpid() * 7919) % 10000
        for offset in range(12000):
            port = 20000 + (start - 20000 + offset) % 12000
            if port in _PORTS_GIVEN:
                continue
            with socket.socket() as s:
                try:
                    s.bind(("", port))
                except OSError:
                    continue
            _PORTS_GIVEN.add(port)
            return port
    raise UserError("no free TCP port between 20000 and 32000")


# ---------------------------------------------------------------- running, never hanging

_LIVE = set()
_LIVE_LOCK = threading.Lock()
# Set when the run is being stopped: no row starts a process after it.
_STOPPING = threading.Event()


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all_live():
    with _LIVE_LOCK:
        live = list(_LIVE)
    for p in live:
        kill_group(p)


def run_processes(launches, timeout, logs, grace=20.0, poll=0.2):
    """Starts every launch (each leads a process group of its own, its output into a log file) and waits.
    When the time limit passes, or `grace` seconds after the first one failed (its peers may then wait
    for it forever), every process group still running is killed. Returns [(exit code, output)]:
    124 for a process killed at the limit, 137 for one killed after a peer failed."""
    procs, files = [], []
    start = time.monotonic()
    try:
        for i, launch in enumerate(launches):
            log = open(os.path.join(logs, f"process-{i}.log"), "w+")
            files.append(log)
            if _STOPPING.is_set():
                log.write("not started: the run is being stopped\n")
                procs.append(None)
                continue
            try:
                p = subprocess.Popen(launch["argv"], env={**os.environ, **launch["env"]}, cwd=ROOT,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
            except OSError as e:
                log.write(f"cannot start {launch['argv'][0]}: {e}\n")
                procs.append(None)
                continue
            with _LIVE_LOCK:
                _LIVE.add(p)
            procs.append(p)
        codes = [127 if p is None else None for p in procs]
        failed_at = None if all(p is not None for p in procs) else time.monotonic()
        while any(c is None for c in codes):
            now = time.monotonic()
            for i, p in enumerate(procs):
                if codes[i] is None and p.poll() is not None:
                    codes[i] = p.returncode
                    if p.returncode != 0 and failed_at is None:
                        failed_at = now
            late = now - start > timeout
            abandoned = failed_at is not None and now - failed_at > grace
            if late or abandoned:
                for i, p in enumerate(procs):
                    if codes[i] is None:
                        kill_group(p)
                        p.wait()
                        codes[i] = 124 if late else 137
                break
            time.sleep(poll)
        why = {124: f"\n(timed out after {timeout:g} s: killed with its process group)",
               137: f"\n(killed {grace:g} s after another process of the row failed)"}
        for f in files:
            f.seek(0)
        return [(code, f.read() + why.get(code, "")) for f, code in zip(files, codes)]
    finally:
        for p in procs:
            if p is not None:
                if p.poll() is None:
                    kill_group(p)
                    p.wait()
                with _LIVE_LOCK:
                    _LIVE.discard(p)
        for f in files:
            f.close()


# ---------------------------------------------------------------- reading what a row left

def overlap_results(output):
    """examples/overlap's one JSON line per process (it prints no prefix)."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{") and '"median_ms"' in line:
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def merge_checks(per_process):
    """The checks of several processes as one: wrong elements and elements summed, the largest error,
    the digests in process order."""
    merged = {}
    for checks in per_process:
        for name, slot in (checks or {}).items():
            into = merged.setdefault(name, {"wrong": 0, "elements": 0, "max_error": 0.0, "digests": []})
            into["wrong"] += slot.get("wrong", 0)
            into["elements"] += slot.get("elements", 0)
            into["max_error"] = max(into["max_error"], slot.get("max_error", 0.0))
            into["digests"] += [d if isinstance(d, str) else ",".join(d) for d in slot.get("digests", [])]
    return merged


def add_counts(into, counts):
    into["calls"] = into.get("calls", 0) + counts.get("calls", 0)
    into["bytes"] = into.get("bytes", 0) + counts.get("bytes", 0)


def empty_route(source, processes):
    return {"collectives": {}, "calls": 0, "bytes": 0, "total_calls": 0, "total_bytes": 0, "share_of_bytes": None,
            "source": source, "processes": processes}


def empty_collective():
    return {"calls": 0, "bytes": 0, "copy_engine": {"calls": 0, "bytes": 0}, "nccl": {}}


def finish_route(route):
    for c in route["collectives"].values():
        route["calls"] += c["copy_engine"]["calls"]
        route["bytes"] += c["copy_engine"]["bytes"]
        route["total_calls"] += c["calls"]
        route["total_bytes"] += c["bytes"]
    route["share_of_bytes"] = route["bytes"] / route["total_bytes"] if route["total_bytes"] else None
    return route


def single_rank_bytes(route):
    """Bytes of collectives on communicators of one rank (a parallel group of size 1: Megatron's
    data-parallel group under TP=2 on two ranks). They move nothing between GPUs: NCCL copies locally and
    the route leaves them (`single-rank`). Computed from the per-function counts, so that a recorded
    file's table says the same."""
    return sum(c["nccl"].get("single-rank", {}).get("bytes", 0) for c in route["collectives"].values())


def share_between_ranks(route):
    between = route["total_bytes"] - single_rank_bytes(route)
    return route["bytes"] / between if between > 0 else None


def judged_share(route):
    """The share a row is judged by: of the bytes between ranks."""
    return share_between_ranks(route)


def sum_documents(documents, source, processes=None):
    """Stats documents of tandem's one schema (STATS_SCHEMA: `tandem run --stats` files, tandem.torch's stats()),
    summed, not yet finished: per collective (an NCCL function, or tandem.torch's site) the calls and bytes,
    those through the copy-engine route and those NCCL ran by reason; the functions no route takes; the
    route's cost."""
    route = empty_route(source, len(documents) if processes is None else processes)
    route["requested"] = any(d.get("copy_engine_reach", {}).get("requested") for d in documents)
    route["captured"] = sum(d.get("copy_engine_route", {}).get("captured", 0) for d in documents)
    for doc in documents:
        for name, c in doc.get("nccl_collectives", {}).items():
            into = route["collectives"].setdefault(name, empty_collective())
            add_counts(into, c)
            add_counts(into["copy_engine"], c.get("copy_engine", {}))
            for reason, r in c.get("nccl", {}).items():
                add_counts(into["nccl"].setdefault(reason, {}), r)
    route["not_routed"] = {}
    for doc in documents:
        for name, c in doc.get("nccl_not_routed", {}).items():
            add_counts(route["not_routed"].setdefault(name, {}), c)
    # The route's cost: the staging pool each route (one per communicator that routed) held at its
    # largest, the largest over the processes, and every byte it staged into and out of window memory.
    # Window buffers lent to the program (tandem.torch's: FSDP2's all-gather outputs, DDP's buckets) hold
    # its own data where it would otherwise lie: counted apart, never against the pool's cap.
    # A tandem.torch document from before the route counted them apart holds both in pool_bytes: the pool is
    # then not known alone (`tandem run` never lends, so its documents lent nothing).
    counted = [(d.get("front_end"), d["copy_engine_route"]) for d in documents
               if d.get("copy_engine_route", {}).get("routes") and "pool_bytes" in d["copy_engine_route"]]
    lent_known = all("buffer_bytes" in r or front_end != "tandem.torch" for front_end, r in counted)
    route["pool_bytes_per_route"] = round(max((r["pool_bytes"] - r.get("buffer_bytes", 0)) / r["routes"]
                                              for _, r in counted)) if counted else None
    route["lent_bytes_per_route"] = round(max(r.get("buffer_bytes", 0) / r["routes"] for _, r in counted)) \
        if counted and lent_known else None
    routes = [d.get("copy_engine_route", {}) for d in documents]
    route["staged_bytes"] = sum(r.get("staged_bytes", 0) for r in routes)
    # Bytes copied straight between the program's memory and the peers' window memory (peer copies).
    route["peer_bytes"] = sum(r.get("peer_bytes", 0) for r in routes)
    # Routes that were asked for peer copies where NCCL maps not every peer's window, and staged instead.
    route["peer_copies_unavailable"] = sum(r.get("peer_copies_unavailable", 0) for r in routes)
    return route


def aggregate_stats(documents):
    """`tandem run --stats` files (one per process) summed: the collectives by route and the reach over all of
    them (sum_documents), and the policy's other controls."""
    route = sum_documents(documents, "tandem run --stats")
    route["controls"] = aggregate_controls(documents)
    return finish_route(route)


def aggregate_controls(documents):
    """Whether the policy's other controls reached everything, summed over the processes: the program's NCCL
    communicators the nccl-* settings configured (and those NCCL's own variables overrode), and the NCCL
    launches `priority` elevated (those it did not, by reason)."""
    controls = {"communicators": {"created": 0, "configured": 0, "unconfigured": 0, "overridden_by_variables": []},
                "nccl_launches": 0, "elevated": 0, "not_elevated": {}}
    for doc in documents:
        comms = doc.get("nccl_communicators", {})
        for key in ("created", "configured", "unconfigured"):
            controls["communicators"][key] += comms.get(key, 0)
        for name in comms.get("overridden_by_variables", []):
            if name not in controls["communicators"]["overridden_by_variables"]:
                controls["communicators"]["overridden_by_variables"].append(name)
        controls["nccl_launches"] += doc.get("launches", {}).get("nccl", 0)
        controls["elevated"] += doc.get("nccl_elevated", 0)
        for reason, n in doc.get("nccl_not_elevated", {}).items():
            controls["not_elevated"][reason] = controls["not_elevated"].get(reason, 0) + n
    return controls


def stats_document_problem(doc):
    """Why a stats document cannot be read as STATS_SCHEMA says (another version, not an object), or None."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    version = doc.get("schema_version")
    if version != STATS_SCHEMA["schema_version"]:
        return "schema_version %s, this reach-check reads %d" % (
            "missing" if version is None else json.dumps(version), STATS_SCHEMA["schema_version"])
    return None


def readable_documents(named, bad):
    """The documents of [(where, document)] that STATS_SCHEMA reads; each other one goes to `bad` as 'where: why'."""
    docs = []
    for where, doc in named:
        problem = stats_document_problem(doc)
        if problem:
            bad.append(f"{where}: {problem}")
        else:
            docs.append(doc)
    return docs


def read_stats(stats_dir):
    """The `tandem run --stats` files of a row's processes, and what could not be read (each with why)."""
    named, bad = [], []
    for path in sorted(glob.glob(os.path.join(stats_dir, "stats-*.json"))):
        try:
            with open(path) as f:
                named.append((os.path.basename(path), json.load(f)))
        except (OSError, ValueError) as e:
            bad.append(f"{os.path.basename(path)}: {e}")
    return readable_documents(named, bad), bad


def sum_operations(reports, key="process_group"):
    """PyTorch's flight-recorder summaries ({operation: {calls, bytes}}) of every rank, summed; None when
    no rank had one."""
    total, seen = {}, False
    for r in reports:
        ops = r.get(key)
        if ops is None:
            continue
        seen = True
        for name, c in ops.items():
            add_counts(total.setdefault(name, {}), c)
    return total if seen else None


def unhooked(operations):
    """The operations that reach NCCL through a function tandem does not hook (reduce, send, ...)."""
    return {k: v for k, v in (operations or {}).items() if k not in HOOKED_OPERATIONS}


def aggregate_tandem_torch(reports):
    """tandem.torch's stats() documents of every rank (the one schema: sum_documents), as a route record, plus
    every other collective the ranks' process groups handed to NCCL (their flight recorders, reason
    `process-group`). A call the route refused is in both records: it is taken out of the process group's
    (TANDEM_TORCH_FALLBACK). A document of another schema is left out and named under `unreadable`."""
    bad = []
    documents = readable_documents([(f"rank {i}", r["tandem_torch"]) for i, r in enumerate(reports)
                                    if r.get("tandem_torch") is not None], bad)
    route = sum_documents(documents, "tandem.torch stats() + PyTorch's flight recorder", len(reports))
    operations = sum_operations(reports) or {}
    for name, c in route["collectives"].items():
        op = operations.get(TANDEM_TORCH_FALLBACK.get(name))
        for counts in c["nccl"].values():
            if op:
                op["calls"] = max(0, op["calls"] - counts["calls"])
                op["bytes"] = max(0, op["bytes"] - counts["bytes"])
    for op, c in operations.items():
        if c["calls"]:
            into = route["collectives"].setdefault("process-group " + op, empty_collective())
            add_counts(into, c)
            add_counts(into["nccl"].setdefault("process-group", {}), c)
    if bad:
        route["unreadable"] = bad
    return finish_route(route)


def issued_totals(per_process):
    """The collectives the programs say they issued ({NCCL function: {calls, bytes}}), summed."""
    return sum_operations([{"issued": issued} for issued in per_process], "issued") or None


def unseen_by_stats(issued, route):
    """Functions whose calls the program says it issued but the stats files count fewer of: collectives
    that went around the hooks (e.g. all_to_all_single as NCCL send/recv in an NCCL before 2.28)."""
    out = {}
    for name, c in (issued or {}).items():
        seen = (route["collectives"].get(name) or (route.get("not_routed") or {}).get(name) or {}).get("calls", 0)
        if seen < c["calls"]:
            out[name] = {"calls": c["calls"] - seen}
    return out


def normalized_results(program, results):
    """What is compared against stock: {"losses": [...]} for the Llama rows (every step's, then the final
    loss), {"checks": {...}} for the others."""
    if program.startswith("llama"):
        r = results[0] if results else {}
        losses = r.get("losses")
        return {"losses": (losses or []) + ([r["loss"]] if r.get("loss") is not None else [])}
    if program == "overlap":
        checks = [{"all-reduce bf16 (in place, repeated)": {
            "wrong": r.get("wrong", 0), "elements": 1, "max_error": 0.0, "digests": ["%.9g" % r.get("value", 0)]}}
            for r in results]
        return {"checks": merge_checks(checks)}
    if program == "jax":
        return {"checks": merge_checks([r.get("checks") for r in sorted(results, key=lambda r: r.get("process", 0))])}
    return {"checks": merge_checks([r.get("checks") for r in results])}


def collect(row, launches_out, stats_dir):
    """A row's record from its processes' exit codes and outputs and its stats files."""
    program = PROGRAMS[row["program"]]["launch"]
    codes = [c for c, _ in launches_out]
    outputs = [o for _, o in launches_out]
    if program == "overlap":
        results = [r for r in (overlap_results(o) for o in outputs) if r]
    elif program == "jax":
        results = [r for o in outputs for r in results_of(o.splitlines())[-1:]]
    else:
        results = results_of("\n".join(outputs).splitlines())[-1:]
    expected_results = len(launches_out) if program in ("jax", "overlap") else 1
    ok = all(c == 0 for c in codes) and len(results) == expected_results and all(r.get("ok", True) for r in results)
    record = {"exit_codes": codes, "ok": ok, "results": normalized_results(row["program"], results)}
    reports = [rank for r in results for rank in r.get("ranks", [])]
    if program in ("jax", "overlap"):
        reports = [{"issued": r.get("issued")} for r in results]
    record["process_group"] = sum_operations(reports)
    record["issued"] = issued_totals([r.get("issued") for r in reports])
    if row["front_end"] == "tandem-run":
        docs, bad = read_stats(stats_dir)
        record["route"] = aggregate_stats(docs)
        record["route"]["per_process"] = [{"pid": d.get("pid"), **{k: d.get("copy_engine_reach", {}).get(k)
                                                                  for k in ("calls", "bytes", "total_bytes")}}
                                          for d in docs]
        if bad:
            record["route"]["unreadable"] = bad
        record["unseen"] = {"operations": unhooked(record["process_group"]),
                            "functions": unseen_by_stats(record["issued"], record["route"])}
    elif row["front_end"] == "tandem-torch":
        record["route"] = aggregate_tandem_torch(reports)
    else:  # stock: no stats to compare the issued collectives with
        record["unseen"] = {"operations": unhooked(record["process_group"]), "functions": None}
    if not ok:
        record["failure"] = pc.failure_text("\n".join(outputs))[-4000:]
    if results and program in ("jax",):
        record["jax"] = results[0].get("jax")
    return record


# ---------------------------------------------------------------- results against stock

def tolerance_applies(ranks):
    """Whether results may differ from stock's in the last bits (TOLERANCE_RULE): at 3 ranks and more."""
    return ranks >= 3


def compare_results(results, reference, ranks):
    """A row's results against the stock row's: 'bitwise', 'within tolerance' (TOLERANCE_RULE),
    'differs', 'wrong: N elements' (a check beyond its bound, whatever stock did), or 'no reference'."""
    checks = results.get("checks")
    if checks is not None:
        wrong = sum(c["wrong"] for c in checks.values())
        if wrong:
            return f"wrong: {wrong} elements"
    if not reference:
        return "no reference"
    if "losses" in results:
        losses, ref = results["losses"], reference.get("losses")
        if not losses or not ref or len(losses) != len(ref):
            return "no reference" if not ref else "differs"
        if losses == ref:
            return "bitwise"
        if tolerance_applies(ranks) and all(abs(a - b) <= pc.LOSS_TOLERANCE * abs(b) for a, b in zip(losses, ref)):
            return "within tolerance"
        return "differs"
    ref_checks = reference.get("checks") or {}
    if set(checks) != set(ref_checks):
        return "differs"
    if all(checks[k]["digests"] == ref_checks[k]["digests"] for k in checks):
        return "bitwise"
    # Every check lies within its bound of the exact result (wrong == 0 above).
    return "within tolerance" if tolerance_applies(ranks) else "differs"


NOTHING_MEASURED = "nothing measured"


def verdicts(rows):
    """Each row's results against its program's stock row at the same ranks (stock rows: 'reference', or
    'wrong: N elements' when its own checks failed)."""
    stock = {(r["program"], r["ranks"]): r for r in rows if r["front_end"] == "stock" and r.get("ok")}
    for r in rows:
        if not r.get("ok"):
            codes = r.get("exit_codes") or []
            r["vs_stock"] = "FAILED (exit %s)" % ",".join(str(c) for c in codes if c) if any(codes) else "FAILED"
        elif nothing_measured(r):
            r["vs_stock"] = NOTHING_MEASURED + ": " + ", ".join(nothing_measured(r))
        elif r["front_end"] == "stock":
            checks = r["results"].get("checks") or {}
            wrong = sum(c["wrong"] for c in checks.values())
            r["vs_stock"] = f"wrong: {wrong} elements" if wrong else "reference"
        else:
            ref = stock.get((r["program"], r["ranks"]))
            r["vs_stock"] = compare_results(r["results"], ref["results"] if ref else None, r["ranks"])
    return rows


# ---------------------------------------------------------------- the table

def human_bytes(n):
    if n is None:
        return "—"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%.1f %s" % (n / size, unit)
    return f"{n} B"


def calls_bytes(c):
    return f"{c['calls']} / {human_bytes(c['bytes'])}"


def fallback_text(route):
    """'op-not-supported 3 / 12 B (ncclAllReduce); ...' over every collective, then the functions no route
    takes ('never routed 2 / 64 B (ncclSend)', outside the share), or 'none'."""
    parts = []
    for name, c in route["collectives"].items():
        for reason, r in c["nccl"].items():
            parts.append(f"{reason} {calls_bytes(r)} ({name})")
    for name, r in (route.get("not_routed") or {}).items():
        parts.append(f"never routed {calls_bytes(r)} ({name})")
    return "; ".join(parts) or "none"


def unseen_text(row):
    """The operations PyTorch handed to NCCL through functions tandem does not hook, and the calls a program
    says it issued that the stats do not count; '—' where neither could be known (no flight recorder, no
    stats)."""
    unseen = row.get("unseen") or {}
    operations = unseen.get("operations")
    if operations is not None and row.get("process_group") is not None:
        operations = unhooked(row["process_group"])  # a recorded run, judged by today's list of hooked names
    parts = [f"{op} {calls_bytes(c)}" for op, c in sorted((operations or {}).items())]
    parts += [f"{fn} {c['calls']} calls not counted" for fn, c in sorted((unseen.get("functions") or {}).items())]
    known = row.get("process_group") is not None or unseen.get("functions") is not None
    return "; ".join(parts) or ("none" if known else "—")


def share_text(route):
    share = route.get("share_of_bytes")
    if share is None:
        return "—"
    if single_rank_bytes(route):
        between = share_between_ranks(route)
        return "%.2f %% (%s of the bytes between ranks)" % (
            100 * share, "—" if between is None else "%.2f %%" % (100 * between))
    return "%.2f %%" % (100 * share)


TABLE_HEADER = ["program", "ranks", "front end", "collectives (calls / bytes)", "through the route (calls / bytes)",
                "share of bytes", "fell back to NCCL (reason: calls / bytes)", "not seen by the front end",
                "window pool per route", "staged per routed byte", "results vs stock", "s"]


def pool_includes_lent(route, front_end):
    """Whether a row's pool is not known apart from the window buffers the route lent the program: a tandem.torch
    row whose documents did not count them apart (lent_bytes_per_route None, or absent in records from before)."""
    return front_end == "tandem-torch" and route.get("lent_bytes_per_route") is None


def route_cost_cells(route, front_end=None):
    """The route's window memory (the largest staging pool of one route, and the buffers it lent the program
    where there are any) and its staged bytes per byte routed; '—' where the stats did not say (records from
    before they did) or nothing was routed."""
    pool = route.get("pool_bytes_per_route") if route else None
    lent = (route or {}).get("lent_bytes_per_route")
    staged, routed = (route or {}).get("staged_bytes"), (route or {}).get("bytes")
    if pool is None:
        memory = "—"
    elif pool_includes_lent(route, front_end):
        memory = human_bytes(pool) + " (pool and lent buffers)"
    else:
        memory = human_bytes(pool) + (" (+ %s lent)" % human_bytes(lent) if lent else "")
    return [memory,
            "%.2f" % (staged / routed) if staged is not None and routed else "—"]


def collectives_seen(r):
    """The collectives a row saw ({calls, bytes}): the route's count on tandem's rows, else the program's own
    inventory (its process groups' flight recorders, or what it says it issued); None where neither is known."""
    route = r.get("route")
    if route:
        return {"calls": route["total_calls"], "bytes": route["total_bytes"]}
    inventory = r.get("process_group") or r.get("issued")
    if inventory is None and r.get("process_group") is None and r.get("issued") is None:
        return None
    return {key: sum(c[key] for c in (inventory or {}).values()) for key in ("calls", "bytes")}


def nothing_measured(r):
    """What a row that ran could not measure: its reach ("no collective": it saw none) and its results against
    stock ("no result checked": no loss, no check). Such a row passes nothing: it is reported as such."""
    seen, results = collectives_seen(r), r.get("results") or {}
    return ((["no collective"] if seen is not None and seen["calls"] == 0 else []) +
            (["no result checked"] if not results.get("losses") and not results.get("checks") else []))


def table_row(r):
    route = r.get("route")
    total = collectives_seen(r)
    if route:
        cells = [calls_bytes(total), calls_bytes({"calls": route["calls"], "bytes": route["bytes"]}),
                 share_text(route), fallback_text(route)]
    else:
        cells = [calls_bytes(total) if total else "—", "—", "—", "— (not asked)"]
    unseen = "—" if r["front_end"] == "tandem-torch" else unseen_text(r)
    return [r["program"], str(r["ranks"]), r["front_end"]] + cells + [unseen] + route_cost_cells(route, r["front_end"]) + [
        r.get("vs_stock", "—"), "%.0f" % r.get("seconds", 0)]


def built_from_modified_tree(record):
    """Whether the binaries came from a modified tree: their version stamp says so ("-dirty"). The checkout
    the script ran in (`clean_tree`) counts only without a stamp: the GPU machine runs binaries built
    elsewhere in a copy whose git state is not theirs."""
    if record.get("tandem"):
        return "-dirty" in (record.get("commit") or "")
    return record.get("clean_tree") is False


def markdown_table(record, judged=False):
    """The table of one record (`judged`: its rows' verdicts are set already, as merge_records sets them)."""
    rows = list(record.get("rows", [])) if judged else verdicts(list(record.get("rows", [])))
    versions = ", ".join("%s %s" % kv for kv in sorted((record.get("versions") or {}).items()) if kv[1])
    lines = ["%s; %s; tandem %s%s; %s; policy %s, ranks sharing one GPU." % (
        ", ".join(record.get("gpus") or ["GPU unknown"]), versions or "versions unknown", record.get("commit") or "?",
        " (modified tree)" if built_from_modified_tree(record) else "", (record.get("date") or "")[:10],
        record.get("config", {}).get("policy", POLICY)), "",
        "| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    lines += ["| " + " | ".join(table_row(r)) + " |" for r in rows]
    short = [r["id"] for r in rows if r.get("route") and judged_share(r["route"]) is not None
             and judged_share(r["route"]) < 0.99]
    lines += ["", "Rows below 99 % of the bytes between ranks through the route: " + (", ".join(short) or "none") + "."]
    cap = record.get("config", {}).get("route_pool_max_bytes")
    if cap:  # 0 or absent: no cap, or a record from before it was recorded
        judged = [r for r in rows if (r.get("route") or {}).get("pool_bytes_per_route") is not None]
        unknown = [r["id"] for r in judged if pool_includes_lent(r["route"], r["front_end"])]
        over = [r["id"] for r in judged if r["id"] not in unknown and r["route"]["pool_bytes_per_route"] > cap]
        lines += ["Rows whose route held more window memory than its cap (%s per communicator): %s." % (
            human_bytes(cap), ", ".join(over) or "none")]
        lines += ["Rows whose pool is not known apart from the window buffers lent to the program (recorded before "
                  "the route counted them apart), not judged: " + ", ".join(unknown) + "."] if unknown else []
    empty = [r["id"] for r in rows if r.get("vs_stock", "").startswith(NOTHING_MEASURED)]
    lines += ["Rows that measured nothing (failed): " + ", ".join(empty) + "."] if empty else []
    lines += controls_table(rows, record.get("config", {}).get("policy", POLICY))
    return "\n".join(lines)


def token_names(policy):
    """A policy's token names, without their values: 'priority+nccl-ctas:2..4' -> ['priority', 'nccl-ctas']."""
    return [t.split(":")[0].strip() for t in policy.split("+")]


def controls_table(rows, policy):
    """For a policy with nccl-* settings or priority: per tandem-run row, the communicators they configured
    and the NCCL launches elevated, so that any that escaped the policy shows."""
    tokens = token_names(policy)
    if not any(t == "priority" or t.startswith("nccl-") for t in tokens):
        return []
    # A control the policy does not name reached nothing by design: say so rather than "0 / N".
    configures = any(t.startswith("nccl-") for t in tokens)
    elevates = "priority" in tokens
    lines = ["", "The policy's other controls (`tandem run`, summed over the ranks):", "",
             "| program | ranks | communicators configured / created | overridden by NCCL's variables "
             "| NCCL launches elevated / NCCL launches | not elevated (reason: launches) |", "|---|---|---|---|---|---|"]
    for r in rows:
        c = (r.get("route") or {}).get("controls")
        if r["front_end"] != "tandem-run" or not c:
            continue
        comms = c["communicators"]
        configured = ("%d / %d" % (comms["configured"], comms["created"]) if configures
                      else "— (no nccl-* token) / %d" % comms["created"])
        elevated = ("%d / %d" % (c["elevated"], c["nccl_launches"]) if elevates
                    else "— (no priority) / %d" % c["nccl_launches"])
        lines.append("| %s | %d | %s | %s | %s | %s |" % (
            r["program"], r["ranks"], configured, ", ".join(comms["overridden_by_variables"]) or "none", elevated,
            "; ".join("%s: %d" % kv for kv in sorted(c["not_elevated"].items())) or "none"))
    return lines


# ---------------------------------------------------------------- the run

def versions_of(python):
    """jax's and transformers' versions in the Python that runs the programs (None where absent)."""
    out = {}
    for module in ("jax", "transformers"):
        text = pc.capture([python, "-c", f"import {module}; print({module}.__version__)"])
        out[module] = text.splitlines()[-1] if text else None
    return out


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--ranks", default="2,3,4", help="rank counts, comma-separated (default 2,3,4)")
    parser.add_argument("--only", default="", help="rows to run: comma-separated patterns over PROGRAM/RANKS/FRONT-END")
    parser.add_argument("--policy", default=POLICY,
                        help="the policy of the tandem-run and tandem-torch rows; it must hold copy-engine "
                             "(default %(default)s; add priority or nccl-* settings to check that they reach every "
                             "communicator and NCCL launch)")
    parser.add_argument("--jobs", type=int, default=1, help="rows run at once on the GPU (default 1)")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per row before it is killed (default 240)")
    parser.add_argument("--tandem-bin", default=os.path.join(ROOT, "build", "bin", "tandem"))
    parser.add_argument("--overlap-bin", default=os.path.join(ROOT, "build", "bin", "overlap_allreduce"))
    parser.add_argument("--pythonpath", default=None,
                        help="where tandem.torch is found, ':'-separated (default: build/python, then python)")
    parser.add_argument("--torchrun", default=None, help="the launcher (default torchrun, else python -m torch.distributed.run)")
    parser.add_argument("--python", default=None, help="the Python of the programs (default: torchrun's)")
    parser.add_argument("--llama-args", default="", help="more arguments for llama_train.py (e.g. '--steps 4')")
    parser.add_argument("--jax-args", default="", help="more arguments for jax_collectives.py")
    parser.add_argument("--work-dir", default=None, help="logs and stats files per row (default: a new temporary folder)")
    parser.add_argument("--out", default=None, help="write the JSON record here (rewritten after every row)")
    parser.add_argument("--dry-run", action="store_true", help="print every row's launches, run none")
    args = parser.parse_args(argv)
    try:
        args.rank_list = [int(x) for x in args.ranks.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--ranks '{args.ranks}' is not a comma-separated list of numbers")
    if not args.rank_list or any(n < 2 for n in args.rank_list):
        raise UserError(f"--ranks '{args.ranks}': every rank count must be at least 2")
    if args.jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {args.jobs}")
    if args.timeout <= 0:
        raise UserError(f"--timeout must be positive, not {args.timeout}")
    if "copy-engine" not in token_names(args.policy):
        raise UserError(f"--policy '{args.policy}' has no copy-engine: the reach is the copy-engine route's")
    args.rows = select_rows(all_rows(args.rank_list), args.only)
    if args.out:
        folder = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(folder) or os.path.isdir(args.out):
            raise UserError(f"--out '{args.out}': not a file in an existing folder")
    pc.launch_paths(args)
    args.python = args.python or pc.launcher_python(args.torchrun)
    return args


DEFAULT_ROUTE_POOL_MAX = 256 << 20  # the interposer's kDefaultRoutePoolBytes
BYTE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30}


def route_pool_max(environment):
    """The cap each route's window pool keeps under, as the interposer reads TANDEM_ROUTE_POOL_MAX
    (docs/ENVIRONMENT.md): digits and an optional unit; a bad value gives the default there too."""
    text = environment.get("TANDEM_ROUTE_POOL_MAX", "").strip()
    match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", text)
    if not match or match.group(2).upper() not in BYTE_UNITS:
        return DEFAULT_ROUTE_POOL_MAX
    return int(match.group(1)) * BYTE_UNITS[match.group(2).upper()]


def route_peer_copies(environment):
    """Whether the routes copy with the peers by address where they can (TANDEM_ROUTE_PEER_COPIES, docs/ENVIRONMENT.md:
    1 on, unset or 0 off), as the route reads it."""
    return environment.get("TANDEM_ROUTE_PEER_COPIES", "0") == "1"


def config_of(args):
    return {"tandem_bin": args.tandem_bin, "overlap_bin": args.overlap_bin, "pythonpath": args.pythonpath,
            "torchrun": args.torchrun, "python": args.python, "llama_args": shlex.split(args.llama_args),
            "jax_args": shlex.split(args.jax_args), "policy": args.policy,
            "route_pool_max_bytes": route_pool_max(os.environ), "route_peer_copies": route_peer_copies(os.environ)}


def fresh_folder(path):
    """`path` as an empty folder: what a run before left there (a `--work-dir` used again) would otherwise be
    read as this run's, its stats files summed into this row's counts."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def run_row(row, cfg, work, timeout):
    """Runs one row in its own, emptied folder (logs, stats files); returns its record."""
    folder = fresh_folder(os.path.join(work, row["id"].replace("/", "_")))
    stats_dir = fresh_folder(os.path.join(folder, "stats"))
    launches = row_launches(row, cfg, stats_dir, free_port())
    start = time.monotonic()
    out = run_processes(launches, timeout, folder)
    record = dict(row)
    record["commands"] = [shlex.join(launch["argv"]) for launch in launches]
    record["env"] = launches[0]["env"] if launches else {}
    record["seconds"] = round(time.monotonic() - start, 1)
    record.update(collect(row, out, stats_dir))
    record["logs"] = folder
    return record


def progress_line(i, total, r):
    if not r["ok"]:
        state = "FAILED (exit %s)" % ",".join(map(str, r["exit_codes"]))
    elif r.get("route"):
        state = "ok, route %s of %s" % (share_text(r["route"]), human_bytes(r["route"]["total_bytes"]))
    else:
        state = "ok"
    return f"[{i}/{total}] {r['id']}: {state}, {r['seconds']:.0f} s"


def merge_records(records, names):
    """One record of several runs of one policy (parts of one coverage measured in separate calls): each
    row judged against the stock row of its own run, the rows in the fixed order, every run's commit named.
    A row measured in two runs is an error: which one counts would be a guess."""
    policies = {r.get("config", {}).get("policy", POLICY) for r in records}
    if len(policies) > 1:
        raise UserError("--table: the files measure different policies (%s)" % ", ".join(sorted(policies)))
    seen, rows = {}, []
    for record, name in zip(records, names):
        for row in verdicts(list(record.get("rows", []))):
            if row["id"] in seen:
                raise UserError(f"--table: row {row['id']} is in both '{seen[row['id']]}' and '{name}'")
            seen[row["id"]] = name
            rows.append(row)
    ranks = sorted({r["ranks"] for r in rows})
    order = {r["id"]: i for i, r in enumerate(all_rows(ranks))}
    merged = dict(records[0])
    merged["rows"] = sorted(rows, key=lambda r: order.get(r["id"], len(order)))
    merged["commit"] = ", ".join(c or "?" for c in dict.fromkeys(r.get("commit") for r in records))
    merged["clean_tree"] = all(r.get("clean_tree", True) for r in records)
    return merged


# What --table reads of a record (pc.read_record refuses anything else in one line).
COUNTS = {"calls": int, "bytes": int}
ROUTE = {"total_calls": int, "total_bytes": int, "calls": int, "bytes": int, "share_of_bytes": Maybe(NUMBER),
         "collectives": MapOf({"nccl": MapOf(COUNTS)}), "?not_routed": Maybe(MapOf(COUNTS)),
         "?controls": Maybe({"communicators": {"configured": int, "created": int, "overridden_by_variables": [str]},
                             "elevated": int, "nccl_launches": int, "not_elevated": MapOf(int)})}
ROW = {"id": str, "program": str, "ranks": int, "front_end": str, "ok": bool, "?exit_codes": Maybe([int]),
       "?seconds": NUMBER, "results": {"?losses": [NUMBER], "?checks": MapOf({"wrong": int, "digests": [str]})},
       "?route": Maybe(ROUTE), "?process_group": Maybe(MapOf(COUNTS)), "?issued": Maybe(MapOf(COUNTS)),
       "?unseen": Maybe({"?operations": Maybe(MapOf(COUNTS)), "?functions": Maybe(MapOf({"calls": int}))})}
RECORD = {**pc.PROVENANCE, "?tandem": Maybe(str), "?clean_tree": Maybe(bool), "?config": {"?policy": str},
          "rows": pc.Rows(ROW)}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--table"]:
        if len(argv) < 2:
            raise UserError("--table needs reach-check JSON files (one, or the parts of one coverage)")
        records = [pc.read_record(path, "reach-check", RECORD, "reach-check JSON") for path in argv[1:]]
        print(markdown_table(merge_records(records, argv[1:]), judged=True))
        return 0
    args = parse_args(argv)
    cfg = config_of(args)
    if args.dry_run:
        for row in args.rows:
            for launch in row_launches(row, cfg, "STATS_DIR", 29500):
                extra = " ".join(f"{k}={shlex.quote(v)}" for k, v in launch["env"].items())
                print(f"{row['id']:34s} {extra} {shlex.join(launch['argv'])}")
        return 0
    work = args.work_dir or tempfile.mkdtemp(prefix="reach-check-")
    os.makedirs(work, exist_ok=True)
    print(f"# reach-check: {len(args.rows)} rows, logs in {work}", file=sys.stderr, flush=True)
    record = {**pc.record_head("reach-check", argv, args.tandem_bin, args.python),
              "config": {"policy": args.policy, "ranks": args.rank_list, "rows": [r["id"] for r in args.rows],
                         "timeout_s": args.timeout, "jobs": args.jobs, "always_env": ALWAYS_ENV,
                         "programs": {k: {"script": v["script"], "args": v["args"]} for k, v in PROGRAMS.items()},
                         "llama_args": cfg["llama_args"], "jax_args": cfg["jax_args"],
                         "loss_tolerance_relative": pc.LOSS_TOLERANCE, "tolerance_rule": TOLERANCE_RULE,
                         "pythonpath_for_tandem_torch": args.pythonpath,
                         "route_pool_max_bytes": cfg["route_pool_max_bytes"],
                         "route_peer_copies": cfg["route_peer_copies"]},
              "rows": [], "complete": False}
    record["versions"].update(versions_of(args.python))
    lock = threading.Lock()

    def save():
        if args.out:
            pc.write_json_atomically(args.out, record)

    order = {row["id"]: i for i, row in enumerate(args.rows)}
    save()  # at once: a run stopped before its first row still leaves its record
    done = 0
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = [pool.submit(run_row, row, cfg, work, args.timeout) for row in args.rows]
        for future in concurrent.futures.as_completed(futures):
            r = future.result()
            with lock:
                done += 1
                record["rows"].append(r)
                record["rows"].sort(key=lambda x: order[x["id"]])
                verdicts(record["rows"])
                save()  # after every row: a run cut short keeps what it measured
            print(progress_line(done, len(args.rows), r), file=sys.stderr, flush=True)
            if not r["ok"]:
                print(r.get("failure", "")[-1500:], file=sys.stderr, flush=True)
    except BaseException:
        # Stopped (SIGTERM, Ctrl-C) or broken: no row starts again, the running ones are killed, and the
        # rows that finished are in the JSON ("complete": false) and in the table.
        _STOPPING.set()
        pool.shutdown(wait=False, cancel_futures=True)
        kill_all_live()
        with lock:
            save()
            print(markdown_table(record))
            print(f"# STOPPED: {len(record['rows'])} of {len(args.rows)} rows finished", flush=True)
        raise
    pool.shutdown(wait=True)
    record["complete"] = True
    for r in record["rows"]:
        if r.get("jax"):
            record["versions"]["jax"] = record["versions"].get("jax") or r["jax"]
    save()
    print(markdown_table(record))
    bad = [r["id"] for r in record["rows"]
           if not r["ok"] or r["vs_stock"].startswith(("wrong", "differs", NOTHING_MEASURED))]
    print("# %s: %d rows, %d failed or wrong%s" % ("OK" if not bad else "FAILED", len(record["rows"]), len(bad),
                                                  (": " + ", ".join(bad)) if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    pc.run_script(main, "reach-check")
