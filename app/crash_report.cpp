#include "crash_report.h"

#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <utility>

#include "process/child_process.h"
#include "tandem/build_info.h"

namespace tandem::cli {
namespace {

// The signals reported, each with what it usually means.
constexpr std::pair<int, const char*> kSignals[] = {
    {SIGABRT, "SIGABRT (abort: a failed check in a library, or heap corruption)"},
    {SIGSEGV, "SIGSEGV (invalid memory access)"},
    {SIGBUS, "SIGBUS (bus error)"},
    {SIGFPE, "SIGFPE (arithmetic error)"},
    {SIGILL, "SIGILL (illegal instruction)"},
};
// Composed before any crash: the handler may only write(), not format or allocate.
char header[256];
size_t header_length = 0;

void write_all(const char* text, size_t length) { process::write_all(STDERR_FILENO, text, length); }

const char* signal_name(int sig) {
  for (const auto& [number, name] : kSignals)
    if (number == sig) return name;
  return "unexpected signal";
}

void on_fatal_signal(int sig) {
  write_all(header, header_length);
  const char* name = signal_name(sig);
  write_all(name, std::strlen(name));
  write_all("\n", 1);
  void* frames[64];
  const int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void install_crash_report() {
  const int n =
      std::snprintf(header, sizeof(header), "tandem %s (%s): fatal signal: ", TANDEM_VERSION_STRING, TANDEM_GIT_COMMIT);
  header_length = n > 0 ? std::min(size_t(n), sizeof(header) - 1) : 0;
  // backtrace() loads libgcc on first use, which allocates: do it now, not in the handler.
  void* frame[1];
  backtrace(frame, 1);
  for (const auto& [sig, name] : kSignals) std::signal(sig, on_fatal_signal);
}

}  // namespace tandem::cli
