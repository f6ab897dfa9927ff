"""What tandem.torch's collectives did, counted per site (the hook or collective that made the call:
``ddp_all_reduce``, ``fsdp_all_gather``, a front end's own) by the route each call took, and reported as
a document of tandem's one stats schema (``stats_schema.json`` beside this package, rendered from
src/core/stats_schema.cpp): the records and keys ``tandem run --stats`` writes, so that one reader
(scripts/reach-check.py) sums both front ends.

A call is counted once it ran: a call whose collective raised ran nowhere. Bytes are the larger of a
call's buffers, as ``tandem run --stats`` counts a collective."""
import json
import os
from collections import Counter, defaultdict

# The stats schema, as the C++ library renders it (tests/cpu/test_preload_stats_schema.cpp keeps the file so).
with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "stats_schema.json")) as _f:
    SCHEMA = json.load(_f)
SCHEMA_VERSION = SCHEMA["schema_version"]
FRONT_END = "tandem.torch"
# The route a call took when the copy-engine route ran it; any other route is the reason NCCL ran it.
ROUTED = "copy-engine"

# site -> Counter of calls (and of bytes) by route.
_CALLS = defaultdict(Counter)
_BYTES = defaultdict(Counter)
# The window pools' buffers made and tensors lent (the schema's "window_pool" record).
_WINDOWS = Counter()


def fields(record):
    """The keys of one of the schema's records, in its order."""
    return [f["key"] for f in SCHEMA["records"][record]["fields"]]


def count(site, route, nbytes):
    """Counts one call of ``site`` that ran, under ``route`` (``ROUTED``, or why NCCL ran it), with its bytes."""
    _CALLS[site][route] += 1
    _BYTES[site][route] += nbytes


def count_window(buffers=0, lent=0):
    """Counts window buffers made and tensors lent from them (``WindowPool``)."""
    _WINDOWS["buffers"] += buffers
    _WINDOWS["lent"] += lent


def tensor_bytes(*tensors):
    """A call's bytes as tandem counts them: the larger of its buffers."""
    return max(t.numel() * t.element_size() for t in tensors)


def reset():
    """Clears the counts (not the routes' own counters)."""
    _CALLS.clear()
    _BYTES.clear()
    _WINDOWS.clear()


def _counts(calls, nbytes):
    return {"calls": calls, "bytes": nbytes}


def _collective(site):
    calls, nbytes = _CALLS[site], _BYTES[site]
    # Python's integers do not wrap: a total never saturates here.
    return {"calls": sum(calls.values()), "bytes": sum(nbytes.values()), "bytes_saturated": False,
            "copy_engine": _counts(calls.get(ROUTED, 0), nbytes.get(ROUTED, 0)),
            "nccl": {reason: _counts(n, nbytes[reason]) for reason, n in calls.items() if reason != ROUTED}}


def _reach(collectives):
    routed = sum(c["copy_engine"]["calls"] for c in collectives.values())
    routed_bytes = sum(c["copy_engine"]["bytes"] for c in collectives.values())
    total_calls = sum(c["calls"] for c in collectives.values())
    total_bytes = sum(c["bytes"] for c in collectives.values())
    # tandem.torch counts only the calls of copy-engine policies' hooks and collectives: any is a request.
    return {"requested": total_calls > 0, "calls": routed, "bytes": routed_bytes, "total_calls": total_calls,
            "total_bytes": total_bytes, "bytes_saturated": False,
            "share_of_bytes": routed_bytes / total_bytes if total_bytes else 0.0}


def _route_counters(route):
    """A route's own counters (``route.stats()``) under the schema's "route" keys."""
    own = route.stats()
    return {key: own.get(key, 0) for key in fields("route")}


def document(open_routes):
    """The stats document: the schema's record "document", the keys tandem.torch writes. ``open_routes``: the
    open copy-engine routes by process group name (their counters, and their sum)."""
    collectives = {site: _collective(site) for site in _CALLS}
    routes = {name: _route_counters(route) for name, route in open_routes.items()}
    totals = {"routes": len(routes)}
    for key in fields("route"):
        totals[key] = sum(r[key] for r in routes.values())
    return {"schema_version": SCHEMA_VERSION, "front_end": FRONT_END, "nccl_collectives": collectives,
            "copy_engine_reach": _reach(collectives), "copy_engine_route": totals, "routes": routes,
            "window_pool": {key: _WINDOWS[key] for key in fields("window_pool")}}
