#pragma once
// Where the interposer tests find what they run. The build's absolute paths are the defaults; a
// build tree copied to another machine or path (scripts/gpu-check.sh carries build/bin, build/lib,
// build/tests) is found from the binaries' own locations instead:
//   tandem                  $TANDEM_CLI, else the build's
//   libtandem_preload.so    $TANDEM_PRELOAD_LIB, else <tandem>/../lib, else the build's
//   fake_driver_client      <this test's directory>/fake_cuda, else the build's
//   fake_cupti_client       likewise; the fake CUPTI beside it; libtandem_timeline.so beside the interposer
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tandem_preload_test {

inline std::string tandem_path() {
  const char* from_env = std::getenv("TANDEM_CLI");
  return from_env && *from_env ? from_env : TANDEM_CLI_PATH;
}

inline std::string preload_library_path() {
  if (const char* from_env = std::getenv("TANDEM_PRELOAD_LIB"); from_env && *from_env) return from_env;
  const auto beside = std::filesystem::path(tandem_path()).parent_path() / ".." / "lib" / "libtandem_preload.so";
  std::error_code ec;
  if (std::filesystem::exists(beside, ec)) return std::filesystem::canonical(beside, ec).string();
  return TANDEM_PRELOAD_LIB_PATH;
}

#ifdef TANDEM_FAKE_DRIVER_CLIENT_PATH
inline std::string fake_driver_client_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto beside = self.parent_path() / "fake_cuda" / "fake_driver_client";
  if (!ec && std::filesystem::exists(beside, ec)) return beside.string();
  return TANDEM_FAKE_DRIVER_CLIENT_PATH;
}
#endif

#ifdef TANDEM_FAKE_CUPTI_CLIENT_PATH
// The fake CUPTI's client and the fake itself, beside the fake driver.
inline std::string fake_cupti_client_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto beside = self.parent_path() / "fake_cuda" / "fake_cupti_client";
  if (!ec && std::filesystem::exists(beside, ec)) return beside.string();
  return TANDEM_FAKE_CUPTI_CLIENT_PATH;
}
inline std::string fake_cupti_path() {
  return (std::filesystem::path(fake_cupti_client_path()).parent_path() / "libcupti.so.13").string();
}
// The timeline's recorder, beside the interposer.
inline std::string timeline_library_path() {
  const auto beside = std::filesystem::path(preload_library_path()).parent_path() / "libtandem_timeline.so";
  std::error_code ec;
  if (std::filesystem::exists(beside, ec)) return beside.string();
  return TANDEM_TIMELINE_LIB_PATH;
}
#endif

}  // namespace tandem_preload_test
