#include "tandem/policy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "tandem/error.h"
#include "tandem/policy_tokens.h"
#include "tandem/printable.h"
#include "tandem/safe_file.h"
#include "tandem/text.h"

namespace tandem {

namespace {

// Parse errors travel as plain messages and become one tandem::Error at the public entry point, so
// a message wrapped with list-item or file context carries a single file:line suffix.
struct SyntaxError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw SyntaxError{std::move(message)}; }

std::string with_accepted_list(const std::string& message) {
  // Listed at the end of every syntax error, so a user who mistyped one token sees every form at once.
  return message + "; accepted: " + accepted_policy_tokens();
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
  fail(with_accepted_list("invalid policy token " + quoted_value(site.token) + " in " + quoted_value(site.text) + ": " +
                          why));
}

// A token that was applied, remembered to report duplicates and conflicts by the user's own text.
struct AppliedToken {
  std::string_view keyword;
  std::string_view token;
};

const AppliedToken* find_applied(const std::vector<AppliedToken>& applied, std::string_view keyword) {
  for (const AppliedToken& entry : applied)
    if (entry.keyword == keyword) return &entry;
  return nullptr;
}

void apply_token(std::string_view token, std::string_view text, std::vector<AppliedToken>& applied,
                 OverlapPolicy& policy) {
  const TokenSite site{token, text};
  const size_t colon = token.find(':');
  const std::string_view keyword = token.substr(0, colon);
  const PolicyToken* control = find_policy_token(keyword);
  if (!control) fail(with_accepted_list("unknown policy token " + quoted_value(token) + " in " + quoted_value(text)));

  const bool has_value = colon != std::string_view::npos;
  if (control->takes_value() && !has_value) fail_invalid(site, quoted_value(keyword) + " needs a value after ':'");
  if (!control->takes_value() && has_value) fail_invalid(site, quoted_value(keyword) + " takes no value");
  const std::string_view value = has_value ? token.substr(colon + 1) : std::string_view{};
  if (control->takes_value() && value.empty()) fail_invalid(site, quoted_value(keyword) + " needs a value after ':'");

  if (const AppliedToken* earlier = find_applied(applied, keyword)) {
    std::string why = "each control may appear at most once";
    if (earlier->token != token)
      why = quoted_value(keyword) + " is already set by " + quoted_value(earlier->token) + "; " + why;
    fail(
        with_accepted_list("duplicate policy token " + quoted_value(token) + " in " + quoted_value(text) + ": " + why));
  }
  try {
    control->parse(value, policy);
  } catch (const InvalidTokenValue& error) {
    fail_invalid(site, error.why);
  }
  applied.push_back({keyword, token});
}

// Launch orders exclude each other, and sequential (one stream) leaves nothing else to control.
void check_combination(const std::vector<AppliedToken>& applied, std::string_view text) {
  if (find_applied(applied, "sequential")) {
    for (const AppliedToken& entry : applied)
      if (entry.keyword != "sequential")
        fail(with_accepted_list("policy token " + quoted_value(entry.token) + " cannot combine with 'sequential' in " +
                                quoted_value(text) +
                                ": sequential runs compute and collective on one stream, so no other control applies"));
  }
  if (const AppliedToken* always = find_applied(applied, "compute-always");
      always && !find_applied(applied, "shape") && !find_applied(applied, "sm-target"))
    fail(with_accepted_list("policy token " + quoted_value(always->token) + " in " + quoted_value(text) +
                            " has nothing to apply: it makes shape and sm-target act on every compute launch, and "
                            "the policy sets neither"));
  if (find_applied(applied, "concurrent") && find_applied(applied, "comm-first"))
    fail(with_accepted_list("policy token 'comm-first' cannot combine with 'concurrent' in " + quoted_value(text) +
                            ": both are launch orders (concurrent enqueues compute first); give one"));
}

OverlapPolicy parse_tokens(std::string_view text) {
  OverlapPolicy policy;
  std::vector<AppliedToken> applied;
  for (std::string_view raw : split(text, '+')) {
    const std::string_view token = trim(raw);
    if (token.empty())
      fail(with_accepted_list("empty policy token '' in " + quoted_value(text) + ": '+' must join two tokens"));
    apply_token(token, text, applied, policy);
  }
  check_combination(applied, text);
  // A token this build's platform cannot apply is refused where it is read, so that no caller (the
  // benchmark, `tandem run`, a policy file, tandem.torch) goes on without the control it asked for.
  const std::string unavailable = platform_refusal(policy, build_platform());
  if (!unavailable.empty()) fail(unavailable);
  return policy;
}

// ----- files and lists ---------------------------------------------------------------------------

OverlapPolicy parse_one_policy(std::string_view text);

// Strips a '#' comment and surrounding space; '#' appears in no token, so cutting there is safe.
std::string_view strip_comment(std::string_view line) { return trim(line.substr(0, line.find('#'))); }

// A policy file is a few lines; anything larger is not one (and /dev/zero must not fill memory).
constexpr size_t kMaxPolicyFileBytes = 64 * 1024;
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The file's text, read once and bounded: a FIFO, a device or a folder is refused, never waited on.
std::string policy_file_text(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail("cannot open policy file " + quoted_value(path) + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("policy file " + quoted_value(path) + " is a directory");
  if (!S_ISREG(st.st_mode))
    fail("policy file " + quoted_value(path) + " is not a regular file (a FIFO, socket or device)");
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
      fail("policy file " + quoted_value(path) + " line " + std::to_string(number) + " holds a second policy " +
           quoted_value(content) + " after line " + std::to_string(policy_line_number) +
           "; a policy file holds one policy (list several with ',')");
    policy_line = std::string(content);
    policy_line_number = number;
  }
  if (policy_line_number == 0)
    fail("policy file " + quoted_value(path) +
         " holds no policy: every line is blank or a '#' comment (expected one line such as "
         "'shape:3+priority')");
  if (policy_line[0] == '{' || policy_line[0] == '[')
    fail("policy file " + quoted_value(path) +
         " looks like JSON; a policy file is plain text: '#' comment lines and one policy line "
         "such as "
         "'shape:3+priority'");
  if (policy_line[0] == '@')
    fail("policy file " + quoted_value(path) + " line " + std::to_string(policy_line_number) + " refers to " +
         quoted_value(policy_line) + "; a policy file must hold a policy, not another file name");
  try {
    return parse_one_policy(policy_line);
  } catch (const SyntaxError& error) {
    fail("policy file " + quoted_value(path) + " line " + std::to_string(policy_line_number) + ": " + error.message);
  }
}

OverlapPolicy parse_one_policy(std::string_view text) {
  const std::string_view trimmed = trim(text);
  if (trimmed.empty()) fail(with_accepted_list("empty policy text " + quoted_value(text)));
  if (trimmed.front() == '@') return read_policy_file(std::string(trim(trimmed.substr(1))));
  if (trimmed.find(',') != std::string_view::npos)
    fail(with_accepted_list("policy text " + quoted_value(trimmed) +
                            " holds a ',', which separates policies in a list; give one policy here"));
  return parse_tokens(trimmed);
}

std::vector<OverlapPolicy> parse_list(std::string_view text) {
  const std::string_view trimmed = trim(text);
  if (trimmed.empty()) fail(with_accepted_list("empty policy list " + quoted_value(text)));
  std::vector<OverlapPolicy> policies;
  const std::vector<std::string_view> items = split(trimmed, ',');
  for (size_t index = 0; index < items.size(); ++index) {
    const std::string item_label = "policy list item " + std::to_string(index + 1) + " of " + quoted_value(trimmed);
    const std::string_view item = trim(items[index]);
    if (item.empty()) fail(with_accepted_list(item_label + " is empty: ',' must separate two policies"));
    try {
      policies.push_back(parse_one_policy(item));
    } catch (const SyntaxError& error) {
      fail(item_label + ": " + error.message);
    }
  }
  return policies;
}

// The public entry points' errors: a SyntaxError becomes one tandem::Error.
template <class Parse>
auto as_error(Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const SyntaxError& error) {
    TANDEM_THROW(error.message);
  }
}

}  // namespace

bool ShapeTarget::operator==(const ShapeTarget& other) const {
  if (kind != other.kind) return false;
  // Only the field the kind names is meaningful; a stale value in the other one does not count.
  switch (kind) {
    case Kind::BlocksPerSm:
      return blocks_per_sm == other.blocks_per_sm;
    case Kind::Bytes:
      return bytes == other.bytes;
    case Kind::None:
    case Kind::Auto:
      return true;
  }
  return true;
}

bool OverlapPolicy::operator==(const OverlapPolicy& other) const {
  return order == other.order && comm_priority == other.comm_priority && shape == other.shape &&
         sm_target == other.sm_target && nccl_min_ctas == other.nccl_min_ctas && nccl_max_ctas == other.nccl_max_ctas &&
         nccl_cga_cluster_size == other.nccl_cga_cluster_size && nccl_cta_policy == other.nccl_cta_policy &&
         cu_mask_cus == other.cu_mask_cus && green_sms == other.green_sms && nccl_symmetric == other.nccl_symmetric &&
         copy_engine == other.copy_engine && compute_always == other.compute_always;
}

OverlapPolicy parse_policy(std::string_view text) {
  return as_error([&] { return parse_one_policy(text); });
}

std::vector<OverlapPolicy> parse_policy_list(std::string_view text) {
  return as_error([&] { return parse_list(text); });
}

OverlapPolicy load_policy_file(const std::string& path) {
  return as_error([&] { return read_policy_file(path); });
}

std::optional<SmTarget> sm_target_on(const OverlapPolicy& policy, int device_sms) {
  if (!policy.sm_target) return std::nullopt;
  TANDEM_REQUIRE(*policy.sm_target <= device_sms, "sm-target:" + std::to_string(*policy.sm_target) +
                                                      " is more than the " + std::to_string(device_sms) +
                                                      " SMs of this GPU");
  return SmTarget{*policy.sm_target, device_sms - *policy.sm_target};
}

std::string to_string(const OverlapPolicy& policy) {
  // Canonical order (PolicyToken::canonical_position): launch order, then compute-side controls, then
  // communicator-side ones.
  // Never destroyed, like the table (policy_tokens.cpp says why).
  static const std::vector<const PolicyToken*>* in_canonical_order = [] {
    auto* rows = new std::vector<const PolicyToken*>;
    for (const PolicyToken& row : policy_tokens()) rows->push_back(&row);
    std::sort(rows->begin(), rows->end(),
              [](const PolicyToken* a, const PolicyToken* b) { return a->canonical_position < b->canonical_position; });
    return rows;
  }();
  std::string text;
  for (const PolicyToken* row : *in_canonical_order) {
    const std::string token = row->print(policy);
    if (token.empty()) continue;
    if (!text.empty()) text += "+";
    text += token;
  }
  // The default launch order is the empty combination; it is named only when nothing else is set.
  return text.empty() ? "concurrent" : text;
}

std::string policy_grammar_help() {
  constexpr size_t kSyntaxWidth = 34;
  const auto line = [&](std::string_view syntax, std::string_view help) {
    std::string text = "  " + std::string(syntax);
    text.append(syntax.size() < kSyntaxWidth ? kSyntaxWidth - syntax.size() : 1, ' ');
    return text + std::string(help) + "\n";
  };
  std::string help = "A policy is tokens joined by '+', in any order, each at most once:\n";
  for (const PolicyToken& row : policy_tokens())
    for (const TokenForm& form : row.forms) help += line(form.syntax, form.help);
  help += line("@FILE", "the policy in FILE ('#' comments, one policy line)");
  return help + "Lists separate policies with ',': sequential,priority,shape:3+priority\n";
}

}  // namespace tandem
