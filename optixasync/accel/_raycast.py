"""Cast rays against any traversable and read back the closest hits (tests, tools, picking).

Blocking calls
--------------
:meth:`RayCaster.cast` returns numpy arrays, so it waits for its own launch
(and only for it); it is not meant for a frame's submit path. Creating a
caster compiles its module (set-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._structs import struct_dtype
from ..cuda import as_cupy_stream, synchronize
from ..program import Module, Pipeline, PipelineOptions, ProgramGroup, ShaderBindingTable

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["RayCaster", "RAYCAST_PARAMS", "HIT_RECORDS"]

RAYCAST_PARAMS = struct_dtype(
    [("origins", "ptr"), ("directions", "ptr"), ("t", "ptr"), ("prim", "ptr"), ("inst", "ptr"), ("handle", "handle"),
     ("count", "uint"), ("tmin", "float"), ("tmax", "float")]
)


#: Identical hit records in the caster's SBT: instances with an SBT offset below this trace safely.
HIT_RECORDS = 64


class RayCaster:
    """Closest-hit queries: distance, primitive index and instance id per ray.

    Works on any structure: rays trace with SBT stride 0, so every build input
    of a GAS maps to the same hit program, and instances may carry SBT offsets
    up to ``HIT_RECORDS - 1`` (each offset selects an identical record).
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        options = PipelineOptions(num_payload_values=3)
        self.module = Module(ctx, "raycast.cu", pipeline_options=options)
        self.raygen = ProgramGroup.raygen(ctx, self.module, "__raygen__cast")
        self.miss = ProgramGroup.miss(ctx, self.module, "__miss__cast")
        self.hit = ProgramGroup.hitgroup(ctx, self.module, closesthit="__closesthit__cast")
        self.pipeline = Pipeline(ctx, [self.raygen, self.miss, self.hit], max_trace_depth=1)
        self.sbt = ShaderBindingTable(ctx, self.raygen, [self.miss], [self.hit] * HIT_RECORDS)

    def cast(self, accel: Any, origins: Any, directions: Any, tmin: float = 0.0, tmax: float = 1e30,
             stream: Any = None) -> dict[str, np.ndarray]:
        """Trace ``origins + t * directions`` against ``accel`` (a structure or a raw handle).

        Returns a dict of numpy arrays: ``t`` (float32, -1 on a miss), ``prim``
        and ``inst`` (int32, -1 on a miss; ``inst`` is also -1 for hits on a GAS
        traced without an instance, where OptiX reports the id ~0) and ``hit`` (bool).

        Raises
        ------
        ValueError
            On rays of another shape, or a structure of another context.
        RuntimeError
            If ``accel`` is a closed structure (its handle is gone: every ray would miss).
        """
        origins = np.ascontiguousarray(origins, dtype=np.float32)
        directions = np.ascontiguousarray(directions, dtype=np.float32)
        if origins.ndim != 2 or origins.shape[1] != 3 or origins.shape != directions.shape or len(origins) == 0:
            raise ValueError(f"origins and directions must both have shape (R, 3), got {origins.shape}, {directions.shape}")
        ctx = self.ctx
        stream = ctx.stream if stream is None else as_cupy_stream(stream)
        if not isinstance(accel, int):
            ctx.require_own(accel, "the structure to cast against")
            if accel.handle == 0:
                raise RuntimeError(f"cannot cast against a closed {type(accel).__name__}")
            accel.ready.order(stream)
        handle = accel if isinstance(accel, int) else accel.handle
        count = len(origins)
        o, d = ctx.upload(origins, stream), ctx.upload(directions, stream)
        t = ctx.memory.empty((count,), np.float32, stream)
        prim = ctx.memory.empty((count,), np.int32, stream)
        inst = ctx.memory.empty((count,), np.int32, stream)
        params = np.zeros((), RAYCAST_PARAMS)
        params["origins"], params["directions"] = o.data.ptr, d.data.ptr
        params["t"], params["prim"], params["inst"] = t.data.ptr, prim.data.ptr, inst.data.ptr
        params["handle"], params["count"], params["tmin"], params["tmax"] = handle, count, tmin, tmax
        params_device = ctx.upload(params, stream)
        self.pipeline.launch(self.sbt, params_device, count, stream=stream)
        out = {}
        staged = [(name, ctx.pinned.download(device, stream)) for name, device in (("t", t), ("prim", prim),
                                                                                    ("inst", inst))]
        done = ctx.deferred.after(stream, o, d, t, prim, inst, params_device)
        synchronize(done, "waiting for the ray casts")  # the caller asked for hits: wait for this query only
        for name, view in staged:
            out[name] = view.copy()
        out["hit"] = out["prim"] >= 0
        return out
