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

// Reads a regular file (a link to one is fine) of at most `max_bytes`. A FIFO, a device, a folder or
// a larger file is refused with one plain line naming it: never a hang on a FIFO without a writer,
// never unbounded memory from /dev/zero. Throws tandem::Error.
std::string read_small_regular_file(const std::string& path, size_t max_bytes);

}  // namespace tandem
