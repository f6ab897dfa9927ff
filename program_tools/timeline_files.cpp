#include "program_tools/timeline_files.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tandem/error.h"
#include "tandem/process_timeline_json.h"
#include "tandem/safe_file.h"

namespace tandem::program_tools {
namespace {

namespace fs = std::filesystem;

// A process's timeline file holds one entry per step: a million steps stay far below this.
constexpr size_t kMaxTimelineFileBytes = size_t(1) << 30;

void sort_by_rank(std::vector<ProcessTimeline>& processes) {
  std::stable_sort(processes.begin(), processes.end(), [](const ProcessTimeline& a, const ProcessTimeline& b) {
    if (a.rank != b.rank) return a.rank.value_or(-1) < b.rank.value_or(-1);
    return a.pid < b.pid;
  });
}

}  // namespace

std::vector<std::string> files_named(const std::string& folder, const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 && entry.is_regular_file(ec))
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ProcessTimeline> read_timeline_folder(const std::string& folder) {
  std::vector<ProcessTimeline> out;
  for (const std::string& file : files_named(folder, kTimelineFilePrefix, kTimelineFileSuffix)) {
    try {
      out.push_back(
          process_timeline_from_json(nlohmann::json::parse(read_small_regular_file(file, kMaxTimelineFileBytes))));
    } catch (const std::exception& e) {
      TANDEM_THROW("cannot read the timeline file " + file + ": " + e.what());
    }
  }
  sort_by_rank(out);
  return out;
}

std::vector<ProcessTimeline> read_timelines_from_stats(const std::vector<std::string>& stats_files) {
  std::vector<ProcessTimeline> out;
  for (const std::string& file : stats_files) {
    nlohmann::json stats;
    try {
      stats = nlohmann::json::parse(read_small_regular_file(file, kMaxTimelineFileBytes));
      if (!stats.contains("timeline") || stats.at("timeline").is_null()) continue;
      out.push_back(process_timeline_from_json(stats.at("timeline")));
    } catch (const std::exception& e) {
      TANDEM_THROW("cannot read the timeline of the stats file " + file + ": " + e.what());
    }
  }
  sort_by_rank(out);
  return out;
}

}  // namespace tandem::program_tools
