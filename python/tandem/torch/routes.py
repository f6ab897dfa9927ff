"""The copy-engine routes of the process groups, and running one collective call on them: the plumbing
tandem.torch's DDP hook and FSDP2 collectives are built on, and that a framework's front end uses the same
way (docs/PYTORCH.md, "A front end of your own").

A front end's collective, in its own hook:

    reason = routes.run_on_route("my_all_reduce", "all_reduce", group, tensor, tensor, tensor.numel(),
                                 tensor.dtype, *routes.route_reduction(dist.ReduceOp.SUM, tensor.dtype))
    if reason:  # the route did not take it (nothing was enqueued): the group's own collective runs it
        routes.run_on_nccl("my_all_reduce", reason, (tensor,), dist.all_reduce, tensor, group=group)

Both count the call under the site's name, by route, in ``tandem.torch.stats()``. The registry holds one
route per process group, by the group's name: ``copy_engine_route`` makes it on first use (collective),
``install_route`` puts in one made elsewhere, ``open_routes`` lists them, ``close_routes`` closes them all.
Every route call is collective: every rank of the group makes the same calls in the same order, and the
route's decision depends only on the call's arguments, so every rank decides alike."""
import warnings

import torch
import torch.distributed as dist

from . import counts

ROUTED = counts.ROUTED
# The most window memory a route's staging pool holds (tandem::kDefaultRoutePoolBytes): larger calls run in
# pieces, so the route's memory does not grow with the model. 0: no cap.
DEFAULT_ROUTE_POOL_BYTES = 256 << 20

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

# Process group's name -> its copy-engine route (tandem._cuda.CopyEngineRoute, or an object with its methods).
# By name: FSDP2 hands its collectives the group its device mesh resolved, which may be another Python object
# for the same group.
_ROUTES = {}


def nccl_dtype(dtype):
    """The ncclDataType_t value of a torch dtype, or None when NCCL has none."""
    return NCCL_DTYPES.get(dtype)


def resolve_group(group):
    """The group given, or the default one; before there is one, RuntimeError naming what to call first
    (``dist.group.WORLD`` is None until then)."""
    if group is not None:
        return group
    if not dist.is_initialized():
        raise RuntimeError("tandem.torch: no default process group yet: call tandem.torch.init_process_group(policy) "
                           "(or torch.distributed.init_process_group) first, or pass the group")
    return dist.group.WORLD


def nccl_comm(group=None):
    """The ``ncclComm_t`` of a process group's NCCL backend, as an integer address.

    PyTorch creates its communicators lazily: before the group's first collective (or an eager
    ``init_process_group(device_id=...)``) there is none, and this raises RuntimeError.
    ``ProcessGroupNCCL._comm_ptr()`` is private PyTorch API (present in 2.11).
    """
    group = resolve_group(group)
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


def copy_engine_route(group=None, timeout_s=300.0, max_pool_bytes=DEFAULT_ROUTE_POOL_BYTES):
    """The copy-engine route of a process group (tandem._cuda.CopyEngineRoute), made on first use.

    Collective: every rank of the group must ask at the same point (the DDP hook and the FSDP2 collectives
    ask on their first call, which every rank makes in the same order). When PyTorch has not created the
    group's communicator yet, a one-element all-reduce on the group creates it. ``timeout_s`` bounds every
    wait on NCCL inside the route; ``max_pool_bytes`` caps its staging pool (all-reduces and broadcasts
    larger than the cap allows run in pieces; 0: no cap). Both apply when the route is made."""
    group = resolve_group(group)
    route = _ROUTES.get(group.group_name)
    if route is None:
        cuda = gpu_module()
        backend = group._get_backend(torch.device("cuda"))
        if getattr(backend, "_comm_ptr", None) is not None and int(backend._comm_ptr()) == 0:
            dist.all_reduce(torch.zeros(1, device=torch.cuda.current_device()), group=group)
        route = cuda.CopyEngineRoute(nccl_comm(group), timeout_s, f"rank {dist.get_rank()}", max_pool_bytes)
        _ROUTES[group.group_name] = route
    return route


def install_route(group, route):
    """Makes ``route`` the copy-engine route of ``group`` (None: the default group): an object with
    tandem._cuda.CopyEngineRoute's methods (``run``, ``window_buffer``, ``stats``, ``close``), made by the
    caller - with settings of its own, or a stand-in in a test. ValueError when the group has an open route
    already: replacing it would leave its lanes and windows open (``close_routes`` first)."""
    name = resolve_group(group).group_name
    if name in _ROUTES:
        raise ValueError(f"tandem.torch: process group '{name}' has a copy-engine route already; close_routes() "
                         "first")
    _ROUTES[name] = route
    return route


def open_routes():
    """The open routes, {process group name: route} (a copy: closing them is ``close_routes``)."""
    return dict(_ROUTES)


def close_routes():
    """Closes every copy-engine route (collective): their lanes, windows and window memory. Call it before
    ``dist.destroy_process_group``, once no tensor from ``install_fsdp_collectives``' all-gather buffers is
    alive; the hooks make new routes if they run again."""
    routes = list(_ROUTES.values())
    _ROUTES.clear()
    _LOOKED_AT.clear()
    for route in routes:
        route.close()


def route_for(group, tensors):
    """(the group's route, "") when every tensor is a contiguous CUDA one, else (None, why not). A route is made
    only for CUDA tensors (collective: every rank of the group reaches this point for the same call)."""
    for t in tensors:
        if not t.is_cuda:
            return None, f"a {t.device.type} tensor"
        if not t.is_contiguous():
            return None, "a non-contiguous tensor"
    return copy_engine_route(group), ""


def route_reduction(op, dtype):
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


def run_on_route(site, kind, group, send, recv, count, dtype, reduction="sum", scalar=1.0, device_scalar=0, root=0):
    """Runs one collective on the group's copy-engine route, on the current stream, and counts it under ``site``
    in ``stats()`` once it ran: "" when it did, else why not (nothing was enqueued: the caller hands it to NCCL
    through ``run_on_nccl``, which counts it under that reason). ``kind``: all_reduce, reduce_scatter,
    all_gather, all_to_all, broadcast; ``count`` and ``dtype`` as NCCL's for the kind; ``reduction``: sum,
    average, premul_sum (``scalar`` the factor), prediv_sum (``scalar`` the divisor); ``root``: a broadcast's,
    as a rank of ``group``."""
    if nccl_dtype(dtype) is None:
        return f"{dtype} has no NCCL type"
    route, reason = route_for(group, (send, recv))
    if reason:
        return reason
    stream = torch.cuda.current_stream(send.device)
    outcome = route.run(kind, send.data_ptr(), recv.data_ptr(), count, nccl_dtype(dtype), stream.cuda_stream,
                        reduction, scalar, device_scalar, root)
    if outcome != ROUTED:
        return outcome
    counts.count(site, ROUTED, counts.tensor_bytes(send, recv))
    _say_if_peer_copies_unavailable(route)
    return ""


# The routes whose decision on peer copies was looked at (by id: a route is closed, and forgotten here,
# before another can take its place).
_LOOKED_AT = set()


def _say_if_peer_copies_unavailable(route):
    """Warns once per route that ran when it was asked for peer copies (TANDEM_ROUTE_PEER_COPIES=1) and NCCL maps
    not every peer's window there, so it stages: the route decides at its first call and has no log of its own."""
    if id(route) in _LOOKED_AT:
        return
    _LOOKED_AT.add(id(route))
    if route.stats().get("peer_copies_unavailable", 0):
        warnings.warn("tandem.torch: peer copies asked for, but NCCL maps not every peer's window on this process "
                      "group (ranks of other nodes, or sharing one GPU): its copy-engine route stages",
                      RuntimeWarning, stacklevel=3)


def run_on_nccl(site, reason, tensors, collective, *args, **kwargs):
    """Runs ``collective(*args, **kwargs)`` (the process group's own, for a call the route did not take), then
    counts it under ``site`` and ``reason`` with the bytes of ``tensors``: a call that raised ran nowhere, and
    ``stats()`` counts only calls that ran. Returns what the collective returned."""
    result = collective(*args, **kwargs)
    counts.count(site, reason, counts.tensor_bytes(*tensors))
    return result
