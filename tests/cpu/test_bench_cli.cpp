// Command-line errors of `tandem bench` and `tandem tune`: one line on stderr naming the problem and
// a non-zero exit, before any GPU is touched (and with no GPU visible).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

namespace {

struct Result {
  int exit_code = -1;
  std::string output;
};

Result run(const std::string& args) {
  // CUDA_VISIBLE_DEVICES= hides every GPU, so the "no GPU" path is the same on every machine.
  const std::string command = "CUDA_VISIBLE_DEVICES= " + std::string(TANDEM_CLI_PATH) + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void expect_one_line_error(const std::string& args, const std::string& expected) {
  const Result r = run(args);
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_NE(r.output.find(expected), std::string::npos) << args << "\n" << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << "\n" << r.output;
  EXPECT_EQ(r.output.rfind("tandem: error: ", 0), 0u) << r.output;
}

}  // namespace

TEST(BenchCliErrors, UnknownPolicyNamesTheTokenAndTheAcceptedOnes) {
  expect_one_line_error("bench --policy shape:3+prio", "unknown policy token 'prio'");
  expect_one_line_error("bench --policy shape:3+prio", "accepted: sequential, concurrent, comm-first, priority");
}

TEST(BenchCliErrors, UnknownNamesAndBadValues) {
  expect_one_line_error("bench --workload matmul", "unknown workload 'matmul'");
  expect_one_line_error("bench --collective broadcast", "unknown collective 'broadcast'");
  expect_one_line_error("bench --dtype int8", "unknown dtype 'int8'");
  expect_one_line_error("bench -b 12x", "bad --minbytes '12x'");
  expect_one_line_error("bench --gemm-shape 8192x8192", "bad --gemm-shape '8192x8192'");
  expect_one_line_error("bench --iters 0", "--iters 0 is out of bounds: from 1 to 1000000");
  expect_one_line_error("tune --workload matmul", "unknown workload 'matmul'");
}

TEST(BenchCliErrors, NoGpuVisibleIsAClearError) {
  expect_one_line_error("bench", "no GPU visible");
  expect_one_line_error("tune", "no GPU visible");
}

// --trace takes microbenchmarks too: validation lets it through and only the missing GPU stops it.
TEST(BenchCliErrors, TraceOfAMicrobenchmarkPassesValidation) {
  expect_one_line_error("bench --workload gemm --trace " + ::testing::TempDir() + "/t.json", "no GPU visible");
}

TEST(BenchCliErrors, UnknownOptionIsRejectedByTheParser) {
  const Result r = run("bench --frobnicate");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--frobnicate"), std::string::npos) << r.output;
}
