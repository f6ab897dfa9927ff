"""tandem.torch's public route plumbing (tandem.torch.routes) as a framework's front end uses it, without a GPU:
a front end's own collective written with run_on_route and run_on_nccl - the route's answer decides, every call
is counted under the front end's site by the route it took - and the registry of routes by process group.

The route is a stand-in with tandem._cuda.CopyEngineRoute's interface; a "GPU tensor" is a stand-in with the
attributes the plumbing reads, so that the route's own path runs on CPU up to the route's answer. Needs PyTorch
with torch.distributed and gloo.
"""
import warnings

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

import tandem.torch as tt  # noqa: E402
from stats_view import calls, nbytes  # noqa: E402
from tandem.torch import routes  # noqa: E402

SITE = "my_all_reduce"


def my_all_reduce(tensor, group=None, op=dist.ReduceOp.SUM):
    """A front end's all-reduce, written as the docs show it: the route first, the group's own collective where
    the route refuses the call or the reduction."""
    reduction = routes.route_reduction(op, tensor.dtype)
    reason = f"reduction {op}" if reduction is None else routes.run_on_route(
        SITE, "all_reduce", group, tensor, tensor, tensor.numel(), tensor.dtype, *reduction)
    if reason:
        routes.run_on_nccl(SITE, reason, (tensor,), dist.all_reduce, tensor, op=op, group=group)
    return reason


class Route:
    """tandem._cuda.CopyEngineRoute's interface with a fixed answer to run(); records what it was asked.
    ``peers_unmapped``: it was asked for peer copies where NCCL maps no peer's window."""

    def __init__(self, answer, peers_unmapped=False):
        self.answer, self.asked, self.closed, self.peers_unmapped = answer, [], False, peers_unmapped

    def run(self, kind, send, recv, count, dtype, stream, reduction="sum", scalar=1.0, device_scalar=0, root=0):
        self.asked.append({"kind": kind, "send": send, "recv": recv, "count": count, "dtype": dtype,
                           "stream": stream, "reduction": reduction, "scalar": scalar, "root": root})
        return self.answer

    def stats(self):
        return {"calls": len(self.asked), "captured": 0, "staged_bytes": 8 * len(self.asked), "peer_bytes": 0,
                "peer_copies_unavailable": int(self.peers_unmapped), "pool_bytes": 64, "buffer_bytes": 0, "registrations": 1}

    def close(self):
        self.closed = True


class GpuTensor:
    """What the plumbing reads of a CUDA tensor: 4 fp32 elements at a fixed address."""
    is_cuda = True
    device = torch.device("cuda", 0)
    dtype = torch.float32

    def is_contiguous(self):
        return True

    def numel(self):
        return 4

    def element_size(self):
        return 4

    def data_ptr(self):
        return 0x1000


class Stream:
    cuda_stream = 0x77


def test_a_front_ends_call_the_route_takes_is_counted_as_routed(world, monkeypatch):
    route = routes.install_route(world, Route("copy-engine"))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: Stream())
    tensor = GpuTensor()
    assert my_all_reduce(tensor, world) == ""
    assert route.asked == [{"kind": "all_reduce", "send": 0x1000, "recv": 0x1000, "count": 4, "dtype": 7,
                            "stream": 0x77, "reduction": "sum", "scalar": 1.0, "root": 0}]
    assert calls(tt.stats(), SITE) == {"copy-engine": 1}
    assert nbytes(tt.stats(), SITE) == {"copy-engine": 16}
    # The average is the route's too, with NCCL's name for it.
    my_all_reduce(tensor, world, dist.ReduceOp.AVG)
    assert route.asked[-1]["reduction"] == "average"


@pytest.mark.parametrize("peers_unmapped", [False, True])
def test_peer_copies_asked_for_and_unavailable_are_said_once_per_route(world, monkeypatch, peers_unmapped):
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: Stream())
    tensor = GpuTensor()
    # Every warning recorded, so that "once" is the plumbing's and not Python's once per place.
    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter("always")
        for _ in range(2):
            routes.install_route(world, Route("copy-engine", peers_unmapped))
            for _ in range(3):
                assert my_all_reduce(tensor, world) == ""
            routes.close_routes()  # the next route is a new one: said again
    said = [w for w in recorded if "peer copies asked for" in str(w.message)]
    assert len(said) == (2 if peers_unmapped else 0), [str(w.message) for w in recorded]
    assert all(w.category is RuntimeWarning for w in said)


def test_a_call_the_route_refuses_runs_on_the_groups_collective(world, monkeypatch):
    routes.install_route(world, Route("no-sum-kernel"))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: Stream())
    ran = []
    monkeypatch.setattr(dist, "all_reduce", lambda tensor, op=None, group=None: ran.append((tensor, op, group)))
    tensor = GpuTensor()
    assert my_all_reduce(tensor, world) == "no-sum-kernel"
    assert ran == [(tensor, dist.ReduceOp.SUM, world)]
    assert calls(tt.stats(), SITE) == {"no-sum-kernel": 1}


def test_on_cpu_tensors_the_groups_collective_runs_and_the_values_are_its(world):
    routes.install_route(world, Route("copy-engine"))
    tensor = torch.tensor([1.0, 2.0])
    assert my_all_reduce(tensor, world) == "a cpu tensor"
    assert torch.equal(tensor, torch.tensor([1.0, 2.0]))  # one rank: the sum is itself
    assert my_all_reduce(tensor, world, dist.ReduceOp.MAX) == f"reduction {dist.ReduceOp.MAX}"
    assert calls(tt.stats(), SITE) == {"a cpu tensor": 1, f"reduction {dist.ReduceOp.MAX}": 1}
    assert nbytes(tt.stats(), SITE) == {"a cpu tensor": 8, f"reduction {dist.ReduceOp.MAX}": 8}
    assert routes.open_routes()[world.group_name].asked == []


def test_a_collective_that_raised_is_not_counted(world):
    def broken(*args, **kwargs):
        raise RuntimeError("the group failed (test)")
    with pytest.raises(RuntimeError, match="failed"):
        routes.run_on_nccl(SITE, "a cpu tensor", (torch.ones(2),), broken)
    assert tt.stats()["nccl_collectives"] == {}


def test_a_dtype_without_an_nccl_type_never_reaches_the_route(world):
    route = routes.install_route(world, Route("copy-engine"))
    tensor = torch.ones(2, dtype=torch.complex64)
    assert routes.run_on_route(SITE, "all_reduce", world, tensor, tensor, 2, tensor.dtype) == \
        "torch.complex64 has no NCCL type"
    assert route.asked == []


def test_the_registry_holds_one_route_per_group(world):
    first = routes.install_route(None, Route("copy-engine"))  # None: the default group
    assert routes.open_routes() == {world.group_name: first}
    assert routes.copy_engine_route(world) is first  # made already: not made again
    with pytest.raises(ValueError, match="has a copy-engine route already; close_routes"):
        routes.install_route(world, Route("copy-engine"))
    listed = routes.open_routes()
    listed.clear()  # a copy: the registry keeps its routes
    assert routes.open_routes() == {world.group_name: first}
    # stats() reads every open route's counters, under the schema's keys.
    assert tt.stats()["routes"] == {world.group_name: first.stats()}
    tt.close_routes()
    assert first.closed and routes.open_routes() == {}
    routes.install_route(world, Route("copy-engine"))  # once closed, the group may take another


def test_install_route_before_a_default_group_says_what_to_call():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="no default process group yet"):
        routes.install_route(None, Route("copy-engine"))
