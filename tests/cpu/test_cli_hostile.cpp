// The command's own answers to the hostile sweep (docs/RELIABILITY.md): an unknown subcommand named
// as such, and output that cannot be written (a full disk) reported as a failure, not exit 0.
#include <gtest/gtest.h>

#include <string>

#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::sh_quoted;

const std::string kTandem = sh_quoted(tandem_preload_test::tandem_path());

TEST(cli_hostile, AnUnknownSubcommandIsNamed) {
  const Result r = run_shell(kTandem + " bogus");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "tandem: error: unknown subcommand 'bogus': expected bench, info, plan, run or tune (see --help)\n");
  const Result escaped = run_shell(kTandem + " \"$(printf 'bo\\033gus')\"");
  EXPECT_NE(escaped.err.find("'bo\\x1bgus'"), std::string::npos) << escaped.err;
}

TEST(cli_hostile, OutputToAFullDeviceIsAFailure) {
  if (run_shell("test -w /dev/full").status != 0) GTEST_SKIP() << "no /dev/full";
  for (const std::string command : {"plan --gpu h200 --kernel threads=256,regs=64", "--help", "info --help"}) {
    const Result r = run_shell(kTandem + " " + command + " > /dev/full");
    EXPECT_EQ(r.status, 1) << command;
    EXPECT_NE(r.err.find("tandem: error: cannot write the standard output: No space left on device"), std::string::npos)
        << command << ": " << r.err;
  }
}

}  // namespace
