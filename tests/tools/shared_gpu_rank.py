#!/usr/bin/env python3
"""Runs a torchrun program with every rank on GPU 0, for correctness checks on a one-GPU machine.

    torchrun --nproc-per-node 2 tests/tools/shared_gpu_rank.py examples/pytorch/ddp_mlp.py ARGS...

NCCL refuses two ranks of one communicator on one GPU unless they look like separate hosts: each rank
gets its own NCCL_HOSTID, so NCCL connects them through its network transport. Timings mean nothing
then; results (losses, exact collectives) must still match a run with a GPU per rank.
"""
import os
import runpy
import sys

if len(sys.argv) < 2:
    sys.exit("usage: shared_gpu_rank.py PROGRAM [ARGS...]")
rank = os.environ.get("RANK", "0")
os.environ.setdefault("NCCL_HOSTID", f"tandem-shared-gpu-rank-{rank}")
os.environ["LOCAL_RANK"] = "0"  # the program picks cuda:LOCAL_RANK
program = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(program)))  # as `python PROGRAM` would
runpy.run_path(program, run_name="__main__")
