#!/usr/bin/env bash
# Installs what tandem needs to build and test, from Debian/Ubuntu packages, only where it is
# missing. Each need is checked by what it provides (a command, a header, a Python module), not only
# by its package, so a machine that has everything some other way (a GPU machine whose cmake and
# ninja come from pip, whose NCCL is PyTorch's wheel) is left alone: nothing is installed, nothing is
# asked of apt-get or PyPI. Where something is missing and cannot be installed (no apt-get, no root
# or sudo, no network), it says plainly what is missing and what for; it fails only for what the
# build itself needs. The CUDA toolkit (nvcc, cuBLASLt) must already be installed: it is not a
# distribution package here. NCCL, when missing, comes from PyPI (below).
#
# `--hip`: what the HIP build for AMD GPUs needs instead (docs/AMD.md): Debian 12's HIP 5.2 (hipcc,
# the runtime's headers and library, the device libraries) and clang-15, which compiles it; nothing
# of CUDA, NCCL or PyTorch.
set -uo pipefail

hip=false
for arg in "$@"; do
  case "$arg" in
    --hip) hip=true ;;
    *)
      echo "install-deps: unknown option '$arg' (use --hip for the HIP build's needs, or nothing)" >&2
      exit 2
      ;;
  esac
done

# package|provides|required-or-optional (what for)|probe (a shell test that succeeds when it is there)
needs=(
  "cmake|cmake >= 3.22|required|cmake_ok"
  "ninja-build|ninja|required|command -v ninja"
  "g++|a C++17 compiler|required|command -v g++"
  "libcli11-dev|CLI11 (CLI/CLI.hpp)|required|header CLI/CLI.hpp"
  "nlohmann-json3-dev|nlohmann/json (nlohmann/json.hpp)|required|header nlohmann/json.hpp"
  "libgtest-dev|GoogleTest (gtest/gtest.h)|required|header gtest/gtest.h"
  "git|git (the commit in results)|required|command -v git"
  "libopenmpi-dev|Open MPI (mpirun launches)|optional|header_or_mpicc"
  "python3-matplotlib|matplotlib (the plot_results test)|optional|python_has matplotlib"
  "python3-dev|Python.h (the Python package's extension)|optional|python_headers"
  "clang|clang++ (the fuzz targets, tests/fuzz/run.sh)|optional|command -v clang++"
  "libclang-rt-dev|libFuzzer and the sanitizer runtimes (tests/fuzz/run.sh)|optional|fuzzer_runtime"
  "clang-format|clang-format (scripts/format-check.sh)|optional|command -v clang-format"
)
# The HIP build: clang 15 or newer compiles it, since clang 14 cannot read the bitcode of Debian 12's
# device libraries (rocm-device-libs 5.2).
if $hip; then
  needs=(
    "cmake|cmake >= 3.22|required|cmake_ok"
    "ninja-build|ninja|required|command -v ninja"
    "libgtest-dev|GoogleTest (gtest/gtest.h)|required|header gtest/gtest.h"
    "clang-15|clang++-15 (compiles HIP for gfx90a)|required|command -v clang++-15"
    "hipcc|hipcc (HIP's compiler driver and its cmake package's helpers)|required|command -v hipcc"
    "libamdhip64-dev|the HIP runtime (hip/hip_runtime.h, libamdhip64)|required|header hip/hip_runtime.h"
    "rocm-device-libs|the ROCm device libraries (ocml.bc)|required|rocm_device_libs"
  )
fi

cmake_ok() {
  command -v cmake >/dev/null || return 1
  local v
  v=$(cmake --version | sed -n 's/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
  [ -n "$v" ] && [ "$(printf '%s\n3.22\n' "$v" | sort -V | head -n1)" = "3.22" ]
}
header() {
  local h=$1 dir
  for dir in /usr/include /usr/local/include ${CPATH:+${CPATH//:/ }} ${CPLUS_INCLUDE_PATH:+${CPLUS_INCLUDE_PATH//:/ }}; do
    [ -f "$dir/$h" ] && return 0
  done
  return 1
}
header_or_mpicc() { header mpi.h || header openmpi/mpi.h || command -v mpicc >/dev/null; }
python_has() { /usr/bin/python3 -c "import $1" 2>/dev/null || python3 -c "import $1" 2>/dev/null; }
python_headers() { python3 -c "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" 2>/dev/null; }
fuzzer_runtime() { compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a" >/dev/null; }
rocm_device_libs() { compgen -G "/usr/lib/*/amdgcn/bitcode/ocml.bc" >/dev/null || [ -f /opt/rocm/amdgcn/bitcode/ocml.bc ]; }
installed_package() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing_required=() missing_optional=() describe=()
for need in "${needs[@]}"; do
  IFS='|' read -r package provides kind probe <<<"$need"
  if installed_package "$package" || eval "$probe" >/dev/null 2>&1; then continue; fi
  describe+=("$package: $provides, $kind")
  if [ "$kind" = required ]; then missing_required+=("$package"); else missing_optional+=("$package"); fi
done

# Installing needs apt-get and root (or sudo without a password).
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
can_install() { command -v apt-get >/dev/null && { [ -z "$sudo" ] || sudo -n true 2>/dev/null; }; }
missing=("${missing_required[@]}" "${missing_optional[@]}")
if [ ${#missing[@]} -gt 0 ]; then
  installed=false
  if can_install; then
    echo "install-deps: installing ${missing[*]}" >&2
    if $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; then
      installed=true
    fi
  fi
  if ! $installed; then
    echo "install-deps: missing, and this machine cannot install it (no apt-get, no root or sudo, or no network):" >&2
    for line in "${describe[@]}"; do echo "  $line" >&2; done
    if [ ${#missing_required[@]} -gt 0 ]; then
      echo "install-deps: the build needs the required ones; install them by other means and run this again" >&2
      exit 1
    fi
    echo "install-deps: the build goes on without the optional ones (their tests fail or are not built)" >&2
  fi
fi
# The HIP build needs nothing from PyPI and nothing of CUDA's.
$hip && exit 0
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: the CUDA toolkit (nvcc, cuBLAS) is required: install CUDA >= 12.4 first" >&2
  exit 1
fi

# tandem's own virtual environment, for what comes from PyPI (NCCL, nanobind, pytest). Made only
# when something must be installed into it, and removed again if that fails (an empty one would
# hide the python3 the build would otherwise use).
venv="$HOME/.cache/tandem/venv"
pip_install() {
  local fresh=false
  if [ ! -x "$venv/bin/python" ]; then
    fresh=true
    python3 -m venv "$venv" 2>/dev/null || {
      can_install && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null &&
        python3 -m venv "$venv"
    } || { $fresh && rm -rf "$venv"; return 1; }
  fi
  "$venv/bin/python" -m pip install -q "$@" || { $fresh && rm -rf "$venv"; return 1; }
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
  pip_install "nvidia-nccl-cu$cuda_major>=2.28" || {
    echo "install-deps: NCCL >= 2.28 is required and could not be installed from PyPI: install it, or set NCCL_ROOT" >&2
    exit 1
  }
fi

# The Python package's build and tests (python/, tests/python): nanobind and pytest, in the Python
# the build uses (tandem's virtual environment when there is one, else python3). Optional.
python_for_build="$venv/bin/python"
[ -x "$python_for_build" ] || python_for_build=python3
if ! "$python_for_build" -c "import nanobind, pytest" 2>/dev/null; then
  echo "install-deps: installing nanobind and pytest from PyPI into $venv" >&2
  pip_install nanobind pytest ||
    echo "install-deps: nanobind and pytest are missing and PyPI is not reachable: the Python package's extension and tests are not built (optional)" >&2
fi

# PyTorch, for tandem.torch's tests (tests/python), which CI runs and fails when they skip
# (TANDEM_REQUIRE_TORCH=1 in .ci/run). Left alone where the build's Python has it (the GPU machine's).
# PyPI's torch for Linux x86_64 is a CUDA build that depends on every CUDA library; `import torch`
# loads only those its own objects link, so torch comes without its dependencies, then those at the
# versions torch names, less Triton and cuda-bindings (torch.compile's GPU code, CUDA Python) and
# the cuSOLVER and NVTX extras (CUDA linear algebra, loaded on first use; NVTX ranges): 2.2 GB
# downloaded and 3.7 GB installed in under a minute, against 2.6 GB, 4.6 GB and 70 s for all of them.
# 2.11.0: the GPU machine's PyTorch, with its NCCL 2.28.9.
torch_version=2.11.0
torch_dependencies() {
  "$venv/bin/python" - <<'PY'
import importlib.metadata as metadata
import re

skipped = {"triton", "cuda-bindings"}
skipped_extras = {"cusolver", "nvtx"}
for requirement in metadata.requires("torch") or []:
    spec, _, marker = requirement.partition(";")
    name = re.match(r"[A-Za-z0-9_.-]+", spec.strip()).group(0)
    if "extra ==" in marker or name.lower() in skipped:
        continue
    print(re.sub(r"\[([^\]]*)\]",
                 lambda m: "[" + ",".join(e for e in m.group(1).split(",") if e.strip() not in skipped_extras) + "]",
                 spec.strip()))
PY
}
python_for_build="$venv/bin/python"
[ -x "$python_for_build" ] || python_for_build=python3
if ! "$python_for_build" -c "import torch" 2>/dev/null; then
  echo "install-deps: installing PyTorch $torch_version (CPU use: what import torch loads) from PyPI into $venv" >&2
  if pip_install --no-deps "torch==$torch_version" &&
    mapfile -t torch_needs < <(torch_dependencies) && [ ${#torch_needs[@]} -gt 0 ] &&
    pip_install --no-warn-conflicts "${torch_needs[@]}" &&
    { "$venv/bin/python" -c "import nanobind, pytest" 2>/dev/null || pip_install nanobind pytest; } &&
    "$venv/bin/python" -c "import torch" 2>/dev/null; then
    :
  else
    echo "install-deps: PyTorch could not be installed: tandem.torch's tests skip, and fail under TANDEM_REQUIRE_TORCH=1 (CI)" >&2
  fi
fi
# The example programs' own imports beyond torch (examples/reach: Transformers' Llama from a config;
# the results' digests through numpy), for the script tests that run them on gloo (reach_check,
# pytorch_compare). 5.17.0: the GPU machine's Transformers.
if "$python_for_build" -c "import torch" 2>/dev/null && ! "$python_for_build" -c "import numpy, transformers" 2>/dev/null; then
  echo "install-deps: installing numpy and Transformers from PyPI into $venv" >&2
  pip_install numpy "transformers==5.17.0" ||
    echo "install-deps: numpy or Transformers could not be installed: the example programs' tests skip, and fail under TANDEM_REQUIRE_TORCH=1 (CI)" >&2
fi
# DeepSpeed, for examples/frameworks' CPU test (tests/scripts/test_frameworks_cpu.py deepspeed: two gloo
# ranks under every ZeRO stage). PyPI has it as a source package only: built here against the torch
# above (no build isolation, which would fetch another), its CUDA ops left to JIT (DS_BUILD_OPS=0,
# none built); about 10 MB with its own needs. 0.19.8: what docs/FRAMEWORKS.md pins. Megatron-core
# needs Python 3.12 and Triton: it is checked on the GPU machine only.
if "$python_for_build" -c "import torch" 2>/dev/null && ! "$python_for_build" -c "import deepspeed" 2>/dev/null; then
  echo "install-deps: installing DeepSpeed 0.19.8 from PyPI into $venv" >&2
  # --no-build-isolation builds with the venv's setuptools: a venv's own (65 on Python 3.11) has no
  # bdist_wheel without the wheel package.
  { pip_install wheel && DS_BUILD_OPS=0 pip_install --no-build-isolation "deepspeed==0.19.8"; } ||
    echo "install-deps: DeepSpeed could not be installed: its CPU test skips, and fails under TANDEM_REQUIRE_TORCH=1 (CI)" >&2
fi
exit 0
