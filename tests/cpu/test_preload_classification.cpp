// Kernel names: NCCL or compute, demangling, and the TANDEM_INCLUDE / TANDEM_EXCLUDE patterns.
#include <gtest/gtest.h>

#include <string>

#include "preload/kernel_classification.h"

namespace tandem::preload {
namespace {

std::string mangled(const std::string& identifier, const std::string& rest = "v") {
  return "_Z" + std::to_string(identifier.size()) + identifier + rest;
}

TEST(preload_classification, NcclKernelsByPrefix) {
  EXPECT_TRUE(is_nccl_kernel_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(is_nccl_kernel_name("ncclDevKernel_Generic"));
  EXPECT_TRUE(is_nccl_kernel_name("ncclSymkDevKernel_AllReduce_AGxLL_R"));
  EXPECT_EQ(classify_kernel("ncclDevKernel_SendRecv"), KernelKind::Collective);
}

TEST(preload_classification, NcclKernelsMangledAndDemangled) {
  EXPECT_TRUE(is_nccl_kernel_name(
      mangled("ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE", "24ncclDevKernelArgsStorageILm4096EE")));
  EXPECT_TRUE(is_nccl_kernel_name(mangled("ncclSymkDevKernel_AllGather_LL")));
  EXPECT_TRUE(is_nccl_kernel_name("_ZL" + mangled("ncclDevKernel_Generic").substr(2)));  // internal linkage
  EXPECT_TRUE(is_nccl_kernel_name("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"));
}

TEST(preload_classification, TandemsCopyEngineKernelsAreCollectives) {
  // A static kernel template at global scope, as nvcc names it: _ZL<length><name>I<type>Ev...
  const std::string sum = "_ZL" + mangled("tandemCollective_sum_vectors", "I6__halfEvPKT_S3_iPS1_mmi").substr(2);
  EXPECT_TRUE(is_tandem_collective_kernel_name(sum));
  EXPECT_FALSE(is_nccl_kernel_name(sum));
  EXPECT_EQ(classify_kernel(sum), KernelKind::Collective);
  EXPECT_EQ(
      classify_kernel("tandemCollective_scale<float>(float const*, float*, unsigned long, float, void const*, bool)"),
      KernelKind::Collective);
  EXPECT_FALSE(is_tandem_collective_kernel_name("tandemcollective_sum"));
  EXPECT_FALSE(is_tandem_collective_kernel_name("_ZN6tandem16tandemCollective_Ev"));  // inside a namespace
}

TEST(preload_classification, EverythingElseIsCompute) {
  for (const std::string name :
       {"my_gemm_kernel", "_Z6kernelPf", "ampere_sgemm_128x64_nn", "ncclDevKernelX", "xncclDevKernel_Generic", "", "_Z",
        "_Z99short", "nccl", "ncclKernel_AllReduce", "_ZN6tandem14ncclDevKernel_xEv"}) {
    EXPECT_FALSE(is_nccl_kernel_name(name)) << name;
    EXPECT_FALSE(is_tandem_collective_kernel_name(name)) << name;
    EXPECT_EQ(classify_kernel(name), KernelKind::Compute) << name;
  }
  EXPECT_STREQ(to_string(KernelKind::Compute), "compute");
  EXPECT_STREQ(to_string(KernelKind::Collective), "nccl");
}

TEST(preload_classification, Demangle) {
  EXPECT_EQ(demangle("_Z6kernelPf"), "kernel(float*)");
  EXPECT_EQ(demangle("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");
}

TEST(preload_classification, GlobPatterns) {
  EXPECT_TRUE(matches_any({"*gemm*"}, "ampere_sgemm_128x64_nn"));
  EXPECT_TRUE(matches_any({"x", "ncclDevKernel_*"}, "ncclDevKernel_Generic"));
  EXPECT_TRUE(matches_any({"k[0-9]"}, "k7"));
  EXPECT_TRUE(matches_any({"?ernel"}, "kernel"));
  EXPECT_FALSE(matches_any({"gemm"}, "sgemm"));
  EXPECT_FALSE(matches_any({}, "anything"));
}

TEST(preload_classification, IncludeAndExcludeSelection) {
  const std::vector<std::string> none;
  EXPECT_TRUE(selected_by_patterns(none, none, "k", "k"));
  EXPECT_TRUE(selected_by_patterns({"*gemm*"}, none, "sgemm_nn", "sgemm_nn"));
  EXPECT_FALSE(selected_by_patterns({"*gemm*"}, none, "stream_copy", "stream_copy"));
  EXPECT_FALSE(selected_by_patterns(none, {"stream_*"}, "stream_copy", "stream_copy"));
  // Exclusion wins over inclusion.
  EXPECT_FALSE(selected_by_patterns({"*"}, {"stream_*"}, "stream_copy", "stream_copy"));
  // Patterns are tried on the demangled name too.
  EXPECT_TRUE(selected_by_patterns({"kernel(float*)"}, none, "_Z6kernelPf", "kernel(float*)"));
  EXPECT_FALSE(selected_by_patterns(none, {"kernel(*"}, "_Z6kernelPf", "kernel(float*)"));
  // ... and on the mangled one, as the driver names the kernel (cuobjdump, nsys and ncu show it so).
  EXPECT_FALSE(selected_by_patterns(none, {"_Z6kernel*"}, "_Z6kernelPf", "kernel(float*)"));
  EXPECT_TRUE(selected_by_patterns({"_Z6kernelPf"}, none, "_Z6kernelPf", "kernel(float*)"));
  EXPECT_FALSE(selected_by_patterns({"_Z6kernelPi"}, none, "_Z6kernelPf", "kernel(float*)"));
  // A pattern matching neither form selects nothing; one excluded form excludes the kernel.
  EXPECT_FALSE(selected_by_patterns({"kernel"}, none, "_Z6kernelPf", "kernel(float*)"));
  EXPECT_FALSE(selected_by_patterns({"kernel(*"}, {"_Z*Pf"}, "_Z6kernelPf", "kernel(float*)"));
}

TEST(preload_classification, DemanglingGivesTheSignature) {
  EXPECT_EQ(demangle("_Z6kernelPf"), "kernel(float*)");
  EXPECT_EQ(demangle("_Z12fill_computePjmj"), "fill_compute(unsigned int*, unsigned long, unsigned int)");
  EXPECT_EQ(demangle("ncclDevKernel_Generic"), "ncclDevKernel_Generic");  // extern "C": as it is
  EXPECT_EQ(demangle("_Znot a mangled name"), "_Znot a mangled name");    // left as it is
}

}  // namespace
}  // namespace tandem::preload
