#!/usr/bin/env python3
"""examples/frameworks against the installed framework, on the CPU: fails when the example programs or
tandem.torch's integration break against it, and is skipped (exit 77, ctest's SKIP_RETURN_CODE) when the
framework is not installed.

  python3 tests/scripts/test_frameworks_cpu.py deepspeed   (ctest: frameworks_deepspeed_cpu)
  python3 tests/scripts/test_frameworks_cpu.py megatron    (ctest: frameworks_megatron_cpu)

deepspeed: examples/frameworks/deepspeed_train.py on two gloo ranks (DS_ACCELERATOR=cpu) under ZeRO-1, 2
and 3 with overlap_comm on, and ZeRO-2 with it off: every launch's TANDEM_RESULT is one that
scripts/pytorch-compare.py and reach-check.py accept, and every configuration trains the same model on the
same data to the same losses, bitwise (at 2 ranks each gradient element is one rounded addition, in any
order; ZeRO changes where the sums are made, not what they are). Then tandem.torch's integration:
DeepSpeed's init_distributed keeps a default process group made before it (what
`tandem.torch.init_process_group(policy)` before `deepspeed.initialize` relies on), and --tandem is refused
on gloo.
megatron: Megatron-core needs CUDA for its DDP and schedules, so on the CPU only what the example builds
before them: the configurations framework_check.py runs parse, TransformerConfig, the GPT of the local
layer spec (no Transformer Engine module), the DDP and optimizer configurations; Megatron's per-group NCCL
options read the keys the example writes from a tandem policy, and every group name the installed
Megatron-core looks options up by is one the example writes.

Which Python: TANDEM_TORCH_PYTHON (ctest sets the build's), else this one; TANDEM_FRAMEWORKS_PYTHONPATH
is put before its path (a --target folder holding the frameworks, e.g. from scripts/framework-wheels.sh's
wheels), and tandem.torch is looked for in build/python, then python/.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SKIP = 77
FRAMEWORK = sys.argv[1] if len(sys.argv) > 1 else ""
MODULES = {"deepspeed": ["torch", "transformers", "deepspeed"], "megatron": ["torch", "yaml", "megatron.core"]}
PYTHON = os.environ.get("TANDEM_TORCH_PYTHON") or sys.executable
BUILD = os.environ.get("TANDEM_BUILD_DIR", os.path.join(ROOT, "build"))
PYTHONPATH = os.pathsep.join(p for p in (os.environ.get("TANDEM_FRAMEWORKS_PYTHONPATH"),
                                         os.path.join(BUILD, "python"), os.path.join(ROOT, "python"),
                                         os.environ.get("PYTHONPATH")) if p)
ENV = {**os.environ, "PYTHONPATH": PYTHONPATH, "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": "",
       "OMP_NUM_THREADS": "1"}
TINY_LLAMA = ["--hidden", "64", "--intermediate", "128", "--layers", "2", "--heads", "4", "--vocab", "512",
              "--seq", "32", "--steps", "2", "--warmup", "1"]


def python(code, timeout=300):
    return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=ENV, timeout=timeout)


def missing(modules):
    p = python("import importlib, sys\nfor m in sys.argv[1:] or %r: importlib.import_module(m)" % (modules,))
    return None if p.returncode == 0 else (p.stderr.strip().splitlines() or ["?"])[-1]


def result_of(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("TANDEM_RESULT ")]
    return json.loads(lines[-1][len("TANDEM_RESULT "):]) if lines else None


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def deepspeed_run(args, attempts=3, launcher="torchrun"):
    """deepspeed_train.py on two gloo ranks, started by torchrun or by DeepSpeed's own launcher (the
    `deepspeed` command, which passes --local_rank=N to the program); a launch that aborted at exit after its
    result (PyTorch 2.11's gloo teardown, tests/scripts/torch_launch.py) is tried again."""
    head = ([PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"] if launcher == "torchrun"
            else [PYTHON, "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "--master_port", str(free_port())])
    command = head + [os.path.join(ROOT, "examples", "frameworks", "deepspeed_train.py"), "--backend", "gloo"] + args
    for _ in range(attempts):
        p = subprocess.run(command, capture_output=True, text=True, env={**ENV, "DS_ACCELERATOR": "cpu"}, timeout=600)
        if p.returncode == 0 or "terminate called without an active exception" not in p.stderr:
            break
    return p


class DeepSpeed(unittest.TestCase):
    maxDiff = None

    def test_every_zero_stage_trains_to_the_same_losses(self):
        results = {}
        for name, args, launcher in (("zero1", ["--zero-stage", "1"], "torchrun"),
                                     ("zero2", ["--zero-stage", "2"], "torchrun"),
                                     ("zero3", ["--zero-stage", "3"], "torchrun"),
                                     ("zero2-no-overlap", ["--zero-stage", "2", "--no-overlap-comm"], "torchrun"),
                                     ("zero2-deepspeed-launcher", ["--zero-stage", "2"], "deepspeed")):
            p = deepspeed_run(args + TINY_LLAMA, launcher=launcher)
            self.assertEqual(p.returncode, 0, f"{name}: {p.stderr[-3000:]}")
            r = result_of(p.stdout)
            self.assertIsNotNone(r, f"{name}: no TANDEM_RESULT line\n{p.stdout[-2000:]}")
            # What scripts/pytorch-compare.py and reach-check.py read.
            self.assertEqual(r["program"], "deepspeed_llama")
            self.assertEqual(r["world_size"], 2)
            self.assertGreater(r["step_ms_median"], 0)
            self.assertEqual(len(r["losses"]), 3)  # 1 warm-up + 2 timed steps
            self.assertTrue(r["ok"])
            self.assertEqual(len(r["ranks"]), 2)
            self.assertEqual(r["zero_stage"], int(args[1]))
            self.assertEqual(r["optimizer"], "DeepSpeedZeroOptimizer_Stage3" if args[1] == "3"
                             else "DeepSpeedZeroOptimizer")
            results[name] = r["losses"] + [r["loss"]]
        self.assertEqual(len({tuple(v) for v in results.values()}), 1, results)
        self.assertLess(results["zero2"][-1], results["zero2"][0])  # it trains

    def test_deepspeed_keeps_a_process_group_made_before_it(self):
        # tandem.torch.init_process_group(policy) before deepspeed.initialize: DeepSpeed must use that group.
        import tempfile
        script = ("import os, sys, torch, torch.distributed as dist, deepspeed\n"
                  "dist.init_process_group('gloo')\n"
                  "world = dist.distributed_c10d._get_default_group()\n"
                  "deepspeed.init_distributed(dist_backend='gloo')\n"
                  "assert dist.distributed_c10d._get_default_group() is world, 'DeepSpeed replaced the group'\n"
                  "import deepspeed.comm as dcomm\n"
                  "t = torch.ones(3) * (dist.get_rank() + 1)\n"
                  "dcomm.all_reduce(t)\n"
                  "assert t.tolist() == [3.0, 3.0, 3.0], t\n"
                  "open(os.path.join(sys.argv[1], 'kept-%d' % dist.get_rank()), 'w').close()\n"
                  "dist.destroy_process_group()\n")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "group.py")
            with open(path, "w") as f:
                f.write(script)
            for _ in range(3):  # PyTorch 2.11's gloo abort at exit (tests/scripts/torch_launch.py): again
                p = subprocess.run([PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                                    path, d], capture_output=True, text=True, env={**ENV, "DS_ACCELERATOR": "cpu"},
                                   timeout=300)
                kept = sorted(f for f in os.listdir(d) if f.startswith("kept-"))
                if p.returncode == 0 or "terminate called without an active exception" not in p.stderr:
                    break
        self.assertEqual(kept, ["kept-0", "kept-1"], p.stderr[-3000:])

    def test_tandem_needs_nccl(self):
        p = subprocess.run([PYTHON, os.path.join(ROOT, "examples", "frameworks", "deepspeed_train.py"), "--backend",
                            "gloo", "--tandem", "copy-engine"], capture_output=True, text=True, env=ENV, timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--tandem needs --backend nccl", p.stderr)


MEGATRON_CHECK = r'''
import json, os, sys, tempfile
import torch, torch.distributed as dist
sys.path.insert(0, os.path.join(sys.argv[1], "examples", "frameworks"))
import megatron_train as mt
out = {}
for argv in (["--overlap-grad-reduce"], ["--distributed-optimizer", "--overlap-param-gather"],
             ["--tp", "2"], ["--pp", "2"], ["--no-overlap-grad-reduce"]):
    a = mt.parse_args(argv)
    out[" ".join(argv)] = [a.tp, a.pp, a.sequence_parallel, a.overlap_grad_reduce, a.distributed_optimizer,
                           a.overlap_param_gather, a.microbatches]
dist.init_process_group("gloo", rank=0, world_size=1, init_method="tcp://127.0.0.1:%s" % sys.argv[2])
from megatron.core import parallel_state
parallel_state.initialize_model_parallel(1, 1, create_gloo_process_groups=False)
args = mt.parse_args(["--layers", "2", "--hidden", "64", "--heads", "4", "--vocab", "128", "--seq", "32"])
config = mt.transformer_config(args)
model = mt.gpt_model(args, config)
names = sorted({type(m).__module__.split(".")[0] for m in model.modules()})
out["model"] = {"parameters": sum(p.numel() for p in model.parameters()), "dtypes": sorted({str(p.dtype) for p in model.parameters()}),
                "packages": names, "layers": len(model.module.decoder.layers)}
d = mt.ddp_config(mt.parse_args(["--distributed-optimizer", "--overlap-param-gather", "--bucket-size", "1000"]))
out["ddp"] = [d.overlap_grad_reduce, d.use_distributed_optimizer, d.overlap_param_gather, d.bucket_size, d.grad_reduce_in_fp32]
o = mt.optimizer_config(mt.parse_args(["--distributed-optimizer"]))
out["optimizer"] = [o.optimizer, o.bf16, o.use_distributed_optimizer]
cfgs = mt.megatron_nccl_configs("priority+nccl-ctas:2..4+nccl-cga:1", {"dp": {"max_ctas": 32, "net_name": "socket"}})
opts = parallel_state.get_nccl_options("dp", cfgs)
out["nccl"] = [opts.is_high_priority_stream, opts.config.min_ctas, opts.config.max_ctas, opts.config.cga_cluster_size,
               opts.config.net_name, cfgs["tp"]]
out["copy_engine_only"] = mt.megatron_nccl_configs("copy-engine")
sp_config = mt.transformer_config(mt.parse_args(["--tp", "2", "--sequence-parallel", "--layers", "2", "--hidden", "64",
                                                 "--heads", "4", "--vocab", "128", "--seq", "32"]))
sp_spec = mt.layer_spec(sp_config)
sp_norm = sp_spec.layer_norm(config=sp_config, hidden_size=64, eps=1e-5)
plain_norm = sp_spec.layer_norm(config=config, hidden_size=64, eps=1e-5)
out["sp"] = {"spec": type(sp_spec).__name__, "layers": len(sp_spec.layer_specs),
             "norms": [sp_spec.layer_specs[0].submodules.input_layernorm.__name__,
                       sp_spec.layer_specs[0].submodules.pre_mlp_layernorm.__name__, sp_spec.layer_norm.__name__],
             "norm": type(sp_norm).__name__, "marked": [getattr(p, "sequence_parallel", None) for p in sp_norm.parameters()],
             "marked_without_sp": [getattr(p, "sequence_parallel", None) for p in plain_norm.parameters()],
             "without_sp": type(mt.layer_spec(config)).__name__}
import megatron.core.parallel_state as ps_module
out["source_groups"] = sorted(set(__import__("re").findall(r"get_nccl_options\(\s*[\"']([a-z_]+)[\"']", open(ps_module.__file__).read())))
out["example_groups"] = sorted(mt.MEGATRON_GROUPS)
print("MEGATRON " + json.dumps(out))
'''


class Megatron(unittest.TestCase):
    maxDiff = None

    def test_the_example_builds_against_megatron_core(self):
        p = subprocess.run([PYTHON, "-c", MEGATRON_CHECK, ROOT, str(free_port())], capture_output=True, text=True, env=ENV,
                           timeout=300)
        lines = [line for line in p.stdout.splitlines() if line.startswith("MEGATRON ")]
        self.assertTrue(lines, p.stderr[-3000:])
        out = json.loads(lines[-1][len("MEGATRON "):])
        self.assertEqual(out["--overlap-grad-reduce"], [1, 1, False, True, False, False, 1])
        self.assertEqual(out["--distributed-optimizer --overlap-param-gather"], [1, 1, False, True, True, True, 1])
        self.assertEqual(out["--tp 2"], [2, 1, False, True, False, False, 1])
        self.assertEqual(out["--pp 2"], [1, 2, False, True, False, False, 4])
        self.assertEqual(out["--no-overlap-grad-reduce"][3], False)
        model = out["model"]
        # Megatron-core's own layers only (the local spec), in bf16 (Float16Module), 2 layers.
        self.assertEqual(model["packages"], ["megatron", "torch"])
        self.assertEqual(model["dtypes"], ["torch.bfloat16"])
        self.assertEqual(model["layers"], 2)
        # GPT: token (128 x 64) and position (32 x 64) embeddings, 2 layers of 12 h^2 + 13 h, final norm (2h),
        # untied output layer (128 x 64).
        h = 64
        self.assertEqual(model["parameters"], 128 * h + 32 * h + 2 * (12 * h * h + 13 * h) + 2 * h + 128 * h)
        self.assertEqual(out["ddp"], [True, True, True, 1000, True])
        self.assertEqual(out["optimizer"], ["adam", True, True])
        # The policy's settings over the user's YAML for the fields it names; the others stay.
        self.assertEqual(out["nccl"][:5], [True, 2, 4, 1, "socket"])
        self.assertEqual(out["nccl"][5], {"is_high_priority_stream": True, "min_ctas": 2, "max_ctas": 4,
                                          "cga_cluster_size": 1})
        self.assertEqual(out["copy_engine_only"], {})
        # Sequence parallelism without Apex: every norm of the block (each layer's two, the final one) is torch's,
        # its weight and bias marked for finalize_model_grads' all-reduce over the tensor-parallel group, and only
        # under SP; without SP the spec stays Megatron-core's own local spec.
        self.assertEqual(out["sp"], {"spec": "TransformerBlockSubmodules", "layers": 2,
                                     "norms": ["SequenceParallelTorchNorm"] * 3, "norm": "LayerNorm",
                                     "marked": [True, True], "marked_without_sp": [False, False],
                                     "without_sp": "ModuleSpec"})
        # Every group the installed Megatron-core configures gets the policy's settings.
        self.assertEqual([g for g in out["source_groups"] if g not in out["example_groups"]], [])

    def test_bad_combinations_are_refused(self):
        for argv, message in ((["--overlap-param-gather"], "--overlap-param-gather needs --distributed-optimizer"),
                              (["--sequence-parallel"], "--sequence-parallel needs --tp 2 or more"),
                              (["--tp", "2", "--sequence-parallel", "--seq", "255"],
                               "--seq 255 is not a multiple of --tp 2"),
                              (["--pp", "3"], "--layers 4 is not a multiple of --pp 3")):
            p = subprocess.run([PYTHON, os.path.join(ROOT, "examples", "frameworks", "megatron_train.py")] + argv,
                               capture_output=True, text=True, env=ENV, timeout=120)
            self.assertEqual(p.returncode, 2, argv)
            self.assertIn(message, p.stderr)


if __name__ == "__main__":
    if FRAMEWORK not in MODULES:
        sys.exit("usage: test_frameworks_cpu.py deepspeed|megatron")
    why = missing(MODULES[FRAMEWORK])
    if why:
        print(f"SKIP: {FRAMEWORK} is not installed for {PYTHON} ({why}); TANDEM_FRAMEWORKS_PYTHONPATH names a "
              "folder that has it (scripts/framework-wheels.sh)")
        # CI installs DeepSpeed (scripts/install-deps.sh) and requires its test to run, as it does
        # tandem.torch's (TANDEM_REQUIRE_TORCH=1); Megatron-core is checked on the GPU machine only.
        sys.exit(1 if FRAMEWORK == "deepspeed" and os.environ.get("TANDEM_REQUIRE_TORCH") == "1" else SKIP)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(DeepSpeed if FRAMEWORK == "deepspeed" else Megatron)
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
