#include <dlfcn.h>
#include <nccl_device.h>

#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/peer_windows.h"

// Named tandemCollective_*: the interposer and the timeline class it as communication
// (tandem/kernel_names.h), never a kernel to shape.
static __global__ void tandemCollective_peer_addresses(ncclWindow_t window, int nranks, char** out) {
  for (int peer = 0; peer < nranks; ++peer) out[peer] = static_cast<char*>(ncclGetPeerPointer(window, 0, peer));
}

namespace tandem {

bool every_peer_by_address(ncclComm_t comm, int nranks) {
  // ncclTeamLsa is looked up, not linked: NCCL 2.28.0-2.28.2 lack it, and the NCCL that owns `comm`
  // is the one that defines ncclGetVersion as this library binds it (a program's wheel, not
  // necessarily the first libnccl.so.2 on the search path).
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) || !info.dli_fname) return false;
  void* nccl = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!nccl) return false;
  using TeamLsa = ncclTeam_t (*)(ncclComm_t);
  const auto team_lsa = reinterpret_cast<TeamLsa>(dlsym(nccl, "ncclTeamLsa"));
  const bool all = team_lsa && team_lsa(comm).nRanks == nranks;
  dlclose(nccl);
  return all;
}

std::vector<char*> peer_window_addresses(ncclWindow_t window, int nranks, void* scratch, cudaStream_t stream) {
  TANDEM_REQUIRE(window != nullptr && nranks > 0 && scratch != nullptr, "peer window addresses: no window");
  auto* out = static_cast<char**>(scratch);
  tandemCollective_peer_addresses<<<1, 1, 0, stream>>>(window, nranks, out);
  TANDEM_CUDA_CHECK_LAUNCH();
  std::vector<char*> addresses(size_t(nranks), nullptr);
  TANDEM_CUDA_CHECK(
      cudaMemcpyAsync(addresses.data(), out, sizeof(char*) * size_t(nranks), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (char* a : addresses) TANDEM_REQUIRE(a != nullptr, "peer window addresses: NCCL gave a null address");
  return addresses;
}

}  // namespace tandem
