"""One rank of test_torch_gpu.py (started by torchrun): a small DDP training, stock (`stock`), under
tandem.torch (`tandem`), or with tandem's copy-engine hook (a mode that is a policy with copy-engine, e.g.
`priority+copy-engine`); writes the losses and what it observed as JSON. Each mode runs as a torchrun
launch of its own: a process group re-created in one process could read the first one's NCCL id from the
store."""
import json
import os
import sys
import warnings

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tandem.torch as tt
from tandem.torch import ddp as ddp_module

POLICY = "priority+nccl-ctas:8..16+nccl-cga:2"
STEPS = 8
WIDTH = 1024


def train(model_seed, ddp_setup, after_step=lambda step: None):
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.manual_seed(model_seed)
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(4)]).to(device)
    # Small buckets: several all-reduces per step, so the hook runs more than once.
    ddp = DDP(model, device_ids=[device.index], bucket_cap_mb=4)
    ddp_setup(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    generator = torch.Generator(device=device).manual_seed(1000 + dist.get_rank())
    losses = []
    for step in range(STEPS):
        x = torch.randn(64, WIDTH, device=device, generator=generator)
        loss = ddp(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        after_step(step)
    torch.cuda.synchronize()
    return losses


def stock(device):
    dist.init_process_group("nccl", device_id=device)
    return {"losses": train(7, lambda ddp: None)}


def under_tandem(device):
    policy = tt.init_process_group(POLICY, device_id=device)
    options = dist.group.WORLD._get_backend(device).options
    losses = train(7, lambda ddp: tt.register_ddp_hook(ddp, policy))

    tt.apply_process_settings("sm-target:100", device=device)
    carveout = torch._C._get_sm_carveout_experimental()
    torch._C._set_sm_carveout_experimental(None)

    cuda_module = tt.gpu_module()  # raises when its NCCL is not torch's
    nccl_paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and "libnccl" in os.path.basename(fields[-1]):
                nccl_paths.add(fields[-1])
    major, minor, patch = torch.cuda.nccl.version()[:3]
    return {
        "losses": losses,
        "policy": str(policy),
        "high_priority": options.is_high_priority_stream,
        "min_ctas": options.config.min_ctas,
        "max_ctas": options.config.max_ctas,
        "cga_cluster_size": options.config.cga_cluster_size,
        "comm": tt.nccl_comm(),
        "sms": torch.cuda.get_device_properties(device).multi_processor_count,
        "carveout": carveout,
        "nccl_paths": sorted(nccl_paths),
        "tandem_nccl_version": cuda_module.nccl_version(),
        "torch_nccl_version": major * 10000 + minor * 100 + patch,
    }


def uneven_window_all_reduce(device):
    """A sum all-reduce in the route's window memory whose count is no multiple of the rank count (DDP's buckets
    at 3 ranks): whether the route took it, its result against the exact sum (integers, exact in fp32), and the
    bytes it staged (only its remainder, under one 16-byte vector per rank; nothing with peer copies) and copied
    with the peers."""
    count = 3 * 4096 * 5 + 7  # odd, and 1 more than a multiple of 3
    route = tt.routes.copy_engine_route()
    tensor = tt.pool.WindowPool(route).tensor((count,), torch.float32, device)
    index = torch.arange(count, device=device, dtype=torch.float32) % 1000
    world, rank = dist.get_world_size(), dist.get_rank()
    tensor.copy_(index + 1000 * rank)
    torch.cuda.synchronize()
    before = route.stats()
    reason = tt.routes.run_on_route("uneven_window_all_reduce", "all_reduce", None, tensor, tensor, count,
                                    torch.float32)
    torch.cuda.synchronize()
    expected = world * index + 1000 * world * (world - 1) // 2
    after = route.stats()
    return {"reason": reason, "exact": bool(torch.equal(tensor, expected)),
            **{name: after[name] - before[name] for name in ("staged_bytes", "peer_bytes")}}


def copy_engine(policy, device):
    parsed = tt.init_process_group(policy, device_id=device)
    first_step = {}

    def after_step(step):
        if step == 0:
            torch.cuda.synchronize()
            (route,) = tt.stats()["routes"].values()
            first_step.update({f"{name}_after_first_step": route[name]
                               for name in ("staged_bytes", "peer_bytes", "calls", "registrations")})

    # tandem.torch's warnings, every one (a route asked for peer copies where NCCL maps no peer's window says so).
    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        losses = train(7, lambda ddp: tt.register_ddp_hook(ddp, parsed), after_step)
    result = {
        **first_step,
        "losses": losses,
        "tandem_warnings": [str(w.message) for w in recorded if str(w.message).startswith("tandem.torch")],
        "stats": tt.stats(),
        # The hook's comm streams (one here): (device, at the greatest priority) -> PyTorch's priority.
        "comm_stream_priorities": [stream.priority for stream in ddp_module._COMM_STREAMS.values()],
        "greatest_priority": torch.cuda.Stream(device=device, priority=-(1 << 10)).priority,
        "world_size": dist.get_world_size(),
    }
    result["uneven_window_all_reduce"] = uneven_window_all_reduce(device)
    tt.close_routes()
    return result


def main(mode, out_dir):
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    modes = {"stock": stock, "tandem": under_tandem}
    result = modes[mode](device) if mode in modes else copy_engine(mode, device)
    rank = dist.get_rank()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"{mode}{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
