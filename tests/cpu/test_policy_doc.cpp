// docs/POLICIES.md's token table is rendered from the token rows (tandem/policy_tokens.h): this test
// fails when the two differ and prints the block to paste between the markers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tandem/policy_tokens.h"

namespace tandem {
namespace {

constexpr const char* kBegin = "<!-- policy-tokens:begin -->\n";
constexpr const char* kEnd = "<!-- policy-tokens:end -->";

std::string read_policies_doc() {
  const std::string path = std::string(TANDEM_FIXTURE_DIR) + "/../../docs/POLICIES.md";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PolicyDoc, TokenTableIsRenderedFromTheRows) {
  const std::string doc = read_policies_doc();
  const size_t begin = doc.find(kBegin);
  const size_t end = doc.find(kEnd);
  const std::string expected = policy_tokens_markdown();
  const std::string paste = std::string(kBegin) + expected + kEnd;
  ASSERT_NE(begin, std::string::npos) << "docs/POLICIES.md lacks the marker comments; add this block:\n" << paste;
  ASSERT_NE(end, std::string::npos) << "docs/POLICIES.md lacks " << kEnd << "; the block:\n" << paste;
  ASSERT_LT(begin, end);
  const std::string actual = doc.substr(begin + std::string(kBegin).size(), end - begin - std::string(kBegin).size());
  EXPECT_EQ(actual, expected) << "docs/POLICIES.md's token table differs from the rows in "
                                 "src/core/policy_tokens.cpp; replace the block between the markers with:\n"
                              << paste;
}

// The table names every keyword in backquotes, with each form of shape on a line of its own.
TEST(PolicyDoc, TableHasALinePerForm) {
  const std::string table = policy_tokens_markdown();
  for (const char* cell :
       {"`sequential`", "`concurrent`", "`comm-first`", "`priority`", "`shape:N`", "`shape:<bytes>`", "`shape:auto`",
        "`sm-target:N`", "`nccl-ctas:MIN..MAX`", "`nccl-cga:1\\|2\\|4`", "`nccl-cta-policy:efficiency\\|zero`",
        "`green:N`", "`nccl-symmetric`", "`copy-engine`", "`compute-always`", "`cu-mask:N`"})
    EXPECT_NE(table.find("| " + std::string(cell) + " |"), std::string::npos) << cell;
  // A header, a separator and 16 forms.
  size_t lines = 0;
  for (char c : table) lines += c == '\n';
  EXPECT_EQ(lines, 18u);
}

}  // namespace
}  // namespace tandem
