#pragma once
// Errors carry the file and line where they were detected and propagate as exceptions to main(),
// the only place that exits. Library code never prints and never exits.
#include <stdexcept>
#include <string>

namespace tandem {

class Error : public std::runtime_error {
 public:
  Error(const std::string& what, const char* file, int line);
  const char* file() const { return file_; }
  int line() const { return line_; }

 private:
  const char* file_;
  int line_;
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& what);

}  // namespace tandem

#define TANDEM_THROW(msg) ::tandem::throw_error(__FILE__, __LINE__, (msg))
#define TANDEM_REQUIRE(cond, msg)                \
  do {                                           \
    if (!(cond)) ::tandem::throw_error(__FILE__, __LINE__, (msg)); \
  } while (0)
