#pragma once
// What a kernel is, from its name: a collective (NCCL) or compute, and whether the user's
// TANDEM_INCLUDE / TANDEM_EXCLUDE patterns select it. Pure string functions, run once per kernel
// (when the interposer first sees it), never on the launch path.
#include <string>
#include <string_view>
#include <vector>

#include "tandem/kernel_names.h"

namespace tandem::preload {

enum class KernelKind { Compute, Collective };
const char* to_string(KernelKind);

// Collective for NCCL's kernels and tandem's copy-engine collective kernels (tandem/kernel_names.h).
KernelKind classify_kernel(std::string_view name);

// The demangled form of an Itanium-mangled name, or the name itself.
std::string demangle(const std::string& name);

// fnmatch(3) glob match of `name` against any of `patterns`.
bool matches_any(const std::vector<std::string>& patterns, const std::string& name);

// Whether the controls apply to a kernel: included (no include patterns, or one matches) and not
// excluded (no exclude pattern matches). Each pattern is tried on the raw and the demangled name.
bool selected_by_patterns(const std::vector<std::string>& include, const std::vector<std::string>& exclude,
                          const std::string& raw_name, const std::string& demangled_name);

}  // namespace tandem::preload
