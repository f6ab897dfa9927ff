// Every input of `tandem bench` and `tandem tune` is checked before any work: sizes without overflow,
// numeric options within bounds, no trailing junk, no repeated names, launcher world sizes bounded,
// result files writable. Each error is a tandem::UserError naming the value.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

#include "error_of.h"
#include "harness/bench_options.h"
#include "ranks/launch_env.h"
#include "scratch_folder.h"
#include "tandem/error.h"

namespace tb = tandem::bench;
using tandem_test::error_of;

namespace {

// The message of the UserError `action` throws ("" and a failure for another kind, or none).
template <typename Action>
std::string user_error_of(Action action) {
  try {
    action();
  } catch (const tandem::UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a user error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(InputSizes, LargeSizesAreRejectedNotWrapped) {
  // 17179869185 GiB = 2^34 GiB + 1 GiB: times 2^30 it wraps to exactly 1 GiB in 64 bits.
  const std::string e = user_error_of([] { tb::parse_size("17179869185G", "--minbytes"); });
  EXPECT_TRUE(has(e, "bad --minbytes '17179869185G': too large")) << e;
  EXPECT_TRUE(has(user_error_of([] { tb::parse_size("99999999999999999999999"); }), "too large"));
  // The bound, 1 TiB, and one unit past it.
  EXPECT_EQ(tb::parse_size("1024G"), 1ull << 40);
  EXPECT_EQ(tb::parse_size("1099511627776"), 1ull << 40);
  EXPECT_TRUE(has(user_error_of([] { tb::parse_size("1025G"); }), "too large"));
  EXPECT_TRUE(has(user_error_of([] { tb::parse_size("1099511627777"); }), "too large"));
  EXPECT_EQ(tb::parse_size("0007K"), 7u << 10);  // leading zeros are digits, not a wrap
}

TEST(InputSizes, AnythingButDigitsAndAUnitIsRejected) {
  for (const char* bad : {"12x", "", "G", "-1G", "+1G", " 1G", "1G ", "1.5G", "1e9", "0x10", "1T", "1GG"})
    EXPECT_TRUE(has(user_error_of([&] { tb::parse_size(bad); }), "bad size")) << bad;
}

TEST(InputGemmShape, ExactlyThreePositiveBoundedDimensions) {
  tb::WorkloadOptions w;
  tb::parse_gemm_shape("8192x4096x512", w);
  EXPECT_EQ(w.m, 8192);
  EXPECT_EQ(w.n, 4096);
  EXPECT_EQ(w.k, 512);
  for (const char* bad : {"1x1x1junk", "1x1x1x1", "1x1", "0x1x1", "1x-1x1", "1x1x", "x1x1", "1X1X1", " 1x1x1",
                          "1048577x1x1", "99999999999999999999x1x1", "1x+1x1"})
    EXPECT_TRUE(has(user_error_of([&] { tb::parse_gemm_shape(bad, w); }), "bad --gemm-shape '" + std::string(bad)))
        << bad;
  tb::parse_gemm_shape("1048576x1x1", w);  // the bound itself
  EXPECT_EQ(w.m, 1 << 20);
}

TEST(InputBounds, StepFactorAndTheSweepItMakes) {
  tb::BenchOptions o;
  o.step_factor = 1.0000000001;
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "--stepfactor 1 is out of bounds: from 1.01 to 1024"));
  for (double bad : {1.0, 0.5, -2.0, 1025.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    o.step_factor = bad;
    EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "--stepfactor")) << bad;
  }
  // 1 B to 1 TiB by 1.1: log(2^40) / log(1.1) = 290.8, so 291 sizes, above the 100 allowed.
  o = {};
  o.min_bytes = 1;
  o.max_bytes = 1ull << 40;
  o.step_factor = 1.1;
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "makes 291 sizes; at most 100"));
  // 8 B by 1.05 rounds to 8 B again: a size measured twice.
  o.min_bytes = 8;
  o.max_bytes = 64;
  o.step_factor = 1.05;
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "too small for 8 bytes"));
  o.min_bytes = 1 << 20;
  o.max_bytes = 1ull << 40;
  o.step_factor = 2;  // 21 sizes: fine
  EXPECT_NO_THROW(tb::validate(o));
  o.max_bytes = (1ull << 40) + 1;
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "at most 1024GiB"));
}

TEST(InputBounds, TheSweepsSizesAreCountedOnTheSweep) {
  tb::BenchOptions o;
  o.min_bytes = 1 << 20;
  o.max_bytes = 1ull << 40;
  // 1 MiB to 1 TiB by 1.1495 and by 1.1487 list 100 sizes (log(2^20) / log(f) is 99.5 and 99.999, plus
  // the first): a sweep of exactly the bound is valid.
  for (double valid : {1.1495, 1.1487, 1.1503080009701034}) {
    o.step_factor = valid;
    EXPECT_EQ(tb::size_sweep(o.min_bytes, o.max_bytes, o.step_factor).size(), tb::kMaxSweepSizes) << valid;
    EXPECT_NO_THROW(tb::validate(o)) << valid;
  }
  // 2^(1/5): the 101st size lands on 1 TiB itself (within the sweep's tolerance), and is said as 101.
  o.step_factor = 1.148698354997035;
  ASSERT_EQ(tb::size_sweep(o.min_bytes, o.max_bytes, o.step_factor).size(), tb::kMaxSweepSizes + 1);
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "makes 101 sizes; at most 100"));
  o.step_factor = 1.148;
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "makes 101 sizes; at most 100"));
  // One size, and the longest sweep the bounds allow (1 B to 1 TiB by 1.01), counted without trouble.
  o.min_bytes = o.max_bytes = 4096;
  EXPECT_NO_THROW(tb::validate(o));
  o.min_bytes = 1;
  o.max_bytes = 1ull << 40;
  o.step_factor = tb::kMinStepFactor;
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "sizes; at most 100"));
}

TEST(InputBounds, TimeoutIsFinitePositiveAndAtMostAWeek) {
  tb::BenchOptions o;
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan(""), 1e10, 604800.5}) {
    o.timeout_s = bad;
    EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "--timeout")) << bad;
  }
  o.timeout_s = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(
      has(user_error_of([&] { tb::validate(o); }), "--timeout inf is out of bounds: seconds above 0, at most 604800"));
  o.timeout_s = 604800;
  EXPECT_NO_THROW(tb::validate(o));
  o.timeout_s = 0.001;
  EXPECT_NO_THROW(tb::validate(o));
}

TEST(InputBounds, CountsAndScenarioOptions) {
  const auto rejects = [](auto change, const std::string& expected) {
    tb::BenchOptions o;
    change(o);
    const std::string e = user_error_of([&] { tb::validate(o); });
    EXPECT_TRUE(has(e, expected)) << e;
  };
  rejects([](tb::BenchOptions& o) { o.iters = 1000001; }, "--iters 1000001 is out of bounds: from 1 to 1000000");
  rejects([](tb::BenchOptions& o) { o.warmup = -1; }, "--warmup -1 is out of bounds: from 0 to 1000000");
  rejects([](tb::BenchOptions& o) { o.count = 0; }, "--count 0 is out of bounds");
  rejects([](tb::BenchOptions& o) { o.gpus = 65537; }, "--gpus 65537 is out of bounds: from 0 to 65536");
  rejects([](tb::BenchOptions& o) { o.launch_request.device = 4096; }, "--device 4096 is out of bounds");
  rejects([](tb::BenchOptions& o) { o.workload.stream_bytes = int64_t(1) << 41; }, "--stream-bytes must be at most");
  rejects([](tb::BenchOptions& o) { o.scenario.hidden = 0; }, "--hidden 0 is out of bounds");
  rejects([](tb::BenchOptions& o) { o.scenario.layers = 5000; }, "--layers 5000 is out of bounds");
  rejects([](tb::BenchOptions& o) { o.scenario.bucket_mb = std::nan(""); }, "--bucket-mb nan is out of bounds");
  rejects([](tb::BenchOptions& o) { o.scenario.first_bucket_mb = 0; }, "--first-bucket-mb 0 is out of bounds");
  rejects([](tb::BenchOptions& o) { o.scenario.top_k = 9; }, "--top-k 9 is out of bounds: from 1 to 8");
  rejects([](tb::BenchOptions& o) { o.scenario.micro_batches = 0; }, "--micro-batches 0");
}

TEST(InputLists, RepeatedNamesAreRejected) {
  tb::BenchOptions o;
  o.workloads = {"gemm", "stream", "gemm"};
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "--workload lists 'gemm' twice"));
  o = {};
  o.collectives = {"all-reduce", "all-reduce"};
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "--collective lists 'all-reduce' twice"));
  o = {};
  o.policies = tandem::parse_policy_list("priority,shape:3,priority");
  EXPECT_TRUE(has(user_error_of([&] { tb::validate(o); }), "--policy lists 'priority' twice"));
}

TEST(InputLists, UnknownNamesAreEchoedPrintably) {
  tb::BenchOptions o;
  o.workloads = {"\x1b[2Jgemm"};
  const std::string e = user_error_of([&] { tb::validate(o); });
  EXPECT_TRUE(has(e, "unknown workload '\\x1b[2Jgemm'")) << e;
  EXPECT_FALSE(has(e, "\x1b"));
  o.workloads = {std::string(100000, 'w')};
  EXPECT_LT(user_error_of([&] { tb::validate(o); }).size(), 1000u);
}

class OutputFiles : public ::testing::Test {
 protected:
  tandem_test::ScratchFolder scratch_;
  const std::string dir_ = scratch_.str();
};

TEST_F(OutputFiles, EachMustBeWritableAndDistinct) {
  EXPECT_NO_THROW(tb::check_output_files({{"--json", dir_ + "/r.json"}, {"--trace", ""}, {"--out", dir_ + "/p"}}));
  const std::string missing = user_error_of([&] { tb::check_output_files({{"--json", dir_ + "/no/r.json"}}); });
  EXPECT_EQ(missing.rfind("--json: cannot write '" + dir_ + "/no/r.json'", 0), 0u) << missing;
  ASSERT_EQ(mkdir((dir_ + "/folder").c_str(), 0700), 0);
  EXPECT_TRUE(has(user_error_of([&] {
                    tb::check_output_files({{"--trace", dir_ + "/folder"}});
                  }),
                  "--trace: cannot write '" + dir_ + "/folder' is a folder"));
  EXPECT_TRUE(has(user_error_of([&] {
                    tb::check_output_files({{"--json", dir_ + "/same"}, {"--out", dir_ + "/same"}});
                  }),
                  "--json and --out name the same file"));
  // Nothing was created by the checks.
  EXPECT_NE(access((dir_ + "/r.json").c_str(), F_OK), 0);
}

using LaunchEnv = tb::LaunchEnv;
LaunchEnv detect(std::map<std::string, std::string> vars) {
  return tb::detect_launch("auto", tb::map_environment(std::move(vars)));
}

TEST(InputLaunch, WorldSizesAreBounded) {
  EXPECT_TRUE(has(user_error_of([] {
                    detect({{"RANK", "0"}, {"WORLD_SIZE", "20000000"}});
                  }),
                  "WORLD_SIZE=20000000 is above 65536, the most ranks tandem runs"));
  EXPECT_TRUE(has(user_error_of([] {
                    detect({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "65537"}});
                  }),
                  "OMPI_COMM_WORLD_SIZE=65537 is above 65536"));
  EXPECT_TRUE(has(user_error_of([] {
                    detect({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "99999999999999999999"}});
                  }),
                  "SLURM_NTASKS=99999999999999999999 is above 65536"));
  EXPECT_TRUE(has(user_error_of([] {
                    detect({{"PMI_RANK", "70000"}, {"PMI_SIZE", "2"}});
                  }),
                  "PMI_RANK=70000 is above 65536"));
  EXPECT_EQ(detect({{"RANK", "65535"}, {"WORLD_SIZE", "65536"}}).world_size, 65536);
  EXPECT_TRUE(has(user_error_of([] {
                    detect({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}});
                  }),
                  "LOCAL_WORLD_SIZE=4 is above WORLD_SIZE=2"));
  const std::string escaped = user_error_of([] { detect({{"RANK", "\x1b[31m"}, {"WORLD_SIZE", "2"}}); });
  EXPECT_TRUE(has(escaped, "RANK='\\x1b[31m' is not a non-negative integer")) << escaped;
}

TEST(InputLaunch, MasterPortLeavesRoomForNcclsPort) {
  const auto plan_for = [](const std::string& port) {
    std::map<std::string, std::string> vars = {{"RANK", "0"},
                                               {"WORLD_SIZE", "4"},
                                               {"LOCAL_RANK", "0"},
                                               {"LOCAL_WORLD_SIZE", "2"},
                                               {"TORCHELASTIC_RUN_ID", "x"},
                                               {"MASTER_ADDR", "node0"},
                                               {"MASTER_PORT", port}};
    const auto env = tb::map_environment(vars);
    return tb::choose_rendezvous(tb::detect_launch("auto", env), {}, env, false);
  };
  EXPECT_EQ(plan_for("65534").where, "node0:65535");
  EXPECT_TRUE(has(user_error_of([&] { plan_for("65535"); }), "MASTER_PORT=65535 is above 65534"));
}

}  // namespace
