#include "tandem/error.h"

#include <cstring>

namespace tandem {

namespace {
const char* basename_of(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}
}  // namespace

Error::Error(const std::string& what, const char* file, int line)
    : std::runtime_error(what + " [" + basename_of(file) + ":" + std::to_string(line) + "]"),
      message_(what),
      file_(file),
      line_(line) {}

Error::Error(Plain, const std::string& message, const char* file, int line)
    : std::runtime_error(message), message_(message), file_(file), line_(line) {}

UserError::UserError(const std::string& message, const char* file, int line) : Error(Plain{}, message, file, line) {}

void throw_error(const char* file, int line, const std::string& what) { throw Error(what, file, line); }

void throw_user_error(const char* file, int line, const std::string& message) { throw UserError(message, file, line); }

}  // namespace tandem
