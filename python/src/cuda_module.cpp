// tandem._cuda: the part of tandem that runs on the GPU, for tandem.torch. Links the shared CUDA runtime and
// NCCL by SONAME; tandem.torch imports it after torch, so both resolve to the copies PyTorch loaded
// (python/CMakeLists.txt). It binds tandem::CopyEngineRoute (include/tandem/copy_engine_route.h): the
// copy-engine collectives on a process group's communicator, on PyTorch's buffers and streams. Pointers,
// streams and communicators cross as integers (tensor.data_ptr(), stream.cuda_stream, _comm_ptr()); dtypes
// as ncclDataType_t values (tandem.torch's table).
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "tandem/collective.h"
#include "tandem/copy_engine_route.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/nccl_wait.h"
#include "window_segments.h"

namespace nb = nanobind;

namespace {

using tandem::CopyEngineRoute;

tandem::Collective collective_named(const std::string& name) {
  if (const auto kind = tandem::parse_collective(name)) return *kind;
  // Every collective the route takes, from the library's list (broadcast included), as Python spells it.
  std::string accepted;
  for (const tandem::Collective c : tandem::kCollectives) {
    std::string spelled = tandem::to_string(c);
    std::replace(spelled.begin(), spelled.end(), '-', '_');
    accepted += (accepted.empty() ? "" : ", ") + spelled;
  }
  throw nb::value_error(("unknown collective '" + name + "' (accepted: " + accepted + ")").c_str());
}

// tandem.torch's names for the reductions the route computes (tandem/copy_engine_eligibility.h).
tandem::Reduction reduction_named(const std::string& name) {
  if (name == "sum") return tandem::Reduction::Sum;
  if (name == "average") return tandem::Reduction::Average;
  if (name == "premul_sum") return tandem::Reduction::PreMulSum;
  if (name == "prediv_sum") return tandem::Reduction::PreDivSum;
  throw nb::value_error(("unknown reduction '" + name + "' (accepted: sum, average, premul_sum, prediv_sum)").c_str());
}

template <typename T>
T* as_pointer(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// A route that Python can close before PyTorch destroys the communicator it was made from (the route
// must not outlive its parent); every call after close() is an error, not a crash.
class Route {
 public:
  Route(uintptr_t comm, double timeout_s, const std::string& who, size_t max_pool_bytes) {
    TANDEM_REQUIRE(comm != 0, "the process group has no NCCL communicator");
    tandem::WaitRules rules;
    rules.timeout_s = timeout_s;
    rules.who = who;
    rules.timeout_setting = "tandem.torch.copy_engine_route(timeout_s=...)";
    route_ =
        std::make_unique<CopyEngineRoute>(as_pointer<std::remove_pointer_t<ncclComm_t>>(comm), rules, max_pool_bytes);
  }
  CopyEngineRoute& get() {
    TANDEM_REQUIRE(route_ != nullptr, "the copy-engine route is closed");
    return *route_;
  }
  void close() {
    if (route_) tandem_python::forget_window_segments(*route_);
    route_.reset();
  }
  bool closed() const { return route_ == nullptr; }

 private:
  std::unique_ptr<CopyEngineRoute> route_;
};

ncclDataType_t nccl_dtype(int value) { return static_cast<ncclDataType_t>(value); }
cudaStream_t stream_of(uintptr_t address) { return as_pointer<CUstream_st>(address); }

}  // namespace

NB_MODULE(_cuda, m) {
  m.doc() = "tandem's GPU controls for PyTorch (import tandem.torch, which imports torch first)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const tandem::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  // The version of the NCCL this process runs, as NCCL_VERSION_CODE (22809 for 2.28.9): the one
  // PyTorch loaded when tandem.torch imported this module after torch.
  m.def("nccl_version", [] {
    int version = 0;
    TANDEM_NCCL_CHECK(nullptr, ncclGetVersion(&version));
    return version;
  });
  // The CUDA runtime's version (13000 for 13.0): the shared runtime, PyTorch's once torch is loaded.
  m.def("cuda_runtime_version", [] {
    int version = 0;
    TANDEM_CUDA_CHECK(cudaRuntimeGetVersion(&version));
    return version;
  });

  // Window memory as a PyTorch tensor without a copy: DLPack, the tensor's storage holding `owner` (tandem.torch's
  // lease, which gives the buffer back to its pool when the storage is freed). Not __cuda_array_interface__:
  // PyTorch reads that through NumPy, which a training environment need not have.
  m.def(
      "window_tensor",
      [](uintptr_t address, size_t nbytes, int device, nb::handle owner) {
        return nb::ndarray<nb::pytorch, uint8_t, nb::ndim<1>>(as_pointer<void>(address), {nbytes}, owner, {},
                                                              nb::dtype<uint8_t>(), nb::device::cuda::value, device);
      },
      nb::arg("address"), nb::arg("nbytes"), nb::arg("device"), nb::arg("owner"),
      "a uint8 CUDA tensor of `nbytes` at `address` on `device`, keeping `owner` alive as long as its storage");

  // The window segments of a torch.cuda.MemPool (window_segments.h): a route's begin_window_segments()
  // names where this thread's requests go, until end_window_segments().
  m.def("end_window_segments", &tandem_python::end_window_segments,
        "this thread's requests for window segments fail again (none is asked for outside tandem.torch's rebuild)");
  m.def("window_segment_error", &tandem_python::window_segment_error,
        "why this thread's last request for a window segment failed, or '' (PyTorch reports it as out of memory)");

  // Every call but stats() may enqueue GPU work or waits on NCCL's host-side progress (a split,
  // a window registration): the GIL is released so that PyTorch's other threads (its NCCL watchdog,
  // autograd's) run meanwhile. Each call is collective, as NCCL's own (copy_engine_route.h).
  using release_gil = nb::call_guard<nb::gil_scoped_release>;
  nb::class_<Route>(m, "CopyEngineRoute",
                    "tandem::CopyEngineRoute on a communicator (an ncclComm_t as an integer): copy-engine "
                    "collectives on any device buffers, staged through one registered window pool. Collective: "
                    "every rank makes the same calls in the same order.")
      .def(nb::init<uintptr_t, double, const std::string&, size_t>(), nb::arg("comm"), nb::arg("timeout_s") = 300.0,
           nb::arg("who") = "", nb::arg("max_pool_bytes") = tandem::kDefaultRoutePoolBytes, release_gil())
      .def_prop_ro("rank", [](Route& r) { return r.get().rank(); })
      .def_prop_ro("nranks", [](Route& r) { return r.get().nranks(); })
      .def(
          "run",
          [](Route& r, const std::string& kind, uintptr_t send, uintptr_t recv, size_t count, int dtype,
             uintptr_t stream, const std::string& reduction, float scalar, uintptr_t device_scalar, int root) {
            tandem::CopyEngineCall call;
            call.kind = collective_named(kind);
            call.send = as_pointer<const void>(send);
            call.recv = as_pointer<void>(recv);
            call.count = count;
            call.dtype = nccl_dtype(dtype);
            call.reduction = reduction_named(reduction);
            call.scalar = scalar;
            call.device_scalar = as_pointer<const void>(device_scalar);
            call.root = root;
            call.stream = stream_of(stream);
            const tandem::RouteOutcome outcome = r.get().check(call);
            if (outcome == tandem::RouteOutcome::CopyEngine) r.get().run(call);
            return std::string(tandem::to_string(outcome));
          },
          nb::arg("kind"), nb::arg("send"), nb::arg("recv"), nb::arg("count"), nb::arg("dtype"), nb::arg("stream"),
          nb::arg("reduction") = "sum", nb::arg("scalar") = 1.0f, nb::arg("device_scalar") = 0, nb::arg("root") = 0,
          release_gil(),
          "runs the collective on the route and returns 'copy-engine', or returns why the route does not take it "
          "(tandem::RouteOutcome's token: nothing is enqueued then; the caller hands the call to NCCL). kind: "
          "all_reduce, reduce_scatter, all_gather, all_to_all, broadcast; count and dtype as NCCL's; reduction: "
          "sum, average, premul_sum (scalar: the factor as a value of the dtype, or device_scalar: its address), "
          "prediv_sum (scalar: the divisor); root: a broadcast's, the group rank whose data every rank receives")
      .def(
          "window_buffer",
          [](Route& r, size_t bytes) { return reinterpret_cast<uintptr_t>(r.get().window_buffer(bytes)); },
          nb::arg("bytes"), release_gil(),
          "the address of `bytes` of window memory owned by the route (collective): data there is not staged. "
          "Valid until the route is closed")
      .def(
          "stats",
          [](Route& r) {
            const tandem::CopyEngineRouteStats s = r.get().stats();
            nb::dict d;
#define TANDEM_ROUTE_COUNTER_ITEM(name, unit, meaning) d[#name] = s.name;
            TANDEM_ROUTE_COUNTERS(TANDEM_ROUTE_COUNTER_ITEM)
#undef TANDEM_ROUTE_COUNTER_ITEM
            return d;
          },
          "the route's counters, {name: value}: the stats schema's 'route' record (tandem/route_counters.h)")
      .def(
          "begin_window_segments", [](Route& r) { tandem_python::begin_window_segments(r.get()); },
          "from now on this thread's requests for window segments (tandem_window_segment_alloc, a "
          "torch.cuda.MemPool's allocator) take this route's window memory (window_segments.h)")
      .def("close", &Route::close, release_gil(),
           "releases the windows and closes the lanes (collective); later calls raise RuntimeError")
      .def_prop_ro("closed", &Route::closed);
}
