#!/usr/bin/env python3
"""Tests scripts/reach-check.py: the rows and their launch command lines, summing the ranks' `tandem run
--stats` files (hand-made fixtures in fixtures/reach/) and tandem.torch's stats with PyTorch's flight
recorder, the results against stock and the tolerance rule, the Markdown table, the time limit and a
failing peer (process groups killed), and a whole run through a fake torchrun. Expected values are
worked out in the comments. Stdlib only; the tests that run examples/reach's programs on the CPU (gloo)
need torch (and jax), and skip without them (TANDEM_TORCH_PYTHON names a Python that has them).

  python3 tests/scripts/test_reach_check.py      (ctest: reach_check)
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch_launch  # noqa: E402
SCRIPT = os.path.join(ROOT, "scripts", "reach-check.py")
FIXTURES = os.path.join(HERE, "fixtures", "reach")
spec = importlib.util.spec_from_file_location("reach_check", SCRIPT)
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead (its parent has not reaped it yet)
        return f.read().split(")")[-1].split()[0] != "Z"


def tandem_torch_document(collectives, route=None):
    """A tandem.torch stats() document (the one schema: python/tandem/stats_schema.json) with these collectives."""
    total_calls = sum(c["calls"] for c in collectives.values())
    total_bytes = sum(c["bytes"] for c in collectives.values())
    routed = sum(c["copy_engine"]["calls"] for c in collectives.values())
    routed_bytes = sum(c["copy_engine"]["bytes"] for c in collectives.values())
    return {"schema_version": rc.STATS_SCHEMA["schema_version"], "front_end": "tandem.torch",
            "nccl_collectives": collectives,
            "copy_engine_reach": {"requested": total_calls > 0, "calls": routed, "bytes": routed_bytes,
                                  "total_calls": total_calls, "total_bytes": total_bytes, "bytes_saturated": False,
                                  "share_of_bytes": routed_bytes / total_bytes if total_bytes else 0.0},
            "copy_engine_route": route or {"routes": 0, "calls": 0, "captured": 0, "staged_bytes": 0,
                                           "pool_bytes": 0, "registrations": 0},
            "routes": {}, "window_pool": {"buffers": 0, "lent": 0}}


class Rows(unittest.TestCase):
    def test_every_row_and_selection(self):
        rows = rc.all_rows([2, 3, 4])
        # 4 Llama programs x 3 front ends + 3 programs x 2 front ends = 18 rows per rank count.
        self.assertEqual(len(rows), 54)
        self.assertEqual(rows[0]["id"], "llama-ddp/2/stock")
        self.assertEqual(len(rc.select_rows(rows, "jax")), 6)
        self.assertEqual([r["id"] for r in rc.select_rows(rows, "llama-ddp/3")],
                         ["llama-ddp/3/stock", "llama-ddp/3/tandem-run", "llama-ddp/3/tandem-torch"])
        self.assertEqual(len(rc.select_rows(rows, "llama-*/*/tandem-torch,overlap/4/stock")), 13)
        self.assertEqual(len(rc.select_rows(rows, "")), 54)
        with self.assertRaises(rc.UserError):
            rc.select_rows(rows, "jax/5")

    def test_launch_command_lines(self):
        cfg = {"tandem_bin": "/t/tandem", "overlap_bin": "/t/overlap", "pythonpath": ["/p"], "torchrun": ["torchrun"],
               "python": "/py", "llama_args": ["--steps", "2"], "jax_args": [], "policy": "copy-engine"}
        [run] = rc.row_launches({"program": "llama-fsdp2", "ranks": 3, "front_end": "tandem-run"}, cfg, "/s", 1)
        # torchrun starts every rank as `tandem run ... -- python`: one stats file per rank process.
        self.assertEqual(run["argv"][:16], ["torchrun", "--standalone", "--nproc-per-node", "3", "--no-python",
                                            "/t/tandem", "run", "--policy", "copy-engine", "--stats",
                                            "/s/stats-%p.json", "--", "/py", os.path.join(ROOT, rc.SHARED_GPU_RANK),
                                            os.path.join(ROOT, "examples/reach/llama_train.py"), "--parallel"])
        self.assertEqual(run["argv"][16:], ["fsdp2", "--steps", "2"])
        self.assertEqual(run["env"]["NCCL_NVLS_ENABLE"], "0")
        [run] = rc.row_launches({"program": "llama-ddp", "ranks": 2, "front_end": "tandem-torch"}, cfg, "/s", 1)
        self.assertEqual(run["argv"][-2:], ["--tandem", "copy-engine"])
        self.assertTrue(run["env"]["PYTHONPATH"].startswith("/p"))
        self.assertNotIn("--no-python", run["argv"])
        runs = rc.row_launches({"program": "jax", "ranks": 2, "front_end": "stock"}, cfg, "/s", 4321)
        self.assertEqual([r["env"]["NCCL_HOSTID"] for r in runs], ["tandem-reach-jax-0", "tandem-reach-jax-1"])
        self.assertEqual(runs[1]["argv"][2:8], ["--coordinator", "127.0.0.1:4321", "--num-processes", "2",
                                                "--process-id", "1"])
        runs = rc.row_launches({"program": "overlap", "ranks": 3, "front_end": "tandem-run"}, cfg, "/s", 4321)
        self.assertEqual(len(runs), 3)
        self.assertEqual(runs[2]["argv"][:7], ["/t/tandem", "run", "--policy", "copy-engine", "--stats",
                                               "/s/stats-%p.json", "--"])
        self.assertEqual(runs[2]["argv"][7], "/t/overlap")
        self.assertEqual({k: runs[2]["env"][k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NCCL_COMM_ID")},
                         {"RANK": "2", "WORLD_SIZE": "3", "LOCAL_RANK": "0", "NCCL_COMM_ID": "127.0.0.1:4321"})


class Aggregation(unittest.TestCase):
    def test_stats_files_are_summed(self):
        docs, bad = rc.read_stats(FIXTURES)
        self.assertEqual(bad, [])
        route = rc.aggregate_stats(docs)
        ar = route["collectives"]["ncclAllReduce"]
        # 10 + 10 calls, 8 + 7 routed (3990 + 3000 B); op-not-supported 2 + 2 calls, 10 + 10 B.
        self.assertEqual((ar["calls"], ar["bytes"]), (20, 8000))
        self.assertEqual(ar["copy_engine"], {"calls": 15, "bytes": 6990})
        self.assertEqual(ar["nccl"], {"op-not-supported": {"calls": 4, "bytes": 20},
                                      "capture-not-ready": {"calls": 1, "bytes": 990}})
        self.assertEqual(route["collectives"]["ncclReduceScatter"]["nccl"],
                         {"route-unavailable": {"calls": 1, "bytes": 600}})
        # Totals: 20 + 4 + 1 = 25 calls, 8000 + 1000 + 600 = 9600 B; routed 15 + 4 = 19 calls, 7990 B.
        self.assertEqual((route["total_calls"], route["total_bytes"], route["calls"], route["bytes"]),
                         (25, 9600, 19, 7990))
        self.assertAlmostEqual(route["share_of_bytes"], 7990 / 9600)
        self.assertEqual((route["processes"], route["captured"], route["requested"]), (2, 3, True))
        # The other controls: 2 + 1 of 4 communicators configured, one overridden by NCCL_MIN_CTAS; 10 + 6 of
        # 18 NCCL launches elevated, 2 excluded.
        self.assertEqual(route["controls"], {
            "communicators": {"created": 4, "configured": 3, "unconfigured": 1, "overridden_by_variables": ["NCCL_MIN_CTAS"]},
            "nccl_launches": 18, "elevated": 16, "not_elevated": {"excluded": 2}})
        # Sends the route never takes: counted apart, outside the share.
        self.assertEqual(route["not_routed"], {"ncclSend": {"calls": 2, "bytes": 64}})
        # The route's cost: 3 MiB over 2 routes and 1 MiB over 1 (the largest per route: 1.5 MiB), and
        # 6000 + 7980 B staged for 7990 B routed.
        self.assertEqual(route["pool_bytes_per_route"], 3 << 19)
        self.assertEqual(route["staged_bytes"], 13980)

    def test_the_cap_is_read_as_the_interposer_reads_it(self):
        self.assertEqual(rc.route_pool_max({}), 256 << 20)
        self.assertEqual(rc.route_pool_max({"TANDEM_ROUTE_POOL_MAX": "64MiB"}), 64 << 20)
        self.assertEqual(rc.route_pool_max({"TANDEM_ROUTE_POOL_MAX": "16K"}), 16 << 10)
        self.assertEqual(rc.route_pool_max({"TANDEM_ROUTE_POOL_MAX": "0"}), 0)
        self.assertEqual(rc.route_pool_max({"TANDEM_ROUTE_POOL_MAX": "lots"}), 256 << 20)
        # Peer copies: off unless TANDEM_ROUTE_PEER_COPIES is 1.
        self.assertFalse(rc.route_peer_copies({}))
        self.assertTrue(rc.route_peer_copies({"TANDEM_ROUTE_PEER_COPIES": "1"}))
        self.assertFalse(rc.route_peer_copies({"TANDEM_ROUTE_PEER_COPIES": "0"}))

    def test_bytes_within_one_rank_do_not_judge_the_route(self):
        # A one-rank communicator's collective (a parallel group of size 1) is NCCL's local copy.
        docs, _ = rc.read_stats(FIXTURES)
        docs[0]["nccl_collectives"]["ncclAllReduce"]["nccl"]["single-rank"] = {"calls": 5, "bytes": 90400}
        docs[0]["nccl_collectives"]["ncclAllReduce"]["calls"] += 5
        docs[0]["nccl_collectives"]["ncclAllReduce"]["bytes"] += 90400
        route = rc.aggregate_stats(docs)
        self.assertEqual(rc.single_rank_bytes(route), 90400)
        self.assertAlmostEqual(route["share_of_bytes"], 7990 / 100000)
        self.assertAlmostEqual(rc.share_between_ranks(route), 7990 / 9600)
        self.assertEqual(rc.share_text(route), "7.99 % (83.23 % of the bytes between ranks)")
        self.assertAlmostEqual(rc.judged_share(route), 7990 / 9600)

    def test_no_stats_no_share(self):
        route = rc.aggregate_stats([])
        self.assertIsNone(route["share_of_bytes"])
        self.assertEqual(rc.share_text(route), "—")

    def test_tandem_torch_with_the_flight_recorder(self):
        # Per rank: 4 buckets routed (400 B), 1 refused (a cpu tensor, 8 B), which the process group also
        # recorded as an all_reduce; plus DDP's own broadcast and a loss all-reduce.
        rank = {"tandem_torch": tandem_torch_document(
                    {"ddp_all_reduce": {"calls": 5, "bytes": 408, "bytes_saturated": False,
                                        "copy_engine": {"calls": 4, "bytes": 400},
                                        "nccl": {"a cpu tensor": {"calls": 1, "bytes": 8}}}},
                    route={"routes": 1, "calls": 4, "captured": 0, "staged_bytes": 800, "pool_bytes": 4096,
                           "registrations": 1}),
                "process_group": {"all_reduce": {"calls": 2, "bytes": 12}, "broadcast": {"calls": 1, "bytes": 100}}}
        route = rc.aggregate_tandem_torch([rank, json.loads(json.dumps(rank))])
        ddp = route["collectives"]["ddp_all_reduce"]
        self.assertEqual((ddp["calls"], ddp["bytes"], ddp["copy_engine"]), (10, 816, {"calls": 8, "bytes": 800}))
        self.assertEqual(ddp["nccl"], {"a cpu tensor": {"calls": 2, "bytes": 16}})
        # The refused bucket is counted once: the process group's all_reduce keeps 2 - 1 calls, 12 - 8 B a rank.
        self.assertEqual(route["collectives"]["process-group all_reduce"]["nccl"],
                         {"process-group": {"calls": 2, "bytes": 8}})
        self.assertEqual(route["collectives"]["process-group broadcast"]["bytes"], 200)
        # Total 816 + 8 + 200 = 1024 B, 800 through the route.
        self.assertEqual((route["total_bytes"], route["bytes"]), (1024, 800))
        self.assertAlmostEqual(route["share_of_bytes"], 800 / 1024)
        # The route's cost, read as the interposer's: 4 KiB a route, 800 B staged a rank.
        self.assertEqual((route["pool_bytes_per_route"], route["staged_bytes"], route["processes"]), (4096, 1600, 2))
        # A tandem.torch document without buffer_bytes (from before the route counted them apart): what it lent
        # is not known, so neither is its pool alone.
        self.assertEqual((route["lent_bytes_per_route"], rc.pool_includes_lent(route, "tandem-torch")), (None, True))
        self.assertEqual(rc.route_cost_cells(route, "tandem-torch"), ["4.0 KiB (pool and lent buffers)", "2.00"])

    def test_window_buffers_lent_to_the_program_are_not_the_pool(self):
        # A route that lent 3 MiB of window buffers (FSDP2's all-gather outputs, DDP's buckets) beside a 1 MiB
        # staging pool: the pool is 1 MiB, held against the cap; the lent memory is shown beside it.
        rank = {"tandem_torch": tandem_torch_document(
                    {"ddp_all_reduce": {"calls": 2, "bytes": 200, "bytes_saturated": False,
                                        "copy_engine": {"calls": 2, "bytes": 200}, "nccl": {}}},
                    route={"routes": 1, "calls": 2, "captured": 0, "staged_bytes": 0, "pool_bytes": 4 << 20,
                           "buffer_bytes": 3 << 20, "registrations": 3}),
                "process_group": {}}
        route = rc.aggregate_tandem_torch([rank])
        self.assertEqual((route["pool_bytes_per_route"], route["lent_bytes_per_route"]), (1 << 20, 3 << 20))
        self.assertFalse(rc.pool_includes_lent(route, "tandem-torch"))
        self.assertEqual(rc.route_cost_cells(route, "tandem-torch"), ["1.0 MiB (+ 3.0 MiB lent)", "0.00"])

    def test_both_front_ends_documents_are_read_by_one_reader(self):
        # The same counts in a `tandem run` file and a tandem.torch document give the same route record (but for
        # its source): one schema, one reader.
        collectives = {"ncclAllReduce": {"calls": 3, "bytes": 30, "bytes_saturated": False,
                                         "copy_engine": {"calls": 2, "bytes": 20},
                                         "nccl": {"no-sum-kernel": {"calls": 1, "bytes": 10}}}}
        run = rc.aggregate_stats([dict(tandem_torch_document(collectives), front_end="tandem run")])
        torch = rc.aggregate_tandem_torch([{"tandem_torch": tandem_torch_document(collectives)}])
        for key in ("collectives", "calls", "bytes", "total_calls", "total_bytes", "share_of_bytes", "requested"):
            self.assertEqual(run[key], torch[key], key)

    def test_a_document_of_another_schema_is_unreadable(self):
        with tempfile.TemporaryDirectory() as d:
            for pid, version in ((1, 2), (2, 1), (3, None)):
                doc = {"pid": pid, "nccl_collectives": {}}
                if version is not None:
                    doc["schema_version"] = version
                with open(os.path.join(d, f"stats-{pid}.json"), "w") as f:
                    json.dump(doc, f)
            docs, bad = rc.read_stats(d)
        self.assertEqual([doc["pid"] for doc in docs], [1])
        self.assertEqual(bad, ["stats-2.json: schema_version 1, this reach-check reads 2",
                               "stats-3.json: schema_version missing, this reach-check reads 2"])
        old = {"tandem_torch": {"ddp_all_reduce": {"copy-engine": 4}}}  # tandem.torch's stats() before the schema
        route = rc.aggregate_tandem_torch([old])
        self.assertEqual(route["unreadable"], ["rank 0: schema_version missing, this reach-check reads 2"])
        self.assertEqual(route["total_calls"], 0)

    def test_every_key_read_is_the_schemas(self):
        schema = rc.STATS_SCHEMA
        for record, keys in rc.STATS_READS.items():
            known = {f["key"] for f in schema["records"][record]["fields"]}
            self.assertEqual(set(keys) - known, set(), record)
        # The records the reads name are the ones the document's fields hold.
        holders = {f["record"] for f in schema["records"]["document"]["fields"] if "record" in f}
        self.assertEqual(set(rc.STATS_READS) - {"document", "counts"} - holders, set())

    def test_unseen_operations_and_functions(self):
        # Broadcasts are hooked (and routed), reduces, sends, gathers and scatters hooked (counted, never
        # routed); an operation the list does not know is reported.
        self.assertEqual(rc.unhooked({"all_reduce": {"calls": 1, "bytes": 4}, "broadcast": {"calls": 2, "bytes": 8},
                                      "reduce": {"calls": 3, "bytes": 12}, "send": {"calls": 1, "bytes": 4},
                                      "gather": {"calls": 3, "bytes": 12}, "scatter": {"calls": 1, "bytes": 4},
                                      "allreduce_coalesced": {"calls": 1, "bytes": 4},
                                      "coalesced": {"calls": 8, "bytes": 0}, "future_op": {"calls": 1, "bytes": 4}}),
                         {"future_op": {"calls": 1, "bytes": 4}})
        route = rc.aggregate_stats(rc.read_stats(FIXTURES)[0])
        issued = rc.issued_totals([{"ncclAllReduce": {"calls": 10, "bytes": 1}, "ncclAlltoAll": {"calls": 3, "bytes": 9}},
                                   {"ncclAllReduce": {"calls": 10, "bytes": 1}}])
        self.assertEqual(rc.unseen_by_stats(issued, route), {"ncclAlltoAll": {"calls": 3}})
        # Sends are compared with the counts of the functions no route takes (2 in the fixture).
        self.assertEqual(rc.unseen_by_stats({"ncclSend": {"calls": 2, "bytes": 64}}, route), {})
        # A recorded row is judged by today's list: its process group's batch_isend_irecv blocks are seen.
        recorded = {"process_group": {"coalesced": {"calls": 8, "bytes": 0}, "future_op": {"calls": 1, "bytes": 4}},
                    "unseen": {"operations": {"coalesced": {"calls": 8, "bytes": 0}}, "functions": {}}}
        self.assertEqual(rc.unseen_text(recorded), "future_op 1 / 4 B")
        self.assertEqual(rc.unseen_by_stats({"ncclSend": {"calls": 5, "bytes": 64}}, route), {"ncclSend": {"calls": 3}})


class AgainstStock(unittest.TestCase):
    def test_tolerance_rule(self):
        self.assertFalse(rc.tolerance_applies(2))  # two ranks: one rounded addition, either order
        self.assertTrue(rc.tolerance_applies(3))
        self.assertTrue(rc.tolerance_applies(4))
        self.assertIn("2^-8", rc.TOLERANCE_RULE)

    def test_losses(self):
        ref = {"losses": [10.0, 9.0, 8.0]}
        self.assertEqual(rc.compare_results({"losses": [10.0, 9.0, 8.0]}, ref, 2), "bitwise")
        near = {"losses": [10.0, 9.0 + 9.0 / 256, 8.0]}  # exactly 2^-8 of the reference away
        self.assertEqual(rc.compare_results(near, ref, 3), "within tolerance")
        self.assertEqual(rc.compare_results(near, ref, 2), "differs")  # at 2 ranks only bitwise passes
        self.assertEqual(rc.compare_results({"losses": [10.0, 9.04, 8.0]}, ref, 4), "differs")  # 0.04 > 9/256
        self.assertEqual(rc.compare_results({"losses": [10.0, 9.0]}, ref, 2), "differs")
        self.assertEqual(rc.compare_results({"losses": [10.0]}, None, 2), "no reference")

    def test_checks(self):
        def checks(digest, wrong=0):
            return {"checks": {"a": {"wrong": wrong, "elements": 4, "max_error": 0.0, "digests": [digest, "x"]}}}
        self.assertEqual(rc.compare_results(checks("d"), checks("d"), 2), "bitwise")
        self.assertEqual(rc.compare_results(checks("e"), checks("d"), 3), "within tolerance")
        self.assertEqual(rc.compare_results(checks("e"), checks("d"), 2), "differs")
        self.assertEqual(rc.compare_results(checks("d", wrong=5), checks("d"), 3), "wrong: 5 elements")
        self.assertEqual(rc.compare_results(checks("d", wrong=1), None, 3), "wrong: 1 elements")
        # Not the same checks as stock's (one missing, or another one): the results cannot be stock's.
        other = {"checks": {"b": checks("d")["checks"]["a"]}}
        self.assertEqual(rc.compare_results(other, checks("d"), 3), "differs")
        both = {"checks": dict(checks("d")["checks"], b=other["checks"]["b"])}
        self.assertEqual(rc.compare_results(both, checks("d"), 2), "differs")
        self.assertEqual(rc.compare_results(checks("d"), both, 2), "differs")

    def test_verdicts(self):
        rows = [{"id": "p/3/stock", "program": "jax", "ranks": 3, "front_end": "stock", "ok": True,
                 "results": {"checks": {"a": {"wrong": 0, "digests": ["d"]}}}, "exit_codes": [0]},
                {"id": "p/3/tandem-run", "program": "jax", "ranks": 3, "front_end": "tandem-run", "ok": True,
                 "results": {"checks": {"a": {"wrong": 0, "digests": ["e"]}}}, "exit_codes": [0]},
                {"id": "p/2/tandem-run", "program": "jax", "ranks": 2, "front_end": "tandem-run", "ok": False,
                 "results": {}, "exit_codes": [0, 124]}]
        self.assertEqual([r["vs_stock"] for r in rc.verdicts(rows)],
                         ["reference", "within tolerance", "FAILED (exit 124)"])

    def test_a_failed_stock_row_is_no_reference(self):
        # Stock failed at 2 ranks (a peer timed out after its checks were written): the tandem-run row is not
        # judged against what that run left, whether it matches or not.
        def row(front_end, ok, digest, codes):
            return {"id": f"jax/2/{front_end}", "program": "jax", "ranks": 2, "front_end": front_end, "ok": ok,
                    "results": {"checks": {"a": {"wrong": 0, "digests": [digest]}}}, "exit_codes": codes}
        rows = rc.verdicts([row("stock", False, "d", [0, 124]), row("tandem-run", True, "d", [0, 0])])
        self.assertEqual([r["vs_stock"] for r in rows], ["FAILED (exit 124)", "no reference"])


class Table(unittest.TestCase):
    def test_markdown(self):
        route = rc.aggregate_stats(rc.read_stats(FIXTURES)[0])
        record = {"kind": "reach-check", "gpus": ["NVIDIA H200, 580.1"], "versions": {"torch": "2.11", "nccl": "2.28.9"},
                  "commit": "abc123", "clean_tree": True, "date": "2026-12-01T10:00:00Z", "config": {"policy": "copy-engine"},
                  "rows": [
                      {"id": "jax/2/stock", "program": "jax", "ranks": 2, "front_end": "stock", "ok": True,
                       "results": {"checks": {"a": {"wrong": 0, "digests": ["d"]}}}, "exit_codes": [0, 0],
                       "issued": {"ncclAllReduce": {"calls": 6, "bytes": 3 << 20}}, "process_group": None,
                       "unseen": {"operations": {}, "functions": None}, "seconds": 9.4},
                      {"id": "jax/2/tandem-run", "program": "jax", "ranks": 2, "front_end": "tandem-run", "ok": True,
                       "results": {"checks": {"a": {"wrong": 0, "digests": ["d"]}}}, "exit_codes": [0, 0],
                       "route": route, "process_group": {"future_op": {"calls": 2, "bytes": 2048}},
                       "unseen": {"operations": {"future_op": {"calls": 2, "bytes": 2048}},
                                  "functions": {"ncclAlltoAll": {"calls": 3}}}, "seconds": 12.0}]}
        text = rc.markdown_table(record)
        self.assertIn("NVIDIA H200, 580.1; nccl 2.28.9, torch 2.11; tandem abc123; 2026-12-01; policy copy-engine", text)
        # No flight recorder in JAX and no stats in a stock row: what it does not see is not known.
        self.assertIn("| jax | 2 | stock | 6 / 3.0 MiB | — | — | — (not asked) | — | — | — | reference | 9 |", text)
        # 25 calls, 9600 B = 9.4 KiB; 19 routed, 7990 B = 7.8 KiB; 83.23 %.
        self.assertIn("| jax | 2 | tandem-run | 25 / 9.4 KiB | 19 / 7.8 KiB | 83.23 % | op-not-supported 4 / 20 B "
                      "(ncclAllReduce); capture-not-ready 1 / 990 B (ncclAllReduce); route-unavailable 1 / 600 B "
                      "(ncclReduceScatter); never routed 2 / 64 B (ncclSend) | future_op 2 / 2.0 KiB; ncclAlltoAll 3 calls not counted | "
                      "1.5 MiB | 1.75 | bitwise | 12 |",
                      text)
        self.assertIn("Rows below 99 % of the bytes between ranks through the route: jax/2/tandem-run.", text)
        # No cap recorded (a record from before it was): nothing said about it; with one, each row against it.
        self.assertNotIn("more window memory than its cap", text)
        record["config"]["route_pool_max_bytes"] = 1 << 20
        self.assertIn("Rows whose route held more window memory than its cap (1.0 MiB per communicator): "
                      "jax/2/tandem-run.", rc.markdown_table(record))
        record["config"]["route_pool_max_bytes"] = 256 << 20
        self.assertIn("than its cap (256.0 MiB per communicator): none.", rc.markdown_table(record))
        del record["config"]["route_pool_max_bytes"]
        # The route alone: no table of the other controls.
        self.assertNotIn("other controls", text)
        record["config"]["policy"] = "priority+nccl-ctas:..4+copy-engine"
        text = rc.markdown_table(record)
        self.assertIn("The policy's other controls", text)
        self.assertIn("| jax | 2 | 3 / 4 | NCCL_MIN_CTAS | 16 / 18 | excluded: 2 |", text)
        # A control the policy does not name is not reported as reaching nothing.
        record["config"]["policy"] = "priority+copy-engine"
        self.assertIn("| jax | 2 | — (no nccl-* token) / 4 | NCCL_MIN_CTAS | 16 / 18 | excluded: 2 |",
                      rc.markdown_table(record))

    def test_parts_of_one_coverage_make_one_table(self):
        def part(commit, ids, policy="copy-engine"):
            rows = []
            for rid in ids:
                program, ranks, front_end = rid.split("/")
                rows.append({"id": rid, "program": program, "ranks": int(ranks), "front_end": front_end, "ok": True,
                             "results": {"checks": {"a": {"wrong": 0, "digests": ["d"]}}}, "exit_codes": [0],
                             "issued": {"ncclAllReduce": {"calls": 1, "bytes": 8}}, "seconds": 1.0})
            return {"kind": "reach-check", "tandem": f"tandem 0.1.0 ({commit})", "commit": commit,
                    "clean_tree": False, "config": {"policy": policy}, "rows": rows}
        first = part("aaa", ["jax/3/stock", "jax/3/tandem-run"])
        second = part("bbb", ["jax/2/stock", "jax/2/tandem-run"])
        merged = rc.merge_records([first, second], ["1.json", "2.json"])
        # The fixed order (ranks 2 before 3), each row judged against its own run's stock row.
        self.assertEqual([r["id"] for r in merged["rows"]],
                         ["jax/2/stock", "jax/2/tandem-run", "jax/3/stock", "jax/3/tandem-run"])
        self.assertEqual([r["vs_stock"] for r in merged["rows"]], ["reference", "bitwise"] * 2)
        self.assertEqual(merged["commit"], "aaa, bbb")
        # Binaries with a clean version stamp run in a checkout that is not theirs: not "modified".
        text = rc.markdown_table(merged, judged=True)
        self.assertIn("tandem aaa, bbb; ", text)
        self.assertNotIn("modified tree", text)
        self.assertIn("modified tree", rc.markdown_table(part("ccc-dirty", ["jax/2/stock"])))
        with self.assertRaisesRegex(rc.UserError, "row jax/2/stock is in both '2.json' and '3.json'"):
            rc.merge_records([first, second, second], ["1.json", "2.json", "3.json"])
        with self.assertRaisesRegex(rc.UserError, "different policies"):
            rc.merge_records([first, part("ddd", ["jax/4/stock"], "priority+copy-engine")], ["1.json", "4.json"])

    def test_a_part_without_a_stock_row_of_its_own(self):
        # Part 1 holds the stock rows (digest "d"); part 2 the tandem-run and tandem-torch rows of llama-ddp/2 and
        # a row of jax/2 whose results differ ("e"), with no stock row of its own; part 3 jax/3, stock included.
        # A row is judged against its own run's stock row only (another run may come from other binaries):
        # part 2's rows have no reference, and their verdicts are neither "bitwise" nor "differs" against part 1's.
        def part(commit, rows):
            return {"kind": "reach-check", "tandem": f"tandem 0.1.0 ({commit})", "commit": commit,
                    "config": {"policy": "copy-engine"},
                    "rows": [{"id": rid, "program": rid.split("/")[0], "ranks": int(rid.split("/")[1]),
                              "front_end": rid.split("/")[2], "ok": True, "exit_codes": [0], "seconds": 1.0,
                              "results": {"checks": {"a": {"wrong": 0, "digests": [digest]}}},
                              "issued": {"ncclAllReduce": {"calls": 1, "bytes": 8}}} for rid, digest in rows]}
        first = part("aaa", [("llama-ddp/2/stock", "d"), ("jax/2/stock", "d")])
        second = part("bbb", [("llama-ddp/2/tandem-run", "d"), ("llama-ddp/2/tandem-torch", "d"),
                              ("jax/2/tandem-run", "e")])
        third = part("ccc", [("jax/3/stock", "d"), ("jax/3/tandem-run", "d")])
        for order in ([first, second, third], [second, third, first]):
            merged = rc.merge_records(order, ["%d.json" % i for i in range(3)])
            verdicts = {r["id"]: r["vs_stock"] for r in merged["rows"]}
            self.assertEqual(verdicts, {"llama-ddp/2/stock": "reference", "llama-ddp/2/tandem-run": "no reference",
                                        "llama-ddp/2/tandem-torch": "no reference", "jax/2/stock": "reference",
                                        "jax/2/tandem-run": "no reference", "jax/3/stock": "reference",
                                        "jax/3/tandem-run": "bitwise"})
            # One table, in the fixed order whatever the parts' order, every row of every part in it once.
            self.assertEqual([r["id"] for r in merged["rows"]],
                             ["llama-ddp/2/stock", "llama-ddp/2/tandem-run", "llama-ddp/2/tandem-torch",
                              "jax/2/stock", "jax/2/tandem-run", "jax/3/stock", "jax/3/tandem-run"])
            text = rc.markdown_table(merged, judged=True)
            self.assertIn("| jax | 2 | tandem-run | 1 / 8 B | — | — | — (not asked) | — | — | — | no reference | 1 |", text)
            self.assertEqual(text.count("| reference |"), 3)
        # Through the command line, as a user prints it.
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, record in enumerate((first, second, third)):
                paths.append(os.path.join(d, "part%d.json" % i))
                with open(paths[-1], "w") as f:
                    json.dump(dict(record, gpus=["NVIDIA H200"], date="2026-12-02"), f)
            p = subprocess.run([sys.executable, SCRIPT, "--table"] + paths, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("| llama-ddp | 2 | tandem-torch |", p.stdout)
        self.assertEqual(p.stdout.count("no reference"), 3)
        self.assertIn("tandem aaa, bbb, ccc; ", p.stdout)

    def test_table_of_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump({"kind": "pytorch-compare"}, f)
            p = subprocess.run([sys.executable, SCRIPT, "--table", path], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not a reach-check record", p.stderr)


class TimeLimits(unittest.TestCase):
    def test_a_hanging_row_is_killed_with_its_children(self):
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "child.pid")
            # The process starts a grandchild that would outlive it, then hangs.
            hang = [sys.executable, "-c", "import subprocess, sys, time; "
                    f"c = subprocess.Popen(['sleep', '300']); open({pidfile!r}, 'w').write(str(c.pid)); time.sleep(300)"]
            start = time.monotonic()
            out = rc.run_processes([{"argv": hang, "env": {}}], timeout=2, logs=d)
            took = time.monotonic() - start
            with open(pidfile) as f:
                grandchild = int(f.read())
        self.assertEqual(out[0][0], 124)
        self.assertIn("timed out after 2 s", out[0][1])
        self.assertLess(took, 20)
        for _ in range(50):
            if not process_alive(grandchild):
                break
            time.sleep(0.1)
        else:
            self.fail(f"the hung process's child {grandchild} is still running")

    def test_a_failed_peer_ends_the_row(self):
        with tempfile.TemporaryDirectory() as d:
            fails = {"argv": [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], "env": {}}
            waits = {"argv": [sys.executable, "-c", "import time; time.sleep(300)"], "env": {}}
            start = time.monotonic()
            out = rc.run_processes([fails, waits], timeout=120, logs=d, grace=1)
        self.assertEqual([code for code, _ in out], [3, 137])
        self.assertIn("boom", out[0][1])
        self.assertIn("after another process of the row failed", out[1][1])
        self.assertLess(time.monotonic() - start, 30)

    def test_a_missing_program_is_127(self):
        with tempfile.TemporaryDirectory() as d:
            out = rc.run_processes([{"argv": [os.path.join(d, "none")], "env": {}}], timeout=5, logs=d)
        self.assertEqual(out[0][0], 127)
        self.assertIn("cannot start", out[0][1])


FAKE_TORCHRUN = """#!{python}
# Stands in for torchrun and the rank processes: with --no-python (the tandem-run rows) it writes one
# `tandem run --stats` file per rank where --stats says; rank 0's TANDEM_RESULT line follows. At 3 ranks
# the tandem-run rows' digest differs from stock's (a sum in another order), within its bound.
import json, os, sys, time
args = sys.argv[1:]
if os.environ.get("FAKE_HANG_PIDFILE"):
    with open(os.environ["FAKE_HANG_PIDFILE"], "a") as f:
        f.write("%d\\n" % os.getpid())
    time.sleep(300)
n = int(args[args.index("--nproc-per-node") + 1])
routed = "--no-python" in args
if os.environ.get("FAKE_NOTHING"):  # a program that issues no collective and checks nothing
    print("TANDEM_RESULT " + json.dumps({{"program": "torch_collectives", "ok": True, "checks": {{}},
                                         "ranks": [{{"process_group": {{}}, "issued": {{}}}}] * n}}))
    sys.exit(0)
if routed:
    stats = args[args.index("--stats") + 1]
    base = int(os.environ.get("FAKE_PID_BASE", "7000"))
    for r in range(n):
        with open(stats.replace("%p", str(base + r)), "w") as f:
            json.dump({{"schema_version": 2, "front_end": "tandem run", "pid": base + r, "nccl_collectives": {{"ncclAllReduce": {{
                "calls": 3, "bytes": 96, "copy_engine": {{"calls": 3, "bytes": 96}}, "nccl": {{}}}}}},
                "copy_engine_reach": {{"requested": True, "calls": 3, "bytes": 96, "total_bytes": 96}}}}, f)
digest = "other" if routed and n == 3 else "same"
rank = {{"process_group": {{"all_reduce": {{"calls": 3, "bytes": 96}}, "future_op": {{"calls": 1, "bytes": 64}}}},
        "issued": {{"ncclAllReduce": {{"calls": 3, "bytes": 96}}, "ncclAlltoAll": {{"calls": 2, "bytes": 8}}}}}}
result = {{"program": "torch_collectives", "ok": True, "ranks": [rank] * n,
          "checks": {{"sum": {{"wrong": 0, "elements": 8, "max_error": 0.0, "digests": [digest] * n}}}}}}
print("some rank's output")
print("TANDEM_RESULT " + json.dumps(result))
"""


class WholeRun(unittest.TestCase):
    def test_a_work_dir_used_again_counts_only_this_runs_files(self):
        # Two runs into one --work-dir, the ranks' stats files named by other pids the second time (as real
        # processes' are): the second run's counts are its own, not the sum of both runs'.
        with tempfile.TemporaryDirectory() as d:
            fake = torch_launch.fake_program(d, FAKE_TORCHRUN)
            routes = []
            for base in ("7000", "8000"):
                out = os.path.join(d, f"reach-{base}.json")
                p = subprocess.run([sys.executable, SCRIPT, "--only", "torch-collectives/2/tandem-run,torch-collectives/2/stock",
                                    "--ranks", "2", "--torchrun", fake, "--python", sys.executable, "--work-dir",
                                    os.path.join(d, "work"), "--out", out], capture_output=True, text=True, timeout=120,
                                   env={**os.environ, "FAKE_PID_BASE": base})
                self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
                with open(out) as f:
                    [row] = [r for r in json.load(f)["rows"] if r["front_end"] == "tandem-run"]
                routes.append((row["route"]["total_calls"], row["route"]["processes"]))
        self.assertEqual(routes, [(6, 2), (6, 2)])

    def test_rows_through_a_fake_torchrun(self):
        with tempfile.TemporaryDirectory() as d:
            fake = torch_launch.fake_program(d, FAKE_TORCHRUN)
            out = os.path.join(d, "reach.json")
            p = subprocess.run([sys.executable, SCRIPT, "--only", "torch-collectives", "--ranks", "2,3", "--jobs", "2",
                                "--torchrun", fake, "--python", sys.executable, "--work-dir", os.path.join(d, "work"),
                                "--out", out], capture_output=True, text=True, timeout=120)
            with open(out) as f:
                record = json.load(f)
            table = subprocess.run([sys.executable, SCRIPT, "--table", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        self.assertTrue(p.stdout.rstrip().endswith("# OK: 4 rows, 0 failed or wrong"), p.stdout)
        self.assertEqual((record["kind"], record["complete"]), ("reach-check", True))
        self.assertEqual([r["id"] for r in record["rows"]],
                         ["torch-collectives/2/stock", "torch-collectives/2/tandem-run",
                          "torch-collectives/3/stock", "torch-collectives/3/tandem-run"])
        rows = {r["id"]: r for r in record["rows"]}
        routed = rows["torch-collectives/3/tandem-run"]
        self.assertEqual((routed["route"]["processes"], routed["route"]["total_calls"], routed["route"]["share_of_bytes"]),
                         (3, 9, 1.0))
        self.assertEqual(routed["vs_stock"], "within tolerance")
        self.assertEqual(rows["torch-collectives/2/tandem-run"]["vs_stock"], "bitwise")
        # What the interposer cannot see: an operation the list does not know (flight recorder), the
        # all-to-alls the ranks issued.
        self.assertEqual(routed["unseen"], {"operations": {"future_op": {"calls": 3, "bytes": 192}},
                                            "functions": {"ncclAlltoAll": {"calls": 6}}})
        self.assertEqual(rows["torch-collectives/2/stock"]["process_group"]["all_reduce"], {"calls": 6, "bytes": 192})
        self.assertIn("| torch-collectives | 3 | tandem-run | 9 / 288 B | 9 / 288 B | 100.00 % | none | "
                      "future_op 3 / 192 B; ncclAlltoAll 6 calls not counted | — | 0.00 | within tolerance |", table.stdout)
        self.assertIn("| torch-collectives | 2 | stock | 8 / 320 B | — | — | — (not asked) | future_op 2 / 128 B | — | — | "
                      "reference |", table.stdout)
        self.assertIn("policy", record["config"])
        self.assertEqual(record["config"]["tolerance_rule"], rc.TOLERANCE_RULE)
        # The cap the routes ran under (TANDEM_ROUTE_POOL_MAX unset: the default), and each row against it.
        self.assertEqual(record["config"]["route_pool_max_bytes"], 256 << 20)
        self.assertEqual(record["config"]["route_peer_copies"], os.environ.get("TANDEM_ROUTE_PEER_COPIES") == "1")
        self.assertIn("than its cap (256.0 MiB per communicator): none.", table.stdout)

    def test_a_row_with_nothing_to_measure_does_not_pass(self):
        with tempfile.TemporaryDirectory() as d:
            fake = torch_launch.fake_program(d, FAKE_TORCHRUN)
            out = os.path.join(d, "reach.json")
            p = subprocess.run([sys.executable, SCRIPT, "--only", "torch-collectives", "--ranks", "2", "--torchrun", fake,
                                "--python", sys.executable, "--work-dir", os.path.join(d, "work"), "--out", out],
                               capture_output=True, text=True, timeout=120, env=dict(os.environ, FAKE_NOTHING="1"))
            table = subprocess.run([sys.executable, SCRIPT, "--table", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1, p.stderr + p.stdout)
        self.assertTrue(p.stdout.rstrip().endswith("# FAILED: 2 rows, 2 failed or wrong: torch-collectives/2/stock, "
                                                   "torch-collectives/2/tandem-run"), p.stdout)
        # Not "bitwise", not "reference": the rows say what they could not measure.
        self.assertIn("| torch-collectives | 2 | stock | 0 / 0 B | — | — | — (not asked) | none | — | — | "
                      "nothing measured: no collective, no result checked |", table.stdout)
        self.assertIn("| torch-collectives | 2 | tandem-run | 0 / 0 B | 0 / 0 B | — | none | none | — | — | "
                      "nothing measured: no collective, no result checked |", table.stdout)
        self.assertIn("Rows that measured nothing (failed): torch-collectives/2/stock, torch-collectives/2/tandem-run.",
                      table.stdout)
        # Each alone is enough: collectives but no check, a check but no collective.
        row = {"ok": True, "front_end": "tandem-torch", "route": {"total_calls": 4, "total_bytes": 64}, "results": {}}
        self.assertEqual(rc.nothing_measured(row), ["no result checked"])
        row.update(route={"total_calls": 0, "total_bytes": 0}, results={"losses": [1.5]})
        self.assertEqual(rc.nothing_measured(row), ["no collective"])
        # Unknown is not nothing: a stock row without an inventory (no flight recorder, no count of its own).
        self.assertEqual(rc.nothing_measured({"results": {"losses": [1.5]}, "process_group": None}), [])

    def test_sigterm_stops_every_row_and_keeps_the_json(self):
        with tempfile.TemporaryDirectory() as d:
            fake = torch_launch.fake_program(d, FAKE_TORCHRUN)
            pidfile, out = os.path.join(d, "hung.pids"), os.path.join(d, "reach.json")
            p = subprocess.Popen([sys.executable, SCRIPT, "--only", "torch-collectives/2", "--jobs", "2", "--torchrun",
                                  fake, "--python", sys.executable, "--work-dir", os.path.join(d, "work"), "--out", out],
                                 env={**os.environ, "FAKE_HANG_PIDFILE": pidfile}, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            def started():
                if not os.path.exists(pidfile):
                    return 0
                with open(pidfile) as f:
                    return len(f.read().split())
            for _ in range(100):  # both rows' launchers are running
                if started() == 2:
                    break
                time.sleep(0.1)
            p.terminate()
            stdout, _ = p.communicate(timeout=60)
            with open(pidfile) as f:
                hung = [int(x) for x in f.read().split()]
            with open(out) as f:
                record = json.load(f)
        self.assertEqual(p.returncode, 143)
        self.assertIn("# STOPPED: 0 of 2 rows finished", stdout)
        self.assertEqual((record["complete"], record["rows"]), (False, []))
        for pid in hung:
            for _ in range(50):
                if not process_alive(pid):
                    break
                time.sleep(0.1)
            else:
                self.fail(f"launcher {pid} of a stopped row is still running")

    def test_bad_arguments_are_one_line(self):
        for args, message in ((["--ranks", "1,2"], "at least 2"), (["--ranks", "x"], "comma-separated"),
                              (["--jobs", "0"], "--jobs"), (["--only", "nothing"], "matches no row"),
                              (["--policy", "priority"], "--policy 'priority' has no copy-engine")):
            p = subprocess.run([sys.executable, SCRIPT, "--dry-run"] + args, capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


TORCH, JAX = torch_launch.python_with("torch", "numpy", "transformers"), torch_launch.python_with("jax")


def torchrun(python, nproc, program, args):
    p = torch_launch.torchrun(python, nproc, os.path.join(ROOT, "examples", "reach", program), args)
    results = rc.results_of(p.stdout.splitlines())
    return p, results[-1] if results else None


@torch_launch.needs(TORCH, "torch", "numpy", "transformers")
class Programs(unittest.TestCase):
    def test_collectives_are_exact_on_gloo(self):
        p, result = torchrun(TORCH, 3, "torch_collectives.py", ["--backend", "gloo", "--scale", "300"])
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertTrue(result["ok"])
        self.assertEqual(result["world_size"], 3)
        self.assertEqual(sum(c["wrong"] for c in result["checks"].values()), 0)
        self.assertIn("all_to_all_single float32 1009", result["checks"])
        self.assertEqual(result["ranks"][2]["issued"]["ncclAlltoAll"]["calls"], 4)
        # The point-to-point section: rank 2 of 3 has no pair for send/recv; only rank 0 checks the reduce.
        self.assertEqual(result["ranks"][2]["issued"]["ncclSend"]["calls"], 4)
        self.assertEqual(result["ranks"][1]["issued"]["ncclRecv"]["calls"], 5)
        self.assertEqual(result["checks"]["reduce to rank 0 float32 sum 300"]["elements"], 300)
        self.assertEqual(result["checks"]["send/recv pairs float32 301"]["elements"], 301)
        # The same run again gives the same digests (what the rows compare bitwise).
        _, again = torchrun(TORCH, 3, "torch_collectives.py", ["--backend", "gloo", "--scale", "300"])
        self.assertEqual({k: c["digests"] for k, c in again["checks"].items()},
                         {k: c["digests"] for k, c in result["checks"].items()})

    def test_llama_ddp_and_fsdp2_train_deterministically(self):
        tiny = ["--backend", "gloo", "--hidden", "32", "--intermediate", "64", "--layers", "2", "--heads", "2",
                "--vocab", "100", "--seq", "16", "--steps", "3"]
        for parallel in ("ddp", "fsdp2"):
            runs = [torchrun(TORCH, 2, "llama_train.py", tiny + ["--parallel", parallel]) for _ in range(2)]
            for p, result in runs:
                self.assertEqual(p.returncode, 0, p.stderr[-3000:])
                self.assertEqual((len(result["losses"]), result["parallel"]), (3, parallel))
            self.assertEqual(rc.normalized_results("llama-" + parallel, [runs[0][1]]),
                             rc.normalized_results("llama-" + parallel, [runs[1][1]]))

    def test_llama_refuses_tandem_on_gloo(self):
        p, _ = torchrun(TORCH, 1, "llama_train.py", ["--backend", "gloo", "--tandem", "copy-engine"])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--tandem needs --backend nccl", p.stderr)


@unittest.skipIf(JAX is None, "jax is not installed (TANDEM_TORCH_PYTHON names a Python with it)")
class JaxProgram(unittest.TestCase):
    def test_two_processes_on_the_cpu(self):
        port = rc.free_port()
        procs = [subprocess.Popen([JAX, os.path.join(ROOT, "examples", "reach", "jax_collectives.py"), "--coordinator",
                                   f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i), "--platform",
                                   "cpu", "--count", "501", "--repeats", "2", "--timeout", "120"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
        outs = [p.communicate(timeout=300) for p in procs]
        results = [rc.results_of(out.splitlines())[-1] for out, _ in outs]
        self.assertEqual([p.returncode for p in procs], [0, 0], outs[0][1][-2000:])
        self.assertTrue(all(r["ok"] for r in results))
        checks = rc.normalized_results("jax", results)["checks"]
        self.assertEqual(sorted(checks)[:2], ["all_gather bfloat16 int", "all_gather bfloat16 normal"])
        self.assertEqual(checks["psum float32 int"]["elements"], 2 * 2 * 502)  # 501 -> 502 (even), 2 repeats, 2 processes
        self.assertEqual(results[0]["issued"]["ncclReduceScatter"]["calls"], 2 * 2 * 2)  # 2 dtypes x 2 kinds x 2


if __name__ == "__main__":
    unittest.main()
