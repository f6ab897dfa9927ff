#pragma once
// The policy tokens, one row each. This table is the only place a token is described: parse_policy
// and to_string, policy_grammar_help, the accepted tokens listed in every policy error, what
// `tandem run` does with a token (run_can_apply, run_refusal, the interposer's notes), what
// tandem.torch refuses (pytorch_refusal), the NCCL facts of the nccl-* tokens (NcclField: the
// ncclConfig_t field, the variable that overrides it, the first NCCL that reads it, PyTorch's name
// for it), which builds apply it (platform_refusal) and the two tables in docs/POLICIES.md
// (tests/cpu/test_policy_doc.cpp checks them) all read it. To add a token or change how one is
// treated, edit its row in src/core/policy_tokens.cpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/policy.h"

namespace tandem {

// How `tandem run -- CMD` treats a token in a program it does not control.
enum class RunTreatment {
  AsIs,        // nothing to apply: it is how the program runs anyway
  Interposer,  // applied by the interposer (libtandem_preload.so)
  Refused,     // `tandem run` refuses the policy: it needs the program's cooperation
};

// What applying a token takes (a bit mask of these).
enum TokenNeeds : unsigned {
  kNeedsNothing = 0,
  kNeedsTwoStreams = 1u << 0,        // compute and collective on streams of their own
  kNeedsOwnCommunicator = 1u << 1,   // NCCL fixes a communicator's configuration when creating it
  kNeedsSymmetricWindows = 1u << 2,  // buffers from ncclMemAlloc registered as symmetric windows
  kNeedsGreenContext = 1u << 3,      // a CUDA green context for the compute stream
  kNeedsCublasLt = 1u << 4,          // a GEMM run through cuBLASLt
  kNeedsCuMask = 1u << 5,            // an AMD compute-unit mask for the compute stream
};

// The builds that can apply a token (a bit mask of these; tandem/platform.h).
enum TokenPlatforms : unsigned {
  kOnCuda = 1u << 0,
  kOnHip = 1u << 1,
  kOnEveryPlatform = kOnCuda | kOnHip,
};

// One accepted spelling of a token and what it does, for help: {"shape:N", "pad compute ..."}.
struct TokenForm {
  std::string_view syntax;
  std::string_view help;  // one line
};

// Thrown by a row's parse with the reason alone; parse_policy adds the token, the policy text and
// the accepted tokens.
struct InvalidTokenValue {
  std::string why;
};

// Which communicators an NCCL field a token sets is written into.
enum class NcclScope {
  Program,  // every communicator the token configures: a program's (the interposer's overlay, PyTorch's
            // process groups) and those tandem makes for it
  Own,      // only the communicators tandem makes for the token itself (copy-engine's lanes): never a
            // program's, whose other collectives would change with it
};

// One ncclConfig_t field a token writes, with what NCCL says of it. Every front end reads these
// facts here: apply_nccl_settings writes the field by its name (src/nccl/nccl_config.cpp binds names
// to members), the interposer names `variable` when the user set it (NCCL lets it win) and warns
// when the process's NCCL is older than the field or value, tandem.torch sets `pytorch_option` of
// ProcessGroupNCCL.Options().config.
struct NcclField {
  std::string_view config_field;    // ncclConfig_t's member: "minCTAs"
  std::string_view variable;        // NCCL's variable that overrides it (init.cc, envConfigOverride)
  int min_version;                  // NCCL_VERSION_CODE of the first NCCL that reads the field
  std::string_view pytorch_option;  // its name in torch.distributed.ProcessGroupNCCL.Options().config
  // What the token writes into the field; nullopt when the policy leaves it alone.
  std::optional<int> (*value)(const OverlapPolicy&);
  NcclScope scope = NcclScope::Program;
  // Values a later NCCL introduced (CTAPolicy's zero came with 2.28).
  struct LaterValue {
    int value;
    int min_version;              // NCCL_VERSION_CODE
    std::string_view token_text;  // how the token spells the value: "zero"
  };
  std::vector<LaterValue> later_values = {};

  // The first NCCL that accepts `value` in this field.
  int min_version_for(int value) const;
};

// NCCL's values of ncclConfig_t.CTAPolicy (nccl.h: NCCL_CTA_POLICY_EFFICIENCY, NCCL_CTA_POLICY_ZERO;
// src/nccl/nccl_config.cpp checks them against the header). The core reads no NCCL header.
inline constexpr int kNcclCtaPolicyEfficiency = 1;
inline constexpr int kNcclCtaPolicyZero = 2;

struct PolicyToken {
  std::string_view keyword;       // the text before ':'
  std::string_view value_syntax;  // after ':' ("N|<bytes>|auto"); empty when the token takes no value
  std::vector<TokenForm> forms;   // one help line each
  // Sets the token's control from its value ("" for a token without one); throws InvalidTokenValue.
  void (*parse)(std::string_view value, OverlapPolicy&);
  // The token as to_string writes it, or "" when the policy does not set it.
  std::string (*print)(const OverlapPolicy&);
  // Resets the token's control to the default, leaving every other control as it is.
  void (*clear)(OverlapPolicy&);
  // Place in the canonical text. Results record that text, so a token never moves.
  int canonical_position;
  RunTreatment run;
  // Interposer: what it changes; Refused: why
  // (completes "cannot be applied by `tandem run`: ..."); AsIs: "".
  std::string_view run_detail;
  unsigned needs;  // TokenNeeds
  // Why tandem.torch cannot apply the token inside PyTorch (completes "cannot be applied inside
  // PyTorch: ..."; "{policy}" stands for the policy's text), or "" when it can or when the token is
  // how PyTorch runs anyway.
  std::string_view pytorch_refusal;
  // The ncclConfig_t fields the token writes (nccl-ctas, nccl-cga, nccl-cta-policy; copy-engine's
  // own CTA policy); empty for every other token.
  std::vector<NcclField> nccl = {};
  // The builds that apply the token (TokenPlatforms); the others refuse it when parsing, saying why
  // (completes "cannot be applied in a CUDA build: ..."). Defaulted: most tokens are for every build.
  unsigned platforms = kOnEveryPlatform;
  std::string_view platform_detail = "";

  bool takes_value() const { return !value_syntax.empty(); }
  // "shape:N|<bytes>|auto", "priority": how the accepted list spells the token.
  std::string syntax() const;
  bool is_set(const OverlapPolicy& policy) const { return !print(policy).empty(); }
  bool applies_on(Platform platform) const;
};

// Every token, in the order of help and of the accepted list.
const std::vector<PolicyToken>& policy_tokens();
// The row for a keyword ("shape"), or nullptr.
const PolicyToken* find_policy_token(std::string_view keyword);
// "sequential, concurrent, ..., copy-engine": ends every policy syntax error.
std::string accepted_policy_tokens();
// What `tandem run` does with the token, as docs/POLICIES.md says it: "yes", "no (refused: ...)".
std::string run_treatment_text(const PolicyToken&);
// Whether tandem.torch applies the token, as docs/POLICIES.md says it: "yes", "no (...)".
std::string pytorch_treatment_text(const PolicyToken&);
// Which builds apply the token, as docs/POLICIES.md says it: "CUDA, HIP", "HIP (CUDA: refused, ...)".
std::string platform_text(const PolicyToken&);
// "two streams, own communicator"; "" for kNeedsNothing.
std::string needs_text(unsigned needs);
// The token table of docs/POLICIES.md (markdown, one row per form), without the marker comments.
std::string policy_tokens_markdown();
// The NCCL-settings table of docs/POLICIES.md (markdown, one row per NcclField), without the markers.
std::string nccl_fields_markdown();

// One field a policy writes, with the value and the row that writes it.
struct NcclFieldValue {
  const PolicyToken* token;
  const NcclField* field;
  int value;
};
// The ncclConfig_t fields `policy` writes, in the table's order, each once: where two tokens write one
// field the later row's value wins (copy-engine's CTA policy zero over nccl-cta-policy's). `scope`
// Program leaves out the fields tandem writes only into communicators of its own.
std::vector<NcclFieldValue> nccl_field_values(const OverlapPolicy& policy, NcclScope scope = NcclScope::Own);
// "2.28" for 22800: NCCL_VERSION_CODE as NCCL's release names it.
std::string nccl_version_text(int version_code);

}  // namespace tandem
