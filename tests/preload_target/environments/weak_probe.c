/* A program that detects optional libraries the way many do: through weak references to their
   functions, null when no loaded object defines them. Prints, for every name the interposer hooks,
   whether the program sees it; tests/cpu/test_preload_environments.cpp requires the same answers
   with and without the interposer. C, and linked against nothing but libc (or the fake NCCL). */
#include <stdio.h>

#include "tandem/hook_list.h"

#define TANDEM_WEAK_PROBE(name, ret, params, args) extern void name(void) __attribute__((weak));
TANDEM_DRIVER_HOOKS(TANDEM_WEAK_PROBE)
TANDEM_LIBRARY_HOOKS(TANDEM_WEAK_PROBE)
#undef TANDEM_WEAK_PROBE

int main(void) {
#define TANDEM_WEAK_PRINT(name, ret, params, args) printf("%s %s\n", #name, name ? "present" : "absent");
  TANDEM_DRIVER_HOOKS(TANDEM_WEAK_PRINT)
  TANDEM_LIBRARY_HOOKS(TANDEM_WEAK_PRINT)
#undef TANDEM_WEAK_PRINT
  return 0;
}
