"""One rank of test_torch_copy_engine.py's FSDP2 test (torchrun, 2 ranks, gloo, CPU): a small FSDP2 training
stock and with tandem's copy-engine collectives installed, in one process group; writes the losses and
tandem.torch's counts as JSON. On CPU tensors every collective takes the group's own (gloo), so this checks
that FSDP2 drives tandem's AllGather/ReduceScatter through its real protocol, and the fallback."""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

import tandem.torch as tt


def train(install):
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    install(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(100 + dist.get_rank())
    losses = []
    for _ in range(3):
        loss = model(torch.randn(4, 16, generator=generator)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(out_dir):
    dist.init_process_group("gloo")
    result = {"stock": train(lambda model: None),
              "tandem": train(lambda model: tt.install_fsdp_collectives(model, "copy-engine")),
              "stats": tt.stats()}
    rank = dist.get_rank()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"fsdp-cpu{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1])
