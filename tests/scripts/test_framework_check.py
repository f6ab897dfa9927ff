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
import sys
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
        # 9 programs x (stock, tandem-run); tandem.torch has no hook into the frameworks' collectives.
        self.assertEqual(len(rows), 18)
        args = {p: s["args"] for p, s in rc.PROGRAMS.items()}
        # Megatron's rows with buckets of 1 M parameters: several buckets in the small model.
        bucket = ["--bucket-size", "1000000"]
        self.assertEqual(args["megatron-dp"], ["--overlap-grad-reduce"] + bucket)
        self.assertEqual(args["megatron-distopt"], ["--distributed-optimizer", "--overlap-param-gather"] + bucket)
        self.assertEqual(args["megatron-tp2"], ["--tp", "2"] + bucket)
        self.assertEqual(args["megatron-tp2-sp"], ["--tp", "2", "--sequence-parallel"] + bucket)
        self.assertEqual(args["megatron-pp2"], ["--pp", "2"] + bucket)
        self.assertEqual(args["deepspeed-zero2-launcher"], ["--zero-stage", "2", "--overlap-comm"])
        self.assertEqual(rc.PROGRAMS["deepspeed-zero2-launcher"]["launch"], "deepspeed")
        for stage in (1, 2, 3):
            self.assertEqual(args[f"deepspeed-zero{stage}"], ["--zero-stage", str(stage), "--overlap-comm"])
        self.assertEqual([r["id"] for r in rc.select_rows(rows, "deepspeed-*/2/tandem-run")],
                         ["deepspeed-zero1/2/tandem-run", "deepspeed-zero2/2/tandem-run", "deepspeed-zero3/2/tandem-run",
                          "deepspeed-zero2-launcher/2/tandem-run"])

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

    def test_deepspeeds_launcher_runs_inside_tandem_run(self):
        # `tandem run -- deepspeed ...`, as a DeepSpeed user writes it: the launcher and every rank it starts
        # inherit the interposer; each rank on GPU 0 through shared_gpu_rank.py; the launcher's port is the
        # row's own, so that rows running side by side do not meet.
        cfg = {"tandem_bin": "/t/tandem", "overlap_bin": None, "pythonpath": [], "torchrun": ["torchrun"],
               "python": "/py", "llama_args": [], "jax_args": [], "policy": "copy-engine"}
        [run] = rc.row_launches({"program": "deepspeed-zero2-launcher", "ranks": 2, "front_end": "tandem-run"}, cfg,
                                "/s", 23456)
        self.assertEqual(run["argv"], ["/t/tandem", "run", "--policy", "copy-engine", "--stats", "/s/stats-%p.json", "--",
                                       "/py", "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "--master_port",
                                       "23456", os.path.join(ROOT, "tests", "tools", "shared_gpu_rank.py"),
                                       os.path.join(ROOT, fc.DEEPSPEED), "--zero-stage", "2", "--overlap-comm"])
        [stock] = rc.row_launches({"program": "deepspeed-zero2-launcher", "ranks": 4, "front_end": "stock"}, cfg, "/s",
                                  23457)
        self.assertEqual(stock["argv"][:8], ["/py", "-m", "deepspeed.launcher.runner", "--num_gpus", "4",
                                             "--master_port", "23457", os.path.join(ROOT, "tests", "tools",
                                                                                    "shared_gpu_rank.py")])

    def test_shared_gpu_rank_hands_deepspeeds_local_rank_to_the_program(self):
        # DeepSpeed's launcher starts `python shared_gpu_rank.py --local_rank=N PROGRAM ARGS`: the program gets
        # its arguments and --local_rank=0 (GPU 0, as LOCAL_RANK), each rank its own NCCL host id.
        import subprocess
        with tempfile.TemporaryDirectory() as d:
            program = os.path.join(d, "show.py")
            with open(program, "w") as f:
                f.write("import json, os, sys\nprint(json.dumps([sys.argv, os.environ['LOCAL_RANK'], "
                        "os.environ['NCCL_HOSTID']]))\n")
            tool = os.path.join(ROOT, rc.SHARED_GPU_RANK)
            env = {k: v for k, v in os.environ.items() if k != "NCCL_HOSTID"}
            out = subprocess.run([sys.executable, tool, "--local_rank=1", program, "--zero-stage", "2"], text=True,
                                 capture_output=True, env={**env, "RANK": "1", "LOCAL_RANK": "1"}, check=True).stdout
            self.assertEqual(json.loads(out), [[program, "--local_rank=0", "--zero-stage", "2"], "0",
                                               "tandem-shared-gpu-rank-1"])
            out = subprocess.run([sys.executable, tool, program, "--x"], text=True, capture_output=True,
                                 env={**env, "RANK": "0"}, check=True).stdout
            self.assertEqual(json.loads(out), [[program, "--x"], "0", "tandem-shared-gpu-rank-0"])

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


_lm_spec = importlib.util.spec_from_file_location(
    "megatron_lm_check", os.path.join(ROOT, "examples", "frameworks", "megatron_lm_check.py"))
lm = importlib.util.module_from_spec(_lm_spec)
_lm_spec.loader.exec_module(lm)


class MegatronLM(unittest.TestCase):
    LOG = ("[2026-12-02 17:00:01] iteration        1/       8 | consumed samples:            4 | elapsed time per "
           "iteration (ms): 812.3 | learning rate: 1.000000E-04 | global batch size:     4 | lm loss: 9.142537E+00 | "
           "loss scale: 1.0 | grad norm: 2.113 |\n"
           "[2026-12-02 17:00:01] iteration        2/       8 | lm loss: 9.101203E+00 | loss scale: 1.0 |\n"
           " validation loss at iteration 2 | lm loss value: 9.2E+00 |\n")

    def test_the_printed_losses_per_iteration(self):
        # The training log's lines, not the validation line that also names the lm loss.
        self.assertEqual(lm.losses_of(self.LOG), {1: "9.142537E+00", 2: "9.101203E+00"})

    def test_the_users_command_under_tandem_run(self):
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "pretrain_gpt.py"), "w").close()
            args = lm.parse_args(["--megatron-lm", d, "--torchrun", "torchrun", "--python", "/py",
                                  "--tandem-bin", "/t/tandem"])
            run = lm.launch("megatron-lm-distopt", 4, "copy-engine", d, args, "/s")
            self.assertEqual(run["argv"][:17], ["torchrun", "--standalone", "--nproc-per-node", "4", "--no-python",
                                                "/t/tandem", "run", "--policy", "copy-engine", "--stats",
                                                "/s/stats-%p.json", "--", "/py",
                                                os.path.join(ROOT, "tests", "tools", "shared_gpu_rank.py"),
                                                os.path.join(d, "pretrain_gpt.py"), "--transformer-impl", "local"])
            tail = run["argv"][17:]
            # Two sequences per rank per step; the configuration's overlap options last.
            self.assertEqual(tail[tail.index("--global-batch-size") + 1], "8")
            self.assertEqual(tail[-3:], ["--use-distributed-optimizer", "--overlap-grad-reduce",
                                         "--overlap-param-gather"])
            self.assertEqual(run["env"]["PYTHONPATH"].split(os.pathsep)[0], d)
            self.assertEqual(run["env"]["NCCL_NVLS_ENABLE"], "0")
            stock = lm.launch("megatron-lm-dp", 2, None, d, args, "/s")
            self.assertNotIn("/t/tandem", stock["argv"])
            for bad in (["--ranks", "1"], ["--only", "megatron-lm-tp9"]):
                with self.assertRaises(SystemExit):
                    lm.parse_args(["--megatron-lm", d] + bad)
        with self.assertRaises(SystemExit):
            lm.parse_args(["--megatron-lm", "/nonexistent"])

    def test_a_row_without_stats_files_fails(self):
        # A tandem-run row whose processes wrote no stats file gives no route figures, not a row of zeros.
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "pretrain_gpt.py"), "w").close()
            args = lm.parse_args(["--megatron-lm", d, "--torchrun", sys.executable, "--python", sys.executable,
                                  "--tandem-bin", "/bin/true", "--timeout", "30"])
            args.torchrun = [sys.executable, "-c", "print(' iteration 1/ 8 | lm loss: 9.0E+00 |')"]
            row = lm.run_row("megatron-lm-dp", 2, "copy-engine", d, args, os.path.join(d, "work"))
        self.assertEqual(row["exit_code"], 0)
        self.assertFalse(row["ok"])
        self.assertIn("stats files: none in", row["failure"])

    def test_losses_against_stock_string_for_string(self):
        losses = {i: "9.0E+00" for i in range(1, 9)}
        rows = [{"config": "megatron-lm-dp", "ranks": 2, "policy": None, "ok": True, "losses": dict(losses)},
                {"config": "megatron-lm-dp", "ranks": 2, "policy": "copy-engine", "ok": True, "losses": dict(losses)},
                {"config": "megatron-lm-dp", "ranks": 2, "policy": "priority", "ok": True,
                 "losses": {**losses, 8: "9.000001E+00"}},
                {"config": "megatron-lm-dp", "ranks": 2, "policy": "shape:2", "ok": False, "losses": {}}]
        self.assertEqual([r["vs_stock"] for r in lm.verdicts(rows)],
                         ["stock", "identical", "differs", "not compared (a run failed)"])


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
        # 9 stock rows, then 9 tandem-run rows per default policy.
        self.assertEqual(len(lines), 9 + 9 * len(fc.POLICIES))
        self.assertTrue(all("shared_gpu_rank.py" in line for line in lines))
        self.assertEqual(sum("--policy copy-engine " in line for line in lines), 9)


if __name__ == "__main__":
    unittest.main()
