# NCCL has no CMake package of its own, so we import it as NCCL::nccl. It is looked for, in order:
# NCCL_ROOT (variable or environment), the CUDA toolkit, the system, the virtual environment that
# scripts/install-deps.sh fills from PyPI when NCCL is missing, and the `nvidia-nccl-cu*` wheel of
# the python3 on PATH (PyTorch's NCCL). tandem needs NCCL >= 2.28 (ncclGather, symmetric windows,
# CTA policies).
if(TARGET NCCL::nccl)
  return()  # found already: a second find_package(tandem), or a project that imports NCCL itself
endif()
set(TANDEM_NCCL_MIN_VERSION 2.28)

set(_nccl_hints)
foreach(root "${NCCL_ROOT}" "$ENV{NCCL_ROOT}")
  if(root)
    list(APPEND _nccl_hints ${root})
  endif()
endforeach()
list(APPEND _nccl_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
# The wheels' layout: site-packages/nvidia/nccl/{include,lib}.
file(GLOB _nccl_venv_roots "$ENV{HOME}/.cache/tandem/venv/lib/python3*/site-packages/nvidia/nccl")
list(APPEND _nccl_hints ${_nccl_venv_roots})
find_program(_nccl_python3 python3)
if(_nccl_python3)
  execute_process(
    COMMAND ${_nccl_python3} -c
            "import importlib.util as u; s = u.find_spec('nvidia.nccl'); print(list(s.submodule_search_locations)[0])"
    OUTPUT_VARIABLE _nccl_wheel_root OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_nccl_wheel_root)
    list(APPEND _nccl_hints ${_nccl_wheel_root})
  endif()
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
# A wheel ships only libnccl.so.2, no development link.
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64)
if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  message(FATAL_ERROR "NCCL not found (nccl.h: ${NCCL_INCLUDE_DIR}, library: ${NCCL_LIBRARY}). "
                      "Run scripts/install-deps.sh (it installs NCCL from PyPI), or set NCCL_ROOT to an "
                      "NCCL >= ${TANDEM_NCCL_MIN_VERSION} installation.")
endif()
file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
foreach(part MAJOR MINOR PATCH)
  string(REGEX REPLACE ".*#define NCCL_${part} ([0-9]+).*" "\\1" _nccl_${part} "${_nccl_version_lines}")
endforeach()
set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
if(NCCL_VERSION VERSION_LESS TANDEM_NCCL_MIN_VERSION)
  message(FATAL_ERROR "NCCL ${NCCL_VERSION} at ${NCCL_INCLUDE_DIR} is too old: tandem needs "
                      "${TANDEM_NCCL_MIN_VERSION} or newer. Run scripts/install-deps.sh, or set NCCL_ROOT.")
endif()
message(STATUS "NCCL ${NCCL_VERSION}: ${NCCL_LIBRARY}")
add_library(NCCL::nccl SHARED IMPORTED GLOBAL)
# nccl.h includes cuda_runtime.h, cuda_fp16.h and cuda_bf16.h: the toolkit's headers are part of
# NCCL's interface. NCCL inside the toolkit finds them beside it; PyTorch's nvidia-nccl wheel does not.
set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR};${CUDAToolkit_INCLUDE_DIRS}")
