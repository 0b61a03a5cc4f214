"""Stream-ordered allocations keep their stream alive until they are freed on it (CPU, fake runtime)."""

from __future__ import annotations

import gc
import weakref

import pytest

# The public DeviceMemory needs CuPy's runtime and a device; the stream-ordered allocation it hands out is reached
# with a fake runtime only through its private class (pure lifetime logic: free on the stream, keep the stream).
from optixasync.cuda import _memory


class FakeRuntime:
    def __init__(self) -> None:
        self.next_ptr = 0x1000
        self.calls: list[tuple[str, int, int]] = []

    def mallocAsync(self, nbytes: int, stream: int) -> int:  # noqa: N802 (the runtime's name)
        self.next_ptr += 0x1000
        self.calls.append(("malloc", self.next_ptr, stream))
        return self.next_ptr

    def freeAsync(self, ptr: int, stream: int) -> None:  # noqa: N802
        self.calls.append(("free", ptr, stream))


class FakeStream:
    """Like CuPy's stream: destroyed in its finalizer (logged beside the runtime's calls)."""

    def __init__(self, ptr: int, log: list) -> None:
        self.ptr = ptr
        self.log = log

    def __del__(self) -> None:
        self.log.append(("destroy stream", 0, self.ptr))


def test_free_goes_to_the_allocating_stream_and_releases_it():
    runtime = FakeRuntime()
    stream = FakeStream(0x77, runtime.calls)
    alive = weakref.ref(stream)
    first = _memory._StreamOrderedAllocation(runtime, 256, stream)
    second = _memory._StreamOrderedAllocation(runtime, 512, stream)
    del stream
    assert alive() is not None  # held for the two live allocations
    ptr = first.ptr
    del first
    assert runtime.calls[-1] == ("free", ptr, 0x77)
    assert alive() is not None  # still held: one allocation (the second) is live
    ptr = second.ptr
    del second
    # the last allocation freed on the stream, then the stream released (and destroyed) with nothing holding it
    assert runtime.calls[-2:] == [("free", ptr, 0x77), ("destroy stream", 0, 0x77)]
    assert alive() is None


def test_stream_outlives_an_allocation_in_the_same_garbage_cycle():
    runtime = FakeRuntime()

    class Holder:
        pass

    holder = Holder()
    holder.stream = FakeStream(0x99, runtime.calls)
    alive = weakref.ref(holder.stream)
    holder.memory = _memory._StreamOrderedAllocation(runtime, 64, holder.stream)
    holder.me = holder  # a cycle holding both the stream and the allocation
    ptr = holder.memory.ptr
    del holder
    gc.collect()
    gc.collect()
    assert alive() is None  # nothing holds the stream once its allocation is freed
    # freed on its stream, and only then was the stream destroyed
    assert runtime.calls[1:] == [("free", ptr, 0x99), ("destroy stream", 0, 0x99)]


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # an error in the finalizer fails
def test_a_failed_allocation_frees_nothing_and_holds_no_stream():
    class OutOfMemory(FakeRuntime):
        def mallocAsync(self, nbytes: int, stream: int) -> int:  # noqa: N802
            raise MemoryError("out of memory")

    runtime = OutOfMemory()
    stream = FakeStream(0x55, runtime.calls)
    alive = weakref.ref(stream)
    try:
        _memory._StreamOrderedAllocation(runtime, 1 << 40, stream)
    except MemoryError:
        pass
    else:
        raise AssertionError("the allocation should have failed")
    del stream
    gc.collect()
    assert alive() is None  # the failed allocation holds no stream
    assert runtime.calls == [("destroy stream", 0, 0x55)]
    assert [c for c in runtime.calls if c[0] == "free"] == []
