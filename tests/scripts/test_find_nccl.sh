#!/usr/bin/env bash
# cmake/FindNCCL.cmake with NCCL laid out as PyTorch's nvidia-nccl wheel (site-packages/nvidia/nccl/
# {include,lib}: nccl.h and libnccl.so.2 only): configures and builds tests/find_nccl against a copy
# of this machine's NCCL in that layout. Before NCCL::nccl carried CUDA's include folder, this build
# failed exactly as the README's did on the GPU machine (nccl.h: cuda_runtime.h not found).
#   test_find_nccl.sh SOURCE_DIR NCCL_INCLUDE_DIR NCCL_LIBRARY
set -euo pipefail
source=$1 include=$2 library=$3
scratch=$(mktemp -d /tmp/tandem-find-nccl-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
wheel="$scratch/site-packages/nvidia/nccl"
mkdir -p "$wheel/include" "$wheel/lib"
cp "$include/nccl.h" "$wheel/include/"
cp "$library" "$wheel/lib/libnccl.so.2"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$source/tests/find_nccl" -B "$scratch/build" "${generator[@]}" -DTANDEM_SOURCE_DIR="$source" \
  -DNCCL_ROOT="$wheel" >"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; exit 1; }
grep -q "NCCL .*: $wheel/lib/libnccl.so.2" "$scratch/configure.log" || {
  echo "FindNCCL did not pick the wheel layout:"; cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/build" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; exit 1; }
echo "nccl.h compiled against NCCL::nccl from a wheel layout"
