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
copy-engine                 CTA policy zero on the process group (above), and the copy-engine
                            all-reduce as DDP hook / FSDP2 collectives: not in this build yet
                            (NotImplementedError)
shape:*                     refused: only the interposer pads PyTorch's launches (tandem run)
green:N, sequential,        refused: PyTorch decides where and in which order its kernels run
comm-first, nccl-symmetric  (the reasons are in the error messages)
==========================  =================================================================

tandem's extension modules bind to the CUDA runtime and the NCCL that PyTorch loaded: this module
imports torch before any of them, and ``tandem._core`` loads neither.
"""
import warnings

import torch
import torch.distributed as dist

from tandem import as_policy

__all__ = [
    "apply_process_settings",
    "gpu_module",
    "init_process_group",
    "install_fsdp_collectives",
    "nccl_comm",
    "process_group_options",
    "register_ddp_hook",
]

# ncclConfig_t's C field names (Policy.nccl_config, from tandem's library) -> the names
# torch.distributed.ProcessGroupNCCL.NCCLConfig gives them. Names only: which token sets which
# field, and to what, is decided in C++ (tandem::apply_nccl_settings).
_TORCH_NCCL_CONFIG_FIELD = {
    "minCTAs": "min_ctas",
    "maxCTAs": "max_ctas",
    "cgaClusterSize": "cga_cluster_size",
    "CTAPolicy": "cta_policy",
}

# What a policy may hold that tandem cannot apply inside PyTorch: (does the policy hold it, its token,
# why not). Checked by every function here, so one policy is accepted by all of them or by none.
_NOT_IN_PYTORCH = (
    (lambda p: p.shape is not None, lambda p: p.shape,
     "occupancy shaping pads the launches of PyTorch's compute kernels, which only tandem's "
     "interposer can do: run the program under `tandem run --policy {policy} -- python ...` instead"),
    (lambda p: p.green_sms is not None, lambda p: f"green:{p.green_sms}",
     "tandem cannot move PyTorch's kernels into a green context; the program can, with "
     "torch.cuda.green_contexts"),
    (lambda p: p.order == "sequential", lambda p: "sequential",
     "PyTorch puts its collectives on NCCL's own streams, not on the compute stream"),
    (lambda p: p.order == "comm-first", lambda p: "comm-first",
     "PyTorch decides its launch order (DDP issues each bucket's all-reduce when its gradients are ready)"),
    (lambda p: p.nccl_symmetric, lambda p: "nccl-symmetric",
     "PyTorch allocates the collectives' buffers, and tandem.torch cannot register them as NCCL "
     "windows yet"),
)

_COPY_ENGINE_MISSING = (
    "the copy-engine all-reduce is not in this build of tandem: tandem._cuda does not bind "
    "tandem::copy_engine_all_reduce (include/tandem/copy_engine.h) yet; use the policy without copy-engine"
)


def _pytorch_policy(policy):
    """The parsed policy, or ValueError naming the first token tandem cannot apply inside PyTorch."""
    parsed = as_policy(policy)
    for holds, token, why in _NOT_IN_PYTORCH:
        if holds(parsed):
            raise ValueError(f"policy '{parsed}': {token(parsed)} cannot be applied inside PyTorch: "
                             + why.format(policy=parsed))
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
    for c_name, value in parsed.nccl_config.items():
        name = _TORCH_NCCL_CONFIG_FIELD[c_name]
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
    group = dist.group.WORLD if group is None else group
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


def register_ddp_hook(ddp_model, policy, process_group=None):
    """Registers the policy's all-reduce as the DDP communication hook of ``ddp_model``.

    Without ``copy-engine`` that is NCCL's all-reduce exactly as PyTorch's
    ``default_hooks.allreduce_hook`` runs it (each bucket divided by the world size, then summed), so
    the losses are those of that hook bitwise, and of DDP's built-in reduction where dividing equals
    its multiplying by 1/world_size (world sizes that are powers of two). The policy's other settings
    act through the process group (``init_process_group``).

    With ``copy-engine``: tandem's copy-engine all-reduce (include/tandem/copy_engine.h), one call
    per bucket into tandem._cuda. Planned shape: on first use, ``CopyEngineLanes`` split once from
    the group's communicator (``nccl_comm``, lane 0) and a pool in NCCL symmetric windows
    (ncclMemAlloc, registered on every lane once and reused: registration is slow) as large as the
    biggest bucket plus its scratch; per bucket, the bucket copied into the pool, divided by the
    world size, ``copy_engine_all_reduce`` in place on PyTorch's current stream, copied back. A
    bucket the route refuses (``copy_engine_refusal``: dtype, a count that does not split into equal
    chunks) takes NCCL's all-reduce, and the route each bucket took is counted. Not in this build
    yet: NotImplementedError.
    """
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    parsed = _pytorch_policy(policy)
    if parsed.copy_engine:
        raise NotImplementedError(f"policy '{parsed}': {_COPY_ENGINE_MISSING}")
    ddp_model.register_comm_hook(state=process_group, hook=default_hooks.allreduce_hook)
    return parsed


def install_fsdp_collectives(module, policy):
    """Installs the policy's collectives on an FSDP2 module (``fully_shard``).

    Without ``copy-engine`` there is nothing to install: FSDP2's own NCCL all-gather and
    reduce-scatter run under the process group's settings (``init_process_group``); this checks the
    policy and returns. With ``copy-engine``: ``set_custom_all_gather`` / ``set_custom_reduce_scatter``
    with collectives whose ``allocate()`` hands out NCCL symmetric memory, so that the all-gather
    runs in place on copy engines and the reduce-scatter as copy-engine exchanges plus a sum kernel.
    Not in this build yet: NotImplementedError.
    """
    parsed = _pytorch_policy(policy)
    if not hasattr(module, "set_custom_all_gather"):
        raise TypeError(f"install_fsdp_collectives: {type(module).__name__} is not an FSDP2 module "
                        "(torch.distributed.fsdp.fully_shard makes one)")
    if parsed.copy_engine:
        raise NotImplementedError(f"policy '{parsed}': {_COPY_ENGINE_MISSING}")
    return parsed
