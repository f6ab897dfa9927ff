#pragma once
// Whether a hooked function exists in the process apart from the interposer: what the loader binds
// a program's reference to, through the interposer's exports (exports.cpp). Each export is an
// indirect function (STT_GNU_IFUNC): when the loader binds a reference to it, it asks
// export_target, which answers with the hook when some other loaded object defines the function, and
// with null when none does. So a program that probes an optional library through a weak symbol
// (`extern int ncclGroupStart(void) __attribute__((weak)); if (ncclGroupStart) ...`) sees it absent
// when it is absent, as without the interposer, and a program that calls it gets the hook. (_exit and
// _Exit, which libc defines in every process, are plain exports instead: exports.cpp says why.)
//
// The loader relocates a program's libraries before the preloaded interposer, and the program last.
// A resolver that runs before the interposer's own relocations are applied (a library loaded at
// start-up that refers to a hooked name) cannot look anything up yet: it answers with the hook, as an
// interposer without this would (docs/RUN.md, Limitations).
namespace tandem::preload {

// The address the loader binds `name` to: `hook`, or null when no other loaded object defines a
// function of that name. Async-safe in the loader's sense: called from relocation processing.
void* export_target(const char* name, void* hook) noexcept;

// Whether a loaded object other than this library defines `name` in its dynamic symbol table.
bool defined_elsewhere(const char* name) noexcept;

}  // namespace tandem::preload
