// tune --metric's matcher (program_tools/metric_pattern.h): ECMAScript's answers on the subset it takes,
// one-line refusals outside it, and time linear in the text where std::regex backtracks or recurses
// (a pattern such as '^((?:a+)+)b', a line of megabytes).
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "program_tools/metric_pattern.h"
#include "program_tools/program_metric.h"
#include "tandem/error.h"

namespace {

using tandem::program_tools::MetricPattern;
using tandem::program_tools::ProgramMetric;
using Captures = std::vector<std::optional<std::string>>;
using Clock = std::chrono::steady_clock;

Captures all(const std::string& pattern, const std::string& line) {
  return MetricPattern(pattern).captures_in(line, 100);
}

std::string error_of(const std::string& pattern) {
  try {
    MetricPattern p(pattern);
  } catch (const tandem::UserError& e) {
    return e.what();
  }
  return "";
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST(metric_pattern, LiteralsClassesAndEscapes) {
  EXPECT_EQ(all("\"step_ms_median\": ([0-9.]+)", "x \"step_ms_median\": 1.25, y"), Captures{"1.25"});
  EXPECT_EQ(all("v=(\\d+)", "v=1 v=22 v=x v=333"), (Captures{"1", "22", "333"}));
  EXPECT_EQ(all("(\\w+)=", "a_1=2 b=3"), (Captures{"a_1", "b"}));
  EXPECT_EQ(all("t:\\s*(\\S+)", "t:   4.5ms"), Captures{"4.5ms"});
  EXPECT_EQ(all("([^,]+),", "a,b,"), (Captures{"a", "b"}));
  EXPECT_EQ(all("\\x41(\\u00e9)", "A\xc3\xa9"), Captures{"\xc3\xa9"});
  EXPECT_EQ(all("\\((\\d)\\)\\.", "(7)."), Captures{"7"});
  EXPECT_EQ(all("[-+](\\d)", "-1+2"), (Captures{"1", "2"}));
  EXPECT_EQ(all("\\{\"a\": (\\d+)\\}", "{\"a\": 5}"), Captures{"5"});
  EXPECT_EQ(all("{(\\d)}", "{5}"), Captures{"5"});  // a '{' that starts no quantifier is a literal
}

TEST(metric_pattern, GreedyLazyAndAlternationFollowEcmaScriptPriorities) {
  EXPECT_EQ(all("<(.*)>", "<a><b>"), Captures{"a><b"});
  EXPECT_EQ(all("<(.*?)>", "<a><b>"), (Captures{"a", "b"}));
  EXPECT_EQ(all("(a|ab)c", "abc"), Captures{"ab"});
  EXPECT_EQ(all("(ab|a)", "ab"), Captures{"ab"});
  EXPECT_EQ(all("(a|ab)", "ab"), Captures{"a"});  // leftmost-first, not longest
  EXPECT_EQ(all("(\\d{2,3})", "12345"), (Captures{"123", "45"}));
  EXPECT_EQ(all("(\\d{2,3}?)", "12345"), (Captures{"12", "34"}));
  EXPECT_EQ(all("x(\\d{2})", "x1 x12 x123"), (Captures{"12", "12"}));
  EXPECT_EQ(all("x(\\d{2,})", "x1 x12 x123"), (Captures{"12", "123"}));
  EXPECT_EQ(all("a(b)?c", "ac abc"), (Captures{std::nullopt, "b"}));
  EXPECT_EQ(all("(a*)*b", "aab"), Captures{"aa"});  // no empty last iteration, as ECMAScript
}

TEST(metric_pattern, AnchorsAndWordBoundaries) {
  EXPECT_EQ(all("^(\\d+)", "12 34"), Captures{"12"});
  EXPECT_EQ(all("(\\d+)$", "12 34"), Captures{"34"});
  EXPECT_EQ(all("^x(\\d)", "ax1"), Captures{});
  EXPECT_EQ(all("\\bms=(\\d)", "xms=1 ms=2"), Captures{"2"});
  EXPECT_EQ(all("\\Bms=(\\d)", "xms=1 ms=2"), Captures{"1"});
  EXPECT_EQ(all("()", "ab").size(), 3u);  // an empty match moves on by one byte
}

TEST(metric_pattern, RefusesWhatItDoesNotMatchWithOneLine) {
  EXPECT_NE(error_of("(a)\\1").find("back-reference"), std::string::npos);
  EXPECT_NE(error_of("(?=a)(b)").find("look-around"), std::string::npos);
  EXPECT_NE(error_of("(?<n>a)").find("look-around or a named group"), std::string::npos);
  EXPECT_NE(error_of("([0-9").find("unclosed '['"), std::string::npos);
  EXPECT_NE(error_of("(a").find("unclosed '('"), std::string::npos);
  EXPECT_NE(error_of("a)").find("unmatched ')'"), std::string::npos);
  EXPECT_NE(error_of("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(error_of("a{5,2}").find("{5,2}"), std::string::npos);
  EXPECT_NE(error_of("a{1001}").find("more than 1000 times"), std::string::npos);
  EXPECT_NE(error_of("(?:a{1000}){1000}").find("too large"), std::string::npos);
  EXPECT_NE(error_of(std::string(1001, 'a')).find("longer than 1000"), std::string::npos);
  EXPECT_NE(error_of("\\q").find("\\q"), std::string::npos);
  EXPECT_NE(error_of("[z-a]").find("out of order"), std::string::npos);
  const std::string error = error_of("(a)\\1\x1b[31m");
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;  // the pattern is echoed printable
  EXPECT_EQ(error_of("(?:x|y)(\\d)"), "");
}

TEST(metric_pattern, CatastrophicPatternsRunInLinearTime) {
  // Each of these takes std::regex exponential time (or a stack overflow) on such lines.
  const std::string as(100000, 'a');
  for (const std::string pattern : {"^((?:a+)+)b", "((?:a|a)*)b", "((?:a*)*)b", "(a*a*a*a*a*)b"}) {
    const auto start = Clock::now();
    EXPECT_EQ(all(pattern, as), Captures{}) << pattern;
    EXPECT_LT(seconds_since(start), 5.0) << pattern;
  }
}

TEST(metric_pattern, LinesOfMegabytesNeitherCrashNorHideTheMetric) {
  // The sweep's reproducer: a progress bar of 40,000 characters, then the metric, on one line.
  const ProgramMetric metric(".*\"step_ms_median\": ([0-9.]+)", false);
  EXPECT_EQ(metric.values_in_text(std::string(40000, 'x') + "\"step_ms_median\": 1.5\n"), std::vector<double>{1.5});
  // 8 MB on one line: searched in its first and last MiB, so the metric at either end is found.
  const ProgramMetric v("v=([0-9]+)", false);
  const std::string long_line = "v=1" + std::string(8 << 20, 'a') + "v=2\nv=3\n";
  const auto start = Clock::now();
  EXPECT_EQ(v.values_in_text(long_line), (std::vector<double>{1, 2, 3}));
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST(metric_pattern, OnlyDecimalNumbersCount) {
  const ProgramMetric metric("v=(\\S+)", false);
  std::vector<std::string> not_numbers;
  EXPECT_EQ(metric.values_in_text("v=0x10 v=inf v=nan v=1e3 v=-2.5 v=.5 v=7. v=1e v=+3\n", &not_numbers),
            (std::vector<double>{1000, -2.5, 0.5, 7, 3}));
  EXPECT_EQ(not_numbers, (std::vector<std::string>{"0x10", "inf", "nan", "1e"}));
}

TEST(metric_pattern, AnEmptyPatternIsRefused) { EXPECT_THROW(ProgramMetric("", false), tandem::UserError); }

}  // namespace
