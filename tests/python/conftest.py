"""What a skip means here. Without PyTorch (or with one lacking gloo or NCCL) the tandem.torch tests skip,
so that the package's own tests run anywhere. Under TANDEM_REQUIRE_TORCH=1 (.ci/run, scripts/mutants.py)
every test that needs no GPU must run: such a skip, of one test or of a whole module, is reported as a
failure naming its reason. Tests that need a GPU still skip (their reason names a GPU).
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
