// tandem::CopyEngineRoute (tandem/copy_engine_route.h), the library under the interposer's
// copy-engine route and tandem.torch, on 2 GPUs with one thread per rank: calls on two streams
// back to back without a host sync (the route orders them by its event), the pool grown once and
// reused, data placed in window_buffer() not staged, an all-to-all staged on both sides.
// Expected values and pool sizes are worked out here from the inputs and the layout rules of the
// header (parts aligned to 4 KiB, the pool in steps of 2 MiB, grown by half again at least); the bytes
// staged and copied with the peers are the plans' (tandem/copy_engine_plan.h, checked on CPU), and
// where the two GPUs reach each other's memory (peer copies) the all-reduces stage nothing. And a
// route with a small pool cap: reduce-scatters, all-gathers and all-to-alls larger than it run in
// strided pieces, the pool never past the cap, the results exact, only the peers' parts staged.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "tandem/copy_engine_plan.h"
#include "tandem/copy_engine_route.h"
#include "tandem/peer_windows.h"

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

// What the plans of one fp32 call of rank `rank` stage and copy with the peers, in bytes, over its
// pieces under `cap`.
struct Planned {
  int64_t staged = 0, peer = 0;
};
Planned planned(tandem::Collective kind, size_t count, int rank, bool peers, bool send_in_window = false,
                bool recv_in_window = false, bool in_place = false, size_t cap = tandem::kDefaultRoutePoolBytes) {
  tandem::PlanRequest whole;
  whole.kind = kind;
  whole.count = count;
  whole.nranks = kRanks;
  whole.rank = rank;
  whole.element_bytes = 4;
  whole.send_in_window = send_in_window;
  whole.recv_in_window = recv_in_window;
  whole.in_place = in_place;
  whole.peer_copies = peers;
  Planned p;
  for (const tandem::CallPiece& piece : tandem::pieces_within(whole, cap))
    for (const tandem::PlanStep& step :
         tandem::plan_copy_engine_collective(tandem::piece_request(whole, piece)).steps) {
      p.staged += int64_t(tandem::staged_elements(step) * 4);
      p.peer += int64_t(tandem::peer_elements(step, rank, kRanks) * 4);
    }
  return p;
}

struct RankResult {
  bool reachable = false;  // every peer's window memory by address (NCCL's LSA team)
  size_t wrong_small = 0, wrong_all_reduce = 0, wrong_all_gather = 0, wrong_windowed = 0, wrong_all_to_all = 0;
  tandem::CopyEngineRouteStats after_growth{}, after_window{}, at_end{};
  std::string error;
};

void run_rank(int r, ncclUniqueId id, RankResult& out) {
  try {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, kRanks, id, r), ncclSuccess);
    out.reachable = tandem::every_peer_by_address(comm, kRanks);
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

// The route reads TANDEM_ROUTE_PEER_COPIES when its lanes are created: set for one test, then restored.
class ScopedPeerCopies {
 public:
  explicit ScopedPeerCopies(bool on) {
    if (const char* was = std::getenv(tandem::kRoutePeerCopiesVariable)) previous_ = was;
    setenv(tandem::kRoutePeerCopiesVariable, on ? "1" : "0", 1);
  }
  ~ScopedPeerCopies() {
    if (previous_)
      setenv(tandem::kRoutePeerCopiesVariable, previous_->c_str(), 1);
    else
      unsetenv(tandem::kRoutePeerCopiesVariable);
  }

 private:
  std::optional<std::string> previous_;
};

// Staged (the default) and with peer copies.
class preload_nccl_route_library : public ::testing::TestWithParam<bool> {};

TEST_P(preload_nccl_route_library, OrderedAcrossStreamsGrownOnceWindowsNotStaged) {
  TANDEM_REQUIRE_GPUS(2);
  ScopedPeerCopies setting(GetParam());
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
    // Two GPUs of one node: NCCL's LSA team is both ranks, so the route copies with the peer when asked.
    EXPECT_TRUE(res.reachable);
    const bool peers = GetParam() && res.reachable;
    EXPECT_EQ(res.wrong_small, 0u);
    EXPECT_EQ(res.wrong_all_reduce, 0u);
    EXPECT_EQ(res.wrong_all_gather, 0u);
    EXPECT_EQ(res.wrong_windowed, 0u);
    EXPECT_EQ(res.wrong_all_to_all, 0u);
    using tandem::Collective;
    // 2 MiB, then 8 MiB (needed 8 MiB > 2 MiB x 1.5, staged or with peer copies): two registrations;
    // the all-gather's 8 MiB output fits.
    EXPECT_EQ(res.after_growth.calls, 3);
    EXPECT_EQ(res.after_growth.registrations, 2);
    EXPECT_EQ(res.after_growth.pool_bytes, int64_t(8 * kMiB));
    // Only the peers' halves move: staged in and out 8 KiB and 2 MiB each way, or with peer copies
    // nothing staged and as much pushed and pulled; the all-gather stages its 4 MiB in and the
    // peer's 4 MiB out, or with peer copies its 4 MiB in for the peer to pull.
    const Planned small = planned(Collective::AllReduce, 4096, r, peers);
    const Planned large = planned(Collective::AllReduce, kMiB, r, peers);
    EXPECT_EQ(small.staged + small.peer, int64_t(16384));
    EXPECT_EQ(large.staged + large.peer, int64_t(4 * kMiB));
    if (peers) EXPECT_EQ(small.staged + large.staged, 0);
    const Planned gather = planned(Collective::AllGather, kMiB, r, peers);
    EXPECT_EQ(gather.staged, int64_t(peers ? 4 * kMiB : 8 * kMiB));  // its input only, with peer copies
    EXPECT_EQ(res.after_growth.staged_bytes, small.staged + large.staged + gather.staged);
    EXPECT_EQ(res.after_growth.peer_bytes, small.peer + large.peer + gather.peer);
    // The window buffer: one more registration, its bytes held, nothing staged.
    EXPECT_EQ(res.after_window.registrations, 3);
    EXPECT_EQ(res.after_window.pool_bytes, int64_t(12 * kMiB));
    EXPECT_EQ(res.after_window.staged_bytes, res.after_growth.staged_bytes);
    EXPECT_EQ(res.after_window.peer_bytes, res.after_growth.peer_bytes);
    // The all-to-all, in the pool as it is: the peer's 256 KiB in and out, or with peer copies pushed in
    // and staged out.
    const Planned all_to_all = planned(Collective::AllToAll, 65536, r, peers);
    EXPECT_EQ(all_to_all.staged, int64_t(peers ? 256 * 1024 : 512 * 1024));
    EXPECT_EQ(res.at_end.staged_bytes, res.after_window.staged_bytes + all_to_all.staged);
    EXPECT_EQ(res.at_end.peer_bytes, res.after_window.peer_bytes + all_to_all.peer);
    EXPECT_EQ(res.at_end.registrations, 3);
  }
}

// Exact in fp32, and different in every segment and every piece of one (4093 is prime, the pieces are
// multiples of 4096 elements).
float value(int rank, size_t i) { return float(rank * 4096 + int(i % 4093)); }

void upload_values(float* device, int rank, size_t n, cudaStream_t stream) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = value(rank, i);
  ASSERT_EQ(cudaMemcpyAsync(device, host.data(), n * 4, cudaMemcpyHostToDevice, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
}

struct CappedResult {
  bool reachable = false;  // every peer's window memory by address (NCCL's LSA team)
  size_t wrong_reduce_scatter = 0, wrong_all_gather = 0, wrong_all_to_all = 0, wrong_windowed = 0;
  tandem::CopyEngineRouteStats staged{}, at_end{};
  std::string error;
};

void run_capped_rank(int r, ncclUniqueId id, CappedResult& out) {
  try {
    ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, kRanks, id, r), ncclSuccess);
    out.reachable = tandem::every_peer_by_address(comm, kRanks);
    cudaStream_t a = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
    const size_t n = kMiB;  // fp32 elements per rank's segment: 4 MiB
    float *send = nullptr, *recv = nullptr;
    ASSERT_EQ(cudaMalloc(&send, kRanks * n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&recv, kRanks * n * 4), cudaSuccess);
    {
      tandem::WaitRules rules;
      rules.timeout_s = 120;
      tandem::CopyEngineRoute route(comm, rules, 2 * kMiB);

      // Reduce-scatter: whole, its pool would be 8 + 4 + 8 MiB; in pieces each rank's segment is read
      // 1 Mi elements apart.
      // Segment j of rank q's send holds value(q x ranks + j, i) as its element i.
      const auto upload_segments = [&](float* base) {
        for (int j = 0; j < kRanks; ++j) upload_values(base + size_t(j) * n, r * kRanks + j, n, a);
      };
      const auto reduced = [&](size_t i) {
        float sum = 0;
        for (int q = 0; q < kRanks; ++q) sum += value(q * kRanks + r, i);
        return sum;
      };
      upload_segments(send);
      run(route, tandem::Collective::ReduceScatter, send, recv, n, a);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_reduce_scatter = count_wrong(download(recv, n), reduced);

      // All-gather in place: this rank's segment of recv is its input; every piece writes each rank's
      // part of its segment.
      upload_values(recv + size_t(r) * n, r, n, a);
      run(route, tandem::Collective::AllGather, recv + size_t(r) * n, recv, n, a);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_all_gather =
          count_wrong(download(recv, kRanks * n), [&](size_t i) { return value(int(i / n), i % n); });

      // All-to-all: strided on both sides. Rank r's segment j goes to rank j's segment r.
      upload_segments(send);
      run(route, tandem::Collective::AllToAll, send, recv, n, a);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_all_to_all =
          count_wrong(download(recv, kRanks * n), [&](size_t i) { return value(int(i / n) * kRanks + r, i % n); });
      out.staged = route.stats();

      // A reduce-scatter whose send lies in window memory: its pieces read each rank's segment where
      // it is (nothing staged in); only the output, outside the windows, is staged out.
      auto* window = static_cast<float*>(route.window_buffer(kRanks * n * 4));
      upload_segments(window);
      run(route, tandem::Collective::ReduceScatter, window, recv, n, a);
      ASSERT_EQ(cudaStreamSynchronize(a), cudaSuccess);
      out.wrong_windowed = count_wrong(download(recv, n), reduced);
      out.at_end = route.stats();
    }  // collective: both ranks destroy their route here
    ASSERT_EQ(ncclCommDestroy(comm), ncclSuccess);
    cudaFree(send);
    cudaFree(recv);
    cudaStreamDestroy(a);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

TEST_P(preload_nccl_route_library, EveryKindLargerThanThePoolCapRunsInPiecesWithinIt) {
  TANDEM_REQUIRE_GPUS(2);
  ScopedPeerCopies setting(GetParam());
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<CappedResult> results(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(run_capped_rank, r, id, std::ref(results[size_t(r)]));
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    const CappedResult& res = results[size_t(r)];
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(res.error, "");
    // Two GPUs of one node: NCCL's LSA team is both ranks, so the route copies with the peer when asked.
    EXPECT_TRUE(res.reachable);
    const bool peers = GetParam() && res.reachable;
    EXPECT_EQ(res.wrong_reduce_scatter, 0u);
    EXPECT_EQ(res.wrong_all_gather, 0u);
    EXPECT_EQ(res.wrong_all_to_all, 0u);
    EXPECT_EQ(res.wrong_windowed, 0u);
    // One pool of the cap, registered once: no call grew it past 2 MiB (whole, they would need 20,
    // 8 and 16 MiB).
    EXPECT_EQ(res.staged.calls, 3);
    EXPECT_EQ(res.staged.pool_bytes, int64_t(2 * kMiB));
    EXPECT_EQ(res.staged.registrations, 1);
    // Only the peer's parts: staged, the reduce-scatter's peer segment in (its sum writes recv), the
    // in-place all-gather's own segment in and the peer's out, the all-to-all's peer segments in and
    // out, 4 MiB each; with peer copies the reduce-scatter's pushed, the all-gather's own segment
    // staged for the peer to pull, the all-to-all's received segment staged out. The plans say so.
    using tandem::Collective;
    const size_t cap = 2 * kMiB;
    const Planned reduce_scatter = planned(Collective::ReduceScatter, kMiB, r, peers, false, false, false, cap);
    const Planned all_gather = planned(Collective::AllGather, kMiB, r, peers, false, false, true, cap);
    const Planned all_to_all = planned(Collective::AllToAll, kMiB, r, peers, false, false, false, cap);
    EXPECT_EQ(reduce_scatter.staged + all_gather.staged + all_to_all.staged,
              int64_t(peers ? (0 + 4 + 4) * kMiB : (4 + (4 + 4) + (4 + 4)) * kMiB));
    EXPECT_EQ(res.staged.staged_bytes, reduce_scatter.staged + all_gather.staged + all_to_all.staged);
    EXPECT_EQ(res.staged.peer_bytes, reduce_scatter.peer + all_gather.peer + all_to_all.peer);
    // The window buffer's 8 MiB beside the pool, which did not grow; nothing staged (the sum writes
    // recv, the peer's segment is read where it lies).
    EXPECT_EQ(res.at_end.pool_bytes, int64_t(10 * kMiB));
    EXPECT_EQ(res.at_end.registrations, 2);
    EXPECT_EQ(planned(Collective::ReduceScatter, kMiB, r, peers, true, false, false, cap).staged, 0);
    EXPECT_EQ(res.at_end.staged_bytes, res.staged.staged_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(peer_copies, preload_nccl_route_library, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "on" : "off"; });

}  // namespace
