// The file rendezvous between processes, with threads standing in for the ranks (it is file logic
// only), and the shared-GPU check.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ranks/file_rendezvous.h"
#include "ranks/gpu_identity.h"
#include "scratch_folder.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

namespace fs = std::filesystem;

class FileRendezvous : public ::testing::Test {
 protected:
  FileRendezvousOptions options(int rank, int world, double timeout = 10) const {
    FileRendezvousOptions o;
    o.dir = dir_;
    o.rank = rank;
    o.world_size = world;
    o.identity = "host" + std::to_string(rank) + "\tm\tbus" + std::to_string(rank) + "\tGPU-" + std::to_string(rank);
    o.timeout_s = timeout;
    o.poll_s = 0.002;
    return o;
  }

  struct Outcome {
    FileRendezvousResult result;
    std::string error;  // empty on success
  };

  // Runs ranks as threads; `setup(rank, options)` may change each rank's options.
  std::vector<Outcome> run(const std::vector<FileRendezvousOptions>& per_rank, const std::string& payload,
                           std::function<std::string(const std::vector<std::string>&)> verdict = nullptr) {
    std::vector<Outcome> out(per_rank.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < per_rank.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          out[i].result = file_rendezvous(per_rank[i], per_rank[i].rank == 0 ? payload : "", verdict);
        } catch (const Error& e) {
          out[i].error = e.what();
          if (out[i].error.empty()) out[i].error = "?";
        }
      });
    for (auto& t : threads) t.join();
    return out;
  }

  tandem_test::ScratchFolder scratch_;
  const std::string root_ = scratch_.str();
  const std::string dir_ = root_ + "/job";
};

// Binary, with a zero byte and a newline: the payload must travel unchanged.
const std::string kPayload = std::string("\x01\x00\n\xff id", 7);

TEST_F(FileRendezvous, EveryRankGetsThePayloadAndTheIdentities) {
  const auto out = run({options(2, 3), options(0, 3), options(1, 3)}, kPayload);
  for (const auto& o : out) {
    ASSERT_EQ(o.error, "");
    EXPECT_EQ(o.result.payload, kPayload);
    ASSERT_EQ(o.result.identities.size(), 3u);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(o.result.identities[r], options(r, 3).identity);
  }
  remove_rendezvous_files(dir_, 3);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(FileRendezvous, WorldOfOne) {
  const auto out = run({options(0, 1)}, kPayload);
  ASSERT_EQ(out[0].error, "");
  EXPECT_EQ(out[0].result.payload, kPayload);
}

TEST_F(FileRendezvous, MissingRanksAreNamedOnEveryRank) {
  const auto out = run({options(0, 4, 0.5), options(2, 4, 0.5)}, kPayload);
  EXPECT_NE(out[0].error.find("ranks 1 and 3 did not join the rendezvous in " + dir_), std::string::npos)
      << out[0].error;
  EXPECT_NE(out[0].error.find("within 0.5 s"), std::string::npos);
  // Rank 2 hears rank 0's verdict rather than timing out alone.
  EXPECT_NE(out[1].error.find("ranks 1 and 3 did not join"), std::string::npos) << out[1].error;
}

// A rank that joined before rank 0 waits a little longer than the time-out, so that rank 0's verdict (naming the
// ranks that are missing) reaches it rather than a time-out of its own: here rank 2 starts 0.3 s before rank 0,
// both with 0.5 s.
TEST_F(FileRendezvous, AnEarlyRankHearsRankZerosVerdict) {
  std::string error;
  std::thread early([&] {
    try {
      file_rendezvous(options(2, 4, 0.5), "", nullptr);
    } catch (const Error& e) {
      error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_THROW(file_rendezvous(options(0, 4, 0.5), kPayload, nullptr), Error);
  early.join();
  EXPECT_NE(error.find("rank 0 stopped the rendezvous: ranks 1 and 3 did not join"), std::string::npos) << error;
}

TEST_F(FileRendezvous, MissingRankZeroIsNamed) {
  auto o = options(1, 2, 0.3);
  o.hint = " (hint)";
  const auto out = run({o}, kPayload);
  EXPECT_NE(out[0].error.find("rank 1: rank 0 did not answer in " + dir_), std::string::npos) << out[0].error;
  EXPECT_NE(out[0].error.find("(hint)"), std::string::npos);
}

TEST_F(FileRendezvous, MismatchedWorldSizesFailEveryRank) {
  const auto out = run({options(0, 2), options(1, 3)}, kPayload);
  EXPECT_NE(out[0].error.find("rank 1 was started with a world size of 3 but rank 0 with 2"), std::string::npos)
      << out[0].error;
  EXPECT_NE(out[1].error.find("rank 1 was started with a world size of 3 but rank 0 with 2"), std::string::npos)
      << out[1].error;
}

TEST_F(FileRendezvous, SmallerWorldElsewhereEndsTheWait) {
  // Rank 0 thinks 3 ranks, rank 1 thinks 2: rank 0 would wait for rank 2, but rank 1's mismatch
  // ends the wait at once.
  const auto out = run({options(0, 3, 5), options(1, 2, 5)}, kPayload);
  EXPECT_NE(out[0].error.find("world size of 2 but rank 0 with 3"), std::string::npos) << out[0].error;
  EXPECT_NE(out[1].error.find("world size of 2 but rank 0 with 3"), std::string::npos) << out[1].error;
}

TEST_F(FileRendezvous, ALargerWorldElsewhereIsToldAtOnce) {
  // Rank 0 was started with 2 ranks, rank 2 with 3 (two launches mixed up): rank 2 lies beyond rank 0's
  // world, and rank 1 never comes. Both hear it within moments, not after the 10 s time-out: rank 0
  // names the rank that joined from a larger world, rank 2 the two world sizes.
  const auto start = std::chrono::steady_clock::now();
  const auto out = run({options(0, 2, 10), options(2, 3, 10)}, kPayload);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(out[0].error.find("rank 2 joined with a world size of 3 but rank 0 has 2"), std::string::npos)
      << out[0].error;
  EXPECT_NE(out[1].error.find("rank 2 was started with a world size of 3 but rank 0 with 2"), std::string::npos)
      << out[1].error;
  EXPECT_LT(seconds, 5.0);
  remove_rendezvous_files(dir_, 3);
  // With rank 1 there too, rank 2 is told the same at once; ranks 0 and 1, a complete world of 2, either
  // both stop naming rank 2 (its acknowledgement came first) or both go on.
  const auto all = run({options(0, 2, 10), options(1, 2, 10), options(2, 3, 10)}, kPayload);
  EXPECT_NE(all[2].error.find("rank 2 was started with a world size of 3 but rank 0 with 2"), std::string::npos)
      << all[2].error;
  EXPECT_EQ(all[0].error.empty(), all[1].error.empty()) << all[0].error << " / " << all[1].error;
  if (!all[0].error.empty()) {
    EXPECT_NE(all[0].error.find("rank 2 joined with a world size of 3"), std::string::npos) << all[0].error;
    EXPECT_NE(all[1].error.find("rank 2 joined with a world size of 3"), std::string::npos) << all[1].error;
  }
  const double both = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(both, 10.0);
}

TEST_F(FileRendezvous, NegativeVerdictReachesEveryRank) {
  const auto out = run({options(0, 2), options(1, 2)}, kPayload, [](const std::vector<std::string>& ids) {
    return ids.size() == 2 ? std::string("ranks 0 and 1 share a GPU") : std::string("wrong count");
  });
  EXPECT_NE(out[0].error.find("ranks 0 and 1 share a GPU"), std::string::npos) << out[0].error;
  EXPECT_NE(out[1].error.find("ranks 0 and 1 share a GPU"), std::string::npos) << out[1].error;
}

TEST_F(FileRendezvous, StaleFilesOfACrashedRunAreIgnored) {
  // A crashed earlier run left a finished rendezvous behind, with another payload: nobody may take it.
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << "tandem-rendezvous 1\n" << text;
  };
  write("id",
        "session old\nworld_size 2\nstatus ok\nmember 1 oldnonce\nidentity 0 a\tb\tc\td\nidentity 1 a\tb\tc\td\n"
        "payload 6f6c64\n");
  write("join.1", "rank 1\nworld_size 2\nnonce oldnonce\nidentity x\n");
  write("ack.1", "session old\nnonce oldnonce\nworld_size 2\n");
  write("join.5", "rank 5\nworld_size 9\nnonce gone\nidentity x\n");
  // Rank 1 starts first and sees only the stale files for a while.
  std::vector<FileRendezvousOptions> ranks{options(1, 2), options(0, 2)};
  std::vector<std::thread> threads;
  std::string payload1, error1, payload0, error0;
  threads.emplace_back([&] {
    try {
      payload1 = file_rendezvous(ranks[0], "", nullptr).payload;
    } catch (const Error& e) {
      error1 = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  threads.emplace_back([&] {
    try {
      payload0 = file_rendezvous(ranks[1], kPayload, nullptr).payload;
    } catch (const Error& e) {
      error0 = e.what();
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(error0, "");
  EXPECT_EQ(error1, "");
  EXPECT_EQ(payload0, kPayload);
  EXPECT_EQ(payload1, kPayload);
}

TEST_F(FileRendezvous, SeparateProcesses) {
  // Real processes, as the launchers start them: fork two children as ranks 1 and 2.
  std::vector<pid_t> children;
  for (int r = 1; r <= 2; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        const auto res = file_rendezvous(options(r, 3), "", nullptr);
        _exit(res.payload == kPayload && res.identities.size() == 3 ? 0 : 2);
      } catch (...) {
        _exit(3);
      }
    }
    children.push_back(pid);
  }
  const auto res = file_rendezvous(options(0, 3), kPayload, nullptr);
  EXPECT_EQ(res.identities.size(), 3u);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
}

TEST_F(FileRendezvous, BadRankIsRejected) { EXPECT_THROW(file_rendezvous(options(2, 2), "", nullptr), Error); }

GpuIdentity gpu(const std::string& host, const std::string& bus, const std::string& uuid) {
  return GpuIdentity{host, host + "/boot", bus, uuid};
}

// Another user on the machine must not be able to read the NCCL id or plant join files: a
// rendezvous folder that someone else prepared is refused, never used.
std::string only_rank_error(const FileRendezvousOptions& o) {
  try {
    file_rendezvous(o, "secret-nccl-id", nullptr);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(FileRendezvous, CreatesThePrivateFolderClosedToOthers) {
  const auto outcomes = run({options(0, 1)}, "payload");
  ASSERT_EQ(outcomes[0].error, "");
  struct stat st {};
  ASSERT_EQ(lstat(dir_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(FileRendezvous, FolderOpenToOthersIsRefused) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  const std::string error = only_rank_error(options(0, 1));
  EXPECT_NE(error.find("has mode 755"), std::string::npos) << error;
  EXPECT_NE(error.find(dir_), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir_ + "/id")) << "the NCCL id was written into a folder others can read";
}

TEST_F(FileRendezvous, FolderReadableByItsGroupIsRefused) {
  // Not open to everyone, but to every member of the user's group: the NCCL id is still exposed.
  for (const mode_t mode : {0750, 0740, 0710, 0720}) {
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
    ASSERT_EQ(chmod(dir_.c_str(), mode), 0);
    const std::string error = only_rank_error(options(0, 1));
    char octal[8];
    std::snprintf(octal, sizeof octal, "%03o", static_cast<unsigned>(mode));
    EXPECT_NE(error.find(std::string("has mode ") + octal), std::string::npos) << octal << ": " << error;
    EXPECT_FALSE(fs::exists(dir_ + "/id")) << octal << ": the NCCL id was written into a folder its group can read";
    fs::remove_all(dir_);
  }
}

TEST_F(FileRendezvous, SymbolicLinkInPlaceOfTheFolderIsRefused) {
  const std::string elsewhere = root_ + "/elsewhere";
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0700), 0);
  fs::create_directory_symlink(elsewhere, dir_);
  const std::string error = only_rank_error(options(0, 1));
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_empty(elsewhere)) << "a file was written through the link";
}

TEST_F(FileRendezvous, FolderOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user";
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
  ASSERT_EQ(chown(dir_.c_str(), 65534, 65534), 0);  // nobody
  const std::string error = only_rank_error(options(0, 1));
  EXPECT_NE(error.find("belongs to user id 65534"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir_ + "/id"));
}

TEST_F(FileRendezvous, FolderPlantedInsideASharedFolderIsRefused) {
  // /tmp/<shared, sticky>/<planted by another user, 0777>/job: the middle folder is refused even
  // though the leaf would be created private, since its owner could swap the leaf at will.
  const std::string shared = root_ + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  const std::string planted = shared + "/tandem-rendezvous";
  ASSERT_EQ(mkdir(planted.c_str(), 0700), 0);
  ASSERT_EQ(chmod(planted.c_str(), 0777), 0);
  FileRendezvousOptions o = options(0, 1);
  o.dir = planted + "/job";
  const std::string error = only_rank_error(o);
  EXPECT_NE(error.find("'" + planted + "' has mode 777"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(o.dir));
}

TEST_F(FileRendezvous, UserChosenFoldersAboveStayTheUsers) {
  // A group-readable project folder the user picked (not shared-writable) is fine; only the
  // rendezvous folder itself must be private.
  const std::string project = root_ + "/project";
  ASSERT_EQ(mkdir(project.c_str(), 0700), 0);
  ASSERT_EQ(chmod(project.c_str(), 0750), 0);
  FileRendezvousOptions o = options(0, 1);
  o.dir = project + "/rdv";
  EXPECT_EQ(only_rank_error(o), "");
}

TEST(SharedGpu, DistinctGpusPass) {
  EXPECT_EQ(shared_gpu_message({gpu("a", "0000:19:00.0", "GPU-1"), gpu("a", "0000:3b:00.0", "GPU-2")}), "");
  // Same bus id on two machines: two GPUs.
  EXPECT_EQ(shared_gpu_message({gpu("a", "0000:19:00.0", ""), gpu("b", "0000:19:00.0", "")}), "");
}

TEST(SharedGpu, SameGpuIsNamed) {
  const std::vector<GpuIdentity> ids = {gpu("a", "0000:19:00.0", "GPU-1"), gpu("a", "0000:3b:00.0", "GPU-2"),
                                        gpu("a", "0000:19:00.0", "GPU-1"), gpu("a", "0000:19:00.0", "GPU-1")};
  const auto groups = ranks_sharing_a_gpu(ids);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], (std::vector<int>{0, 2, 3}));
  const std::string m = shared_gpu_message(ids);
  EXPECT_NE(m.find("ranks 0, 2 and 3 share the GPU 0000:19:00.0 (GPU-1) on a"), std::string::npos) << m;
  EXPECT_NE(m.find("--allow-shared-gpu"), std::string::npos);
}

TEST(SharedGpu, UuidDecidesWhenKnownElseMachineAndBus) {
  // Containers on one machine: different host names, one boot id and GPU.
  GpuIdentity x = gpu("c1", "0000:19:00.0", ""), y = gpu("c2", "0000:19:00.0", "");
  x.machine = y.machine = "same-boot";
  EXPECT_EQ(ranks_sharing_a_gpu({x, y}).size(), 1u);
  x.uuid = "GPU-1";
  y.uuid = "GPU-2";
  EXPECT_TRUE(ranks_sharing_a_gpu({x, y}).empty());
}

TEST(SharedGpu, IdentityRoundTrips) {
  const GpuIdentity id = gpu("node-1", "0000:19:00.0", "GPU-abc");
  const GpuIdentity back = parse_gpu_identity(serialize(id));
  EXPECT_EQ(back.host, id.host);
  EXPECT_EQ(back.machine, id.machine);
  EXPECT_EQ(back.bus_id, id.bus_id);
  EXPECT_EQ(back.uuid, id.uuid);
  EXPECT_THROW(parse_gpu_identity("only-one-field"), Error);
  EXPECT_FALSE(this_machine().host.empty());
}

}  // namespace
}  // namespace tandem::bench
