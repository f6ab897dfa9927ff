// Naming the lost rank after a failure (ranks/peer_processes.h): the exchange format, which peers
// are looked at, and the process states read from /proc on real processes (a child that runs, is
// stopped with SIGSTOP, is killed and reaped).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "error_of.h"
#include "ranks/peer_processes.h"

namespace tandem::bench {
namespace {

TEST(PeerProcesses, ExchangeFormatRoundTrips) {
  const PeerProcess me = this_process();
  EXPECT_EQ(me.pid, static_cast<long>(getpid()));
  EXPECT_FALSE(me.where.empty());
  EXPECT_EQ(this_process().where, me.where);
  const PeerProcess back = parse_peer_process(serialize(me));
  EXPECT_EQ(back.pid, me.pid);
  EXPECT_EQ(back.where, me.where);
  // A line break in `where` cannot split the exchanged line.
  EXPECT_EQ(parse_peer_process(serialize({12, "a\nb"})).where, "a b");
}

TEST(PeerProcesses, MalformedDescriptionsAreRefused) {
  for (const char* bad : {"", "12", "x\thost", "-3\thost", "0\thost", "12x\thost", "99999999999999999999\thost"})
    EXPECT_NE(tandem_test::error_of([&] { parse_peer_process(bad); }).find("malformed process description"),
              std::string::npos)
        << bad;
}

TEST(PeerProcesses, NamesExitedAndStoppedPeersWhereThisRankCanSeeThem) {
  const std::vector<PeerProcess> ranks = {
      {100, "m1 ns1"}, {101, "m1 ns1"}, {102, "m2 ns1"}, {103, "m1 ns1"}, {104, "m1 ns2"}};
  std::map<long, ProcessState> states = {{100, ProcessState::Exited},  // rank 0 is "me": never named
                                         {101, ProcessState::Exited},
                                         {102, ProcessState::Exited},  // another machine: not looked at
                                         {103, ProcessState::Stopped},
                                         {104, ProcessState::Stopped}};  // another pid namespace
  std::vector<long> asked;
  const auto state_of = [&](long pid) {
    asked.push_back(pid);
    return states.at(pid);
  };
  EXPECT_EQ(describe_lost_peers(ranks, 0, state_of),
            "rank 1 (pid 101) has exited; rank 3 (pid 103) is stopped (SIGSTOP or a debugger)");
  EXPECT_EQ(asked, (std::vector<long>{101, 103}));
  states[101] = states[103] = ProcessState::Running;
  EXPECT_EQ(describe_lost_peers(ranks, 0, state_of), "");
  // Rank 2 sees no peer on its machine; a rank outside the list sees nothing.
  EXPECT_EQ(describe_lost_peers(ranks, 2, state_of), "");
  EXPECT_EQ(describe_lost_peers(ranks, 7, state_of), "");
  EXPECT_EQ(describe_lost_peers({}, 0, state_of), "");
}

// Polls until `pid` reaches `wanted` (the kernel updates the state asynchronously to the signal).
bool reaches(long pid, ProcessState wanted) {
  for (int i = 0; i < 500; ++i) {
    if (process_state(pid) == wanted) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(PeerProcesses, ReadsRealProcessStates) {
  EXPECT_EQ(process_state(getpid()), ProcessState::Running);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) pause();
  }
  EXPECT_TRUE(reaches(child, ProcessState::Running));
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  EXPECT_TRUE(WIFSTOPPED(status));
  EXPECT_TRUE(reaches(child, ProcessState::Stopped));
  EXPECT_EQ(describe_lost_peers({this_process(), {child, this_process().where}}, 0),
            "rank 1 (pid " + std::to_string(child) + ") is stopped (SIGSTOP or a debugger)");
  ASSERT_EQ(kill(child, SIGCONT), 0);
  EXPECT_TRUE(reaches(child, ProcessState::Running));
  ASSERT_EQ(kill(child, SIGKILL), 0);
  // Killed but not yet reaped: a zombie, already lost.
  EXPECT_TRUE(reaches(child, ProcessState::Exited));
  EXPECT_EQ(describe_lost_peers({{child, this_process().where}, this_process()}, 1),
            "rank 0 (pid " + std::to_string(child) + ") has exited");
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  // Reaped: the pid is gone.
  EXPECT_EQ(process_state(child), ProcessState::Exited);
}

}  // namespace
}  // namespace tandem::bench
