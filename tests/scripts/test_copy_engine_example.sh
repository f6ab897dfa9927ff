#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, builds examples/copy_engine against it the way a
# user's project would (find_package(tandem)), and runs it: copy-engine collectives on the program's
# own communicators and buffers, checked exactly. Exits 77 (ctest: skipped) with fewer than 2 GPUs.
#   test_copy_engine_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
scratch=$(mktemp -d /tmp/tandem-copy-engine-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source/examples/copy_engine" -B "$scratch/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  >"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }
# The program's status is the test's: 0 exact, 1 wrong or failed, 77 skipped.
exec "$scratch/build/copy_engine_check"
