#include "kernel_classification.h"

#include <cxxabi.h>
#include <fnmatch.h>

#include <cstdlib>
#include <memory>

namespace tandem::preload {

const char* to_string(KernelKind kind) { return kind == KernelKind::Collective ? "nccl" : "compute"; }

KernelKind classify_kernel(std::string_view name) {
  return is_nccl_kernel_name(name) || is_tandem_collective_kernel_name(name) ? KernelKind::Collective
                                                                             : KernelKind::Compute;
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
