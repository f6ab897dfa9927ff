// The one rule for which collectives take the copy-engine route (tandem/copy_engine_eligibility.h),
// shared by tandem run's interposer, tandem.torch and the route. Expectations are worked out from
// what the route can compute, not from the code.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tandem/copy_engine_eligibility.h"

namespace tandem {
namespace {

RouteRequest request(Collective kind, uint64_t count, int nranks, Reduction reduction = Reduction::Sum,
                     size_t element_bytes = 2, bool has_sum_kernel = true) {
  RouteRequest r;
  r.kind = kind;
  r.count = count;
  r.nranks = nranks;
  r.reduction = reduction;
  r.element_bytes = element_bytes;
  r.has_sum_kernel = has_sum_kernel;
  return r;
}

TEST(CopyEngineEligibility, NcclsOpsAreTheLibrarysReductions) {
  EXPECT_EQ(reduction_of(0, false), Reduction::Sum);                                          // ncclSum
  EXPECT_EQ(reduction_of(4, false), Reduction::Average);                                      // ncclAvg
  for (int op : {1, 2, 3}) EXPECT_EQ(reduction_of(op, false), Reduction::Unsupported) << op;  // prod, max, min
  // ncclNumOps (5) and on: the program's own ops, pre-multiplied sums when the caller saw them made.
  EXPECT_EQ(reduction_of(5, true), Reduction::PreMulSum);
  EXPECT_EQ(reduction_of(5, false), Reduction::Unsupported);
  EXPECT_EQ(reduction_of(77, true), Reduction::PreMulSum);
  EXPECT_EQ(reduction_of(0, true), Reduction::Sum);  // a built-in op is what it is
  EXPECT_EQ(reduction_of(-1, true), Reduction::Unsupported);
}

TEST(CopyEngineEligibility, WithoutCopyEngineInThePolicyEverythingStaysWithNccl) {
  RouteFacts not_wanted;
  not_wanted.requested = false;
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 8, 2), not_wanted), RouteOutcome::NotRequested);
  // Even what the route could never take reads "not requested": the policy's wish comes first.
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 7, 0, Reduction::Unsupported, 0, false), not_wanted),
            RouteOutcome::NotRequested);
}

TEST(CopyEngineEligibility, SumAverageAndPreMultipliedSumsOfAnyCountTakeTheRoute) {
  for (Collective kind : {Collective::AllReduce, Collective::ReduceScatter})
    for (Reduction reduction : {Reduction::Sum, Reduction::Average, Reduction::PreMulSum, Reduction::PreDivSum})
      for (int nranks : {2, 3, 5, 8})
        for (uint64_t count : {1u, 2u, 7u, 13u, 4096u, 1000003u})
          EXPECT_EQ(decide_route(request(kind, count, nranks, reduction)), RouteOutcome::CopyEngine)
              << to_string(kind) << " " << to_string(reduction) << " " << count << " over " << nranks;
}

TEST(CopyEngineEligibility, OtherReductionsAndTypesWithoutASumKernelStayWithNccl) {
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 8, 2, Reduction::Unsupported)), RouteOutcome::OpNotSupported);
  EXPECT_EQ(decide_route(request(Collective::ReduceScatter, 8, 2, Reduction::Unsupported)),
            RouteOutcome::OpNotSupported);
  // fp64 or int32 sums: the route has no kernel to add them.
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 8, 2, Reduction::Sum, 8, false)), RouteOutcome::NoSumKernel);
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 8, 2, Reduction::Sum, 0, false)), RouteOutcome::UnknownType);
}

TEST(CopyEngineEligibility, GathersAndAllToAllMoveAnyTypeOfKnownSizeAndIgnoreTheOp) {
  for (Collective kind : {Collective::AllGather, Collective::AllToAll}) {
    // int64, fp8: bytes to move.
    EXPECT_EQ(decide_route(request(kind, 3, 4, Reduction::Unsupported, 8, false)), RouteOutcome::CopyEngine);
    EXPECT_EQ(decide_route(request(kind, 3, 4, Reduction::Unsupported, 1, false)), RouteOutcome::CopyEngine);
    EXPECT_EQ(decide_route(request(kind, 3, 4, Reduction::Sum, 0, false)), RouteOutcome::UnknownType);
  }
  RouteRequest a2a = request(Collective::AllToAll, 8, 2);
  a2a.in_place = true;
  EXPECT_EQ(decide_route(a2a), RouteOutcome::InPlaceAllToAll);
  RouteRequest gather = request(Collective::AllGather, 8, 2);
  gather.in_place = true;  // NCCL's common case
  EXPECT_EQ(decide_route(gather), RouteOutcome::CopyEngine);
}

TEST(CopyEngineEligibility, BroadcastsFromAnyRankOfTheCommunicatorMoveAnyTypeOfKnownSize) {
  for (int nranks : {2, 3, 8})
    for (int root = 0; root < nranks; ++root)
      for (uint64_t count : {1u, 7u, 4096u}) {
        RouteRequest r = request(Collective::Broadcast, count, nranks, Reduction::Unsupported, 8, false);
        r.root = root;
        r.in_place = root % 2 == 0;  // ncclBcast's form, and ncclBroadcast's out-of-place one
        EXPECT_EQ(decide_route(r), RouteOutcome::CopyEngine) << "root " << root << " of " << nranks;
      }
  RouteRequest r = request(Collective::Broadcast, 8, 4);
  for (int root : {-1, 4, 1000}) {
    r.root = root;
    EXPECT_EQ(decide_route(r), RouteOutcome::RootOutOfRange) << "root " << root;
  }
  r.root = 0;
  r.element_bytes = 0;
  EXPECT_EQ(decide_route(r), RouteOutcome::UnknownType);
}

TEST(CopyEngineEligibility, OneRankExchangesNothingAndStaysWithNcclWithoutWindowMemory) {
  // NCCL's collective of one rank is a local copy (no kernel, no window): the route would stage the
  // buffer through its pool for nothing.
  for (Collective kind : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll,
                          Collective::Broadcast})
    for (uint64_t count : {1u, 4096u})
      EXPECT_EQ(decide_route(request(kind, count, 1)), RouteOutcome::SingleRank) << to_string(kind) << " " << count;
  // What the call could never do still says so first; an empty call is empty whatever the size.
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 8, 1, Reduction::Unsupported)), RouteOutcome::OpNotSupported);
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 0, 1)), RouteOutcome::Empty);
  RouteFacts failed;
  failed.failed = true;
  EXPECT_EQ(decide_route(request(Collective::AllGather, 8, 1), failed), RouteOutcome::SingleRank);
}

TEST(CopyEngineEligibility, EmptyCallsAndUnknownCommunicatorsStayWithNccl) {
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 0, 2)), RouteOutcome::Empty);
  EXPECT_EQ(decide_route(request(Collective::AllGather, 8, 0)), RouteOutcome::UnknownCommunicator);
}

TEST(CopyEngineEligibility, TheRoutesStateComesAfterTheCallsOwnReasons) {
  RouteFacts failed, unavailable;
  failed.failed = true;
  failed.unavailable = true;
  unavailable.unavailable = true;
  const RouteRequest ok = request(Collective::AllReduce, 8, 2);
  EXPECT_EQ(decide_route(ok, failed), RouteOutcome::RouteFailed);
  EXPECT_EQ(decide_route(ok, unavailable), RouteOutcome::RouteUnavailable);
  // A call the route could never take says so, whatever the route's state.
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 8, 2, Reduction::Unsupported), failed),
            RouteOutcome::OpNotSupported);
  EXPECT_EQ(decide_route(request(Collective::AllReduce, 0, 2), unavailable), RouteOutcome::Empty);
}

TEST(CopyEngineEligibility, EveryOutcomeHasItsOwnTokenAndAnExplanation) {
  std::set<std::string> tokens;
  for (int i = 0; i < kRouteOutcomeCount; ++i) {
    const auto outcome = static_cast<RouteOutcome>(i);
    const std::string token = to_string(outcome);
    EXPECT_NE(token, "unknown") << i;
    EXPECT_EQ(token.find(' '), std::string::npos) << token;
    EXPECT_TRUE(tokens.insert(token).second) << token;
    EXPECT_GT(std::string(explain(outcome)).size(), 10u) << token;
  }
  EXPECT_STREQ(to_string(RouteOutcome::CopyEngine), "copy-engine");
  EXPECT_STREQ(to_string(RouteOutcome::OpNotSupported), "op-not-supported");
  EXPECT_STREQ(to_string(RouteOutcome::CaptureNotReady), "capture-not-ready");
  EXPECT_STREQ(to_string(Reduction::PreMulSum), "pre-multiplied sum");
}

TEST(CopyEngineEligibility, EveryReasonToStayWithNcclIsInRunsTable) {
  const std::string path = std::string(TANDEM_FIXTURE_DIR) + "/../../docs/RUN.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  for (int i = 0; i < kRouteOutcomeCount; ++i) {
    const auto outcome = static_cast<RouteOutcome>(i);
    if (outcome == RouteOutcome::CopyEngine) continue;
    EXPECT_NE(text.str().find(std::string("| `") + to_string(outcome) + "` |"), std::string::npos)
        << to_string(outcome) << " is missing from docs/RUN.md's table of reasons";
  }
}

}  // namespace
}  // namespace tandem
