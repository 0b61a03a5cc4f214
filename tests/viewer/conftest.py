"""Fixtures of the viewer tests: a running viewer on a free loopback port with the CPU source."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest


def _run_async(coro: Coroutine[Any, Any, Any], timeout: float = 30.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


@pytest.fixture
def run_async() -> Callable[..., Any]:
    """``run_async(coro, timeout=30.0)``: run a coroutine on a fresh event loop, failing after ``timeout`` s."""
    return _run_async


@pytest.fixture
def cpu_source():
    """A small CPU source that keeps accumulating (never idles)."""
    from optixasync.viewer import CpuFrameSource

    return CpuFrameSource(64, 48, max_samples=10**9)


@pytest.fixture
def viewer(cpu_source) -> Iterator[Any]:
    """A started :class:`~optixasync.viewer.Viewer` showing ``cpu_source`` on 127.0.0.1, any free port."""
    pytest.importorskip("aiohttp", reason="the viewer server needs aiohttp (pip install 'optixasync[viewer]')")
    from optixasync.viewer import Viewer

    with Viewer(cpu_source, port=0) as running:
        yield running
