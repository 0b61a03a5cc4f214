"""The views (and worlds) of a pipeline's launches on the device, and what motion vectors need of the launch before.

:class:`BatchState` turns a pipeline's :class:`~optixasync.render.Views` (or,
without views, its camera as one view) into what a launch of a batch's raygen
reads: the ``ViewRecord`` array (uploaded when the views change), the poses
(a device array copied on the frame's stream into one of two buffers of the
pipeline's, so that the previous launch's poses are still there for the
motion vectors, and so that the caller may rewrite its tensor in place), the
worlds' records and structure (:class:`~optixasync.render._device_worlds.DeviceWorlds`,
moved by the step's transforms), and the ``ViewBatch`` record of the launch
parameters. Everything a launch is given is checked by :meth:`BatchState.check`
before any GPU work of the frame.

Blocking calls
--------------
None: uploads through pinned staging, a device-to-device copy of the poses
and the worlds' kernel and update, all on the frame's stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import consume_device_array
from ._layout import VIEW_BATCH
from ._views import Views, _host_poses, _is_device_array, view_worlds

if TYPE_CHECKING:
    from ..cuda import Context
    from ..scene import Camera
    from ._device_worlds import DeviceWorlds
    from ._options import RenderOptions

__all__ = ["BatchInputs", "BatchLaunch", "BatchState"]


@dataclass
class BatchInputs:
    """A launch's checked inputs (no GPU work done yet): new views, device poses, world transforms."""

    views: Views | None = None
    poses: Any = None
    transforms: Any = None
    transforms_stride: int = 0


@dataclass
class BatchLaunch:
    """What the integrator writes into the launch parameters for a batch: ``batch`` and, with worlds, ``scene``."""

    record: np.ndarray
    scene: np.ndarray | None
    views: int
    worlds: bool
    lanes: int = 1


class BatchState:
    """See the module documentation.

    Parameters
    ----------
    ctx : Context
    views : Views or None
        The pipeline's views (None: its camera, one view). Their count is fixed: it sizes the outputs.
    worlds : DeviceWorlds or None
    mesh_materials : sequence of int
        Per scene mesh, its material's index.
    stream : stream
        The set-up stream.
    """

    def __init__(self, ctx: Context, views: Views | None, worlds: DeviceWorlds | None, mesh_materials: Any,
                 stream: Any) -> None:
        self.ctx = ctx
        self.views = views
        self.count = views.count if views is not None else 1
        self.worlds = worlds
        self._world_of_view = self._view_worlds(views)
        self._materials = ctx.upload(np.asarray(mesh_materials, np.uint32), stream)
        self._records: Any = None  # this launch's ViewRecord array on the device, and the launch's before
        self._previous: Any = None
        self._key: Any = None
        self._poses: list[Any] = [None, None]
        self._pose = 0
        self._posed = 0  # launches whose poses were device poses, in a row

    def _view_worlds(self, views: Views | None) -> np.ndarray:
        return view_worlds(views, self.count, self.worlds.layout.count if self.worlds is not None else 1)

    # -- before any GPU work ---------------------------------------------------------------------------------------
    def check(self, stream: Any, views: Any = None, poses: Any = None, transforms: Any = None) -> BatchInputs:
        """The launch's inputs checked; device arrays consumed on ``stream`` (no copy yet).

        Raises
        ------
        TypeError, ValueError
            Naming the argument: views of another count, poses of the wrong shape, dtype or device, transforms
            without worlds or of the wrong shape, dtype or device.
        """
        inputs = BatchInputs()
        if views is not None:
            if not isinstance(views, Views):
                raise TypeError(f"views must be an optixasync.render.Views, got {type(views).__name__}")
            if self.views is None or views.count != self.count:
                raise ValueError(f"views must hold {self.count} views (the pipeline's outputs are sized for them), "
                                 f"got {views.count}" if self.views is not None else
                                 "this pipeline renders its camera: create it with views= for batches of views")
            self._view_worlds(views)
            inputs.views = views
        current = inputs.views or self.views
        if poses is not None:
            if current is None or current.poses is None:
                raise ValueError("poses need views with poses (Views.pinhole or Views.orthographic)")
            inputs.poses = self._check_poses(poses, stream)
        elif current is not None and current.device_poses:
            inputs.poses = self._check_poses(current.poses, stream)
        if transforms is not None:
            if self.worlds is None:
                raise ValueError("transforms need a pipeline made with worlds=Worlds(...)")
            inputs.transforms, inputs.transforms_stride = self.worlds.check_transforms(transforms, stream)
        return inputs

    def _check_poses(self, poses: Any, stream: Any) -> Any:
        if not _is_device_array(poses):
            return _host_poses(poses, self.count)
        shape = tuple(getattr(poses, "shape", ()))
        if len(shape) != 3 or shape[0] != self.count or shape[1:] not in ((3, 4), (4, 4)):
            raise ValueError(f"poses must be ({self.count}, 4, 4) or ({self.count}, 3, 4), got shape {shape}")
        return consume_device_array(poses, stream, name="poses", device=self.ctx.device_id, dtype=np.float32).array

    # -- the launch ----------------------------------------------------------------------------------------------
    def prepare(self, frame: Any, inputs: BatchInputs, options: RenderOptions, camera: Camera) -> BatchLaunch:
        """Upload and copy what the launch reads, on the frame's stream; the launch's ``ViewBatch``."""
        stream = frame.stream
        if inputs.views is not None:
            self.views = inputs.views
        views = self.views if self.views is not None else Views.cameras([camera])
        device_poses = inputs.poses is not None and not isinstance(inputs.poses, np.ndarray)
        if inputs.poses is not None and not device_poses:
            views = Views(views.kinds, views.intrinsics, inputs.poses, views.convention, views.cameras,
                          views.worlds, views.seeds)
            self.views = views if self.views is not None else None
        self._upload_records(views, options, camera, stream)
        record = np.zeros((), VIEW_BATCH)
        record["views"] = int(self._records.data.ptr)
        record["prev_views"] = int((self._previous if self._previous is not None else self._records).data.ptr)
        record["num_views"], record["lanes"], record["jitter"] = self.count, 1, int(options.jitter)
        record["mesh_materials"] = int(self._materials.data.ptr)
        if device_poses:
            now, before, stride = self._copy_poses(inputs.poses, stream)
            frame.hold(inputs.poses)  # the caller's tensor, until the copy has run
            record["poses"], record["prev_poses"], record["pose_stride"] = now, before, stride
        else:
            self._posed = 0
            record["pose_stride"] = 12
        scene = None
        if self.worlds is not None:
            self.worlds.accel.ready.order(stream)  # after the worlds' set-up, or a step moved on another stream
            if inputs.transforms is not None:
                self.worlds.move(inputs.transforms, inputs.transforms_stride, stream)
            scene, previous_meshes = self.worlds.launch_records()
            layout = self.worlds.layout
            record["prev_meshes"], record["world_offsets"] = previous_meshes, int(self.worlds.offsets.data.ptr)
            record["cell_lo"], record["cell_hi"] = layout.cell_lo, layout.cell_hi
            record["meshes_per_world"] = layout.meshes
            frame.hold(inputs.transforms)
        return BatchLaunch(record, scene, self.count, self.worlds is not None)

    def _upload_records(self, views: Views, options: RenderOptions, camera: Camera, stream: Any) -> None:
        """The ``ViewRecord`` array on the device: uploaded when the views (or the camera, or the seed) change."""
        key = (id(self.views) if self.views is not None else "camera", options.seed, options.width,
               options.height, camera if self.views is None else None)
        if self._records is not None and key == self._key:
            self._previous = self._records  # unchanged: the previous launch's views are these
            return
        records = views.records(options.width, options.height, options.seed, self._world_of_view)
        self._previous = self._records
        self._records = self.ctx.upload(np.frombuffer(records.tobytes(), np.uint8), stream)
        self._key = key

    def _copy_poses(self, poses: Any, stream: Any) -> tuple[int, int, int]:
        """Copy the device poses into the pipeline's buffer of this launch; (now, before, stride) addresses."""
        self._pose ^= 1
        buffer = self._poses[self._pose]
        if buffer is None or buffer.shape != poses.shape:
            buffer = self._poses[self._pose] = self.ctx.memory.empty(poses.shape, np.float32, stream)
        with self.ctx.memory.scope(stream):
            buffer[...] = poses
        before = self._poses[self._pose ^ 1] if self._posed else buffer
        if before is None or before.shape != buffer.shape:
            before = buffer
        self._posed += 1
        stride = 16 if poses.shape[1] == 4 else 12
        return int(buffer.data.ptr), int(before.data.ptr), stride

    def close(self) -> None:
        self._records = self._previous = self._materials = None
        self._poses = [None, None]
        if self.worlds is not None:
            self.worlds.close()
