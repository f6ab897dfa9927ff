// The copy-engine route's all-reduce per call, staged and with peer copies, beside NCCL's own, in one
// run: the time each form takes per call (rounds interleaved, the forms' order rotated each round),
// what it staged and copied with the peers, and whether its results were exact. What peer copies'
// barriers cost against the stagings they replace (docs/PERFORMANCE.md, "Peer copies").
//
//   route_timing RANK NRANKS ID_FILE [ROUNDS]   one process per rank (ranks may share a GPU: NCCL then
//                                                connects them as hosts of their own; times are not speed
//                                                results there); rank 0 writes NCCL's unique id to ID_FILE.
// Prints one JSON object per rank on stdout; exits 0 when every result was exact.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "file_rendezvous.h"
#include "tandem/copy_engine_route.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/nccl_check.h"
#include "tandem/peer_windows.h"

namespace {

constexpr int kCallsPerSample = 10;

// Rank r's element i: small integers, so every sum is exact in fp32 whatever its order.
__global__ void fill(float* p, size_t n, int rank) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = float((rank + 1) * int(1 + i % 7));
}

__global__ void count_wrong(const float* p, size_t n, int nranks, unsigned long long* wrong) {
  const float ranks_sum = float(nranks * (nranks + 1) / 2);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    if (p[i] != ranks_sum * float(1 + i % 7)) atomicAdd(wrong, 1ull);
}

struct Form {
  std::string name;
  std::unique_ptr<tandem::CopyEngineRoute> route;  // null: NCCL's own all-reduce
};

void all_reduce(const Form& form, ncclComm_t comm, const float* send, float* recv, size_t count, cudaStream_t s) {
  if (!form.route) {
    TANDEM_NCCL_CHECK(comm, ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, s));
    return;
  }
  tandem::CopyEngineCall call;
  call.kind = tandem::Collective::AllReduce;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.dtype = ncclFloat32;
  call.stream = s;
  form.route->run(call);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) try {
  TANDEM_REQUIRE(argc == 4 || argc == 5, "usage: route_timing RANK NRANKS ID_FILE [ROUNDS]");
  const int rank = std::stoi(argv[1]), nranks = std::stoi(argv[2]);
  const int rounds = argc == 5 ? std::stoi(argv[4]) : 5;
  TANDEM_REQUIRE(rounds >= 1, "route_timing: at least one round, not " + std::to_string(rounds));
  int devices = 0;
  TANDEM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  TANDEM_CUDA_CHECK(cudaSetDevice(rank % devices));
  const ncclUniqueId id = tandem_tools::file_rendezvous(rank, argv[3]);
  ncclComm_t comm = nullptr;
  TANDEM_NCCL_CHECK(nullptr, ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t stream = nullptr;
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // DDP's buckets: 1 MiB, 25 MiB (its default cap) and 25 MiB + 4 B (no multiple of any rank count).
  const std::vector<size_t> counts = {size_t(1) << 18, size_t(25) << 18, (size_t(25) << 18) + 1};
  const size_t largest = *std::max_element(counts.begin(), counts.end());
  float *send = nullptr, *recv = nullptr;
  unsigned long long* wrong = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&send, largest * sizeof(float)));
  TANDEM_CUDA_CHECK(cudaMalloc(&recv, largest * sizeof(float)));
  TANDEM_CUDA_CHECK(cudaMalloc(&wrong, sizeof *wrong));
  fill<<<1024, 256, 0, stream>>>(send, largest, rank);
  TANDEM_CUDA_CHECK_LAUNCH();

  // Each route reads TANDEM_ROUTE_PEER_COPIES at its first call (every rank sets it alike). Where NCCL
  // maps no peer's windows here (ranks on distinct hosts to it, as ranks sharing a GPU are), the
  // peer-copies form would be the staged one under another name: it is left out, and the JSON says why.
  const bool peers_by_address = tandem::every_peer_by_address(comm, nranks);
  tandem::WaitRules rules;
  rules.timeout_s = 120;
  std::vector<Form> forms;
  forms.push_back({"nccl", nullptr});
  forms.push_back({"staged", std::make_unique<tandem::CopyEngineRoute>(comm, rules)});
  if (peers_by_address) forms.push_back({"peer-copies", std::make_unique<tandem::CopyEngineRoute>(comm, rules)});
  for (const Form& f : forms) {
    if (!f.route) continue;
    setenv(tandem::kRoutePeerCopiesVariable, f.name == "staged" ? "0" : "1", 1);
    all_reduce(f, comm, send, recv, counts.front(), stream);  // lanes and a first pool
  }
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));

  struct Row {
    std::vector<double> ms_per_call;
    int64_t staged = 0, peer = 0;  // per call, from the route's counters
    unsigned long long wrong = 0;
  };
  std::vector<std::vector<Row>> rows(forms.size(), std::vector<Row>(counts.size()));
  cudaEvent_t begin = nullptr, end = nullptr;
  TANDEM_CUDA_CHECK(cudaEventCreate(&begin));
  TANDEM_CUDA_CHECK(cudaEventCreate(&end));
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < forms.size(); ++k) {
      const size_t f = (k + size_t(round)) % forms.size();  // each form first in turn
      for (size_t c = 0; c < counts.size(); ++c) {
        Row& row = rows[f][c];
        const tandem::CopyEngineRouteStats before =
            forms[f].route ? forms[f].route->stats() : tandem::CopyEngineRouteStats{};
        all_reduce(forms[f], comm, send, recv, counts[c], stream);  // warm: the pool at this size
        TANDEM_CUDA_CHECK(cudaEventRecord(begin, stream));
        for (int i = 0; i < kCallsPerSample; ++i) all_reduce(forms[f], comm, send, recv, counts[c], stream);
        TANDEM_CUDA_CHECK(cudaEventRecord(end, stream));
        TANDEM_CUDA_CHECK(cudaMemsetAsync(wrong, 0, sizeof *wrong, stream));
        count_wrong<<<1024, 256, 0, stream>>>(recv, counts[c], nranks, wrong);
        TANDEM_CUDA_CHECK_LAUNCH();
        unsigned long long host_wrong = 0;
        TANDEM_CUDA_CHECK(cudaMemcpyAsync(&host_wrong, wrong, sizeof host_wrong, cudaMemcpyDeviceToHost, stream));
        TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
        float ms = 0;
        TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
        row.ms_per_call.push_back(double(ms) / kCallsPerSample);
        row.wrong += host_wrong;
        if (forms[f].route) {
          const tandem::CopyEngineRouteStats after = forms[f].route->stats();
          row.staged = (after.staged_bytes - before.staged_bytes) / (kCallsPerSample + 1);
          row.peer = (after.peer_bytes - before.peer_bytes) / (kCallsPerSample + 1);
        }
      }
    }

  nlohmann::json out;
  out["rank"] = rank;
  out["nranks"] = nranks;
  out["devices"] = devices;
  int version = 0;
  ncclGetVersion(&version);
  out["nccl"] = version;
  out["peers_by_address"] = peers_by_address;
  out["calls_per_sample"] = kCallsPerSample;
  out["rounds"] = rounds;
  bool exact = true;
  for (size_t f = 0; f < forms.size(); ++f)
    for (size_t c = 0; c < counts.size(); ++c) {
      const Row& row = rows[f][c];
      exact = exact && row.wrong == 0;
      out["rows"].push_back({{"form", forms[f].name},
                             {"count", counts[c]},
                             {"bytes", counts[c] * sizeof(float)},
                             {"ms_per_call", row.ms_per_call},
                             {"median_ms", median(row.ms_per_call)},
                             {"min_ms", *std::min_element(row.ms_per_call.begin(), row.ms_per_call.end())},
                             {"max_ms", *std::max_element(row.ms_per_call.begin(), row.ms_per_call.end())},
                             {"staged_bytes_per_call", row.staged},
                             {"peer_bytes_per_call", row.peer},
                             {"wrong", row.wrong}});
    }
  out["exact"] = exact;
  std::printf("%s\n", out.dump().c_str());
  forms.clear();  // collective: every rank closes its routes here
  ncclCommDestroy(comm);
  return exact ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "route_timing: %s\n", e.what());
  return 2;
}
