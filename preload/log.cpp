#include "log.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <string>

namespace tandem::preload {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::Warn)};

}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }

bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

void write_stderr(const std::string& text) {
  const char* data = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, data, left);
    if (n <= 0) return;  // nothing useful to do about a closed stderr
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void log(LogLevel level, const char* format, ...) {
  if (!log_enabled(level)) return;
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  write_stderr("tandem[" + std::to_string(getpid()) + "]: " + to_string(level) + ": " + message + "\n");
}

}  // namespace tandem::preload
