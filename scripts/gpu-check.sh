#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, over a build made elsewhere and carried along
# (build/bin, build/lib, build/tests). Runs every GPU test and the benchmark suite, writes JSON and
# logs under $OUT (default ./gpu-check-out), and prints a short table last. At most a few files land
# in $OUT (the device tool returns 8): the results' JSON, summary.log and logs.tgz with everything.
#
#   scripts/gpu-check.sh [quick|full|SECTION[,SECTION...]] [extra tandem bench arguments...]
#     sections: build environment tests suite collectives tune tune-in-place copy-paths counts multiprocess
#               shared-gpu mpi-suite run interposer-programs faults interrupt cli scenarios scenario-tune clocks
#               scenario-clocks one-gpu pytorch frameworks reach timeline ab cost targeted windows
#               launch-overhead megatron-lm torch-tests route-timing
#     quick = environment,tests,suite; full = every section (more than one 10-minute device call:
#     run it as three, e.g. `full-scenarios`, then `scenarios,clocks`, then `scenario-tune`);
#     scaling = what the scaling runs on 4 and 8 GPUs need first (environment,tests,suite,tune,
#     multiprocess,mpi-suite), then `scenario-tune` as a second call;
#     pytorch (not in full: a call of its own) = stock PyTorch against tandem on DDP and FSDP2 steps
#     reach (not in full: a call of its own, one GPU is enough) = how much of real programs' collective
#     traffic the copy-engine route takes, results against stock (scripts/reach-check.py); its table last
#     timeline (not in full: a call of its own) = `tandem run --timeline` on a program of known overlap,
#     on DDP and FSDP2 (TANDEM_TIMELINE_PARTS, default figures,overhead; compile and hta as further calls)
#     ab (not in full: a call of its own) = old and new binaries built here and run interleaved
#     cost (not in full: a call of its own, one GPU) = each control's compute tax and device memory on a
#       Transformers Llama step at world size 1 (targeted and always-on forms against stock)
#     targeted (not in full: a call of its own, one GPU) = the targeted compute controls on DDP and FSDP2 at 2
#       ranks sharing the GPU: losses against stock, launches shaped beside a collective and left alone
#     windows (not in full) = which memory NCCL registers as a symmetric window, at 2 and 3 ranks sharing
#       the GPU (tests/tools/window_probe.cu), and which memory PyTorch's allocator gives, plain and with
#       expandable segments
#     launch-overhead (not in full) = the interposer's per-launch cost, interleaved rounds, every form
#     route-timing (not in full) = the route's all-reduce per call, staged and with peer copies, beside NCCL's,
#       interleaved (tests/tools/route_timing.cu): 2 ranks (one GPU each where there are 2), 2 and 3 sharing GPU 0
#     megatron-lm (not in full) = Megatron-LM's pretrain_gpt.py stock and under tandem run (.whl/megatron-lm)
#     torch-tests (not in full) = tandem.torch's GPU tests (tests/python/test_torch_gpu.py: DDP and FSDP2 at 2
#       ranks, DDP's copy-engine hook at 3, sharing GPU 0 on a one-GPU machine) with the package built here
#     build (not in full: a call of its own) = the README's install-deps, configure and build steps on
#       a clean copy of this tree in a temporary folder, with this machine's own NCCL (PyTorch's
#       nvidia-nccl wheel) and python3, then `ctest -L gpu` there
set -uo pipefail
mode=${1:-quick}
shift || true
case $mode in
  quick) sections=environment,tests,suite ;;
  full) sections=environment,tests,suite,collectives,tune,tune-in-place,copy-paths,counts,multiprocess,shared-gpu,mpi-suite,run,interposer-programs,faults,interrupt,cli,scenarios,scenario-tune,clocks,scenario-clocks,one-gpu ;;
  scaling) sections=environment,tests,suite,tune,multiprocess,mpi-suite ;;
  full-scenarios) sections=environment,tests,suite,collectives,tune,tune-in-place,copy-paths,counts,multiprocess,run ;;
  *) sections=$mode ;;
esac
want() { [[ ",$sections," == *",$1,"* ]]; }
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
# TANDEM_LOGS: where the full logs go (a fresh temporary folder by default); name one to salvage the
# logs of a run that was stopped before it could pack them.
logs=${TANDEM_LOGS:-$(mktemp -d)}
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0              # NVLink multicast must stay off on shared machines
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TANDEM_CLI="$root/build/bin/tandem"
tandem="$root/build/bin/tandem"
tag=$(date -u +%Y-%m-%d)
# One rank per visible GPU in the multi-process runs (2, 4 or 8 on the H200 machines).
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 1 ] || gpus=2
status=0
# The shared-gpu section's runs of ranks sharing a GPU, which the ab section repeats with old and new binaries.
shared_micro=(--workload stream --collective all-reduce,all-gather,reduce-scatter,all-to-all -b 16M -e 16M -n 3
              --warmup 1 -p priority,copy-engine --timeout 80)
shared_scenarios=(--workload dp-backward,fsdp,tp-mlp,tp-attention,moe --hidden 1024 --seq 256 --layers 2 --bucket-mb 8
                  --expert-ffn 1024 -n 2 --warmup 1 -p sequential,comm-first+priority,copy-engine)

section() { printf '\n=== %s\n' "$*" | tee -a "$logs/summary.log"; }

# merge_results OUT FILE...: one JSON of several runs' files (the first one's header, every row, note,
# config line and command), which scripts/results-table.py and plot-results.py read as one run.
merge_results() {
  local out=$1
  shift
  python3 - "$@" > "$out" <<'PY'
import json, sys
docs = [json.load(open(f)) for f in sys.argv[1:]]
merged = dict(docs[0]) if docs else {}
merged["commands"] = [d.get("command") for d in docs]
merged["config"] = [line for d in docs for line in d.get("config", [])]
merged["rows"] = [r for d in docs for r in d.get("rows", [])]
merged["notes"] = [n for d in docs for n in d.get("notes", [])]
print(json.dumps(merged, indent=1))
PY
}

if want build; then
section "build: a clean copy, this machine's NCCL wheel and python3, then ctest -L gpu"
# The files of this tree as git knows them (tracked, and untracked but not ignored: the carried copy
# of a working tree), never its build/ or outputs; a tree without .git is copied as it is, less those.
work=$(mktemp -d)
mkdir -p "$work/src"
if git -C "$root" rev-parse --git-dir > /dev/null 2>&1; then
  git -C "$root" ls-files -co --exclude-standard -z | (cd "$root" && tar --null -T - -cf -) | tar -C "$work/src" -xf -
else
  tar -C "$root" --exclude=./build --exclude=./gpu-check-out -cf - . | tar -C "$work/src" -xf -
fi
# PyTorch's NCCL (the nvidia-nccl wheel of the python3 on PATH) even where the toolkit has one too:
# the layout whose NCCL::nccl lacked CUDA's include folder. sm_90 only, so that the build fits one call.
wheel=$(python3 -c "import importlib.util as u; s = u.find_spec('nvidia.nccl'); print(list(s.submodule_search_locations)[0])" 2> /dev/null || true)
nccl_root=()
[ -n "$wheel" ] && nccl_root=(-DNCCL_ROOT="$wheel")
echo "NCCL from: ${wheel:-(no nvidia-nccl wheel: the search of cmake/FindNCCL.cmake)}; python3: $(command -v python3)" \
  | tee -a "$logs/summary.log"
if (cd "$work/src" && scripts/install-deps.sh) > "$logs/build-deps.log" 2>&1 \
  && cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${nccl_root[@]}" \
    > "$logs/build-configure.log" 2>&1 \
  && cmake --build "$work/build" -j "$(nproc)" > "$logs/build-build.log" 2>&1; then
  grep -E '^-- NCCL ' "$logs/build-configure.log" | tee -a "$logs/summary.log"
  # The minutes-long ones have their own sections (interposer-programs, faults). The log goes to $OUT as
  # it grows, so a call that ends before ctest does still brings back what passed and what failed.
  # TANDEM_CLI (exported above for the carried build) must not point the clean build's tests elsewhere.
  if env -u TANDEM_CLI ctest --test-dir "$work/build" -L gpu -E '/InterposerPrograms[.]|/Faults[.]' --output-on-failure \
    -j "${TANDEM_CTEST_JOBS:-3}" --timeout 300 \
    2>&1 | tee "$out/build-ctest.log" > "$logs/build-ctest.log"; then  # pipefail: ctest's status
    echo "build ok; $(grep -E 'tests passed' "$logs/build-ctest.log")" | tee -a "$logs/summary.log"
  else
    echo "build ok; ctest -L gpu FAILED: $(grep -E 'tests passed|tests failed' "$logs/build-ctest.log")" | tee -a "$logs/summary.log"
    grep -E '^\s+[0-9]+ - ' "$logs/build-ctest.log" | head -n 20 | tee -a "$logs/summary.log"
    status=1
  fi
else
  echo "build FAILED (see build-deps.log, build-configure.log, build-build.log):" | tee -a "$logs/summary.log"
  tail -n 15 "$logs/build-deps.log" "$logs/build-configure.log" "$logs/build-build.log" 2> /dev/null \
    | tee -a "$logs/summary.log"
  status=1
fi
rm -rf "$work"
fi

if want environment; then
section "environment"
{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
  ldconfig -p | grep -E 'libnccl|libcublasLt|libcupti' | head
  "$tandem" info
} > "$logs/environment.log" 2>&1
tail -n 4 "$logs/environment.log" | tee -a "$logs/summary.log"
fi

if want tests; then
section "occupancy fixtures"
"$root/build/tests/record_occupancy_fixtures" "$logs/h200_occupancy.json" > "$logs/fixtures.log" 2>&1 \
  && echo "recorded $(grep -c blocks_per_sm "$logs/h200_occupancy.json") fixtures" | tee -a "$logs/summary.log" \
  || { echo "fixture recording FAILED" | tee -a "$logs/summary.log"; status=1; }

section "tests"
# TANDEM_TESTS narrows the test binaries (globs, space-separated), e.g.
# TANDEM_TESTS='test_scenarios_gpu test_preload_nccl_route*'.
read -r -a test_globs <<< "${TANDEM_TESTS:-test_*}"
test_binaries=()
for glob in "${test_globs[@]}"; do test_binaries+=("$root"/build/tests/$glob); done
for t in "${test_binaries[@]}"; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  name=$(basename "$t")
  # These two take minutes: their own sections run them (interposer-programs, faults).
  case $name in test_interposer_programs | test_faults_gpu) continue ;; esac
  # Full gtest output: when a test hangs and is killed, the log shows which one was running.
  if timeout 240 "$t" > "$logs/$name.log" 2>&1; then result=ok; else result="FAILED($?)"; status=1; fi
  # GoogleTest exits 0 when every test skipped: that proves nothing, so it is not "ok".
  if [ "$result" = ok ] && grep -qE '^\[  PASSED  \] 0 tests' "$logs/$name.log"; then result=skipped; fi
  summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/$name.log" | tr '\n' ' ')
  [[ $result != FAILED* ]] || summary="$summary last: $(grep -E '^\[ RUN' "$logs/$name.log" | tail -n 1)"
  printf '%-28s %-7s %s\n' "$name" "$result" "$summary" | tee -a "$logs/summary.log"
done
fi

if want suite; then
section "bench suite"
"$tandem" bench --json "$logs/suite-$tag.json" "$@" > "$logs/suite.log" 2> "$logs/suite.err" || status=1
cat "$logs/suite.log" | tee -a "$logs/summary.log" | grep -v '^# \(command\|date\|workload \|timing\|check\)' || true
tail -n 3 "$logs/suite.err"
fi

if want collectives; then
  section "bench: every collective"
  "$tandem" bench --collective all-reduce,all-gather,reduce-scatter,all-to-all --json "$logs/collectives-$tag.json" \
    "$@" > "$logs/collectives.log" 2> "$logs/collectives.err" || status=1
  grep -v '^# \(command\|date\|workload \|timing\|check\)' "$logs/collectives.log" | tee -a "$logs/summary.log"
fi

if want tune; then
  section "tune: every workload x collective"
  rm -f "$logs/tune-$tag.json"  # a reused TANDEM_LOGS folder must not pass off an earlier run's
  "$tandem" tune --collective all-reduce,all-gather,reduce-scatter,all-to-all --json "$logs/tune-$tag.json" \
    --out "$logs/tuned.policy" "$@" > "$logs/tune.log" 2> "$logs/tune.err" || status=1
  sed -n '/^# summary/,$p' "$logs/tune.log" | tee -a "$logs/summary.log"
  python3 "$root/scripts/results-table.py" "$logs/tune-$tag.json" --tuned | grep '^geometric' | tee -a "$logs/summary.log"
  tail -n 2 "$logs/tune.err"
  # The tuner's policy file must be accepted by bench.
  first=$(ls "$logs"/tuned.gemm.all-reduce.*.policy | head -n 1)
  "$tandem" bench --workload gemm --collective all-reduce --policy "@$first" -q > "$logs/policy-file.log" 2>&1 \
    && echo "policy file accepted by bench: $first" | tee -a "$logs/summary.log" || { status=1; tail -n 2 "$logs/policy-file.log"; }
fi

if want tune-in-place; then
  # The same suite with every collective in NCCL's in-place form where it has one (--in-place; all-to-all
  # has none and runs out of place): NCCL's copy-engine all-gather then copies no chunk of its own on SMs.
  section "tune: every workload x collective, in place (all-to-all out of place)"
  rm -f "$logs"/tune-in-place-*"$tag".json
  "$tandem" tune --collective all-reduce,all-gather,reduce-scatter --in-place --json "$logs/tune-in-place-part1-$tag.json" \
    --out "$logs/tuned-in-place.policy" "$@" > "$logs/tune-in-place.log" 2> "$logs/tune-in-place.err" || status=1
  "$tandem" tune --collective all-to-all --json "$logs/tune-in-place-part2-$tag.json" \
    --out "$logs/tuned-all-to-all.policy" "$@" > "$logs/tune-all-to-all.log" 2> "$logs/tune-all-to-all.err" || status=1
  for part in tune-in-place tune-all-to-all; do
    sed -n '/^# summary/,$p' "$logs/$part.log" | grep -v '^# \(command\|date\)' | tee -a "$logs/summary.log"
    tail -n 2 "$logs/$part.err"
  done
  merge_results "$logs/tune-in-place-$tag.json" "$logs/tune-in-place-part1-$tag.json" "$logs/tune-in-place-part2-$tag.json"
  python3 "$root/scripts/results-table.py" "$logs/tune-in-place-$tag.json" --tuned | grep '^geometric' | tee -a "$logs/summary.log"
  cp "$logs/tune-in-place-$tag.json" "$out/" 2>/dev/null
fi

if want copy-paths; then
  section "copy paths: which copies run on copy engines beside a kernel that holds every SM"
  "$root/build/tests/copy_path_probe" > "$logs/copy-paths-$tag.json" 2> "$logs/copy-paths.err" || status=1
  python3 - "$logs/copy-paths-$tag.json" <<'PY' | tee -a "$logs/summary.log"
import json, sys
for c in json.load(open(sys.argv[1]))["copies"]:
    verdict = "waited for SMs" if c["waited_for_sms"] else "ran on a copy engine"
    print(f"{c['copy']:54s} alone {c['alone_ms']:6.3f} ms; beside the kernel ends at {c['copy_end_ms']:6.2f} ms "
          f"(kernel {c['kernel_end_ms']:.2f}): {verdict}")
PY
  cp "$logs/copy-paths-$tag.json" "$out/" 2>/dev/null
fi

if want counts; then
  section "cuBLAS GEMM: naive overlap against the number of GEMMs per step"
  for count in 1 2 3 4; do
    "$tandem" bench --workload gemm --count "$count" -p concurrent,priority,comm-first -q \
      --json "$logs/gemm-count$count-$tag.json" "$@" | grep '^ gemm'
  done | tee -a "$logs/summary.log"
fi

if want multiprocess; then
section "multi-process"
# One process per GPU, through the launchers users have: the same short suite under mpirun and
# torchrun; each must end "# OK" (JSON in logs.tgz: launch, world_size, rendezvous).
short=(--workload stream,tiled-gemm -b 64M -n 5 --warmup 2 -p concurrent,priority,shape:3+priority -q)
if command -v mpirun > /dev/null; then
  timeout 180 mpirun -np "$gpus" --allow-run-as-root "$tandem" bench "${short[@]}" --json "$logs/mpi-$tag.json" \
    > "$logs/mpi.log" 2>&1 || status=1
  printf 'mpirun -np %s:   %s\n' "$gpus" "$(grep -E '^# (OK|FAILED)|launch |error' "$logs/mpi.log" | tr '\n' ' ')" | tee -a "$logs/summary.log"
else
  echo "mpirun not on PATH: skipped" | tee -a "$logs/summary.log"
fi
if command -v torchrun > /dev/null; then
  timeout 180 torchrun --standalone --nproc-per-node "$gpus" --no-python "$tandem" bench "${short[@]}" \
    --json "$logs/torchrun-$tag.json" > "$logs/torchrun.log" 2>&1 || status=1
  printf 'torchrun x%s:    %s\n' "$gpus" "$(grep -E '^# (OK|FAILED)|launch |error' "$logs/torchrun.log" | tr '\n' ' ')" | tee -a "$logs/summary.log"
else
  echo "torchrun not on PATH: skipped" | tee -a "$logs/summary.log"
fi
cp "$logs/mpi-$tag.json" "$logs/torchrun-$tag.json" "$out/" 2>/dev/null
fi

if want shared-gpu; then
section "more ranks than GPUs: every collective and scenario exact at 2x (and, on 2 GPUs, 4x) the GPU count"
# Ranks that share a GPU (--allow-shared-gpu) are connected by NCCL as separate hosts (sockets): the
# timings mean nothing, the results must still be exact, for rank counts this machine cannot give
# one GPU each (the exchange then runs over that many lanes, tp-* over that many shards).
per_gpu_counts="2 4"
[ "$gpus" -ge 4 ] && per_gpu_counts=2  # 8 and 16 ranks: beyond, sockets between 32 processes only add time
for per_gpu in $per_gpu_counts; do
  ranks=$((gpus * per_gpu))
  shared=(mpirun -np "$ranks" --allow-run-as-root --oversubscribe "$tandem" bench --allow-shared-gpu -q)
  timeout 90 "${shared[@]}" "${shared_micro[@]}" --json "$logs/shared-$ranks-micro-$tag.json" \
    > "$logs/shared-$ranks-micro.log" 2>&1 || status=1
  timeout 120 "${shared[@]}" "${shared_scenarios[@]}" --timeout 110 --json "$logs/shared-$ranks-scenarios-$tag.json" \
    > "$logs/shared-$ranks-scenarios.log" 2>&1 || status=1
  for part in micro scenarios; do
    printf '%s ranks on %s GPUs, %-9s %s\n' "$ranks" "$gpus" "$part:" \
      "$(grep -E '^# (OK|FAILED)|error' "$logs/shared-$ranks-$part.log" | tr '\n' ' ')" | tee -a "$logs/summary.log"
  done
done
fi

if want mpi-suite; then
section "the default suite under mpirun, one process per GPU"
# The threaded suite's cases (section suite) with one process per rank, as a cluster runs them.
timeout 300 mpirun -np "$gpus" --allow-run-as-root "$tandem" bench --json "$logs/mpi-suite-$tag.json" "$@" \
  > "$logs/mpi-suite.log" 2>&1 || status=1
grep -v '^# \(command\|date\|workload \|timing\|check\|note\)' "$logs/mpi-suite.log" | tee -a "$logs/summary.log"
cp "$logs/mpi-suite-$tag.json" "$out/" 2>/dev/null
fi

if want run; then
section "tandem run: unmodified programs"
# Launch overhead: an empty-kernel loop with and without the interposer (target: <= 0.3 us added).
for run in plain:none priority:priority shape:shape:2+priority; do  # NAME:POLICY
  cmd=("$root/build/bin/launch_overhead")
  [ "${run#*:}" = none ] || cmd=("$tandem" run --policy "${run#*:}" --log-level error -- "${cmd[@]}")
  printf 'launch overhead %-9s %s\n' "${run%%:*}" "$(timeout 120 "${cmd[@]}" 2>&1 | tail -n 1)" | tee -a "$logs/summary.log"
done
# A CUDA + NCCL program written without tandem (examples/overlap), with and without `tandem run`,
# and the same case in tandem bench for the gain to compare against.
for workload in stream gemm; do
  kernels=10; [ $workload = gemm ] && kernels=1
  for policy in none priority shape:3+priority shape:2+priority sm-target:116; do
    [ $workload = stream ] && [ $policy = sm-target:116 ] && continue
    [ $workload = gemm ] && [[ $policy = shape:* ]] && continue
    if [ $policy = none ]; then
      line=$(timeout 120 "$root/build/bin/overlap_allreduce" --workload $workload --kernels $kernels 2>&1 | tail -n 1)
    else
      line=$(timeout 120 "$tandem" run --policy $policy --stats "$logs/run-$workload-${policy//[:+]/_}.json" -- \
            "$root/build/bin/overlap_allreduce" --workload $workload --kernels $kernels 2>> "$logs/run.err" | tail -n 1)
    fi
    printf 'overlap_allreduce %-7s %-18s %s\n' $workload $policy "$line" | tee -a "$logs/summary.log"
  done
done
timeout 180 "$tandem" bench --workload stream --stream-bytes 256M -b 512M --count 10 -d fp32 -q \
  -p sequential,concurrent,priority,shape:3+priority,shape:2+priority --json "$logs/run-bench-stream-$tag.json" \
  2>&1 | grep -E '^ stream|^# (OK|FAILED)' | tee -a "$logs/summary.log"
if command -v torchrun > /dev/null; then
  for policy in none priority shape:3+priority; do
    pre=(); [ $policy = none ] || pre=("$tandem" run --policy $policy --stats "$logs/ddp-${policy//[:+]/_}-stats.json" --)
    line=$(timeout 240 "${pre[@]}" torchrun --standalone --nproc-per-node "$gpus" "$root/examples/pytorch/ddp_overlap.py" \
          2> "$logs/ddp-${policy//[:+]/_}.err" | tail -n 1)
    printf 'pytorch ddp %-18s %s\n' $policy "$line" | tee -a "$logs/summary.log"
    [ -n "$line" ] || { status=1; tail -n 5 "$logs/ddp-${policy//[:+]/_}.err"; }
  done
fi
cp "$logs/run-bench-stream-$tag.json" "$out/" 2>/dev/null
fi

# gtest_section NAME BINARY: one line per test (OK, FAILED, SKIPPED and why) into the summary.
gtest_section() {
  local name=$1 binary=$2
  if timeout 560 "$binary" --gtest_output="json:$logs/$name.gtest.json" > "$logs/$name.log" 2>&1; then
    result=ok
  else
    result="FAILED($?)"
    status=1
  fi
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\] [A-Za-z]|^\[          \] ' "$logs/$name.log" | tee -a "$logs/summary.log"
  printf '%-28s %s %s\n' "$name" "$result" "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$logs/$name.log" | tr '\n' ' ')" \
    | tee -a "$logs/summary.log"
}

if want one-gpu; then
section "one GPU: the main job on one rank (compute tax, residency plan, no undefined figure as a number)"
gtest_section one-gpu "$root/build/tests/test_one_gpu_bench"
"$tandem" bench --gpus 1 --json "$logs/one-gpu-$tag.json" \
  > "$logs/one-gpu.log" 2> "$logs/one-gpu.err" || status=1
grep -v '^# \(command\|date\|workload \|timing\|check\)' "$logs/one-gpu.log" | tee -a "$logs/summary.log"
cp "$logs/one-gpu-$tag.json" "$out/" 2>/dev/null
fi

if want interposer-programs; then
section "tandem run: real programs unchanged (priority, shape:3+priority, sm-target:116)"
# Graph capture, fork, 16 threads, cooperative, cluster and per-thread-stream programs, PyTorch
# (torch.compile, CUDA graphs), JAX, CuPy and ctypes lookups of every hooked name, each with and
# without `tandem run`: same digest, same exit code, launches seen (tests/gpu/test_interposer_programs.cpp).
gtest_section interposer-programs "$root/build/tests/test_interposer_programs"
# dlsym/dlvsym/dlerror/cuGetProcAddress answers with the real driver, loaded locally and globally:
# identical with and without the interposer (the CPU test does this with a fake driver).
libcuda=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
probe="$root/build/tests/fake_cuda/dlsym_probe"
if [ -n "$libcuda" ] && [ -x "$probe" ]; then
  # A probe that cannot run (its caller library missing) answers alike both times: that is a failure.
  if ! "$probe" "local:$libcuda" "global:$libcuda" > "$logs/dlsym-plain.txt" 2>&1; then
    echo "dlsym probe FAILED to run: $(head -n 1 "$logs/dlsym-plain.txt")" | tee -a "$logs/summary.log"
    status=1
  elif ! LD_PRELOAD="$root/build/lib/libtandem_preload.so" "$probe" "local:$libcuda" "global:$libcuda" \
    > "$logs/dlsym-preloaded.txt" 2>&1; then
    echo "dlsym probe FAILED under the interposer: $(head -n 1 "$logs/dlsym-preloaded.txt")" | tee -a "$logs/summary.log"
    status=1
  elif cmp -s "$logs/dlsym-plain.txt" "$logs/dlsym-preloaded.txt"; then
    echo "dlsym probe with $libcuda: $(wc -l < "$logs/dlsym-plain.txt") answers identical" | tee -a "$logs/summary.log"
  else
    echo "dlsym probe with $libcuda: answers DIFFER" | tee -a "$logs/summary.log"
    diff "$logs/dlsym-plain.txt" "$logs/dlsym-preloaded.txt" | head -n 10 | tee -a "$logs/summary.log"
    status=1
  fi
fi
fi

if want faults; then
section "faults: a rank killed, stalled or never joining, under mpirun, torchrun and no launcher"
# 2 ranks (sharing the GPU when there is one): the other rank exits within --timeout, non-zero,
# naming the lost rank (tests/gpu/test_faults_gpu.cpp).
gtest_section faults "$root/build/tests/test_faults_gpu"
fi

# A background job of a script starts with SIGINT ignored (no job control): with_default_sigint CMD...
# runs CMD with the default disposition, as a terminal's Ctrl-C would find it.
with_default_sigint() {
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
# sigint_when PID SECONDS TEST...: SIGINT to PID once the command TEST succeeds (or after SECONDS); PID's exit status.
sigint_when() {
  local pid=$1 limit=$2 start=$SECONDS
  shift 2
  until "$@" 2> /dev/null || [ $((SECONDS - start)) -ge "$limit" ]; do sleep 0.2; done
  kill -INT "$pid"
  wait "$pid"
}

if want interrupt; then
section "interrupt: SIGINT during bench and tune keeps what was measured"
# bench rewrites --json after every row ("complete": false until the end); tune writes each case's
# policy file and the JSON when the case is tuned. SIGINT once rows / one case exist, then check.
interrupted() {  # interrupted NAME JSON SECONDS CMD...: SIGINT when JSON holds a row (or after SECONDS)
  local name=$1 json=$2 limit=$3
  shift 3
  rm -f "$json"
  with_default_sigint "$@" > "$logs/$name.log" 2>&1 &
  sigint_when $! "$limit" python3 -c "import json,sys; sys.exit(0 if json.load(open('$json'))['rows'] else 1)"
  local code=$?
  python3 - "$json" "$name" "$code" "$logs/interrupt.jsonl" <<'PY' | tee -a "$logs/summary.log" || status=1
import json, sys
path, name, code, record = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:
    doc = json.load(open(path))
except Exception as e:
    doc = {}
    print(f"{name:10s} FAILED: no valid JSON after SIGINT ({e})")
ok = bool(doc.get("complete") is False and doc.get("rows") and code != 0)
with open(record, "a") as f:
    f.write(json.dumps({"command": name, "exit": code, "complete": doc.get("complete"),
                        "rows_kept": len(doc.get("rows", [])), "ok": ok}) + "\n")
if not doc:
    sys.exit(1)
print(f"{name:10s} {'ok' if ok else 'FAILED'}: exit {code}, complete={doc.get('complete')}, "
      f"schema_version={doc.get('schema_version')}, {len(doc.get('rows', []))} rows kept")
sys.exit(0 if ok else 1)
PY
}
# Runs long enough to be cut short on any number of GPUs (every collective, sizes up to 4 GiB).
every=(--workload gemm,tiled-gemm,stream --collective all-reduce,all-gather,reduce-scatter,all-to-all)
interrupted bench "$logs/interrupted-bench.json" 240 \
  "$tandem" bench "${every[@]}" -b 64M -e 4G -f 2 -n 100 --json "$logs/interrupted-bench.json"
interrupted tune "$logs/interrupted-tune.json" 300 \
  "$tandem" tune "${every[@]}" --json "$logs/interrupted-tune.json" --out "$logs/interrupted.policy"
ls "$logs"/interrupted*.policy 2> /dev/null | sed 's/^/policy file kept: /' | tee -a "$logs/summary.log"
# Interrupted inside its first case: the case's policy file holds the fastest policy so far, marked
# as an unfinished search.
rm -f "$logs"/midcase*.policy
with_default_sigint "$tandem" tune --workload gemm --collective all-reduce --out "$logs/midcase.policy" > "$logs/midcase.log" 2>&1 &
sigint_when $! 120 test -s "$logs/midcase.policy"
code=$?
if grep -q "UNFINISHED" "$logs/midcase.policy" 2> /dev/null && [ "$code" != 0 ]; then
  echo "tune (mid-case) ok: exit $code, kept '$(tail -n 1 "$logs/midcase.policy")' as the best so far" | tee -a "$logs/summary.log"
  echo '{"command": "tune mid-case", "exit": '"$code"', "best_so_far": "'"$(tail -n 1 "$logs/midcase.policy")"'", "ok": true}' \
    >> "$logs/interrupt.jsonl"
else
  echo "tune (mid-case) FAILED: exit $code, policy file: $(head -c 300 "$logs/midcase.policy" 2> /dev/null)" | tee -a "$logs/summary.log"
  status=1
fi
fi

if want scenarios; then
section "ML training scenarios"
timeout 400 "$tandem" bench --workload dp-backward,tp-mlp,tp-attention,fsdp,moe -n 10 --warmup 3 \
  --json "$logs/scenarios-$tag.json" "$@" \
  > "$logs/scenarios.log" 2> "$logs/scenarios.err" || status=1
grep -v '^# \(command\|date\|timing\|check\)' "$logs/scenarios.log" | tee -a "$logs/summary.log"
tail -n 3 "$logs/scenarios.err"
cp "$logs/scenarios-$tag.json" "$out/" 2>/dev/null
fi

if want scenario-tune; then
section "tune: ML training scenarios, where communication is a real share of the step"
# One tune per configuration (docs/WORKLOADS.md, "Configurations measured"); TANDEM_SCENARIO_CONFIGS
# overrides the list (entries separated by ';').
# TANDEM_SCENARIO_ITERS: timed iterations per candidate (default 20).
IFS=';' read -r -a configs <<< "${TANDEM_SCENARIO_CONFIGS:-\
--workload dp-backward --seq 2048;\
--workload fsdp --seq 2048;\
--workload tp-attention --sequence-parallel;\
--workload tp-attention --sequence-parallel --in-place;\
--workload tp-attention --sequence-parallel --in-place --micro-batches 4;\
--workload tp-mlp --sequence-parallel --in-place;\
--workload moe --experts 128 --top-k 8 --expert-ffn 768 --layers 2}"
# A reused TANDEM_LOGS folder may hold an earlier run's files: only this run's tunes are merged.
rm -f "$logs"/scenario-tune-[0-9]*-"$tag".json
i=0
for config in "${configs[@]}"; do
  i=$((i + 1))
  read -r -a args <<< "$config"
  timeout "${TANDEM_TUNE_TIMEOUT:-300}" "$tandem" tune "${args[@]}" -n "${TANDEM_SCENARIO_ITERS:-20}" --warmup 3 --json "$logs/scenario-tune-$i-$tag.json" \
    --out "$logs/scenario-tuned-$i.policy" "$@" > "$logs/scenario-tune-$i.log" 2> "$logs/scenario-tune-$i.err" || status=1
  printf '%s\n' "-- $config" | tee -a "$logs/summary.log"
  sed -n '/^# summary/,$p' "$logs/scenario-tune-$i.log" | grep -v '^# \(command\|date\)' | tee -a "$logs/summary.log"
  tail -n 2 "$logs/scenario-tune-$i.err"
done
merge_results "$logs/scenario-tune-$tag.json" "$logs"/scenario-tune-[0-9]*-"$tag".json  # in glob (name) order
cp "$logs/scenario-tune-$tag.json" "$out/" 2>/dev/null
fi

# Samples SM clock, power and clock-event reasons every 20 ms while each `tandem bench` run (one
# argument string each) runs; its progress lines mark the phases. Writes $logs/clocks-$1.txt and
# $logs/clocks-$1-$tag.json. $2: only progress lines containing it start a phase ("" = every line).
sample_clocks() {
  local name=$1 after=$2 run reasons sampler
  shift 2
  reasons=clocks_event_reasons.active  # named clocks_throttle_reasons.active by older drivers
  nvidia-smi --query-gpu=$reasons --format=csv > /dev/null 2>&1 || reasons=clocks_throttle_reasons.active
  nvidia-smi --query-gpu=index,clocks.sm,power.draw,$reasons --format=csv,noheader,nounits -lms 20 \
    2> "$logs/clocks-$name-smi.err" | python3 -u "$root/scripts/clock_phases.py" stamp > "$logs/clocks-$name-samples.txt" &
  sampler=$!
  for run in "$@"; do
    # shellcheck disable=SC2086  # one argument string per run, split on purpose
    "$tandem" bench $run 2>&1 >> "$logs/clocks-$name-bench.log" \
      | python3 -u "$root/scripts/clock_phases.py" stamp >> "$logs/clocks-$name-marks.txt"
    echo "$(date +%s.%N) end of run" >> "$logs/clocks-$name-marks.txt"  # closes the last phase
  done
  kill $sampler 2> /dev/null; wait $sampler 2> /dev/null
  local provenance=(--bench-log "$logs/clocks-$name-bench.log")
  for run in "$@"; do provenance+=(--run "$run"); done
  python3 "$root/scripts/clock_phases.py" summarize "$logs/clocks-$name-samples.txt" "$logs/clocks-$name-marks.txt" \
    --after "$after" --json "$logs/clocks-$name-$tag.json" "${provenance[@]}" | tee "$logs/clocks-$name.txt" | tee -a "$logs/summary.log"
  grep -E '^ [a-z]' "$logs/clocks-$name-bench.log" | tee -a "$logs/summary.log"
  cp "$logs/clocks-$name-$tag.json" "$out/" 2>/dev/null
}

if want clocks; then
section "clocks: SM clock and power while the persistent GEMM overlaps a collective"
# Whether the GEMM's slowdown under overlap is the power budget. Microbenchmark baselines print no
# progress line, so only the policy's phase ([1/1]) counts; a 1 MiB collective makes `sequential`
# the GEMM alone, a 256^3 GEMM makes it (or `copy-engine`) the collective alone.
each=(-n 400 --warmup 20)
sample_clocks gemm "[1/1]" \
  "--workload gemm --collective all-gather -b 1M -e 1M -p sequential ${each[*]}" \
  "--workload gemm --collective all-gather -b 512M -e 512M -p sequential --count 1 --gemm-shape 256x256x256 ${each[*]}" \
  "--workload gemm --collective all-reduce -b 512M -e 512M -p sequential --count 1 --gemm-shape 256x256x256 ${each[*]}" \
  "--workload gemm --collective all-gather -b 512M -e 512M -p copy-engine --count 1 --gemm-shape 256x256x256 ${each[*]}" \
  "--workload gemm --collective all-reduce -b 512M -e 512M -p copy-engine --count 1 --gemm-shape 256x256x256 ${each[*]}" \
  "--workload gemm --collective all-gather -b 512M -e 512M -p sequential ${each[*]}" \
  "--workload gemm --collective all-gather -b 512M -e 512M -p concurrent ${each[*]}" \
  "--workload gemm --collective all-gather -b 512M -e 512M -p comm-first ${each[*]}" \
  "--workload gemm --collective all-gather -b 512M -e 512M -p comm-first+sm-target:124+copy-engine ${each[*]}" \
  "--workload gemm --collective all-reduce -b 512M -e 512M -p sequential ${each[*]}" \
  "--workload gemm --collective all-reduce -b 512M -e 512M -p comm-first ${each[*]}" \
  "--workload gemm --collective all-reduce -b 512M -e 512M -p comm-first+nccl-ctas:..8 ${each[*]}" \
  "--workload stream --collective all-reduce -b 512M -e 512M -p sequential ${each[*]}" \
  "--workload stream --collective all-reduce -b 512M -e 512M -p shape:4+priority ${each[*]}"
fi

if want scenario-clocks; then
section "clocks: power of each phase of a training scenario (baselines and the tuned policy)"
# The policies `scenario-tune` picked (docs/PERFORMANCE.md), for the scenarios that miss a target.
sample_clocks scenarios "" \
  "--workload dp-backward --seq 2048 -p comm-first+priority+copy-engine -n 150 --warmup 3" \
  "--workload tp-attention --sequence-parallel -p priority+copy-engine -n 200 --warmup 3" \
  "--workload tp-mlp --sequence-parallel -p copy-engine -n 60 --warmup 3"
fi

if want pytorch; then
section "pytorch: DDP and FSDP2 training steps, stock PyTorch and its knobs against tandem, interleaved"
# scripts/pytorch-compare.py (docs/PYTORCH.md): every variant a torchrun launch of its own, round-robin.
# Budget ~7 min of GPU time: 21 launches a round (DDP 10 variants, FSDP2 11) of ~10 s each, most of it
# torchrun, import and NCCL set-up (10 steps of ~40 ms are under a second): 2 rounds ~ 7 min.
# TANDEM_PYTORCH_ROUNDS and TANDEM_PYTORCH_POLICIES (comma-separated) change rounds and policies.
if [ "$gpus" -lt 2 ]; then
  echo "pytorch: skipped, needs 2 GPUs ($gpus visible)" | tee -a "$logs/summary.log"
elif ! python3 -c "import torch" 2> /dev/null && ! command -v torchrun > /dev/null; then
  echo "pytorch: skipped, no torch (python3 cannot import it, no torchrun on PATH)" | tee -a "$logs/summary.log"
else
  timeout 560 python3 "$root/scripts/pytorch-compare.py" --nproc 2 --rounds "${TANDEM_PYTORCH_ROUNDS:-2}" \
    --policies "${TANDEM_PYTORCH_POLICIES:-priority}" --tandem-bin "$tandem" --timeout 120 \
    --out "$logs/pytorch-compare-$tag.json" -- --steps 10 --warmup 3 \
    > "$logs/pytorch-compare.log" 2> "$logs/pytorch-compare.err" || status=1
  tee -a "$logs/summary.log" < "$logs/pytorch-compare.log"
  grep -E 'FAILED' "$logs/pytorch-compare.err" | head -n 10
  cp "$logs/pytorch-compare-$tag.json" "$out/" 2> /dev/null
fi
fi

if want windows; then
section "windows: which memory NCCL registers as a symmetric window"
# tests/tools/window_probe.cu at 2 and 3 ranks sharing GPU 0: registration of cudaMalloc, cuMem (with
# and without a shareable handle, one or two allocations), ncclMemAlloc (whole, 4 KiB and 256 B in),
# each that registers proved by an exact all-gather in it. Then whether PyTorch's caching allocator
# gives cuMem memory (and with which handle type), plain and with expandable segments.
for n in 2 3; do
  id="$logs/window-id-$n"
  rm -f "$id"
  pids=()
  for ((r = 0; r < n; r++)); do
    NCCL_HOSTID="tandem-window-$r" timeout 120 "$root/build/tests/window_probe" "$r" "$n" "$id" \
      > "$logs/window-$n-$r.json" 2> "$logs/window-$n-$r.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
done
python3 - "$logs" > "$logs/window-torch.json" 2> "$logs/window-torch.err" <<'PY' || status=1
# The handle type PyTorch's memory was created with (cuMemGetAllocationPropertiesFromHandle), plain
# and with expandable segments, each in a process of its own (the allocator reads its setting once).
import json, subprocess, sys
probe = r"""
import ctypes, json, os, torch
x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
cuda = ctypes.CDLL("libcuda.so.1")
handle = ctypes.c_ulonglong()
r = cuda.cuMemRetainAllocationHandle(ctypes.byref(handle), ctypes.c_void_p(x.data_ptr()))
out = {"alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "retain_result": r}
if r == 0:
    prop = (ctypes.c_int * 16)()
    out["properties_result"] = cuda.cuMemGetAllocationPropertiesFromHandle(prop, handle)
    out["requested_handle_types"] = prop[1]  # CUmemAllocationProp: type, requestedHandleTypes, ...
    cuda.cuMemRelease(handle)
print(json.dumps(out))
"""
rows = []
for conf in ["", "expandable_segments:True"]:
    env = dict(__import__("os").environ, PYTORCH_CUDA_ALLOC_CONF=conf)
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    rows.append(json.loads(done.stdout) if done.returncode == 0 else {"alloc_conf": conf, "error": done.stderr[-400:]})
print(json.dumps(rows))
PY
python3 - "$logs" "$out/windows-$tag.json" <<'PY' | tee -a "$logs/summary.log"
import glob, json, os, sys
logs, dest = sys.argv[1], sys.argv[2]
ranks = {}
for f in sorted(glob.glob(os.path.join(logs, "window-[0-9]-*.json"))):
    n = os.path.basename(f).split("-")[1]
    text = open(f).read().strip()
    ranks.setdefault(n, []).append(json.loads(text) if text else {"error": open(f[:-5] + ".err").read()[-400:]})
torch_rows = json.load(open(os.path.join(logs, "window-torch.json")))
json.dump({"ranks": ranks, "torch": torch_rows}, open(dest, "w"), indent=1)
for n, rows in ranks.items():
    for row in rows:
        if "registration" not in row:
            print(f"{n} ranks: rank failed: {row.get('error', '')[:200]}")
            continue
        reg = ", ".join(f"{r['memory']}: {'yes' if r['registered'] else 'no'}" for r in row["registration"])
        exact = all(r.get("all_gather_exact", True) for r in row["registration"])
        print(f"{n} ranks, rank {row['rank']}: {reg}; all-gathers exact: {exact}")
for row in torch_rows:
    print(f"torch {row.get('alloc_conf') or '(default)'}: {row}")
PY
fi

if want route-timing; then
section "route timing: the route's all-reduce per call, staged and with peer copies, beside NCCL's, interleaved"
# tests/tools/route_timing.cu: 1 MiB, 25 MiB and 25 MiB + 4 B of fp32 (DDP's buckets), TANDEM_ROUTE_TIMING_ROUNDS
# rounds (default 5), each form first in turn; every result checked exact. Ranks sharing a GPU are a host each
# to NCCL (NCCL_HOSTID), which then maps no peer's windows: no peer copies there, only NCCL (over sockets) and
# the staged route, whose times are no speed result. Peer copies are timed where ranks have GPUs of their own.
runs=("2 shared" "3 shared")
[ "$gpus" -ge 2 ] && runs=("2 own" "${runs[@]}")
for run in "${runs[@]}"; do
  read -r n placement <<< "$run"
  id="$logs/route-timing-id-$n-$placement"
  rm -f "$id"
  pids=()
  for ((r = 0; r < n; r++)); do
    hostid=()
    [ "$placement" = shared ] && hostid=(env NCCL_HOSTID="tandem-route-timing-$r" CUDA_VISIBLE_DEVICES=0)
    "${hostid[@]}" timeout 300 "$root/build/tests/route_timing" "$r" "$n" "$id" "${TANDEM_ROUTE_TIMING_ROUNDS:-5}" \
      > "$logs/route-timing-$n-$placement-$r.json" 2> "$logs/route-timing-$n-$placement-$r.err" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
done
python3 - "$logs" "$out/route-timing-$tag.json" <<'PY' | tee -a "$logs/summary.log"
import glob, json, os, sys
logs, dest = sys.argv[1], sys.argv[2]
runs = {}
for f in sorted(glob.glob(os.path.join(logs, "route-timing-*-*-[0-9].json"))):
    _, _, n, placement, _ = os.path.basename(f)[:-5].split("-")
    text = open(f).read().strip()
    runs.setdefault(f"{n} ranks, {placement}", []).append(
        json.loads(text) if text else {"error": open(f[:-5] + ".err").read()[-400:]})
json.dump(runs, open(dest, "w"), indent=1)
print("%-18s %-12s %10s %14s %18s %18s %6s" % ("run (rank 0)", "form", "MiB", "ms/call median",
                                                "range", "staged/peer MiB", "exact"))
for run, ranks in runs.items():
    first = ranks[0]
    if "rows" not in first:
        print(f"{run}: failed: {first.get('error', '')[:200]}")
        continue
    if not first["peers_by_address"]:
        print(f"{run}: no peer-copies rows: NCCL maps no peer's windows here (its LSA team is each rank alone)")
    for row in first["rows"]:
        print("%-18s %-12s %10.2f %14.3f %8.3f-%-9.3f %8.2f/%-9.2f %6s" % (
            run, row["form"], row["bytes"] / 2**20, row["median_ms"], row["min_ms"], row["max_ms"],
            row["staged_bytes_per_call"] / 2**20, row["peer_bytes_per_call"] / 2**20, row["wrong"] == 0))
PY
fi

if want launch-overhead; then
section "launch overhead: the interposer's cost per launch, interleaved rounds"
# tests/preload_target/launch_overhead.cu (200 000 empty launches a round, 7 rounds, median) plain and
# under each form, TANDEM_OVERHEAD_ROUNDS interleaved repetitions (default 3). No collective runs, so
# the targeted forms decide "nothing outstanding" per launch, and compute-always shapes every launch.
forms=(plain priority shape:2+priority shape:2+priority+compute-always sm-target:96+priority timeline)
for ((rep = 0; rep < ${TANDEM_OVERHEAD_ROUNDS:-3}; rep++)); do
  for form in "${forms[@]}"; do
    cmd=("$root/build/bin/launch_overhead")
    case $form in
      plain) ;;
      timeline) cmd=("$tandem" run --policy shape:2+priority --timeline --log-level error -- "${cmd[@]}") ;;
      *) cmd=("$tandem" run --policy "$form" --log-level error -- "${cmd[@]}") ;;
    esac
    line=$(timeout 120 "${cmd[@]}" 2> /dev/null | grep '^{' | tail -n 1)
    echo "{\"form\": \"$form\", \"rep\": $rep, \"command\": \"${cmd[*]#$root/}\", \"result\": ${line:-null}}"
  done
done > "$logs/launch-overhead.jsonl"
python3 - "$logs/launch-overhead.jsonl" "$out/launch-overhead-$tag.json" <<'PY' | tee -a "$logs/summary.log"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"rows": rows}, open(sys.argv[2], "w"), indent=1)
plain = [r["result"]["median_us_per_launch"] for r in rows if r["form"] == "plain" and r["result"]]
base = statistics.median(plain) if plain else float("nan")
print(f"{'form':34} {'median us/launch (per repetition)':40} {'vs plain':>9}")
for form in dict.fromkeys(r["form"] for r in rows):
    xs = [r["result"]["median_us_per_launch"] for r in rows if r["form"] == form and r["result"]]
    if not xs:
        print(f"{form:34} FAILED")
        continue
    m = statistics.median(xs)
    print(f"{form:34} {' '.join(f'{x:.3f}' for x in xs):40} {m - base:+9.3f}")
PY
fi

if want cost; then
section "cost: each control's compute tax and device memory on a real step with nothing to hide (one rank)"
# scripts/pytorch-compare.py (docs/PERFORMANCE.md, "What the controls cost"): a Transformers Llama of
# 1.9 B parameters (hidden 4096, 8 layers, seq 2048, AdamW) under DDP at world size 1, where no
# collective runs beside the compute: stock against `tandem run --policy P` for each control, targeted
# (the default) and always-on (compute-always), interleaved, TANDEM_COST_ROUNDS rounds (default 3).
# ~20 s a launch; TANDEM_COST_POLICIES (comma-separated) picks the policies, to split the run over calls.
if ! python3 -c "import torch, transformers" 2> /dev/null; then
  echo "cost: skipped, python3 cannot import torch and transformers" | tee -a "$logs/summary.log"
else
  cost_policies=${TANDEM_COST_POLICIES:-priority,shape:2,shape:2+compute-always,shape:4,shape:4+compute-always,sm-target:96,sm-target:96+compute-always,copy-engine}
  timeout 570 python3 "$root/scripts/pytorch-compare.py" --programs examples/reach/llama_train.py --nproc 1 \
    --rounds "${TANDEM_COST_ROUNDS:-3}" --variants stock,tandem-run --policies "$cost_policies" --tandem-bin "$tandem" \
    --timeout 150 --out "$logs/cost-$tag.json" -- --parallel ddp --hidden 4096 --intermediate 11008 --layers 8 \
    --heads 32 --seq 2048 --batch 1 --steps 12 > "$logs/cost.log" 2> "$logs/cost.err" || status=1
  tee -a "$logs/summary.log" < "$logs/cost.log"
  grep -E 'FAILED' "$logs/cost.err" | head -n 10
  cp "$logs/cost-$tag.json" "$out/" 2> /dev/null
fi
fi

if want targeted; then
section "targeted: shape and sm-target only beside an outstanding collective, DDP and FSDP2, 2 ranks sharing the GPU"
# The Transformers Llama of examples/reach (its default size, 6 steps) stock and under `tandem run`:
# the losses must be stock's bitwise (shaping and SM targets never change a result), and the
# interposer's counts say how many compute launches were shaped beside a collective and how many were
# left alone (no-collective-in-flight), per rank. Under a shape policy each rank also records its
# timeline, whose check (tandem/shaping_check.h) says what share of the shaped kernels ran beside
# communication and what share of the computation beside communication was shaped. The DDP and FSDP2
# programs of examples/pytorch get the same check under the targeted shape. Shared-GPU times are not
# speed results.
targeted_policies=${TANDEM_TARGETED_POLICIES:-shape:2+priority,shape:2+priority+compute-always,sm-target:96+priority}
targeted_run() {  # DIR POLICY PROGRAM ARGS...
  local dir=$1 policy=$2
  shift 2
  mkdir -p "$dir"
  local prefix=()
  if [ "$policy" != stock ]; then
    prefix=("$tandem" run --policy "$policy" --stats "$dir/stats-%p.json")
    [[ "$policy" == *shape:* ]] && prefix+=(--timeline)
    prefix+=(--)
  fi
  timeout 300 torchrun --standalone --nproc-per-node 2 --no-python "${prefix[@]}" python3 \
    "$root/tests/tools/shared_gpu_rank.py" "$@" > "$dir/out.log" 2>&1 ||
    { echo "targeted $(basename "$dir"): FAILED (exit $?)" | tee -a "$logs/summary.log"; status=1; }
}
for parallel in ddp fsdp2; do
  for policy in stock ${targeted_policies//,/ }; do
    targeted_run "$logs/targeted-$parallel-$(echo "$policy" | tr ':+' '--')" "$policy" \
      "$root/examples/reach/llama_train.py" --parallel "$parallel" --steps 6
  done
done
for program in ddp_overlap fsdp2_mlp; do
  for policy in stock shape:2+priority; do
    targeted_run "$logs/targeted-$program-$(echo "$policy" | tr ':+' '--')" "$policy" \
      "$root/examples/pytorch/$program.py" --steps 8 --warmup 2 ${TANDEM_TARGETED_EXAMPLE_ARGS:---hidden 4096 --layers 4}
  done
done
python3 - "$logs" "$out/targeted-$tag.json" "$root" <<'PY' | tee -a "$logs/summary.log" || status=1
import glob, importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("pc", os.path.join(sys.argv[3], "scripts", "pytorch-compare.py"))
pc = importlib.util.module_from_spec(spec); spec.loader.exec_module(pc)
rows, failed = [], 0
for d in sorted(glob.glob(os.path.join(sys.argv[1], "targeted-*"))):
    result = pc.parse_result(open(os.path.join(d, "out.log"), errors="replace").read())
    stats = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(d, "stats-*.json")))]
    stats = [s for s in stats if s.get("launches", {}).get("compute")]  # the ranks, not torchrun
    # The Llama reports every step's loss; the examples of examples/pytorch the final one.
    losses = result and (result.get("losses") or ([result["loss"]] if "loss" in result else None))
    rows.append({"run": os.path.basename(d), "losses": losses,
                 "shaped": [s["compute_shaped"] for s in stats],
                 "left_alone": [s["skipped"].get("no-collective-in-flight", 0) for s in stats],
                 "gemms_capped_beside": [s["cublas"].get("gemms_capped_beside_collective", 0) for s in stats],
                 "gemms_left_alone": [s["cublas"].get("gemms_left_alone", 0) for s in stats],
                 "compute_controls": sorted({s.get("compute_controls", "") for s in stats}),
                 # The timeline's check of the targeted rule, per rank (docs/RUN.md): shaped kernels
                 # beside communication, and the computation beside it that was shaped.
                 "shaping": [d.get("shaping") for s in stats for d in (s.get("timeline") or {}).get("devices", [])]})
program_of = lambda run: run.split("-")[1]
stock = {program_of(r["run"]): r["losses"] for r in rows if r["run"].endswith("-stock")}
share = lambda v: "—" if v is None else f"{100 * v:.1f} %"
for r in rows:
    # Shaping never changes a kernel's arithmetic: bitwise. A GEMM capped to fewer SMs may take another
    # cuBLAS algorithm and round differently: within pytorch-compare's tolerance (one bf16 unit).
    per_step = [pc.loss_agreement([a], b) for a, b in zip(r["losses"] or [], stock.get(program_of(r["run"])) or [])]
    r["losses_vs_stock"] = ("bitwise" if per_step and all(x == "bitwise" for x in per_step) else
                            "within tolerance" if per_step and "differs" not in per_step else "differs")
    failed += r["losses_vs_stock"] == "differs" or (r["losses_vs_stock"] != "bitwise" and "sm-target" not in r["run"])
    checks = [c for c in r["shaping"] if c]
    # Per rank: shaped kernels beside communication; of the shapeable computation beside
    # communication, the share shaped and, of what was left alone, the share beside collectives issued
    # after the kernel; the share of all computation beside it the policy cannot shape.
    unshapeable = lambda c: (1 - c["beside_communication_shapeable_ns"] / c["beside_communication_ns"]
                             if c["beside_communication_ns"] else None)
    check = ("  shaped beside comm " + "/".join(share(c["shaped_beside_share"]) for c in checks) +
             ", shapeable beside comm shaped " + "/".join(share(c["beside_shaped_share"]) for c in checks) +
             " (left alone: beside comm issued later " + "/".join(share(c["left_alone_later_share"]) for c in checks) + ")" +
             " (unshapeable " + "/".join(share(unshapeable(c)) for c in checks) + ")") if checks else ""
    print(f'{r["run"]:<48} losses {r["losses_vs_stock"]:<16}  shaped {r["shaped"]}  '
          f'left alone {r["left_alone"]}  GEMMs capped {r["gemms_capped_beside"]} / left {r["gemms_left_alone"]}{check}')
json.dump({"kind": "targeted-check", "rows": rows}, open(sys.argv[2], "w"), indent=1)
sys.exit(1 if failed else 0)
PY
fi

# tandem_torch_package PYTHON: tandem.torch with its extension modules, built on this machine for PYTHON
# (its CPython, PyTorch's NCCL) with `pip install --no-build-isolation --no-deps --target` (python/README.md)
# into build/tandem-py, which later calls reuse (build/ stays on the machine). Prints the folder.
tandem_torch_package() {
  local python=$1 target=${TANDEM_TORCH_TARGET:-$root/build/tandem-py}
  if ! PYTHONPATH="$target" "$python" -c "import torch, tandem.torch as tt; tt.gpu_module()" > /dev/null 2>&1; then
    rm -rf "$target"
    (cd "$root" && "$python" -m pip install --no-build-isolation --no-deps --target "$target" .) \
      > "$logs/tandem-py-install.log" 2>&1 || return 1
  fi
  echo "$target"
}

if want torch-tests; then
section "tandem.torch's GPU tests: DDP and FSDP2 at 2 ranks, DDP at 3 (sharing GPU 0 when there is one), stock against tandem.torch"
# tests/python/test_torch_gpu.py with the package built here (tandem_torch_package): losses against stock,
# the process group's settings, one NCCL in the process, the copy-engine route's counts, DDP's rebuilt
# buckets in window memory, staged only the first step and each later bucket's remainder (at 3 ranks), or
# nothing where the ranks have GPUs of their own and TANDEM_ROUTE_PEER_COPIES=1 (the fixtures set it).
if ! python3 -c "import torch, pytest" 2> /dev/null; then
  echo "torch-tests: skipped, python3 cannot import torch and pytest" | tee -a "$logs/summary.log"
elif ! pkg=$(tandem_torch_package python3); then
  echo "torch-tests: FAILED, tandem.torch could not be built ($(tail -n 3 "$logs/tandem-py-install.log"))" \
    | tee -a "$logs/summary.log"
  status=1
else
  (cd "$root/tests/python" && PYTHONPATH="$pkg" timeout 540 python3 -m pytest -q -p no:cacheprovider \
     --junitxml="$logs/torch-tests.xml" test_torch_gpu.py) > "$logs/torch-tests.log" 2>&1 || status=1
  echo "torch-tests: $(tail -n 1 "$logs/torch-tests.log")" | tee -a "$logs/summary.log"
  grep -E '^(FAILED|ERROR) ' "$logs/torch-tests.log" | tee -a "$logs/summary.log"
fi
fi

if want frameworks; then
section "frameworks: Megatron-core and DeepSpeed stock and under tandem run, 2 ranks sharing GPU 0; overlap on/off timeline"
# examples/frameworks/framework_check.py (docs/FRAMEWORKS.md), reach-check's rows for the frameworks:
# Megatron-core 0.19 (DP with overlap_grad_reduce; the distributed optimizer with overlap_param_gather;
# TP=2 with sequence parallelism; PP=2) and DeepSpeed 0.19 (ZeRO-1, 2, 3 with overlap_comm), each stock and
# under `tandem run --policy P` for P in copy-engine, priority+nccl-ctas:2..4 and shape:2+priority: losses
# against stock (bitwise at 2 ranks), calls and bytes by route and reason, communicators configured and
# NCCL launches elevated, launches shaped beside a collective; then `tandem run --timeline` with each
# framework's overlap option on and off (and Megatron's with CUDA_DEVICE_MAX_CONNECTIONS=1). 33 launches,
# 4 at a time, ~5 min. The frameworks travel as wheels in .whl/ (scripts/framework-wheels.sh, run where
# PyPI is reachable; carry .whl), installed into /tmp/site. TANDEM_FRAMEWORKS_ONLY (programs or rows,
# e.g. 'megatron-*'), _POLICIES, _RANKS, _JOBS, _SECONDS, _PROGRAM_ARGS change what runs;
# TANDEM_FRAMEWORKS_TIMELINE=0 leaves the timeline runs out, =only runs them alone.
if ! ls "$root"/.whl/megatron_core-*.whl "$root"/.whl/deepspeed-*.whl > /dev/null 2>&1; then
  echo "frameworks: skipped, no megatron-core or deepspeed wheel in .whl/ (scripts/framework-wheels.sh; carry .whl)" \
    | tee -a "$logs/summary.log"
elif ! python3 -c "import torch, transformers" 2> /dev/null; then
  echo "frameworks: skipped, python3 cannot import torch and transformers" | tee -a "$logs/summary.log"
elif ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$root"/.whl/*.whl > "$logs/frameworks-install.log" 2>&1; then
  echo "frameworks: FAILED, the wheels did not install (frameworks-install.log):" | tee -a "$logs/summary.log"
  tail -n 5 "$logs/frameworks-install.log" | tee -a "$logs/summary.log"
  status=1
else
  started=$SECONDS
  PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" python3 -W ignore -c \
    'import deepspeed; from megatron.core import package_info as p; print("frameworks: megatron-core", p.__version__, "deepspeed", deepspeed.__version__)' \
    2> "$logs/frameworks-import.log" | tee -a "$logs/summary.log"
  PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" timeout "${TANDEM_FRAMEWORKS_SECONDS:-520}" \
    python3 "$root/examples/frameworks/framework_check.py" --ranks "${TANDEM_FRAMEWORKS_RANKS:-2}" \
    --only "${TANDEM_FRAMEWORKS_ONLY:-}" --policies "${TANDEM_FRAMEWORKS_POLICIES:-copy-engine,priority+nccl-ctas:2..4,shape:2+priority}" \
    --jobs "${TANDEM_FRAMEWORKS_JOBS:-4}" --timeout 240 --program-args "${TANDEM_FRAMEWORKS_PROGRAM_ARGS:-}" \
    $(case ${TANDEM_FRAMEWORKS_TIMELINE:-1} in 0) echo --no-timeline ;; only) echo --timeline-only ;; esac) \
    --tandem-bin "$tandem" --work-dir "$logs/frameworks" --out-dir "$logs" \
    > "$logs/frameworks.md" 2> "$logs/frameworks.err" || status=1
  grep -E '^\[[0-9]+/[0-9]+\]|^timeline |^# ' "$logs/frameworks.err" | tee -a "$logs/summary.log"
  grep -E -A3 'FAILED|Traceback' "$logs/frameworks.err" | head -n 30
  tee -a "$logs/summary.log" < "$logs/frameworks.md"
  echo "frameworks: $((SECONDS - started)) s" | tee -a "$logs/summary.log"
  cp "$logs"/frameworks-reach-*.json "$logs/frameworks-timeline.json" "$logs/frameworks.md" "$out/" 2> /dev/null
fi
fi

if want megatron-lm; then
section "megatron-lm: Megatron-LM's pretrain_gpt.py stock and under tandem run, ranks sharing GPU 0"
# examples/frameworks/megatron_lm_check.py (docs/FRAMEWORKS.md): Megatron-LM's own training script on its mock
# data (DP with --overlap-grad-reduce; the distributed optimizer with --overlap-param-gather), stock and under
# `tandem run --policy P` for P in copy-engine and priority+nccl-ctas:2..4: the printed losses against stock,
# the route's share of the bytes between ranks, communicators configured, NCCL launches elevated. The tree
# travels in .whl/megatron-lm (scripts/megatron-lm-source.sh; carry .whl). TANDEM_MEGATRON_LM_RANKS (default 2),
# _ONLY, _POLICIES, _SECONDS.
if [ ! -f "$root/.whl/megatron-lm/pretrain_gpt.py" ]; then
  echo "megatron-lm: skipped, no .whl/megatron-lm (scripts/megatron-lm-source.sh; carry .whl)" | tee -a "$logs/summary.log"
else
  started=$SECONDS
  # The first run's `make` of the dataset helper, as Megatron-LM's rank 0 does it (here once, before the
  # rows run side by side); where it cannot compile, the wheel's helper that megatron-lm-source.sh put there.
  make -C "$root/.whl/megatron-lm/megatron/core/datasets" > "$logs/megatron-lm-make.log" 2>&1 ||
    echo "megatron-lm: the dataset helper did not build (megatron-lm-make.log)" | tee -a "$logs/summary.log"
  timeout "${TANDEM_MEGATRON_LM_SECONDS:-400}" python3 "$root/examples/frameworks/megatron_lm_check.py" \
    --ranks "${TANDEM_MEGATRON_LM_RANKS:-2}" --only "${TANDEM_MEGATRON_LM_ONLY:-}" \
    --policies "${TANDEM_MEGATRON_LM_POLICIES:-copy-engine,priority+nccl-ctas:2..4}" --tandem-bin "$tandem" \
    --work-dir "$logs/megatron-lm" --out-dir "$logs" > "$logs/megatron-lm.md" 2> "$logs/megatron-lm.err" || status=1
  grep -E '^\[|^# ' "$logs/megatron-lm.err" | tee -a "$logs/summary.log"
  grep -E -A12 'FAILED|Traceback' "$logs/megatron-lm.err" | head -n 40
  tee -a "$logs/summary.log" < "$logs/megatron-lm.md"
  echo "megatron-lm: $((SECONDS - started)) s" | tee -a "$logs/summary.log"
  cp "$logs/megatron-lm-check.json" "$logs/megatron-lm.md" "$out/" 2> /dev/null
fi
fi

if want reach; then
section "reach: real programs' collectives through the copy-engine route, 2, 3 and 4 ranks sharing one GPU"
# scripts/reach-check.py (docs/PYTORCH.md): a Transformers Llama under DDP and FSDP2 (eager and
# torch.compile), PyTorch's all_to_all_single, coalesced collectives and a CUDA-graph-captured step, JAX
# over jax.distributed, examples/overlap; each stock, under `tandem run --policy copy-engine` and (DDP,
# FSDP2) through tandem.torch. 54 rows, 3 at a time (TANDEM_REACH_JOBS), within 570 s (TANDEM_REACH_SECONDS); rows cut short
# are missing from the JSON ("complete": false): run them with TANDEM_REACH_ONLY (patterns such as
# 'llama-*-compile,jax/4') in another call. TANDEM_REACH_RANKS changes the rank counts, TANDEM_REACH_POLICY
# the policy (with priority or nccl-* settings: a second table shows whether they reached every communicator
# and NCCL launch).
if ! python3 -c "import torch" 2> /dev/null; then
  echo "reach: skipped, python3 cannot import torch" | tee -a "$logs/summary.log"
else
  started=$SECONDS
  if pkg=$(tandem_torch_package python3); then
    echo "reach: tandem.torch from $pkg (ready in $((SECONDS - started)) s)" | tee -a "$logs/summary.log"
  else
    pkg="$root/build/python"
    echo "reach: tandem.torch could not be built (tandem-py-install.log); its rows use $pkg" | tee -a "$logs/summary.log"
    tail -n 5 "$logs/tandem-py-install.log"
  fi
  timeout $((${TANDEM_REACH_SECONDS:-570} - (SECONDS - started))) python3 "$root/scripts/reach-check.py" --ranks "${TANDEM_REACH_RANKS:-2,3,4}" \
    --only "${TANDEM_REACH_ONLY:-}" --jobs "${TANDEM_REACH_JOBS:-3}" --timeout 240 --pythonpath "$pkg" \
    --policy "${TANDEM_REACH_POLICY:-copy-engine}" \
    --tandem-bin "$tandem" --overlap-bin "$root/build/bin/overlap_allreduce" --work-dir "$logs/reach" \
    --out "$logs/reach-$tag.json" > "$logs/reach.md" 2> "$logs/reach.err" || status=1
  grep -E '^\[[0-9]+/[0-9]+\]|^# ' "$logs/reach.err" | tee -a "$logs/summary.log"
  tail -n 1 "$logs/reach.md" | tee -a "$logs/summary.log"
  cp "$logs/reach-$tag.json" "$logs/reach.md" "$out/" 2> /dev/null
fi
fi

if want timeline; then
section "timeline: tandem run --timeline on a program of known overlap, on DDP and FSDP2, its cost, HTA's figure"
# tests/gpu/test_timeline_gpu.cpp: tandem's figures against CUDA events around each kernel of
# build/bin/timeline_program (serial, concurrent, partial steps), within 2 %.
gtest_section timeline "$root/build/tests/test_timeline_gpu"
"$tandem" run --timeline --step-range 'step*' --trace "$logs/timeline-known-overlap-trace.json" \
  -- "$root/build/bin/timeline_program" --repeat 2 > "$logs/timeline-known-overlap.log" 2>&1 || status=1
grep -E 'timeline: GPU|records lost|steps without' "$logs/timeline-known-overlap.log" | tee -a "$logs/summary.log"
# The PyTorch programs, two ranks (sharing GPU 0 when there is one: times distorted, say so):
# TANDEM_TIMELINE_PARTS picks figures (DDP, FSDP2, stock and priority), compile (the same under
# torch.compile), overhead (>= 3 interleaved rounds with and without --timeline), hta (HTA's figure on
# a torch.profiler trace of the same steps; its wheels in .whl/, installed into a private folder).
# TANDEM_TIMELINE_PROGRAM_ARGS and TANDEM_HTA_PROGRAM_ARGS replace the programs' arguments (a smaller
# model keeps shared-GPU runs short: their all-reduces go over sockets).
parts=${TANDEM_TIMELINE_PARTS:-figures,overhead}
record_parts=$(printf '%s' "$parts" | tr ',' '\n' | grep -vx hta | paste -sd, -)
if ! python3 -c "import torch" 2> /dev/null || ! command -v torchrun > /dev/null; then
  echo "timeline: PyTorch parts skipped, no torch" | tee -a "$logs/summary.log"
else
  if [ -n "$record_parts" ]; then
    timeout 560 python3 "$root/scripts/timeline-record.py" --tandem "$tandem" --nproc 2 --parts "$record_parts" \
      --rounds "${TANDEM_TIMELINE_ROUNDS:-3}" --out "$logs/timeline-pytorch-$tag.json" -- ${TANDEM_TIMELINE_PROGRAM_ARGS:---steps 20 --warmup 5} \
      > "$logs/timeline-record.log" 2> "$logs/timeline-record.err" || status=1
    tee -a "$logs/summary.log" < "$logs/timeline-record.log"
    grep -A3 FAILED "$logs/timeline-record.err" | head -n 20
    python3 "$root/scripts/timeline-record.py" --table "$logs/timeline-pytorch-$tag.json" > "$logs/timeline-table.md" 2>&1
    cp "$logs/timeline-pytorch-$tag.json" "$logs/timeline-table.md" "$out/" 2> /dev/null
  fi
  if [[ ",$parts," == *",hta,"* ]]; then
    pylib="$logs/pylib"
    if ls "$root"/.whl/holistictraceanalysis-*.whl > /dev/null 2>&1; then
      python3 -m pip install --quiet --no-deps --no-index --target "$pylib" "$root"/.whl/*.whl > "$logs/hta-install.log" 2>&1 \
        || echo "timeline: HTA wheels did not install (see hta-install.log)" | tee -a "$logs/summary.log"
    fi
    PYTHONPATH="$pylib${PYTHONPATH:+:$PYTHONPATH}" timeout 560 python3 "$root/scripts/hta-compare.py" \
      --tandem "$tandem" --nproc 2 --rounds "${TANDEM_HTA_ROUNDS:-2}" --traces "$logs/hta-traces" \
      --out "$logs/hta-compare-$tag.json" -- ${TANDEM_HTA_PROGRAM_ARGS:---steps 10 --warmup 3} > "$logs/hta-compare.log" 2>&1 || status=1
    tee -a "$logs/summary.log" < "$logs/hta-compare.log"
    cp "$logs/hta-compare-$tag.json" "$out/" 2> /dev/null
  fi
fi
fi

if want cli; then
section "cli: a microbenchmark's --trace, tune's progress and --resume"
# --trace of a microbenchmark: per policy, compute and the collective on their own tracks (one
# track under sequential).
"$tandem" bench --workload gemm --collective all-reduce -b 256M -e 256M -p concurrent,priority,sequential \
  --trace "$logs/micro-trace.json" -q > "$logs/micro-trace.log" 2>&1 || status=1
python3 - "$logs/micro-trace.json" <<'PY' | tee -a "$logs/summary.log" || status=1
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
tracks = collections.defaultdict(lambda: collections.defaultdict(set))
for e in events:
    if e["ph"] == "X":
        tracks[e["pid"]][e["cat"]].add(e["tid"])
bad = [n for p, n in names.items()
       if not (tracks[p]["compute"] and tracks[p]["collective"]
               and (n.endswith("sequential") or not tracks[p]["compute"] & tracks[p]["collective"]))]
print("micro trace:", len(names), "policies,", "FAILED: " + ", ".join(bad) if bad or not names else "ok")
sys.exit(1 if bad or not names else 0)
PY
# tune's progress lines, an interrupted tune resumed: the finished case is not tuned again.
every=(--workload stream,gemm,tiled-gemm --collective all-reduce -b 256M -e 256M)
rm -f "$logs"/resume*.policy "$logs/resume.json"
with_default_sigint "$tandem" tune "${every[@]}" --json "$logs/resume.json" --out "$logs/resume.policy" > "$logs/resume-1.log" 2>&1 &
sigint_when $! 200 grep -q '"tune_role": "tuned"' "$logs/resume.json"
grep -m 2 'policies, best so far' "$logs/resume-1.log" | tee -a "$logs/summary.log"
"$tandem" tune "${every[@]}" --json "$logs/resume.json" --out "$logs/resume.policy" --resume "$logs/resume.json" \
  > "$logs/resume-2.log" 2>&1 || status=1
grep 'resumed' "$logs/resume-2.log" | head -n 3 | tee -a "$logs/summary.log"
python3 - "$logs/resume.json" <<'PY' | tee -a "$logs/summary.log" || status=1
import json, sys
doc = json.load(open(sys.argv[1]))
tuned = [r["workload"] for r in doc["rows"] if r.get("tune_role") == "tuned"]
ok = doc.get("complete") is True and sorted(tuned) == ["gemm", "stream", "tiled-gemm"]
print("resume:", "ok" if ok else "FAILED", "complete", doc.get("complete"), "tuned", tuned)
sys.exit(0 if ok else 1)
PY
fi

if want ab; then
section "ab: the old binaries (main at the merge base) and the new ones, interleaved on GPU 0"
# A refactoring must leave results unchanged. The old tree (TANDEM_AB_OLD: a folder, or a tarball of
# one; by default .device-carry/ab-old.tgz, which `git archive --format=tar.gz -o
# .device-carry/ab-old.tgz $(git merge-base HEAD main)` makes and the device tool carries) and this
# working tree are built here alike, side by side, then run in turn on GPU 0, which goes first
# alternating: the single-GPU suite one workload at a time, then 2 and 4 ranks sharing the GPU with
# the shared-gpu section's runs. scripts/ab-compare.py prints the comparison (ab.txt in $OUT): the
# same rows, 0 wrong elements, no best policy reversed (the old run's spread separates it, the new
# run's another ahead of it).
ab=$(mktemp -d)
ab_start=$SECONDS
old_src=${TANDEM_AB_OLD:-$root/.device-carry/ab-old.tgz}
mkdir -p "$ab/old" "$ab/new"
if [ -d "$old_src" ]; then
  cp -r "$old_src/." "$ab/old/"
elif [ -f "$old_src" ]; then
  tar -xzf "$old_src" -C "$ab/old"
else
  echo "ab: no old tree at $old_src (TANDEM_AB_OLD)" | tee -a "$logs/summary.log"
  status=1
fi
tar -C "$root" --exclude=./build --exclude='./build-*' --exclude=./.device-carry --exclude=./.git \
  --exclude=./gpu-check-out -cf - . | tar -C "$ab/new" -xf -
for side in old new; do
  # Both builds at once, half the cores each; MPI's bootstrap module where MPI is found.
  (cmake -S "$ab/$side" -B "$ab/$side/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
     -DTANDEM_BUILD_TESTS=OFF > "$logs/ab-build-$side.log" 2>&1 \
     && cmake --build "$ab/$side/build" -j "$(( $(nproc) / 2 ))" --target tandem_cli >> "$logs/ab-build-$side.log" 2>&1 \
     && { cmake --build "$ab/$side/build" --target tandem_mpi >> "$logs/ab-build-$side.log" 2>&1 || true; }) &
done
wait
for side in old new; do
  [ -x "$ab/$side/build/bin/tandem" ] || { echo "ab: the $side build failed ($(tail -n 3 "$logs/ab-build-$side.log"))" \
    | tee -a "$logs/summary.log"; status=1; }
done
echo "ab: built in $((SECONDS - ab_start)) s" | tee -a "$logs/summary.log"
ab_pairs=()
ab_first=old
# ab_pair NAME LIMIT WORDS...: the run once with each side's binary (TANDEM in WORDS), the side that
# goes first alternating from pair to pair, each writing --json to $logs/ab-NAME-SIDE.json.
ab_pair() {
  local name=$1 limit=$2 side w
  shift 2
  for side in $ab_first $([ $ab_first = old ] && echo new || echo old); do
    local words=()
    for w in "$@"; do [ "$w" = TANDEM ] && words+=("$ab/$side/build/bin/tandem") || words+=("$w"); done
    timeout "$limit" "${words[@]}" --json "$logs/ab-$name-$side.json" > "$logs/ab-$name-$side.log" 2>&1 \
      || { echo "ab: $name ($side) failed: $(grep -m 1 -i error "$logs/ab-$name-$side.log")" | tee -a "$logs/summary.log"; status=1; }
  done
  ab_first=$([ $ab_first = old ] && echo new || echo old)
  ab_pairs+=("$name" "$logs/ab-$name-old.json" "$logs/ab-$name-new.json")
  echo "ab: $name done at $((SECONDS - ab_start)) s" >> "$logs/summary.log"
}
if [ "$status" = 0 ]; then
  export CUDA_VISIBLE_DEVICES=0
  # TANDEM_AB_WORKLOADS and TANDEM_AB_RANKS narrow a run that has less device time than the whole.
  for w in ${TANDEM_AB_WORKLOADS:-gemm tiled-gemm stream}; do ab_pair "suite-$w" 150 TANDEM bench --workload "$w" -q; done
  for ranks in ${TANDEM_AB_RANKS:-2 4}; do
    shared=(mpirun -np "$ranks" --allow-run-as-root --oversubscribe -x CUDA_VISIBLE_DEVICES TANDEM bench
            --allow-shared-gpu -q)
    ab_pair "shared-$ranks-micro" 90 "${shared[@]}" "${shared_micro[@]}"
    ab_pair "shared-$ranks-scenarios" 150 "${shared[@]}" "${shared_scenarios[@]}" --timeout 140
  done
  unset CUDA_VISIBLE_DEVICES
  python3 "$root/scripts/ab-compare.py" --record "$logs/ab-record-$tag.json" "${ab_pairs[@]}" > "$logs/ab.txt" || status=1
  cp "$logs/ab-record-$tag.json" "$out/" 2> /dev/null
  grep -E '^(ab:|DIFFERS|## |[a-z-]+: [0-9]+ of)' "$logs/ab.txt" | tee -a "$logs/summary.log"
  cp "$logs/ab.txt" "$out/"
fi
echo "ab: $((SECONDS - ab_start)) s in all" | tee -a "$logs/summary.log"
rm -rf "$ab"
fi

if want interposer-programs || want faults || want interrupt; then
  # One JSON of the reliability sections (docs/RELIABILITY.md): every test case with its outcome,
  # the fault timings, the interrupted runs, and what they ran on.
  python3 "$root/scripts/reliability-record.py" --logs "$logs" --tandem "$tandem" \
    --command "scripts/gpu-check.sh $mode" > "$logs/reliability-$tag.json" || status=1
fi

section "result: $([ $status = 0 ] && echo OK || echo FAILED)"
# The device tool returns at most 8 files: the main results, the summary, and everything in logs.tgz.
for f in summary.log suite-$tag.json collectives-$tag.json tune-$tag.json reliability-$tag.json; do
  [ -f "$logs/$f" ] && cp "$logs/$f" "$out/"
done
tar czf "$out/logs.tgz" -C "$logs" .
# The reach table last, where the device tool's output tail shows it.
if want reach && [ -s "$logs/reach.md" ]; then
  section "reach table (reach-$tag.json)"
  cat "$logs/reach.md"
fi
exit $status
