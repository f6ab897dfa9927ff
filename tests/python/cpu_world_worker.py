"""One rank of test_torch_world.py: a world of several ranks on gloo and CPU tensors (a FileStore, no
port), each rank a process of its own. Every rank gives the collectives values of its own, so an
average, a sum and one rank's values differ. Writes what tandem.torch's DDP hook and FSDP2 collectives
returned, and tandem.torch's counts, as JSON.

    python cpu_world_worker.py RANK WORLD_SIZE STORE_FILE OUT_DIR
"""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import tandem.torch as tt


def rank_values(rank, n):
    """A tensor that differs on every rank: (rank + 1) x [1, 2, ..., n]."""
    return torch.arange(1, n + 1, dtype=torch.float32) * (rank + 1)


def ddp_gradients(rank, register):
    """One DDP step on a small model, each rank with inputs of its own; `register` installs a hook (or not)."""
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Linear(4, 2))
    ddp = DDP(model)
    register(ddp)
    inputs = torch.randn(5, 6, generator=torch.Generator().manual_seed(100 + rank))
    ddp(inputs).square().sum().backward()
    return [p.grad.flatten().tolist() for p in model.parameters()]


def local_gradients(rank):
    """The same step's gradients of rank `rank` alone (no DDP): the ones DDP averages over the ranks."""
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Linear(4, 2))
    inputs = torch.randn(5, 6, generator=torch.Generator().manual_seed(100 + rank))
    model(inputs).square().sum().backward()
    return [p.grad.flatten().tolist() for p in model.parameters()]


def synced_states(rank):
    """DDP's start-up broadcast left to tandem.torch (init_sync=False): every rank builds the model with values
    of its own, and after the sync every rank holds rank 1's; the parameter DDP was told to ignore keeps each
    rank's own. CPU tensors take the group's broadcast. The DDP is gone before the group is destroyed."""
    tt.reset_stats()
    torch.manual_seed(10 + rank)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2), torch.nn.Linear(2, 1))
    model[1].running_mean.fill_(rank + 1.0)
    DDP._set_params_and_buffers_to_ignore_for_model(model, ["2.bias"])
    ddp = DDP(model, init_sync=False)
    before = {name: t.flatten().tolist() for name, t in model.state_dict().items()}
    tt.sync_module_states(ddp, "copy-engine", src=1)
    after = {name: t.flatten().tolist() for name, t in model.state_dict().items()}
    return {"states_before_sync": before, "states_after_sync": after, "sync_stats": tt.stats()}


def main(rank, world_size, store, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    group = dist.group.WORLD
    result = {}

    # The DDP hook's work on one bucket, as DDP hands it over.
    tt.reset_stats()
    bucket = rank_values(rank, 4)
    result["hook_bucket"] = tt.all_reduce_average(tt.CopyEngineHookState(), bucket).wait().tolist()
    result["hook_stats"] = tt.stats()

    # Whole DDP steps: tandem's copy-engine hook (CPU buckets take the group's all-reduce), tandem's hook
    # without copy-engine (PyTorch's allreduce_hook), PyTorch's allreduce_hook itself and stock DDP.
    result["ddp_copy_engine"] = ddp_gradients(rank, lambda ddp: tt.register_ddp_hook(ddp, "copy-engine"))
    result["ddp_priority"] = ddp_gradients(rank, lambda ddp: tt.register_ddp_hook(ddp, "priority"))
    result["ddp_allreduce_hook"] = ddp_gradients(
        rank, lambda ddp: ddp.register_comm_hook(state=None, hook=default_hooks.allreduce_hook))
    result["ddp_stock"] = ddp_gradients(rank, lambda ddp: None)
    result["local_gradients"] = [local_gradients(r) for r in range(world_size)]

    # FSDP2's collectives on CPU tensors: the group's own, with FSDP2's arguments.
    tt.reset_stats()
    reduce_scatter = tt.CopyEngineReduceScatter()
    shard = 3
    source = rank_values(rank, shard * world_size)
    outputs = {}
    for name, op in (("avg", dist.ReduceOp.AVG), ("sum", dist.ReduceOp.SUM)):
        output = reduce_scatter.allocate((shard,), dtype=torch.float32, device=torch.device("cpu"))
        assert reduce_scatter(output, source, group, op) is None
        outputs[name] = output.tolist()
    result["reduce_scatter"] = outputs
    all_gather = tt.CopyEngineAllGather()
    gathered_output = all_gather.allocate((2 * world_size,), dtype=torch.bfloat16, device=torch.device("cpu"))
    all_gather(gathered_output, rank_values(rank, 2).to(torch.bfloat16), group)
    result["all_gather"] = gathered_output.float().tolist()
    result["fsdp_stats"] = tt.stats()

    result.update(synced_states(rank))

    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
