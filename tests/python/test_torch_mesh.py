"""tandem.torch on groups other than WORLD, in a world of 4 ranks on gloo and CPU tensors (cpu_mesh_worker.py,
each rank a process of its own): ``sync_module_states`` on a subgroup (the source is a global rank, the route's
root its rank in the group) and ``install_fsdp_collectives`` on HSDP's 2 x 2 device mesh (the collectives and
their route on the shard group, not WORLD or the replicate group). On CPU tensors the route refuses every call,
so what is checked is the decision: the group and the root tandem.torch hands it, and that the process group's
own collectives then give stock's results. Needs PyTorch with torch.distributed and gloo.
"""
from pathlib import Path

import pytest
from cpu_ranks import run_cpu_ranks
from stats_view import calls

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

WORKER = Path(__file__).with_name("cpu_mesh_worker.py")
WORLD_SIZE = 4  # a 2 x 2 mesh


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_cpu_ranks(WORKER, WORLD_SIZE, tmp_path_factory.mktemp("mesh"))


@pytest.mark.parametrize("policy", ["copy-engine", "priority"])
def test_sync_module_states_on_a_subgroup_broadcasts_from_the_global_source(ranks, policy):
    # The group of ranks 1, 2 and 3, from global rank 3: each member ends with rank 3's model, rank 0 (outside
    # the group) keeps its own; rank 1 (the group's rank 0) and rank 2 (global rank 2) are not the source.
    source = ranks[3]["subgroup_sync"][policy]["before"]
    for rank in (1, 2):
        assert ranks[rank]["subgroup_sync"][policy]["before"] != source
    for rank in (1, 2, 3):
        after = ranks[rank]["subgroup_sync"][policy]["after"]
        assert after == source, f"rank {rank}"
        assert after["1.running_mean"] == [4.0, 4.0]
    zero = ranks[0]["subgroup_sync"][policy]
    assert zero["after"] == zero["before"]


def test_sync_module_states_hands_the_route_the_sources_rank_in_the_group(ranks):
    # Global rank 3 is rank 2 of the group [1, 2, 3]: the root of every broadcast handed to the route. Linear's
    # weight and bias, BatchNorm's weight, bias and three buffers: 7 tensors.
    for rank in (1, 2, 3):
        sync = ranks[rank]["subgroup_sync"]["copy-engine"]
        assert sync["route_calls"] == [{"stat": "ddp_broadcast", "group": [1, 2, 3], "root": 2}] * 7
        assert calls(sync["stats"], "ddp_broadcast") == {"a cpu tensor": 7}
        # Without copy-engine nothing is handed to the route.
        assert ranks[rank]["subgroup_sync"]["priority"]["route_calls"] == []


def test_hsdp_collectives_are_bound_to_the_shard_group(ranks):
    # The mesh [[0, 1], [2, 3]] as (replicate, shard): ranks 0 and 1 shard together, so do 2 and 3.
    for rank, result in enumerate(ranks):
        hsdp = result["hsdp"]
        shard = [0, 1] if rank < 2 else [2, 3]
        assert hsdp["shard_ranks"] == shard
        # One all-gather and one reduce-scatter for the 3 FSDP2 modules (the two layers and the root), on the
        # shard group; the window memory of the all-gather is asked of that group's route.
        assert hsdp["installed"] == {"all_gather": [shard] * 3, "reduce_scatter": [shard] * 3}
        assert hsdp["route_asked_for"] == [shard]
        # FSDP2 calls them on the shard group (the replicate group's all-reduce is its own).
        assert hsdp["called_on"] == [["fsdp_all_gather", str(shard)], ["fsdp_reduce_scatter", str(shard)]]


def test_hsdp_losses_are_stocks(ranks):
    for result in ranks:
        hsdp = result["hsdp"]
        assert hsdp["tandem"] == hsdp["stock"]
        assert hsdp["stock"][0] != hsdp["stock"][-1]
        # 2 steps x 2 layers: a reduce-scatter per layer per step, on CPU tensors (gloo's).
        assert calls(hsdp["stats"], "fsdp_reduce_scatter") == {"a cpu tensor": 4}
        assert list(calls(hsdp["stats"], "fsdp_all_gather")) == ["a cpu tensor"]
