"""The examples' PyTorch programs on the CPU, as the script tests launch them (gloo ranks under
torchrun), and the Python that has the modules they need.

PyTorch 2.11 with gloo sometimes aborts a rank of an FSDP2 program after the program has finished
and printed its result: "terminate called without an active exception" during the interpreter's
exit, after destroy_process_group (about one launch in four on a 2-core machine; a barrier before
the teardown does not help); when the rank that aborts is not rank 0, torchrun ends rank 0 before it
prints. Such a launch is tried again, at most twice; any other failure, or the abort three times,
fails the test.
"""
import os
import subprocess
import sys
import unittest

EXIT_ABORT = "terminate called without an active exception"
ATTEMPTS = 3


def fake_program(folder, text, name="faketorchrun", **fields):
    """An executable stand-in (a launcher, `tandem`) written into `folder`: `text` formatted with this Python
    (`python`) and `fields`. Returns its path."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text.format(python=sys.executable, **fields))
    os.chmod(path, 0o755)
    return path


def python_with(*modules):
    """A Python that imports every module: TANDEM_TORCH_PYTHON, else this one, else None."""
    for python in (os.environ.get("TANDEM_TORCH_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import " + ", ".join(modules)],
                                     capture_output=True).returncode == 0:
            return python
    return None


def needs(python, *modules):
    """unittest's skip when `python` is None, except under TANDEM_REQUIRE_TORCH=1 (CI), where the
    tests run and fail: CI installs these modules (scripts/install-deps.sh)."""
    if python is not None or os.environ.get("TANDEM_REQUIRE_TORCH") == "1":
        return lambda cls: cls
    return unittest.skip(f"{', '.join(modules)} not importable (TANDEM_TORCH_PYTHON names a Python with them)")


def torchrun(python, nproc, script, args, timeout=600):
    """torchrun --standalone of `script`; the completed process of the last attempt."""
    if python is None:
        raise AssertionError("no Python with torch: TANDEM_REQUIRE_TORCH=1 wants one (TANDEM_TORCH_PYTHON)")
    command = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc), script] + args
    for _ in range(ATTEMPTS):
        p = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        # The abort at exit, after the program printed its result, or in a rank that finished first, whose
        # abort made torchrun end the others (SIGTERM) before rank 0 printed.
        finished_then_aborted = p.returncode != 0 and EXIT_ABORT in p.stderr and (
            "TANDEM_RESULT" in p.stdout or "Signal 15 (SIGTERM) received" in p.stderr)
        if not finished_then_aborted:
            break
    return p
