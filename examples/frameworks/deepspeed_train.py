"""A Transformers Llama trained with DeepSpeed ZeRO, as its users write a training loop: a real program for
tandem's reach, results and timeline on a framework that manages its communication itself
(docs/FRAMEWORKS.md).

    torchrun --standalone --nproc-per-node 2 examples/frameworks/deepspeed_train.py --zero-stage 2
    torchrun --standalone --nproc-per-node 2 examples/frameworks/deepspeed_train.py --zero-stage 3 --no-overlap-comm
    torchrun --nproc-per-node 2 --no-python tandem run --policy copy-engine --stats stats-%p.json -- \\
        python examples/frameworks/deepspeed_train.py --zero-stage 1
    deepspeed --num_gpus 2 examples/frameworks/deepspeed_train.py --zero-stage 2   # DeepSpeed's own launcher
    tandem run --policy copy-engine --stats stats-%p.json -- deepspeed --num_gpus 2 \
        examples/frameworks/deepspeed_train.py --zero-stage 2
    torchrun --nproc-per-node 2 tests/tools/shared_gpu_rank.py examples/frameworks/deepspeed_train.py ...
                                                   # 2 ranks sharing one GPU (results only; times mean nothing)
    DS_ACCELERATOR=cpu torchrun --standalone --nproc-per-node 2 examples/frameworks/deepspeed_train.py \\
        --backend gloo --zero-stage 2              # CPU ranks (tests/scripts/test_frameworks_cpu.py)

deepspeed.initialize with a configuration dict: ZeRO stage 1, 2 or 3 (--zero-stage), overlap_comm
(--overlap-comm/--no-overlap-comm: DeepSpeed's side stream for the gradient reduction and, in stage 3, the
parameter all-gathers), contiguous_gradients, reduce_bucket_size and allgather_bucket_size
(--bucket-size), stage 3's prefetch bucket and persistence threshold, gradient clipping, bf16; AdamW from
torch (the optimizer section's torch_adam: DeepSpeed builds torch.optim.AdamW, so no fused op is
JIT-compiled). The model: a Transformers LlamaForCausalLM from a LlamaConfig (random init, seeded, no
download; eager attention).

Data: rank r's batch at step s is seeded with seed + 1 + r + 1000 s. Every warm-up step runs in an NVTX
range named "warmup" and every timed one in one named "step" (`tandem run --timeline --step-range step`).
Rank 0 prints one TANDEM_RESULT line (examples/pytorch/training_common.py's): every step's loss (rank 0's
batch; floats whose repr is exact), the loss after the last update, and per rank the collectives its
process groups issued (PyTorch's flight recorder) and, with --tandem, tandem.torch's stats().
--tandem POLICY creates the default process group through tandem.torch before DeepSpeed (which then
uses it); DeepSpeed's own groups (ZeRO's data-parallel group is a clone of the world) take PyTorch's
default options.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
sys.path.insert(0, os.path.join(HERE, "..", "reach"))
import training_common as common  # noqa: E402
import torch_reach  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zero-stage", type=int, choices=(1, 2, 3), default=2, help="ZeRO stage (default 2)")
    parser.add_argument("--overlap-comm", action=argparse.BooleanOptionalAction, default=True,
                        help="DeepSpeed's overlap_comm (default on)")
    parser.add_argument("--contiguous-gradients", action=argparse.BooleanOptionalAction, default=True,
                        help="DeepSpeed's contiguous_gradients (default on)")
    parser.add_argument("--bucket-size", type=int, default=2_000_000,
                        help="reduce_bucket_size and allgather_bucket_size, elements (default 2e6)")
    parser.add_argument("--hidden", type=int, default=256, help="hidden size (default 256)")
    parser.add_argument("--intermediate", type=int, default=688, help="MLP size (default 688)")
    parser.add_argument("--layers", type=int, default=4, help="decoder layers (default 4)")
    parser.add_argument("--heads", type=int, default=8, help="attention heads (default 8)")
    parser.add_argument("--vocab", type=int, default=8192, help="vocabulary (default 8192)")
    parser.add_argument("--seq", type=int, default=256, help="sequence length (default 256)")
    parser.add_argument("--batch", type=int, default=2, help="sequences per rank per step (default 2)")
    parser.add_argument("--steps", type=int, default=4, help="timed steps (default 4)")
    parser.add_argument("--warmup", type=int, default=1, help="steps before the timed ones (default 1)")
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate (default 1e-4)")
    parser.add_argument("--seed", type=int, default=1234, help="model seed (default 1234)")
    parser.add_argument("--tandem", metavar="POLICY", default=None,
                        help="tandem.torch: the default process group under the policy (init_process_group)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl",
                        help="nccl on GPUs (default); gloo on the CPU (with DS_ACCELERATOR=cpu), for tests")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before the program gives up (default 600)")
    # DeepSpeed's launcher (the `deepspeed` command) passes it; the device comes from LOCAL_RANK, which the
    # launcher sets too, as torchrun does.
    parser.add_argument("--local_rank", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    common.require_at_least(parser, args, ("hidden", "intermediate", "layers", "heads", "vocab", "seq", "batch", "steps",
                                           "bucket_size"))
    common.require_at_least(parser, args, ("warmup",), minimum=0)
    if args.hidden % args.heads:
        parser.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    if args.tandem is not None and args.backend != "nccl":
        parser.error("--tandem needs --backend nccl")
    args.sm_carveout = None  # training_common.init's knob: not used here
    return args


def ds_config(args):
    """DeepSpeed's configuration, as a dict (what users keep in ds_config.json)."""
    zero = {"stage": args.zero_stage, "overlap_comm": args.overlap_comm,
            "contiguous_gradients": args.contiguous_gradients, "reduce_scatter": True,
            "reduce_bucket_size": args.bucket_size, "allgather_bucket_size": args.bucket_size}
    if args.zero_stage == 3:
        # Small thresholds, so that a small model's parameters are partitioned and gathered as a large
        # one's are (by default parameters under 100 K elements stay whole on every rank).
        zero.update({"stage3_prefetch_bucket_size": args.bucket_size, "stage3_param_persistence_threshold": 1024,
                     "stage3_max_live_parameters": 10 * args.bucket_size,
                     "stage3_max_reuse_distance": 10 * args.bucket_size})
    return {
        "train_micro_batch_size_per_gpu": args.batch,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "bf16": {"enabled": True},
        "optimizer": {"type": "AdamW", "params": {"lr": args.lr, "weight_decay": 0.01, "torch_adam": True}},
        "zero_optimization": zero,
        "steps_per_print": 1_000_000,
        "wall_clock_breakdown": False,
    }


def build_model(args):
    """The same random Llama on every rank and in every run: seeded, made on the CPU (DeepSpeed moves it)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.intermediate,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.heads, max_position_embeddings=args.seq,
                         attn_implementation="eager")
    torch.manual_seed(args.seed)
    return LlamaForCausalLM(config)


def batch(args, device, rank, step):
    generator = torch.Generator(device="cpu").manual_seed(args.seed + 1 + rank + 1000 * step)
    return torch.randint(0, args.vocab, (args.batch, args.seq), generator=generator).to(device)


def init(args):
    """The default process group: tandem.torch's with --tandem, else DeepSpeed's own init_distributed."""
    import deepspeed

    tt = None
    if args.backend == "nccl":
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        if args.tandem is not None:
            import tandem.torch as tt  # noqa: the one-line integration
            tt.init_process_group(args.tandem, backend="nccl", device_id=torch.device("cuda", local_rank))
    deepspeed.init_distributed(dist_backend=args.backend)  # uses the group above when there is one
    return tt


def main():
    args = parse_args()
    torch_reach.time_limit(args.timeout)
    import deepspeed

    tt = init(args)
    rank = dist.get_rank()
    model = build_model(args)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config(args))
    device = engine.device
    device = torch.device(device) if not isinstance(device, torch.device) else device

    losses = []
    timer = common.StepTimer(device)
    for step in range(args.warmup + args.steps):
        ids = batch(args, device, rank, step)
        if step == args.warmup:
            timer.mark()
        with common.nvtx_range(device, "warmup" if step < args.warmup else "step"):
            loss = engine(input_ids=ids, labels=ids).loss
            engine.backward(loss)
            engine.step()
        if step >= args.warmup:
            timer.mark()
        losses.append(loss.detach().float())
    with torch.no_grad():
        final = engine(input_ids=batch(args, device, rank, 0), labels=batch(args, device, rank, 0)).loss.float()
    step_ms = timer.step_ms()  # rank 0's (no collective of the example's own: reach counts the framework's)
    report = {"rank": rank, "pid": os.getpid(), "process_group": torch_reach.process_group_collectives()}
    if tt is not None:
        report["tandem_torch"] = tt.stats()
    reports = torch_reach.gather_reports(report)
    values = [float(x) for x in losses]
    extra = {"losses": values, "framework": "deepspeed", "framework_version": deepspeed.__version__,
             "zero_stage": args.zero_stage, "overlap_comm": args.overlap_comm,
             "optimizer": type(engine.optimizer).__name__,
             "parameters": sum(p.ds_numel if hasattr(p, "ds_numel") else p.numel() for p in model.parameters()),
             "cuda_device_max_connections": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"), "ranks": reports,
             "ok": all(torch.isfinite(torch.tensor(values + [float(final)])).tolist())}
    common.report("deepspeed_llama", args, step_ms, float(final), extra)
    del engine, model
    torch_reach.finish(tt)


if __name__ == "__main__":
    main()
