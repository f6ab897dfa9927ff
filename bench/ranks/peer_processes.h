#pragma once
// Which rank was lost, when a run of one process per rank fails. A collective that times out, or an
// NCCL transport error, cannot say which peer went missing; the process table can. When the ranks
// first meet, each learns every other rank's pid and where it runs (machine and pid namespace). After
// a failure, a rank looks at the peers it can see (same machine, same pid namespace) and names those
// that have exited or are stopped. Peers elsewhere are not named: only their own errors say why.
// Pure C++ (reads /proc), CPU-tested.
#include <functional>
#include <string>
#include <vector>

namespace tandem::bench {

struct PeerProcess {
  long pid = 0;
  std::string where;  // machine (hostname and boot id) and pid namespace
};

// This process.
PeerProcess this_process();
// One line for the exchange between ranks; parse throws tandem::Error on malformed text.
std::string serialize(const PeerProcess& process);
PeerProcess parse_peer_process(const std::string& text);

enum class ProcessState { Running, Stopped, Exited };
// From /proc/<pid>/stat: Exited when the pid is gone, a zombie, or already exiting (its sockets
// close before it is a zombie, so a peer can see the failure first); Stopped for SIGSTOP or a tracer.
ProcessState process_state(long pid);

// "" when no visible peer is lost; else e.g. "rank 1 (pid 4242) has exited; rank 3 (pid 4250) is
// stopped (SIGSTOP or a debugger)". `by_rank` holds every rank's process; `my_rank`'s own is skipped.
std::string describe_lost_peers(const std::vector<PeerProcess>& by_rank, int my_rank,
                                const std::function<ProcessState(long pid)>& state_of = process_state);

}  // namespace tandem::bench
