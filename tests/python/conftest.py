"""What a skip means here. Without PyTorch (or with one lacking gloo or NCCL) the tandem.torch tests skip,
so that the package's own tests run anywhere. Under TANDEM_REQUIRE_TORCH=1 (.ci/run, scripts/mutants.py)
every test that needs no GPU must run: such a skip, of one test or of a whole module, is reported as a
failure naming its reason. Tests that need a GPU still skip (their reason names a GPU).

The fixture `world` is the one-rank gloo group the tests of tandem.torch's decisions share.
"""
import os

import pytest


def _required():
    return os.environ.get("TANDEM_REQUIRE_TORCH") == "1"


def _reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail_a_skip_without_gpu_reason(report, where):
    if not (_required() and report.skipped) or "GPU" in _reason(report):
        return
    if hasattr(report, "wasxfail"):
        return  # an expected failure, not a skip
    report.outcome = "failed"
    report.longrepr = (f"{where}: {_reason(report)}; TANDEM_REQUIRE_TORCH=1 requires the tests that need no GPU "
                       "to run (scripts/install-deps.sh installs PyTorch into tandem's virtual environment)")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_a_skip_without_gpu_reason(outcome.get_result(), collector.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_a_skip_without_gpu_reason(outcome.get_result(), item.nodeid)


@pytest.fixture
def world(tmp_path):
    """A world of one rank on gloo (a FileStore, no port) with tandem.torch's counts cleared, for the tests of
    tandem.torch's decisions; its routes are closed and the group destroyed after the test. PyTorch is imported
    here, not at the top: without it the tests that use this fixture skip, and the others run."""
    import torch.distributed as dist

    import tandem.torch as tt

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    tt.reset_stats()
    yield dist.group.WORLD
    tt.close_routes()
    tt.reset_stats()
    dist.destroy_process_group()
