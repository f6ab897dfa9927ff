#pragma once
// Per-device facts and state the launch path needs, created on the first launch on each device and
// then read without a lock: the residency limits (tandem::DeviceLimits, from cuDeviceGetAttribute),
// the greatest stream priority.
#include <array>
#include <atomic>
#include <mutex>
#include <optional>

#include "cuda_driver.h"
#include "driver_api.h"
#include "function_record.h"
#include "tandem/occupancy.h"

namespace tandem::preload {

struct DeviceState {
  int ordinal = 0;
  bool limits_ok = false;
  DeviceLimits limits;
  bool priority_ok = false;
  int greatest_priority = 0;  // numerically lowest: -5 on H200
};

class DeviceTable {
 public:
  // The state of `device`, created on first use (driver queries in the current context); nullptr
  // for ordinals outside [0, kMaxDevices).
  DeviceState* get(const DriverApi&, int device);

  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }

 private:
  std::array<std::atomic<DeviceState*>, kMaxDevices> devices_{};
  std::mutex mutex_;
};

// DeviceLimits of `device` from the driver, with the allocation rules of its architecture taken from
// the GPU catalogue (as tandem::query_device_limits does through the runtime).
std::optional<DeviceLimits> query_limits(const DriverApi&, int device);

}  // namespace tandem::preload
