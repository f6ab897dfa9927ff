#include "program_tools/run_logs.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tandem/error.h"
#include "tandem/printable.h"

namespace tandem::program_tools {

std::string program_run_log_name(int round, const std::string& policy) {
  std::string name;
  for (char c : policy) {
    if (c == ':')
      name += '-';
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '.' || c == '-')
      name += c;
    else
      name += '_';
  }
  return "round" + std::to_string(round) + "-" + name + ".log";
}

std::string run_stats_prefix(const std::string& log) {
  return log.substr(0, log.size() - std::string(".log").size()) + ".stats-";
}

namespace {

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// "round<N>-<policy>.log" or "round<N>-<policy>.stats-<pid>.json" (program_run_log_name, run_stats_prefix).
bool earlier_run_file(const std::string& name) {
  const size_t dash = name.find('-');
  if (name.rfind("round", 0) != 0 || dash == std::string::npos || !all_digits(name.substr(5, dash - 5))) return false;
  if (ends_with(name, ".log")) return true;
  const size_t stats = name.rfind(".stats-");
  return stats != std::string::npos && ends_with(name, ".json") &&
         all_digits(name.substr(stats + 7, name.size() - stats - 7 - 5));
}

}  // namespace

size_t remove_earlier_run_files(const std::string& logs_dir) {
  namespace fs = std::filesystem;
  size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(logs_dir, ec)) {
    // Regular files only: a link, FIFO or device in a log's place stops the run that meets it.
    std::error_code kind;
    if (!earlier_run_file(entry.path().filename().string()) || !fs::is_regular_file(entry.symlink_status(kind)))
      continue;
    TANDEM_REQUIRE(::unlink(entry.path().c_str()) == 0, "cannot remove " + quoted_value(entry.path().string()) +
                                                            ", left by an earlier tune: " + std::strerror(errno));
    ++removed;
  }
  TANDEM_REQUIRE(!ec, "cannot read the --logs folder " + quoted_value(logs_dir) + ": " + ec.message());
  return removed;
}

}  // namespace tandem::program_tools
