// OverlapPolicy text form: parsing, canonical printing, errors, lists and policy files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tandem/error.h"
#include "tandem/policy.h"

namespace tandem {
namespace {

const std::string kAccepted =
    "; accepted: sequential, concurrent, comm-first, priority, shape:N|<bytes>|auto, sm-target:N, "
    "nccl-ctas:MIN..MAX, nccl-cga:1|2|4, nccl-cta-policy:efficiency|zero, green:N, nccl-symmetric, copy-engine, "
    "compute-always, cu-mask:N";

// The message of the tandem::Error that `action` throws, without the " [file:line]" suffix that
// tandem::Error appends; fails the test if nothing (or something else) is thrown.
template <typename Action>
std::string error_of(Action action) {
  try {
    action();
  } catch (const Error& error) {
    std::string message = error.what();
    const size_t location = message.rfind(" [");
    EXPECT_NE(location, std::string::npos) << message;
    return message.substr(0, location);
  }
  ADD_FAILURE() << "no tandem::Error thrown";
  return {};
}

std::string policy_error(const std::string& text) {
  return error_of([&] { parse_policy(text); });
}

std::string list_error(const std::string& text) {
  return error_of([&] { parse_policy_list(text); });
}

std::string canonical(const std::string& text) { return to_string(parse_policy(text)); }

// ----- single tokens -----------------------------------------------------------------------------

TEST(PolicyParse, ConcurrentIsTheDefaultPolicy) {
  EXPECT_EQ(parse_policy("concurrent"), OverlapPolicy{});
  EXPECT_EQ(to_string(OverlapPolicy{}), "concurrent");
}

TEST(PolicyParse, EveryTokenSetsItsField) {
  EXPECT_EQ(parse_policy("sequential").order, LaunchOrder::Sequential);
  EXPECT_EQ(parse_policy("comm-first").order, LaunchOrder::CommFirst);
  EXPECT_EQ(parse_policy("concurrent").order, LaunchOrder::ComputeFirst);
  EXPECT_TRUE(parse_policy("priority").comm_priority);

  const ShapeTarget blocks = parse_policy("shape:3").shape;
  EXPECT_EQ(blocks.kind, ShapeTarget::Kind::BlocksPerSm);
  EXPECT_EQ(blocks.blocks_per_sm, 3);
  const ShapeTarget bytes = parse_policy("shape:48KiB").shape;
  EXPECT_EQ(bytes.kind, ShapeTarget::Kind::Bytes);
  EXPECT_EQ(bytes.bytes, 48 * 1024);
  EXPECT_EQ(parse_policy("shape:auto").shape.kind, ShapeTarget::Kind::Auto);

  EXPECT_EQ(parse_policy("sm-target:116").sm_target, 116);
  const OverlapPolicy ctas = parse_policy("nccl-ctas:4..16");
  EXPECT_EQ(ctas.nccl_min_ctas, 4);
  EXPECT_EQ(ctas.nccl_max_ctas, 16);
  EXPECT_EQ(parse_policy("nccl-cga:2").nccl_cga_cluster_size, 2);
  EXPECT_EQ(parse_policy("nccl-cta-policy:efficiency").nccl_cta_policy, NcclCtaPolicy::Efficiency);
  EXPECT_EQ(parse_policy("nccl-cta-policy:zero").nccl_cta_policy, NcclCtaPolicy::Zero);
  EXPECT_EQ(parse_policy("green:66").green_sms, 66);
  EXPECT_TRUE(parse_policy("copy-engine").copy_engine);
  EXPECT_TRUE(parse_policy("nccl-symmetric").nccl_symmetric);
  EXPECT_TRUE(parse_policy("nccl-symmetric").registers_windows());
  EXPECT_TRUE(parse_policy("copy-engine").registers_windows());
  EXPECT_FALSE(parse_policy("nccl-cta-policy:zero").registers_windows());
}

TEST(PolicyParse, NcclCtaForms) {
  const OverlapPolicy both = parse_policy("nccl-ctas:8");
  EXPECT_EQ(both.nccl_min_ctas, 8);
  EXPECT_EQ(both.nccl_max_ctas, 8);
  const OverlapPolicy min_only = parse_policy("nccl-ctas:2..");
  EXPECT_EQ(min_only.nccl_min_ctas, 2);
  EXPECT_EQ(min_only.nccl_max_ctas, std::nullopt);
  const OverlapPolicy max_only = parse_policy("nccl-ctas:..16");
  EXPECT_EQ(max_only.nccl_min_ctas, std::nullopt);
  EXPECT_EQ(max_only.nccl_max_ctas, 16);
  EXPECT_EQ(canonical("nccl-ctas:8..8"), "nccl-ctas:8");
  EXPECT_EQ(canonical("nccl-ctas:1..64"), "nccl-ctas:1..64");
  EXPECT_EQ(canonical("nccl-ctas:2.."), "nccl-ctas:2..");
  EXPECT_EQ(canonical("nccl-ctas:..16"), "nccl-ctas:..16");
}

TEST(PolicyParse, ShapeBlockBounds) {
  EXPECT_EQ(parse_policy("shape:1").shape.blocks_per_sm, 1);
  EXPECT_EQ(parse_policy("shape:64").shape.blocks_per_sm, 64);
  EXPECT_EQ(parse_policy("shape:007").shape.blocks_per_sm, 7);
}

TEST(PolicyParse, ByteUnits) {
  EXPECT_EQ(parse_policy("shape:4096B").shape.bytes, 4096);
  EXPECT_EQ(parse_policy("shape:1B").shape.bytes, 1);
  EXPECT_EQ(parse_policy("shape:48KiB").shape.bytes, 49152);
  EXPECT_EQ(parse_policy("shape:1MiB").shape.bytes, 1048576);
  EXPECT_EQ(parse_policy("shape:2047MiB").shape.bytes, int64_t{2047} * 1048576);
  EXPECT_EQ(parse_policy("shape:2147483647B").shape.bytes, 2147483647);
}

TEST(PolicyPrint, BytesUseTheLargestExactUnit) {
  EXPECT_EQ(canonical("shape:4096B"), "shape:4KiB");
  EXPECT_EQ(canonical("shape:1024KiB"), "shape:1MiB");
  EXPECT_EQ(canonical("shape:1048576B"), "shape:1MiB");
  EXPECT_EQ(canonical("shape:1536KiB"), "shape:1536KiB");
  EXPECT_EQ(canonical("shape:1000B"), "shape:1000B");
  EXPECT_EQ(canonical("shape:1025B"), "shape:1025B");
  EXPECT_EQ(canonical("shape:48KiB"), "shape:48KiB");
  EXPECT_EQ(canonical("shape:3MiB"), "shape:3MiB");
}

TEST(PolicyPrint, ShapeTargetAlone) {
  EXPECT_EQ(to_string(ShapeTarget{}), "none");
  EXPECT_EQ(to_string(parse_policy("shape:3").shape), "shape:3");
  EXPECT_EQ(to_string(parse_policy("shape:48KiB").shape), "shape:48KiB");
  EXPECT_EQ(to_string(parse_policy("shape:auto").shape), "shape:auto");
}

// ----- combinations and canonical form -----------------------------------------------------------

TEST(PolicyPrint, CanonicalOrder) {
  EXPECT_EQ(canonical("priority+shape:3"), "shape:3+priority");
  EXPECT_EQ(canonical("priority+comm-first"), "comm-first+priority");
  EXPECT_EQ(canonical("copy-engine+green:8+nccl-cta-policy:zero+nccl-cga:1+nccl-ctas:..16+"
                      "sm-target:116+priority+shape:auto+comm-first"),
            "comm-first+shape:auto+priority+sm-target:116+nccl-ctas:..16+nccl-cga:1+"
            "nccl-cta-policy:zero+green:8+copy-engine");
  EXPECT_EQ(canonical("nccl-symmetric+green:8+priority"), "priority+green:8+nccl-symmetric");
  EXPECT_EQ(canonical("nccl-cga:1+sm-target:116+nccl-ctas:16"), "sm-target:116+nccl-ctas:16+nccl-cga:1");
}

TEST(PolicyPrint, ConcurrentNormalisesAway) {
  EXPECT_EQ(canonical("concurrent+priority"), "priority");
  EXPECT_EQ(canonical("priority+concurrent"), "priority");
  EXPECT_EQ(canonical("concurrent+shape:3+priority"), "shape:3+priority");
  EXPECT_EQ(parse_policy("concurrent+priority"), parse_policy("priority"));
}

TEST(PolicyParse, WhitespaceAroundTokensIsTrimmed) {
  EXPECT_EQ(canonical("  priority + shape:3\t"), "shape:3+priority");
  EXPECT_EQ(canonical("\nsequential\r\n"), "sequential");
}

TEST(PolicyPrint, OperatorsCompareMeaningfulFields) {
  ShapeTarget a;
  ShapeTarget b;
  b.blocks_per_sm = 5;  // stale field of an unset shape
  EXPECT_EQ(a, b);
  a.kind = b.kind = ShapeTarget::Kind::BlocksPerSm;
  EXPECT_NE(a, b);
  b.kind = ShapeTarget::Kind::Auto;
  EXPECT_NE(a, b);
  EXPECT_NE(parse_policy("priority"), parse_policy("comm-first+priority"));
  EXPECT_NE(parse_policy("nccl-ctas:4"), parse_policy("nccl-ctas:4.."));
  EXPECT_NE(parse_policy("shape:1KiB"), parse_policy("shape:1MiB"));
}

// Each field alone, set on the struct (not through the parser), must make two policies differ: the
// tuner removes duplicate candidates with operator==, so a field it ignored would merge two
// distinct policies (concurrent and priority, say) into one.
TEST(PolicyParse, ComputeAlwaysNeedsAComputeControlAndRoundTrips) {
  for (const char* text :
       {"shape:2+compute-always", "sm-target:96+priority+compute-always", "compute-always+shape:auto"}) {
    const OverlapPolicy p = parse_policy(text);
    EXPECT_TRUE(p.compute_always) << text;
    EXPECT_EQ(parse_policy(to_string(p)), p) << text;
  }
  EXPECT_EQ(to_string(parse_policy("compute-always+shape:2+priority")), "shape:2+priority+compute-always");
  EXPECT_NE(parse_policy("shape:2"), parse_policy("shape:2+compute-always"));
  for (const char* alone : {"compute-always", "priority+compute-always", "copy-engine+compute-always"})
    EXPECT_THROW(parse_policy(alone), tandem::Error) << alone;
}

TEST(PolicyEquality, EveryFieldCounts) {
  using Change = void (*)(OverlapPolicy&);
  const std::vector<std::pair<const char*, Change>> changes = {
      {"order sequential", [](OverlapPolicy& p) { p.order = LaunchOrder::Sequential; }},
      {"order comm-first", [](OverlapPolicy& p) { p.order = LaunchOrder::CommFirst; }},
      {"comm_priority", [](OverlapPolicy& p) { p.comm_priority = true; }},
      {"shape blocks",
       [](OverlapPolicy& p) { p.shape.kind = ShapeTarget::Kind::BlocksPerSm, p.shape.blocks_per_sm = 3; }},
      {"shape bytes", [](OverlapPolicy& p) { p.shape.kind = ShapeTarget::Kind::Bytes, p.shape.bytes = 4096; }},
      {"shape auto", [](OverlapPolicy& p) { p.shape.kind = ShapeTarget::Kind::Auto; }},
      {"sm_target", [](OverlapPolicy& p) { p.sm_target = 116; }},
      {"nccl_min_ctas", [](OverlapPolicy& p) { p.nccl_min_ctas = 4; }},
      {"nccl_max_ctas", [](OverlapPolicy& p) { p.nccl_max_ctas = 16; }},
      {"nccl_cga_cluster_size", [](OverlapPolicy& p) { p.nccl_cga_cluster_size = 1; }},
      {"nccl_cta_policy efficiency", [](OverlapPolicy& p) { p.nccl_cta_policy = NcclCtaPolicy::Efficiency; }},
      {"nccl_cta_policy zero", [](OverlapPolicy& p) { p.nccl_cta_policy = NcclCtaPolicy::Zero; }},
      {"green_sms", [](OverlapPolicy& p) { p.green_sms = 100; }},
      {"nccl_symmetric", [](OverlapPolicy& p) { p.nccl_symmetric = true; }},
      {"copy_engine", [](OverlapPolicy& p) { p.copy_engine = true; }},
      {"compute_always", [](OverlapPolicy& p) { p.compute_always = true; }},
  };
  const OverlapPolicy plain;
  for (const auto& [field, change] : changes) {
    OverlapPolicy changed;
    change(changed);
    EXPECT_FALSE(changed == plain) << field;
    EXPECT_FALSE(plain == changed) << field;
    EXPECT_TRUE(changed != plain) << field;
    OverlapPolicy same;
    change(same);
    EXPECT_TRUE(changed == same) << field;
  }
  // The value inside a set field counts too, not only whether it is set.
  OverlapPolicy a, b;
  a.sm_target = 116, b.sm_target = 124;
  EXPECT_NE(a, b);
  a = b = OverlapPolicy{};
  a.nccl_min_ctas = a.nccl_max_ctas = 8, b.nccl_min_ctas = b.nccl_max_ctas = 16;
  EXPECT_NE(a, b);
  a = b = OverlapPolicy{};
  a.nccl_cga_cluster_size = 1, b.nccl_cga_cluster_size = 2;
  EXPECT_NE(a, b);
  a = b = OverlapPolicy{};
  a.green_sms = 100, b.green_sms = 116;
  EXPECT_NE(a, b);
  a = b = OverlapPolicy{};
  a.shape.kind = b.shape.kind = ShapeTarget::Kind::BlocksPerSm;
  a.shape.blocks_per_sm = 2, b.shape.blocks_per_sm = 3;
  EXPECT_NE(a, b);
  a.shape.kind = b.shape.kind = ShapeTarget::Kind::Bytes;
  a.shape.bytes = 1024, b.shape.bytes = 2048;
  EXPECT_NE(a, b);
  // The two policies the tuner's finals always hold.
  EXPECT_NE(parse_policy("concurrent"), parse_policy("priority"));
  EXPECT_NE(parse_policy("concurrent"), parse_policy("copy-engine"));
}

TEST(Policy, NeedsOwnCommunicator) {
  EXPECT_FALSE(parse_policy("concurrent").needs_own_communicator());
  EXPECT_FALSE(parse_policy("comm-first+shape:3+priority+sm-target:116+green:8").needs_own_communicator());
  EXPECT_TRUE(parse_policy("nccl-ctas:16").needs_own_communicator());
  EXPECT_TRUE(parse_policy("nccl-ctas:..16").needs_own_communicator());
  EXPECT_TRUE(parse_policy("nccl-ctas:2..").needs_own_communicator());
  EXPECT_TRUE(parse_policy("nccl-cga:1").needs_own_communicator());
  EXPECT_TRUE(parse_policy("nccl-cta-policy:efficiency").needs_own_communicator());
  EXPECT_TRUE(parse_policy("copy-engine").needs_own_communicator());
  EXPECT_TRUE(parse_policy("nccl-symmetric").needs_own_communicator());
}

// Every combination of a representative value per control (none included), built two ways: as a
// struct, and as text in the canonical order written out here independently of the library. Each
// must print to that text, parse back to the struct, and parse the same from shuffled token order.
TEST(PolicyRoundTrip, GeneratedCombinations) {
  struct Choice {
    std::string token;  // empty: control not set
    void (*set)(OverlapPolicy&);
  };
  using Axis = std::vector<Choice>;
  const std::vector<Axis> axes = {
      {{"", nullptr}, {"comm-first", [](OverlapPolicy& p) { p.order = LaunchOrder::CommFirst; }}},
      {{"", nullptr},
       {"shape:1",
        [](OverlapPolicy& p) {
          p.shape = {ShapeTarget::Kind::BlocksPerSm, 1, 0};
        }},
       {"shape:64",
        [](OverlapPolicy& p) {
          p.shape = {ShapeTarget::Kind::BlocksPerSm, 64, 0};
        }},
       {"shape:1000B",
        [](OverlapPolicy& p) {
          p.shape = {ShapeTarget::Kind::Bytes, 0, 1000};
        }},
       {"shape:48KiB",
        [](OverlapPolicy& p) {
          p.shape = {ShapeTarget::Kind::Bytes, 0, 48 * 1024};
        }},
       {"shape:1MiB",
        [](OverlapPolicy& p) {
          p.shape = {ShapeTarget::Kind::Bytes, 0, 1 << 20};
        }},
       {"shape:auto",
        [](OverlapPolicy& p) {
          p.shape = {ShapeTarget::Kind::Auto, 0, 0};
        }}},
      {{"", nullptr}, {"priority", [](OverlapPolicy& p) { p.comm_priority = true; }}},
      {{"", nullptr},
       {"sm-target:1", [](OverlapPolicy& p) { p.sm_target = 1; }},
       {"sm-target:116", [](OverlapPolicy& p) { p.sm_target = 116; }}},
      {{"", nullptr},
       {"nccl-ctas:16", [](OverlapPolicy& p) { p.nccl_min_ctas = p.nccl_max_ctas = 16; }},
       {"nccl-ctas:4..64", [](OverlapPolicy& p) { p.nccl_min_ctas = 4, p.nccl_max_ctas = 64; }},
       {"nccl-ctas:2..", [](OverlapPolicy& p) { p.nccl_min_ctas = 2; }},
       {"nccl-ctas:..16", [](OverlapPolicy& p) { p.nccl_max_ctas = 16; }}},
      {{"", nullptr},
       {"nccl-cga:1", [](OverlapPolicy& p) { p.nccl_cga_cluster_size = 1; }},
       {"nccl-cga:2", [](OverlapPolicy& p) { p.nccl_cga_cluster_size = 2; }},
       {"nccl-cga:4", [](OverlapPolicy& p) { p.nccl_cga_cluster_size = 4; }}},
      {{"", nullptr},
       {"nccl-cta-policy:efficiency", [](OverlapPolicy& p) { p.nccl_cta_policy = NcclCtaPolicy::Efficiency; }},
       {"nccl-cta-policy:zero", [](OverlapPolicy& p) { p.nccl_cta_policy = NcclCtaPolicy::Zero; }}},
      {{"", nullptr},
       {"green:1", [](OverlapPolicy& p) { p.green_sms = 1; }},
       {"green:66", [](OverlapPolicy& p) { p.green_sms = 66; }}},
      {{"", nullptr}, {"nccl-symmetric", [](OverlapPolicy& p) { p.nccl_symmetric = true; }}},
      {{"", nullptr}, {"copy-engine", [](OverlapPolicy& p) { p.copy_engine = true; }}},
  };

  std::mt19937 random(12345);  // fixed seed: failures reproduce
  std::vector<size_t> index(axes.size(), 0);
  size_t combinations = 0;
  while (true) {
    OverlapPolicy expected;
    std::vector<std::string> tokens;
    for (size_t axis = 0; axis < axes.size(); ++axis) {
      const Choice& choice = axes[axis][index[axis]];
      if (choice.set == nullptr) continue;
      choice.set(expected);
      tokens.push_back(choice.token);
    }
    std::string canonical_text;
    for (const std::string& token : tokens) canonical_text += (canonical_text.empty() ? "" : "+") + token;
    if (canonical_text.empty()) canonical_text = "concurrent";

    ASSERT_EQ(to_string(expected), canonical_text);
    ASSERT_EQ(parse_policy(canonical_text), expected) << canonical_text;

    std::shuffle(tokens.begin(), tokens.end(), random);
    std::string shuffled_text;
    for (const std::string& token : tokens) shuffled_text += (shuffled_text.empty() ? "" : " + ") + token;
    if (shuffled_text.empty()) shuffled_text = "concurrent";
    ASSERT_EQ(parse_policy(shuffled_text), expected) << shuffled_text;
    ASSERT_EQ(canonical(shuffled_text), canonical_text) << shuffled_text;
    ++combinations;

    // Odometer over the axes.
    size_t axis = 0;
    while (axis < axes.size() && ++index[axis] == axes[axis].size()) index[axis++] = 0;
    if (axis == axes.size()) break;
  }
  EXPECT_EQ(combinations, 2u * 7 * 2 * 3 * 5 * 4 * 3 * 3 * 2 * 2);
}

TEST(PolicyRoundTrip, SequentialAlone) {
  OverlapPolicy sequential;
  sequential.order = LaunchOrder::Sequential;
  EXPECT_EQ(to_string(sequential), "sequential");
  EXPECT_EQ(parse_policy("sequential"), sequential);
  EXPECT_TRUE(parse_policy("sequential").is_sequential());
}

TEST(PolicyRoundTrip, EveryShapeBlockCountAndManySizes) {
  for (int blocks = 1; blocks <= 64; ++blocks) {
    const std::string text = "shape:" + std::to_string(blocks);
    EXPECT_EQ(canonical(text), text);
  }
  for (int64_t bytes : {1, 17, 1023, 1024, 1025, 4096, 49152, 100000, 232448, 1048575, 1048576, 3145728, 2147483647}) {
    OverlapPolicy policy;
    policy.shape = {ShapeTarget::Kind::Bytes, 0, bytes};
    EXPECT_EQ(parse_policy(to_string(policy)), policy) << to_string(policy);
  }
}

// ----- errors ------------------------------------------------------------------------------------

TEST(PolicyErrors, UnknownTokenMessageIsExact) {
  EXPECT_EQ(policy_error("shape:3+prio"), "unknown policy token 'prio' in 'shape:3+prio'" + kAccepted);
  EXPECT_EQ(policy_error("Priority"), "unknown policy token 'Priority' in 'Priority'" + kAccepted);
  EXPECT_EQ(policy_error("shape3"), "unknown policy token 'shape3' in 'shape3'" + kAccepted);
  EXPECT_EQ(policy_error("priority+@best"), "unknown policy token '@best' in 'priority+@best'" + kAccepted);
}

TEST(PolicyErrors, MessagesAreOneLine) {
  for (const char* text : {"prio", "", "shape:0", "priority+priority", "sequential+priority"})
    EXPECT_EQ(policy_error(text).find('\n'), std::string::npos) << text;
}

TEST(PolicyErrors, EmptyTextAndEmptyTokens) {
  EXPECT_EQ(policy_error(""), "empty policy text ''" + kAccepted);
  EXPECT_EQ(policy_error("   "), "empty policy text '   '" + kAccepted);
  EXPECT_EQ(policy_error("shape:3++priority"),
            "empty policy token '' in 'shape:3++priority': '+' must join two tokens" + kAccepted);
  EXPECT_EQ(policy_error("+priority"), "empty policy token '' in '+priority': '+' must join two tokens" + kAccepted);
  EXPECT_EQ(policy_error("priority+"), "empty policy token '' in 'priority+': '+' must join two tokens" + kAccepted);
  EXPECT_EQ(policy_error("priority + "), "empty policy token '' in 'priority +': '+' must join two tokens" + kAccepted);
}

TEST(PolicyErrors, Duplicates) {
  EXPECT_EQ(policy_error("priority+priority"),
            "duplicate policy token 'priority' in 'priority+priority': each control may appear at "
            "most once" +
                kAccepted);
  EXPECT_EQ(policy_error("shape:3+shape:auto"),
            "duplicate policy token 'shape:auto' in 'shape:3+shape:auto': 'shape' is already set "
            "by 'shape:3'; "
            "each control may appear at most once" +
                kAccepted);
  EXPECT_EQ(policy_error("nccl-ctas:4+priority+nccl-ctas:..8"),
            "duplicate policy token 'nccl-ctas:..8' in 'nccl-ctas:4+priority+nccl-ctas:..8': "
            "'nccl-ctas' is "
            "already set by 'nccl-ctas:4'; each control may appear at most once" +
                kAccepted);
  for (const char* token : {"sequential", "concurrent", "comm-first", "copy-engine", "nccl-symmetric", "sm-target:1",
                            "green:2", "nccl-cga:4", "nccl-cta-policy:zero"}) {
    const std::string text = std::string(token) + "+" + token;
    EXPECT_EQ(policy_error(text), "duplicate policy token '" + std::string(token) + "' in '" + text +
                                      "': each control may appear at most once" + kAccepted);
  }
}

TEST(PolicyErrors, SequentialCombinesWithNothing) {
  EXPECT_EQ(policy_error("sequential+priority"),
            "policy token 'priority' cannot combine with 'sequential' in 'sequential+priority': "
            "sequential "
            "runs compute and collective on one stream, so no other control applies" +
                kAccepted);
  EXPECT_EQ(policy_error("shape:3+sequential"),
            "policy token 'shape:3' cannot combine with 'sequential' in 'shape:3+sequential': sequential "
            "runs compute and collective on one stream, so no other control applies" +
                kAccepted);
  for (const char* other : {"concurrent", "comm-first", "shape:auto", "sm-target:8", "nccl-ctas:8", "nccl-cga:1",
                            "nccl-cta-policy:zero", "green:4", "nccl-symmetric", "copy-engine"}) {
    const std::string message = policy_error(std::string("sequential+") + other);
    EXPECT_NE(message.find("policy token '" + std::string(other) + "' cannot combine with 'sequential'"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(kAccepted), std::string::npos) << message;
  }
}

TEST(PolicyErrors, ConcurrentAndCommFirstConflict) {
  const std::string why = ": both are launch orders (concurrent enqueues compute first); give one" + kAccepted;
  EXPECT_EQ(policy_error("concurrent+comm-first"),
            "policy token 'comm-first' cannot combine with 'concurrent' in 'concurrent+comm-first'" + why);
  EXPECT_EQ(policy_error("comm-first+priority+concurrent"),
            "policy token 'comm-first' cannot combine with 'concurrent' in "
            "'comm-first+priority+concurrent'" +
                why);
}

// Each bad token with the reason the message must give; every message names the token, the whole
// text and ends with the accepted list.
TEST(PolicyErrors, BadValues) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"shape:0", "blocks per SM must be 1..64, not 0"},
      {"shape:65", "blocks per SM must be 1..64, not 65 (for a size add a unit: shape:65B)"},
      {"shape:4096", "blocks per SM must be 1..64, not 4096 (for a size add a unit: shape:4096B)"},
      {"shape:3x", "unknown size unit 'x' (use B, KiB or MiB)"},
      {"shape:48KB", "unknown size unit 'KB' (use B, KiB or MiB)"},
      {"shape:48kib", "unknown size unit 'kib' (use B, KiB or MiB)"},
      {"shape:1GiB", "unknown size unit 'GiB' (use B, KiB or MiB)"},
      {"shape:1.5KiB", "unknown size unit '.5KiB' (use B, KiB or MiB)"},
      {"shape:-3", "'-3' is neither a block count (1..64), a size (48KiB, 4096B, 1MiB) nor auto"},
      {"shape:KiB", "'KiB' is neither a block count (1..64), a size (48KiB, 4096B, 1MiB) nor auto"},
      {"shape:Auto", "'Auto' is neither a block count (1..64), a size (48KiB, 4096B, 1MiB) nor auto"},
      {"shape: 3", "' 3' is neither a block count (1..64), a size (48KiB, 4096B, 1MiB) nor auto"},
      {"shape:0B", "a shared-memory size must be greater than 0"},
      {"shape:0KiB", "a shared-memory size must be greater than 0"},
      {"shape:2048MiB", "a shared-memory size must be at most 2147483647 bytes (a CUDA launch takes an int)"},
      {"shape:2147483648B", "a shared-memory size must be at most 2147483647 bytes (a CUDA launch takes an int)"},
      {"shape:99999999999999999999B", "'99999999999999999999' is too large"},
      {"shape:99999999999999999999", "'99999999999999999999' is too large"},
      {"shape", "'shape' needs a value after ':'"},
      {"shape:", "'shape' needs a value after ':'"},
      {"sm-target:0", "the SM-count target must be 1..2147483647, not 0"},
      {"sm-target:2147483648", "the SM-count target must be 1..2147483647, not 2147483648"},
      {"sm-target:-1", "'-1' is not a whole number"},
      {"sm-target:12x", "'12x' is not a whole number"},
      {"sm-target:99999999999999999999", "'99999999999999999999' is too large"},
      {"sm-target", "'sm-target' needs a value after ':'"},
      {"nccl-ctas:0", "an NCCL CTA count must be 1..64, not 0"},
      {"nccl-ctas:65", "an NCCL CTA count must be 1..64, not 65"},
      {"nccl-ctas:16..4", "MIN CTAs 16 exceeds MAX CTAs 4"},
      {"nccl-ctas:0..4", "MIN CTAs must be 1..64, not 0"},
      {"nccl-ctas:4..65", "MAX CTAs must be 1..64, not 65"},
      {"nccl-ctas:..", "give MIN, MAX or both around '..'"},
      {"nccl-ctas:4...8", "'.8' is not a whole number"},
      {"nccl-ctas:4-8", "'4-8' is not a whole number"},
      {"nccl-cga:3", "the NCCL cluster size must be 1, 2 or 4, not '3'"},
      {"nccl-cga:8", "the NCCL cluster size must be 1, 2 or 4, not '8'"},
      {"nccl-cta-policy:fast", "the NCCL CTA policy must be efficiency or zero, not 'fast'"},
      {"nccl-cta-policy:Zero", "the NCCL CTA policy must be efficiency or zero, not 'Zero'"},
      {"green:0", "the green-context SM count must be 1..2147483647, not 0"},
      {"green:", "'green' needs a value after ':'"},
      {"priority:1", "'priority' takes no value"},
      {"sequential:", "'sequential' takes no value"},
      {"copy-engine:on", "'copy-engine' takes no value"},
  };
  for (const auto& [token, why] : cases) {
    const std::string text = "comm-first+" + token;
    const std::string message = policy_error(text);
    EXPECT_EQ(message, "invalid policy token '" + token + "' in '" + text + "': " + why + kAccepted) << token;
  }
}

TEST(PolicyErrors, CommaInSinglePolicy) {
  EXPECT_EQ(policy_error("priority,shape:3"),
            "policy text 'priority,shape:3' holds a ',', which separates policies in a list; give "
            "one policy "
            "here" +
                kAccepted);
}

TEST(PolicyErrors, ThrowsTandemErrorWithLocation) {
  try {
    parse_policy("prio");
    FAIL() << "no throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.file()).find("policy.cpp"), std::string::npos);
    EXPECT_GT(error.line(), 0);
  }
}

// ----- lists -------------------------------------------------------------------------------------

TEST(PolicyList, ParsesEachItem) {
  const std::vector<OverlapPolicy> policies =
      parse_policy_list("sequential, concurrent ,priority,shape:3+priority,comm-first+nccl-ctas:..16");
  ASSERT_EQ(policies.size(), 5u);
  EXPECT_EQ(to_string(policies[0]), "sequential");
  EXPECT_EQ(to_string(policies[1]), "concurrent");
  EXPECT_EQ(to_string(policies[2]), "priority");
  EXPECT_EQ(to_string(policies[3]), "shape:3+priority");
  EXPECT_EQ(to_string(policies[4]), "comm-first+nccl-ctas:..16");
  EXPECT_EQ(parse_policy_list("priority").size(), 1u);
}

TEST(PolicyList, ItemErrorsNameTheItem) {
  EXPECT_EQ(list_error("priority,shape:3+prio"),
            "policy list item 2 of 'priority,shape:3+prio': unknown policy token 'prio' in "
            "'shape:3+prio'" +
                kAccepted);
  EXPECT_EQ(list_error("sequential+priority,priority"),
            "policy list item 1 of 'sequential+priority,priority': policy token 'priority' cannot "
            "combine "
            "with 'sequential' in 'sequential+priority': sequential runs compute and collective on one "
            "stream, so no other control applies" +
                kAccepted);
}

TEST(PolicyList, EmptyListAndEmptyItems) {
  EXPECT_EQ(list_error(""), "empty policy list ''" + kAccepted);
  EXPECT_EQ(list_error("priority,,shape:3"),
            "policy list item 2 of 'priority,,shape:3' is empty: ',' must separate two policies" + kAccepted);
  EXPECT_EQ(list_error("priority,"),
            "policy list item 2 of 'priority,' is empty: ',' must separate two policies" + kAccepted);
  EXPECT_EQ(list_error(" , priority"),
            "policy list item 1 of ', priority' is empty: ',' must separate two policies" + kAccepted);
}

// ----- policy files ------------------------------------------------------------------------------

class PolicyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    directory_ = std::filesystem::temp_directory_path() /
                 ("tandem_test_policy_" + std::to_string(getpid()) + "_" + test->name());
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::string write(const std::string& name, const std::string& content) {
    const std::string path = (directory_ / name).string();
    std::ofstream(path) << content;
    return path;
  }
  std::string file_error(const std::string& path) {
    return error_of([&] { load_policy_file(path); });
  }

  std::filesystem::path directory_;
};

TEST_F(PolicyFile, CommentedHeaderThenPolicy) {
  const std::string path = write("best.policy",
                                 "# written by tandem tune\n"
                                 "#   workload: gemm-bf16 8192^3, all-reduce 256 MiB\n"
                                 "\n"
                                 "   # efficiency 87 %\n"
                                 "  priority + shape:3   # best of 24\r\n"
                                 "\n"
                                 "# trailing comment\n");
  EXPECT_EQ(to_string(load_policy_file(path)), "shape:3+priority");
  EXPECT_EQ(parse_policy("@" + path), load_policy_file(path));
  EXPECT_EQ(parse_policy("  @" + path + "  "), load_policy_file(path));
}

TEST_F(PolicyFile, PolicyWithoutTrailingNewline) {
  EXPECT_EQ(to_string(load_policy_file(write("p", "sequential"))), "sequential");
}

TEST_F(PolicyFile, UsableInAList) {
  const std::string path = write("tuned.txt", "# tuned\nsm-target:116+nccl-cga:1+nccl-ctas:..16\n");
  const std::vector<OverlapPolicy> policies = parse_policy_list("sequential,@" + path + ",priority");
  ASSERT_EQ(policies.size(), 3u);
  EXPECT_EQ(to_string(policies[1]), "sm-target:116+nccl-ctas:..16+nccl-cga:1");
}

TEST_F(PolicyFile, MissingFile) {
  const std::string path = (directory_ / "absent.policy").string();
  EXPECT_EQ(file_error(path), "cannot open policy file '" + path + "': No such file or directory");
  EXPECT_EQ(policy_error("@" + path), "cannot open policy file '" + path + "': No such file or directory");
  EXPECT_EQ(list_error("priority,@" + path), "policy list item 2 of 'priority,@" + path +
                                                 "': cannot open policy file '" + path +
                                                 "': No such file or directory");
}

TEST_F(PolicyFile, MissingFileName) {
  EXPECT_EQ(policy_error("@"), "missing policy file name after '@'");
  EXPECT_EQ(policy_error("@  "), "missing policy file name after '@'");
}

TEST_F(PolicyFile, DirectoryIsRejected) {
  EXPECT_EQ(file_error(directory_.string()), "policy file '" + directory_.string() + "' is a directory");
}

TEST_F(PolicyFile, EmptyOrCommentOnly) {
  const std::string why =
      "' holds no policy: every line is blank or a '#' comment (expected one line such as "
      "'shape:3+priority')";
  const std::string empty = write("empty", "");
  EXPECT_EQ(file_error(empty), "policy file '" + empty + "" + why);
  const std::string comments = write("comments", "# only\n\n   # comments\n");
  EXPECT_EQ(file_error(comments), "policy file '" + comments + why);
}

TEST_F(PolicyFile, TwoPolicyLines) {
  const std::string path = write("two", "# header\npriority\n\nshape:3\n");
  EXPECT_EQ(file_error(path), "policy file '" + path +
                                  "' line 4 holds a second policy 'shape:3' after line 2; a policy file "
                                  "holds one policy (list several with ',')");
}

TEST_F(PolicyFile, BadPolicyNamesFileAndLine) {
  const std::string path = write("bad", "# header\n\nshape:3+prio\n");
  EXPECT_EQ(file_error(path),
            "policy file '" + path + "' line 3: unknown policy token 'prio' in 'shape:3+prio'" + kAccepted);
}

TEST_F(PolicyFile, JsonIsRejectedClearly) {
  const std::string path = write("best.json", "{\"policy\": \"shape:3+priority\"}\n");
  EXPECT_EQ(file_error(path), "policy file '" + path +
                                  "' looks like JSON; a policy file is plain text: '#' comment lines and one "
                                  "policy line such as 'shape:3+priority'");
  // A JSON list too (a tune --json's "candidates" pasted into a file).
  const std::string list = write("list.json", "[\"priority\", \"shape:3+priority\"]\n");
  EXPECT_NE(file_error(list).find("' looks like JSON; a policy file is plain text"), std::string::npos)
      << file_error(list);
}

TEST_F(PolicyFile, NoFileReferencesInFiles) {
  const std::string path = write("indirect", "@other.policy\n");
  EXPECT_EQ(file_error(path), "policy file '" + path +
                                  "' line 1 refers to '@other.policy'; a policy file must hold a policy, "
                                  "not another file name");
}

// ----- help --------------------------------------------------------------------------------------

TEST(PolicyHelp, ListsEveryToken) {
  const std::string help = policy_grammar_help();
  for (const char* token :
       {"sequential", "concurrent", "comm-first", "priority", "shape:N", "shape:<bytes>", "shape:auto", "sm-target:N",
        "nccl-ctas:MIN..MAX", "nccl-cga:1|2|4", "nccl-cta-policy:efficiency|zero", "green:N", "nccl-symmetric",
        "copy-engine", "cu-mask:N", "@FILE"})
    EXPECT_NE(help.find(std::string("\n  ") + token + " "), std::string::npos) << token;
  EXPECT_EQ(help.back(), '\n');
}

}  // namespace
}  // namespace tandem
