#include "command_line.h"

#include <vector>

#include "report/report.h"

namespace tandem::cli {
namespace {
std::string& stored() {
  static std::string line;
  return line;
}
}  // namespace

void set_command_line(int argc, char** argv) {
  std::vector<std::string> args = {"tandem"};  // as the user would type it again, whatever the path
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  stored() = bench::shell_command(args);
}

const std::string& command_line() { return stored(); }
}  // namespace tandem::cli
