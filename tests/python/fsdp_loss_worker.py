"""One rank of test_torch_gpu.py (started by torchrun): a small FSDP2 training in bf16 (parameters and
gradient reduction), stock (`stock`) or with tandem's copy-engine collectives (`copy-engine`); writes the
losses and tandem.torch's counts as JSON."""
import gc
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import tandem.torch as tt

STEPS = 8
WIDTH = 1024


def train(install):
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.manual_seed(7)
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(4)]).to(device)
    precision = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
    for layer in model:
        fully_shard(layer, mp_policy=precision)
    fully_shard(model, mp_policy=precision)
    install(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator(device=device).manual_seed(1000 + dist.get_rank())
    losses = []
    for _ in range(STEPS):
        x = torch.randn(64, WIDTH, device=device, generator=generator)
        loss = model(x).float().square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    torch.cuda.synchronize()
    del model, optimizer
    gc.collect()
    return losses


def main(mode, out_dir):
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    if mode == "stock":
        dist.init_process_group("nccl", device_id=device)
        result = {"losses": train(lambda model: None)}
    else:
        policy = tt.init_process_group(mode, device_id=device)
        result = {"losses": train(lambda model: tt.install_fsdp_collectives(model, policy)), "stats": tt.stats()}
        tt.close_routes()
    rank = dist.get_rank()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"fsdp-{mode}{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
