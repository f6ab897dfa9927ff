#pragma once
// The summary at process exit (exit_report.cpp): run from this library's destructor when the process
// calls exit(), and from the _exit/_Exit hooks (exit_hooks.cpp) when it leaves without its exit
// handlers. Once per process.
namespace tandem::preload {

// The timeline finished and its files written, the summary on stderr, the stats file: what the
// destructor does, now. Never throws; errno is the caller's to keep.
void report_before_exit_without_handlers();

}  // namespace tandem::preload
