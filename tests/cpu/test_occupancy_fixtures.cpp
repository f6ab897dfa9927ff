// The occupancy model and the H200 catalogue entry against what the CUDA runtime answered on a
// real H200 (tests/fixtures/h200_occupancy.json, written by tests/tools/record_occupancy_fixtures).
// Until that file is recorded, every test here is skipped, never passed.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "tandem/gpu_catalog.h"
#include "tandem/occupancy.h"

namespace tandem {
namespace {

const std::string kFixturePath = std::string(TANDEM_FIXTURE_DIR) + "/h200_occupancy.json";

std::optional<nlohmann::json> load_fixtures() {
  std::ifstream file(kFixturePath);
  if (!file) return std::nullopt;
  return nlohmann::json::parse(file);
}

#define LOAD_FIXTURES_OR_SKIP(var)                                                                               \
  const auto var##_loaded = load_fixtures();                                                                     \
  if (!var##_loaded)                                                                                             \
    GTEST_SKIP() << "occupancy fixtures have not been recorded: run `record_occupancy_fixtures " << kFixturePath \
                 << "` on an H200";                                                                              \
  const nlohmann::json& var = *var##_loaded

KernelFootprint footprint_of(const nlohmann::json& f, const char* threads_key) {
  KernelFootprint k;
  k.name = f.at("kernel").get<std::string>();
  k.threads_per_block = f.at(threads_key).get<int>();
  k.regs_per_thread = f.at("regs_per_thread").get<int>();
  k.static_smem = f.at("static_smem").get<int64_t>();
  return k;
}

std::string describe(const KernelFootprint& k) {
  std::ostringstream s;
  s << k.name << " threads=" << k.threads_per_block << " regs=" << k.regs_per_thread << " smem=" << k.static_smem
    << " dsmem=" << k.dynamic_smem;
  return s.str();
}

TEST(OccupancyFixtures, RecordedDeviceMatchesCatalogueEntry) {
  LOAD_FIXTURES_OR_SKIP(fixtures);
  const DeviceLimits& h200 = gpu_limits("h200");
  const auto& p = fixtures.at("device_props");
  EXPECT_NE(fixtures.at("gpu").get<std::string>().find("H200"), std::string::npos) << fixtures.at("gpu");
  EXPECT_EQ(fixtures.at("cc").get<std::string>(), "9.0");
  EXPECT_EQ(h200.arch, "sm_90");
  EXPECT_EQ(p.at("multiProcessorCount").get<int>(), h200.sm_count);
  EXPECT_EQ(p.at("warpSize").get<int>(), h200.warp_size);
  EXPECT_EQ(p.at("maxThreadsPerMultiProcessor").get<int>(), h200.max_threads_per_sm);
  EXPECT_EQ(p.at("maxThreadsPerBlock").get<int>(), h200.max_threads_per_block);
  EXPECT_EQ(p.at("maxBlocksPerMultiProcessor").get<int>(), h200.max_blocks_per_sm);
  EXPECT_EQ(p.at("regsPerMultiprocessor").get<int>(), h200.regs_per_sm);
  EXPECT_EQ(p.at("regsPerBlock").get<int>(), h200.max_regs_per_block);
  EXPECT_EQ(p.at("sharedMemPerMultiprocessor").get<int64_t>(), h200.smem_per_sm);
  EXPECT_EQ(p.at("sharedMemPerBlockOptin").get<int64_t>(), h200.max_smem_per_block);
  EXPECT_EQ(p.at("reservedSharedMemPerBlock").get<int64_t>(), h200.smem_reserved_per_block);
}

TEST(OccupancyFixtures, ModelEqualsRuntimeForEveryFixture) {
  LOAD_FIXTURES_OR_SKIP(fixtures);
  const DeviceLimits& h200 = gpu_limits("h200");
  const auto& list = fixtures.at("fixtures");
  ASSERT_GE(list.size(), 200u) << "too few fixtures to trust";
  int mismatches = 0;
  int nonzero = 0;
  for (const auto& f : list) {
    KernelFootprint k = footprint_of(f, "threads_per_block");
    k.dynamic_smem = f.at("dynamic_smem").get<int64_t>();
    const int expected = f.at("blocks_per_sm").get<int>();
    const Residency got = residency(h200, k);
    nonzero += expected > 0;
    if (got.blocks_per_sm != expected && ++mismatches <= 20) {
      ADD_FAILURE() << describe(k) << ": runtime " << expected << " blocks/SM, model " << got.blocks_per_sm
                    << " (limited by " << to_string(got.limiter) << ")";
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << list.size() << " fixtures";
  EXPECT_GT(nonzero, 200);
}

// cudaOccupancyAvailableDynamicSMemPerBlock(b) is the largest dynamic size that still lets b blocks
// be resident. In the model that is one allocation unit below the padding for b-1 blocks (for b=1:
// the per-block maximum). The toolkit's reference calculator computes it without the per-block
// reservation (1 KiB more than what actually fits); the recorded residency at the returned size
// says which rule this runtime follows, and every entry must follow that same rule exactly.
TEST(OccupancyFixtures, AvailableDynamicSmemMatchesTheModel) {
  LOAD_FIXTURES_OR_SKIP(fixtures);
  const DeviceLimits& h200 = gpu_limits("h200");
  const auto& list = fixtures.at("available_dynamic_smem");
  ASSERT_FALSE(list.empty());
  int counts_reservation = 0;
  int omits_reservation = 0;
  for (const auto& a : list) {
    KernelFootprint k = footprint_of(a, "threads");
    const int blocks = a.at("blocks").get<int>();
    const int64_t bytes = a.at("bytes").get<int64_t>();
    const int at_bytes = a.at("blocks_per_sm_at_bytes").get<int>();

    // The residency at the returned size is an ordinary fixture.
    KernelFootprint at_returned = k;
    at_returned.dynamic_smem = bytes;
    EXPECT_EQ(residency(h200, at_returned).blocks_per_sm, at_bytes) << describe(at_returned);

    int64_t largest = h200.max_smem_per_block - k.static_smem;
    if (blocks > 1) {
      const auto padding = dynamic_smem_for_target(h200, k, blocks - 1);
      ASSERT_TRUE(padding.has_value()) << describe(k) << " b=" << blocks - 1;
      largest = *padding - h200.smem_alloc_unit;
    }
    k.dynamic_smem = largest;
    ASSERT_GE(residency(h200, k).blocks_per_sm, blocks) << describe(k);
    if (blocks == 1) {
      // The per-block maximum: both rules agree.
      EXPECT_EQ(bytes, largest) << describe(k) << " b=1";
    } else if (at_bytes >= blocks) {
      ++counts_reservation;
      EXPECT_EQ(bytes, largest) << describe(k) << " b=" << blocks;
    } else {
      ++omits_reservation;
      EXPECT_EQ(bytes, largest + h200.smem_reserved_per_block) << describe(k) << " b=" << blocks;
    }
  }
  EXPECT_TRUE(counts_reservation == 0 || omits_reservation == 0)
      << "mixed rules: " << counts_reservation << " entries fit, " << omits_reservation << " overshoot by 1 KiB";
  RecordProperty("runtime_available_dynamic_smem_counts_reservation", omits_reservation == 0 ? "yes" : "no");
}

}  // namespace
}  // namespace tandem
