// One rank of an unmodified NCCL program (one process a rank; ranks may share a GPU when each has its
// own NCCL_HOSTID) that issues every kind of call the copy-engine route behind `tandem run --policy
// copy-engine` takes: all-reduce and reduce-scatter with sum, average and pre-multiplied sums (host
// and device scalars, a different scalar on each rank), all-gather, all-to-all and broadcast (from the
// first and the last rank; in place through ncclBcast) of several types;
// counts of 1, a prime, a multiple of the ranks and one that does not split; out of place and in
// place; eagerly, inside ncclGroupStart/End, and captured into a CUDA graph that replays three times
// on fresh inputs; and a group of several collectives. Each result is compared on the host with the
// route's numerics (each term multiplied by the scalar in fp32, the terms summed in rank order in
// fp32, rounded once to the element type: tandem::SumScale), which must hold bitwise under the
// route, and with a bound on NCCL's own rounding (partial sums rounded to the element type at each
// step of its ring), which NCCL's results must hold. At 2 ranks NCCL's results are bitwise the
// route's numerics too.
//
//   nccl_route_matrix RANK NRANKS ID_FILE
//
// Rank 0 writes NCCL's unique id to ID_FILE (atomically), the others wait for it. Prints one JSON
// object per rank on stdout: the cases run, those not bitwise equal to the route's numerics
// ("inexact"), those outside NCCL's bound ("wrong"). Exit status 0 when every case is within the bound.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "nccl_route_matrix: %s\n", what.c_str());
  std::exit(2);
}
void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) fail(what + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess) fail(what + ": " + ncclGetErrorString(r));
}

struct Type {
  ncclDataType_t nccl;
  const char* name;
  size_t bytes;
  double epsilon;  // unit roundoff of the type (floating point); 0 for integers
};
const Type kBf16{ncclBfloat16, "bf16", 2, 1.0 / 256}, kFp16{ncclFloat16, "fp16", 2, 1.0 / 2048},
    kFp32{ncclFloat32, "fp32", 4, 1.0 / 16777216}, kInt64{ncclInt64, "int64", 8, 0}, kUint8{ncclUint8, "uint8", 1, 0};

// A float rounded to the type and back (the type's value).
float round_to(const Type& t, float v) {
  if (t.nccl == ncclBfloat16) return __bfloat162float(__float2bfloat16_rn(v));
  if (t.nccl == ncclFloat16) return __half2float(__float2half_rn(v));
  return v;
}

void store(const Type& t, float v, unsigned char* p) {
  if (t.nccl == ncclBfloat16) {
    const __nv_bfloat16 x = __float2bfloat16_rn(v);
    std::memcpy(p, &x, 2);
  } else if (t.nccl == ncclFloat16) {
    const __half x = __float2half_rn(v);
    std::memcpy(p, &x, 2);
  } else {
    std::memcpy(p, &v, 4);
  }
}

float load(const Type& t, const unsigned char* p) {
  if (t.nccl == ncclBfloat16) {
    __nv_bfloat16 x;
    std::memcpy(&x, p, 2);
    return __bfloat162float(x);
  }
  if (t.nccl == ncclFloat16) {
    __half x;
    std::memcpy(&x, p, 2);
    return __half2float(x);
  }
  float x;
  std::memcpy(&x, p, 4);
  return x;
}

enum class Kind { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast };
enum class Op { Sum, Avg, PreMulHost, PreMulDevice };
enum class Mode { Eager, Grouped, Captured };
const char* name_of(Kind k) {
  return k == Kind::AllReduce       ? "all_reduce"
         : k == Kind::ReduceScatter ? "reduce_scatter"
         : k == Kind::AllGather     ? "all_gather"
         : k == Kind::AllToAll      ? "all_to_all"
                                    : "broadcast";
}
const char* name_of(Op o) {
  return o == Op::Sum ? "sum" : o == Op::Avg ? "avg" : o == Op::PreMulHost ? "premul_host" : "premul_device";
}
const char* name_of(Mode m) { return m == Mode::Eager ? "eager" : m == Mode::Grouped ? "grouped" : "captured"; }

struct Case {
  Kind kind;
  Op op;
  Type type;
  size_t count;  // NCCL's count for the kind
  bool in_place;
  Mode mode;
  std::string name;
  int root = 0;  // broadcast
};

int g_rank = 0, g_nranks = 1;

size_t send_elements(const Case& c) {
  return c.kind == Kind::ReduceScatter || c.kind == Kind::AllToAll ? c.count * size_t(g_nranks) : c.count;
}
size_t recv_elements(const Case& c) {
  return c.kind == Kind::AllGather || c.kind == Kind::AllToAll ? c.count * size_t(g_nranks) : c.count;
}
bool reduces(const Case& c) { return c.kind == Kind::AllReduce || c.kind == Kind::ReduceScatter; }

// The scalar of a pre-multiplied sum (the same on every rank, as PyTorch makes it: NCCL's results
// with different scalars per rank are not each rank's input times its own scalar), and the
// average's, as a value of the type.
float scalar_of(const Case& c, int) {
  if (c.op == Op::Avg) return round_to(c.type, float(1.0 / g_nranks));
  if (c.op == Op::Sum) return 1;
  return round_to(c.type, 0.375f);
}

// Every rank's input, reproducible on every rank: the seed is the case and the replay.
std::vector<unsigned char> input_bytes(const Case& c, int rank, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003u + uint64_t(rank) * 7919u + c.count);
  std::vector<unsigned char> out(send_elements(c) * c.type.bytes);
  if (!reduces(c)) {
    for (auto& b : out) b = static_cast<unsigned char>(rng());
    return out;
  }
  std::uniform_real_distribution<float> values(-4.0f, 4.0f);
  for (size_t i = 0; i < send_elements(c); ++i) store(c.type, values(rng), &out[i * c.type.bytes]);
  return out;
}

// The route's numerics for rank r's output element i, and NCCL's error bound there.
struct Expected {
  float value;
  double bound;
};
Expected expected_reduction(const Case& c, const std::vector<std::vector<unsigned char>>& inputs, int r, size_t i) {
  const size_t index = c.kind == Kind::ReduceScatter ? size_t(r) * c.count + i : i;
  float sum = 0;
  double magnitude = 0;
  for (int j = 0; j < g_nranks; ++j) {
    const float x = load(c.type, &inputs[size_t(j)][index * c.type.bytes]);
    const float term = x * scalar_of(c, j);
    sum += term;
    magnitude += std::fabs(double(term));
  }
  // NCCL rounds each of its n-1 partial sums to the type: within (n) ulps of the magnitude.
  return {round_to(c.type, sum), double(g_nranks) * c.type.epsilon * magnitude * 2 + 1e-30};
}

std::vector<unsigned char> expected_move(const Case& c, const std::vector<std::vector<unsigned char>>& inputs, int r) {
  if (c.kind == Kind::Broadcast) return inputs[size_t(c.root)];
  const size_t chunk = c.count * c.type.bytes;
  std::vector<unsigned char> out(recv_elements(c) * c.type.bytes);
  for (int j = 0; j < g_nranks; ++j) {
    const unsigned char* from = inputs[size_t(j)].data() + (c.kind == Kind::AllToAll ? size_t(r) * chunk : 0);
    std::memcpy(out.data() + size_t(j) * chunk, from, chunk);
  }
  return out;
}

struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
  void* scalar = nullptr;  // the device scalar
};

// The device buffers of a call: in place, the input is where NCCL's in-place rule puts it.
void* input_buffer(const Case& c, const Buffers& b) {
  if (!c.in_place) return b.send;
  if (c.kind == Kind::AllGather) return static_cast<char*>(b.recv) + size_t(g_rank) * c.count * c.type.bytes;
  return b.recv;
}
void* output_buffer(const Case& c, const Buffers& b) {
  if (c.in_place && c.kind == Kind::ReduceScatter)
    return static_cast<char*>(b.recv) + size_t(g_rank) * c.count * c.type.bytes;
  return b.recv;
}

ncclComm_t g_comm = nullptr;
cudaStream_t g_stream = nullptr;

// The op a call uses (made for it, destroyed after it).
struct OpHandle {
  ncclRedOp_t op = ncclSum;
  bool made = false;
};
OpHandle make_op(const Case& c, const Buffers& b) {
  OpHandle h;
  if (c.op == Op::Avg) h.op = ncclAvg;
  if (c.op == Op::PreMulHost || c.op == Op::PreMulDevice) {
    std::vector<unsigned char> scalar(c.type.bytes);
    store(c.type, scalar_of(c, g_rank), scalar.data());
    if (c.op == Op::PreMulDevice) {
      check(cudaMemcpyAsync(b.scalar, scalar.data(), scalar.size(), cudaMemcpyHostToDevice, g_stream), "scalar");
      check(cudaStreamSynchronize(g_stream), "scalar");
      check(ncclRedOpCreatePreMulSum(&h.op, b.scalar, c.type.nccl, ncclScalarDevice, g_comm), c.name);
    } else {
      check(ncclRedOpCreatePreMulSum(&h.op, scalar.data(), c.type.nccl, ncclScalarHostImmediate, g_comm), c.name);
    }
    h.made = true;
  }
  return h;
}

void issue(const Case& c, const Buffers& b, ncclRedOp_t op) {
  void* in = input_buffer(c, b);
  void* out = output_buffer(c, b);
  switch (c.kind) {
    case Kind::AllReduce:
      check(ncclAllReduce(in, out, c.count, c.type.nccl, op, g_comm, g_stream), c.name);
      break;
    case Kind::ReduceScatter:
      check(ncclReduceScatter(in, out, c.count, c.type.nccl, op, g_comm, g_stream), c.name);
      break;
    case Kind::AllGather:
      check(ncclAllGather(in, out, c.count, c.type.nccl, g_comm, g_stream), c.name);
      break;
    case Kind::AllToAll:
      check(ncclAlltoAll(in, out, c.count, c.type.nccl, g_comm, g_stream), c.name);
      break;
    case Kind::Broadcast:
      // In place through ncclBcast, NCCL's older form, which DDP's coalesced broadcasts use.
      if (c.in_place)
        check(ncclBcast(out, c.count, c.type.nccl, c.root, g_comm, g_stream), c.name);
      else
        check(ncclBroadcast(in, out, c.count, c.type.nccl, c.root, g_comm, g_stream), c.name);
      break;
  }
}

void issue_in_mode(const Case& c, const Buffers& b, ncclRedOp_t op) {
  if (c.mode == Mode::Grouped) check(ncclGroupStart(), "ncclGroupStart");
  issue(c, b, op);
  if (c.mode == Mode::Grouped) check(ncclGroupEnd(), "ncclGroupEnd");
}

struct Verdict {
  bool exact = true;          // bitwise the route's numerics
  bool within = true;         // within NCCL's bound
  std::string first;          // the first element outside the bound: "index: got vs expected"
  std::string first_inexact;  // the first element not bitwise the route's numerics, with its inputs
};

Verdict verify(const Case& c, const Buffers& b, uint64_t seed) {
  std::vector<std::vector<unsigned char>> inputs;
  for (int j = 0; j < g_nranks; ++j) inputs.push_back(input_bytes(c, j, seed));
  std::vector<unsigned char> got(recv_elements(c) * c.type.bytes);
  check(cudaMemcpyAsync(got.data(), output_buffer(c, b), got.size(), cudaMemcpyDeviceToHost, g_stream), c.name);
  check(cudaStreamSynchronize(g_stream), c.name);
  Verdict v;
  if (!reduces(c)) {
    const auto want = expected_move(c, inputs, g_rank);
    v.exact = v.within = got == want;
    for (size_t i = 0; i < got.size() && v.first.empty(); ++i)
      if (got[i] != want[i])
        v.first = "byte " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs " + std::to_string(want[i]);
    return v;
  }
  for (size_t i = 0; i < recv_elements(c); ++i) {
    const Expected e = expected_reduction(c, inputs, g_rank, i);
    const float value = load(c.type, &got[i * c.type.bytes]);
    const bool same = std::memcmp(&value, &e.value, sizeof value) == 0;
    if (!same && v.first_inexact.empty()) {
      const size_t index = c.kind == Kind::ReduceScatter ? size_t(g_rank) * c.count + i : i;
      v.first_inexact = "element " + std::to_string(i) + ": got " + std::to_string(value) + ", ours " +
                        std::to_string(e.value) + ", scalar " + std::to_string(scalar_of(c, 0)) + ", inputs";
      char text[64];
      for (int j = 0; j < g_nranks; ++j) {
        std::snprintf(text, sizeof text, " %.9g", double(load(c.type, &inputs[size_t(j)][index * c.type.bytes])));
        v.first_inexact += text;
      }
    }
    v.exact = v.exact && same;
    const bool within = std::isfinite(value) && std::fabs(double(value) - double(e.value)) <= e.bound;
    if (!within && v.first.empty())
      v.first = "element " + std::to_string(i) + ": " + std::to_string(value) + " vs " + std::to_string(e.value);
    v.within = v.within && within;
  }
  return v;
}

void upload(const Case& c, const Buffers& b, uint64_t seed) {
  const auto in = input_bytes(c, g_rank, seed);
  // Poison the output first, so an element nothing writes is seen (in place, the input goes over it).
  // On the collectives' own stream, finished before the call: a cudaMemcpy from pageable memory may
  // return before its DMA is over, and the legacy stream does not order a non-blocking one.
  check(cudaMemsetAsync(b.recv, 0xff, std::max(recv_elements(c), send_elements(c)) * c.type.bytes, g_stream), c.name);
  check(cudaMemcpyAsync(input_buffer(c, b), in.data(), in.size(), cudaMemcpyHostToDevice, g_stream), c.name);
  check(cudaStreamSynchronize(g_stream), c.name);
}

// Runs a case; a captured one runs eagerly once first (frameworks warm up before capturing), then
// replays three times, each on fresh inputs.
Verdict run_case(const Case& c, const Buffers& b, uint64_t seed) {
  OpHandle op = make_op(c, b);
  Verdict all;
  const auto merge = [&](const Verdict& v) {
    all.exact = all.exact && v.exact;
    all.within = all.within && v.within;
    if (all.first.empty() && !v.first.empty()) all.first = v.first;
    if (all.first_inexact.empty() && !v.first_inexact.empty()) all.first_inexact = v.first_inexact;
  };
  upload(c, b, seed);
  issue_in_mode(c, b, op.op);
  check(cudaStreamSynchronize(g_stream), c.name);
  merge(verify(c, b, seed));
  if (c.mode == Mode::Captured) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal), c.name);
    issue(c, b, op.op);
    check(cudaStreamEndCapture(g_stream, &graph), c.name);
    check(cudaGraphInstantiate(&exec, graph, 0), c.name);
    for (uint64_t replay = 1; replay <= 3; ++replay) {
      upload(c, b, seed + replay * 77);
      check(cudaGraphLaunch(exec, g_stream), c.name);
      check(cudaStreamSynchronize(g_stream), c.name);
      merge(verify(c, b, seed + replay * 77));
    }
    check(cudaGraphExecDestroy(exec), c.name);
    check(cudaGraphDestroy(graph), c.name);
  }
  if (op.made) check(ncclRedOpDestroy(op.op, g_comm), c.name);
  return all;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const size_t n = size_t(g_nranks);
  for (Mode mode : {Mode::Eager, Mode::Grouped, Mode::Captured}) {
    for (Kind kind : {Kind::AllReduce, Kind::ReduceScatter})
      for (Op op : {Op::Sum, Op::Avg, Op::PreMulHost, Op::PreMulDevice})
        for (const Type& type : {kBf16, kFp16, kFp32})
          // 1, a prime, a multiple of the ranks and of 8, one that splits into no equal chunks (all-reduce)
          // or whose chunks are not 16-byte aligned (reduce-scatter's per-rank count).
          for (size_t count : {size_t(1), size_t(7919), 4096 * n, kind == Kind::AllReduce ? 1000 * n + 1 : 1001})
            for (bool in_place : {false, true}) out.push_back({kind, op, type, count, in_place, mode, ""});
    for (Kind kind : {Kind::AllGather, Kind::AllToAll})
      for (const Type& type : {kBf16, kFp32, kInt64, kUint8})
        for (size_t count : {size_t(1), size_t(7919), size_t(4096), size_t(1001)})
          for (bool in_place : {false, true}) {
            if (in_place && kind == Kind::AllToAll) continue;  // undefined in NCCL
            out.push_back({kind, Op::Sum, type, count, in_place, mode, ""});
          }
    // From the first rank and the last, a count that splits over no rank count and one that does.
    for (const Type& type : {kBf16, kFp32, kInt64, kUint8})
      for (size_t count : {size_t(1), size_t(7919), 4096 * n})
        for (int root : {0, g_nranks - 1})
          for (bool in_place : {false, true})
            out.push_back({Kind::Broadcast, Op::Sum, type, count, in_place, mode, "", root});
  }
  for (Case& c : out)
    c.name = std::string(name_of(c.kind)) + "_" + (reduces(c) ? std::string(name_of(c.op)) + "_" : "") + c.type.name +
             "_" + std::to_string(c.count) + (c.kind == Kind::Broadcast ? "_root" + std::to_string(c.root) : "") +
             (c.in_place ? "_in_place_" : "_") + name_of(c.mode);
  return out;
}

// A group of several collectives (PyTorch's coalesced calls): an average, a reduce-scatter and an
// all-gather between one ncclGroupStart and ncclGroupEnd, checked each.
Verdict run_group_of_several(const Buffers& b, size_t largest_bytes) {
  const size_t n = size_t(g_nranks);
  const Case ar{Kind::AllReduce, Op::Avg, kBf16, 4096 * n + 3, false, Mode::Grouped, "group_all_reduce"};
  const Case rs{Kind::ReduceScatter, Op::Sum, kFp32, 1001, false, Mode::Grouped, "group_reduce_scatter"};
  const Case ag{Kind::AllGather, Op::Sum, kBf16, 777, false, Mode::Grouped, "group_all_gather"};
  // Each call in its own part of the buffers.
  const size_t part = largest_bytes / 3 / 4096 * 4096;
  Buffers parts[3];
  for (int i = 0; i < 3; ++i) {
    parts[i].send = static_cast<char*>(b.send) + size_t(i) * part;
    parts[i].recv = static_cast<char*>(b.recv) + size_t(i) * part;
  }
  const Case* calls[3] = {&ar, &rs, &ag};
  for (int i = 0; i < 3; ++i) upload(*calls[i], parts[i], 4242 + uint64_t(i));
  check(ncclGroupStart(), "ncclGroupStart");
  issue(ar, parts[0], ncclAvg);
  issue(rs, parts[1], ncclSum);
  issue(ag, parts[2], ncclSum);
  check(ncclGroupEnd(), "ncclGroupEnd");
  check(cudaStreamSynchronize(g_stream), "group of several");
  Verdict all;
  for (int i = 0; i < 3; ++i) {
    const Verdict v = verify(*calls[i], parts[i], 4242 + uint64_t(i));
    all.exact = all.exact && v.exact;
    all.within = all.within && v.within;
  }
  return all;
}

ncclUniqueId rendezvous(const std::string& file) {
  ncclUniqueId id{};
  if (g_rank == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string temporary = file + ".tmp";
    std::ofstream(temporary, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    if (std::rename(temporary.c_str(), file.c_str()) != 0) fail("cannot write " + file);
    return id;
  }
  for (int tries = 0; tries < 6000; ++tries) {
    std::ifstream in(file, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(&id), sizeof id)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  fail("no unique id in " + file + " after 60 s");
}

std::string json_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", \"" : "\"") + names[i] + "\"";
  return out + "]";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) fail("usage: nccl_route_matrix RANK NRANKS ID_FILE");
  g_rank = std::atoi(argv[1]);
  g_nranks = std::atoi(argv[2]);
  if (g_nranks < 1 || g_rank < 0 || g_rank >= g_nranks) fail("bad rank or rank count");
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  check(cudaSetDevice(g_rank % devices), "cudaSetDevice");
  const ncclUniqueId id = rendezvous(argv[3]);
  check(ncclCommInitRank(&g_comm, g_nranks, id, g_rank), "ncclCommInitRank");
  check(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking), "cudaStreamCreate");

  const std::vector<Case> all = cases();
  size_t largest = 0;
  for (const Case& c : all)
    largest = std::max({largest, send_elements(c) * c.type.bytes, recv_elements(c) * c.type.bytes});
  largest = std::max(largest, size_t(1) << 20);
  Buffers b;
  check(cudaMalloc(&b.send, largest), "cudaMalloc");
  check(cudaMalloc(&b.recv, largest), "cudaMalloc");
  check(cudaMalloc(&b.scalar, 16), "cudaMalloc");

  std::vector<std::string> inexact, wrong;
  std::string first_wrong;
  std::vector<std::string> inexact_details;  // the first inexact element of up to 8 cases
  // MATRIX_BARRIER=1: every rank finishes each case before any starts the next (a diagnosis: a result
  // that is right only then depends on how the ranks' calls interleave).
  const bool barrier = std::getenv("MATRIX_BARRIER") != nullptr;
  void* token = nullptr;
  if (barrier) check(cudaMalloc(&token, 4), "cudaMalloc");
  uint64_t seed = 1;
  for (const Case& c : all) {
    const Verdict v = run_case(c, b, seed++);
    if (!v.exact) inexact.push_back(c.name);
    if (!v.within) wrong.push_back(c.name);
    if (!v.within && first_wrong.empty()) first_wrong = c.name + " " + v.first;
    if (!v.exact && inexact_details.size() < 8) inexact_details.push_back(c.name + " " + v.first_inexact);
    if (barrier) {
      check(ncclAllReduce(token, token, 1, ncclFloat32, ncclMax, g_comm, g_stream), "barrier");
      check(cudaStreamSynchronize(g_stream), "barrier");
    }
  }
  const Verdict group = run_group_of_several(b, largest);
  if (!group.exact) inexact.push_back("group_of_several");
  if (!group.within) wrong.push_back("group_of_several");

  check(ncclCommDestroy(g_comm), "ncclCommDestroy");
  std::printf(
      "{\"rank\": %d, \"nranks\": %d, \"cases\": %zu, \"first_wrong\": \"%s\", \"inexact_details\": %s, "
      "\"inexact\": %s, \"wrong\": %s}\n",
      g_rank, g_nranks, all.size() + 1, first_wrong.c_str(), json_list(inexact_details).c_str(),
      json_list(inexact).c_str(), json_list(wrong).c_str());
  return wrong.empty() ? 0 : 1;
}
