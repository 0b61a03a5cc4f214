"""Denoising a path tracer's progressive frames inside the frame pipeline.

:class:`FrameDenoiser` puts a :class:`Denoiser` between the path tracer's
launch and the frame's readback, all on the frame's stream: the launch
writes the running means of colour, albedo and normal into the frame's slot
buffers (:meth:`PathTracer.record` with ``denoise_inputs=True``), OIDN
denoises them into the slot's ``denoised`` buffer, a small kernel tonemaps
that into the slot's ``image`` buffer, and the frame reads it back. Every
frame slot has its own buffers, so frame ``k+1`` never writes what the
denoiser of frame ``k`` still reads; the denoiser keeps one committed filter
per slot.

Blocking calls
--------------
* Creating a :class:`FrameDenoiser` creates OIDN's CUDA device on the
  scheduler's stream (set-up: OIDN's initialisation and kernel loading).
* The first frame of each slot commits that slot's filter (OIDN plans and
  allocates its scratch memory; on CUDA a ``cudaMalloc``, which may
  synchronize the device): warm-up, once per slot.
* Steady state: ``oidnExecuteFilterAsync`` and a kernel launch, both
  enqueued on the frame's stream; nothing waits.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ..render import tonemap_device
from ..validation import as_int, coerce_options
from ._denoiser import Denoiser
from ._options import MAX_FILTERS_LIMIT, DenoiseOptions

if TYPE_CHECKING:
    from ..render import PathTracer
    from ..scene import Camera
    from ..scheduler import Frame

__all__ = ["FrameDenoiser", "GUIDED"]

#: The options the path tracer's guides call for: HDR colour, albedo and normal guides, noise-free guides
#: (first-hit albedo and normal have no noise of their own; their edges are anti-aliased like the colour).
GUIDED = DenoiseOptions(hdr=True, albedo=True, normal=True, clean_aux=True)


class FrameDenoiser:
    """A path tracer's progressive frames, denoised on the frame's stream before their readback.

    Parameters
    ----------
    tracer : PathTracer
    stream : stream
        The stream of the frames (``FrameScheduler.stream``): the denoiser
        works on it, so no cross-stream ordering is needed.
    options : DenoiseOptions, dict or None
        Default :data:`GUIDED`; the albedo and normal guides must both be on.
    frames_in_flight : int
        The scheduler's slot count: the denoiser keeps at least that many
        committed filters (``max_filters`` is raised to it), so that every
        slot finds its own and no frame commits. A frame of a higher slot is
        refused.

    Attributes
    ----------
    denoiser : Denoiser
    """

    def __init__(self, tracer: PathTracer, stream: Any, options: DenoiseOptions | dict | None = None, *,
                 frames_in_flight: int = 2) -> None:
        options = GUIDED if options is None else coerce_options(DenoiseOptions, options)
        if not (options.albedo and options.normal):
            raise ValueError("FrameDenoiser feeds the path tracer's albedo and normal: create it with albedo=True "
                             "and normal=True")
        self.frames_in_flight = as_int("frames_in_flight", frames_in_flight, 1, MAX_FILTERS_LIMIT)
        if options.max_filters < self.frames_in_flight:
            options = dataclasses.replace(options, max_filters=self.frames_in_flight)
        self.tracer = tracer
        opts = tracer.options
        self.shape = (opts.height, opts.width, 4)
        self.denoiser = Denoiser(opts.width, opts.height, options, device="cuda", device_id=tracer.ctx.device_id,
                                 stream=stream)

    def record(self, frame: Frame, spp: int = 1, *, readback: str | None = "image", camera: Camera | None = None,
               denoise: bool = True) -> Any:
        """Launch ``spp`` samples per pixel in ``frame``, denoise the running mean and tonemap it into ``image``.

        With ``denoise=False`` it is :meth:`PathTracer.record` (the noisy image). Returns the frame's
        ``denoised`` buffer ((height, width, 4) float32, linear, on the device), or None without denoising.
        """
        if frame.slot >= self.frames_in_flight:
            raise ValueError(f"frame {frame.index} is in slot {frame.slot}, but this FrameDenoiser was made for "
                             f"{self.frames_in_flight} frames in flight: pass frames_in_flight= the scheduler's")
        if not denoise:
            self.tracer.record(frame, spp, readback=readback, camera=camera)
            return None
        inputs = self.tracer.record(frame, spp, readback=None, camera=camera, denoise_inputs=True)
        if inputs is None:
            raise RuntimeError("the path tracer returned no denoiser inputs")
        denoised = frame.buffer("denoised", self.shape, np.float32)
        self.denoiser.denoise(inputs.color, denoised, inputs.albedo, inputs.normal, stream=frame)
        image = frame.buffer("image", self.shape, np.uint8)
        tonemap_device(denoised, image, frame)
        if readback is not None:
            frame.readback(image, readback)
        return denoised

    def close(self) -> None:
        """Wait for the denoiser's work and release it."""
        self.denoiser.close()

    def __enter__(self) -> FrameDenoiser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
