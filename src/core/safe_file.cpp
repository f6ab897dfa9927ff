#include "tandem/safe_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

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

// ".", NAME, ".tmp.XXXXXX": what try_write_file_atomically adds to a name for its temporary file.
constexpr size_t kTemporaryNameExtra = 1 + 11;

// "/a/./b//c/../d" as "/a/b/d", without asking the file system (the file may not exist yet).
std::string normal_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string part = path.substr(at, slash - at);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = slash + 1;
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

// Where `path` will be: its folder as the file system resolves it (links and ".." followed, as the
// kernel will when the file is written), and its name; for a path whose folder require_writable
// found. Two outputs at one resolved path are one file, whether or not it exists yet.
std::string resolved_path(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> folder(::realpath(folder_of(path).c_str(), nullptr), &std::free);
  if (!folder) {  // not searchable after all: as spelled
    char cwd[4096];
    return normal_path(path[0] != '/' && ::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path);
  }
  const std::string resolved = folder.get();
  return (resolved == "/" ? "" : resolved) + "/" + base_of(path);
}

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

// A new temporary file "<folder>/.<name>.tmp.XXXXXX", created with O_CREAT | O_EXCL | O_NOFOLLOW:
// it fails rather than open a file or a link someone planted under that name. Mode 0666 as open(2)
// gives it, less the umask (or as the folder's default ACL says): nothing needs reading the umask,
// which the interposer could only do through /proc at exit. -1 with errno on failure.
int create_temporary(const std::string& folder, const std::string& name, std::string& temporary) {
  static const char kDigits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int attempt = 0; attempt < 100; ++attempt) {
    unsigned char random[6] = {};
    if (::getrandom(random, sizeof random, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof random)) {
      // No entropy yet (early boot): the pid, the time and the attempt still make collisions rare,
      // and O_EXCL makes them harmless.
      timespec now{};
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      const unsigned long long mix = static_cast<unsigned long long>(now.tv_nsec) ^
                                     (static_cast<unsigned long long>(::getpid()) << 20) ^
                                     static_cast<unsigned long long>(attempt);
      for (size_t i = 0; i < sizeof random; ++i) random[i] = static_cast<unsigned char>(mix >> (8 * i));
    }
    std::string suffix;
    for (unsigned char r : random) suffix += kDigits[r % (sizeof kDigits - 1)];
    temporary = folder + "/." + name + ".tmp." + suffix;
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

}  // namespace

std::string try_write_file_atomically(const std::string& path, const ContentProducer& produce) noexcept {
  try {
    if (path.empty()) return "no file name given";
    if (std::string refusal = refusal_for_existing(path); !refusal.empty()) return "cannot write " + refusal;
    // The temporary file sits beside the destination (rename() cannot cross file systems).
    std::string temporary;
    const int fd = create_temporary(folder_of(path), base_of(path), temporary);
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
  // The temporary file beside it, "." NAME ".tmp.XXXXXX", must fit the folder's limit on names too:
  // found out only after a whole run otherwise.
  const long name_max = ::pathconf(folder.c_str(), _PC_NAME_MAX);
  const size_t limit = name_max > 0 ? static_cast<size_t>(name_max) : 255;
  if (base_of(path).size() + kTemporaryNameExtra > limit)
    return "cannot write " + quoted(path) + ": its name is too long (" + std::to_string(base_of(path).size()) +
           " characters; at most " + std::to_string(limit - kTemporaryNameExtra) +
           " here, to leave room for the temporary file it is written through)";
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

void require_writable_outputs(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::pair<std::string, struct stat>> seen;  // flag, and the file's identity if it exists
  std::vector<std::string> paths;                         // where each is, resolved
  for (const auto& [flag, path] : files) {
    if (path.empty()) continue;
    require_writable(path, flag);
    const std::string resolved = resolved_path(path);
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    for (size_t i = 0; i < seen.size(); ++i) {
      const bool same_file = exists && seen[i].second.st_ino == st.st_ino && seen[i].second.st_dev == st.st_dev &&
                             seen[i].second.st_nlink > 0;
      if (same_file || paths[i] == resolved)
        TANDEM_THROW(seen[i].first + " and " + flag + " name the same file " + quoted(path));
    }
    if (!exists) st.st_nlink = 0;  // no identity to compare
    seen.emplace_back(flag, st);
    paths.push_back(resolved);
  }
}

namespace {

void require_private(const std::string& folder, const struct stat& st, const PrivateFolderRole& role) {
  const std::string named = role.name + " " + quoted(folder);
  if (S_ISLNK(st.st_mode)) TANDEM_THROW(named + " is a symbolic link; remove it, or " + role.instead);
  if (!S_ISDIR(st.st_mode)) TANDEM_THROW(named + " exists and is not a folder");
  if (st.st_uid != ::geteuid())
    TANDEM_THROW(named + " belongs to user id " + std::to_string(st.st_uid) +
                 ", not to you: another user may have created it to " + role.risk + "; " + role.instead);
  if (st.st_mode & role.forbidden_mode) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    const std::string fix = role.forbidden_mode == 077 ? "chmod 700 " : "chmod go-w ";
    TANDEM_THROW(named + " has mode " + mode + ": others could " + role.risk + "; run `" + fix + quoted(folder) +
                 "` or remove it");
  }
}

bool others_can_create_in(const struct stat& parent) {
  return (parent.st_mode & S_ISVTX) || (parent.st_mode & S_IWOTH);
}

}  // namespace

void make_private_folder(const std::string& dir, const PrivateFolderRole& role) {
  TANDEM_REQUIRE(!dir.empty(), "empty " + role.name + " name");
  struct stat parent {};
  bool have_parent = ::stat(dir[0] == '/' ? "/" : ".", &parent) == 0;
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    const std::string part = dir.substr(0, pos);
    if (part.empty() || part.back() == '/') continue;  // "//" in the path
    const bool is_leaf = pos == std::string::npos || dir.find_first_not_of('/', pos) == std::string::npos;
    const bool exposed = is_leaf || (have_parent && others_can_create_in(parent));
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      TANDEM_THROW("cannot create the " + role.name + " " + quoted(part) + ": " + std::strerror(errno));
    struct stat st {};
    if (::lstat(part.c_str(), &st) != 0)
      TANDEM_THROW("cannot inspect the " + role.name + " " + quoted(part) + ": " + std::strerror(errno));
    if (exposed) require_private(part, st, role);
    // Through a link the user made (outside shared folders), the link's target is the parent.
    if (S_ISLNK(st.st_mode) && ::stat(part.c_str(), &st) != 0)
      TANDEM_THROW("cannot inspect the " + role.name + " " + quoted(part) + ": " + std::strerror(errno));
    parent = st;
    have_parent = true;
    if (is_leaf) break;
  }
}

int open_new_file(const std::string& path, unsigned mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) TANDEM_THROW("cannot write " + refusal_for_existing(path));
    // Removed, not truncated: another name of the same file (a hard link) keeps its content.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      TANDEM_THROW("cannot replace " + quoted(path) + ": " + std::strerror(errno));
  }
  // O_EXCL: whatever appeared there since (a link, a FIFO) makes this fail rather than be opened.
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, static_cast<mode_t>(mode));
  if (fd < 0) TANDEM_THROW("cannot create " + quoted(path) + ": " + std::strerror(errno));
  return fd;
}

std::string read_small_regular_file(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) TANDEM_THROW("cannot read " + quoted(path) + ": " + std::strerror(errno));
  // Closed however this returns (after a throw's message has read errno).
  const std::unique_ptr<const int, void (*)(const int*)> closing(&fd, [](const int* f) { ::close(*f); });
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) TANDEM_THROW(quoted(path) + " is not a regular file");
  if (static_cast<unsigned long long>(st.st_size) > max_bytes)
    TANDEM_THROW(quoted(path) + " is larger than " + std::to_string(max_bytes) + " bytes");
  // Sized by the file, grown as it reads (a file may grow, /proc files report size 0), never past
  // max_bytes + 1: a limit far above the usual size costs nothing.
  const size_t limit = max_bytes + 1;
  std::string text(std::min(limit, static_cast<size_t>(st.st_size) + 4096), '\0');
  size_t got = 0;
  while (got < limit) {
    if (got == text.size()) text.resize(std::min(limit, text.size() * 2));
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) TANDEM_THROW("cannot read " + quoted(path) + ": " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  // A file that grew while being read (/proc files report size 0) is bounded here.
  if (got > max_bytes) TANDEM_THROW(quoted(path) + " is larger than " + std::to_string(max_bytes) + " bytes");
  text.resize(got);
  return text;
}

}  // namespace tandem
