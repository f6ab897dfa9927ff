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
      TANDEM_FAKE_ROUTE_CLIENT_PATH="$<TARGET_FILE:fake_route_client>"
      TANDEM_FAKE_ROUTE_PRELOAD_PATH="$<TARGET_FILE_DIR:fake_route>/$<TARGET_FILE_NAME:tandem_preload>"
      TANDEM_NCCL_VERSION_CLIENT_PATH="$<TARGET_FILE:nccl_version_client>")
    add_dependencies(test_preload_nccl_hooks fake_nccl_client fake_route_client fake_route nccl_version_client)
  endif()
  # The GPU test's program (tests/preload_target/nccl_program.cpp, built in <build>/bin).
  if(TARGET test_preload_nccl_gpu)
    target_compile_definitions(test_preload_nccl_gpu PRIVATE TANDEM_NCCL_PROGRAM_PATH="$<TARGET_FILE:nccl_program>")
    add_dependencies(test_preload_nccl_gpu nccl_program)
  endif()
  if(TARGET test_preload_nccl_route_matrix)
    target_compile_definitions(test_preload_nccl_route_matrix PRIVATE
      TANDEM_NCCL_ROUTE_MATRIX_PATH="$<TARGET_FILE:nccl_route_matrix>")
    add_dependencies(test_preload_nccl_route_matrix nccl_route_matrix tandem_cli tandem_preload tandem_nccl_route)
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

# The routing paths' CPU test: a fake route library (fake_route.cpp) named as the real one, in a
# folder of its own beside a link to the real interposer, where the interposer looks for its route
# library; and a client of routed calls (fake_route_client.cpp). The link is relative, so a copied
# build tree keeps it.
set(TANDEM_FAKE_ROUTE_DIR ${PROJECT_BINARY_DIR}/tests/fake_route)
add_library(fake_route SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_route.cpp)
target_include_directories(fake_route PRIVATE ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR}
                                              $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>
                                              ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(fake_route PRIVATE fake_libnccl nlohmann_json::nlohmann_json ${CMAKE_DL_LIBS})
set_target_properties(fake_route PROPERTIES OUTPUT_NAME tandem_nccl_route LIBRARY_OUTPUT_DIRECTORY
                                                                         ${TANDEM_FAKE_ROUTE_DIR})
add_custom_command(
  TARGET fake_route POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E create_symlink ../../lib/$<TARGET_FILE_NAME:tandem_preload>
          ${TANDEM_FAKE_ROUTE_DIR}/$<TARGET_FILE_NAME:tandem_preload>
  VERBATIM)
add_dependencies(fake_route tandem_preload)

add_executable(fake_route_client ${CMAKE_CURRENT_LIST_DIR}/fake_route_client.cpp)
target_include_directories(fake_route_client PRIVATE $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>
                                                     ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(fake_route_client PRIVATE fake_libnccl nlohmann_json::nlohmann_json)
set_target_properties(fake_route_client PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${TANDEM_FAKE_NCCL_DIR}
  INSTALL_RPATH "$ORIGIN"
  INSTALL_RPATH_USE_LINK_PATH OFF)
target_link_options(fake_route_client PRIVATE -Wl,--disable-new-dtags)
