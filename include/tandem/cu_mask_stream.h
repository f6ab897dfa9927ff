#pragma once
// A compute stream confined to some of an AMD GPU's compute units: cu-mask:N (HIP builds only;
// src/CMakeLists.txt compiles it there). Its kernels are dispatched to the N CUs of the mask alone,
// so the other CUs stay free for the collective's, with no change to the kernels: AMD's counterpart of
// a green context (tandem/green_context.h), which CUDA builds have instead.
#include <cstdint>

#include "tandem/cu_mask_plan.h"
#include "tandem/gpu_runtime.h"

namespace tandem {

class CuMaskStream {
 public:
  // A stream of `device` whose kernels run on `compute_cus` of its CUs, chosen by plan_cu_mask.
  // Throws tandem::UserError naming the count when it does not fit the device, tandem::Error when the
  // runtime refuses the mask.
  CuMaskStream(int device, int compute_cus);
  ~CuMaskStream();
  CuMaskStream(const CuMaskStream&) = delete;
  CuMaskStream& operator=(const CuMaskStream&) = delete;

  cudaStream_t stream() const { return stream_; }
  const CuMaskPlan& plan() const { return plan_; }

 private:
  CuMaskPlan plan_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace tandem
