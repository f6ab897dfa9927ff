// dlsym, dlvsym, dlerror and cuGetProcAddress under the interposer answer
// exactly as without it (docs/RUN.md, "What the interposer never changes"):
// tests/preload_target/dlsym_probe prints every answer for every hooked name,
// every kind of handle and both kinds of caller, with the fake driver and
// cuBLAS loaded locally, globally or not at all; its output must not change
// with LD_PRELOAD.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "preload/hooked_symbols.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::sh_quoted;

const std::string kLibrary = tandem_preload_test::preload_library_path();
const fs::path kFakes = fs::path(tandem_preload_test::fake_driver_client_path()).parent_path();

std::string probe_command(const std::vector<std::string>& loads) {
  std::string command = sh_quoted((kFakes / "dlsym_probe").string());
  for (const auto& load : loads) {
    const size_t colon = load.find(':');
    command += " " + sh_quoted(load.substr(0, colon + 1) + (kFakes / load.substr(colon + 1)).string());
  }
  return command;
}

// The first line where the two outputs differ, for a readable failure.
std::string first_difference(const std::string& expected, const std::string& actual) {
  std::istringstream a(expected), b(actual);
  std::string line_a, line_b;
  for (int number = 1;; ++number) {
    const bool more_a = static_cast<bool>(std::getline(a, line_a));
    const bool more_b = static_cast<bool>(std::getline(b, line_b));
    if (!more_a && !more_b) return "";
    if (line_a != line_b || more_a != more_b)
      return "line " + std::to_string(number) + "\n  without: " + (more_a ? line_a : "(end)") +
             "\n  with:    " + (more_b ? line_b : "(end)");
  }
}

void expect_same_answers(const std::vector<std::string>& loads) {
  const std::string command = probe_command(loads);
  const Result without = run_shell(command);
  const Result with = run_shell("LD_PRELOAD=" + sh_quoted(kLibrary) + " " + command);
  ASSERT_EQ(without.status, 0) << without.out << without.err;
  ASSERT_EQ(with.status, 0) << with.out << with.err;
  ASSERT_NE(without.out.find("dlsym(RTLD_NEXT, cuLaunchKernel)"), std::string::npos) << without.out;
  EXPECT_EQ(first_difference(without.out, with.out), "");
  EXPECT_EQ(with.err, without.err);
}

TEST(preload_dlsym, SameAnswersWithNothingLoaded) { expect_same_answers({}); }

TEST(preload_dlsym, SameAnswersWithTheDriverLoadedLocally) { expect_same_answers({"local:libcuda.so.1"}); }

TEST(preload_dlsym, SameAnswersWithTheDriverLoadedGlobally) { expect_same_answers({"global:libcuda.so.1"}); }

TEST(preload_dlsym, SameAnswersWithCublasThenTheDriverInEveryScope) {
  expect_same_answers(
      {"local:libcublasLt.so.13", "global:libcublas.so.13", "local:libcuda.so.1", "global:libcuda.so.1"});
}

// The probe itself must be able to tell: with the driver loaded, a hooked name
// is found through its handle and through RTLD_NEXT, and absent names carry
// glibc's message.
TEST(preload_dlsym, TheProbeSeesDefinitionsAndFailures) {
  const Result r = run_shell("LD_PRELOAD=" + sh_quoted(kLibrary) + " " + probe_command({"global:libcuda.so.1"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("program dlsym(loaded 1, cuLaunchKernel) -> found"), std::string::npos);
  EXPECT_NE(r.out.find("program dlsym(RTLD_NEXT, cuLaunchKernel) -> found"), std::string::npos);
  EXPECT_NE(r.out.find("program dlsym(libm, cuLaunchKernel) -> NULL errno=4242 dlerror=/"), std::string::npos);
  EXPECT_NE(r.out.find(": undefined symbol: cublasCreate_v2 again=(null)"), std::string::npos);
  EXPECT_NE(r.out.find("cuGetProcAddress_v2(loaded 1, cuLaunchKernel, 12000, "
                       "2) -> 0 status=0 pfn=set"),
            std::string::npos);
}

bool have_python3() { return run_shell("command -v python3").status == 0; }

// CPython's ctypes passes dlerror() to strlen after a failed dlsym: NULL there
// was a segfault.
TEST(preload_dlsym, CtypesLookupOfAnAbsentHookedNameUnderTandemRun) {
  if (!have_python3()) GTEST_SKIP() << "python3 not installed";
  const std::string program = "import ctypes; print(hasattr(ctypes.CDLL(None), 'cublasCreate_v2'))";
  const Result r = run_shell(sh_quoted(tandem_preload_test::tandem_path()) + " run --log-level error -- python3 -c " +
                             sh_quoted(program));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "False\n");
}

TEST(preload_dlsym, CtypesSeesTheSameAnswersAndMessages) {
  if (!have_python3()) GTEST_SKIP() << "python3 not installed";
  std::string program =
      "import ctypes, sys\n"
      "def look(library, name):\n"
      "    try:\n"
      "        getattr(library, name); print(name, 'found')\n"
      "    except AttributeError as error:\n"
      "        print(name, error)\n"
      "names = [l.strip() for l in sys.argv[1].split(',')]\n"
      "for name in names: look(ctypes.CDLL(None), name)\n"
      "driver = ctypes.CDLL(sys.argv[2])\n"
      "for name in names: look(ctypes.CDLL(None), name); look(driver, name)\n"
      "ctypes.CDLL(sys.argv[2], mode=ctypes.RTLD_GLOBAL)\n"
      "for name in names: look(ctypes.CDLL(None), name)\n";
  std::string names;
  for (const char* name : tandem::preload::kHookNames) names += std::string(names.empty() ? "" : ",") + name;
  const std::string command =
      "python3 -c " + sh_quoted(program) + " " + sh_quoted(names) + " " + sh_quoted((kFakes / "libcuda.so.1").string());
  const Result without = run_shell(command);
  const Result with = run_shell("LD_PRELOAD=" + sh_quoted(kLibrary) + " " + command);
  ASSERT_EQ(without.status, 0) << without.err;
  EXPECT_EQ(with.status, 0) << with.err;
  EXPECT_NE(without.out.find("cuLaunchKernel found"), std::string::npos) << without.out;
  EXPECT_EQ(first_difference(without.out, with.out), "");
}

}  // namespace
