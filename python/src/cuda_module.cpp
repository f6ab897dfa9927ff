// tandem._cuda: the part of tandem that runs on the GPU, for tandem.torch. Links the shared CUDA
// runtime and NCCL by SONAME; tandem.torch imports it after torch, so both resolve to the copies
// PyTorch loaded (python/CMakeLists.txt). The copy-engine all-reduce
// (include/tandem/copy_engine.h) is to be bound here, as one call on a process group's communicator.
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nccl.h>

#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace nb = nanobind;

NB_MODULE(_cuda, m) {
  m.doc() = "tandem's GPU controls for PyTorch (import tandem.torch, which imports torch first)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tandem::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  // The version of the NCCL this process runs, as NCCL_VERSION_CODE (22809 for 2.28.9): the one
  // PyTorch loaded when tandem.torch imported this module after torch.
  m.def("nccl_version", [] {
    int version = 0;
    TANDEM_NCCL_CHECK(nullptr, ncclGetVersion(&version));
    return version;
  });
  // The CUDA runtime's version (13000 for 13.0): the shared runtime, PyTorch's once torch is loaded.
  m.def("cuda_runtime_version", [] {
    int version = 0;
    TANDEM_CUDA_CHECK(cudaRuntimeGetVersion(&version));
    return version;
  });
}
