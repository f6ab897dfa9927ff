// cu-mask:N's stream (tandem/cu_mask_stream.h): HIP builds only, where hipExtStreamCreateWithCUMask is.
#include "tandem/cu_mask_stream.h"
#include "tandem/cuda_check.h"

namespace tandem {

CuMaskStream::CuMaskStream(int device, int compute_cus) {
  TANDEM_CUDA_CHECK(cudaSetDevice(device));
  int cus = 0;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, device));
  plan_ = plan_cu_mask(cus, compute_cus);
  // The stream takes the runtime's default priority (HIP has no masked stream with a priority): below
  // the collective's stream at the greatest priority, as the ordinary compute stream is. It is not
  // created non-blocking either, which only matters to work on the legacy default stream, and
  // tandem issues none there.
  TANDEM_CUDA_CHECK(
      hipExtStreamCreateWithCUMask(&stream_, static_cast<uint32_t>(plan_.words.size()), plan_.words.data()));
}

CuMaskStream::~CuMaskStream() {
  if (stream_) cudaStreamDestroy(stream_);  // destructors must not throw; nothing is left to protect
}

}  // namespace tandem
