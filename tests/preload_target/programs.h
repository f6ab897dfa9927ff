#pragma once
// interposer_program: what real programs do with CUDA, one mode each (graph capture and replay, fork
// after CUDA is initialised, 16 threads launching at once, cooperative launches, cluster launches,
// per-thread default streams). Each mode prints one JSON line {"program", "ok", "digest"}: the
// digest holds checksums of outputs computed from random inputs of a fixed seed, identical with and
// without `tandem run` under any policy (tests/gpu/test_interposer_programs.cpp); "ok" says the
// outputs matched a CPU reference, so a wrong result is caught even when both runs agree.
#include <cuda_runtime.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace interposer_programs {

using json = nlohmann::json;

// What a mode returns: its digest and whether every output matched its reference.
struct Result {
  json digest = json::object();
  bool ok = true;
  // Records one comparison with the reference; the digest keeps the GPU's value.
  void check(bool matches) { ok = ok && matches; }
};

Result graph_program();
Result fork_program(const std::string& self);
Result threads_program();
Result cooperative_program();
Result cluster_program();
Result ptsz_program();
// The mode a forked child execs (fork_program): a small kernel, its checksum as one line on stdout.
int fork_exec_child();

// `n` words of std::mt19937 seeded with `seed`: the engine's output is fixed by the standard (its
// distributions are not), so every platform draws the same inputs.
std::vector<uint32_t> random_words(size_t n, uint32_t seed);
// A device copy of `host`; the caller frees it.
uint32_t* upload(const std::vector<uint32_t>& host);
// `n` words copied back from the device (synchronising the device first).
std::vector<uint32_t> download(const uint32_t* device, size_t n);
// 16 hex digits of a 64-bit value (JSON numbers lose bits above 2^53).
std::string hex64(uint64_t value);
// A grid that covers `n` elements with `threads`-thread blocks, at most `limit` blocks.
unsigned grid_for(size_t n, int threads, unsigned limit = 1u << 16);

}  // namespace interposer_programs
