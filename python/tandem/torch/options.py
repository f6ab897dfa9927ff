"""What a policy sets in PyTorch before any collective runs: the process group's NCCL options
(``priority``, the nccl-* tokens) and the process-wide SM carveout (``sm-target``). Every other module
of tandem.torch, and a framework's front end, parses a policy through ``pytorch_policy``, which refuses
what PyTorch leaves tandem no way to apply."""
import warnings

import torch
import torch.distributed as dist

from tandem import as_policy


def pytorch_policy(policy):
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
    parsed = pytorch_policy(policy)
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
    parsed = pytorch_policy(policy)
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
    parsed = pytorch_policy(policy)
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
