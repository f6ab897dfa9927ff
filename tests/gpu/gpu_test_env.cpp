// main() for GPU tests: each test skips itself when no GPU is visible (tandem_test::require_gpus).
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
