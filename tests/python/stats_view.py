"""What the tests read of a tandem.torch.stats() document (the stats schema's records): one site's calls and
bytes by route, as {route: n}, the copy-engine route under "copy-engine", each reason NCCL ran calls for under
itself; a route that took nothing is left out. The document's structure is checked apart
(test_torch_stats.py), so that these views stay short."""


def _by_route(document, site, unit):
    record = document["nccl_collectives"][site]
    out = {"copy-engine": record["copy_engine"][unit]} if record["copy_engine"]["calls"] else {}
    out.update({reason: counts[unit] for reason, counts in record["nccl"].items()})
    return out


def calls(document, site):
    """{route: calls} of one site (the hook or collective that made the calls)."""
    return _by_route(document, site, "calls")


def nbytes(document, site):
    """{route: bytes} of one site."""
    return _by_route(document, site, "bytes")
