#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.cpp, into build-fuzz/; clang++, or $FUZZ_CXX) and
# fuzzes each for a bounded time from its seed corpus (tests/fuzz/corpus/<name>/) and dictionary
# (tests/fuzz/<name>.dict), with AddressSanitizer and UBSan.
# Prints per target the inputs executed and the crashes found; exits non-zero on any crash, hang
# (an input running over 5 s), out-of-memory or failed invariant.
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]      default: 20 s, every target
# New inputs the fuzzer finds go to build-fuzz/corpus/<name>/ (kept between runs, never committed);
# a failing input is saved as build-fuzz/artifacts/<name>-crash-* (or -timeout-*, -oom-*): replay it
# with build-fuzz/fuzz_<name> FILE, and add it to the seed corpus once fixed.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(policy policy_file footprint occupancy preload_config launch_env)

cxx=${FUZZ_CXX:-$(command -v clang++ || true)}
if [ -z "$cxx" ]; then
  echo "fuzz: clang++ not found (scripts/install-deps.sh installs clang and libclang-rt-dev)" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null

mkdir -p build-fuzz/logs build-fuzz/artifacts
# fuzz NAME: one target for $seconds; its exit status in build-fuzz/logs/NAME.status.
fuzz() {
  local name=$1 corpus=build-fuzz/corpus/$1 log=build-fuzz/logs/$1.log status=0
  mkdir -p "$corpus"
  rm -f build-fuzz/artifacts/"$name"-*
  # -max_len: policies, footprints and environments are short; 4 KiB leaves room for long values.
  local dict=()
  [ -f tests/fuzz/"$name".dict ] && dict=(-dict=tests/fuzz/"$name".dict)
  timeout $((seconds + 120)) build-fuzz/fuzz_"$name" -max_total_time="$seconds" -timeout=5 \
    -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix=build-fuzz/artifacts/"$name"- "$corpus" tests/fuzz/corpus/"$name" \
    >"$log" 2>&1 || status=$?
  echo "$status" >build-fuzz/logs/"$name".status
}
# One target per core at a time: each still gets $seconds of one core, the whole takes less.
jobs_at_once=$(nproc)
for name in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n || true; done
  fuzz "$name" &
done
wait

failed=0
printf '%-16s %12s %8s\n' target inputs crashes
for name in "${targets[@]}"; do
  log=build-fuzz/logs/$name.log
  status=$(cat build-fuzz/logs/"$name".status 2>/dev/null || echo 1)
  inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$(find build-fuzz/artifacts -name "$name-*" | wc -l)
  # A fuzzer that dies before its final statistics (killed by timeout, an abort libFuzzer did not
  # catch) is a failure too.
  [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1
  printf '%-16s %12s %8s\n' "$name" "${inputs:-?}" "$crashes"
  if [ "$crashes" -ne 0 ]; then
    failed=1
    echo "--- fuzz_$name failed (exit $status); the end of $log:" >&2
    grep -v -e '^#[0-9]' -e '^INFO:' "$log" | tail -40 >&2
  fi
done
exit $failed
