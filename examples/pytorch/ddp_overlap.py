"""A PyTorch DDP training step, written without tandem, for measuring `tandem run` on real PyTorch.

    torchrun --nproc-per-node 2 examples/pytorch/ddp_overlap.py
    tandem run --policy priority -- torchrun --nproc-per-node 2 examples/pytorch/ddp_overlap.py

DDP all-reduces gradient buckets (25 MB, PyTorch's default) while the backward pass computes the
remaining gradients: the overlap tandem controls. Rank 0 prints the median iteration time as JSON.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=8192)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--bucket-mb", type=int, default=25)
    args = parser.parse_args()

    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(1234 + dist.get_rank())

    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.hidden, args.hidden, bias=False), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16)
    ddp = DDP(model, device_ids=[local_rank], bucket_cap_mb=args.bucket_mb)
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
    # The slowest rank's median is the step time.
    median = torch.tensor(sorted(times)[len(times) // 2], device="cuda")
    dist.all_reduce(median, op=dist.ReduceOp.MAX)
    if not torch.isfinite(loss):
        raise SystemExit(f"loss is not finite: {loss.item()}")
    if dist.get_rank() == 0:
        params = sum(p.numel() for p in model.parameters())
        print(json.dumps({"example": "ddp_overlap", "world_size": dist.get_world_size(), "hidden": args.hidden,
                          "tokens": args.tokens, "layers": args.layers, "gradient_bytes": params * 2,
                          "median_iteration_ms": round(median.item(), 4), "loss": loss.item()}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
