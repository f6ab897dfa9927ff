"""An FSDP2 training step over the stack of MLP blocks of ddp_mlp.py (same flags), for measuring
tandem against stock PyTorch (scripts/pytorch-compare.py, docs/PYTORCH.md).

    torchrun --standalone --nproc-per-node 2 examples/pytorch/fsdp2_mlp.py
    torchrun --standalone --nproc-per-node 2 examples/pytorch/fsdp2_mlp.py --tandem copy-engine

fully_shard on each block, then on the root, with MixedPrecisionPolicy(param_dtype=bf16,
reduce_dtype=fp32), FSDP2's counterpart of bf16 autocast over fp32 parameters: parameters are
all-gathered in bf16 before each block's forward and again before its backward (reshard after
forward, the default), gradients reduce-scattered in fp32 after it.

--mode no-comm, the compute bound: the same FSDP2 model with parameters kept unsharded
(reshard_after_forward=False, set_reshard_after_backward(False)) and gradient sync off
(set_requires_gradient_sync(False)): after the first warm-up step's all-gathers no collective runs,
and the timed steps run FSDP2's own forward and backward kernels, casts and hooks. It is the fair
bound rather than an unsharded model on one GPU, which would skip FSDP2's hooks and cast parameters
differently (autocast per op instead of once per block). The optimizer still steps over the sharded
parameters (their gradients held at zero), so its kernels count as in train. What no-comm leaves out
is the communication and the copies into and out of the collectives' buffers, which belong to it.
--mode comm-only: the step's all-gathers and reduce-scatters alone, of FSDP2's sizes, in its order,
on the same process group (the communication bound).
"""
import math

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import training_common as common


def padded_numel(param, world):
    """A parameter's unsharded size as FSDP2 communicates it: dim 0 padded to a multiple of the world."""
    rows = param.shape[0]
    return math.ceil(rows / world) * world * (param.numel() // rows)


def comm_only_buffers(blocks, world, device):
    """Per block: the all-gather's bf16 input shard and output, the reduce-scatter's fp32 input and
    output shard, sized as FSDP2's for that block."""
    buffers = []
    for block in blocks:
        numel = sum(padded_numel(p, world) for p in block.parameters())
        buffers.append({
            "ag_in": torch.zeros(numel // world, dtype=torch.bfloat16, device=device),
            "ag_out": torch.zeros(numel, dtype=torch.bfloat16, device=device),
            "rs_in": torch.zeros(numel, dtype=torch.float32, device=device),
            "rs_out": torch.zeros(numel // world, dtype=torch.float32, device=device),
        })
    return buffers


def main():
    args = common.parse_args(__doc__.splitlines()[0], add_arguments=lambda parser: parser.add_argument(
        "--symm-mem", action="store_true",
        help="PyTorch's own route: FSDP2's all-gather buffers in NCCL symmetric memory (set_symm_mem_for_comm); "
             "with NCCL_CTA_POLICY=2 (zero-CTA) NCCL runs those all-gathers on copy engines"))
    tt, device = common.init(args)
    world = dist.get_world_size()
    model = common.build_model(args, device)
    # A 1-D mesh over every rank reuses the default process group (the one tandem.torch configured).
    mesh = init_device_mesh(device.type, (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    keep_unsharded = args.mode == "no-comm"
    blocks = list(model)
    for block in blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=not keep_unsharded)
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=not keep_unsharded)
    if args.symm_mem:
        if args.tandem is not None:
            raise SystemExit("--symm-mem and --tandem both replace FSDP2's collectives: give one")
        if not hasattr(model, "set_symm_mem_for_comm"):
            raise SystemExit(f"--symm-mem: this PyTorch ({torch.__version__}) has no FSDPModule.set_symm_mem_for_comm")
        for block in blocks:  # per module: the root holds no parameters of its own
            block.set_symm_mem_for_comm()
    if tt is not None and args.mode != "comm-only":
        tt.install_fsdp_collectives(model, args.tandem)
    forward = common.maybe_compile(args, model)
    optimizer = common.make_optimizer(args, model.parameters())
    x, target = common.make_batch(args, device, dist.get_rank())

    if keep_unsharded:
        model.set_requires_gradient_sync(False)
        model.set_reshard_after_backward(False)
        for p in model.parameters():
            p.grad = torch.zeros_like(p)  # sharded gradients FSDP2 will not write: the optimizer still runs

    def train_step():
        loss = common.loss_of(forward, x, target, device)
        loss.backward()
        optimizer.step()
        # no-comm keeps its zero sharded gradients (set_to_none would make the optimizer skip them).
        optimizer.zero_grad(set_to_none=not keep_unsharded)

    buffers = []

    def comm_only_step():
        # FSDP2's order: forward all-gathers block by block; backward all-gathers each block again
        # (prefetched one ahead) and reduce-scatters its gradients after it. One process group, so
        # NCCL runs them one after another as in training; the last wait puts the step's end event
        # after them all.
        works = [dist.all_gather_into_tensor(b["ag_out"], b["ag_in"], async_op=True) for b in buffers]
        backward = list(reversed(buffers))
        works.append(dist.all_gather_into_tensor(backward[0]["ag_out"], backward[0]["ag_in"], async_op=True))
        for i, b in enumerate(backward):
            if i + 1 < len(backward):
                nxt = backward[i + 1]
                works.append(dist.all_gather_into_tensor(nxt["ag_out"], nxt["ag_in"], async_op=True))
            works.append(dist.reduce_scatter_tensor(b["rs_out"], b["rs_in"], async_op=True))
        for work in works:
            work.wait()

    for _ in range(args.warmup):
        with common.nvtx_range(device, "warmup"):
            train_step()
    if args.mode == "comm-only":
        buffers = comm_only_buffers(blocks, world, device)
        step = comm_only_step
    else:
        step = train_step

    step_ms = common.timed_steps(args, device, step)
    loss = None if args.mode == "comm-only" else common.final_loss(model, x, target, device)
    unsharded = sum(padded_numel(p, world) for p in model.parameters())
    extra = {
        "parameters": sum(p.numel() for p in model.parameters()),
        # Per step: each block all-gathered twice (forward, backward) in bf16, reduce-scattered once in fp32.
        "all_gather_bytes_per_step": 2 * unsharded * 2,
        "reduce_scatter_bytes_per_step": unsharded * 4,
    }
    if args.mode == "comm-only":
        extra["comm_route"] = "process-group all_gather_into_tensor / reduce_scatter_tensor"
    common.report("fsdp2_mlp", args, step_ms, loss, extra)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
