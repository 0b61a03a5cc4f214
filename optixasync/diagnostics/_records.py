"""What syncwatch records, and which CUDA driver calls can block the host.

Pure logic: the classification works on API names, so it is tested without
a GPU and reused for every CUPTI version (``_v2``, ``_ptds`` and ``_ptsz``
variants of a call fall in the same class as the call).

Blocking calls
--------------
None: pure logic.
"""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ASYNC_MEMCPY",
    "BLOCKING_CATEGORIES",
    "CATEGORY_HELP",
    "MEMORY_KINDS",
    "GRAPH_TIMED",
    "OPTIX_TIMED",
    "SyncRecord",
    "StackFrame",
    "base_name",
    "classify",
    "memory_kind_name",
]

#: One Python frame: (file name, line number, function name).
StackFrame = tuple[str, int, str]

# Categories of calls that can make the host wait for the GPU (or for the driver).
STREAM_SYNC = "stream-sync"
EVENT_SYNC = "event-sync"
CONTEXT_SYNC = "context-sync"
SYNC_MEMCPY = "sync-memcpy"
SYNC_MEMSET = "sync-memset"
ASYNC_MEMCPY = "async-memcpy"  # reported only when it touched pageable host memory (or was slow, kind unknown)
PAGEABLE_MEMCPY = "pageable-memcpy"
ALLOC = "alloc"
FREE = "free"
MODULE_LOAD = "module-load"
OPTIX = "optix"
IMPLICIT_SYNC = "implicit-sync"

#: Why each category can stall the host, for the report's legend.
CATEGORY_HELP: dict[str, str] = {
    STREAM_SYNC: "waits until all work queued on the stream has finished",
    EVENT_SYNC: "waits until the event has passed",
    CONTEXT_SYNC: "waits until all work on the device has finished",
    SYNC_MEMCPY: "synchronous copy: returns when the copy is done (from pageable memory, after earlier work too)",
    SYNC_MEMSET: "synchronous memset on the legacy default stream: serializes with all blocking streams",
    ASYNC_MEMCPY: "async copy whose host memory kind CUPTI did not report, and that took long",
    PAGEABLE_MEMCPY: "async copy to or from pageable host memory: the driver stages it and waits for the stream",
    ALLOC: "driver allocation (cuMemAlloc / cuMemHostAlloc): maps memory and can synchronize the device",
    FREE: "driver free (cuMemFree / cuMemFreeHost): synchronizes the device before releasing",
    MODULE_LOAD: "module load or link (JIT): CPU work in the driver, can synchronize the device",
    OPTIX: "an OptiX call or a frame graph's launch that waited for the GPU (validation mode, or a synchronizing "
           "call inside it)",
    IMPLICIT_SYNC: "a stream or context synchronization that CUPTI reported inside another call",
}

#: The categories that count as host stalls (``ASYNC_MEMCPY`` only after the memory-kind check).
BLOCKING_CATEGORIES = frozenset(CATEGORY_HELP)

_SYNC = {"cuStreamSynchronize": STREAM_SYNC, "cuEventSynchronize": EVENT_SYNC, "cuCtxSynchronize": CONTEXT_SYNC}
_SYNC_MEMCPY = {
    "cuMemcpy", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD", "cuMemcpyDtoA", "cuMemcpyAtoD", "cuMemcpyHtoA",
    "cuMemcpyAtoH", "cuMemcpyAtoA", "cuMemcpy2D", "cuMemcpy2DUnaligned", "cuMemcpy3D", "cuMemcpyPeer",
    "cuMemcpy3DPeer",
}
# Async copies that can involve host memory (device-to-device ones never touch it and are not watched).
_ASYNC_MEMCPY = {
    "cuMemcpyAsync", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemcpyHtoAAsync", "cuMemcpyAtoHAsync",
    "cuMemcpy2DAsync", "cuMemcpy3DAsync", "cuMemcpyBatchAsync", "cuMemcpy3DBatchAsync",
}
_SYNC_MEMSET = {"cuMemsetD8", "cuMemsetD16", "cuMemsetD32", "cuMemsetD2D8", "cuMemsetD2D16", "cuMemsetD2D32"}
_ALLOC = {"cuMemAlloc", "cuMemAllocPitch", "cuMemAllocManaged", "cuMemAllocHost", "cuMemHostAlloc", "cuMemHostRegister"}
_FREE = {"cuMemFree", "cuMemFreeHost", "cuMemHostUnregister"}
_MODULE = {
    "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary", "cuModuleUnload",
    "cuLibraryLoadData", "cuLibraryLoadFromFile", "cuLibraryUnload", "cuLinkComplete",
}
#: OptiX entry points syncwatch times (they return at once unless something inside them waits).
OPTIX_TIMED = ("optixLaunch", "optixAccelBuild", "optixAccelCompact")
#: Graph launches syncwatch times the same way: a frame graph's replay holds the frame's launches.
GRAPH_TIMED = ("cuGraphLaunch",)

_SUFFIX = re.compile(r"(_v\d+|_ptds|_ptsz)$")


def base_name(name: str) -> str:
    """``cuMemcpyDtoHAsync_v2_ptsz`` -> ``cuMemcpyDtoHAsync``; ``cu64MemAlloc`` -> ``cuMemAlloc``."""
    if name.startswith("cu64"):
        name = "cu" + name[4:]
    previous = None
    while previous != name:
        previous, name = name, _SUFFIX.sub("", name)
    return name


def classify(name: str) -> str | None:
    """The category of a CUDA driver or OptiX call, or None when it never blocks the host.

    Stream-ordered allocation (``cuMemAllocAsync``, ``cuMemFreeAsync``,
    ``cuMemAllocFromPoolAsync``), launches, event records and queries are None.
    """
    if name in OPTIX_TIMED or name in GRAPH_TIMED:
        return OPTIX
    base = base_name(name)
    if base in _SYNC:
        return _SYNC[base]
    if base in _SYNC_MEMCPY:
        return SYNC_MEMCPY
    if base in _ASYNC_MEMCPY:
        return ASYNC_MEMCPY
    if base in _SYNC_MEMSET:
        return SYNC_MEMSET
    if base in _ALLOC:
        return ALLOC
    if base in _FREE:
        return FREE
    if base in _MODULE:
        return MODULE_LOAD
    return None


#: ``CUpti_ActivityMemoryKind`` values (stable across CUPTI versions).
MEMORY_KINDS = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed",
                6: "device-static", 7: "managed-static"}
PAGEABLE = 1


def memory_kind_name(kind: int) -> str:
    return MEMORY_KINDS.get(int(kind), f"kind-{int(kind)}")


@dataclass
class SyncRecord:
    """One call that made (or could make) the host wait.

    Attributes
    ----------
    api : str
        The driver or OptiX entry point (``cuStreamSynchronize``, ``optixLaunch``...).
    category : str
        Why it can block (a key of :data:`CATEGORY_HELP`).
    host_ms : float
        Host time spent inside the call.
    start_ns, end_ns : int
        ``time.perf_counter_ns()`` at entry and exit (the clock of ``time.perf_counter``).
    thread : str
        Name of the calling thread.
    stack : tuple of (file, line, function)
        The caller's Python stack, innermost frame first.
    user_frame : (file, line, function) or None
        The first frame outside optixasync, CuPy, CUPTI, the CUDA bindings,
        NumPy and the standard library: the user's line that caused the call.
    designed : str or None
        For a designed wait of the frame scheduler: which one (``slot fence``, ``optix queue``,
        ``completion thread``, ``drain``...). Designed waits are not stalls.
    inside : str or None
        The OptiX call this driver call happened inside (``optixLaunch``...).
    memory : str or None
        For copies: the host and device memory kinds CUPTI reported (``pageable -> device``).
    nbytes : int or None
        Bytes copied, when CUPTI reported it.
    blocked : bool
        For OptiX calls: whether the call waited (a stall inside it, or longer than the threshold).
    correlation_id : int
        CUPTI's id of the driver call (0 for OptiX calls).
    extra : dict
        More facts when known: ``synchronized`` (``"stream 0x..."`` or
        ``"context"``, what CUPTI reported the call synchronized).
    """

    api: str
    category: str
    host_ms: float
    start_ns: int = 0
    end_ns: int = 0
    thread: str = ""
    stack: tuple[StackFrame, ...] = ()
    user_frame: StackFrame | None = None
    designed: str | None = None
    inside: str | None = None
    memory: str | None = None
    nbytes: int | None = None
    blocked: bool = True
    correlation_id: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """``file:line in function`` of the user's frame (``<no Python caller>`` when there is none)."""
        if self.user_frame is None:
            return "<no Python caller>"
        filename, line, function = self.user_frame
        return f"{filename}:{line} in {function}"

    @property
    def code(self) -> str:
        """The source line of the user's frame (empty when unavailable)."""
        if self.user_frame is None:
            return ""
        return linecache.getline(self.user_frame[0], self.user_frame[1]).strip()

    def to_dict(self) -> dict[str, Any]:
        user = None
        if self.user_frame is not None:
            user = {"file": self.user_frame[0], "line": self.user_frame[1], "function": self.user_frame[2],
                    "code": self.code}
        out = {
            "api": self.api,
            "category": self.category,
            "host_ms": self.host_ms,
            "start_s": self.start_ns / 1e9,
            "thread": self.thread,
            "user": user,
            "designed": self.designed,
            "inside": self.inside,
            "memory": self.memory,
            "bytes": self.nbytes,
            "blocked": self.blocked,
            "correlation_id": self.correlation_id,
            "stack": [list(frame) for frame in self.stack],
        }
        out.update(self.extra)
        return out
