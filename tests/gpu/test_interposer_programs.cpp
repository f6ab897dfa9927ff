// The interposer survives real programs unchanged (issue 18, item 5): each program of
// tests/preload_target/program_*.cu (interposer_program MODE) and tests/gpu/programs/*.py runs
// without and with `tandem run --policy P` for P in priority, shape:3+priority+compute-always and
// sm-target:116+compute-always.
// Both runs must exit alike and print the same digest (tests/gpu/programs/program_output.py says
// what a digest holds); floating-point results that a different cuBLAS algorithm may change in the
// last bits ("approx") must agree within kRelativeTolerance / kAbsoluteTolerance. The interposer's
// statistics must show that it saw the launches of every program that launches kernels.
//
// Binaries are found next to `tandem` ($TANDEM_CLI, else this build's), the Python programs in
// $TANDEM_GPU_PROGRAMS_DIR, else <dir of tandem>/../../tests/gpu/programs, else this checkout's; the
// interpreter is $TANDEM_PYTHON, else python3. A Python program whose module (torch, jax, cupy) does
// not import is skipped, saying why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_test_util.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// "approx" values: |with - without| <= kAbsoluteTolerance + kRelativeTolerance * |without|. A few
// training steps whose GEMMs ran with another cuBLAS algorithm (sm-target) drift by far less.
constexpr double kRelativeTolerance = 1e-3;
constexpr double kAbsoluteTolerance = 1e-5;
// Per run; torch.compile's first compilation is the slowest part.
constexpr int kRunTimeoutSeconds = 420;

// The compute controls in their always-on form: these programs launch no NCCL kernel beside their
// compute, so the targeted form (the default) would leave every launch alone and check nothing of
// shaping or capping on them (tests/cpu/test_preload_fake_driver.cpp covers the targeted rule).
const char* const kPolicies[] = {"priority", "shape:3+priority+compute-always", "sm-target:116+compute-always"};

fs::path cli_dir() { return fs::path(tandem_test::cli_path()).parent_path(); }

// `name` next to `tandem` when there (a copied build tree keeps bin/ together), else `fallback`.
std::string beside_cli(const std::string& name, const std::string& fallback) {
  const fs::path beside = cli_dir() / name;
  return fs::exists(beside) ? beside.string() : fallback;
}

std::string programs_dir() {
  if (const char* env = std::getenv("TANDEM_GPU_PROGRAMS_DIR"); env && *env) return env;
  const fs::path in_tree = cli_dir() / ".." / ".." / "tests" / "gpu" / "programs";
  if (fs::exists(in_tree / "program_output.py")) return fs::canonical(in_tree).string();
  return TANDEM_GPU_PROGRAMS_DIR;
}

std::string python() {
  const char* env = std::getenv("TANDEM_PYTHON");
  return env && *env ? env : "python3";
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string scratch_dir() {
  static const std::string dir = [] {
    std::string pattern = ::testing::TempDir() + "/tandem-programs-XXXXXX";
    return mkdtemp(pattern.data()) ? pattern : ::testing::TempDir();
  }();
  return dir;
}

// What a run under `policy` must show in the interposer's statistics.
using StatsCheck = std::function<void(const json& stats, const std::string& policy)>;

struct Program {
  std::string name;
  std::vector<std::string> command;
  std::string python_module;  // "" for the CUDA programs
  StatsCheck check_stats;
};

uint64_t count(const json& stats, const std::string& group, const std::string& key) {
  return stats.contains(group) ? stats[group].value(key, uint64_t{0}) : 0;
}
uint64_t calls(const json& stats, const std::string& hook) { return count(stats, "calls_by_hook", hook); }
bool shapes(const std::string& policy) { return policy.find("shape:") != std::string::npos; }

// Every program that launches kernels: the interposer saw at least `minimum` launches.
StatsCheck saw_launches(uint64_t minimum, StatsCheck more = nullptr) {
  return [=](const json& stats, const std::string& policy) {
    EXPECT_GE(count(stats, "launches", "total"), minimum) << stats.dump(1);
    if (more) more(stats, policy);
  };
}

// Under a shaping policy, captured launches are seen while the stream captures.
void saw_captured(const json& stats, const std::string& policy) {
  if (shapes(policy)) EXPECT_GT(count(stats, "launches", "captured"), 0u) << stats["launches"].dump();
}

// Under sm-target, the cuBLAS handles or cuBLASLt descriptors the program made were capped.
void capped_cublas(const json& stats, const std::string& policy) {
  if (policy.rfind("sm-target:", 0) == 0)
    EXPECT_GE(count(stats, "cublas", "handles_capped") + count(stats, "cublas", "lt_descriptors_capped"), 1u)
        << stats["cublas"].dump();
}

std::vector<Program> programs() {
  const std::string binary = beside_cli("interposer_program", TANDEM_INTERPOSER_PROGRAM_PATH);
  const std::string dir = programs_dir();
  const auto cuda = [&](const std::string& mode, StatsCheck check) {
    return Program{mode, {binary, mode}, "", std::move(check)};
  };
  const auto py = [&](const std::string& name, const std::string& script, const std::string& module, StatsCheck check,
                      std::vector<std::string> args = {}) {
    std::vector<std::string> command = {python(), dir + "/" + script};
    command.insert(command.end(), args.begin(), args.end());
    return Program{name, command, module, std::move(check)};
  };
  return {
      // Three kernels per capture; the replays are not launches.
      cuda("graph", saw_launches(3, saw_captured)),
      // The parent's two launches (the exec'd child's launches are its own process's).
      cuda("fork", saw_launches(2)),
      cuda("threads", saw_launches(16 * 64,
                                   [](const json& stats, const std::string&) {
                                     EXPECT_GE(calls(stats, "cuLaunchKernel"), 16u * 32) << stats["calls_by_hook"];
                                   })),
      cuda("cooperative", saw_launches(3,
                                       [](const json& stats, const std::string& policy) {
                                         EXPECT_GE(calls(stats, "cuLaunchCooperativeKernel"), 1u);
                                         // Never shaped: a cooperative grid must fit at once.
                                         if (shapes(policy))
                                           EXPECT_GE(count(stats, "skipped", "cooperative"), 3u) << stats.dump(1);
                                       })),
      cuda("cluster", saw_launches(4,
                                   [](const json& stats, const std::string& policy) {
                                     EXPECT_GE(calls(stats, "cuLaunchKernelEx"), 2u) << stats["calls_by_hook"];
                                     // Two launches each (runtime and driver) with clusters of 2 and of
                                     // 4 blocks. A cluster is padded only when it still fits on one SM
                                     // at the padded residency: shape:3 pads the 2-block clusters and
                                     // leaves the 4-block ones alone.
                                     if (shapes(policy)) {
                                       EXPECT_EQ(count(stats, "skipped", "cluster"), 2u) << stats.dump(1);
                                       EXPECT_EQ(stats.value("compute_shaped", 0u), 2u) << stats.dump(1);
                                     }
                                   })),
      cuda("ptsz",
           saw_launches(10,
                        [](const json& stats, const std::string&) {
                          EXPECT_GE(calls(stats, "cuLaunchKernel_ptsz") + calls(stats, "cuLaunchKernelEx_ptsz"), 5u)
                              << stats["calls_by_hook"];
                        })),
      py("torch", "torch_program.py", "torch",
         saw_launches(1,
                      [](const json& stats, const std::string& policy) {
                        saw_captured(stats, policy);
                        capped_cublas(stats, policy);
                      })),
      py("jax", "jax_program.py", "jax", saw_launches(1)),
      py("cupy", "cupy_program.py", "cupy",
         saw_launches(1,
                      [](const json& stats, const std::string& policy) {
                        saw_captured(stats, policy);
                        capped_cublas(stats, policy);
                      })),
      // Launches nothing: only the statistics file itself is expected.
      py("ctypes_lookups", "ctypes_lookups.py", "ctypes", nullptr,
         {beside_cli("tandem_hook_names.txt", TANDEM_HOOK_NAMES_PATH)}),
  };
}

struct ProgramRun {
  int exit_code = -1;
  std::string output;  // the command, then its stdout and stderr
  json line;           // the program's JSON line (null if none)
  json stats;          // the interposer's statistics (null without tandem)
};

// The last line that is a JSON object with a "program" key (the interposer's lines start "tandem[").
json program_line(const std::string& output) {
  std::istringstream lines(output);
  json found;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_object() && parsed.contains("program")) found = std::move(parsed);
  }
  return found;
}

ProgramRun run_program(const Program& p, const std::string& policy) {
  std::string command = "timeout " + std::to_string(kRunTimeoutSeconds) + " ";
  const std::string stats_path =
      scratch_dir() + "/" + p.name + "-" + std::to_string(std::hash<std::string>()(policy)) + ".stats.json";
  if (!policy.empty()) {
    fs::remove(stats_path);
    command +=
        quoted(tandem_test::cli_path()) + " run --policy " + quoted(policy) + " --stats " + quoted(stats_path) + " -- ";
  }
  for (const auto& word : p.command) command += quoted(word) + " ";
  const auto r = tandem_test::run_command(command);
  ProgramRun run;
  run.exit_code = r.exit_code;
  run.output = command + "\n" + r.output;
  run.line = program_line(r.output);
  if (!policy.empty()) {
    std::ifstream in(stats_path);
    if (in) run.stats = json::parse(in, nullptr, false);
  }
  return run;
}

// Why `module` does not import into the interpreter ("" when it does).
std::string missing_module(const std::string& module) {
  static std::map<std::string, std::string> known;
  auto found = known.find(module);
  if (found != known.end()) return found->second;
  const auto r = tandem_test::run_command(python() + " -c " + quoted("import " + module));
  std::string why;
  if (r.exit_code != 0) {
    why = r.output.size() > 300 ? r.output.substr(r.output.size() - 300) : r.output;
    while (!why.empty() && why.back() == '\n') why.pop_back();
  }
  return known[module] = why;
}

// Each program runs once without tandem, for all three policies.
const ProgramRun& plain_run(const Program& p) {
  static std::map<std::string, ProgramRun> runs;
  auto found = runs.find(p.name);
  if (found == runs.end()) found = runs.emplace(p.name, run_program(p, "")).first;
  return found->second;
}

// The paths where two digests differ (a JSON patch), at most `limit` of them.
std::string differences(const json& expected, const json& actual, size_t limit = 20) {
  const json patch = json::diff(expected, actual);
  std::string out;
  for (size_t i = 0; i < patch.size() && i < limit; ++i) out += "  " + patch[i].dump() + "\n";
  if (patch.size() > limit) out += "  ... " + std::to_string(patch.size() - limit) + " more\n";
  return out;
}

void expect_close(const json& without, const json& with) {
  ASSERT_TRUE(without.is_object() && with.is_object()) << without << " vs " << with;
  ASSERT_EQ(with.size(), without.size()) << without << " vs " << with;
  for (const auto& [name, values] : without.items()) {
    ASSERT_TRUE(with.contains(name)) << name;
    ASSERT_EQ(with[name].size(), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) {
      const double a = values[i].get<double>(), b = with[name][i].get<double>();
      EXPECT_LE(std::fabs(b - a), kAbsoluteTolerance + kRelativeTolerance * std::fabs(a))
          << name << "[" << i << "]: " << a << " without tandem, " << b << " with";
    }
  }
}

struct Case {
  Program program;
  std::string policy;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.program.name << " under " << c.policy; }

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.program.name + "_" + info.param.policy;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& p : programs())
    for (const char* policy : kPolicies) out.push_back({p, policy});
  return out;
}

class InterposerPrograms : public ::testing::TestWithParam<Case> {};

TEST_P(InterposerPrograms, SameResultsWithAndWithoutTandem) {
  TANDEM_REQUIRE_GPUS(1);
  const Program& p = GetParam().program;
  const std::string& policy = GetParam().policy;
  if (!p.python_module.empty()) {
    const std::string why = missing_module(p.python_module);
    if (!why.empty()) GTEST_SKIP() << python() << " cannot import " << p.python_module << ": " << why;
  }
  const ProgramRun& plain = plain_run(p);
  // The program itself must work: it exits 0 and its outputs match their references.
  ASSERT_EQ(plain.exit_code, 0) << "fails without tandem:\n" << plain.output;
  ASSERT_TRUE(plain.line.is_object() && plain.line.value("ok", false)) << "fails without tandem:\n" << plain.output;
  if (plain.line["digest"].contains("skipped")) GTEST_SKIP() << plain.line["digest"]["skipped"].get<std::string>();

  const ProgramRun with = run_program(p, policy);
  EXPECT_EQ(with.exit_code, plain.exit_code) << with.output;
  ASSERT_TRUE(with.line.is_object()) << "no result line under tandem:\n" << with.output;
  EXPECT_TRUE(with.line.value("ok", false)) << with.output;
  EXPECT_EQ(with.line["digest"], plain.line["digest"])
      << "digest differs under --policy " << policy << " (JSON patch from without to with):\n"
      << differences(plain.line["digest"], with.line["digest"]) << with.output.substr(0, 4000);
  if (plain.line.contains("approx")) expect_close(plain.line["approx"], with.line.value("approx", json::object()));

  ASSERT_TRUE(with.stats.is_object()) << "no statistics file from the interposer:\n" << with.output;
  EXPECT_TRUE(with.stats.value("policy_valid", false)) << with.stats.dump(1);
  EXPECT_EQ(count(with.stats, "failures", "shaped_retried_unshaped"), 0u) << with.stats.dump(1);
  EXPECT_EQ(count(with.stats, "failures", "elevated_retried_as_issued"), 0u) << with.stats.dump(1);
  if (p.check_stats) p.check_stats(with.stats, policy);
}

INSTANTIATE_TEST_SUITE_P(Programs, InterposerPrograms, ::testing::ValuesIn(cases()), case_name);

}  // namespace
