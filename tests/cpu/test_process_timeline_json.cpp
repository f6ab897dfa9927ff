// The timeline's one schema (tandem/process_timeline_json.h): every field the interposer writes is
// read back as it was, what a reader cannot do without is refused by name, and the files' names and
// the trace part's header are the ones both sides use.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tandem/process_timeline_json.h"

namespace tandem {
namespace {

using json = nlohmann::json;

StepFigures step(const std::string& name, int64_t start, int64_t step_ns, int64_t communication, int64_t overlapped) {
  StepFigures s;
  s.name = name;
  s.start_ns = start;
  s.end_ns = start + step_ns;
  s.step_ns = step_ns;
  s.computation_ns = step_ns / 2;
  s.communication_ns = communication;
  s.overlapped_ns = overlapped;
  s.exposed_communication_ns = communication - overlapped;
  s.idle_ns = step_ns / 4;
  s.activities = 9;
  return s;
}

// A process with every field set to a value of its own.
ProcessTimeline every_field() {
  ProcessTimeline t;
  t.pid = 4711;
  t.parent_pid = 4700;
  t.rank = 3;
  t.host = "node1";
  t.state = TimelineState::SteppedAside;
  t.reason = "nsys took CUPTI over";
  t.recorded_until_ns = 123456;
  t.step_range = "ProfilerStep*";
  t.steps_from_ranges = true;
  t.open_steps = 2;
  t.unplaced_steps = 1;
  t.lost = TimelineLosses{3, 4, 5};
  DeviceTimeline gpu0;
  gpu0.device = 0;
  gpu0.figures.steps = {step("ProfilerStep#0", 100, 80, 40, 10), step("ProfilerStep#1", 200, 60, 20, 20)};
  gpu0.figures.outside_steps = 6;
  gpu0.kernels = 11;
  gpu0.copies = 12;
  gpu0.memsets = 13;
  gpu0.communication = 14;
  ShapingCheck check;
  check.shaped = 2;
  check.shaped_beside = 1;
  check.beside = 3;
  check.beside_ns = 100;
  check.beside_shapeable_ns = 80;
  check.beside_shaped_ns = 50;
  check.unattributed = 1;
  gpu0.shaping = check;
  DeviceTimeline gpu1;
  gpu1.device = 1;
  gpu1.figures.steps = {step("ProfilerStep#0", 105, 90, 0, 0)};
  t.devices = {gpu0, gpu1};
  return t;
}

TEST(process_timeline_json, EveryFieldIsReadBackAsItWasWritten) {
  const ProcessTimeline t = every_field();
  const json doc = process_timeline_json(t);
  const ProcessTimeline back = process_timeline_from_json(json::parse(doc.dump()));
  EXPECT_EQ(process_timeline_json(back), doc);
  EXPECT_EQ(back.state, TimelineState::SteppedAside);
  EXPECT_EQ(back.recorded_until_ns, 123456);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.lost.incomplete, 4u);
  EXPECT_EQ(back.unplaced_steps, 1u);
  ASSERT_EQ(back.devices.size(), 2u);
  EXPECT_EQ(back.devices[0].memsets, 13u);
  EXPECT_EQ(back.devices[0].figures.outside_steps, 6u);
  EXPECT_EQ(back.devices[0].figures.steps.at(1).activities, 9u);
  ASSERT_TRUE(back.devices[0].shaping);
  EXPECT_EQ(back.devices[0].shaping->unattributed, 1u);
  EXPECT_FALSE(back.devices[1].shaping);
  // Each device's figures carry the process's losses, as the interposer gave them.
  EXPECT_EQ(back.devices[1].figures.records_lost, 12u);
}

TEST(process_timeline_json, TheDerivedFiguresAreWrittenForReadersThatDoNotSumSteps) {
  const json device = process_timeline_json(every_field())["devices"][0];
  EXPECT_EQ(device["total"]["overlapped_ns"], 30);
  EXPECT_EQ(device["total"].count("name"), 0u);
  EXPECT_DOUBLE_EQ(device["hidden_share"].get<double>(), 30.0 / 60.0);  // Σ overlapped / Σ communication
  EXPECT_EQ(device["median"]["step_ns"], 70);                           // (80 + 60) / 2
  EXPECT_EQ(process_timeline_json(every_field())["lost"]["total"], 12);
}

TEST(process_timeline_json, EveryStateIsWrittenAndReadByItsName) {
  for (const TimelineState state : {TimelineState::Off, TimelineState::NotStarted, TimelineState::Recorded,
                                    TimelineState::SteppedAside, TimelineState::Failed}) {
    ProcessTimeline t;
    t.state = state;
    EXPECT_EQ(process_timeline_from_json(process_timeline_json(t)).state, state) << to_string(state);
  }
  EXPECT_STREQ(to_string(TimelineState::NotStarted), "not-started");
  EXPECT_FALSE(parse_timeline_state("recording"));
}

TEST(process_timeline_json, WhatAReaderCannotDoWithoutIsRefusedByName) {
  const auto refusal = [](const json& doc) {
    try {
      process_timeline_from_json(doc);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json doc = process_timeline_json(every_field());
  json no_state = doc;
  no_state.erase("state");
  EXPECT_NE(refusal(no_state).find("has no \"state\""), std::string::npos) << refusal(no_state);
  json odd_state = doc;
  odd_state["state"] = "recording";
  EXPECT_NE(refusal(odd_state).find("unknown \"state\": recording"), std::string::npos) << refusal(odd_state);
  json no_figure = doc;
  no_figure["devices"][0]["steps"][1].erase("overlapped_ns");
  EXPECT_NE(refusal(no_figure).find("step has no \"overlapped_ns\""), std::string::npos) << refusal(no_figure);
  json no_device = doc;
  no_device["devices"][1].erase("device");
  EXPECT_NE(refusal(no_device).find("device has no \"device\""), std::string::npos) << refusal(no_device);
  EXPECT_NE(refusal(json::array()).find("is not a JSON object"), std::string::npos);
}

TEST(process_timeline_json, OptionalFieldsAFileLacksReadAsTheirDefaults) {
  const ProcessTimeline p = process_timeline_from_json(json{{"pid", 7}, {"state", "not-started"}});
  EXPECT_EQ(p.pid, 7);
  EXPECT_EQ(p.parent_pid, 0);
  EXPECT_FALSE(p.rank);
  EXPECT_FALSE(p.recorded_until_ns);
  EXPECT_TRUE(p.devices.empty());
  EXPECT_EQ(p.records_lost(), 0u);
}

TEST(process_timeline_json, TheFilesAndTheTracePartsHeaderAreNamedOnce) {
  EXPECT_EQ(timeline_file_name(42), "timeline-42.json");
  EXPECT_EQ(trace_part_name(42), "trace-42.jsonl");
  EXPECT_EQ(trace_part_first_ns(trace_part_header_json(42, 1234), "trace-42.jsonl"), 1234);
  try {
    trace_part_first_ns(json{{"ph", "X"}}, "trace-43.jsonl");
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("trace-43.jsonl does not start with a trace header"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tandem
