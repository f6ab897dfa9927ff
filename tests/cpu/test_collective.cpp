// The one record of the collectives (tandem/collective.h): names, buffer sizes with NCCL's meaning of
// count, nccl-tests' bus-bandwidth factors, NCCL's in-place rules.
#include <gtest/gtest.h>

#include <cstdint>

#include "tandem/collective.h"

namespace tandem {
namespace {

TEST(Collective, NamesRoundTripAndPythonSpellingIsAccepted) {
  EXPECT_STREQ(to_string(Collective::AllReduce), "all-reduce");
  EXPECT_STREQ(to_string(Collective::ReduceScatter), "reduce-scatter");
  EXPECT_STREQ(to_string(Collective::AllGather), "all-gather");
  EXPECT_STREQ(to_string(Collective::AllToAll), "all-to-all");
  EXPECT_STREQ(nccl_function(Collective::AllToAll), "ncclAlltoAll");
  EXPECT_STREQ(nccl_function(Collective::ReduceScatter), "ncclReduceScatter");
  for (Collective c : kCollectives) EXPECT_EQ(parse_collective(to_string(c)), c);
  EXPECT_EQ(parse_collective("all_gather"), Collective::AllGather);
  EXPECT_EQ(parse_collective("all-gathe"), std::nullopt);
  EXPECT_EQ(parse_collective("allgather"), std::nullopt);
  EXPECT_EQ(parse_collective(""), std::nullopt);
}

TEST(Collective, OnlyAllReduceAndReduceScatterReduce) {
  EXPECT_TRUE(reduces(Collective::AllReduce));
  EXPECT_TRUE(reduces(Collective::ReduceScatter));
  EXPECT_FALSE(reduces(Collective::AllGather));
  EXPECT_FALSE(reduces(Collective::AllToAll));
}

TEST(Collective, BufferElementsFollowNcclsCount) {
  // 3 ranks, count 5.
  EXPECT_EQ(send_elements(Collective::AllReduce, 5, 3), 5u);
  EXPECT_EQ(recv_elements(Collective::AllReduce, 5, 3), 5u);
  EXPECT_EQ(send_elements(Collective::ReduceScatter, 5, 3), 15u);
  EXPECT_EQ(recv_elements(Collective::ReduceScatter, 5, 3), 5u);
  EXPECT_EQ(send_elements(Collective::AllGather, 5, 3), 5u);
  EXPECT_EQ(recv_elements(Collective::AllGather, 5, 3), 15u);
  EXPECT_EQ(send_elements(Collective::AllToAll, 5, 3), 15u);
  EXPECT_EQ(recv_elements(Collective::AllToAll, 5, 3), 15u);
  EXPECT_EQ(size_elements(Collective::AllReduce, 5, 3), 5u);
  EXPECT_EQ(size_elements(Collective::ReduceScatter, 5, 3), 15u);
  EXPECT_EQ(size_elements(Collective::AllGather, 5, 3), 15u);
}

TEST(Collective, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::AllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::ReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::AllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::AllReduce, 1), 0.0);
}

TEST(Collective, OneRecordPerKindInTheEnumsOrder) {
  for (Collective c : kCollectives) {
    const CollectiveRecord& r = record_of(c);
    EXPECT_EQ(r.kind, c);
    EXPECT_STREQ(r.name, to_string(c));
    EXPECT_STREQ(r.nccl_function, nccl_function(c));
  }
  // Only the broadcast has a root; only the all-to-all's in-place form stays with NCCL; the
  // benchmark measures all but the broadcast.
  for (Collective c : kCollectives) {
    EXPECT_EQ(record_of(c).has_root, c == Collective::Broadcast) << to_string(c);
    EXPECT_EQ(record_of(c).in_place_routed, c != Collective::AllToAll) << to_string(c);
    EXPECT_EQ(record_of(c).benchmarked, c != Collective::Broadcast) << to_string(c);
  }
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::Broadcast, 4), 1.0);
  EXPECT_EQ(send_elements(Collective::Broadcast, 5, 3), 5u);
  EXPECT_EQ(recv_elements(Collective::Broadcast, 5, 3), 5u);
}

TEST(Collective, InPlaceRulesAreNcclsPerKind) {
  alignas(16) static char buffer[4096];
  char* base = buffer;
  // 10 elements of 2 bytes, rank 2 of 3.
  EXPECT_TRUE(is_in_place(Collective::AllReduce, base, base, 10, 2, 2));
  EXPECT_FALSE(is_in_place(Collective::AllReduce, base, base + 2, 10, 2, 2));
  EXPECT_TRUE(is_in_place(Collective::AllGather, base + 40, base, 10, 2, 2));
  EXPECT_FALSE(is_in_place(Collective::AllGather, base, base, 10, 2, 2));
  EXPECT_TRUE(is_in_place(Collective::ReduceScatter, base, base + 40, 10, 2, 2));
  EXPECT_FALSE(is_in_place(Collective::ReduceScatter, base, base + 20, 10, 2, 2));
  EXPECT_TRUE(is_in_place(Collective::AllGather, base, base, 10, 2, 0));
  EXPECT_TRUE(is_in_place(Collective::AllToAll, base, base, 10, 2, 1));
}

}  // namespace
}  // namespace tandem
