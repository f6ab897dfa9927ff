"""tandem.torch on two ranks: a DDP training under tandem's hook gives stock DDP's losses bitwise,
the process group carries the policy's settings, and tandem's modules share PyTorch's NCCL; with
copy-engine, DDP's buckets and FSDP2's all-gathers and reduce-scatters take tandem's copy-engine route and
give stock's losses (DDP in fp32: bitwise; FSDP2 in bf16: within 1e-2 relative), and DDP's rebuilt buckets
lie in the route's window memory. The copy-engine runs ask for the route's peer copies
(TANDEM_ROUTE_PEER_COPIES=1): where the ranks have GPUs of their own (one node's) they stage nothing, the first
step's buckets (PyTorch's memory) pushed to and pulled from the peers' pools, and at three ranks (buckets no
multiple of the rank count) the rebuilt ones too. Ranks sharing a GPU are a host each to NCCL, which then maps
no peer's memory: there, as with peer copies off (TANDEM_ROUTE_PEER_COPIES=0), only the first step is staged,
and at three ranks each bucket's remainder. At three ranks the hook gives stock's losses within rounding.

Skipped without PyTorch or without a GPU. Each rank runs ddp_loss_worker.py or fsdp_loss_worker.py
under torchrun, on a GPU of its own, or with one GPU both on it (tests/tools/shared_gpu_rank.py: NCCL
then connects them through its network transport; results hold, times would not).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stats_view import calls

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a GPU", allow_module_level=True)

WORKER = Path(__file__).with_name("ddp_loss_worker.py")
FSDP_WORKER = Path(__file__).with_name("fsdp_loss_worker.py")
SHARED_GPU = Path(__file__).parents[1] / "tools" / "shared_gpu_rank.py"


def own_gpus(nranks):
    """Whether each of `nranks` ranks gets a GPU of its own: one node's GPUs, which NCCL maps into each other's
    processes (its LSA team), so the route can copy with the peers by address."""
    return torch.cuda.device_count() >= nranks


def run(mode, out, worker=WORKER, prefix="", nranks=2, **environment):
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", **environment)
    program = [str(worker)] if own_gpus(nranks) else [str(SHARED_GPU), str(worker)]
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nranks),
                    *program, mode, str(out)], check=True, env=env, timeout=300)
    return [json.loads((out / f"{prefix}{mode}{r}.json").read_text()) for r in range(nranks)]


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    return run("stock", tmp_path_factory.mktemp("stock"))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run("tandem", tmp_path_factory.mktemp("tandem"))


def test_losses_equal_stock_bitwise(stock, ranks):
    for ours, theirs in zip(ranks, stock):
        assert len(ours["losses"]) == 8
        # DDP multiplies by 1/2 before summing, the hook divides by 2: both exact in floating point.
        assert ours["losses"] == theirs["losses"]
    # After the first step the losses depend on the averaged gradients: the training must have moved.
    assert ranks[0]["losses"][0] != ranks[0]["losses"][-1]


def test_process_group_carries_the_policy(ranks):
    for rank in ranks:
        assert rank["policy"] == "priority+nccl-ctas:8..16+nccl-cga:2"
        assert rank["high_priority"] is True
        assert (rank["min_ctas"], rank["max_ctas"], rank["cga_cluster_size"]) == (8, 16, 2)
        assert rank["comm"] != 0


def test_sm_target_sets_pytorchs_carveout(ranks):
    for rank in ranks:
        assert rank["carveout"] == rank["sms"] - 100


def test_one_nccl_in_the_process(ranks):
    for rank in ranks:
        assert len(rank["nccl_paths"]) == 1, rank["nccl_paths"]
        assert rank["tandem_nccl_version"] == rank["torch_nccl_version"]


@pytest.fixture(scope="module", params=["copy-engine", "priority+copy-engine"])
def copy_engine_ranks(request, tmp_path_factory):
    return request.param, run(request.param, tmp_path_factory.mktemp("copy-engine"), TANDEM_ROUTE_PEER_COPIES="1")


def test_copy_engine_hook_losses_equal_stock_bitwise(stock, copy_engine_ranks):
    _, ranks = copy_engine_ranks
    for ours, theirs in zip(ranks, stock):
        # fp32 gradients on 2 ranks: the route (fp32 sum, rounded once) and NCCL both give a+b rounded once.
        assert ours["losses"] == theirs["losses"]


def test_copy_engine_hook_routes_buckets(copy_engine_ranks):
    policy, ranks = copy_engine_ranks
    for rank in ranks:
        counts = calls(rank["stats"], "ddp_all_reduce")
        # 8 steps of at least 2 buckets (bucket_cap_mb=4 over 4 layers of 4 MiB), every count even.
        assert counts.get("copy-engine", 0) >= 16, counts
        assert set(counts) == {"copy-engine"}, counts
        (route,) = rank["stats"]["routes"].values()
        assert route["calls"] == counts["copy-engine"]
        # The first step's buckets are PyTorch's memory: pushed to and pulled from the peers' pools, or staged.
        # Asked for (the fixture), peer copies are said unavailable exactly where NCCL maps no peer's window.
        unavailable = [w for w in rank["tandem_warnings"] if "peer copies asked for" in w]
        if own_gpus(2):
            assert route["peer_bytes"] > 0 and route["staged_bytes"] == 0, route
            assert route["peer_copies_unavailable"] == 0 and unavailable == [], (route, unavailable)
        else:
            assert route["peer_bytes"] == 0 and route["staged_bytes"] > 0, route
            assert route["peer_copies_unavailable"] == 1 and len(unavailable) == 1, (route, unavailable)
    assert calls(ranks[0]["stats"], "ddp_all_reduce") == calls(ranks[1]["stats"], "ddp_all_reduce")


@pytest.fixture(scope="module")
def three_ranks(tmp_path_factory):
    """Stock DDP and the copy-engine hook at 3 ranks, where DDP's buckets (1024 x 1024 + 1024 fp32 a layer) are
    no multiple of the rank count."""
    return (run("stock", tmp_path_factory.mktemp("stock-3"), nranks=3),
            run("copy-engine", tmp_path_factory.mktemp("copy-engine-3"), nranks=3, TANDEM_ROUTE_PEER_COPIES="1"))


@pytest.fixture(scope="module")
def three_ranks_staged(tmp_path_factory):
    """The copy-engine hook at 3 ranks with the route's peer copies off: the staged plans."""
    return run("copy-engine", tmp_path_factory.mktemp("copy-engine-3-staged"), nranks=3, TANDEM_ROUTE_PEER_COPIES="0")


def test_copy_engine_hook_at_three_ranks_matches_stock(three_ranks, three_ranks_staged):
    stock_ranks, ranks = three_ranks
    for routed in (ranks, three_ranks_staged):
        assert len(routed) == 3
        for ours, theirs in zip(routed, stock_ranks):
            # 3 terms: the route sums in rank order, NCCL's ring in another, so the last bits may differ.
            assert len(ours["losses"]) == 8
            for a, b in zip(ours["losses"], theirs["losses"]):
                assert abs(a - b) <= 1e-5 * abs(b), (ours["losses"], theirs["losses"])
            assert set(calls(ours["stats"], "ddp_all_reduce")) == {"copy-engine"}
    # The plans differ, the sums do not: the same terms in the same order.
    assert [r["losses"] for r in ranks] == [r["losses"] for r in three_ranks_staged]


def check_rebuilt_buckets_in_window_memory(ranks, peer_copies, asked=True):
    # DDP rebuilds its buckets at the second step's start in the route's window memory. At 2 ranks they then
    # run on NCCL's copy-engine collectives where they lie. At 3 ranks no bucket's count is a multiple of 3:
    # with peer copies its chunks are pushed and pulled (nothing staged); without, only each bucket's
    # remainder, under one 16-byte vector per rank, is staged in and out. The first step's buckets are
    # PyTorch's: pushed and pulled, or staged. Peer copies `asked` for where NCCL maps no peer's window (ranks
    # sharing a GPU) are said unavailable on the route.
    for rank in ranks:
        (route,) = rank["stats"]["routes"].values()
        later_calls = route["calls"] - rank["calls_after_first_step"]
        assert later_calls > 0 and rank["calls_after_first_step"] > 0
        uneven = rank["world_size"] == 3
        said = [w for w in rank["tandem_warnings"] if "peer copies asked for" in w]
        assert route["peer_copies_unavailable"] == len(said) == int(asked and not peer_copies), (route, said)
        if peer_copies:
            first = rank["peer_bytes_after_first_step"]
            assert route["staged_bytes"] == 0 and first > 0, route
            assert route["peer_bytes"] > first if uneven else route["peer_bytes"] == first, (first, route)
        else:
            first = rank["staged_bytes_after_first_step"]
            remainders = later_calls * 2 * rank["world_size"] * 16 if uneven else 0
            assert route["peer_bytes"] == 0, route
            assert 0 < first <= route["staged_bytes"] <= first + remainders, (first, route)
            if uneven:
                assert route["staged_bytes"] > first, "every bucket has a remainder at 3 ranks"
        # The rebuilt buckets (4 layers of 1024 x 1024 fp32 weights and their biases: over 16 MiB) took window
        # segments beside the staging pool.
        assert route["registrations"] > rank["registrations_after_first_step"]
        assert route["buffer_bytes"] >= 16 << 20, route


def test_ddps_rebuilt_buckets_lie_in_window_memory(copy_engine_ranks):
    check_rebuilt_buckets_in_window_memory(copy_engine_ranks[1], peer_copies=own_gpus(2))


def test_ddps_rebuilt_buckets_at_three_ranks_stage_nothing_with_peer_copies(three_ranks):
    check_rebuilt_buckets_in_window_memory(three_ranks[1], peer_copies=own_gpus(3))


def test_without_peer_copies_ddps_rebuilt_buckets_at_three_ranks_stage_only_remainders(three_ranks_staged):
    check_rebuilt_buckets_in_window_memory(three_ranks_staged, peer_copies=False, asked=False)


def check_uneven_window_all_reduce(ranks, peer_copies):
    for rank in ranks:
        check = rank["uneven_window_all_reduce"]
        assert check["reason"] == "" and check["exact"], check
        if peer_copies:
            assert check["staged_bytes"] == 0 and check["peer_bytes"] > 0, check
        else:
            assert 0 < check["staged_bytes"] <= 2 * rank["world_size"] * 16 and check["peer_bytes"] == 0, check


def test_an_uneven_all_reduce_in_window_memory_is_exact_and_stages_nothing_with_peer_copies(copy_engine_ranks,
                                                                                           three_ranks):
    check_uneven_window_all_reduce(copy_engine_ranks[1], peer_copies=own_gpus(2))
    check_uneven_window_all_reduce(three_ranks[1], peer_copies=own_gpus(3))


def test_without_peer_copies_an_uneven_window_all_reduce_stages_only_its_remainder(three_ranks_staged):
    check_uneven_window_all_reduce(three_ranks_staged, peer_copies=False)


def test_copy_engine_hook_comm_stream_priority(copy_engine_ranks):
    policy, ranks = copy_engine_ranks
    for rank in ranks:
        expected = rank["greatest_priority"] if policy.startswith("priority") else 0
        assert rank["comm_stream_priorities"] == [expected]
        assert rank["greatest_priority"] < 0


@pytest.fixture(scope="module")
def fsdp_stock(tmp_path_factory):
    return run("stock", tmp_path_factory.mktemp("fsdp-stock"), FSDP_WORKER, "fsdp-")


@pytest.fixture(scope="module")
def fsdp_copy_engine(tmp_path_factory):
    return run("copy-engine", tmp_path_factory.mktemp("fsdp-copy-engine"), FSDP_WORKER, "fsdp-")


def test_fsdp_copy_engine_losses_match_stock(fsdp_stock, fsdp_copy_engine):
    for ours, theirs in zip(fsdp_copy_engine, fsdp_stock):
        assert len(ours["losses"]) == 8
        # bf16: the all-gather is a copy (exact); the reduce-scatter's sum is rounded once from fp32 and
        # then halved (exact), NCCL's average may round differently in the last bit of bf16.
        for a, b in zip(ours["losses"], theirs["losses"]):
            assert abs(a - b) <= 1e-2 * abs(b), (ours["losses"], theirs["losses"])
    assert fsdp_stock[0]["losses"][0] != fsdp_stock[0]["losses"][-1]


def test_fsdp_copy_engine_routes_both_collectives(fsdp_copy_engine):
    for rank in fsdp_copy_engine:
        stats = rank["stats"]
        assert calls(stats, "fsdp_all_gather").get("copy-engine", 0) > 0, stats
        assert calls(stats, "fsdp_reduce_scatter").get("copy-engine", 0) > 0, stats
        # The all-gather outputs and the reduce-scatter inputs live in window buffers, reused across layers
        # and steps, so the route stages nothing.
        assert 0 < stats["window_pool"]["buffers"] < stats["window_pool"]["lent"]
        (route,) = stats["routes"].values()
        assert route["calls"] > 0 and route["staged_bytes"] == 0 and route["buffer_bytes"] > 0, route
