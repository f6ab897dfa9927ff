#!/usr/bin/env bash
# Installs what tandem needs to build, from Debian/Ubuntu packages, only where it is missing (so it
# also runs on machines that cannot install anything, once they have the packages). The CUDA
# toolkit (nvcc, cuBLASLt, NCCL) must already be installed: it is not a distribution package here.
set -euo pipefail
# clang and libclang-rt-dev (libFuzzer, the sanitizer runtimes): tests/fuzz/run.sh.
packages=(cmake ninja-build g++ git libcli11-dev nlohmann-json3-dev libgtest-dev libopenmpi-dev python3-matplotlib
          clang libclang-rt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: the CUDA toolkit (nvcc, cuBLAS, NCCL) is required: install CUDA >= 12.4 first" >&2
  exit 1
fi
