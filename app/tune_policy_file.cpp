#include "tune_policy_file.h"

#include "tandem/error.h"
#include "tandem/printable.h"

namespace tandem::cli {

std::string run_applicability_line(const OverlapPolicy& policy) {
  const std::string why = run_refusal(policy);
  return why.empty() ? "# tandem run: applies\n" : "# tandem run: cannot apply (" + printable(why, 1000) + ")\n";
}

std::string tune_policy_file_text(const bench::RunInfo& info, const std::vector<std::string>& about,
                                  const OverlapPolicy& policy) {
  std::string out = "# tandem tune " + info.tandem_version + " (" + info.commit + "), " + info.date + "\n";
  // printable: a program's command line may hold anything; the file stays one comment per line.
  for (const auto& line : about) out += "# " + printable(line, 4000) + "\n";
  return out + run_applicability_line(policy) + to_string(policy) + "\n";
}

}  // namespace tandem::cli
