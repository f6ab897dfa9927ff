#include "timeline_figures.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <utility>

#include "kernel_classification.h"
#include "tandem/kernel_names.h"
#include "tandem/process_timeline_json.h"
#include "tandem/text.h"

namespace tandem::preload {
namespace {

const std::string& name_of(const RawTimeline& raw, uint32_t index) {
  static const std::string none;
  return index < raw.names.size() ? raw.names[index] : none;
}

// Each name's launch sizes (nullptr: none noted), by the recorder's name index: looked up once per
// name, not once per record.
std::vector<const LaunchSizes*> sizes_by_name(const RawTimeline& raw) {
  std::vector<const LaunchSizes*> out(raw.names.size(), nullptr);
  if (!raw.launch_sizes) return out;
  for (size_t i = 0; i < raw.names.size(); ++i)
    if (const auto it = raw.launch_sizes->find(raw.names[i]); it != raw.launch_sizes->end()) out[i] = &it->second;
  return out;
}

LaunchForm form_of(const std::vector<const LaunchSizes*>& sizes, const tandem_timeline_activity& a) {
  return launch_form(a.name < sizes.size() ? sizes[a.name] : nullptr, a.dynamic_smem);
}

bool correlated(uint32_t id, const std::vector<uint32_t>& sorted) {
  return id != 0 && std::binary_search(sorted.begin(), sorted.end(), id);
}

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * share);
  return buf;
}

std::string line(long pid, const std::string& text) { return pid_prefix(pid) + text + "\n"; }

const char* kind_name(uint8_t kind) {
  // Indexed by the record's kind (TANDEM_TIMELINE_KERNEL = 0, ... PEER_COPY = 3).
  static constexpr const char* kNames[] = {"kernel", "memcpy", "memset", "peer copy"};
  static_assert(static_cast<size_t>(TANDEM_TIMELINE_PEER_COPY) == std::size(kNames) - 1,
                "a name for every record kind");
  return kind < std::size(kNames) ? kNames[kind] : "other";
}

// Chrome's reserved colour names (trace viewer's colour scheme); Perfetto shows the categories.
const char* colour_of(ActivityClass cls) {
  return cls == ActivityClass::Communication ? "rail_response" : "thread_state_running";
}

}  // namespace

ActivityClass classify(const tandem_timeline_activity& a, const std::string& name,
                       const std::vector<uint32_t>& communication) {
  switch (a.kind) {
    case TANDEM_TIMELINE_KERNEL:
      return is_nccl_kernel_name(name) || is_tandem_collective_kernel_name(name) ? ActivityClass::Communication
                                                                                 : ActivityClass::Computation;
    case TANDEM_TIMELINE_PEER_COPY:
      return ActivityClass::Communication;
    default:
      return correlated(a.correlation, communication) || correlated(a.runtime_correlation, communication)
                 ? ActivityClass::Communication
                 : ActivityClass::Computation;
  }
}

std::vector<HostStep> host_steps(const RawTimeline& raw) {
  std::vector<StepRange> ranges;
  for (const RawStep& s : raw.steps) ranges.push_back(StepRange{s.name, s.start_ns, s.end_ns});
  // outermost_ranges keeps the ranges it keeps whole: find each one's marks again by its times, in
  // the steps sorted by them (a search each, not a scan: 200,000 steps at exit).
  std::vector<size_t> by_times(raw.steps.size());
  for (size_t i = 0; i < by_times.size(); ++i) by_times[i] = i;
  const auto times = [&](size_t i) { return std::make_pair(raw.steps[i].start_ns, raw.steps[i].end_ns); };
  std::stable_sort(by_times.begin(), by_times.end(), [&](size_t a, size_t b) { return times(a) < times(b); });
  std::vector<HostStep> out;
  for (const StepRange& r : outermost_ranges(ranges)) {
    const auto key = std::make_pair(r.start_ns, r.end_ns);
    auto it = std::lower_bound(by_times.begin(), by_times.end(), key,
                               [&](size_t i, const std::pair<int64_t, int64_t>& k) { return times(i) < k; });
    for (; it != by_times.end() && times(*it) == key; ++it) {
      const RawStep& s = raw.steps[*it];
      if (s.name != r.name) continue;
      out.push_back(HostStep{s.name, s.start_ns, s.end_ns, s.issued_after, s.issued_before});
      break;
    }
  }
  return out;
}

ProcessTimeline build_timeline(const RawTimeline& raw, const std::string& step_range) {
  ProcessTimeline t;
  t.state = TimelineState::Recorded;
  t.step_range = step_range;
  t.lost = TimelineLosses{raw.counts.dropped, raw.counts.incomplete, raw.counts.over_limit};
  const std::vector<HostStep> steps = host_steps(raw);
  t.steps_from_ranges = !steps.empty();
  t.open_steps = raw.open_steps;
  for (const HostStep& s : steps)
    if (s.issued_after == 0 || s.issued_before <= s.issued_after) ++t.unplaced_steps;

  struct Device {
    RankRecord record;
    DeviceTimeline figures;
    std::vector<KernelRun> computation_kernels;  // for the shaping check
    std::vector<Activity> communication;
  };
  std::map<uint32_t, Device> by_device;
  const std::vector<const LaunchSizes*> sizes = sizes_by_name(raw);
  for (const tandem_timeline_activity& a : raw.activities) {
    auto& [record, device, kernels, communication] = by_device[a.device];
    const std::string& name = name_of(raw, a.name);
    const ActivityClass cls = classify(a, name, raw.communication_correlations);
    record.activities.push_back(Activity{a.start_ns, a.end_ns, cls, a.correlation});
    if (raw.launch_sizes) {
      if (cls == ActivityClass::Communication)
        communication.push_back(record.activities.back());
      else if (a.kind == TANDEM_TIMELINE_KERNEL)
        kernels.push_back(KernelRun{a.start_ns, a.end_ns, form_of(sizes, a), a.correlation});
    }
    if (a.kind == TANDEM_TIMELINE_KERNEL)
      ++device.kernels;
    else if (a.kind == TANDEM_TIMELINE_MEMSET)
      ++device.memsets;
    else
      ++device.copies;
    if (cls == ActivityClass::Communication) ++device.communication;
  }
  for (auto& [id, entry] : by_device) {
    auto& [record, device, kernels, communication] = entry;
    if (!steps.empty()) record.steps = gpu_windows(steps, record.activities);
    // The process's losses are not per device: each device reports them (they bound every figure).
    record.records_lost = t.records_lost();
    device.device = id;
    device.figures = account(record);
    if (raw.launch_sizes) device.shaping = check_shaping(kernels, communication);
    t.devices.push_back(std::move(device));
  }
  return t;
}

std::string render_timeline_text(const ProcessTimeline& t) {
  std::string out;
  const long pid = t.pid;
  switch (t.state) {
    case TimelineState::Off:
      return out;
    case TimelineState::NotStarted:
      return line(pid, "timeline: nothing recorded (no CUDA activity seen)");
    case TimelineState::Failed:
      return line(pid, "timeline: not recorded: " + t.reason);
    case TimelineState::SteppedAside:
      if (!t.recorded_until_ns) return line(pid, "timeline: not recorded: " + t.reason);
      out += line(pid, "timeline: recorded until " + t.reason + "; the figures cover the run until then");
      break;
    case TimelineState::Recorded:
      break;
  }
  if (t.devices.empty()) out += line(pid, "timeline: no kernel, copy or memset recorded");
  for (const DeviceTimeline& d : t.devices) {
    const auto& steps = d.figures.steps;
    std::string what = "timeline: GPU " + std::to_string(d.device) + ", ";
    if (t.steps_from_ranges)
      what += std::to_string(steps.size()) + (steps.size() == 1 ? " step '" : " steps '") + t.step_range +
              "' (NVTX ranges); median step ";
    else
      what += std::string(t.step_range.empty()
                              ? "the whole run as one step"
                              : "no NVTX range matched '" + t.step_range + "', the whole run as one step") +
              ": ";
    what += ms(median_ns(steps, &StepFigures::step_ns)) + ": computation " +
            ms(median_ns(steps, &StepFigures::computation_ns)) + ", communication " +
            ms(median_ns(steps, &StepFigures::communication_ns)) + ", overlapped " +
            ms(median_ns(steps, &StepFigures::overlapped_ns)) + ", exposed communication " +
            ms(median_ns(steps, &StepFigures::exposed_communication_ns)) + ", idle " +
            ms(median_ns(steps, &StepFigures::idle_ns));
    const auto hidden = d.figures.total().hidden_share();  // Σ overlapped / Σ communication
    what += hidden ? "; " + percent(*hidden) + " of the communication hidden" : "; no communication";
    out += line(pid, what);
    out += line(pid, "timeline: GPU " + std::to_string(d.device) + " records: " + std::to_string(d.kernels) +
                         " kernels, " + std::to_string(d.copies) + " copies, " + std::to_string(d.memsets) +
                         " memsets (" + std::to_string(d.communication) + " communication), " +
                         std::to_string(d.figures.outside_steps) + " outside the steps");
    if (d.shaping) out += line(pid, "timeline: GPU " + std::to_string(d.device) + " " + shaping_check_text(*d.shaping));
  }
  const uint64_t lost = t.records_lost();
  if (lost)
    out += line(pid, "timeline: " + std::to_string(lost) + " records lost (" + std::to_string(t.lost.dropped) +
                         " dropped by CUPTI, " + std::to_string(t.lost.incomplete) + " unfinished at exit, " +
                         std::to_string(t.lost.over_limit) + " over tandem's limit)");
  if (t.open_steps)
    out += line(pid, "timeline: " + std::to_string(t.open_steps) + " steps still open at exit, not counted");
  if (t.unplaced_steps)
    out += line(pid, "timeline: " + std::to_string(t.unplaced_steps) +
                         " steps without issue marks (CUDA not loaded yet, or CUPTI gave no correlation): their "
                         "windows are their host ranges");
  return out;
}

void write_trace_events(std::ostream& out, const RawTimeline& raw, const ProcessTimeline& t) {
  const long pid = t.pid;
  const auto emit = [&](const nlohmann::json& event) {
    out << event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  };
  std::optional<int64_t> first;
  const auto note_start = [&](int64_t start_ns) { first = first ? std::min(*first, start_ns) : start_ns; };
  for (const tandem_timeline_activity& a : raw.activities)
    if (a.end_ns >= a.start_ns) note_start(a.start_ns);
  for (const DeviceTimeline& d : t.devices)
    for (const StepFigures& s : d.figures.steps) note_start(s.start_ns);
  // The header: the earliest time of this process, so that the assembler can find the job's first.
  emit(trace_part_header_json(pid, first.value_or(0)));

  std::string label =
      t.rank ? "rank " + std::to_string(*t.rank) + " (pid " + std::to_string(pid) + ")" : "pid " + std::to_string(pid);
  if (!t.host.empty()) label += " on " + t.host;
  emit({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", label}}}});
  emit({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", t.rank ? *t.rank : 0}}}});

  // Tracks: per device its steps, then its streams in id order.
  std::map<std::pair<uint32_t, uint32_t>, int> stream_tid;
  std::map<uint32_t, int> steps_tid;
  for (const tandem_timeline_activity& a : raw.activities) stream_tid[{a.device, a.stream}] = 0;
  for (const DeviceTimeline& d : t.devices) steps_tid[d.device] = 0;
  int next = 1;
  for (auto& [device, tid] : steps_tid) {
    tid = next++;
    for (auto it = stream_tid.lower_bound({device, 0}); it != stream_tid.end() && it->first.first == device; ++it)
      it->second = next++;
  }
  for (auto& [key, tid] : stream_tid)
    if (tid == 0) tid = next++;
  const auto name_track = [&](int tid, const std::string& name) {
    emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
  };
  for (const auto& [device, tid] : steps_tid) name_track(tid, "GPU " + std::to_string(device) + " steps");
  for (const auto& [key, tid] : stream_tid)
    name_track(tid, "GPU " + std::to_string(key.first) + " stream " + std::to_string(key.second));

  for (const DeviceTimeline& d : t.devices) {
    const int tid = steps_tid[d.device];
    for (size_t i = 0; i < d.figures.steps.size(); ++i) {
      const StepFigures& s = d.figures.steps[i];
      nlohmann::json args = step_figures_json(s);
      args.erase("start_ns");
      args.erase("end_ns");
      emit({{"ph", "X"},
            {"name", s.name + " #" + std::to_string(i)},
            {"cat", "step"},
            {"cname", "generic_work"},
            {"pid", pid},
            {"tid", tid},
            {kTraceStartKey, s.start_ns},
            {kTraceDurationKey, s.step_ns},
            {"args", args}});
      // A boundary line across the process's tracks.
      emit({{"ph", "i"}, {"name", "step start"}, {"s", "p"}, {"pid", pid}, {"tid", tid}, {kTraceStartKey, s.start_ns}});
    }
  }
  // Kernel names demangled once each, not once per launch.
  std::vector<std::optional<std::string>> shown(raw.names.size());
  const auto display = [&](const tandem_timeline_activity& a) -> const std::string& {
    if (a.kind != TANDEM_TIMELINE_KERNEL || a.name >= shown.size()) return name_of(raw, a.name);
    if (!shown[a.name]) shown[a.name] = demangle(raw.names[a.name]);
    return *shown[a.name];
  };
  const std::vector<const LaunchSizes*> sizes = sizes_by_name(raw);
  for (const tandem_timeline_activity& a : raw.activities) {
    if (a.end_ns < a.start_ns) continue;
    const ActivityClass cls = classify(a, name_of(raw, a.name), raw.communication_correlations);
    nlohmann::json args = {
        {"kind", kind_name(a.kind)}, {"device", a.device}, {"stream", a.stream}, {"correlation", a.correlation}};
    if (raw.launch_sizes && a.kind == TANDEM_TIMELINE_KERNEL && cls == ActivityClass::Computation) {
      // Under a shape policy, whether tandem shaped it (tandem/shaping_check.h).
      args["shaping"] = to_string(form_of(sizes, a));
      args["dynamic_smem"] = a.dynamic_smem;
    }
    emit({{"ph", "X"},
          {"name", display(a)},
          {"cat", to_string(cls)},
          {"cname", colour_of(cls)},
          {"pid", pid},
          {"tid", stream_tid[{a.device, a.stream}]},
          {kTraceStartKey, a.start_ns},
          {kTraceDurationKey, a.end_ns - a.start_ns},
          {"args", args}});
  }
}

}  // namespace tandem::preload
