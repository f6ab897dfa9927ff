#include "ranks/mpi_bootstrap.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "ranks/mpi/tandem_mpi.h"
#include "tandem/error.h"

namespace tandem::bench {

namespace {

constexpr int kIdentityBytes = 1024;

std::string executable_dir() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string p(path, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

struct Module {
  tandem_mpi_exchange_fn exchange = nullptr;
  std::string error;
};

const Module& module() {
  static const Module loaded = [] {
    Module m;
#ifdef TANDEM_HAVE_MPI
    // Next to the command as built and as installed (<prefix>/bin/tandem, <prefix>/lib), else the
    // loader's search path. RTLD_GLOBAL: Open MPI's own components resolve libmpi's symbols.
    std::string tried;
    for (const std::string& path : {executable_dir() + "/../lib/libtandem_mpi.so", std::string("libtandem_mpi.so")}) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!handle) {
        const char* why = dlerror();
        tried += (tried.empty() ? "" : "; ") + std::string(why ? why : path.c_str());
        continue;
      }
      m.exchange = reinterpret_cast<tandem_mpi_exchange_fn>(dlsym(handle, "tandem_mpi_exchange"));
      if (m.exchange) return m;
      tried += "; " + path + " lacks tandem_mpi_exchange";
    }
    m.error = "the MPI module did not load (" + tried + ")";
#else
    m.error = "this tandem was built without MPI";
#endif
    return m;
  }();
  return loaded;
}

}  // namespace

bool mpi_available(std::string* why) {
  const Module& m = module();
  if (!m.exchange && why) *why = m.error;
  return m.exchange != nullptr;
}

MpiExchange mpi_exchange(const std::string& payload, const std::string& identity, int my_rank, int expected_size,
                         double timeout_s) {
  std::string why;
  if (!mpi_available(&why)) TANDEM_THROW(why);
  TANDEM_REQUIRE(identity.size() < kIdentityBytes, "GPU identity too long for the MPI exchange");
  TANDEM_REQUIRE(expected_size >= 1, "MPI exchange needs at least one rank");
  struct State {
    MpiExchange out;
    std::string payload;
    std::string identity;
    std::vector<char> identities;
    char error[512] = {};
    int rc = -1;
  };
  auto state = std::make_shared<State>();
  state->payload = payload;
  state->identity = identity;
  state->identity.resize(kIdentityBytes, '\0');
  state->identities.resize(static_cast<size_t>(expected_size) * kIdentityBytes);
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  // The state is shared with the thread, so a thread left blocked after a time-out never touches
  // freed memory.
  std::thread([state, exchange = module().exchange, expected_size, done = std::move(done)]() mutable {
    state->rc = exchange(state->payload.data(), static_cast<int>(state->payload.size()), state->identity.data(),
                         kIdentityBytes, state->identities.data(), expected_size, &state->out.rank, &state->out.size,
                         state->error, sizeof(state->error));
    done.set_value();
  }).detach();
  if (finished.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready) {
    // MPI cannot say which rank is missing; of two, it is the other one.
    const std::string missing =
        expected_size == 2 && (my_rank == 0 || my_rank == 1) ? "rank " + std::to_string(1 - my_rank) : "a rank";
    TANDEM_THROW("the MPI rendezvous did not complete within " + std::to_string(static_cast<int>(timeout_s)) +
                 " s (--timeout): " + missing + " did not reach it");
  }
  if (state->rc != 0) TANDEM_THROW(std::string("MPI rendezvous: ") + state->error);
  if (state->out.size != expected_size)
    TANDEM_THROW("MPI reports " + std::to_string(state->out.size) + " ranks but the launcher's environment " +
                 std::to_string(expected_size));
  state->out.payload = state->payload;
  for (int r = 0; r < expected_size; ++r)
    state->out.identities.emplace_back(state->identities.data() + static_cast<size_t>(r) * kIdentityBytes);
  return state->out;
}

}  // namespace tandem::bench
