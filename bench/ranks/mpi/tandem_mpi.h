#pragma once
// The C interface of libtandem_mpi.so, the one piece of tandem built against MPI. `tandem` loads it
// (dlopen) only when started by mpirun, so the command never needs libmpi to start otherwise.
#ifdef __cplusplus
extern "C" {
#endif

// Initialises MPI (unless already), then: broadcasts `payload_bytes` bytes at `payload` from rank 0
// (rank 0 fills them, the others receive them), and gathers every rank's `identity_bytes` bytes at
// `identity` into `identities` (rank order; room for `max_ranks` ranks). Writes this process's rank
// and the world size, then finalises MPI if it initialised it: MPI serves the bootstrap only.
// Returns 0, or non-zero with a message in `error` (NUL-terminated, at most `error_bytes`).
int tandem_mpi_exchange(void* payload, int payload_bytes, const void* identity, int identity_bytes, void* identities,
                        int max_ranks, int* rank, int* size, char* error, int error_bytes);

typedef int (*tandem_mpi_exchange_fn)(void*, int, const void*, int, void*, int, int*, int*, char*, int);

#ifdef __cplusplus
}
#endif
