// A stand-in for a program using NCCL, linked against the fake libnccl.so.2 (fake_nccl.h) and run
// with and without the interposer by tests/cpu/test_preload_nccl_hooks.cpp. It creates
// communicators every way NCCL offers, issues each collective in the cases the route decision
// tells apart, destroys them, and prints one JSON object: what each call returned, errno after it,
// and every call the fake NCCL received.
#include <link.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "client_steps.h"
#include "fake_nccl.h"

namespace {

using json = nlohmann::json;

using fake_nccl_client::step;
json& g_steps = fake_nccl_client::steps();

ncclConfig_t program_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.netName = "Socket";
  config.minCTAs = 2;
  config.cgaClusterSize = 4;
  return config;
}

// Whether the program's configuration is still as it made it: the fields the nccl-* settings touch, and two
// of its own (the interposer hands NCCL a copy and never writes the program's struct).
bool kept(const ncclConfig_t& now, const ncclConfig_t& made) {
  return now.minCTAs == made.minCTAs && now.maxCTAs == made.maxCTAs && now.cgaClusterSize == made.cgaClusterSize &&
         now.CTAPolicy == made.CTAPolicy && now.blocking == made.blocking && now.netName == made.netName &&
         now.size == made.size && now.version == made.version;
}

// The file of every loaded object whose name holds `part`: one libnccl.so.2 in the process, whatever
// the interposer loads.
json loaded_objects_named(const char* part) {
  json found = json::array();
  std::pair<const char*, json*> wanted(part, &found);
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        auto& list = *static_cast<std::pair<const char*, json*>*>(out);
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find(list.first) != std::string::npos) list.second->push_back(name);
        return 0;
      },
      &wanted);
  return found;
}

}  // namespace

int main() {
  int version = 0;
  ncclGetVersion(&version);
  ncclUniqueId id{};
  float send[64] = {}, recv[64] = {};

  ncclComm_t plain = nullptr, configured = nullptr, old_header = nullptr, garbage = nullptr, scalable = nullptr;
  step("init_rank", [&] { return ncclCommInitRank(&plain, 2, id, 0); });

  ncclConfig_t config = program_config();
  step("init_rank_config", [&] { return ncclCommInitRankConfig(&configured, 2, id, 1, &config); });
  g_steps["program_config_kept"] = kept(config, program_config());
  ncclResult_t state = ncclInternalError;
  ncclCommGetAsyncError(configured, &state);
  g_steps["state_before_ready"] = static_cast<int>(state);
  fake_nccl_finish_init(configured);
  ncclCommGetAsyncError(configured, &state);
  g_steps["state_when_ready"] = static_cast<int>(state);

  // A program built against the NCCL 2.17 header: its struct ends before splitShare.
  ncclConfig_t older = NCCL_CONFIG_INITIALIZER;
  older.size = offsetof(ncclConfig_t, splitShare);
  older.version = NCCL_VERSION(2, 17, 0);
  older.blocking = 1;
  older.cgaClusterSize = 2;
  const ncclConfig_t older_made = older;
  step("init_rank_config_2_17", [&] { return ncclCommInitRankConfig(&old_header, 2, id, 0, &older); });
  g_steps["program_config_2_17_kept"] = kept(older, older_made);

  ncclConfig_t not_initialised{};  // no NCCL_CONFIG_INITIALIZER: NCCL refuses it (the fake records it)
  step("init_rank_config_garbage", [&] { return ncclCommInitRankConfig(&garbage, 2, id, 0, &not_initialised); });

  ncclComm_t inherits = nullptr, split_configured = nullptr, none = reinterpret_cast<ncclComm_t>(&id);
  step("split_inherits", [&] { return ncclCommSplit(plain, 1, 0, &inherits, nullptr); });
  ncclConfig_t split_config = NCCL_CONFIG_INITIALIZER;
  split_config.blocking = 1;
  const ncclConfig_t split_made = split_config;
  step("split_configured", [&] { return ncclCommSplit(plain, 2, 0, &split_configured, &split_config); });
  g_steps["split_config_kept"] = kept(split_config, split_made);
  step("split_nocolor", [&] { return ncclCommSplit(plain, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr); });
  g_steps["split_nocolor_comm_null"] = none == nullptr;
  // Shrinks (PyTorch's shrink_group) are children as splits are.
  ncclComm_t shrunk_inherits = nullptr, shrunk_configured = nullptr;
  int excluded[1] = {1};
  step("shrink_inherits",
       [&] { return ncclCommShrink(plain, excluded, 1, &shrunk_inherits, nullptr, NCCL_SHRINK_DEFAULT); });
  ncclConfig_t shrink_config = NCCL_CONFIG_INITIALIZER;
  shrink_config.blocking = 1;
  const ncclConfig_t shrink_made = shrink_config;
  step("shrink_configured",
       [&] { return ncclCommShrink(plain, excluded, 1, &shrunk_configured, &shrink_config, NCCL_SHRINK_ABORT); });
  g_steps["shrink_config_kept"] = kept(shrink_config, shrink_made);

  ncclComm_t all[2] = {};
  step("init_all", [&] { return ncclCommInitAll(all, 2, nullptr); });
  step("init_rank_scalable", [&] { return ncclCommInitRankScalable(&scalable, 2, 1, 1, &id, nullptr); });
  // Splits without a configuration of parents the settings never reached: ncclCommInitAll's (unconfigured)
  // and one made without the hooks. NCCL copies the parent's configuration, so neither child is configured.
  ncclComm_t split_of_unconfigured = nullptr, split_of_unseen = nullptr;
  step("split_of_unconfigured", [&] { return ncclCommSplit(all[0], 3, 0, &split_of_unconfigured, nullptr); });
  ncclComm_t unseen_parent = fake_nccl_unseen_comm(2, 0);
  step("split_of_unseen", [&] { return ncclCommSplit(unseen_parent, 4, 0, &split_of_unseen, nullptr); });

  // Collectives on `plain` (2 ranks, rank 0). Buffers are never touched by the fake.
  step("all_reduce_bf16", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, plain, nullptr); });
  step("all_reduce_fp32_in_place", [&] { return ncclAllReduce(recv, recv, 8, ncclFloat32, ncclSum, plain, nullptr); });
  step("all_reduce_odd_count", [&] { return ncclAllReduce(send, recv, 7, ncclFloat16, ncclSum, plain, nullptr); });
  step("all_reduce_max", [&] { return ncclAllReduce(send, recv, 8, ncclFloat32, ncclMax, plain, nullptr); });
  step("all_reduce_fp64", [&] { return ncclAllReduce(send, recv, 8, ncclFloat64, ncclSum, plain, nullptr); });
  step(
      "all_reduce_failing",
      [&] { return ncclAllReduce(send, recv, kFakeNcclFailingCount, ncclFloat32, ncclSum, plain, nullptr); }, 0);
  step(
      "all_reduce_errno_kept", [&] { return ncclAllReduce(send, recv, 8, ncclFloat32, ncclSum, plain, nullptr); },
      1234);
  step("reduce_scatter_bf16", [&] { return ncclReduceScatter(send, recv, 4, ncclBfloat16, ncclSum, plain, nullptr); });
  // Rank 0's slice of the output is at its start: in place.
  step("all_gather_in_place", [&] { return ncclAllGather(recv, recv, 4, ncclFloat16, plain, nullptr); });
  step("all_to_all_in_place", [&] { return ncclAlltoAll(recv, recv, 4, ncclFloat32, plain, nullptr); });
  step("all_to_all", [&] { return ncclAlltoAll(send, recv, 4, ncclFloat32, plain, nullptr); });
  ncclComm_t unseen = fake_nccl_unseen_comm(2, 0);
  step("all_reduce_unseen_comm", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, unseen, nullptr); });
  step("all_reduce_non_blocking_comm",
       [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, configured, nullptr); });
  step("group_start", [&] { return ncclGroupStart(); });
  step("all_reduce_in_group", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, plain, nullptr); });
  step("group_end", [&] { return ncclGroupEnd(); });
  // What no route takes: a reduce to rank 1, a send and a failing receive, then both in a group.
  step("reduce_to_root", [&] { return ncclReduce(send, recv, 8, ncclFloat32, ncclSum, 1, plain, nullptr); });
  step("send", [&] { return ncclSend(send, 6, ncclBfloat16, 1, plain, nullptr); });
  step(
      "recv_failing", [&] { return ncclRecv(recv, kFakeNcclFailingCount, ncclFloat32, 1, plain, nullptr); }, 0);
  step("group_start_p2p", [&] { return ncclGroupStart(); });
  step("send_in_group", [&] { return ncclSend(send, 4, ncclFloat16, 1, plain, nullptr); });
  step("recv_in_group", [&] { return ncclRecv(recv, 4, ncclFloat16, 1, plain, nullptr); });
  step("group_end_p2p", [&] { return ncclGroupEnd(); });

  step("finalize", [&] { return ncclCommFinalize(plain); });
  step("destroy", [&] { return ncclCommDestroy(plain); });
  step("abort", [&] { return ncclCommAbort(configured); });
  for (ncclComm_t c : {old_header, garbage, inherits, split_configured, shrunk_inherits, shrunk_configured, all[0],
                       all[1], scalable, split_of_unconfigured, split_of_unseen})
    if (c) ncclCommDestroy(c);

  const json out = {{"version", version},
                    {"steps", g_steps},
                    {"calls", json::parse(fake_nccl_calls_json())},
                    {"nccl_objects", loaded_objects_named("libnccl")},
                    {"route_objects", loaded_objects_named("libtandem_nccl_route")}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
