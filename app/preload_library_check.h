#pragma once
// Whether a file is an interposer `tandem run` may preload: an ELF shared object of this machine's
// class, byte order and architecture that exports the interposer's entry points (dlsym, dlerror and
// every hook of tandem/hook_list.h). Read from the file's headers and dynamic symbol table, never
// executed or loaded: a wrong file (TANDEM_PRELOAD_LIB=/etc/passwd, a 32-bit or foreign build, some
// other library) is refused before the program starts, instead of the loader skipping it with a
// warning and the program running without any control.
#include <string>

namespace tandem::cli {

// "" if `path` is such a library, else what is wrong, as a few plain words ("is not an ELF file").
std::string why_not_interposer(const std::string& path);

}  // namespace tandem::cli
