#pragma once
// Facts about an enum's values as a table in the enum's order (a C array or a std::array), one
// definition of each lookup: an entry by value, a value by its name, and the build-time check that
// a table has one entry per value. Every enum table of tandem (the library, the interposer, the
// run contract's names) is read through these.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

namespace tandem {

// table[e]; a value past the end (an int cast by a C caller) reads as the last entry.
template <class Table, class Enum>
const auto& table_entry(const Table& table, Enum e) {
  return table[std::min<size_t>(static_cast<size_t>(e), std::size(table) - 1)];
}

// table[e], or `otherwise` for a value past the end.
template <class Entry, size_t N, class Enum>
Entry entry_or(const Entry (&table)[N], Enum e, Entry otherwise) {
  const auto i = static_cast<size_t>(e);
  return i < N ? table[i] : otherwise;
}

// The value whose name is `name`, from `names` (a table of names) in the enum's order; nullopt when
// none is.
template <class Enum, class Table>
std::optional<Enum> parse_entry(const Table& names, std::string_view name) {
  size_t i = 0;
  for (const auto& entry : names) {
    if (name == std::string_view(entry)) return static_cast<Enum>(i);
    ++i;
  }
  return std::nullopt;
}

// Whether the table has one entry per value of the enum whose last value is `last` (for a static_assert).
template <class Table, class Enum>
constexpr bool covers(const Table& table, Enum last) {
  return std::size(table) == static_cast<size_t>(last) + 1;
}

}  // namespace tandem
