// The copy-engine route behind `tandem run --policy copy-engine` on real NCCL, with 2 and 3 ranks on
// one GPU (one process a rank, each its own NCCL_HOSTID, so NCCL connects them over sockets):
// tests/preload_target/nccl_route_matrix runs every op x dtype x count (1, prime, even, uneven) x in
// place or not x eagerly, grouped or captured into a CUDA graph (and a group of several collectives),
// each checked against the route's numerics (tandem::SumScale) and NCCL's error bound. Stock NCCL
// must stay within its bound, and at 2 ranks be bitwise the route's numerics for every case but a
// pre-multiplied sum (0.375 x is not exact in the element type, and NCCL rounds one rank's term of
// each element to it, which one depending on the element); under the route every result must be
// bitwise the route's numerics, and every call must take the route.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "tandem/copy_engine_plan.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Beside `tandem` (a copied build tree keeps bin/ together), else where this build put it.
std::string matrix_program() {
  const fs::path beside = fs::path(tandem_test::cli_path()).parent_path() / "nccl_route_matrix";
  return fs::exists(beside) ? beside.string() : TANDEM_NCCL_ROUTE_MATRIX_PATH;
}

struct Rank {
  int exit_code = -1;
  std::string output;
  json result;  // the program's JSON line
  json stats;   // tandem run's --stats (routed runs)
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `nranks` ranks at once, each in its own process, under the copy-engine route or not;
// `pool_max`: TANDEM_ROUTE_POOL_MAX for the routed ranks ("" for the default); `peer_copies`: whether
// they ask for the route's peer copies (TANDEM_ROUTE_PEER_COPIES=1).
std::vector<Rank> run_ranks(int nranks, bool routed, const std::string& pool_max = "", bool peer_copies = false) {
  const fs::path dir = fs::temp_directory_path() / ("tandem_route_matrix_" + std::to_string(getpid()) + "_" +
                                                    std::to_string(nranks) + (routed ? "_routed" : "_stock"));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string script;
  for (int r = 0; r < nranks; ++r) {
    const std::string rank = std::to_string(r);
    std::string command = "env NCCL_NVLS_ENABLE=0 NCCL_HOSTID=tandem-route-matrix-" + rank + " ";
    if (!pool_max.empty()) command += "TANDEM_ROUTE_POOL_MAX=" + pool_max + " ";
    if (peer_copies) command += "TANDEM_ROUTE_PEER_COPIES=1 ";
    if (routed)
      command += tandem_test::cli_path() + " run --policy copy-engine --stats " + (dir / ("stats-" + rank)).string() +
                 ".json -- ";
    command += matrix_program() + " " + rank + " " + std::to_string(nranks) + " " + (dir / "id").string();
    script += "(timeout 600 " + command + " > " + (dir / ("out-" + rank)).string() + " 2>&1; echo $? > " +
              (dir / ("rc-" + rank)).string() + ") & ";
  }
  script += "wait";
  tandem_test::run_command("sh -c '" + script + "'");
  std::vector<Rank> ranks(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    Rank& out = ranks[size_t(r)];
    const std::string rank = std::to_string(r);
    out.output = read_text(dir / ("out-" + rank));
    const std::string rc = read_text(dir / ("rc-" + rank));
    out.exit_code = rc.empty() ? -1 : std::stoi(rc);
    std::istringstream lines(out.output);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && line.front() == '{') out.result = json::parse(line);
    if (fs::exists(dir / ("stats-" + rank + ".json")))
      out.stats = json::parse(read_text(dir / ("stats-" + rank + ".json")));
  }
  fs::remove_all(dir);
  return ranks;
}

class preload_nccl_route_matrix : public ::testing::TestWithParam<int> {};

TEST_P(preload_nccl_route_matrix, StockNcclIsWithinItsBound) {
  TANDEM_REQUIRE_GPUS(1);
  const int nranks = GetParam();
  for (const Rank& r : run_ranks(nranks, false)) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.result["wrong"], json::array()) << r.output;
    EXPECT_GT(r.result["cases"].get<int>(), 500);
    // Two ranks: NCCL's sums, averages and moves are bitwise the route's numerics.
    if (nranks == 2)
      for (const auto& name : r.result["inexact"])
        EXPECT_NE(name.get<std::string>().find("_premul_"), std::string::npos) << name;
  }
}

// A routed rank: every call took the route, every result is the route's numerics. `peer_copies`: the
// rank asked for the route's peer copies.
void expect_routed_and_exact(const Rank& r, bool peer_copies = false) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["wrong"], json::array()) << r.output;
  EXPECT_EQ(r.result["inexact"], json::array()) << r.output;
  ASSERT_TRUE(r.stats.is_object()) << r.output;
  const json& reach = r.stats["copy_engine_reach"];
  EXPECT_EQ(reach["calls"], reach["total_calls"]) << r.stats["nccl_collectives"].dump(1);
  EXPECT_EQ(reach["bytes"], reach["total_bytes"]);
  EXPECT_GT(reach["calls"].get<int>(), 500);
  for (const auto& [name, collective] : r.stats["nccl_collectives"].items())
    EXPECT_EQ(collective["nccl"], json::object()) << name;
  // Each captured case's call was captured once and replayed three times.
  EXPECT_GT(r.stats["copy_engine_route"]["captured"].get<int>(), 100);
  // Ranks with NCCL_HOSTID of their own are one node each to NCCL, whose LSA team (the ranks that map
  // each other's windows) is then each rank alone: no peer to copy with by address, every plan stages,
  // and peer copies asked for are said unavailable on every route.
  const json& route = r.stats["copy_engine_route"];
  EXPECT_EQ(route["peer_bytes"].get<int64_t>(), 0);
  EXPECT_GT(route["staged_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(route["peer_copies_unavailable"], peer_copies ? route["routes"] : json(0)) << route.dump(1);
  EXPECT_EQ(r.output.find("peer copies asked for") != std::string::npos, peer_copies) << r.output;
}

TEST_P(preload_nccl_route_matrix, EveryCallTakesTheRouteAndIsExact) {
  TANDEM_REQUIRE_GPUS(1);
  for (const Rank& r : run_ranks(GetParam(), true)) expect_routed_and_exact(r);
}

// The pool cap of the test below, and what it makes of the matrix's calls.
constexpr const char* kSmallCap = "16KiB";
constexpr size_t kSmallCapBytes = 16 << 10;

size_t pieces_under_small_cap(tandem::Collective kind, uint64_t count, int nranks, size_t element_bytes, bool in_place,
                              bool peer_copies = false) {
  tandem::PlanRequest r;
  r.kind = kind;
  r.count = count;
  r.nranks = nranks;
  r.element_bytes = element_bytes;
  r.in_place = in_place;
  r.root = nranks - 1;
  r.peer_copies = peer_copies;
  return tandem::pieces_within(r, kSmallCapBytes).size();  // the route's granularity, 4096 elements
}

// The premise of the test below, checked without a GPU: under the small cap every kind of the
// matrix (tests/preload_target/nccl_route_matrix.cpp) has calls that run in several pieces, in place
// and not: the reduce-scatters', all-gathers' and all-to-alls' strided, the last piece shorter.
TEST_P(preload_nccl_route_matrix, TheSmallCapCutsCallsOfEveryKind) {
  const int n = GetParam();
  using tandem::Collective;
  for (bool in_place : {false, true}) {
    for (size_t bytes : {size_t(2), size_t(4)}) {  // bf16 and fp16, fp32
      EXPECT_EQ(pieces_under_small_cap(Collective::AllReduce, 7919, n, bytes, in_place), 2u) << bytes;
      // With peer copies (as on one node's GPUs): granule pieces, whose pool exceeds the cap.
      EXPECT_EQ(pieces_under_small_cap(Collective::AllReduce, 7919, n, bytes, in_place, true), 2u) << bytes;
      EXPECT_EQ(pieces_under_small_cap(Collective::ReduceScatter, 7919, n, bytes, in_place), 2u) << bytes;
      EXPECT_EQ(pieces_under_small_cap(Collective::ReduceScatter, 4096 * uint64_t(n), n, bytes, in_place), size_t(n))
          << bytes;
    }
    EXPECT_EQ(pieces_under_small_cap(Collective::Broadcast, 7919, n, 4, in_place), 2u);  // fp32
    for (size_t bytes : {size_t(2), size_t(4), size_t(8)}) {                             // bf16, fp32, int64
      EXPECT_EQ(pieces_under_small_cap(Collective::AllGather, 7919, n, bytes, in_place), 2u) << bytes;
      if (!in_place) EXPECT_EQ(pieces_under_small_cap(Collective::AllToAll, 7919, n, bytes, false), 2u) << bytes;
    }
  }
}

TEST_P(preload_nccl_route_matrix, CallsLargerThanThePoolCapRunInPiecesAndStayExact) {
  TANDEM_REQUIRE_GPUS(1);
  // 16 KiB: calls of every kind run in pieces of one granule (4096 elements) or more, eagerly, grouped
  // and captured (TheSmallCapCutsCallsOfEveryKind): all-reduces and broadcasts of 4096 x ranks and
  // 7919 elements, reduce-scatters of 4096 x ranks and 7919 per rank, all-gathers and all-to-alls of
  // 7919 per rank, whose pieces are strided (each rank's part of each segment, staged by 2-D copies);
  // results must still be bitwise the route's numerics. The ranks ask for peer copies, which NCCL
  // cannot give ranks sharing a GPU: the route says so and stages.
  for (const Rank& r : run_ranks(GetParam(), true, kSmallCap, true)) expect_routed_and_exact(r, true);
}

INSTANTIATE_TEST_SUITE_P(ranks_on_one_gpu, preload_nccl_route_matrix, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_ranks";
                         });

}  // namespace
