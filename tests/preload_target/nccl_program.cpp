// A two-rank NCCL program (one process, one rank per GPU), unmodified, for the interposer's NCCL
// hooks on a GPU machine (tests/gpu/test_preload_nccl_gpu.cpp): ncclCommInitRank for each rank in
// one group, then an all-reduce, an all-gather and a reduce-scatter of fp32 data whose exact results
// are known, each checked on the host. Prints one JSON line; exit status 0 only when every result is
// exact. Usage: nccl_program [ELEMENTS_PER_RANK] [REPEATS]
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 2;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "nccl_program: %s\n", what.c_str());
  std::exit(2);
}
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail(std::string(what) + ": " + ncclGetErrorString(r));
}

// Rank r's input element i: small integers, so every sum is exact in fp32.
float input(int rank, size_t i) { return static_cast<float>((rank + 1) * (1 + static_cast<int>(i % 7))); }

struct Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;  // kRanks * n elements
  float* recv = nullptr;  // kRanks * n elements
};

// Copies rank r's `n * kRanks` inputs to the device, runs `issue` for every rank in one group, waits.
template <class Issue>
void run_collective(std::vector<Rank>& ranks, size_t n, const Issue& issue) {
  for (int r = 0; r < kRanks; ++r) {
    check(cudaSetDevice(r), "cudaSetDevice");
    std::vector<float> host(n * kRanks);
    for (size_t i = 0; i < host.size(); ++i) host[i] = input(r, i);
    check(cudaMemcpy(ranks[r].send, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "memcpy");
    check(cudaMemset(ranks[r].recv, 0, host.size() * sizeof(float)), "memset");
  }
  check(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < kRanks; ++r) issue(r, ranks[r]);
  check(ncclGroupEnd(), "ncclGroupEnd");
  for (int r = 0; r < kRanks; ++r) {
    check(cudaSetDevice(r), "cudaSetDevice");
    check(cudaStreamSynchronize(ranks[r].stream), "cudaStreamSynchronize");
  }
}

// Counts the elements of rank r's output (`count` of them) that differ from `expected(i)`.
template <class Expected>
size_t mismatches(const Rank& rank, int r, size_t count, const Expected& expected) {
  check(cudaSetDevice(r), "cudaSetDevice");
  std::vector<float> host(count);
  check(cudaMemcpy(host.data(), rank.recv, count * sizeof(float), cudaMemcpyDeviceToHost), "memcpy");
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += host[i] != expected(i);
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (1u << 20);
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < kRanks) fail("needs 2 GPUs");

  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::vector<Rank> ranks(kRanks);
  check(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < kRanks; ++r) {
    check(cudaSetDevice(r), "cudaSetDevice");
    check(ncclCommInitRank(&ranks[r].comm, kRanks, id, r), "ncclCommInitRank");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
  for (int r = 0; r < kRanks; ++r) {
    check(cudaSetDevice(r), "cudaSetDevice");
    check(cudaStreamCreate(&ranks[r].stream), "cudaStreamCreate");
    check(cudaMalloc(&ranks[r].send, n * kRanks * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&ranks[r].recv, n * kRanks * sizeof(float)), "cudaMalloc");
  }

  size_t wrong_all_reduce = 0, wrong_all_gather = 0, wrong_reduce_scatter = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    // All-reduce of n * kRanks elements: the sum over ranks, (1 + 2) * input(0, i).
    run_collective(ranks, n, [&](int, Rank& k) {
      check(ncclAllReduce(k.send, k.recv, n * kRanks, ncclFloat32, ncclSum, k.comm, k.stream), "ncclAllReduce");
    });
    for (int r = 0; r < kRanks; ++r)
      wrong_all_reduce += mismatches(ranks[r], r, n * kRanks, [](size_t i) { return 3 * input(0, i); });
    // All-gather of n elements per rank: rank q's first n inputs at q * n.
    run_collective(ranks, n, [&](int, Rank& k) {
      check(ncclAllGather(k.send, k.recv, n, ncclFloat32, k.comm, k.stream), "ncclAllGather");
    });
    for (int r = 0; r < kRanks; ++r)
      wrong_all_gather += mismatches(ranks[r], r, n * kRanks, [&](size_t i) { return input(int(i / n), i % n); });
    // Reduce-scatter to n elements per rank: rank r gets the sum of every rank's slice r.
    run_collective(ranks, n, [&](int, Rank& k) {
      check(ncclReduceScatter(k.send, k.recv, n, ncclFloat32, ncclSum, k.comm, k.stream), "ncclReduceScatter");
    });
    for (int r = 0; r < kRanks; ++r)
      wrong_reduce_scatter += mismatches(ranks[r], r, n, [&](size_t i) { return 3 * input(0, r * n + i); });
  }

  for (int r = 0; r < kRanks; ++r) {
    check(cudaSetDevice(r), "cudaSetDevice");
    check(ncclCommDestroy(ranks[r].comm), "ncclCommDestroy");
    check(cudaFree(ranks[r].send), "cudaFree");
    check(cudaFree(ranks[r].recv), "cudaFree");
    check(cudaStreamDestroy(ranks[r].stream), "cudaStreamDestroy");
  }
  const bool ok = wrong_all_reduce == 0 && wrong_all_gather == 0 && wrong_reduce_scatter == 0;
  std::printf(
      "{\"ok\": %s, \"elements_per_rank\": %zu, \"repeats\": %d, \"wrong_all_reduce\": %zu, "
      "\"wrong_all_gather\": %zu, \"wrong_reduce_scatter\": %zu}\n",
      ok ? "true" : "false", n, repeats, wrong_all_reduce, wrong_all_gather, wrong_reduce_scatter);
  return ok ? 0 : 1;
}
