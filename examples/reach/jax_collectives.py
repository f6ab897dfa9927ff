"""JAX over NCCL with jax.distributed, one process per rank: psum, all_gather and psum_scatter under
shard_map, in bf16 and fp32, each result checked against an exact reference (scripts/reach-check.py,
docs/RUN.md).

    python examples/reach/jax_collectives.py --coordinator 127.0.0.1:12355 --num-processes 2 --process-id 0 &
    python examples/reach/jax_collectives.py --coordinator 127.0.0.1:12355 --num-processes 2 --process-id 1
    tandem run --policy copy-engine --stats stats-%p.json -- python examples/reach/jax_collectives.py ...

Processes may share one GPU: each passes local_device_ids=[0] and, unless it is set already, gets
an NCCL_HOSTID of its own (NCCL then connects them as separate hosts). XLA issues every collective
inside an NCCL group. Each process makes every process's inputs (seeded per case and process) and
computes the reference in float64. Integer-valued inputs (|x| <= 8) make every sum exact in any order:
those checks allow no error; normal-distributed inputs must lie within (n + 1) u sum_p |x_p| of the
exact sum (u: 2^-8 bf16, 2^-24 fp32; the bound on any order of additions and a final rounding; see
torch_collectives.py). The jitted function runs --repeats times on fresh data (the first run also
compiles). Each process prints one TANDEM_RESULT line: its wrong elements, largest errors and
digests per check, and the collectives it issued by NCCL function (calls and bytes as tandem counts
them, assuming XLA issues one NCCL collective per operation).
"""
import argparse
import hashlib
import json
import os
import sys

RESULT_PREFIX = "TANDEM_RESULT "


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coordinator", required=True, help="HOST:PORT of process 0's coordinator")
    parser.add_argument("--num-processes", type=int, required=True)
    parser.add_argument("--process-id", type=int, required=True)
    parser.add_argument("--count", type=int, default=1 << 16,
                        help="elements per process and case, rounded up to a multiple of the process count")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the jitted function (default 3)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--platform", choices=("gpu", "cpu"), default="gpu",
                        help="gpu (default, NCCL); cpu uses gloo, for smoke tests only")
    parser.add_argument("--timeout", type=float, default=300, help="seconds before the program gives up (default 300)")
    args = parser.parse_args(argv)
    if not 0 <= args.process_id < args.num_processes:
        parser.error(f"--process-id {args.process_id} is not in [0, {args.num_processes})")
    if args.count < 1 or args.repeats < 1:
        parser.error("--count and --repeats must be at least 1")
    return args


def setup(args):
    """Environment first (before JAX starts), then jax.distributed."""
    # Several processes may share the GPU: none may take most of its memory at start.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    os.environ.setdefault("NCCL_HOSTID", f"tandem-jax-process-{args.process_id}")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    import faulthandler

    faulthandler.dump_traceback_later(args.timeout, exit=True)  # never hang
    import jax

    if args.platform == "cpu":
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    else:
        jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id, local_device_ids=[0])
    return jax


def inputs(np, args, case, process, shape, kind, dtype):
    seed = (args.seed * 1_000_003 + sum(map(ord, case)) * 7919 + process) % (1 << 32)
    rng = np.random.RandomState(seed)
    values = rng.randint(-8, 9, size=shape).astype(np.float64) if kind == "int" else rng.standard_normal(shape)
    return values.astype(dtype)


def digest(array):
    return hashlib.sha256(array.tobytes()).hexdigest()[:16]


def main():
    args = parse_args()
    jax = setup(args)
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n, me = args.num_processes, args.process_id
    if jax.device_count() != n:
        sys.exit(f"jax_collectives: {jax.device_count()} devices for {n} processes (one device per process expected)")
    mesh = jax.make_mesh((n,), ("x",), devices=jax.devices())
    count = -(-args.count // n) * n  # psum_scatter splits each process's block evenly

    def collectives(x):
        return (jax.lax.psum(x, "x"), jax.lax.all_gather(x, "x", tiled=True),
                jax.lax.psum_scatter(x, "x", scatter_dimension=0, tiled=True))

    # all_gather's result is the same on every process, but typed as varying: each keeps its copy as its
    # shard (P("x")), which works whether or not this JAX has all_gather(..., to="invariant").
    step = jax.jit(jax.shard_map(collectives, mesh=mesh, in_specs=P("x"), out_specs=(P(), P("x"), P("x"))))
    sharding = NamedSharding(mesh, P("x"))
    unit = {"bfloat16": 2.0 ** -8, "float32": 2.0 ** -24}
    checks, issued = {}, {}

    def check(name, got, reference, bound):
        error = np.abs(got.astype(np.float64) - reference)
        slot = checks.setdefault(name, {"wrong": 0, "elements": 0, "max_error": 0.0, "digests": []})
        slot["wrong"] += int((error > bound).sum())
        slot["elements"] += int(got.size)
        slot["max_error"] = max(slot["max_error"], float(error.max()) if error.size else 0.0)
        slot["digests"].append(digest(got))

    def issue(function, nbytes):
        slot = issued.setdefault(function, {"calls": 0, "bytes": 0})
        slot["calls"] += 1
        slot["bytes"] += nbytes

    for dtype_name, jdtype in (("bfloat16", jnp.bfloat16), ("float32", jnp.float32)):
        np_dtype = np.dtype(jdtype)
        for kind in ("int", "normal"):
            for repeat in range(args.repeats):
                case = f"{dtype_name} {kind} {repeat}"
                per_process = [inputs(np, args, case, p, (count,), kind, np_dtype) for p in range(n)]
                x = jax.make_array_from_process_local_data(sharding, per_process[me], (n * count,))
                summed, gathered, scattered = (np.asarray(out.addressable_shards[0].data) for out in step(x))
                exact = [v.astype(np.float64) for v in per_process]
                total = sum(exact)
                bound = 0 if kind == "int" else (n + 1) * unit[dtype_name] * sum(np.abs(v) for v in exact)
                label = f"{dtype_name} {kind}"
                check("psum " + label, summed, total, bound)
                check("all_gather " + label, gathered, np.concatenate(exact), 0)
                chunk = slice(me * (count // n), (me + 1) * (count // n))
                check("psum_scatter " + label, scattered, total[chunk],
                      bound if kind == "int" else bound[chunk])
                element = np_dtype.itemsize
                issue("ncclAllReduce", count * element)
                issue("ncclAllGather", n * count * element)
                issue("ncclReduceScatter", count * element)

    result = {"program": "jax_collectives", "process": me, "world_size": n, "pid": os.getpid(),
              "jax": jax.__version__, "backend": jax.default_backend(),
              "ok": all(s["wrong"] == 0 for s in checks.values()), "checks": checks, "issued": issued,
              "config": vars(args)}
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    jax.distributed.shutdown()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
