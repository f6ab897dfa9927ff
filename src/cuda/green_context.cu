#include "tandem/cuda_check.h"
#include "tandem/driver_api.h"
#include "tandem/green_context.h"
#include "tandem/library_checks.h"
#include "tandem/streams.h"

namespace tandem {
namespace {

struct GreenDriver {
  decltype(&cuDeviceGetDevResource) get_resource =
      driver::get<decltype(&cuDeviceGetDevResource)>("cuDeviceGetDevResource", 12040);
  decltype(&cuDevSmResourceSplitByCount) split =
      driver::get<decltype(&cuDevSmResourceSplitByCount)>("cuDevSmResourceSplitByCount", 12040);
  decltype(&cuDevResourceGenerateDesc) describe =
      driver::get<decltype(&cuDevResourceGenerateDesc)>("cuDevResourceGenerateDesc", 12040);
  decltype(&cuGreenCtxCreate) create = driver::get<decltype(&cuGreenCtxCreate)>("cuGreenCtxCreate", 12040);
  decltype(&cuGreenCtxDestroy) destroy = driver::get<decltype(&cuGreenCtxDestroy)>("cuGreenCtxDestroy", 12040);
  decltype(&cuGreenCtxStreamCreate) stream_create =
      driver::get<decltype(&cuGreenCtxStreamCreate)>("cuGreenCtxStreamCreate", 12050);
};

const GreenDriver& green_driver() {
  static const GreenDriver d;
  return d;
}

}  // namespace

GreenContext::GreenContext(int device, int sm_count) {
  const GreenDriver& drv = green_driver();
  // The runtime's primary context must exist before the driver calls below use the device.
  TANDEM_CUDA_CHECK(cudaSetDevice(device));
  TANDEM_CUDA_CHECK(cudaFree(nullptr));
  CUdevResource all{};
  TANDEM_CU_CHECK(drv.get_resource(static_cast<CUdevice>(device), &all, CU_DEV_RESOURCE_TYPE_SM));
  TANDEM_REQUIRE(sm_count > 0 && static_cast<unsigned>(sm_count) < all.sm.smCount,
                 "green:" + std::to_string(sm_count) + " needs between 1 and " + std::to_string(all.sm.smCount - 1) +
                     " SMs on this GPU");
  CUdevResource part{}, rest{};
  unsigned groups = 1;
  TANDEM_CU_CHECK(drv.split(&part, &groups, &all, &rest, 0, static_cast<unsigned>(sm_count)));
  TANDEM_REQUIRE(groups == 1, "the driver could not carve a partition of " + std::to_string(sm_count) + " SMs");
  CUdevResourceDesc desc = nullptr;
  TANDEM_CU_CHECK(drv.describe(&desc, &part, 1));
  TANDEM_CU_CHECK(drv.create(&context_, desc, static_cast<CUdevice>(device), CU_GREEN_CTX_DEFAULT_STREAM));
  CUstream stream = nullptr;
  // Compute confined to the partition keeps the least priority, as on the ordinary compute stream.
  TANDEM_CU_CHECK(drv.stream_create(&stream, context_, CU_STREAM_NON_BLOCKING, stream_priority_range().least));
  stream_ = reinterpret_cast<cudaStream_t>(stream);
  sm_count_ = static_cast<int>(part.sm.smCount);
}

GreenContext::~GreenContext() {
  if (stream_) cudaStreamDestroy(stream_);
  if (context_) green_driver().destroy(context_);
}

}  // namespace tandem
