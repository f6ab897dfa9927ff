// `tandem run` and the interposer in processes that never touch CUDA: exit statuses, the child's
// environment, the exit summary, the stats file, the exported symbols, and dlsym forwarding.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "preload/hooked_symbols.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;

const std::string kTandem = tandem_preload_test::tandem_path();
const std::string kLibrary = tandem_preload_test::preload_library_path();

using tandem_run_contract_test::Result;
using tandem_test::read_text;
using tandem_test::ScratchFolder;

// Runs `command` with /bin/sh; returns its exit status and what it wrote.
Result run(const std::string& command) { return tandem_run_contract_test::run_shell(command); }

std::string tandem_run(const std::string& options, const std::string& command) {
  return kTandem + " run " + options + " -- " + command;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(preload_run_command, ReturnsZeroForTrue) { EXPECT_EQ(run(tandem_run("", "true")).status, 0); }

TEST(preload_run_command, ReturnsTheChildsExitStatus) {
  EXPECT_EQ(run(tandem_run("", "sh -c 'exit 7'")).status, 7);
  EXPECT_EQ(run(tandem_run("--policy shape:2+priority", "sh -c 'exit 42'")).status, 42);
}

TEST(preload_run_command, KilledChildGives128PlusSignal) {
  EXPECT_EQ(run(tandem_run("", "sh -c 'kill -KILL $$'")).status, 128 + 9);
  EXPECT_EQ(run(tandem_run("", "sh -c 'kill -TERM $$'")).status, 128 + 15);
}

// A crash of `tandem` itself (here its child sends it SIGSEGV while it waits) names the signal and
// the build and prints the stack, then dies of that signal as it would have.
TEST(preload_run_command, CrashOfTandemPrintsSignalBuildAndStack) {
  const Result r = run(tandem_run("", "sh -c 'kill -SEGV $PPID; sleep 1'"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("fatal signal: SIGSEGV"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tandem 0."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tandem("), std::string::npos) << r.err;  // a frame of the tandem binary
}

TEST(preload_run_command, MissingCommandGives127) {
  const Result r = run(tandem_run("", "/nonexistent/program"));
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("cannot execute"), std::string::npos);
}

TEST(preload_run_command, InterposerIsFirstInLdPreload) {
  const Result r = run(tandem_run("", "sh -c 'echo $LD_PRELOAD'"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string first = r.out.substr(0, r.out.find_first_of(":\n"));
  EXPECT_EQ(fs::canonical(first), fs::canonical(kLibrary));
}

TEST(preload_run_command, ExistingLdPreloadIsKeptAfterOurs) {
  const Result r = run("LD_PRELOAD=libm.so.6 " + tandem_run("", "sh -c 'echo $LD_PRELOAD'"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(":libm.so.6"), std::string::npos) << r.out;
  EXPECT_EQ(count(r.out, "libtandem_preload.so"), 1u);
}

TEST(preload_run_command, SetsTheTandemVariables) {
  const Result r =
      run(tandem_run("--policy shape:2+priority --log-level debug "
                     "--include '*gemm*' --include 'k2' --exclude 'nccl*' --stats /tmp/x-%p.json",
                     "sh -c 'echo \"$TANDEM_POLICY|$TANDEM_LOG_LEVEL|${TANDEM_SHAPE_WHEN-unset}|$TANDEM_INCLUDE|"
                     "$TANDEM_EXCLUDE|$TANDEM_STATS_FILE\"'"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "shape:2+priority|debug|unset|*gemm*,k2|nccl*|/tmp/x-%p.json\n");
}

TEST(preload_run_command, UnsetOptionsClearInheritedVariables) {
  const Result r =
      run("TANDEM_STATS_FILE=/tmp/old.json TANDEM_INCLUDE=x TANDEM_POLICY=shape:9 " +
          tandem_run("", "sh -c 'echo \"$TANDEM_POLICY|${TANDEM_STATS_FILE-unset}|${TANDEM_INCLUDE-unset}\"'"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "priority|unset|unset\n");
}

TEST(preload_run_command, RootPidIsTheChildsPid) {
  const Result r = run(tandem_run("", "sh -c 'echo $TANDEM_ROOT_PID $$'"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  long root = 0, self = -1;
  in >> root >> self;
  EXPECT_EQ(root, self);
}

// The interposer applies nccl-* tokens through ncclConfig_t at communicator creation; an NCCL_*
// variable would override that configuration inside NCCL, so none is set (the user's own pass through).
TEST(preload_run_command, NcclTokensSetNoNcclVariables) {
  const Result r =
      run("NCCL_MAX_CTAS=8 " + tandem_run("--policy priority+nccl-cga:1+nccl-ctas:2..16+nccl-cta-policy:efficiency",
                                          "sh -c 'echo \"$NCCL_CGA_CLUSTER_SIZE|$NCCL_MIN_CTAS|$NCCL_MAX_CTAS|"
                                          "$NCCL_CTA_POLICY|$TANDEM_POLICY\"'"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "||8||priority+nccl-ctas:2..16+nccl-cga:1+nccl-cta-policy:efficiency\n");
}

TEST(preload_run_command, RejectsBadOptionsBeforeRunning) {
  const Result bogus = run(tandem_run("--policy bogus", "sh -c 'echo ran'"));
  EXPECT_NE(bogus.status, 0);
  EXPECT_EQ(bogus.out, "");
  EXPECT_NE(bogus.err.find("bogus"), std::string::npos);
  for (const char* policy : {"sequential", "comm-first+priority", "green:64", "nccl-symmetric"}) {
    const Result r = run(tandem_run(std::string("--policy ") + policy, "sh -c 'echo ran'"));
    EXPECT_NE(r.status, 0) << policy;
    EXPECT_EQ(r.out, "") << policy;
    EXPECT_NE(r.err.find("cannot be applied by `tandem run`"), std::string::npos) << r.err;
  }
  // copy-engine is the interposer's own route: run, the policy handed to the child as it is.
  const Result ce = run(tandem_run("--policy copy-engine", "sh -c 'echo $TANDEM_POLICY'"));
  EXPECT_EQ(ce.status, 0) << ce.err;
  EXPECT_EQ(ce.out, "copy-engine\n");
  EXPECT_NE(run(tandem_run("--log-level loud", "true")).status, 0);
  // --shape-when is gone: the targeted form is the default, compute-always the policy token for the other.
  EXPECT_NE(run(tandem_run("--shape-when always", "true")).status, 0);
}

bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

// Two of --trace, --timeline-json and --stats on one file: the later writer would replace the
// other's document. Refused before the program starts, naming both options (issue 38, item 4).
TEST(preload_run_command, OneFileForTwoOutputsIsRefused) {
  ScratchFolder scratch;
  struct Case {
    std::string options, first, second;
  };
  for (const Case& c : {Case{"--trace x --timeline-json x", "--trace", "--timeline-json"},
                        Case{"--stats x --trace ./x", "--stats", "--trace"},
                        Case{"--stats ./x --timeline-json x", "--stats", "--timeline-json"}}) {
    const Result r = run("cd " + scratch.str() + " && " + tandem_run(c.options, "sh -c 'echo ran'"));
    EXPECT_NE(r.status, 0) << c.options;
    EXPECT_EQ(r.out, "") << c.options;
    EXPECT_TRUE(one_line(r.err)) << c.options << ": " << r.err;
    EXPECT_NE(r.err.find(c.first + " and " + c.second + " name the same file"), std::string::npos)
        << c.options << ": " << r.err;
  }
  // A --stats name with %p is one file per process: not the trace's.
  const Result pid = run("cd " + scratch.str() + " && " + tandem_run("--stats 'x%p' --trace 'x%p'", "true"));
  EXPECT_EQ(pid.err.find("the same file"), std::string::npos) << pid.err;
}

// An empty value is a mistake, not the option left out (issue 38, item 20).
TEST(preload_run_command, EmptyOutputAndStepValuesAreRefused) {
  for (const char* option : {"--trace", "--timeline-json", "--step-range"}) {
    const Result r = run(tandem_run(std::string(option) + " ''", "sh -c 'echo ran'"));
    EXPECT_NE(r.status, 0) << option;
    EXPECT_EQ(r.out, "") << option;
    EXPECT_TRUE(one_line(r.err)) << option << ": " << r.err;
    EXPECT_NE(r.err.find(std::string(option) + ": is empty"), std::string::npos) << r.err;
  }
}

// --timeline's folder under a TMPDIR that is missing, a file or too long a name: one line naming
// TMPDIR, as `tandem tune` says it, never "filesystem error: temp_directory_path" (issue 38, item 9).
TEST(preload_run_command, ATimelineUnderABadTmpdirNamesIt) {
  ScratchFolder scratch;
  std::ofstream(scratch.path("file")) << "x";
  for (const std::string& tmpdir :
       {std::string("/nonexistent/tmp"), scratch.path("file").string(), "/" + std::string(5000, 'a')}) {
    // One process, and one rank of a launcher's job (the job's shared folder).
    for (const std::string& launcher :
         {std::string(""), std::string("RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 ")}) {
      const Result r = run("TMPDIR=" + tmpdir + " " + launcher + tandem_run("--timeline", "sh -c 'echo ran'"));
      EXPECT_NE(r.status, 0) << launcher << tmpdir.substr(0, 40);
      EXPECT_EQ(r.out, "") << launcher << tmpdir.substr(0, 40);
      EXPECT_TRUE(one_line(r.err)) << r.err;
      EXPECT_EQ(r.err.rfind("tandem: error: TMPDIR='", 0), 0u) << r.err;
      EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << r.err;
    }
  }
}

// A policy file as `tandem tune` writes it (comments on the case, then the policy) is accepted by
// `tandem run --policy @FILE`; a tuned policy with controls only a program can apply (launch order)
// is refused with the reason, before anything runs.
TEST(preload_run_command, TakesAPolicyFileAsTuneWritesIt) {
  ScratchFolder scratch;
  auto write = [&](const std::string& name, const std::string& policy) {
    std::ofstream(scratch.path(name)) << "# tandem tune 0.1.0 (abc123), 2026-11-30T07:00:00Z\n"
                                      << "# tiled-gemm x all-reduce 464MiB bf16 on 2 x NVIDIA H200\n"
                                      << "# t_overlap 1.9 ms, t_seq 3.2 ms, efficiency 85 % (naive 55 %, paper 85 %)\n"
                                      << policy << "\n";
    return scratch.path(name).string();
  };
  const Result ok = run(tandem_run("--policy @" + write("shape.policy", "shape:3+priority"), "sh -c 'echo ran'"));
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.out, "ran\n");
  const Result refused =
      run(tandem_run("--policy @" + write("ce.policy", "comm-first+copy-engine"), "sh -c 'echo ran'"));
  EXPECT_NE(refused.status, 0);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("cannot be applied by `tandem run`"), std::string::npos) << refused.err;
}

TEST(preload_run_command, MissingLibraryOverrideIsAnError) {
  const Result r = run("TANDEM_PRELOAD_LIB=/nonexistent.so " + tandem_run("", "true"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("TANDEM_PRELOAD_LIB"), std::string::npos);
}

TEST(preload_run_command, LibraryOverrideIsUsed) {
  const Result r = run("TANDEM_PRELOAD_LIB=" + kLibrary + " " + tandem_run("", "sh -c 'echo $LD_PRELOAD'"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(fs::canonical(r.out.substr(0, r.out.find_first_of(":\n"))), fs::canonical(kLibrary));
}

// A process that never touches CUDA runs unchanged under the interposer.
TEST(preload_run_command, NonCudaProgramRunsUnchanged) {
  const Result r = run(tandem_run("", "/bin/echo hi"));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "hi\n");
  const Result piped = run(tandem_run("", "sh -c 'printf \"a\\nb\\n\" | sort -r | tr a-z A-Z'"));
  EXPECT_EQ(piped.out, "B\nA\n");
}

TEST(preload_run_command, InfoSummaryReportsZeroLaunches) {
  const Result r = run(tandem_run("--log-level info", "true"));
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("summary: policy priority, 0 kernel launches seen"), std::string::npos) << r.err;
}

TEST(preload_run_command, ErrorLevelPrintsNothing) {
  const Result r = run(tandem_run("--log-level error", "true"));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "");
}

TEST(preload_run_command, OnlyTheRootProcessReportsWhenNothingLaunched) {
  // Five short-lived descendants, none launching: one summary (the root's), not six.
  const Result r = run(tandem_run("", "bash -c 'for i in 1 2 3 4 5; do /bin/true; done; true'"));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(count(r.err, "summary:"), 1u) << r.err;
}

TEST(preload_run_command, StatsFileIsWrittenAsJson) {
  ScratchFolder scratch;
  const fs::path stats = scratch.path("stats.json");
  const Result r = run(tandem_run("--log-level error --policy shape:auto+priority --stats " + stats.string(), "true"));
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(stats));
  const auto j = nlohmann::json::parse(read_text(stats));
  EXPECT_EQ(j["launches"]["total"], 0);
  EXPECT_EQ(j["policy"], "shape:auto+priority");
  EXPECT_EQ(j["nccl_elevated"], 0);
  EXPECT_TRUE(j["kernels"].empty());
}

TEST(preload_run_command, RelativeStatsPathIsTakenFromTandemsDirectory) {
  ScratchFolder scratch;
  const Result r = run("cd " + scratch.path("").string() + " && " +
                       tandem_run("--log-level error --stats rel.json", "sh -c 'cd / && exec true'"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(scratch.path("rel.json")));
}

// A stats file an earlier run left is never removed before the program starts (a program killed
// before its exit report would lose it): only this run's statistics replace it, and when none come
// `tandem run` says so.
TEST(preload_run_command, StaleStatsFileIsKeptAndNamedWhenNoProcessWrites) {
  ScratchFolder scratch;
  const fs::path stats = scratch.path("stale.json");
  std::ofstream(stats) << "{\"stale\": true}";
  // Killed: no process writes (a program that leaves through _exit does: the interposer hooks it).
  const Result r = run(tandem_run("--stats " + stats.string(), "sh -c 'kill -9 $$'"));
  ASSERT_EQ(r.status, 128 + 9) << r.err;
  EXPECT_EQ(read_text(stats), "{\"stale\": true}");
  EXPECT_NE(r.err.find("tandem run: warning: --stats '" + stats.string() + "' still holds an earlier run's statistics"),
            std::string::npos)
      << r.err;
  // A run that writes replaces it, without the warning.
  const Result written = run(tandem_run("--stats " + stats.string(), "true"));
  EXPECT_EQ(read_text(stats).find("stale"), std::string::npos);
  EXPECT_EQ(written.err.find("warning: --stats"), std::string::npos) << written.err;
}

// Python's os._exit and a shell's exit builtin leave through _exit, without exit handlers: the summary
// and the stats file are written first (the interposer's _exit hook), and the status is the program's.
TEST(preload_run_command, AProgramLeavingThroughExitWritesItsSummaryAndStats) {
  std::vector<std::string> programs;
  if (run("command -v dash >/dev/null").status == 0) programs.push_back("dash -c 'exit 7'");
  if (run("command -v python3 >/dev/null").status == 0) programs.push_back("python3 -c 'import os; os._exit(7)'");
  if (programs.empty()) GTEST_SKIP() << "neither dash nor python3 installed";
  for (const std::string& program : programs) {
    SCOPED_TRACE(program);
    ScratchFolder scratch;
    const fs::path stats = scratch.path("stats.json");
    std::ofstream(stats) << "{\"earlier\": true}";
    const Result r = run(tandem_run("--stats " + stats.string(), program));
    EXPECT_EQ(r.status, 7) << r.err;
    EXPECT_EQ(read_text(stats).find("earlier"), std::string::npos) << r.err;
    EXPECT_NE(read_text(stats).find("\"schema_version\""), std::string::npos);
    EXPECT_NE(r.err.find("summary: policy"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("warning: --stats"), std::string::npos) << r.err;
  }
}

// The interposer reading an invalid TANDEM_POLICY itself (no `tandem run` to validate it first):
// one error line, and the program runs and exits as it would.
TEST(preload_interposer, InvalidPolicyFromTheEnvironmentDoesNotStopTheProgram) {
  const Result r =
      run("LD_PRELOAD=" + kLibrary + " TANDEM_POLICY=shape:two TANDEM_LOG_LEVEL=info bash -c 'echo ran; exit 5'");
  EXPECT_EQ(r.status, 5);
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_EQ(count(r.err, "error: TANDEM_POLICY='shape:two' is invalid"), 1u) << r.err;
  EXPECT_NE(r.err.find("invalid: no controls"), std::string::npos);
}

TEST(preload_interposer, SilentByDefaultInProcessesThatNeverLaunch) {
  const Result r = run("LD_PRELOAD=" + kLibrary + " bash -c 'echo ran'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_EQ(r.err, "");
}

TEST(preload_interposer, DlsymStillWorksForAProgramThatUsesIt) {
  if (run("command -v python3").status != 0) GTEST_SKIP() << "python3 not installed";
  const Result r = run("LD_PRELOAD=" + kLibrary +
                       " python3 -c \"import ctypes, ctypes.util; m = ctypes.CDLL(ctypes.util.find_library('m')); "
                       "m.cos.restype = ctypes.c_double; m.cos.argtypes = [ctypes.c_double]; print(m.cos(0.0))\"");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1.0\n");
}

// The exported dlsym (reached through the library's handle) forwards to glibc for every case.
TEST(preload_interposer, ExportedDlsymForwards) {
  void* library = dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  using Dlsym = void* (*)(void*, const char*);
  const auto hooked = reinterpret_cast<Dlsym>(dlsym(library, "dlsym"));
  ASSERT_NE(hooked, nullptr);
  ASSERT_NE(reinterpret_cast<void*>(hooked), reinterpret_cast<void*>(&dlsym));
  EXPECT_EQ(hooked(RTLD_DEFAULT, "getpid"), dlsym(RTLD_DEFAULT, "getpid"));
  EXPECT_NE(hooked(RTLD_NEXT, "getpid"), nullptr);
  void* libm = dlopen("libm.so.6", RTLD_NOW);
  ASSERT_NE(libm, nullptr);
  EXPECT_EQ(hooked(libm, "cos"), dlsym(libm, "cos"));
  dlerror();
  EXPECT_EQ(hooked(libm, "no_such_symbol_anywhere"), nullptr);
  EXPECT_NE(dlerror(), nullptr);
  // A hooked name with no real definition in the process stays absent.
  EXPECT_EQ(hooked(RTLD_DEFAULT, "cublasLtMatmulDescCreate"), nullptr);
  dlclose(libm);
}

// Hidden-symbol hygiene: the library exports dlsym, dlerror and the hooks, nothing else.
TEST(preload_interposer, ExportsOnlyTheHooks) {
  if (run("command -v nm").status != 0) GTEST_SKIP() << "nm (binutils) not installed";
  const Result r = run("nm -D --defined-only " + kLibrary);
  ASSERT_EQ(r.status, 0) << r.err;
  std::set<std::string> exported;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto name = line.substr(line.find_last_of(' ') + 1);
    if (!name.empty()) exported.insert(name);
  }
  std::set<std::string> expected(std::begin(tandem::preload::kHookNames), std::end(tandem::preload::kHookNames));
  expected.insert("dlsym");
  expected.insert("dlerror");
  expected.insert("InitializeInjectionNvtx2");  // NVTX's injection entry, for the timeline (timeline_session.h)
  EXPECT_EQ(exported, expected);
}

TEST(preload_interposer, DoesNotLinkTheCudaRuntimeOrDriver) {
  const Result r = run("ldd " + kLibrary);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("libcuda"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libcudart"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libcublas"), std::string::npos) << r.out;
}

}  // namespace
