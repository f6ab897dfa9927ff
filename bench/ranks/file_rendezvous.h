#pragma once
// Ranks of separate processes meet in a directory they all can read (/tmp on one node, a shared file
// system across nodes): rank 0 publishes a payload (the NCCL unique id) and every rank learns every
// other rank's identity. Pure C++ file logic, CPU-tested.
//
// The directory may hold files from an earlier run that crashed, so nothing is trusted by name
// alone. Every process draws a random nonce; rank 0 a random session id:
//   rank r > 0 writes join.<r> = {world size, nonce, identity};
//   rank 0 writes id = {session, world size, payload, the nonce of every join file it sees, status};
//   rank r, once id lists its own nonce (so id is from this run's rank 0), writes ack.<r> =
//   {session, nonce, world size};
//   rank 0, once every rank 1..W-1 has acknowledged this session with its current nonce, checks the
//   world sizes and the caller's verdict and publishes status ok (with all identities) or error.
// Every file is written to a temporary name and renamed, so a reader sees all of it or nothing.
// Nobody waits past the timeout: rank 0 then names the ranks that never joined (and tells those
// that did), the others name rank 0 when it never answered.
#include <functional>
#include <string>
#include <vector>

namespace tandem::bench {

struct FileRendezvousOptions {
  std::string dir;  // created if missing
  int rank = 0;
  int world_size = 1;    // as this rank's launcher says; every rank must agree
  std::string identity;  // this rank's, one line (gpu_identity.h's serialize)
  double timeout_s = 120;
  double poll_s = 0.01;
  std::string hint;  // appended to time-out messages (e.g. how the directory was chosen)
};

struct FileRendezvousResult {
  std::string payload;                  // rank 0's
  std::vector<std::string> identities;  // by rank
};

// Rank 0 passes `payload`; the others pass "". On rank 0, `verdict` sees every rank's identity once
// all have joined and returns "" to go on or an error message that every rank then throws.
// Throws tandem::Error on a time-out, mismatched world sizes or a negative verdict.
FileRendezvousResult file_rendezvous(const FileRendezvousOptions& options, const std::string& payload,
                                     const std::function<std::string(const std::vector<std::string>&)>& verdict);

// Rank 0, once every rank has used the result (all are in the NCCL communicator): removes the files
// and the directory if it is then empty. Never throws.
void remove_rendezvous_files(const std::string& dir, int world_size) noexcept;

}  // namespace tandem::bench
