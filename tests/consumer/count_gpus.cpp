// Uses the CUDA part: without a GPU it must fail with tandem's own message, not crash or fail to
// load (the consumer chose the CUDA runtime).
#include <cstdio>

#include "tandem/device.h"
#include "tandem/error.h"

int main() {
  try {
    std::printf("gpus=%d\n", tandem::visible_gpu_count());
  } catch (const tandem::Error& e) {
    std::printf("no gpu: %s\n", e.what());
  }
  return 0;
}
