#include "program_tools/metric_pattern.h"

#include <cstring>

#include "tandem/error.h"
#include "tandem/printable.h"

namespace tandem::program_tools {
namespace {

// Nesting of groups a pattern may have (the parser recurses once per level).
constexpr int kMaxNesting = 100;
constexpr int kMaxRepeat = 1000;

bool is_word(unsigned char c) { return std::isalnum(c) || c == '_'; }

// Every byte `test` accepts.
template <class Test>
std::bitset<256> bytes_where(Test test) {
  std::bitset<256> s;
  for (int c = 0; c < 256; ++c)
    if (test(static_cast<unsigned char>(c))) s.set(static_cast<size_t>(c));
  return s;
}

// The parsed pattern.
struct Node {
  enum Kind { Byte, Class, Any, Concat, Alternation, Repeat, Group, LineStart, LineEnd, WordB, NotWordB } kind;
  unsigned char byte = 0;
  std::bitset<256> set{};
  std::vector<Node> kids{};
  int min = 0, max = 0;  // Repeat: max -1 for no bound
  bool greedy = true;
  int group = 0;  // Group: 1-based capture index, 0 for (?: )
};

}  // namespace

class MetricPatternCompiler {
 public:
  MetricPatternCompiler(std::string_view text, MetricPattern& out) : text_(text), out_(out) {}

  void compile() {
    if (text_.size() > MetricPattern::kMaxPatternChars)
      fail("is longer than " + std::to_string(MetricPattern::kMaxPatternChars) + " characters");
    Node root = alternation(0);
    if (at_ < text_.size()) fail("has an unmatched ')'");
    emit({MetricPattern::Op::Save, 0, 0, 0});
    code(root);
    emit({MetricPattern::Op::Save, 0, 1, 0});
    emit({MetricPattern::Op::Match});
    out_.groups_ = groups_;
    find_prefix();
  }

 private:
  using Op = MetricPattern::Op;

  [[noreturn]] void fail(const std::string& why) const {
    TANDEM_USER_ERROR("--metric " + quoted_value(std::string(text_)) + " " + why +
                      " (tandem's metric patterns are a subset of ECMAScript regular expressions: docs/RUN.md)");
  }
  bool more() const { return at_ < text_.size(); }
  char peek() const { return text_[at_]; }
  bool take(char c) {
    if (more() && peek() == c) {
      ++at_;
      return true;
    }
    return false;
  }

  Node alternation(int depth) {
    if (depth > kMaxNesting) fail("nests groups deeper than " + std::to_string(kMaxNesting));
    Node alt{Node::Alternation};
    alt.kids.push_back(concatenation(depth));
    while (take('|')) alt.kids.push_back(concatenation(depth));
    return alt.kids.size() == 1 ? std::move(alt.kids.front()) : alt;
  }

  Node concatenation(int depth) {
    Node seq{Node::Concat};
    while (more() && peek() != '|' && peek() != ')') seq.kids.push_back(repetition(depth));
    return seq;
  }

  // {n}, {n,}, {n,m} at at_ (just after '{'); false (nothing consumed) when it is not a quantifier.
  bool bounds(int& min, int& max) {
    const size_t start = at_;
    const auto number = [&](int& value) {
      const size_t first = at_;
      value = 0;
      while (more() && std::isdigit(static_cast<unsigned char>(peek()))) {
        value = std::min(value * 10 + (peek() - '0'), kMaxRepeat + 1);
        ++at_;
      }
      return at_ > first;
    };
    if (!number(min)) return at_ = start, false;
    max = min;
    if (take(',')) {
      if (!number(max)) max = -1;
    }
    if (!take('}')) return at_ = start, false;
    if (min > kMaxRepeat || max > kMaxRepeat) fail("repeats more than " + std::to_string(kMaxRepeat) + " times");
    if (max != -1 && max < min) fail("has a repetition {" + std::to_string(min) + "," + std::to_string(max) + "}");
    return true;
  }

  Node repetition(int depth) {
    Node atom_node = atom(depth);
    for (;;) {
      int min = 0, max = 0;
      if (take('*')) {
        min = 0, max = -1;
      } else if (take('+')) {
        min = 1, max = -1;
      } else if (take('?')) {
        min = 0, max = 1;
      } else if (more() && peek() == '{') {
        ++at_;
        if (!bounds(min, max)) {
          --at_;
          return atom_node;
        }
      } else {
        return atom_node;
      }
      const bool assertion = atom_node.kind == Node::LineStart || atom_node.kind == Node::LineEnd ||
                             atom_node.kind == Node::WordB || atom_node.kind == Node::NotWordB;
      if (assertion) fail("repeats an anchor");
      Node repeat{Node::Repeat};
      repeat.min = min;
      repeat.max = max;
      repeat.greedy = !take('?');
      repeat.kids.push_back(std::move(atom_node));
      atom_node = std::move(repeat);
    }
  }

  Node byte_node(unsigned char c) {
    Node n{Node::Byte};
    n.byte = c;
    return n;
  }

  Node class_node(const std::bitset<256>& set) {
    Node n{Node::Class};
    n.set = set;
    return n;
  }

  // \uHHHH as its UTF-8 bytes.
  Node code_point(uint32_t cp) {
    std::string bytes;
    if (cp < 0x80) {
      bytes = std::string(1, static_cast<char>(cp));
    } else if (cp < 0x800) {
      bytes = {static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
    } else {
      bytes = {static_cast<char>(0xe0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3f)),
               static_cast<char>(0x80 | (cp & 0x3f))};
    }
    Node seq{Node::Concat};  // one byte for ASCII: a sequence of one codes as the byte alone
    for (char b : bytes) seq.kids.push_back(byte_node(static_cast<unsigned char>(b)));
    return seq;
  }

  uint32_t hex_digits(int count) {
    uint32_t value = 0;
    for (int i = 0; i < count; ++i) {
      if (!more() || !std::isxdigit(static_cast<unsigned char>(peek()))) fail("has an incomplete \\x or \\u escape");
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text_[at_++])));
      value = value * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : c - 'a' + 10);
    }
    return value;
  }

  // After a backslash: a class (\d...) into `set`, or one byte into `byte`; true for a class.
  // `in_class`: inside [...], where \b is a backspace and \B, \u beyond ASCII are refused.
  bool escape(std::bitset<256>& set, uint32_t& code, bool in_class) {
    if (!more()) fail("ends with a backslash");
    const char c = text_[at_++];
    // \d \w \s, and in upper case their complements.
    if (std::string_view("dwsDWS").find(c) != std::string_view::npos) {
      const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      // \s: space, \t, \n, \v, \f, \r, what isspace accepts in the C locale.
      set = bytes_where([lower](unsigned char b) {
        return lower == 'd' ? std::isdigit(b) != 0 : lower == 'w' ? is_word(b) : std::isspace(b) != 0;
      });
      if (c != lower) set = ~set;
      return true;
    }
    // \t \n \r \f \v \0: the control character each letter names.
    static constexpr std::string_view kLetters = "tnrfv0", kControls("\t\n\r\f\v\0", 6);
    if (const size_t at = kLetters.find(c); at != std::string_view::npos) {
      code = static_cast<unsigned char>(kControls[at]);
      return false;
    }
    if (c == 'x' || c == 'u') {
      code = hex_digits(c == 'x' ? 2 : 4);
      if (c == 'u' && in_class && code >= 0x80) fail("has a non-ASCII \\u escape inside [...]");
      return false;
    }
    if (in_class && c == 'b') {
      code = '\b';
      return false;
    }
    if (std::isdigit(static_cast<unsigned char>(c)))
      fail("uses a back-reference (\\" + std::string(1, c) + "): not supported");
    if (std::isalpha(static_cast<unsigned char>(c))) fail("uses the escape \\" + std::string(1, c) + ": not supported");
    code = static_cast<unsigned char>(c);  // an escaped punctuation character stands for itself
    return false;
  }

  Node bracket() {
    std::bitset<256> set;
    const bool negated = take('^');
    bool closed = false;
    while (more()) {
      if (take(']')) {
        closed = true;
        break;
      }
      std::bitset<256> item;
      uint32_t low = 0;
      bool is_set = false;
      if (take('\\')) {
        is_set = escape(item, low, true);
      } else {
        low = static_cast<unsigned char>(text_[at_++]);
      }
      if (is_set) {
        set |= item;
        continue;
      }
      // A range a-z; a '-' first, last or after a class is a literal.
      if (more() && peek() == '-' && at_ + 1 < text_.size() && text_[at_ + 1] != ']') {
        ++at_;
        uint32_t high = 0;
        if (take('\\')) {
          if (escape(item, high, true)) fail("has a range that ends in a class");
        } else {
          high = static_cast<unsigned char>(text_[at_++]);
        }
        if (high < low) fail("has a range out of order");
        for (uint32_t c = low; c <= high; ++c) set.set(c);
      } else {
        set.set(low);
      }
    }
    if (!closed) fail("has an unclosed '['");
    return class_node(negated ? ~set : set);
  }

  Node atom(int depth) {
    const char c = text_[at_++];
    switch (c) {
      case '.':
        return Node{Node::Any};
      case '^':
        return Node{Node::LineStart};
      case '$':
        return Node{Node::LineEnd};
      case '[':
        return bracket();
      case '*':
      case '+':
      case '?':
        fail("has a quantifier with nothing to repeat");
      case '(': {
        Node group{Node::Group};
        if (take('?')) {
          if (!take(':')) fail("uses look-around or a named group ((?=, (?!, (?<): not supported");
        } else {
          group.group = ++groups_;
        }
        group.kids.push_back(alternation(depth + 1));
        if (!take(')')) fail("has an unclosed '('");
        return group;
      }
      case '\\': {
        if (take('b')) return Node{Node::WordB};
        if (take('B')) return Node{Node::NotWordB};
        std::bitset<256> set;
        uint32_t code = 0;
        if (escape(set, code, false)) return class_node(set);
        return code_point(code);
      }
      default:
        return byte_node(static_cast<unsigned char>(c));
    }
  }

  int here() const { return static_cast<int>(out_.program_.size()); }
  int emit(MetricPattern::Instruction instruction) {
    if (out_.program_.size() >= MetricPattern::kMaxInstructions)
      fail("is too large once its repetitions are unrolled (more than " +
           std::to_string(MetricPattern::kMaxInstructions) + " steps)");
    out_.program_.push_back(instruction);
    return here() - 1;
  }
  // A split whose first target is tried first.
  int split(int first, int second) { return emit({Op::Split, 0, first, second}); }

  void code(const Node& n) {
    switch (n.kind) {
      case Node::Byte:
        emit({Op::Byte, n.byte});
        return;
      case Node::Any:
        emit({Op::Any});
        return;
      case Node::Class:
        out_.classes_.push_back(n.set);
        emit({Op::Class, 0, static_cast<int>(out_.classes_.size()) - 1});
        return;
      case Node::LineStart:
        emit({Op::LineStart});
        return;
      case Node::LineEnd:
        emit({Op::LineEnd});
        return;
      case Node::WordB:
        emit({Op::WordBoundary});
        return;
      case Node::NotWordB:
        emit({Op::NotWordBoundary});
        return;
      case Node::Concat:
        for (const Node& kid : n.kids) code(kid);
        return;
      case Node::Group:
        // Only group 1 is recorded (slots 2, 3); others are parsed for their count.
        if (n.group == 1) emit({Op::Save, 0, 2});
        code(n.kids.front());
        if (n.group == 1) emit({Op::Save, 0, 3});
        return;
      case Node::Alternation: {
        std::vector<int> jumps;
        for (size_t i = 0; i < n.kids.size(); ++i) {
          if (i + 1 < n.kids.size()) {
            const int s = split(0, 0);
            out_.program_[static_cast<size_t>(s)].a = here();
            code(n.kids[i]);
            jumps.push_back(emit({Op::Jump}));
            out_.program_[static_cast<size_t>(s)].b = here();
          } else {
            code(n.kids[i]);
          }
        }
        for (int j : jumps) out_.program_[static_cast<size_t>(j)].a = here();
        return;
      }
      case Node::Repeat: {
        const Node& kid = n.kids.front();
        for (int i = 0; i < n.min; ++i) code(kid);
        if (n.max == -1) {
          const int loop = split(0, 0);
          const int body = here();
          code(kid);
          emit({Op::Jump, 0, loop});
          set_targets(loop, body, here(), n.greedy);
          return;
        }
        std::vector<int> optional;
        for (int i = n.min; i < n.max; ++i) {
          optional.push_back(split(0, 0));
          out_.program_[static_cast<size_t>(optional.back())].a = here();
          code(kid);
        }
        for (int s : optional) set_targets(s, out_.program_[static_cast<size_t>(s)].a, here(), n.greedy);
        return;
      }
    }
  }

  // A split between going on with the body and leaving: greedy tries the body first.
  void set_targets(int s, int body, int leave, bool greedy) {
    out_.program_[static_cast<size_t>(s)].a = greedy ? body : leave;
    out_.program_[static_cast<size_t>(s)].b = greedy ? leave : body;
  }

  // The bytes every match begins with: the literal run at the start of the program.
  void find_prefix() {
    size_t pc = 0;
    for (; pc < out_.program_.size(); ++pc) {
      const Op op = out_.program_[pc].op;
      if (op == Op::Save) continue;
      if (op == Op::LineStart && out_.prefix_.empty() && !out_.anchored_) {
        out_.anchored_ = true;
        continue;
      }
      if (op != Op::Byte) break;
      out_.prefix_ += static_cast<char>(out_.program_[pc].byte);
    }
    // The run is certain: a quantifier's optional copies, and every alternative, begin with a split,
    // which ends the run; nothing jumps back into it.
  }

  std::string_view text_;
  MetricPattern& out_;
  size_t at_ = 0;
  int groups_ = 0;
};

MetricPattern::MetricPattern(std::string_view pattern) { MetricPatternCompiler(pattern, *this).compile(); }

std::optional<std::array<ptrdiff_t, 4>> MetricPattern::search(std::string_view text, size_t from) const {
  using Captures = std::array<ptrdiff_t, 4>;
  struct Thread {
    int pc;
    Captures caps;
  };
  const size_t n = text.size();
  std::vector<Thread> current, next, stack;
  current.reserve(program_.size());
  next.reserve(program_.size());
  // The position (plus one) for which each instruction was last added: every instruction is in a
  // list at most once per position, which bounds the work per byte by the program's size.
  std::vector<size_t> added(program_.size(), 0);
  const auto word_at = [&](size_t i) { return i < n && is_word(static_cast<unsigned char>(text[i])); };
  // Follows jumps, splits and assertions from `pc` at position `i`, adding the threads that wait for
  // a byte (or a match) to `list` in priority order. Iterative: no recursion on the pattern's shape.
  const auto add = [&](std::vector<Thread>& list, int start_pc, const Captures& start_caps, size_t i) {
    stack.push_back({start_pc, start_caps});
    while (!stack.empty()) {
      Thread t = stack.back();
      stack.pop_back();
      const size_t pc = static_cast<size_t>(t.pc);
      if (added[pc] == i + 1) continue;
      added[pc] = i + 1;
      const Instruction& in = program_[pc];
      switch (in.op) {
        case Op::Jump:
          stack.push_back({in.a, t.caps});
          break;
        case Op::Split:
          stack.push_back({in.b, t.caps});  // taken after everything reachable from `a`
          stack.push_back({in.a, t.caps});
          break;
        case Op::Save:
          t.caps[static_cast<size_t>(in.a)] = static_cast<ptrdiff_t>(i);
          stack.push_back({t.pc + 1, t.caps});
          break;
        case Op::LineStart:
          if (i == 0) stack.push_back({t.pc + 1, t.caps});
          break;
        case Op::LineEnd:
          if (i == n) stack.push_back({t.pc + 1, t.caps});
          break;
        case Op::WordBoundary:
        case Op::NotWordBoundary:
          if (((i > 0 && word_at(i - 1)) != word_at(i)) == (in.op == Op::WordBoundary))
            stack.push_back({t.pc + 1, t.caps});
          break;
        default:
          list.push_back(t);
      }
    }
  };
  const Captures none = {-1, -1, -1, -1};
  std::optional<Captures> found;
  for (size_t i = from; i <= n; ++i) {
    if (!found) {
      if (current.empty()) {
        // Nothing in flight: jump to where a match can start.
        if (anchored_ && i != 0) break;
        if (!prefix_.empty() && !anchored_) {
          const void* at = i < n ? ::memmem(text.data() + i, n - i, prefix_.data(), prefix_.size()) : nullptr;
          if (!at) break;
          i = static_cast<size_t>(static_cast<const char*>(at) - text.data());
        }
      }
      if (!anchored_ || i == 0) add(current, 0, none, i);
    }
    if (current.empty()) {
      if (found || anchored_) break;
      continue;  // no match can start here (an assertion failed): try the next position
    }
    next.clear();
    for (const Thread& t : current) {
      const Instruction& in = program_[static_cast<size_t>(t.pc)];
      if (in.op == Op::Match) {
        found = t.caps;
        break;  // the threads after this one have lower priority
      }
      if (i == n) continue;
      const auto byte = static_cast<unsigned char>(text[i]);
      const bool advances = in.op == Op::Any || (in.op == Op::Byte && in.byte == byte) ||
                            (in.op == Op::Class && classes_[static_cast<size_t>(in.a)].test(byte));
      if (advances) add(next, t.pc + 1, t.caps, i + 1);
    }
    current.swap(next);
  }
  return found;
}

std::vector<std::optional<std::string>> MetricPattern::captures_in(std::string_view line, size_t max_matches) const {
  std::vector<std::optional<std::string>> out;
  // Most lines of a program's output hold no match: they cost one memmem.
  if (!prefix_.empty() && !::memmem(line.data(), line.size(), prefix_.data(), prefix_.size())) return out;
  for (size_t from = 0; from <= line.size() && out.size() < max_matches;) {
    const auto caps = search(line, from);
    if (!caps) break;
    if ((*caps)[2] >= 0 && (*caps)[3] >= 0)
      out.emplace_back(
          std::string(line.substr(static_cast<size_t>((*caps)[2]), static_cast<size_t>((*caps)[3] - (*caps)[2]))));
    else
      out.emplace_back(std::nullopt);
    const auto end = static_cast<size_t>((*caps)[1]);
    from = end > static_cast<size_t>((*caps)[0]) ? end : end + 1;
  }
  return out;
}

}  // namespace tandem::program_tools
