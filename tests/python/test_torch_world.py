"""tandem.torch in a world of several ranks, on gloo and CPU tensors: each rank a process of its own
(cpu_world_worker.py, a FileStore), every rank with values of its own, so that a hook that sums instead
of averaging, an average over the wrong count or a reduction that forgets its op gives other numbers.
No GPU: CPU tensors take the process group's own collectives (the paths tandem.torch hands to PyTorch
where the copy-engine route does not apply). Needs PyTorch with torch.distributed and gloo.
"""
from pathlib import Path

import pytest
from cpu_ranks import run_cpu_ranks
from stats_view import calls, nbytes

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

WORKER = Path(__file__).with_name("cpu_world_worker.py")
WORLD_SIZE = 3  # not a power of two: dividing by it is not exact, multiplying by its inverse differs


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_cpu_ranks(WORKER, WORLD_SIZE, tmp_path_factory.mktemp("world"))


def mean(values):
    return sum(values) / len(values)


def test_the_hook_averages_the_bucket_over_the_ranks(ranks):
    # Rank r's bucket is (r + 1) x [1, 2, 3, 4]: the average is 2 x [1, 2, 3, 4] on every rank (the sum
    # would be 6 x, rank 0's own 1 x).
    for rank in ranks:
        assert rank["hook_bucket"] == pytest.approx([2.0, 4.0, 6.0, 8.0], rel=1e-6)
        assert calls(rank["hook_stats"], "ddp_all_reduce") == {"a cpu tensor": 1}
        assert nbytes(rank["hook_stats"], "ddp_all_reduce") == {"a cpu tensor": 4 * 4}


def test_ddp_steps_give_the_average_of_the_ranks_gradients(ranks):
    local = ranks[0]["local_gradients"]  # every rank's own gradients, gathered
    expected = [[mean([local[r][p][i] for r in range(WORLD_SIZE)]) for i in range(len(local[0][p]))]
                for p in range(len(local[0]))]
    summed = [[sum(local[r][p][i] for r in range(WORLD_SIZE)) for i in range(len(local[0][p]))]
              for p in range(len(local[0]))]
    assert expected != summed
    for rank in ranks:
        for name in ("ddp_copy_engine", "ddp_priority", "ddp_allreduce_hook", "ddp_stock"):
            for got, want in zip(rank[name], expected):
                assert got == pytest.approx(want, rel=1e-5, abs=1e-6), name
        # tandem's hook is PyTorch's allreduce_hook: divide, then sum, bitwise.
        assert rank["ddp_copy_engine"] == rank["ddp_allreduce_hook"]
        assert rank["ddp_priority"] == rank["ddp_allreduce_hook"]
        # Every rank ends with the same gradients.
        assert rank["ddp_copy_engine"] == ranks[0]["ddp_copy_engine"]


def test_fsdp_reduce_scatter_keeps_its_reduction(ranks):
    # Rank r's input is (r + 1) x [1..9]; rank k gets elements 3k..3k+2, summed (x 6) or averaged (x 2).
    for k, rank in enumerate(ranks):
        chunk = [float(3 * k + i + 1) for i in range(3)]
        assert rank["reduce_scatter"]["sum"] == pytest.approx([6 * v for v in chunk])
        assert rank["reduce_scatter"]["avg"] == pytest.approx([2 * v for v in chunk])
        # Counted with the larger buffer, the input: 9 fp32.
        assert calls(rank["fsdp_stats"], "fsdp_reduce_scatter") == {"a cpu tensor": 2}
        assert nbytes(rank["fsdp_stats"], "fsdp_reduce_scatter") == {"a cpu tensor": 2 * 9 * 4}


def test_fsdp_all_gather_places_each_ranks_chunk(ranks):
    # Rank r contributes (r + 1) x [1, 2], in rank order; counted with the output, 6 bf16.
    for rank in ranks:
        assert rank["all_gather"] == [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]
        assert calls(rank["fsdp_stats"], "fsdp_all_gather") == {"a cpu tensor": 1}
        assert nbytes(rank["fsdp_stats"], "fsdp_all_gather") == {"a cpu tensor": 6 * 2}


def test_sync_module_states_gives_every_rank_the_sources_model(ranks):
    source = ranks[1]["states_before_sync"]
    assert ranks[0]["states_before_sync"] != source, "every rank starts from a model of its own"
    for rank_index, rank in enumerate(ranks):
        after = rank["states_after_sync"]
        for name, values in after.items():
            if name == "2.bias":  # ignored by DDP: each rank keeps its own
                assert values == rank["states_before_sync"][name], name
            else:
                assert values == source[name], f"rank {rank_index}: {name}"
        assert after["1.running_mean"] == [2.0, 2.0]
        # Linear and BatchNorm weights and biases, the last weight, BatchNorm's three buffers (the
        # ignored bias not among them): CPU tensors, so the group's broadcast.
        assert calls(rank["sync_stats"], "ddp_broadcast") == {"a cpu tensor": 8}
