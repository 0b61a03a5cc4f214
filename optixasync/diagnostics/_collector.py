"""The raw side of syncwatch: CUPTI callbacks and OptiX-call timing, as cheap as possible.

:class:`Collector` receives CUPTI's driver-API and synchronization
callbacks. At ``API_ENTER`` it notes the time and copies the caller's Python
stack (the callback runs in the calling thread, inside the call); at
``API_EXIT`` it stores the finished call. Nothing here calls CUDA, reads
source files or takes a lock: list appends and dict operations are atomic
under the GIL, and a callback that waited for a lock held by a thread now
inside a CUDA call could deadlock. Classification and attribution happen
later, in :func:`optixasync.diagnostics._report.build_report`.

:class:`OptixPatcher` times ``optixLaunch``, ``optixAccelBuild`` and
``optixAccelCompact`` by replacing those attributes of the process's
``OptixApi`` objects while a watch is active, and putting the originals
back after: when no watch is active, OptiX calls go straight to the driver.
It times the launches of CUDA graphs (``cuGraphLaunch``, through
:func:`optixasync.cuda._graph.graph_api`) the same way: a replayed frame
graph shows there as a frame's launches do.

Blocking calls
--------------
None: this module makes no CUDA call.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import Any

from ._records import GRAPH_TIMED, OPTIX_TIMED, StackFrame
from ._stack import capture_stack

__all__ = ["Collector", "OptixPatcher", "RawCall"]

# CUPTI constants (CUpti_CallbackDomain, CUpti_ApiCallbackSite, CUpti_CallbackIdSync): fixed by CUPTI's ABI.
DRIVER_DOMAIN = 1
SYNC_DOMAIN = 4
API_ENTER = 0
API_EXIT = 1
STREAM_SYNCHRONIZED = 1
CONTEXT_SYNCHRONIZED = 2
# A synchronization reported this soon after a watched call of the same thread returned belongs to that call.
_SAME_CALL_NS = 200_000


def _caller(depth: int) -> Any:
    """The frame ``depth`` levels up, or None: a CUDA call from a thread without Python frames has no caller."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:
        return None


class RawCall:
    """One call as seen by the callbacks: what, when, which thread, from where.

    ``kind`` is ``"driver"``, ``"optix"`` or ``"sync"`` (a synchronization
    CUPTI reported with no watched driver call open in the thread).
    """

    __slots__ = ("kind", "name", "start_ns", "end_ns", "stack", "thread", "correlation_id", "call_id", "parent",
                 "synced")

    def __init__(self, kind: str, name: str, start_ns: int, stack: tuple[StackFrame, ...], thread: str,
                 correlation_id: int = 0, call_id: int = 0, parent: int = 0) -> None:
        self.kind = kind
        self.name = name
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.stack = stack
        self.thread = thread
        self.correlation_id = correlation_id
        self.call_id = call_id  # OptiX calls: an id the driver calls made inside it refer to
        self.parent = parent  # driver calls: the call_id of the OptiX call they happened inside (0: none)
        self.synced: str | None = None  # "stream 0x..." / "context" when CUPTI reported a synchronization

    def __repr__(self) -> str:
        return f"<RawCall {self.kind} {self.name} {(self.end_ns - self.start_ns) / 1e6:.3f} ms>"


class Collector:
    """Receives the callbacks of one syncwatch session.

    Parameters
    ----------
    names : dict
        Driver-API callback id -> function name, for the ids that were enabled.
    max_stack : int
        Frames kept per call.
    """

    def __init__(self, names: dict[int, str], max_stack: int = 64) -> None:
        self.names = dict(names)
        self.max_stack = int(max_stack)
        self.driver: list[RawCall] = []
        self.optix: list[RawCall] = []
        self.syncs: list[RawCall] = []
        #: correlation id -> (source memory kind, destination memory kind, bytes), from CUPTI's activity records.
        self.memcpy_kinds: dict[int, tuple[int, int, int]] = {}
        self.errors: list[str] = []
        self._open: dict[tuple[int, int], RawCall] = {}  # (thread id, correlation id): entry and exit share both
        self._tls = threading.local()
        self._ids = itertools.count(1)

    # -- per-thread stack of open calls ---------------------------------------------
    def _thread_stack(self) -> list[RawCall]:
        stack = getattr(self._tls, "open", None)
        if stack is None:
            stack = self._tls.open = []
        return stack

    @staticmethod
    def _innermost_optix(open_calls: list[RawCall]) -> int:
        for call in reversed(open_calls):
            if call.kind == "optix":
                return call.call_id
        return 0

    # -- CUPTI -------------------------------------------------------------------
    def on_callback(self, userdata: Any, domain: int, cbid: int, cbdata: Any) -> None:
        """The CUPTI callback: never raises (an error is kept in :attr:`errors`)."""
        try:
            if domain == DRIVER_DOMAIN:
                self._driver(cbid, cbdata)
            elif domain == SYNC_DOMAIN:
                self._synchronized(cbid, cbdata)
        except BaseException as exc:  # an exception must not cross back into the driver
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _driver(self, cbid: int, cbdata: Any) -> None:
        name = self.names.get(int(cbid))
        if name is None:
            return
        correlation = int(cbdata.correlation_id)
        if int(cbdata.callback_site) == API_ENTER:
            open_calls = self._thread_stack()
            # Frame 0 is this method, 1 on_callback; 2 is the caller's innermost Python frame.
            call = RawCall("driver", name, time.perf_counter_ns(), capture_stack(_caller(2), self.max_stack),
                           threading.current_thread().name, correlation, parent=self._innermost_optix(open_calls))
            self._open[(threading.get_ident(), correlation)] = call
            open_calls.append(call)
            return
        end = time.perf_counter_ns()
        call = self._open.pop((threading.get_ident(), correlation), None)
        if call is None:  # entered before the watch began
            return
        call.end_ns = end
        open_calls = self._thread_stack()
        if open_calls and open_calls[-1] is call:
            open_calls.pop()
        elif call in open_calls:
            open_calls.remove(call)
        self._tls.last = call
        self.driver.append(call)

    def _synchronized(self, cbid: int, cbdata: Any) -> None:
        if int(cbid) == STREAM_SYNCHRONIZED:
            what = f"stream 0x{int(getattr(cbdata, 'stream', 0) or 0):x}"
        elif int(cbid) == CONTEXT_SYNCHRONIZED:
            what = "context"
        else:
            return
        open_calls = self._thread_stack()
        now = time.perf_counter_ns()
        if open_calls:
            if open_calls[-1].kind == "driver":
                open_calls[-1].synced = what  # the open call is the one that synchronized
                return
            # else: inside an OptiX call, no watched driver call open: OptiX synchronized by other means
        else:
            last = getattr(self._tls, "last", None)
            if last is not None and last.synced is None and now - last.end_ns < _SAME_CALL_NS:
                last.synced = what  # reported just after the call that synchronized returned
                return
        # A synchronization inside a call we do not watch (or inside an OptiX call): record it on its own.
        call = RawCall("sync", f"synchronize ({what})", now, capture_stack(_caller(2), self.max_stack),
                       threading.current_thread().name, parent=self._innermost_optix(open_calls))
        call.synced = what
        self.syncs.append(call)

    def on_activities(self, activities: Any) -> None:
        """CUPTI activity buffer callback: keep the memory kinds of every memcpy by correlation id."""
        try:
            for activity in activities:
                correlation = getattr(activity, "correlation_id", None)
                src = getattr(activity, "src_kind", None)
                if correlation is None or src is None:
                    continue
                self.memcpy_kinds[int(correlation)] = (int(src), int(activity.dst_kind), int(getattr(activity, "bytes", 0)))
        except BaseException as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")

    # -- OptiX -------------------------------------------------------------------
    def optix_enter(self, name: str, frame: Any) -> RawCall:
        open_calls = self._thread_stack()
        call = RawCall("optix", name, 0, capture_stack(frame, self.max_stack), threading.current_thread().name,
                       call_id=next(self._ids), parent=self._innermost_optix(open_calls))
        open_calls.append(call)
        call.start_ns = time.perf_counter_ns()  # after the stack copy: time the call, not our bookkeeping
        return call

    def optix_exit(self, call: RawCall) -> None:
        call.end_ns = time.perf_counter_ns()
        open_calls = self._thread_stack()
        if open_calls and open_calls[-1] is call:
            open_calls.pop()
        elif call in open_calls:
            open_calls.remove(call)
        self.optix.append(call)

    def marks(self) -> tuple[int, int, int]:
        """Positions in the call lists, to cut out what one watch saw."""
        return len(self.driver), len(self.optix), len(self.syncs)


class _TimedEntry:
    """Stands in for one OptiX entry point while a watch is active."""

    __slots__ = ("_collector", "_name", "original")

    def __init__(self, collector: Collector, name: str, original: Any) -> None:
        self._collector = collector
        self._name = name
        self.original = original

    def __call__(self, *args: Any) -> Any:
        call = self._collector.optix_enter(self._name, sys._getframe(1))
        try:
            return self.original(*args)
        finally:
            self._collector.optix_exit(call)


class _WatchingCache(dict):
    """``optixasync._optix._api._api_cache`` during a watch: patches an ``OptixApi`` created meanwhile."""

    def __init__(self, patcher: OptixPatcher, items: dict) -> None:
        super().__init__(items)
        self._patcher = patcher

    def __setitem__(self, key: Any, api: Any) -> None:
        super().__setitem__(key, api)
        self._patcher.patch(api)


class OptixPatcher:
    """Times the OptiX entry points of every ``OptixApi`` of the process while installed.

    Parameters
    ----------
    collector : Collector
    names : sequence of str
        Entry points to time (default :data:`~optixasync.diagnostics._records.OPTIX_TIMED`).
    module : module, optional
        The module holding ``_api_cache`` (default ``optixasync._optix._api``; tests pass a stand-in).
    """

    def __init__(self, collector: Collector, names: tuple[str, ...] = OPTIX_TIMED, module: Any = None) -> None:
        self.collector = collector
        self.names = names
        self._module = module
        self._patched: list[tuple[Any, str, Any, _TimedEntry]] = []
        self._saved_cache: dict | None = None

    def patch(self, api: Any) -> None:
        for name in self.names:
            original = getattr(api, name, None)
            if original is None or isinstance(original, _TimedEntry):
                continue
            wrapper = _TimedEntry(self.collector, name, original)
            setattr(api, name, wrapper)
            self._patched.append((api, name, original, wrapper))

    def patch_graphs(self, graphs: Any) -> None:
        """Time ``graphs.launch`` (the CUDA graph calls in use) as ``cuGraphLaunch``."""
        original = getattr(graphs, "launch", None)
        if original is None or isinstance(original, _TimedEntry):
            return
        wrapper = _TimedEntry(self.collector, GRAPH_TIMED[0], original)
        graphs.launch = wrapper
        self._patched.append((graphs, "launch", original, wrapper))

    def install(self) -> None:
        module = self._module
        if module is None:
            from .._optix import _api as module
        self._module = module
        cache = module._api_cache
        for api in list(cache.values()):
            self.patch(api)
        module._api_cache = _WatchingCache(self, cache)
        self._saved_cache = cache
        from ..cuda import _graph

        try:
            self.patch_graphs(_graph.graph_api())
        except ImportError:  # no cuda-bindings: nothing launches graphs
            pass

    def uninstall(self) -> None:
        for api, name, original, wrapper in reversed(self._patched):
            if getattr(api, name, None) is wrapper:
                setattr(api, name, original)
        self._patched.clear()
        if self._module is not None and self._saved_cache is not None:
            current = self._module._api_cache
            self._saved_cache.update(current)  # keep an OptixApi created during the watch
            self._module._api_cache = self._saved_cache
            self._saved_cache = None
