// `tandem run --timeline` on a real GPU against a program whose overlap is known by construction
// (tests/preload_target/timeline_program.cu: serial, concurrent and partial steps; CUDA events around
// each kernel give the truth). tandem's computation, communication, overlapped and exposed figures
// for each step must match the events' within 2 % (and 20 us, the events' own resolution and their
// distance from the kernels they bracket). Also: the program's results unchanged by the timeline, the
// trace well formed, and the whole run without steps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "gpu_test_util.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string program_path() {
  const fs::path beside = fs::path(tandem_test::cli_path()).parent_path() / "timeline_program";
  if (fs::exists(beside)) return beside.string();
  return TANDEM_TIMELINE_PROGRAM_PATH;
}

json last_json_line(const std::string& output) {
  std::istringstream lines(output);
  json found;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') found = json::parse(line, nullptr, false);
  return found;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / ("tandem_timeline_gpu_" + std::to_string(getpid()))) {
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

double ms(const json& step, const char* key) { return step.at(key).get<double>() / 1e6; }

// Within 2 % of `scale` (the quantity the figure is part of) and at least 20 us.
void expect_close(double measured, double truth, double scale, const std::string& what) {
  const double tolerance = std::max(0.02 * scale, 0.020);
  EXPECT_NEAR(measured, truth, tolerance) << what << ": tandem " << measured << " ms, events " << truth << " ms";
}

TEST(timeline_gpu, FiguresMatchTheConstructionWithinTwoPercent) {
  TANDEM_REQUIRE_GPUS(1);
  Scratch dir;
  const auto r = tandem_test::run_command(tandem_test::cli_path() + " run --timeline --step-range 'step*' --stats " +
                                          dir.path("stats.json") + " -- " + program_path() + " --repeat 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json truth = last_json_line(r.output);
  ASSERT_TRUE(truth.contains("steps")) << r.output;
  const json stats = json::parse(read_text(dir.path("stats.json")));
  const json& t = stats.at("timeline");
  ASSERT_EQ(t.at("state"), "recorded") << t.dump();
  ASSERT_EQ(t.at("steps_from"), "nvtx") << t.dump();
  ASSERT_EQ(t.at("devices").size(), 1u);
  const json& steps = t["devices"][0]["steps"];
  ASSERT_EQ(steps.size(), truth["steps"].size()) << r.output;
  EXPECT_EQ(t["lost"]["total"], 0) << "records lost on a short run";
  EXPECT_EQ(t["unplaced_steps"], 0) << "steps whose issue marks did not come back from CUPTI";
  for (size_t k = 0; k < steps.size(); ++k) {
    const json& want = truth["steps"][k];
    const json& got = steps[k];
    const std::string what = "step " + std::to_string(k) + " (" + want["kind"].get<std::string>() + ")";
    EXPECT_EQ(got["name"], "step " + want["kind"].get<std::string>()) << what;
    const double comp = want["computation_ms"], comm = want["communication_ms"], both = want["overlapped_ms"];
    expect_close(ms(got, "computation_ns"), comp, comp, what + " computation");
    expect_close(ms(got, "communication_ns"), comm, comm, what + " communication");
    expect_close(ms(got, "overlapped_ns"), both, comm, what + " overlapped");
    expect_close(ms(got, "exposed_communication_ns"), comm - both, comm, what + " exposed communication");
    EXPECT_GE(got["idle_ns"].get<int64_t>(), 0) << what;
  }
}

TEST(timeline_gpu, TheProgramRunsTheSameWithAndWithoutTheTimeline) {
  TANDEM_REQUIRE_GPUS(1);
  const auto plain = tandem_test::run_command(program_path() + " --repeat 1");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto recorded =
      tandem_test::run_command(tandem_test::cli_path() + " run --timeline -- " + program_path() + " --repeat 1");
  ASSERT_EQ(recorded.exit_code, 0) << recorded.output;
  EXPECT_EQ(last_json_line(plain.output)["steps"].size(), last_json_line(recorded.output)["steps"].size());
  // Without --step-range the whole run is one step.
  EXPECT_NE(recorded.output.find("the whole run as one step"), std::string::npos) << recorded.output;
}

TEST(timeline_gpu, TheTraceHasBothClassesOnTheirStreams) {
  TANDEM_REQUIRE_GPUS(1);
  Scratch dir;
  const auto r = tandem_test::run_command(tandem_test::cli_path() + " run --step-range 'step*' --trace " +
                                          dir.path("trace.json") + " -- " + program_path() + " --repeat 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json trace = json::parse(read_text(dir.path("trace.json")));
  std::set<std::string> communication_names;
  std::set<long> compute_tracks, communication_tracks;
  size_t steps = 0;
  for (const json& e : trace.at("traceEvents")) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "communication") {
      communication_names.insert(e["name"].get<std::string>());
      communication_tracks.insert(e["tid"].get<long>());
    } else if (e["cat"] == "computation") {
      compute_tracks.insert(e["tid"].get<long>());
    } else if (e["cat"] == "step") {
      ++steps;
    }
  }
  EXPECT_EQ(communication_names, std::set<std::string>{"ncclDevKernel_TandemTimelineSpin"});
  EXPECT_EQ(steps, 3u);
  // One stream each: the tracks differ.
  for (long tid : communication_tracks) EXPECT_EQ(compute_tracks.count(tid), 0u);
}

}  // namespace
