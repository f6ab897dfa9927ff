// The NCCL hooks (hook_list.h, TANDEM_NCCL_HOOKS): communicator creation applies the policy's
// nccl-ctas / nccl-cga / nccl-cta-policy settings through ncclConfig_t; destruction forgets the
// communicator (and drops its copy-engine route); pre-multiplied sums are remembered with their
// scalar; ncclGroupStart/End are tracked per thread (nccl_thread_context.h); each collective is counted, calls and
// bytes, by the route it takes: under the `copy-engine` policy an eligible one runs on tandem's copy-engine route
// (nccl_copy_engine.h; inside a group, at the group's end), every other one is forwarded to NCCL with its arguments
// untouched; reduces, sends and receives are counted likewise and always forwarded.
//
// The route library's own NCCL calls come back through these hooks (our exported definitions are
// first in the global scope): while this thread is inside tandem (InsideTandem), every hook forwards
// straight to NCCL and counts nothing.
//
// The interposer neither links nor loads NCCL. These hooks are reached only after the program's
// NCCL is loaded (its calls bind to our exported definitions), and the real functions are found
// next after us then (real_symbols.cpp: RTLD_NEXT, else the loaded object that defines them, which
// covers a framework's libnccl.so.2 loaded RTLD_LOCAL). Helper functions (ncclCommCount,
// ncclGetVersion...) are taken from the very library the real function lives in (symbol_beside).
//
// Lookups by name follow the rules of every library hook (dlsym_hook.cpp, real_symbols.cpp
// adopt_real), so a program that finds NCCL by dlopen/dlsym is treated like one linked to it:
//   - dlsym(handle of libnccl.so.2, "ncclAllReduce"): our wrapper when that copy is the one the
//     wrappers forward to (the first NCCL loaded), that copy's own function otherwise (a second NCCL
//     in the process, e.g. the system's beside PyTorch's, is never routed through the first);
//   - dlsym(RTLD_DEFAULT, ...): our wrapper exactly when a real definition is visible to the caller,
//     NULL with glibc's own message otherwise (a process without NCCL sees no NCCL symbol);
//   - dlsym(RTLD_NEXT, ...) from a library after us: NCCL's own, as another interposer chaining to
//     the next definition expects.
// No NCCL symbol is looked up before the program calls a hooked function or looks one up itself.
//
// Settings through the configuration, not the environment: NCCL lets its environment variables
// override a communicator's configuration (init.cc, envConfigOverride: NCCL_MIN_CTAS, NCCL_MAX_CTAS,
// NCCL_CGA_CLUSTER_SIZE, NCCL_CTA_POLICY, NCCL_COMM_BLOCKING replace the config's values), so a user
// who sets one of those variables still wins over the policy, and `tandem run` no longer sets them.
//
// Nothing of ours escapes a hook: an exception from our own work (allocation) makes the hook forward
// the call unchanged. errno: NCCL is called with the program's errno and the program gets NCCL's
// (errno_for_caller.h), whatever our own work did before and after.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "errno_for_caller.h"
#include "hook_handlers.h"
#include "log.h"
#include "nccl_copy_engine.h"
#include "nccl_group_result.h"
#include "nccl_settings.h"
#include "nccl_thread_context.h"
#include "runtime.h"
#include "stats.h"
#include "tandem/collective.h"
#include "tandem/dtype.h"
#include "tandem/enum_table.h"
#include "tandem/nccl_config.h"
#include "tandem/policy_tokens.h"
#include "timeline_session.h"

namespace tandem::preload {
namespace {

// The real call, with errno as the program left it before, and errno as NCCL leaves it recorded
// for the program (our work after the call may change errno; the wrapper puts NCCL's back).
template <class Call>
ncclResult_t as_program(int program_errno, const Call& call) {
  errno = program_errno;
  const ncclResult_t result = call();
  keep_errno_of_real_call();
  return result;
}

// ---- NCCL's own helpers, from the library that defines the real creation functions --------------

using CommQuery = ncclResult_t (*)(const ncclComm_t, int*);
using AsyncError = ncclResult_t (*)(ncclComm_t, ncclResult_t*);

// The communicator's size, rank and device, or nranks == 0 while it is not ready. Asked at the first
// collective on it, never at creation: a communicator created inside the program's
// ncclGroupStart/End is not initialised before ncclGroupEnd (its size is not there yet), and a
// non-blocking one is not either until NCCL says so; asking NCCL's size queries then would make it
// print a warning, and ncclCommGetAsyncError on a ready communicator completes the group job linked
// to it, which is the program's to wait for. At its first collective the program itself holds the
// communicator ready (NCCL's contract), so the queries change nothing.
CommunicatorInfo describe(ncclComm_t comm, Hook sibling) {
  static std::atomic<void*> async_error{nullptr}, count{nullptr}, rank{nullptr}, device{nullptr};
  CommunicatorInfo info;
  const auto get_error = function_beside<AsyncError>(async_error, sibling, "ncclCommGetAsyncError");
  ncclResult_t state = ncclInternalError;
  if (!get_error || get_error(comm, &state) != ncclSuccess || state != ncclSuccess) return info;
  const auto get_count = function_beside<CommQuery>(count, sibling, "ncclCommCount");
  const auto get_rank = function_beside<CommQuery>(rank, sibling, "ncclCommUserRank");
  const auto get_device = function_beside<CommQuery>(device, sibling, "ncclCommCuDevice");
  int n = 0, r = -1, d = -1;
  if (!get_count || get_count(comm, &n) != ncclSuccess) return info;
  if (get_rank) (void)get_rank(comm, &r);
  if (get_device) (void)get_device(comm, &d);
  info.nranks = n;
  info.rank = r;
  info.cuda_device = d;
  return info;
}

// ---- creation ------------------------------------------------------------------------------------

struct Settings {
  OverlapPolicy policy;  // communicator_settings() of the interposer's policy
  std::string text;      // "" when the policy names none
};

Settings settings() {
  Settings s;
  s.policy = communicator_settings(runtime().config.policy);
  if (!uses_default_nccl_settings(s.policy)) s.text = to_string(s.policy);
  return s;
}

void warn_once(std::atomic<bool>& said, const char* format, const char* what) {
  if (!said.exchange(true, std::memory_order_relaxed)) log(LogLevel::Warn, format, what);
}

// What every creation hook does once NCCL answered: remember the communicators it made.
// `applied` is the settings text when they were applied, "" otherwise. `non_blocking`: by NCCL's rule
// on the configuration NCCL got (is_non_blocking); a creation NCCL answered ncclInProgress is too.
void created(ncclResult_t result, ncclComm_t* comms, int n, const std::string& applied, bool settings_wanted,
             bool non_blocking) {
  if ((result != ncclSuccess && result != ncclInProgress) || !comms) return;
  for (int i = 0; i < n; ++i) {
    if (!comms[i]) continue;  // ncclCommSplit with NCCL_SPLIT_NOCOLOR makes none
    CommunicatorInfo info;    // size and rank: at the first collective (describe)
    info.settings = applied;
    info.non_blocking = non_blocking || result == ncclInProgress;
    runtime().communicators.add(comms[i], std::move(info));
    Counters::bump(counters().communicators_created);
    if (!applied.empty())
      Counters::bump(counters().communicators_configured);
    else if (settings_wanted)
      Counters::bump(counters().communicators_unconfigured);
  }
}

// A hooked NCCL function whose real definition cannot be found: cannot happen while the program's
// call bound to us because its NCCL is loaded, but the hook must answer something.
ncclResult_t missing(const char* name) {
  static std::atomic<bool> said{false};
  warn_once(said, "%s: NCCL's own definition not found in this process", name);
  return ncclInternalError;
}

// Straight to NCCL's real function, uncounted: tandem's own NCCL work (the copy-engine route), and a
// held call handed back to NCCL.
template <class Fn, class... Args>
ncclResult_t tandem_call(Fn real, const char* name, Args... args) {
  return real ? real(args...) : missing(name);
}

// Every NCCL hook begins so: tandem's own calls (the route's, a held call handed back) go straight to
// NCCL uncounted; the program's call is counted under its hook, its errno kept in `program_errno`
// (NCCL's answer is given to it with that errno, as_program), and `real` is NCCL's own function. A
// macro, because it returns from the hook. `...`: the hook's arguments, for tandem's own call.
#define TANDEM_NCCL_HOOK_BEGIN(name, ...)                                       \
  if (inside_tandem()) return tandem_call(real_##name(), #name, ##__VA_ARGS__); \
  const int program_errno = errno;                                              \
  Counters::bump(counters().calls_by_hook[index_of(Hook::name)]);               \
  const auto real = real_##name();                                              \
  if (!real) return missing(#name)

// NCCL reads only the configuration fields of its own version and ignores the rest: say once when
// the process's NCCL is too old for a setting, rather than let it vanish.
void warn_if_nccl_lacks(const OverlapPolicy& settings, Hook via) {
  static std::atomic<bool> checked{false};
  if (checked.exchange(true, std::memory_order_relaxed)) return;
  static std::atomic<void*> get_version{nullptr};
  const auto version_of = function_beside<ncclResult_t (*)(int*)>(get_version, via, "ncclGetVersion");
  int version = 0;
  if (!version_of || version_of(&version) != ncclSuccess) return;
  // The first NCCL of each field and value is the token table's (NcclField); one line per token.
  std::string warned;
  for (const NcclFieldValue& v : nccl_field_values(settings, NcclScope::Program)) {
    const int needed = v.field->min_version_for(v.value);
    // The keyword, or the whole token where only its value is too new (nccl-cta-policy:zero on 2.27).
    const std::string token = needed == v.field->min_version ? std::string(v.token->keyword) : v.token->print(settings);
    if (version >= needed || warned.find("|" + token + "|") != std::string::npos) continue;
    warned += "|" + token + "|";
    log(LogLevel::Warn, "%s needs NCCL %s or later; this process's NCCL is %d.%d.%d: not applied", token.c_str(),
        nccl_version_text(needed).c_str(), version / 10000, version / 100 % 100, version % 100);
  }
}

// The creation paths that take a configuration. `call(config)` calls the real function with the
// configuration to use; `program` is the program's own (may be null).
template <class Call>
ncclResult_t create_with_settings(int program_errno, ncclComm_t* comm, Hook via, ncclConfig_t* program,
                                  const Call& call) {
  Settings s;
  std::optional<OverlaidConfig> config;
  try {
    s = settings();
    if (!s.text.empty()) {
      warn_if_nccl_lacks(s.policy, via);
      config = overlay_config(s.policy, program);
    }
  } catch (...) {
    config.reset();
  }
  if (!s.text.empty() && !config) {
    static std::atomic<bool> said{false};
    warn_once(said,
              "%s: the program's ncclConfig_t is not one NCCL_CONFIG_INITIALIZER made; nccl-* settings not "
              "applied to it",
              name_of(via));
  }
  ncclConfig_t* used = config ? config->get() : program;
  const ncclResult_t result = as_program(program_errno, [&] { return call(used); });
  try {
    created(result, comm, 1, config ? s.text : std::string(), !s.text.empty(),
            is_non_blocking(used, runtime().config.nccl_comm_blocking));
  } catch (...) {
  }
  return result;
}

}  // namespace

ncclResult_t handle_ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank,
                                           ncclConfig_t* config) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommInitRankConfig, comm, nranks, comm_id, rank, config);
  return create_with_settings(program_errno, comm, Hook::ncclCommInitRankConfig, config,
                              [&](ncclConfig_t* c) { return real(comm, nranks, comm_id, rank, c); });
}

// ncclCommInitRank is ncclCommInitRankConfig with NCCL_CONFIG_INITIALIZER in NCCL itself (init.cc),
// blocking left undefined so that NCCL_COMM_BLOCKING decides as it does there: calling the latter
// with that initializer under our settings keeps the program's semantics. Without settings the
// program's call goes to ncclCommInitRank itself.
ncclResult_t handle_ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommInitRank, comm, nranks, comm_id, rank);
  bool wanted = false;
  try {
    wanted = !settings().text.empty();
  } catch (...) {
  }
  static std::atomic<void*> with_config{nullptr};
  const auto configured =
      wanted ? function_beside<ncclCommInitRankConfig_fn>(with_config, Hook::ncclCommInitRank, "ncclCommInitRankConfig")
             : nullptr;
  if (configured)
    return create_with_settings(program_errno, comm, Hook::ncclCommInitRank, nullptr,
                                [&](ncclConfig_t* c) { return configured(comm, nranks, comm_id, rank, c); });
  const ncclResult_t result = as_program(program_errno, [&] { return real(comm, nranks, comm_id, rank); });
  try {
    created(result, comm, 1, "", wanted, is_non_blocking(nullptr, runtime().config.nccl_comm_blocking));
  } catch (...) {
  }
  return result;
}

ncclResult_t handle_ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int n_ids, ncclUniqueId* comm_ids,
                                             ncclConfig_t* config) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommInitRankScalable, comm, nranks, rank, n_ids, comm_ids, config);
  return create_with_settings(program_errno, comm, Hook::ncclCommInitRankScalable, config,
                              [&](ncclConfig_t* c) { return real(comm, nranks, rank, n_ids, comm_ids, c); });
}

// ncclCommInitAll takes no configuration and creates its communicators on several devices inside
// NCCL; rebuilding it from ncclCommInitRankConfig would need the interposer to switch devices. Its
// communicators are counted as left unconfigured, and the user is told once.
ncclResult_t handle_ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommInitAll, comms, ndev, devlist);
  const ncclResult_t result = as_program(program_errno, [&] { return real(comms, ndev, devlist); });
  try {
    const Settings s = settings();
    if (!s.text.empty()) {
      static std::atomic<bool> said{false};
      warn_once(said,
                "ncclCommInitAll takes no ncclConfig_t: %s not applied to its communicators (create them "
                "with ncclCommInitRank or ncclCommInitRankConfig instead)",
                s.text.c_str());
    }
    created(result, comms, ndev, "", !s.text.empty(), is_non_blocking(nullptr, runtime().config.nccl_comm_blocking));
  } catch (...) {
  }
  return result;
}

// A child of a communicator (ncclCommSplit, ncclCommShrink). With a configuration, the settings are
// written over it. Without one NCCL copies the parent's configuration (init.cc, ncclCommInitChildComm),
// which already carries the settings when the parent was created through these hooks: the call goes
// through unchanged then, and the child is counted as configured exactly when its parent was.
namespace {

template <class Create>
ncclResult_t create_child(int program_errno, ncclComm_t parent_comm, ncclComm_t* newcomm, Hook via,
                          ncclConfig_t* config, const Create& create) {
  if (config) return create_with_settings(program_errno, newcomm, via, config, create);
  const ncclResult_t result = as_program(program_errno, [&] { return create(nullptr); });
  try {
    const Settings s = settings();
    const auto parent = runtime().communicators.find(parent_comm);
    const std::string inherited = parent ? parent->settings : std::string();
    // NCCL copies the parent's configuration, `blocking` included (an unseen parent: unknown, so
    // taken as non-blocking, which only ever leaves a group to NCCL).
    created(result, newcomm, 1, inherited, !s.text.empty(),
            is_non_blocking(nullptr, runtime().config.nccl_comm_blocking, parent ? parent->non_blocking : true));
  } catch (...) {
  }
  return result;
}

}  // namespace

ncclResult_t handle_ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommSplit, comm, color, key, newcomm, config);
  return create_child(program_errno, comm, newcomm, Hook::ncclCommSplit, config,
                      [&](ncclConfig_t* c) { return real(comm, color, key, newcomm, c); });
}

// PyTorch's shrink_group (NCCL 2.27+): the communicator without the excluded ranks.
ncclResult_t handle_ncclCommShrink(ncclComm_t comm, int* exclude_ranks, int exclude_count, ncclComm_t* newcomm,
                                   ncclConfig_t* config, int shrink_flags) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommShrink, comm, exclude_ranks, exclude_count, newcomm, config, shrink_flags);
  return create_child(program_errno, comm, newcomm, Hook::ncclCommShrink, config, [&](ncclConfig_t* c) {
    return real(comm, exclude_ranks, exclude_count, newcomm, c, shrink_flags);
  });
}

// ---- destruction ---------------------------------------------------------------------------------

namespace {
// Forgotten before NCCL frees it: once freed, NCCL may hand the same address to a new communicator.
void forget(ncclComm_t comm) {
  try {
    Runtime* rt = runtime_if_initialized();
    if (!rt || !comm || !rt->communicators.find(comm)) return;
    rt->communicators.remove(comm);
    Counters::bump(counters().communicators_destroyed);
  } catch (...) {
  }
}
}  // namespace

// Finalize flushes a communicator; it stays usable for destroy only, so it stays known.
ncclResult_t handle_ncclCommFinalize(ncclComm_t comm) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommFinalize, comm);
  return as_program(program_errno, [&] { return real(comm); });
}

ncclResult_t handle_ncclCommDestroy(ncclComm_t comm) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommDestroy, comm);
  drop_copy_engine_route(comm, true);
  forget(comm);
  return as_program(program_errno, [&] { return real(comm); });
}

ncclResult_t handle_ncclCommAbort(ncclComm_t comm) {
  TANDEM_NCCL_HOOK_BEGIN(ncclCommAbort, comm);
  drop_copy_engine_route(comm, false);
  forget(comm);
  return as_program(program_errno, [&] { return real(comm); });
}

// ---- pre-multiplied sums --------------------------------------------------------------------------

namespace {

// A host scalar's value, read as NCCL reads it: an element of the op's type (the route adds bf16,
// fp16 and fp32 only; another type's value is not needed).
float scalar_value(const void* scalar, ncclDataType_t dtype) {
  if (!scalar) return 1;
  switch (dtype) {
    case ncclFloat32: {
      float v = 0;
      std::memcpy(&v, scalar, sizeof v);
      return v;
    }
    case ncclFloat16: {
      __half v;
      std::memcpy(&v, scalar, sizeof v);
      return __half2float(v);
    }
    case ncclBfloat16: {
      __nv_bfloat16 v;
      std::memcpy(&v, scalar, sizeof v);
      return __bfloat162float(v);
    }
    default:
      return 1;
  }
}

}  // namespace

// NCCL makes the op (a value private to `comm`); the interposer remembers its scalar so that the
// copy-engine route can compute it. A host scalar is read now, as NCCL reads it now
// (ncclScalarHostImmediate); a device scalar stays where it is, read when the route's kernel runs.
ncclResult_t handle_ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                             ncclScalarResidence_t residence, ncclComm_t comm) {
  TANDEM_NCCL_HOOK_BEGIN(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
  const ncclResult_t result = as_program(program_errno, [&] { return real(op, scalar, datatype, residence, comm); });
  try {
    if (result == ncclSuccess && op) {
      PreMulSumScalar s;
      s.dtype = static_cast<int>(datatype);
      if (residence == ncclScalarDevice)
        s.device_value = scalar;
      else
        s.host_value = scalar_value(scalar, datatype);
      runtime().communicators.add_pre_mul_sum(comm, static_cast<int>(*op), s);
    }
  } catch (...) {
  }
  return result;
}

ncclResult_t handle_ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  TANDEM_NCCL_HOOK_BEGIN(ncclRedOpDestroy, op, comm);
  try {
    // Forgotten first: NCCL may hand the same value to the next op made on this communicator.
    if (Runtime* rt = runtime_if_initialized()) rt->communicators.remove_pre_mul_sum(comm, static_cast<int>(op));
  } catch (...) {
  }
  return as_program(program_errno, [&] { return real(op, comm); });
}

// ---- collectives ---------------------------------------------------------------------------------

namespace {

// One collective call as the route sees it, with what the decision found out about the communicator.
struct Decision {
  RouteOutcome outcome = RouteOutcome::NotRequested;
  uint64_t bytes = 0;
  int device = -1;  // the communicator's
  CopyEngineCall call;
};

// The library's rule (tandem/copy_engine_eligibility.h) on the call and what the interposer knows of
// the communicator. Never throws; a communicator's size is asked at the first collective on it
// (describe).
Decision decide(Collective kind, const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                int root, ncclComm_t comm, cudaStream_t stream, Hook via) {
  Decision d;
  d.call.kind = kind;
  d.call.send = send;
  d.call.recv = recv;
  d.call.count = count;
  d.call.dtype = type;
  d.call.scalar = 1;
  d.call.root = root;
  d.call.stream = stream;
  int nranks = 0;
  try {
    Runtime& rt = runtime();
    auto info = rt.communicators.find(comm);
    if (info && info->nranks == 0) {
      const CommunicatorInfo now = describe(comm, via);
      if (now.nranks > 0) rt.communicators.update(comm, now);
      info->nranks = now.nranks;
      info->rank = now.rank;
      info->cuda_device = now.cuda_device;  // this call's, for its group (take_held_for_nccl)
    }
    if (info) {
      nranks = info->nranks;
      d.device = info->cuda_device;
    }
    if (reduces(kind)) {
      const PreMulSumScalar* premul = nullptr;
      if (info) {
        const auto it = info->pre_mul_sums.find(static_cast<int>(op));
        if (it != info->pre_mul_sums.end()) premul = &it->second;
      }
      d.call.reduction = reduction_of(static_cast<int>(op), premul != nullptr);
      if (premul) {
        d.call.scalar = premul->host_value;
        d.call.device_scalar = premul->device_value;
      }
    }
    RouteFacts facts;
    facts.requested = rt.config.policy.copy_engine;
    if (facts.requested) {
      const RouteState state = route_state(comm);
      facts.unavailable = state.unavailable;
      facts.failed = state.failed;
    }
    d.outcome = decide_route(route_request(d.call, nranks, info ? info->rank : 0), facts);
    // What only the route knows (a capture that finds it not set up): asked of it last.
    if (d.outcome == RouteOutcome::CopyEngine) d.outcome = check_copy_engine_route(comm, d.call);
  } catch (...) {
    d.outcome = RouteOutcome::NotRequested;
  }
  d.bytes = collective_bytes(kind, count, nranks, nccl_type_bytes(type));
  return d;
}

// One collective hook: the route decision, the copy-engine route when it is chosen (held until the
// group's end inside a group), else NCCL (`forward`). The route's failure partway reaches the program
// as an NCCL error (logged by the route).
// `op` is read for reductions, `root` for broadcasts.
template <class Forward>
ncclResult_t collective(int program_errno, Collective kind, Hook via, const void* send, void* recv, size_t count,
                        ncclDataType_t type, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                        const Forward& forward) {
  const CommunicationRegion region;  // the collective's copies count as communication (timeline_session.h)
  const Decision d = decide(kind, send, recv, count, type, op, root, comm, stream, via);
  if (d.outcome == RouteOutcome::CopyEngine) {
    ncclResult_t result = ncclSuccess;
    if (inside_group()) {
      defer_grouped({comm, d.call, d.bytes, d.device, op});  // counted at the group's end
    } else {
      const RouteAttempt attempt = run_copy_engine_route(comm, d.call);
      counters().count_collective(kind, attempt.outcome, d.bytes);
      result = attempt.error;
    }
    errno = program_errno;  // NCCL was not called for the program: its errno stays
    return result;
  }
  if (inside_group()) note_grouped_for_nccl(comm);
  counters().count_collective(kind, d.outcome, d.bytes);
  return as_program(program_errno, forward);
}

}  // namespace

// The program's groups (nccl_copy_engine.h): counted after NCCL accepted the start, so a failed start
// opens none; the routed calls of the group run at its outermost end, after NCCL's part.
ncclResult_t handle_ncclGroupStart() {
  TANDEM_NCCL_HOOK_BEGIN(ncclGroupStart);
  const ncclResult_t result = as_program(program_errno, [&] { return real(); });
  if (result == ncclSuccess || result == ncclInProgress) group_started();
  return result;
}

namespace {

// A held call handed to NCCL inside the program's still open group, as the program issued it: each
// kind's NCCL call, in Collective's order, with the program's arguments (its op for a reduction, its
// root for a broadcast), straight to NCCL (tandem_call).
using ForwardHeld = ncclResult_t (*)(const HeldCall&);
constexpr ForwardHeld kForwardHeld[] = {
    [](const HeldCall& h) {
      const CopyEngineCall& c = h.call;
      return tandem_call(real_ncclAllReduce(), "ncclAllReduce", c.send, c.recv, c.count, c.dtype, h.op, h.comm,
                         c.stream);
    },
    [](const HeldCall& h) {
      const CopyEngineCall& c = h.call;
      return tandem_call(real_ncclReduceScatter(), "ncclReduceScatter", c.send, c.recv, c.count, c.dtype, h.op, h.comm,
                         c.stream);
    },
    [](const HeldCall& h) {
      const CopyEngineCall& c = h.call;
      return tandem_call(real_ncclAllGather(), "ncclAllGather", c.send, c.recv, c.count, c.dtype, h.comm, c.stream);
    },
    [](const HeldCall& h) {
      const CopyEngineCall& c = h.call;
      return tandem_call(real_ncclAlltoAll(), "ncclAlltoAll", c.send, c.recv, c.count, c.dtype, h.comm, c.stream);
    },
    [](const HeldCall& h) {
      const CopyEngineCall& c = h.call;
      return tandem_call(real_ncclBroadcast(), "ncclBroadcast", c.send, c.recv, c.count, c.dtype, c.root, h.comm,
                         c.stream);
    },
};
static_assert(covers(kForwardHeld, Collective::Broadcast), "one NCCL call per Collective");

ncclResult_t forward_held(const HeldCall& h) { return table_entry(kForwardHeld, h.call.kind)(h); }

}  // namespace

// NCCL closes the group level whatever ncclGroupEnd returns (an error ends the group too). At the
// outermost end, held calls on a communicator destroyed inside the group are dropped, and a group the
// route cannot take (several devices, a non-blocking NCCL part) gets its held calls back first
// (take_held_for_nccl).
ncclResult_t handle_ncclGroupEnd() {
  TANDEM_NCCL_HOOK_BEGIN(ncclGroupEnd);
  const bool outermost = group_ended();
  // The group's collectives, NCCL's and the route's, are issued here (timeline_session.h).
  const CommunicationRegion region;
  ncclResult_t forwarded = ncclSuccess;
  if (outermost) {
    const HandedBack back = take_held_for_nccl();
    for (const HeldCall& h : back.calls) {
      const ncclResult_t r = forward_held(h);
      if (forwarded == ncclSuccess) forwarded = r;
      counters().count_collective(h.call.kind, back.why, h.bytes);
    }
  }
  const ncclResult_t result = as_program(program_errno, [&] { return real(); });
  if (!outermost) return result;
  const int nccl_errno = errno;
  const ncclResult_t routed = finish_group(result);
  errno = nccl_errno;
  // A forwarded call NCCL refused would have failed at the call in the program's eyes; it reports at the end.
  return static_cast<ncclResult_t>(group_end_result(result, routed, forwarded));
}

ncclResult_t handle_ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
  return collective(program_errno, Collective::AllReduce, Hook::ncclAllReduce, sendbuff, recvbuff, count, datatype, op,
                    0, comm, stream, [&] { return real(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

ncclResult_t handle_ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  return collective(program_errno, Collective::ReduceScatter, Hook::ncclReduceScatter, sendbuff, recvbuff, recvcount,
                    datatype, op, 0, comm, stream,
                    [&] { return real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

ncclResult_t handle_ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
  return collective(program_errno, Collective::AllGather, Hook::ncclAllGather, sendbuff, recvbuff, sendcount, datatype,
                    ncclSum, 0, comm, stream,
                    [&] { return real(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

ncclResult_t handle_ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclAlltoAll, sendbuff, recvbuff, count, datatype, comm, stream);
  return collective(program_errno, Collective::AllToAll, Hook::ncclAlltoAll, sendbuff, recvbuff, count, datatype,
                    ncclSum, 0, comm, stream, [&] { return real(sendbuff, recvbuff, count, datatype, comm, stream); });
}

// Broadcasts (DDP broadcasts its parameters and buffers through them, Megatron its batches) take the
// route like the others. ncclBcast is NCCL's older in-place form; should NCCL reach its own
// ncclBroadcast through this library's hook from it, the call is not counted twice.
ncclResult_t handle_ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return collective(program_errno, Collective::Broadcast, Hook::ncclBroadcast, sendbuff, recvbuff, count, datatype,
                    ncclSum, root, comm, stream,
                    [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

ncclResult_t handle_ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                              cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclBcast, buff, count, datatype, root, comm, stream);
  return collective(program_errno, Collective::Broadcast, Hook::ncclBcast, buff, buff, count, datatype, ncclSum, root,
                    comm, stream, [&] {
                      const InsideTandem nested;  // NCCL's own ncclBroadcast call, if it reaches the hook
                      return real(buff, count, datatype, root, comm, stream);
                    });
}

// Reduces, sends and receives (pipeline parallelism's activations, a gather done as sends) go to NCCL
// as the program made them: the copy-engine route takes none of them. They are counted, calls and
// bytes, so that the summary shows the traffic the route leaves alone; `priority` and the nccl-*
// settings still reach their kernels and communicators. Inside a group NCCL holds them, as it holds
// every call that was not routed.
namespace {

template <class Forward>
ncclResult_t not_routed(int program_errno, Hook via, size_t count, ncclDataType_t type, ncclComm_t comm,
                        const Forward& forward) {
  const CommunicationRegion region;  // their copies count as communication (timeline_session.h)
  if (inside_group()) note_grouped_for_nccl(comm);
  counters().count_not_routed(via, saturating_product(count, nccl_type_bytes(type)));
  return as_program(program_errno, forward);
}

}  // namespace

ncclResult_t handle_ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  return not_routed(program_errno, Hook::ncclReduce, count, datatype, comm,
                    [&] { return real(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

ncclResult_t handle_ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                             cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclSend, sendbuff, count, datatype, peer, comm, stream);
  return not_routed(program_errno, Hook::ncclSend, count, datatype, comm,
                    [&] { return real(sendbuff, count, datatype, peer, comm, stream); });
}

ncclResult_t handle_ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                             cudaStream_t stream) {
  TANDEM_NCCL_HOOK_BEGIN(ncclRecv, recvbuff, count, datatype, peer, comm, stream);
  return not_routed(program_errno, Hook::ncclRecv, count, datatype, comm,
                    [&] { return real(recvbuff, count, datatype, peer, comm, stream); });
}

}  // namespace tandem::preload
