// The input reproducers of issue 18 against the built `tandem`, with no GPU visible: each bad input
// is refused before any work, with a non-zero exit and one printable, bounded line naming the value
// (no source location), and no result file is created.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "scratch_folder.h"

extern char** environ;

namespace {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs tandem with `args` exactly as given (no shell: any byte reaches it) and `extra_env` added.
Result run(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> env_strings = {"CUDA_VISIBLE_DEVICES="};  // the "no GPU" path on every machine
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0) env_strings.push_back(*e);
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {TANDEM_CLI_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int fds[2];
  Result r;
  if (pipe(fds) != 0) return r;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    return r;
  }
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) r.output.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A user's error: non-zero exit, exactly one line "tandem: error: ..." containing `expected`, every
// byte printable ASCII or UTF-8 (no ESC, no other control character), no "[file.cpp:line]".
void expect_user_error(const std::vector<std::string>& args, const std::string& expected,
                       const std::vector<std::string>& env = {}) {
  std::string shown;
  for (const auto& a : args) shown += a + " ";
  const Result r = run(args, env);
  EXPECT_NE(r.exit_code, 0) << shown;
  EXPECT_TRUE(has(r.output, expected)) << shown << "\n" << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << shown << "\n" << r.output;
  EXPECT_EQ(r.output.rfind("tandem: error: ", 0), 0u) << r.output;
  EXPECT_FALSE(has(r.output, ".cpp:")) << "a user's error names no source location: " << r.output;
  for (unsigned char c : r.output)
    EXPECT_TRUE(c == '\n' || c >= 0x20) << "control byte " << int(c) << " in " << r.output;
  // Every check ran before the GPU count: none of these got as far as "no GPU visible".
  EXPECT_FALSE(has(r.output, "no GPU visible")) << r.output;
}

TEST(InputCli, SizesAreNotWrapped) {
  expect_user_error({"bench", "-b", "17179869185G"}, "bad --minbytes '17179869185G': too large");
  expect_user_error({"bench", "-e", "1T"}, "bad --maxbytes '1T'");
  expect_user_error({"bench", "--stream-bytes", "0"}, "--stream-bytes must be positive");
  expect_user_error({"bench", "--stream-bytes", "2048G"}, "bad --stream-bytes '2048G': too large");
}

TEST(InputCli, NumericFlagsHaveBounds) {
  expect_user_error({"bench", "-f", "1.0000000001"}, "--stepfactor 1 is out of bounds: from 1.01 to 1024");
  expect_user_error({"bench", "--timeout", "inf"}, "--timeout: is not a decimal number: inf");
  expect_user_error({"bench", "--timeout", "1e10"}, "--timeout 1e+10 is out of bounds");
  expect_user_error({"tune", "--timeout", "nan"}, "--timeout: is not a decimal number: nan");
  expect_user_error({"bench", "--timeout=-5"}, "--timeout -5 is out of bounds");
  expect_user_error({"bench", "--warmup=-1"}, "--warmup -1 is out of bounds");
  expect_user_error({"bench", "-c", "2"}, "--check 2: expected 1");
  expect_user_error({"bench", "--gpus", "70000"}, "--gpus 70000 is out of bounds");
  expect_user_error({"tune", "--show=-1"}, "--show -1 is out of bounds");
  expect_user_error({"bench", "--workload", "moe", "--top-k", "0"}, "--top-k 0 is out of bounds");
}

TEST(InputCli, TrailingJunkAndRepeatsAreRejected) {
  expect_user_error({"bench", "--gemm-shape", "1x1x1junk"}, "bad --gemm-shape '1x1x1junk'");
  expect_user_error({"bench", "--workload", "gemm,gemm"}, "--workload lists 'gemm' twice");
  expect_user_error({"bench", "--collective", "all-reduce,all-gather,all-reduce"},
                    "--collective lists 'all-reduce' twice");
  expect_user_error({"bench", "-p", "priority,concurrent,priority"}, "--policy lists 'priority' twice");
  // CLI11 parses the numbers; its errors read as one line too.
  expect_user_error({"bench", "--iters", "5junk"}, "5junk");
}

TEST(InputCli, LauncherWorldSizesAreBounded) {
  expect_user_error({"bench", "--timeout", "1"}, "WORLD_SIZE=20000000 is above 65536",
                    {"RANK=0", "WORLD_SIZE=20000000"});
  expect_user_error({"tune"}, "RANK=3 is not below WORLD_SIZE=2", {"RANK=3", "WORLD_SIZE=2"});
}

TEST(InputCli, MessagesArePrintableAndBounded) {
  const Result r = run({"bench", "--workload", "\x1b[31mred\x1b[0m"});
  EXPECT_TRUE(has(r.output, "unknown workload '\\x1b[31mred\\x1b[0m'")) << r.output;
  expect_user_error({"bench", "--workload", "\x1b[2J\nforged line"}, "unknown workload '\\x1b[2J\\nforged line'");
  expect_user_error({"bench", "--dtype", "\xff\xfe"}, "\\xff\\xfe");
  // A 100 000-character value is cut: the line stays a few hundred characters.
  const std::string huge(100000, 'A');
  const Result big = run({"bench", "--workload", huge});
  EXPECT_NE(big.exit_code, 0);
  EXPECT_LT(big.output.size(), 2500u) << big.output.size();
  EXPECT_TRUE(has(big.output, std::string(200, 'A') + "\u2026'")) << big.output.substr(0, 400);
  // Also for messages composed elsewhere (the policy parser, CLI11): bounded as a whole.
  const Result policy = run({"bench", "-p", "shape:3+" + huge});
  EXPECT_NE(policy.exit_code, 0);
  EXPECT_LT(policy.output.size(), 2500u) << policy.output.size();
  const Result cli11 = run({"bench", "--iters", huge});
  EXPECT_NE(cli11.exit_code, 0);
  EXPECT_LT(cli11.output.size(), 2500u) << cli11.output.size();
  EXPECT_EQ(std::count(cli11.output.begin(), cli11.output.end(), '\n'), 1) << cli11.output.substr(0, 300);
}

TEST(InputCli, UserErrorsFromParsersCarryNoSourceLocation) {
  expect_user_error({"bench", "--policy", "shape:3+prio"}, "unknown policy token 'prio'");
  expect_user_error({"bench", "--dtype", "int8"}, "unknown dtype 'int8'");
  expect_user_error({"bench", "--launch", "mpi"}, "OMPI_COMM_WORLD_RANK is not set");
  expect_user_error({"plan", "--gpu", "h9000", "--kernel", "threads=256,regs=32"}, "h9000");
  expect_user_error({"plan", "--gpu", "h200", "--kernel", "threads=256,regs=32,junk=1"}, "junk");
}

TEST(InputCli, NccltestsSpellingsAreAccepted) {
  // -w/--warmup_iters and -T are nccl-tests' warm-up and time-out flags; valid values get as far as the GPU count.
  for (const auto& args : std::vector<std::vector<std::string>>{{"bench", "-w", "3"},
                                                                {"bench", "--warmup_iters", "3"},
                                                                {"bench", "-T", "30"},
                                                                {"bench", "--datatype", "fp16"}}) {
    const Result r = run(args);
    EXPECT_TRUE(has(r.output, "no GPU visible")) << args[1] << "\n" << r.output;
  }
}

class InputCliFiles : public ::testing::Test {
 protected:
  tandem_test::ScratchFolder scratch_;
  const std::string dir_ = scratch_.str();
};

TEST_F(InputCliFiles, OutputPathsAreCheckedBeforeTheRun) {
  expect_user_error({"bench", "--json", dir_ + "/missing/r.json"},
                    "--json: cannot write '" + dir_ + "/missing/r.json'");
  expect_user_error({"bench", "--json", dir_}, "--json: cannot write '" + dir_ + "' is a folder");
  expect_user_error({"tune", "--out", dir_ + "/missing/t.policy"}, "--out: cannot write");
  expect_user_error({"tune", "--out", dir_ + "/same", "--json", dir_ + "/same"}, "name the same file");
  ASSERT_EQ(mkdir((dir_ + "/d").c_str(), 0700), 0);
  ASSERT_EQ(symlink("d", (dir_ + "/l").c_str()), 0);
  expect_user_error({"tune", "--out", dir_ + "/d/best", "--json", dir_ + "/l/best"}, "name the same file");
  expect_user_error({"bench", "--workload", "tp-mlp", "--trace", dir_ + "/missing/t.json"}, "--trace: cannot write");
  expect_user_error({"plan", "--gpu", "h200", "--kernel", "threads=256,regs=32", "--json", dir_ + "/missing/p.json"},
                    "--json: cannot write");
  ASSERT_EQ(symlink("/etc/passwd", (dir_ + "/link.json").c_str()), 0);
  expect_user_error({"bench", "--json", dir_ + "/link.json"}, "is a symbolic link");
  // A good path passes the check (and the run then stops at the GPU count), and nothing is created.
  const Result r = run({"bench", "--json", dir_ + "/r.json"});
  EXPECT_TRUE(has(r.output, "no GPU visible")) << r.output;
  EXPECT_NE(access((dir_ + "/r.json").c_str(), F_OK), 0);
}

TEST_F(InputCliFiles, PlanWritesItsJsonAtomically) {
  const std::string path = dir_ + "/plan.json";
  const Result r = run({"plan", "--gpu", "h200", "--kernel", "threads=256,regs=32", "--json", path});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  // No temporary file is left beside it.
  const Result ls = run({"plan", "--gpu", "h200", "--kernel", "threads=256,regs=32", "--json", path});
  ASSERT_EQ(ls.exit_code, 0);
  EXPECT_EQ(std::system(("test $(ls -A '" + dir_ + "' | wc -l) -eq 1").c_str()), 0);
}

}  // namespace
