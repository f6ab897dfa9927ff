#pragma once
// A training scenario: what a framework issues in one iteration (GEMMs, element-wise kernels and
// collectives with their real data dependencies), as opposed to a microbenchmark's independent
// compute and collective. Scenarios live in bench/scenarios/, one per file, one registry line each
// (bench/scenarios/registry.cpp); docs/WORKLOADS.md describes them.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/rank_context.h"
#include "report/trace.h"
#include "tandem/dtype.h"
#include "tandem/shaped_kernel.h"

namespace tandem::bench {

// Model and schedule of the scenarios (`tandem bench --hidden ... --layers ...`). Defaults are
// Llama-like (hidden 4096, sequence 4096, bf16) and sized so that every scenario runs well under a
// second per iteration on an H200 and fits in memory on 2 GPUs.
struct ScenarioOptions {
  int64_t hidden = 4096;
  int64_t seq = 4096;  // tokens per micro-batch on each rank (sequence length x micro-batch size 1)
  int layers = 4;
  int64_t ffn = 0;                 // 0: 3.5 x hidden rounded up to 128 (Llama 3: 14336 for 4096)
  int heads = 0;                   // 0: hidden / 128
  int kv_heads = 0;                // 0: min(8, heads)
  double bucket_mb = 25;           // DDP bucket_cap_mb (MiB)
  double first_bucket_mb = 1;      // DDP's first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)
  int micro_batches = 2;           // tp-mlp, tp-attention, moe
  bool sequence_parallel = false;  // tp-*: reduce-scatter + all-gather instead of all-reduce
  int experts = 8;                 // moe: experts in total, spread over the ranks
  int top_k = 2;                   // moe: experts per token
  int64_t expert_ffn = 0;          // moe: expert MLP width; 0: ffn
};

// What one iteration runs.
enum class ScenarioMode {
  Full,         // compute on streams.compute, collectives on streams.comm, joined by events
  ComputeOnly,  // collectives skipped (consumers read stale buffers): t_compute
  CommOnly,     // only the collectives, in program order: t_comm
  Sequential,   // everything in program order on streams.compute: t_seq
};

struct ScenarioStreams {
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;        // Full and CommOnly
  ncclComm_t communicator = nullptr;  // the collectives' communicator; nullptr: RankContext::comm
  // Full: a collective is enqueued as soon as its inputs are (before the independent compute that
  // follows it in program order); otherwise after the next compute operation.
  bool comm_first = false;
};

// Per-stream busy time of the last Full iteration (event-timed, summed over the stretches in which
// the stream was not waiting for the other): what each side took under overlap.
struct StreamBusy {
  double compute_ms = 0;
  double comm_ms = 0;
};

class Scenario {
 public:
  virtual ~Scenario() = default;
  virtual std::string name() const = 0;
  // One line for the output header: model, schedule, sizes, reference.
  virtual std::string describe() const = 0;
  // The collectives it issues, joined by '+': "all-reduce", "all-gather+reduce-scatter".
  virtual std::string collective() const = 0;
  // nccl-tests busbw factor of those collectives (they share one in every scenario).
  virtual double busbw_factor(int nranks) const = 0;
  // Layers or micro-batches: the row's `count`.
  virtual int count() const = 0;

  // Allocates, fills inputs with random values, builds the iteration and computes the reference
  // outputs, on the rank's device. Every rank calls it (the reference needs no communication).
  virtual void setup(RankContext& ctx) = 0;
  // Collective bytes per iteration per rank, nccl-tests convention (valid after setup).
  virtual uint64_t collective_bytes() const = 0;
  // Fewest device-memory bytes one iteration moves (each operation's inputs read once, outputs
  // written once), for the HBM term of t_bound (valid after setup).
  virtual double hbm_bytes() const = 0;
  virtual double flops() const = 0;

  // Enqueues one iteration. Work begins after what is already on streams.compute and everything,
  // on every stream, is done when what follows on streams.compute runs.
  virtual void enqueue_iteration(RankContext& ctx, const ScenarioStreams& streams, ScenarioMode mode) = 0;
  // Busy time of each stream in the last Full iteration; call after it completed.
  virtual StreamBusy last_busy() = 0;
  // Enqueues the first compute operation (or the first collective) alone, for footprint capture.
  virtual void enqueue_sample(RankContext& ctx, cudaStream_t stream, bool collective) = 0;
  // Runs one compute-only or collectives-only iteration (`mode`) with an event after every operation
  // and returns each operation's time in program order (0 for the other kind); synchronises.
  virtual std::vector<double> time_operations(RankContext& ctx, const ScenarioStreams& streams, ScenarioMode mode) = 0;
  // Runs one Full or Sequential iteration (`mode`), issued as enqueue_iteration() issues it, with an
  // event before and after every operation, and returns when each ran, in program order
  // (report/trace.h); synchronises.
  virtual std::vector<TraceSpan> trace_iteration(RankContext& ctx, const ScenarioStreams& streams,
                                                 ScenarioMode mode) = 0;
  // The iteration's length along its dependency chain with these per-operation times
  // (scenarios/program.h, Program::chain_ms): the ideal bound of any overlap of it.
  virtual double chain_ms(const std::vector<double>& operation_ms) const = 0;

  // Asks the scenario's cuBLASLt GEMMs to use at most `sm_count` SMs (0: no cap). Returns false when
  // the scenario has no GEMM.
  virtual bool set_sm_count_target(int sm_count) = 0;
  // The kernels shaping policies act on (tandem's element-wise kernels; cuBLASLt's GEMMs cannot be
  // shaped). Empty when there are none.
  virtual std::vector<ShapedKernel*> shaped_kernels() = 0;
  // Overwrites every checked output with NaN.
  virtual void poison_outputs(cudaStream_t stream) = 0;
  // Compares the outputs with the reference; returns the number of wrong elements (synchronises).
  virtual int64_t count_wrong(RankContext& ctx) = 0;
  // Something the results' reader should know about this setup (e.g. how the reference was
  // computed at this size); empty when nothing.
  virtual std::string setup_note() const { return {}; }

  // Copy-engine collectives (the `copy-engine` policy) and NCCL's symmetric kernels (`nccl-symmetric`)
  // need the buffers they touch registered as NCCL symmetric windows on the communicator that runs
  // them (RankContext::communicator_for gives such a policy its own). Registers, on `comm`, every
  // device buffer this rank's collectives send from or receive into - every collective of the
  // iteration. With `lanes` (copy-engine: lane 0 is `comm`), on every lane's communicator too, and
  // the collectives on `comm` then run on copy engines over the lanes
  // (tandem/copy_engine.h). Valid after setup(). Registration is collective: all ranks
  // call it together, with the same communicators, and register the same buffers in the same order.
  // Idempotent per communicator (a second call with the same `comm` does nothing). Returns "" on
  // success, or one line saying why it cannot apply (with `lanes`: the scenario has no collective,
  // or an all-reduce that cannot split into equal chunks), in which case nothing is registered.
  virtual std::string use_symmetric_windows(RankContext& ctx, ncclComm_t comm, const CopyEngineLanes* lanes) {
    (void)ctx, (void)comm, (void)lanes;
    return name() + " does not register symmetric windows";
  }
  // Deregisters every window use_symmetric_windows() registered, on every communicator, awaiting
  // each (communicators are non-blocking). Collective: all ranks call it together, and before the
  // scenario's buffers are freed (destroying the scenario frees them). Safe when nothing is
  // registered.
  virtual void release_windows(RankContext& ctx) { (void)ctx; }
};

// What a scenario is built from; no GPU is touched until setup().
struct ScenarioConfig {
  ScenarioOptions options;
  DType dtype = DType::BF16;
  uint64_t seed = 0x7a4d3e;
  int nranks = 1;
  bool in_place = false;  // --in-place: all-gather inputs in their chunk of the output (tp-* with SP)
};

using ScenarioFactory = std::unique_ptr<Scenario> (*)(const ScenarioConfig&);

struct ScenarioEntry {
  const char* name;
  const char* summary;
  ScenarioFactory make;
};
// bench/scenarios/registry.cpp
const std::vector<ScenarioEntry>& scenario_registry();

}  // namespace tandem::bench
