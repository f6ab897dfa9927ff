#include "tandem/footprint_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <set>

#include "tandem/error.h"
#include "tandem/text.h"

namespace tandem {

namespace {

constexpr const char* kAcceptedKeys = "threads, regs, smem, dsmem, cluster, name";
// Far above any GPU's per-block shared memory, and far enough below int64's range that the model's
// sums of sizes cannot overflow.
constexpr int64_t kMaxValue = int64_t{1} << 40;

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); });
}

// A non-negative integer, optionally followed by a binary size suffix (B, KiB, MiB) when `sizes`.
int64_t parse_number(std::string_view key, std::string_view value, bool sizes) {
  size_t digits = 0;
  while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits]))) ++digits;
  std::string_view suffix = value.substr(digits);
  int64_t multiplier = 1;
  bool suffix_ok = suffix.empty();
  if (sizes && !suffix.empty()) {
    if (iequals(suffix, "B")) multiplier = 1, suffix_ok = true;
    if (iequals(suffix, "KiB")) multiplier = 1024, suffix_ok = true;
    if (iequals(suffix, "MiB")) multiplier = 1024 * 1024, suffix_ok = true;
  }
  if (digits == 0 || !suffix_ok) {
    TANDEM_THROW("footprint key '" + std::string(key) + "': '" + std::string(value) + "' is not " +
                 (sizes ? "a byte count (e.g. 4096, 48KiB)" : "a non-negative integer"));
  }
  // Bounded by value, not by digit count: a digit limit let "1000000MiB" in while its canonical
  // form in bytes (13 digits) was refused, so footprint_to_string's text did not parse.
  int64_t count = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + digits, count);
  (void)end;
  if (error != std::errc() || count > kMaxValue / multiplier)
    TANDEM_THROW("footprint key '" + std::string(key) + "': '" + std::string(value) + "' is too large" +
                 (sizes ? " (at most 1TiB)" : ""));
  return count * multiplier;
}

int parse_int(std::string_view key, std::string_view value) {
  const int64_t v = parse_number(key, value, false);
  if (v > std::numeric_limits<int>::max()) TANDEM_THROW("footprint key '" + std::string(key) + "': value too large");
  return static_cast<int>(v);
}

}  // namespace

KernelFootprint parse_footprint(std::string_view text) {
  KernelFootprint k;
  std::set<std::string> seen;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      TANDEM_THROW("footprint item '" + std::string(item) + "' is not key=value; accepted keys: " + kAcceptedKeys);
    const std::string key(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    if (!seen.insert(key).second) TANDEM_THROW("footprint key '" + key + "' given twice");
    if (key == "threads") {
      k.threads_per_block = parse_int(key, value);
    } else if (key == "regs") {
      k.regs_per_thread = parse_int(key, value);
    } else if (key == "smem") {
      k.static_smem = parse_number(key, value, true);
    } else if (key == "dsmem") {
      k.dynamic_smem = parse_number(key, value, true);
    } else if (key == "cluster") {
      k.cluster_size = parse_int(key, value);
    } else if (key == "name") {
      k.name = std::string(value);
    } else {
      TANDEM_THROW("unknown footprint key '" + key + "'; accepted keys: " + kAcceptedKeys);
    }
  }
  for (const char* required : {"threads", "regs"}) {
    if (!seen.count(required))
      TANDEM_THROW(std::string("footprint '") + std::string(text) + "' lacks required key '" + required +
                   "'; accepted keys: " + kAcceptedKeys);
  }
  if (k.threads_per_block < 1) TANDEM_THROW("footprint key 'threads' must be at least 1");
  if (k.cluster_size < 1) TANDEM_THROW("footprint key 'cluster' must be at least 1");
  return k;
}

std::string footprint_to_string(const KernelFootprint& k) {
  std::string s = "threads=" + std::to_string(k.threads_per_block) + ",regs=" + std::to_string(k.regs_per_thread) +
                  ",smem=" + std::to_string(k.static_smem) + ",dsmem=" + std::to_string(k.dynamic_smem) +
                  ",cluster=" + std::to_string(k.cluster_size);
  if (!k.name.empty()) s += ",name=" + k.name;
  return s;
}

}  // namespace tandem
