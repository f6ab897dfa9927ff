#pragma once
// The files a program tune's runs leave in its --logs folder: each run's output,
// "round<N>-<policy>.log", and with a timeline objective its processes' --stats files,
// "round<N>-<policy>.stats-<pid>.json", which program_objective.h reads back.
#include <cstddef>
#include <string>

namespace tandem::program_tools {

// The run's log file name in the logs folder: "round1-baseline.log", "round2-shape-2+priority.log".
std::string program_run_log_name(int round, const std::string& policy);

// A run's stats files, "<log without .log>.stats-<pid>.json": this prefix, then the pid and ".json".
std::string run_stats_prefix(const std::string& log);

// Removes what an earlier tune left in a --logs folder reused now: its run logs and its runs' stats
// files, which a timeline objective would otherwise read as more ranks of this tune's runs. Regular
// files only (a link, FIFO or device in a log's place is refused by the run that meets it); other
// names are left alone. Returns how many it removed; throws tandem::Error naming a file it cannot
// remove.
size_t remove_earlier_run_files(const std::string& logs_dir);

}  // namespace tandem::program_tools
