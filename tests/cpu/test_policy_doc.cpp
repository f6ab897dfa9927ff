// docs/POLICIES.md's token table and NCCL-settings table are rendered from the token rows
// (tandem/policy_tokens.h): this test fails when a table and its rows differ and prints the block to
// paste between the markers.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tandem/policy_tokens.h"

namespace tandem {
namespace {

std::string read_policies_doc() {
  const std::string path = std::string(TANDEM_FIXTURE_DIR) + "/../../docs/POLICIES.md";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The block of docs/POLICIES.md between <!-- NAME:begin --> and <!-- NAME:end --> is `expected`; the
// failure prints the block to paste.
void expect_rendered_block(const std::string& name, const std::string& expected, const char* source) {
  const std::string doc = read_policies_doc();
  const std::string begin_marker = "<!-- " + name + ":begin -->\n";
  const std::string end_marker = "<!-- " + name + ":end -->";
  const size_t begin = doc.find(begin_marker);
  const size_t end = doc.find(end_marker);
  const std::string paste = begin_marker + expected + end_marker;
  ASSERT_NE(begin, std::string::npos) << "docs/POLICIES.md lacks the marker comments; add this block:\n" << paste;
  ASSERT_NE(end, std::string::npos) << "docs/POLICIES.md lacks " << end_marker << "; the block:\n" << paste;
  ASSERT_LT(begin, end);
  const std::string actual = doc.substr(begin + begin_marker.size(), end - begin - begin_marker.size());
  EXPECT_EQ(actual, expected) << "docs/POLICIES.md's " << name << " table differs from the rows in " << source
                              << "; replace the block between the markers with:\n"
                              << paste;
}

TEST(PolicyDoc, TokenTableIsRenderedFromTheRows) {
  expect_rendered_block("policy-tokens", policy_tokens_markdown(), "src/core/policy_tokens.cpp");
}

// The NCCL facts of the nccl-* tokens (and copy-engine's own CTA policy), from their rows.
TEST(PolicyDoc, NcclSettingsTableIsRenderedFromTheRows) {
  expect_rendered_block("nccl-fields", nccl_fields_markdown(), "src/core/policy_tokens.cpp (NcclField)");
  const std::string table = nccl_fields_markdown();
  EXPECT_NE(table.find("| `nccl-cta-policy` | `CTAPolicy` | `NCCL_CTA_POLICY` | 2.27 (zero: 2.28) | `cta_policy` |"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| `nccl-ctas` | `maxCTAs` | `NCCL_MAX_CTAS` | 2.17 | `max_ctas` |"), std::string::npos);
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
