"""The render pipeline's batch side: a step of many views and worlds whose outputs stay on the GPU.

:class:`BatchFrames` holds the methods of :class:`~optixasync.render.RenderPipeline`
that serve batches: :meth:`BatchFrames.step` (one frame of the pipeline's
scheduler, its outputs leased as :class:`~optixasync.render.DeviceOutputs`),
the slot buffers a frame writes (a generation no lease holds), the batch
launch of a still and its lanes.

Blocking calls
--------------
:meth:`BatchFrames.step` waits only where the scheduler does (a slot's fence
when the host is ``frames_in_flight`` frames ahead); it records one event
after the frame's work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cuda import record_event, stream_handle
from ._device_outputs import DeviceOutputs
from ._lanes import lane_count
from ._params import positive_int
from ._stages import FrameBuffers

if TYPE_CHECKING:
    from ..scheduler import Frame
    from ._views import Views

__all__ = ["BatchFrames"]


class BatchFrames:
    """The batch methods of a render pipeline (a base class of :class:`~optixasync.render.RenderPipeline`)."""

    # what the pipeline provides
    _leases: Any
    _batch: Any
    _options: Any
    _camera: Any
    _lanes: bool
    _generation: int = 0  # the generation of the slot buffers the last record() wrote
    views: Views | None

    @property
    def _view_count(self) -> int | None:
        return self.views.count if self.views is not None else None

    def _frame_buffers(self, frame: Frame) -> FrameBuffers:
        """The frame slot's output buffers: a generation that no :class:`DeviceOutputs` holds, ordered after
        the consumers of its last lease."""
        generation = self._leases.generation(frame.slot)
        self._leases.before_write(frame.slot, generation, frame.stream)
        self._generation = generation
        views = self.views.count if self.views is not None else None
        return FrameBuffers(frame, self._options.width, self._options.height, views, generation)

    def _plane(self, *channels: int) -> tuple[int, ...]:
        """The shape of a per-pixel buffer: (height, width, *channels), with (views, ...) for a batch."""
        views = () if self.views is None else (self.views.count,)
        return (*views, self._options.height, self._options.width, *channels)

    def batch_launch(self, frame: Frame) -> Any:
        """The current views' (or camera's) ``BatchLaunch`` for a launch of ``frame`` (a still's)."""
        return self._batch.prepare(frame, self._batch.check(frame.stream), self._options, self._camera)

    def still_lanes(self, spp: int) -> int:
        """The lanes of a plain still of ``spp`` samples (:mod:`._lanes`; 1 without the variant compiled)."""
        if not self._lanes or (self.views is None and self._camera.orthographic):
            return 1  # an orthographic camera keeps the single-camera raygen (its far plane, its bits)
        views = self.views.count if self.views is not None else 1
        o = self._options
        return lane_count(o.width, o.height, views, spp, o.sample_lanes)

    def step(self, spp: int = 1, *, views: Views | None = None, poses: Any = None, transforms: Any = None,
             readback: Any = None, accumulate: bool = False) -> DeviceOutputs:
        """One frame of the pipeline's scheduler, its outputs kept on the GPU: what an RL loop calls each step.

        ``views``, ``poses`` and ``transforms`` as :meth:`record`. Each step is its own image (``accumulate``
        adds it to the progressive one). Returns at once (no host wait, but the scheduler's slot fence when
        ``frames_in_flight`` frames are ahead) with the frame's outputs as a :class:`DeviceOutputs`: hand them
        to torch, JAX or CuPy (DLPack, ordered by an event on the consumer's stream), valid until released
        (``with pipeline.step(...) as out:``). ``readback`` also copies outputs to the host (``out.result``,
        the frame's result: release it too).
        """
        pipeline: Any = self
        scheduler = pipeline.scheduler
        spp = positive_int("spp", spp)
        names = pipeline._plan.check_readback(readback, staged=True)
        with scheduler.frame() as frame:
            if not accumulate:
                pipeline.reset()
            # Untimed: the frame's own span times its GPU work; the one event after it ends the launch too.
            buffers = pipeline._record(frame, spp, names, True, None, views=views, poses=poses,
                                       transforms=transforms, timed=False)
            event = record_event(frame.stream)  # after the launch and the stages
            handle = stream_handle(frame)  # the frame's stream (its GPU work began in the record)
            pipeline._last_launch[handle] = event
            outputs = DeviceOutputs(frame.index, buffers, event, handle, self._leases, frame.slot,
                                    self._generation, views=self._view_count)
        outputs.result = frame.handle if readback else None
        for _ in scheduler.poll():  # retire what has completed; results of steps are in their handles
            pass
        return outputs
