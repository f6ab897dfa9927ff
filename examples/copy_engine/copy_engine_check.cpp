// Copy-engine collectives on a program's own communicators and buffers, checked exactly.
//
// One process drives every visible GPU, one thread per GPU (a rank). Each rank splits a copy-engine
// communicator from its own (PolicyCommunicators), builds the lanes (CopyEngineLanes), registers its
// ncclMemAlloc buffers as symmetric windows on every lane (SymmetricWindows), then runs all-reduce,
// reduce-scatter and all-gather (out of place and in place) on bf16 and fp32 data. Inputs are small
// integers, so every sum is exact and the results are compared for equality with sums computed here
// on the host.
//
// Exit codes: 0 all exact; 1 a wrong element or an error; 77 fewer than 2 GPUs (skipped).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <tandem/communicators.h>
#include <tandem/copy_engine.h>
#include <tandem/cuda_check.h>
#include <tandem/error.h>
#include <tandem/nccl_check.h>
#include <tandem/nccl_wait.h>
#include <tandem/policy.h>
#include <tandem/symmetric_windows.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kSkip = 77;

// Rank r's input element i: an integer in [-8, 8], different per rank and element. A sum over up to
// 16 ranks stays within bf16's exact integers (|x| <= 256).
float input_value(int rank, size_t i) { return float(int((uint64_t(rank) * 7 + i * 3 + i / 5) % 17) - 8); }

// Element bits of a value in `dtype` (in bf16, exact for these small integers).
void store(std::vector<unsigned char>& bytes, size_t i, float v, tandem::DType dtype) {
  if (dtype == tandem::DType::FP32) {
    std::memcpy(bytes.data() + i * 4, &v, 4);
  } else {
    const __nv_bfloat16 half = __float2bfloat16(v);
    std::memcpy(bytes.data() + i * 2, &half, 2);
  }
}

float load(const std::vector<unsigned char>& bytes, size_t i, tandem::DType dtype) {
  if (dtype == tandem::DType::FP32) {
    float v = 0;
    std::memcpy(&v, bytes.data() + i * 4, 4);
    return v;
  }
  __nv_bfloat16 half;
  std::memcpy(&half, bytes.data() + i * 2, 2);
  return __bfloat162float(half);
}

struct Shared {
  int nranks = 0;
  std::atomic<bool> failed{false};
  std::mutex print;
  int wrong_cases = 0;
};

class Rank {
 public:
  Rank(Shared& shared, int rank, ncclComm_t parent) : shared_(shared), rank_(rank), parent_(parent) {}

  void run() {
    TANDEM_CUDA_CHECK(cudaSetDevice(rank_));
    tandem::WaitRules rules;
    rules.timeout_s = 120;
    rules.who = "rank " + std::to_string(rank_);
    // A rank that failed leaves the others waiting for it: they give up at once instead.
    rules.each_poll = [this] {
      if (shared_.failed) TANDEM_THROW("another rank failed");
    };
    const tandem::OverlapPolicy policy = tandem::parse_policy("copy-engine");
    tandem::PolicyCommunicators comms(parent_, rules);
    ncclComm_t ce = comms.communicator_for(policy);
    tandem::CopyEngineLanes lanes(ce, comms.config_for(policy), rules);

    const int n = shared_.nranks;
    // 4096 elements per rank take the sum's 16-byte path; 1001 (an odd chunk) the element-wise one.
    const size_t max_count = size_t(n) * 4096;
    const size_t bytes = max_count * 4;
    Buffer send(bytes), recv(bytes), scratch(bytes);
    {
      tandem::SymmetricWindows windows(rules);
      const std::vector<tandem::ByteRange> ranges = {
          {send.ptr, int64_t(bytes)}, {recv.ptr, int64_t(bytes)}, {scratch.ptr, int64_t(bytes)}};
      for (ncclComm_t lane : lanes.comms()) windows.add(lane, ranges, "example buffers");
      cudaStream_t stream = nullptr;
      TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      for (tandem::DType dtype : {tandem::DType::BF16, tandem::DType::FP32})
        for (size_t per_rank : {size_t(4096), size_t(1001)})
          run_cases(lanes, rules, send, recv, scratch, dtype, per_rank, stream);
      TANDEM_CUDA_CHECK(cudaStreamDestroy(stream));
      windows.release("example buffers");
    }
  }

 private:
  struct Buffer {
    explicit Buffer(size_t bytes) { TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&ptr, bytes)); }
    ~Buffer() { ncclMemFree(ptr); }
    void* ptr = nullptr;
  };

  void upload(void* dst, size_t offset_elements, const std::vector<float>& values, tandem::DType dtype) {
    std::vector<unsigned char> bytes(values.size() * tandem::dtype_size(dtype));
    for (size_t i = 0; i < values.size(); ++i) store(bytes, i, values[i], dtype);
    TANDEM_CUDA_CHECK(cudaMemcpy(static_cast<char*>(dst) + offset_elements * tandem::dtype_size(dtype), bytes.data(),
                                 bytes.size(), cudaMemcpyHostToDevice));
  }

  std::vector<float> download(const void* src, size_t count, tandem::DType dtype) {
    std::vector<unsigned char> bytes(count * tandem::dtype_size(dtype));
    TANDEM_CUDA_CHECK(cudaMemcpy(bytes.data(), src, bytes.size(), cudaMemcpyDeviceToHost));
    std::vector<float> out(count);
    for (size_t i = 0; i < count; ++i) out[i] = load(bytes, i, dtype);
    return out;
  }

  std::vector<float> inputs(size_t count) const {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = input_value(rank_, i);
    return v;
  }

  float sum_over_ranks(size_t i) const {
    float s = 0;
    for (int r = 0; r < shared_.nranks; ++r) s += input_value(r, i);
    return s;
  }

  void check(const std::string& what, const std::vector<float>& got, const std::vector<float>& expected) {
    size_t wrong = 0, first = got.size();
    for (size_t i = 0; i < got.size(); ++i)
      if (!(got[i] == expected[i])) {
        ++wrong;
        first = std::min(first, i);
      }
    const std::lock_guard<std::mutex> lock(shared_.print);
    if (wrong) {
      ++shared_.wrong_cases;
      std::printf("rank %d: %s: %zu of %zu elements wrong (first at %zu: %g, expected %g)\n", rank_, what.c_str(),
                  wrong, got.size(), first, got[first], expected[first]);
    } else if (rank_ == 0) {
      std::printf("%s: exact\n", what.c_str());
    }
  }

  void run_cases(const tandem::CopyEngineLanes& lanes, const tandem::WaitRules& rules, Buffer& send, Buffer& recv,
                 Buffer& scratch, tandem::DType dtype, size_t per_rank, cudaStream_t stream) {
    const int n = shared_.nranks;
    const size_t total = per_rank * size_t(n);
    const std::string tag = std::string(tandem::to_string(dtype)) + ", " + std::to_string(per_rank) + " per rank";
    auto finish = [&](const std::string& step) { tandem::await_stream(stream, lanes.comms(), rules, step); };

    // All-reduce of `total` elements.
    upload(send.ptr, 0, inputs(total), dtype);
    tandem::copy_engine_all_reduce(lanes, send.ptr, recv.ptr, scratch.ptr, total, dtype, stream);
    finish("all-reduce");
    std::vector<float> expected(total);
    for (size_t i = 0; i < total; ++i) expected[i] = sum_over_ranks(i);
    check("all-reduce (" + tag + ")", download(recv.ptr, total, dtype), expected);

    // In place: the input is the output.
    upload(recv.ptr, 0, inputs(total), dtype);
    tandem::copy_engine_all_reduce(lanes, recv.ptr, recv.ptr, scratch.ptr, total, dtype, stream);
    finish("in-place all-reduce");
    check("in-place all-reduce (" + tag + ")", download(recv.ptr, total, dtype), expected);

    // Reduce-scatter: this rank keeps chunk `rank` of the sum.
    upload(send.ptr, 0, inputs(total), dtype);
    tandem::copy_engine_reduce_scatter(lanes, send.ptr, recv.ptr, scratch.ptr, per_rank, dtype, stream);
    finish("reduce-scatter");
    std::vector<float> chunk(per_rank);
    for (size_t i = 0; i < per_rank; ++i) chunk[i] = sum_over_ranks(size_t(rank_) * per_rank + i);
    check("reduce-scatter (" + tag + ")", download(recv.ptr, per_rank, dtype), chunk);

    // All-gather: chunk r of the output is rank r's input.
    std::vector<float> gathered(total);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < per_rank; ++i) gathered[size_t(r) * per_rank + i] = input_value(r, i);
    upload(send.ptr, 0, inputs(per_rank), dtype);
    tandem::copy_engine_all_gather(lanes, send.ptr, recv.ptr, per_rank, dtype, stream);
    finish("all-gather");
    check("all-gather (" + tag + ")", download(recv.ptr, total, dtype), gathered);

    // In place: the input is this rank's chunk of the output.
    upload(recv.ptr, size_t(rank_) * per_rank, inputs(per_rank), dtype);
    const void* own = static_cast<const char*>(recv.ptr) + size_t(rank_) * per_rank * tandem::dtype_size(dtype);
    tandem::copy_engine_all_gather(lanes, own, recv.ptr, per_rank, dtype, stream);
    finish("in-place all-gather");
    check("in-place all-gather (" + tag + ")", download(recv.ptr, total, dtype), gathered);
  }

  Shared& shared_;
  int rank_;
  ncclComm_t parent_;
};

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  if (devices < 2) {
    std::printf("copy_engine_check: skipped: needs 2 GPUs, found %d\n", devices);
    return kSkip;
  }
  Shared shared;
  shared.nranks = devices;
  std::vector<ncclComm_t> parents(static_cast<size_t>(devices), nullptr);
  // The program's own communicators, one per GPU, as any NCCL program has them.
  if (ncclCommInitAll(parents.data(), devices, nullptr) != ncclSuccess) {
    std::printf("copy_engine_check: ncclCommInitAll failed\n");
    return 1;
  }
  std::vector<std::string> errors(static_cast<size_t>(devices));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < devices; ++rank)
    threads.emplace_back([&, rank] {
      try {
        Rank(shared, rank, parents[size_t(rank)]).run();
      } catch (const std::exception& e) {
        errors[size_t(rank)] = e.what();
        shared.failed = true;
      }
      // Every rank closes its own communicator from its own thread (a healthy close meets the peers).
      tandem::close_communicator(parents[size_t(rank)], !shared.failed, 60);
    });
  for (auto& t : threads) t.join();
  int status = shared.wrong_cases ? 1 : 0;
  for (int rank = 0; rank < devices; ++rank)
    if (!errors[size_t(rank)].empty()) {
      std::printf("rank %d: %s\n", rank, errors[size_t(rank)].c_str());
      status = 1;
    }
  std::printf("copy_engine_check: %s on %d GPUs\n", status ? "FAILED" : "every result exact", devices);
  return status;
}
