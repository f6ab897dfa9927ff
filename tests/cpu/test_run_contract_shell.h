#pragma once
// Runs a shell command line for the `tandem run` / interposer contract tests
// and returns its exit status and what it wrote, each stream captured in its
// own file.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scratch_folder.h"

namespace tandem_run_contract_test {

struct Result {
  int status = -1;  // the exit status, or 128 + the signal that killed the shell
  std::string out;
  std::string err;
};

using tandem_test::read_text;
using tandem_test::ScratchFolder;

// `command` under /bin/sh, stdout and stderr to files (unless the command
// redirects them itself).
inline Result run_shell(const std::string& command) {
  ScratchFolder scratch;
  const std::string line =
      "{ " + command + "\n} >" + scratch.path("out").string() + " 2>" + scratch.path("err").string();
  const int raw = std::system(line.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
  r.out = read_text(scratch.path("out"));
  r.err = read_text(scratch.path("err"));
  return r;
}

// Single-quoted for /bin/sh.
inline std::string sh_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace tandem_run_contract_test
