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

void set_command_line_text(const std::string& line) { stored() = line; }

const std::string& command_line() { return stored(); }

const CLI::Validator& decimal_number() {
  static const CLI::Validator validator(
      [](const std::string& text) -> std::string {
        size_t i = 0, digits = 0;
        const auto run = [&] {
          for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) ++digits;
        };
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        run();
        if (i < text.size() && text[i] == '.') ++i, run();
        bool ok = digits > 0;
        if (ok && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
          ++i;
          if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
          digits = 0;
          run();
          ok = digits > 0;
        }
        return ok && i == text.size() ? "" : "is not a decimal number: " + text;
      },
      "", "decimal");
  return validator;
}

CLI::Validator not_empty(const std::string& instead) {
  return CLI::Validator([instead](const std::string& v) { return v.empty() ? "is empty: " + instead : ""; }, "",
                        "not empty");
}
}  // namespace tandem::cli
