// What the library's copy-engine collectives accept and how much scratch they need, and the element
// types' NCCL names, without a GPU: every expected value is written out by hand below.
#include <gtest/gtest.h>

#include <string>

#include "tandem/copy_engine.h"
#include "tandem/dtype.h"
#include "tandem/error.h"

namespace tandem {
namespace {

using Kind = Collective;

TEST(CopyEngineRefusal, SumsOfTheThreeFloatTypesThatSplitEvenly) {
  for (ncclDataType_t t : {ncclBfloat16, ncclFloat16, ncclFloat32}) {
    EXPECT_EQ(copy_engine_refusal(Kind::AllReduce, 4096, 8, t, ncclSum), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::ReduceScatter, 3, 8, t, ncclSum), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::AllGather, 3, 8, t), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::AllToAll, 3, 8, t), "") << t;
  }
}

TEST(CopyEngineRefusal, AllReduceChunksMustBeEqual) {
  // 12 elements split into 4 chunks of 3, not into 8 (1.5 each); reduce-scatter counts are per rank
  // already, so any count splits.
  EXPECT_EQ(copy_engine_refusal(Kind::AllReduce, 12, 4, ncclFloat32), "");
  EXPECT_EQ(copy_engine_refusal(Kind::AllReduce, 12, 8, ncclFloat32),
            "a copy-engine all-reduce splits its 12 elements into 8 equal chunks");
  EXPECT_EQ(copy_engine_refusal(Kind::ReduceScatter, 13, 8, ncclFloat32), "");
}

TEST(CopyEngineRefusal, ReductionsOnlySum) {
  const std::string why = copy_engine_refusal(Kind::AllReduce, 16, 2, ncclBfloat16, ncclMax);
  EXPECT_NE(why.find("only sums"), std::string::npos) << why;
  EXPECT_NE(copy_engine_refusal(Kind::ReduceScatter, 16, 2, ncclBfloat16, ncclProd), "");
  // Gathers move data and never reduce: the op is not theirs to refuse.
  EXPECT_EQ(copy_engine_refusal(Kind::AllGather, 16, 2, ncclBfloat16, ncclMax), "");
}

TEST(CopyEngineRefusal, TypesWithoutASumKernel) {
  for (ncclDataType_t t : {ncclInt8, ncclInt32, ncclUint64, ncclFloat64}) {
    const std::string why = copy_engine_refusal(Kind::AllReduce, 16, 2, t);
    EXPECT_NE(why.find("bf16, fp16 or fp32"), std::string::npos) << why;
    EXPECT_NE(copy_engine_refusal(Kind::AllGather, 16, 2, t), "") << t;
  }
}

TEST(CopyEngineScratch, ReductionsStageEveryRanksChunks) {
  // all-reduce of 1024 bf16: the whole buffer, 2 KiB; reduce-scatter of 1024 fp32 per rank on 4
  // ranks: every rank's chunk, 16 KiB; gathers need none.
  EXPECT_EQ(copy_engine_scratch_bytes(Kind::AllReduce, 1024, DType::BF16, 4), 2048u);
  EXPECT_EQ(copy_engine_scratch_bytes(Kind::ReduceScatter, 1024, DType::FP32, 4), 16384u);
  EXPECT_EQ(copy_engine_scratch_bytes(Kind::AllGather, 1024, DType::FP32, 4), 0u);
  EXPECT_EQ(copy_engine_scratch_bytes(Kind::AllToAll, 1024, DType::FP16, 4), 0u);
}

TEST(DTypeNames, NcclTypesBothWays) {
  EXPECT_EQ(to_nccl(DType::BF16), ncclBfloat16);
  EXPECT_EQ(to_nccl(DType::FP16), ncclFloat16);
  EXPECT_EQ(to_nccl(DType::FP32), ncclFloat32);
  EXPECT_EQ(from_nccl(ncclBfloat16), DType::BF16);
  EXPECT_EQ(from_nccl(ncclFloat16), DType::FP16);
  EXPECT_EQ(from_nccl(ncclFloat32), DType::FP32);
  EXPECT_FALSE(from_nccl(ncclInt8).has_value());
  EXPECT_FALSE(from_nccl(ncclFloat64).has_value());
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::FP32), 4u);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  EXPECT_STREQ(to_string(parse_dtype("half")), "fp16");
  EXPECT_THROW(parse_dtype("fp8"), Error);
}

}  // namespace
}  // namespace tandem
