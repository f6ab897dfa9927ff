// `tandem tune --resume FILE.json` (harness/tune_resume.h): which files are accepted, which runs
// match, and which cases count as finished, on hand-written tune JSON documents.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "harness/tune_resume.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

nlohmann::json row(const std::string& workload, uint64_t bytes, const std::string& policy, const std::string& role,
                   double t_overlap) {
  return {{"workload", workload}, {"collective", "all-reduce"}, {"dtype", "bf16"},   {"bytes", bytes},
          {"policy", policy},     {"tuned", role == "tuned"},   {"tune_role", role}, {"t_overlap_ms", t_overlap},
          {"t_seq_ms", 10.0},     {"efficiency", nullptr},      {"wrong", 0}};
}

RunInfo this_run() {
  RunInfo info;
  info.tool = "tune";
  info.gpu = "NVIDIA H200";
  info.gpus = 1;
  info.world_size = 1;
  info.config = {"workloads gemm,stream", "collectives all-reduce, bf16, 256MiB..256MiB, factor 2.00, out of place"};
  return info;
}

// An interrupted tune of two cases: gemm finished (candidates, then naive, paper, tuned); stream
// cut short after two candidates.
nlohmann::json interrupted() {
  const RunInfo info = this_run();
  nlohmann::json rows = nlohmann::json::array({
      row("gemm", 256 << 20, "priority", "", 6),
      row("gemm", 256 << 20, "shape:3+priority", "", 5),
      row("gemm", 256 << 20, "concurrent", "naive", 9),
      row("gemm", 256 << 20, "priority", "paper", 6.1),
      row("gemm", 256 << 20, "shape:3+priority", "tuned", 4.9),
      row("stream", 256 << 20, "priority", "", 3),
      row("stream", 256 << 20, "concurrent", "", 4),
  });
  return {{"schema_version", 2}, {"complete", false}, {"tool", "tune"},        {"gpu", info.gpu},
          {"gpus", info.gpus},   {"world_size", 1},   {"config", info.config}, {"rows", rows}};
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.message();
  }
  return "(no UserError)";
}

std::string temp_file(const std::string& text) {
  char name[] = "/tmp/tandem-resume-XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

TEST(TuneResume, OnlyCasesWithATunedRowAreFinishedAndKeepAllTheirRows) {
  const auto cases = resumable_cases(interrupted(), this_run(), "t.json");
  ASSERT_EQ(cases.size(), 1u);
  const ResumedCase& gemm = cases[0];
  EXPECT_EQ(gemm.workload, "gemm");
  EXPECT_EQ(gemm.bytes, 256u << 20);
  EXPECT_EQ(gemm.rows.size(), 5u);
  EXPECT_EQ(gemm.tuned.policy, "shape:3+priority");
  EXPECT_DOUBLE_EQ(gemm.tuned.t_overlap_ms, 4.9);
  EXPECT_EQ(gemm.naive.policy, "concurrent");
  EXPECT_EQ(gemm.paper.policy, "priority");

  EXPECT_NE(find_resumed(cases, "gemm", "all-reduce", 256 << 20, "bf16"), nullptr);
  EXPECT_EQ(find_resumed(cases, "stream", "all-reduce", 256 << 20, "bf16"), nullptr) << "cut short: tuned again";
  EXPECT_EQ(find_resumed(cases, "gemm", "all-reduce", 128 << 20, "bf16"), nullptr);
  EXPECT_EQ(find_resumed(cases, "gemm", "all-gather", 256 << 20, "bf16"), nullptr);
  EXPECT_EQ(find_resumed(cases, "gemm", "all-reduce", 256 << 20, "fp16"), nullptr);
}

TEST(TuneResume, AnotherRunIsOneLineNamingTheMismatch) {
  RunInfo two = this_run();
  two.gpus = 2;
  const std::string gpus = message_of([&] { resumable_cases(interrupted(), two, "t.json"); });
  EXPECT_NE(gpus.find("--resume 't.json': its run had GPU count '1', this one '2'"), std::string::npos) << gpus;

  RunInfo other_gpu = this_run();
  other_gpu.gpu = "NVIDIA A100";
  EXPECT_NE(message_of([&] { resumable_cases(interrupted(), other_gpu, "t.json"); }).find("GPU 'NVIDIA H200'"),
            std::string::npos);

  RunInfo in_place = this_run();
  in_place.config[1] = "collectives all-reduce, bf16, 256MiB..256MiB, factor 2.00, in place";
  const std::string config = message_of([&] { resumable_cases(interrupted(), in_place, "t.json"); });
  EXPECT_NE(config.find("out of place'"), std::string::npos) << config;
  EXPECT_NE(config.find(", in place'"), std::string::npos) << config;
  EXPECT_EQ(config.find('\n'), std::string::npos);

  RunInfo more = this_run();
  more.config.push_back("workload  stream");
  EXPECT_NE(message_of([&] { resumable_cases(interrupted(), more, "t.json"); }).find("configuration line"),
            std::string::npos);
}

TEST(TuneResume, TheFileMustBeATuneJsonOfSchemaVersion2) {
  const std::string good = temp_file(interrupted().dump());
  EXPECT_EQ(read_resume_file(good)["rows"].size(), 7u);

  nlohmann::json bench = interrupted();
  bench["tool"] = "bench";
  nlohmann::json old = interrupted();
  old["schema_version"] = 1;
  nlohmann::json unversioned = interrupted();
  unversioned.erase("schema_version");
  const std::string files[] = {temp_file("{not json"), temp_file(bench.dump()), temp_file(old.dump()),
                               temp_file(unversioned.dump())};
  EXPECT_NE(message_of([&] { read_resume_file(files[0]); }).find("not JSON"), std::string::npos);
  EXPECT_NE(message_of([&] { read_resume_file(files[1]); }).find("not the --json of a tandem tune"), std::string::npos);
  EXPECT_NE(message_of([&] { read_resume_file(files[2]); }).find("schema_version 1, this tandem reads 2"),
            std::string::npos);
  EXPECT_NE(message_of([&] { read_resume_file(files[3]); }).find("schema_version missing"), std::string::npos);
  EXPECT_NE(message_of([&] { read_resume_file("/nonexistent/t.json"); }).find("--resume '/nonexistent/t.json': "),
            std::string::npos);
  for (const auto& f : files) std::remove(f.c_str());
  std::remove(good.c_str());
}

TEST(TuneResume, AMalformedRowIsAUserError) {
  nlohmann::json doc = interrupted();
  doc["rows"][2].erase("policy");
  EXPECT_NE(message_of([&] { resumable_cases(doc, this_run(), "t.json"); }).find("row 3 is not a tandem tune row"),
            std::string::npos);
}

}  // namespace
}  // namespace tandem::bench

namespace {

// The command checks --resume before it looks for a GPU: a bad file is the error, not "no GPU".
TEST(TuneResumeCli, ABadFileIsOneLineBeforeAnyGpuWork) {
  const std::string command =
      "CUDA_VISIBLE_DEVICES= " + std::string(TANDEM_CLI_PATH) + " tune --resume /nonexistent/t.json 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  EXPECT_NE(pclose(pipe), 0);
  EXPECT_EQ(out.rfind("tandem: error: --resume '/nonexistent/t.json': ", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

}  // namespace
