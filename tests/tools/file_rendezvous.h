#pragma once
// NCCL's unique id through a file, for tools run as one process per rank (ranks may share a GPU):
// rank 0 writes it (atomically: a temporary file renamed), the others wait up to 60 s for it.
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace tandem_tools {

inline ncclUniqueId file_rendezvous(int rank, const std::string& file) {
  ncclUniqueId id{};
  if (rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) throw std::runtime_error("ncclGetUniqueId failed");
    const std::string temporary = file + ".tmp";
    std::ofstream(temporary, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    if (std::rename(temporary.c_str(), file.c_str()) != 0) throw std::runtime_error("cannot write " + file);
    return id;
  }
  for (int tries = 0; tries < 600; ++tries) {
    std::ifstream in(file, std::ios::binary);
    if (in && in.read(reinterpret_cast<char*>(&id), sizeof id)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("no NCCL id in " + file + " after 60 s");
}

}  // namespace tandem_tools
