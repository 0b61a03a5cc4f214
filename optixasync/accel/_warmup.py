"""Run every acceleration-structure operation once, at a point where waiting is harmless.

OptiX loads the code of some operations on their first use in a process,
and that load waits for all work queued on the device. Measured on an H200:
the first refit of a process, submitted behind 50 ms of GPU work, blocked
the host for 50.9 ms; every later refit took 0.2 to 0.3 ms. (Setting
``CUDA_MODULE_LOADING=EAGER`` does not help: the load is OptiX's own.)
So a new :class:`~optixasync.Context` (``warm_up=True``, the default) runs
:func:`warm_up` while it is created, and no frame pays for the load: this
module registers it as a set-up step of the cuda layer's context
(:func:`~optixasync.cuda.register_setup_step`) when the package is imported.

Blocking calls
--------------
:func:`warm_up` synchronizes its stream (by design: that is where the loads
wait), once, while the context is created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import as_cupy_stream, register_setup_step, synchronize
from ._base import AccelOptions
from ._gas import GeometryAccel
from ._ias import Instance, InstanceAccel
from ._inputs import TriangleInput

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["warm_up"]

_TRIANGLE = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32)


def warm_up(ctx: Context, stream: Any = None) -> None:
    """Build, compact and refit a one-triangle GAS and an IAS over it, then wait for them."""
    stream = ctx.stream if stream is None else as_cupy_stream(stream)
    options = AccelOptions(allow_update=True, allow_compaction=True)
    gas = GeometryAccel(ctx, TriangleInput(_TRIANGLE), options, stream=stream)
    gas.compact(wait=True, stream=stream)
    gas.refit(_TRIANGLE + np.float32(1.0), stream=stream)
    ias = InstanceAccel(ctx, [Instance(gas)], options, stream=stream)
    ias.compact(wait=True, stream=stream)
    ias.refit(stream=stream)
    synchronize(ias.ready.event, "the acceleration-structure warm-up")
    gas.close()
    ias.close()


register_setup_step(warm_up)
