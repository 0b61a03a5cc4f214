"""Many worlds on the device: their mesh records, instance records and instance structure, moved every step.

:class:`DeviceWorlds` holds, for a :class:`~optixasync.render._worlds.WorldLayout`
over a device scene built with one instance per mesh: two blocks of per-world
mesh records (this step's and the previous step's, for motion vectors), the
``OptixInstance`` records, and a :class:`~optixasync.accel.DeviceInstanceAccel`
over them. :meth:`DeviceWorlds.move` reads the movable meshes' transforms
from a device array without a host copy: the placement kernel
(:data:`PLACE_SOURCE`, which runs ``kernels/pathtracer/worlds.h``'s
``place_world_mesh``) writes this step's records on the frame's stream, and
one update of the instance structure follows there.

Blocking calls
--------------
Creating a :class:`DeviceWorlds` uploads its records through pinned staging
and builds the structure (set-up time; the kernel is compiled by CuPy on
first use). :meth:`DeviceWorlds.move` enqueues a kernel and an
``optixAccelBuild`` update; with a numpy array it uploads it through pinned
staging; nothing waits.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from .._config import kernels_dir
from ..accel import AccelOptions, DeviceInstanceAccel
from ..cuda import consume_device_array
from ._worlds import WorldLayout

if TYPE_CHECKING:
    from ..cuda import Context
    from ._device_scene import DeviceScene

__all__ = ["PLACE_SOURCE", "DeviceWorlds"]

#: The placement kernel: one thread per (world, movable mesh).
PLACE_SOURCE = r"""
#include "pathtracer/records.h"
#include "pathtracer/worlds.h"

extern "C" __global__ void place_worlds(const float* transforms, unsigned int stride, unsigned int worlds,
                                        unsigned int movable, const unsigned int* meshes,
                                        unsigned int meshes_per_world, const float4* offsets, MeshRecord* records,
                                        float* instances) {
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= worlds * movable) return;
    const unsigned int w = i / movable, k = i - w * movable;
    const unsigned int index = w * meshes_per_world + meshes[k];
    pt::place_world_mesh(transforms + static_cast<unsigned long long>(stride) * i, offsets[w], records[index],
                         instances + 20u * index);
}
"""


@functools.lru_cache(maxsize=1)
def _place_kernel() -> Any:
    import cupy

    return cupy.RawKernel(PLACE_SOURCE, "place_worlds", options=("--use_fast_math", f"-I{kernels_dir()}"))


class DeviceWorlds:
    """The worlds of a pipeline on the device (see the module documentation).

    Parameters
    ----------
    ctx : Context
    device_scene : DeviceScene
        Built with one instance per mesh (``DeviceScene(..., instances=True)``).
    layout : WorldLayout
    stream : stream
        The set-up stream.

    Attributes
    ----------
    layout : WorldLayout
    accel : DeviceInstanceAccel
        Over ``layout.count * layout.meshes`` instances, instance id = world * meshes + mesh.
    offsets, mesh_materials : device arrays
    moved : bool
        Whether :meth:`move` ran since the last :meth:`launch_records`.
    """

    def __init__(self, ctx: Context, device_scene: DeviceScene, layout: WorldLayout, stream: Any) -> None:
        self.ctx, self.layout = ctx, layout
        scene = device_scene.scene
        base = device_scene.tables.mesh_records
        records = layout.records(base, scene)
        ias = device_scene.accel
        handles = [inst.accel.handle for inst in ias.instances]
        flags = [inst.flags for inst in ias.instances]
        self._records = [ctx.upload(_bytes(records), stream), ctx.upload(_bytes(records), stream)]  # now, before
        self._current = 0
        self._instances = ctx.upload(_bytes(layout.instances(records, handles, flags)), stream)
        self.offsets = ctx.upload(layout.offsets, stream)
        self._movable = ctx.upload(np.asarray(layout.movable, np.uint32), stream) if layout.movable else None
        self.accel = DeviceInstanceAccel(ctx, self._instances, device_scene.geometries,
                                         AccelOptions(allow_update=True), stream=stream)
        self._scene_record = device_scene.record.copy()
        self.steps = 0
        self.moved = False

    def check_transforms(self, transforms: Any, stream: Any) -> tuple[Any, int]:
        """``transforms`` as a device array on ``stream`` (zero-copy, or uploaded from numpy) and its stride.

        Raises
        ------
        TypeError, ValueError
            Naming ``transforms``: not an array, the wrong shape or dtype, not contiguous, on another GPU.
        """
        if isinstance(transforms, np.ndarray):
            stride = self.layout.check_transforms_shape(transforms.shape)
            if transforms.dtype != np.float32:
                raise ValueError(f"transforms must have dtype float32, got {transforms.dtype}")
            return self.ctx.upload(np.ascontiguousarray(transforms), stream), stride
        shape = tuple(getattr(transforms, "shape", ()))
        stride = self.layout.check_transforms_shape(shape)
        consumed = consume_device_array(transforms, stream, name="transforms", device=self.ctx.device_id,
                                        dtype=np.float32)
        return consumed.array, stride

    def move(self, transforms: Any, stride: int, stream: Any) -> None:
        """Place the movable meshes of every world by ``transforms`` (checked) on ``stream``, then update the IAS."""
        if not self.layout.movable:
            return
        first = self.steps == 0
        self._current ^= 1
        targets = (0, 1) if first else (self._current,)  # the first step is its own previous step
        layout = self.layout
        n = layout.count * len(layout.movable)
        from ..cuda import as_cupy_stream

        cupy_stream = as_cupy_stream(stream)
        for k in targets:
            _place_kernel()(((n + 127) // 128,), (128,),
                            (transforms, np.uint32(stride), np.uint32(layout.count), np.uint32(len(layout.movable)),
                             self._movable, np.uint32(layout.meshes), self.offsets, self._records[k],
                             self._instances), stream=cupy_stream)
        self.accel.refit(stream)
        self.steps += 1
        self.moved = True

    def launch_records(self) -> tuple[np.ndarray, int]:
        """(the ``SceneRecord`` of this step, the address of the previous step's mesh records) for a launch.

        The previous step's records are this step's when nothing moved since the last launch (no motion).
        """
        record = self._scene_record
        record["meshes"] = int(self._records[self._current].data.ptr)
        record["handle"] = self.accel.handle
        record["instanced"] = 1
        previous = self._records[self._current ^ 1] if self.moved else self._records[self._current]
        self.moved = False
        return record.copy(), int(previous.data.ptr)

    def close(self) -> None:
        """Release the structure and the records (the caller waited for the launches that read them)."""
        self.accel.close()
        self._records = []
        self._instances = self.offsets = self._movable = None


def _bytes(records: np.ndarray) -> np.ndarray:
    """Structured records as the bytes a device copy takes (CuPy has no structured dtypes)."""
    return np.frombuffer(np.ascontiguousarray(records).tobytes(), np.uint8)
