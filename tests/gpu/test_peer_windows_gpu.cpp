// tandem/peer_windows.h on real NCCL, on one GPU: what the route's peer copies take from NCCL. A
// communicator of one rank is its own LSA team, so every_peer_by_address holds, and the address NCCL's
// device API gives for the rank's own window (ncclGetPeerPointer, read by a kernel) is a mapping of
// that window's memory: bytes written through it are read back through the buffer, and the other way
// round. Ranks of one node reach each other's windows the same way (test_preload_nccl_route_gpu, 2
// GPUs); ranks sharing a GPU are a host each to NCCL and never do (test_preload_nccl_route_matrix).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "gpu_test_util.h"
#include "tandem/peer_windows.h"
#include "tandem/symmetric_windows.h"

namespace {

std::vector<uint32_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = seed * 2654435761u + uint32_t(i);
  return v;
}

TEST(peer_windows_gpu, OneRankReachesItsOwnWindowThroughNcclsAddress) {
  TANDEM_REQUIRE_GPUS(1);
  int device = 0;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
  constexpr size_t kBytes = size_t(2) << 20;
  void* buffer = nullptr;
  ASSERT_EQ(ncclMemAlloc(&buffer, kBytes), ncclSuccess);
  void* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, sizeof(char*)), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  {
    tandem::SymmetricWindows windows;
    const std::vector<ncclWindow_t> handles = windows.add(comm, {{buffer, int64_t(kBytes)}}, "peer windows test");
    ASSERT_EQ(handles.size(), 1u);
    EXPECT_TRUE(tandem::every_peer_by_address(comm, 1));
    EXPECT_FALSE(tandem::every_peer_by_address(comm, 2));  // a team of one is not two ranks
    const std::vector<char*> addresses = tandem::peer_window_addresses(handles[0], 1, scratch, stream);
    ASSERT_EQ(addresses.size(), 1u);
    ASSERT_NE(addresses[0], nullptr);

    // Through NCCL's address, read back through the buffer (at an offset, as the route's parts lie).
    const size_t offset = 4096, n = 65536;
    const std::vector<uint32_t> written = pattern(n, 7);
    ASSERT_EQ(cudaMemcpy(addresses[0] + offset, written.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<uint32_t> read(n);
    ASSERT_EQ(cudaMemcpy(read.data(), static_cast<char*>(buffer) + offset, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(read, written);
    // And a device-to-device copy (what a Push or Pull is) from the buffer into NCCL's address.
    const std::vector<uint32_t> second = pattern(n, 11);
    ASSERT_EQ(cudaMemcpy(buffer, second.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(addresses[0] + kBytes / 2, buffer, n * 4, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(read.data(), static_cast<char*>(buffer) + kBytes / 2, n * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(read, second);
    windows.release("peer windows test");
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(scratch), cudaSuccess);
  EXPECT_EQ(ncclMemFree(buffer), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
