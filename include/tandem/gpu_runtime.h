#pragma once
// The GPU runtime, CUDA's or HIP's, under CUDA's names: the one header through which tandem's
// portable sources (streams, device queries, shaped launches, the residency probe) reach the runtime,
// so that CUDA and HIP builds compile the same files. In a CUDA build it is <cuda_runtime.h> and
// nothing else. In a HIP build (TANDEM_HIP, set by cmake/HipBuild.cmake) it includes
// <hip/hip_runtime.h> and maps each CUDA name those sources use to HIP's, whose API mirrors CUDA's
// call for call: the approach of PyTorch's and llama.cpp's HIP headers rather than a hipified copy
// of the sources. A name missing here fails the HIP build at compile time, never at run time.
// Where the platforms differ in substance (device properties, the SM id register), the sources say
// so with TANDEM_HIP at that spot.
#if defined(TANDEM_HIP)
#include <hip/hip_ext.h>  // hipExtStreamCreateWithCUMask
#include <hip/hip_runtime.h>

// Types and constants.
#define cudaDevAttrMaxThreadsPerMultiProcessor hipDeviceAttributeMaxThreadsPerMultiProcessor
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDeviceProp hipDeviceProp_t
#define cudaError_t hipError_t
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaFuncAttributes hipFuncAttributes
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStream_t hipStream_t
#define cudaSuccess hipSuccess

// Functions.
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaFree hipFree
#define cudaFuncGetAttributes hipFuncGetAttributes
#define cudaFuncSetAttribute hipFuncSetAttribute
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaLaunchCooperativeKernel hipLaunchCooperativeKernel
#define cudaLaunchKernel hipLaunchKernel
#define cudaMalloc hipMalloc
#define cudaMemcpy hipMemcpy
#define cudaMemsetAsync hipMemsetAsync
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaSetDevice hipSetDevice
#define cudaStreamCreate hipStreamCreate
#define cudaStreamCreateWithPriority hipStreamCreateWithPriority
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize

// CUDA's runtime takes a __global__ function itself where HIP's takes its address as const void*.
template <class Kernel>
inline hipError_t hipFuncSetAttribute(Kernel* kernel, hipFuncAttribute attribute, int value) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), attribute, value);
}
#else
#include <cuda_runtime.h>
#endif
