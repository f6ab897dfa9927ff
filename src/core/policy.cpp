#include "tandem/policy.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

#include <sys/stat.h>

#include "tandem/error.h"
#include "tandem/safe_file.h"

namespace tandem {

namespace {

// Listed at the end of every syntax error, so a user who mistyped one token sees every form at
// once.
constexpr const char* kAcceptedTokens =
    "sequential, concurrent, comm-first, priority, shape:N|<bytes>|auto, sm-target:N, "
    "nccl-ctas:MIN..MAX, nccl-cga:1|2|4, nccl-cta-policy:efficiency|zero, green:N, nccl-symmetric, copy-engine";

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
// More than 64 resident blocks per SM exceeds every GPU's block limit (32 on current parts).
constexpr int kMaxBlocksPerSm = 64;
// NCCL caps channels (and so CTAs per collective) at 64.
constexpr int kMaxNcclCtas = 64;
// The padding ends up in cudaFuncSetAttribute(MaxDynamicSharedMemorySize), which takes an int.
constexpr int64_t kMaxShapeBytes = std::numeric_limits<int>::max();

// Parse errors travel as plain messages and become one tandem::Error at the public entry point, so
// a message wrapped with list-item or file context carries a single file:line suffix.
struct SyntaxError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw SyntaxError{std::move(message)}; }

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string with_accepted_list(const std::string& message) {
  return message + "; accepted: " + kAcceptedTokens;
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

// Splits on every separator; empty pieces are kept so callers can report them.
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    if (end == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      return pieces;
    }
    pieces.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

// ----- one token ---------------------------------------------------------------------------------

// Where a token sits, for error messages: the token itself and the whole policy text.
struct TokenSite {
  std::string_view token;
  std::string_view text;
};

[[noreturn]] void fail_invalid(const TokenSite& site, const std::string& why) {
  fail(with_accepted_list("invalid policy token " + in_quotes(site.token) + " in " +
                          in_quotes(site.text) + ": " + why));
}

bool is_all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  return true;
}

// A whole, unsigned decimal: no sign, no trailing characters, no overflow.
int64_t parse_whole_number(const TokenSite& site, std::string_view digits) {
  if (!is_all_digits(digits)) fail_invalid(site, in_quotes(digits) + " is not a whole number");
  int64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error == std::errc::result_out_of_range)
    fail_invalid(site, in_quotes(digits) + " is too large");
  (void)end;  // is_all_digits guarantees from_chars consumed everything.
  return value;
}

int parse_in_range(const TokenSite& site, std::string_view digits, int min, int max,
                   const char* what) {
  const int64_t value = parse_whole_number(site, digits);
  if (value < min || value > max)
    fail_invalid(site, std::string(what) + " must be " + std::to_string(min) + ".." +
                           std::to_string(max) + ", not " + std::to_string(value));
  return static_cast<int>(value);
}

int parse_positive(const TokenSite& site, std::string_view digits, const char* what) {
  return parse_in_range(site, digits, 1, std::numeric_limits<int>::max(), what);
}

int64_t bytes_per_unit(const TokenSite& site, std::string_view unit) {
  if (unit == "B") return 1;
  if (unit == "KiB") return kKiB;
  if (unit == "MiB") return kMiB;
  fail_invalid(site, "unknown size unit " + in_quotes(unit) + " (use B, KiB or MiB)");
}

ShapeTarget parse_shape(const TokenSite& site, std::string_view value) {
  ShapeTarget shape;
  if (value == "auto") {
    shape.kind = ShapeTarget::Kind::Auto;
    return shape;
  }
  const size_t unit_start = std::min(value.find_first_not_of("0123456789"), value.size());
  const std::string_view digits = value.substr(0, unit_start);
  const std::string_view unit = value.substr(unit_start);
  if (digits.empty())
    fail_invalid(site,
                 in_quotes(value) +
                     " is neither a block count (1..64), a size (48KiB, 4096B, 1MiB) nor auto");
  if (unit.empty()) {
    const int64_t blocks = parse_whole_number(site, digits);
    if (blocks < 1 || blocks > kMaxBlocksPerSm) {
      std::string why = "blocks per SM must be 1.." + std::to_string(kMaxBlocksPerSm) + ", not " +
                        std::to_string(blocks);
      // A large bare number is most likely a byte count missing its unit.
      if (blocks > kMaxBlocksPerSm)
        why += " (for a size add a unit: shape:" + std::string(digits) + "B)";
      fail_invalid(site, why);
    }
    shape.kind = ShapeTarget::Kind::BlocksPerSm;
    shape.blocks_per_sm = static_cast<int>(blocks);
    return shape;
  }
  const int64_t per_unit = bytes_per_unit(site, unit);
  const int64_t count = parse_whole_number(site, digits);
  if (count == 0) fail_invalid(site, "a shared-memory size must be greater than 0");
  if (count > kMaxShapeBytes / per_unit)
    fail_invalid(site, "a shared-memory size must be at most " + std::to_string(kMaxShapeBytes) +
                           " bytes (a CUDA launch takes an int)");
  shape.kind = ShapeTarget::Kind::Bytes;
  shape.bytes = count * per_unit;
  return shape;
}

// nccl-ctas:MIN..MAX, N, MIN.. or ..MAX.
void parse_nccl_ctas(const TokenSite& site, std::string_view value, OverlapPolicy& policy) {
  const size_t dots = value.find("..");
  if (dots == std::string_view::npos) {
    const int ctas = parse_in_range(site, value, 1, kMaxNcclCtas, "an NCCL CTA count");
    policy.nccl_min_ctas = ctas;
    policy.nccl_max_ctas = ctas;
    return;
  }
  const std::string_view min_text = value.substr(0, dots);
  const std::string_view max_text = value.substr(dots + 2);
  if (min_text.empty() && max_text.empty()) fail_invalid(site, "give MIN, MAX or both around '..'");
  if (!min_text.empty())
    policy.nccl_min_ctas = parse_in_range(site, min_text, 1, kMaxNcclCtas, "MIN CTAs");
  if (!max_text.empty())
    policy.nccl_max_ctas = parse_in_range(site, max_text, 1, kMaxNcclCtas, "MAX CTAs");
  if (policy.nccl_min_ctas && policy.nccl_max_ctas && *policy.nccl_min_ctas > *policy.nccl_max_ctas)
    fail_invalid(site, "MIN CTAs " + std::to_string(*policy.nccl_min_ctas) + " exceeds MAX CTAs " +
                           std::to_string(*policy.nccl_max_ctas));
}

int parse_cga_cluster_size(const TokenSite& site, std::string_view value) {
  if (value == "1" || value == "2" || value == "4") return value[0] - '0';
  fail_invalid(site, "the NCCL cluster size must be 1, 2 or 4, not " + in_quotes(value));
}

NcclCtaPolicy parse_cta_policy(const TokenSite& site, std::string_view value) {
  if (value == "efficiency") return NcclCtaPolicy::Efficiency;
  if (value == "zero") return NcclCtaPolicy::Zero;
  fail_invalid(site, "the NCCL CTA policy must be efficiency or zero, not " + in_quotes(value));
}

// Every keyword, whether it takes a ":value", and how it sets its control.
struct Control {
  std::string_view keyword;
  bool takes_value;
  void (*apply)(const TokenSite&, std::string_view value, OverlapPolicy&);
};

const Control kControls[] = {
    {"sequential", false,
     [](const TokenSite&, std::string_view, OverlapPolicy& p) {
       p.order = LaunchOrder::Sequential;
     }},
    {"concurrent", false,
     [](const TokenSite&, std::string_view, OverlapPolicy& p) {
       p.order = LaunchOrder::ComputeFirst;
     }},
    {"comm-first", false,
     [](const TokenSite&, std::string_view, OverlapPolicy& p) {
       p.order = LaunchOrder::CommFirst;
     }},
    {"priority", false,
     [](const TokenSite&, std::string_view, OverlapPolicy& p) { p.comm_priority = true; }},
    {"shape", true,
     [](const TokenSite& s, std::string_view v, OverlapPolicy& p) { p.shape = parse_shape(s, v); }},
    {"sm-target", true,
     [](const TokenSite& s, std::string_view v, OverlapPolicy& p) {
       p.sm_target = parse_positive(s, v, "the SM-count target");
     }},
    {"nccl-ctas", true,
     [](const TokenSite& s, std::string_view v, OverlapPolicy& p) { parse_nccl_ctas(s, v, p); }},
    {"nccl-cga", true,
     [](const TokenSite& s, std::string_view v, OverlapPolicy& p) {
       p.nccl_cga_cluster_size = parse_cga_cluster_size(s, v);
     }},
    {"nccl-cta-policy", true,
     [](const TokenSite& s, std::string_view v, OverlapPolicy& p) {
       p.nccl_cta_policy = parse_cta_policy(s, v);
     }},
    {"green", true,
     [](const TokenSite& s, std::string_view v, OverlapPolicy& p) {
       p.green_sms = parse_positive(s, v, "the green-context SM count");
     }},
    {"nccl-symmetric", false,
     [](const TokenSite&, std::string_view, OverlapPolicy& p) { p.nccl_symmetric = true; }},
    {"copy-engine", false,
     [](const TokenSite&, std::string_view, OverlapPolicy& p) { p.copy_engine = true; }},
};

const Control* find_control(std::string_view keyword) {
  for (const Control& control : kControls)
    if (control.keyword == keyword) return &control;
  return nullptr;
}

// A token that was applied, remembered to report duplicates and conflicts by the user's own text.
struct AppliedToken {
  std::string_view keyword;
  std::string_view token;
};

const AppliedToken* find_applied(const std::vector<AppliedToken>& applied,
                                 std::string_view keyword) {
  for (const AppliedToken& entry : applied)
    if (entry.keyword == keyword) return &entry;
  return nullptr;
}

void apply_token(std::string_view token, std::string_view text, std::vector<AppliedToken>& applied,
                 OverlapPolicy& policy) {
  const TokenSite site{token, text};
  const size_t colon = token.find(':');
  const std::string_view keyword = token.substr(0, colon);
  const Control* control = find_control(keyword);
  if (!control)
    fail(with_accepted_list("unknown policy token " + in_quotes(token) + " in " + in_quotes(text)));

  const bool has_value = colon != std::string_view::npos;
  if (control->takes_value && !has_value)
    fail_invalid(site, in_quotes(keyword) + " needs a value after ':'");
  if (!control->takes_value && has_value)
    fail_invalid(site, in_quotes(keyword) + " takes no value");
  const std::string_view value = has_value ? token.substr(colon + 1) : std::string_view{};
  if (control->takes_value && value.empty())
    fail_invalid(site, in_quotes(keyword) + " needs a value after ':'");

  if (const AppliedToken* earlier = find_applied(applied, keyword)) {
    std::string why = "each control may appear at most once";
    if (earlier->token != token)
      why = in_quotes(keyword) + " is already set by " + in_quotes(earlier->token) + "; " + why;
    fail(with_accepted_list("duplicate policy token " + in_quotes(token) + " in " +
                            in_quotes(text) + ": " + why));
  }
  control->apply(site, value, policy);
  applied.push_back({keyword, token});
}

// Launch orders exclude each other, and sequential (one stream) leaves nothing else to control.
void check_combination(const std::vector<AppliedToken>& applied, std::string_view text) {
  if (find_applied(applied, "sequential")) {
    for (const AppliedToken& entry : applied)
      if (entry.keyword != "sequential")
        fail(with_accepted_list(
            "policy token " + in_quotes(entry.token) + " cannot combine with 'sequential' in " +
            in_quotes(text) +
            ": sequential runs compute and collective on one stream, so no other control applies"));
  }
  if (find_applied(applied, "concurrent") && find_applied(applied, "comm-first"))
    fail(with_accepted_list(
        "policy token 'comm-first' cannot combine with 'concurrent' in " + in_quotes(text) +
        ": both are launch orders (concurrent enqueues compute first); give one"));
}

OverlapPolicy parse_tokens(std::string_view text) {
  OverlapPolicy policy;
  std::vector<AppliedToken> applied;
  for (std::string_view raw : split(text, '+')) {
    const std::string_view token = trim(raw);
    if (token.empty())
      fail(with_accepted_list("empty policy token '' in " + in_quotes(text) +
                              ": '+' must join two tokens"));
    apply_token(token, text, applied, policy);
  }
  check_combination(applied, text);
  return policy;
}

// ----- files and lists ---------------------------------------------------------------------------

OverlapPolicy parse_one_policy(std::string_view text);

// Strips a '#' comment and surrounding space; '#' appears in no token, so cutting there is safe.
std::string_view strip_comment(std::string_view line) {
  return trim(line.substr(0, line.find('#')));
}

// A policy file is a few lines; anything larger is not one (and /dev/zero must not fill memory).
constexpr size_t kMaxPolicyFileBytes = 64 * 1024;
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The file's text, read once and bounded: a FIFO, a device or a folder is refused, never waited on.
std::string policy_file_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail("cannot open policy file " + in_quotes(path) + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("policy file " + in_quotes(path) + " is a directory");
  if (!S_ISREG(st.st_mode))
    fail("policy file " + in_quotes(path) + " is not a regular file (a FIFO, socket or device)");
  std::string text;
  try {
    text = read_small_regular_file(path, kMaxPolicyFileBytes);
  } catch (const Error& error) {
    // Its message names the path and the reason; the location suffix is for internal errors only.
    const std::string message = error.what();
    fail("policy file: " + message.substr(0, message.rfind(" [")));
  }
  // Editors on Windows start UTF-8 files with a byte order mark; it is not part of the policy.
  if (std::string_view(text).substr(0, kUtf8Bom.size()) == kUtf8Bom) text.erase(0, kUtf8Bom.size());
  return text;
}

OverlapPolicy read_policy_file(const std::string& path) {
  if (path.empty()) fail("missing policy file name after '@'");
  const std::string text = policy_file_text(path);

  std::string policy_line;
  int policy_line_number = 0;
  const std::vector<std::string_view> lines = split(text, '\n');
  for (size_t index = 0; index < lines.size(); ++index) {
    const int number = static_cast<int>(index) + 1;
    const std::string_view content = strip_comment(lines[index]);
    if (content.empty()) continue;
    // One policy per file: a second line is more likely a mistake than something to ignore.
    if (policy_line_number != 0)
      fail("policy file " + in_quotes(path) + " line " + std::to_string(number) +
           " holds a second policy " + in_quotes(content) + " after line " +
           std::to_string(policy_line_number) +
           "; a policy file holds one policy (list several with ',')");
    policy_line = std::string(content);
    policy_line_number = number;
  }
  if (policy_line_number == 0)
    fail("policy file " + in_quotes(path) +
         " holds no policy: every line is blank or a '#' comment (expected one line such as "
         "'shape:3+priority')");
  if (policy_line[0] == '{' || policy_line[0] == '[')
    fail("policy file " + in_quotes(path) +
         " looks like JSON; a policy file is plain text: '#' comment lines and one policy line "
         "such as "
         "'shape:3+priority'");
  if (policy_line[0] == '@')
    fail("policy file " + in_quotes(path) + " line " + std::to_string(policy_line_number) +
         " refers to " + in_quotes(policy_line) +
         "; a policy file must hold a policy, not another file name");
  try {
    return parse_one_policy(policy_line);
  } catch (const SyntaxError& error) {
    fail("policy file " + in_quotes(path) + " line " + std::to_string(policy_line_number) + ": " +
         error.message);
  }
}

OverlapPolicy parse_one_policy(std::string_view text) {
  const std::string_view trimmed = trim(text);
  if (trimmed.empty()) fail(with_accepted_list("empty policy text " + in_quotes(text)));
  if (trimmed.front() == '@') return read_policy_file(std::string(trim(trimmed.substr(1))));
  if (trimmed.find(',') != std::string_view::npos)
    fail(with_accepted_list(
        "policy text " + in_quotes(trimmed) +
        " holds a ',', which separates policies in a list; give one policy here"));
  return parse_tokens(trimmed);
}

std::vector<OverlapPolicy> parse_list(std::string_view text) {
  const std::string_view trimmed = trim(text);
  if (trimmed.empty()) fail(with_accepted_list("empty policy list " + in_quotes(text)));
  std::vector<OverlapPolicy> policies;
  const std::vector<std::string_view> items = split(trimmed, ',');
  for (size_t index = 0; index < items.size(); ++index) {
    const std::string item_label =
        "policy list item " + std::to_string(index + 1) + " of " + in_quotes(trimmed);
    const std::string_view item = trim(items[index]);
    if (item.empty())
      fail(with_accepted_list(item_label + " is empty: ',' must separate two policies"));
    try {
      policies.push_back(parse_one_policy(item));
    } catch (const SyntaxError& error) {
      fail(item_label + ": " + error.message);
    }
  }
  return policies;
}

// ----- printing ----------------------------------------------------------------------------------

std::string format_bytes(int64_t bytes) {
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MiB";
  if (bytes % kKiB == 0) return std::to_string(bytes / kKiB) + "KiB";
  return std::to_string(bytes) + "B";
}

std::string format_cta_range(const std::optional<int>& min_ctas,
                             const std::optional<int>& max_ctas) {
  if (min_ctas && max_ctas && *min_ctas == *max_ctas) return std::to_string(*min_ctas);
  std::string range;
  if (min_ctas) range += std::to_string(*min_ctas);
  range += "..";
  if (max_ctas) range += std::to_string(*max_ctas);
  return range;
}

const char* cta_policy_name(NcclCtaPolicy policy) {
  switch (policy) {
    case NcclCtaPolicy::Efficiency: return "efficiency";
    case NcclCtaPolicy::Zero: return "zero";
    case NcclCtaPolicy::Default: break;
  }
  return "default";
}

}  // namespace

bool ShapeTarget::operator==(const ShapeTarget& other) const {
  if (kind != other.kind) return false;
  // Only the field the kind names is meaningful; a stale value in the other one does not count.
  switch (kind) {
    case Kind::BlocksPerSm: return blocks_per_sm == other.blocks_per_sm;
    case Kind::Bytes: return bytes == other.bytes;
    case Kind::None:
    case Kind::Auto: return true;
  }
  return true;
}

bool OverlapPolicy::needs_own_communicator() const {
  return nccl_min_ctas || nccl_max_ctas || nccl_cga_cluster_size ||
         nccl_cta_policy != NcclCtaPolicy::Default || nccl_symmetric || copy_engine;
}

bool OverlapPolicy::operator==(const OverlapPolicy& other) const {
  return order == other.order && comm_priority == other.comm_priority && shape == other.shape &&
         sm_target == other.sm_target && nccl_min_ctas == other.nccl_min_ctas &&
         nccl_max_ctas == other.nccl_max_ctas &&
         nccl_cga_cluster_size == other.nccl_cga_cluster_size &&
         nccl_cta_policy == other.nccl_cta_policy && green_sms == other.green_sms &&
         nccl_symmetric == other.nccl_symmetric && copy_engine == other.copy_engine;
}

OverlapPolicy parse_policy(std::string_view text) {
  try {
    return parse_one_policy(text);
  } catch (const SyntaxError& error) {
    TANDEM_THROW(error.message);
  }
}

std::vector<OverlapPolicy> parse_policy_list(std::string_view text) {
  try {
    return parse_list(text);
  } catch (const SyntaxError& error) {
    TANDEM_THROW(error.message);
  }
}

OverlapPolicy load_policy_file(const std::string& path) {
  try {
    return read_policy_file(path);
  } catch (const SyntaxError& error) {
    TANDEM_THROW(error.message);
  }
}

std::string to_string(const ShapeTarget& shape) {
  switch (shape.kind) {
    case ShapeTarget::Kind::BlocksPerSm: return "shape:" + std::to_string(shape.blocks_per_sm);
    case ShapeTarget::Kind::Bytes: return "shape:" + format_bytes(shape.bytes);
    case ShapeTarget::Kind::Auto: return "shape:auto";
    case ShapeTarget::Kind::None: break;
  }
  return "none";
}

std::string to_string(const OverlapPolicy& policy) {
  // Canonical order: launch order, then compute-side controls, then communicator-side ones.
  std::vector<std::string> tokens;
  if (policy.order == LaunchOrder::Sequential) tokens.push_back("sequential");
  if (policy.order == LaunchOrder::CommFirst) tokens.push_back("comm-first");
  if (policy.shape.kind != ShapeTarget::Kind::None) tokens.push_back(to_string(policy.shape));
  if (policy.comm_priority) tokens.push_back("priority");
  if (policy.sm_target) tokens.push_back("sm-target:" + std::to_string(*policy.sm_target));
  if (policy.nccl_min_ctas || policy.nccl_max_ctas)
    tokens.push_back("nccl-ctas:" + format_cta_range(policy.nccl_min_ctas, policy.nccl_max_ctas));
  if (policy.nccl_cga_cluster_size)
    tokens.push_back("nccl-cga:" + std::to_string(*policy.nccl_cga_cluster_size));
  if (policy.nccl_cta_policy != NcclCtaPolicy::Default)
    tokens.push_back(std::string("nccl-cta-policy:") + cta_policy_name(policy.nccl_cta_policy));
  if (policy.green_sms) tokens.push_back("green:" + std::to_string(*policy.green_sms));
  if (policy.nccl_symmetric) tokens.push_back("nccl-symmetric");
  if (policy.copy_engine) tokens.push_back("copy-engine");
  if (tokens.empty()) return "concurrent";

  std::string text = tokens.front();
  for (size_t i = 1; i < tokens.size(); ++i) text += "+" + tokens[i];
  return text;
}

std::string policy_grammar_help() {
  return "A policy is tokens joined by '+', in any order, each at most once:\n"
         "  sequential                        compute and collective on one stream (combines with "
         "nothing)\n"
         "  concurrent                        two streams, compute enqueued first (the default)\n"
         "  comm-first                        two streams, collective enqueued before compute\n"
         "  priority                          collective stream at the greatest priority\n"
         "  shape:N                           pad compute launches to N resident blocks per SM "
         "(1..64)\n"
         "  shape:<bytes>                     pad compute launches with this much dynamic shared "
         "memory\n"
         "                                    (4096B, 48KiB, 1MiB)\n"
         "  shape:auto                        least padding that leaves room for the collective\n"
         "  sm-target:N                       cuBLASLt SM-count target for GEMMs\n"
         "  nccl-ctas:MIN..MAX                NCCL minCTAs/maxCTAs (also N, MIN.., ..MAX; 1..64)\n"
         "  nccl-cga:1|2|4                    NCCL CGA cluster size\n"
         "  nccl-cta-policy:efficiency|zero   NCCL CTA policy\n"
         "  green:N                           compute in a green context of N SMs, collective in "
         "the rest\n"
         "  nccl-symmetric                    buffers as NCCL symmetric windows (direct-access kernels)\n"
         "  copy-engine                       collectives on copy engines (reductions: one sum kernel)\n"
         "  @FILE                             the policy in FILE ('#' comments, one policy line)\n"
         "Lists separate policies with ',': sequential,priority,shape:3+priority\n";
}

}  // namespace tandem
