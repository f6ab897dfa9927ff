/* A stand-in for a conda environment's C++ runtime, newer than the system's: a library with the
   C++ runtime's name (libstdc++.so.6) and a symbol of a version the system's does not have
   (GLIBCXX_3.4.999, newer_runtime.map). The program linked against it finds it through its own run
   path, as an environment's extensions find theirs. If the interposer brought the system's
   libstdc++.so.6 in first, the loader would bind the program to that one and fail:
   "version `GLIBCXX_3.4.999' not found". */
#include <stdio.h>

#ifdef NEWER_RUNTIME_LIBRARY
const char* tandem_newer_runtime(void) { return "newer runtime"; }
#else
const char* tandem_newer_runtime(void);
int main(void) {
  printf("%s\n", tandem_newer_runtime());
  return 0;
}
#endif
