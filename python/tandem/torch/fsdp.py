"""FSDP2 through a policy: its custom all-gather and reduce-scatter through the copy-engine route, their
buffers in the route's window memory (nothing staged), installed on every FSDP2 module
(``install_fsdp_collectives``)."""
import math

import torch
import torch.distributed as dist

from . import options, pool, routes

try:  # FSDP2's protocols (torch >= 2.7); plain classes otherwise, FSDP2 only calls them
    from torch.distributed.fsdp._fully_shard._fsdp_api import AllGather as _AllGather
    from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter as _ReduceScatter
except ImportError:  # pragma: no cover
    _AllGather = _ReduceScatter = object


class CopyEngineAllGather(_AllGather):
    """FSDP2's custom all-gather (``torch.distributed.fsdp`` ``AllGather``) through the copy-engine route.

    ``allocate()`` lends window memory of the route of ``process_group`` (``WindowPool``), so FSDP2's
    in-place all-gather (its input is this rank's chunk of the output) runs without staging. Calls run on
    FSDP2's all-gather stream (the current stream) and return None: FSDP2 then orders its copy-out by the
    event it records on that stream. An all-gather only moves bytes: it travels as uint8. A call the route
    refuses takes ``dist.all_gather_into_tensor``."""

    def __init__(self, process_group=None):
        self.process_group = process_group
        self._pool = None

    def allocate(self, size, *, dtype, device):
        if torch.device(device).type != "cuda":
            return torch.empty(*size, dtype=dtype, device=device)
        if self._pool is None:
            self._pool = pool.WindowPool(routes.copy_engine_route(self.process_group))
        return self._pool.tensor(size, dtype, device)

    def __call__(self, output_tensor, input_tensor, group, async_op=False):
        nbytes = input_tensor.numel() * input_tensor.element_size()
        reason = routes.run_on_route("fsdp_all_gather", "all_gather", group, input_tensor, output_tensor, nbytes,
                                     torch.uint8)
        if reason:
            return routes.run_on_nccl("fsdp_all_gather", reason, (input_tensor, output_tensor),
                                      dist.all_gather_into_tensor, output_tensor, input_tensor, group=group,
                                      async_op=async_op)
        return None


class CopyEngineReduceScatter(_ReduceScatter):
    """FSDP2's custom reduce-scatter (``ReduceScatter``) through the copy-engine route.

    FSDP2 asks ``allocate()`` for the input (this rank's unsharded gradients, flat), then for the output (its
    shard: a world size fewer elements), which it keeps as the sharded gradient. The input is lent from the
    route's window memory (``WindowPool``: it comes back when FSDP2 frees it after the reduce-scatter), so the
    route reads it where it lies; the output, which a gradient holds as long as the program keeps it, is
    PyTorch's memory, and the route's sum writes into it directly: nothing is staged. A request is the output
    when it follows an input of the world size times its elements; any other is an input. On one rank, or off
    the GPU, both are PyTorch's memory.
    ``ReduceOp.SUM``, ``ReduceOp.AVG`` and ``ReduceOp.PREMUL_SUM(factor)`` run on the route with NCCL's
    numerics (the average and the pre-multiplied sum scale each rank's terms as the route sums them); any
    other reduction, and whatever the route refuses, takes ``dist.reduce_scatter_tensor``."""

    def __init__(self, process_group=None):
        self.process_group = process_group
        self._pool = None
        self._input_elements = None  # the input just lent, until FSDP2 asks for its output

    def lends_window_memory(self, size, world):
        """Whether a request of ``size`` on ``world`` ranks is an input (lent window memory), noting it: the
        request after an input of ``world`` times its elements is that input's output."""
        elements = math.prod(int(s) for s in size)
        is_output = self._input_elements is not None and elements * world == self._input_elements
        self._input_elements = None if is_output or world == 1 else elements
        return self._input_elements is not None

    def allocate(self, size, *, dtype, device):
        if torch.device(device).type != "cuda" or \
                not self.lends_window_memory(size, routes.resolve_group(self.process_group).size()):
            return torch.empty(*size, dtype=dtype, device=device)
        if self._pool is None:
            # Collective, like the route's every call: every rank asks for the same sizes in the same order.
            self._pool = pool.WindowPool(routes.copy_engine_route(self.process_group))
        return self._pool.tensor(size, dtype, device)

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        reduction = routes.route_reduction(op, input_tensor.dtype)
        if reduction is None or output_tensor.dtype != input_tensor.dtype:
            reason = f"reduction {op}" if reduction is None else "input and output of different dtypes"
        else:
            reason = routes.run_on_route("fsdp_reduce_scatter", "reduce_scatter", group, input_tensor, output_tensor,
                                         output_tensor.numel(), input_tensor.dtype, *reduction)
        if reason:
            return routes.run_on_nccl("fsdp_reduce_scatter", reason, (input_tensor, output_tensor),
                                      dist.reduce_scatter_tensor, output_tensor, input_tensor, op=op, group=group,
                                      async_op=async_op)
        return None


def _fsdp_shard_group(module):
    """The group FSDP2 shards ``module``'s parameters over: the last dimension of their DTensors' device mesh
    (FSDP: the only one; HSDP: (replicate, shard)), or None (WORLD) for a module without any."""
    for parameter in module.parameters():
        mesh = getattr(parameter, "device_mesh", None)
        if mesh is not None:
            return mesh.get_group(mesh.ndim - 1)
    return None


def install_fsdp_collectives(module, policy, process_group=None):
    """Installs the policy's collectives on an FSDP2 module (``fully_shard``) and on every FSDP2 module
    inside it; returns the parsed policy.

    Without ``copy-engine`` there is nothing to install: FSDP2's own NCCL all-gather and
    reduce-scatter run under the process group's settings (``init_process_group``); this checks the
    policy and returns. With ``copy-engine``: ``set_custom_all_gather(CopyEngineAllGather)`` - its
    ``allocate()`` lends the route's window memory, so the all-gather runs in place on copy engines
    without staging - and ``set_custom_reduce_scatter(CopyEngineReduceScatter)``, its input lent from the
    same route's window memory, so nothing is staged.
    ``process_group`` is the group FSDP2 shards over (None: the last dimension of the parameters' device
    mesh): the all-gather's windows come from its route, and a call on another group is staged. Call
    ``close_routes()`` when the training is over, before ``dist.destroy_process_group``.
    """
    parsed = options.pytorch_policy(policy)
    if not hasattr(module, "set_custom_all_gather"):
        raise TypeError(f"install_fsdp_collectives: {type(module).__name__} is not an FSDP2 module "
                        "(torch.distributed.fsdp.fully_shard makes one)")
    if parsed.copy_engine:
        # One pair for all the modules: one window pool, reused across them.
        if process_group is None and hasattr(module, "parameters"):
            process_group = _fsdp_shard_group(module)
        all_gather = CopyEngineAllGather(process_group)
        reduce_scatter = CopyEngineReduceScatter(process_group)
        modules = [m for m in module.modules() if hasattr(m, "set_custom_all_gather")] \
            if hasattr(module, "modules") else [module]
        for fsdp_module in modules:
            fsdp_module.set_custom_all_gather(all_gather)
            fsdp_module.set_custom_reduce_scatter(reduce_scatter)
    return parsed
