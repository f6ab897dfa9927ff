#pragma once
// Device-side facts the residency probe reads, for CUDA and HIP (compiled only as GPU code).
//  - sm_slot(): a number unique to the SM (CU) the block runs on, below sm_slot_count().
//  - global_ns(): a clock in nanoseconds that runs at the same rate on every SM.
// CUDA has registers for both (%smid, %globaltimer). HIP's __smid() keeps 4 bits of CU and 2 of shader
// engine, so on an MI250X GCD (8 engines) two CUs would share a counter and the probe would report
// twice the residency; the slot here is the HW_ID register's bits 8..15 whole (CU_ID 11:8, SH_ID 12,
// SE_ID from 13). HIP's constant-rate clock (s_memrealtime) ticks at 100 MHz on gfx90a.
#include "tandem/gpu_runtime.h"

namespace tandem::gpu {

#if defined(TANDEM_HIP)
// Slots for every (shader engine, shader array, CU) the 8 bits can name.
inline int sm_slot_count(int /*sm_count*/) { return 256; }

__device__ __forceinline__ unsigned sm_slot() {
  constexpr unsigned kHwIdRegister = 4, kOffset = 8, kBits = 8;
  return __builtin_amdgcn_s_getreg(((kBits - 1) << 11) | (kOffset << 6) | kHwIdRegister);
}

__device__ __forceinline__ unsigned long long global_ns() {
  // 10 ns a tick at gfx90a's 100 MHz; the probe only needs its spin to last about as long as asked.
  constexpr unsigned long long kNsPerTick = 10;
  return __builtin_amdgcn_s_memrealtime() * kNsPerTick;
}
#else
inline int sm_slot_count(int sm_count) { return sm_count; }

__device__ __forceinline__ unsigned sm_slot() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

}  // namespace tandem::gpu
