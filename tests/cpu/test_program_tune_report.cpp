// `tandem tune -- CMD`'s reporter (program_tools/program_tune_report.h): what reaches stdout and stderr.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "program_tools/program_tune_report.h"
#include "program_tools/program_tune_results.h"
#include "program_tune_stats.h"

namespace {

using tandem::program_tools::ProgramTuneConsoleReporter;
using tandem::program_tools::ProgramTuneContext;
using tandem::program_tools::ProgramTuneEnd;
using tandem_test::stats;

// What `report` wrote to a temporary FILE.
template <typename Report>
std::string captured(Report report) {
  std::FILE* f = std::tmpfile();
  report(f);
  std::fflush(f);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}

TEST(program_tune_report, TheHeaderEchoesTheProgramPrintable) {
  ProgramTuneContext c;
  c.program = "prog \x1b[31m\nforged";
  c.metric = "wall time (s), lower is better";
  c.rounds = 3;
  c.candidates = 2;
  c.logs = "/tmp/logs";
  const std::string out = captured([&](std::FILE* f) { ProgramTuneConsoleReporter(true, f, f).report_context(c); });
  EXPECT_NE(out.find("# program    prog \\x1b[31m\\nforged\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# timeout    none for the baseline"), std::string::npos);
}

TEST(program_tune_report, QuietDropsProgressButNotWarnings) {
  const std::string out = captured([](std::FILE* f) {
    ProgramTuneConsoleReporter quiet(false, f, f);
    quiet.report_progress("round 1/3");
    quiet.report_warning("cannot write 'x'");
  });
  EXPECT_EQ(out, "tandem tune: warning: cannot write 'x'\n");
}

TEST(program_tune_report, AFileNotWrittenIsNotClaimed) {
  ProgramTuneEnd e;
  e.finished = true;
  e.rounds_done = e.rounds = 1;
  e.runs = 2;
  e.decision = "no policy beats the baseline";
  e.logs = "/tmp/logs";
  const std::string out = captured([&](std::FILE* f) { ProgramTuneConsoleReporter(true, f, f).report_end(e); });
  EXPECT_EQ(out.find("# wrote"), std::string::npos) << out;
  EXPECT_NE(out.find("# OK: 2 runs in 1 rounds, no policy beats the baseline\n"), std::string::npos) << out;
}

TEST(program_tune_report, AHigherIsBetterTableRanksTheHighestFirst) {
  // Throughput, higher is better: the baseline, then the qualified best first, then the disqualified
  // (c's 130 would rank first), each with its gain over the baseline.
  const std::vector<tandem::program_tools::PolicyStats> all = {
      stats(0, "baseline", {100, 100}, 100), stats(1, "a", {90, 90}, 90), stats(2, "b", {120, 120}, 120),
      stats(3, "c", {130, 130}, 130, "round 2: timed out"), stats(4, "d", {105, 105}, 105)};
  tandem::program_tools::ProgramDecision decision;
  decision.winner = 2;
  const auto table =
      tandem::program_tools::program_table(all, decision, tandem::program_tools::ProgramMetric("v=(\\S+)", true));
  std::vector<std::string> order, status;
  for (const auto& line : table) {
    order.push_back(line.policy);
    status.push_back(line.status);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"baseline", "b", "d", "a", "c"}));
  EXPECT_EQ(status, (std::vector<std::string>{"baseline (no tandem)", "WINNER", "ok", "ok",
                                              "disqualified: round 2: timed out"}));
  ASSERT_TRUE(table[1].vs_baseline_percent.has_value());
  EXPECT_DOUBLE_EQ(*table[1].vs_baseline_percent, 20.0);
}

}  // namespace
