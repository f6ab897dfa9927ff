// interposer_program MODE: runs one of the programs of programs.h and prints its JSON line.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "programs.h"
#include "tandem/cuda_check.h"

namespace interposer_programs {

std::vector<uint32_t> random_words(size_t n, uint32_t seed) {
  std::mt19937 engine(seed);
  std::vector<uint32_t> out(n);
  for (auto& w : out) w = static_cast<uint32_t>(engine());
  return out;
}

uint32_t* upload(const std::vector<uint32_t>& host) {
  uint32_t* device = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&device, host.size() * sizeof(uint32_t)));
  TANDEM_CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
  return device;
}

std::vector<uint32_t> download(const uint32_t* device, size_t n) {
  TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint32_t> host(n);
  TANDEM_CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

unsigned grid_for(size_t n, int threads, unsigned limit) {
  const size_t blocks = (n + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
  return static_cast<unsigned>(blocks < limit ? blocks : limit);
}

}  // namespace interposer_programs

int main(int argc, char** argv) {
  using namespace interposer_programs;
  // The forked child execs this same program, wherever it was found.
  const std::string self = "/proc/self/exe";
  const std::map<std::string, std::function<Result()>> modes = {
      {"graph", graph_program},     {"fork", [&] { return fork_program(self); }},
      {"threads", threads_program}, {"cooperative", cooperative_program},
      {"cluster", cluster_program}, {"ptsz", ptsz_program},
  };
  const std::string mode = argc == 2 ? argv[1] : "";
  try {
    if (mode == "fork-exec-child") return fork_exec_child();
    const auto found = modes.find(mode);
    if (found == modes.end()) {
      std::fprintf(stderr, "usage: interposer_program graph|fork|threads|cooperative|cluster|ptsz\n");
      return 2;
    }
    const Result result = found->second();
    const json line = {{"program", mode}, {"ok", result.ok}, {"digest", result.digest}};
    std::printf("%s\n", line.dump().c_str());
    return result.ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "interposer_program %s: error: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
