"""``syncwatch``: every call that made the host wait, with the Python line that caused it.

Built on NVIDIA's CUPTI through ``cupti-python`` (the ``diagnostics`` extra,
imported only when a watch starts). While a watch is active:

* CUPTI's callback API calls :class:`~._collector.Collector` at the entry
  and exit of each driver call that can block the host (the list is in
  ``_records.classify``: synchronizations, synchronous copies and memsets,
  async copies that may touch host memory, ``cuMemAlloc``/``cuMemFree``,
  pinned allocations, module loads), in the thread that made the call, so
  the Python stack there leads to the user's line; the synchronization
  domain reports stream and context synchronizations, including those
  inside other calls;
* CUPTI's activity API records every memcpy with its source and destination
  memory kinds; when the watch ends the buffers are flushed and each async
  copy is joined with its record by correlation id, so only copies that
  involved pageable memory are reported;
* ``optixLaunch``, ``optixAccelBuild`` and ``optixAccelCompact`` of every
  ``OptixApi`` are timed (the attributes are swapped for timing wrappers and
  put back at the end).

When no watch is active nothing is subscribed, no activity is enabled and no
OptiX entry point is wrapped: the overhead is zero.

Blocking calls
--------------
None of its own on the frame path. Starting a watch loads CUPTI (first
time: tens of milliseconds) and may wait for queued GPU work (CUPTI's
subscription); ending one flushes CUPTI's activity buffers (host work, no
device synchronization).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import MissingExtraError
from ._collector import DRIVER_DOMAIN, SYNC_DOMAIN, Collector, OptixPatcher
from ._records import ASYNC_MEMCPY, OPTIX, classify
from ._report import ReportOptions, SyncReport, build_report
from ._stack import FrameFilter

__all__ = ["SyncWatch", "assert_no_sync", "load_cupti", "syncwatch"]

_ACTIVITY_BUFFER_BYTES = 8 * 1024 * 1024


def load_cupti() -> Any:
    """The ``cupti.cupti`` module of ``cupti-python``.

    Raises
    ------
    MissingExtraError
        If ``cupti-python`` is not installed (``pip install 'optixasync[diagnostics]'``).
    """
    try:
        from cupti import cupti
    except ImportError as exc:
        raise MissingExtraError("syncwatch (CUDA call tracing through CUPTI)", "cupti-python") from exc
    return cupti


def driver_callback_names(cupti: Any) -> dict[int, str]:
    """Driver-API callback id -> name, for every call that can block the host (from CUPTI's own table)."""
    names = {}
    for name, member in cupti.driver_api_trace_cbid.__members__.items():
        category = classify(name)
        if category is not None and category != OPTIX:
            names[int(member)] = name
    return names


# CUPTI takes one set of activity-buffer callbacks per process: register once, route to the live session.
_activity_registered = False
_activity_target: Collector | None = None


def _buffer_requested() -> tuple[int, int]:
    return _ACTIVITY_BUFFER_BYTES, 0


def _buffer_completed(activities: Any) -> None:
    target = _activity_target
    if target is not None:
        target.on_activities(activities)


class _Session:
    """One CUPTI subscription, shared by nested or concurrent watches."""

    def __init__(self, cupti: Any, max_stack: int) -> None:
        self.cupti = cupti
        self.collector = Collector(driver_callback_names(cupti), max_stack)
        self.patcher = OptixPatcher(self.collector)
        self.subscriber: Any = None
        self.refs = 0

    def start(self) -> None:
        global _activity_registered, _activity_target
        cupti = self.cupti
        try:
            self.subscriber = cupti.subscribe(self.collector.on_callback, self.collector)
        except cupti.cuptiError as exc:
            raise RuntimeError(
                f"syncwatch: CUPTI refused the subscription ({exc}); only one CUPTI client can attach to a "
                "process: is a profiler (Nsight Systems, Nsight Compute) or another CUPTI tool running?"
            ) from exc
        except RuntimeError as exc:  # cupti-python's NotSupportedError: no driver, or no libcupti
            raise RuntimeError(f"syncwatch: CUPTI cannot start: {exc}") from exc
        try:
            for cbid in self.collector.names:
                cupti.enable_callback(1, self.subscriber, DRIVER_DOMAIN, cbid)
            cupti.enable_domain(1, self.subscriber, SYNC_DOMAIN)
            if not _activity_registered:
                cupti.activity_register_callbacks(_buffer_requested, _buffer_completed)
                _activity_registered = True
            _activity_target = self.collector
            cupti.activity_enable(cupti.ActivityKind.MEMCPY)
        except BaseException:
            _activity_target = None
            cupti.unsubscribe(self.subscriber)
            self.subscriber = None
            raise
        self.patcher.install()

    def flush(self) -> None:
        """Deliver the memcpy activity records gathered so far (forced: incomplete buffers too)."""
        self.cupti.activity_flush_all(1)

    def stop(self) -> None:
        global _activity_target
        self.patcher.uninstall()
        try:
            self.flush()
            self.cupti.activity_disable(self.cupti.ActivityKind.MEMCPY)
        finally:
            _activity_target = None
            self.cupti.unsubscribe(self.subscriber)
            self.subscriber = None


def _collect_memory_kinds(session: _Session, driver: Sequence[Any], attempts: int = 5) -> None:
    """Flush CUPTI's activity buffers until every async copy of ``driver`` has its memory kinds (or give up).

    A forced flush normally delivers the records at once; the short retries
    cover a CUPTI that hands buffers over from its own thread.
    """
    wanted = {call.correlation_id for call in driver if classify(call.name) == ASYNC_MEMCPY}
    for attempt in range(attempts):
        session.flush()
        if wanted <= session.collector.memcpy_kinds.keys():
            return
        if attempt + 1 < attempts:
            time.sleep(0.005)


_session: _Session | None = None
_session_lock = threading.Lock()  # taken only when watches start and stop, never in a callback


def _acquire(max_stack: int) -> _Session:
    global _session
    cupti = load_cupti()
    with _session_lock:
        if _session is None:
            session = _Session(cupti, max_stack)
            session.start()
            _session = session
        _session.refs += 1
        return _session


def _release(session: _Session) -> None:
    global _session
    with _session_lock:
        session.refs -= 1
        if session.refs == 0:
            _session = None
            session.stop()


class SyncWatch(contextlib.ContextDecorator):
    """Record every call that blocks the host while the ``with`` body (or decorated function) runs.

    Use :func:`syncwatch` to make one. After the body, :attr:`report` holds a
    :class:`~optixasync.diagnostics.SyncReport`.

    Parameters
    ----------
    optix_block_ms : float
        An OptiX call at least this long counts as blocked even if no
        synchronizing driver call was seen inside it.
    slow_async_ms : float
        An async copy whose memory kind CUPTI did not report is kept as a stall when at least this long.
    max_stack : int
        Python frames kept per call.
    skip : sequence of str
        More directories or files whose frames are not "the user's line" (your own helper library).
    print_report : bool
        Print the report when the body ends.
    file : file, optional
        Where to print it (default ``sys.stderr``).
    json_path : str, optional
        Write the report as JSON there when the body ends.
    check : dict, optional
        Keyword arguments of :meth:`SyncReport.assert_no_sync`, called when the body ends without an exception.
    """

    def __init__(self, *, optix_block_ms: float = 1.0, slow_async_ms: float = 1.0, max_stack: int = 64,
                 skip: Sequence[str] = (), print_report: bool = False, file: Any = None,
                 json_path: str | None = None, check: dict[str, Any] | None = None) -> None:
        self.options = ReportOptions(optix_block_ms=float(optix_block_ms), slow_async_ms=float(slow_async_ms))
        self.max_stack = int(max_stack)
        self.skip = tuple(skip)
        self.print_report = bool(print_report)
        self.file = file
        self.json_path = json_path
        self.check = check
        self.report: SyncReport | None = None
        self._local = threading.local()  # per thread, a stack of open bodies: a decorated function may recurse

    def _starts(self) -> list[tuple[_Session, tuple[int, int, int], int]]:
        starts = getattr(self._local, "starts", None)
        if starts is None:
            starts = self._local.starts = []
        return starts

    def __enter__(self) -> SyncWatch:
        session = _acquire(self.max_stack)
        self._starts().append((session, session.collector.marks(), time.perf_counter_ns()))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        session, (n_driver, n_optix, n_syncs), start = self._starts().pop()
        end = time.perf_counter_ns()
        collector = session.collector
        try:
            driver, optix, syncs = collector.driver[n_driver:], collector.optix[n_optix:], collector.syncs[n_syncs:]
            _collect_memory_kinds(session, driver)
            kinds = dict(collector.memcpy_kinds)
            errors = list(collector.errors)
        finally:
            _release(session)
        self.report = build_report(driver, optix, syncs, kinds, frames=FrameFilter(extra_skip=self.skip),
                                   options=self.options, duration_ms=(end - start) / 1e6, errors=errors)
        if self.print_report:
            self.report.print(file=self.file or sys.stderr)
        if self.json_path:
            self.report.to_json(self.json_path)
        if self.check is not None and exc_type is None:
            self.report.assert_no_sync(**self.check)
        return False

    def __call__(self, func: Callable) -> Callable:
        wrapped = super().__call__(func)
        wrapped.syncwatch = self  # type: ignore[attr-defined]  # the last call's report: wrapped.syncwatch.report
        return wrapped

    def assert_no_sync(self, **kwargs: Any) -> None:
        """:meth:`SyncReport.assert_no_sync` of the last watched body."""
        if self.report is None:
            raise RuntimeError("assert_no_sync() before the watched body has run")
        self.report.assert_no_sync(**kwargs)


def syncwatch(fn: Callable | None = None, /, **options: Any) -> Any:
    """Watch for host stalls: a context manager, or a decorator.

    ``with syncwatch() as watch: ...`` then ``watch.report``; ``@syncwatch``
    (bare) prints the report after each call of the function;
    ``@syncwatch(json_path="stalls.json")`` follows its options. Options are
    those of :class:`SyncWatch`.

    Raises
    ------
    MissingExtraError
        When the watch starts, if ``cupti-python`` is not installed.

    Examples
    --------
    >>> with syncwatch() as watch:                                   # doctest: +SKIP
    ...     render_frames()
    >>> watch.report.print()                                          # doctest: +SKIP
    >>> watch.report.assert_no_sync()                                 # doctest: +SKIP
    """
    if fn is not None:
        if not callable(fn):
            raise TypeError(f"syncwatch() takes a function to decorate or keyword options, got {type(fn).__name__}")
        options.setdefault("print_report", True)
        return SyncWatch(**options)(fn)
    return SyncWatch(**options)


def assert_no_sync(fn: Callable | None = None, /, *, include_designed: bool = False, ignore: Sequence[str] = (),
                   min_ms: float = 0.0, **options: Any) -> Any:
    """A :func:`syncwatch` that raises :class:`~optixasync.diagnostics.SyncDetected` if the body blocked the host.

    The frame scheduler's designed waits (slot fences, its completion thread)
    do not count unless ``include_designed``; ``ignore`` lists API names or
    categories to let pass; calls shorter than ``min_ms`` pass.

    Examples
    --------
    >>> with assert_no_sync():                                        # doctest: +SKIP
    ...     for _ in range(50):
    ...         with sched.frame() as f:
    ...             renderer.record(f, ...)
    """
    check = {"include_designed": include_designed, "ignore": tuple(ignore), "min_ms": float(min_ms)}
    watch = SyncWatch(check=check, **options)
    return watch(fn) if fn is not None else watch
