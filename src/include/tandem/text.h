#pragma once
// The small text helpers every part of tandem shares (the library, the interposer, the benchmark
// and the command), one definition each.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

// "a,b,c" for {"a", "b", "c"} with separator ","; "" for none.
std::string join(const std::vector<std::string>& items, std::string_view separator = ",");
// `text` without the ASCII white space (space, \t, \n, \v, \f, \r) at either end.
std::string_view trim(std::string_view text);
// A number as printf's %g writes it: 0.5, 120, 1e+06 (seconds, MiB, factors in messages and headers).
std::string number(double value);
// A byte count as users write one: digits with an optional binary unit (B; K, KB, KiB; M, MB, MiB; G, GB,
// GiB): "256MiB", "4G", "1048576". nullopt when it is not one, or is above `max`.
std::optional<uint64_t> parse_byte_count(std::string_view text, uint64_t max);
// "tandem[1234]: ": what starts every line a process under the interposer writes.
std::string pid_prefix(long pid);

}  // namespace tandem
