"""Instance acceleration structures (IAS): transformed instances of GAS, IAS or motion transforms.

An instance of a motion transform (:class:`~optixasync.accel.MatrixMotionTransform`,
:class:`~optixasync.accel.SRTMotionTransform`) is a motion instance: its child
moves between the transform's keys over the trace's time.

Blocking calls
--------------
None (see ``_gas``). The instance records travel through pinned staging on
the build stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix import types as t
from ..validation import as_affine, as_int
from ._base import AccelStructure
from ._transforms import MotionTransform

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["Instance", "InstanceAccel", "INSTANCE_DTYPE"]

#: One ``OptixInstance`` record (80 bytes).
INSTANCE_DTYPE = np.dtype(
    {
        "names": ["transform", "instance_id", "sbt_offset", "visibility_mask", "flags", "handle"],
        "formats": [("<f4", (3, 4)), "<u4", "<u4", "<u4", "<u4", "<u8"],
        "offsets": [0, 48, 52, 56, 60, 64],
        "itemsize": 80,
    }
)


@dataclass
class Instance:
    """One instance of an acceleration structure.

    Attributes
    ----------
    accel : AccelStructure or MotionTransform
        The instanced structure (or motion transform: a motion instance); its current ``handle`` is read
        when the IAS is (re)built.
    transform : array (3, 4) or (4, 4)
        Object-to-world affine transform, row-major; stored as (3, 4) float32.
        Checked by :func:`optixasync.validation.as_affine` (finite, invertible).
    instance_id : int
        Reported by ``optixGetInstanceId``.
    sbt_offset : int
        Added to the hit group index.
    visibility_mask : int
        8-bit mask tested against the ray's mask.
    flags : InstanceFlags
    """

    accel: AccelStructure | MotionTransform
    transform: Any = field(default_factory=lambda: np.eye(3, 4, dtype=np.float32))
    instance_id: int = 0
    sbt_offset: int = 0
    visibility_mask: int = 0xFF
    flags: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.accel, (AccelStructure, MotionTransform)):
            raise TypeError("Instance.accel must be a GeometryAccel, InstanceAccel or motion transform, got "
                            f"{type(self.accel).__name__}")
        self.transform = as_affine(self.transform, "Instance.transform").astype(np.float32)
        for name, limit in (("visibility_mask", 2**8), ("instance_id", 2**28), ("sbt_offset", 2**28),
                            ("flags", 2**32)):
            setattr(self, name, as_int(f"Instance.{name}", getattr(self, name), 0, limit - 1))


class InstanceAccel(AccelStructure):
    """An IAS over :class:`Instance` records.

    Parameters
    ----------
    ctx : Context
    instances : sequence of Instance
        Of structures created with the same context.
    options : AccelOptions or dict, optional
    stream : stream, optional
        Build stream; ordered after each instanced structure's last operation.
    """

    def __init__(self, ctx: Context, instances: Sequence[Instance], options: Any = None, *, stream: Any = None) -> None:
        super().__init__(ctx, options, stream)
        self.instances = list(instances)
        if not self.instances or not all(isinstance(i, Instance) for i in self.instances):
            raise TypeError("instances must be a non-empty sequence of Instance")
        self._check_owned(self.instances)
        self._count = 1
        self._structs = (t.BuildInput * 1)()
        self._structs[0].type = t.BuildInputType.INSTANCES
        self._upload_records(self.stream)
        self._build(t.BuildOperation.BUILD, self.stream)

    def _check_owned(self, instances: Sequence[Instance]) -> None:
        """Refuse structures of another context, and closed ones (their handle is gone)."""
        for k, inst in enumerate(instances):
            self.ctx.require_own(inst.accel, f"the structure of instance {k}")
            if inst.accel.handle == 0:
                raise ValueError(f"instance {k} refers to a closed acceleration structure")
            if isinstance(inst.accel, MotionTransform) and inst.accel.stale:
                raise ValueError(f"instance {k}: the child of its motion transform was rebuilt or compacted since "
                                 "the transform was written (its old handle is gone): call transform.update() first")

    def records(self) -> np.ndarray:
        """The ``OptixInstance`` records for the instances' current handles.

        Raises
        ------
        ValueError
            An instance of a closed structure, or of a motion transform whose child's handle changed.
        """
        self._check_owned(self.instances)
        records = np.zeros(len(self.instances), INSTANCE_DTYPE)
        for k, inst in enumerate(self.instances):
            if inst.accel.handle == 0:
                raise ValueError(f"instance {k} refers to a closed acceleration structure")
            records[k] = (inst.transform, inst.instance_id, inst.sbt_offset, inst.visibility_mask, inst.flags,
                          inst.accel.handle)
        return records

    def _upload_records(self, stream: Any) -> None:
        records = self.records()  # a closed structure is refused before any GPU work
        for inst in self.instances:
            inst.accel.ready.order(stream)  # build after the instanced structures' last operations
        self._records = self.ctx.upload(records, stream)
        arr = self._structs[0].instanceArray
        arr.instances = int(self._records.data.ptr)
        arr.numInstances = len(self.instances)
        arr.instanceStride = 0

    def _release_inputs(self) -> None:
        self._records = None
        self._structs = None

    def rebuild(self, instances: Sequence[Instance] | None = None, stream: Any = None) -> None:
        """Rebuild over new or changed instances (new transforms, compacted or rebuilt children).

        Raises
        ------
        TypeError, ValueError
            On bad ``instances`` (of another context, or of a closed structure); the structure keeps its
            instances.
        RuntimeError
            If this structure is closed.
        """
        self._check_open()
        if instances is not None:
            instances = list(instances)
            if not instances or not all(isinstance(i, Instance) for i in instances):
                raise TypeError("instances must be a non-empty sequence of Instance")
            self._check_owned(instances)
            self.instances = instances  # only once every check has passed
        stream = self._use_stream(stream)
        self._upload_records(stream)
        self._build(t.BuildOperation.BUILD, stream)

    def refit(self, stream: Any = None) -> None:
        """Update in place after instance transforms changed (same instances, same children)."""
        self._check_open()
        if not self.options.allow_update:
            raise ValueError("this structure was built without allow_update=True; it cannot be refitted")
        stream = self._use_stream(stream)
        self._upload_records(stream)
        self._build(t.BuildOperation.UPDATE, stream)
        self.refits += 1

    def __repr__(self) -> str:
        return f"<optixasync.InstanceAccel instances={len(self.instances)} bytes={self.nbytes}>"


