#include "tandem/printable.h"

#include <cstdint>
#include <cstdio>

namespace tandem {

namespace {

uint32_t code_point(std::string_view text, size_t at, size_t length) {
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(text[at + i])); };
  switch (length) {
    case 1:
      return byte(0);
    case 2:
      return (byte(0) & 0x1f) << 6 | (byte(1) & 0x3f);
    case 3:
      return (byte(0) & 0x0f) << 12 | (byte(1) & 0x3f) << 6 | (byte(2) & 0x3f);
    default:
      return (byte(0) & 0x07) << 18 | (byte(1) & 0x3f) << 12 | (byte(2) & 0x3f) << 6 | (byte(3) & 0x3f);
  }
}

// Characters a terminal acts on rather than shows.
bool needs_escape(uint32_t c) {
  return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029 ||
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

std::string escape(uint32_t c, bool raw_byte) {
  if (!raw_byte && c == '\n') return "\\n";
  if (!raw_byte && c == '\t') return "\\t";
  if (!raw_byte && c == '\r') return "\\r";
  char buffer[16];
  if (raw_byte || c < 0x80)
    std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(c));
  else
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
  return buffer;
}

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf)
    length = 2;
  else if (lead >= 0xe0 && lead <= 0xef)
    length = 3;
  else if (lead >= 0xf0 && lead <= 0xf4)
    length = 4;
  else
    return 0;  // a continuation byte, or a lead byte only overlong or too large forms use
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i)
    if ((byte(i) & 0xc0) != 0x80) return 0;
  const uint32_t c = code_point(text, at, length);
  if ((length == 3 && c < 0x800) || (length == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
    return 0;
  return length;
}

std::string printable(std::string_view text, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  for (size_t at = 0; at < text.size();) {
    if (chars == max_chars) return out + "\u2026";
    const size_t length = utf8_sequence_length(text, at);
    if (length == 0) {
      out += escape(static_cast<unsigned char>(text[at]), true);
      at += 1;
    } else {
      const uint32_t c = code_point(text, at, length);
      if (needs_escape(c))
        out += escape(c, false);
      else
        out.append(text, at, length);
      at += length;
    }
    ++chars;
  }
  return out;
}

std::string quoted_value(std::string_view value) { return "'" + printable(value) + "'"; }

bool is_printable(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_sequence_length(text, at);
    if (length == 0 || needs_escape(code_point(text, at, length))) return false;
    at += length;
  }
  return true;
}

}  // namespace tandem
