#pragma once
// OverlapPolicy: a value naming every overlap control tandem can apply. Its text form is what users
// type (--policy, TANDEM_POLICY) and what results record; parse(to_string(p)) == p.
//
// Grammar: tokens joined by '+', order-insensitive, each at most once. The tokens, their values,
// their meaning and what `tandem run` does with each are rows of one table, src/include/tandem/policy_tokens.h
// (src/core/policy_tokens.cpp); policy_grammar_help() and docs/POLICIES.md are rendered from it.
// A whole policy may instead be "@FILE": a policy file (see load_policy_file).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/platform.h"

namespace tandem {

enum class LaunchOrder { Sequential, ComputeFirst, CommFirst };
enum class NcclCtaPolicy { Default, Efficiency, Zero };

struct ShapeTarget {
  enum class Kind { None, BlocksPerSm, Bytes, Auto };
  Kind kind = Kind::None;
  int blocks_per_sm = 0;  // Kind::BlocksPerSm
  int64_t bytes = 0;      // Kind::Bytes
  bool operator==(const ShapeTarget&) const;
  bool operator!=(const ShapeTarget& o) const { return !(*this == o); }
};

struct OverlapPolicy {
  LaunchOrder order = LaunchOrder::ComputeFirst;
  bool comm_priority = false;
  ShapeTarget shape;
  std::optional<int> sm_target;
  std::optional<int> nccl_min_ctas;
  std::optional<int> nccl_max_ctas;
  std::optional<int> nccl_cga_cluster_size;
  NcclCtaPolicy nccl_cta_policy = NcclCtaPolicy::Default;
  std::optional<int> green_sms;
  // cu-mask:N (AMD, HIP builds): compute on a stream masked to N compute units (tandem/cu_mask_plan.h).
  std::optional<int> cu_mask_cus;
  bool nccl_symmetric = false;
  bool copy_engine = false;
  // shape and sm-target on every compute launch (the paper's form); false: only on compute that may
  // run beside an outstanding collective (`tandem run` decides per launch, docs/RUN.md).
  bool compute_always = false;

  bool is_sequential() const { return order == LaunchOrder::Sequential; }
  // Whether a compute-side control (shape, sm-target) is set.
  bool controls_compute() const { return shape.kind != ShapeTarget::Kind::None || sm_target.has_value(); }
  // Whether the collective's buffers are registered as symmetric windows (nccl-symmetric, copy-engine).
  bool registers_windows() const;
  // True if the policy needs its own NCCL communicator (any nccl-* or copy-engine setting).
  bool needs_own_communicator() const;
  bool operator==(const OverlapPolicy&) const;
  bool operator!=(const OverlapPolicy& o) const { return !(*this == o); }
};

// Parses one policy, or "@FILE" (load_policy_file). Throws tandem::Error naming the bad token and
// listing what is accepted, or naming a token this build's platform cannot apply (platform_refusal).
OverlapPolicy parse_policy(std::string_view text);
// Parses a comma-separated list ("priority,shape:3+priority,@best.policy").
std::vector<OverlapPolicy> parse_policy_list(std::string_view text);
// Reads a policy file as `tandem tune` writes it: plain text, blank lines and '#' comments ignored,
// exactly one policy line. Throws tandem::Error if the file is missing, unreadable, empty or invalid.
OverlapPolicy load_policy_file(const std::string& path);
// Canonical text form; parse_policy(to_string(p)) == p.
std::string to_string(const OverlapPolicy&);
// "shape:3", "shape:48KiB", "shape:auto"; "none" when no shaping is set.
std::string to_string(const ShapeTarget&);
// One line per accepted token with its meaning, for --help and error messages.
std::string policy_grammar_help();

// Whether `tandem run -- CMD` can apply every token of the policy to a program it does not control.
bool run_can_apply(const OverlapPolicy&);
// Why it cannot, in one line naming the first refused token ("green:8 cannot be applied by `tandem
// run`: it needs green contexts in the program"); "" when run_can_apply.
std::string run_refusal(const OverlapPolicy&);
// Why a build for `platform` cannot apply the policy, in one line naming the first token it cannot
// ("cu-mask:8 cannot be applied in a CUDA build: ..."); "" when it can apply every token. The
// parsers refuse such a policy for build_platform(); the grammar itself is the same in every build.
std::string platform_refusal(const OverlapPolicy&, Platform platform);
// Why tandem.torch cannot apply `policy` inside PyTorch: the first token it cannot, with the reason
// ("green:66 cannot be applied inside PyTorch: ..."); "" when it can apply every token.
std::string pytorch_refusal(const OverlapPolicy&);
// The tokens of a launch order ("sequential", "concurrent", "comm-first") and of an NCCL CTA policy
// ("default", "efficiency", "zero"), as the token table spells them.
// sm-target:N on a device of `device_sms` SMs: the SMs its GEMMs may use (N, the SM-count target
// cuBLAS takes) and the SMs left to other work (device_sms - N, PyTorch's SM carveout); nullopt when
// the policy sets no target. Throws tandem::Error when N is more than the device has.
struct SmTarget {
  int gemm_sms = 0;
  int carveout = 0;
};
std::optional<SmTarget> sm_target_on(const OverlapPolicy& policy, int device_sms);
const char* to_string(LaunchOrder);
const char* to_string(NcclCtaPolicy);

}  // namespace tandem
