// A two-rank NCCL program (one process, one thread and one GPU per rank, no NCCL groups), unmodified,
// for the copy-engine route behind `tandem run --policy copy-engine`
// (tests/gpu/test_preload_nccl_route_gpu.cpp): ncclAllReduce, ncclReduceScatter, ncclAllGather and
// ncclAlltoAll on cudaMalloc buffers, in bf16, fp16 and fp32, at even and uneven sizes (an all-reduce
// of an odd count does not split into equal chunks; odd per-rank counts make chunks that are not
// 16-byte aligned), out of place and in place, each twice. Inputs are small integers, so every sum is
// exact in every type; each result is checked on the host against values computed here. Prints one
// JSON line; exit status 0 only when every result is exact.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kRanks = 2;
constexpr int kRepeats = 2;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "nccl_route_program: %s\n", what.c_str());
  std::exit(2);
}
void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) fail(what + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess) fail(what + ": " + ncclGetErrorString(r));
}

// Rank r's input element i: at most 2 * 7 = 14, and sums over two ranks at most 21: exact in bf16.
float input(int rank, size_t i) { return static_cast<float>((rank + 1) * (1 + static_cast<int>(i % 7))); }

struct Type {
  ncclDataType_t nccl;
  const char* name;
  size_t bytes;
};
const Type kTypes[] = {{ncclBfloat16, "bf16", 2}, {ncclFloat16, "fp16", 2}, {ncclFloat32, "fp32", 4}};

std::vector<unsigned char> encode(const Type& t, const std::vector<float>& values) {
  std::vector<unsigned char> out(values.size() * t.bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    if (t.nccl == ncclBfloat16) {
      const __nv_bfloat16 v = __float2bfloat16(values[i]);
      std::memcpy(&out[i * 2], &v, 2);
    } else if (t.nccl == ncclFloat16) {
      const __half v = __float2half(values[i]);
      std::memcpy(&out[i * 2], &v, 2);
    } else {
      std::memcpy(&out[i * 4], &values[i], 4);
    }
  }
  return out;
}

float decode(const Type& t, const unsigned char* p) {
  if (t.nccl == ncclBfloat16) {
    __nv_bfloat16 v;
    std::memcpy(&v, p, 2);
    return __bfloat162float(v);
  }
  if (t.nccl == ncclFloat16) {
    __half v;
    std::memcpy(&v, p, 2);
    return __half2float(v);
  }
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

enum class Kind { AllReduce, ReduceScatter, AllGather, AllToAll };

struct Case {
  Kind kind;
  size_t count;  // NCCL's count for the kind
  bool in_place;
  const char* name;
};
// The copy-engine route takes every case but the odd all-reduce (count-not-divisible).
const Case kCases[] = {
    {Kind::AllReduce, 4096, false, "all_reduce_4096"},
    {Kind::AllReduce, 1 << 20, false, "all_reduce_1Mi"},
    {Kind::AllReduce, (1 << 20) + 1, false, "all_reduce_uneven"},
    {Kind::AllReduce, 1 << 20, true, "all_reduce_in_place"},
    {Kind::ReduceScatter, 1001, false, "reduce_scatter_1001"},
    {Kind::ReduceScatter, 1 << 20, false, "reduce_scatter_1Mi"},
    {Kind::AllGather, 1001, false, "all_gather_1001"},
    {Kind::AllGather, 1 << 20, false, "all_gather_1Mi"},
    {Kind::AllToAll, 1001, false, "all_to_all_1001"},
    {Kind::AllToAll, 1 << 18, false, "all_to_all_256Ki"},
};

// Elements of the input and the output of a case on each rank.
size_t input_elements(const Case& c) {
  return c.kind == Kind::AllGather ? c.count : c.kind == Kind::AllReduce ? c.count : c.count * kRanks;
}
size_t output_elements(const Case& c) {
  return c.kind == Kind::ReduceScatter ? c.count : c.kind == Kind::AllReduce ? c.count : c.count * kRanks;
}

// What rank r must hold at output element i.
float expected(const Case& c, int r, size_t i) {
  switch (c.kind) {
    case Kind::AllReduce:
      return input(0, i) + input(1, i);
    case Kind::ReduceScatter:
      return input(0, r * c.count + i) + input(1, r * c.count + i);
    case Kind::AllGather:
      return input(static_cast<int>(i / c.count), i % c.count);
    case Kind::AllToAll:
      break;
  }
  // Rank q's chunk r lands in chunk q.
  return input(static_cast<int>(i / c.count), r * c.count + i % c.count);
}

std::mutex g_mutex;
std::vector<std::pair<std::string, size_t>> g_wrong;  // (case, mismatches) for every case with any

void run_rank(int r, ncclUniqueId id) {
  check(cudaSetDevice(r), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, kRanks, id, r), "ncclCommInitRank");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  size_t largest = 0;
  for (const Case& c : kCases) largest = std::max({largest, input_elements(c), output_elements(c)});
  void *send = nullptr, *recv = nullptr;
  check(cudaMalloc(&send, largest * 4), "cudaMalloc");
  check(cudaMalloc(&recv, largest * 4), "cudaMalloc");

  for (int rep = 0; rep < kRepeats; ++rep)
    for (const Type& t : kTypes)
      for (const Case& c : kCases) {
        const std::string name = std::string(c.name) + "_" + t.name;
        std::vector<float> in(input_elements(c));
        for (size_t i = 0; i < in.size(); ++i) in[i] = input(r, i);
        const auto bytes = encode(t, in);
        void* source = c.in_place ? recv : send;
        check(cudaMemcpy(source, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), name);
        if (!c.in_place) check(cudaMemset(recv, 0xff, output_elements(c) * t.bytes), name);
        switch (c.kind) {
          case Kind::AllReduce:
            check(ncclAllReduce(source, recv, c.count, t.nccl, ncclSum, comm, stream), name);
            break;
          case Kind::ReduceScatter:
            check(ncclReduceScatter(source, recv, c.count, t.nccl, ncclSum, comm, stream), name);
            break;
          case Kind::AllGather:
            check(ncclAllGather(source, recv, c.count, t.nccl, comm, stream), name);
            break;
          case Kind::AllToAll:
            check(ncclAlltoAll(source, recv, c.count, t.nccl, comm, stream), name);
            break;
        }
        check(cudaStreamSynchronize(stream), name);
        std::vector<unsigned char> out(output_elements(c) * t.bytes);
        check(cudaMemcpy(out.data(), recv, out.size(), cudaMemcpyDeviceToHost), name);
        size_t wrong = 0;
        for (size_t i = 0; i < output_elements(c); ++i) wrong += decode(t, &out[i * t.bytes]) != expected(c, r, i);
        if (wrong) {
          const std::lock_guard<std::mutex> lock(g_mutex);
          g_wrong.emplace_back("rank" + std::to_string(r) + "_" + name, wrong);
        }
      }

  check(ncclCommDestroy(comm), "ncclCommDestroy");
  check(cudaFree(send), "cudaFree");
  check(cudaFree(recv), "cudaFree");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

}  // namespace

int main() {
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < kRanks) fail("needs 2 GPUs");
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.emplace_back(run_rank, r, id);
  for (auto& t : ranks) t.join();
  std::string wrong = "{";
  for (size_t i = 0; i < g_wrong.size(); ++i)
    wrong += (i ? ", \"" : "\"") + g_wrong[i].first + "\": " + std::to_string(g_wrong[i].second);
  wrong += "}";
  const size_t cases = sizeof kCases / sizeof kCases[0] * (sizeof kTypes / sizeof kTypes[0]) * kRepeats;
  std::printf("{\"ok\": %s, \"cases_per_rank\": %zu, \"wrong\": %s}\n", g_wrong.empty() ? "true" : "false", cases,
              wrong.c_str());
  return g_wrong.empty() ? 0 : 1;
}
