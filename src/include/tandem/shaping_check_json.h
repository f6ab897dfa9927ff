#pragma once
// The JSON form of a ShapingCheck (docs/BENCH_JSON.md, the timeline's "shaping"): one schema for the
// interposer, which writes it into each process's timeline, and `tandem run`, which reads it back.
// Header-only: tandem::core carries no JSON library.
#include <nlohmann/json.hpp>

#include "tandem/shaping_check.h"

namespace tandem {

inline nlohmann::json shaping_check_json(const ShapingCheck& c) {
  const auto share = [](const std::optional<double>& s) { return s ? nlohmann::json(*s) : nlohmann::json(); };
  return {{"shaped_kernels", c.shaped},
          {"shaped_beside_communication", c.shaped_beside},
          {"shaped_beside_share", share(c.shaped_beside_share())},
          {"kernels_beside_communication", c.beside},
          {"beside_communication_ns", c.beside_ns},
          {"beside_communication_shapeable_ns", c.beside_shapeable_ns},
          {"beside_communication_shaped_ns", c.beside_shaped_ns},
          {"beside_shaped_share", share(c.beside_shaped_share())},
          {"left_alone_beside_later_ns", c.left_alone_beside_later_ns},
          {"left_alone_later_share", share(c.left_alone_later_share())},
          {"unattributed_kernels", c.unattributed}};
}

// Throws nlohmann's exceptions on a malformed object (the reader names the file).
inline ShapingCheck shaping_check_from_json(const nlohmann::json& j) {
  ShapingCheck c;
  c.shaped = j.at("shaped_kernels").get<uint64_t>();
  c.shaped_beside = j.at("shaped_beside_communication").get<uint64_t>();
  c.beside = j.at("kernels_beside_communication").get<uint64_t>();
  c.beside_ns = j.at("beside_communication_ns").get<int64_t>();
  c.beside_shapeable_ns = j.at("beside_communication_shapeable_ns").get<int64_t>();
  c.beside_shaped_ns = j.at("beside_communication_shaped_ns").get<int64_t>();
  c.left_alone_beside_later_ns = j.at("left_alone_beside_later_ns").get<int64_t>();
  c.unattributed = j.at("unattributed_kernels").get<uint64_t>();
  return c;
}

}  // namespace tandem
