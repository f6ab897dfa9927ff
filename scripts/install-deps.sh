#!/usr/bin/env bash
# Installs what tandem needs to build, from Debian/Ubuntu packages, only where it is missing (so it
# also runs on machines that cannot install anything, once they have the packages). The CUDA
# toolkit (nvcc, cuBLASLt) must already be installed: it is not a distribution package here. NCCL,
# when missing, comes from PyPI (below).
set -euo pipefail
# clang and libclang-rt-dev (libFuzzer, the sanitizer runtimes): tests/fuzz/run.sh. python3-dev: the
# Python package's extension (python/). clang-format: scripts/format-check.sh (CI).
packages=(cmake ninja-build g++ git libcli11-dev nlohmann-json3-dev libgtest-dev libopenmpi-dev python3-matplotlib
          clang libclang-rt-dev python3-dev clang-format)
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
  echo "install-deps: the CUDA toolkit (nvcc, cuBLAS) is required: install CUDA >= 12.4 first" >&2
  exit 1
fi

# tandem's own virtual environment, for what comes from PyPI (NCCL, nanobind, pytest).
venv="$HOME/.cache/tandem/venv"
make_venv() {
  if ! python3 -m venv "$venv" 2>/dev/null; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
}

# NCCL is not part of the CUDA toolkit. Where none is found (NCCL_ROOT, the toolkit, the system, a
# python3 with PyTorch's nvidia-nccl wheel), install NVIDIA's wheel from PyPI into a virtual
# environment of tandem's own, where cmake/FindNCCL.cmake looks for it. Its version is checked there.
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc_bin")")")
nccl_found() {
  for root in "${NCCL_ROOT:-}" "$cuda_root" /usr/local/cuda /usr; do
    [ -n "$root" ] && [ -f "$root/include/nccl.h" ] && return 0
  done
  compgen -G "$HOME/.cache/tandem/venv/lib/python3*/site-packages/nvidia/nccl/include/nccl.h" >/dev/null && return 0
  python3 -c "import importlib.util as u, os, sys; s = u.find_spec('nvidia.nccl'); \
sys.exit(0 if s and os.path.exists(os.path.join(list(s.submodule_search_locations)[0], 'include', 'nccl.h')) else 1)" \
    2>/dev/null
}
if ! nccl_found; then
  cuda_major=$("$nvcc_bin" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  echo "install-deps: NCCL not found; installing nvidia-nccl-cu$cuda_major from PyPI into $venv" >&2
  make_venv
  "$venv/bin/python" -m pip install -q "nvidia-nccl-cu$cuda_major>=2.28"
fi

# The Python package's build and tests (python/, tests/python): nanobind and pytest, in the same
# virtual environment, where python/CMakeLists.txt looks for them first.
if ! "$venv/bin/python" -c "import nanobind, pytest" 2>/dev/null; then
  echo "install-deps: installing nanobind and pytest from PyPI into $venv" >&2
  [ -x "$venv/bin/python" ] || make_venv
  "$venv/bin/python" -m pip install -q nanobind pytest
fi
