#pragma once
// Tests that send SIGINT, SIGQUIT, SIGTERM or SIGHUP to programs of theirs expect what a terminal's
// foreground job has: those signals' default dispositions. A job started in the background (`cmd &`,
// nohup, the mutant runner under either) inherits SIGINT and SIGQUIT ignored; its children keep them
// ignored and its shells cannot trap them (POSIX), so an interrupted program would run on until the
// test's time limit. ctest restores the defaults for the tests it starts; a test binary run directly
// does not. Included by each such test file: its static initialiser runs before main.
#include <signal.h>

namespace {
const bool g_default_signal_dispositions = [] {
  for (int s : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) ::signal(s, SIG_DFL);
  return true;
}();
}  // namespace
