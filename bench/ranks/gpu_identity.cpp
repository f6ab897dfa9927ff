#include "ranks/gpu_identity.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tandem/error.h"

namespace tandem::bench {

namespace {

bool same_gpu(const GpuIdentity& a, const GpuIdentity& b) {
  if (!a.uuid.empty() && !b.uuid.empty()) return a.uuid == b.uuid;
  return a.machine == b.machine && a.bus_id == b.bus_id;
}

std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

GpuIdentity this_machine() {
  GpuIdentity id;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) id.host = name;
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  id.machine = id.host + "/" + boot;
  return id;
}

std::string serialize(const GpuIdentity& id) {
  return clean(id.host) + "\t" + clean(id.machine) + "\t" + clean(id.bus_id) + "\t" + clean(id.uuid);
}

GpuIdentity parse_gpu_identity(const std::string& text) {
  GpuIdentity id;
  std::istringstream in(text);
  if (!std::getline(in, id.host, '\t') || !std::getline(in, id.machine, '\t') || !std::getline(in, id.bus_id, '\t'))
    TANDEM_THROW("malformed GPU identity '" + text + "'");
  std::getline(in, id.uuid);
  return id;
}

std::vector<std::vector<int>> ranks_sharing_a_gpu(const std::vector<GpuIdentity>& ids) {
  std::vector<std::vector<int>> groups;
  std::vector<bool> grouped(ids.size(), false);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (grouped[i]) continue;
    std::vector<int> group{static_cast<int>(i)};
    for (size_t j = i + 1; j < ids.size(); ++j)
      if (!grouped[j] && same_gpu(ids[i], ids[j])) {
        group.push_back(static_cast<int>(j));
        grouped[j] = true;
      }
    if (group.size() > 1) groups.push_back(group);
  }
  return groups;
}

std::string shared_gpu_message(const std::vector<GpuIdentity>& ids) {
  const auto groups = ranks_sharing_a_gpu(ids);
  if (groups.empty()) return "";
  std::string out;
  for (const auto& g : groups) {
    std::string ranks;
    for (size_t k = 0; k < g.size(); ++k)
      ranks += (k == 0 ? "" : k + 1 == g.size() ? " and " : ", ") + std::to_string(g[k]);
    const GpuIdentity& gpu = ids[g.front()];
    out += (out.empty() ? "" : "; ") + std::string("ranks ") + ranks + " share the GPU " + gpu.bus_id +
           (gpu.uuid.empty() ? "" : " (" + gpu.uuid + ")") + " on " + gpu.host;
  }
  return out + ": give each rank its own GPU (fewer ranks per node, or --device), or pass --allow-shared-gpu";
}

}  // namespace tandem::bench
