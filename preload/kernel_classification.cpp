#include "kernel_classification.h"

#include <cxxabi.h>
#include <fnmatch.h>

#include <cctype>
#include <cstdlib>
#include <memory>

namespace tandem::preload {
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

const char* to_string(KernelKind kind) { return kind == KernelKind::Collective ? "nccl" : "compute"; }

bool is_nccl_kernel_name(std::string_view name) {
  return starts_with_nccl_prefix(name) || starts_with_nccl_prefix(first_mangled_identifier(name));
}

KernelKind classify_kernel(std::string_view name) {
  return is_nccl_kernel_name(name) ? KernelKind::Collective : KernelKind::Compute;
}

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& pattern : patterns)
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

bool selected_by_patterns(const std::vector<std::string>& include, const std::vector<std::string>& exclude,
                          const std::string& raw_name, const std::string& demangled_name) {
  const auto matches = [&](const std::vector<std::string>& patterns) {
    return matches_any(patterns, raw_name) || matches_any(patterns, demangled_name);
  };
  if (!include.empty() && !matches(include)) return false;
  return !matches(exclude);
}

}  // namespace tandem::preload
