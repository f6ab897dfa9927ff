#pragma once
// A crash (abort, segfault) of `tandem` prints where it happened before the process dies, so that a
// failure on a GPU machine without a debugger can still be traced: `tandem(+0x1234)` frames resolve
// with `addr2line -f -C -e build/bin/tandem 0x1234` on an unstripped build of the same commit.
namespace tandem::cli {

// Installs handlers for SIGABRT, SIGSEGV, SIGBUS, SIGFPE and SIGILL that print the signal, the
// build and the stack to stderr, then re-raise the signal with its default action (core dump and
// exit status unchanged).
void install_crash_report();

}  // namespace tandem::cli
