"""The smallest complete OptiX program: one triangle, one launch, one image.

Used by ``examples/hello_triangle.py``, ``optixasync doctor`` and the tests.

Blocking calls
--------------
:func:`render_triangle` waits for its result (it returns pixels); that wait
is the point of the call. Creating a :class:`HelloRenderer` compiles (set-up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._optix._types import TraversableGraphFlags
from .._structs import struct_dtype
from ..accel import GeometryAccel, TriangleInput
from ..cuda import synchronize
from ..program import Module, Pipeline, PipelineOptions, ProgramGroup, ShaderBindingTable

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["HELLO_PARAMS", "DEFAULT_TRIANGLE", "HelloResult", "HelloRenderer", "fill_params", "render_triangle"]

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

    def _repr_png_(self) -> bytes:
        """In a notebook, the result shows as its image (sRGB, flipped so that +y is up: row 0 is the smallest y)."""
        import io

        from PIL import Image

        from ..io import tonemap_srgb

        out = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(tonemap_srgb(self.image[::-1, :, :3])), "RGB").save(out, "PNG")
        return out.getvalue()


def render_triangle(
    ctx: Context,
    width: int = 256,
    height: int = 256,
    vertices: np.ndarray = DEFAULT_TRIANGLE,
    miss_color: tuple[float, float, float] = (0.1, 0.2, 0.3),
    view: tuple[float, float, float, float] = (-1.0, -1.0, 1.0, 1.0),
    eye_z: float = -1.0,
    compile_threads: int = 0,
) -> HelloResult:
    """Render ``vertices`` with an orthographic camera looking along +z.

    Pixel (x, y) covers world ``view_min + (x+0.5, y+0.5) / size * (view_max - view_min)``
    in xy; row 0 is the smallest y. ``compile_threads``: see :class:`~optixasync.Module`.
    """
    renderer = HelloRenderer(ctx, miss_color, TraversableGraphFlags.ALLOW_SINGLE_GAS, compile_threads=compile_threads)
    stream = ctx.stream
    gas = GeometryAccel(ctx, TriangleInput(np.ascontiguousarray(vertices, dtype=np.float32)), stream=stream)
    image = ctx.memory.empty((height, width, 4), np.float32, stream)
    params = np.zeros((), HELLO_PARAMS)
    fill_params(params, image, gas.handle, view, eye_z)
    params_device = ctx.upload(params, stream)
    renderer.pipeline.launch(renderer.sbt, params_device, width, height, stream=stream)

    host = ctx.pinned.download(image, stream)
    done = ctx.deferred.after(stream, image, params_device, gas, renderer.sbt)
    synchronize(done, "waiting for the triangle")  # the caller asked for pixels: wait for this frame only
    result = host.copy()
    renderer.close()
    gas.close()
    return HelloResult(result, renderer.setup_seconds, renderer.module.ptx_cache_hit, renderer.timings)


def fill_params(params: Any, image: Any, handle: int, view: tuple[float, float, float, float], eye_z: float) -> None:
    """Write ``HelloParams`` for rendering into ``image`` (a (height, width, 4) float32 device array)."""
    height, width = image.shape[:2]
    params["image"], params["width"], params["height"], params["handle"] = image.data.ptr, width, height, handle
    params["view_min"], params["view_max"], params["eye_z"] = view[:2], view[2:], eye_z


class HelloRenderer:
    """The hello-triangle pipeline: barycentric shading, hit distance in alpha.

    Attributes
    ----------
    setup_seconds : float
        Host time to create the module, program groups and pipeline.
    timings : dict
        That time broken down: NVRTC or PTX cache, ``optixModuleCreate``, program groups, pipeline.
    """

    def __init__(
        self,
        ctx: Context,
        miss_color: tuple[float, float, float] = (0.1, 0.2, 0.3),
        traversable_graph_flags: TraversableGraphFlags = TraversableGraphFlags.ALLOW_ANY,
        *,
        compile_threads: int = 0,
    ) -> None:
        start = time.perf_counter()
        options = PipelineOptions(num_payload_values=4, traversable_graph_flags=traversable_graph_flags)
        self.module = Module(ctx, "hello_triangle.cu", pipeline_options=options, compile_threads=compile_threads)
        module_done = time.perf_counter()
        self.raygen = ProgramGroup.raygen(ctx, self.module, "__raygen__hello")
        self.miss = ProgramGroup.miss(ctx, self.module, "__miss__hello")
        self.hit = ProgramGroup.hitgroup(ctx, self.module, closesthit="__closesthit__hello")
        groups_done = time.perf_counter()
        self.pipeline = Pipeline(ctx, [self.raygen, self.miss, self.hit], max_trace_depth=1)
        self.setup_seconds = time.perf_counter() - start
        self.timings = {
            "nvrtc_or_cache_s": self.module.nvrtc_seconds,
            "optix_module_s": self.module.optix_seconds,
            "program_groups_s": groups_done - module_done,
            "optix_pipeline_s": start + self.setup_seconds - groups_done,
        }
        miss_data = np.zeros((), MISS_DATA)
        miss_data["color"] = miss_color
        self.sbt = ShaderBindingTable(ctx, self.raygen, [(self.miss, miss_data)], [self.hit])

    def record(self, frame: Any, handle: int, width: int, height: int,
               view: tuple[float, float, float, float] = (-1.0, -1.0, 1.0, 1.0), eye_z: float = -1.0,
               readback: bool = True) -> Any:
        """Launch into the frame's ``image`` buffer (and read it back as ``"image"``)."""
        image = frame.buffer("image", (height, width, 4), np.float32)
        fill_params(frame.params, image, handle, view, eye_z)
        frame.launch(self.pipeline, self.sbt, width, height)
        if readback:
            frame.readback(image, "image")
        return image

    def close(self) -> None:
        for obj in (self.sbt, self.pipeline, self.hit, self.miss, self.raygen, self.module):
            obj.close()
