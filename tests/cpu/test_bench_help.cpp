// `tandem bench --help` and `tandem tune --help`: options in groups, nccl-tests style, each with its
// default.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>

namespace {

std::string help_of(const std::string& command) {
  const std::string line = "CUDA_VISIBLE_DEVICES= " + std::string(TANDEM_CLI_PATH) + " " + command + " --help 2>&1";
  std::string out;
  FILE* pipe = popen(line.c_str(), "r");
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return out;
}

// The help line of the option whose names begin with `names`, e.g. "-b,--minbytes".
std::string option_line(const std::string& help, const std::string& names) {
  std::istringstream in(help);
  for (std::string line; std::getline(in, line);)
    if (line.find("  " + names + " ") == 0) return line;
  return "(no line for " + names + ")";
}

TEST(BenchHelp, OptionsAreGroupedWithTheirDefaults) {
  for (const std::string command : {"bench", "tune"}) {
    const std::string help = help_of(command);
    for (const char* group : {"Sizes and steps:", "What to run:", "Ranks and launch:", "Output:", "Scenarios"})
      EXPECT_NE(help.find(std::string("\n") + group), std::string::npos) << command << " lacks " << group;
    // The defaults the README states: 512 MiB, factor 2, 20 timed + 5 warm-up steps, 120 s.
    EXPECT_NE(option_line(help, "-b,--minbytes").find("=512MiB"), std::string::npos) << help;
    EXPECT_NE(option_line(help, "-e,--maxbytes").find("=-b"), std::string::npos);
    EXPECT_NE(option_line(help, "-f,--stepfactor").find("=2 "), std::string::npos);
    EXPECT_NE(option_line(help, "-n,--iters").find("=20 "), std::string::npos);
    EXPECT_NE(option_line(help, "-w,--warmup,--warmup_iters").find("=5"), std::string::npos);
    EXPECT_NE(option_line(help, "-T,--timeout").find("=120 "), std::string::npos);
  }
  EXPECT_NE(help_of("tune").find("--resume TEXT=none"), std::string::npos);
  EXPECT_NE(help_of("bench").find("-p,--policy TEXT=the paper's set"), std::string::npos);
}

}  // namespace
