"""A DDP training step over a stack of transformer-style MLP blocks, as PyTorch users write it, for
measuring tandem against stock PyTorch (scripts/pytorch-compare.py, docs/PYTORCH.md).

    torchrun --standalone --nproc-per-node 2 examples/pytorch/ddp_mlp.py
    torchrun --standalone --nproc-per-node 2 examples/pytorch/ddp_mlp.py --tandem priority
    tandem run --policy priority -- torchrun --standalone --nproc-per-node 2 examples/pytorch/ddp_mlp.py

bf16 autocast over fp32 parameters (training_common.py says why); DDP all-reduces the fp32 gradient
buckets (--bucket-cap-mb) while backward computes the rest: the overlap tandem controls.
--mode no-comm runs every step under DDP's no_sync() (no gradient communication: the compute
bound); --mode comm-only runs only the all-reduces of DDP's own buckets, learnt during warm-up, on
the same process group (the communication bound). Rank 0 prints one TANDEM_RESULT JSON line.
"""
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

import training_common as common


def recording_hook(buckets, bucket):
    """DDP's default all-reduce, noting each bucket's size and type (comm-only replays them)."""
    buffer = bucket.buffer()
    buckets[bucket.index()] = (buffer.numel(), buffer.dtype)
    return allreduce_hook(None, bucket)


def main():
    args = common.parse_args(__doc__.splitlines()[0])
    tt, device = common.init(args)
    model = common.build_model(args, device)
    ddp = DDP(model, device_ids=[device.index] if device.type == "cuda" else None,
              bucket_cap_mb=args.bucket_cap_mb)
    buckets = {}
    if args.mode == "comm-only":
        ddp.register_comm_hook(buckets, recording_hook)
    elif tt is not None:
        tt.register_ddp_hook(ddp, args.tandem)
    forward = common.maybe_compile(args, ddp)
    optimizer = common.make_optimizer(args, ddp.parameters())
    x, target = common.make_batch(args, device, dist.get_rank())

    def train_step():
        loss = common.loss_of(forward, x, target, device)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def no_comm_step():
        # Forward and backward inside no_sync(): DDP skips the gradient all-reduces (each rank keeps
        # its local gradients); everything else, the optimizer included, runs as in train.
        with ddp.no_sync():
            train_step()

    replay = []

    def comm_only_step():
        # The buckets' all-reduces alone, in DDP's order, on the process group DDP uses; waiting on
        # each work makes the current stream wait for it, so the step's end event follows them all.
        works = [dist.all_reduce(buffer, async_op=True) for buffer in replay]
        for work in works:
            work.wait()

    # comm-only's warm-up is real training, which teaches the hook DDP's buckets (rebuilt after step 1).
    for _ in range(args.warmup):
        with common.nvtx_range(device, "warmup"):
            no_comm_step() if args.mode == "no-comm" else train_step()
    if args.mode == "comm-only":
        replay = [torch.zeros(numel, dtype=dtype, device=device) for _, (numel, dtype) in sorted(buckets.items())]
    step = {"train": train_step, "no-comm": no_comm_step, "comm-only": comm_only_step}[args.mode]

    step_ms = common.timed_steps(args, device, step)
    loss = None if args.mode == "comm-only" else common.final_loss(ddp, x, target, device)
    params = sum(p.numel() for p in model.parameters())
    extra = {"parameters": params, "gradient_bytes": sum(p.numel() * p.element_size() for p in model.parameters())}
    if args.mode == "comm-only":
        extra["bucket_bytes"] = [b.numel() * b.element_size() for b in replay]
        # tandem.torch's DDP hook needs DDP's buckets: comm-only replays them through the process group
        # (with --tandem, its process-wide settings apply, the hook does not).
        extra["comm_route"] = "process-group all_reduce"
    common.report("ddp_mlp", args, step_ms, loss, extra)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
