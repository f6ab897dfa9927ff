// The timeline's steps as NVTX hands them over (preload/nvtx_steps.h), through NVTX's tool interface
// without a program: a stand-in for NVTX's export table whose function slots the callbacks fill, then the
// range calls a program makes, through those slots. A range inside a step of the same thread and domain is
// no step, however deep it sits (step > phase > step), and makes no marks; a step's two marks come from
// the one mark function.
#define NVTX_NO_IMPL
#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "preload/nvtx_steps.h"

namespace tandem::preload {
namespace {

NvtxFunctionPointer g_core[NVTX_CBID_CORE_SIZE + 1];
NvtxFunctionPointer* g_core_table[NVTX_CBID_CORE_SIZE + 1];
NvtxFunctionPointer g_core2[NVTX_CBID_CORE2_SIZE + 1];
NvtxFunctionPointer* g_core2_table[NVTX_CBID_CORE2_SIZE + 1];
std::vector<uint64_t> g_marks;

int NVTX_API module_table(NvtxCallbackModule module, NvtxFunctionTable* out, unsigned int* size) {
  if (module == NVTX_CB_MODULE_CORE) {
    *out = g_core_table;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (module == NVTX_CB_MODULE_CORE2) {
    *out = g_core2_table;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}

const NvtxExportTableCallbacks g_callbacks{sizeof(NvtxExportTableCallbacks), &module_table};

const void* NVTX_API export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &g_callbacks : nullptr; }

void mark(uint64_t id) { g_marks.push_back(id); }

// The callbacks, installed once for the process (as NVTX's injection is).
class NvtxSteps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (size_t i = 0; i <= NVTX_CBID_CORE_SIZE; ++i) g_core_table[i] = &g_core[i];
    for (size_t i = 0; i <= NVTX_CBID_CORE2_SIZE; ++i) g_core2_table[i] = &g_core2[i];
    ASSERT_TRUE(install_nvtx_step_callbacks(reinterpret_cast<void*>(&export_table), "step*", &mark));
  }

  void SetUp() override {
    steps_before_ = closed_nvtx_steps().size();
    marks_before_ = g_marks.size();
  }

  static int push(const char* name) {
    return reinterpret_cast<nvtxRangePushA_impl_fntype>(g_core[NVTX_CBID_CORE_RangePushA])(name);
  }
  static int pop() { return reinterpret_cast<nvtxRangePop_impl_fntype>(g_core[NVTX_CBID_CORE_RangePop])(); }

  // The steps closed and the marks made since the test began.
  std::vector<NvtxStep> new_steps() const {
    std::vector<NvtxStep> all = closed_nvtx_steps();
    return std::vector<NvtxStep>(all.begin() + static_cast<long>(steps_before_), all.end());
  }
  size_t new_marks() const { return g_marks.size() - marks_before_; }

  size_t steps_before_ = 0;
  size_t marks_before_ = 0;
};

TEST_F(NvtxSteps, AStepNestedTwoLevelsInsideAStepIsNoStep) {
  // step > phase > step: only the outer one is a step, with its two marks.
  EXPECT_EQ(push("step 1"), 0);
  EXPECT_EQ(push("phase"), 1);
  EXPECT_EQ(push("step 1.1"), 2);
  EXPECT_EQ(pop(), 2);
  EXPECT_EQ(pop(), 1);
  EXPECT_EQ(pop(), 0);
  const std::vector<NvtxStep> steps = new_steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].name, "step 1");
  EXPECT_EQ(new_marks(), 2u);
  EXPECT_LT(steps[0].start_mark, steps[0].end_mark);
}

TEST_F(NvtxSteps, DeeperStillAndTheNextStepCounts) {
  // step > phase > phase > step > step, then a phase holding a step: two steps, in their order.
  push("step 1");
  push("forward");
  push("layer");
  push("step inner");
  push("step innermost");
  for (int i = 0; i < 5; ++i) pop();
  push("phase");
  push("step 2");
  push("phase");
  push("step 2.1");
  for (int i = 0; i < 4; ++i) pop();
  uint64_t open = 1;
  const std::vector<NvtxStep> steps = new_steps();
  closed_nvtx_steps(&open);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "step 1");
  EXPECT_EQ(steps[1].name, "step 2");
  EXPECT_LE(steps[0].end_ns, steps[1].start_ns);
  EXPECT_EQ(new_marks(), 4u);
  EXPECT_EQ(open, 0u);
}

TEST_F(NvtxSteps, AStepNotEndedIsStillOpenNotClosed) {
  push("step open");
  push("phase");
  pop();
  uint64_t open = 0;
  const size_t closed = closed_nvtx_steps(&open).size();
  EXPECT_EQ(open, 1u);
  EXPECT_EQ(closed, steps_before_);
  pop();
  EXPECT_EQ(new_steps().size(), 1u);
  closed_nvtx_steps(&open);
  EXPECT_EQ(open, 0u);
}

}  // namespace
}  // namespace tandem::preload
