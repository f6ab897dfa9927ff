#include "collective_footprint.h"

#include <algorithm>

namespace tandem::preload {
namespace {

constexpr int kThreadsShift = 0, kThreadsBits = 12;
constexpr int kRegsShift = 12, kRegsBits = 9;
constexpr int kStaticShift = 21, kStaticBits = 18;
constexpr int kDynamicShift = 39, kDynamicBits = 18;
constexpr int kClusterShift = 57, kClusterBits = 6;
constexpr uint64_t kPresent = uint64_t{1} << 63;

uint64_t field(int64_t value, int shift, int bits) {
  const int64_t max = (int64_t{1} << bits) - 1;
  return static_cast<uint64_t>(std::clamp<int64_t>(value, 0, max)) << shift;
}

int64_t extract(uint64_t packed, int shift, int bits) {
  return static_cast<int64_t>((packed >> shift) & ((uint64_t{1} << bits) - 1));
}

}  // namespace

uint64_t pack_footprint(const KernelFootprint& f) {
  return kPresent | field(f.threads_per_block, kThreadsShift, kThreadsBits) |
         field(f.regs_per_thread, kRegsShift, kRegsBits) | field(f.static_smem, kStaticShift, kStaticBits) |
         field(f.dynamic_smem, kDynamicShift, kDynamicBits) | field(f.cluster_size, kClusterShift, kClusterBits);
}

std::optional<KernelFootprint> unpack_footprint(uint64_t packed) {
  if (!(packed & kPresent)) return std::nullopt;
  KernelFootprint f;
  f.name = "nccl";
  f.threads_per_block = static_cast<int>(extract(packed, kThreadsShift, kThreadsBits));
  f.regs_per_thread = static_cast<int>(extract(packed, kRegsShift, kRegsBits));
  f.static_smem = extract(packed, kStaticShift, kStaticBits);
  f.dynamic_smem = extract(packed, kDynamicShift, kDynamicBits);
  f.cluster_size = std::max<int>(1, static_cast<int>(extract(packed, kClusterShift, kClusterBits)));
  return f;
}

}  // namespace tandem::preload
