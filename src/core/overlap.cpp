#include "tandem/overlap.h"

#include <algorithm>
#include <utility>

namespace tandem {
namespace {

using Interval = std::pair<int64_t, int64_t>;  // [first, second)

// The union of `intervals` as disjoint intervals sorted by start (so their ends are sorted too).
std::vector<Interval> merged(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> out;
  for (const Interval& i : intervals) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

// The intersection of two unions (merged lists).
std::vector<Interval> intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t start = std::max(a[i].first, b[j].first);
    const int64_t end = std::min(a[i].second, b[j].second);
    if (start < end) out.emplace_back(start, end);
    // The one that ends first can meet nothing further in the other list.
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return out;
}

// How much of [start, end) a merged list covers.
int64_t covered(const std::vector<Interval>& list, int64_t start, int64_t end) {
  if (start >= end) return 0;
  // The first interval that ends after `start` (ends are sorted in a merged list).
  auto it =
      std::upper_bound(list.begin(), list.end(), start, [](int64_t t, const Interval& i) { return t < i.second; });
  int64_t total = 0;
  for (; it != list.end() && it->first < end; ++it) total += std::min(end, it->second) - std::max(start, it->first);
  return total;
}

}  // namespace

const char* to_string(ActivityClass cls) {
  return cls == ActivityClass::Communication ? "communication" : "computation";
}

std::optional<double> StepFigures::hidden_share() const {
  if (communication_ns <= 0) return std::nullopt;
  return static_cast<double>(overlapped_ns) / static_cast<double>(communication_ns);
}

StepFigures RankFigures::total() const {
  StepFigures t;
  t.name = "total";
  if (steps.empty()) return t;
  t.start_ns = steps.front().start_ns;
  t.end_ns = steps.front().end_ns;
  for (const StepFigures& s : steps) {
    t.start_ns = std::min(t.start_ns, s.start_ns);
    t.end_ns = std::max(t.end_ns, s.end_ns);
    t.step_ns += s.step_ns;
    t.computation_ns += s.computation_ns;
    t.communication_ns += s.communication_ns;
    t.overlapped_ns += s.overlapped_ns;
    t.exposed_communication_ns += s.exposed_communication_ns;
    t.idle_ns += s.idle_ns;
    t.activities += s.activities;
  }
  return t;
}

RankFigures account(const RankRecord& record) {
  RankFigures figures;
  figures.records_lost = record.records_lost;
  const int64_t offset = record.clock_offset_ns;

  std::vector<Interval> computation, communication, all;
  std::vector<int64_t> starts, ends;  // of every interval, sorted apart: counting the ones in a step
  for (const Activity& a : record.activities) {
    if (a.end_ns <= a.start_ns) continue;
    const Interval i{a.start_ns + offset, a.end_ns + offset};
    (a.cls == ActivityClass::Communication ? communication : computation).push_back(i);
    all.push_back(i);
    starts.push_back(i.first);
    ends.push_back(i.second);
  }
  figures.activities = all.size();
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());

  std::vector<StepRange> steps = record.steps;
  for (StepRange& s : steps) s.start_ns += offset, s.end_ns += offset;
  if (steps.empty() && !all.empty()) steps.push_back({"run", starts.front(), ends.back()});
  std::stable_sort(steps.begin(), steps.end(),
                   [](const StepRange& a, const StepRange& b) { return a.start_ns < b.start_ns; });

  const std::vector<Interval> comp = merged(std::move(computation));
  const std::vector<Interval> comm = merged(std::move(communication));
  const std::vector<Interval> both = intersection(comp, comm);
  std::vector<Interval> step_spans;
  for (const StepRange& s : steps) {
    StepFigures f;
    f.name = s.name;
    f.start_ns = s.start_ns;
    f.end_ns = std::max(s.start_ns, s.end_ns);
    f.step_ns = f.end_ns - f.start_ns;
    f.computation_ns = covered(comp, f.start_ns, f.end_ns);
    f.communication_ns = covered(comm, f.start_ns, f.end_ns);
    f.overlapped_ns = covered(both, f.start_ns, f.end_ns);
    f.exposed_communication_ns = f.communication_ns - f.overlapped_ns;
    // |comp u comm| = |comp| + |comm| - |comp n comm|
    f.idle_ns = f.step_ns - (f.computation_ns + f.communication_ns - f.overlapped_ns);
    if (f.step_ns > 0) {
      // Intervals that start before the step ends, less those that end before it starts (which
      // necessarily start before it ends too).
      const auto starting = std::lower_bound(starts.begin(), starts.end(), f.end_ns) - starts.begin();
      const auto ended = std::upper_bound(ends.begin(), ends.end(), f.start_ns) - ends.begin();
      f.activities = static_cast<uint64_t>(starting - ended);
      step_spans.emplace_back(f.start_ns, f.end_ns);
    }
    figures.steps.push_back(std::move(f));
  }

  const std::vector<Interval> spans = merged(std::move(step_spans));
  for (const Interval& i : all)
    if (covered(spans, i.first, i.second) == 0) ++figures.outside_steps;
  return figures;
}

std::vector<StepRange> gpu_windows(const std::vector<HostStep>& steps, const std::vector<Activity>& activities) {
  std::vector<const Activity*> by_issue;
  for (const Activity& a : activities)
    if (a.issued != 0 && a.end_ns > a.start_ns) by_issue.push_back(&a);
  std::sort(by_issue.begin(), by_issue.end(),
            [](const Activity* a, const Activity* b) { return a->issued < b->issued; });

  std::vector<StepRange> out(steps.size());
  std::optional<int64_t> next_start;  // the window of the next step that issued work begins here
  for (size_t k = steps.size(); k-- > 0;) {
    const HostStep& s = steps[k];
    StepRange& w = out[k];
    w.name = s.name;
    if (s.issued_after == 0 || s.issued_before <= s.issued_after) {
      w.start_ns = s.start_ns;
      w.end_ns = s.end_ns;
      next_start = s.start_ns;
      continue;
    }
    auto it = std::upper_bound(by_issue.begin(), by_issue.end(), s.issued_after,
                               [](uint32_t id, const Activity* a) { return id < a->issued; });
    std::optional<int64_t> first_start, last_end;
    for (; it != by_issue.end() && (*it)->issued < s.issued_before; ++it) {
      first_start = first_start ? std::min(*first_start, (*it)->start_ns) : (*it)->start_ns;
      last_end = last_end ? std::max(*last_end, (*it)->end_ns) : (*it)->end_ns;
    }
    if (!first_start) {
      w.start_ns = w.end_ns = next_start.value_or(s.end_ns);
      continue;
    }
    w.start_ns = *first_start;
    // A later step's work that started first (another stream) leaves this window empty, never reversed.
    w.end_ns = next_start ? std::max(*first_start, *next_start) : *last_end;
    next_start = *first_start;
  }
  return out;
}

std::vector<StepRange> outermost_ranges(std::vector<StepRange> ranges) {
  ranges.erase(std::remove_if(ranges.begin(), ranges.end(), [](const StepRange& r) { return r.end_ns < r.start_ns; }),
               ranges.end());
  // By start, the longer first among equal starts: an enclosing range comes before what it holds.
  std::stable_sort(ranges.begin(), ranges.end(), [](const StepRange& a, const StepRange& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<StepRange> out;
  int64_t enclosing_end = 0;
  for (StepRange& r : ranges) {
    if (!out.empty() && r.end_ns <= enclosing_end) continue;  // inside a step already taken
    enclosing_end = r.end_ns;
    out.push_back(std::move(r));
  }
  return out;
}

JobFigures job_figures(const std::vector<RankFigures>& ranks) {
  JobFigures job;
  job.ranks = ranks.size();
  if (ranks.empty()) return job;
  size_t common = ranks.front().steps.size();
  for (const RankFigures& r : ranks) {
    common = std::min(common, r.steps.size());
    job.records_lost += r.records_lost;
  }
  for (const RankFigures& r : ranks) job.steps_left_out += r.steps.size() - common;
  for (size_t k = 0; k < common; ++k) {
    JobStep step;
    step.index = k;
    step.span_start_ns = ranks[0].steps[k].start_ns;
    step.span_end_ns = ranks[0].steps[k].end_ns;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const StepFigures& s = ranks[r].steps[k];
      if (s.step_ns > ranks[step.slowest_rank].steps[k].step_ns) step.slowest_rank = r;
      step.span_start_ns = std::min(step.span_start_ns, s.start_ns);
      step.span_end_ns = std::max(step.span_end_ns, s.end_ns);
    }
    step.slowest = ranks[step.slowest_rank].steps[k];
    job.steps.push_back(std::move(step));
  }
  return job;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace tandem
