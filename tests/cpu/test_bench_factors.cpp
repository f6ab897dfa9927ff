// The constants behind the bandwidth and bound columns, per collective, scenario and rank count:
// nccl-tests' busbw factors (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n)
// as a case's program reports them, how a collective's size splits across ranks, and the
// device-memory bytes the CPU can see without allocating (the collectives', the stream workload's),
// all written out by hand below.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "collective_op.h"
#include "harness/checked_collective.h"
#include "harness/program.h"
#include "harness/registry.h"
#include "tandem/copy_engine.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

// factor[ranks] by hand: all-reduce 2(n-1)/n = 1, 1.5, 1.75; the others (n-1)/n = 0.5, 0.75, 0.875.
const std::map<int, double> kAllReduce = {{1, 0.0}, {2, 1.0}, {4, 1.5}, {8, 1.75}};
const std::map<int, double> kOthers = {{1, 0.0}, {2, 0.5}, {4, 0.75}, {8, 0.875}};

// Addresses that are never dereferenced: a program only compares ranges.
char arena[1 << 16];

using tandem_test::collective_op;

// A program of one collective per kind named, in order, on separate buffers.
Program program_of(const std::string& kinds, int nranks) {
  Program p(nranks);
  std::stringstream list(kinds);
  std::string kind;
  int i = 0;
  while (std::getline(list, kind, '+')) {
    p.add(collective_op(find_collective(kind), arena + 2048 * i, arena + 2048 * i + 1024, 16));
    ++i;
  }
  p.finalize();
  return p;
}

TEST(BusbwFactors, EveryCollectivePerRankCount) {
  const std::map<std::string, const std::map<int, double>*> expected = {
      {"all-reduce", &kAllReduce}, {"all-gather", &kOthers}, {"reduce-scatter", &kOthers}, {"all-to-all", &kOthers}};
  for (const auto& [name, factors] : expected)
    for (const auto& [ranks, factor] : *factors)
      EXPECT_DOUBLE_EQ(program_of(name, ranks).busbw_factor(), factor) << name << " on " << ranks << " ranks";
  EXPECT_THROW(find_collective("allreduce"), UserError);
}

TEST(BusbwFactors, CollectivesOfDifferentFactorsShareNoColumn) {
  EXPECT_DOUBLE_EQ(program_of("all-gather+reduce-scatter", 4).busbw_factor(), 0.75);
  EXPECT_THROW(program_of("all-reduce+all-gather", 4).busbw_factor(), Error);
}

TEST(BusbwFactors, SizesSplitIntoWholeElementsPerRank) {
  // The all-reduce buffer is reduced whole; the others are split into one piece per rank. 6 bytes
  // are 3 bf16 elements: one all-reduce buffer, but no 2 equal pieces.
  EXPECT_NO_THROW(check_divisible(Collective::AllReduce, 6, DType::BF16, 2));
  for (const char* name : {"all-gather", "reduce-scatter", "all-to-all"}) {
    EXPECT_THROW(check_divisible(find_collective(name), 6, DType::BF16, 2), Error) << name;
    EXPECT_NO_THROW(check_divisible(find_collective(name), 8, DType::BF16, 2)) << name;
    EXPECT_THROW(check_divisible(find_collective(name), 8, DType::BF16, 8), Error) << name;
  }
}

TEST(BusbwFactors, EveryScenarioPerRankCount) {
  // Data parallel and tensor parallel without sequence parallelism all-reduce; FSDP gathers and
  // reduce-scatters; MoE exchanges all-to-all. A scenario declares its collectives before setup
  // (which checks its program issues exactly those); the factor is theirs.
  const std::map<std::string, const std::map<int, double>*> expected = {{"dp-backward", &kAllReduce},
                                                                        {"tp-mlp", &kAllReduce},
                                                                        {"tp-attention", &kAllReduce},
                                                                        {"fsdp", &kOthers},
                                                                        {"moe", &kOthers}};
  size_t scenarios = 0;
  for (const auto& entry : workload_registry()) {
    if (!entry.scenario) continue;
    ++scenarios;
    ScenarioConfig config;
    config.nranks = 2;
    const auto scenario = entry.scenario(config);
    const auto it = expected.find(entry.name);
    ASSERT_NE(it, expected.end()) << entry.name;
    for (const auto& [ranks, factor] : *it->second)
      EXPECT_DOUBLE_EQ(program_of(scenario->collective(), ranks).busbw_factor(), factor)
          << entry.name << " on " << ranks << " ranks";
  }
  EXPECT_EQ(scenarios, expected.size());
}

// Fewest device-memory bytes each collective moves, bf16 (2 bytes), 4 ranks, count 64: all-reduce
// and all-to-all read and write the whole buffer; an all-gather reads its chunk and writes the whole,
// or in place (its input inside its output) only the others' chunks; a reduce-scatter reads the
// whole and writes its chunk.
TEST(BoundBytes, EveryCollectiveReadsItsInputAndWritesItsOutput) {
  const int n = 4;
  const auto hbm = [&](Collective kind, const void* send, void* recv) {
    return collective_op(kind, send, recv, 64).call.hbm_bytes(n);
  };
  char* a = arena;
  char* b = arena + 4096;
  EXPECT_DOUBLE_EQ(hbm(Collective::AllReduce, a, b), 2 * 128.0);
  EXPECT_DOUBLE_EQ(hbm(Collective::AllReduce, a, a), 2 * 128.0);
  EXPECT_DOUBLE_EQ(hbm(Collective::AllGather, a, b), 128.0 + 512);
  EXPECT_DOUBLE_EQ(hbm(Collective::AllGather, b + 2 * 128, b), 512.0);  // rank 2's chunk, in place
  EXPECT_DOUBLE_EQ(hbm(Collective::ReduceScatter, a, b), 512.0 + 128);
  EXPECT_DOUBLE_EQ(hbm(Collective::AllToAll, a, b), 2 * 512.0);
  // A program's bytes are its operations' bytes.
  Program p(n);
  p.add(collective_op(Collective::AllGather, a, b, 64));
  Op unit;
  unit.hbm_bytes = 1000;
  unit.enqueue = [](cudaStream_t) {};
  p.add(unit);
  p.finalize();
  EXPECT_DOUBLE_EQ(p.hbm_bytes(), 128.0 + 512 + 1000);
}

TEST(BoundBytes, StreamTriadReadsTwoArraysAndWritesOne) {
  // a = b + s * c over --stream-bytes per array: 3 x the bytes of one array, per unit.
  WorkloadOptions options;
  options.stream_bytes = 64 << 20;
  EXPECT_DOUBLE_EQ(find_workload("stream").compute(options)->hbm_bytes(), 3.0 * (64 << 20));
  // The default array is 256 MiB.
  EXPECT_DOUBLE_EQ(find_workload("stream").compute(WorkloadOptions{})->hbm_bytes(), 3.0 * (256 << 20));
}

// The copy-engine all-reduce splits its elements into one equal chunk per rank (the exchange's
// reduce-scatter, then the all-gather): 1024 elements split on 2, 4 and 8 ranks, 1000 on 8 but not
// on 16 (62.5), 1001 on none but 7, 11 and 13.
TEST(CopyEngineChunking, AllReduceNeedsEqualChunks) {
  const auto copy_engine_all_reduce_refusal = [](uint64_t count, int ranks) {
    alignas(16) static char send[16], recv[16];
    tandem::CopyEngineCall call;
    call.kind = tandem::Collective::AllReduce;
    call.send = send;
    call.recv = recv;
    call.count = count;
    call.dtype = ncclBfloat16;
    return copy_engine_refusal(call, ranks);
  };
  for (int ranks : {1, 2, 4, 8}) EXPECT_EQ(copy_engine_all_reduce_refusal(1024, ranks), "") << ranks;
  EXPECT_EQ(copy_engine_all_reduce_refusal(1000, 8), "");
  EXPECT_EQ(copy_engine_all_reduce_refusal(1000, 16),
            "a copy-engine all-reduce splits its 1000 elements into 16 equal chunks");
  EXPECT_EQ(copy_engine_all_reduce_refusal(1001, 7), "");
  EXPECT_NE(copy_engine_all_reduce_refusal(1001, 2), "");
  EXPECT_NE(copy_engine_all_reduce_refusal(1001, 8), "");
}

}  // namespace
}  // namespace tandem::bench
