"""The CPU device as a viewer source: a scene path-traced progressively by the kernel's host build.

:class:`CpuDeviceSource` renders ``view --cpu --scene X`` (and any scene in the notebook widget) through
``RenderPipeline(CpuContext(threads), scene)``: each frame adds ``spp`` samples to the accumulation and
publishes the kernel's own sRGB image. A new camera, depth or size restarts the accumulation (a new size makes a
new pipeline; the kernel is built once and cached). There is no denoiser on the CPU device: the page's switch
does nothing.

Blocking calls
--------------
Creating the source looks the C++ compiler up (no compiler: ``CompilerNotFoundError``, raised here). The
first frame of a size builds the scene's host tables (and the kernel, on a cache miss); each frame runs its
launch on the CPU's threads and returns when it is done (ctypes releases the GIL).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ._scene import pose_from_scene_camera, to_scene_camera
from ._source import RenderLoop
from ._state import Settings, ViewState

__all__ = ["CpuDeviceSource"]


class CpuDeviceSource(RenderLoop):
    """A :class:`~optixasync.viewer.FrameSource` that path-traces ``scene`` on the CPU device.

    Parameters
    ----------
    scene : optixasync.scene.Scene
    width, height : int
        The starting image size (the page may change it).
    threads : int, optional
        Threads of each launch (default: the CPUs this process may run on).
    max_samples : int
        Samples per pixel after which the image is left as it is.
    fps_limit : float or None
        Most frames per second.
    """

    def __init__(self, scene: Any, width: int = 320, height: int = 180, threads: int | None = None,
                 max_samples: int = 4096, fps_limit: float | None = None) -> None:
        from ..cpu import CpuContext
        from ..render import check_scene

        super().__init__(fps_limit, name="optixasync-cpu-device-source")
        self.scene = check_scene(scene)
        self.ctx = CpuContext(threads)
        self._max_samples = int(max_samples)
        self.initial_camera = pose_from_scene_camera(scene.camera)
        self.initial_settings = Settings(denoise=False, spp=1, width=int(width), height=int(height), max_depth=6)
        self._pipeline: Any = None
        self._shown_version = -1

    def _pipeline_for(self, settings: Settings) -> Any:
        from ..render import RenderOptions, RenderPipeline

        pipeline = self._pipeline
        if pipeline is None or (pipeline.options.width, pipeline.options.height) != (settings.width, settings.height):
            if pipeline is not None:
                pipeline.close()
            pipeline = RenderPipeline(self.ctx, self.scene, RenderOptions(width=settings.width, height=settings.height,
                                                                          max_depth=settings.max_depth))
            self._pipeline = pipeline
        if pipeline.options.max_depth != settings.max_depth:
            pipeline.options = dataclasses.replace(pipeline.options, max_depth=settings.max_depth)
        return pipeline

    def render(self, view: ViewState) -> tuple[np.ndarray, dict[str, Any]] | None:
        """Add ``spp`` samples and return the image, or None when converged and this state's frame is out."""
        s = view.settings
        pipeline = self._pipeline_for(s)
        pipeline.camera = to_scene_camera(view.camera)  # restarts the accumulation when it moved
        if pipeline.samples_done >= self._max_samples and self._shown_version == view.version:
            return None
        spp = max(1, min(s.spp, self._max_samples - pipeline.samples_done))
        result = next(pipeline.frames(1, spp))
        self._shown_version = view.version
        return result["image"], {"samples": result.samples, "denoise": False, "frames_in_flight": 1,
                                 "extra": {"spp": spp, "source": "cpu-device", "cpu_ms": round(result.launch_ms, 2),
                                           "threads": self.ctx.threads}}

    def linear_image(self) -> np.ndarray | None:
        """The accumulated linear RGB image (H, W, 3) float32, or None before any sample."""
        pipeline = self._pipeline
        if pipeline is None or pipeline.samples_done == 0:
            return None
        return pipeline.accumulation[..., :3] / np.float32(pipeline.samples_done)

    def close(self) -> None:
        """Stop the loop and close the pipeline."""
        self.stop()
        if self._pipeline is not None:
            self._pipeline.close()
            self._pipeline = None
