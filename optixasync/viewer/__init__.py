"""A live viewer in the browser: ``optixasync view``, or :class:`Viewer` from Python.

The page shows a progressive image as it accumulates; mouse and keys move the
camera (accumulation restarts); controls change denoising, samples per frame,
resolution and max depth; an overlay shows fps, frames in flight, GPU busy,
host submit time and samples; buttons save the image (PNG, linear EXR) and
record an MP4 clip or the camera path, which :class:`Capture` also does from
Python (``viewer.capture``). The same interface runs in a notebook cell:
:class:`optixasync.notebook.ViewerWidget`.

A renderer plugs in as a :class:`FrameSource`: its render loop runs on a
thread it owns, reads ``sink.state.snapshot()`` every frame and hands each
finished image to ``sink.publish(image, meta)``, which is O(1), never blocks
and keeps only the newest frame. The threading contract is in
:mod:`optixasync.viewer._source`; :class:`PathTracerSource` path-traces a
scene on the GPU, :class:`CpuFrameSource` is a NumPy source (no GPU) and
:class:`CallbackFrameSource` wraps a render callback.

Importing this package needs only NumPy; :meth:`Viewer.start` and
:class:`ProtocolClient` need aiohttp (``pip install 'optixasync[viewer]'``).

Examples
--------
>>> from optixasync.viewer import CpuFrameSource, Viewer
>>> with Viewer(CpuFrameSource()) as viewer:          # doctest: +SKIP
...     print(viewer.url)
...     viewer.wait()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._camera import KEYS, CameraPose, OrbitCamera
from ._capture import Capture, LinearImageSource
from ._clip import ClipRecorder
from ._cpu import CpuFrameSource, CpuRenderer
from ._cpu_device import CpuDeviceSource
from ._encode import JpegEncoder
from ._gpu import PathTracerSource
from ._path import CameraPath, PathPlayer, PathRecorder
from ._scene import pose_from_scene_camera, to_scene_camera
from ._source import CallbackFrameSource, FrameMeta, FrameSink, FrameSource, NullSink, RenderLoop
from ._state import LIMITS, Settings, ViewerState, ViewState
from ._viewer import Viewer, host_warning, is_loopback

if TYPE_CHECKING:  # imported on first use (they import aiohttp); named here for readers and type checkers
    from ._client import ProtocolClient, ReceivedFrame

__all__ = [
    "KEYS",
    "LIMITS",
    "CallbackFrameSource",
    "CameraPath",
    "CameraPose",
    "Capture",
    "ClipRecorder",
    "CpuDeviceSource",
    "CpuFrameSource",
    "CpuRenderer",
    "FrameMeta",
    "FrameSink",
    "FrameSource",
    "JpegEncoder",
    "LinearImageSource",
    "NullSink",
    "OrbitCamera",
    "PathPlayer",
    "PathRecorder",
    "PathTracerSource",
    "ProtocolClient",
    "ReceivedFrame",
    "RenderLoop",
    "Settings",
    "ViewState",
    "Viewer",
    "ViewerState",
    "host_warning",
    "is_loopback",
    "pose_from_scene_camera",
    "to_scene_camera",
]


def __getattr__(name: str) -> Any:
    if name in ("ProtocolClient", "ReceivedFrame"):  # these import aiohttp
        from . import _client

        return getattr(_client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
