#pragma once
// What the fake NCCL's client programs share: each NCCL call is one named step, whose result and
// errno after it go into one JSON object the program prints.
#include <nccl.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <string>

namespace fake_nccl_client {

inline nlohmann::json& steps() {
  static nlohmann::json s = nlohmann::json::object();
  return s;
}

// Runs one NCCL call with errno set to `errno_before`, and records its result and errno after.
template <class Call>
ncclResult_t step(const std::string& name, const Call& call, int errno_before = 0) {
  errno = errno_before;
  const ncclResult_t result = call();
  steps()[name] = {{"result", static_cast<int>(result)}, {"errno", errno}};
  return result;
}

}  // namespace fake_nccl_client
