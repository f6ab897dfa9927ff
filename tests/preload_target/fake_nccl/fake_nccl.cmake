# The NCCL hooks' CPU tests (tests/cpu/test_preload_nccl_hooks.cpp). Included from
# tests/preload_target/CMakeLists.txt.
#
# A fake libnccl.so.2 (fake_nccl.h) and a client linked against it, in their own folder: the client's
# run path is only that folder ($ORIGIN, DT_RPATH), so it finds the fake, never a real NCCL, even on
# a GPU machine. Never installed; nothing else links them.
set(TANDEM_FAKE_NCCL_DIR ${PROJECT_BINARY_DIR}/tests/fake_nccl)
add_library(fake_libnccl SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nccl.cpp)
target_include_directories(fake_libnccl PRIVATE $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>
                                                ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(fake_libnccl PRIVATE nlohmann_json::nlohmann_json)
set_target_properties(fake_libnccl PROPERTIES OUTPUT_NAME nccl VERSION 2 SOVERSION 2
                      LIBRARY_OUTPUT_DIRECTORY ${TANDEM_FAKE_NCCL_DIR})

add_executable(fake_nccl_client ${CMAKE_CURRENT_LIST_DIR}/fake_nccl_client.cpp)
target_include_directories(fake_nccl_client PRIVATE $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>
                                                    ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(fake_nccl_client PRIVATE fake_libnccl nlohmann_json::nlohmann_json)
set_target_properties(fake_nccl_client PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${TANDEM_FAKE_NCCL_DIR}
  INSTALL_RPATH "$ORIGIN"
  INSTALL_RPATH_USE_LINK_PATH OFF)
target_link_options(fake_nccl_client PRIVATE -Wl,--disable-new-dtags)

# The real NCCL, asked only what needs no GPU.
add_executable(nccl_version_client ${CMAKE_CURRENT_LIST_DIR}/nccl_version_client.cpp)
target_link_libraries(nccl_version_client PRIVATE NCCL::nccl ${CMAKE_DL_LIBS})
set_target_properties(nccl_version_client PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${TANDEM_FAKE_NCCL_DIR})

# Where the CPU test finds them, and built before it.
function(tandem_wire_nccl_hook_test)
  if(TARGET test_preload_nccl_hooks)
    target_compile_definitions(test_preload_nccl_hooks PRIVATE
      TANDEM_FAKE_NCCL_CLIENT_PATH="$<TARGET_FILE:fake_nccl_client>"
      TANDEM_NCCL_VERSION_CLIENT_PATH="$<TARGET_FILE:nccl_version_client>")
    add_dependencies(test_preload_nccl_hooks fake_nccl_client nccl_version_client)
  endif()
  # The GPU test's program (tests/preload_target/nccl_program.cpp, built in <build>/bin).
  if(TARGET test_preload_nccl_gpu)
    target_compile_definitions(test_preload_nccl_gpu PRIVATE TANDEM_NCCL_PROGRAM_PATH="$<TARGET_FILE:nccl_program>")
    add_dependencies(test_preload_nccl_gpu nccl_program)
  endif()
  # The copy-engine route's GPU test: its threaded program and the grouped one above.
  if(TARGET test_preload_nccl_route_gpu)
    target_compile_definitions(test_preload_nccl_route_gpu PRIVATE
      TANDEM_NCCL_ROUTE_PROGRAM_PATH="$<TARGET_FILE:nccl_route_program>"
      TANDEM_NCCL_PROGRAM_PATH="$<TARGET_FILE:nccl_program>")
    add_dependencies(test_preload_nccl_route_gpu nccl_route_program nccl_program)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL tandem_wire_nccl_hook_test)
