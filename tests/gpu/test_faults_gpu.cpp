// Faults lose nothing and hang nothing (issue 18, item 4): a `tandem bench` job of two ranks, one
// process each, started by mpirun, by torchrun, and by hand with torchrun's variables (no launcher
// to tear the job down: tandem alone must), with one rank made to fail:
//   kill    rank 1 is SIGKILLed while the ranks run collectives;
//   stall   rank 1 is SIGSTOPped there (and SIGKILLed only once rank 0 has exited);
//   absent  rank 1 never joins (its process runs, but never starts tandem).
// Rank 0 must exit within --timeout (+ kExitMargin) with a non-zero status and a message naming
// rank 1: its own (tandem names a peer it can see has exited or stopped, or that never joined), or,
// under a launcher that tore the job down first, the launcher's report of rank 1's death. Without a
// launcher, only rank 0's own message counts.
//
// Every rank runs through a small wrapper (written by the test) that records its pid, its exit
// status and its output, so the test can signal the real rank process and see each rank's end. With
// one GPU both ranks share it (--allow-shared-gpu: NCCL then connects them over sockets); with two,
// each has its own. Skipped without a GPU, and per launcher when mpirun or torchrun is not on PATH.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "gpu_test_util.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTimeoutSeconds = 15;  // the job's --timeout
// Rank 0 may exit this long after --timeout has run out: aborting NCCL, freeing the GPU, exiting.
constexpr int kExitMargin = 20;
// When rank 1 never joins, rank 0's wait starts only once it has started (CUDA, NCCL): more margin.
constexpr int kStartupMargin = 30;

enum class Launcher { Mpirun, Torchrun, Plain };
enum class Fault { Kill, Stall, Absent };

const char* to_string(Launcher l) {
  return l == Launcher::Mpirun ? "mpirun" : l == Launcher::Torchrun ? "torchrun" : "plain";
}
const char* to_string(Fault f) { return f == Fault::Kill ? "kill" : f == Fault::Stall ? "stall" : "absent"; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<long> read_number(const std::string& path) {
  std::ifstream in(path);
  long value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

bool alive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

// The case's collectives: long enough that a fault lands while the ranks are measuring, short enough
// to end soon without one. Two GPUs talk over NVLink (fast); ranks sharing one GPU over sockets.
std::string bench_arguments(int gpus) {
  const std::string sizes = gpus >= 2 ? "-b 256M -n 3000" : "-b 16M -n 100";
  return "bench --workload stream --stream-bytes 1M --count 1 --warmup 1 " + sizes +
         " -p concurrent,priority,comm-first,comm-first+priority --allow-shared-gpu --timeout " +
         std::to_string(kTimeoutSeconds);
}

// A job in its own process group, with its wrapper and its per-rank files in a fresh directory.
class Job {
 public:
  Job(Launcher launcher, Fault fault) {
    std::string pattern = ::testing::TempDir() + "/tandem-fault-XXXXXX";
    dir_ = mkdtemp(pattern.data()) ? pattern : ::testing::TempDir();
    write_wrapper(fault == Fault::Absent ? "1" : "none");
    const std::string rank = dir_ + "/rank.sh";
    const std::string args = bench_arguments(tandem_test::gpu_count());
    std::string command;
    switch (launcher) {
      case Launcher::Mpirun:
        command = "exec mpirun -np 2 --allow-run-as-root --oversubscribe " + rank + " " + args;
        break;
      case Launcher::Torchrun:
        command = "exec torchrun --standalone --nproc-per-node 2 --no-python " + rank + " " + args;
        break;
      case Launcher::Plain: {
        // A port of its own per job: with MASTER_ADDR, it keys the rendezvous directory.
        static int jobs = 0;
        const std::string port = std::to_string(21000 + getpid() % 2000 * 10 + jobs++ % 10);
        for (int r = 0; r < 2; ++r)
          command += "RANK=" + std::to_string(r) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(r) +
                     " LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " " + rank + " " + args + " & ";
        command += "wait";
        break;
      }
    }
    started_ = Clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);  // the whole job can be ended at once if it outlives the test's patience
      const int log = open((dir_ + "/job.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
      execl("/bin/bash", "bash", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid_, pid_);
  }

  ~Job() {
    // Nothing this job started outlives the test: a stopped rank is killed (SIGKILL ends a stopped
    // process too), and so is the launcher's process group.
    for (int r = 0; r < 2; ++r)
      if (const auto pid = rank_pid(r); pid && alive(*pid)) kill(*pid, SIGKILL);
    if (!exit_status_) {
      kill(-pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }

  Clock::time_point started() const { return started_; }
  std::optional<pid_t> rank_pid(int r) const {
    const auto n = read_number(dir_ + "/pid." + std::to_string(r));
    return n ? std::optional<pid_t>(static_cast<pid_t>(*n)) : std::nullopt;
  }
  std::optional<int> rank_status(int r) const {
    const auto n = read_number(dir_ + "/rc." + std::to_string(r));
    return n ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
  }
  std::string rank_log(int r) const { return read_file(dir_ + "/log." + std::to_string(r)); }
  std::string job_log() const { return read_file(dir_ + "/job.log"); }

  // The launcher's exit status once it has ended (it is reaped here), else nullopt.
  std::optional<int> exit_status() {
    if (exit_status_) return exit_status_;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_)
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_status_;
  }

  // Everything, for a failure message.
  std::string describe() const {
    std::string out = "job log:\n" + job_log();
    for (int r = 0; r < 2; ++r) out += "\nrank " + std::to_string(r) + " log:\n" + rank_log(r);
    return out;
  }

 private:
  // rank.sh: runs `tandem` for this rank in the background (so that it, not the wrapper, is the
  // rank's process), records its pid, forwards the launcher's signals to it, and records its exit
  // status; the rank named by `absent` sleeps instead of starting tandem.
  void write_wrapper(const std::string& absent) {
    const std::string path = dir_ + "/rank.sh";
    std::ofstream out(path);
    out << "#!/bin/bash\n"
        << "rank=${OMPI_COMM_WORLD_RANK:-${RANK:-x}}\n"
        << "dir='" << dir_ << "'\n"
        << "if [ \"$rank\" = '" << absent << "' ]; then echo $$ > \"$dir/pid.$rank\"; exec sleep 600; fi\n"
        << "'" << tandem_test::cli_path() << "' \"$@\" > \"$dir/log.$rank\" 2>&1 &\n"
        << "child=$!\n"
        << "echo $child > \"$dir/pid.$rank.tmp\" && mv \"$dir/pid.$rank.tmp\" \"$dir/pid.$rank\"\n"
        << "trap 'kill -TERM $child 2> /dev/null' TERM INT HUP\n"
        // wait returns early (above 128) when a trapped signal arrives: wait again until reaped.
        << "while :; do wait $child; rc=$?; kill -0 $child 2> /dev/null || break; done\n"
        << "echo $rc > \"$dir/rc.$rank.tmp\" && mv \"$dir/rc.$rank.tmp\" \"$dir/rc.$rank\"\n"
        // Die as the rank died, so that the launcher reports the signal.
        << "if [ $rc -gt 128 ]; then trap - TERM INT HUP; kill -$((rc - 128)) $$; fi\n"
        << "exit $rc\n";
    out.close();
    chmod(path.c_str(), 0755);
  }

  std::string dir_;
  pid_t pid_ = -1;
  Clock::time_point started_;
  std::optional<int> exit_status_;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Polls `done` every 20 ms until it holds or `limit_s` has passed since `from`.
template <class Done>
bool wait_until(Done done, Clock::time_point from, double limit_s) {
  while (!done()) {
    if (seconds_since(from) > limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Rank 0's own words for a lost rank 1 (ranks/peer_processes.h, the rendezvous, the MPI bootstrap).
const std::regex kSurvivorNamesRank1(
    R"(rank 1 \(pid [0-9]+\) (has exited|is stopped)|rank 1 did not join|rank 1 did not reach)");
// A launcher's report of rank 1's death: mpirun ("process rank 1 with PID", "[[job,1],1]") or
// torchrun's failure summary ("rank       : 1 (local_rank: 1)").
const std::regex kLauncherNamesRank1(R"(process rank 1 with PID|\[\[[0-9]+,[0-9]+\],1\]|rank\s*:\s*1 \(local_rank)");

bool launcher_available(Launcher l) {
  if (l == Launcher::Plain) return true;
  return tandem_test::run_command(std::string("command -v ") + to_string(l)).exit_code == 0;
}

struct FaultCase {
  Launcher launcher;
  Fault fault;
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << to_string(c.launcher) << " " << to_string(c.fault); }

class Faults : public ::testing::TestWithParam<FaultCase> {};

TEST_P(Faults, OtherRankExitsInTimeNamingTheLostRank) {
  TANDEM_REQUIRE_GPUS(1);
  const auto [launcher, fault] = GetParam();
  if (!launcher_available(launcher)) GTEST_SKIP() << to_string(launcher) << " is not on PATH";
  Job job(launcher, fault);

  Clock::time_point fault_at = job.started();
  double limit = kTimeoutSeconds + kExitMargin + kStartupMargin;
  if (fault != Fault::Absent) {
    // Once rank 0 reports the second policy, the baselines are done and collectives are running.
    const bool measuring = wait_until(
        [&] { return job.rank_pid(1) && job.rank_log(0).find("[2/4]") != std::string::npos; }, job.started(), 300);
    ASSERT_TRUE(measuring) << "the job never reached its measurements (or took over 300 s):\n" << job.describe();
    ASSERT_FALSE(job.exit_status()) << "the job ended before the fault could be injected:\n" << job.describe();
    ASSERT_EQ(kill(*job.rank_pid(1), fault == Fault::Kill ? SIGKILL : SIGSTOP), 0);
    fault_at = Clock::now();
    limit = kTimeoutSeconds + kExitMargin;
  }

  const bool rank0_ended = wait_until([&] { return job.rank_status(0).has_value(); }, fault_at, limit);
  const double took = seconds_since(fault_at);
  // A stall ends once rank 0 is gone: the stopped rank is killed, as an operator would.
  if (const auto victim = job.rank_pid(1); victim && fault != Fault::Kill) kill(*victim, SIGKILL);
  const bool job_ended = wait_until([&] { return job.exit_status().has_value(); }, Clock::now(), 90);

  ASSERT_TRUE(rank0_ended) << "rank 0 still running " << limit << " s after the " << to_string(fault) << ":\n"
                           << job.describe();
  std::cout << "[          ] " << to_string(launcher) << "/" << to_string(fault) << ": rank 0 exited with status "
            << *job.rank_status(0) << " " << took << " s after the fault\n";
  EXPECT_LE(took, limit);
  EXPECT_NE(*job.rank_status(0), 0) << job.describe();
  const bool survivor_named = std::regex_search(job.rank_log(0), kSurvivorNamesRank1);
  const bool launcher_named = std::regex_search(job.job_log(), kLauncherNamesRank1);
  // Without a launcher, tandem alone must name rank 1; a launcher that tore the job down (killing
  // rank 0 before it could see the loss itself) names it in its own report.
  if (launcher == Launcher::Plain)
    EXPECT_TRUE(survivor_named) << "rank 0's message does not name rank 1:\n" << job.describe();
  else
    EXPECT_TRUE(survivor_named || launcher_named) << "neither rank 0 nor " << to_string(launcher) << " named rank 1:\n"
                                                  << job.describe();
  std::cout << "[          ] rank 1 named by "
            << (survivor_named   ? "rank 0"
                : launcher_named ? "the launcher"
                                 : "nobody")
            << "\n";
  EXPECT_TRUE(job_ended) << "the launcher did not exit within 90 s of rank 0:\n" << job.describe();
  if (launcher != Launcher::Plain && job_ended) EXPECT_NE(*job.exit_status(), 0) << job.describe();
}

std::string case_name(const ::testing::TestParamInfo<FaultCase>& info) {
  return std::string(to_string(info.param.launcher)) + "_" + to_string(info.param.fault);
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, Faults,
    ::testing::Values(FaultCase{Launcher::Mpirun, Fault::Kill}, FaultCase{Launcher::Mpirun, Fault::Stall},
                      FaultCase{Launcher::Mpirun, Fault::Absent}, FaultCase{Launcher::Torchrun, Fault::Kill},
                      FaultCase{Launcher::Torchrun, Fault::Stall}, FaultCase{Launcher::Torchrun, Fault::Absent},
                      FaultCase{Launcher::Plain, Fault::Kill}, FaultCase{Launcher::Plain, Fault::Stall},
                      FaultCase{Launcher::Plain, Fault::Absent}),
    case_name);

}  // namespace
