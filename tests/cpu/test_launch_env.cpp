// Launch environments (OpenMPI, torchrun, Slurm, PMI, plain RANK/WORLD_SIZE): detection, precedence,
// malformed values, the rank -> GPU mapping and the choice of rendezvous.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "error_of.h"
#include "ranks/launch_env.h"
#include "report/report.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

using Vars = std::map<std::string, std::string>;

LaunchEnv detect(const Vars& vars, const std::string& requested = "auto") {
  return detect_launch(requested, map_environment(vars));
}

using tandem_test::error_of;

const Vars kOmpi = {{"OMPI_COMM_WORLD_RANK", "1"},
                    {"OMPI_COMM_WORLD_SIZE", "2"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"OMPI_MCA_ess_base_jobid", "99483649"}};
const Vars kTorchrun = {{"RANK", "3"},
                        {"WORLD_SIZE", "4"},
                        {"LOCAL_RANK", "1"},
                        {"LOCAL_WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "10.0.0.1"},
                        {"MASTER_PORT", "29500"},
                        {"TORCHELASTIC_RUN_ID", "none"},
                        {"TORCHELASTIC_RESTART_COUNT", "0"},
                        {"GROUP_RANK", "1"}};
const Vars kSlurm = {{"SLURM_PROCID", "5"},    {"SLURM_NTASKS", "8"},  {"SLURM_LOCALID", "1"},
                     {"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NNODES", "2"}};

Vars merged(Vars a, const Vars& b) {
  for (const auto& [k, v] : b) a[k] = v;
  return a;
}

TEST(LaunchEnv, NoLauncherMeansThreads) {
  const LaunchEnv e = detect({});
  EXPECT_EQ(e.mode, LaunchMode::Threads);
  EXPECT_EQ(e.world_size, 1);
  EXPECT_FALSE(e.is_process_mode());
}

TEST(LaunchEnv, OpenMpi) {
  const LaunchEnv e = detect(kOmpi);
  EXPECT_EQ(e.mode, LaunchMode::Mpi);
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_FALSE(e.multi_node);
  EXPECT_STREQ(to_string(e.mode), "mpi");
}

TEST(LaunchEnv, Torchrun) {
  const LaunchEnv e = detect(kTorchrun);
  EXPECT_EQ(e.mode, LaunchMode::Torchrun);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_TRUE(e.multi_node);  // 2 per node, 4 in all
}

TEST(LaunchEnv, PlainRankWorldSizeIsEnv) {
  const LaunchEnv e = detect({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}});
  EXPECT_EQ(e.mode, LaunchMode::Env);
  EXPECT_EQ(e.world_size, 2);
}

TEST(LaunchEnv, Slurm) {
  const LaunchEnv e = detect(kSlurm);
  EXPECT_EQ(e.mode, LaunchMode::Slurm);
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_TRUE(e.multi_node);
}

TEST(LaunchEnv, SlurmStepTaskCountWinsOverTheJobs) {
  const LaunchEnv e = detect(merged(kSlurm, {{"SLURM_STEP_NUM_TASKS", "6"}, {"SLURM_STEP_NUM_NODES", "1"}}));
  EXPECT_EQ(e.world_size, 6);
  EXPECT_FALSE(e.multi_node);
}

TEST(LaunchEnv, PmiWithLocalRank) {
  const LaunchEnv a =
      detect({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}});
  EXPECT_EQ(a.mode, LaunchMode::Env);
  EXPECT_EQ(a.rank, 2);
  EXPECT_EQ(a.local_rank, 0);
  EXPECT_TRUE(a.multi_node);
  const LaunchEnv b = detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"PMI_LOCAL_RANK", "1"}});
  EXPECT_EQ(b.local_rank, 1);
  const LaunchEnv c = detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(c.local_rank, -1);  // unknown: the rank is used for the device
  // Both set (Intel MPI over a PMI of its own): MPI_LOCALRANKID, the first of the list, decides.
  const LaunchEnv d = detect({{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"PMI_LOCAL_RANK", "0"}});
  EXPECT_EQ(d.local_rank, 1);
}

TEST(LaunchEnv, InnerLauncherWinsOverSlurm) {
  // mpirun or torchrun inside a Slurm allocation: their own variables describe this process.
  EXPECT_EQ(detect(merged(kSlurm, kOmpi)).mode, LaunchMode::Mpi);
  EXPECT_EQ(detect(merged(kSlurm, kOmpi)).world_size, 2);
  EXPECT_EQ(detect(merged(kSlurm, kTorchrun)).mode, LaunchMode::Torchrun);
  // mpirun wins over a stray RANK as well.
  EXPECT_EQ(detect(merged(kOmpi, {{"RANK", "7"}, {"WORLD_SIZE", "9"}})).rank, 1);
}

TEST(LaunchEnv, PmiFromSrunIsSlurmWhenTheyAgree) {
  const Vars srun_pmi = merged(kSlurm, {{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}});
  EXPECT_EQ(detect(srun_pmi).mode, LaunchMode::Slurm);
  // mpiexec (hydra) inside a Slurm job: its PMI ranks differ from the job's, and win.
  const Vars hydra = merged(kSlurm, {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
  const LaunchEnv e = detect(hydra);
  EXPECT_EQ(e.mode, LaunchMode::Env);
  EXPECT_EQ(e.world_size, 2);
}

TEST(LaunchEnv, WorldOfOneRunsAsThreadsUnlessForced) {
  const Vars one = {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"}, {"TORCHELASTIC_RUN_ID", "x"}};
  EXPECT_EQ(detect(one).mode, LaunchMode::Threads);
  EXPECT_EQ(detect(one, "torchrun").mode, LaunchMode::Torchrun);
}

TEST(LaunchEnv, ExplicitLaunchOverridesDetection) {
  EXPECT_EQ(detect(kOmpi, "threads").mode, LaunchMode::Threads);
  EXPECT_EQ(detect(merged(kSlurm, kOmpi), "slurm").rank, 5);
  EXPECT_NE(error_of([] { detect({}, "mpi"); }).find("OMPI_COMM_WORLD_RANK is not set"), std::string::npos);
  EXPECT_NE(error_of([] { detect({}, "env"); }).find("RANK and WORLD_SIZE"), std::string::npos);
  EXPECT_NE(error_of([] { detect({}, "pbs"); }).find("bad --launch 'pbs'"), std::string::npos);
}

TEST(LaunchEnv, MalformedValuesAreNamed) {
  EXPECT_NE(error_of([] {
              detect({{"RANK", "one"}, {"WORLD_SIZE", "2"}});
            }).find("RANK='one' is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { detect({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}); }).find("RANK='-1'"), std::string::npos);
  EXPECT_NE(error_of([] { detect({{"RANK", "0"}, {"WORLD_SIZE", ""}}); }).find("WORLD_SIZE=''"), std::string::npos);
  EXPECT_NE(error_of([] {
              detect({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
            }).find("RANK=2 is not below WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(error_of([] { detect({{"RANK", "0"}}); }).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(error_of([] {
              detect({{"OMPI_COMM_WORLD_SIZE", "2"}});
            }).find("OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              detect({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
            }).find("at least one rank"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              detect({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
            }).find("local rank 2 is not below the local world size 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              detect({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}});
            }).find("SLURM_PROCID='x'"),
            std::string::npos);
}

LaunchEnv process(int rank, int world, int local) {
  LaunchEnv e;
  e.mode = LaunchMode::Torchrun;
  e.rank = rank;
  e.world_size = world;
  e.local_rank = local;
  return e;
}

TEST(ChooseDevice, LocalRankByDefault) {
  LaunchRequest r;
  EXPECT_EQ(choose_device(process(0, 2, 0), r, 2), 0);
  EXPECT_EQ(choose_device(process(1, 2, 1), r, 2), 1);
  // Second node: global rank 3, local rank 1.
  EXPECT_EQ(choose_device(process(3, 4, 1), r, 2), 1);
  // Unknown local rank: the rank.
  EXPECT_EQ(choose_device(process(1, 2, -1), r, 2), 1);
}

TEST(ChooseDevice, LocalRankZeroOnASecondNodeTakesTheFirstGpu) {
  // Rank 2 of 4, 2 per node: the second node's first process drives its GPU 0, not "GPU 2".
  LaunchRequest r;
  EXPECT_EQ(choose_device(process(2, 4, 0), r, 2), 0);
  EXPECT_EQ(choose_device(process(8, 16, 0), r, 8), 0);
  // As each launcher says it: local rank 0 read from its variables, global rank beyond the GPUs.
  const Vars torchrun = merged(kTorchrun, {{"RANK", "2"}, {"LOCAL_RANK", "0"}});
  const Vars ompi = merged(
      kOmpi, {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  const Vars slurm = merged(kSlurm, {{"SLURM_PROCID", "4"}, {"SLURM_LOCALID", "0"}});
  for (const Vars& vars : {torchrun, ompi, slurm}) {
    const LaunchEnv e = detect(vars);
    EXPECT_EQ(e.local_rank, 0) << to_string(e.mode);
    EXPECT_EQ(choose_device(e, r, 2), 0) << to_string(e.mode);
  }
}

TEST(ChooseDevice, OneVisibleGpuServesAnyLocalRank) {
  // srun --gpus-per-task=1 or CUDA_VISIBLE_DEVICES=$LOCAL_RANK: each process sees only its own GPU.
  EXPECT_EQ(choose_device(process(1, 2, 1), LaunchRequest{}, 1), 0);
}

TEST(ChooseDevice, ExplicitDevice) {
  LaunchRequest r;
  r.device = 1;
  EXPECT_EQ(choose_device(process(0, 2, 0), r, 2), 1);
  r.device = 2;
  EXPECT_NE(error_of([&] { choose_device(process(0, 2, 0), r, 2); }).find("--device 2 but only 2 GPU(s)"),
            std::string::npos);
}

TEST(ChooseDevice, TooManyRanksPerNode) {
  LaunchRequest r;
  const std::string why = error_of([&] { choose_device(process(2, 3, 2), r, 2); });
  EXPECT_NE(why.find("local rank 2 but only 2 GPU(s)"), std::string::npos) << why;
  EXPECT_NE(why.find("--allow-shared-gpu"), std::string::npos);
  r.allow_shared_gpu = true;
  EXPECT_EQ(choose_device(process(2, 3, 2), r, 2), 0);
  // Shared GPUs are dealt out in turn: local ranks 3, 4 and 5 of 6 on 2 GPUs take 1, 0 and 1.
  EXPECT_EQ(choose_device(process(3, 6, 3), r, 2), 1);
  EXPECT_EQ(choose_device(process(4, 6, 4), r, 2), 0);
  EXPECT_EQ(choose_device(process(5, 6, 5), r, 2), 1);
  EXPECT_NE(error_of([&] { choose_device(process(0, 1, 0), r, 0); }).find("no GPU is visible"), std::string::npos);
}

TEST(Rendezvous, KeysIdentifyTheJob) {
  EXPECT_EQ(rendezvous_key(detect(kSlurm), map_environment(kSlurm)), "slurm-4242.0");
  EXPECT_EQ(rendezvous_key(detect(kOmpi), map_environment(kOmpi)), "ompi-99483649");
  EXPECT_EQ(rendezvous_key(detect(kTorchrun), map_environment(kTorchrun)), "torchrun-none-10.0.0.1-29500-r0");
  const Vars env_only = {{"RANK", "0"}, {"WORLD_SIZE", "2"}};
  EXPECT_EQ(rendezvous_key(detect(env_only), map_environment(env_only)), "default");
  const Vars odd = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a/b c"}, {"MASTER_PORT", "1"}};
  EXPECT_EQ(rendezvous_key(detect(odd), map_environment(odd)), "master-a_b_c-1");
  // Open MPI without its job id (a PMIx launch), inside a Slurm job: the PMIx namespace names the mpirun, so
  // that two of them in one Slurm job meet apart.
  Vars pmix = merged(kOmpi, {{"SLURM_JOB_ID", "4242"}, {"PMIX_NAMESPACE", "prterun-node1-4242@1"}});
  pmix.erase("OMPI_MCA_ess_base_jobid");
  EXPECT_EQ(rendezvous_key(detect(pmix), map_environment(pmix)), "pmix-prterun-node1-4242_1");
}

TEST(Rendezvous, ATorchrunRestartMeetsInANewPlace) {
  // torchrun restarts its workers (--max-restarts) with the same run id, master and port, and a higher
  // TORCHELASTIC_RESTART_COUNT: the restarted ranks must not find the rendezvous files of the group they
  // replace (an "ok" from a rank 0 that is gone, NCCL's old id), so each restart has a key and a folder of its own.
  LaunchRequest request;
  std::set<std::string> keys, folders;
  for (const char* restart : {"0", "1", "2", "10"}) {
    const Vars v = merged(kTorchrun, {{"LOCAL_WORLD_SIZE", "4"}, {"TORCHELASTIC_RESTART_COUNT", restart}});
    const std::string key = rendezvous_key(detect(v), map_environment(v));
    EXPECT_EQ(key, std::string("torchrun-none-10.0.0.1-29500-r") + restart);
    keys.insert(key);
    folders.insert(choose_rendezvous(detect(v), request, map_environment(v), false).where);
  }
  EXPECT_EQ(keys.size(), 4u);
  EXPECT_EQ(folders.size(), 4u);
  // Every rank of one restart agrees: the key depends on the job, never on the rank.
  const Vars rank0 = merged(kTorchrun, {{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"TORCHELASTIC_RESTART_COUNT", "3"}});
  const Vars rank3 = merged(kTorchrun, {{"TORCHELASTIC_RESTART_COUNT", "3"}});
  EXPECT_EQ(rendezvous_key(detect(rank0), map_environment(rank0)),
            rendezvous_key(detect(rank3), map_environment(rank3)));
}

TEST(Rendezvous, Precedence) {
  LaunchRequest request;
  const Vars single = {{"RANK", "1"},
                       {"WORLD_SIZE", "2"},
                       {"LOCAL_RANK", "1"},
                       {"TORCHELASTIC_RUN_ID", "abc"},
                       {"MASTER_ADDR", "127.0.0.1"},
                       {"MASTER_PORT", "29500"}};
  auto plan = [&](const Vars& v, bool mpi = false) {
    return choose_rendezvous(detect(v), request, map_environment(v), mpi);
  };
  // Default on one node: a folder under /tmp keyed by the job.
  RendezvousPlan p = plan(single);
  EXPECT_EQ(p.kind, RendezvousKind::File);
  EXPECT_EQ(p.where, "/tmp/tandem-rendezvous-" + std::to_string(getuid()) + "/torchrun-abc-127.0.0.1-29500-r0");
  // NCCL_COMM_ID beats the default.
  p = plan(merged(single, {{"NCCL_COMM_ID", "10.1.1.1:4000"}}));
  EXPECT_EQ(p.kind, RendezvousKind::NcclCommId);
  EXPECT_EQ(p.where, "10.1.1.1:4000");
  EXPECT_FALSE(p.set_nccl_comm_id);
  EXPECT_EQ(p.describe(), "nccl-comm-id:10.1.1.1:4000");
  // A directory (variable, then option) beats NCCL_COMM_ID.
  p = plan(merged(single, {{"NCCL_COMM_ID", "10.1.1.1:4000"}, {"TANDEM_RENDEZVOUS", "/shared/rdv"}}));
  EXPECT_EQ(p.kind, RendezvousKind::File);
  EXPECT_EQ(p.where, "/shared/rdv/torchrun-abc-127.0.0.1-29500-r0");
  request.rendezvous = "/mine";
  EXPECT_EQ(plan(merged(single, {{"TANDEM_RENDEZVOUS", "/shared/rdv"}})).where,
            "/mine/torchrun-abc-127.0.0.1-29500-r0");
  request.rendezvous.clear();
  // mpirun: MPI when available, else the folder.
  EXPECT_EQ(plan(kOmpi, true).kind, RendezvousKind::Mpi);
  EXPECT_EQ(plan(kOmpi, false).kind, RendezvousKind::File);
  EXPECT_EQ(plan(merged(kOmpi, {{"NCCL_COMM_ID", "h:1"}}), true).kind, RendezvousKind::NcclCommId);
}

TEST(Rendezvous, SeveralNodes) {
  LaunchRequest request;
  // torchrun across nodes: NCCL's bootstrap next to torchrun's store on the master.
  RendezvousPlan p = choose_rendezvous(detect(kTorchrun), request, map_environment(kTorchrun), false);
  EXPECT_EQ(p.kind, RendezvousKind::NcclCommId);
  EXPECT_EQ(p.where, "10.0.0.1:29501");
  EXPECT_TRUE(p.set_nccl_comm_id);
  // Slurm across nodes without a shared directory: an error that says what to do.
  const std::string why = error_of([&] { choose_rendezvous(detect(kSlurm), request, map_environment(kSlurm), false); });
  EXPECT_NE(why.find("several nodes"), std::string::npos) << why;
  EXPECT_NE(why.find("--rendezvous DIR"), std::string::npos);
  EXPECT_NE(why.find("NCCL_COMM_ID"), std::string::npos);
  request.rendezvous = "/shared";
  EXPECT_EQ(choose_rendezvous(detect(kSlurm), request, map_environment(kSlurm), false).where, "/shared/slurm-4242.0");
}

TEST(LaunchReport, JsonAndHeaderRecordTheLaunch) {
  RunInfo threads;
  threads.world_size = 2;
  const auto doc = to_json(threads, {}, {});
  EXPECT_EQ(doc["launch"], "threads");
  EXPECT_EQ(doc["world_size"], 2);
  EXPECT_FALSE(doc.contains("rendezvous"));
  EXPECT_EQ(header_text(threads).find("# launch"), std::string::npos);  // the default header is unchanged

  RunInfo mpi = threads;
  mpi.launch = "mpi";
  mpi.rendezvous = "mpi";
  const auto mdoc = to_json(mpi, {}, {});
  EXPECT_EQ(mdoc["launch"], "mpi");
  EXPECT_EQ(mdoc["rendezvous"], "mpi");
  EXPECT_NE(header_text(mpi).find("# launch    mpi: 2 ranks, one process each, rendezvous mpi\n"), std::string::npos)
      << header_text(mpi);
}

}  // namespace
}  // namespace tandem::bench
