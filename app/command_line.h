#pragma once
// The command line as typed, recorded once by main() so results can say how they were made.
#include <string>

namespace tandem::cli {
void set_command_line(int argc, char** argv);
const std::string& command_line();
}  // namespace tandem::cli
