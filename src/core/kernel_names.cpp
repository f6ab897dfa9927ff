#include "tandem/kernel_names.h"

#include <cctype>

namespace tandem {
namespace {

constexpr std::string_view kNcclPrefixes[] = {"ncclDevKernel_", "ncclSymkDevKernel_"};
constexpr std::string_view kTandemPrefixes[] = {"tandemCollective_"};

template <size_t N>
bool starts_with_any(std::string_view s, const std::string_view (&prefixes)[N]) {
  for (const auto prefix : prefixes)
    if (s.substr(0, prefix.size()) == prefix) return true;
  return false;
}

// The first source identifier of an Itanium-mangled name: "_Z" [ "L" ] [ "N" ] <length><identifier>.
std::string_view first_mangled_identifier(std::string_view name) {
  if (name.substr(0, 2) != "_Z") return {};
  name.remove_prefix(2);
  if (!name.empty() && name.front() == 'L') name.remove_prefix(1);
  if (!name.empty() && name.front() == 'N') name.remove_prefix(1);
  size_t length = 0;
  size_t digits = 0;
  while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) {
    length = length * 10 + static_cast<size_t>(name[digits] - '0');
    ++digits;
  }
  if (digits == 0 || digits + length > name.size()) return {};
  return name.substr(digits, length);
}

}  // namespace

bool is_nccl_kernel_name(std::string_view name) {
  return starts_with_any(name, kNcclPrefixes) || starts_with_any(first_mangled_identifier(name), kNcclPrefixes);
}

bool is_tandem_collective_kernel_name(std::string_view name) {
  return starts_with_any(name, kTandemPrefixes) || starts_with_any(first_mangled_identifier(name), kTandemPrefixes);
}

}  // namespace tandem
