"""tandem.torch.stats() is a document of tandem's one stats schema: the keys, records and version of
python/tandem/stats_schema.json, which tests/cpu/test_preload_stats_schema.cpp keeps equal to the C++ schema
and to the keys of the interposer's --stats document, and which holds the route's counters (the C ABI's
fields). So the interposer, the route and tandem.torch give the same keys. Needs PyTorch with
torch.distributed and gloo (the hooks run on a one-rank group).
"""
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

import tandem  # noqa: E402
import tandem.torch as tt  # noqa: E402
from tandem.torch import counts, routes  # noqa: E402

SCHEMA = json.loads((Path(tandem.__file__).parent / "stats_schema.json").read_text())


def keys(record, writer=None):
    return [f["key"] for f in SCHEMA["records"][record]["fields"] if writer is None or writer in f["written_by"]]


class Route:
    """A route's counters as tandem._cuda.CopyEngineRoute.stats() gives them (tandem/route_counters.h)."""

    def __init__(self, calls):
        self.calls = calls

    def stats(self):
        return {"calls": self.calls, "captured": 1, "staged_bytes": 100 * self.calls, "peer_bytes": 10 * self.calls,
                "peer_copies_unavailable": 1, "pool_bytes": 4096, "buffer_bytes": 1024, "registrations": 2}

    def close(self):
        pass


def test_the_package_reads_the_schema_it_ships():
    assert counts.SCHEMA == SCHEMA
    assert SCHEMA["front_ends"] == ["tandem run", "tandem.torch"]
    assert {"calls", "B", "count", "fraction"} <= set(SCHEMA["units"])
    # The route's counters: the C ABI's fields, in its order, with their units.
    route = SCHEMA["records"]["route"]["fields"]
    assert [(f["key"], f["unit"]) for f in route] == [("calls", "calls"), ("captured", "calls"),
                                                      ("staged_bytes", "B"), ("peer_bytes", "B"),
                                                      ("peer_copies_unavailable", "count"),
                                                      ("pool_bytes", "B"), ("buffer_bytes", "B"),
                                                      ("registrations", "count")]


def test_an_empty_document_has_the_schemas_keys(world):
    document = tt.stats()
    assert list(document) == keys("document", "tandem.torch")
    assert document["schema_version"] == SCHEMA["schema_version"]
    assert document["front_end"] == "tandem.torch"
    assert document["nccl_collectives"] == {} and document["routes"] == {}
    assert list(document["copy_engine_reach"]) == keys("reach")
    assert document["copy_engine_reach"]["requested"] is False
    assert document["copy_engine_reach"]["share_of_bytes"] == 0.0
    assert list(document["copy_engine_route"]) == keys("copy_engine_route")
    assert document["window_pool"] == {"buffers": 0, "lent": 0}


def test_every_record_has_the_schemas_keys_and_the_reach_adds_up(world):
    # A hook's call NCCL ran (a CPU bucket), and calls of a front end's site: two routed, one refused.
    tt.all_reduce_average(tt.CopyEngineHookState(), torch.ones(4))
    counts.count("my_site", counts.ROUTED, 300)
    counts.count("my_site", counts.ROUTED, 100)
    counts.count("my_site", "no-sum-kernel", 50)
    routes.install_route(world, Route(calls=2))
    document = tt.stats()
    for site in ("ddp_all_reduce", "my_site"):
        record = document["nccl_collectives"][site]
        assert list(record) == keys("collective")
        assert list(record["copy_engine"]) == keys("counts")
        assert all(list(c) == keys("counts") for c in record["nccl"].values())
    assert document["nccl_collectives"]["my_site"] == {
        "calls": 3, "bytes": 450, "bytes_saturated": False, "copy_engine": {"calls": 2, "bytes": 400},
        "nccl": {"no-sum-kernel": {"calls": 1, "bytes": 50}}}
    # 2 of 4 calls and 400 of 466 B (the CPU bucket: 4 fp32) took the route.
    assert document["copy_engine_reach"] == {"requested": True, "calls": 2, "bytes": 400, "total_calls": 4,
                                             "total_bytes": 466, "bytes_saturated": False,
                                             "share_of_bytes": 400 / 466}
    # Each open route's counters, and their sum with the number of routes, as the interposer writes it.
    assert document["routes"] == {world.group_name: {"calls": 2, "captured": 1, "staged_bytes": 200,
                                                     "peer_bytes": 20, "peer_copies_unavailable": 1,
                                                     "pool_bytes": 4096, "buffer_bytes": 1024, "registrations": 2}}
    assert list(document["routes"][world.group_name]) == keys("route")
    assert document["copy_engine_route"] == {"routes": 1, "calls": 2, "captured": 1, "staged_bytes": 200,
                                             "peer_bytes": 20, "peer_copies_unavailable": 1, "pool_bytes": 4096,
                                             "buffer_bytes": 1024, "registrations": 2}
    json.dumps(document)  # a document as the interposer's: JSON as it is


def test_reset_clears_the_counts_not_the_routes(world):
    counts.count("my_site", counts.ROUTED, 8)
    counts.count_window(buffers=1, lent=3)
    routes.install_route(world, Route(calls=1))
    assert tt.stats()["window_pool"] == {"buffers": 1, "lent": 3}
    tt.reset_stats()
    document = tt.stats()
    assert document["nccl_collectives"] == {} and document["window_pool"] == {"buffers": 0, "lent": 0}
    assert document["copy_engine_route"]["routes"] == 1
