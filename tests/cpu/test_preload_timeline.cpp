// `tandem run --timeline` end to end without a GPU: tests/preload_target/fake_cupti/fake_cupti_client
// launches through the fake driver (the interposer's first CUDA activity), initialises NVTX as NVTX
// does, and plays the GPU on the fake CUPTI, whose records are the truth: three steps of known
// overlap (serial, concurrent, partial), a program profiler that takes CUPTI late or first, two
// processes of one job. Checks the figures, the stats file, the job's line, the trace, and that the
// program's own profiler gets exactly its records.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "default_dispositions.h"
#include "scratch_folder.h"
#include "test_preload_paths.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using tandem_test::read_text;
using tandem_test::ScratchFolder;

const std::string kClient = tandem_preload_test::fake_cupti_client_path();
const std::string kTandem = tandem_preload_test::tandem_path();

struct TandemRun {
  int status = -1;
  json out;  // the client's line (the last one printed)
  std::string err;
  json stats;  // the --stats file, when asked for
};

// `tandem run ARGS -- COMMAND` with the test's environment cleared of the variables that matter.
TandemRun tandem_run(const ScratchFolder& dir, const std::string& args, const std::string& command,
                     const std::string& environment = "") {
  const std::string out = dir.path("out").string(), err = dir.path("err").string();
  const std::string line = "env -u LD_LIBRARY_PATH -u NVTX_INJECTION64_PATH -u CUDA_INJECTION64_PATH -u RANK " +
                           environment + " " + kTandem + " run " + args + " -- " + command + " >" + out + " 2>" + err;
  const int raw = std::system(line.c_str());
  TandemRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.err = read_text(err);
  const std::string text = read_text(out);
  const size_t last = text.find_last_of('{');
  if (last != std::string::npos) r.out = json::parse(text.substr(last), nullptr, false);
  if (std::filesystem::exists(dir.path("stats.json"))) r.stats = json::parse(read_text(dir.path("stats.json")));
  return r;
}

const json& only_device(const json& timeline) {
  EXPECT_EQ(timeline["devices"].size(), 1u) << timeline.dump();
  return timeline["devices"].at(0);
}

TEST(preload_timeline, FiguresMatchTheConstructionStepByStep) {
  ScratchFolder dir;
  const TandemRun r =
      tandem_run(dir, "--timeline --step-range step --stats " + dir.path("stats.json").string(), kClient + " overlap");
  ASSERT_EQ(r.status, 0) << r.err;
  const json& t = r.stats["timeline"];
  EXPECT_EQ(t["state"], "recorded") << t.dump();
  EXPECT_EQ(t["steps_from"], "nvtx");
  EXPECT_EQ(t["step_range"], "step");
  EXPECT_EQ(t["unplaced_steps"], 0) << "every step's marks came back";
  // NVTX found the interposer through NVTX_INJECTION64_PATH, and tandem's own callbacks took the
  // ranges (CUPTI's NVTX entry was never called); the marks' API records were enabled.
  EXPECT_EQ(r.out["nvtx_injection"], 1);
  EXPECT_EQ(r.out["nvtx_inits"], 0);
  EXPECT_EQ(r.out["api_records_enabled"], 5) << "4 copy and memset calls, and cuDriverGetVersion for the marks";
  const json& d = only_device(t);
  const json& steps = d["steps"];
  ASSERT_EQ(steps.size(), 3u)
      << "the nested 'step's (step > step, step > phase > step) and the 'warmup' range are no steps: " << steps.dump();
  // The construction (fake_cupti_client.cpp), in microseconds: each step's window on the GPU runs from
  // its first record to the next step's first (the last one: to its last record's end).
  const struct {
    int64_t step, comp, comm, overlapped, exposed, idle;
  } truth[] = {{1000, 400, 300, 0, 300, 300}, {1000, 600, 300, 300, 0, 400}, {800, 500, 400, 100, 300, 0}};
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    EXPECT_EQ(steps[k]["start_ns"], 1000000000 + 1000 * 1000 * static_cast<int64_t>(k));
    EXPECT_EQ(steps[k]["step_ns"], truth[k].step * 1000);
    EXPECT_EQ(steps[k]["computation_ns"], truth[k].comp * 1000);
    EXPECT_EQ(steps[k]["communication_ns"], truth[k].comm * 1000);
    EXPECT_EQ(steps[k]["overlapped_ns"], truth[k].overlapped * 1000);
    EXPECT_EQ(steps[k]["exposed_communication_ns"], truth[k].exposed * 1000);
    EXPECT_EQ(steps[k]["idle_ns"], truth[k].idle * 1000);
  }
  EXPECT_DOUBLE_EQ(steps[2]["hidden_share"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(d["hidden_share"].get<double>(), 0.4);  // 400 of 1000 over the three steps
  EXPECT_EQ(d["records"]["kernels"], 7);
  EXPECT_EQ(d["records"]["communication"], 3);
  EXPECT_EQ(d["records"]["outside_steps"], 1);
  // CUPTI's dropped records are reported, never hidden.
  EXPECT_EQ(t["lost"]["dropped"], 2);
  EXPECT_NE(r.err.find("2 records lost (2 dropped by CUPTI"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("timeline: GPU 0, 3 steps 'step' (NVTX ranges); median step 1.000 ms"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("40.0 % of the communication hidden"), std::string::npos) << r.err;
  // One process: no job line.
  EXPECT_EQ(r.err.find("job timeline"), std::string::npos) << r.err;
}

TEST(preload_timeline, WithoutAPatternTheWholeRunIsOneStep) {
  ScratchFolder dir;
  const TandemRun r = tandem_run(dir, "--timeline --stats " + dir.path("stats.json").string(), kClient + " overlap");
  ASSERT_EQ(r.status, 0) << r.err;
  const json& t = r.stats["timeline"];
  EXPECT_EQ(t["steps_from"], "run");
  const json& steps = only_device(t)["steps"];
  ASSERT_EQ(steps.size(), 1u);
  // From the first kernel's start (0) to the last one's end (3700 us).
  EXPECT_EQ(steps[0]["step_ns"], 3700 * 1000);
  EXPECT_EQ(steps[0]["communication_ns"], 1000 * 1000);
  EXPECT_EQ(steps[0]["overlapped_ns"], 400 * 1000);
  // No steps were asked for: no mark, so no API records of cuDriverGetVersion.
  EXPECT_EQ(r.out["api_records_enabled"], 4);
  EXPECT_NE(r.err.find("the whole run as one step"), std::string::npos) << r.err;
}

// nvtxRangePushW(L"ステップ"): the name is UTF-8, matched by the pattern as written and named so.
TEST(preload_timeline, AWideStepNameIsMatchedAndNamedAsWritten) {
  const std::string name = "\u30b9\u30c6\u30c3\u30d7";  // ステップ
  ScratchFolder dir;
  const TandemRun r = tandem_run(
      dir, "--timeline --step-range '" + name + "' --stats " + dir.path("stats.json").string(), kClient + " wide");
  ASSERT_EQ(r.status, 0) << r.err;
  const json& steps = only_device(r.stats["timeline"])["steps"];
  ASSERT_EQ(steps.size(), 1u) << r.stats["timeline"].dump();
  EXPECT_EQ(steps[0]["name"], name);
  // Four characters, not four '?': the narrowed name no longer matches (no range did: the whole run).
  ScratchFolder other;
  const TandemRun q = tandem_run(other, "--timeline --step-range '????' --stats " + other.path("stats.json").string(),
                                 kClient + " wide");
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_EQ(q.stats["timeline"]["steps_from"], "run") << q.stats["timeline"].dump();
}

TEST(preload_timeline, AProfilerThatTakesCuptiLaterGetsOnlyItsOwnRecords) {
  ScratchFolder dir;
  const TandemRun r =
      tandem_run(dir, "--timeline --step-range step --stats " + dir.path("stats.json").string(), kClient + " profiler");
  ASSERT_EQ(r.status, 0) << r.err;
  // The program's registration went through (its result is CUPTI's), and its profiler received the
  // two kernels that ran under it and nothing of tandem's.
  EXPECT_EQ(r.out["profiler_result"], 0);
  EXPECT_EQ(r.out["registrations"], 2);
  EXPECT_EQ(r.out["program_records"], 2);
  // tandem's own API records were disabled at the hand-over; the program's kind stayed.
  EXPECT_EQ(r.out["api_records_enabled"], 0);
  EXPECT_EQ(r.out["kernel_enabled"], 1);
  const json& t = r.stats["timeline"];
  EXPECT_EQ(t["state"], "stepped-aside");
  EXPECT_FALSE(t["recorded_until_ns"].is_null());
  // Its figures are those of the part before the hand-over: one step, one kernel of each class.
  const json& steps = only_device(t)["steps"];
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["step_ns"], 700 * 1000);
  EXPECT_EQ(steps[0]["computation_ns"], 400 * 1000);
  EXPECT_EQ(steps[0]["communication_ns"], 500 * 1000);
  EXPECT_EQ(steps[0]["overlapped_ns"], 200 * 1000);
  // One warning at the hand-over.
  EXPECT_NE(r.err.find("warn: timeline: the program's profiler registered CUPTI's activity callbacks"),
            std::string::npos)
      << r.err;
}

TEST(preload_timeline, AProfilerThatTakesCuptiFirstKeepsIt) {
  ScratchFolder dir;
  const TandemRun r = tandem_run(dir, "--timeline --step-range step --stats " + dir.path("stats.json").string(),
                                 kClient + " profiler-first");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out["registrations"], 1) << "tandem registered callbacks over the program's";
  EXPECT_EQ(r.out["program_records"], 2);
  EXPECT_EQ(r.out["nvtx_injection"], 1);
  EXPECT_EQ(r.out["nvtx_inits"], 0);
  EXPECT_EQ(r.out["api_records_enabled"], 0);
  const json& t = r.stats["timeline"];
  EXPECT_EQ(t["state"], "stepped-aside");
  EXPECT_TRUE(t["devices"].empty());
  EXPECT_NE(r.err.find("timeline steps aside: the program's own profiler"), std::string::npos) << r.err;
}

TEST(preload_timeline, AToolInjectedIntoCudaKeepsCupti) {
  ScratchFolder dir;
  const TandemRun r = tandem_run(dir, "--timeline --stats " + dir.path("stats.json").string(), kClient + " overlap",
                                 "CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out["registrations"], 0);
  EXPECT_EQ(r.stats["timeline"]["state"], "stepped-aside");
  EXPECT_NE(r.err.find("CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so"), std::string::npos) << r.err;
}

TEST(preload_timeline, AnotherNvtxInjectionIsLeftInPlaceAndKeepsCupti) {
  ScratchFolder dir;
  // The fake CUPTI stands in for another tool's NVTX injection: tandem run must not replace it.
  const std::string tool = tandem_preload_test::fake_cupti_path();
  const TandemRun r = tandem_run(dir, "--timeline --stats " + dir.path("stats.json").string(), kClient + " overlap",
                                 "NVTX_INJECTION64_PATH=" + tool);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out["nvtx_inits"], 1) << "NVTX reached the tool's injection directly";
  EXPECT_EQ(r.out["registrations"], 0);
  EXPECT_EQ(r.stats["timeline"]["state"], "stepped-aside");
}

// Under a shape policy the timeline tells the shaped kernels by their size and checks them against
// the communication that ran: the construction (fake_cupti_client.cpp, play_shaped_and_natural) has
// the shaped kernel beside communication for 200 us and once beside nothing, and its cooperative
// launch, which the policy cannot shape, beside it for 100 us.
TEST(preload_timeline, UnderAShapePolicyTheShapedKernelsAreCheckedAgainstTheCommunication) {
  ScratchFolder dir;
  const TandemRun r =
      tandem_run(dir, "--policy shape:2+compute-always --timeline --stats " + dir.path("stats.json").string(),
                 kClient + " shaped");
  ASSERT_EQ(r.status, 0) << r.err;
  const json& shaping = only_device(r.stats["timeline"])["shaping"];
  ASSERT_TRUE(shaping.is_object()) << r.stats["timeline"].dump();
  EXPECT_EQ(shaping["shaped_kernels"], 2) << shaping.dump();
  EXPECT_EQ(shaping["shaped_beside_communication"], 1);
  EXPECT_EQ(shaping["kernels_beside_communication"], 2);
  EXPECT_EQ(shaping["beside_communication_ns"], 300000);
  EXPECT_EQ(shaping["beside_communication_shapeable_ns"], 200000);
  EXPECT_EQ(shaping["beside_communication_shaped_ns"], 200000);
  EXPECT_EQ(shaping["unattributed_kernels"], 0);
  EXPECT_EQ(shaping["left_alone_beside_later_ns"], 0);  // compute-always: nothing left alone
  EXPECT_TRUE(shaping["left_alone_later_share"].is_null());
  EXPECT_NE(r.err.find("shaped kernels beside communication: 50.0 % (1 of 2); computation beside communication that "
                       "the policy can shape, shaped: 100.0 % of its time (0.200 of 0.200 ms); 0.100 of 0.300 ms "
                       "beside communication in kernels it cannot shape"),
            std::string::npos)
      << r.err;

  // Without a shape policy there is nothing to check, and nothing is said.
  ScratchFolder plain;
  const TandemRun p = tandem_run(plain, "--policy priority --timeline --stats " + plain.path("stats.json").string(),
                                 kClient + " shaped");
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_TRUE(only_device(p.stats["timeline"])["shaping"].is_null());
  EXPECT_EQ(p.err.find("shaped kernels beside"), std::string::npos) << p.err;
}

TEST(preload_timeline, WithoutTimelineNothingOfItHappens) {
  ScratchFolder dir;
  const TandemRun r = tandem_run(dir, "--stats " + dir.path("stats.json").string(), kClient + " overlap");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out["nvtx_injection"], 0) << "NVTX_INJECTION64_PATH set without --timeline";
  EXPECT_EQ(r.out["registrations"], 0);
  EXPECT_FALSE(r.stats.contains("timeline")) << r.stats.dump();
  EXPECT_EQ(r.err.find("timeline"), std::string::npos) << r.err;
}

TEST(preload_timeline, TwoProcessesGiveTheJobsLineAndOneTrace) {
  ScratchFolder dir;
  const std::string trace = dir.path("trace.json").string();
  const std::string job_json = dir.path("job.json").string();
  const TandemRun r = tandem_run(
      dir, "--timeline --step-range step --trace " + trace + " --timeline-json " + job_json,
      "sh -c 'RANK=0 " + kClient + " overlap >/dev/null & RANK=1 " + kClient + " overlap slow >/dev/null; wait'");
  ASSERT_EQ(r.status, 0) << r.err;
  // Rank 1's last step is the slower (1500 us against 800): the job's step 2 is rank 1's; the first
  // two tie and go to rank 0. The medians over the slowest steps (1000, 1000, 1500 us): computation of
  // 400, 600, 700 us; idle of 300, 400, 500 us.
  EXPECT_NE(r.err.find("tandem run: job timeline: 2 ranks, 3 steps 'step' (NVTX ranges); the slowest rank's step, "
                       "median 1.000 ms (rank 0 (pid"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("GPU 0 slowest in 2 of 3): computation 0.600 ms, communication 0.300 ms, overlapped "
                       "0.100 ms, exposed communication 0.300 ms, idle 0.400 ms"),
            std::string::npos)
      << r.err;
  // The job's headline: over the slowest steps, 0 + 300 + 100 of 300 + 300 + 400 us hidden, 40.0 % (the
  // steps' shares' mean would read 41.7 %, their median 25.0 %, the medians' quotient 33.3 %).
  const size_t job_start = r.err.find("tandem run: job timeline: 2 ranks");
  ASSERT_NE(job_start, std::string::npos) << r.err;
  const std::string job_line = r.err.substr(job_start, r.err.find('\n', job_start) - job_start);
  const std::string headline = "; 40.0 % of the communication hidden";
  ASSERT_GE(job_line.size(), headline.size()) << job_line;
  EXPECT_EQ(job_line.substr(job_line.size() - headline.size()), headline) << job_line;
  EXPECT_NE(r.err.find("4 activity records lost over the ranks"), std::string::npos) << r.err;

  const json doc = json::parse(read_text(trace));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  std::set<long> pids;
  std::set<std::string> categories;
  double earliest = 1e300;
  for (const json& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid")) << e.dump();
    pids.insert(e["pid"].get<long>());
    if (e["ph"] == "X") {
      categories.insert(e["cat"].get<std::string>());
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0);
      earliest = std::min(earliest, e["ts"].get<double>());
    }
    EXPECT_FALSE(e.contains("ts_ns")) << "a time left off the job's clock: " << e.dump();
  }
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_EQ(categories, (std::set<std::string>{"computation", "communication", "step"}));
  EXPECT_DOUBLE_EQ(earliest, 0.0);  // microseconds from the job's first event
  EXPECT_EQ(doc["otherData"]["job"]["ranks"], 2);
  EXPECT_EQ(doc["displayTimeUnit"], "ms");

  const json job = json::parse(read_text(job_json));
  EXPECT_EQ(job["job"]["ranks"], 2);
  EXPECT_EQ(job["processes"].size(), 2u);
  EXPECT_DOUBLE_EQ(job["job"]["summary"]["computation_ms"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(job["job"]["summary"]["hidden_share"].get<double>(), 0.4);
  EXPECT_EQ(job["job"]["steps"][2]["slowest"].get<std::string>().rfind("rank 1 ", 0), 0u);
}

// The program forks and executes a CUDA helper and waits for it: one rank (no launcher names any
// other), the helper reported as a process that is not one, its steps kept out of the job's.
TEST(preload_timeline, AHelperTheProgramStartsIsNoRank) {
  ScratchFolder dir;
  const std::string job_json = dir.path("job.json").string();
  const TandemRun r = tandem_run(dir, "--timeline --step-range step --timeline-json " + job_json, kClient + " helper");
  ASSERT_EQ(r.status, 0) << r.err;
  const json job = json::parse(read_text(job_json));
  EXPECT_EQ(job["job"]["ranks"], 1) << job.dump();
  ASSERT_EQ(job["job"]["other_processes"].size(), 1u) << job.dump();
  EXPECT_NE(job["job"]["other_processes"][0].get<std::string>().find(", a child of pid "), std::string::npos);
  // The helper's last step (1500 us) is not the job's: the program's own (800 us) is.
  ASSERT_EQ(job["job"]["steps"].size(), 3u);
  EXPECT_EQ(job["job"]["steps"][2]["step_ns"], 800 * 1000);
  ASSERT_EQ(job["processes"].size(), 2u);
  EXPECT_NE(job["processes"][0]["rank_of_job"], job["processes"][1]["rank_of_job"]);
  EXPECT_NE(r.err.find("tandem run: job timeline: 1 rank, 3 steps 'step'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tandem run: job timeline: not a rank of the job: pid "), std::string::npos) << r.err;
}

// One rank of a launcher's world of 2 runs under tandem run, the other without it (torchrun with one
// rank wrapped, an sbatch script with several tasks): the rank it has is written, the rank it waited
// for is named, and nothing is left in the temporary folder.
TEST(preload_timeline, ARankWhoseOtherRanksAreNotUnderTandemRunReportsWhatItHas) {
  ScratchFolder dir;
  const std::string tmp = dir.path("tmp").string(), job_json = dir.path("job.json").string();
  std::filesystem::create_directories(tmp);
  const TandemRun r = tandem_run(dir, "--timeline --step-range step --timeline-json " + job_json, kClient + " overlap",
                                 "TMPDIR=" + tmp + " RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 " +
                                     "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(20000 + ::getpid() % 20000));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("tandem run: job timeline: waited for rank 1 of 2, which did not run under tandem run"),
            std::string::npos)
      << r.err;
  ASSERT_TRUE(std::filesystem::exists(job_json)) << r.err;
  const json job = json::parse(read_text(job_json));
  EXPECT_EQ(job["job"]["ranks"], 1) << job.dump();
  EXPECT_EQ(job["processes"][0]["rank"], 0);
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "left in TMPDIR";
}

// A program that leaves through _exit (Python's os._exit) runs no exit handler: the interposer's _exit
// hook writes what it recorded, the summary and the stats file first.
TEST(preload_timeline, AProgramLeavingThroughExitWithoutHandlersKeepsItsTimeline) {
  ScratchFolder dir;
  const std::string trace = dir.path("trace.json").string(), job_json = dir.path("job.json").string();
  tandem_test::write_text(trace, "earlier trace\n");
  tandem_test::write_text(job_json, "earlier job\n");
  const TandemRun r = tandem_run(dir,
                                 "--timeline --step-range step --trace " + trace + " --timeline-json " + job_json +
                                     " --stats " + dir.path("stats.json").string(),
                                 kClient + " overlap _exit");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(r.stats.is_object()) << r.err;
  EXPECT_EQ(r.stats["timeline"]["state"], "recorded");
  EXPECT_NE(r.err.find("timeline: GPU 0, 3 steps 'step'"), std::string::npos) << r.err;
  const json job = json::parse(read_text(job_json));
  EXPECT_EQ(job["job"]["ranks"], 1);
  EXPECT_EQ(job["job"]["steps"].size(), 3u);
  EXPECT_GT(json::parse(read_text(trace))["traceEvents"].size(), 0u);
}

// A vfork child shares its parent's memory until it leaves: its _exit reports nothing, and leaves the
// parent's timeline and summary to the parent.
TEST(preload_timeline, AVforkChildLeavingThroughExitLeavesTheParentsReport) {
  ScratchFolder dir;
  const TandemRun r = tandem_run(dir, "--timeline --step-range step --stats " + dir.path("stats.json").string(),
                                 kClient + " overlap vfork");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(r.stats.is_object()) << r.err;
  EXPECT_EQ(r.stats["timeline"]["state"], "recorded") << r.stats.dump();
  EXPECT_EQ(only_device(r.stats["timeline"])["steps"].size(), 3u);
  size_t summaries = 0;
  for (size_t at = r.err.find("summary: policy"); at != std::string::npos; at = r.err.find("summary: policy", at + 1))
    ++summaries;
  EXPECT_EQ(summaries, 1u) << r.err;
}

// A program killed (SIGKILL, SIGTERM, abort) wrote no timeline: the earlier --trace and --timeline-json
// files are kept, not replaced by empty documents, and one line says why.
TEST(preload_timeline, AKilledProgramLeavesTheEarlierFilesWithALine) {
  for (const char* signal : {"KILL", "TERM", "ABRT"}) {
    SCOPED_TRACE(signal);
    ScratchFolder dir;
    const std::string trace = dir.path("trace.json").string(), job_json = dir.path("job.json").string();
    tandem_test::write_text(trace, "earlier trace\n");
    tandem_test::write_text(job_json, "earlier job\n");
    const TandemRun r = tandem_run(dir, "--timeline --trace " + trace + " --timeline-json " + job_json,
                                   std::string("sh -c 'kill -") + signal + " $$'");
    EXPECT_GT(r.status, 128) << r.err;
    EXPECT_EQ(read_text(trace), "earlier trace\n");
    EXPECT_EQ(read_text(job_json), "earlier job\n");
    EXPECT_NE(r.err.find("tandem run: timeline: nothing recorded: the program was killed by signal "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("not written (the earlier file is kept as it was)"), std::string::npos) << r.err;
  }
}

// --step-range and --timeline-json each imply --timeline (docs/RUN.md): given alone, the steps are recorded.
TEST(preload_timeline, AStepRangeOrATimelineJsonAloneRecords) {
  ScratchFolder dir;
  const TandemRun r =
      tandem_run(dir, "--step-range step --stats " + dir.path("stats.json").string(), kClient + " overlap");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.stats["timeline"]["state"], "recorded") << r.stats.dump();
  EXPECT_EQ(r.stats["timeline"]["steps_from"], "nvtx");
  EXPECT_EQ(only_device(r.stats["timeline"])["steps"].size(), 3u);
  const std::string job_json = dir.path("job.json").string();
  const TandemRun j = tandem_run(dir, "--timeline-json " + job_json, kClient + " overlap");
  ASSERT_EQ(j.status, 0) << j.err;
  const json job = json::parse(read_text(job_json));
  EXPECT_EQ(job["job"]["steps_from"], "run");
  EXPECT_EQ(job["job"]["summary"]["steps"], 1);
}

// `LAUNCHER tandem run --timeline -- CMD` (docs/RUN.md, "The job"): one tandem run per rank, meeting in the
// job's folder under TMPDIR (named by the launcher's job key). The last rank to finish prints the job's line,
// once, and writes the job's JSON; the folder goes. Files an earlier job of the same key left there (older
// than this run: a timeline of a third rank, a rank marked done) are not counted.
TEST(preload_timeline, TheRanksOfALaunchersJobMeetInItsFolder) {
  ScratchFolder dir;
  const fs::path tmp = dir.path("tmp");
  const fs::path mine = tmp / ("tandem-timeline-" + std::to_string(static_cast<long>(::getuid())));
  const fs::path folder = mine / "master-127.0.0.1-29999";
  fs::create_directories(folder);
  fs::permissions(mine, fs::perms::owner_all);
  fs::permissions(folder, fs::perms::owner_all);
  std::ofstream(folder / "timeline-4242.json")
      << R"({"pid": 4242, "rank": 5, "state": "recorded", "devices": [{"device": 0, "steps": [{"start_ns": 0,)"
      << R"( "end_ns": 9, "step_ns": 9, "computation_ns": 9, "communication_ns": 0, "overlapped_ns": 0,)"
      << R"( "exposed_communication_ns": 0, "idle_ns": 0}]}]})";
  std::ofstream(folder / "done-4242") << "5\n";
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(folder / "timeline-4242.json", an_hour_ago);
  fs::last_write_time(folder / "done-4242", an_hour_ago);
  const std::string job_json = dir.path("job.json").string();
  const auto rank = [&](int r, const std::string& mode) {
    return "RANK=" + std::to_string(r) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(r) +
           " MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 TMPDIR=" + tmp.string() + " " + kTandem +
           " run --timeline --step-range step --timeline-json " + job_json + " -- " + kClient + " " + mode +
           " >/dev/null 2>" + dir.path("err" + std::to_string(r)).string();
  };
  const std::string line = "env -u LD_LIBRARY_PATH -u NVTX_INJECTION64_PATH -u CUDA_INJECTION64_PATH sh -c '" +
                           rank(0, "overlap") + " & " + rank(1, "overlap slow") + "; wait'";
  ASSERT_EQ(std::system(line.c_str()), 0);
  const std::string err = read_text(dir.path("err0")) + read_text(dir.path("err1"));
  const size_t at = err.find("tandem run: job timeline: 2 ranks, 3 steps 'step' (NVTX ranges)");
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find("tandem run: job timeline: 2 ranks", at + 1), std::string::npos) << "printed once: " << err;
  const json job = json::parse(read_text(job_json));
  EXPECT_EQ(job["job"]["ranks"], 2) << job.dump();
  EXPECT_DOUBLE_EQ(job["job"]["summary"]["hidden_share"].get<double>(), 0.4);
  EXPECT_FALSE(fs::exists(folder));
}

TEST(preload_timeline, TheTimelineFolderIsRemovedAfterTheRun) {
  ScratchFolder dir;
  const std::string tmp = dir.path("tmp").string();
  std::filesystem::create_directories(tmp);
  const TandemRun r = tandem_run(dir, "--timeline", kClient + " overlap", "TMPDIR=" + tmp);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
}

TEST(preload_timeline, AnUnwritableTraceIsRefusedBeforeTheProgramStarts) {
  ScratchFolder dir;
  const TandemRun r = tandem_run(dir, "--trace " + dir.path("missing/trace.json").string(), "echo started");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(dir.path("out")).find("started"), std::string::npos);
}

}  // namespace
