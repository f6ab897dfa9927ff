#pragma once
// Facts about an enum's values as a table in the enum's order, one definition of the lookup.
#include <algorithm>
#include <cstddef>

namespace tandem {

// table[e]; a value past the end (an int cast by a C caller) reads as the last entry.
template <class Entry, size_t N, class Enum>
const Entry& table_entry(const Entry (&table)[N], Enum e) {
  return table[std::min<size_t>(static_cast<size_t>(e), N - 1)];
}

// Whether the table has one entry per value of the enum whose last value is `last` (for a static_assert).
template <class Entry, size_t N, class Enum>
constexpr bool covers(const Entry (&)[N], Enum last) {
  return N == static_cast<size_t>(last) + 1;
}

}  // namespace tandem
