#include "gpu_commands.h"

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <vector>

#include "command_line.h"
#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/text.h"

namespace tandem::cli {

const GpuCommands& gpu_commands() {
  static const GpuCommands* loaded = nullptr;
  if (loaded) return *loaded;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  TANDEM_REQUIRE(!ec, "cannot read /proc/self/exe to find libtandem_gpu_commands.so: " + ec.message());
  std::vector<std::string> tried;
  for (const char* libdir : {"lib", "lib64"}) {
    const fs::path candidate = (self.parent_path() / ".." / libdir / "libtandem_gpu_commands.so").lexically_normal();
    if (!fs::exists(candidate, ec)) {
      tried.push_back(candidate.string());
      continue;
    }
    // RTLD_LOCAL: its copies of tandem's code stay its own; RTLD_NOW: a missing symbol fails here.
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = ::dlerror();
      TANDEM_USER_ERROR("this subcommand needs the GPU libraries (CUDA, cuBLASLt, NCCL), and " +
                        quoted_value(candidate.string()) + " cannot be loaded: " + printable(why ? why : "?", 500));
    }
    using Entry = const GpuCommands* (*)(const char*);
    const auto entry = reinterpret_cast<Entry>(::dlsym(handle, "tandem_gpu_commands"));
    TANDEM_REQUIRE(entry, quoted_value(candidate.string()) + " is not tandem's GPU commands module");
    const GpuCommands* commands = entry(command_line().c_str());
    TANDEM_REQUIRE(commands && commands->version == kGpuCommandsVersion,
                   quoted_value(candidate.string()) + " comes from another build of tandem: reinstall it");
    loaded = commands;
    return *loaded;
  }
  TANDEM_THROW("cannot find libtandem_gpu_commands.so (looked for " + join(tried, ", ") +
               "); build the tandem_gpu_commands target");
}

}  // namespace tandem::cli
