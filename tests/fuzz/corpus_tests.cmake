# The fuzz targets' seed corpora as plain CPU tests of the main build (included by
# tests/CMakeLists.txt): each target compiled with the project's compiler, without libFuzzer or
# sanitizers, and run once on every seed (replay_main.cpp), so the invariants the fuzzers assert
# are checked by every `ctest -L cpu`, clang or not. tests/fuzz/run.sh does the fuzzing.
set(fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
set(fuzz_corpus_libs_policy tandem_core)
set(fuzz_corpus_libs_policy_file tandem_core)
set(fuzz_corpus_libs_footprint tandem_core)
set(fuzz_corpus_libs_occupancy tandem_core)
set(fuzz_corpus_libs_preload_config tandem_preload_logic)
set(fuzz_corpus_libs_launch_env tandem_bench_harness)
foreach(name policy policy_file footprint occupancy preload_config launch_env)
  add_executable(fuzz_corpus_${name} ${fuzz_dir}/fuzz_${name}.cpp ${fuzz_dir}/replay_main.cpp)
  target_include_directories(fuzz_corpus_${name} PRIVATE ${fuzz_dir} ${PROJECT_SOURCE_DIR})
  target_link_libraries(fuzz_corpus_${name} PRIVATE ${fuzz_corpus_libs_${name}})
  add_test(NAME fuzz_corpus_${name} COMMAND fuzz_corpus_${name} ${fuzz_dir}/corpus/${name})
  set_tests_properties(fuzz_corpus_${name} PROPERTIES LABELS cpu TIMEOUT 120)
endforeach()
