#include "ranks/file_rendezvous.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "tandem/deadline.h"
#include "tandem/error.h"
#include "tandem/safe_file.h"
#include "tandem/text.h"

namespace tandem::bench {

namespace {

using Clock = std::chrono::steady_clock;
// Key-value lines: "key rest of the line". Repeated keys (member, identity) keep every value.
using Fields = std::multimap<std::string, std::string>;

const char* const kMagic = "tandem-rendezvous 1";

std::string random_hex() {
  std::random_device device;
  std::mt19937_64 mix((uint64_t(device()) << 32) ^ device() ^ uint64_t(getpid()) ^
                      uint64_t(Clock::now().time_since_epoch().count()));
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%016llx%016llx", static_cast<unsigned long long>(mix()),
                static_cast<unsigned long long>(mix()));
  return buffer;
}

std::string hex_encode(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string hex_decode(const std::string& hex) {
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int hi = value(hex[i]), lo = value(hex[i + 1]);
    if (hi < 0 || lo < 0) TANDEM_THROW("malformed rendezvous payload");
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// The rendezvous folder carries NCCL's unique id, with which anyone can join the job's
// communicators, and the join files rank 0 trusts. Another user must neither read nor write it
// (tandem/safe_file.h: make_private_folder).
void make_private_folders(const std::string& dir) {
  make_private_folder(dir, {"rendezvous folder", "read this job's NCCL id", "choose another folder with --rendezvous"});
}

// Every file is created beside its final name under a fresh O_EXCL name and renamed: a reader sees
// the old file, the new one, or none (tandem/safe_file.h).
void write_atomically(const std::string& dir, const std::string& name, const std::string& text) {
  write_file_atomically(dir + "/" + name, std::string(kMagic) + "\n" + text);
}

// Empty when the file is missing or is not ours.
Fields read_fields(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  Fields out;
  if (!std::getline(in, line) || line != kMagic) return out;
  while (std::getline(in, line)) {
    const auto space = line.find(' ');
    out.emplace(line.substr(0, space), space == std::string::npos ? "" : line.substr(space + 1));
  }
  return out;
}

std::string field(const Fields& f, const std::string& key) {
  auto it = f.find(key);
  return it == f.end() ? "" : it->second;
}

int int_field(const Fields& f, const std::string& key) {
  try {
    return std::stoi(field(f, key));
  } catch (...) {
    return -1;
  }
}

// "member 3 abcd" lines as rank -> value.
std::map<int, std::string> ranked(const Fields& f, const std::string& key) {
  std::map<int, std::string> out;
  auto range = f.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    const auto space = it->second.find(' ');
    try {
      out[std::stoi(it->second.substr(0, space))] = space == std::string::npos ? "" : it->second.substr(space + 1);
    } catch (...) {
    }
  }
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t k = 0; k < ranks.size(); ++k)
    out += (k == 0 ? "" : k + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[k]);
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

std::vector<int> join_files_present(const std::string& dir, int world_size) {
  // Ranks beyond this world are looked for too: a rank with a larger world size must hear that it
  // does not match. A few beyond suffice; stale files of a larger old run are harmless (they never
  // acknowledge).
  std::vector<int> out;
  for (int r = 1; r < world_size + 64; ++r)
    if (access((dir + "/join." + std::to_string(r)).c_str(), F_OK) == 0) out.push_back(r);
  return out;
}

struct Joined {
  std::string nonce;
  std::string identity;
};

class RankZero {
 public:
  RankZero(const FileRendezvousOptions& o, const std::string& payload) : o_(o), payload_hex_(hex_encode(payload)) {}

  FileRendezvousResult run(const std::function<std::string(const std::vector<std::string>&)>& verdict) {
    const Deadline deadline = deadline_after(o_.timeout_s);
    for (;;) {
      std::map<int, Joined> joined;
      for (int r : join_files_present(o_.dir, o_.world_size)) {
        const Fields f = read_fields(o_.dir + "/join." + std::to_string(r));
        if (!field(f, "nonce").empty()) joined[r] = {field(f, "nonce"), field(f, "identity")};
      }
      std::vector<int> missing;
      for (int r = 1; r < o_.world_size; ++r) {
        const Fields ack = read_fields(o_.dir + "/ack." + std::to_string(r));
        const auto j = joined.find(r);
        const bool current =
            j != joined.end() && field(ack, "session") == session_ && field(ack, "nonce") == j->second.nonce;
        if (!current) {
          missing.push_back(r);
          continue;
        }
        const int theirs = int_field(ack, "world_size");
        if (theirs != o_.world_size)
          fail(joined, "rank " + std::to_string(r) + " was started with a world size of " + std::to_string(theirs) +
                           " but rank 0 with " + std::to_string(o_.world_size) +
                           ": every rank must come from one launch of the same size");
      }
      // Ranks beyond the world that acknowledged: a larger world elsewhere.
      for (const auto& [r, j] : joined) {
        if (r < o_.world_size) continue;
        const Fields ack = read_fields(o_.dir + "/ack." + std::to_string(r));
        if (field(ack, "session") == session_ && field(ack, "nonce") == j.nonce)
          fail(joined, "rank " + std::to_string(r) + " joined with a world size of " + field(ack, "world_size") +
                           " but rank 0 has " + std::to_string(o_.world_size));
      }
      if (missing.empty()) {
        std::vector<std::string> identities{o_.identity};
        for (int r = 1; r < o_.world_size; ++r) identities.push_back(joined[r].identity);
        const std::string why = verdict ? verdict(identities) : "";
        if (!why.empty()) fail(joined, why);
        publish(joined, "ok", "", {}, identities);
        return {hex_decode(payload_hex_), identities};
      }
      if (Clock::now() > deadline)
        fail(joined, rank_list(missing) + " did not join the rendezvous in " + o_.dir + " within " +
                         number(o_.timeout_s) + " s (--timeout)" + o_.hint);
      publish(joined, "pending", "", missing, {});
      std::this_thread::sleep_for(std::chrono::duration<double>(o_.poll_s));
    }
  }

 private:
  [[noreturn]] void fail(const std::map<int, Joined>& joined, const std::string& message) {
    // Tell the ranks that did join, so they stop with the same message instead of timing out.
    try {
      publish(joined, "error", message, {}, {});
    } catch (...) {
    }
    TANDEM_THROW(message);
  }

  void publish(const std::map<int, Joined>& joined, const std::string& status, const std::string& message,
               const std::vector<int>& waiting, const std::vector<std::string>& identities) {
    std::ostringstream text;
    text << "session " << session_ << "\nworld_size " << o_.world_size << "\nstatus " << status << "\n";
    if (!message.empty()) text << "message " << message << "\n";
    if (!waiting.empty()) text << "waiting " << rank_list(waiting) << "\n";
    for (const auto& [r, j] : joined) text << "member " << r << " " << j.nonce << "\n";
    for (size_t r = 0; r < identities.size(); ++r) text << "identity " << r << " " << identities[r] << "\n";
    text << "payload " << payload_hex_ << "\n";
    // Rewritten only when it changes: readers poll it.
    if (text.str() == last_published_) return;
    write_atomically(o_.dir, "id", text.str());
    last_published_ = text.str();
  }

  const FileRendezvousOptions& o_;
  std::string payload_hex_;
  std::string session_ = random_hex();
  std::string last_published_;
};

FileRendezvousResult join_as_other(const FileRendezvousOptions& o) {
  const std::string nonce = random_hex();
  const std::string me = std::to_string(o.rank);
  write_atomically(o.dir, "join." + me,
                   "rank " + me + "\nworld_size " + std::to_string(o.world_size) + "\nnonce " + nonce + "\nidentity " +
                       o.identity + "\n");
  // A little longer than rank 0, so that rank 0's verdict on missing ranks arrives first.
  const double patience = o.timeout_s + std::min(5.0, 2.0 + o.timeout_s / 10);
  const Deadline deadline = deadline_after(patience);
  std::string acked_session, waiting;
  bool listed = false;
  for (;;) {
    const Fields id = read_fields(o.dir + "/id");
    // Only a file that lists this process's nonce comes from this run's rank 0.
    if (ranked(id, "member")[o.rank] == nonce) {
      listed = true;
      const std::string session = field(id, "session");
      if (session != acked_session) {
        write_atomically(
            o.dir, "ack." + me,
            "session " + session + "\nnonce " + nonce + "\nworld_size " + std::to_string(o.world_size) + "\n");
        acked_session = session;
      }
      const int theirs = int_field(id, "world_size");
      if (theirs != o.world_size)
        TANDEM_THROW("rank " + me + " was started with a world size of " + std::to_string(o.world_size) +
                     " but rank 0 with " + std::to_string(theirs) +
                     ": every rank must come from one launch of the same size");
      const std::string status = field(id, "status");
      if (status == "error") TANDEM_THROW("rank 0 stopped the rendezvous: " + field(id, "message"));
      if (status == "ok") {
        FileRendezvousResult out;
        out.payload = hex_decode(field(id, "payload"));
        for (const auto& [r, text] : ranked(id, "identity")) {
          if (r != static_cast<int>(out.identities.size())) TANDEM_THROW("malformed rendezvous file " + o.dir + "/id");
          out.identities.push_back(text);
        }
        if (static_cast<int>(out.identities.size()) != o.world_size)
          TANDEM_THROW("malformed rendezvous file " + o.dir + "/id");
        return out;
      }
      waiting = field(id, "waiting");
    }
    if (Clock::now() > deadline) {
      if (!listed)
        TANDEM_THROW("rank " + me + ": rank 0 did not answer in " + o.dir + " within " + number(o.timeout_s) +
                     " s (--timeout): it was not started, failed "
                     "before the rendezvous, or uses another rendezvous directory" +
                     o.hint);
      TANDEM_THROW("rank " + me + ": the rendezvous in " + o.dir + " did not complete within " + number(o.timeout_s) +
                   " s (--timeout); rank 0 was waiting for " +
                   (waiting.empty() ? std::string("other ranks") : waiting) + o.hint);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
}

}  // namespace

FileRendezvousResult file_rendezvous(const FileRendezvousOptions& options, const std::string& payload,
                                     const std::function<std::string(const std::vector<std::string>&)>& verdict) {
  TANDEM_REQUIRE(
      options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
      "rendezvous: rank " + std::to_string(options.rank) + " outside a world of " + std::to_string(options.world_size));
  TANDEM_REQUIRE(options.identity.find('\n') == std::string::npos, "rendezvous: identity must be one line");
  make_private_folders(options.dir);
  if (options.rank == 0) return RankZero(options, payload).run(verdict);
  return join_as_other(options);
}

void remove_rendezvous_files(const std::string& dir, int world_size) noexcept {
  std::remove((dir + "/id").c_str());
  for (int r = 1; r < world_size; ++r) {
    std::remove((dir + "/join." + std::to_string(r)).c_str());
    std::remove((dir + "/ack." + std::to_string(r)).c_str());
  }
  rmdir(dir.c_str());
}

}  // namespace tandem::bench
