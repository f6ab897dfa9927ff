// nccl.h includes cuda_runtime.h: compiles only if NCCL::nccl carries CUDA's include folder.
#include <nccl.h>

int main() { return NCCL_MAJOR >= 2 ? 0 : 1; }
