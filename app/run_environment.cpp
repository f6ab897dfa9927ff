#include "run_environment.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "preload_library_check.h"
#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/run_contract.h"
#include "tandem/text.h"

namespace tandem::cli {
namespace {

namespace fs = std::filesystem;
namespace env = tandem::preload::env;

bool usable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), R_OK) == 0;
}

// LD_PRELOAD separates entries with spaces or colons; a path containing either cannot be preloaded.
// The loader expands $ORIGIN, $LIB and $PLATFORM (also as ${LIB}) in each entry: a path with a '$'
// would load another file than the one checked here, so it is refused, whatever follows the '$'.
void require_preloadable(const std::string& path) {
  TANDEM_REQUIRE(
      path.find_first_of(" :") == std::string::npos,
      "the interposer's path " + quoted_value(path) + " contains a space or a colon, which LD_PRELOAD cannot carry");
  TANDEM_REQUIRE(path.find('$') == std::string::npos,
                 "the interposer's path " + quoted_value(path) +
                     " contains a '$': the loader would expand it ($LIB, $ORIGIN, $PLATFORM) and could load another "
                     "file than the one checked");
}

// A library is preloaded only once it is known to be our interposer (preload_library_check.h).
// `label` names the file as the user knows it: "TANDEM_PRELOAD_LIB='x'".
void require_interposer(const std::string& path, const std::string& label) {
  const std::string why = why_not_interposer(path);
  TANDEM_REQUIRE(why.empty(), label + " " + why);
}

// Our library first (it must see dlsym and the driver symbols before anyone else), then whatever the
// parent preloaded, without repeating ours (nested `tandem run`).
std::string prepend_preload(const std::string& library, const char* existing) {
  std::string value = library;
  if (!existing) return value;
  std::string rest = existing;
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t end = rest.find_first_of(" :", start);
    const std::string entry = rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!entry.empty() && entry != library) value += ":" + entry;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return value;
}

// "<device>:<inode>" of a stats file an earlier run left, "" if there is none (or with %p).
std::string earlier_stats_identity(const std::string& path) {
  struct stat st {};
  if (path.empty() || path.find("%p") != std::string::npos || ::lstat(path.c_str(), &st) != 0) return "";
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(st.st_ino));
}

// "TMPDIR='x'" when set, else "/tmp", and the line's end: what the user can do instead.
std::string temporary_folder_name(const char* tmpdir) {
  return tmpdir && *tmpdir ? "TMPDIR=" + quoted_value(tmpdir) : std::string("/tmp");
}
std::string temporary_folder_fix(const std::string& instead) {
  return "set TMPDIR to a folder you can write" + (instead.empty() ? "" : ", or " + instead);
}

}  // namespace

std::string temporary_folder(const std::string& instead) {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string base = tmpdir && *tmpdir ? tmpdir : "/tmp";
  struct stat st {};
  if (::stat(base.c_str(), &st) != 0)
    TANDEM_USER_ERROR(temporary_folder_name(tmpdir) + " cannot hold temporary files (" + std::strerror(errno) + "); " +
                      temporary_folder_fix(instead));
  if (!S_ISDIR(st.st_mode))
    TANDEM_USER_ERROR(temporary_folder_name(tmpdir) + " is not a folder; " + temporary_folder_fix(instead));
  return absolute_path(base);  // a relative TMPDIR: the program may change directory
}

std::string make_temporary_folder(const std::string& prefix, const std::string& what, const std::string& instead) {
  std::string pattern = temporary_folder(instead) + "/" + prefix + "XXXXXX";
  if (!::mkdtemp(pattern.data()))
    TANDEM_USER_ERROR("cannot create a folder for " + what + " in " + temporary_folder_name(std::getenv("TMPDIR")) +
                      " (" + std::strerror(errno) + "); " + temporary_folder_fix(instead));
  return pattern;
}

std::string locate_preload_library() {
  const std::string override_path = env::preload_library_override();
  if (!override_path.empty()) {
    TANDEM_REQUIRE(usable_file(override_path),
                   std::string(env::kPreloadLib) + "=" + quoted_value(override_path) + " is not a readable file");
    const std::string absolute = fs::absolute(override_path).lexically_normal().string();
    require_preloadable(absolute);
    require_interposer(absolute, std::string(env::kPreloadLib) + "=" + quoted_value(override_path));
    return absolute;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  TANDEM_REQUIRE(!ec, "cannot read /proc/self/exe to find libtandem_preload.so: " + ec.message());
  std::vector<std::string> tried;
  for (const char* libdir : {"lib", "lib64"}) {
    const fs::path candidate = (self.parent_path() / ".." / libdir / "libtandem_preload.so").lexically_normal();
    if (usable_file(candidate)) {
      require_preloadable(candidate.string());
      require_interposer(candidate.string(), "the interposer '" + candidate.string() + "'");
      return candidate.string();
    }
    tried.push_back(candidate.string());
  }
  TANDEM_THROW("cannot find libtandem_preload.so (looked for " + join(tried, ", ") +
               "); build the tandem_preload "
               "target or set " +
               env::kPreloadLib);
}

OverlapPolicy policy_for_run(const std::string& text) {
  const OverlapPolicy policy = parse_policy(text);  // throws with the grammar on a bad token
  // Which tokens need the program's cooperation is a column of the token table (policy_tokens.h).
  if (!run_can_apply(policy))
    TANDEM_THROW("policy '" + text + "': " + run_refusal(policy) +
                 "; use `tandem bench` to measure it, or change the program");
  return policy;
}

std::vector<EnvChange> child_environment(const RunOptions& options, const std::string& library,
                                         const char* existing_ld_preload) {
  std::vector<EnvChange> changes;
  changes.emplace_back("LD_PRELOAD", prepend_preload(library, existing_ld_preload));
  changes.emplace_back(env::kPolicy, options.policy);
  changes.emplace_back(env::kLogLevel, options.log_level);
  const auto optional_value = [](const std::string& v) -> std::optional<std::string> {
    return v.empty() ? std::nullopt : std::optional<std::string>(v);
  };
  changes.emplace_back(env::kInclude, optional_value(join(options.include, ",")));
  changes.emplace_back(env::kExclude, optional_value(join(options.exclude, ",")));
  changes.emplace_back(env::kStatsFile, optional_value(options.stats_file));
  changes.emplace_back(env::kStatsEarlier, optional_value(earlier_stats_identity(options.stats_file)));
  // No NCCL_* variable: run_environment.h says why.
  return changes;
}

std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  return fs::absolute(path).lexically_normal().string();
}

}  // namespace tandem::cli
