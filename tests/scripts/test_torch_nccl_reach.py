#!/usr/bin/env python3
"""Every NCCL function that PyTorch can call to communicate or to make a configured communicator is
one `tandem run` hooks: the functions that take a stream in NCCL's header (the collectives, sends and
receives) or an ncclConfig_t (the communicators the nccl-* settings reach) that PyTorch's libraries
import (`nm -D --undefined-only` over torch/lib/*.so) must all be in the interposer's hook list. A
PyTorch that starts calling another one (NCCL 2.28's ncclGather, say) fails this test, instead of its
traffic or its communicators passing tandem unseen.

  test_torch_nccl_reach.py HOOK_NAMES_FILE NCCL_HEADER      (ctest: torch_nccl_reach)
"""
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_launch  # noqa: E402

TORCH = torch_launch.python_with("torch")
HOOK_NAMES, NCCL_HEADER = (sys.argv[1:3] + [None, None])[:2]
DECLARATION = re.compile(r"ncclResult_t\s+(nccl\w+)\s*\(([^)]*)\)\s*;")


def functions_taking(header_text, parameter_type):
    """NCCL's functions with a parameter of this type: cudaStream_t, those that put communication on a
    stream; ncclConfig_t, those that make a communicator from a configuration."""
    return {name for name, params in DECLARATION.findall(header_text) if parameter_type in params}


def imported_nccl(libraries):
    """The nccl* symbols the libraries import."""
    names = set()
    for lib in libraries:
        out = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True, text=True).stdout
        symbols = (line.split()[-1] for line in out.splitlines() if line.strip())
        names.update(name for name in symbols if name.startswith("nccl"))
    return names


class StreamFunctions(unittest.TestCase):
    def test_the_header_parser_finds_collectives_and_creations_and_leaves_the_rest(self):
        header = """ncclResult_t  ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t  ncclGroupStart();
ncclResult_t  ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t  ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
    ncclComm_t comm, cudaStream_t stream);
ncclResult_t  ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t* config);"""
        self.assertEqual(functions_taking(header, "cudaStream_t"), {"ncclAllReduce", "ncclSend"})
        self.assertEqual(functions_taking(header, "ncclConfig_t"), {"ncclCommSplit"})


@torch_launch.needs(TORCH, "torch")
class PyTorchsNcclCalls(unittest.TestCase):
    def test_every_communicating_or_configuring_function_pytorch_imports_is_hooked(self):
        self.assertTrue(HOOK_NAMES and NCCL_HEADER, "usage: test_torch_nccl_reach.py HOOK_NAMES_FILE NCCL_HEADER")
        with open(HOOK_NAMES) as f:
            hooked = set(f.read().split())
        with open(NCCL_HEADER) as f:
            header = f.read()
        communicating = functions_taking(header, "cudaStream_t") | functions_taking(header, "ncclConfig_t")
        self.assertTrue({"ncclAllReduce", "ncclCommSplit"} <= communicating)
        lib = subprocess.run([TORCH, "-c", "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
        libraries = [os.path.join(lib, f) for f in sorted(os.listdir(lib)) if ".so" in f]
        imported = imported_nccl(libraries)
        if not imported:
            self.skipTest(f"this PyTorch's libraries in {lib} import no NCCL (a CPU-only build)")
        used = imported & communicating
        self.assertIn("ncclAllReduce", used)
        self.assertEqual(used - hooked, set(), f"PyTorch calls NCCL functions tandem run does not hook ({lib})")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]])
