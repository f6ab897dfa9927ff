"""tandem.torch's copy-engine paths without a GPU: the dtype table, and the decisions of the DDP hook and the
FSDP2 collectives - every call the route refuses (or that is on CPU tensors) takes the process group's own
collective, counted with its reason. On a one-rank gloo group, so the fallback really runs.

The route is a stand-in with tandem._cuda.CopyEngineRoute's interface (a fixed refusal); tandem._cuda itself
needs a GPU (tests/python/test_torch_gpu.py). Needs PyTorch with torch.distributed; skipped otherwise.
"""
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import tandem  # noqa: E402
import tandem._core  # noqa: E402
import tandem.torch as tt  # noqa: E402


class FixedRoute:
    """tandem._cuda.CopyEngineRoute's interface with a fixed answer to refusal(); records the questions.
    Any collective on it is a failure: on CPU tensors nothing may reach the copy engines."""

    def __init__(self, answer):
        self.answer = answer
        self.asked = []
        self.closed = False

    def refusal(self, kind, count, dtype, op=0):
        self.asked.append((kind, count, dtype, op))
        return self.answer

    def stats(self):
        return {"calls": 0}

    def close(self):
        self.closed = True

    def _never(self, *args):
        raise AssertionError("a collective reached the copy-engine route")

    all_reduce = reduce_scatter = all_gather = all_to_all = window_buffer = _never


@pytest.fixture
def world(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    tt.reset_stats()
    yield dist.group.WORLD
    tt.close_routes()
    tt.reset_stats()
    dist.destroy_process_group()


def seed_route(group, answer):
    route = FixedRoute(answer)
    tt._ROUTES[group.group_name] = route
    return route


# NCCL's documented ncclDataType_t values (nccl.h): ncclInt8 0, ncclUint8 1, ncclInt32 2, ncclInt64 4,
# ncclFloat16 6, ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9.
@pytest.mark.parametrize("dtype,name,value", [
    (torch.int8, "ncclInt8", 0), (torch.uint8, "ncclUint8", 1), (torch.int32, "ncclInt32", 2),
    (torch.int64, "ncclInt64", 4), (torch.float16, "ncclFloat16", 6), (torch.float32, "ncclFloat32", 7),
    (torch.float64, "ncclFloat64", 8), (torch.bfloat16, "ncclBfloat16", 9),
])
def test_dtype_table_is_nccls(dtype, name, value):
    assert tt.nccl_dtype(dtype) == value
    assert tandem._core.nccl_data_types()[name] == value  # the header tandem was built with


def test_dtypes_without_nccl_type():
    for dtype in (torch.complex64, torch.int16, torch.bool):
        assert tt.nccl_dtype(dtype) is None


def train_one_step(hook_policy):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Linear(8, 4))
    ddp = DDP(model)
    if hook_policy is not None:
        tt.register_ddp_hook(ddp, hook_policy)
    ddp(torch.randn(5, 16, generator=torch.Generator().manual_seed(4))).square().sum().backward()
    return [p.grad.clone() for p in model.parameters()]


def test_ddp_bucket_refused_by_the_route_takes_the_groups_all_reduce(world):
    route = seed_route(world, "uneven chunks (test)")
    grads = train_one_step("copy-engine")
    # One rank: the average is the gradient itself.
    assert all(torch.equal(a, b) for a, b in zip(grads, train_one_step(None)))
    numel = sum(g.numel() for g in grads)
    assert {kind for kind, _, _, _ in route.asked} == {"all_reduce"}
    assert sum(count for _, count, _, _ in route.asked) == numel  # the buckets hold every gradient once
    assert {dtype for _, _, dtype, _ in route.asked} == {7}       # ncclFloat32
    assert tt.stats()["ddp_all_reduce"] == {"uneven chunks (test)": len(route.asked)}
    assert tt.stats()["routes"] == {world.group_name: {"calls": 0}}


def test_priority_and_copy_engine_is_registered(world):
    seed_route(world, "refused (test)")
    assert tt.register_ddp_hook(DDP(torch.nn.Linear(2, 2)), "priority+copy-engine") == \
        tandem.parse_policy("priority+copy-engine")


def test_cpu_bucket_never_reaches_the_route(world):
    route = seed_route(world, "")
    grads = train_one_step("copy-engine")
    assert all(torch.equal(a, b) for a, b in zip(grads, train_one_step(None)))
    counts = tt.stats()["ddp_all_reduce"]
    assert list(counts) == ["a cpu tensor"] and counts["a cpu tensor"] == len(route.asked) > 0


def test_hook_divides_before_the_sum_and_returns_the_bucket(world):
    seed_route(world, "refused (test)")
    bucket = torch.tensor([2.0, 4.0, 6.0])
    result = tt.all_reduce_average(tt.CopyEngineHookState(), bucket).wait()
    assert torch.equal(result, torch.tensor([2.0, 4.0, 6.0]))  # divided by 1 rank, summed over 1


def test_dtype_without_nccl_type_is_not_asked(world):
    route = seed_route(world, "")
    bucket = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
    tt.all_reduce_average(tt.CopyEngineHookState(), bucket).wait()
    assert route.asked == []
    assert tt.stats()["ddp_all_reduce"] == {"torch.complex64 has no NCCL type": 1}


def test_fsdp_all_gather_asks_for_the_bytes_and_falls_back(world):
    route = seed_route(world, "refused (test)")
    all_gather = tt.CopyEngineAllGather()
    output = all_gather.allocate((6,), dtype=torch.bfloat16, device=torch.device("cpu"))
    assert output.shape == (6,) and output.dtype == torch.bfloat16
    source = torch.arange(6, dtype=torch.bfloat16)
    assert all_gather(output, source, world) is None
    assert torch.equal(output, source)
    # 6 bf16 = 12 bytes travel as 3 fp32 (ncclFloat32 = 7): an all-gather moves bytes only.
    assert route.asked == [("all_gather", 3, 7, 0)]
    odd = torch.arange(3, dtype=torch.bfloat16)  # 6 bytes: as 3 bf16 (ncclBfloat16 = 9)
    all_gather(torch.empty(3, dtype=torch.bfloat16), odd, world)
    assert route.asked[-1] == ("all_gather", 3, 9, 0)
    assert tt.stats()["fsdp_all_gather"] == {"refused (test)": 2}


def test_fsdp_reduce_scatter_decisions(world):
    route = seed_route(world, "refused (test)")
    reduce_scatter = tt.CopyEngineReduceScatter()
    source = torch.tensor([1.0, 2.0, 3.0, 4.0])
    output = reduce_scatter.allocate((4,), dtype=torch.float32, device=torch.device("cpu"))
    assert reduce_scatter(output, source, world, dist.ReduceOp.AVG) is None
    assert torch.equal(output, source)
    assert route.asked == [("reduce_scatter", 4, 7, 0)]  # an average is the route's sum, then a division
    reduce_scatter(output, source, world, dist.ReduceOp.MAX)
    assert len(route.asked) == 1  # a maximum is never asked: the route only sums
    counts = tt.stats()["fsdp_reduce_scatter"]
    assert counts["refused (test)"] == 1
    assert [reason for reason in counts if reason.startswith("reduction")] != []


def test_close_routes_closes_and_forgets(world):
    route = seed_route(world, "")
    tt.close_routes()
    assert route.closed and tt.stats()["routes"] == {}


class FakeFSDPModule(torch.nn.Module):
    """Records what install_fsdp_collectives sets (FSDP2's fully_shard needs a device mesh)."""

    def __init__(self, *children):
        super().__init__()
        self.inner = torch.nn.ModuleList(children)
        self.all_gather = self.reduce_scatter = None

    def set_custom_all_gather(self, comm):
        self.all_gather = comm

    def set_custom_reduce_scatter(self, comm):
        self.reduce_scatter = comm


def test_fsdp_collectives_installed_on_every_fsdp_module():
    leaf = FakeFSDPModule()
    root = FakeFSDPModule(leaf, torch.nn.Linear(2, 2))
    assert tt.install_fsdp_collectives(root, "copy-engine+priority") == tandem.parse_policy("priority+copy-engine")
    assert isinstance(root.all_gather, tt.CopyEngineAllGather)
    assert isinstance(root.reduce_scatter, tt.CopyEngineReduceScatter)
    assert leaf.all_gather is root.all_gather and leaf.reduce_scatter is root.reduce_scatter


def test_fsdp2_drives_the_collectives_and_they_fall_back(tmp_path):
    """Real FSDP2 (2 ranks, gloo, CPU): its all-gathers and reduce-scatters reach tandem's collectives through
    the protocol (allocate, then the call), and on CPU tensors take gloo's, giving stock losses bitwise."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    worker = Path(__file__).with_name("fsdp_cpu_worker.py")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                    str(worker), str(tmp_path)], check=True, env=env, timeout=300)
    ranks = [json.loads((tmp_path / f"fsdp-cpu{r}.json").read_text()) for r in range(2)]
    for rank in ranks:
        assert rank["tandem"] == rank["stock"]
        assert rank["stock"][0] != rank["stock"][-1]
        stats = rank["stats"]
        # 3 steps x 2 layers: at least one all-gather per layer per pass, one reduce-scatter per layer per step.
        assert stats["fsdp_all_gather"] == {"a cpu tensor": stats["fsdp_all_gather"]["a cpu tensor"]}
        assert stats["fsdp_all_gather"]["a cpu tensor"] >= 6
        assert stats["fsdp_reduce_scatter"] == {"a cpu tensor": 6}
