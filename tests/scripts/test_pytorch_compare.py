#!/usr/bin/env python3
"""Tests scripts/pytorch-compare.py: its statistics (medians over rounds, spread, speed-up, efficiency
against the bound, loss agreement), its tables, the launch command line and environment of every
variant, the round-robin order, reading TANDEM_RESULT lines, and a whole comparison run through a
fake launcher (failed launches recorded, not fatal). Expected values are worked out in the comments.
Stdlib only; the tests that run the real examples/pytorch programs (on the CPU, gloo) need torch and
skip without it (TANDEM_TORCH_PYTHON names a Python that has it).

  python3 tests/scripts/test_pytorch_compare.py      (ctest: pytorch_compare)
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch_launch  # noqa: E402
SCRIPT = os.path.join(ROOT, "scripts", "pytorch-compare.py")
spec = importlib.util.spec_from_file_location("pytorch_compare", SCRIPT)
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)


def run_record(program, name, kind, median, loss, ok=True, round_=1):
    result = {"step_ms_median": median, "loss": loss} if ok else None
    return {"program": program, "variant": name, "kind": kind, "round": round_, "ok": ok, "result": result,
            "exit_code": 0 if ok else 1}


def synthetic_runs():
    """stock 10, 12, 11 ms -> median 11, spread 10-12; tandem 9, 8 -> 8.5; high-priority 11.5 (loss
    1.6); no-comm 6.0, 6.2 -> 6.1; comm-only 7.0, 7.4 and one failed launch -> 7.2; bound max = 7.2."""
    p = "ddp_mlp"
    return [
        run_record(p, "stock", "stock", 10.0, 1.5), run_record(p, "stock", "stock", 12.0, 1.5),
        run_record(p, "stock", "stock", 11.0, 1.5),
        run_record(p, "tandem-run priority", "tandem-run", 9.0, 1.5),
        run_record(p, "tandem-run priority", "tandem-run", 8.0, 1.5004),
        run_record(p, "stock+high-priority", "high-priority", 11.5, 1.6),
        run_record(p, "no-comm", "no-comm", 6.0, 1.7), run_record(p, "no-comm", "no-comm", 6.2, 1.7),
        run_record(p, "comm-only", "comm-only", 7.0, None), run_record(p, "comm-only", "comm-only", 7.4, None),
        run_record(p, "comm-only", "comm-only", 0, None, ok=False),
    ]


class Statistics(unittest.TestCase):
    def test_median(self):
        self.assertEqual(pc.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(pc.median([4.0, 1.0, 3.0, 2.0]), 2.5)  # even count: mean of the middle two
        self.assertIsNone(pc.median([]))

    def test_efficiency(self):
        self.assertAlmostEqual(pc.efficiency(10.0, 8.0, 6.0), 0.5)  # 2 of the 4 ms overlap can gain
        self.assertAlmostEqual(pc.efficiency(10.0, 6.0, 6.0), 1.0)
        self.assertAlmostEqual(pc.efficiency(10.0, 11.0, 6.0), -0.25)  # slower than stock: negative
        self.assertIsNone(pc.efficiency(6.0, 5.0, 6.0))  # nothing to gain
        self.assertIsNone(pc.efficiency(10.0, 8.0, None))

    def test_loss_agreement(self):
        tol = 2.0 ** -8
        self.assertEqual(pc.LOSS_TOLERANCE, tol)
        self.assertEqual(pc.loss_agreement([2.0, 2.0], 2.0), "bitwise")
        self.assertEqual(pc.loss_agreement([2.0, 2.0 + 2 * tol], 2.0), "within tolerance")  # exactly at the edge
        self.assertEqual(pc.loss_agreement([2.0, 2.0079], 2.0), "differs")  # 0.0079 > 2/256 = 0.0078125
        self.assertEqual(pc.loss_agreement([-2.0 - 0.001], -2.0), "within tolerance")
        self.assertIsNone(pc.loss_agreement([], 2.0))
        self.assertIsNone(pc.loss_agreement([None], 2.0))
        self.assertIsNone(pc.loss_agreement([2.0], None))

    def test_summary(self):
        rows = {s["variant"]: s for s in pc.summarize(synthetic_runs())}
        self.assertEqual(list(rows), ["stock", "tandem-run priority", "stock+high-priority", "no-comm", "comm-only"])
        stock, tandem = rows["stock"], rows["tandem-run priority"]
        self.assertEqual((stock["step_ms"], stock["spread_ms"], stock["speedup"]), (11.0, [10.0, 12.0], 1.0))
        self.assertEqual(stock["efficiency"], 0.0)  # (11 - 11) / (11 - 7.2)
        self.assertEqual(stock["loss_vs_stock"], "bitwise")
        self.assertEqual(tandem["step_ms"], 8.5)
        self.assertEqual(tandem["t_bound_ms"], 7.2)  # max(no-comm 6.1, comm-only 7.2)
        self.assertAlmostEqual(tandem["speedup"], 11.0 / 8.5)  # 1.2941
        self.assertAlmostEqual(tandem["efficiency"], 2.5 / 3.8)  # 0.6579
        self.assertEqual(tandem["loss_vs_stock"], "within tolerance")  # |0.0004| <= 1.5/256 = 0.00586
        self.assertEqual(rows["stock+high-priority"]["loss_vs_stock"], "differs")
        self.assertAlmostEqual(rows["stock+high-priority"]["efficiency"], -0.5 / 3.8)
        comm = rows["comm-only"]
        self.assertEqual((comm["runs_ok"], comm["runs_failed"], comm["step_ms"]), (2, 1, 7.2))
        self.assertIsNone(comm["efficiency"])  # the bounds are not rated against themselves
        self.assertIsNone(comm["speedup"])
        self.assertIsNone(comm["loss_vs_stock"])
        self.assertIsNone(rows["no-comm"]["loss_vs_stock"])  # no gradient averaging: another training

    def test_no_bound_without_both_bound_modes(self):
        runs = [r for r in synthetic_runs() if r["variant"] != "comm-only"]
        tandem = next(s for s in pc.summarize(runs) if s["variant"] == "tandem-run priority")
        self.assertIsNone(tandem["t_bound_ms"])
        self.assertIsNone(tandem["efficiency"])
        self.assertAlmostEqual(tandem["speedup"], 11.0 / 8.5)

    def test_tables(self):
        summary = pc.summarize(synthetic_runs())
        lines = pc.text_table(summary).splitlines()
        self.assertTrue(lines[0].startswith("program"))
        tandem = lines[2].split()
        self.assertEqual(tandem[:3], ["ddp_mlp", "tandem-run", "priority"])
        self.assertEqual(tandem[3:9], ["2/2", "8.500", "8.000–9.000", "1.294", "65.8", "%"])
        self.assertEqual(" ".join(tandem[9:]), "within tolerance —")  # no device memory reported
        self.assertEqual(lines[5].split()[:3], ["ddp_mlp", "comm-only", "2/3"])  # one of three launches failed
        self.assertEqual(lines[5].split()[5:], ["—", "—", "n/a", "—"])  # a bound has no speed-up, efficiency, loss check
        record = {"kind": "pytorch-compare", "gpus": ["NVIDIA H200, 580.1"], "versions": {"torch": "2.11.0", "nccl": "2.28.9"},
                  "commit": "abc123", "date": "2026-12-01T00:00:00Z", "config": {"rounds": 3, "nproc": 2},
                  "summary": summary}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cmp.json")
            with open(path, "w") as f:
                json.dump(record, f)
            md = pc.markdown_tables([path])
            with open(path, "w") as f:
                json.dump({"kind": "reliability"}, f)
            with self.assertRaises(pc.UserError):
                pc.markdown_tables([path])
        self.assertIn("cmp.json: NVIDIA H200, 580.1; nccl 2.28.9, torch 2.11.0; tandem abc123; 2026-12-01; 3 rounds, 2 ranks.", md)
        rows = [[c.strip() for c in l.strip("|").split("|")] for l in md.splitlines() if l.startswith("| ddp_mlp")]
        self.assertEqual(rows[1], ["ddp_mlp", "tandem-run priority", "2/2", "8.500", "8.000–9.000", "1.294", "65.8 %",
                                   "within tolerance", "—"])
        self.assertEqual(rows[3][6:], ["—", "n/a", "—"])  # no-comm


class MemoryAndPaths(unittest.TestCase):
    def test_device_memory_is_the_median_over_the_successful_launches(self):
        runs = synthetic_runs()
        for i, r in enumerate(r for r in runs if r["variant"] == "stock" and r["ok"]):
            r["result"]["device_memory_used_bytes"] = (20 + 2 * i) * 2 ** 30
        stock = next(s for s in pc.summarize(runs) if s["variant"] == "stock")
        self.assertAlmostEqual(stock["device_memory_gib"], 22.0)
        self.assertEqual(pc.row_cells(stock)[-1], "22.00")
        no_memory = next(s for s in pc.summarize(runs) if s["variant"] == "tandem-run priority")
        self.assertIsNone(no_memory["device_memory_gib"])

    def test_a_program_given_by_path_is_taken_as_it_is(self):
        self.assertEqual(pc.program_path("ddp_mlp"), os.path.join(pc.ROOT, "examples", "pytorch", "ddp_mlp.py"))
        self.assertEqual(pc.program_path("examples/reach/llama_train.py"),
                         os.path.join(pc.ROOT, "examples", "reach", "llama_train.py"))
        self.assertEqual(pc.program_path("/abs/train.py"), "/abs/train.py")


class Launches(unittest.TestCase):
    def test_variants_and_command_lines(self):
        policies = ["priority", "@/x/best.policy"]
        vs = pc.make_variants("fsdp2_mlp", pc.KINDS, policies, "/bin/tandem", ["/py"])
        names = [v["name"] for v in vs]
        self.assertEqual(names, ["stock", "stock+high-priority", "stock+nccl-max-ctas-16", "stock+nccl-max-ctas-16-cga-1",
                                 "stock+symm-mem-ce", "stock+sm-carveout-16", "stock+sm-carveout-32",
                                 "tandem-run priority", "tandem-run @best.policy",
                                 "tandem.torch priority", "tandem.torch @best.policy", "no-comm", "comm-only"])
        by = {v["name"]: v for v in vs}
        base = ["torchrun", "--standalone", "--nproc-per-node", "2", "/e/fsdp2_mlp.py", "--steps", "5"]

        def argv(name):
            return pc.launch_argv(by[name], ["torchrun"], 2, "/e/fsdp2_mlp.py", ["--steps", "5"])
        self.assertEqual(argv("stock"), base)
        self.assertEqual(argv("tandem-run priority"), ["/bin/tandem", "run", "--policy", "priority", "--"] + base)
        self.assertEqual(argv("tandem-run @best.policy")[:5], ["/bin/tandem", "run", "--policy", "@/x/best.policy", "--"])
        self.assertEqual(argv("tandem.torch @best.policy"), base + ["--tandem", "@/x/best.policy"])
        self.assertEqual(argv("no-comm"), base + ["--mode", "no-comm"])
        self.assertEqual(argv("comm-only"), base + ["--mode", "comm-only"])
        self.assertEqual(argv("stock+symm-mem-ce"), base + ["--symm-mem"])
        self.assertEqual(argv("stock+sm-carveout-32"), base + ["--sm-carveout", "32"])
        self.assertEqual([v["name"] for v in pc.make_variants("ddp_mlp", ["sm-carveout"], [], "t", [], carveouts=[8])],
                         ["stock+sm-carveout-8"])
        base_env = {"PATH": "/usr/bin", "PYTHONPATH": "/mine", "NCCL_NVLS_ENABLE": "1"}
        env = pc.launch_env(by["stock"], base_env)
        self.assertEqual(env, {"PATH": "/usr/bin", "PYTHONPATH": "/mine", "NCCL_NVLS_ENABLE": "0",
                               "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"})
        self.assertEqual(pc.launch_env(by["stock+high-priority"], base_env)["TORCH_NCCL_HIGH_PRIORITY"], "1")
        ctas = pc.launch_env(by["stock+nccl-max-ctas-16-cga-1"], base_env)
        self.assertEqual((ctas["NCCL_MAX_CTAS"], ctas["NCCL_CGA_CLUSTER_SIZE"]), ("16", "1"))
        self.assertEqual(pc.launch_env(by["stock+symm-mem-ce"], base_env)["NCCL_CTA_POLICY"], "2")
        self.assertEqual(pc.launch_env(by["tandem.torch priority"], base_env)["PYTHONPATH"], "/py" + os.pathsep + "/mine")
        self.assertEqual(pc.launch_env(by["tandem.torch priority"], {})["PYTHONPATH"], "/py")
        self.assertNotIn("PYTHONPATH", pc.launch_env(by["tandem-run priority"], {}))
        # DDP has no FSDP2 symmetric-memory variant; a subset of kinds gives only those.
        ddp = [v["name"] for v in pc.make_variants("ddp_mlp", ["stock", "symm-mem", "comm-only"], [], "t", [])]
        self.assertEqual(ddp, ["stock", "comm-only"])

    def test_round_robin_rotates(self):
        vs = {"a": [{"name": n} for n in "xyz"], "b": [{"name": "w"}]}
        order = [(r, p, v["name"]) for r, p, v in pc.schedule(["a", "b"], vs, 3)]
        self.assertEqual(order, [(1, "a", "x"), (1, "a", "y"), (1, "a", "z"), (1, "b", "w"),
                                 (2, "a", "y"), (2, "a", "z"), (2, "a", "x"), (2, "b", "w"),
                                 (3, "a", "z"), (3, "a", "x"), (3, "a", "y"), (3, "b", "w")])

    def test_parse_result(self):
        line = 'TANDEM_RESULT {"step_ms_median": 1.5, "loss": 0.1}'
        self.assertEqual(pc.parse_result("noise\n" + line + "\n")["step_ms_median"], 1.5)
        # Another rank's warning glued to the line; the last of two lines wins.
        two = 'TANDEM_RESULT {"step_ms_median": 1.0}\n' + line + "/x.py:3: UserWarning: y\n"
        self.assertEqual(pc.parse_result(two), {"step_ms_median": 1.5, "loss": 0.1})
        self.assertEqual(pc.parse_result(line + "\nTANDEM_RESULT {broken")["loss"], 0.1)
        self.assertIsNone(pc.parse_result("no result\n"))
        self.assertIsNone(pc.parse_result("TANDEM_RESULT [1, 2]"))

    def test_bad_arguments_are_one_line(self):
        for args, words in ((["--variants", "stock,bogus"], "unknown variant kind 'bogus'"),
                            (["--programs", "nope"], "no program 'nope'"),
                            (["--rounds", "0"], "--rounds must be at least 1, not 0"),
                            (["--env-variant", "x"], "--env-variant 'x' is not NAME:VAR=VALUE"),
                            (["--sm-carveouts", "16,0"], "--sm-carveouts '16,0' is not a comma-separated list"),
                            (["--sm-carveouts", "x"], "--sm-carveouts 'x' is not a comma-separated list"),
                            (["--tables"], "--tables needs"),
                            (["--out", "/nonexistent-folder/x.json"], "--out '/nonexistent-folder/x.json': cannot write")):
            p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
            self.assertIn(words, p.stderr)


# A stand-in for torchrun: prints a TANDEM_RESULT whose step time depends on the mode and the variables
# it was given, and fails as a missing tandem.torch would.
FAKE_TORCHRUN = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    args = sys.argv[1:]
    if "--tandem" in args:
        print("ModuleNotFoundError: No module named 'tandem'", file=sys.stderr)
        sys.exit(3)
    mode = args[args.index("--mode") + 1] if "--mode" in args else "train"
    ms = {{"train": 10.0, "no-comm": 6.0, "comm-only": 7.0}}[mode]
    if os.environ.get("TORCH_NCCL_HIGH_PRIORITY") == "1":
        ms = 9.0
    assert os.environ["NCCL_NVLS_ENABLE"] == "0" and os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    if os.environ.get("FAKE_HANG_PIDFILE"):  # a rank that hangs, as a child of the launcher
        import subprocess, time
        rank = subprocess.Popen(["sleep", "60"])
        open(os.environ["FAKE_HANG_PIDFILE"], "w").write(str(rank.pid))
        time.sleep(60)
    print("torchrun noise")
    if os.environ.get("FAKE_STEP"):  # the step as the program spells it (JSON text), beside a NaN of its own
        print('TANDEM_RESULT {{"step_ms_median": %s, "loss": 0.25, "step_ms": [NaN]}}' % os.environ["FAKE_STEP"])
        sys.exit(0)
    print("TANDEM_RESULT " + json.dumps({{"step_ms_median": ms, "loss": None if mode == "comm-only" else 0.25,
                                          "argv": args, "torch": "9.9"}}))
    """)


class WholeRun(unittest.TestCase):
    def test_comparison_with_a_failing_variant(self):
        with tempfile.TemporaryDirectory() as d:
            fake = torch_launch.fake_program(d, FAKE_TORCHRUN)
            out = os.path.join(d, "cmp.json")
            p = subprocess.run([sys.executable, SCRIPT, "--programs", "ddp_mlp", "--rounds", "2", "--policies", "priority",
                                "--variants", "stock,high-priority,tandem-torch,no-comm,comm-only", "--torchrun", fake,
                                "--out", out, "--", "--steps", "3"], capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 1, p.stderr)  # a launch failed: recorded, reported, not fatal
            with open(out) as f:
                record = json.load(f)
            tables = subprocess.run([sys.executable, SCRIPT, "--tables", out], capture_output=True, text=True)
            self.assertEqual(sorted(os.listdir(d)), ["cmp.json", "faketorchrun"])  # no temporary file left
        self.assertTrue(p.stdout.rstrip().endswith("# FAILED: 10 launches, 2 failed"), p.stdout)
        self.assertEqual((record["kind"], record["complete"], len(record["runs"])), ("pytorch-compare", True, 10))
        self.assertEqual(record["config"]["program_args"], ["--steps", "3"])
        # The launcher's Python is probed first; the launches' report fills in only where it has no torch.
        probed = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                                text=True).stdout.strip()
        self.assertEqual(record["versions"]["torch"], probed or "9.9")
        failed = [r for r in record["runs"] if not r["ok"]]
        self.assertEqual([(r["variant"], r["exit_code"]) for r in failed], [("tandem.torch priority", 3)] * 2)
        self.assertIn("No module named 'tandem'", failed[0]["output_tail"])
        stock = next(r for r in record["runs"] if r["variant"] == "stock")
        self.assertEqual(stock["result"]["argv"][-2:], ["--steps", "3"])
        self.assertEqual(stock["env"], {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"})
        rows = {s["variant"]: s for s in record["summary"]}
        hp = rows["stock+high-priority"]
        # stock 10, high priority 9, bound max(6, 7) = 7: speed-up 10/9, efficiency 1/3.
        self.assertAlmostEqual(hp["speedup"], 10 / 9)
        self.assertAlmostEqual(hp["efficiency"], 1 / 3)
        self.assertEqual(hp["loss_vs_stock"], "bitwise")
        self.assertEqual(rows["tandem.torch priority"]["runs_failed"], 2)
        self.assertIn("| ddp_mlp | stock+high-priority | 2/2 | 9.000 | 9.000–9.000 | 1.111 | 33.3 % | bitwise | — |",
                      tables.stdout)


    def test_a_step_that_is_no_time_fails_its_launch(self):
        with tempfile.TemporaryDirectory() as d:
            fake = torch_launch.fake_program(d, FAKE_TORCHRUN)
            out = os.path.join(d, "cmp.json")
            bad = {"nan": "NaN", "true": "true", "negative": "-3.5", "zero": "0", "infinite": "1e999"}
            p = subprocess.run([sys.executable, SCRIPT, "--programs", "ddp_mlp", "--rounds", "1", "--variants",
                                "stock,nccl-env", "--torchrun", fake, "--out", out] +
                               [f"--env-variant={k}:FAKE_STEP={v}" for k, v in bad.items()] +
                               ["--env-variant=odd-but-fine:FAKE_STEP=7.5"], capture_output=True, text=True, timeout=120)
            with open(out) as f:  # valid JSON: no NaN or Infinity token, whatever the programs printed
                record = json.load(f, parse_constant=lambda c: self.fail(f"{c} in --out"))
            tables = subprocess.run([sys.executable, SCRIPT, "--tables", out], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertTrue(p.stdout.rstrip().endswith("# FAILED: 9 launches, 5 failed"), p.stdout)
        runs = {r["variant"]: r for r in record["runs"]}
        for name, text in bad.items():
            run = runs["stock+" + name]
            self.assertEqual((run["ok"], run["result"]), (False, None))  # no figure from a failed launch
            shown = {"1e999": "Infinity", "0": "0"}.get(text, text)
            self.assertEqual(run["failure"], f"the program reported step_ms_median {shown}, not a step time in ms")
            self.assertIn(f"stock+{name}: FAILED (the program reported step_ms_median {shown}", p.stderr)
        self.assertEqual(runs["stock+odd-but-fine"]["result"]["step_ms"], ["NaN"])  # a NaN elsewhere, spelt out
        rows = {s["variant"]: s for s in record["summary"]}
        self.assertEqual((rows["stock+nan"]["runs_ok"], rows["stock+nan"]["step_ms"]), (0, None))
        self.assertEqual(rows["stock+odd-but-fine"]["step_ms"], 7.5)
        cells = [c for line in p.stdout.splitlines() if line.startswith("ddp_mlp") for c in line.split()]
        self.assertFalse({"nan", "inf", "-3.500", "0.000"} & set(cells), p.stdout)  # no figure from a bad step
        self.assertEqual(tables.returncode, 0, tables.stderr)
        self.assertIn("| ddp_mlp | stock+nan | 0/1 | — | — | — | — | n/a |", tables.stdout)

    def test_a_hanging_launch_is_ended_with_its_ranks(self):
        with tempfile.TemporaryDirectory() as d:
            fake = torch_launch.fake_program(d, FAKE_TORCHRUN)
            pidfile = os.path.join(d, "rank.pid")
            out = os.path.join(d, "cmp.json")
            p = subprocess.run([sys.executable, SCRIPT, "--programs", "ddp_mlp", "--rounds", "1", "--variants",
                                "stock,nccl-env", "--env-variant", "hang:FAKE_HANG_PIDFILE=" + pidfile,
                                "--torchrun", fake, "--timeout", "3", "--out", out],
                               capture_output=True, text=True, timeout=60)
            with open(out) as f:
                record = json.load(f)
            with open(pidfile) as f:
                rank = int(f.read())
        self.assertEqual(p.returncode, 1, p.stderr)
        hung = [r for r in record["runs"] if r["variant"] == "stock+hang"]
        self.assertEqual(hung[0]["exit_code"], 124)
        self.assertIn("timed out after 3 s", hung[0]["output_tail"])
        self.assertLess(hung[0]["seconds"], 30)
        self.assertEqual(hung[0]["env"]["FAKE_HANG_PIDFILE"], pidfile)
        self.assertEqual([r["ok"] for r in record["runs"] if r["variant"] != "stock+hang"], [True, True, True])
        for _ in range(50):  # the rank the launcher started is ended too (reaped by init soon after)
            try:
                os.kill(rank, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            self.fail(f"rank {rank} of the timed-out launch is still running")


TORCH = torch_launch.python_with("torch", "numpy")
TINY = ["--backend", "gloo", "--hidden", "32", "--tokens", "16", "--layers", "2", "--steps", "3", "--warmup", "2"]


@torch_launch.needs(TORCH, "torch", "numpy")
class Programs(unittest.TestCase):
    """The real programs on the CPU: two gloo ranks, a tiny model."""

    def launch(self, program, *args):
        p = torch_launch.torchrun(TORCH, 2, os.path.join(ROOT, "examples", "pytorch", program), TINY + list(args),
                                  timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-3000:])
        result = pc.parse_result(p.stdout)
        self.assertIsNotNone(result, p.stdout[-2000:])
        return result

    def test_ddp_train_and_comm_only(self):
        train = self.launch("ddp_mlp.py")
        self.assertEqual((train["program"], train["mode"], train["world_size"], train["steps"]), ("ddp_mlp", "train", 2, 3))
        self.assertEqual(len(train["step_ms"]), 3)
        self.assertEqual(train["step_ms_median"], sorted(train["step_ms"])[1])
        self.assertIsInstance(train["loss"], float)
        # 2 blocks of 32 -> 128 -> 32 with biases and a LayerNorm: 2 * (2*32 + 32*128+128 + 128*32+32) parameters.
        self.assertEqual(train["parameters"], 2 * (64 + 4224 + 4128))
        comm = self.launch("ddp_mlp.py", "--mode", "comm-only")
        self.assertIsNone(comm["loss"])
        self.assertEqual(sum(comm["bucket_bytes"]), 4 * train["parameters"])  # every fp32 gradient, once

    def test_fsdp2_train_is_deterministic(self):
        first, second = self.launch("fsdp2_mlp.py"), self.launch("fsdp2_mlp.py")
        self.assertEqual(first["loss"], second["loss"])
        self.assertEqual(first["reduce_scatter_bytes_per_step"], 4 * first["parameters"])

    def test_bad_flag_is_refused(self):
        p = subprocess.run([TORCH, os.path.join(ROOT, "examples", "pytorch", "ddp_mlp.py"), "--hidden", "0"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--hidden must be at least 1, not 0", p.stderr)


if __name__ == "__main__":
    unittest.main()
