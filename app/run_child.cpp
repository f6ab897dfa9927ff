#include "run_child.h"

#include <signal.h>

#include "process/child_process.h"
#include "tandem/error.h"
#include "tandem/run_contract.h"

extern char** environ;

namespace tandem::cli {
namespace {

// The child's environment: the parent's, minus the variables we change, plus their new values.
std::vector<std::string> build_environment(const std::vector<EnvChange>& changes) {
  std::vector<std::string> out;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string variable = *entry;
    const std::string name = variable.substr(0, variable.find('='));
    bool changed = false;
    for (const auto& change : changes) changed = changed || change.first == name;
    if (!changed) out.push_back(variable);
  }
  for (const auto& [name, value] : changes)
    if (value) out.push_back(name + "=" + *value);
  return out;
}

}  // namespace

process::SignalPlan run_signal_plan() {
  using process::OnSignal;
  // Interactive interrupts reach the whole foreground process group, the program included: like
  // system(3), let the program decide and report how it ended, instead of dying first. Signals sent
  // to `tandem run` alone (a job scheduler's SIGTERM, a closed terminal's SIGHUP, a user's SIGUSR1,
  // an alarm, a SIGPIPE) are passed on: none of them may end tandem and leave the program orphaned.
  process::SignalPlan plan;
  plan.signals = {{SIGINT, OnSignal::Ignore},   {SIGQUIT, OnSignal::Ignore},  {SIGTERM, OnSignal::Forward},
                  {SIGHUP, OnSignal::Forward},  {SIGUSR1, OnSignal::Forward}, {SIGUSR2, OnSignal::Forward},
                  {SIGALRM, OnSignal::Forward}, {SIGPIPE, OnSignal::Forward}};
  return plan;
}

int run_child(process::Supervisor& supervisor, const std::vector<std::string>& command,
              const std::vector<EnvChange>& environment) {
  TANDEM_REQUIRE(!command.empty(), "no command given: use `tandem run [options] -- CMD ARGS...`");
  process::ChildOptions options;
  options.argv = command;
  options.environment = build_environment(environment);
  options.pid_variable = tandem::preload::env::kRootPid;
  options.who = "tandem run";
  return supervisor.run(options).exit_status;
}

}  // namespace tandem::cli
