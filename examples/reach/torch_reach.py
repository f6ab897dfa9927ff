"""What the PyTorch programs of examples/reach share: a hard time limit, the digest of a result,
PyTorch's own record of the collectives it issued (its flight recorder), one report per rank
gathered to rank 0, and the end of the run (tandem.torch's routes closed before the process group).
"""
import faulthandler
import hashlib
import json
import math

import torch
import torch.distributed as dist

_ELEMENT_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Short": 2,
                  "Byte": 1, "Char": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1}


def time_limit(seconds):
    """Never hang: after `seconds` every thread's stack goes to stderr and the process exits (code 1)."""
    if seconds and seconds > 0:
        faulthandler.dump_traceback_later(seconds, exit=True)


def digest(tensor):
    """16 hex digits of SHA-256 over the tensor's bytes: equal digests, bitwise equal results."""
    data = tensor.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


def operation_name(profiling_name):
    """nccl:all_reduce -> all_reduce; nccl:send 0->1 -> send."""
    return profiling_name.split(":", 1)[-1].split(" ")[0]


def entry_bytes(entry):
    """An entry's size as tandem counts a collective: its larger side (the all-reduce buffer, the
    all-gather output, the reduce-scatter input), summed over the tensors of a coalesced entry."""
    def side(sizes, dtypes):
        return sum(math.prod(int(s) for s in shape) * _ELEMENT_BYTES.get(dtype, 0)
                   for shape, dtype in zip(sizes or [], dtypes or []))
    return max(side(entry.get("input_sizes"), entry.get("input_dtypes")),
               side(entry.get("output_sizes"), entry.get("output_dtypes")))


def summarize_entries(entries):
    """{operation: {"calls": N, "bytes": B}} over flight-recorder entries."""
    out = {}
    for entry in entries:
        name = operation_name(entry.get("profiling_name", "?"))
        slot = out.setdefault(name, {"calls": 0, "bytes": 0})
        slot["calls"] += 1
        slot["bytes"] += entry_bytes(entry)
    return out


def process_group_collectives():
    """What this rank's process groups handed to NCCL, by operation, from PyTorch's flight recorder
    (on by default, 2000 entries; TORCH_FR_BUFFER_SIZE sets more), or None where it is not available
    (another backend, a PyTorch without it). Collectives that tandem.torch runs on its own route do
    not pass through the process group and are not in it."""
    try:
        dump = torch._C._distributed_c10d._dump_nccl_trace_json(includeCollectives=True, onlyActive=False)
        entries = json.loads(dump).get("entries", [])
    except Exception:  # noqa: BLE001 - gloo, or a PyTorch without the recorder
        return None
    return summarize_entries(entries)


def gather_reports(report):
    """Every rank's report (a JSON-able dict), in rank order, on every rank (an NCCL all-gather of
    their pickles: it runs after everything that was measured)."""
    reports = [None] * dist.get_world_size()
    dist.all_gather_object(reports, report)
    return reports


def finish(tt):
    """tandem.torch's routes closed (collective) before the process group is destroyed."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    if tt is not None:
        tt.close_routes()
    dist.destroy_process_group()

