// A program's job put together from its processes' timelines (program_tools/job_timeline.h): which
// processes are ranks, each step's slowest rank, the job's line and JSON; and the job's Chrome trace
// assembled from the processes' parts (program_tools/trace_assembly.h). The processes are written by
// hand; what the interposer writes and these read back is test_preload_timeline_figures.cpp's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "program_tools/job_timeline.h"
#include "program_tools/trace_assembly.h"
#include "scratch_folder.h"
#include "tandem/safe_file.h"

namespace tandem::program_tools {
namespace {

using json = nlohmann::json;

// One step of a rank: its length, communication busy and the part of it overlapped.
StepFigures step_of(int64_t step, int64_t communication, int64_t overlapped) {
  StepFigures s;
  s.step_ns = step;
  s.computation_ns = step / 2;
  s.communication_ns = communication;
  s.overlapped_ns = overlapped;
  s.exposed_communication_ns = communication - overlapped;
  return s;
}

ProcessTimeline process_with(int rank, std::vector<StepFigures> steps) {
  ProcessTimeline p;
  p.pid = 100 + rank;
  p.rank = rank;
  p.state = TimelineState::Recorded;
  DeviceTimeline device;
  device.figures.steps = std::move(steps);
  p.devices.push_back(device);
  return p;
}

TEST(timeline_job, TheJobsHiddenShareIsOverTheSlowestRanksSteps) {
  // The slowest rank of each step: rank 0 in step 0 (100 against 90), rank 1 in steps 1 and 2. Their
  // communication is 40, 60 and 20, of which 0, 30 and 5 overlapped: 35 / 120 = 29.2 % hidden. Every other
  // reading differs: over both ranks' steps 105 / 190 = 55.3 %, the steps' shares' mean 25.0 % and median
  // 25.0 %, the medians' quotient 5 / 40 = 12.5 %, rank 0's own 60 / 100 = 60.0 %, the last step's 25.0 %.
  const JobTimeline job =
      job_timeline({process_with(0, {step_of(100, 40, 0), step_of(100, 10, 10), step_of(50, 50, 50)}),
                    process_with(1, {step_of(90, 10, 10), step_of(120, 60, 30), step_of(80, 20, 5)})});
  const auto summary = summarize_job(job);
  ASSERT_TRUE(summary);
  ASSERT_TRUE(summary->hidden_share);
  EXPECT_DOUBLE_EQ(*summary->hidden_share, 35.0 / 120.0);
  const std::string text = job_timeline_text(job);
  EXPECT_NE(text.find("; 29.2 % of the communication hidden\n"), std::string::npos) << text;
  const json doc = job_timeline_json(job);
  EXPECT_DOUBLE_EQ(doc["summary"]["hidden_share"].get<double>(), 35.0 / 120.0);
  // Each step's own share is its slowest rank's.
  EXPECT_DOUBLE_EQ(doc["steps"][1]["hidden_share"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(doc["steps"][2]["hidden_share"].get<double>(), 0.25);
}

TEST(timeline_job, TheJobsLineSaysWhatItLeftOutAndWhoRecordedNothing) {
  // Rank 0 has 3 steps, rank 1 only 2: the job compares 2 and leaves 1 out. Rank 1 is slowest in both (120
  // and 100 against 100 and 50); rank 2 stepped aside for another profiler; records lost count once a process.
  ProcessTimeline zero = process_with(0, {step_of(100, 40, 0), step_of(50, 10, 10), step_of(80, 10, 0)});
  zero.lost.dropped = 7;
  ProcessTimeline aside;
  aside.pid = 9;
  aside.rank = 2;
  aside.state = TimelineState::SteppedAside;
  aside.reason = "CUDA_INJECTION64_PATH=x";
  const JobTimeline job = job_timeline({zero, process_with(1, {step_of(120, 20, 10), step_of(100, 30, 0)}), aside});
  const std::string text = job_timeline_text(job);
  EXPECT_NE(text.find("tandem run: job timeline: 2 ranks, 2 steps (the whole run); the slowest rank's step, median "
                      "0.000 ms (rank 1 (pid 101) GPU 0 slowest in 2 of 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("; 20.0 % of the communication hidden\n"), std::string::npos) << text;  // 10 of 20 + 30
  EXPECT_NE(text.find("tandem run: job timeline: 1 steps left out: not every rank has them"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("tandem run: job timeline: not recorded in rank 2 (pid 9): stepped-aside: CUDA_INJECTION64_PATH=x"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("tandem run: job timeline: 7 activity records lost over the ranks"), std::string::npos) << text;
  const json doc = job_timeline_json(job);
  EXPECT_EQ(doc["summary"]["slowest_most_often"], "rank 1 (pid 101) GPU 0");
  EXPECT_EQ(doc["summary"]["steps"], 2);
  EXPECT_EQ(doc["steps_left_out"], 1);
  EXPECT_EQ(doc["records_lost"], 7);
  EXPECT_EQ(doc["not_recorded"], json::array({"rank 2 (pid 9): stepped-aside: CUDA_INJECTION64_PATH=x"}));
  EXPECT_EQ(doc["steps"][0]["slowest"], "rank 1 (pid 101) GPU 0");
}

TEST(timeline_job, AJobWithoutCommunicationHidesNothingAndSaysSo) {
  const JobTimeline job = job_timeline({process_with(0, {step_of(100, 0, 0)}), process_with(1, {step_of(90, 0, 0)})});
  const auto summary = summarize_job(job);
  ASSERT_TRUE(summary);
  EXPECT_FALSE(summary->hidden_share);
  EXPECT_NE(job_timeline_text(job).find("; no communication\n"), std::string::npos);
  EXPECT_TRUE(job_timeline_json(job)["summary"]["hidden_share"].is_null());
}

TEST(timeline_job, ProcessesThatRecordedNothingAreNamed) {
  ProcessTimeline aside;
  aside.pid = 9;
  aside.rank = 1;
  aside.state = TimelineState::SteppedAside;
  aside.reason = "CUDA_INJECTION64_PATH=x";
  ProcessTimeline launcher;  // torchrun's own process: no CUDA
  launcher.pid = 8;
  launcher.state = TimelineState::NotStarted;
  const JobTimeline job = job_timeline({launcher, aside});
  EXPECT_TRUE(job.units.empty());
  ASSERT_EQ(job.missing.size(), 1u);
  EXPECT_EQ(job.missing[0], "rank 1 (pid 9): stepped-aside: CUDA_INJECTION64_PATH=x");
  EXPECT_NE(job_timeline_text(job).find("no process recorded a timeline"), std::string::npos);
}

// A process is a rank only when the launcher says so: a helper a rank forked and executed inherits its
// variables (its rank), and without a launcher the program's child is no second rank either.
TEST(timeline_job, AHelperOfARankIsNoRank) {
  const auto recorded = [](long pid, long parent, std::optional<int> rank, int64_t step_ns) {
    ProcessTimeline p;
    p.pid = pid;
    p.parent_pid = parent;
    p.rank = rank;
    p.state = TimelineState::Recorded;
    DeviceTimeline f;
    StepFigures s;
    s.start_ns = 0;
    s.end_ns = s.step_ns = step_ns;
    f.figures.steps.push_back(s);
    p.devices.push_back(f);
    return p;
  };
  // Launched: rank 0 and its helper (rank 0 too, its child), rank 1; a process without a rank.
  const JobTimeline job = job_timeline(
      {recorded(100, 50, 0, 10), recorded(101, 100, 0, 99), recorded(200, 50, 1, 20), recorded(300, 1, {}, 5)});
  ASSERT_EQ(job.units.size(), 2u);
  EXPECT_EQ(job.units[0], "rank 0 (pid 100) GPU 0");
  EXPECT_EQ(job.units[1], "rank 1 (pid 200) GPU 0");
  EXPECT_EQ(job.figures.steps.at(0).slowest.step_ns, 20) << "the helper's 99 taken as a rank's";
  EXPECT_EQ(job.other_processes,
            (std::vector<std::string>{"pid 101, a child of rank 0 (pid 100)", "pid 300, no rank of the launcher"}));
  EXPECT_NE(job_timeline_text(job).find("not a rank of the job: pid 101, a child of rank 0 (pid 100)"),
            std::string::npos);
  EXPECT_EQ(job_timeline_json(job)["other_processes"].size(), 2u);
  // No launcher: the program is the one rank; the helper it started is not.
  const JobTimeline alone = job_timeline({recorded(100, 50, {}, 10), recorded(101, 100, {}, 99)});
  ASSERT_EQ(alone.units.size(), 1u);
  EXPECT_EQ(alone.units[0], "pid 100 GPU 0");
  EXPECT_EQ(alone.other_processes, (std::vector<std::string>{"pid 101, a child of pid 100"}));

  // --timeline-json lists every process with its state and whether it is a rank of the job.
  const std::vector<ProcessTimeline> processes = {recorded(100, 50, 0, 10), recorded(101, 100, 0, 99)};
  const json doc = job_timeline_document(processes, job_timeline(processes));
  EXPECT_EQ(doc["tool"], "tandem run");
  EXPECT_EQ(doc["job"]["ranks"], 1);
  ASSERT_EQ(doc["processes"].size(), 2u);
  EXPECT_EQ(doc["processes"][0]["state"], "recorded");
  EXPECT_EQ(doc["processes"][0]["rank_of_job"], true);
  EXPECT_EQ(doc["processes"][1]["rank_of_job"], false);
  EXPECT_TRUE(doc["processes"][1]["reason"].is_null());
  const json about = job_trace_about(processes, job_timeline(processes), "step*");
  EXPECT_EQ(about["processes"], 2);
  EXPECT_EQ(about["step_range"], "step*");
}

TEST(timeline_trace, TheAssembledTraceIsOnTheJobsClock) {
  tandem_test::ScratchFolder dir;
  write_file_atomically(dir.path("trace-1.jsonl").string(),
                        "{\"tandem_trace_part\":1,\"first_ns\":5000}\n"
                        "{\"ph\":\"X\",\"name\":\"k\",\"cat\":\"computation\",\"pid\":1,\"tid\":2,\"ts_ns\":5000,"
                        "\"dur_ns\":1500}\n");
  write_file_atomically(dir.path("trace-2.jsonl").string(),
                        "{\"tandem_trace_part\":1,\"first_ns\":3000}\n"
                        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":2,\"args\":{\"name\":\"rank 1\"}}\n"
                        "{\"ph\":\"X\",\"name\":\"n\",\"cat\":\"communication\",\"pid\":2,\"tid\":3,\"ts_ns\":4000,"
                        "\"dur_ns\":500}\n");
  const std::string path = dir.path("trace.json").string();
  EXPECT_EQ(assemble_trace(dir.str(), path, {{"tool", "test"}}), 3u);
  const json doc = json::parse(tandem_test::read_text(path));
  ASSERT_EQ(doc["traceEvents"].size(), 3u);
  EXPECT_DOUBLE_EQ(doc["traceEvents"][0]["ts"].get<double>(), 2.0);  // (5000 - 3000) ns
  EXPECT_DOUBLE_EQ(doc["traceEvents"][0]["dur"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(doc["traceEvents"][2]["ts"].get<double>(), 1.0);
  EXPECT_EQ(doc["otherData"]["tool"], "test");
  EXPECT_EQ(doc["otherData"]["clock_origin_ns"], 3000);

  write_file_atomically(dir.path("trace-3.jsonl").string(), "{\"ph\":\"X\"}\n");
  EXPECT_THROW(assemble_trace(dir.str(), path, {}), std::exception) << "a part without its header";
}

}  // namespace
}  // namespace tandem::program_tools
