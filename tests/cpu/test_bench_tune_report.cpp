// tandem tune's closing text (report/tune_report.h): candidates fastest first, at most --show of
// them, the policy file written, resumed cases, and the summary's duration.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/tune_report.h"

using tandem::bench::Row;

namespace {

Row row(const std::string& policy, double t_overlap_ms) {
  Row r;
  r.workload = "gemm";
  r.collective = "all-reduce";
  r.dtype = "bf16";
  r.bytes = 256ull << 20;
  r.ranks = 2;
  r.policy = policy;
  r.t_overlap_ms = t_overlap_ms;
  return r;
}

size_t position(const std::string& text, const std::string& what) {
  const size_t at = text.find(what);
  EXPECT_NE(at, std::string::npos) << what << " missing from:\n" << text;
  return at;
}

}  // namespace

TEST(TuneReport, ListsTheFastestCandidatesFirstUpToShowThenTheFileWritten) {
  const std::vector<Row> candidates = {row("concurrent", 3.0), row("priority", 1.0), row("comm-first", 2.0)};
  const std::string text = tandem::bench::tuned_case_text(candidates, row("priority", 1.0), "out.policy", 2);
  EXPECT_EQ(text.rfind("#\n# gemm x all-reduce 256MiB: 3 policies measured; fastest first\n", 0), 0u) << text;
  EXPECT_LT(position(text, " priority"), position(text, " comm-first"));
  EXPECT_EQ(text.find(" concurrent"), std::string::npos) << "only --show 2 candidates:\n" << text;
  const std::string last = "# wrote out.policy: priority\n";
  ASSERT_GE(text.size(), last.size());
  EXPECT_EQ(text.substr(text.size() - last.size()), last);
}

TEST(TuneReport, ShowZeroListsNoCandidate) {
  const std::string text = tandem::bench::tuned_case_text({row("priority", 1.0)}, row("priority", 1.0), "p", 0);
  EXPECT_EQ(text.find(" priority "), std::string::npos) << text;
}

TEST(TuneReport, AResumedCaseIsOneLine) {
  EXPECT_EQ(tandem::bench::resumed_case_text("stream", "all-gather", 4096, "priority", "old.json"),
            "#\n# stream x all-gather 4KiB: tuned before (--resume old.json): priority\n");
}

TEST(TuneReport, TheSummarySaysHowLongTheSearchTookAndEndsWithTheFooter) {
  const std::vector<Row> finals = {row("concurrent", 3.0), row("priority", 1.0)};
  const std::string text = tandem::bench::tune_summary_text(finals, 12.34, finals, {});
  EXPECT_EQ(
      text.rfind("#\n# summary: naive (concurrent), paper (best shape:*+priority, else priority), tuned; 12.3 s\n", 0),
      0u)
      << text;
  // The rows, in the order given, after the summary's own line (which names policies too).
  const std::string rows = text.substr(text.find('\n', 2) + 1);
  EXPECT_LT(position(rows, " concurrent"), position(rows, " priority"));
  EXPECT_NE(text.find("# OK"), std::string::npos) << text;
}
