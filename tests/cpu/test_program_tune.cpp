// `tandem tune [options] -- CMD`: the real tandem binary tunes small shell programs whose printed
// metric depends on the policy `tandem run` hands the interposer (TANDEM_POLICY in the program's
// environment; unset for the baseline, which runs without tandem). Every expected winner, median and
// spread below is worked out by hand from the scripts' numbers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "default_dispositions.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::sh_quoted;
using tandem_test::read_text;
using tandem_test::ScratchFolder;
using Clock = std::chrono::steady_clock;

const std::string kTandem = tandem_preload_test::tandem_path();
const std::string kMetric = "--metric '\"step_ms_median\": ([0-9.]+)'";

// A program in `dir` whose body sees $P (the policy, "baseline" without tandem), $N (how many times
// this policy has run so far, counting this run: its round) and $D (the folder).
std::string write_program(const ScratchFolder& dir, const std::string& body) {
  const fs::path path = dir.path("prog.sh");
  std::ofstream(path) << "#!/bin/sh\n"
                      << "D=" << sh_quoted(dir.str()) << "\n"
                      << "P=${TANDEM_POLICY:-baseline}\n"
                      << "K=$(printf %s \"$P\" | tr ':+.' '___')\n"
                      << "N=$(( $(cat \"$D/count.$K\" 2>/dev/null || echo 0) + 1 ))\n"
                      << "echo $N > \"$D/count.$K\"\n"
                      << body << "\n";
  fs::permissions(path, fs::perms::owner_all);
  return path.string();
}

// `tandem tune OPTIONS -- PROGRAM` run in `dir`, its policy file and logs there.
Result tune(const ScratchFolder& dir, const std::string& options, const std::string& program) {
  return run_shell("cd " + sh_quoted(dir.str()) + " && " + kTandem + " tune --logs logs " + options + " -- " + program);
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') + 1);
}

// The results table's line for `policy` (two spaces, the policy, then spaces).
std::string table_line(const std::string& out, const std::string& policy) {
  const size_t at = out.find("\n  " + policy + " ");
  if (at == std::string::npos) return "";
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

pid_t read_pid(const fs::path& file) { return static_cast<pid_t>(std::atoi(read_text(file).c_str())); }

// shape:2+priority prints the smallest step time; priority is better than the baseline too.
const char* kThreeLevels =
    "case \"$P\" in\n"
    "  baseline) echo '\"step_ms_median\": 20' ;;\n"
    "  shape:2+priority) echo '\"step_ms_median\": 10' ;;\n"
    "  priority) echo '\"step_ms_median\": 15' ;;\n"
    "  *) echo '\"step_ms_median\": 19' ;;\n"
    "esac";

TEST(program_tune, PicksTheFastestPolicyAndWritesAFileTandemRunAccepts) {
  ScratchFolder dir;
  const std::string program = write_program(dir, kThreeLevels);
  const Result r =
      tune(dir, kMetric + " --rounds 2 --candidates priority,shape:2+priority,shape:1 --json r.json -q", program);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");  // -q: no progress lines, and the program's output went to the logs
  EXPECT_NE(table_line(r.out, "shape:2+priority").find("WINNER"), std::string::npos) << r.out;
  const std::string file = read_text(dir.path("tandem-tuned.policy"));
  EXPECT_EQ(file.rfind("# tandem tune ", 0), 0u) << file;
  EXPECT_NE(file.find("\n# tandem run: applies\n"), std::string::npos) << file;
  EXPECT_NE(file.find("# program " + program), std::string::npos) << file;
  EXPECT_EQ(file.find("UNFINISHED"), std::string::npos) << file;
  EXPECT_EQ(last_line(file), "shape:2+priority");
  // The file is valid input for `tandem run`, which hands that policy to the program.
  const Result run = run_shell(kTandem + " run --policy @" + dir.path("tandem-tuned.policy").string() +
                               " -- sh -c 'echo \"$TANDEM_POLICY\"'");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "shape:2+priority\n");

  // The JSON: the common header, 2 rounds x (baseline + 3 candidates) runs, each with its value and log.
  const auto doc = nlohmann::json::parse(read_text(dir.path("r.json")));
  EXPECT_EQ(doc["schema_version"], 2);
  EXPECT_EQ(doc["complete"], true);
  EXPECT_EQ(doc["tool"], "tune-program");
  EXPECT_FALSE(doc["commit"].get<std::string>().empty());
  EXPECT_NE(doc["command"].get<std::string>().find("tandem tune"), std::string::npos);
  ASSERT_EQ(doc["runs"].size(), 8u);
  EXPECT_EQ(doc["decision"]["winner"], "shape:2+priority");
  for (const auto& run_json : doc["runs"]) {
    EXPECT_TRUE(fs::exists(run_json["log"].get<std::string>())) << run_json;
    const std::string policy = run_json["policy"].is_null() ? "baseline" : run_json["policy"].get<std::string>();
    const double expected = policy == "baseline"           ? 20
                            : policy == "shape:2+priority" ? 10
                            : policy == "priority"         ? 15
                                                           : 19;
    EXPECT_EQ(run_json["value"], expected) << run_json;
  }
  // Each round: the baseline first, then the candidates rotated by one.
  EXPECT_TRUE(doc["runs"][0]["policy"].is_null());
  EXPECT_EQ(doc["runs"][1]["policy"], "priority");
  EXPECT_TRUE(doc["runs"][4]["policy"].is_null());
  EXPECT_EQ(doc["runs"][5]["policy"], "shape:2+priority");
  EXPECT_EQ(doc["runs"][7]["policy"], "priority");
}

TEST(program_tune, SeveralMatchesInOneRunCountAsTheirMedian) {
  ScratchFolder dir;
  // The baseline prints 10, 30, 11 (median 11); priority 9, 9, 40 (median 9).
  const std::string program = write_program(dir,
                                            "if [ \"$P\" = baseline ]; then set -- 10 30 11; else set -- 9 9 40; fi\n"
                                            "for v; do echo \"\\\"step_ms_median\\\": $v\"; done");
  const Result r = tune(dir, kMetric + " --rounds 1 --candidates priority --json r.json -q", program);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto doc = nlohmann::json::parse(read_text(dir.path("r.json")));
  EXPECT_EQ(doc["policies"][0]["values"], nlohmann::json({11.0}));
  EXPECT_EQ(doc["policies"][1]["values"], nlohmann::json({9.0}));
  EXPECT_EQ(doc["runs"][0]["metric_values"], nlohmann::json({10.0, 30.0, 11.0}));
  EXPECT_EQ(last_line(read_text(dir.path("tandem-tuned.policy"))), "priority");
}

// docs/RUN.md: "Duplicates run once": a candidate listed twice, in two spellings, is one candidate.
TEST(program_tune, ACandidateListedTwiceRunsOnce) {
  ScratchFolder dir;
  const std::string program = write_program(dir, "echo '\"step_ms_median\": 10'");
  const Result r = tune(
      dir, kMetric + " --rounds 2 --candidates priority,shape:2+priority,priority+shape:2,priority --json r.json -q",
      program);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto doc = nlohmann::json::parse(read_text(dir.path("r.json")));
  ASSERT_EQ(doc["policies"].size(), 3u) << doc["policies"].dump();  // the baseline and two candidates
  EXPECT_EQ(doc["runs"].size(), 6u);                                // 2 rounds x 3
  EXPECT_EQ(read_text(dir.path("count.priority")), "2\n");
  EXPECT_EQ(read_text(dir.path("count.shape_2_priority")), "2\n");
}

// docs/RUN.md: every run reads its stdin from /dev/null, never tune's own (a terminal would stop a
// background tune; a pipe's data would go to whichever run reads first).
TEST(program_tune, RunsReadNothingFromTunesStdin) {
  ScratchFolder dir;
  const std::string program =
      write_program(dir,
                    "if IFS= read -r line; then echo \"read: $line\"; else echo 'stdin: end'; fi\n"
                    "echo '\"step_ms_median\": 10'");
  const Result r =
      run_shell("printf 'one\\ntwo\\n' | (cd " + sh_quoted(dir.str()) + " && " + kTandem + " tune --logs logs " +
                kMetric + " --rounds 1 --candidates priority -q -- " + program + ")");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (const char* log : {"logs/round1-baseline.log", "logs/round1-priority.log"}) {
    const std::string text = read_text(dir.path(log));
    EXPECT_NE(text.find("stdin: end"), std::string::npos) << log << ": " << text;
    EXPECT_EQ(text.find("read: "), std::string::npos) << log << ": " << text;
  }
}

TEST(program_tune, HigherIsBetterForThroughputs) {
  ScratchFolder dir;
  const std::string program = write_program(dir,
                                            "case \"$P\" in baseline) v=100 ;; priority) v=150 ;; *) v=120 ;; esac\n"
                                            "echo \"tokens/s $v\"");
  const Result higher = tune(dir,
                             "--metric 'tokens/s ([0-9]+)' --metric-higher-is-better --rounds 1 "
                             "--candidates shape:1,priority -q",
                             program);
  ASSERT_EQ(higher.status, 0) << higher.out << higher.err;
  EXPECT_EQ(last_line(read_text(dir.path("tandem-tuned.policy"))), "priority");
  // The same numbers as times: every candidate is slower than the baseline.
  const Result lower = tune(dir, "--metric 'tokens/s ([0-9]+)' --rounds 1 --candidates shape:1,priority -q", program);
  ASSERT_EQ(lower.status, 0) << lower.out << lower.err;
  EXPECT_EQ(last_line(read_text(dir.path("tandem-tuned.policy"))), "concurrent");
}

// The spread rule: the baseline prints 10, 12, 14 in rounds 1..3 (median 12, spread 4). A candidate at
// 9 every round gains 3, inside the noise; one at 7 gains 5, beyond it.
TEST(program_tune, AGainInsideTheSpreadsIsNoGain) {
  ScratchFolder dir;
  const std::string program = write_program(dir,
                                            "case \"$P\" in\n"
                                            "  baseline) v=$((8 + 2 * N)) ;;\n"
                                            "  priority) v=9 ;;\n"
                                            "  *) v=7 ;;\n"
                                            "esac\n"
                                            "echo \"\\\"step_ms_median\\\": $v\"");
  const Result inside = tune(dir, kMetric + " --candidates priority", program);
  ASSERT_EQ(inside.status, 0) << inside.out << inside.err;
  const std::string file = read_text(dir.path("tandem-tuned.policy"));
  EXPECT_EQ(last_line(file), "concurrent") << inside.out;
  EXPECT_NE(file.find("no policy beats the baseline"), std::string::npos) << file;
  EXPECT_NE(file.find("\n# tandem run: applies\n"), std::string::npos) << file;
  EXPECT_NE(inside.out.find("# OK: 6 runs in 3 rounds, no policy beats the baseline"), std::string::npos) << inside.out;
  EXPECT_NE(table_line(inside.out, "baseline").find(" 12 "), std::string::npos) << inside.out;

  for (const char* f : {"count.baseline", "count.priority"}) fs::remove(dir.path(f));
  const Result beyond = tune(dir, kMetric + " --candidates shape:3", program);
  ASSERT_EQ(beyond.status, 0) << beyond.out << beyond.err;
  EXPECT_EQ(last_line(read_text(dir.path("tandem-tuned.policy"))), "shape:3") << beyond.out;
}

TEST(program_tune, ACandidateThatChangesTheExitStatusIsDisqualified) {
  ScratchFolder dir;
  const std::string program =
      write_program(dir, std::string(kThreeLevels) + "\n[ \"$P\" = shape:2+priority ] && exit 3\nexit 0");
  const Result r = tune(dir, kMetric + " --rounds 1 --candidates shape:2+priority,priority", program);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string line = table_line(r.out, "shape:2+priority");
  EXPECT_NE(line.find("disqualified: round 1: exit status 3, the baseline's 0"), std::string::npos) << r.out;
  EXPECT_NE(line.find("round1-shape-2+priority.log"), std::string::npos) << line;
  EXPECT_EQ(last_line(read_text(dir.path("tandem-tuned.policy"))), "priority");
  // The progress line said so too.
  EXPECT_NE(r.err.find("shape:2+priority disqualified: exit status 3"), std::string::npos) << r.err;
}

TEST(program_tune, ARunPastTheTimeoutIsKilledWithItsProcessGroupAndDisqualified) {
  ScratchFolder dir;
  // shape:1 starts a worker that would sleep a minute, as a launcher would, and waits for it.
  const std::string program =
      write_program(dir, std::string(kThreeLevels) +
                             "\nif [ \"$P\" = shape:1 ]; then sleep 60 & echo $! > \"$D/worker\"; "
                             "wait; fi");
  const auto started = Clock::now();
  const Result r = tune(dir, kMetric + " --rounds 1 --timeout 2 --candidates shape:1,priority", program);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_LT(seconds, 30) << "the tune waited for the sleeping run";
  EXPECT_NE(table_line(r.out, "shape:1").find("disqualified: round 1: timed out after 2 s"), std::string::npos)
      << r.out;
  EXPECT_EQ(last_line(read_text(dir.path("tandem-tuned.policy"))), "priority");
  const pid_t worker = read_pid(dir.path("worker"));
  ASSERT_GT(worker, 0);
  for (int i = 0; i < 50 && alive(worker); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(alive(worker)) << "the run's worker outlived the timeout";
}

TEST(program_tune, WallTimeWhenNoMetricIsGiven) {
  ScratchFolder dir;
  // The baseline takes 1.5 s, every candidate returns at once (plus tandem run's start-up).
  const std::string program = write_program(dir, "[ \"$P\" = baseline ] && sleep 1.5\nexit 0");
  const Result r = tune(dir, "--rounds 2 --candidates priority -q", program);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# metric     wall time (s)"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(read_text(dir.path("tandem-tuned.policy"))), "priority") << r.out;
}

TEST(program_tune, UserErrorsAreOneLineBeforeAnyRun) {
  ScratchFolder dir;
  const std::string program = write_program(dir, kThreeLevels);
  struct Case {
    std::string options, expected;
  } cases[] = {
      {"--metric '([0-9'", "tandem: error: --metric '([0-9' has an unclosed '['"},
      {"--metric 'step_ms'", "tandem: error: --metric 'step_ms' has 0 capture groups; it needs exactly one"},
      {"--metric '(a)(b)'", "tandem: error: --metric '(a)(b)' has 2 capture groups"},
      {"--rounds 0", "tandem: error: --rounds 0 is out of bounds"},
      {"--timeout 0", "tandem: error: --timeout 0 is out of bounds"},
      {"--metric-higher-is-better", "tandem: error: --metric-higher-is-better needs --metric"},
      {"--candidates green:8", "tandem: error: --candidates: green:8 cannot be applied by `tandem run`"},
      {"--candidates shape:x", "tandem: error: "},
      {"--workload gemm", "tandem: error: --workload is an option of the benchmark tune"},
      {"--resume r.json", "tandem: error: --resume is an option of the benchmark tune"},
  };
  for (const Case& c : cases) {
    const Result r = tune(dir, c.options, program);
    EXPECT_EQ(r.status, 1) << c.options;
    EXPECT_EQ(r.err.rfind(c.expected, 0), 0u) << c.options << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << c.options << ": " << r.err;  // one line
    EXPECT_FALSE(fs::exists(dir.path("count.baseline"))) << c.options << ": the program ran";
  }
}

TEST(program_tune, AMetricMissingFromTheOutputNamesTheRunLog) {
  ScratchFolder dir;
  const std::string program = write_program(dir, "echo 'nothing to see'");
  const Result r = tune(dir, "--metric 'step (\\d+)' --candidates priority", program);
  EXPECT_EQ(r.status, 1);
  const std::string log = (dir.path("logs") / "round1-baseline.log").string();
  EXPECT_NE(r.err.find("tandem: error: the baseline run (the program without tandem, round 1): --metric 'step (\\d+)' "
                       "matched nothing in its output (see " +
                       log + ")"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_text(log), "nothing to see\n");
}

TEST(program_tune, AProgramThatCannotRunIsAnError) {
  ScratchFolder dir;
  const Result r = tune(dir, "--candidates priority", "/nonexistent/program");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("exit status 127: the command could not be executed"), std::string::npos) << r.err;
}

// SIGINT during round 2: the run in flight ends, the policy file holds round 1's best, headed
// UNFINISHED, the JSON says incomplete, and tandem exits 130.
TEST(program_tune, InterruptedKeepsTheBestSoFarMarkedUnfinished) {
  ScratchFolder dir;
  const std::string program = write_program(
      dir, std::string(kThreeLevels) +
               "\nif [ \"$P\" = shape:1 ] && [ $N = 2 ]; then sleep 60 & echo $! > \"$D/worker\"; wait; fi");
  const std::string out = dir.path("out").string(), err = dir.path("err").string();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::chdir(dir.str().c_str()) != 0) ::_exit(99);
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) ::_exit(98);
    ::execl(kTandem.c_str(), "tandem", "tune", "--logs", "logs", "--metric", "\"step_ms_median\": ([0-9.]+)",
            "--candidates", "shape:2+priority,shape:1", "--json", "r.json", "--", program.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(97);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(dir.path("worker")) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(dir.path("worker"))) << read_text(err);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the worker's pid is written
  const pid_t worker = read_pid(dir.path("worker"));
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(out) << read_text(err);
  const std::string file = read_text(dir.path("tandem-tuned.policy"));
  EXPECT_NE(file.find("UNFINISHED search: 1 of 3 rounds done"), std::string::npos) << file;
  EXPECT_NE(file.find("\n# tandem run: applies\n"), std::string::npos) << file;
  EXPECT_EQ(last_line(file), "shape:2+priority");
  EXPECT_NE(read_text(out).find("# INTERRUPTED after 1 of 3 rounds"), std::string::npos) << read_text(out);
  const auto doc = nlohmann::json::parse(read_text(dir.path("r.json")));
  EXPECT_EQ(doc["complete"], false);
  EXPECT_EQ(doc["interrupted"], true);
  EXPECT_EQ(doc["rounds_done"], 1);
  for (int i = 0; i < 50 && alive(worker); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(alive(worker)) << "the interrupted run's worker outlived tandem";
}

}  // namespace
