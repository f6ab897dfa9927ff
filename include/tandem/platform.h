#pragma once
// The GPU platform a build of tandem targets: NVIDIA through CUDA, or AMD through HIP (CMake's
// TANDEM_GPU_PLATFORM). Both builds compile the same sources (tandem/gpu_runtime.h maps the CUDA
// runtime's names onto HIP's); what a platform lacks is refused by name, not missing silently: a
// policy token that only one platform can apply says so when parsed in the other's build.
namespace tandem {

enum class Platform { Cuda, Hip };

// The platform this build of tandem::core was compiled for.
Platform build_platform();
// "CUDA", "HIP".
const char* to_string(Platform);

}  // namespace tandem
