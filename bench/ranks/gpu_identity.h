#pragma once
// Which physical GPU a rank drives, comparable across processes and nodes, and the check that no two
// ranks drive the same one (NCCL refuses that with a terse "invalid usage"; two ranks on one GPU
// also halve what each measures). Pure C++: the CUDA side fills bus_id and uuid.
#include <string>
#include <vector>

namespace tandem::bench {

struct GpuIdentity {
  std::string host;     // hostname, for messages
  std::string machine;  // hostname plus the kernel's boot id: containers on one machine share it
  std::string bus_id;   // PCI bus id, e.g. 0000:19:00.0
  std::string uuid;     // GPU-xxxxxxxx-..., unique across machines; may be empty
};

// This machine's host and machine fields (bus_id and uuid left empty).
GpuIdentity this_machine();
// One line, tab-separated, for the rendezvous files and the MPI exchange; parse throws on bad text.
std::string serialize(const GpuIdentity& id);
GpuIdentity parse_gpu_identity(const std::string& text);

// Groups of ranks (ascending, two or more each) that drive the same GPU: equal UUIDs, or equal
// machine and bus id when a UUID is missing.
std::vector<std::vector<int>> ranks_sharing_a_gpu(const std::vector<GpuIdentity>& by_rank);
// "" when every rank has its own GPU; else a message naming the ranks, the GPU and the way out.
std::string shared_gpu_message(const std::vector<GpuIdentity>& by_rank);

}  // namespace tandem::bench
