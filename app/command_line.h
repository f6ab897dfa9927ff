#pragma once
// The command line as typed, recorded once by main() so results can say how they were made.
#include <CLI/CLI.hpp>
#include <string>

namespace tandem::cli {
void set_command_line(int argc, char** argv);
// The same, already joined: how the GPU commands module learns it (gpu_commands.h).
void set_command_line_text(const std::string& line);
const std::string& command_line();

// A number written in decimal: digits with an optional sign, point and exponent. CLI11 alone would
// also read 0x10, 0b11 and 0o7 (and C's strtod inf and nan) as numbers.
const CLI::Validator& decimal_number();

// A value that may not be empty: `--trace ''` is refused as "is empty: <instead>", never taken as
// the option left out.
CLI::Validator not_empty(const std::string& instead);
}  // namespace tandem::cli
