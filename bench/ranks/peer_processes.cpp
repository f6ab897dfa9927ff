#include "ranks/peer_processes.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ranks/gpu_identity.h"
#include "tandem/error.h"

namespace tandem::bench {

namespace {

// The kernel's "exiting" task flag (PF_EXITING in include/linux/sched.h), field 9 of /proc/PID/stat.
constexpr unsigned long kExitingFlag = 0x4;

std::string pid_namespace() {
  char target[128] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string("?");
}

}  // namespace

PeerProcess this_process() {
  PeerProcess p;
  p.pid = static_cast<long>(getpid());
  p.where = this_machine().machine + " " + pid_namespace();
  return p;
}

std::string serialize(const PeerProcess& process) {
  std::string where = process.where;
  for (char& c : where)
    if (c == '\n' || c == '\r') c = ' ';
  return std::to_string(process.pid) + "\t" + where;
}

PeerProcess parse_peer_process(const std::string& text) {
  const size_t tab = text.find('\t');
  PeerProcess p;
  char* end = nullptr;
  errno = 0;
  const long pid = tab == std::string::npos ? 0 : std::strtol(text.c_str(), &end, 10);
  if (tab == std::string::npos || errno != 0 || end != text.c_str() + tab || pid <= 0)
    TANDEM_THROW("malformed process description from another rank: '" + text.substr(0, 80) + "'");
  p.pid = pid;
  p.where = text.substr(tab + 1);
  return p;
}

ProcessState process_state(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return ProcessState::Exited;
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may hold spaces and
  // parentheses, so the fields are counted from the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return ProcessState::Running;
  std::istringstream fields(line.substr(close + 1));
  char state = '?';
  long skipped = 0;
  unsigned long flags = 0;
  fields >> state;
  for (int i = 0; i < 5; ++i) fields >> skipped;  // ppid pgrp session tty_nr tpgid
  fields >> flags;
  if (state == 'Z' || state == 'X' || state == 'x' || (flags & kExitingFlag)) return ProcessState::Exited;
  if (state == 'T' || state == 't') return ProcessState::Stopped;
  return ProcessState::Running;
}

std::string describe_lost_peers(const std::vector<PeerProcess>& by_rank, int my_rank,
                                const std::function<ProcessState(long pid)>& state_of) {
  if (my_rank < 0 || static_cast<size_t>(my_rank) >= by_rank.size()) return "";
  const std::string& here = by_rank[static_cast<size_t>(my_rank)].where;
  std::string out;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    const PeerProcess& peer = by_rank[r];
    if (static_cast<int>(r) == my_rank || peer.where != here) continue;
    const ProcessState state = state_of(peer.pid);
    if (state == ProcessState::Running) continue;
    out += out.empty() ? "" : "; ";
    out += "rank " + std::to_string(r) + " (pid " + std::to_string(peer.pid) + ") " +
           (state == ProcessState::Exited ? "has exited" : "is stopped (SIGSTOP or a debugger)");
  }
  return out;
}

}  // namespace tandem::bench
