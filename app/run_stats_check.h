#pragma once
// `tandem run --stats FILE`: the path checked before the program starts, and afterwards a warning
// when the program did not write the statistics (killed before its exit report, or left through
// _exit). A file an earlier run left there is never removed: it is replaced only by this run's
// statistics (written atomically by the interposer), so a run that dies loses nothing it had.
#include <sys/types.h>

#include <string>

namespace tandem::cli {

// Throws tandem::Error (one line) unless `path` (absolute) can take the statistics: its folder
// exists and is writable, the file is absent or a regular file, and %p (the pid) appears only in the
// file's name (the folder must exist before the program starts; a folder per process cannot).
void require_stats_path(const std::string& path);

class StatsFileWatch {
 public:
  // `path` empty: nothing to watch. With %p: one file per process, nothing to compare.
  // `warn`: false at --log-level error.
  StatsFileWatch(std::string path, bool warn);
  // After the program ended: one warning line on stderr if the file is not this run's.
  void warn_if_not_rewritten() const;

 private:
  std::string path_;
  bool warn_ = true;
  bool existed_ = false;
  ino_t inode_ = 0;
  long long modified_ns_ = 0;
};

}  // namespace tandem::cli
