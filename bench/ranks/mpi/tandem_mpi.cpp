// libtandem_mpi.so: MPI_Bcast of the NCCL unique id and MPI_Allgather of the GPU identities.
#include "tandem_mpi.h"

#include <mpi.h>

#include <cstdio>

namespace {

int fail(int code, const char* what, char* error, int error_bytes) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (code != MPI_SUCCESS) MPI_Error_string(code, text, &length);
  std::snprintf(error, static_cast<size_t>(error_bytes), "%s failed%s%s", what, length ? ": " : "", text);
  return code == MPI_SUCCESS ? 1 : code;
}

}  // namespace

extern "C" int tandem_mpi_exchange(void* payload, int payload_bytes, const void* identity, int identity_bytes,
                                   void* identities, int max_ranks, int* rank, int* size, char* error,
                                   int error_bytes) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    const int rc = MPI_Init(nullptr, nullptr);
    if (rc != MPI_SUCCESS) return fail(rc, "MPI_Init", error, error_bytes);
  }
  // Errors come back as codes, so the caller reports them, instead of MPI aborting the job silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(MPI_COMM_WORLD, size);
  if (rc != MPI_SUCCESS) return fail(rc, "MPI_Comm_rank/size", error, error_bytes);
  if (*size > max_ranks) {
    std::snprintf(error, static_cast<size_t>(error_bytes), "MPI reports %d ranks but the launcher's environment %d",
                  *size, max_ranks);
    return 1;
  }
  rc = MPI_Bcast(payload, payload_bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return fail(rc, "MPI_Bcast", error, error_bytes);
  rc = MPI_Allgather(identity, identity_bytes, MPI_BYTE, identities, identity_bytes, MPI_BYTE, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return fail(rc, "MPI_Allgather", error, error_bytes);
  if (!initialized) {
    rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) return fail(rc, "MPI_Finalize", error, error_bytes);
  }
  return 0;
}
