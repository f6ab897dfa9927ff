#include "runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <mutex>

#include "log.h"

namespace tandem::preload {
namespace {

Counters g_counters;
std::atomic<Runtime*> g_runtime{nullptr};
std::once_flag g_init_once;

// fork(): hold the insert locks across fork so the child never inherits them held; in the child,
// start counting afresh (its summary reports its own launches, not its parent's).
void before_fork() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  rt->functions.lock_for_fork();
  rt->devices.lock_for_fork();
  rt->outstanding.lock_for_fork();
  rt->communicators.lock_for_fork();
}
void after_fork_in_parent() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  rt->communicators.unlock_after_fork();
  rt->outstanding.unlock_after_fork();
  rt->devices.unlock_after_fork();
  rt->functions.unlock_after_fork();
}
void after_fork_in_child() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  rt->communicators.forget_all_after_fork();
  rt->communicators.unlock_after_fork();
  rt->outstanding.unlock_after_fork();
  rt->devices.unlock_after_fork();
  rt->functions.unlock_after_fork();
  g_counters.reset();
  rt->pid.store(static_cast<long>(getpid()), std::memory_order_relaxed);
  rt->functions.for_each([](FunctionRecord& r) { r.launches.store(0, std::memory_order_relaxed); });
}

void initialise() {
  auto* rt = new Runtime;  // never deleted: see runtime.h
  rt->config = config_from_environment();
  rt->pid.store(static_cast<long>(getpid()), std::memory_order_relaxed);
  set_log_level(rt->config.log_level);
  for (const auto& problem : rt->config.problems) log(problem.level, "%s", problem.message.c_str());
  const auto& c = rt->config;
  log(LogLevel::Info, "active: policy %s (applied: %s)%s%s%s%s", c.policy_text.c_str(), to_string(c.policy).c_str(),
      *c.compute_controls() ? ", compute controls " : "", c.compute_controls(), c.stats_file.empty() ? "" : ", stats ",
      c.stats_file.c_str());
  g_runtime.store(rt, std::memory_order_release);
  pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
}

}  // namespace

Counters& counters() { return g_counters; }

Runtime& runtime() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt) return *rt;
  std::call_once(g_init_once, &initialise);
  return *g_runtime.load(std::memory_order_acquire);
}

Runtime* runtime_if_initialized() { return g_runtime.load(std::memory_order_acquire); }

}  // namespace tandem::preload
