"""A struct kept in pinned memory with its device copy: launch parameters written by the host, pushed per launch.

The frame scheduler gives every slot one (its launch parameters): the host
writes the fields of :attr:`StagedStruct.host`, a numpy scalar over the
pinned bytes, and :meth:`StagedStruct.push` enqueues their copy to
:attr:`StagedStruct.device`. The pinned source never moves, so the copy can
also be captured in a CUDA graph and replayed with new contents.

Blocking calls
--------------
None. Creating one allocates pinned memory from the context's pool (a new
``cuMemHostAlloc`` the first time a size is asked for) and stream-ordered
device memory; :meth:`StagedStruct.push` is a ``cudaMemcpyAsync`` from
pinned memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["StagedStruct"]


class StagedStruct:
    """One structured value of ``dtype`` in pinned memory, and a device buffer of the same size.

    Parameters
    ----------
    ctx : Context
    dtype : numpy dtype
        The struct's layout (see :func:`optixasync.struct_dtype`).
    stream : stream
        Where the device buffer is allocated (stream-ordered).

    Attributes
    ----------
    host : numpy structured scalar
        The fields, over the pinned bytes: write them before :meth:`push`.
    device : cupy memory
        The device copy the kernels read.
    nbytes : int
    """

    def __init__(self, ctx: Context, dtype: Any, stream: Any) -> None:
        dtype = np.dtype(dtype)
        self.nbytes = dtype.itemsize
        self._staging = ctx.pinned.allocate(self.nbytes)
        self.host = self._staging.view(dtype, (1,)).reshape(())
        self.device = ctx.memory.alloc(self.nbytes, stream)

    def push(self, stream: Any) -> None:
        """Enqueue the copy of :attr:`host` to :attr:`device` on ``stream`` (the host may rewrite it once the
        copy has run: the caller's fences say when)."""
        self._staging.copy_to_device_async(self.device, stream, self.nbytes)

    def release(self) -> None:
        """Let go of both buffers (their last use has passed)."""
        self._staging = self.host = self.device = None  # type: ignore[assignment]
