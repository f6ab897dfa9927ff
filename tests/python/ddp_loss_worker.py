"""One rank of test_torch_gpu.py (started by torchrun): the same DDP training twice, once stock and
once under tandem.torch, in one process; writes the losses and what it observed as JSON."""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tandem.torch as tt

POLICY = "priority+nccl-ctas:8..16+nccl-cga:2"
STEPS = 8
WIDTH = 1024


def train(model_seed, ddp_setup):
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.manual_seed(model_seed)
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(4)]).to(device)
    # Small buckets: several all-reduces per step, so the hook runs more than once.
    ddp = DDP(model, device_ids=[device.index], bucket_cap_mb=4)
    ddp_setup(ddp)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    generator = torch.Generator(device=device).manual_seed(1000 + dist.get_rank())
    losses = []
    for _ in range(STEPS):
        x = torch.randn(64, WIDTH, device=device, generator=generator)
        loss = ddp(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    torch.cuda.synchronize()
    return losses


def main(out_dir):
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)

    dist.init_process_group("nccl", device_id=device)
    stock = train(7, lambda ddp: None)
    dist.destroy_process_group()

    policy = tt.init_process_group(POLICY, device_id=device)
    backend = dist.group.WORLD._get_backend(device)
    options = backend.options
    tandem_losses = train(7, lambda ddp: tt.register_ddp_hook(ddp, policy))
    comm = tt.nccl_comm()

    sms = torch.cuda.get_device_properties(device).multi_processor_count
    tt.apply_process_settings("sm-target:100", device=device)
    carveout = torch._C._get_sm_carveout_experimental()
    torch._C._set_sm_carveout_experimental(None)

    import tandem._cuda as cuda_module  # after torch: binds to torch's NCCL and CUDA runtime
    nccl_paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "libnccl" in os.path.basename(path):
                nccl_paths.add(path)
    major, minor, patch = torch.cuda.nccl.version()
    result = {
        "rank": dist.get_rank(),
        "stock": stock,
        "tandem": tandem_losses,
        "policy": str(policy),
        "high_priority": options.is_high_priority_stream,
        "min_ctas": options.config.min_ctas,
        "max_ctas": options.config.max_ctas,
        "cga_cluster_size": options.config.cga_cluster_size,
        "comm": comm,
        "sms": sms,
        "carveout": carveout,
        "nccl_paths": sorted(nccl_paths),
        "tandem_nccl_version": cuda_module.nccl_version(),
        "torch_nccl_version": major * 10000 + minor * 100 + patch,
    }
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{result['rank']}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
