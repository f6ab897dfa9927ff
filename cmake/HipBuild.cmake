# The HIP build (TANDEM_GPU_PLATFORM=HIP, top-level CMakeLists.txt): tandem::core and the compute side
# of the library for AMD GPUs (gfx90a, MI250X, by default), and the CPU tests that concern them, from
# the same sources as the CUDA build. What it lacks and why: docs/AMD.md.
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
# Debian's hipcc wraps clang-15 for the same reason (cmake/HipCompiler.cmake).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR CMAKE_CXX_COMPILER_VERSION VERSION_LESS 15)
  message(FATAL_ERROR "the HIP build needs clang 15 or newer as its C++ compiler, not ${CMAKE_CXX_COMPILER_ID} "
                      "${CMAKE_CXX_COMPILER_VERSION} (scripts/install-deps.sh --hip installs clang-15; "
                      "-DCMAKE_CXX_COMPILER=clang++-15)")
endif()
# hip-config.cmake reads GPU_TARGETS for --offload-arch. gfx90a: one GCD of an MI250X (or an MI210).
set(GPU_TARGETS gfx90a CACHE STRING "AMD GPU architectures to compile for (--offload-arch)")
find_package(hip 5.2 REQUIRED CONFIG)
get_filename_component(TANDEM_ROCM_ROOT "${hip_INCLUDE_DIR}" DIRECTORY)  # /usr on Debian, /opt/rocm
# Where hipcc finds them: ROCm's <root>/amdgcn/bitcode, or Debian's multiarch folder. Clang is told
# the folder and the HIP version, as Debian's hipcc tells it, since neither sits where clang looks.
find_path(TANDEM_HIP_DEVICE_LIBS ocml.bc
          PATHS ${TANDEM_ROCM_ROOT}/amdgcn/bitcode /opt/rocm/amdgcn/bitcode
                /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode /usr/lib/amdgcn/bitcode
          NO_DEFAULT_PATH)
if(NOT TANDEM_HIP_DEVICE_LIBS)
  message(FATAL_ERROR "the HIP build needs the ROCm device libraries (ocml.bc); scripts/install-deps.sh --hip "
                      "installs rocm-device-libs")
endif()
# HIP declares hipError_t [[nodiscard]]; the sources ignore a return only where nothing can be done
# with it (a destructor's release, clearing a sticky error), as the CUDA build does unwarned.
set(TANDEM_HIP_COMPILE_OPTIONS --rocm-path=${TANDEM_ROCM_ROOT} --hip-version=${hip_VERSION}
                               --hip-device-lib-path=${TANDEM_HIP_DEVICE_LIBS} -Wno-unused-result)
message(STATUS "HIP ${hip_VERSION} for ${GPU_TARGETS}, device libraries in ${TANDEM_HIP_DEVICE_LIBS}")

option(TANDEM_BUILD_TESTS "Build the tests" ON)
add_subdirectory(src)
if(TANDEM_BUILD_TESTS)
  enable_testing()
  add_subdirectory(tests/hip)
endif()
