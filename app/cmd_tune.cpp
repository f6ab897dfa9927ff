// `tandem tune`: its options, for the benchmark's cases and for a program (tandem tune -- CMD). The
// benchmark's tune runs in the GPU commands module (gpu_tune.cpp); a program's here
// (cmd_tune_program.cpp), without the GPU libraries.
#include <memory>
#include <string>

#include "bench_cli.h"
#include "commands.h"
#include "gpu_commands.h"
#include "tandem/error.h"
#include "tune_cli.h"
#include "tune_program_cli.h"

namespace tandem::cli {

void add_tune_command(CLI::App& app, int& exit_code) {
  auto cli = std::make_shared<TuneCli>();
  CLI::App* cmd =
      app.add_subcommand("tune", "Search the policy space for each case and write the best as a policy file");
  add_bench_options(cmd, cli->bench);
  cmd->add_option("-o,--out", cli->policy_file,
                  "Policy file to write (one per case when several, beside it); its folder must be writable before "
                  "the search starts")
      ->capture_default_str()
      ->group("Output");
  cmd->add_option("--show", cli->show,
                  "Candidates listed per case, fastest first, from 0 to " + std::to_string(kMaxShow))
      ->capture_default_str()
      ->group("Output");
  cmd->add_option("--resume", cli->resume,
                  "The --json of an interrupted tune with the same GPUs and options: its finished cases are kept "
                  "(policy files rewritten if missing), the rest tuned; --json then holds them all")
      ->default_str("none")
      ->group("What to run");
  // tandem tune -- CMD ARGS...: the same command tunes a program (tune_program_cli.h).
  auto program = std::make_shared<ProgramTuneCli>();
  add_program_tune_options(cmd, program);
  cmd->get_option("--timeout")
      ->default_str("120 for the benchmark")
      ->description(
          "Benchmark: seconds before an unfinished step aborts the communicators, above 0, at most 604800 (a week). "
          "Program (after --): seconds before a run's process group is killed and the run counted failed; "
          "default: none for the baseline, 3 x its slowest run + 60 s for a candidate");
  cmd->footer(
      "tandem tune [options] -- CMD ARGS...: runs the program plainly (the baseline) and under `tandem run "
      "--policy P` for each candidate, in --rounds interleaved rounds, and writes the policy that beats the "
      "baseline by more than the noise (else `concurrent`) to --out. The program's output goes to --logs.");
  cmd->callback([cli, program, cmd, &exit_code] {
    if (program->command.empty()) {
      exit_code = gpu_commands().tune(*cli);
      return;
    }
    checking_input([&] { refuse_benchmark_options(*cmd); });
    SharedTuneOutputs shared;
    shared.policy_file = cli->policy_file;
    shared.json_path = cli->bench->options.json_path;
    if (cmd->count("--timeout")) shared.timeout_s = cli->bench->options.timeout_s;
    shared.progress = !cli->bench->quiet;
    exit_code = run_program_tune(*program, shared);
  });
}

}  // namespace tandem::cli
