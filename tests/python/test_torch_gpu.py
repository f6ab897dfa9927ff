"""tandem.torch on two GPUs: a DDP training under tandem's hook gives stock DDP's losses bitwise,
the process group carries the policy's settings, and tandem's modules share PyTorch's NCCL.

Skipped without PyTorch or without two GPUs. Each rank runs ddp_loss_worker.py under torchrun.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
    pytest.skip("needs two GPUs", allow_module_level=True)

WORKER = Path(__file__).with_name("ddp_loss_worker.py")


def run(mode, out):
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                    str(WORKER), mode, str(out)], check=True, env=env, timeout=300)
    return [json.loads((out / f"{mode}{r}.json").read_text()) for r in range(2)]


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    return run("stock", tmp_path_factory.mktemp("stock"))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run("tandem", tmp_path_factory.mktemp("tandem"))


def test_losses_equal_stock_bitwise(stock, ranks):
    for ours, theirs in zip(ranks, stock):
        assert len(ours["losses"]) == 8
        # DDP multiplies by 1/2 before summing, the hook divides by 2: both exact in floating point.
        assert ours["losses"] == theirs["losses"]
    # After the first step the losses depend on the averaged gradients: the training must have moved.
    assert ranks[0]["losses"][0] != ranks[0]["losses"][-1]


def test_process_group_carries_the_policy(ranks):
    for rank in ranks:
        assert rank["policy"] == "priority+nccl-ctas:8..16+nccl-cga:2"
        assert rank["high_priority"] is True
        assert (rank["min_ctas"], rank["max_ctas"], rank["cga_cluster_size"]) == (8, 16, 2)
        assert rank["comm"] != 0


def test_sm_target_sets_pytorchs_carveout(ranks):
    for rank in ranks:
        assert rank["carveout"] == rank["sms"] - 100


def test_one_nccl_in_the_process(ranks):
    for rank in ranks:
        assert len(rank["nccl_paths"]) == 1, rank["nccl_paths"]
        assert rank["tandem_nccl_version"] == rank["torch_nccl_version"]
