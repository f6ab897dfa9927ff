#pragma once
// Text from a user (a value, a path, a variable, a file) shown back in a message: printable and
// bounded. A value echoed raw can carry terminal escapes (ESC [ ... recolours or clears a terminal),
// line breaks that forge further lines, bytes that are not UTF-8, or hundreds of megabytes.
#include <cstddef>
#include <string>
#include <string_view>

namespace tandem {

// How many characters of one echoed value a message shows.
inline constexpr size_t kShownChars = 200;

// `text` with every control character (C0, DEL, C1), every character that reorders or breaks a
// line (U+2028/2029, the bidirectional overrides) and every byte that is not part of valid UTF-8
// shown escaped (\n, \t, \r, \x1b, \xff, \u202e), cut after `max_chars` characters with "…".
std::string printable(std::string_view text, size_t max_chars = kShownChars);

// printable(value) between single quotes: how a message names the value it rejects.
std::string quoted_value(std::string_view value);

// The length (1-4) of the valid UTF-8 sequence at text[at], or 0 when the byte there starts none
// (stray continuation byte, overlong form, surrogate, beyond U+10FFFF, cut short).
size_t utf8_sequence_length(std::string_view text, size_t at);

// Whether printable() would show `text` unchanged (and whole, at any length).
bool is_printable(std::string_view text);

}  // namespace tandem
