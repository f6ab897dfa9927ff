#pragma once
// The MPI side of the rendezvous under mpirun: rank 0's NCCL unique id reaches every rank through
// MPI_Bcast and every rank's GPU identity reaches all through MPI_Allgather. MPI lives in
// libtandem_mpi.so (built when CMake finds MPI), loaded here on first use: `tandem` starts without
// libmpi, and a build or machine without MPI falls back to the file rendezvous.
#include <string>
#include <vector>

namespace tandem::bench {

// Whether the MPI module was built and loads; when not, `why` says why.
bool mpi_available(std::string* why = nullptr);

struct MpiExchange {
  int rank = 0;
  int size = 0;
  std::string payload;                  // rank 0's
  std::vector<std::string> identities;  // by rank
};
// Collective over MPI_COMM_WORLD. `payload` has the same size on every rank (rank 0's content
// counts); `identity` is at most 1023 bytes. MPI has no time-outs, so the exchange runs on its own
// thread and this call gives up after `timeout_s` (the thread is left blocked; the caller exits).
// `my_rank` (the launcher's) only serves that time-out's message: with two ranks it names the other.
MpiExchange mpi_exchange(const std::string& payload, const std::string& identity, int my_rank, int expected_size,
                         double timeout_s);

}  // namespace tandem::bench
