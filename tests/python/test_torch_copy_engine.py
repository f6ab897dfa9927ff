"""tandem.torch's copy-engine paths without a GPU: the dtype table, and the decisions of the DDP hook and the
FSDP2 collectives - every call the route refuses (or that is on CPU tensors) takes the process group's own
collective, counted with its reason. On a one-rank gloo group, so the fallback really runs.

The route is a stand-in with tandem._cuda.CopyEngineRoute's interface (a fixed answer to run()); tandem._cuda
itself needs a GPU (tests/python/test_torch_gpu.py), and CPU tensors never reach a route. Needs PyTorch with
torch.distributed; skipped otherwise.
"""
import contextlib

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import tandem  # noqa: E402
import tandem._core  # noqa: E402
import tandem.torch as tt  # noqa: E402
from stats_view import calls, nbytes  # noqa: E402
from tandem.torch import ddp as ddp_module  # noqa: E402
from tandem.torch import routes  # noqa: E402


class FixedRoute:
    """tandem._cuda.CopyEngineRoute's interface with a fixed answer to run(); records the calls. On CPU tensors
    nothing may reach it."""

    def __init__(self, answer):
        self.answer = answer
        self.asked = []
        self.closed = False

    def run(self, kind, send, recv, count, dtype, stream, reduction="sum", scalar=1.0, device_scalar=0):
        self.asked.append((kind, count, dtype, reduction, scalar))
        return self.answer

    def stats(self):
        return {"calls": 0}

    def close(self):
        self.closed = True

    def window_buffer(self, nbytes):
        raise AssertionError("window memory asked for CPU tensors")


def seed_route(group, answer):
    return routes.install_route(group, FixedRoute(answer))


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


def test_priority_and_copy_engine_is_registered(world):
    seed_route(world, "refused (test)")
    assert tt.register_ddp_hook(DDP(torch.nn.Linear(2, 2)), "priority+copy-engine") == \
        tandem.parse_policy("priority+copy-engine")


class RecordingDDP:
    """What register_ddp_hook hands DDP: the hook's state and the hook."""

    def register_comm_hook(self, state, hook):
        self.state, self.hook = state, hook


class CudaBucket:
    """A GradBucket whose buffer says it is on a CUDA device: enough for the hook to choose its comm stream."""

    class Tensor:
        is_cuda = True
        device = torch.device("cuda", 0)

    def buffer(self):
        return self.Tensor()


class StreamChosen(Exception):
    """Raised where the hook, its comm stream chosen, would first touch the GPU."""


@pytest.mark.parametrize("policy,priority", [("priority+copy-engine", -(1 << 10)), ("copy-engine", 0)])
def test_the_copy_engine_hooks_stream_priority(world, monkeypatch, policy, priority):
    """The decision the GPU test (test_torch_gpu.py) measures: under `priority` the DDP hook's comm stream is asked
    for below every device's range (PyTorch clamps it to the greatest priority: -5 on H100 and H200), without it at
    the default priority 0. Through the whole path: the policy, the hook's state, the hook on a CUDA bucket."""
    asked = []

    class Stream:
        def __init__(self, device=None, priority=0):
            asked.append((device, priority))

        def wait_stream(self, other):
            raise AssertionError("reached without the compute stream")

    def current_stream(device=None):
        raise StreamChosen()

    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    monkeypatch.setattr(ddp_module, "_COMM_STREAMS", {})
    ddp = RecordingDDP()
    tt.register_ddp_hook(ddp, policy)
    assert ddp.state.high_priority is (priority != 0)
    with pytest.raises(StreamChosen):
        ddp.hook(ddp.state, CudaBucket())
    assert asked == [(torch.device("cuda", 0), priority)]
    assert priority == 0 or priority <= -5
    # One stream per device and priority, made once.
    with pytest.raises(StreamChosen):
        ddp.hook(ddp.state, CudaBucket())
    assert len(asked) == 1 and list(ddp_module._COMM_STREAMS) == [(0, priority != 0)]


class CpuBucket:
    def __init__(self, tensor):
        self.tensor = tensor

    def buffer(self):
        return self.tensor


@pytest.mark.parametrize("policy", ["copy-engine", "priority+copy-engine", "priority"])
def test_the_ddp_hook_runs_on_the_group_it_was_given(world, monkeypatch, policy):
    """register_ddp_hook(ddp, policy, process_group=G): every bucket's all-reduce on G, not WORLD (a DDP over a
    subgroup would otherwise wait for ranks outside it), averaged over G's size, with and without copy-engine."""
    group = dist.new_group([0])
    seen = []
    all_reduce = dist.all_reduce

    def recording(tensor, *args, group=None, **kwargs):
        seen.append(group)
        return all_reduce(tensor, *args, group=group, **kwargs)

    monkeypatch.setattr(dist, "all_reduce", recording)
    ddp = RecordingDDP()
    tt.register_ddp_hook(ddp, policy, process_group=group)
    result = ddp.hook(ddp.state, CpuBucket(torch.tensor([2.0, 4.0]))).wait()
    assert seen == [group]
    assert torch.equal(result if isinstance(result, torch.Tensor) else result[0], torch.tensor([2.0, 4.0]))


def test_a_group_given_to_install_fsdp_collectives_wins_over_the_mesh(world):
    """The group passed is the one FSDP2 shards over, whatever the parameters' device mesh says."""

    class Mesh:
        ndim = 2

        def get_group(self, dim):
            return f"mesh dimension {dim}"

    class Module(FakeFSDPModule):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(1))
            self.weight.device_mesh = Mesh()

    given = dist.new_group([0])
    module = Module()
    tt.install_fsdp_collectives(module, "copy-engine", process_group=given)
    assert module.all_gather.process_group is given and module.reduce_scatter.process_group is given
    inferred = Module()
    tt.install_fsdp_collectives(inferred, "copy-engine")
    assert inferred.all_gather.process_group == "mesh dimension 1"


def test_a_reduce_scatter_between_two_dtypes_is_never_handed_to_the_route(world, monkeypatch):
    """The route reduces in one dtype: a call whose output's dtype is not its input's takes the group's own
    reduce-scatter, counted under that reason; one of a single dtype is handed to the route."""
    asked, handed = [], []
    monkeypatch.setattr(routes, "run_on_route", lambda *args, **kwargs: asked.append(args[4].dtype) or "")
    monkeypatch.setattr(dist, "reduce_scatter_tensor",
                        lambda output, source, **kwargs: handed.append((output.dtype, source.dtype)))
    reduce_scatter = tt.CopyEngineReduceScatter()
    reduce_scatter(torch.empty(4), torch.ones(4, dtype=torch.bfloat16), world, dist.ReduceOp.SUM)
    assert asked == [] and handed == [(torch.float32, torch.bfloat16)]
    assert calls(tt.stats(), "fsdp_reduce_scatter") == {"input and output of different dtypes": 1}
    reduce_scatter(torch.empty(4), torch.ones(4), world, dist.ReduceOp.AVG)
    assert asked == [torch.float32] and len(handed) == 1


def test_a_non_contiguous_gpu_tensor_is_never_handed_to_the_route(world, monkeypatch):
    """The route reads and writes whole buffers: a strided view (a transposed parameter) takes the group's own
    collective, said so, and no route is made for it; a contiguous one is handed to the group's route."""

    class GpuTensor:
        is_cuda = True
        device = torch.device("cuda", 0)

        def __init__(self, contiguous):
            self.contiguous = contiguous

        def is_contiguous(self):
            return self.contiguous

    made = []
    monkeypatch.setattr(routes, "copy_engine_route", lambda group=None, **kwargs: made.append(group) or "route")
    strided = GpuTensor(False)
    assert routes.route_for(world, (GpuTensor(True), strided)) == (None, "a non-contiguous tensor")
    assert routes.run_on_route("ddp_broadcast", "broadcast", world, strided, strided, 4, torch.float32) == \
        "a non-contiguous tensor"
    assert made == []
    assert routes.route_for(world, (GpuTensor(True), GpuTensor(True))) == ("route", "")
    assert made == [world]


def test_cpu_bucket_never_reaches_the_route(world):
    route = seed_route(world, "")
    grads = train_one_step("copy-engine")
    assert all(torch.equal(a, b) for a, b in zip(grads, train_one_step(None)))
    counts = calls(tt.stats(), "ddp_all_reduce")
    assert list(counts) == ["a cpu tensor"] and counts["a cpu tensor"] > 0
    # Bytes as `tandem run` counts them: the buckets, one step's fp32 gradients (16x8 + 8 + 8x4 + 4 values).
    assert nbytes(tt.stats(), "ddp_all_reduce") == {"a cpu tensor": 4 * (16 * 8 + 8 + 8 * 4 + 4)}
    assert route.asked == []


@pytest.mark.parametrize("call", [
    lambda: tt.copy_engine_route(), lambda: tt.nccl_comm(),
    lambda: tt.all_reduce_average(tt.CopyEngineHookState(), torch.ones(2)),
    lambda: tt.sync_module_states(torch.nn.Linear(2, 2), "copy-engine"),
], ids=["copy_engine_route", "nccl_comm", "all_reduce_average", "sync_module_states"])
def test_before_init_process_group_the_error_names_it(call):
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match=r"no default process group yet: call tandem\.torch\.init_process_group"
                                           r"\(policy\) \(or torch\.distributed\.init_process_group\) first"):
        call()
    assert "ddp_all_reduce" not in tt.stats()["nccl_collectives"]  # nothing ran, nothing counted


def test_calls_that_raised_are_not_counted(world, monkeypatch):
    seed_route(world, "refused (test)")

    def broken(*args, **kwargs):
        raise RuntimeError("the process group failed (test)")
    for name in ("all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor"):
        monkeypatch.setattr(dist, name, broken)
    attempts = [lambda: tt.all_reduce_average(tt.CopyEngineHookState(), torch.ones(4)),
             lambda: tt.sync_module_states(torch.nn.Linear(2, 2), "copy-engine"),
             lambda: tt.CopyEngineAllGather()(torch.empty(4), torch.ones(4), world),
             lambda: tt.CopyEngineReduceScatter()(torch.empty(4), torch.ones(4), world, dist.ReduceOp.SUM),
             lambda: tt.CopyEngineReduceScatter()(torch.empty(4), torch.ones(4), world, dist.ReduceOp.MAX)]
    for call in attempts:
        with pytest.raises(RuntimeError, match="failed"):
            call()
    assert tt.stats()["nccl_collectives"] == {}
    monkeypatch.undo()
    for call in attempts:  # the same calls, once they run, are counted by reason
        call()
    document = tt.stats()
    assert (calls(document, "ddp_all_reduce"), calls(document, "fsdp_all_gather")) == \
        ({"a cpu tensor": 1}, {"a cpu tensor": 1})
    assert calls(document, "ddp_broadcast") == {"a cpu tensor": 2}  # the weight and the bias
    assert calls(document, "fsdp_reduce_scatter") == {"a cpu tensor": 1, f"reduction {dist.ReduceOp.MAX}": 1}


class RecordingReducer:
    """DDP's reducer, every call passed on; records each bucket rebuild's answer and whether it ran inside the
    allocation context."""

    def __init__(self, reducer, inside):
        self._reducer, self._inside = reducer, inside
        self.rebuilds = []

    def _rebuild_buckets(self):
        rebuilt = self._reducer._rebuild_buckets()
        self.rebuilds.append((rebuilt, bool(self._inside)))
        return rebuilt

    def __getattr__(self, name):
        return getattr(self._reducer, name)


def test_ddps_bucket_rebuild_runs_inside_the_allocation_once(world):
    """rebuild_buckets_in: DDP's one rebuild (the second step's forward) runs inside the allocation context,
    before DDP's own call, which then finds nothing to do; the hook is gone after it."""
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Linear(8, 4))
    ddp = DDP(model, bucket_cap_mb=0.0001)  # a bucket per parameter: the rebuild has buckets to make
    inside = []

    @contextlib.contextmanager
    def allocating():
        inside.append(True)
        try:
            yield
        finally:
            inside.pop()

    reducer = ddp.reducer = RecordingReducer(ddp.reducer, inside)
    handle = ddp_module.rebuild_buckets_in(ddp, allocating)
    assert handle is not None
    x = torch.randn(5, 16, generator=torch.Generator().manual_seed(4))
    for _ in range(3):
        ddp(x).square().sum().backward()
    # Step 1: nothing to rebuild yet (ours and DDP's); step 2: rebuilt inside ours, DDP's finds it done; step 3:
    # DDP's call only.
    assert reducer.rebuilds == [(False, True), (False, False), (True, True), (False, False), (False, False)]
    assert ddp._has_rebuilt_buckets
    assert not ddp._forward_pre_hooks


def test_no_rebuild_hook_where_ddp_never_rebuilds(world):
    ddp = DDP(torch.nn.Linear(2, 2), find_unused_parameters=True)
    assert ddp_module.rebuild_buckets_in(ddp, contextlib.nullcontext) is None
    assert not ddp._forward_pre_hooks


def test_fsdp_reduce_scatter_lends_window_memory_to_inputs_only():
    """FSDP2 asks for a reduce-scatter's input, then for its output (a world size fewer elements), which it
    keeps as the sharded gradient: only inputs are lent window memory."""
    reduce_scatter = tt.CopyEngineReduceScatter()
    asked = [((8192,), 2), ((4096,), 2), ((600,), 2), ((300,), 2), ((300,), 2), ((300,), 2), ((64,), 1),
             ((128,), 4), ((32,), 4), ((32,), 4)]
    lent = [reduce_scatter.lends_window_memory(size, world) for size, world in asked]
    # input, its output; input, its output; a request after an output is an input, and one of the same size
    # after it too (not a world size fewer); one rank lends nothing; input, its output, then an input.
    assert lent == [True, False, True, False, True, True, False, True, False, True]


def test_hook_divides_before_the_sum_and_returns_the_bucket(world):
    seed_route(world, "refused (test)")
    bucket = torch.tensor([2.0, 4.0, 6.0])
    result = tt.all_reduce_average(tt.CopyEngineHookState(), bucket).wait()
    assert torch.equal(result, torch.tensor([2.0, 4.0, 6.0]))  # divided by 1 rank, summed over 1


def test_dtype_without_nccl_type_is_not_asked(world):
    route = seed_route(world, "")
    reduce_scatter = tt.CopyEngineReduceScatter()
    source = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
    output = reduce_scatter.allocate((2,), dtype=torch.complex64, device=torch.device("cpu"))
    reduce_scatter(output, source, world, dist.ReduceOp.SUM)
    assert route.asked == []
    assert calls(tt.stats(), "fsdp_reduce_scatter") == {"torch.complex64 has no NCCL type": 1}
    assert nbytes(tt.stats(), "fsdp_reduce_scatter") == {"torch.complex64 has no NCCL type": 2 * 8}


def test_fsdp_all_gather_on_cpu_falls_back(world):
    route = seed_route(world, "")
    all_gather = tt.CopyEngineAllGather()
    output = all_gather.allocate((6,), dtype=torch.bfloat16, device=torch.device("cpu"))
    assert output.shape == (6,) and output.dtype == torch.bfloat16
    source = torch.arange(6, dtype=torch.bfloat16)
    assert all_gather(output, source, world) is None
    assert torch.equal(output, source)
    assert route.asked == []
    assert calls(tt.stats(), "fsdp_all_gather") == {"a cpu tensor": 1}
    assert nbytes(tt.stats(), "fsdp_all_gather") == {"a cpu tensor": 6 * 2}


def test_fsdp_reduce_scatter_decisions(world):
    route = seed_route(world, "")
    reduce_scatter = tt.CopyEngineReduceScatter()
    source = torch.tensor([1.0, 2.0, 3.0, 4.0])
    output = reduce_scatter.allocate((4,), dtype=torch.float32, device=torch.device("cpu"))
    assert reduce_scatter(output, source, world, dist.ReduceOp.AVG) is None
    assert torch.equal(output, source)
    reduce_scatter(output, source, world, dist.ReduceOp.MAX)
    assert route.asked == []
    counts = calls(tt.stats(), "fsdp_reduce_scatter")
    assert counts["a cpu tensor"] == 1
    assert [reason for reason in counts if reason.startswith("reduction")] != []


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_reductions_the_route_computes(dtype):
    assert routes.route_reduction(dist.ReduceOp.SUM, dtype) == ("sum", 1.0)
    assert routes.route_reduction(dist.ReduceOp.AVG, dtype) == ("average", 1.0)
    for op in (dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT):
        assert routes.route_reduction(op, dtype) is None
    # FSDP2's gradient divide factor: a pre-multiplied sum, its factor rounded to the dtype as NCCL gets it.
    premul = dist._make_nccl_premul_sum(1 / 3)
    name, scalar = routes.route_reduction(premul, dtype)
    assert name == "premul_sum"
    assert scalar == torch.tensor(1 / 3, dtype=dtype).item()
    if dtype != torch.float32:
        assert scalar != 1 / 3


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
        gathers = calls(rank["stats"], "fsdp_all_gather")
        # 3 steps x 2 layers: at least one all-gather per layer per pass, one reduce-scatter per layer per step.
        assert list(gathers) == ["a cpu tensor"] and gathers["a cpu tensor"] >= 6
        assert calls(rank["stats"], "fsdp_reduce_scatter") == {"a cpu tensor": 6}
