"""Beyond one GPU: every GPU of a machine (threads) and many machines (Dask), for one image or a sequence.

:class:`Farm` renders a scene on a backend's workers, each keeping its GPU context, compiled pipeline
and acceleration structure across jobs:

* by samples (:meth:`Farm.render`): disjoint absolute sample ranges per GPU, summed on the host;
* by frames (:meth:`Farm.frames`): a sequence dealt to GPUs as they become free, files written by the
  workers, results delivered in frame order, each exactly once.

Backends: :class:`LocalGPUs` (one thread per GPU of this machine) and :class:`DaskGPUs`
(``dask.distributed`` workers, one GPU each: ``dask_cuda.LocalCUDACluster`` or a cluster's scheduler;
the ``cluster`` extra). The orchestration underneath (:func:`run_in_order`, :class:`FunctionFactory`)
runs any per-task function the same way. Frames of a sequence differ by a frame update of the render
layer (:class:`~optixasync.render.ClothMotion`, :class:`~optixasync.render.CameraSwing`, or any picklable
callable). Importing this package loads no CUDA library and no Dask.
"""

from __future__ import annotations

from ..errors import WorkerError
from ._dask import DaskGPUs
from ._farm import Farm
from ._ordered import Backend, InOrder, run_in_order
from ._plan import FrameOutput, FrameTask, SampleRange, Task, parse_gpus, split_samples
from ._threads import LocalGPUs
from ._tracer import TracerFactory, TracerWork
from ._work import FunctionFactory, Work, WorkFactory

__all__ = [
    "Backend",
    "DaskGPUs",
    "Farm",
    "FrameOutput",
    "FrameTask",
    "FunctionFactory",
    "InOrder",
    "LocalGPUs",
    "parse_gpus",
    "run_in_order",
    "SampleRange",
    "split_samples",
    "Task",
    "TracerFactory",
    "TracerWork",
    "Work",
    "WorkerError",
    "WorkFactory",
]
