#include <cuda.h>

#include "tandem/cuda_check.h"
#include "tandem/driver_api.h"
#include "tandem/kernel_footprint_probe.h"
#include "tandem/library_checks.h"

namespace tandem {

namespace {

// Driver functions, resolved once through the runtime (no link-time libcuda dependency).
struct GraphDriver {
  decltype(&cuGraphKernelNodeGetParams_v2) get_params =
      driver::get<decltype(&cuGraphKernelNodeGetParams_v2)>("cuGraphKernelNodeGetParams", 12000);
  decltype(&cuGraphKernelNodeGetAttribute) get_attribute =
      driver::get<decltype(&cuGraphKernelNodeGetAttribute)>("cuGraphKernelNodeGetAttribute", 11070);
  decltype(&cuFuncGetAttribute) func_attribute = driver::get<decltype(&cuFuncGetAttribute)>("cuFuncGetAttribute", 2020);
  decltype(&cuFuncGetName) func_name = driver::get<decltype(&cuFuncGetName)>("cuFuncGetName", 12030);
  decltype(&cuKernelGetFunction) kernel_function =
      driver::get<decltype(&cuKernelGetFunction)>("cuKernelGetFunction", 12000);
};

const GraphDriver& graph_driver() {
  static const GraphDriver d;  // thread-safe static init; resolved on first use
  return d;
}

CapturedLaunch read_kernel_node(cudaGraphNode_t node) {
  const GraphDriver& drv = graph_driver();
  CUDA_KERNEL_NODE_PARAMS_v2 p{};
  TANDEM_CU_CHECK(drv.get_params(reinterpret_cast<CUgraphNode>(node), &p));
  CUfunction func = p.func;
  if (func == nullptr && p.kern != nullptr) TANDEM_CU_CHECK(drv.kernel_function(&func, p.kern));
  TANDEM_REQUIRE(func != nullptr, "captured kernel node has neither a function nor a kernel handle");

  CapturedLaunch launch;
  const char* name = nullptr;
  TANDEM_CU_CHECK(drv.func_name(&name, func));
  launch.kernel_name = name ? name : "?";
  launch.grid = dim3(p.gridDimX, p.gridDimY, p.gridDimZ);

  int regs = 0, static_smem = 0;
  TANDEM_CU_CHECK(drv.func_attribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, func));
  TANDEM_CU_CHECK(drv.func_attribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func));
  KernelFootprint& f = launch.footprint;
  f.name = launch.kernel_name;
  f.threads_per_block = static_cast<int>(p.blockDimX * p.blockDimY * p.blockDimZ);
  f.regs_per_thread = regs;
  f.static_smem = static_smem;
  f.dynamic_smem = p.sharedMemBytes;

  // A cluster may be given per launch (a node attribute) or be compiled into the kernel.
  CUlaunchAttributeValue cluster{};
  TANDEM_CU_CHECK(
      drv.get_attribute(reinterpret_cast<CUgraphNode>(node), CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &cluster));
  unsigned cluster_blocks = cluster.clusterDim.x * cluster.clusterDim.y * cluster.clusterDim.z;
  if (cluster_blocks == 0) {
    int w = 0, h = 0, d = 0;
    TANDEM_CU_CHECK(drv.func_attribute(&w, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, func));
    TANDEM_CU_CHECK(drv.func_attribute(&h, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, func));
    TANDEM_CU_CHECK(drv.func_attribute(&d, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, func));
    cluster_blocks = static_cast<unsigned>(w > 0 ? w * std::max(h, 1) * std::max(d, 1) : 1);
  }
  f.cluster_size = static_cast<int>(cluster_blocks);
  return launch;
}

}  // namespace

std::vector<CapturedLaunch> capture_kernel_launches(cudaStream_t stream,
                                                    const std::function<void(cudaStream_t)>& enqueue,
                                                    const std::function<void(cudaStream_t)>& wait_for) {
  // Thread-local capture: other ranks' threads keep using their own streams meanwhile.
  TANDEM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);  // leave the stream usable before propagating
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t graph = nullptr;
  TANDEM_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));

  std::vector<CapturedLaunch> launches;
  cudaGraphExec_t exec = nullptr;
  try {
    size_t count = 0;
    TANDEM_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> nodes(count);
    TANDEM_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      TANDEM_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
      if (type == cudaGraphNodeTypeKernel) launches.push_back(read_kernel_node(node));
    }
    // Run what was captured once: the peers captured the same operation and expect it to happen.
    TANDEM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    TANDEM_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    wait_for(stream);
  } catch (...) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    throw;
  }
  TANDEM_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TANDEM_CUDA_CHECK(cudaGraphDestroy(graph));
  return launches;
}

}  // namespace tandem
