"""Stand-ins for CUPTI and OptiX used by the CPU tests of syncwatch.

This module plays the part of library code: tests pass its file in
``skip=`` so that its frames are never "the user's line", as CuPy's and
CUPTI's are not in real use.
"""

from __future__ import annotations

import enum
import time
from types import SimpleNamespace
from typing import Any

DRIVER, SYNC = 1, 4
ENTER, EXIT = 0, 1


class FakeCupti:
    """Enough of ``cupti.cupti`` for ``_syncwatch``: subscription, callback ids, activity buffers."""

    class cuptiError(Exception):  # noqa: N801  (the real module's name)
        pass

    class ActivityKind:
        MEMCPY = 1

    driver_api_trace_cbid = enum.IntEnum("driver_api_trace_cbid", {
        "INVALID": 0, "cuStreamSynchronize": 7, "cuEventSynchronize": 8, "cuLaunchKernel": 9,
        "cuMemAllocAsync": 10, "cuMemcpyHtoDAsync_v2": 11, "cuMemcpyDtoHAsync_v2": 12, "cuMemFree_v2": 13,
        "cuMemcpyDtoH_v2": 14, "cuMemFreeAsync": 15, "cuModuleLoadData": 16, "SIZE": 17,
    })

    def __init__(self) -> None:
        self.callback: Any = None
        self.userdata: Any = None
        self.enabled: set[tuple[int, int]] = set()
        self.domains: set[int] = set()
        self.activity_kinds: set[int] = set()
        self.pending: list[Any] = []
        self.flushes = 0
        self.subscriptions = 0
        self.buffer_requested: Any = None
        self.buffer_completed: Any = None

    # -- the API _syncwatch uses ---------------------------------------------------
    def subscribe(self, callback: Any, userdata: Any) -> int:
        if self.callback is not None:
            raise self.cuptiError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.callback, self.userdata = callback, userdata
        self.subscriptions += 1
        return 4242

    def unsubscribe(self, subscriber: int) -> None:
        assert subscriber == 4242
        self.callback = None
        self.enabled.clear()
        self.domains.clear()

    def enable_callback(self, enable: int, subscriber: int, domain: int, cbid: int) -> None:
        assert subscriber == 4242 and enable == 1
        self.enabled.add((int(domain), int(cbid)))

    def enable_domain(self, enable: int, subscriber: int, domain: int) -> None:
        self.domains.add(int(domain))

    def activity_register_callbacks(self, requested: Any, completed: Any) -> None:
        self.buffer_requested, self.buffer_completed = requested, completed

    def activity_enable(self, kind: int) -> None:
        self.activity_kinds.add(kind)

    def activity_disable(self, kind: int) -> None:
        self.activity_kinds.discard(kind)

    def activity_flush_all(self, flag: int) -> None:
        self.flushes += 1
        if self.pending and self.buffer_completed is not None:
            records, self.pending = self.pending, []
            self.buffer_completed(records)

    # -- what the tests drive ------------------------------------------------------
    def cuda_call(self, name: str, correlation: int, ms: float = 0.0, memcpy: tuple[int, int] | None = None,
                  synchronized: str | None = None) -> None:
        """Pretend the driver ran ``name``: the callbacks CUPTI would make, in this thread."""
        cbid = int(self.driver_api_trace_cbid[name])
        watched = self.callback is not None and (DRIVER, cbid) in self.enabled
        if watched:
            self.callback(self.userdata, DRIVER, cbid, SimpleNamespace(callback_site=ENTER, correlation_id=correlation))
            if synchronized == "stream" and SYNC in self.domains:
                self.callback(self.userdata, SYNC, 1, SimpleNamespace(stream=0xBEEF, context=1))
        if ms:
            time.sleep(ms / 1e3)
        if watched:
            self.callback(self.userdata, DRIVER, cbid, SimpleNamespace(callback_site=EXIT, correlation_id=correlation))
            if synchronized == "after" and SYNC in self.domains:  # a CUPTI that reports it after the exit
                self.callback(self.userdata, SYNC, 1, SimpleNamespace(stream=0xBEEF, context=1))
        if memcpy is not None and self.activity_kinds:
            self.pending.append(SimpleNamespace(kind=1, correlation_id=correlation, src_kind=memcpy[0],
                                                dst_kind=memcpy[1], bytes=4096))

    def lone_sync(self) -> None:
        """A stream synchronization CUPTI reports with no watched driver call open."""
        if self.callback is not None and SYNC in self.domains:
            self.callback(self.userdata, SYNC, 1, SimpleNamespace(stream=0xF00D, context=1))


class FakeOptixApi:
    """An ``OptixApi`` with three entry points that take ``delay_ms`` and may call the driver inside."""

    def __init__(self, cupti: FakeCupti | None = None, delay_ms: float = 0.0, sync_inside: bool = False) -> None:
        self.cupti = cupti
        self.delay_ms = delay_ms
        self.sync_inside = sync_inside
        self.calls: list[str] = []
        for name in ("optixLaunch", "optixAccelBuild", "optixAccelCompact"):
            setattr(self, name, self._entry(name))

    def _entry(self, name: str) -> Any:
        def entry(*args: Any) -> int:
            self.calls.append(name)
            if self.sync_inside and self.cupti is not None:
                self.cupti.cuda_call("cuStreamSynchronize", 9000 + len(self.calls), ms=self.delay_ms)
            elif self.delay_ms:
                time.sleep(self.delay_ms / 1e3)
            return 0

        entry.__name__ = name
        return entry


def launch(api: FakeOptixApi) -> int:
    """A library function calling OptiX, like ``Pipeline.launch``."""
    return api.optixLaunch(1, 2, 3)
