#include "tandem/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tandem/error.h"

namespace tandem {
namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// What a destination that already exists must not be. "" when it is absent or a regular file.
std::string refusal_for_existing(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return quoted(path) + " is a folder; give a file name";
  if (S_ISLNK(st.st_mode))
    return quoted(path) + " is a symbolic link; tandem does not write through links, give the target's path";
  return quoted(path) + " is not a regular file (a FIFO, socket or device)";
}

// The mode open(2) would give a new file: 0666 without the process's umask bits. umask(2) can only
// be read by setting it, which races with other threads, so it is read from /proc.
mode_t new_file_mode() {
  mode_t mask = 022;
  if (FILE* status = std::fopen("/proc/self/status", "re")) {
    char line[128];
    while (std::fgets(line, sizeof line, status))
      if (std::strncmp(line, "Umask:", 6) == 0) mask = static_cast<mode_t>(std::strtoul(line + 6, nullptr, 8));
    std::fclose(status);
  }
  return 0666 & ~mask;
}

}  // namespace

std::string try_write_file_atomically(const std::string& path, const ContentProducer& produce) noexcept {
  try {
    if (path.empty()) return "no file name given";
    if (std::string refusal = refusal_for_existing(path); !refusal.empty()) return "cannot write " + refusal;
    // The temporary file sits beside the destination (rename() cannot cross file systems). mkostemp
    // creates it with O_CREAT | O_EXCL and mode 0600: it fails rather than open a file or a link
    // that someone planted under that name.
    std::string temporary = folder_of(path) + "/." + base_of(path) + ".tmp.XXXXXX";
    const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
    if (fd < 0) return "cannot create a file in " + quoted(folder_of(path)) + ": " + std::strerror(errno);
    int write_error = 0;
    const auto sink = [&](std::string_view content) {
      size_t written = 0;
      while (!write_error && written < content.size()) {
        const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          write_error = n < 0 ? errno : EIO;
          break;
        }
        written += static_cast<size_t>(n);
      }
      return write_error == 0;
    };
    std::string produce_error;
    try {
      produce(sink);
    } catch (const std::exception& e) {
      produce_error = e.what();
    } catch (...) {
      produce_error = "unknown error";
    }
    if (!write_error && ::fchmod(fd, new_file_mode()) != 0) write_error = errno;
    if (::close(fd) != 0 && !write_error) write_error = errno;
    // rename() replaces the destination's directory entry: a link put there since the check above is
    // replaced, not followed; another user's file in a sticky folder is refused (EPERM).
    if (!write_error && produce_error.empty() && ::rename(temporary.c_str(), path.c_str()) != 0) write_error = errno;
    if (write_error || !produce_error.empty()) {
      ::unlink(temporary.c_str());
      return "cannot write " + quoted(path) + ": " + (write_error ? std::strerror(write_error) : produce_error);
    }
    return "";
  } catch (...) {  // std::bad_alloc building a path or a message
    return "cannot write " + quoted(path) + ": out of memory";
  }
}

std::string try_write_file_atomically(const std::string& path, std::string_view content) noexcept {
  return try_write_file_atomically(path, [content](const ContentSink& sink) { sink(content); });
}

void write_file_atomically(const std::string& path, std::string_view content) {
  const std::string error = try_write_file_atomically(path, content);
  if (!error.empty()) TANDEM_THROW(error);
}

std::string why_not_writable(const std::string& path) {
  if (path.empty()) return "no file name given";
  if (std::string refusal = refusal_for_existing(path); !refusal.empty()) return "cannot write " + refusal;
  const std::string folder = folder_of(path);
  struct stat dir {};
  if (::stat(folder.c_str(), &dir) != 0)
    return "cannot write " + quoted(path) + ": folder " + quoted(folder) + " " + std::strerror(errno);
  if (!S_ISDIR(dir.st_mode)) return "cannot write " + quoted(path) + ": " + quoted(folder) + " is not a folder";
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return "cannot write " + quoted(path) + ": folder " + quoted(folder) + " is not writable";
  struct stat existing {};
  if ((dir.st_mode & S_ISVTX) && ::lstat(path.c_str(), &existing) == 0 && existing.st_uid != ::geteuid() &&
      dir.st_uid != ::geteuid())
    return "cannot write " + quoted(path) + ": it belongs to another user in a shared folder";
  return "";
}

void require_writable(const std::string& path, const std::string& what) {
  const std::string why = why_not_writable(path);
  if (!why.empty()) TANDEM_THROW(what + ": " + why);
}

std::string read_small_regular_file(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) TANDEM_THROW("cannot read " + quoted(path) + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    TANDEM_THROW(quoted(path) + " is not a regular file");
  }
  if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
    ::close(fd);
    TANDEM_THROW(quoted(path) + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  // Sized by the file, grown as it reads (a file may grow, /proc files report size 0), never past
  // max_bytes + 1: a limit far above the usual size costs nothing.
  const size_t limit = max_bytes + 1;
  std::string text(std::min(limit, static_cast<size_t>(st.st_size) + 4096), '\0');
  size_t got = 0;
  while (got < limit) {
    if (got == text.size()) text.resize(std::min(limit, text.size() * 2));
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      TANDEM_THROW("cannot read " + quoted(path) + ": " + std::strerror(error));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  // A file that grew while being read (/proc files report size 0) is bounded here.
  if (got > max_bytes) TANDEM_THROW(quoted(path) + " is larger than " + std::to_string(max_bytes) + " bytes");
  text.resize(got);
  return text;
}

}  // namespace tandem
