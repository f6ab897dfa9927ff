// `tandem tune -- CMD --objective step-time|exposed-comm`: candidates ranked by the figure their
// timeline gives (program_tools/program_objective.h), on the fake CUPTI's client in its "tuned" mode:
// one step whose communication is exposed for 300 us without a policy, 150 us under shape:N and not
// at all under priority (tests/preload_target/fake_cupti/fake_cupti_client.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

using json = nlohmann::json;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::sh_quoted;
using tandem_test::read_text;
using tandem_test::ScratchFolder;

const std::string kTandem = tandem_preload_test::tandem_path();
const std::string kClient = tandem_preload_test::fake_cupti_client_path();

Result tune(const ScratchFolder& dir, const std::string& options) {
  return run_shell("cd " + sh_quoted(dir.str()) +
                   " && env -u LD_LIBRARY_PATH -u NVTX_INJECTION64_PATH -u CUDA_INJECTION64_PATH " + kTandem +
                   " tune -q --logs logs --rounds 2 --candidates shape:2,priority --json tune.json " + options +
                   " -- " + kClient + " tuned");
}

TEST(preload_timeline_tune, ExposedCommunicationRanksTheCandidates) {
  ScratchFolder dir;
  const Result r = tune(dir, "--objective exposed-comm");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# metric     the slowest rank's exposed communication (ms, median over the whole run as one "
                       "step; tandem run --timeline), lower is better"),
            std::string::npos)
      << r.out;
  const json doc = json::parse(read_text(dir.path("tune.json")));
  EXPECT_EQ(doc["decision"]["winner"], "priority") << doc.dump();
  EXPECT_EQ(doc["objective"]["kind"], "exposed-comm");
  // The baseline ran under tandem run --timeline too (policy concurrent): exposed 0.3 ms.
  for (const json& p : doc["policies"]) {
    const double median = p["median"].get<double>();
    if (p["role"] == "baseline")
      EXPECT_DOUBLE_EQ(median, 0.3);
    else if (p["policy"] == "priority")
      EXPECT_DOUBLE_EQ(median, 0.0);
    else
      EXPECT_DOUBLE_EQ(median, 0.15);
  }
  EXPECT_EQ(read_text(dir.path("tandem-tuned.policy")).find("priority\n") != std::string::npos, true);
}

TEST(preload_timeline_tune, StepTimeToo) {
  ScratchFolder dir;
  const Result r = tune(dir, "--objective step-time");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const json doc = json::parse(read_text(dir.path("tune.json")));
  // The whole run: 900 us serial, 600 us with the communication beside the computation, 750 half.
  for (const json& p : doc["policies"]) {
    const double median = p["median"].get<double>();
    if (p["role"] == "baseline")
      EXPECT_DOUBLE_EQ(median, 0.9);
    else if (p["policy"] == "priority")
      EXPECT_DOUBLE_EQ(median, 0.6);
    else
      EXPECT_DOUBLE_EQ(median, 0.75);
  }
}

// A --logs folder an earlier tune used: its stats files, read as more ranks of this tune's runs,
// made priority as slow as the baseline and shape:2 the winner. They are removed first, with a line,
// and each run reads its own (issue 38, item 10).
TEST(preload_timeline_tune, AReusedLogsFolderIsEmptiedOfTheEarlierTunesFiles) {
  ScratchFolder dir;
  ASSERT_EQ(tune(dir, "--objective exposed-comm").status, 0);
  // The earlier tune's priority runs as if they had been as exposed as the baseline.
  size_t planted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path("logs"))) {
    const std::string name = entry.path().filename().string();
    if (name.find("-baseline.stats-") == std::string::npos) continue;
    const std::string round = name.substr(0, name.find('-'));
    std::filesystem::copy_file(entry.path(), dir.path("logs/" + round + "-priority.stats-1.json"));
    ++planted;
  }
  ASSERT_EQ(planted, 2u);
  std::ofstream(dir.path("logs/notes.txt")) << "the user's\n";
  const Result r = tune(dir, "--objective exposed-comm");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("tandem tune: warning: removed 14 files of an earlier tune from --logs '"), std::string::npos)
      << r.err;
  EXPECT_EQ(json::parse(read_text(dir.path("tune.json")))["decision"]["winner"], "priority") << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path("logs/notes.txt")));
}

TEST(preload_timeline_tune, InconsistentOptionsAreRefusedBeforeAnyRun) {
  ScratchFolder dir;
  Result r = tune(dir, "--objective metric");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--objective metric needs --metric"), std::string::npos) << r.err;
  r = tune(dir, "--objective step-time --metric 'x([0-9]+)'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--metric is read only with --objective metric"), std::string::npos) << r.err;
  r = tune(dir, "--step-range step");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--step-range is read only with --objective step-time or exposed-comm"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("logs/round1-baseline.log")));
}

}  // namespace
