/* A program whose library, loaded at start-up and bound immediately (-z now, as a distribution's
   libmount, libdbus or glib are), calls _exit: the loader binds that library's reference before it
   relocates the preloaded interposer. tests/cpu/test_preload_environments.cpp requires the same
   output, and nothing on stderr, with and without the interposer. */
#include <stdio.h>
#include <unistd.h>

#ifdef BIND_NOW_EXIT_LIBRARY
void leave_now(int status) {
  fflush(stdout);
  _exit(status);
}
#else
void leave_now(int status);
int main(void) {
  printf("left through the library's _exit\n");
  leave_now(3);
  return 0;
}
#endif
