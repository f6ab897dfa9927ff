"""A small GPT trained with Megatron-core's own APIs, as its users write a training loop: a real program
for tandem's reach, results and timeline on a framework that manages its communication itself
(docs/FRAMEWORKS.md).

    torchrun --standalone --nproc-per-node 2 examples/frameworks/megatron_train.py --overlap-grad-reduce
    torchrun --standalone --nproc-per-node 2 examples/frameworks/megatron_train.py --distributed-optimizer \\
        --overlap-param-gather
    torchrun --standalone --nproc-per-node 2 examples/frameworks/megatron_train.py --tp 2 --sequence-parallel
    torchrun --standalone --nproc-per-node 2 examples/frameworks/megatron_train.py --pp 2
    torchrun --nproc-per-node 2 --no-python tandem run --policy copy-engine --stats stats-%p.json -- \\
        python examples/frameworks/megatron_train.py --overlap-grad-reduce
    torchrun --nproc-per-node 2 tests/tools/shared_gpu_rank.py examples/frameworks/megatron_train.py ...
                                                   # 2 ranks sharing one GPU (results only; times mean nothing)

What it uses, all Megatron-core (0.19; no Transformer Engine, no Apex: the local layer spec, torch's norms
and torch's AdamW, which Megatron-core falls back to):
- parallel_state.initialize_model_parallel(tp, pp) with Megatron's per-group NCCL options from its YAML
  (--nccl-comm-config: cga_cluster_size, max_ctas, min_ctas, is_high_priority_stream per group name such
  as dp, tp, pp, dp_cp, tp_dp_cp) and --high-priority-stream-groups; with --tandem POLICY, tandem.torch
  makes the default group and writes the policy's settings into every group's options;
- GPTModel with get_gpt_layer_local_spec() from a TransformerConfig (random init, seeded, no download),
  bf16 through Float16Module, sequence parallelism with --sequence-parallel (its norms then torch's with
  their parameters marked for SP, as Apex's FusedLayerNorm marks them: SequenceParallelTorchNorm);
- megatron.core.distributed.DistributedDataParallel with DistributedDataParallelConfig
  (overlap_grad_reduce, use_distributed_optimizer, overlap_param_gather, bucket_size,
  grad_reduce_in_fp32) and finalize_model_grads;
- get_megatron_optimizer(OptimizerConfig(...)): Float16OptimizerWithFloat16Params, or
  DistributedOptimizer with --distributed-optimizer (gradients reduce-scattered, parameters all-gathered
  into the bucket buffers, in place, ahead of each bucket's forward with --overlap-param-gather);
- get_forward_backward_func(): the 1F1B pipeline schedule with --pp 2 (batch_isend_irecv between stages),
  forward_backward_no_pipelining otherwise.

Data: rank r's micro-batch m at step s (DP rank d) is seeded with seed + 1 + d + 1000 s + 100000 m, the
same on every tensor- and pipeline-parallel rank of that DP rank. Every warm-up step runs in an NVTX range
named "warmup" and every timed one in one named "step" (`tandem run --timeline --step-range step`).
Rank 0 prints one TANDEM_RESULT line (examples/pytorch/training_common.py's): every step's loss (DP rank
0's micro-batches, averaged over them, from the last pipeline stage; floats whose repr is exact), the loss
after the last update, and per rank the collectives its process groups issued (PyTorch's flight recorder)
and, with --tandem, tandem.torch's stats(). Megatron-core needs CUDA: there is no CPU (gloo) mode.
"""
import argparse
import functools
import os
import sys
import warnings

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
sys.path.insert(0, os.path.join(HERE, "..", "reach"))
import training_common as common  # noqa: E402
import torch_reach  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel size (default 1)")
    parser.add_argument("--pp", type=int, default=1, help="pipeline-parallel size (default 1)")
    parser.add_argument("--sequence-parallel", action="store_true", help="Megatron's sequence parallelism (needs --tp > 1)")
    parser.add_argument("--overlap-grad-reduce", action=argparse.BooleanOptionalAction, default=True,
                        help="reduce each gradient bucket during backward (default on; --no-overlap-grad-reduce: "
                             "every bucket after backward)")
    parser.add_argument("--distributed-optimizer", action="store_true",
                        help="Megatron's DistributedOptimizer (ZeRO-1: reduce-scatter + all-gather)")
    parser.add_argument("--overlap-param-gather", action="store_true",
                        help="all-gather each bucket's parameters ahead of its forward (needs --distributed-optimizer)")
    parser.add_argument("--bucket-size", type=int, default=None,
                        help="parameters per gradient bucket (default: Megatron's, 40 M or more)")
    parser.add_argument("--nccl-comm-config", metavar="YAML", default=None,
                        help="Megatron's per-group NCCL options (nccl_communicator_config_path)")
    parser.add_argument("--high-priority-stream-groups", default="",
                        help="comma-separated group names (dp, tp, pp, ...) whose NCCL stream is high priority")
    parser.add_argument("--gloo-process-groups", action=argparse.BooleanOptionalAction, default=False,
                        help="Megatron's Gloo groups beside the NCCL ones (default off, as Megatron-LM's "
                             "--disable-gloo-process-groups: only checkpointing uses them)")
    parser.add_argument("--hidden", type=int, default=256, help="hidden size (default 256)")
    parser.add_argument("--ffn", type=int, default=None, help="MLP size (default 4 x hidden)")
    parser.add_argument("--layers", type=int, default=4, help="transformer layers (default 4)")
    parser.add_argument("--heads", type=int, default=8, help="attention heads (default 8)")
    parser.add_argument("--vocab", type=int, default=8192, help="vocabulary (default 8192)")
    parser.add_argument("--seq", type=int, default=256, help="sequence length (default 256)")
    parser.add_argument("--micro-batch", type=int, default=2, help="sequences per micro-batch (default 2)")
    parser.add_argument("--microbatches", type=int, default=None,
                        help="micro-batches per step (default: 1, or 2 x pp with pipelining)")
    parser.add_argument("--steps", type=int, default=4, help="timed steps (default 4)")
    parser.add_argument("--warmup", type=int, default=1, help="steps before the timed ones (default 1)")
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate (default 1e-4)")
    parser.add_argument("--seed", type=int, default=1234, help="model seed (default 1234)")
    parser.add_argument("--tandem", metavar="POLICY", default=None,
                        help="tandem.torch: the default process group under the policy (init_process_group), and "
                             "the policy's priority and nccl-* settings written into Megatron's per-group NCCL "
                             "options for every group (over --nccl-comm-config's)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before the program gives up (default 600)")
    args = parser.parse_args(argv)
    common.require_at_least(parser, args, ("tp", "pp", "hidden", "layers", "heads", "vocab", "seq", "micro_batch", "steps"))
    common.require_at_least(parser, args, ("warmup",), minimum=0)
    if args.hidden % args.heads or args.heads % args.tp:
        parser.error(f"--hidden {args.hidden} / --heads {args.heads} / --tp {args.tp}: heads must divide hidden "
                     "and tp divide heads")
    if args.layers % args.pp:
        parser.error(f"--layers {args.layers} is not a multiple of --pp {args.pp}")
    if args.sequence_parallel and args.tp < 2:
        parser.error("--sequence-parallel needs --tp 2 or more")
    if args.sequence_parallel and args.seq % args.tp:
        parser.error(f"--seq {args.seq} is not a multiple of --tp {args.tp} (sequence parallelism splits it)")
    if args.overlap_param_gather and not args.distributed_optimizer:
        parser.error("--overlap-param-gather needs --distributed-optimizer")
    if args.microbatches is None:
        args.microbatches = 2 * args.pp if args.pp > 1 else 1
    if args.microbatches < 1:
        parser.error(f"--microbatches must be at least 1, not {args.microbatches}")
    args.ffn = args.ffn or 4 * args.hidden
    args.backend = "nccl"
    args.sm_carveout = None  # training_common.init's knob: not used here
    return args


# Every process-group name Megatron-core 0.19's parallel_state looks up in its per-group NCCL options
# (get_nccl_options(NAME, ...)); tests/scripts/test_frameworks_cpu.py checks the installed Megatron-core
# against it.
MEGATRON_GROUPS = ("cp", "dp", "dp_cp", "embd", "ep", "ep_dp", "ep_gtp_remat_dp", "ep_tp", "expt_gtp_remat",
                   "gtp_remat", "gtp_remat_dp", "gtp_remat_dp_cp", "hcp", "inter_ep_dp", "intra_dist_opt_instance",
                   "intra_dp_cp", "intra_ep_dp", "mp", "pos_embd", "pp", "tp", "tp_cp", "tp_dp", "tp_dp_cp",
                   "tp_ep_gtp_remat_pp", "tp_ep_mp", "tp_ep_pp")
# Megatron's YAML keys -> ProcessGroupNCCL.Options' fields (Megatron has no key for NCCL's CTA policy).
MEGATRON_NCCL_KEYS = {"min_ctas": "min_ctas", "max_ctas": "max_ctas", "cga_cluster_size": "cga_cluster_size"}


def megatron_nccl_configs(policy, base=None):
    """Megatron's per-group NCCL options (what its --nccl-communicator-config-path YAML holds) with a tandem
    policy's communicator settings written into every group: is_high_priority_stream from `priority`, and
    min_ctas, max_ctas, cga_cluster_size from the nccl-* tokens, as tandem.torch.process_group_options makes
    them. The policy's settings win over `base` (the user's YAML) for the fields it names, as `tandem run`'s
    do over a program's ncclConfig_t; the other fields of `base` stay. NCCL's CTA policy has no Megatron key
    (a policy's nccl-cta-policy reaches Megatron's groups only through `tandem run`)."""
    import tandem.torch as tt

    options = tt.process_group_options(policy)
    configs = {name: dict(values) for name, values in (base or {}).items()}
    settings = {"is_high_priority_stream": True} if options.is_high_priority_stream else {}
    unset = type(options.config)()  # NCCL's "undefined" values: the fields the policy leaves alone
    for key, field in MEGATRON_NCCL_KEYS.items():
        if getattr(options.config, field) != getattr(unset, field):
            settings[key] = getattr(options.config, field)
    if settings:
        for name in MEGATRON_GROUPS:
            configs.setdefault(name, {}).update(settings)
    return configs


def nccl_config_path(args):
    """The YAML Megatron reads: --nccl-comm-config, with --tandem's settings written into every group."""
    if args.tandem is None:
        return args.nccl_comm_config
    import tempfile

    import yaml

    base = None
    if args.nccl_comm_config:
        with open(args.nccl_comm_config) as f:
            base = yaml.safe_load(f) or {}
    fd, path = tempfile.mkstemp(prefix="megatron-nccl-", suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(megatron_nccl_configs(args.tandem, base), f)
    return path


def init(args):
    """The default process group (stock, or tandem.torch's with --tandem), then Megatron's groups."""
    from megatron.core import parallel_state

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    tt = None
    if args.tandem is not None:
        import tandem.torch as tt  # noqa: the one-line integration
        tt.init_process_group(args.tandem, backend="nccl", device_id=device)
    else:
        dist.init_process_group(backend="nccl", device_id=device)
    groups = [g.strip() for g in args.high_priority_stream_groups.split(",") if g.strip()]
    config_path = nccl_config_path(args)
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=args.tp,
                                             pipeline_model_parallel_size=args.pp,
                                             nccl_communicator_config_path=config_path,
                                             high_priority_stream_groups=groups or None,
                                             create_gloo_process_groups=args.gloo_process_groups)
    if config_path != args.nccl_comm_config:
        os.unlink(config_path)
    return tt, device


def transformer_config(args):
    """The model's TransformerConfig: bf16, no dropout, Megatron-core's plain torch paths (its fused ones
    need Apex or Transformer Engine, or compile kernels)."""
    from megatron.core.transformer.transformer_config import TransformerConfig

    return TransformerConfig(
        num_layers=args.layers, hidden_size=args.hidden, ffn_hidden_size=args.ffn, num_attention_heads=args.heads,
        tensor_model_parallel_size=args.tp, pipeline_model_parallel_size=args.pp,
        sequence_parallel=args.sequence_parallel, bf16=True, params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16, use_cpu_initialization=True, init_method_std=0.02,
        hidden_dropout=0.0, attention_dropout=0.0,
        gradient_accumulation_fusion=False, bias_activation_fusion=False, bias_dropout_fusion=False,
        masked_softmax_fusion=False, persist_layer_norm=False, apply_rope_fusion=False)


class SequenceParallelTorchNorm:
    """torch's LayerNorm (or RMSNorm) for the local layer spec under sequence parallelism. Without Apex the
    local spec norms with Megatron-core's WrappedTorchNorm, which refuses sequence parallelism only because
    nothing marks its parameters: under SP each tensor-parallel rank norms its own slice of the sequence, so
    the norm's weight and bias gradients are partial sums that finalize_model_grads must all-reduce over the
    tensor-parallel group, and it picks them by the `sequence_parallel` attribute. Apex's FusedLayerNorm
    sets that attribute (megatron/core/fusions/fused_layer_norm.py); this builder does the same on torch's
    norm, which is what a Megatron-core user without Apex or Transformer Engine writes into the spec."""

    def __new__(cls, config, hidden_size, eps=1e-5, **_unused):
        norm = (torch.nn.RMSNorm if config.normalization == "RMSNorm" else torch.nn.LayerNorm)(hidden_size, eps=eps)
        for parameter in norm.parameters():
            parameter.sequence_parallel = config.sequence_parallel
        return norm


def layer_spec(config):
    """The local layer spec; under sequence parallelism without Apex, a block spec whose three norms per
    stage (each layer's two and the final one) are SequenceParallelTorchNorm."""
    from megatron.core.models.gpt.gpt_layer_specs import HAVE_APEX, get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlockSubmodules, get_num_layers_to_build

    spec = get_gpt_layer_local_spec()
    if not config.sequence_parallel or HAVE_APEX:
        return spec
    spec.submodules.input_layernorm = SequenceParallelTorchNorm
    spec.submodules.pre_mlp_layernorm = SequenceParallelTorchNorm
    return TransformerBlockSubmodules(layer_specs=[spec] * get_num_layers_to_build(config),
                                      layer_norm=SequenceParallelTorchNorm)


def gpt_model(args, config):
    """GPTModel with the local layer spec (Megatron-core's own layers, no Transformer Engine), seeded, on
    this pipeline stage, in bf16 through Float16Module (as Megatron-LM's get_model wraps it); on the CPU."""
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.transformer.module import Float16Module

    torch.manual_seed(args.seed)
    model = GPTModel(config=config, transformer_layer_spec=layer_spec(config), vocab_size=args.vocab,
                     max_sequence_length=args.seq, pre_process=parallel_state.is_pipeline_first_stage(),
                     post_process=parallel_state.is_pipeline_last_stage(),
                     share_embeddings_and_output_weights=False, position_embedding_type="learned_absolute")
    return Float16Module(config, model)


def ddp_config(args):
    from megatron.core.distributed import DistributedDataParallelConfig

    return DistributedDataParallelConfig(
        grad_reduce_in_fp32=True, overlap_grad_reduce=args.overlap_grad_reduce,
        use_distributed_optimizer=args.distributed_optimizer, overlap_param_gather=args.overlap_param_gather,
        bucket_size=args.bucket_size)


def optimizer_config(args):
    from megatron.core.optimizer import OptimizerConfig

    return OptimizerConfig(optimizer="adam", lr=args.lr, weight_decay=0.01, bf16=True, params_dtype=torch.bfloat16,
                           use_distributed_optimizer=args.distributed_optimizer, clip_grad=1.0)


def build_model(args):
    """The GPT on this rank's GPU, wrapped in Megatron's DistributedDataParallel."""
    from megatron.core.distributed import DistributedDataParallel
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    config = transformer_config(args)
    model_parallel_cuda_manual_seed(args.seed)
    model = gpt_model(args, config)
    model.cuda(torch.cuda.current_device())
    ddp = DistributedDataParallel(config=config, ddp_config=ddp_config(args), module=model)
    ddp.broadcast_params()  # as Megatron-LM does: every DP rank starts from DP rank 0's parameters
    return config, ddp


def build_optimizer(args, config, model):
    """Megatron's optimizer over the DDP model, and the schedule's hooks as Megatron-LM sets them."""
    from megatron.core.distributed import finalize_model_grads
    from megatron.core.optimizer import get_megatron_optimizer

    optimizer = get_megatron_optimizer(optimizer_config(args), [model],
                                       use_gloo_process_groups=args.gloo_process_groups)
    if args.overlap_grad_reduce:
        config.no_sync_func = model.no_sync
    if args.overlap_param_gather and args.pp > 1:
        config.param_sync_func = model.start_param_sync
    config.finalize_model_grads_func = finalize_model_grads
    config.grad_scale_func = optimizer.scale_loss
    return optimizer


def micro_batches(args, step, device):
    """This DP rank's micro-batches of a step: tokens, labels (the next token), positions, a causal mask."""
    from megatron.core import parallel_state

    dp_rank = parallel_state.get_data_parallel_rank()
    out = []
    for m in range(args.microbatches):
        generator = torch.Generator(device=device).manual_seed(args.seed + 1 + dp_rank + 1000 * step + 100000 * m)
        tokens = torch.randint(0, args.vocab, (args.micro_batch, args.seq + 1), device=device, generator=generator)
        out.append({"tokens": tokens[:, :-1].contiguous(), "labels": tokens[:, 1:].contiguous(),
                    "loss_mask": torch.ones(args.micro_batch, args.seq, device=device),
                    "position_ids": torch.arange(args.seq, device=device).unsqueeze(0).expand(args.micro_batch, -1),
                    "attention_mask": torch.ones(1, 1, args.seq, args.seq, device=device).tril() < 0.5})
    return out


def forward_step(data_iterator, model):
    """Megatron's forward_step_func: the model's per-token losses and the function that averages them."""
    batch = next(data_iterator)
    output = model(batch["tokens"], batch["position_ids"], batch["attention_mask"], labels=batch["labels"])

    def loss_func(loss_mask, output_tensor):
        losses = output_tensor.float().reshape(-1)
        mask = loss_mask.reshape(-1).float()
        loss = torch.sum(losses * mask) / mask.sum()
        return loss, {"lm loss": loss.detach()}

    return output, functools.partial(loss_func, batch["loss_mask"])


def run_step(args, model, optimizer, batches, forward_only=False):
    """One training step as Megatron-LM's train_step: zeroed buffers, the schedule, the optimizer. Returns the
    mean of the micro-batches' losses on the last pipeline stage (None elsewhere)."""
    from megatron.core import parallel_state
    from megatron.core.pipeline_parallel import get_forward_backward_func

    if not forward_only:
        model.zero_grad_buffer()
        optimizer.zero_grad()
    losses = get_forward_backward_func()(
        forward_step_func=forward_step, data_iterator=iter(batches), model=[model], num_microbatches=len(batches),
        seq_length=args.seq, micro_batch_size=args.micro_batch, decoder_seq_length=args.seq,
        forward_only=forward_only)
    if not forward_only:
        update_successful, _grad_norm, _zeros = optimizer.step()
        if not update_successful:
            raise RuntimeError("Megatron's optimizer skipped the update (non-finite gradients)")
    if not parallel_state.is_pipeline_last_stage():
        return None
    return torch.stack([x["lm loss"] for x in losses]).mean()


def main():
    args = parse_args()
    torch_reach.time_limit(args.timeout)
    warnings.filterwarnings("ignore", message=".*(Apex|Transformer Engine|absl).*")
    from megatron.core import parallel_state

    tt, device = init(args)
    rank = dist.get_rank()
    config, model = build_model(args)
    optimizer = build_optimizer(args, config, model)

    losses = []
    timer = common.StepTimer(device)
    for step in range(args.warmup + args.steps):
        batches = micro_batches(args, step, device)
        if step == args.warmup:
            timer.mark()
        with common.nvtx_range(device, "warmup" if step < args.warmup else "step"):
            loss = run_step(args, model, optimizer, batches)
        if step >= args.warmup:
            timer.mark()
        losses.append(loss)
    final = run_step(args, model, optimizer, micro_batches(args, 0, device), forward_only=True)
    step_ms = timer.step_ms() if args.steps else []
    # The losses of DP rank 0's data, from its last pipeline stage (tensor-parallel rank 0).
    holder = (parallel_state.is_pipeline_last_stage() and parallel_state.get_data_parallel_rank() == 0
              and parallel_state.get_tensor_model_parallel_rank() == 0)
    report = {"rank": rank, "pid": os.getpid(), "process_group": torch_reach.process_group_collectives()}
    if holder:
        report["losses"] = [float(x) for x in losses]
        report["final_loss"] = float(final)
    if tt is not None:
        report["tandem_torch"] = tt.stats()
    reports = torch_reach.gather_reports(report)
    mine = next(r for r in reports if "losses" in r)
    extra = {"losses": mine["losses"], "framework": "megatron-core", "framework_version": megatron_version(),
             "tp": args.tp, "pp": args.pp, "dp": parallel_state.get_data_parallel_world_size(),
             "parameters": sum(p.numel() for p in model.parameters()),
             "cuda_device_max_connections": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"),
             "ranks": [{k: v for k, v in r.items() if k not in ("losses", "final_loss")} for r in reports],
             "ok": all(x == x and abs(x) != float("inf") for x in mine["losses"] + [mine["final_loss"]])}
    common.report("megatron_gpt", args, step_ms, mine["final_loss"], extra)
    del optimizer, model
    parallel_state.destroy_model_parallel()
    torch_reach.finish(tt)


def megatron_version():
    from megatron.core import package_info

    return package_info.__version__


if __name__ == "__main__":
    main()
