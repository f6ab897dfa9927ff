// _exit and _Exit (hook_list.h, TANDEM_EXIT_HOOKS): a process that leaves through them (Python's
// os._exit, a shell's exit builtin) runs no exit handler and no library destructor, so without these
// hooks it would leave no timeline files, no summary and no stats file. The hook reports as the
// destructor would (exit_report.h), then calls libc's function with the program's status: the exit
// itself is the program's, unchanged.
//
// Not in a vfork child: it shares its parent's memory, and reporting there would mark the parent's
// timeline finished and write the parent's numbers under the child's pid. A fork's child reports
// its own (its counters start at zero; the parent's recording stays the parent's, timeline_session.cpp).
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "exit_report.h"
#include "hook_handlers.h"
#include "runtime.h"
#include "tandem/run_contract.h"

namespace tandem::preload {
namespace {

// Whether this process is the one the interposer's state describes. Never allocates: a vfork child
// must not touch its parent's heap.
bool owns_the_state() {
  const long pid = static_cast<long>(getpid());
  if (Runtime* rt = runtime_if_initialized()) return rt->pid.load(std::memory_order_relaxed) == pid;
  // Nothing was hooked yet: only the process `tandem run` started reports anything then (its
  // summary, exit_report.cpp), and a vfork child of it is another pid.
  const char* root = std::getenv(env::kRootPid);
  return root && std::strtol(root, nullptr, 10) == pid;
}

[[noreturn]] void leave(void (*real)(int), int status) {
  if (real) real(status);
  // No libc function to call (cannot happen: the hook is exported only where libc defines it).
  for (;;) syscall(SYS_exit_group, status);
}

void report_if_ours(int program_errno) {
  if (owns_the_state()) report_before_exit_without_handlers();
  errno = program_errno;
}

}  // namespace

void handle__exit(int status) {
  report_if_ours(errno);
  leave(real__exit(), status);
}

void handle__Exit(int status) {
  report_if_ours(errno);
  leave(real__Exit(), status);
}

}  // namespace tandem::preload
