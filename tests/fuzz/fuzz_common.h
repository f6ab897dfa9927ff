#pragma once
// Shared by the fuzz targets: turning the fuzzer's bytes into the text a parser
// takes, and failing loudly when an invariant breaks (libFuzzer records an
// abort as a crash, with the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

namespace tandem_fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

[[noreturn]] inline void invariant_broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n  %s\n", what, detail.c_str());
  std::abort();
}

// Splits text into lines (without the '\n').
template <typename Visit>
void for_each_line(std::string_view text, Visit visit) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    visit(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// An environment written as NAME=VALUE lines (the first '=' separates; a later
// line for the same name wins, as the last export would). Lines without '=' are
// passed to `other`.
template <typename Other>
std::map<std::string, std::string> environment_of(std::string_view text, Other other) {
  std::map<std::string, std::string> variables;
  for_each_line(text, [&](std::string_view line) {
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      other(line);
      return;
    }
    variables[std::string(line.substr(0, equals))] = std::string(line.substr(equals + 1));
  });
  return variables;
}

}  // namespace tandem_fuzz

// Aborts with both texts when `condition` fails.
#define FUZZ_CHECK(condition, detail)                                        \
  do {                                                                       \
    if (!(condition)) ::tandem_fuzz::invariant_broken(#condition, (detail)); \
  } while (0)
