"""A PyTorch DDP training step, written without tandem, for measuring `tandem run` on real PyTorch.

    torchrun --nproc-per-node 2 examples/pytorch/ddp_overlap.py
    tandem run --policy priority -- torchrun --nproc-per-node 2 examples/pytorch/ddp_overlap.py

DDP all-reduces gradient buckets (25 MB, PyTorch's default) while the backward pass computes the
remaining gradients: the overlap tandem controls. Each iteration is timed alone (synchronised after
it). Rank 0 prints one TANDEM_RESULT JSON line (training_common.py), as ddp_mlp.py and fsdp2_mlp.py
do; median_iteration_ms is its step_ms_median, the median over iterations of the slowest rank's time.
--tandem POLICY applies a policy through the tandem.torch package instead of `tandem run`.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import training_common as common


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=8192)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--iters", "--steps", dest="iters", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--bucket-mb", type=int, default=25)
    parser.add_argument("--tandem", metavar="POLICY", default=None,
                        help="apply a tandem policy (text or @FILE) through the tandem.torch package")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    tt = None
    if args.tandem is not None:
        import tandem.torch as tt  # imported only here: without --tandem, stock PyTorch alone
        tt.init_process_group(args.tandem, backend="nccl")
    else:
        dist.init_process_group("nccl")
    torch.manual_seed(1234 + dist.get_rank())

    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden, bias=False), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
    ddp = DDP(model, device_ids=[local_rank], bucket_cap_mb=args.bucket_mb)
    if tt is not None:
        tt.register_ddp_hook(ddp, args.tandem)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    x = torch.randn(args.tokens, args.hidden, device="cuda", dtype=torch.bfloat16)

    times = []
    for it in range(args.warmup + args.iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = ddp(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        end.synchronize()
        if it >= args.warmup:
            times.append(start.elapsed_time(end))
    # Each iteration's time on the slowest rank is the step time.
    step_ms = common.slowest_rank(times, torch.device("cuda"))
    if not torch.isfinite(loss):
        raise SystemExit(f"loss is not finite: {loss.item()}")
    params = sum(p.numel() for p in model.parameters())
    common.report("ddp_overlap", args, step_ms, float(loss.item()),
                  {"example": "ddp_overlap", "hidden": args.hidden, "tokens": args.tokens, "layers": args.layers,
                   "gradient_bytes": params * 2, "median_iteration_ms": common.median_ms(step_ms)})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
