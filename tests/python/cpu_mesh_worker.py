"""One rank of test_torch_mesh.py: a world of 4 ranks on gloo and CPU tensors (a FileStore, no port), where
tandem.torch works on groups other than WORLD. Writes what it saw as JSON.

- ``sync_module_states`` on the subgroup of ranks 1, 2 and 3 from global rank 3: every member ends with rank 3's
  model, rank 0 keeps its own, and the root handed to the route is rank 3's rank in the group (2).
- ``install_fsdp_collectives`` on an HSDP model (a 2 x 2 device mesh, (replicate, shard)): the collectives it
  installs are bound to this rank's shard group ({0, 1} or {2, 3}), the route their window memory comes from is
  that group's, FSDP2 calls them on that group, and the losses are stock's (on CPU every call takes gloo's).

    python cpu_mesh_worker.py RANK WORLD_SIZE STORE_FILE OUT_DIR
"""
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard

import tandem.torch as tt
from tandem.torch import routes


def ranks_of(group):
    return "WORLD" if group is None else dist.get_process_group_ranks(group)


class Recorded:
    """Wraps tandem.torch.routes.run_on_route: the group and root of every call (CPU tensors: the route refuses
    them)."""

    def __init__(self):
        self.calls = []
        self.original = routes.run_on_route

    def __enter__(self):
        def recording(stat, kind, group, *args, **kwargs):
            self.calls.append({"stat": stat, "group": ranks_of(group), "root": kwargs.get("root")})
            return self.original(stat, kind, group, *args, **kwargs)
        routes.run_on_route = recording
        return self

    def __exit__(self, *exc):
        routes.run_on_route = self.original


def states(model):
    return {name: t.flatten().tolist() for name, t in model.state_dict().items()}


def subgroup_sync(rank):
    group = dist.new_group([1, 2, 3])  # collective: every rank of the world makes it
    result = {}
    for policy in ("copy-engine", "priority"):
        torch.manual_seed(10 + rank)
        model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
        model[1].running_mean.fill_(rank + 1.0)
        before = states(model)
        tt.reset_stats()
        with Recorded() as recorded:
            if rank != 0:
                tt.sync_module_states(model, policy, process_group=group, src=3)
        result[policy] = {"before": before, "after": states(model), "route_calls": recorded.calls,
                          "stats": tt.stats()}
    return result


def hsdp(rank):
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    shard_ranks = dist.get_process_group_ranks(mesh.get_group("shard"))

    def train(install):
        torch.manual_seed(5)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 4))
        for layer in model:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        install(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        generator = torch.Generator().manual_seed(100 + rank)
        losses = []
        for _ in range(2):
            loss = model(torch.randn(4, 8, generator=generator)).square().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    # What install_fsdp_collectives sets on each FSDP2 module.
    installed = {"all_gather": [], "reduce_scatter": []}
    set_all_gather, set_reduce_scatter = FSDPModule.set_custom_all_gather, FSDPModule.set_custom_reduce_scatter

    def install(model):
        FSDPModule.set_custom_all_gather = lambda self, comm: (installed["all_gather"].append(comm),
                                                               set_all_gather(self, comm))[1]
        FSDPModule.set_custom_reduce_scatter = lambda self, comm: (installed["reduce_scatter"].append(comm),
                                                                   set_reduce_scatter(self, comm))[1]
        try:
            tt.install_fsdp_collectives(model, "copy-engine")
        finally:
            FSDPModule.set_custom_all_gather, FSDPModule.set_custom_reduce_scatter = \
                set_all_gather, set_reduce_scatter

    stock = train(lambda model: None)
    tt.reset_stats()
    with Recorded() as recorded:
        tandem = train(install)
    stats = tt.stats()

    # The route the all-gather's window memory would come from on a GPU: asked of the group it was given.
    asked = []

    class Asked(Exception):
        pass

    def route(group=None, *args, **kwargs):
        asked.append(ranks_of(group))
        raise Asked()

    original_route = routes.copy_engine_route
    routes.copy_engine_route = route
    try:
        installed["all_gather"][0].allocate((4,), dtype=torch.float32, device=torch.device("cuda", 0))
    except Asked:
        pass
    finally:
        routes.copy_engine_route = original_route
    return {"shard_ranks": shard_ranks, "stock": stock, "tandem": tandem, "stats": stats,
            "installed": {kind: [ranks_of(c.process_group) for c in comms] for kind, comms in installed.items()},
            "called_on": sorted({(c["stat"], str(c["group"])) for c in recorded.calls}),
            "route_asked_for": asked}


def main(rank, world_size, store, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    result = {"subgroup_sync": subgroup_sync(rank), "hsdp": hsdp(rank)}
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
