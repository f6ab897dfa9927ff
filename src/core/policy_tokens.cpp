// The policy tokens, one row each (tandem/policy_tokens.h says who reads them).
#include "tandem/policy_tokens.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "tandem/enum_table.h"
#include "tandem/printable.h"
#include "tandem/text.h"

namespace tandem {

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
// More than 64 resident blocks per SM exceeds every GPU's block limit (32 on current parts).
constexpr int kMaxBlocksPerSm = 64;
// NCCL caps channels (and so CTAs per collective) at 64.
constexpr int kMaxNcclCtas = 64;
// The padding ends up in cudaFuncSetAttribute(MaxDynamicSharedMemorySize), which takes an int.
constexpr int64_t kMaxShapeBytes = std::numeric_limits<int>::max();
// NCCL_VERSION_CODE of the releases whose ncclConfig_t first had a field: 2.17 minCTAs, maxCTAs and
// cgaClusterSize; 2.27 CTAPolicy (default and efficiency); 2.28 CTA policy zero.
constexpr int kNccl2_17 = 21700;
constexpr int kNccl2_27 = 22700;
constexpr int kNccl2_28 = 22800;

// ----- values ------------------------------------------------------------------------------------

[[noreturn]] void invalid(std::string why) { throw InvalidTokenValue{std::move(why)}; }

bool is_all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A whole, unsigned decimal: no sign, no trailing characters, no overflow.
int64_t parse_whole_number(std::string_view digits) {
  if (!is_all_digits(digits)) invalid(quoted_value(digits) + " is not a whole number");
  int64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error == std::errc::result_out_of_range) invalid(quoted_value(digits) + " is too large");
  (void)end;  // is_all_digits guarantees from_chars consumed everything.
  return value;
}

int parse_in_range(std::string_view digits, int min, int max, const char* what) {
  const int64_t value = parse_whole_number(digits);
  if (value < min || value > max)
    invalid(std::string(what) + " must be " + std::to_string(min) + ".." + std::to_string(max) + ", not " +
            std::to_string(value));
  return static_cast<int>(value);
}

int parse_positive(std::string_view digits, const char* what) {
  return parse_in_range(digits, 1, std::numeric_limits<int>::max(), what);
}

int64_t bytes_per_unit(std::string_view unit) {
  if (unit == "B") return 1;
  if (unit == "KiB") return kKiB;
  if (unit == "MiB") return kMiB;
  invalid("unknown size unit " + quoted_value(unit) + " (use B, KiB or MiB)");
}

ShapeTarget parse_shape(std::string_view value) {
  ShapeTarget shape;
  if (value == "auto") {
    shape.kind = ShapeTarget::Kind::Auto;
    return shape;
  }
  const size_t unit_start = std::min(value.find_first_not_of("0123456789"), value.size());
  const std::string_view digits = value.substr(0, unit_start);
  const std::string_view unit = value.substr(unit_start);
  if (digits.empty())
    invalid(quoted_value(value) + " is neither a block count (1..64), a size (48KiB, 4096B, 1MiB) nor auto");
  if (unit.empty()) {
    const int64_t blocks = parse_whole_number(digits);
    if (blocks < 1 || blocks > kMaxBlocksPerSm) {
      std::string why =
          "blocks per SM must be 1.." + std::to_string(kMaxBlocksPerSm) + ", not " + std::to_string(blocks);
      // A large bare number is most likely a byte count missing its unit.
      if (blocks > kMaxBlocksPerSm) why += " (for a size add a unit: shape:" + std::string(digits) + "B)";
      invalid(why);
    }
    shape.kind = ShapeTarget::Kind::BlocksPerSm;
    shape.blocks_per_sm = static_cast<int>(blocks);
    return shape;
  }
  const int64_t per_unit = bytes_per_unit(unit);
  const int64_t count = parse_whole_number(digits);
  if (count == 0) invalid("a shared-memory size must be greater than 0");
  if (count > kMaxShapeBytes / per_unit)
    invalid("a shared-memory size must be at most " + std::to_string(kMaxShapeBytes) +
            " bytes (a CUDA launch takes an int)");
  shape.kind = ShapeTarget::Kind::Bytes;
  shape.bytes = count * per_unit;
  return shape;
}

// nccl-ctas:MIN..MAX, N, MIN.. or ..MAX.
void parse_nccl_ctas(std::string_view value, OverlapPolicy& policy) {
  const size_t dots = value.find("..");
  if (dots == std::string_view::npos) {
    const int ctas = parse_in_range(value, 1, kMaxNcclCtas, "an NCCL CTA count");
    policy.nccl_min_ctas = ctas;
    policy.nccl_max_ctas = ctas;
    return;
  }
  const std::string_view min_text = value.substr(0, dots);
  const std::string_view max_text = value.substr(dots + 2);
  if (min_text.empty() && max_text.empty()) invalid("give MIN, MAX or both around '..'");
  if (!min_text.empty()) policy.nccl_min_ctas = parse_in_range(min_text, 1, kMaxNcclCtas, "MIN CTAs");
  if (!max_text.empty()) policy.nccl_max_ctas = parse_in_range(max_text, 1, kMaxNcclCtas, "MAX CTAs");
  if (policy.nccl_min_ctas && policy.nccl_max_ctas && *policy.nccl_min_ctas > *policy.nccl_max_ctas)
    invalid("MIN CTAs " + std::to_string(*policy.nccl_min_ctas) + " exceeds MAX CTAs " +
            std::to_string(*policy.nccl_max_ctas));
}

std::string format_cta_range(const std::optional<int>& min_ctas, const std::optional<int>& max_ctas) {
  if (min_ctas && max_ctas && *min_ctas == *max_ctas) return std::to_string(*min_ctas);
  std::string range;
  if (min_ctas) range += std::to_string(*min_ctas);
  range += "..";
  if (max_ctas) range += std::to_string(*max_ctas);
  return range;
}

int parse_cga_cluster_size(std::string_view value) {
  if (value == "1" || value == "2" || value == "4") return value[0] - '0';
  invalid("the NCCL cluster size must be 1, 2 or 4, not " + quoted_value(value));
}

NcclCtaPolicy parse_cta_policy(std::string_view value) {
  if (value == "efficiency") return NcclCtaPolicy::Efficiency;
  if (value == "zero") return NcclCtaPolicy::Zero;
  invalid("the NCCL CTA policy must be efficiency or zero, not " + quoted_value(value));
}

std::optional<int> cta_policy_value(NcclCtaPolicy policy) {
  if (policy == NcclCtaPolicy::Efficiency) return kNcclCtaPolicyEfficiency;
  if (policy == NcclCtaPolicy::Zero) return kNcclCtaPolicyZero;
  return std::nullopt;
}

std::string format_bytes(int64_t bytes) {
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MiB";
  if (bytes % kKiB == 0) return std::to_string(bytes / kKiB) + "KiB";
  return std::to_string(bytes) + "B";
}

// "keyword" when `set`, else "".
std::string flag(bool set, const char* keyword) { return set ? keyword : ""; }
// "keyword:N" when `value` is set, else "".
std::string numbered(const std::optional<int>& value, const char* keyword) {
  return value ? std::string(keyword) + ":" + std::to_string(*value) : "";
}

// Why a program run by `tandem run` cannot take symmetric windows: it allocates its own buffers.
// NCCL lets a user's own NCCL_MIN_CTAS, NCCL_MAX_CTAS, NCCL_CGA_CLUSTER_SIZE and NCCL_CTA_POLICY
// override a communicator's config (init.cc, envConfigOverride), so those still win.
constexpr std::string_view kNcclConfigDetail =
    "sets the communicator's ncclConfig_t when the program creates it (ncclCommInitRank, "
    "ncclCommInitRankConfig, ncclCommSplit, ncclCommShrink); an NCCL_* variable the user sets still wins";
constexpr std::string_view kNeedsProgramWindows = "it needs symmetric NCCL windows registered by the program";
// PyTorch's own knobs carry what tandem.torch applies: process-group options (priority, nccl-*), the
// SM carveout (sm-target), its DDP hook and FSDP2 collectives (copy-engine).
constexpr std::string_view kAppliedInPyTorch = "";

std::vector<PolicyToken> make_rows() {
  using P = OverlapPolicy;
  using V = std::string_view;
  std::vector<PolicyToken> rows = {
      {"sequential",
       "",
       {{"sequential", "compute and collective on one stream (combines with nothing)"}},
       [](V, P& p) { p.order = LaunchOrder::Sequential; },
       [](const P& p) { return flag(p.order == LaunchOrder::Sequential, to_string(LaunchOrder::Sequential)); },
       [](P& p) { p.order = LaunchOrder::ComputeFirst; },
       0,
       RunTreatment::Refused,
       "the program's streams are its own",
       kNeedsNothing,
       "PyTorch puts its collectives on NCCL's own streams, not on the compute stream"},
      {"concurrent",
       "",
       {{"concurrent", "two streams, compute enqueued first (the default)"}},
       [](V, P& p) { p.order = LaunchOrder::ComputeFirst; },
       // The default launch order: printed only for a policy that sets nothing (to_string).
       [](const P&) { return std::string(); },
       [](P&) {},
       1,
       RunTreatment::AsIs,
       "",
       kNeedsTwoStreams,
       kAppliedInPyTorch},
      {"comm-first",
       "",
       {{"comm-first", "two streams, collective enqueued before compute"}},
       [](V, P& p) { p.order = LaunchOrder::CommFirst; },
       [](const P& p) { return flag(p.order == LaunchOrder::CommFirst, to_string(LaunchOrder::CommFirst)); },
       [](P& p) { p.order = LaunchOrder::ComputeFirst; },
       2,
       RunTreatment::Refused,
       "the program decides its launch order",
       kNeedsTwoStreams,
       "PyTorch decides its launch order (DDP issues each bucket's all-reduce when its gradients are ready)"},
      {"priority",
       "",
       {{"priority", "collective stream at the greatest priority, compute stream at the least"}},
       [](V, P& p) { p.comm_priority = true; },
       [](const P& p) { return flag(p.comm_priority, "priority"); },
       [](P& p) { p.comm_priority = false; },
       4,
       RunTreatment::Interposer,
       "NCCL launches at the greatest priority",
       kNeedsTwoStreams,
       kAppliedInPyTorch},
      {"shape",
       "N|<bytes>|auto",
       {{"shape:N", "pad compute launches to N resident blocks per SM (1..64)"},
        {"shape:<bytes>", "pad compute launches with this much dynamic shared memory (4096B, 48KiB, 1MiB)"},
        {"shape:auto", "least padding that leaves room for the collective"}},
       [](V v, P& p) { p.shape = parse_shape(v); },
       [](const P& p) { return p.shape.kind == ShapeTarget::Kind::None ? std::string() : to_string(p.shape); },
       [](P& p) { p.shape = ShapeTarget{}; },
       3,
       RunTreatment::Interposer,
       "compute launches that may run beside an outstanding collective padded (with compute-always: every "
       "compute launch; shape:auto: for the NCCL footprint last seen)",
       kNeedsTwoStreams,
       "occupancy shaping pads the launches of PyTorch's compute kernels, which only tandem's interposer can do: run "
       "the program under `tandem run --policy {policy} -- python ...` instead"},
      {"sm-target",
       "N",
       {{"sm-target:N", "cuBLASLt SM-count target for GEMMs"}},
       [](V v, P& p) { p.sm_target = parse_positive(v, "the SM-count target"); },
       [](const P& p) { return numbered(p.sm_target, "sm-target"); },
       [](P& p) { p.sm_target.reset(); },
       5,
       RunTreatment::Interposer,
       "cuBLAS GEMMs that may run beside an outstanding collective (set on the handle at cublasSetStream, on a "
       "cuBLASLt matmul descriptor at its creation; with compute-always: every handle and descriptor)",
       kNeedsTwoStreams | kNeedsCublasLt,
       kAppliedInPyTorch},
      {"nccl-ctas",
       "MIN..MAX",
       {{"nccl-ctas:MIN..MAX", "NCCL minCTAs/maxCTAs (also N, MIN.., ..MAX; 1..64)"}},
       [](V v, P& p) { parse_nccl_ctas(v, p); },
       [](const P& p) {
         return p.nccl_min_ctas || p.nccl_max_ctas ? "nccl-ctas:" + format_cta_range(p.nccl_min_ctas, p.nccl_max_ctas)
                                                   : std::string();
       },
       [](P& p) {
         p.nccl_min_ctas.reset();
         p.nccl_max_ctas.reset();
       },
       6,
       RunTreatment::Interposer,
       kNcclConfigDetail,
       kNeedsTwoStreams | kNeedsOwnCommunicator,
       kAppliedInPyTorch,
       {{"minCTAs", "NCCL_MIN_CTAS", kNccl2_17, "min_ctas", [](const P& p) { return p.nccl_min_ctas; }},
        {"maxCTAs", "NCCL_MAX_CTAS", kNccl2_17, "max_ctas", [](const P& p) { return p.nccl_max_ctas; }}}},
      {"nccl-cga",
       "1|2|4",
       {{"nccl-cga:1|2|4", "NCCL CGA cluster size"}},
       [](V v, P& p) { p.nccl_cga_cluster_size = parse_cga_cluster_size(v); },
       [](const P& p) { return numbered(p.nccl_cga_cluster_size, "nccl-cga"); },
       [](P& p) { p.nccl_cga_cluster_size.reset(); },
       7,
       RunTreatment::Interposer,
       kNcclConfigDetail,
       kNeedsTwoStreams | kNeedsOwnCommunicator,
       kAppliedInPyTorch,
       {{"cgaClusterSize", "NCCL_CGA_CLUSTER_SIZE", kNccl2_17, "cga_cluster_size",
         [](const P& p) { return p.nccl_cga_cluster_size; }}}},
      {"nccl-cta-policy",
       "efficiency|zero",
       {{"nccl-cta-policy:efficiency|zero", "NCCL CTA policy"}},
       [](V v, P& p) { p.nccl_cta_policy = parse_cta_policy(v); },
       [](const P& p) {
         return p.nccl_cta_policy == NcclCtaPolicy::Default
                    ? std::string()
                    : std::string("nccl-cta-policy:") + to_string(p.nccl_cta_policy);
       },
       [](P& p) { p.nccl_cta_policy = NcclCtaPolicy::Default; },
       8,
       RunTreatment::Interposer,
       kNcclConfigDetail,
       kNeedsTwoStreams | kNeedsOwnCommunicator,
       kAppliedInPyTorch,
       {{"CTAPolicy",
         "NCCL_CTA_POLICY",
         kNccl2_27,
         "cta_policy",
         [](const P& p) { return cta_policy_value(p.nccl_cta_policy); },
         NcclScope::Program,
         {{kNcclCtaPolicyZero, kNccl2_28, "zero"}}}}},
      {"green",
       "N",
       {{"green:N", "compute in a green context of N SMs, collective in the rest"}},
       [](V v, P& p) { p.green_sms = parse_positive(v, "the green-context SM count"); },
       [](const P& p) { return numbered(p.green_sms, "green"); },
       [](P& p) { p.green_sms.reset(); },
       9,
       RunTreatment::Refused,
       "it needs green contexts in the program",
       kNeedsTwoStreams | kNeedsGreenContext,
       "tandem cannot move PyTorch's kernels into a green context; the program can, with torch.cuda.green_contexts"},
      {"nccl-symmetric",
       "",
       {{"nccl-symmetric", "buffers as NCCL symmetric windows (direct-access kernels)"}},
       [](V, P& p) { p.nccl_symmetric = true; },
       [](const P& p) { return flag(p.nccl_symmetric, "nccl-symmetric"); },
       [](P& p) { p.nccl_symmetric = false; },
       10,
       RunTreatment::Refused,
       kNeedsProgramWindows,
       kNeedsTwoStreams | kNeedsOwnCommunicator | kNeedsSymmetricWindows,
       "PyTorch allocates the collectives' buffers, and tandem.torch cannot register them as NCCL windows yet"},
      {"copy-engine",
       "",
       {{"copy-engine",
         "collectives on copy engines: one ncclGather per root, each on its own lane communicator; "
         "reductions add a sum kernel (all-reduce: then an in-place copy-engine all-gather)"}},
       [](V, P& p) { p.copy_engine = true; },
       [](const P& p) { return flag(p.copy_engine, "copy-engine"); },
       [](P& p) { p.copy_engine = false; },
       11,
       RunTreatment::Interposer,
       "the program's all-reduces and reduce-scatters (sums, averages, pre-multiplied sums of bf16, fp16, fp32), "
       "all-gathers, all-to-alls and broadcasts (any type) run on the copy-engine route, also inside NCCL groups "
       "and CUDA graphs (copied through window memory of its own, on lanes split from the program's "
       "communicator); any other call stays with NCCL, its reason in the summary",
       kNeedsTwoStreams | kNeedsOwnCommunicator | kNeedsSymmetricWindows,
       kAppliedInPyTorch,
       // NCCL moves all-gather and all-to-all data in symmetric windows with copy engines only under CTA
       // policy zero: on tandem's lanes, never on the program's communicator (its other collectives).
       {{"CTAPolicy", "NCCL_CTA_POLICY", kNccl2_28, "cta_policy",
         [](const P& p) { return p.copy_engine ? std::optional<int>(kNcclCtaPolicyZero) : std::nullopt; },
         NcclScope::Own}}},
      {"compute-always",
       "",
       {{"compute-always",
         "shape and sm-target on every compute launch (the paper's form); without it `tandem run` applies them "
         "only to compute that may run beside an outstanding collective"}},
       [](V, P& p) { p.compute_always = true; },
       [](const P& p) { return flag(p.compute_always, "compute-always"); },
       [](P& p) { p.compute_always = false; },
       12,
       RunTreatment::Interposer,
       "shape and sm-target act on every compute launch, also where no collective is outstanding",
       kNeedsNothing,
       kAppliedInPyTorch},
      {"cu-mask",
       "N",
       {{"cu-mask:N",
         "compute on a stream masked to N compute units, the collective on every CU (AMD: HIP builds only)"}},
       [](V v, P& p) { p.cu_mask_cus = parse_positive(v, "the compute-unit count"); },
       [](const P& p) { return numbered(p.cu_mask_cus, "cu-mask"); },
       [](P& p) { p.cu_mask_cus.reset(); },
       13,
       RunTreatment::Refused,
       "the interposer hooks CUDA launches only (docs/AMD.md)",
       kNeedsTwoStreams | kNeedsCuMask,
       "tandem.torch is built for CUDA only (docs/AMD.md)",
       {},  // no NCCL field
       kOnHip,
       "compute-unit masks are AMD's (hipExtStreamCreateWithCUMask); on NVIDIA, green:N confines compute to N SMs"},
  };
  return rows;
}

// `text` with "{policy}" replaced by `policy`.
std::string replace_policy(std::string_view text, const std::string& policy) {
  std::string out(text);
  const size_t at = out.find("{policy}");
  if (at != std::string::npos) out.replace(at, 8, policy);
  return out;
}

// Markdown cell text: '|' would end the cell.
std::string escape_cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string to_string(const ShapeTarget& shape) {
  switch (shape.kind) {
    case ShapeTarget::Kind::BlocksPerSm:
      return "shape:" + std::to_string(shape.blocks_per_sm);
    case ShapeTarget::Kind::Bytes:
      return "shape:" + format_bytes(shape.bytes);
    case ShapeTarget::Kind::Auto:
      return "shape:auto";
    case ShapeTarget::Kind::None:
      break;
  }
  return "none";
}

std::string PolicyToken::syntax() const {
  return takes_value() ? std::string(keyword) + ":" + std::string(value_syntax) : std::string(keyword);
}

const std::vector<PolicyToken>& policy_tokens() {
  // Never destroyed: the interposer prints its policy from a library destructor at exit, after the
  // statics of this translation unit would have gone (a crash at exit in every NCCL program otherwise).
  static const std::vector<PolicyToken>* rows = new std::vector<PolicyToken>(make_rows());
  return *rows;
}

const PolicyToken* find_policy_token(std::string_view keyword) {
  for (const PolicyToken& row : policy_tokens())
    if (row.keyword == keyword) return &row;
  return nullptr;
}

std::string accepted_policy_tokens() {
  std::vector<std::string> syntaxes;
  for (const PolicyToken& row : policy_tokens()) syntaxes.push_back(row.syntax());
  return join(syntaxes, ", ");
}

std::string needs_text(unsigned needs) {
  static const std::pair<TokenNeeds, const char*> kNames[] = {
      {kNeedsTwoStreams, "two streams"},
      {kNeedsOwnCommunicator, "a communicator of its own"},
      {kNeedsSymmetricWindows, "symmetric windows"},
      {kNeedsGreenContext, "a green context"},
      {kNeedsCublasLt, "a cuBLASLt GEMM"},
      {kNeedsCuMask, "a compute-unit mask"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames)
    if (needs & bit) names.push_back(name);
  return join(names, ", ");
}

bool PolicyToken::applies_on(Platform platform) const {
  return platforms & (platform == Platform::Hip ? kOnHip : kOnCuda);
}

std::string platform_text(const PolicyToken& row) {
  std::vector<std::string> builds, refused;
  for (Platform platform : {Platform::Cuda, Platform::Hip})
    (row.applies_on(platform) ? builds : refused).push_back(to_string(platform));
  std::string text = join(builds, ", ");
  if (!refused.empty()) text += " (" + join(refused, ", ") + ": refused, " + std::string(row.platform_detail) + ")";
  return text;
}

std::string run_treatment_text(const PolicyToken& row) {
  const std::string detail(row.run_detail);
  switch (row.run) {
    case RunTreatment::AsIs:
      return "yes (the program as it is)";
    case RunTreatment::Interposer:
      return "yes, by the interposer: " + detail;
    case RunTreatment::Refused:
      return "no (refused: " + detail + ")";
  }
  return "";
}

std::string pytorch_treatment_text(const PolicyToken& row) {
  if (row.pytorch_refusal.empty()) return "yes";
  return "no (" + replace_policy(row.pytorch_refusal, "POLICY") + ")";
}

std::string policy_tokens_markdown() {
  std::string table =
      "| token | what it does | needs | builds | `tandem run` | tandem.torch |\n"
      "|---|---|---|---|---|---|\n";
  for (const PolicyToken& row : policy_tokens()) {
    const std::string needs = needs_text(row.needs);
    for (const TokenForm& form : row.forms)
      table += "| `" + escape_cell(form.syntax) + "` | " + escape_cell(form.help) + " | " +
               (needs.empty() ? std::string("nothing") : needs) + " | " + escape_cell(platform_text(row)) + " | " +
               escape_cell(run_treatment_text(row)) + " | " + escape_cell(pytorch_treatment_text(row)) + " |\n";
  }
  return table;
}

int NcclField::min_version_for(int field_value) const {
  for (const LaterValue& later : later_values)
    if (later.value == field_value) return later.min_version;
  return min_version;
}

std::string nccl_version_text(int version_code) {
  return std::to_string(version_code / 10000) + "." + std::to_string(version_code / 100 % 100);
}

std::string nccl_fields_markdown() {
  std::string table =
      "| token | `ncclConfig_t` field | overridden by | NCCL | `ProcessGroupNCCL.Options().config` | written into |\n"
      "|---|---|---|---|---|---|\n";
  for (const PolicyToken& row : policy_tokens())
    for (const NcclField& f : row.nccl) {
      std::string version = nccl_version_text(f.min_version);
      for (const NcclField::LaterValue& later : f.later_values)
        version += " (" + std::string(later.token_text) + ": " + nccl_version_text(later.min_version) + ")";
      table += "| `" + std::string(row.keyword) + "` | `" + std::string(f.config_field) + "` | `" +
               std::string(f.variable) + "` | " + version + " | `" + std::string(f.pytorch_option) + "` | " +
               (f.scope == NcclScope::Program ? "the program's communicators and tandem's"
                                              : "tandem's own communicators only") +
               " |\n";
    }
  return table;
}

std::vector<NcclFieldValue> nccl_field_values(const OverlapPolicy& policy, NcclScope scope) {
  std::vector<NcclFieldValue> values;
  for (const PolicyToken& row : policy_tokens())
    for (const NcclField& field : row.nccl) {
      if (scope == NcclScope::Program && field.scope == NcclScope::Own) continue;
      const std::optional<int> value = field.value(policy);
      if (!value) continue;
      const auto same = std::find_if(values.begin(), values.end(), [&](const NcclFieldValue& v) {
        return v.field->config_field == field.config_field;
      });
      if (same == values.end())
        values.push_back({&row, &field, *value});
      else
        *same = {&row, &field, *value};
    }
  return values;
}

std::string run_refusal(const OverlapPolicy& policy) {
  for (const PolicyToken& row : policy_tokens()) {
    if (row.run != RunTreatment::Refused) continue;
    const std::string token = row.print(policy);
    if (!token.empty()) return token + " cannot be applied by `tandem run`: " + std::string(row.run_detail);
  }
  return "";
}

bool run_can_apply(const OverlapPolicy& policy) { return run_refusal(policy).empty(); }

std::string platform_refusal(const OverlapPolicy& policy, Platform platform) {
  for (const PolicyToken& row : policy_tokens()) {
    if (row.applies_on(platform)) continue;
    const std::string token = row.print(policy);
    if (!token.empty())
      return token + " cannot be applied in a " + to_string(platform) + " build: " + std::string(row.platform_detail);
  }
  return "";
}

std::string pytorch_refusal(const OverlapPolicy& policy) {
  for (const PolicyToken& row : policy_tokens()) {
    if (row.pytorch_refusal.empty()) continue;
    const std::string token = row.print(policy);
    if (!token.empty())
      return token + " cannot be applied inside PyTorch: " + replace_policy(row.pytorch_refusal, to_string(policy));
  }
  return "";
}

const char* to_string(LaunchOrder order) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"sequential", "concurrent", "comm-first"};
  static_assert(covers(kNames, LaunchOrder::CommFirst), "one name per LaunchOrder");
  return table_entry(kNames, order);
}

const char* to_string(NcclCtaPolicy policy) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"default", "efficiency", "zero"};
  static_assert(covers(kNames, NcclCtaPolicy::Zero), "one name per NcclCtaPolicy");
  return table_entry(kNames, policy);
}

bool OverlapPolicy::needs_own_communicator() const {
  for (const PolicyToken& row : policy_tokens())
    if ((row.needs & kNeedsOwnCommunicator) && row.is_set(*this)) return true;
  return false;
}

bool OverlapPolicy::registers_windows() const {
  for (const PolicyToken& row : policy_tokens())
    if ((row.needs & kNeedsSymmetricWindows) && row.is_set(*this)) return true;
  return false;
}

}  // namespace tandem
