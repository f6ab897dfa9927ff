// placeholder: replaced by the implementation of `tandem run`
#include "commands.h"
namespace tandem::cli {
void add_run_command(CLI::App&, int&) {}
}  // namespace tandem::cli
