"""A Hugging Face Transformers Llama, random init from a config (no download), trained N steps with
DDP or FSDP2, optionally under torch.compile and through tandem.torch: a real program whose
collectives tandem's copy-engine route must reach (scripts/reach-check.py, docs/PYTORCH.md).

    torchrun --standalone --nproc-per-node 2 examples/reach/llama_train.py --parallel ddp
    torchrun --standalone --nproc-per-node 2 examples/reach/llama_train.py --parallel fsdp2 --compile
    torchrun --standalone --nproc-per-node 2 examples/reach/llama_train.py --parallel ddp --tandem copy-engine
    torchrun --nproc-per-node 2 --no-python tandem run --policy copy-engine --stats stats-%p.json -- \\
        python examples/reach/llama_train.py --parallel fsdp2

DDP: bf16 autocast over fp32 parameters, fp32 gradient buckets all-reduced (DDP's default).
FSDP2: fully_shard per decoder layer, then the root, MixedPrecisionPolicy(param_dtype=bf16,
reduce_dtype=fp32): bf16 all-gathers, fp32 reduce-scatters. --compile: torch.compile of the DDP
module (DDPOptimizer) or of the FSDP2 root. Eager attention (deterministic kernels: two runs of the
same program give the same losses bitwise). Rank r's batch at step s is seeded with
seed + 1 + r + 1000 s. Rank 0 prints one TANDEM_RESULT line: the loss of every step (rank 0's
batch, floats whose repr is exact), the loss after the last update, and per rank PyTorch's record of
the collectives its process group issued and, with --tandem, tandem.torch's stats().
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import training_common as common  # noqa: E402
import torch_reach  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", choices=("ddp", "fsdp2"), default="ddp", help="data parallelism (default ddp)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the parallel model")
    parser.add_argument("--hidden", type=int, default=1024, help="hidden size (default 1024)")
    parser.add_argument("--intermediate", type=int, default=2816, help="MLP size (default 2816)")
    parser.add_argument("--layers", type=int, default=4, help="decoder layers (default 4)")
    parser.add_argument("--heads", type=int, default=16, help="attention heads (default 16)")
    parser.add_argument("--vocab", type=int, default=32000, help="vocabulary (default 32000)")
    parser.add_argument("--seq", type=int, default=512, help="sequence length (default 512)")
    parser.add_argument("--batch", type=int, default=2, help="sequences per rank per step (default 2)")
    parser.add_argument("--steps", type=int, default=6, help="training steps (default 6)")
    parser.add_argument("--seed", type=int, default=1234, help="model seed (default 1234)")
    parser.add_argument("--optimizer", choices=("sgd", "adamw"), default="adamw", help="default adamw")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP bucket size (default 25)")
    parser.add_argument("--tandem", metavar="POLICY", default=None,
                        help="apply a tandem policy through tandem.torch (init_process_group, then "
                             "sync_module_states and register_ddp_hook, or install_fsdp_collectives)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl",
                        help="nccl on GPUs (default); gloo runs on the CPU, for smoke tests only")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before the program gives up (default 600)")
    args = parser.parse_args(argv)
    common.require_at_least(parser, args, ("hidden", "intermediate", "layers", "heads", "vocab", "seq", "batch", "steps"))
    if args.hidden % args.heads:
        parser.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    if args.tandem is not None and args.backend != "nccl":
        parser.error("--tandem needs --backend nccl")
    args.sm_carveout = None  # training_common.init: no SM carveout (pytorch-compare's programs have one)
    return args


def build_model(args, device):
    """The same random Llama on every rank and in every run: seeded, made on the device."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.heads, max_position_embeddings=args.seq,
                         attn_implementation="eager")
    torch.manual_seed(args.seed)
    with torch.device(device):
        return LlamaForCausalLM(config)


def batch(args, device, rank, step):
    generator = torch.Generator(device=device).manual_seed(args.seed + 1 + rank + 1000 * step)
    return torch.randint(0, args.vocab, (args.batch, args.seq), device=device, generator=generator)


def parallelize(args, model, device, tt):
    """DDP or FSDP2 around the model, tandem.torch's collectives where asked, then torch.compile."""
    if args.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        # Through tandem.torch, DDP's start-up broadcast of the parameters too: DDP leaves it to the caller.
        wrapped = DDP(model, device_ids=[device.index] if device.type == "cuda" else None,
                      bucket_cap_mb=args.bucket_cap_mb, init_sync=tt is None)
        if tt is not None:
            tt.sync_module_states(wrapped, args.tandem)
            tt.register_ddp_hook(wrapped, args.tandem)
        autocast = device.type == "cuda"
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh, mp_policy=mp)
        fully_shard(model, mesh=mesh, mp_policy=mp)
        if tt is not None:
            tt.install_fsdp_collectives(model, args.tandem)
        wrapped = model
        autocast = False  # FSDP2's mixed precision casts the parameters
    runner = torch.compile(wrapped) if args.compile else wrapped
    return wrapped, runner, autocast


def loss_of(runner, ids, autocast, device):
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
        return runner(input_ids=ids, labels=ids).loss


def main():
    args = parse_args()
    torch_reach.time_limit(args.timeout)
    tt, device = common.init(args)
    rank = dist.get_rank()
    model = build_model(args, device)
    wrapped, runner, autocast = parallelize(args, model, device, tt)
    optimizer = common.make_optimizer(args, wrapped.parameters())

    losses = []
    timer = common.StepTimer(device)
    timer.mark()
    for step in range(args.steps):
        loss = loss_of(runner, batch(args, device, rank, step), autocast, device)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        timer.mark()
    with torch.no_grad():
        final = loss_of(runner, batch(args, device, rank, 0), autocast, device)
    if args.parallel == "fsdp2":
        for module in model.modules():  # free every all-gathered parameter before the routes close
            if hasattr(module, "reshard"):
                module.reshard()
    # Read before the gather below, which is bookkeeping, not the program's work.
    report = {"rank": rank, "pid": os.getpid(), "process_group": torch_reach.process_group_collectives()}
    if tt is not None:
        report["tandem_torch"] = tt.stats()
    reports = torch_reach.gather_reports(report)
    extra = {"losses": [float(x) for x in losses], "parallel": args.parallel, "compile": args.compile,
             "parameters": sum(p.numel() for p in model.parameters()), "ranks": reports,
             "ok": all(torch.isfinite(torch.stack(losses)).tolist())}
    common.report("llama_" + args.parallel, args, timer.step_ms(), float(final), extra)
    del optimizer, wrapped, runner, model
    torch_reach.finish(tt)


if __name__ == "__main__":
    main()
