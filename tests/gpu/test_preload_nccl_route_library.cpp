// tandem::CopyEngineRoute (tandem/copy_engine_route.h), the library under the interposer's
// copy-engine route and tandem.torch, on 2 GPUs with one thread per rank: calls on two streams
// back to back without a host sync (the route orders them by its event), the pool grown once and
// reused, data placed in window_buffer() not staged, an all-to-all staged on both sides.
// Expected values and pool sizes are worked out here from the inputs and the layout rules of the
// header (parts aligned to 4 KiB, the pool in steps of 2 MiB, grown by half again at least).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "tandem/copy_engine_route.h"

namespace {

constexpr int kRanks = 2;
constexpr size_t kMiB = size_t(1) << 20;

float input(int rank, size_t i) { return float((rank + 1) * (1 + int(i % 5))); }

void upload(float* device, int rank, size_t n, cudaStream_t stream) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = input(rank, i);
  ASSERT_EQ(cudaMemcpyAsync(device, host.data(), n * 4, cudaMemcpyHostToDevice, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
}

std::vector<float> download(const float* device, size_t n) {
  std::vector<float> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

size_t count_wrong(const std::vector<float>& got, const std::function<float(size_t)>& expected) {
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != expected(i);
  return wrong;
}

void run(tandem::CopyEngineRoute& route, tandem::Collective kind, const void* send, void* recv, size_t count,
         cudaStream_t stream) {
  tandem::CopyEngineCall call;
  call.kind = kind;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.dtype = ncclFloat32;
  call.stream = stream;
  route.run(call);
}

struct RankResult {
  size_t wrong_small = 0, wrong_all_reduce = 0, wrong_all_gather = 0, wrong_windowed = 0, wrong_all_to_all = 0;
  tandem::CopyEngineRouteStats after_growth{}, after_window{}, at_end{};
  std::string error;
};

void run_rank(int r, ncclUniqueId id, RankResult& out) {
  try {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, kRanks, id, r), ncclSuccess);
    cudaStream_t a = nullptr, b = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
    const size_t n = kMiB;  // fp32 elements
    float *send = nullptr, *recv = nullptr, *gathered = nullptr;
    ASSERT_EQ(cudaMalloc(&send, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&recv, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&gathered, kRanks * n * 4), cudaSuccess);
    {
      tandem::WaitRules rules;
      rules.timeout_s = 120;
      tandem::CopyEngineRoute route(comm, rules);
      EXPECT_EQ(route.rank(), r);
      EXPECT_EQ(route.nranks(), kRanks);
      EXPECT_EQ(route.stats().pool_bytes, 0);  // nothing before the first call

      // 4096 fp32: input 16 KiB + scratch 16 KiB -> a 2 MiB pool.
      upload(send, r, n, a);
      run(route, tandem::Collective::AllReduce, send, recv, 4096, a);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_small = count_wrong(download(recv, 4096), [](size_t i) { return input(0, i) + input(1, i); });
      EXPECT_EQ(route.stats().pool_bytes, int64_t(2 * kMiB));

      // 1 Mi fp32 all-reduce on `a` (input 4 MiB + scratch 4 MiB: the pool grows to 8 MiB), then at
      // once an all-gather of its result on `b`: the route makes `b` wait for `a`'s call.
      run(route, tandem::Collective::AllReduce, send, recv, n, a);
      run(route, tandem::Collective::AllGather, recv, gathered, n, b);
      ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_all_reduce = count_wrong(download(recv, n), [](size_t i) { return input(0, i) + input(1, i); });
      out.wrong_all_gather =
          count_wrong(download(gathered, kRanks * n), [&](size_t i) { return input(0, i % n) + input(1, i % n); });
      out.after_growth = route.stats();

      // Data in window memory is used where it is: nothing staged.
      auto* window = static_cast<float*>(route.window_buffer(n * 4));
      upload(window, r, n, a);
      run(route, tandem::Collective::AllReduce, window, window, n, a);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_windowed = count_wrong(download(window, n), [](size_t i) { return input(0, i) + input(1, i); });
      out.after_window = route.stats();

      // Both sides staged. 64 Ki fp32 to and from each peer.
      const size_t per_peer = 65536;
      upload(gathered, r, kRanks * per_peer, a);
      run(route, tandem::Collective::AllToAll, gathered, recv, per_peer, a);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_all_to_all = count_wrong(download(recv, kRanks * per_peer), [&](size_t i) {
        return input(int(i / per_peer), size_t(r) * per_peer + i % per_peer);
      });
      out.at_end = route.stats();
    }  // collective: both ranks destroy their route here
    ASSERT_EQ(ncclCommDestroy(comm), ncclSuccess);
    cudaFree(send);
    cudaFree(recv);
    cudaFree(gathered);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

TEST(preload_nccl_route_library, OrderedAcrossStreamsGrownOnceWindowsNotStaged) {
  TANDEM_REQUIRE_GPUS(2);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<RankResult> results(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(run_rank, r, id, std::ref(results[size_t(r)]));
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    const RankResult& res = results[size_t(r)];
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(res.error, "");
    EXPECT_EQ(res.wrong_small, 0u);
    EXPECT_EQ(res.wrong_all_reduce, 0u);
    EXPECT_EQ(res.wrong_all_gather, 0u);
    EXPECT_EQ(res.wrong_windowed, 0u);
    EXPECT_EQ(res.wrong_all_to_all, 0u);
    // 2 MiB, then 8 MiB (needed 8 MiB > 2 MiB x 1.5): two registrations; the all-gather's 8 MiB output
    // fits. Staged: 16 KiB in and out, 4 MiB in and out, the all-gather's 4 MiB in and 8 MiB out.
    EXPECT_EQ(res.after_growth.calls, 3);
    EXPECT_EQ(res.after_growth.registrations, 2);
    EXPECT_EQ(res.after_growth.pool_bytes, int64_t(8 * kMiB));
    EXPECT_EQ(res.after_growth.staged_bytes, int64_t(2 * 16384 + 2 * 4 * kMiB + 4 * kMiB + 8 * kMiB));
    // The window buffer: one more registration, its bytes held, nothing staged.
    EXPECT_EQ(res.after_window.registrations, 3);
    EXPECT_EQ(res.after_window.pool_bytes, int64_t(12 * kMiB));
    EXPECT_EQ(res.after_window.staged_bytes, res.after_growth.staged_bytes);
    // The all-to-all: 512 KiB in, 512 KiB out, in the pool as it is.
    EXPECT_EQ(res.at_end.staged_bytes, res.after_window.staged_bytes + int64_t(2 * 512 * 1024));
    EXPECT_EQ(res.at_end.registrations, 3);
  }
}

}  // namespace
