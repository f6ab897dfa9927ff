#pragma once
// The compute-unit mask behind cu-mask:N (AMD, HIP builds): which CUs a compute stream made with
// hipExtStreamCreateWithCUMask may use, so that the rest of the GPU is left to the collective. It is
// AMD's counterpart of a green context (green:N), a hard spatial partition that needs no change to
// the kernels. Pure C++: planned and checked on CPU; src/cuda/cu_mask_stream.cu creates the stream.
#include <cstdint>
#include <vector>

namespace tandem {

struct CuMaskPlan {
  int total_cus = 0;    // compute units of the device
  int compute_cus = 0;  // CUs the compute stream may use
  // hipExtStreamCreateWithCUMask's mask, 32 CUs a word, least significant bit first.
  std::vector<uint32_t> words;
  int cus_left_for_collective() const { return total_cus - compute_cus; }
};

// The mask of `compute_cus` CUs out of `total_cus`: its lowest bits. The kernel driver (amdkfd's
// mqd_symmetrically_map_cu_mask) deals the mask's bits out round-robin over the shader engines, bit i
// to engine i mod engines, counting active CUs only, so the lowest N bits spread the compute stream
// evenly over every engine; N CUs of one engine would crowd its workgroup dispatcher instead. Throws
// tandem::UserError naming the value unless 1 <= compute_cus < total_cus: a stream needs a CU, and a
// mask of every CU leaves nothing to the collective.
CuMaskPlan plan_cu_mask(int total_cus, int compute_cus);

// How many of the mask's CUs land on each of `shader_engines` engines under the driver's
// round-robin rule: what makes the lowest bits a balanced choice. Throws unless shader_engines >= 1.
std::vector<int> cus_per_shader_engine(const CuMaskPlan& plan, int shader_engines);

// Set bits of a mask.
int mask_cu_count(const std::vector<uint32_t>& words);

}  // namespace tandem
