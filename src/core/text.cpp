#include "tandem/text.h"

#include <cstdio>

namespace tandem {

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

std::optional<uint64_t> parse_byte_count(std::string_view text, uint64_t max) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  uint64_t scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KiB")
    scale = uint64_t{1} << 10;
  else if (unit == "M" || unit == "MB" || unit == "MiB")
    scale = uint64_t{1} << 20;
  else if (unit == "G" || unit == "GB" || unit == "GiB")
    scale = uint64_t{1} << 30;
  if (digits == 0 || scale == 0) return std::nullopt;
  // Digit by digit against the bound: no multiplication can wrap (17179869185G is not 1G).
  const uint64_t limit = max / scale;
  uint64_t value = 0;
  for (char c : text.substr(0, digits)) {
    const auto digit = static_cast<uint64_t>(c - '0');
    if (digit > limit || value > (limit - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value * scale;
}

std::string pid_prefix(long pid) { return "tandem[" + std::to_string(pid) + "]: "; }

}  // namespace tandem
