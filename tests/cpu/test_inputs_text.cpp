// Text from users shown back in messages and written to JSON: printable, bounded, valid UTF-8; user
// errors without a source location, tandem's own errors with one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "report/report.h"
#include "tandem/error.h"
#include "tandem/printable.h"

namespace {

using tandem::printable;

TEST(Printable, PlainTextIsUnchanged) {
  EXPECT_EQ(printable("shape:3+priority"), "shape:3+priority");
  EXPECT_EQ(printable("H200 \u00d7 2, 1 \u00b5s"), "H200 \u00d7 2, 1 \u00b5s");  // UTF-8 letters stay
  EXPECT_TRUE(tandem::is_printable("caf\u00e9"));
}

TEST(Printable, ControlCharactersAndEscapesAreShownEscaped) {
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(printable("\x7f"), "\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"
                      "2J"),
            "\\u009b2J");  // C1 CSI, encoded in UTF-8
  EXPECT_EQ(printable("abc\xe2\x80\xae"
                      "fed"),
            "abc\\u202efed");  // right-to-left override
  EXPECT_EQ(printable("line\xe2\x80\xa8"
                      "break"),
            "line\\u2028break");
  EXPECT_FALSE(tandem::is_printable("\x1b"));
}

TEST(Printable, BytesThatAreNotUtf8AreShownAsHex) {
  EXPECT_EQ(printable("a\xff"
                      "b"),
            "a\\xffb");
  EXPECT_EQ(printable("\xc3"), "\\xc3");                             // cut short
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(printable("\xe0\x80\x9b[31m"), "\\xe0\\x80\\x9b[31m");   // an escape hidden in 3 bytes
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(tandem::utf8_sequence_length("\xf0\x9f\x98\x80", 0), 4u);
  EXPECT_EQ(tandem::utf8_sequence_length("\x80", 0), 0u);
}

TEST(Printable, LongValuesAreCutWithAnEllipsis) {
  const std::string long_value(100000, 'x');
  const std::string shown = printable(long_value);
  EXPECT_EQ(shown, std::string(200, 'x') + "\u2026");
  EXPECT_EQ(printable(std::string(200, 'y')), std::string(200, 'y'));   // exactly the limit: whole
  EXPECT_EQ(printable("\u00e9\u00e9\u00e9", 2), "\u00e9\u00e9\u2026");  // counted in characters
  EXPECT_EQ(tandem::quoted_value("a\x1b"), "'a\\x1b'");
}

TEST(Errors, UserErrorsHaveNoLocationInternalErrorsDo) {
  try {
    TANDEM_USER_ERROR("--timeout inf is out of bounds");
  } catch (const tandem::UserError& e) {
    EXPECT_STREQ(e.what(), "--timeout inf is out of bounds");
    EXPECT_EQ(e.message(), "--timeout inf is out of bounds");
  }
  try {
    TANDEM_THROW("cudaMalloc failed");
  } catch (const tandem::UserError&) {
    ADD_FAILURE() << "an internal error is not a user error";
  } catch (const tandem::Error& e) {
    EXPECT_EQ(e.message(), "cudaMalloc failed");
    EXPECT_EQ(std::string(e.what()).rfind("cudaMalloc failed [test_inputs_text.cpp:", 0), 0u) << e.what();
  }
}

TEST(Errors, CheckingInputTurnsParserErrorsIntoUserErrors) {
  try {
    tandem::checking_input([] { TANDEM_THROW("unknown policy token 'prio'"); });
    ADD_FAILURE() << "nothing thrown";
  } catch (const tandem::UserError& e) {
    EXPECT_STREQ(e.what(), "unknown policy token 'prio'");
  }
  EXPECT_EQ(tandem::checking_input([] { return 7; }), 7);
}

TEST(CommandLine, ArgumentsAreQuotedAsAShellReadsThemBack) {
  using tandem::bench::shell_command;
  EXPECT_EQ(shell_command({"tandem", "bench", "-b", "64M"}), "tandem bench -b 64M");
  EXPECT_EQ(shell_command({"tandem", "--json", "my results.json"}), "tandem --json 'my results.json'");
  EXPECT_EQ(shell_command({"tandem", "it's"}), "tandem 'it'\\''s'");
  EXPECT_EQ(shell_command({"tandem", "a;b"}), "tandem 'a;b'");
  EXPECT_EQ(shell_command({"tandem", ""}), "tandem ''");
  // Control characters and bytes that are not UTF-8: bash's $'...' with \xHH, printable and valid UTF-8.
  EXPECT_EQ(shell_command({"tandem", "\x1b[31m"}), "tandem $'\\x1b[31m'");
  EXPECT_EQ(shell_command({"tandem", "r\xe9sum\xe9.json"}), "tandem $'r\\xe9sum\\xe9.json'");
  EXPECT_EQ(shell_command({"tandem", "a'b\\\n"}), "tandem $'a\\'b\\\\\\x0a'");
  EXPECT_EQ(shell_command({"tandem", "caf\u00e9"}), "tandem caf\u00e9");  // valid UTF-8 stays readable
}

TEST(Json, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  nlohmann::json doc = {{"command", "tandem --json r\xe9sultat.json"}, {"gpu", "H200\xff"}};
  EXPECT_THROW((void)doc.dump(), nlohmann::json::type_error);  // what used to lose a run's results
  const std::string text = tandem::bench::json_text(doc, 2);
  const auto back = nlohmann::json::parse(text);
  EXPECT_EQ(back["command"], "tandem --json r\xef\xbf\xbdsultat.json");
  EXPECT_EQ(back["gpu"], "H200\xef\xbf\xbd");
  EXPECT_EQ(tandem::bench::json_text({{"a", 1}}, -1), "{\"a\":1}");
}

TEST(Json, TheDocumentCarriesItsSchemaVersionAndCompleteness) {
  tandem::bench::RunInfo info;
  info.command = "tandem bench \xff";
  auto doc = tandem::bench::to_json(info, {}, {});
  EXPECT_EQ(doc["schema_version"], 2);
  EXPECT_EQ(doc["complete"], true);
  EXPECT_EQ(tandem::bench::to_json(info, {}, {}, false)["complete"], false);
  EXPECT_NO_THROW(nlohmann::json::parse(tandem::bench::json_text(doc, 2)));
}

}  // namespace
