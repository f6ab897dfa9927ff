#pragma once
// What errno the program sees after a hook. The exported wrappers (exports.cpp) put back the value
// errno had when the program called, so that the hook's own work (lookups, log lines) never shows.
// A hook whose real function may itself set errno (NCCL reports socket failures that way) records
// errno right after the real call; the wrapper then leaves that value, exactly what the program
// would see without us.
namespace tandem::preload {

// Records the current errno as the one the caller must see (call right after the real function).
void keep_errno_of_real_call();
// For the wrapper: the recorded value if any (and forgets it), else `at_entry`.
int errno_for_caller(int at_entry);

}  // namespace tandem::preload
