"""The smallest complete OptiX program: one triangle, one launch, one image.

Used by ``examples/hello_triangle.py``, ``optixasync doctor`` and the tests.
:func:`render_triangle` waits for its result (it returns pixels); that wait
is the point of the call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._optix._types import TraversableGraphFlags
from ._structs import struct_dtype
from .accel import GeometryAccel, TriangleInput
from .program import PipelineOptions, ShaderBindingTable

__all__ = ["HELLO_PARAMS", "DEFAULT_TRIANGLE", "HelloResult", "HelloRenderer", "render_triangle"]

#: Layout of ``HelloParams`` in ``kernels/hello_triangle.cu``.
HELLO_PARAMS = struct_dtype(
    [("image", "ptr"), ("width", "uint"), ("height", "uint"), ("handle", "handle"), ("view_min", "float2"),
     ("view_max", "float2"), ("eye_z", "float")]
)
MISS_DATA = struct_dtype([("color", "float3")])

DEFAULT_TRIANGLE = np.array([[-0.8, -0.7, 0.0], [0.8, -0.7, 0.0], [0.0, 0.8, 0.0]], dtype=np.float32)


@dataclass
class HelloResult:
    image: np.ndarray  # (height, width, 4) float32: RGB, then hit distance (-1 for a miss)
    setup_seconds: float  # module + program groups + pipeline creation
    module_cache_hit: bool
    timings: dict[str, float]  # set-up broken down: NVRTC or PTX cache, optixModuleCreate, program groups, pipeline


def render_triangle(
    ctx: Any,
    width: int = 256,
    height: int = 256,
    vertices: np.ndarray = DEFAULT_TRIANGLE,
    miss_color: tuple[float, float, float] = (0.1, 0.2, 0.3),
    view: tuple[float, float, float, float] = (-1.0, -1.0, 1.0, 1.0),
    eye_z: float = -1.0,
) -> HelloResult:
    """Render ``vertices`` with an orthographic camera looking along +z.

    Pixel (x, y) covers world ``view_min + (x+0.5, y+0.5) / size * (view_max - view_min)``
    in xy; row 0 is the smallest y.
    """
    start = time.perf_counter()
    options = PipelineOptions(num_payload_values=4, traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS)
    module = ctx.create_module("hello_triangle.cu", pipeline_options=options)
    module_done = time.perf_counter()
    raygen = ctx.create_raygen(module, "__raygen__hello")
    miss = ctx.create_miss(module, "__miss__hello")
    hit = ctx.create_hitgroup(module, closesthit="__closesthit__hello")
    groups_done = time.perf_counter()
    pipeline = ctx.create_pipeline([raygen, miss, hit], max_trace_depth=1)
    setup_seconds = time.perf_counter() - start
    timings = {"nvrtc_or_cache_s": module.nvrtc_seconds, "optix_module_s": module.optix_seconds,
               "program_groups_s": groups_done - module_done, "optix_pipeline_s": start + setup_seconds - groups_done}

    stream = ctx.stream
    gas = GeometryAccel(ctx, TriangleInput(np.ascontiguousarray(vertices, dtype=np.float32)), stream=stream)
    miss_data = np.zeros((), MISS_DATA)
    miss_data["color"] = miss_color
    sbt = ShaderBindingTable(ctx, raygen, [(miss, miss_data)], [hit], stream=stream)

    image = ctx.memory.empty((height, width, 4), np.float32, stream)
    params = np.zeros((), HELLO_PARAMS)
    params["image"] = image.data.ptr
    params["width"], params["height"] = width, height
    params["handle"] = gas.handle
    params["view_min"] = view[:2]
    params["view_max"] = view[2:]
    params["eye_z"] = eye_z
    params_device = ctx.upload(params, stream)
    pipeline.launch(sbt, params_device, width, height, stream=stream)

    readback, host = ctx.pinned.array((height, width, 4), np.float32)
    readback.copy_from_device_async(image, stream, image.nbytes)
    done = ctx.deferred.after(stream, image, params_device, gas, sbt)
    done.synchronize()  # the caller asked for pixels: wait for this frame only
    result = host.copy()
    for obj in (pipeline, hit, miss, raygen, module):
        obj.close()
    return HelloResult(result, setup_seconds, module.ptx_cache_hit, timings)


class HelloRenderer:
    """The hello-triangle pipeline kept for use inside scheduler frames (barycentric shading, distance in alpha)."""

    def __init__(self, ctx: Any, miss_color: tuple[float, float, float] = (0.1, 0.2, 0.3)) -> None:
        options = PipelineOptions(num_payload_values=4)
        self.module = ctx.create_module("hello_triangle.cu", pipeline_options=options)
        self.raygen = ctx.create_raygen(self.module, "__raygen__hello")
        self.miss = ctx.create_miss(self.module, "__miss__hello")
        self.hit = ctx.create_hitgroup(self.module, closesthit="__closesthit__hello")
        self.pipeline = ctx.create_pipeline([self.raygen, self.miss, self.hit], max_trace_depth=1)
        miss_data = np.zeros((), MISS_DATA)
        miss_data["color"] = miss_color
        self.sbt = ShaderBindingTable(ctx, self.raygen, [(self.miss, miss_data)], [self.hit])

    def record(self, frame: Any, handle: int, width: int, height: int,
               view: tuple[float, float, float, float] = (-1.0, -1.0, 1.0, 1.0), eye_z: float = -1.0,
               readback: bool = True) -> Any:
        """Launch into the frame's ``image`` buffer (and read it back as ``"image"``)."""
        image = frame.buffer("image", (height, width, 4), np.float32)
        p = frame.params
        p["image"], p["width"], p["height"], p["handle"] = image.data.ptr, width, height, handle
        p["view_min"], p["view_max"], p["eye_z"] = view[:2], view[2:], eye_z
        frame.launch(self.pipeline, self.sbt, width, height)
        if readback:
            frame.readback(image, "image")
        return image
