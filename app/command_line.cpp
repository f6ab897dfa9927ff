#include "command_line.h"

namespace tandem::cli {
namespace {
std::string& stored() {
  static std::string line;
  return line;
}
std::string quoted(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\"'$\\") == std::string::npos) return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

void set_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) line += (i ? " " : "") + quoted(i == 0 ? std::string("tandem") : argv[i]);
  stored() = line;
}

const std::string& command_line() { return stored(); }
}  // namespace tandem::cli
