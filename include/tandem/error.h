#pragma once
// Errors carry the file and line where they were detected and propagate as exceptions to main(),
// the only place that exits. Library code never prints and never exits.
//
// Two kinds: an Error is tandem's own failure (a CUDA call, a broken invariant) and its message ends
// in " [file.cpp:line]" so it can be traced; a UserError is a mistake in what the user gave (a
// value, a path, a launcher variable) and reads as one plain line naming it, without a location.
#include <stdexcept>
#include <string>
#include <utility>

namespace tandem {

class Error : public std::runtime_error {
 public:
  Error(const std::string& what, const char* file, int line);
  const char* file() const { return file_; }
  int line() const { return line_; }
  // The message without the location.
  const std::string& message() const { return message_; }

 protected:
  struct Plain {};
  // what() == message: for UserError.
  Error(Plain, const std::string& message, const char* file, int line);

 private:
  std::string message_;
  const char* file_;
  int line_;
};

class UserError : public Error {
 public:
  UserError(const std::string& message, const char* file, int line);
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& what);
[[noreturn]] void throw_user_error(const char* file, int line, const std::string& message);

// Runs `check` (parsing or validating what the user gave) and turns any Error it throws into a
// UserError with the same message: the parsers (policies, footprints, GPU names) throw plain
// Errors because they cannot know whether their text came from a user or from tandem itself.
template <typename Check>
decltype(auto) checking_input(Check&& check) {
  try {
    return std::forward<Check>(check)();
  } catch (const UserError&) {
    throw;
  } catch (const Error& e) {
    throw UserError(e.message(), e.file(), e.line());
  }
}

}  // namespace tandem

#define TANDEM_THROW(msg) ::tandem::throw_error(__FILE__, __LINE__, (msg))
#define TANDEM_REQUIRE(cond, msg)                                  \
  do {                                                             \
    if (!(cond)) ::tandem::throw_error(__FILE__, __LINE__, (msg)); \
  } while (0)
// A user's mistake: one plain line naming the bad value (tandem::quoted_value() echoes it safely).
#define TANDEM_USER_ERROR(msg) ::tandem::throw_user_error(__FILE__, __LINE__, (msg))
#define TANDEM_CHECK_INPUT(cond, msg)                                   \
  do {                                                                  \
    if (!(cond)) ::tandem::throw_user_error(__FILE__, __LINE__, (msg)); \
  } while (0)
