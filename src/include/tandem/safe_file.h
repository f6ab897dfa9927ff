#pragma once
// Files that tandem writes where other users may also write (/tmp, a shared project folder): the
// interposer's stats file, --json/--out/--trace results, policy files, rendezvous files.
//
// A result is written to a fresh temporary file in the destination's own folder (created with
// O_EXCL | O_NOFOLLOW, so nobody can have planted it or pointed it elsewhere), flushed, and renamed
// over the destination. A reader therefore sees the old file, the new one, or none, never half a
// document; rename() replaces a symbolic link itself, never what it points to; and in a folder with
// the sticky bit (/tmp) another user's file of that name cannot be replaced. A destination that
// exists and is not a regular file (a folder, a FIFO, a device) is refused, never replaced.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem {

// Writes `content` to `path` as described above, with mode 0666 & ~umask (as open(2) would).
// Returns "" on success, else one plain line naming the path and the reason. Never throws, never
// blocks on a FIFO or a device, allocates only for the message: safe inside the interposer.
std::string try_write_file_atomically(const std::string& path, std::string_view content) noexcept;

// The same for content too large to hold at once (a trace): `produce` hands it to the sink piece by
// piece (the sink returns false once a write failed; producing may stop then). An exception from
// `produce` leaves the destination untouched and its message in the returned line.
using ContentSink = std::function<bool(std::string_view)>;
using ContentProducer = std::function<void(const ContentSink&)>;
std::string try_write_file_atomically(const std::string& path, const ContentProducer& produce) noexcept;

// The string version, throwing tandem::Error with that line.
void write_file_atomically(const std::string& path, std::string_view content);

// Checks before any work that `path` can later be written by write_file_atomically: "" for a path
// that is fine, else one plain line naming it and why (its folder is missing or not writable, it is
// a folder or another non-regular file). Creates nothing.
std::string why_not_writable(const std::string& path);

// Throws tandem::Error with why_not_writable's line, if any.
void require_writable(const std::string& path, const std::string& what);

// The result files of one run, as (flag, path); empty paths are skipped. Each must be writable now
// (require_writable), and no two may be the same file ("x" and "./x", two links to one file, or
// "d/x" and "l/x" where l is a link to folder d: files not written yet compare by their resolved
// folder and name).
// Throws tandem::Error with one line naming the flags.
void require_writable_outputs(const std::vector<std::pair<std::string, std::string>>& files);

// Who may use a folder tandem keeps private things in (the rendezvous folder, tune's run logs), for
// make_private_folder's messages.
struct PrivateFolderRole {
  std::string name;     // "rendezvous folder"
  std::string risk;     // what others could do with it: "read this job's NCCL id"
  std::string instead;  // what the user can do: "choose another folder with --rendezvous"
  // Permission bits the group and others must not have: 077 (no access at all) for secrets, 022 (no
  // writing) where only planted files matter.
  unsigned forbidden_mode = 077;
};

// Creates `dir` and any missing folder above it (mode 0700). A folder that others could have made in
// our place (the leaf, and any folder inside a sticky or world-writable one such as /tmp) is used
// only if it is a real folder (not a symbolic link), owned by this user, without the role's
// forbidden permission bits. Folders above that, in a path the user chose, are the user's business. Throws
// tandem::Error with one line naming the folder and what is wrong.
void make_private_folder(const std::string& dir, const PrivateFolderRole& role);

// Opens a new, empty file at `path` for writing (mode & ~umask, O_CREAT | O_EXCL | O_NOFOLLOW,
// O_CLOEXEC). A regular file already there is removed first, never truncated: a hard link to it
// elsewhere keeps its content. A symbolic link, folder, FIFO, socket or device there is refused, never
// followed or opened (no hang on a FIFO). Returns the descriptor; throws tandem::Error naming `path`.
int open_new_file(const std::string& path, unsigned mode);

// Reads a regular file (a link to one is fine) of at most `max_bytes`. A FIFO, a device, a folder or
// a larger file is refused with one plain line naming it: never a hang on a FIFO without a writer,
// never unbounded memory from /dev/zero. Throws tandem::Error.
std::string read_small_regular_file(const std::string& path, size_t max_bytes);

}  // namespace tandem
