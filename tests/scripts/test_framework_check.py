#!/usr/bin/env python3
"""Tests examples/frameworks/framework_check.py without the frameworks or a GPU: its rows and launch
command lines (reach-check's machinery with the framework programs), the losses it compares, the table of a
policy without copy-engine, the targeted controls' counts from hand-made stats files, and the timeline's
verdict on an overlap option. Stdlib only.

  python3 tests/scripts/test_framework_check.py      (ctest: framework_check)
"""
import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
spec = importlib.util.spec_from_file_location("framework_check",
                                              os.path.join(ROOT, "examples", "frameworks", "framework_check.py"))
fc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fc)
fc.install()
rc = fc.rc


class Rows(unittest.TestCase):
    def test_the_configurations_issue_40_asks_for(self):
        rows = rc.all_rows([2])
        # 7 programs x (stock, tandem-run); tandem.torch has no hook into the frameworks' collectives.
        self.assertEqual(len(rows), 14)
        args = {p: s["args"] for p, s in rc.PROGRAMS.items()}
        # Megatron's rows with buckets of 1 M parameters: several buckets in the small model.
        bucket = ["--bucket-size", "1000000"]
        self.assertEqual(args["megatron-dp"], ["--overlap-grad-reduce"] + bucket)
        self.assertEqual(args["megatron-distopt"], ["--distributed-optimizer", "--overlap-param-gather"] + bucket)
        self.assertEqual(args["megatron-tp2"], ["--tp", "2"] + bucket)
        self.assertEqual(args["megatron-pp2"], ["--pp", "2"] + bucket)
        for stage in (1, 2, 3):
            self.assertEqual(args[f"deepspeed-zero{stage}"], ["--zero-stage", str(stage), "--overlap-comm"])
        self.assertEqual([r["id"] for r in rc.select_rows(rows, "deepspeed-*/2/tandem-run")],
                         ["deepspeed-zero1/2/tandem-run", "deepspeed-zero2/2/tandem-run", "deepspeed-zero3/2/tandem-run"])

    def test_launches_share_one_gpu_and_carry_the_policy(self):
        cfg = {"tandem_bin": "/t/tandem", "overlap_bin": None, "pythonpath": [], "torchrun": ["torchrun"],
               "python": "/py", "llama_args": [], "jax_args": [], "policy": "shape:2+priority"}
        [run] = rc.row_launches({"program": "megatron-tp2", "ranks": 2, "front_end": "tandem-run"}, cfg, "/s", 1)
        self.assertEqual(run["argv"][:12], ["torchrun", "--standalone", "--nproc-per-node", "2", "--no-python",
                                            "/t/tandem", "run", "--policy", "shape:2+priority", "--stats",
                                            "/s/stats-%p.json", "--"])
        self.assertEqual(run["argv"][12:], ["/py", os.path.join(ROOT, "tests", "tools", "shared_gpu_rank.py"),
                                            os.path.join(ROOT, fc.MEGATRON), "--tp", "2",
                                            "--bucket-size", "1000000"])
        self.assertEqual(run["env"]["NCCL_NVLS_ENABLE"], "0")

    def test_losses_are_what_is_compared(self):
        result = {"losses": [6.5, 6.25], "loss": 6.125}
        self.assertEqual(rc.normalized_results("deepspeed-zero2", [result]), {"losses": [6.5, 6.25, 6.125]})
        stock = {"program": "megatron-pp2", "ranks": 2, "front_end": "stock", "ok": True,
                 "results": {"losses": [6.5, 6.25, 6.125]}, "process_group": {"all_reduce": {"calls": 3, "bytes": 12}}}
        same = dict(stock, front_end="tandem-run", results={"losses": [6.5, 6.25, 6.125]},
                    route=rc.finish_route(rc.empty_route("x", 2)))
        same["route"]["total_calls"] = 3
        other = dict(same, results={"losses": [6.5, 6.25, 6.1250001]})
        judged = rc.verdicts([stock, same])
        self.assertEqual(judged[1]["vs_stock"], "bitwise")
        # At 2 ranks a sum is one rounded addition in either order: anything else differs.
        self.assertEqual(rc.verdicts([stock, other])[1]["vs_stock"], "differs")


class Tables(unittest.TestCase):
    def test_a_policy_without_copy_engine_does_not_list_every_row_as_short(self):
        route = rc.empty_route("tandem run --stats", 2)
        route["collectives"]["ncclAllReduce"] = {"calls": 4, "bytes": 4096, "copy_engine": {"calls": 0, "bytes": 0},
                                                 "nccl": {"not-requested": {"calls": 4, "bytes": 4096}}}
        rc.finish_route(route)
        route["controls"] = {"communicators": {"configured": 6, "created": 6, "overridden_by_variables": []},
                             "elevated": 40, "nccl_launches": 40, "not_elevated": {}}
        rows = [{"id": "megatron-dp/2/stock", "program": "megatron-dp", "ranks": 2, "front_end": "stock", "ok": True,
                 "results": {"losses": [1.0]}, "process_group": {"all_reduce": {"calls": 4, "bytes": 4096}}},
                {"id": "megatron-dp/2/tandem-run", "program": "megatron-dp", "ranks": 2, "front_end": "tandem-run",
                 "ok": True, "results": {"losses": [1.0]}, "route": route,
                 "shaping": {"processes": 2, "compute_launches": 100, "shaped": 30, "left_alone_no_collective": 60,
                             "skipped": {"no-collective-in-flight": 60, "one-block-per-sm": 10},
                             "gemms_capped_beside": 0, "gemms_left_alone": 0}}]
        record = {"config": {"policy": "shape:2+priority+nccl-ctas:2..4"}, "rows": rows}
        text = fc.policy_table(record)
        self.assertIn("The policy has no copy-engine", text)
        self.assertNotIn("Rows below 99 %", text)
        self.assertIn("| megatron-dp | 2 | 6 / 6 | none | 40 / 40 | none |", text)
        self.assertIn("| megatron-dp | 2 | 100 | 30 | 60 | one-block-per-sm 10 | 0 / 0 |", text)
        self.assertIn("bitwise", text)

    def test_shaping_counts_come_from_the_rank_processes(self):
        with tempfile.TemporaryDirectory() as d:
            docs = [{"launches": {"compute": 50, "nccl": 5}, "compute_shaped": 10,
                     "skipped": {"no-collective-in-flight": 30}, "cublas": {"gemms_capped_beside_collective": 2}},
                    {"launches": {"compute": 70, "nccl": 5}, "compute_shaped": 20,
                     "skipped": {"no-collective-in-flight": 40, "cooperative": 1}},
                    {"launches": {"compute": 0, "nccl": 0}}]  # torchrun's own process, under tandem run
            for i, doc in enumerate(docs):
                with open(os.path.join(d, f"stats-{i}.json"), "w") as f:
                    json.dump({"schema_version": 2, "front_end": "tandem run", **doc}, f)
            s = fc.shaping_of(d)
        self.assertEqual((s["processes"], s["compute_launches"], s["shaped"], s["left_alone_no_collective"]),
                         (2, 120, 30, 70))
        self.assertEqual(s["skipped"], {"cooperative": 1, "no-collective-in-flight": 70})
        self.assertEqual(s["gemms_capped_beside"], 2)

    def test_the_timeline_says_whether_the_overlap_option_hides_more(self):
        def summary(hidden, exposed):
            return {"step_ms": 10.0, "computation_ms": 4.0, "communication_ms": 8.0, "overlapped_ms": 8.0 * hidden,
                    "exposed_communication_ms": exposed, "idle_ms": 0.5, "hidden_share": hidden}
        entries = [{"program": "megatron-dp", "variant": "overlap-on", "summary": summary(0.25, 6.0), "exit_code": 0},
                   {"program": "megatron-dp", "variant": "overlap-off", "summary": summary(0.05, 7.6), "exit_code": 0},
                   {"program": "deepspeed-zero2", "variant": "overlap-on", "summary": summary(0.01, 7.9), "exit_code": 0},
                   {"program": "deepspeed-zero2", "variant": "overlap-off", "summary": summary(0.02, 7.8),
                    "exit_code": 0},
                   {"program": "deepspeed-zero2", "variant": "overlap-on, CUDA_DEVICE_MAX_CONNECTIONS=1",
                    "summary": None, "exit_code": 1}]
        text = "\n".join(fc.timeline_table(entries))
        entries[0]["steps"] = [{"exposed_communication_ns": 6_000_000}, {"exposed_communication_ns": 6_500_000}]
        text = "\n".join(fc.timeline_table(entries))
        self.assertIn("| megatron-dp | overlap-on | 10.000 | 4.000 | 8.000 | 2.000 | 6.000 | 0.500 | 25.0 % | "
                      "6.00, 6.50 |", text)
        self.assertIn("| megatron-dp | overlap-off | 10.000 | 4.000 | 8.000 | 0.400 | 7.600 | 0.500 | 5.0 % | — |", text)
        self.assertIn("- megatron-dp: hides more with the option on (25.0 % against 5.0 %", text)
        self.assertIn("- deepspeed-zero2: does NOT hide more with the option on", text)
        self.assertIn("FAILED (exit 1)", text)

    def test_dry_run_prints_every_launch(self):
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(fc.main(["--dry-run", "--torchrun", "torchrun", "--python", "/py"]), 0)
        lines = out.getvalue().splitlines()
        # 7 stock rows, then 7 tandem-run rows per default policy.
        self.assertEqual(len(lines), 7 + 7 * len(fc.POLICIES))
        self.assertTrue(all("shared_gpu_rank.py" in line for line in lines))
        self.assertEqual(sum("--policy copy-engine " in line for line in lines), 7)


if __name__ == "__main__":
    unittest.main()
