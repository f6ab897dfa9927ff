// The timeline's recorder (libtandem_timeline.so) on the fake CUPTI, loaded side by side in this
// process as the interposer would bind them: records kept, copies inside a communication region
// correlated, records without an end and records over the limit counted as lost, a second start
// refused, nothing after the stop. One process can start the recorder once, so this is one scenario.
#include <cupti.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "preload/timeline_recorder/tandem_timeline.h"
#include "test_preload_paths.h"

namespace {

void* g_cupti = nullptr;
void* resolve(const char* symbol) { return dlsym(g_cupti, symbol); }
// The driver call a mark makes: traced by the fake CUPTI as the fake driver's cuDriverGetVersion is.
int mark_call(int* version) {
  *version = 13000;
  reinterpret_cast<void (*)(uint32_t)>(dlsym(g_cupti, "fake_cupti_api_call"))(
      CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion);
  return 0;
}

template <class Fn>
Fn symbol(void* library, const char* name) {
  auto fn = reinterpret_cast<Fn>(dlsym(library, name));
  EXPECT_NE(fn, nullptr) << name;
  return fn;
}

TEST(preload_timeline_recorder, KeepsCorrelatesAndCountsWhatItLoses) {
  g_cupti = dlopen(tandem_preload_test::fake_cupti_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(g_cupti, nullptr) << dlerror();
  void* recorder = dlopen(tandem_preload_test::timeline_library_path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(recorder, nullptr) << dlerror();

  const auto abi = symbol<decltype(&tandem_timeline_abi_version)>(recorder, "tandem_timeline_abi_version");
  const auto soname = symbol<decltype(&tandem_timeline_cupti_soname)>(recorder, "tandem_timeline_cupti_soname");
  const auto start = symbol<decltype(&tandem_timeline_start)>(recorder, "tandem_timeline_start");
  const auto push =
      symbol<decltype(&tandem_timeline_push_communication)>(recorder, "tandem_timeline_push_communication");
  const auto pop = symbol<decltype(&tandem_timeline_pop_communication)>(recorder, "tandem_timeline_pop_communication");
  const auto stop = symbol<decltype(&tandem_timeline_stop)>(recorder, "tandem_timeline_stop");
  const auto mark = symbol<decltype(&tandem_timeline_mark)>(recorder, "tandem_timeline_mark");
  const auto marks = symbol<decltype(&tandem_timeline_marks)>(recorder, "tandem_timeline_marks");
  const auto activities = symbol<decltype(&tandem_timeline_activities)>(recorder, "tandem_timeline_activities");
  const auto correlations = symbol<decltype(&tandem_timeline_communication_correlations)>(
      recorder, "tandem_timeline_communication_correlations");
  const auto counts = symbol<decltype(&tandem_timeline_get_counts)>(recorder, "tandem_timeline_get_counts");
  const auto name = symbol<decltype(&tandem_timeline_name)>(recorder, "tandem_timeline_name");
  ASSERT_TRUE(abi && soname && start && push && pop && stop && mark && marks && activities && correlations && counts &&
              name);
  EXPECT_EQ(abi(), TANDEM_TIMELINE_ABI_VERSION);
  EXPECT_EQ(std::string(soname()), "libcupti.so." + std::to_string(CUPTI_API_VERSION / 10000));

  const auto kernel =
      symbol<void (*)(const char*, uint64_t, uint64_t, uint32_t, uint32_t)>(g_cupti, "fake_cupti_kernel");
  const auto memcpy = symbol<void (*)(uint64_t, uint64_t, uint32_t, uint32_t)>(g_cupti, "fake_cupti_memcpy");
  const auto depth = symbol<int (*)()>(g_cupti, "fake_cupti_correlation_depth");
  const auto api_records = symbol<int (*)()>(g_cupti, "fake_cupti_api_records_enabled");
  const auto enabled = symbol<int (*)(int)>(g_cupti, "fake_cupti_enabled");

  tandem_timeline_options options{};
  options.buffer_bytes = 4096;  // several buffers for the records below
  options.max_records = 4;
  options.correlate_copies = 1;
  options.mark_call = &mark_call;
  char why[256] = "";
  ASSERT_EQ(start(&resolve, &options, why, sizeof why), 0) << why;
  EXPECT_NE(start(&resolve, &options, why, sizeof why), 0) << "a second start";
  EXPECT_EQ(api_records(), 5) << "copy and memset API records enable the correlation, cuDriverGetVersion's the marks";

  push();
  EXPECT_EQ(depth(), 1);
  memcpy(100, 200, 0, 5);  // inside: communication
  pop();
  EXPECT_EQ(depth(), 0);
  mark(7);                             // between the two copies in the order of calls
  memcpy(300, 400, 0, 5);              // outside: the program's own
  kernel("_Z4gemmv", 500, 0, 0, 7);    // never ended (still running at the flush)
  kernel("_Z4gemmv", 600, 700, 0, 7);  // the 3rd record kept
  kernel("_Z4gemmv", 700, 800, 0, 7);  // the 4th
  kernel("_Z4gemmv", 800, 900, 0, 7);  // over the limit of 4
  ASSERT_EQ(stop(why, sizeof why), 0) << why;
  EXPECT_EQ(stop(why, sizeof why), 0) << "stop is idempotent";
  EXPECT_EQ(api_records(), 0) << "stop disables what start enabled";
  EXPECT_EQ(enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);

  size_t n = 0;
  const tandem_timeline_activity* a = activities(&n);
  ASSERT_EQ(n, 4u);
  EXPECT_EQ(a[0].kind, TANDEM_TIMELINE_MEMCPY);
  EXPECT_EQ(a[0].start_ns, 100);
  EXPECT_EQ(a[0].stream, 5u);
  EXPECT_EQ(a[2].kind, TANDEM_TIMELINE_KERNEL);
  EXPECT_STREQ(name(a[2].name), "_Z4gemmv");
  EXPECT_EQ(a[3].end_ns, 800);
  size_t m = 0;
  const tandem_timeline_mark_record* made = marks(&m);
  ASSERT_EQ(m, 1u);
  EXPECT_EQ(made[0].id, 7u);
  EXPECT_GT(made[0].correlation, a[0].correlation);
  EXPECT_LT(made[0].correlation, a[1].correlation);
  size_t c = 0;
  const uint32_t* ids = correlations(&c);
  ASSERT_EQ(c, 1u);
  EXPECT_EQ(ids[0], a[0].correlation);
  EXPECT_NE(ids[0], a[1].correlation);

  tandem_timeline_counts k{};
  counts(&k);
  EXPECT_EQ(k.records, 4u);
  EXPECT_EQ(k.incomplete, 1u);
  EXPECT_EQ(k.over_limit, 1u);
  EXPECT_EQ(k.correlated, 1u);
  EXPECT_EQ(k.marks, 1u);
  EXPECT_GE(k.buffers, 1u);

  // After the stop a pushed region and a mark do nothing.
  push();
  EXPECT_EQ(depth(), 0);
  pop();
  mark(8);
  counts(&k);
  EXPECT_EQ(k.marks, 1u);
}

}  // namespace
