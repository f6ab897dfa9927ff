# Before project() in the HIP build: the C++ compiler must be a clang that compiles HIP for the
# device libraries installed (Debian 12's rocm-device-libs 5.2 needs clang 15: clang 14 cannot read
# their bitcode). Unless one was given (-DCMAKE_CXX_COMPILER, CXX), take ROCm's own clang, else the
# distribution's clang++-15 (scripts/install-deps.sh --hip). cmake/HipBuild.cmake checks the version.
if(NOT CMAKE_CXX_COMPILER AND NOT DEFINED ENV{CXX})
  find_program(TANDEM_HIP_CLANG NAMES clang++ PATHS /opt/rocm/llvm/bin NO_DEFAULT_PATH)
  if(NOT TANDEM_HIP_CLANG)
    find_program(TANDEM_HIP_CLANG NAMES clang++-15 clang++-16 clang++-17)
  endif()
  if(TANDEM_HIP_CLANG)
    set(CMAKE_CXX_COMPILER ${TANDEM_HIP_CLANG})
  endif()
endif()
