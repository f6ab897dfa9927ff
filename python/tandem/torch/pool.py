"""Window memory of a copy-engine route lent out as PyTorch tensors, without copies: a collective whose
buffers are in window memory needs no staging (FSDP2's all-gather outputs, ``CopyEngineAllGather``; DDP's
rebuilt buckets, ``WindowSegments``)."""
import contextlib
import math
from collections import defaultdict

import torch

from . import counts, routes


class _WindowLease:
    """One window buffer lent out as a tensor's storage (``tandem._cuda.window_tensor``: DLPack, no copy). The
    storage keeps this object until it is freed; then the buffer goes back to its pool."""

    def __init__(self, pool, address, nbytes, device):
        self.pool, self.address, self.nbytes, self.device = pool, address, nbytes, device

    def __del__(self):
        self.pool.give_back(self)


class WindowPool:
    """Window memory of a route (``route.window_buffer``) lent out as tensors, without copies.

    ``window_buffer`` hands out new memory on every call (collective), valid until the route is closed, so
    the pool keeps each buffer and lends it again to the next request of the same byte size. When a
    tensor's storage is freed the pool records an event on the device's current stream; the next
    borrower's current stream waits for it - FSDP2 frees its all-gather output on the stream that read it
    last, as it does for PyTorch's caching allocator. Each buffer lives as long as the route (the pool
    holds the route, each tensor the pool). The route requires the same placement on every rank (the same
    buffer for the same call): every rank asks for and frees the same sizes in the same order, and the
    free list per size is last-in first-out, so every rank lends the same buffer."""

    def __init__(self, route):
        self.route = route
        self._free = defaultdict(list)  # bytes -> [(address, event recorded when it came back)]

    def tensor(self, size, dtype, device):
        device = torch.device(device)
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        nbytes = math.prod(int(s) for s in size) * dtype.itemsize
        free = self._free[nbytes]
        if free:
            address, released = free.pop()
            torch.cuda.current_stream(device).wait_event(released)
        else:
            # Collective, like every route call: every rank asks for the same sizes in the same order.
            address = self.route.window_buffer(nbytes)
            counts.count_window(buffers=1)
        counts.count_window(lent=1)
        lease = _WindowLease(self, address, nbytes, device)
        raw = routes.gpu_module().window_tensor(address, nbytes, device.index, lease)
        return raw.view(dtype).view(tuple(int(s) for s in size))

    def give_back(self, lease):
        try:
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(lease.device))
        except Exception:  # noqa: BLE001 - at interpreter exit CUDA may be gone: the buffer is not lent again
            return
        self._free[lease.nbytes].append((lease.address, event))


class WindowSegments:
    """PyTorch's caching allocator over a route's window memory: a ``torch.cuda.MemPool`` whose segments
    come from tandem._cuda's allocator functions (``tandem_window_segment_alloc``, window_segments.h), so a
    tensor allocated inside ``allocating()`` lies in window memory and the route takes it unstaged.

    Every segment request is collective (window memory is registered on every rank at once): allocate
    inside ``allocating()`` only what every rank allocates alike, in the same order - DDP's bucket rebuild
    (``ddp.rebuild_buckets_in``). Segments stay the route's until it closes; the pool keeps the route."""

    def __init__(self, route, device):
        self.route, self.device = route, torch.device(device)
        cuda = routes.gpu_module()
        allocator = torch.cuda.memory.CUDAPluggableAllocator(cuda.__file__, "tandem_window_segment_alloc",
                                                             "tandem_window_segment_free")
        self.pool = torch.cuda.MemPool(allocator.allocator())

    @contextlib.contextmanager
    def allocating(self):
        """This thread's allocations on the device go to window memory while inside."""
        cuda = routes.gpu_module()
        self.route.begin_window_segments()
        try:
            with torch.cuda.use_mem_pool(self.pool, self.device):
                yield
        except torch.OutOfMemoryError as e:
            # A failed segment request reaches PyTorch as a null pointer, which it reports as out of memory.
            why = cuda.window_segment_error()
            if why:
                raise RuntimeError(f"tandem.torch: window memory on {self.device}: {why}") from e
            raise
        finally:
            cuda.end_window_segments()
