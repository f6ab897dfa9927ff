"""DDP through a policy: the communication hook (``register_ddp_hook``: NCCL's all-reduce as PyTorch's
``allreduce_hook`` runs it, or the copy-engine route's on a comm stream of its own, with DDP's rebuilt
buckets in the route's window memory) and DDP's start-up broadcast (``sync_module_states``)."""
import torch
import torch.distributed as dist

from . import options, pool, routes

# (device index, at the greatest priority) -> the comm stream of the DDP hook.
_COMM_STREAMS = {}


def _comm_stream(device, high_priority):
    key = (device.index, high_priority)
    stream = _COMM_STREAMS.get(key)
    if stream is None:
        # PyTorch clamps a priority below its range to the greatest it has.
        stream = torch.cuda.Stream(device=device, priority=-(1 << 10) if high_priority else 0)
        _COMM_STREAMS[key] = stream
    return stream


class CopyEngineHookState:
    """The DDP hook's state: the process group (None: WORLD) and whether its comm stream runs at the
    greatest priority (the policy's ``priority``)."""

    def __init__(self, process_group=None, high_priority=False):
        self.process_group = process_group
        self.high_priority = high_priority


def all_reduce_average(state, tensor):
    """The DDP hook's work on one bucket: ``tensor`` divided by the group's size, then summed over the group
    (the order of ``default_hooks.allreduce_hook``) - through the copy-engine route, the division fused into the
    route's staging copy (no pass of its own), on the comm stream; or, where the route refuses, through NCCL's
    all-reduce, the division on the current stream as ``allreduce_hook`` does it. Returns a
    ``torch.futures.Future`` whose value is ``tensor``."""
    group = routes.resolve_group(state.process_group)
    device = tensor.device
    reason = f"a {device.type} tensor"
    if tensor.is_cuda:
        comm = _comm_stream(device, state.high_priority)
        # The bucket is complete on the compute stream; the all-reduce runs beside it, never on it, so the
        # backward pass goes on meanwhile.
        comm.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(comm):
            reason = routes.run_on_route("ddp_all_reduce", "all_reduce", group, tensor, tensor, tensor.numel(),
                                   tensor.dtype, "prediv_sum", float(group.size()))
            if not reason:
                # A CUDA-aware future records an event on the current stream (comm) and the bucket's storage on
                # it: DDP's wait makes its stream wait on that event, and the caching allocator keeps the bucket.
                future = torch.futures.Future(devices=[device])
                future.set_result(tensor)
                return future
    tensor.div_(group.size())
    work = routes.run_on_nccl("ddp_all_reduce", reason, (tensor,), dist.all_reduce, tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def _copy_engine_hook(state, bucket):
    return all_reduce_average(state, bucket.buffer())


def rebuild_buckets_in(ddp_model, allocating):
    """Runs DDP's one rebuild of its gradient buckets (``reducer._rebuild_buckets``: after the first backward
    pass, in the order the gradients became ready) inside ``allocating()``, a context manager around its
    allocations, at the start of the forward pass in which DDP would run it, before DDP's own call there
    (which then finds it done). DDP rebuilds alike on every rank: it broadcasts rank 0's bucket assignment
    before it allocates. Returns the forward pre-hook's handle; the hook removes itself once the buckets are
    rebuilt. Installs nothing (returns None) where DDP never rebuilds: ``find_unused_parameters=True``
    without ``static_graph``."""
    if getattr(ddp_model, "find_unused_parameters", False) and not getattr(ddp_model, "static_graph", False):
        return None

    def before_forward(module, inputs):
        # DDP's _pre_forward rebuilds under this condition; in these modes it returns before it does.
        if (not torch.is_grad_enabled() or getattr(module, "_use_python_reducer", False)
                or getattr(module, "_delay_all_reduce_all_params", False)):
            return
        with allocating():
            rebuilt = module.reducer._rebuild_buckets()
        if rebuilt:
            module._has_rebuilt_buckets = True  # as DDP's _pre_forward records it
            handle.remove()

    handle = ddp_model.register_forward_pre_hook(before_forward)
    return handle


def _buckets_in_window_memory(ddp_model, process_group):
    """DDP's rebuilt buckets in window memory of the group's route (``pool.WindowSegments``), so the hook's
    all-reduces are not staged from the second step on. For a model on a CUDA device; the pool, made at
    the rebuild, stays with the model as long as its buckets."""
    if not isinstance(ddp_model, torch.nn.Module):  # a stand-in with DDP's register_comm_hook alone
        return None
    device = next((p.device for p in ddp_model.parameters() if p.requires_grad), None)
    if device is None or device.type != "cuda":
        return None
    segments = {}

    def allocating():
        if "pool" not in segments:
            segments["pool"] = pool.WindowSegments(routes.copy_engine_route(process_group), device)
        return segments["pool"].allocating()

    ddp_model._tandem_window_segments = segments
    return rebuild_buckets_in(ddp_model, allocating)


def register_ddp_hook(ddp_model, policy, process_group=None):
    """Registers the policy's all-reduce as the DDP communication hook of ``ddp_model``.

    Without ``copy-engine`` that is NCCL's all-reduce exactly as PyTorch's
    ``default_hooks.allreduce_hook`` runs it (each bucket divided by the world size, then summed), so
    the losses are those of that hook bitwise, and of DDP's built-in reduction where dividing equals
    its multiplying by 1/world_size (world sizes that are powers of two). The policy's other settings
    act through the process group (``init_process_group``).

    With ``copy-engine``: each bucket is summed by the group's copy-engine route (``copy_engine_route``,
    made on the first bucket), each rank's gradients divided by the group's size as the route stages them
    (the division ``allreduce_hook`` does, fused: no pass of its own), on a comm stream of the hook's own -
    at the greatest priority when the policy has ``priority`` - that waits for the compute stream, so
    nothing is enqueued on the compute stream and the all-reduce overlaps the backward pass; the returned
    future completes on that stream (a CUDA-aware future: DDP's wait orders its stream after it).
    DDP's buckets, once it rebuilds them (at the start of the second step), lie in the route's window
    memory (``rebuild_buckets_in``, ``pool.WindowSegments``): from then on the route sums them where they
    lie, at any rank count (a bucket whose count is no multiple of the rank count stages only its remainder,
    under one 16-byte vector per rank); the first step's buckets are PyTorch's and are staged. Where the ranks
    reach each other's memory (one node) and ``TANDEM_ROUTE_PEER_COPIES=1`` (opt-in), the route's peer copies
    stage neither: they copy straight between the buckets and the peers' window memory.
    A bucket the route refuses (a dtype without a sum kernel) takes NCCL's all-reduce on the group;
    ``stats()["nccl_collectives"]["ddp_all_reduce"]`` counts both, by reason. On 2 ranks both sums are a+b
    rounded once, so the losses equal stock DDP's bitwise; on more ranks the route's sum (accumulated in fp32, rounded
    once) may differ from NCCL's (rounded at each step of its ring) in the last bits.
    """
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    parsed = options.pytorch_policy(policy)
    if parsed.copy_engine:
        ddp_model.register_comm_hook(state=CopyEngineHookState(process_group, parsed.comm_priority),
                                     hook=_copy_engine_hook)
        _buckets_in_window_memory(ddp_model, process_group)
    else:
        ddp_model.register_comm_hook(state=process_group, hook=default_hooks.allreduce_hook)
    return parsed


def sync_module_states(module, policy, process_group=None, src=0):
    """What DDP's construction does by default, through the policy's route: every parameter and buffer of
    ``module`` (a ``DistributedDataParallel`` or the module it wraps) broadcast from rank ``src`` (a global
    rank, as ``dist.broadcast`` takes it) to the group, so that every rank starts from ``src``'s model. For
    a model wrapped with ``DistributedDataParallel(module, ..., init_sync=False)``, which then leaves this
    broadcast to the caller; the parameters DDP was told to ignore are left alone, as DDP leaves them.

    With ``copy-engine`` each tensor is broadcast by the group's copy-engine route (a scatter from ``src``,
    then an in-place all-gather, on copy engines), on the current stream; a tensor the route does not take
    (not on the GPU, not contiguous) takes the group's ``dist.broadcast``, and
    ``stats()["nccl_collectives"]["ddp_broadcast"]`` counts both, by reason. Without it, every tensor takes
    ``dist.broadcast``. Collective: every rank of the group calls it with the same module structure."""
    from torch.nn.parallel import DistributedDataParallel

    parsed = options.pytorch_policy(policy)
    group = routes.resolve_group(process_group)
    ignored = set()
    if isinstance(module, DistributedDataParallel):
        ignored = set(getattr(module, "parameters_to_ignore", ()))
        module = module.module
    root = dist.get_group_rank(group, src)
    with torch.no_grad():
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if name in ignored or tensor.numel() == 0:
                continue
            if not parsed.copy_engine:
                dist.broadcast(tensor, src=src, group=group)
                continue
            # run_on_route answers why the route did not take it ("" when it did).
            reason = routes.run_on_route("ddp_broadcast", "broadcast", group, tensor, tensor, tensor.numel(),
                                         tensor.dtype, root=root)
            if reason:
                routes.run_on_nccl("ddp_broadcast", reason, (tensor,), dist.broadcast, tensor, src=src, group=group)
    return parsed
