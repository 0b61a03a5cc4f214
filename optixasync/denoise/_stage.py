"""Denoising a render pipeline's frames: the :class:`Denoise` stage, on the frame's stream.

A :class:`~optixasync.render.RenderPipeline` with ``stages=[Denoise(),
Tonemap()]`` has its integrator write the running means of the radiance and
the first hit's albedo and normal into the frame slot's buffers; the stage
denoises them into the slot's ``denoised`` buffer with OIDN, and the
tonemap stage makes the sRGB ``image`` from that. Every frame slot has its
own buffers, so frame ``k+1`` never writes what the denoiser of frame ``k``
still reads; the denoiser keeps one committed filter per slot. It learns the
stream, the device and the number of slots from the first frame it sees.

Blocking calls
--------------
* The first frame creates OIDN's CUDA device on the frame's stream (set-up:
  OIDN's initialisation and kernel loading).
* The first frame of each slot commits that slot's filter (OIDN plans and
  allocates its scratch memory; on CUDA a ``cudaMalloc``, which may
  synchronize the device): warm-up, once per slot.
* Steady state: ``oidnExecuteFilterAsync``, enqueued on the frame's stream;
  nothing waits. :meth:`Denoise.close` waits for the denoiser's work.

Frame graphs
------------
OIDN enqueues its filters' kernels on the frame's stream, but whether
``oidnExecuteFilterAsync`` enqueues only work a CUDA graph can hold (no
allocation, no event record or query, no synchronization) has not been
checked on a GPU. So frames with this stage run eagerly, with that reason
counted in the scheduler's ``stats.graphs`` and logged once, unless the stage
is made with ``capture=True``: then the denoiser's calls are captured into
the frame's graph with the rest, and if a call is refused (CUDA reports an
error inside the capture, or OIDN does), the frame falls back to eager
frames by itself, with the refusal as its reason.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..errors import GraphCaptureError
from ..render import FrameBuffers, Stage
from ..validation import coerce_options
from ._denoiser import Denoiser
from ._errors import OidnError
from ._options import MAX_FILTERS_LIMIT, DenoiseOptions

if TYPE_CHECKING:
    from ..scheduler import Frame

__all__ = ["Denoise", "GUIDED", "UNCHECKED"]

#: Why frames with a :class:`Denoise` stage made without ``capture=True`` run eagerly.
UNCHECKED = ("the Denoise stage's OIDN calls have not been checked inside a CUDA graph (Denoise(capture=True) "
             "tries; a refused capture falls back to eager frames)")

#: The options the path tracer's guides call for: HDR colour, albedo and normal guides, noise-free guides
#: (first-hit albedo and normal have no noise of their own; their edges are anti-aliased like the colour).
GUIDED = DenoiseOptions(hdr=True, albedo=True, normal=True, clean_aux=True)


class Denoise(Stage):
    """Denoise a frame's mean radiance, guided by the first hit's albedo and normal, into ``denoised``.

    Parameters
    ----------
    options : DenoiseOptions, dict or None
        Default :data:`GUIDED`; the albedo and normal guides must both be on. ``max_filters`` is raised to the
        frames' slot count, so that every slot finds its own committed filter.

    capture : bool
        Let frame graphs capture the denoiser's calls (see the module documentation; off by default).

    Attributes
    ----------
    denoiser : Denoiser or None
        Made by the first frame (its stream, device and size).
    capture : bool

    Raises
    ------
    ValueError
        On options without both guides; later, on a frame of another stream, size or slot count than the first.
    """

    needs = frozenset({"radiance", "albedo", "normal"})
    writes = frozenset({"denoised"})

    def __init__(self, options: DenoiseOptions | dict | None = None, *, capture: bool = False) -> None:
        if not isinstance(capture, bool):
            raise TypeError(f"capture must be a bool, got {type(capture).__name__}")
        self.capture = capture
        self.options = GUIDED if options is None else coerce_options(DenoiseOptions, options)
        if not (self.options.albedo and self.options.normal):
            raise ValueError("the Denoise stage feeds the path tracer's albedo and normal: create it with albedo=True "
                             "and normal=True")
        self.denoiser: Denoiser | None = None
        self._frames: tuple[int, int, int] | None = None  # (stream handle, slots, shape) of the first frame

    def prepare(self, frame: Frame, shape: tuple[int, int]) -> None:
        height, width = shape
        seen = (int(frame.stream.ptr), frame.frames_in_flight, (height, width))
        if self.denoiser is None:
            slots = min(max(frame.frames_in_flight, 1), MAX_FILTERS_LIMIT)
            options = self.options if self.options.max_filters >= slots else \
                dataclasses.replace(self.options, max_filters=slots)
            self.denoiser = Denoiser(width, height, options, device="cuda", device_id=frame.ctx.device_id,
                                     stream=frame.stream)
            self._frames = seen
        elif seen != self._frames:
            raise ValueError("this Denoise stage serves the frames of one scheduler and image size (made for "
                             f"{self._frames}, got {seen}): give each pipeline its own")

    def record(self, frame: Frame, buffers: FrameBuffers) -> None:
        if self.denoiser is None:
            raise RuntimeError("Denoise.record before prepare: the pipeline prepares its stages before the launch")
        try:
            self.denoiser.denoise(buffers["radiance"], buffers["denoised"], buffers["albedo"], buffers["normal"],
                                  stream=frame)
        except OidnError as exc:
            if frame.capturing:  # a call OIDN makes cannot go into the graph: the frame runs eagerly instead
                raise GraphCaptureError(f"the Denoise stage's OIDN call failed inside the capture ({exc})") from exc
            raise

    def uncapturable(self) -> str | None:
        """Why frames with this stage run eagerly (None with ``capture=True``)."""
        return None if self.capture else UNCHECKED

    def close(self) -> None:
        """Wait for the denoiser's work and release it."""
        if self.denoiser is not None:
            self.denoiser.close()
            self.denoiser = None

    def __repr__(self) -> str:
        return f"Denoise({self.options}{', capture=True' if self.capture else ''})"
