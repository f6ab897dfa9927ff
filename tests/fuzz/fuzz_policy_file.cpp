// Policy files read through '@FILE' (parse_policy("@path"), load_policy_file):
// the input is the file's content. No content crashes or hangs the reader,
// every refusal is a tandem::Error, the two entry points agree, and an accepted
// policy survives the round trip through its canonical text.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "policy_round_trip.h"
#include "tandem/error.h"
#include "tandem/policy.h"

namespace {

// $TMPDIR, else memory (/dev/shm): rewriting a file on disk per input is 10x
// slower.
std::string scratch_folder() {
  const char* tmp = std::getenv("TMPDIR");
  if (tmp && *tmp) return tmp;
  return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

// One private folder per fuzzing process, removed at exit; the file in it is
// rewritten per input.
struct PolicyFile {
  std::string folder;
  std::string path;
  PolicyFile() {
    std::string pattern = scratch_folder() + "/tandem-fuzz-policy-XXXXXX";
    if (!mkdtemp(pattern.data())) std::abort();
    folder = pattern;
    path = folder + "/input.policy";
  }
  ~PolicyFile() {
    unlink(path.c_str());
    rmdir(folder.c_str());
  }
  void write(const uint8_t* data, size_t size) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const PolicyFile file;
  file.write(data, size);
  const std::string content = tandem_fuzz::text_of(data, size);

  bool via_at_accepted = false;
  tandem::OverlapPolicy via_at;
  try {
    via_at = tandem::parse_policy("@" + file.path);
    via_at_accepted = true;
    tandem_fuzz::check_policy_round_trip(via_at, content);
  } catch (const tandem::Error&) {
  }

  try {
    const tandem::OverlapPolicy loaded = tandem::load_policy_file(file.path);
    FUZZ_CHECK(via_at_accepted && loaded == via_at, "load_policy_file and '@FILE' agree on '" + content + "'");
  } catch (const tandem::Error&) {
    FUZZ_CHECK(!via_at_accepted, "load_policy_file and '@FILE' agree on '" + content + "'");
  }

  // The same file as an item of a list, beside a plain policy.
  try {
    const std::vector<tandem::OverlapPolicy> list = tandem::parse_policy_list("priority, @" + file.path);
    FUZZ_CHECK(via_at_accepted && list.size() == 2 && list[1] == via_at,
               "'@FILE' in a list reads as alone: '" + content + "'");
  } catch (const tandem::Error&) {
    FUZZ_CHECK(!via_at_accepted, "'@FILE' in a list reads as alone: '" + content + "'");
  }
  return 0;
}
