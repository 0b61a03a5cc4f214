"""The OptiX programming model on the GPU: every ABI the driver accepts, spheres, curves, custom primitives,
callables, motion blur, specialization, payload types and parallel compilation, each against an analytic answer.

The programs are ``kernels/model_gpu.cu`` (an orthographic camera down +z from z = -5, one closest hit per
primitive kind) and ``kernels/payload_types.cu``. Each pixel holds ``(t, a, b, primitive type)``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import optixasync
from optixasync import (
    AccelOptions,
    BuiltinModule,
    CurveInput,
    CustomInput,
    FrameScheduler,
    GeometryAccel,
    Instance,
    InstanceAccel,
    MatrixMotionTransform,
    Module,
    Pipeline,
    PipelineOptions,
    PrimitiveTypeFlags,
    ProgramGroup,
    ShaderBindingTable,
    SphereInput,
    SRTMotionTransform,
    TraversableGraphFlags,
    TriangleInput,
    srt_key,
    struct_dtype,
)
from optixasync._driver import load_optix_library
from optixasync._optix import SUPPORTED_ABIS
from optixasync._optix._loader import probe_abi
from optixasync.errors import OptixError
from optixasync.program import PayloadType, bind_params
from optixasync.testing import render_triangle

pytestmark = pytest.mark.gpu

KERNELS = Path(__file__).resolve().parent / "kernels"
SOURCE = (KERNELS / "model_gpu.cu").read_text()
PARAMS = struct_dtype([("image", "ptr"), ("width", "uint"), ("height", "uint"), ("handle", "handle"),
                       ("view_min", "float2"), ("view_max", "float2"), ("time", "float"), ("samples", "uint"),
                       ("scale", "float")])
W = H = 64
VIEW = (-1.0, 1.0)  # the view spans [-1, 1]^2
#: Sphere and curve vertex data (read by the hit programs) need the GAS built with random vertex access, and the
#: built-in module asked for with the same build flags.
READABLE = AccelOptions(random_vertex_access=True)



def near_any(values, expected, tol: float = 1e-5) -> bool:
    """Whether every value (float32) is within ``tol`` of one of ``expected``."""
    values = np.asarray(values, np.float64).reshape(-1, 1)
    return bool((np.abs(values - np.asarray(expected, np.float64)).min(axis=1) < tol).all())

def pixel_centres() -> tuple[np.ndarray, np.ndarray]:
    c = VIEW[0] + (np.arange(W) + 0.5) / W * (VIEW[1] - VIEW[0])
    return np.meshgrid(c, c)  # x[row, col], y[row, col]


def render(ctx, pipeline, sbt, handle, accel=None, *, time=0.0, samples=1, scale=1.0, width=W, height=H):
    """One launch of ``pipeline`` into a (height, width, 4) float image, read back through a frame."""
    with FrameScheduler(ctx, 1, params_dtype=PARAMS) as sched:
        with sched.frame() as f:
            image = f.buffer("image", (height, width, 4), np.float32)
            f.params["image"], f.params["width"], f.params["height"] = image.data.ptr, width, height
            f.params["handle"] = handle
            f.params["view_min"], f.params["view_max"] = (VIEW[0], VIEW[0]), (VIEW[1], VIEW[1])
            f.params["time"], f.params["samples"], f.params["scale"] = time, samples, scale
            if accel is not None:
                accel.ready.order(f)
            f.launch(pipeline, sbt, width, height)
            f.readback(image, "image")
        with f.handle.result(timeout=30.0) as result:
            return result["image"].copy()


def programs(ctx, options, closesthit, *, intersection=None, intersection_module=None, hit_data=None, **link):
    module = Module(ctx, SOURCE, pipeline_options=options)
    raygen = ProgramGroup.raygen(ctx, module, "__raygen__ortho")
    miss = ProgramGroup.miss(ctx, module, "__miss__ms")
    hit = ProgramGroup.hitgroup(ctx, module, closesthit=closesthit, intersection=intersection,
                                intersection_module=intersection_module)
    pipeline = Pipeline(ctx, [raygen, miss, hit], **link)
    sbt = ShaderBindingTable(ctx, raygen, [miss], [(hit, hit_data) if hit_data is not None else hit])
    return module, pipeline, sbt


# --- every ABI the driver accepts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("abi", sorted(SUPPORTED_ABIS))
def test_every_accepted_abi_renders_and_reports_the_device(abi):
    if probe_abi(load_optix_library(), abi) != 0:
        with pytest.raises(OptixError, match=f"does not accept OptiX ABI {abi}") as info:
            optixasync.Context(abi=abi, warm_up=False)
        assert info.value.status == 7801 and "it accepts 87 (OptiX 8.0)" in str(info.value)
        return
    with optixasync.Context(abi=abi) as ctx:  # the warm-up builds, compacts and refits through this ABI
        assert ctx.abi == abi and ctx.properties.abi == abi
        props = ctx.properties
        assert props.max_trace_depth >= 31 and props.visibility_mask_bits == 8 and props.rtcore_version >= 0
        assert isinstance(props.shader_execution_reordering, bool)
        assert (props.cooperative_vectors is None) == (abi < 105) and (props.cluster_accel is None) == (abi < 105)
        result = render_triangle(ctx, 32, 32)
        assert (result.image[..., 3] >= 0).sum() > 100


def test_newest_negotiates_the_newest_accepted_abi():
    accepted = [abi for abi in SUPPORTED_ABIS if probe_abi(load_optix_library(), abi) == 0]
    with optixasync.Context(abi="newest", warm_up=False) as ctx:
        assert ctx.abi == max(accepted)
        assert set(ctx.api.refused) == {abi for abi in SUPPORTED_ABIS if abi > ctx.abi}


# --- spheres --------------------------------------------------------------------------------------------------------

SPHERES = np.array([[-0.5, -0.4, 0.0], [0.45, 0.3, 0.5]], np.float32)
RADII = np.array([0.35, 0.4], np.float32)


def sphere_reference(centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Analytic depth (-1 on a miss) and normal z of spheres seen down +z from z = -5."""
    x, y = pixel_centres()
    depth, nz = np.full(x.shape, -1.0), np.zeros(x.shape)
    for (cx, cy, cz), r in zip(centres, radii, strict=True):
        d2 = (x - cx) ** 2 + (y - cy) ** 2
        inside = d2 < r * r
        t = cz - np.sqrt(np.maximum(r * r - d2, 0)) + 5.0
        closer = inside & ((depth < 0) | (t < depth))
        depth[closer], nz[closer] = t[closer], -np.sqrt(np.maximum(r * r - d2, 0))[closer] / r
    return depth, nz


def _compare(image, depth, nz, rim=0.02):
    x, y = pixel_centres()
    hit = depth >= 0
    assert ((image[..., 0] >= 0) == hit).mean() > 0.99  # only rim pixels may differ
    both = hit & (image[..., 0] >= 0) & (np.abs(nz) > rim)
    assert np.abs(image[..., 0][both] - depth[both]).max() < 1e-3
    assert np.abs(image[..., 1][both] - nz[both]).max() < 2e-3


def test_spheres_against_the_analytic_depth_and_normal(ctx):
    options = PipelineOptions(traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS,
                              primitive_type_flags=PrimitiveTypeFlags.SPHERE)
    gas = GeometryAccel(ctx, SphereInput(SPHERES, RADII), READABLE)
    builtin = BuiltinModule(ctx, "sphere", pipeline_options=options, build_flags=gas.options.build_flags)
    _, pipeline, sbt = programs(ctx, options, "__closesthit__sphere", intersection_module=builtin)
    image = render(ctx, pipeline, sbt, gas.handle, gas)
    depth, nz = sphere_reference(SPHERES, RADII)
    _compare(image, depth, nz)
    hit = image[..., 0] >= 0
    assert set(np.unique(image[..., 3][hit])) == {0x2506}  # PRIMITIVE_TYPE_SPHERE
    assert near_any(np.unique(image[..., 2][hit]), (0.35, 0.4))


def test_one_radius_for_every_sphere(ctx):
    options = PipelineOptions(traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS,
                              primitive_type_flags=PrimitiveTypeFlags.SPHERE)
    gas = GeometryAccel(ctx, SphereInput(SPHERES, 0.3), READABLE)
    builtin = BuiltinModule(ctx, "sphere", pipeline_options=options, build_flags=READABLE.build_flags)
    _, pipeline, sbt = programs(ctx, options, "__closesthit__sphere", intersection_module=builtin)
    image = render(ctx, pipeline, sbt, gas.handle, gas)
    _compare(image, *sphere_reference(SPHERES, np.array([0.3, 0.3], np.float32)))


# --- curves ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "flag"), [("linear", PrimitiveTypeFlags.ROUND_LINEAR),
                                            ("cubic_bspline", PrimitiveTypeFlags.ROUND_CUBIC_BSPLINE),
                                            ("catmull_rom", PrimitiveTypeFlags.ROUND_CATMULLROM),
                                            ("bezier", PrimitiveTypeFlags.ROUND_CUBIC_BEZIER),
                                            ("quadratic_bspline", PrimitiveTypeFlags.ROUND_QUADRATIC_BSPLINE)])
def test_a_straight_tube_has_the_width_and_depth_of_its_radius(ctx, kind, flag):
    """Evenly spaced collinear control points of one radius make a straight tube of that radius, in every basis."""
    radius = 0.12
    xs = np.linspace(-1.2, 1.2, 13)
    vertices = np.stack([xs, np.zeros_like(xs), np.zeros_like(xs)], axis=1).astype(np.float32)
    widths = np.full(len(xs), radius, np.float32)
    indices = np.arange(0, len(xs) - 3, 3, dtype=np.uint32) if kind == "bezier" else None
    options = PipelineOptions(traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS, primitive_type_flags=flag)
    gas = GeometryAccel(ctx, CurveInput(vertices, widths, indices, kind=kind), READABLE)
    builtin = BuiltinModule(ctx, kind, pipeline_options=options, build_flags=READABLE.build_flags)
    _, pipeline, sbt = programs(ctx, options, "__closesthit__curve", intersection_module=builtin)
    image = render(ctx, pipeline, sbt, gas.handle, gas)
    x, y = pixel_centres()
    middle = np.abs(x) < 0.5  # away from the ends
    hit = image[..., 0] >= 0
    assert (hit[middle] == (np.abs(y[middle]) < radius)).mean() > 0.98
    inner = middle & (np.abs(y) < 0.8 * radius)
    expected = 5.0 - np.sqrt(radius**2 - y[inner] ** 2)
    assert np.abs(image[..., 0][inner] - expected).max() < 2e-3
    assert np.abs(image[..., 2][inner] - radius).max() < 1e-4  # the radius at the hit, from the vertex data
    assert np.abs(image[..., 1][inner] + np.sqrt(1 - (y[inner] / radius) ** 2)).max() < 2e-2  # normal z


def test_rocaps_curves_where_the_abi_has_them():
    if probe_abi(load_optix_library(), 105) != 0:
        pytest.skip("the driver does not accept ABI 105 (OptiX 9.0)")
    with optixasync.Context(abi=105, warm_up=False) as ctx:
        xs = np.linspace(-1.2, 1.2, 9)
        vertices = np.stack([xs, np.zeros_like(xs), np.zeros_like(xs)], axis=1).astype(np.float32)
        options = PipelineOptions(traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS,
                                  primitive_type_flags=PrimitiveTypeFlags.ROUND_CUBIC_BSPLINE_ROCAPS)
        gas = GeometryAccel(ctx, CurveInput(vertices, np.full(9, 0.1, np.float32), kind="cubic_bspline_rocaps"))
        builtin = BuiltinModule(ctx, "cubic_bspline_rocaps", pipeline_options=options)
        _, pipeline, sbt = programs(ctx, options, "__closesthit__triangle", intersection_module=builtin)
        image = render(ctx, pipeline, sbt, gas.handle, gas)
        x, y = pixel_centres()
        centre = (np.abs(x) < 0.5) & (np.abs(y) < 0.05)
        assert (image[..., 0][centre] > 4.85).all() and (image[..., 3][centre] == 0x2509).all()


# --- custom primitives ----------------------------------------------------------------------------------------------


def test_custom_primitives_report_their_own_intersections(ctx):
    spheres = np.zeros((), struct_dtype([("spheres", "float4", 4)]))
    spheres["spheres"][:2] = [[*SPHERES[0], RADII[0]], [*SPHERES[1], RADII[1]]]
    boxes = np.array([[*(c - r), *(c + r)] for c, r in zip(SPHERES, RADII, strict=True)], np.float32)
    options = PipelineOptions(traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS,
                              primitive_type_flags=PrimitiveTypeFlags.CUSTOM)
    gas = GeometryAccel(ctx, CustomInput(boxes))
    _, pipeline, sbt = programs(ctx, options, "__closesthit__custom", intersection="__intersection__sphere",
                                hit_data=spheres)
    image = render(ctx, pipeline, sbt, gas.handle, gas)
    _compare(image, *sphere_reference(SPHERES, RADII))
    hit = image[..., 0] >= 0
    assert (image[..., 3][hit] == 0x2500).all()  # PRIMITIVE_TYPE_CUSTOM
    radius_plus_kind = image[..., 2][hit]
    assert near_any(np.unique(radius_plus_kind), (7.35, 7.4))  # attribute 1 (radius) + hit kind 7


# --- callables ------------------------------------------------------------------------------------------------------


def test_direct_and_continuation_callables(ctx):
    options = PipelineOptions(traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS,
                              primitive_type_flags=PrimitiveTypeFlags.SPHERE)
    module = Module(ctx, SOURCE, pipeline_options=options)
    builtin = BuiltinModule(ctx, "sphere", pipeline_options=options, build_flags=READABLE.build_flags)
    gas = GeometryAccel(ctx, SphereInput(SPHERES, RADII), READABLE)
    raygen = ProgramGroup.raygen(ctx, module, "__raygen__callables")
    miss = ProgramGroup.miss(ctx, module, "__miss__ms")
    hit = ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__sphere", intersection_module=builtin)
    double = ProgramGroup.callables(ctx, module, direct="__direct_callable__double")
    square = ProgramGroup.callables(ctx, module, direct="__direct_callable__square")
    depth = ProgramGroup.callables(ctx, module, continuation="__continuation_callable__depth")
    pipeline = Pipeline(ctx, [raygen, miss, hit, double, square, depth], max_direct_callable_depth=1,
                        max_continuation_callable_depth=1)
    sbt = ShaderBindingTable(ctx, raygen, [miss], [hit], callables=[double, square, depth])
    image = render(ctx, pipeline, sbt, gas.handle, gas)
    columns = np.arange(W, dtype=np.float32)
    assert np.array_equal(image[0, :, 0], 2 * columns) and np.array_equal(image[0, :, 1], columns**2)
    reference, _ = sphere_reference(SPHERES, RADII)
    both = (reference >= 0) == (image[..., 2] >= 0)
    assert both.mean() > 0.99
    inside = (reference >= 0) & (image[..., 2] >= 0)
    assert np.abs(image[..., 2][inside] - reference[inside]).max() < 1e-3


# --- motion blur ----------------------------------------------------------------------------------------------------

QUAD = np.array([[-0.6, -0.3, 0], [-0.2, -0.3, 0], [-0.2, 0.3, 0], [-0.6, -0.3, 0], [-0.2, 0.3, 0], [-0.6, 0.3, 0]],
                np.float32)
SHIFT = 0.8  # the quad moves +x by this over the shutter


def coverage_reference() -> np.ndarray:
    """The fraction of the shutter [0, 1] during which each pixel sees the quad moving +x by SHIFT."""
    x, y = pixel_centres()
    # x is inside [-0.6 + SHIFT t, -0.2 + SHIFT t] for t in [(x + 0.2) / SHIFT, (x + 0.6) / SHIFT]
    start, end = np.clip((x + 0.2) / SHIFT, 0, 1), np.clip((x + 0.6) / SHIFT, 0, 1)
    return np.where(np.abs(y) < 0.3, end - start, 0.0)


def _motion_programs(ctx):
    options = PipelineOptions(uses_motion_blur=True)  # ALLOW_ANY: an IAS over a motion transform over a GAS
    return programs(ctx, options, "__closesthit__triangle")


def _check_blur(image, samples):
    x, y = pixel_centres()
    interior = np.abs(np.abs(y) - 0.3) > 0.03
    error = np.abs(image[..., 1] - coverage_reference())[interior]
    assert error.max() <= 1.0 / samples + 1e-6  # stratified times: within one sample of the time average


def test_a_moving_instance_blurs_as_the_time_average(ctx):
    gas = GeometryAccel(ctx, TriangleInput(QUAD))
    end = np.eye(3, 4)
    end[0, 3] = SHIFT
    transform = MatrixMotionTransform(ctx, gas, [np.eye(3, 4), end])
    ias = InstanceAccel(ctx, [Instance(transform, instance_id=5)])
    _, pipeline, sbt = _motion_programs(ctx)
    samples = 64
    image = render(ctx, pipeline, sbt, ias.handle, ias, samples=samples)
    _check_blur(image, samples)
    still = render(ctx, pipeline, sbt, ias.handle, ias, time=1.0)
    x, y = pixel_centres()
    moved = (x > -0.6 + SHIFT + 0.02) & (x < -0.2 + SHIFT - 0.02) & (np.abs(y) < 0.28)
    assert (still[..., 0][moved] >= 0).all() and (still[..., 1][moved] == 5).all()  # at t = 1, at the end key


def test_an_srt_motion_instance(ctx):
    gas = GeometryAccel(ctx, TriangleInput(QUAD))
    transform = SRTMotionTransform(ctx, gas, [srt_key(), srt_key(translation=(SHIFT, 0, 0))])
    ias = InstanceAccel(ctx, [Instance(transform)])
    _, pipeline, sbt = _motion_programs(ctx)
    _check_blur(render(ctx, pipeline, sbt, ias.handle, ias, samples=64), 64)


def test_a_deforming_mesh_blurs_as_the_time_average(ctx):
    gas = GeometryAccel(ctx, TriangleInput([QUAD, QUAD + np.float32([SHIFT, 0, 0])]), AccelOptions(motion={"keys": 2}))
    _, pipeline, sbt = _motion_programs(ctx)
    _check_blur(render(ctx, pipeline, sbt, gas.handle, gas, samples=64), 64)


def test_vanishing_geometry_is_gone_outside_the_time_range(ctx):
    motion = {"keys": 2, "time_begin": 0.25, "time_end": 0.75, "start_vanish": True, "end_vanish": True}
    gas = GeometryAccel(ctx, TriangleInput([QUAD, QUAD]), AccelOptions(motion=motion))
    _, pipeline, sbt = _motion_programs(ctx)
    x, y = pixel_centres()
    inside = (np.abs(x + 0.4) < 0.15) & (np.abs(y) < 0.25)
    assert (render(ctx, pipeline, sbt, gas.handle, gas, time=0.5)[..., 0][inside] >= 0).all()
    assert (render(ctx, pipeline, sbt, gas.handle, gas, time=0.1)[..., 0][inside] < 0).all()
    assert (render(ctx, pipeline, sbt, gas.handle, gas, time=0.9)[..., 0][inside] < 0).all()


# --- specialization, payload types, parallel compilation ------------------------------------------------------------


def test_a_bound_value_is_the_value_the_program_sees(ctx):
    options = PipelineOptions(launch_params_size=PARAMS.itemsize)
    module = Module(ctx, SOURCE, pipeline_options=options, module_options={"bound_values": bind_params(PARAMS, {"scale": 3.0})})
    raygen = ProgramGroup.raygen(ctx, module, "__raygen__scaled")
    miss = ProgramGroup.miss(ctx, module, "__miss__ms")  # optixLaunch needs a miss record, traced or not
    pipeline = Pipeline(ctx, [raygen, miss])
    image = render(ctx, pipeline, ShaderBindingTable(ctx, raygen, [miss]), 0, scale=3.0, width=8, height=2)
    assert np.array_equal(image[0, :, 0], 3.0 * np.arange(8)) and (image[..., 1] == 3.0).all()


def test_payload_types(ctx):
    s = optixasync._optix.types.PayloadSemantics
    payload = PayloadType((s.TRACE_CALLER_READ | s.CH_WRITE | s.MS_WRITE, s.TRACE_CALLER_READ_WRITE | s.CH_READ_WRITE))
    options = PipelineOptions(num_payload_values=0, traversable_graph_flags=TraversableGraphFlags.ALLOW_SINGLE_GAS,
                              primitive_type_flags=PrimitiveTypeFlags.SPHERE)
    module = Module(ctx, KERNELS / "payload_types.cu", pipeline_options=options,
                    module_options={"payload_types": (payload,)})
    # The built-in module declares the pipeline's payload types too (every module of a hit group names the type).
    builtin = BuiltinModule(ctx, "sphere", pipeline_options=options, module_options={"payload_types": (payload,)})
    gas = GeometryAccel(ctx, SphereInput(SPHERES, RADII))
    raygen = ProgramGroup.raygen(ctx, module, "__raygen__typed", payload_type=payload)
    miss = ProgramGroup.miss(ctx, module, "__miss__typed", payload_type=payload)
    hit = ProgramGroup.hitgroup(ctx, module, closesthit="__closesthit__typed", intersection_module=builtin,
                                payload_type=payload)
    pipeline = Pipeline(ctx, [raygen, miss, hit])
    image = render(ctx, pipeline, ShaderBindingTable(ctx, raygen, [miss], [hit]), gas.handle, gas)
    reference, _ = sphere_reference(SPHERES, RADII)
    inside = (reference >= 0) & (image[..., 0] >= 0)
    assert inside.sum() > 100 and np.abs(image[..., 0][inside] - reference[inside]).max() < 1e-3
    assert (image[..., 1][inside] == 8).all() and (image[..., 1][reference < 0] == 7).mean() > 0.99


def test_parallel_compilation_gives_the_same_pictures(ctx):
    serial = render_triangle(ctx, 48, 48)
    parallel = render_triangle(ctx, 48, 48, compile_threads=4)
    assert np.array_equal(parallel.image, serial.image) and (serial.image[..., 3] >= 0).sum() > 100
    with optixasync.Context(disk_cache=False, warm_up=False) as cold:  # no OptiX cache: the tasks compile
        module = Module(cold, SOURCE, pipeline_options=PipelineOptions(), compile_threads=4)
        assert module.tasks_executed >= 1 and "__raygen__ortho" in module.entries
