# Programs that stand for the environments the interposer enters (tests/cpu/test_preload_environments.cpp):
# one that detects libraries through weak references (alone, and with the fake NCCL), and one with a
# C++ runtime newer than the system's in its own run path, and one whose library, bound immediately at
# start-up, calls _exit. C, linked against libc only, so that nothing
# but the interposer could bring in the system's C++ runtime. Never installed.
enable_language(C)
set(TANDEM_ENVIRONMENTS_DIR ${PROJECT_BINARY_DIR}/tests/environments)

add_executable(weak_probe ${CMAKE_CURRENT_LIST_DIR}/weak_probe.c)
target_include_directories(weak_probe PRIVATE ${PROJECT_SOURCE_DIR}/src/include)
set_target_properties(weak_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${TANDEM_ENVIRONMENTS_DIR})

add_executable(weak_probe_nccl ${CMAKE_CURRENT_LIST_DIR}/weak_probe.c)
target_include_directories(weak_probe_nccl PRIVATE ${PROJECT_SOURCE_DIR}/src/include)
# --no-as-needed: the program names no NCCL function strongly, yet must load the fake NCCL.
target_link_options(weak_probe_nccl PRIVATE -Wl,--no-as-needed -Wl,--disable-new-dtags)
target_link_libraries(weak_probe_nccl PRIVATE fake_libnccl)
set_target_properties(weak_probe_nccl PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${TANDEM_FAKE_NCCL_DIR}
  INSTALL_RPATH "$ORIGIN"
  INSTALL_RPATH_USE_LINK_PATH OFF)

add_library(newer_runtime SHARED ${CMAKE_CURRENT_LIST_DIR}/newer_runtime.c)
target_compile_definitions(newer_runtime PRIVATE NEWER_RUNTIME_LIBRARY)
target_link_options(newer_runtime PRIVATE -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/newer_runtime.map
                    -Wl,-soname,libstdc++.so.6)
set_target_properties(newer_runtime PROPERTIES OUTPUT_NAME stdc++ PREFIX lib SUFFIX .so.6 NO_SONAME ON
                      LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/newer_runtime.map
                      LIBRARY_OUTPUT_DIRECTORY ${TANDEM_ENVIRONMENTS_DIR}/newer_runtime)
add_executable(newer_runtime_program ${CMAKE_CURRENT_LIST_DIR}/newer_runtime.c)
target_link_libraries(newer_runtime_program PRIVATE newer_runtime)
set_target_properties(newer_runtime_program PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${TANDEM_ENVIRONMENTS_DIR}
  INSTALL_RPATH "$ORIGIN/newer_runtime"
  INSTALL_RPATH_USE_LINK_PATH OFF)

add_library(bind_now_exit SHARED ${CMAKE_CURRENT_LIST_DIR}/bind_now_exit.c)
target_compile_definitions(bind_now_exit PRIVATE BIND_NOW_EXIT_LIBRARY)
target_link_options(bind_now_exit PRIVATE -Wl,-z,now)
set_target_properties(bind_now_exit PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TANDEM_ENVIRONMENTS_DIR}/bind_now_exit)
add_executable(bind_now_exit_program ${CMAKE_CURRENT_LIST_DIR}/bind_now_exit.c)
target_link_libraries(bind_now_exit_program PRIVATE bind_now_exit)
set_target_properties(bind_now_exit_program PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${TANDEM_ENVIRONMENTS_DIR}
  INSTALL_RPATH "$ORIGIN/bind_now_exit"
  INSTALL_RPATH_USE_LINK_PATH OFF)

function(tandem_wire_environment_tests)
  if(TARGET test_preload_environments)
    target_compile_definitions(test_preload_environments PRIVATE
      TANDEM_WEAK_PROBE_PATH="$<TARGET_FILE:weak_probe>"
      TANDEM_WEAK_PROBE_NCCL_PATH="$<TARGET_FILE:weak_probe_nccl>"
      TANDEM_NEWER_RUNTIME_PROGRAM_PATH="$<TARGET_FILE:newer_runtime_program>"
      TANDEM_BIND_NOW_EXIT_PROGRAM_PATH="$<TARGET_FILE:bind_now_exit_program>")
    add_dependencies(test_preload_environments weak_probe weak_probe_nccl newer_runtime_program bind_now_exit_program)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL tandem_wire_environment_tests)
