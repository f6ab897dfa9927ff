// The launcher's environment (bench/ranks/launch_env.cpp): detect_launch,
// choose_device, choose_rendezvous, rendezvous_key. The input is NAME=VALUE
// lines (the variables); a line without
// '=' is --launch (default auto). Every refusal is a tandem::Error; an accepted
// launch is consistent (0 <= rank < world size, local rank below the local
// world size), the chosen GPU is a visible one and the rendezvous key is a
// plain file name.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "fuzz_common.h"
#include "ranks/launch_env.h"
#include "tandem/error.h"

namespace {

using tandem::bench::LaunchEnv;
using tandem::bench::LaunchMode;
using tandem::bench::LaunchRequest;

void check_launch(const LaunchEnv& launch, const std::string& requested, const std::string& input) {
  FUZZ_CHECK(launch.world_size >= 1 && launch.rank >= 0 && launch.rank < launch.world_size, input);
  FUZZ_CHECK(launch.local_rank >= -1 && launch.local_world_size >= -1, input);
  if (launch.local_world_size > 0) FUZZ_CHECK(launch.local_rank < launch.local_world_size, input);
  if (launch.mode == LaunchMode::Threads) FUZZ_CHECK(launch.rank == 0 && launch.world_size == 1, input);
  // Detected worlds of one run as threads.
  if (requested == "auto" && launch.mode != LaunchMode::Threads) FUZZ_CHECK(launch.world_size > 1, input);
}

void check_devices(const LaunchEnv& launch, const std::string& input) {
  for (int visible : {0, 1, 2, 8}) {
    for (int device : {-1, 0, 3}) {
      for (bool shared : {false, true}) {
        LaunchRequest request;
        request.device = device;
        request.allow_shared_gpu = shared;
        try {
          const int chosen = tandem::bench::choose_device(launch, request, visible);
          FUZZ_CHECK(chosen >= 0 && chosen < visible, input);
          if (device >= 0) FUZZ_CHECK(chosen == device, input);
        } catch (const tandem::Error&) {
        }
      }
    }
  }
}

void check_rendezvous(const LaunchEnv& launch, const tandem::bench::Environment& env, const std::string& input) {
  const std::string key = tandem::bench::rendezvous_key(launch, env);
  FUZZ_CHECK(!key.empty() && key.size() <= 120 && key != "." && key != "..", input + " -> key " + key);
  for (char c : key)
    FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_',
               input + " -> key " + key);
  for (bool mpi : {false, true}) {
    try {
      const auto plan = tandem::bench::choose_rendezvous(launch, LaunchRequest{}, env, mpi);
      if (plan.kind != tandem::bench::RendezvousKind::Mpi) FUZZ_CHECK(!plan.where.empty(), input);
      FUZZ_CHECK(!plan.describe().empty(), input);
    } catch (const tandem::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = tandem_fuzz::text_of(data, size);
  std::string requested = "auto";
  std::map<std::string, std::string> variables =
      tandem_fuzz::environment_of(input, [&](std::string_view line) { requested = std::string(line); });
  const tandem::bench::Environment env = tandem::bench::map_environment(std::move(variables));

  LaunchEnv launch;
  try {
    launch = tandem::bench::detect_launch(requested, env);
  } catch (const tandem::Error&) {
    return 0;
  }
  check_launch(launch, requested, input);
  check_devices(launch, input);
  check_rendezvous(launch, env, input);
  return 0;
}
