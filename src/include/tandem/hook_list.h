#pragma once
// THE list of symbols the interposer hooks, as two X-macros (driver; libraries: cuBLAS, CUPTI, then NCCL). Everything
// that must agree on it is generated from them: the exported wrappers (exports.cpp), the linker's export list
// (version_script.in -> tandem_preload.map), the table of real pointers (real_symbols.cpp), the
// name matching of the dlsym and cuGetProcAddress hooks, the handler declarations
// (hook_handlers.h) and the per-hook call counters of the summary (stats.h).
//
// X(name, return type, (parameters), (arguments))
//
// Macros only, no include and no code: the version script is produced by running the preprocessor
// on this file, and the pure parts of the interposer expand the names without the CUDA types.

// Driver entry points. They all come from the one libcuda of the process, so any real pointer that
// a resolver returns for one of them is equivalent to any other (same ABI, same driver).
//
// cuGetProcAddress has two ABIs: the 4-argument one of CUDA 11.3-11.8 (exported as
// "cuGetProcAddress", resolved for versions < 12000) and the 5-argument one of 12.0+ (exported as
// "cuGetProcAddress_v2", resolved for versions >= 12000). Each has its own slot.
//
// Each launch entry point has a per-thread-default-stream twin (_ptsz): same ABI, but stream 0 means
// the calling thread's default stream instead of the legacy one. Resolving "cuLaunchKernel" with
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM returns the _ptsz twin, so it gets the _ptsz slot.
//
// cuEventRecord[WithFlags] and cuStreamWaitEvent (and their _ptsz twins) tell the targeted form of
// shape and sm-target how the program orders its streams after its collectives
// (stream_order_hooks.cpp, outstanding_collectives.h); they are forwarded unchanged.
#define TANDEM_DRIVER_HOOKS(X)                                                                                         \
  X(cuGetProcAddress, CUresult, (const char* symbol, void** pfn, int cuda_version, cuuint64_t flags),                  \
    (symbol, pfn, cuda_version, flags))                                                                                \
  X(cuGetProcAddress_v2, CUresult,                                                                                     \
    (const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,                                               \
     CUdriverProcAddressQueryResult* symbol_status),                                                                   \
    (symbol, pfn, cuda_version, flags, symbol_status))                                                                 \
  X(cuLaunchKernel, CUresult,                                                                                          \
    (CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,              \
     unsigned block_z, unsigned shared_mem_bytes, CUstream stream, void** kernel_params, void** extra),                \
    (f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes, stream, kernel_params, extra))            \
  X(cuLaunchKernel_ptsz, CUresult,                                                                                     \
    (CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,              \
     unsigned block_z, unsigned shared_mem_bytes, CUstream stream, void** kernel_params, void** extra),                \
    (f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes, stream, kernel_params, extra))            \
  X(cuLaunchKernelEx, CUresult, (const CUlaunchConfig* config, CUfunction f, void** kernel_params, void** extra),      \
    (config, f, kernel_params, extra))                                                                                 \
  X(cuLaunchKernelEx_ptsz, CUresult, (const CUlaunchConfig* config, CUfunction f, void** kernel_params, void** extra), \
    (config, f, kernel_params, extra))                                                                                 \
  X(cuLaunchCooperativeKernel, CUresult,                                                                               \
    (CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,              \
     unsigned block_z, unsigned shared_mem_bytes, CUstream stream, void** kernel_params),                              \
    (f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes, stream, kernel_params))                   \
  X(cuLaunchCooperativeKernel_ptsz, CUresult,                                                                          \
    (CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y,              \
     unsigned block_z, unsigned shared_mem_bytes, CUstream stream, void** kernel_params),                              \
    (f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem_bytes, stream, kernel_params))                   \
  X(cuEventRecord, CUresult, (CUevent event, CUstream stream), (event, stream))                                        \
  X(cuEventRecord_ptsz, CUresult, (CUevent event, CUstream stream), (event, stream))                                   \
  X(cuEventRecordWithFlags, CUresult, (CUevent event, CUstream stream, unsigned flags), (event, stream, flags))        \
  X(cuEventRecordWithFlags_ptsz, CUresult, (CUevent event, CUstream stream, unsigned flags), (event, stream, flags))   \
  X(cuStreamWaitEvent, CUresult, (CUstream stream, CUevent event, unsigned flags), (stream, event, flags))             \
  X(cuStreamWaitEvent_ptsz, CUresult, (CUstream stream, CUevent event, unsigned flags), (stream, event, flags))

// Library entry points (cuBLAS, cuBLASLt, NCCL). Unlike the driver, a process may load two different
// copies of a library (a framework's bundled one and the system one), so a real pointer is only
// adopted for a slot that is empty or already holds that same pointer.
#define TANDEM_LIBRARY_HOOKS(X) TANDEM_CUBLAS_HOOKS(X) TANDEM_CUPTI_HOOKS(X) TANDEM_EXIT_HOOKS(X) TANDEM_NCCL_HOOKS(X)

// cuBLAS and cuBLASLt, for the SM-count cap (cublas_hooks.cpp): set on new handles and descriptors, and for
// the targeted form at cublasSetStream, which PyTorch calls before each GEMM.
#define TANDEM_CUBLAS_HOOKS(X)                                                                         \
  X(cublasLtMatmulDescCreate, cublasStatus_t,                                                          \
    (cublasLtMatmulDesc_t * matmul_desc, cublasComputeType_t compute_type, cudaDataType_t scale_type), \
    (matmul_desc, compute_type, scale_type))                                                           \
  X(cublasCreate_v2, cublasStatus_t, (cublasHandle_t * handle), (handle))                              \
  X(cublasSetStream_v2, cublasStatus_t, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))

// CUPTI (cupti_hooks.cpp): a program's profiler (torch.profiler's Kineto) taking CUPTI's activity
// buffers, so that the timeline hands CUPTI over first (timeline_session.h). The parameters are CUPTI's
// CUpti_BuffersCallbackRequestFunc and CUpti_BuffersCallbackCompleteFunc and the result its
// CUptiResult, spelled as void* and int (the same ABI), so that the interposer needs no CUPTI header.
#define TANDEM_CUPTI_HOOKS(X) \
  X(cuptiActivityRegisterCallbacks, int, (void* request, void* complete), (request, complete))

// libc's exits that skip the process's exit handlers (exit_hooks.cpp): _exit (Python's os._exit, a
// shell's exit builtin) and _Exit. The hook first does what the interposer's exit handlers would have
// done (the timeline's files, the summary, the stats file), then calls libc's. exit() runs those
// handlers itself, and libc's own calls to _exit never come through these exports.
#define TANDEM_EXIT_HOOKS(X)             \
  X(_exit, void, (int status), (status)) \
  X(_Exit, void, (int status), (status))

// NCCL (nccl_hooks.cpp): communicator creation applies the policy's nccl-* settings, destruction
// forgets the communicator (and drops its copy-engine route), pre-multiplied sums are remembered
// (their scalar, for the route), the group calls are tracked per thread (routed collectives inside a
// group run at its end), collectives are counted by route and take the copy-engine route where the
// policy asks; reduces, sends and receives, which the route does not take, are counted and go to NCCL.
// The interposer never links or loads NCCL: these are reached only once the program's own NCCL is
// loaded, because the program's calls bind to these definitions, and the real ones are then found next
// to it (real_symbols.cpp). Every one of these exists in NCCL 2.28 (ncclCommInitRankScalable since 2.23,
// ncclCommShrink since 2.27, ncclAlltoAll since 2.28); a program built against an older NCCL simply never
// calls the newer ones. NCCL itself calls none of them through its PLT but ncclBroadcast (from ncclBcast;
// handled there).
#define TANDEM_NCCL_HOOKS(X)                                                                                           \
  X(ncclCommInitRank, ncclResult_t, (ncclComm_t * comm, int nranks, ncclUniqueId comm_id, int rank),                   \
    (comm, nranks, comm_id, rank))                                                                                     \
  X(ncclCommInitRankConfig, ncclResult_t,                                                                              \
    (ncclComm_t * comm, int nranks, ncclUniqueId comm_id, int rank, ncclConfig_t* config),                             \
    (comm, nranks, comm_id, rank, config))                                                                             \
  X(ncclCommInitRankScalable, ncclResult_t,                                                                            \
    (ncclComm_t * comm, int nranks, int rank, int n_ids, ncclUniqueId* comm_ids, ncclConfig_t* config),                \
    (comm, nranks, rank, n_ids, comm_ids, config))                                                                     \
  X(ncclCommInitAll, ncclResult_t, (ncclComm_t * comms, int ndev, const int* devlist), (comms, ndev, devlist))         \
  X(ncclCommSplit, ncclResult_t, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),     \
    (comm, color, key, newcomm, config))                                                                               \
  X(ncclCommShrink, ncclResult_t,                                                                                      \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config,         \
     int shrinkFlags),                                                                                                 \
    (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags))                                         \
  X(ncclCommFinalize, ncclResult_t, (ncclComm_t comm), (comm))                                                         \
  X(ncclCommDestroy, ncclResult_t, (ncclComm_t comm), (comm))                                                          \
  X(ncclCommAbort, ncclResult_t, (ncclComm_t comm), (comm))                                                            \
  X(ncclRedOpCreatePreMulSum, ncclResult_t,                                                                            \
    (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm),       \
    (op, scalar, datatype, residence, comm))                                                                           \
  X(ncclRedOpDestroy, ncclResult_t, (ncclRedOp_t op, ncclComm_t comm), (op, comm))                                     \
  X(ncclGroupStart, ncclResult_t, (), ())                                                                              \
  X(ncclGroupEnd, ncclResult_t, (), ())                                                                                \
  X(ncclAllReduce, ncclResult_t,                                                                                       \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,     \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, count, datatype, op, comm, stream))                                                           \
  X(ncclReduceScatter, ncclResult_t,                                                                                   \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))                                                       \
  X(ncclAllGather, ncclResult_t,                                                                                       \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,                 \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream))                                                           \
  X(ncclAlltoAll, ncclResult_t,                                                                                        \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,                     \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, count, datatype, comm, stream))                                                               \
  X(ncclBroadcast, ncclResult_t,                                                                                       \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,           \
     cudaStream_t stream),                                                                                             \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                                         \
  X(ncclBcast, ncclResult_t,                                                                                           \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream),               \
    (buff, count, datatype, root, comm, stream))                                                                       \
  X(ncclReduce, ncclResult_t,                                                                                          \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,            \
     ncclComm_t comm, cudaStream_t stream),                                                                            \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream))                                                     \
  X(ncclSend, ncclResult_t,                                                                                            \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream),     \
    (sendbuff, count, datatype, peer, comm, stream))                                                                   \
  X(ncclRecv, ncclResult_t,                                                                                            \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream),           \
    (recvbuff, count, datatype, peer, comm, stream))
