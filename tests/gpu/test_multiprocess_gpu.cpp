// One process per rank, as mpirun, torchrun and srun start them: the same rows and exact results as
// the threads mode, the launch recorded in the JSON, and bad launches (a rank that never joins,
// mismatched world sizes, two ranks on one GPU) ending with a message and a non-zero exit, never a
// hang.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "gpu_test_util.h"

namespace {

// Small and with a fixed compute count, so that both modes run the same rows.
const std::string kCase =
    " bench --workload stream,tiled-gemm --gemm-shape 1024x1024x256 --stream-bytes 16M -b 8M --count 2 -n 3 "
    "--warmup 1 -p concurrent,priority,shape:2+priority -q";

std::string temp_dir() {
  static const std::string dir = [] {
    std::string pattern = ::testing::TempDir() + "/tandem-mp-XXXXXX";
    if (!mkdtemp(pattern.data())) return ::testing::TempDir();
    return pattern;
  }();
  return dir;
}

// A port nobody else in this test run uses: torchrun's MASTER_PORT also keys the rendezvous folder.
int fresh_port() {
  static int next = 20000 + static_cast<int>(getpid() % 20000);
  return next++;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json();
  return nlohmann::json::parse(in, nullptr, false);
}

using RowKey = std::tuple<std::string, std::string, std::string, int>;  // workload, collective, policy, count
std::set<RowKey> row_keys(const nlohmann::json& doc) {
  std::set<RowKey> out;
  for (const auto& r : doc["rows"])
    out.insert({r["workload"].get<std::string>(), r["collective"].get<std::string>(), r["policy"].get<std::string>(),
                r["count"].get<int>()});
  return out;
}

void expect_all_correct(const nlohmann::json& doc) {
  ASSERT_TRUE(doc.contains("rows"));
  EXPECT_GT(doc["rows"].size(), 0u);
  for (const auto& r : doc["rows"]) {
    EXPECT_EQ(r["wrong"].get<int64_t>(), 0) << r.dump();
    EXPECT_EQ(r["ranks"].get<int>(), 2);
    EXPECT_GT(r["t_overlap_ms"].get<double>(), 0);
  }
}

const nlohmann::json& threads_reference() {
  static const nlohmann::json doc = [] {
    const std::string json = temp_dir() + "/threads.json";
    const auto r = tandem_test::run_command(tandem_test::cli_path() + kCase + " --gpus 2 --json " + json);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return read_json(json);
  }();
  return doc;
}

// Starts one `tandem` per rank in the background with `env_of(rank)` in front of it (the way
// torchrun and srun start them), waits for all, and returns the exit codes and output of each.
struct RankRun {
  std::vector<int> exit_codes;
  std::string output;  // every rank's, each line prefixed by "[rank] "
  double seconds = 0;
};

RankRun run_ranks(int nranks, const std::function<std::string(int)>& env_of, const std::string& args) {
  const std::string dir = temp_dir();
  std::string script;
  for (int r = 0; r < nranks; ++r)
    script += "env " + env_of(r) + " " + tandem_test::cli_path() + args + " > " + dir + "/rank" + std::to_string(r) +
              ".log 2>&1 & p" + std::to_string(r) + "=$!; ";
  for (int r = 0; r < nranks; ++r) script += "wait $p" + std::to_string(r) + "; echo rc" + std::to_string(r) + "=$?; ";
  const auto started = std::chrono::steady_clock::now();
  const auto res = tandem_test::run_command("bash -c '" + script + "'");
  RankRun out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (int r = 0; r < nranks; ++r) {
    const std::string key = "rc" + std::to_string(r) + "=";
    const auto at = res.output.find(key);
    out.exit_codes.push_back(at == std::string::npos ? -1 : std::atoi(res.output.c_str() + at + key.size()));
    std::ifstream in(dir + "/rank" + std::to_string(r) + ".log");
    for (std::string line; std::getline(in, line);) out.output += "[" + std::to_string(r) + "] " + line + "\n";
  }
  return out;
}

// Whether a line of `rank`'s output contains `text`.
bool rank_said(const std::string& output, int rank, const std::string& text) {
  const std::string prefix = "[" + std::to_string(rank) + "] ";
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(start, end - start);
    if (line.rfind(prefix, 0) == 0 && line.find(text) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

std::string torchrun_env(int rank, int world, int port, const std::string& extra = "") {
  return "RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(world) +
         " LOCAL_RANK=" + std::to_string(rank) + " LOCAL_WORLD_SIZE=" + std::to_string(world) +
         " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " TORCHELASTIC_RUN_ID=tandem-test-" +
         std::to_string(port) + " TORCHELASTIC_RESTART_COUNT=0 GROUP_RANK=0 " + extra;
}

TEST(MultiProcess, MpirunMatchesThreads) {
  TANDEM_REQUIRE_GPUS(2);
  if (tandem_test::run_command("command -v mpirun").exit_code != 0) GTEST_SKIP() << "mpirun is not on PATH";
  const std::string json = temp_dir() + "/mpi.json";
  const auto r = tandem_test::run_command("mpirun -np 2 --allow-run-as-root " + tandem_test::cli_path() + kCase +
                                          " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Only rank 0 prints.
  size_t oks = 0;
  for (size_t at = r.output.find("# OK:"); at != std::string::npos; at = r.output.find("# OK:", at + 1)) ++oks;
  EXPECT_EQ(oks, 1u) << r.output;
  const auto doc = read_json(json);
  expect_all_correct(doc);
  EXPECT_EQ(doc["launch"], "mpi");
  EXPECT_EQ(doc["world_size"], 2);
  if (doc.value("rendezvous", "") != "mpi")
    std::cerr << "note: mpirun run met through " << doc.value("rendezvous", "?")
              << " (MPI module not loaded); notes: " << doc["notes"].dump() << "\n";
  EXPECT_EQ(row_keys(doc), row_keys(threads_reference()));
}

TEST(MultiProcess, TorchrunEnvironmentMatchesThreads) {
  TANDEM_REQUIRE_GPUS(2);
  const int port = fresh_port();
  const std::string json = temp_dir() + "/torchrun.json";
  const auto run = run_ranks(
      2, [&](int r) { return torchrun_env(r, 2, port); }, kCase + " --json " + json);
  ASSERT_EQ(run.exit_codes, (std::vector<int>{0, 0})) << run.output;
  const auto doc = read_json(json);
  expect_all_correct(doc);
  EXPECT_EQ(doc["launch"], "torchrun");
  EXPECT_EQ(doc["world_size"], 2);
  EXPECT_EQ(doc.value("rendezvous", "").rfind("file:", 0), 0u) << doc.value("rendezvous", "");
  EXPECT_EQ(row_keys(doc), row_keys(threads_reference()));
  // Rank 1 prints nothing on stdout.
  EXPECT_EQ(run.output.find("[1] # OK"), std::string::npos) << run.output;
}

TEST(MultiProcess, NcclCommIdRendezvous) {
  TANDEM_REQUIRE_GPUS(2);
  const int port = fresh_port();
  const std::string json = temp_dir() + "/commid.json";
  const auto run = run_ranks(
      2,
      [&](int r) {
        return "RANK=" + std::to_string(r) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(r) +
               " NCCL_COMM_ID=127.0.0.1:" + std::to_string(port);
      },
      " bench --workload stream --stream-bytes 16M -b 8M --count 1 -n 2 --warmup 1 -p concurrent,nccl-ctas:4 -q "
      "--json " +
          json);
  ASSERT_EQ(run.exit_codes, (std::vector<int>{0, 0})) << run.output;
  const auto doc = read_json(json);
  expect_all_correct(doc);
  EXPECT_EQ(doc["launch"], "env");
  EXPECT_EQ(doc.value("rendezvous", ""), "nccl-comm-id:127.0.0.1:" + std::to_string(port));
  // nccl-ctas:4 needs a second communicator, whose id travels over the control channel.
  EXPECT_EQ(doc["rows"].size(), 2u);
}

TEST(MultiProcess, RankThatNeverJoinsIsNamed) {
  TANDEM_REQUIRE_GPUS(2);
  const int port = fresh_port();
  // Only rank 0 of 2 is started.
  const auto run = run_ranks(
      1, [&](int r) { return torchrun_env(r, 2, port); }, kCase + " --timeout 5");
  EXPECT_NE(run.exit_codes[0], 0) << run.output;
  EXPECT_TRUE(rank_said(run.output, 0, "rank 1 did not join the rendezvous")) << run.output;
  EXPECT_LT(run.seconds, 60) << run.output;
}

TEST(MultiProcess, MismatchedWorldSizesFailEveryRank) {
  TANDEM_REQUIRE_GPUS(2);
  const int port = fresh_port();
  const auto run = run_ranks(
      2,
      [&](int r) {
        // Rank 1 believes in a world of three; same rendezvous key (run id and master) for both.
        return "RANK=" + std::to_string(r) + " WORLD_SIZE=" + (r == 0 ? "2" : "3") +
               " LOCAL_RANK=" + std::to_string(r) + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
               " TORCHELASTIC_RUN_ID=mismatch-" + std::to_string(port);
      },
      kCase + " --timeout 20");
  EXPECT_NE(run.exit_codes[0], 0) << run.output;
  EXPECT_NE(run.exit_codes[1], 0) << run.output;
  for (int rank : {0, 1})
    EXPECT_TRUE(rank_said(run.output, rank, "rank 1 was started with a world size of 3 but rank 0 with 2"))
        << run.output;
  EXPECT_LT(run.seconds, 60);
}

TEST(MultiProcess, TwoRanksOnOneGpuAreRefused) {
  TANDEM_REQUIRE_GPUS(2);
  const int port = fresh_port();
  const auto run = run_ranks(
      2, [&](int r) { return torchrun_env(r, 2, port); }, kCase + " --device 0 --timeout 20");
  EXPECT_NE(run.exit_codes[0], 0) << run.output;
  EXPECT_NE(run.exit_codes[1], 0) << run.output;
  for (int rank : {0, 1}) EXPECT_TRUE(rank_said(run.output, rank, "ranks 0 and 1 share the GPU")) << run.output;
  EXPECT_NE(run.output.find("--allow-shared-gpu"), std::string::npos);
}

}  // namespace
