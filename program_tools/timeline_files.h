#pragma once
// The timelines a program's processes left behind, read back once it has ended: every
// timeline-<pid>.json of a run's timeline folder (`tandem run --timeline`), or the "timeline" member
// of each --stats file (`tandem tune --objective`), in the one schema the interposer writes them in
// (tandem/process_timeline_json.h).
#include <string>
#include <vector>

#include "tandem/process_timeline.h"

namespace tandem::program_tools {

// The regular files of `folder` whose names are `prefix`, something, then `suffix`, sorted.
std::vector<std::string> files_named(const std::string& folder, const std::string& prefix, const std::string& suffix);
// Every timeline-<pid>.json in `folder`, by rank then pid. A file that does not parse throws
// tandem::Error naming it.
std::vector<ProcessTimeline> read_timeline_folder(const std::string& folder);
// The "timeline" member of each stats file (`tandem run --stats`), by rank then pid; files without
// one are skipped.
std::vector<ProcessTimeline> read_timelines_from_stats(const std::vector<std::string>& stats_files);

}  // namespace tandem::program_tools
