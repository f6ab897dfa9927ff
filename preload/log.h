#pragma once
// The interposer's messages: one line each on stderr, "tandem[pid]: level: text", written with a
// single write(2) so lines from several threads or processes do not interleave. The level starts at
// warn and is set from TANDEM_LOG_LEVEL at initialisation.
#include "config.h"

namespace tandem::preload {

void set_log_level(LogLevel);
bool log_enabled(LogLevel);
void log(LogLevel, const char* format, ...) __attribute__((format(printf, 2, 3)));
// Writes `text` (already formatted, possibly several lines) to stderr as is.
void write_stderr(const std::string& text);

}  // namespace tandem::preload
