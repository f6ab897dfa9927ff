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
                            all-gather (in window memory, unstaged) and reduce-scatter (sum,
                            average, pre-multiplied sum); what the route refuses takes NCCL
                            (``stats()``)
shape:*                     refused: only the interposer pads PyTorch's launches (tandem run)
green:N, sequential,        refused: PyTorch decides where and in which order its kernels run
comm-first, nccl-symmetric  (the reasons are in the error messages)
==========================  =================================================================

tandem's extension modules bind to the CUDA runtime and the NCCL that PyTorch loaded: this module
imports torch before any of them, and ``tandem._core`` loads neither.

The copy-engine routes hold lanes split from the process groups' communicators and NCCL window memory:
``close_routes()`` releases them (collectively) and must run before ``dist.destroy_process_group``,
once no tensor from an FSDP2 all-gather buffer is alive.
"""
import math
import warnings
from collections import Counter, defaultdict

import torch
import torch.distributed as dist

from tandem import as_policy

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


def _pytorch_policy(policy):
    """The parsed policy, or ValueError naming the first token tandem cannot apply inside PyTorch."""
    parsed = as_policy(policy)
    # The token table (src/core/policy_tokens.cpp) says which tokens PyTorch leaves tandem no way to apply.
    if parsed.pytorch_refusal:
        raise ValueError(f"policy '{parsed}': {parsed.pytorch_refusal}")
    return parsed


def _require_nccl_backend():
    if not dist.is_available() or not dist.is_nccl_available():
        raise RuntimeError(f"this PyTorch ({torch.__version__}) has no NCCL backend; tandem.torch needs one")


def process_group_options(policy):
    """``torch.distributed.ProcessGroupNCCL.Options`` carrying the policy's communicator settings.

    For programs that create their process groups themselves (``dist.init_process_group(
    "nccl", pg_options=...)``, ``dist.new_group(pg_options=...)``). It carries ``priority`` and the
    nccl-* settings only; ``apply_process_settings`` applies the rest (``sm-target``).
    Raises ValueError for a bad policy or one that cannot be applied inside PyTorch, RuntimeError when
    this PyTorch lacks NCCL or a field the policy sets.
    """
    parsed = _pytorch_policy(policy)
    _require_nccl_backend()
    options = dist.ProcessGroupNCCL.Options(is_high_priority_stream=parsed.comm_priority)
    # The fields, their values and PyTorch's names for them are the token table's (Policy.process_group_config).
    # copy-engine's CTA policy zero is not among them: it belongs to the route's own lanes, split from this
    # group's communicator; on the group itself it would also change every collective NCCL keeps (the ones
    # the route refuses).
    for c_name, name, value in parsed.process_group_config:
        if not hasattr(options, "config") or not hasattr(options.config, name):
            raise RuntimeError(f"policy '{parsed}': this PyTorch ({torch.__version__}) cannot set NCCL's "
                               f"{c_name}: ProcessGroupNCCL.Options has no config.{name}")
        setattr(options.config, name, value)
    return options


def _sm_carveout(parsed, device):
    """The carveout that leaves PyTorch's GEMMs ``sm-target`` SMs, or None when the policy sets none."""
    if parsed.sm_target is None:
        return None
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    if parsed.sm_target > sms:
        raise ValueError(f"policy '{parsed}': sm-target:{parsed.sm_target} is more than the {sms} SMs of "
                         f"{torch.cuda.get_device_name(device)}")
    return sms - parsed.sm_target


def _set_sm_carveout(parsed, carveout):
    # Private and experimental in PyTorch: cuBLASLt matmuls (and the GEMMs that read it) then target
    # (SMs - carveout) SMs. Process-wide, for every device.
    setter = getattr(torch._C, "_set_sm_carveout_experimental", None)
    if setter is None:
        warnings.warn(f"tandem: policy '{parsed}': sm-target:{parsed.sm_target} is not applied: this "
                      f"PyTorch ({torch.__version__}) has no torch._C._set_sm_carveout_experimental",
                      RuntimeWarning, stacklevel=3)
        return
    if not parsed.compute_always:
        # PyTorch's carveout is read by every GEMM of the process: tandem.torch cannot tell which run beside a
        # collective. The targeted form is `tandem run`'s (docs/RUN.md, "Targeted compute controls").
        warnings.warn(f"tandem: policy '{parsed}': sm-target:{parsed.sm_target} is applied to every GEMM (PyTorch's "
                      f"SM carveout is process-wide), as with compute-always; `tandem run` applies it only beside "
                      f"an outstanding collective", RuntimeWarning, stacklevel=3)
    setter(carveout)


def apply_process_settings(policy, device=None):
    """Applies the policy's process-wide settings: ``sm-target:N`` as PyTorch's SM carveout (the
    device's SM count minus N; ``device`` defaults to the current CUDA device). A PyTorch without the
    carveout gets a RuntimeWarning and nothing else."""
    parsed = _pytorch_policy(policy)
    carveout = _sm_carveout(parsed, torch.cuda.current_device() if device is None else device)
    if carveout is not None:
        _set_sm_carveout(parsed, carveout)
    return parsed


def init_process_group(policy, backend="nccl", **kwargs):
    """``torch.distributed.init_process_group`` under a policy; returns the parsed Policy.

    The policy is text (``"priority+nccl-ctas:8"``, ``"@best.policy"``), a path to a file ``tandem
    tune`` wrote, or a Policy. Its communicator settings go into ``pg_options``
    (``process_group_options``), its process-wide ones are applied after the group exists
    (``apply_process_settings``, on ``device_id`` when given). Every other keyword goes to PyTorch.
    Everything is checked before the group is created.
    """
    parsed = _pytorch_policy(policy)
    if backend != "nccl":
        raise ValueError(f"tandem.torch.init_process_group: backend '{backend}': tandem's settings are "
                         "NCCL's; use backend='nccl'")
    if "pg_options" in kwargs:
        raise TypeError("tandem.torch.init_process_group makes pg_options from the policy; to combine it "
                        "with options of your own, start from tandem.torch.process_group_options(policy)")
    options = process_group_options(parsed)
    device = kwargs.get("device_id")
    carveout = _sm_carveout(parsed, torch.cuda.current_device() if device is None else device)
    dist.init_process_group(backend=backend, pg_options=options, **kwargs)
    if carveout is not None:
        _set_sm_carveout(parsed, carveout)
    return parsed


def nccl_comm(group=None):
    """The ``ncclComm_t`` of a process group's NCCL backend, as an integer address.

    PyTorch creates its communicators lazily: before the group's first collective (or an eager
    ``init_process_group(device_id=...)``) there is none, and this raises RuntimeError.
    ``ProcessGroupNCCL._comm_ptr()`` is private PyTorch API (present in 2.11).
    """
    group = _group(group)
    backend = group._get_backend(torch.device("cuda"))
    comm_ptr = getattr(backend, "_comm_ptr", None)
    if comm_ptr is None:
        raise RuntimeError(f"this PyTorch ({torch.__version__}) does not expose ProcessGroupNCCL._comm_ptr()")
    address = int(comm_ptr())
    if address == 0:
        raise RuntimeError("the process group has no NCCL communicator yet: run one collective on it first, "
                           "or pass device_id= to init_process_group")
    return address


def _nccl_version_code(version):
    """NCCL_VERSION_CODE (22809 for 2.28.9) from torch.cuda.nccl.version()'s tuple (or code)."""
    if isinstance(version, int):
        return version
    major, minor, patch = version[:3]
    return major * 10000 + minor * 100 + patch


def gpu_module():
    """tandem._cuda (the GPU half of tandem: the copy-engine collectives, once bound), checked to run
    on PyTorch's NCCL. Imported only here, after torch: its libnccl.so.2 and libcudart then resolve
    to the copies PyTorch loaded. ImportError where tandem was built without it (only `pip install .`
    builds it)."""
    from tandem import _cuda

    ours, pytorchs = _cuda.nccl_version(), _nccl_version_code(torch.cuda.nccl.version())
    if ours != pytorchs:
        raise RuntimeError(f"tandem._cuda runs NCCL {ours}, PyTorch {pytorchs}: a second NCCL is loaded; "
                           "import tandem.torch before anything else loads libnccl.so.2")
    return _cuda


# PyTorch's dtypes -> ncclDataType_t (nccl.h's enum values; tests/python checks them against the header
# through tandem._core). The one table: what is missing here has no NCCL type and is refused in Python.
NCCL_DTYPES = {
    torch.int8: 0,       # ncclInt8
    torch.uint8: 1,      # ncclUint8
    torch.int32: 2,      # ncclInt32
    torch.int64: 4,      # ncclInt64
    torch.float16: 6,    # ncclFloat16
    torch.float32: 7,    # ncclFloat32
    torch.float64: 8,    # ncclFloat64
    torch.bfloat16: 9,   # ncclBfloat16
}

# Process group's name -> its copy-engine route (tandem._cuda.CopyEngineRoute, or an object with its
# methods). By name: FSDP2 hands its collectives the group its device mesh resolved, which may be another
# Python object for the same group.
_ROUTES = {}
# (device index, at the greatest priority) -> the comm stream of the DDP hook.
_COMM_STREAMS = {}
# Collective -> Counter of "copy-engine" (routed) and, for each call NCCL took, why the route did not;
# _BYTES the same in bytes (the larger of the call's buffers, as `tandem run --stats` counts a collective).
_STATS = defaultdict(Counter)
_BYTES = defaultdict(Counter)
ROUTED = "copy-engine"


def _count(stat, route, nbytes):
    _STATS[stat][route] += 1
    _BYTES[stat][route] += nbytes


def _on_nccl(stat, reason, tensors, collective, *args, **kwargs):
    """Runs ``collective(*args, **kwargs)`` (the process group's own, for a call the route did not take), then
    counts it under ``reason``: a call that raised ran nowhere, and ``stats()`` counts only calls that ran."""
    result = collective(*args, **kwargs)
    _count(stat, reason, _nbytes(*tensors))
    return result


def _nbytes(*tensors):
    return max(t.numel() * t.element_size() for t in tensors)


def nccl_dtype(dtype):
    """The ncclDataType_t value of a torch dtype, or None when NCCL has none."""
    return NCCL_DTYPES.get(dtype)


def _group(group):
    """The group given, or the default one; before there is one, RuntimeError naming what to call first
    (``dist.group.WORLD`` is None until then)."""
    if group is not None:
        return group
    if not dist.is_initialized():
        raise RuntimeError("tandem.torch: no default process group yet: call tandem.torch.init_process_group(policy) "
                           "(or torch.distributed.init_process_group) first, or pass the group")
    return dist.group.WORLD


# The most window memory a route's staging pool holds (tandem::kDefaultRoutePoolBytes): larger calls run in
# pieces, so the route's memory does not grow with the model. 0: no cap.
DEFAULT_ROUTE_POOL_BYTES = 256 << 20


def copy_engine_route(group=None, timeout_s=300.0, max_pool_bytes=DEFAULT_ROUTE_POOL_BYTES):
    """The copy-engine route of a process group (tandem._cuda.CopyEngineRoute), made on first use.

    Collective: every rank of the group must ask at the same point (the DDP hook and the FSDP2 collectives
    ask on their first call, which every rank makes in the same order). When PyTorch has not created the
    group's communicator yet, a one-element all-reduce on the group creates it. ``timeout_s`` bounds every
    wait on NCCL inside the route; ``max_pool_bytes`` caps its staging pool (all-reduces and broadcasts
    larger than the cap allows run in pieces; 0: no cap). Both apply when the route is made."""
    group = _group(group)
    route = _ROUTES.get(group.group_name)
    if route is None:
        cuda = gpu_module()
        backend = group._get_backend(torch.device("cuda"))
        if getattr(backend, "_comm_ptr", None) is not None and int(backend._comm_ptr()) == 0:
            dist.all_reduce(torch.zeros(1, device=torch.cuda.current_device()), group=group)
        route = cuda.CopyEngineRoute(nccl_comm(group), timeout_s, f"rank {dist.get_rank()}", max_pool_bytes)
        _ROUTES[group.group_name] = route
    return route


def close_routes():
    """Closes every copy-engine route (collective): their lanes, windows and window memory. Call it before
    ``dist.destroy_process_group``, once no tensor from ``install_fsdp_collectives``' all-gather buffers is
    alive; the hooks make new routes if they run again."""
    routes = list(_ROUTES.values())
    _ROUTES.clear()
    for route in routes:
        route.close()


def stats():
    """What the copy-engine collectives did: ``{collective: {"copy-engine": calls routed, reason: calls
    that took NCCL for that reason}}`` for "ddp_all_reduce", "fsdp_all_gather" and "fsdp_reduce_scatter",
    ``"bytes"``: the same in bytes (``{collective: {"copy-engine" or reason: bytes}}``, each call counted
    with the larger of its buffers, as ``tandem run --stats`` counts a collective), ``"window_pool"``:
    ``{"buffers": window buffers made, "lent": tensors lent from them}`` (FSDP2's all-gather outputs), and
    ``"routes"``: each open route's own counters (tandem::CopyEngineRouteStats) by group name."""
    result = {name: dict(counts) for name, counts in _STATS.items()}
    result["bytes"] = {name: dict(counts) for name, counts in _BYTES.items()}
    result["routes"] = {name: route.stats() for name, route in _ROUTES.items()}
    return result


def reset_stats():
    """Clears the counts of ``stats()`` (not the routes' own)."""
    _STATS.clear()
    _BYTES.clear()


def _route_for(group, tensors):
    """(the group's route, "") when every tensor is a contiguous CUDA one, else (None, why not). A route is made
    only for CUDA tensors (collective: every rank of the group reaches this point for the same call)."""
    for t in tensors:
        if not t.is_cuda:
            return None, f"a {t.device.type} tensor"
        if not t.is_contiguous():
            return None, "a non-contiguous tensor"
    return copy_engine_route(group), ""


def _run_on_route(stat, kind, group, send, recv, count, dtype, reduction="sum", scalar=1.0, device_scalar=0, root=0):
    """Runs one collective on the group's copy-engine route, on the current stream, and counts it under ``stat``
    in ``stats()`` once it ran: "" when it did, else why not (nothing was enqueued: the caller hands it to NCCL
    through ``_on_nccl``, which counts it under that reason). Whether the route takes a call depends only on
    the call's arguments and the group, so every rank decides alike. ``root``: a broadcast's, as a rank of
    ``group``."""
    if nccl_dtype(dtype) is None:
        return f"{dtype} has no NCCL type"
    route, reason = _route_for(group, (send, recv))
    if reason:
        return reason
    stream = torch.cuda.current_stream(send.device)
    outcome = route.run(kind, send.data_ptr(), recv.data_ptr(), count, nccl_dtype(dtype), stream.cuda_stream,
                        reduction, scalar, device_scalar, root)
    if outcome != ROUTED:
        return outcome
    _count(stat, ROUTED, _nbytes(send, recv))
    return ""


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
    group = _group(state.process_group)
    device = tensor.device
    reason = f"a {device.type} tensor"
    if tensor.is_cuda:
        comm = _comm_stream(device, state.high_priority)
        # The bucket is complete on the compute stream; the all-reduce runs beside it, never on it, so the
        # backward pass goes on meanwhile.
        comm.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(comm):
            reason = _run_on_route("ddp_all_reduce", "all_reduce", group, tensor, tensor, tensor.numel(),
                                   tensor.dtype, "prediv_sum", float(group.size()))
            if not reason:
                # A CUDA-aware future records an event on the current stream (comm) and the bucket's storage on
                # it: DDP's wait makes its stream wait on that event, and the caching allocator keeps the bucket.
                future = torch.futures.Future(devices=[device])
                future.set_result(tensor)
                return future
    tensor.div_(group.size())
    work = _on_nccl("ddp_all_reduce", reason, (tensor,), dist.all_reduce, tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def _copy_engine_hook(state, bucket):
    return all_reduce_average(state, bucket.buffer())


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
    A bucket the route refuses (a dtype without a sum kernel) takes NCCL's all-reduce on the group;
    ``stats()["ddp_all_reduce"]`` counts both, by reason. On 2 ranks both sums are a+b rounded once, so
    the losses equal stock DDP's bitwise; on more ranks the route's sum (accumulated in fp32, rounded
    once) may differ from NCCL's (rounded at each step of its ring) in the last bits.
    """
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    parsed = _pytorch_policy(policy)
    if parsed.copy_engine:
        ddp_model.register_comm_hook(state=CopyEngineHookState(process_group, parsed.comm_priority),
                                     hook=_copy_engine_hook)
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
    (not on the GPU, not contiguous) takes the group's ``dist.broadcast``, and ``stats()["ddp_broadcast"]``
    counts both, by reason. Without it, every tensor takes ``dist.broadcast``. Collective: every rank of the
    group calls it with the same module structure."""
    from torch.nn.parallel import DistributedDataParallel

    parsed = _pytorch_policy(policy)
    group = _group(process_group)
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
            # _run_on_route answers why the route did not take it ("" when it did).
            reason = _run_on_route("ddp_broadcast", "broadcast", group, tensor, tensor, tensor.numel(), tensor.dtype,
                                   root=root)
            if reason:
                _on_nccl("ddp_broadcast", reason, (tensor,), dist.broadcast, tensor, src=src, group=group)
    return parsed


class _WindowLease:
    """One window buffer lent out as a tensor's storage (``tandem._cuda.window_tensor``: DLPack, no copy). The
    storage keeps this object until it is freed; then the buffer goes back to its pool."""

    def __init__(self, pool, address, nbytes, device):
        self.pool, self.address, self.nbytes, self.device = pool, address, nbytes, device

    def __del__(self):
        self.pool.give_back(self)


class WindowPool:
    """Window memory of a route (``route.window_buffer``) lent out as tensors, without copies.

    ``window_buffer`` hands out new memory on every call (collective), valid until the route is closed, so
    the pool keeps each buffer and lends it again to the next request of the same byte size. When a
    tensor's storage is freed the pool records an event on the device's current stream; the next
    borrower's current stream waits for it - FSDP2 frees its all-gather output on the stream that read it
    last, as it does for PyTorch's caching allocator. Each buffer lives as long as the route (the pool
    holds the route, each tensor the pool). The route requires the same placement on every rank (the same
    buffer for the same call): every rank asks for and frees the same sizes in the same order, and the
    free list per size is last-in first-out, so every rank lends the same buffer."""

    def __init__(self, route):
        self.route = route
        self._free = defaultdict(list)  # bytes -> [(address, event recorded when it came back)]

    def tensor(self, size, dtype, device):
        device = torch.device(device)
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        nbytes = math.prod(int(s) for s in size) * dtype.itemsize
        free = self._free[nbytes]
        if free:
            address, released = free.pop()
            torch.cuda.current_stream(device).wait_event(released)
        else:
            # Collective, like every route call: every rank asks for the same sizes in the same order.
            address = self.route.window_buffer(nbytes)
            _STATS["window_pool"]["buffers"] += 1
        _STATS["window_pool"]["lent"] += 1
        raw = gpu_module().window_tensor(address, nbytes, device.index, _WindowLease(self, address, nbytes, device))
        return raw.view(dtype).view(tuple(int(s) for s in size))

    def give_back(self, lease):
        try:
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(lease.device))
        except Exception:  # noqa: BLE001 - at interpreter exit CUDA may be gone: the buffer is not lent again
            return
        self._free[lease.nbytes].append((lease.address, event))


def _route_reduction(op, dtype):
    """(reduction, scalar) of the route for a ``torch.distributed`` reduction on ``dtype``, or None for one the
    route does not compute. A pre-multiplied sum (``ReduceOp.PREMUL_SUM(factor)``, FSDP2's gradient divide
    factor) carries its factor in the ReduceOp's pickled state; NCCL gets it rounded to the tensor's dtype
    (PyTorch makes the op with a scalar of that dtype), and so does the route."""
    if op == dist.ReduceOp.SUM:
        return "sum", 1.0
    if op == dist.ReduceOp.AVG:
        return "average", 1.0
    state = op.__getstate__() if hasattr(op, "__getstate__") and not isinstance(op, dist.ReduceOp.RedOpType) \
        else None
    if isinstance(state, tuple) and len(state) == 2 and state[0] == dist.ReduceOp.RedOpType.PREMUL_SUM \
            and isinstance(state[1], (int, float)):
        return "premul_sum", torch.tensor(float(state[1]), dtype=dtype).item()
    return None


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
            self._pool = WindowPool(copy_engine_route(self.process_group))
        return self._pool.tensor(size, dtype, device)

    def __call__(self, output_tensor, input_tensor, group, async_op=False):
        nbytes = input_tensor.numel() * input_tensor.element_size()
        reason = _run_on_route("fsdp_all_gather", "all_gather", group, input_tensor, output_tensor, nbytes, torch.uint8)
        if reason:
            return _on_nccl("fsdp_all_gather", reason, (input_tensor, output_tensor), dist.all_gather_into_tensor,
                            output_tensor, input_tensor, group=group, async_op=async_op)
        return None


class CopyEngineReduceScatter(_ReduceScatter):
    """FSDP2's custom reduce-scatter (``ReduceScatter``) through the copy-engine route.

    ``allocate()`` hands out PyTorch's ordinary memory: FSDP2 keeps the reduce-scatter's output as the
    sharded gradient, so a window lent to it would never come back; the route stages input and output.
    ``ReduceOp.SUM``, ``ReduceOp.AVG`` and ``ReduceOp.PREMUL_SUM(factor)`` run on the route with NCCL's
    numerics (the average and the pre-multiplied sum scale each rank's input in its dtype as the route
    stages it); any other reduction, and whatever the route refuses, takes ``dist.reduce_scatter_tensor``."""

    def __init__(self, process_group=None):
        self.process_group = process_group

    def allocate(self, size, *, dtype, device):
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        reduction = _route_reduction(op, input_tensor.dtype)
        if reduction is None or output_tensor.dtype != input_tensor.dtype:
            reason = f"reduction {op}" if reduction is None else "input and output of different dtypes"
        else:
            reason = _run_on_route("fsdp_reduce_scatter", "reduce_scatter", group, input_tensor, output_tensor,
                                   output_tensor.numel(), input_tensor.dtype, *reduction)
        if reason:
            return _on_nccl("fsdp_reduce_scatter", reason, (input_tensor, output_tensor), dist.reduce_scatter_tensor,
                            output_tensor, input_tensor, op=op, group=group, async_op=async_op)
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
    without staging - and ``set_custom_reduce_scatter(CopyEngineReduceScatter)`` (staged).
    ``process_group`` is the group FSDP2 shards over (None: the last dimension of the parameters' device
    mesh): the all-gather's windows come from its route, and a call on another group is staged. Call ``close_routes()`` when the training is
    over, before ``dist.destroy_process_group``.
    """
    parsed = _pytorch_policy(policy)
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
