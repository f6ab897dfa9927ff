# NCCL ships with the CUDA toolkit image here and system-wide on the GPU machine; it has no CMake
# package of its own, so we import it.
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
find_library(NCCL_LIBRARY NAMES nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  message(FATAL_ERROR "NCCL not found: install libnccl-dev or the CUDA toolkit's NCCL")
endif()
file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_major REGEX "^#define NCCL_MAJOR")
file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_minor REGEX "^#define NCCL_MINOR")
message(STATUS "NCCL: ${NCCL_LIBRARY} (${_nccl_major} ${_nccl_minor})")
add_library(NCCL::nccl SHARED IMPORTED GLOBAL)
set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
