#include "tandem/kernel_names.h"

#include <cctype>

namespace tandem {
namespace {

constexpr std::string_view kNcclPrefixes[] = {"ncclDevKernel_", "ncclSymkDevKernel_"};

bool starts_with_nccl_prefix(std::string_view s) {
  for (const auto prefix : kNcclPrefixes)
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
  return starts_with_nccl_prefix(name) || starts_with_nccl_prefix(first_mangled_identifier(name));
}

bool is_copy_engine_kernel_name(std::string_view name) {
  const bool in_tandem = name.substr(0, 10) == "_ZN6tandem" || name.substr(0, 8) == "tandem::";
  return in_tandem && name.find("sum_chunks") != std::string_view::npos;
}

}  // namespace tandem
