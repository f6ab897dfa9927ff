#pragma once
// The message of the tandem::Error that `action` throws; fails the test when it throws none.
#include <gtest/gtest.h>

#include <string>

#include "tandem/error.h"

namespace tandem_test {

template <typename Action>
std::string error_of(Action action) {
  try {
    action();
  } catch (const tandem::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no tandem::Error thrown";
  return "";
}

}  // namespace tandem_test
