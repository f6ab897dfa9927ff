#include "tandem/shaping_check.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace tandem {
namespace {

bool holds(const std::vector<uint32_t>& sizes, uint32_t size) {
  return std::find(sizes.begin(), sizes.end(), size) != sizes.end();
}

using Intervals = std::vector<std::pair<int64_t, int64_t>>;  // sorted and disjoint

// The union of the intervals (empty ones dropped).
Intervals merged(const std::vector<Activity>& intervals) {
  Intervals sorted;
  for (const Activity& a : intervals)
    if (a.end_ns > a.start_ns) sorted.emplace_back(a.start_ns, a.end_ns);
  std::sort(sorted.begin(), sorted.end());
  Intervals out;
  for (const auto& [start, end] : sorted) {
    if (!out.empty() && start <= out.back().second)
      out.back().second = std::max(out.back().second, end);
    else
      out.emplace_back(start, end);
  }
  return out;
}

// `a` less `b`.
Intervals without(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t first = 0;  // b's first interval that may still cut into a's current one
  for (auto [start, end] : a) {
    while (first < b.size() && b[first].second <= start) ++first;
    for (size_t i = first; start < end && i < b.size() && b[i].first < end; ++i) {
      if (b[i].first > start) out.emplace_back(start, b[i].first);
      start = std::max(start, b[i].second);
    }
    if (start < end) out.emplace_back(start, end);
  }
  return out;
}

int64_t length(const Intervals& intervals) {
  int64_t sum = 0;
  for (const auto& [start, end] : intervals) sum += end - start;
  return sum;
}

// The parts of [start, end) that run beside the union `busy` (none for an empty interval).
std::vector<Activity> parts_beside(const Intervals& busy, int64_t start, int64_t end) {
  std::vector<Activity> parts;
  if (end <= start) return parts;
  // The first interval that ends after `start`.
  auto it = std::upper_bound(busy.begin(), busy.end(), start,
                             [](int64_t t, const std::pair<int64_t, int64_t>& b) { return t < b.second; });
  for (; it != busy.end() && it->first < end; ++it)
    parts.push_back(Activity{std::max(start, it->first), std::min(end, it->second)});
  return parts;
}

std::string share_text(uint64_t part, uint64_t whole) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %% (%llu of %llu)",
                100.0 * static_cast<double>(part) / static_cast<double>(whole), static_cast<unsigned long long>(part),
                static_cast<unsigned long long>(whole));
  return buf;
}

}  // namespace

const char* to_string(LaunchForm form) {
  static constexpr const char* kNames[] = {"shaped", "left-alone", "unshapeable", "unattributed"};  // enum order
  const auto i = static_cast<size_t>(form);
  return i < std::size(kNames) ? kNames[i] : "unattributed";
}

LaunchForm launch_form(const LaunchSizes* sizes, uint32_t dynamic_smem) {
  if (!sizes) return LaunchForm::Unattributed;
  // The kinds the size may be of: those that noted it, and those with sizes not noted.
  int candidates = 0, kind = 0;
  for (int k = 0; k < kLaunchKinds; ++k)
    if (holds(sizes->sizes[k], dynamic_smem) || sizes->overflowed[k]) ++candidates, kind = k;
  return candidates == 1 ? static_cast<LaunchForm>(kind) : LaunchForm::Unattributed;
}

std::optional<double> ShapingCheck::shaped_beside_share() const {
  if (shaped == 0) return std::nullopt;
  return static_cast<double>(shaped_beside) / static_cast<double>(shaped);
}

std::optional<double> ShapingCheck::beside_shaped_share() const {
  if (beside_shapeable_ns <= 0) return std::nullopt;
  return static_cast<double>(beside_shaped_ns) / static_cast<double>(beside_shapeable_ns);
}

std::optional<double> ShapingCheck::left_alone_later_share() const {
  const int64_t left_alone = beside_shapeable_ns - beside_shaped_ns;
  if (left_alone <= 0) return std::nullopt;
  return static_cast<double>(left_alone_beside_later_ns) / static_cast<double>(left_alone);
}

ShapingCheck check_shaping(const std::vector<KernelRun>& kernels, const std::vector<Activity>& communication) {
  const auto busy = merged(communication);
  // The communication by start, with the latest end so far: the collectives beside a kernel are found
  // walking back from the last one that starts before it ends, until none before can reach it.
  std::vector<Activity> by_start = communication;
  std::sort(by_start.begin(), by_start.end(),
            [](const Activity& a, const Activity& b) { return a.start_ns < b.start_ns; });
  std::vector<int64_t> latest_end(by_start.size());
  for (size_t i = 0; i < by_start.size(); ++i)
    latest_end[i] = std::max(by_start[i].end_ns, i ? latest_end[i - 1] : by_start[i].end_ns);
  ShapingCheck c;
  // The computation's time beside communication is a union over its streams, as the overlap figures
  // count it (tandem/overlap.h): two kernels side by side beside one collective count its time once.
  std::vector<Activity> beside_all, beside_shapeable, beside_shaped;
  // A left-alone kernel's time beside each collective, split by whether that collective was issued
  // after the kernel.
  std::vector<Activity> left_alone_beside_later, left_alone_beside_earlier;
  for (const KernelRun& k : kernels) {
    if (k.form == LaunchForm::Unattributed) {
      ++c.unattributed;
      continue;
    }
    const bool shaped = k.form == LaunchForm::Shaped, shapeable = shaped || k.form == LaunchForm::LeftAlone;
    const std::vector<Activity> parts = parts_beside(busy, k.start_ns, k.end_ns);
    if (shaped) ++c.shaped;
    if (parts.empty()) continue;
    ++c.beside;
    if (shaped) ++c.shaped_beside;
    for (const Activity& part : parts) {
      beside_all.push_back(part);
      if (shapeable) beside_shapeable.push_back(part);
      if (shaped) beside_shaped.push_back(part);
    }
    if (k.form != LaunchForm::LeftAlone) continue;
    auto last = std::lower_bound(by_start.begin(), by_start.end(), k.end_ns,
                                 [](const Activity& a, int64_t t) { return a.start_ns < t; });
    for (auto i = static_cast<size_t>(last - by_start.begin()); i-- > 0 && latest_end[i] > k.start_ns;) {
      const Activity& a = by_start[i];
      const int64_t start = std::max(k.start_ns, a.start_ns), end = std::min(k.end_ns, a.end_ns);
      if (start >= end) continue;
      const bool later = k.issued != 0 && a.issued > k.issued;
      (later ? left_alone_beside_later : left_alone_beside_earlier).push_back(Activity{start, end});
    }
  }
  const Intervals shaped = merged(beside_shaped);
  c.beside_ns = length(merged(beside_all));
  c.beside_shapeable_ns = length(merged(beside_shapeable));
  c.beside_shaped_ns = length(shaped);
  // Time beside a collective issued before the kernel, or under a shaped kernel too, is not of the
  // collectives the rule could not see coming.
  c.left_alone_beside_later_ns =
      length(without(without(merged(left_alone_beside_later), merged(left_alone_beside_earlier)), shaped));
  return c;
}

std::string shaping_check_text(const ShapingCheck& c) {
  std::string out = "shaped kernels beside communication: ";
  out += c.shaped ? share_text(c.shaped_beside, c.shaped) : std::string("none shaped");
  out += "; computation beside communication that the policy can shape, shaped: ";
  const auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  char buf[160];
  if (c.beside_shapeable_ns > 0) {
    std::snprintf(buf, sizeof buf, "%.1f %% of its time (%.3f of %.3f ms)", 100.0 * *c.beside_shaped_share(),
                  ms(c.beside_shaped_ns), ms(c.beside_shapeable_ns));
    out += buf;
    if (const auto later = c.left_alone_later_share()) {
      std::snprintf(buf, sizeof buf,
                    "; of the time left alone, %.1f %% beside collectives issued after the kernel (not yet "
                    "issued at its launch)",
                    100.0 * *later);
      out += buf;
    }
  } else {
    out += "none ran beside communication";
  }
  if (c.beside_ns > c.beside_shapeable_ns) {
    std::snprintf(buf, sizeof buf, "; %.3f of %.3f ms beside communication in kernels it cannot shape",
                  ms(c.beside_ns - c.beside_shapeable_ns), ms(c.beside_ns));
    out += buf;
  }
  if (c.unattributed)
    out += "; " + std::to_string(c.unattributed) + " kernels unattributed (a size noted for two kinds, or never)";
  return out;
}

}  // namespace tandem
