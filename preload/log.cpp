#include "log.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "tandem/text.h"

namespace tandem::preload {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::Warn)};

}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }

bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

// A stderr that is a pipe whose reader has gone (`tandem run -- prog 2>&1 | head`) must not kill the
// program with SIGPIPE for our message: SIGPIPE is blocked in this thread around the write, and one
// that the write raised is taken off the pending set before the program's mask comes back. A SIGPIPE
// that was already pending (the program blocks it and has not looked yet) is left alone, and the
// program's handlers are never touched.
void write_stderr(const std::string& text) {
  const int saved_errno = errno;
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t previous_mask;
  const bool blocked = pthread_sigmask(SIG_BLOCK, &pipe_only, &previous_mask) == 0;
  sigset_t pending_before;
  sigemptyset(&pending_before);
  sigpending(&pending_before);
  bool raised_pipe = false;
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // nothing useful to do about a closed stderr or a pipe without a reader
      raised_pipe = n < 0 && errno == EPIPE;
      break;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (blocked) {
    if (raised_pipe && !sigismember(&pending_before, SIGPIPE)) {
      const timespec no_wait{0, 0};
      while (sigtimedwait(&pipe_only, nullptr, &no_wait) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  }
  errno = saved_errno;
}

void log(LogLevel level, const char* format, ...) {
  if (!log_enabled(level)) return;
  const int saved_errno = errno;
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  write_stderr(pid_prefix(getpid()) + to_string(level) + ": " + message + "\n");
  errno = saved_errno;
}

}  // namespace tandem::preload
