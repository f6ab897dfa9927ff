"""PyTorch collectives as programs issue them, each result checked against an exact reference:
all_to_all_single with equal splits, coalesced collectives (all_reduce_coalesced and
torch.distributed's coalescing manager around all_reduce, all_gather_into_tensor and
reduce_scatter_tensor: NCCL groups of several collectives), a pipeline's point-to-point traffic
(batch_isend_irecv, send/recv, reduce: tandem counts it and leaves it to NCCL), a group shrunk by
shrink_group (NCCL 2.27+'s ncclCommShrink, as fault-tolerant training drops a lost rank), and a CUDA-graph-captured step
(torch.cuda.graph around a linear layer's backward and its gradient all-reduce, warmed up eagerly on
a side stream, replayed on fresh data) (scripts/reach-check.py, docs/PYTORCH.md).

    torchrun --standalone --nproc-per-node 2 examples/reach/torch_collectives.py
    torchrun --nproc-per-node 2 --no-python tandem run --policy copy-engine --stats stats-%p.json -- \\
        python examples/reach/torch_collectives.py

Every rank makes every rank's inputs (seeded per case, tensor and rank) and computes the reference
in float64. Integer-valued inputs (|x| <= 8) make sums, averages over 2 or 4 ranks and the
pre-multiplied sum by 0.25 exact in bf16 and fp32 whatever the order of the additions: those checks
allow no error. Normal-distributed inputs (and averages over 3 ranks) are rounded differently by
NCCL's ring (once per hop, in the element type) and by a sum accumulated in fp32 and rounded once:
their elements must lie within (n + 1) u sum_r |s x_r| of the exact value (n ranks, u the unit
roundoff: 2^-8 bf16, 2^-24 fp32, s the op's scale), the bound on any order of n - 1 additions, the
scaling and one final rounding. Rank 0 prints one TANDEM_RESULT line: per check the wrong elements
(summed over ranks), the largest error and each rank's digest of its result, the collectives the
program issued (calls and bytes by NCCL function, as tandem counts them), and per rank PyTorch's
record of what its process group handed to NCCL.
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _coalescing_manager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import training_common as common  # noqa: E402
import torch_reach  # noqa: E402

UNIT_ROUNDOFF = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1 << 16,
                        help="elements of the larger tensors (default 65536; the others are 1 and primes)")
    parser.add_argument("--replays", type=int, default=4, help="CUDA graph replays on fresh data (default 4)")
    parser.add_argument("--capture-error-mode", choices=("global", "thread_local", "relaxed"), default="thread_local",
                        help="torch.cuda.graph's capture_error_mode (default thread_local, as torch.compile's CUDA "
                             "graphs use: other threads, such as the process group's watchdog, may query events "
                             "during the capture)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl",
                        help="nccl on GPUs (default); gloo runs on the CPU, for smoke tests only (no graph)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds before the program gives up (default 300)")
    args = parser.parse_args(argv)
    if args.scale < 1 or args.replays < 1:
        parser.error("--scale and --replays must be at least 1")
    args.tandem = args.sm_carveout = None  # training_common.init: the stock process group, no carveout
    return args


class Checker:
    """Inputs for every rank, references, and what was found wrong; the calls the program issued."""

    def __init__(self, args, device, rank, world):
        self.args, self.device, self.rank, self.world = args, device, rank, world
        self.results = {}
        self.issued = {}

    def inputs(self, case, index, shape, dtype, kind, rank):
        """Rank `rank`'s tensor `index` of `case`: the same values on every rank that asks."""
        seed = (self.args.seed * 1_000_003 + sum(map(ord, case)) * 7919 + index * 131 + rank) % (1 << 62)
        generator = torch.Generator().manual_seed(seed)
        if kind == "int":
            values = torch.randint(-8, 9, shape, generator=generator).to(torch.float64)
        else:
            values = torch.randn(shape, generator=generator, dtype=torch.float64)
        return values.to(dtype)

    def all_inputs(self, case, index, shape, dtype, kind):
        return [self.inputs(case, index, shape, dtype, kind, r) for r in range(self.world)]

    def issue(self, function, tensor):
        """One call of an NCCL function, counted in the bytes of its larger tensor (as tandem counts it)."""
        slot = self.issued.setdefault(function, {"calls": 0, "bytes": 0})
        slot["calls"] += 1
        slot["bytes"] += tensor.numel() * tensor.element_size()

    def check(self, name, got, reference, bound):
        """Elements of `got` farther than `bound` (a tensor or 0) from the float64 `reference`."""
        error = (got.detach().cpu().to(torch.float64) - reference).abs()
        wrong = int((error > bound).sum())
        slot = self.results.setdefault(name, {"wrong": 0, "elements": 0, "max_error": 0.0, "digests": []})
        slot["wrong"] += wrong
        slot["elements"] += got.numel()
        slot["max_error"] = max(slot["max_error"], float(error.max()) if error.numel() else 0.0)
        slot["digests"].append(torch_reach.digest(got))


def scale_of(op, world):
    """(torch.distributed op, scale applied to each rank's input, the scale is exact in binary)."""
    if op == "sum":
        return dist.ReduceOp.SUM, 1.0, True
    if op == "avg":
        return dist.ReduceOp.AVG, 1.0 / world, world & (world - 1) == 0
    factor = float(op.split(":")[1])
    return dist._make_nccl_premul_sum(factor), factor, True


def reduced(inputs, scale, dtype, kind, exact_scale, world):
    """(float64 reference of the scaled sum, allowed error per element)."""
    scaled = [x.to(torch.float64) * scale for x in inputs]
    reference = sum(scaled)
    if kind == "int" and exact_scale:
        return reference, 0
    return reference, (world + 1) * UNIT_ROUNDOFF[dtype] * sum(s.abs() for s in scaled)


def run_all_to_all(c):
    for dtype in (torch.float32, torch.bfloat16):
        for m in (1009, c.args.scale):
            case = f"all_to_all_single {str(dtype)[6:]} {m}"
            ins = c.all_inputs(case, 0, (c.world * m,), dtype, "int")
            send = ins[c.rank].to(c.device, copy=True)
            recv = torch.empty_like(send)
            dist.all_to_all_single(recv, send)
            c.issue("ncclAlltoAll", send)
            reference = torch.cat([ins[j][c.rank * m:(c.rank + 1) * m] for j in range(c.world)]).to(torch.float64)
            c.check(case, recv, reference, 0)


def run_all_reduce_coalesced(c):
    counts = (1, 1009, c.args.scale + 3)
    case = "all_reduce_coalesced float32 sum " + "+".join(map(str, counts))
    ins = [c.all_inputs(case, i, (n,), torch.float32, "int") for i, n in enumerate(counts)]
    tensors = [ins[i][c.rank].to(c.device, copy=True) for i in range(len(counts))]
    dist.all_reduce_coalesced(tensors, op=dist.ReduceOp.SUM)
    for i, t in enumerate(tensors):
        c.issue("ncclAllReduce", t)
        c.check(case, t, *reduced(ins[i], 1.0, torch.float32, "int", True, c.world))


def run_coalesced_all_reduce(c):
    """The coalescing manager's fast path: one allreduce_coalesced (an NCCL group) per block."""
    blocks = [("bf16 normal avg", torch.bfloat16, "normal", "avg", (4099, c.args.scale)),
              ("fp32 int premul 0.25", torch.float32, "int", "premul:0.25", (7, c.args.scale + 1)),
              ("bf16 int avg", torch.bfloat16, "int", "avg", (1, 1009))]
    for label, dtype, kind, op, counts in blocks:
        if c.device.type == "cpu" and op != "sum":
            continue  # gloo has no average nor pre-multiplied sum
        case = "coalescing_manager all_reduce " + label
        torch_op, scale, exact_scale = scale_of(op, c.world)
        ins = [c.all_inputs(case, i, (n,), dtype, kind) for i, n in enumerate(counts)]
        tensors = [ins[i][c.rank].to(c.device, copy=True) for i in range(len(counts))]
        with _coalescing_manager(async_ops=True) as cm:
            for t in tensors:
                dist.all_reduce(t, op=torch_op)
        cm.wait()
        for i, t in enumerate(tensors):
            c.issue("ncclAllReduce", t)
            c.check(case, t, *reduced(ins[i], scale, dtype, kind, exact_scale, c.world))


def run_coalesced_all_gather(c):
    """One coalesced block per dtype (each an NCCL group of all-gathers)."""
    for dtype, counts in ((torch.bfloat16, (1, 1009, c.args.scale)), (torch.float32, (7, c.args.scale + 5))):
        case = f"coalescing_manager all_gather_into_tensor {str(dtype)[6:]}"
        ins = [c.all_inputs(case, i, (n,), dtype, "int") for i, n in enumerate(counts)]
        sends = [ins[i][c.rank].to(c.device, copy=True) for i in range(len(counts))]
        recvs = [torch.empty(c.world * s.numel(), dtype=dtype, device=c.device) for s in sends]
        with _coalescing_manager(async_ops=True) as cm:
            for recv, send in zip(recvs, sends):
                dist.all_gather_into_tensor(recv, send)
        cm.wait()
        for i, recv in enumerate(recvs):
            c.issue("ncclAllGather", recv)
            c.check(case, recv, torch.cat(ins[i]).to(torch.float64), 0)


def run_coalesced_reduce_scatter(c):
    blocks = [("fp32 int sum", torch.float32, "int", "sum", (1009, c.args.scale)),
              ("bf16 normal sum", torch.bfloat16, "normal", "sum", (4099,)),
              ("fp32 int avg", torch.float32, "int", "avg", (13, 1024))]
    for label, dtype, kind, op, chunks in blocks:
        if c.device.type == "cpu" and op != "sum":
            continue
        case = "coalescing_manager reduce_scatter_tensor " + label
        torch_op, scale, exact_scale = scale_of(op, c.world)
        ins = [c.all_inputs(case, i, (c.world * m,), dtype, kind) for i, m in enumerate(chunks)]
        sends = [ins[i][c.rank].to(c.device, copy=True) for i in range(len(chunks))]
        recvs = [torch.empty(m, dtype=dtype, device=c.device) for m in chunks]
        with _coalescing_manager(async_ops=True) as cm:
            for recv, send in zip(recvs, sends):
                dist.reduce_scatter_tensor(recv, send, op=torch_op)
        cm.wait()
        for i, (m, recv) in enumerate(zip(chunks, recvs)):
            c.issue("ncclReduceScatter", sends[i])
            mine = [x[c.rank * m:(c.rank + 1) * m] for x in ins[i]]
            c.check(case, recv, *reduced(mine, scale, dtype, kind, exact_scale, c.world))


def run_plain(c):
    """The collectives outside any group, for comparison: a bf16 all-reduce of normal data, an fp32
    reduce-scatter with the average."""
    case = "all_reduce bf16 normal sum"
    ins = c.all_inputs(case, 0, (c.args.scale * 4 + 1,), torch.bfloat16, "normal")
    t = ins[c.rank].to(c.device, copy=True)
    dist.all_reduce(t)
    c.issue("ncclAllReduce", t)
    c.check(case, t, *reduced(ins, 1.0, torch.bfloat16, "normal", True, c.world))


def run_point_to_point(c):
    """A pipeline's traffic, which tandem counts and hands to NCCL as it is ("nccl calls no route takes"):
    a ring exchange with batch_isend_irecv (one NCCL group of a send and a receive per rank), blocking
    send/recv between rank pairs (0-1, 2-3, ...; PyTorch makes a communicator per pair), and a reduce to
    rank 0. Moves of integer values and their sum are exact."""
    if c.world < 2:
        return
    after, before = (c.rank + 1) % c.world, (c.rank - 1) % c.world
    for dtype in (torch.float32, torch.bfloat16):
        for m in (1009, c.args.scale):
            case = f"batch_isend_irecv ring {str(dtype)[6:]} {m}"
            ins = c.all_inputs(case, 0, (m,), dtype, "int")
            send = ins[c.rank].to(c.device, copy=True)
            recv = torch.empty_like(send)
            ops = [dist.P2POp(dist.isend, send, after), dist.P2POp(dist.irecv, recv, before)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            c.issue("ncclSend", send)
            c.issue("ncclRecv", recv)
            c.check(case, recv, ins[before].to(torch.float64), 0)
    case = f"send/recv pairs float32 {c.args.scale + 1}"
    ins = c.all_inputs(case, 0, (c.args.scale + 1,), torch.float32, "int")
    peer = c.rank ^ 1
    if peer < c.world:
        t = ins[c.rank].to(c.device, copy=True)
        if c.rank % 2 == 0:
            dist.send(t, peer)
            c.issue("ncclSend", t)
        else:
            dist.recv(t, peer)
            c.issue("ncclRecv", t)
            c.check(case, t, ins[peer].to(torch.float64), 0)
    case = f"reduce to rank 0 float32 sum {c.args.scale}"
    ins = c.all_inputs(case, 0, (c.args.scale,), torch.float32, "int")
    t = ins[c.rank].to(c.device, copy=True)
    dist.reduce(t, dst=0)
    c.issue("ncclReduce", t)
    if c.rank == 0:
        c.check(case, t, *reduced(ins, 1.0, torch.float32, "int", True, c.world))


def run_shrink(c):
    """shrink_group (NCCL 2.27+: ncclCommShrink, a communicator without the excluded ranks, configured
    like a split child) on a group of every rank, the last rank excluded, then an all-reduce on what is
    left. The default group is not shrunk: shrinking it would destroy every other group. The excluded
    rank takes no part, as PyTorch requires."""
    if c.device.type != "cuda" or c.world < 3 or torch.cuda.nccl.version() < (2, 27, 0):
        return
    group = dist.new_group(list(range(c.world)))
    case = f"all_reduce before shrink_group float32 sum {c.args.scale}"
    ins = c.all_inputs(case, 0, (c.args.scale,), torch.float32, "int")
    t = ins[c.rank].to(c.device, copy=True)
    dist.all_reduce(t, group=group)  # the group's communicator exists before it is shrunk
    c.issue("ncclAllReduce", t)
    c.check(case, t, *reduced(ins, 1.0, torch.float32, "int", True, c.world))
    excluded = c.world - 1
    if c.rank == excluded:
        return
    shrunk = dist.distributed_c10d.shrink_group([excluded], group=group)
    case = f"all_reduce after shrink_group float32 sum {c.args.scale + 7}"
    ins = c.all_inputs(case, 0, (c.args.scale + 7,), torch.float32, "int")[:excluded]
    t = ins[c.rank].to(c.device, copy=True)
    dist.all_reduce(t, group=shrunk)
    c.issue("ncclAllReduce", t)
    c.check(case, t, *reduced(ins, 1.0, torch.float32, "int", True, excluded))


def run_graph(c):
    """torch.cuda.graph around a step: a bias-free linear layer's forward and backward on integer
    inputs (its weight gradient g^T x is exact in fp32), the gradient all-reduce (sum) and a bf16
    all-reduce (average) of integer data. Eager warm-up steps on a side stream first (they set up
    NCCL's and tandem's state for these sizes), then the capture, then replays on fresh data."""
    batch, k, m, extra = 64, 256, 128, 4099
    layer = torch.nn.Linear(k, m, bias=False, device=c.device)
    static_x = torch.zeros(batch, k, device=c.device)
    static_g = torch.zeros(batch, m, device=c.device)
    static_b = torch.zeros(extra, dtype=torch.bfloat16, device=c.device)
    avg, avg_scale, avg_exact = scale_of("avg", c.world)

    def load(case, index):
        xs = c.all_inputs(case, 3 * index, (batch, k), torch.float32, "int")
        gs = c.all_inputs(case, 3 * index + 1, (batch, m), torch.float32, "int")
        bs = c.all_inputs(case, 3 * index + 2, (extra,), torch.bfloat16, "int")
        static_x.copy_(xs[c.rank])
        static_g.copy_(gs[c.rank])
        static_b.copy_(bs[c.rank])
        grad = sum(g.to(torch.float64).T @ x.to(torch.float64) for x, g in zip(xs, gs))
        return grad, reduced(bs, avg_scale, torch.bfloat16, "int", avg_exact, c.world)

    def step():
        (layer(static_x) * static_g).sum().backward()
        dist.all_reduce(layer.weight.grad)
        dist.all_reduce(static_b, op=avg)

    def verify(case, grad, extra_reference):
        c.check(case + " weight gradient fp32 sum", layer.weight.grad, grad, 0)
        c.check(case + " bf16 avg", static_b, *extra_reference)

    side = torch.cuda.Stream(device=c.device)
    side.wait_stream(torch.cuda.current_stream(c.device))
    with torch.cuda.stream(side):
        for i in range(3):
            layer.weight.grad = None
            grad, extra_reference = load("cuda graph warm-up", i)
            step()
            c.issue("ncclAllReduce", layer.weight.grad)
            c.issue("ncclAllReduce", static_b)
            side.synchronize()
            verify("cuda graph warm-up", grad, extra_reference)
    torch.cuda.current_stream(c.device).wait_stream(side)
    torch.cuda.synchronize(c.device)
    layer.weight.grad = None  # the captured backward allocates it in the graph's pool
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode=c.args.capture_error_mode):
        step()
    # Captured once: each replay runs them again without calling NCCL (nor tandem's hooks).
    c.issue("ncclAllReduce", layer.weight.grad)
    c.issue("ncclAllReduce", static_b)
    for i in range(c.args.replays):
        grad, extra_reference = load("cuda graph replay", i)
        graph.replay()
        torch.cuda.synchronize(c.device)
        verify("cuda graph replay", grad, extra_reference)


def main():
    args = parse_args()
    torch_reach.time_limit(args.timeout)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMMs in fp32: the graph's gradient is exact
    _, device = common.init(args)
    c = Checker(args, device, dist.get_rank(), dist.get_world_size())
    sections = [run_all_to_all, run_all_reduce_coalesced, run_coalesced_all_reduce, run_coalesced_all_gather,
                run_coalesced_reduce_scatter, run_plain, run_point_to_point]
    if device.type == "cuda":
        sections += [run_shrink, run_graph]
    for section in sections:
        section(c)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    report = {"rank": c.rank, "pid": os.getpid(), "process_group": torch_reach.process_group_collectives(),
              "checks": c.results, "issued": c.issued}
    reports = torch_reach.gather_reports(report)
    if c.rank == 0:
        checks = {}
        for r in reports:
            for name, slot in r["checks"].items():
                into = checks.setdefault(name, {"wrong": 0, "elements": 0, "max_error": 0.0, "digests": []})
                into["wrong"] += slot["wrong"]
                into["elements"] += slot["elements"]
                into["max_error"] = max(into["max_error"], slot["max_error"])
                into["digests"].append(",".join(slot["digests"]))
        ranks = [{k: r[k] for k in ("rank", "pid", "process_group", "issued")} for r in reports]
        print(common.RESULT_PREFIX + json.dumps({
            "program": "torch_collectives", "world_size": c.world, "torch": torch.__version__,
            "nccl": common.nccl_version() if args.backend == "nccl" else None,
            "ok": all(s["wrong"] == 0 for s in checks.values()), "checks": checks, "ranks": ranks,
            "config": vars(args)}), flush=True)
    torch_reach.finish(None)


if __name__ == "__main__":
    main()
