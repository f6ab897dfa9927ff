#include "run_stats_check.h"

#include <sys/stat.h>

#include <cstdio>

#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/safe_file.h"

namespace tandem::cli {

void require_stats_path(const std::string& path) {
  const size_t pid_at = path.find("%p");
  TANDEM_REQUIRE(pid_at == std::string::npos || pid_at > path.find_last_of('/'),
                 "--stats " + quoted_value(path) +
                     ": %p (the process id) may appear in the file's name only, not in its folder, which must "
                     "exist before the program starts");
  require_writable(path, "--stats");
}

StatsFileWatch::StatsFileWatch(std::string path, bool warn) : path_(std::move(path)), warn_(warn) {
  if (path_.empty() || path_.find("%p") != std::string::npos) {
    path_.clear();
    return;
  }
  struct stat st {};
  existed_ = ::lstat(path_.c_str(), &st) == 0;
  inode_ = st.st_ino;
  modified_ns_ = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

void StatsFileWatch::warn_if_not_rewritten() const {
  if (path_.empty() || !warn_) return;
  struct stat st {};
  const bool exists = ::lstat(path_.c_str(), &st) == 0;
  const long long modified_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  // The interposer renames a new file over the path: a new inode or at least a new time.
  const bool rewritten = exists && (!existed_ || st.st_ino != inode_ || modified_ns != modified_ns_);
  if (rewritten) return;
  std::fprintf(stderr,
               "tandem run: warning: --stats %s %s: the program ended before its exit report (killed, or "
               "left through _exit)\n",
               quoted_value(path_).c_str(), exists ? "still holds an earlier run's statistics" : "was not written");
}

}  // namespace tandem::cli
