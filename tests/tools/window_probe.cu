// Which device memory NCCL can register as a symmetric window (NCCL_WIN_COLL_SYMMETRIC), each
// registration proved by an all-gather in it: the evidence for which of a
// program's buffers the copy-engine route could use where they lie (docs/RUN.md, "Staging").
//
//   window_probe RANK NRANKS ID_FILE     one process per rank (ranks may share a GPU); rank 0
//                                        writes NCCL's unique id to ID_FILE, the others read it.
// Prints one JSON object per rank on stdout; exits 0 when every registration that succeeded gave an
// exact all-gather.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "file_rendezvous.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/nccl_check.h"

namespace {

constexpr size_t kBytes = size_t(4) << 20;

__global__ void fill(unsigned* p, size_t n, unsigned base) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = base + unsigned(i);
}

// cuMem memory as PyTorch's expandable segments make it: `pieces` physical allocations of `bytes`
// each, mapped back to back in one reserved range.
void* vmm_alloc(size_t bytes, int pieces, CUmemAllocationHandleType handle_type) {
  int device = 0;
  TANDEM_CUDA_CHECK(cudaGetDevice(&device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = handle_type;
  CUdeviceptr base = 0;
  TANDEM_REQUIRE(cuMemAddressReserve(&base, bytes * pieces, 0, 0, 0) == CUDA_SUCCESS, "cuMemAddressReserve");
  for (int i = 0; i < pieces; ++i) {
    CUmemGenericAllocationHandle h{};
    TANDEM_REQUIRE(cuMemCreate(&h, bytes, &prop, 0) == CUDA_SUCCESS, "cuMemCreate");
    TANDEM_REQUIRE(cuMemMap(base + i * bytes, bytes, 0, h, 0) == CUDA_SUCCESS, "cuMemMap");
    cuMemRelease(h);
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  TANDEM_REQUIRE(cuMemSetAccess(base, bytes * pieces, &access, 1) == CUDA_SUCCESS, "cuMemSetAccess");
  return reinterpret_cast<void*>(base);
}

}  // namespace

int main(int argc, char** argv) try {
  TANDEM_REQUIRE(argc == 4, "usage: window_probe RANK NRANKS ID_FILE");
  const int rank = std::stoi(argv[1]), nranks = std::stoi(argv[2]);
  int devices = 0;
  TANDEM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  TANDEM_CUDA_CHECK(cudaSetDevice(rank % devices));
  cuInit(0);
  const ncclUniqueId id = tandem_tools::file_rendezvous(rank, argv[3]);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  ncclComm_t comm = nullptr;
  TANDEM_NCCL_CHECK(nullptr, ncclCommInitRankConfig(&comm, nranks, id, rank, &config));
  nlohmann::json out;
  out["rank"] = rank;
  int version = 0;
  ncclGetVersion(&version);
  out["nccl"] = version;
  bool ok = true;

  // 1. Registration of each kind of memory (every rank tries the same kinds in the same order).
  struct Kind {
    const char* name;
    void* ptr;
    size_t bytes;
  };
  void* cuda_malloc = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&cuda_malloc, kBytes));
  void* nccl_mem = nullptr;
  TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&nccl_mem, 2 * kBytes));
  size_t granularity = 0;
  {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = rank % devices;
    cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  }
  const size_t piece = (kBytes + granularity - 1) / granularity * granularity;
  const std::vector<Kind> kinds = {
      {"cudaMalloc", cuda_malloc, kBytes},
      {"cuMem, POSIX fd handle, one allocation", vmm_alloc(piece, 1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), piece},
      {"cuMem, no shareable handle, one allocation", vmm_alloc(piece, 1, CU_MEM_HANDLE_TYPE_NONE), piece},
      {"cuMem, POSIX fd handle, two allocations mapped back to back",
       vmm_alloc(piece, 2, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), 2 * piece},
      {"ncclMemAlloc", nccl_mem, 2 * kBytes},
      {"ncclMemAlloc, from 4 KiB in", static_cast<char*>(nccl_mem) + 4096, kBytes},
      {"ncclMemAlloc, from 256 B in", static_cast<char*>(nccl_mem) + 256, kBytes},
  };
  for (const Kind& k : kinds) {
    ncclWindow_t w = nullptr;
    const ncclResult_t r = ncclCommWindowRegister(comm, k.ptr, k.bytes, &w, NCCL_WIN_COLL_SYMMETRIC);
    nlohmann::json row{{"memory", k.name}, {"registered", r == ncclSuccess}, {"result", ncclGetErrorString(r)}};
    if (r != ncclSuccess) row["last_error"] = ncclGetLastError(comm);
    if (r == ncclSuccess) {
      // An all-gather in the window proves the registration usable (NCCL runs it on the copy engines
      // where ranks on distinct GPUs of one NVLink domain have symmetric support; ranks sharing a
      // GPU get NCCL's kernels).
      unsigned* words = static_cast<unsigned*>(k.ptr);
      fill<<<64, 256>>>(words + size_t(rank) * 1024, 1024, unsigned(rank) << 24);
      const ncclResult_t g = ncclAllGather(words + size_t(rank) * 1024, words, 1024, ncclUint32, comm, nullptr);
      TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<unsigned> host(size_t(nranks) * 1024);
      TANDEM_CUDA_CHECK(cudaMemcpy(host.data(), words, host.size() * 4, cudaMemcpyDeviceToHost));
      bool exact = g == ncclSuccess;
      for (int p = 0; p < nranks; ++p)
        for (unsigned i = 0; i < 1024; ++i) exact = exact && host[size_t(p) * 1024 + i] == (unsigned(p) << 24) + i;
      row["all_gather_exact"] = exact;
      ok = ok && exact;
      TANDEM_NCCL_CHECK(comm, ncclCommWindowDeregister(comm, w));
    }
    out["registration"].push_back(row);
  }

  TANDEM_NCCL_CHECK(comm, ncclCommFinalize(comm));
  TANDEM_NCCL_CHECK(comm, ncclCommDestroy(comm));
  std::printf("%s\n", out.dump().c_str());
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "window_probe: %s\n", e.what());
  return 2;
}
