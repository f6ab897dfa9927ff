#include "ranks/coordinator.h"

#include <algorithm>
#include <cstring>

#include "ranks/control_channel.h"
#include "ranks/rank_group.h"
#include "tandem/error.h"

namespace tandem::bench {

void Coordinator::throw_if_failed() const {
  if (failed()) TANDEM_THROW("aborted: another rank failed");
}

std::vector<std::vector<double>> Coordinator::all_gather(const std::vector<double>& mine) {
  std::string bytes(mine.size() * sizeof(double), '\0');
  if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
  std::vector<std::vector<double>> out;
  for (const std::string& theirs : all_gather(bytes)) {
    std::vector<double> values(theirs.size() / sizeof(double));
    if (!values.empty()) std::memcpy(values.data(), theirs.data(), values.size() * sizeof(double));
    out.push_back(std::move(values));
  }
  return out;
}

std::vector<std::vector<std::vector<double>>> Coordinator::all_gather_series(
    const std::vector<std::vector<double>>& mine) {
  // Packed as: series count, then each series' length and values (all as doubles: lengths are small).
  std::vector<double> packed{static_cast<double>(mine.size())};
  for (const auto& series : mine) {
    packed.push_back(static_cast<double>(series.size()));
    packed.insert(packed.end(), series.begin(), series.end());
  }
  std::vector<std::vector<std::vector<double>>> out;
  for (const auto& theirs : all_gather(packed)) {
    std::vector<std::vector<double>> series;
    size_t at = 0;
    auto next = [&]() -> size_t {
      TANDEM_REQUIRE(at < theirs.size(), "malformed series from another rank");
      return static_cast<size_t>(theirs[at++]);
    };
    const size_t count = next();
    for (size_t k = 0; k < count; ++k) {
      const size_t length = next();
      TANDEM_REQUIRE(at + length <= theirs.size(), "malformed series from another rank");
      series.emplace_back(theirs.begin() + at, theirs.begin() + at + length);
      at += length;
    }
    out.push_back(std::move(series));
  }
  return out;
}

int64_t Coordinator::sum(int64_t mine) {
  std::string bytes(sizeof(mine), '\0');
  std::memcpy(bytes.data(), &mine, sizeof(mine));
  int64_t total = 0;
  for (const std::string& theirs : all_gather(bytes)) {
    int64_t value = 0;
    TANDEM_REQUIRE(theirs.size() == sizeof(value), "ranks gathered values of different sizes");
    std::memcpy(&value, theirs.data(), sizeof(value));
    total += value;
  }
  return total;
}

double Coordinator::min(double mine) {
  double out = mine;
  for (const auto& v : all_gather(std::vector<double>{mine})) out = std::min(out, v.at(0));
  return out;
}

int ProcessCoordinator::rank() const { return channel_.rank(); }
int ProcessCoordinator::size() const { return channel_.size(); }

void ProcessCoordinator::barrier() {
  throw_if_failed();
  channel_.barrier();
}

void ProcessCoordinator::broadcast_from_rank0(void* data, size_t bytes) {
  throw_if_failed();
  channel_.broadcast(data, bytes);
}

std::vector<std::string> ProcessCoordinator::all_gather(const std::string& mine) {
  throw_if_failed();
  return channel_.all_gather(mine);
}

void ProcessCoordinator::fail(std::exception_ptr) {
  failed_ = true;
  // The peers learn of it through NCCL (the abort) or their time-out.
  channel_.abort();
}

int ThreadCoordinator::size() const { return group_.size(); }
void ThreadCoordinator::barrier() { group_.barrier(); }
void ThreadCoordinator::broadcast_from_rank0(void* data, size_t bytes) { group_.share_from_rank0(rank_, data, bytes); }
std::vector<std::string> ThreadCoordinator::all_gather(const std::string& mine) {
  return group_.all_gather(rank_, mine);
}
void ThreadCoordinator::fail(std::exception_ptr reason) { group_.fail(reason); }
bool ThreadCoordinator::failed() const { return group_.failed(); }

}  // namespace tandem::bench
