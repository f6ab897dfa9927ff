// The interposer in the environments users run it in (docs/RELIABILITY.md, "Environments tried"): a
// program that detects optional libraries through weak references, one whose own run path brings a
// C++ runtime newer than the system's (a conda environment), and what the interposer and the route
// library depend on and export. Each would see the interposer where it must not without its fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "preload/hooked_symbols.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::ScratchFolder;
using tandem_run_contract_test::sh_quoted;

const std::string kPreload = tandem_preload_test::preload_library_path();
const std::string kRoute = (fs::path(kPreload).parent_path() / "libtandem_nccl_route.so").string();

Result preloaded(const std::string& command, const std::string& extra_env = "") {
  return run_shell(extra_env + " LD_PRELOAD=" + sh_quoted(kPreload) + " " + command);
}

std::set<std::string> lines_with(const std::string& command, const std::string& prefix) {
  const Result r = run_shell(command);
  std::set<std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.insert(line.substr(prefix.size()));
  return out;
}

// The libraries an ELF file names in DT_NEEDED (readelf, from binutils, as the build uses).
std::set<std::string> needed(const std::string& file) {
  std::set<std::string> out;
  for (const auto& line :
       lines_with("readelf -dW " + sh_quoted(file) + " | sed -n 's/.*(NEEDED).*\\[\\(.*\\)\\]/N:\\1/p'", "N:"))
    out.insert(line);
  return out;
}

TEST(preload_environments, WeakProbesOfAbsentLibrariesAnswerAsWithoutTheInterposer) {
  for (const std::string program : {TANDEM_WEAK_PROBE_PATH, TANDEM_WEAK_PROBE_NCCL_PATH}) {
    const Result plain = run_shell(sh_quoted(program));
    ASSERT_EQ(plain.status, 0) << plain.err;
    for (const std::string env : {"", "LD_BIND_NOW=1"}) {
      const Result under = preloaded(sh_quoted(program), env);
      EXPECT_EQ(under.status, 0) << under.err;
      EXPECT_EQ(under.out, plain.out) << program << " " << env;
      EXPECT_EQ(under.err, "") << program << " " << env;
    }
  }
  // The probes saw what they should: nothing alone, the fake NCCL's functions beside it.
  EXPECT_NE(run_shell(TANDEM_WEAK_PROBE_PATH).out.find("ncclGroupStart absent"), std::string::npos);
  EXPECT_NE(run_shell(TANDEM_WEAK_PROBE_NCCL_PATH).out.find("ncclGroupStart present"), std::string::npos);
}

// _exit and _Exit are hooked (the exit report) and defined by libc in every process: exported as plain
// functions, not indirect ones, so that a library bound immediately at start-up that calls them (most
// of a distribution's: libmount, libdbus, glib) makes glibc print no "Relink ... for IFUNC symbol
// `_exit'" line, and the program still leaves with its status.
TEST(preload_environments, ALibraryBoundAtStartUpThatCallsExitSeesNoDifference) {
  const Result plain = run_shell(sh_quoted(TANDEM_BIND_NOW_EXIT_PROGRAM_PATH));
  ASSERT_EQ(plain.status, 3) << plain.err;
  for (const std::string env : {"TANDEM_LOG_LEVEL=error", "TANDEM_LOG_LEVEL=error LD_BIND_NOW=1"}) {
    const Result under = preloaded(sh_quoted(TANDEM_BIND_NOW_EXIT_PROGRAM_PATH), env);
    EXPECT_EQ(under.status, 3) << env;
    EXPECT_EQ(under.out, plain.out) << env;
    EXPECT_EQ(under.err, "") << env;
  }
}

TEST(preload_environments, ANewerCxxRuntimeInTheProgramsRunPathIsTheOneLoaded) {
  const Result plain = run_shell(TANDEM_NEWER_RUNTIME_PROGRAM_PATH);
  ASSERT_EQ(plain.out, "newer runtime\n") << plain.err;
  const Result under = preloaded(TANDEM_NEWER_RUNTIME_PROGRAM_PATH);
  EXPECT_EQ(under.status, 0) << under.err;
  EXPECT_EQ(under.out, "newer runtime\n") << under.err;
  const Result run = run_shell(sh_quoted(tandem_preload_test::tandem_path()) + " run --log-level error -- " +
                               TANDEM_NEWER_RUNTIME_PROGRAM_PATH);
  EXPECT_EQ(run.out, "newer runtime\n") << run.err;
}

TEST(preload_environments, TheInterposerNeedsTheCLibraryAlone) {
  const auto libs = needed(kPreload);
  ASSERT_FALSE(libs.empty()) << "readelf found no DT_NEEDED in " << kPreload;
  for (const auto& lib : libs)
    EXPECT_TRUE(lib.rfind("libc.so", 0) == 0 || lib.rfind("ld-linux", 0) == 0 || lib.rfind("libdl.so", 0) == 0 ||
                lib.rfind("libpthread.so", 0) == 0)
        << kPreload << " needs " << lib;
}

TEST(preload_environments, TheInterposerExportsItsHooksAlone) {
  // dlsym, dlerror, NVTX's injection entry for the timeline (preload/timeline_session.h), and the hooks.
  std::set<std::string> expected = {"dlsym", "dlerror", "InitializeInjectionNvtx2"};
  for (const char* name : tandem::preload::kHookNames) expected.insert(name);
  const auto exported = lines_with("nm -D --defined-only " + sh_quoted(kPreload) + " | awk '{print \"S:\" $3}'", "S:");
  EXPECT_EQ(exported, expected);
}

// The copy-engine route brings no C++ runtime and no cuBLASLt into the program: the CUDA runtime is
// linked in, NCCL comes from the program.
TEST(preload_environments, TheRouteLibraryNeedsNeitherCublasNorTheCxxRuntime) {
  if (!fs::exists(kRoute)) GTEST_SKIP() << kRoute << " not built";
  for (const auto& lib : needed(kRoute)) {
    EXPECT_EQ(lib.find("cublas"), std::string::npos) << lib;
    EXPECT_EQ(lib.find("libstdc++"), std::string::npos) << lib;
    EXPECT_EQ(lib.find("libgcc_s"), std::string::npos) << lib;
  }
}

// At exit the interposer opens nothing unless it writes the stats file (strace, when installed).
TEST(preload_environments, NothingIsOpenedAtExitWithoutAStatsFile) {
  if (run_shell("command -v strace").status != 0) GTEST_SKIP() << "strace not installed";
  ScratchFolder scratch;
  const std::string trace = scratch.path("trace").string();
  const Result r =
      run_shell("strace -f -qq -e trace=open,openat -o " + trace + " env LD_PRELOAD=" + sh_quoted(kPreload) +
                " TANDEM_ROOT_PID= TANDEM_LOG_LEVEL=error /bin/true");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(tandem_test::read_text(trace).find("/proc/self/status"), std::string::npos);
  // With a stats file: that file, and still no /proc (the new file's mode comes from open(2) itself).
  const std::string stats = scratch.path("s.json").string();
  run_shell("strace -f -qq -e trace=open,openat -o " + trace + " sh -c 'exec env TANDEM_ROOT_PID=$$ LD_PRELOAD=" +
            sh_quoted(kPreload) + " TANDEM_STATS_FILE=" + stats + " /bin/true'");
  EXPECT_TRUE(fs::exists(stats));
  EXPECT_EQ(tandem_test::read_text(trace).find("/proc/self/status"), std::string::npos);
}

}  // namespace
