"""An instance structure whose instance records live in a device array that its owner writes on the GPU.

:class:`InstanceAccel` keeps its :class:`Instance` objects on the host and
uploads their records at every build and refit. :class:`DeviceInstanceAccel`
is built over an array of ``OptixInstance`` records (:data:`INSTANCE_DTYPE`,
80 bytes each) that stays where it is: a kernel of the owner rewrites the
transforms on a stream, then :meth:`DeviceInstanceAccel.refit` on the same
stream updates the structure from them, with no host copy. Many worlds of a
render pipeline move tens of thousands of instances per step this way (one
kernel, one update).

Blocking calls
--------------
None: the build and the refits are ``optixAccelBuild`` on the given stream
(see ``_base``); nothing is uploaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._optix import types as t
from ._base import AccelStructure
from ._ias import INSTANCE_DTYPE

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["DeviceInstanceAccel"]

#: OptiX's alignment of an instance array (``OPTIX_INSTANCE_BYTE_ALIGNMENT``).
INSTANCE_BYTE_ALIGNMENT = 16
#: Instances of one structure (``OPTIX_DEVICE_PROPERTY_LIMIT_MAX_INSTANCES_PER_IAS`` of current GPUs: 2**24).
MAX_DEVICE_INSTANCES = 2**24


class DeviceInstanceAccel(AccelStructure):
    """An IAS over the ``OptixInstance`` records of a device array (see the module documentation).

    Parameters
    ----------
    ctx : Context
    records : device array
        C-contiguous, 16-byte aligned, ``count * 80`` bytes of :data:`INSTANCE_DTYPE` records, written on
        ``stream`` before this call. Held (not copied): its contents are read by every build and refit.
    children : sequence of AccelStructure
        The structures the records' handles point to, kept open and alive with this one; the build is ordered
        after their last operation.
    options : AccelOptions or dict, optional
        ``allow_update=True`` for :meth:`refit`.
    stream : stream, optional
        The build stream.

    Raises
    ------
    TypeError, ValueError
        On records that are not a device array of whole, aligned instance records (at most
        :data:`MAX_DEVICE_INSTANCES`), or children that are not open structures of ``ctx``.
    """

    def __init__(self, ctx: Context, records: Any, children: Sequence[AccelStructure], options: Any = None, *,
                 stream: Any = None) -> None:
        self.count = self._check_records(records)
        children = list(children)
        for k, child in enumerate(children):
            if not isinstance(child, AccelStructure):
                raise TypeError(f"children[{k}] must be an acceleration structure, got {type(child).__name__}")
            ctx.require_own(child, f"children[{k}]")
            if child.handle == 0:
                raise ValueError(f"children[{k}] is a closed acceleration structure")
        super().__init__(ctx, options, stream)
        self.children = children
        self._records = records
        self._count = 1
        self._structs = (t.BuildInput * 1)()
        self._structs[0].type = t.BuildInputType.INSTANCES
        arr = self._structs[0].instanceArray
        arr.instances = int(records.data.ptr)
        arr.numInstances = self.count
        arr.instanceStride = 0
        for child in children:
            child.ready.order(self.stream)
        self._build(t.BuildOperation.BUILD, self.stream)

    @staticmethod
    def _check_records(records: Any) -> int:
        data = getattr(records, "data", None)
        if data is None or not hasattr(data, "ptr") or not hasattr(records, "nbytes"):
            raise TypeError(f"records must be a CuPy device array of instance records, got {type(records).__name__}")
        if not records.flags.c_contiguous:
            raise ValueError("records must be C-contiguous")
        nbytes = int(records.nbytes)
        if nbytes == 0 or nbytes % INSTANCE_DTYPE.itemsize:
            raise ValueError(f"records must hold whole {INSTANCE_DTYPE.itemsize}-byte instance records, got {nbytes} "
                             "bytes")
        if int(data.ptr) % INSTANCE_BYTE_ALIGNMENT:
            raise ValueError(f"records must start on a {INSTANCE_BYTE_ALIGNMENT}-byte boundary")
        count = nbytes // INSTANCE_DTYPE.itemsize
        if count > MAX_DEVICE_INSTANCES:
            raise ValueError(f"{count} instances exceed the {MAX_DEVICE_INSTANCES} of one instance structure")
        return count

    def refit(self, stream: Any = None) -> None:
        """Update the structure from the records as they are on ``stream`` now (same count, same children).

        Raises
        ------
        ValueError
            If the structure was built without ``allow_update=True``.
        RuntimeError
            If it is closed.
        """
        self._check_open()
        if not self.options.allow_update:
            raise ValueError("this structure was built without allow_update=True; it cannot be refitted")
        stream = self._use_stream(stream)
        self._build(t.BuildOperation.UPDATE, stream)
        self.refits += 1

    def rebuild(self, stream: Any = None) -> None:
        """Build the structure anew from the records (after the children were rebuilt or compacted)."""
        stream = self._use_stream(stream)
        for child in self.children:
            child.ready.order(stream)
        self._build(t.BuildOperation.BUILD, stream)
        self.rebuilds += 1

    def _release_inputs(self) -> None:
        self._records = None
        self._structs = None
        self.children = []

    def __repr__(self) -> str:
        return f"<optixasync.DeviceInstanceAccel instances={self.count} bytes={self.nbytes}>"
