"""What examples/pytorch/ddp_mlp.py and fsdp2_mlp.py share: the command line, the model (a stack of
transformer-style MLP blocks), seeded data, process-group setup (stock or through tandem.torch),
per-step timing, and the one TANDEM_RESULT line that scripts/pytorch-compare.py and
`tandem tune --metric '"step_ms_median": ([0-9.]+)'` read.

Each warm-up step runs in an NVTX range named "warmup" and each timed step in one named "step", so
that `tandem run --timeline --step-range step` reports the timed steps (NVTX calls cost nothing
without a tool). --compile runs the model through torch.compile; --profile DIR records the timed
steps with torch.profiler and writes each rank's trace there (scripts/hta-compare.py).

Precision: bf16 autocast over fp32 parameters (torch.autocast), as PyTorch's AMP recipe and most
training code do: the matmuls run in bf16 on tensor cores while parameters, gradients and the
optimizer stay in fp32. So DDP all-reduces fp32 gradients (its default, no compression hook), and
FSDP2 uses the matching MixedPrecisionPolicy (bf16 all-gathers, fp32 reduce-scatters).
"""
import argparse
import contextlib
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

RESULT_PREFIX = "TANDEM_RESULT "
MODES = ("train", "no-comm", "comm-only")


def require_at_least(parser, args, names, minimum=1):
    """One plain line naming the first of `names` (argparse's dests) below `minimum`."""
    for name in names:
        if getattr(args, name) < minimum:
            parser.error(f"--{name.replace('_', '-')} must be at least {minimum}, not {getattr(args, name)}")


def parse_args(description, argv=None, add_arguments=None):
    """The shared flags, plus a program's own (add_arguments(parser))."""
    parser = argparse.ArgumentParser(description=description)
    if add_arguments:
        add_arguments(parser)
    parser.add_argument("--hidden", type=int, default=4096, help="model width (default 4096)")
    parser.add_argument("--tokens", type=int, default=2048, help="tokens per GPU per step (default 2048)")
    parser.add_argument("--layers", type=int, default=8, help="MLP blocks (default 8)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps after warm-up (default 20)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0,
                        help="DDP gradient bucket size in MB (default 25, PyTorch's); unused by FSDP2")
    parser.add_argument("--seed", type=int, default=1234, help="model seed; rank r's data uses seed+1+r")
    parser.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd",
                        help="sgd (default: the step is mostly the overlap tandem controls) or adamw")
    parser.add_argument("--mode", choices=MODES, default="train",
                        help="train; no-comm: the step without gradient communication (the compute bound); "
                             "comm-only: the step's collectives alone (the communication bound)")
    parser.add_argument("--tandem", metavar="POLICY", default=None,
                        help="apply a tandem policy (text or @FILE) through the tandem.torch package")
    parser.add_argument("--sm-carveout", metavar="SMS", type=int, default=None,
                        help="PyTorch's own knob: its GEMMs leave SMS SMs free "
                             "(torch._C._set_sm_carveout_experimental), stock's counterpart of sm-target")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl",
                        help="nccl on GPUs (default); gloo runs on the CPU, for smoke tests only")
    parser.add_argument("--compile", action="store_true", help="run the model through torch.compile")
    parser.add_argument("--profile", metavar="DIR", default=None,
                        help="record the timed steps with torch.profiler; each rank writes DIR/rank<R>.json")
    args = parser.parse_args(argv)
    require_at_least(parser, args, ("hidden", "tokens", "layers", "steps"))
    if args.warmup < 2:
        # comm-only learns DDP's buckets from the warm-up steps, after DDP rebuilt them (step 2).
        parser.error(f"--warmup must be at least 2, not {args.warmup}")
    if args.bucket_cap_mb <= 0:
        parser.error(f"--bucket-cap-mb must be positive, not {args.bucket_cap_mb}")
    if args.tandem is not None and args.backend != "nccl":
        parser.error("--tandem needs --backend nccl")
    if args.sm_carveout is not None:
        if args.sm_carveout < 1:
            parser.error(f"--sm-carveout must be at least 1, not {args.sm_carveout}")
        if args.tandem is not None:
            parser.error("--sm-carveout is stock PyTorch's knob; with --tandem, give the policy sm-target:N")
        if getattr(torch._C, "_set_sm_carveout_experimental", None) is None:
            parser.error(f"--sm-carveout: PyTorch {torch.__version__} has no torch._C._set_sm_carveout_experimental")
    return args


class MLPBlock(torch.nn.Module):
    """LayerNorm, Linear up 4x, GELU, Linear down, plus the residual: a transformer's MLP half."""

    def __init__(self, hidden):
        super().__init__()
        self.norm = torch.nn.LayerNorm(hidden)
        self.up = torch.nn.Linear(hidden, 4 * hidden)
        self.down = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def build_model(args, device):
    """The same parameters on every rank: seeded, and made on the device (a CPU init of a billion
    parameters would take longer than the measurement)."""
    torch.manual_seed(args.seed)
    with torch.device(device):
        return torch.nn.Sequential(*[MLPBlock(args.hidden) for _ in range(args.layers)])


def make_batch(args, device, rank):
    """Rank r's input and target, seeded with seed+1+r: deterministic, and different per rank as data
    parallelism has it. One batch reused every step: the data loader is not what is measured."""
    generator = torch.Generator(device=device).manual_seed(args.seed + 1 + rank)
    x = torch.randn(args.tokens, args.hidden, device=device, generator=generator)
    target = torch.randn(args.tokens, args.hidden, device=device, generator=generator)
    return x, target


def make_optimizer(args, parameters):
    if args.optimizer == "adamw":
        return torch.optim.AdamW(parameters, lr=1e-4)
    return torch.optim.SGD(parameters, lr=1e-3)


def loss_of(model, x, target, device):
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        out = model(x)
    return torch.nn.functional.mse_loss(out.float(), target)


def init(args):
    """The process group, stock or through tandem.torch, and this rank's device. tandem is imported
    only with --tandem, so that the program runs with stock PyTorch alone."""
    tt = None
    if args.tandem is not None:
        import tandem.torch as tt  # noqa: the one-line integration under test
    if args.backend == "nccl":
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        # device_id binds the communicator to this GPU at once (eager init), as recent PyTorch advises.
        if tt is not None:
            tt.init_process_group(args.tandem, backend="nccl", device_id=device)
        else:
            dist.init_process_group(backend="nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group(backend="gloo")
    if args.sm_carveout is not None:
        # Process-wide, before any GEMM: cuBLAS(Lt) matmuls then run on (SMs - carveout) SMs.
        torch._C._set_sm_carveout_experimental(args.sm_carveout)
    return tt, device


def maybe_compile(args, module):
    """The module to run forward through: torch.compile's with --compile, else the module itself."""
    return torch.compile(module) if args.compile else module


def nvtx_range(device, name):
    """An NVTX range around a step (a no-op on the CPU)."""
    return torch.cuda.nvtx.range(name) if device.type == "cuda" else contextlib.nullcontext()


@contextlib.contextmanager
def profiled(args, device):
    """torch.profiler around the timed steps with --profile DIR; rank r's trace goes to DIR/rank<r>.json."""
    if args.profile is None:
        yield
        return
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        yield
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    os.makedirs(args.profile, exist_ok=True)
    profiler.export_chrome_trace(os.path.join(args.profile, f"rank{dist.get_rank()}.json"))


class StepTimer:
    """Per-step times: CUDA events on the current stream (no synchronisation between steps, so the CPU
    runs ahead as in training), or the wall clock on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.marks = []

    def mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter())

    def step_ms(self):
        if self.cuda:
            self.marks[-1].synchronize()
            return [a.elapsed_time(b) for a, b in zip(self.marks, self.marks[1:])]
        return [(b - a) * 1e3 for a, b in zip(self.marks, self.marks[1:])]


def timed_steps(args, device, step):
    """--steps timed runs of step, each in an NVTX range named "step", under --profile's profiler: each
    step's time on the slowest rank."""
    timer = StepTimer(device)
    with profiled(args, device):
        timer.mark()
        for _ in range(args.steps):
            with nvtx_range(device, "step"):
                step()
            timer.mark()
    return slowest_rank(timer.step_ms(), device)


def slowest_rank(step_ms, device):
    """Each step's time on the slowest rank: a data-parallel step ends when every rank's does."""
    times = torch.tensor(step_ms, dtype=torch.float64, device=device)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    return times.tolist()


def nccl_version():
    """The NCCL PyTorch loaded, as text (a tuple in current PyTorch, an int such as 22809 in old ones)."""
    version = torch.cuda.nccl.version()
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def median_ms(step_ms):
    return round(statistics.median(step_ms), 4)


def report(program, args, step_ms, loss, extra):
    """Rank 0 prints the one TANDEM_RESULT line: JSON, the loss as a float whose repr is exact."""
    if dist.get_rank() != 0:
        return
    result = {
        "program": program,
        "mode": getattr(args, "mode", "train"),
        "world_size": dist.get_world_size(),
        "step_ms": [round(t, 4) for t in step_ms],
        "step_ms_median": median_ms(step_ms),
        "step_ms_min": round(min(step_ms), 4),
        "step_ms_max": round(max(step_ms), 4),
        "loss": loss,
        "steps": len(step_ms),
        "torch": torch.__version__,
        "nccl": nccl_version() if dist.get_backend() == "nccl" else None,
        "config": vars(args),
    }
    if torch.cuda.is_available() and dist.get_backend() == "nccl":
        # What a control costs in device memory shows here: everything the process holds on the GPU
        # after its steps (PyTorch's caching allocator, NCCL's and tandem's buffers, CUDA's context).
        # Ranks sharing one GPU see each other's memory too.
        free, total = torch.cuda.mem_get_info()
        result["device_memory_used_bytes"] = total - free
        result["torch_max_allocated_bytes"] = torch.cuda.max_memory_allocated()
    result.update(extra)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def final_loss(model, x, target, device):
    """The loss of rank 0's batch after the last update (every step's update counts), as a Python
    float: the fp32 value exactly, comparable bitwise between runs."""
    with torch.no_grad():
        return float(loss_of(model, x, target, device).item())
