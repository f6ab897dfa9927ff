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

// Whether an option's help line shows `value` as its default: CLI11 before 2.4 writes "TEXT=512MiB",
// later ones "TEXT [512MiB]" (the GPU machine's), and either is what a user sees.
bool shows_default(const std::string& line, const std::string& value) {
  const std::string equals = "=" + value;
  const bool at_end =
      line.size() >= equals.size() && line.compare(line.size() - equals.size(), equals.size(), equals) == 0;
  // The default may go on in words: "FLOAT=120 for the benchmark", "FLOAT [120 for the benchmark]".
  const bool bracketed =
      line.find("[" + value + "]") != std::string::npos || line.find("[" + value + " ") != std::string::npos;
  return bracketed || line.find(equals + " ") != std::string::npos || at_end;
}

TEST(BenchHelp, OptionsAreGroupedWithTheirDefaults) {
  for (const std::string command : {"bench", "tune"}) {
    const std::string help = help_of(command);
    for (const char* group : {"Sizes and steps:", "What to run:", "Ranks and launch:", "Output:", "Scenarios"})
      EXPECT_NE(help.find(std::string("\n") + group), std::string::npos) << command << " lacks " << group;
    // The defaults the README states: 512 MiB, factor 2, 20 timed + 5 warm-up steps, 120 s.
    EXPECT_TRUE(shows_default(option_line(help, "-b,--minbytes"), "512MiB")) << help;
    EXPECT_TRUE(shows_default(option_line(help, "-e,--maxbytes"), "-b"));
    EXPECT_TRUE(shows_default(option_line(help, "-f,--stepfactor"), "2"));
    EXPECT_TRUE(shows_default(option_line(help, "-n,--iters"), "20"));
    EXPECT_TRUE(shows_default(option_line(help, "-w,--warmup,--warmup_iters"), "5"));
    EXPECT_TRUE(shows_default(option_line(help, "-T,--timeout"), "120"));
  }
  EXPECT_TRUE(shows_default(option_line(help_of("tune"), "--resume"), "none"));
  EXPECT_TRUE(shows_default(option_line(help_of("bench"), "-p,--policy"), "the paper's set"));
}

}  // namespace
