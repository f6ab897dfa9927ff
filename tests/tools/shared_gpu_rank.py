#!/usr/bin/env python3
"""Runs a torchrun program with every rank on GPU 0, for correctness checks on a one-GPU machine.

    torchrun --nproc-per-node 2 tests/tools/shared_gpu_rank.py examples/pytorch/ddp_mlp.py ARGS...
    deepspeed --num_gpus 2 tests/tools/shared_gpu_rank.py examples/frameworks/deepspeed_train.py ARGS...

NCCL refuses two ranks of one communicator on one GPU unless they look like separate hosts: each rank
gets its own NCCL_HOSTID, so NCCL connects them through its network transport. Timings mean nothing
then; results (losses, exact collectives) must still match a run with a GPU per rank.
"""
import os
import runpy
import sys

# DeepSpeed's launcher puts --local_rank=N right after the script it starts (this one), before the
# program's path: it goes to the program, with the rank it names moved to GPU 0 as LOCAL_RANK is.
local_rank_flags = [a for a in sys.argv[1:2] if a.startswith("--local_rank=")]
arguments = sys.argv[1 + len(local_rank_flags):]
if not arguments:
    sys.exit("usage: shared_gpu_rank.py [--local_rank=N] PROGRAM [ARGS...]")
rank = os.environ.get("RANK", "0")
os.environ.setdefault("NCCL_HOSTID", f"tandem-shared-gpu-rank-{rank}")
os.environ["LOCAL_RANK"] = "0"  # the program picks cuda:LOCAL_RANK
program = arguments[0]
sys.argv = arguments[:1] + (["--local_rank=0"] if local_rank_flags else []) + arguments[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(program)))  # as `python PROGRAM` would
runpy.run_path(program, run_name="__main__")
