#pragma once
// dlerror() as glibc would answer it without the interposer.
//
// The dlsym hook sometimes has to answer "not found" for a name that glibc did
// find: our own exported wrapper, for a hooked name that the process does not
// otherwise define. glibc's error state (thread-local, private to libc) can
// only be set by a failed lookup, and the failed lookup the hook can make names
// this library ("<our path>: undefined symbol: NAME") where glibc, without us,
// would name the caller or the handle's object. So the hook makes that lookup
// last and arms a rewrite: the exported dlerror() calls glibc's, and if glibc
// returns exactly that message it returns the message glibc would have written
// instead. glibc keeps the state (cleared when read, replaced by the next dl*
// call), so a later failure or success is reported as glibc reports it.

namespace tandem::preload {

// After the hook's final lookup failed with "<our path>: undefined symbol:
// `name`": make the next dlerror() of this thread say "<object_name>: undefined
// symbol: `name`" instead.
void arm_dl_error_rewrite(const char* object_name, const char* name) noexcept;

// glibc's dlerror, resolved once (see real_symbols.cpp).
using DlerrorFn = char* (*)();

}  // namespace tandem::preload
