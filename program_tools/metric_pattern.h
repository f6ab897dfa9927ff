#pragma once
// The pattern of `tandem tune --metric`: a regular expression in a subset of ECMAScript syntax,
// matched in time linear in the text (a Pike virtual machine: every thread of the automaton
// advances one byte at a time, never backtracks), with no recursion and bounded memory. A program's
// output is not ours: a line of megabytes or a pattern such as '^((?:a+)+)b' must cost no more than
// reading the line, never a stack overflow or minutes of CPU (std::regex does both).
//
// The subset (docs/RUN.md, Tuning a program): literal characters; `.` (any byte); character
// classes `[a-z0-9_.]`, `[^...]`; escapes \d \D \w \W \s \S, \t \n \r \f \v \0, \xHH, \uHHHH (as
// its UTF-8 bytes), and any escaped punctuation (`\.`, `\(`, `\"`); groups `( )` and `(?: )`;
// alternation `|`; quantifiers `*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}` (n, m <= 1000), each greedy or
// lazy (`*?`); anchors `^`, `$` (the line's start and end) and `\b`, `\B`. A `{` that does not
// start a quantifier is a literal, as in ECMAScript's Annex B. Not supported, refused with one line:
// back-references (\1), look-around ((?=, (?!, (?<=, (?<!) and named groups. Matching is
// leftmost-first with ECMAScript's priorities (greedy takes the longest, lazy the shortest), on
// bytes: `.` and the classes see UTF-8 text one byte at a time.
#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::program_tools {

class MetricPattern {
 public:
  // Throws tandem::UserError naming the pattern for anything outside the subset, a pattern longer
  // than kMaxPatternChars or one whose automaton would exceed kMaxInstructions.
  explicit MetricPattern(std::string_view pattern);

  static constexpr size_t kMaxPatternChars = 1000;
  static constexpr size_t kMaxInstructions = 20000;

  // Capturing groups in the pattern.
  int groups() const { return groups_; }

  // The text of capture group 1 of each non-overlapping match in `line`, left to right (an empty
  // match moves on by one byte), at most `max_matches`. A group that took no part in a match gives
  // nullopt.
  std::vector<std::optional<std::string>> captures_in(std::string_view line, size_t max_matches) const;

 private:
  enum class Op : uint8_t {
    Byte,
    Class,
    Any,
    Split,
    Jump,
    Save,
    Match,
    LineStart,
    LineEnd,
    WordBoundary,
    NotWordBoundary
  };
  struct Instruction {
    Op op;
    uint8_t byte = 0;
    int a = 0;  // Class: the class index; Split/Jump: the (first) target; Save: the slot
    int b = 0;  // Split: the second target (lower priority)
  };
  friend class MetricPatternCompiler;

  // One search from `from`: the captures {start, end, group start, group end} of the leftmost-first
  // match, or nullopt.
  std::optional<std::array<ptrdiff_t, 4>> search(std::string_view text, size_t from) const;

  std::vector<Instruction> program_;
  std::vector<std::bitset<256>> classes_;
  std::string prefix_;  // bytes every match starts with (after an optional ^): where to look first
  bool anchored_ = false;
  int groups_ = 0;
};

}  // namespace tandem::program_tools
