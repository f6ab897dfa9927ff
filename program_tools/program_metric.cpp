#include "program_tools/program_metric.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "process/child_process.h"
#include "tandem/error.h"
#include "tandem/printable.h"

namespace tandem::program_tools {
namespace {

constexpr size_t kReadBytes = 64 * 1024;
constexpr size_t kMaxNotNumbers = 8;

// A decimal number: [+-] digits [. digits] [e [+-] digits], then nothing but blanks. strtod alone
// would also take "0x1f", "inf" and "nan", which no program prints as a time or a throughput. One
// beyond a double's range ("1e400") is returned as infinite: the caller reports it.
std::optional<double> parse_decimal(const std::string& text) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return std::nullopt;
  }
  const size_t end = i;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i != text.size()) return std::nullopt;
  return std::strtod(text.substr(0, end).c_str(), nullptr);
}

}  // namespace

// Splits a stream into lines and searches each: a line's first kLinePieceBytes are kept as they
// come, and its last kLinePieceBytes in a ring, so that memory stays bounded by two pieces.
class ProgramMetric::Scanner {
 public:
  Scanner(const MetricPattern& matcher, std::vector<std::string>* not_numbers, std::vector<std::string>* not_finite)
      : matcher_(matcher), not_numbers_(not_numbers), not_finite_(not_finite) {}

  void feed(const char* data, size_t size) {
    for (size_t at = 0; at < size && !full();) {
      const void* end_of_line = std::memchr(data + at, '\n', size - at);
      const void* redraw = std::memchr(data + at, '\r', size - at);
      size_t end = size;
      if (end_of_line) end = static_cast<size_t>(static_cast<const char*>(end_of_line) - data);
      if (redraw) end = std::min(end, static_cast<size_t>(static_cast<const char*>(redraw) - data));
      append(data + at, end - at);
      if (end == size) break;
      finish_line();
      at = end + 1;
    }
  }
  void finish() { finish_line(); }
  std::vector<double> take() { return std::move(values_); }
  bool full() const { return values_.size() >= kMaxValues; }

 private:
  void append(const char* data, size_t size) {
    line_bytes_ += size;
    const size_t to_head = std::min(size, kLinePieceBytes - std::min(kLinePieceBytes, head_.size()));
    head_.append(data, to_head);
    data += to_head;
    size -= to_head;
    if (size == 0) return;
    if (tail_.size() < kLinePieceBytes) tail_.resize(kLinePieceBytes);
    for (size_t i = 0; i < size; ++i) {  // the ring keeps the last kLinePieceBytes
      tail_[tail_at_] = data[i];
      tail_at_ = (tail_at_ + 1) % kLinePieceBytes;
    }
    tail_filled_ = std::min(kLinePieceBytes, tail_filled_ + size);
  }

  void finish_line() {
    if (line_bytes_ == 0) return;
    std::string tail;
    if (tail_filled_ > 0) {
      const size_t start = (tail_at_ + kLinePieceBytes - tail_filled_) % kLinePieceBytes;
      for (size_t i = 0; i < tail_filled_; ++i) tail += tail_[(start + i) % kLinePieceBytes];
    }
    if (line_bytes_ <= 2 * kLinePieceBytes) {
      search(head_ + tail);  // nothing was dropped: the whole line
    } else {
      search(head_);
      search(tail);
    }
    head_.clear();
    tail_at_ = tail_filled_ = line_bytes_ = 0;
  }

  void search(const std::string& line) {
    for (const auto& captured : matcher_.captures_in(line, kMaxMatchesPerLine)) {
      if (full()) return;
      const auto v = captured ? parse_decimal(*captured) : std::nullopt;
      std::vector<std::string>* skipped = !v ? not_numbers_ : !std::isfinite(*v) ? not_finite_ : nullptr;
      if (v && std::isfinite(*v))
        values_.push_back(*v);
      else if (skipped && skipped->size() < kMaxNotNumbers)
        skipped->push_back(captured.value_or(""));
    }
  }

  const MetricPattern& matcher_;
  std::vector<std::string>* not_numbers_;
  std::vector<std::string>* not_finite_;
  std::vector<double> values_;
  std::string head_;
  std::string tail_;
  size_t tail_at_ = 0, tail_filled_ = 0, line_bytes_ = 0;
};

ProgramMetric::ProgramMetric(const std::string& pattern, bool higher_is_better)
    : pattern_(pattern), higher_is_better_(higher_is_better) {
  TANDEM_CHECK_INPUT(!pattern.empty(),
                     "--metric '' is empty: give a pattern with one capture group around the number, or leave "
                     "--metric out to measure wall time");
  matcher_ = std::make_shared<const MetricPattern>(pattern);
  TANDEM_CHECK_INPUT(matcher_->groups() == 1,
                     "--metric " + quoted_value(pattern) + " has " + std::to_string(matcher_->groups()) +
                         " capture groups; it needs exactly one, around the number (use (?:...) for others)");
}

std::string ProgramMetric::describe() const {
  if (is_wall_time()) return "wall time (s), lower is better";
  return "--metric " + quoted_value(pattern_) + (higher_is_better_ ? ", higher is better" : ", lower is better");
}

std::vector<double> ProgramMetric::values_in_text(const std::string& text, std::vector<std::string>* not_numbers,
                                                  std::vector<std::string>* not_finite) const {
  TANDEM_REQUIRE(matcher_, "no --metric pattern to search for");
  Scanner scanner(*matcher_, not_numbers, not_finite);
  scanner.feed(text.data(), text.size());
  scanner.finish();
  return scanner.take();
}

std::vector<double> ProgramMetric::values_in_file(const std::string& path, std::vector<std::string>* not_numbers,
                                                  std::vector<std::string>* not_finite) const {
  TANDEM_REQUIRE(matcher_, "no --metric pattern to search for");
  // O_NONBLOCK: a FIFO put in the log's place cannot block the open; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) TANDEM_THROW("cannot read the run log '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    TANDEM_THROW("the run log '" + path + "' is not a regular file");
  }
  Scanner scanner(*matcher_, not_numbers, not_finite);
  std::string buffer(kReadBytes, '\0');
  for (;;) {
    if (process::interrupt_pending() || scanner.full()) break;
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      TANDEM_THROW("cannot read the run log '" + path + "': " + std::strerror(error));
    }
    if (n == 0) break;
    scanner.feed(buffer.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  scanner.finish();
  return scanner.take();
}

}  // namespace tandem::program_tools
