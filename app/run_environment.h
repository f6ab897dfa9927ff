#pragma once
// What `tandem run` puts in its child's environment: LD_PRELOAD with the interposer first and the
// TANDEM_* variables from its options (exactly those: unset options clear inherited values). No
// NCCL_* variable: the interposer applies the policy's nccl-* tokens through ncclConfig_t when the
// program creates a communicator (preload/nccl_hooks.cpp), and a user's own NCCL_* variables, which
// NCCL lets override a configuration, keep the last word.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/policy.h"

namespace tandem::cli {

struct RunOptions {
  std::string policy;  // as given: policy text or @FILE (default: the interposer's default)
  std::string log_level;
  std::vector<std::string> include;  // glob patterns
  std::vector<std::string> exclude;
  std::string stats_file;            // "" for none
  bool timeline = false;             // --timeline (run_timeline.h)
  std::string trace_file;            // --trace FILE, "" for none
  std::string step_range;            // --step-range PATTERN, "" for none
  std::string timeline_json;         // --timeline-json FILE, "" for none
  std::vector<std::string> command;  // CMD ARGS...
};

// A variable to set (value) or to remove (nullopt) in the child.
using EnvChange = std::pair<std::string, std::optional<std::string>>;

// The interposer library: TANDEM_PRELOAD_LIB, else <dir of this executable>/../lib (or ../lib64).
// Throws tandem::Error naming the places it looked.
std::string locate_preload_library();

// The policy as `tandem run` can apply it to an unmodified program; an @FILE is read here, once.
// Throws tandem::Error for a bad policy or file and for tokens that need the program's cooperation
// (run_refusal in tandem/policy.h, from the token table).
OverlapPolicy policy_for_run(const std::string& text);

// `existing_ld_preload` is the parent's LD_PRELOAD (nullptr if unset).
std::vector<EnvChange> child_environment(const RunOptions&, const std::string& library,
                                         const char* existing_ld_preload);

// The folder for temporary files, absolute: $TMPDIR when set and not empty, else /tmp. Throws
// tandem::UserError, one line naming TMPDIR and what is wrong with it (missing, not a folder, a name
// too long), when it is not a folder; the line ends with what the user can do: set TMPDIR to a
// folder they can write, or `instead` ("give --logs DIR") when not empty.
std::string temporary_folder(const std::string& instead = "");

// A new private folder (mkdtemp: mode 0700) "<prefix>XXXXXX" in temporary_folder(), for `what` ("the
// run logs"). Throws tandem::UserError as temporary_folder does, naming TMPDIR.
std::string make_temporary_folder(const std::string& prefix, const std::string& what, const std::string& instead = "");

// "--stats out.json" given relative: made absolute now, since the program may change directory.
std::string absolute_path(const std::string& path);

}  // namespace tandem::cli
