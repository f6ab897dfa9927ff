"""tandem's controls inside a PyTorch program.

    import tandem.torch as tt
    tt.init_process_group("priority+nccl-ctas:8", device_id=torch.device("cuda", local_rank))
    model = DDP(model, device_ids=[local_rank])
    tt.register_ddp_hook(model, "priority+nccl-ctas:8")

What a policy becomes here:

==========================  =================================================================
token                       inside PyTorch
==========================  =================================================================
priority                    ``ProcessGroupNCCL.Options(is_high_priority_stream=True)``: NCCL's
                            stream at the device's greatest priority
nccl-ctas / nccl-cga /      ``Options.config`` fields (min_ctas, max_ctas, cga_cluster_size,
nccl-cta-policy             cta_policy), as tandem's library writes them into an ncclConfig_t
sm-target:N                 ``torch._C._set_sm_carveout_experimental(SMs - N)``: PyTorch's
                            cuBLASLt GEMMs target N SMs (process-wide)
copy-engine                 tandem's copy-engine route (tandem._cuda.CopyEngineRoute, one per
                            process group) as the DDP hook's all-reduce (the division by the
                            world size fused into it, on a comm stream of its own), as DDP's
                            start-up broadcast (``sync_module_states``) and as FSDP2's
                            all-gather and reduce-scatter (sum, average, pre-multiplied sum);
                            DDP's rebuilt buckets, FSDP2's all-gather outputs and reduce-scatter
                            inputs in the route's window memory, unstaged; what the route
                            refuses takes NCCL (``stats()``)
shape:*                     refused: only the interposer pads PyTorch's launches (tandem run)
green:N, sequential,        refused: PyTorch decides where and in which order its kernels run
comm-first, nccl-symmetric  (the reasons are in the error messages)
==========================  =================================================================

tandem's extension modules bind to the CUDA runtime and the NCCL that PyTorch loaded: this package
imports torch before any of them, and ``tandem._core`` loads neither.

The copy-engine routes hold lanes split from the process groups' communicators and NCCL window memory:
``close_routes()`` releases them (collectively) and must run before ``dist.destroy_process_group``,
once no tensor from an FSDP2 all-gather buffer is alive.

The package, one concern a module; what this module exports is theirs:

    options   the policy as PyTorch's process-group options and SM carveout (pytorch_policy)
    routes    the copy-engine routes by process group (the registry) and running one call on a route or,
              where it refuses, on the group's NCCL collective, counted: the plumbing a front end is built on
    pool      a route's window memory lent out as tensors
    counts    the counts by site and route, as a document of tandem's stats schema (stats())
    ddp       DDP's communication hook and start-up broadcast
    fsdp      FSDP2's custom all-gather and reduce-scatter

A framework's own front end (Megatron's or DeepSpeed's collectives) is a module like ``ddp`` or ``fsdp``
over ``routes``: docs/PYTORCH.md, "A front end of your own".
"""
# torch first: tandem._cuda, imported later by routes.gpu_module(), then binds to PyTorch's NCCL.
import torch  # noqa: F401

from . import counts, routes
from .ddp import CopyEngineHookState, all_reduce_average, register_ddp_hook, sync_module_states
from .fsdp import CopyEngineAllGather, CopyEngineReduceScatter, install_fsdp_collectives
from .options import apply_process_settings, init_process_group, process_group_options
from .pool import WindowPool
from .routes import (DEFAULT_ROUTE_POOL_BYTES, NCCL_DTYPES, ROUTED, close_routes, copy_engine_route, gpu_module,
                     nccl_comm, nccl_dtype)

__all__ = [
    "apply_process_settings",
    "CopyEngineAllGather",
    "CopyEngineHookState",
    "CopyEngineReduceScatter",
    "NCCL_DTYPES",
    "WindowPool",
    "all_reduce_average",
    "close_routes",
    "copy_engine_route",
    "gpu_module",
    "init_process_group",
    "install_fsdp_collectives",
    "nccl_comm",
    "nccl_dtype",
    "process_group_options",
    "register_ddp_hook",
    "reset_stats",
    "stats",
    "sync_module_states",
]


def stats():
    """What tandem.torch's collectives did, as a document of tandem's stats schema (``counts.SCHEMA``: the
    records and keys of ``tandem run --stats``, docs/BENCH_JSON.md): ``schema_version``, ``front_end``
    ("tandem.torch"), ``nccl_collectives`` (per site - ``ddp_all_reduce``, ``ddp_broadcast``,
    ``fsdp_all_gather``, ``fsdp_reduce_scatter``, a front end's own - its calls and bytes, those the copy-engine
    route took under ``copy_engine`` and those NCCL ran by reason under ``nccl``; each call counted with the
    larger of its buffers, as ``tandem run --stats`` counts a collective), ``copy_engine_reach`` (the share of
    the bytes the route took), ``copy_engine_route`` (the open routes' counters summed, and how many),
    ``routes`` (each open route's counters, tandem::CopyEngineRouteStats, by group name) and ``window_pool``
    (window buffers made and tensors lent from them: FSDP2's all-gather outputs)."""
    return counts.document(routes.open_routes())


def reset_stats():
    """Clears the counts of ``stats()`` (not the routes' own)."""
    counts.reset()
