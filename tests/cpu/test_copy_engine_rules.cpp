// What the library's copy-engine collectives on window memory accept (the route's rule, and what the
// windowed form lacks) and how much scratch they need, and the element types' NCCL names, without a
// GPU: every expected value is written out by hand below.
#include <gtest/gtest.h>

#include <string>

#include "tandem/copy_engine.h"
#include "tandem/dtype.h"
#include "tandem/error.h"

namespace tandem {
namespace {

using Kind = Collective;

// A call of `count` (NCCL's count) on two buffers apart, with NCCL's `op`.
CopyEngineCall call(Collective kind, uint64_t count, ncclDataType_t dtype, ncclRedOp_t op = ncclSum) {
  alignas(16) static char send[16], recv[16];
  CopyEngineCall c;
  c.kind = kind;
  c.send = send;
  c.recv = recv;
  c.count = count;
  c.dtype = dtype;
  c.reduction = reduction_of(int(op), false);
  return c;
}

std::string copy_engine_refusal(Collective kind, uint64_t count, int nranks, ncclDataType_t dtype,
                                ncclRedOp_t op = ncclSum) {
  return tandem::copy_engine_refusal(call(kind, count, dtype, op), nranks);
}

TEST(CopyEngineRefusal, SumsOfTheThreeFloatTypesThatSplitEvenly) {
  for (ncclDataType_t t : {ncclBfloat16, ncclFloat16, ncclFloat32}) {
    EXPECT_EQ(copy_engine_refusal(Kind::AllReduce, 4096, 8, t, ncclSum), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::ReduceScatter, 3, 8, t, ncclSum), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::AllGather, 3, 8, t), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::AllToAll, 3, 8, t), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::Broadcast, 8, 8, t), "") << t;
  }
}

TEST(CopyEngineRefusal, AllReduceChunksMustBeEqual) {
  // 12 elements split into 4 chunks of 3, not into 8 (1.5 each); reduce-scatter counts are per rank
  // already, so any count splits. A broadcast's chunks likewise.
  EXPECT_EQ(copy_engine_refusal(Kind::AllReduce, 12, 4, ncclFloat32), "");
  EXPECT_EQ(copy_engine_refusal(Kind::AllReduce, 12, 8, ncclFloat32),
            "a copy-engine all-reduce splits its 12 elements into 8 equal chunks");
  EXPECT_EQ(copy_engine_refusal(Kind::ReduceScatter, 13, 8, ncclFloat32), "");
  EXPECT_EQ(copy_engine_refusal(Kind::Broadcast, 13, 8, ncclFloat32),
            "a copy-engine broadcast splits its 13 elements into 8 equal chunks");
}

TEST(CopyEngineRefusal, ReductionsOnlySum) {
  const std::string why = copy_engine_refusal(Kind::AllReduce, 16, 2, ncclBfloat16, ncclMax);
  EXPECT_NE(why.find("op-not-supported"), std::string::npos) << why;
  EXPECT_NE(copy_engine_refusal(Kind::ReduceScatter, 16, 2, ncclBfloat16, ncclProd), "");
  // An average needs a scale, which the windowed form does not apply (the staged route does).
  EXPECT_NE(copy_engine_refusal(Kind::AllReduce, 16, 2, ncclBfloat16, ncclAvg).find("only sums"), std::string::npos);
  // Gathers move data and never reduce: the op is not theirs to refuse.
  EXPECT_EQ(copy_engine_refusal(Kind::AllGather, 16, 2, ncclBfloat16, ncclMax), "");
}

TEST(CopyEngineRefusal, TypesWithoutASumKernel) {
  for (ncclDataType_t t : {ncclInt8, ncclInt32, ncclUint64, ncclFloat64}) {
    const std::string why = copy_engine_refusal(Kind::AllReduce, 16, 2, t);
    EXPECT_NE(why.find("no-sum-kernel"), std::string::npos) << why;
    // Gathers only move bytes: any type of known size, as the route takes them.
    EXPECT_EQ(copy_engine_refusal(Kind::AllGather, 16, 2, t), "") << t;
    EXPECT_EQ(copy_engine_refusal(Kind::AllToAll, 16, 2, t), "") << t;
  }
}

TEST(CopyEngineRefusal, AnInPlaceAllToAllAsTheRouteRefusesIt) {
  CopyEngineCall c = call(Kind::AllToAll, 4, ncclBfloat16);
  c.send = c.recv;
  EXPECT_NE(tandem::copy_engine_refusal(c, 2).find("in-place-all-to-all"), std::string::npos);
}

// The windowed form (the benchmark's copy-engine path) and the route take the same calls: whatever
// the route's rule refuses for a reason of the call's own is refused here, and whatever it takes is
// taken here unless the windowed form lacks what the call needs (a scale, padding). The old windowed
// rule refused all-gathers and all-to-alls of types without a sum kernel, which the route takes.
TEST(CopyEngineRefusal, TheWindowedFormAsksTheRoutesRule) {
  const ncclDataType_t types[] = {ncclInt8,   ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                  ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  int compared = 0;
  for (Collective kind : kCollectives)
    for (ncclDataType_t type : types)
      for (ncclRedOp_t op : ops)
        for (int nranks : {1, 2, 3, 8})
          for (uint64_t count : {0, 1, 12, 24, 4096}) {
            const CopyEngineCall c = call(kind, count, type, op);
            const RouteOutcome route = decide_route(route_request(c, nranks, 0));
            const std::string windowed = tandem::copy_engine_refusal(c, nranks);
            const bool route_takes = route == RouteOutcome::CopyEngine || route == RouteOutcome::SingleRank;
            const bool plain = !reduces(kind) || op == ncclSum;
            const bool splits =
                !(kind == Collective::AllReduce || kind == Collective::Broadcast) || count % uint64_t(nranks) == 0;
            EXPECT_EQ(windowed.empty(), route_takes && plain && splits)
                << to_string(kind) << " type " << type << " op " << op << " on " << nranks << " ranks, count " << count
                << ": the route says " << to_string(route) << ", the windowed form '" << windowed << "'";
            ++compared;
          }
  EXPECT_EQ(compared, 5 * 10 * 5 * 4 * 5);
}

TEST(CopyEngineScratch, ReductionsStageEveryRanksChunks) {
  // all-reduce of 1024 bf16: the whole buffer, 2 KiB; reduce-scatter of 1024 fp32 per rank on 4
  // ranks: every rank's chunk, 16 KiB; gathers and broadcasts need none.
  EXPECT_EQ(copy_engine_scratch_bytes(call(Kind::AllReduce, 1024, ncclBfloat16), 4), 2048u);
  EXPECT_EQ(copy_engine_scratch_bytes(call(Kind::ReduceScatter, 1024, ncclFloat32), 4), 16384u);
  EXPECT_EQ(copy_engine_scratch_bytes(call(Kind::AllGather, 1024, ncclFloat32), 4), 0u);
  EXPECT_EQ(copy_engine_scratch_bytes(call(Kind::AllToAll, 1024, ncclFloat16), 4), 0u);
  EXPECT_EQ(copy_engine_scratch_bytes(call(Kind::Broadcast, 1024, ncclFloat16), 4), 0u);
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
