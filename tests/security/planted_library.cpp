// A stranger's library, planted in a folder under a name tandem's binaries need (libgcc_s.so.1,
// libstdc++.so.6, ...). If the dynamic loader ever picks it up, its constructor leaves a mark:
// tests/scripts/test_security.py asserts that no tandem binary, run from that folder, loads it.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

extern "C" __attribute__((constructor)) void tandem_planted_library_loaded() {
  const char* marker = std::getenv("TANDEM_PLANTED_MARKER");
  if (!marker) return;
  const int fd = ::open(marker, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const char text[] = "planted library loaded\n";
  (void)!::write(fd, text, sizeof text - 1);
  ::close(fd);
}
