"""The path tracer's host side on the CPU: layouts against the kernel, options, emitter table, tonemap, parameters.

The kernel itself is compiled with NVRTC (no GPU needed) and checked for its entry points, for the struct
layouts the host writes, and for things that would slow it down (double precision, local memory).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

# Private on purpose, for checks of the kernel source against the host on the CPU: the generated program and the
# NVRTC options the path tracer compiles with (the integrator applies them only on a GPU), and the layout tables
# (struct name -> dtype, mesh flag bits) that mirror kernels/pathtracer/records.h.
from optixasync.cuda import Context
from optixasync.io import srgb_to_linear, tonemap_srgb
from optixasync.program import compile_ptx
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.render._emitters import LUMINANCE, alias_probabilities, alias_table, build_emitter_table
from optixasync.render._layout import (
    EMITTER_TRIANGLE,
    MATERIAL_RECORD,
    MESH_ALPHA_BLEND,
    MESH_ALPHA_MASK,
    MESH_CULL_BACK,
    MESH_EMISSIVE,
    MESH_LIGHT_SAMPLED,
    MESH_MIRRORED,
    MESH_RECORD,
    MESH_TWO_SIDED,
    NESTED_MEMBERS,
    PATH_PARAMS,
    SCENE_RECORD,
    STRUCT_NAMES,
)
from optixasync.render._params import (
    fill_params,
    launch_plan,
    material_record,
    mesh_flags,
    mesh_records,
    place_records,
    runs_any_hit,
)
from optixasync.render._path import COMPILE_OPTIONS
from optixasync.render._source import pathtracer_source
from optixasync.scene import (
    Camera,
    Material,
    Mesh,
    Scene,
    Texture,
    TextureTransform,
    bsdf_family,
    cornell_box,
    rectangle,
    sphere,
)
from optixasync.scene._bsdf import bsdf_index
from optixasync.scene.bsdfs._plastic_tables import PLASTIC_TABLE_SIZE


def load_reference():
    spec = importlib.util.spec_from_file_location("render_reference", Path(__file__).with_name("reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The output variants a pipeline compiles by default (none, the image) and with the denoiser's inputs.
VARIANTS = (0, 1, 14)
PROGRAM = pathtracer_source(VARIANTS)
SOURCE = PROGRAM.text
OPTIONS = dataclasses.replace(COMPILE_OPTIONS, include_dirs=PROGRAM.include_dirs)
ALIGNMENT = {"PathTracerParams": 8, "SceneRecord": 8, "LightRecord": 8, "MeshRecord": 8, "EmitterTriangle": 16,
             "MaterialRecord": 8, "EnvironmentRecord": 8, "ViewRecord": 4, "ViewBatch": 8, "OutputRecord": 8}


@pytest.fixture(scope="module")
def ptx() -> str:
    return compile_ptx(SOURCE, "pathtracer_program.cu", OPTIONS)


# --- the kernel -----------------------------------------------------------------------------------------------------


def test_struct_layouts_match_the_kernel():
    """Offsets of every field, sizes and alignments of the three structs, as NVRTC lays them out."""
    probes, checks, expected = [], [], []
    for struct, dtype in STRUCT_NAMES.items():
        checks.append(f'static_assert(sizeof({struct}) == {dtype.itemsize}, "size of {struct}");')
        checks.append(f'static_assert(alignof({struct}) == {ALIGNMENT[struct]}, "alignment of {struct}");')
        for name in dtype.names:
            # a null-based member address is an address constant: NVRTC folds it into the initializer
            probes.append(f"(const char*)&(({struct}*)0)->{NESTED_MEMBERS.get(name, name)}")
            expected.append(dtype.fields[name][1])
    source = SOURCE + "\n" + "\n".join(checks) + "\n" + (
        'extern "C" __device__ const char* oa_layout_probe[] = {' + ", ".join(probes) + "};\n")
    text = compile_ptx(source, "pathtracer_layout.cu", OPTIONS)
    match = re.search(r"oa_layout_probe\[(\d+)\]\s*=\s*\{([^}]*)\}", text)
    assert match, "the layout probe is missing from the PTX"
    offsets = [int(v) for v in match.group(2).split(",")]
    assert int(match.group(1)) == len(expected)
    assert offsets == expected
    assert PATH_PARAMS.itemsize == 424 and MESH_RECORD.itemsize == 152 and EMITTER_TRIANGLE.itemsize == 64
    assert SCENE_RECORD.itemsize == 80 and PATH_PARAMS.fields["scene"][1] == 144  # the single camera's part unmoved
    assert PATH_PARAMS.fields["batch"][1] == 224 and PATH_PARAMS.fields["out"][1] == 328


def test_layout_probe_detects_a_mismatch():
    """The check above can fail: a wrong size is a compile error."""
    source = SOURCE + '\nstatic_assert(sizeof(MeshRecord) == 44, "size of MeshRecord");\n'
    with pytest.raises(Exception, match="size of MeshRecord"):
        compile_ptx(source, "pathtracer_bad_layout.cu", OPTIONS)


def test_kernel_entries(ptx):
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    raygens = {f"__raygen__outputs_{v}" for v in VARIANTS}  # one per output set
    assert entries == raygens | {"__closesthit__radiance", "__anyhit__cutout", "__miss__radiance", "__miss__shadow"}
    for raygen in raygens:
        body = ptx.split(f".entry {raygen}(")[1].split(".entry")[0]
        assert body.count("_optix_trace_typed_32") == 2, raygen  # one radiance ray, one shadow ray per bounce
    assert "_optix_get_sbt_data_ptr" not in ptx  # everything comes from the launch parameters


def test_kernel_has_no_double_math_and_no_local_memory(ptx):
    assert not re.search(r"\.f64\b", ptx), "double precision in the path tracer"
    assert ".local" not in ptx and "__local_depot" not in ptx, "local memory (a dynamically indexed array?)"


def test_closest_hit_reports_five_payloads_and_nothing_else(ptx):
    body = ptx.split(".entry __closesthit__radiance")[1].split(".entry")[0]
    assert body.count("_optix_set_payload") == 5
    for call in ("_optix_get_ray_tmax", "_optix_read_primitive_idx", "_optix_read_sbt_gas_idx",
                 "_optix_get_triangle_barycentrics"):
        assert call in body
    assert "ld.global" not in body


# --- options ----------------------------------------------------------------------------------------------------------


def test_render_options_defaults():
    o = RenderOptions()
    assert (o.width, o.height, o.spp, o.samples_per_launch, o.max_depth, o.rr_depth, o.seed) == (
        512, 512, 256, 0, 8, 5, 0)
    assert RenderOptions(width=np.int64(64)).width == 64 and type(RenderOptions(width=np.int64(64)).width) is int


@pytest.mark.parametrize("kwargs, error, match", [
    ({"width": 0}, ValueError, "image size"),
    ({"height": -3}, ValueError, "image size"),
    ({"width": 2**16, "height": 2**15}, ValueError, "2\\*\\*30"),
    ({"spp": 0}, ValueError, "spp"),
    ({"samples_per_launch": -1}, ValueError, "samples_per_launch"),
    ({"max_depth": 0}, ValueError, "max_depth"),
    ({"rr_depth": 0}, ValueError, "rr_depth"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": 2**32}, ValueError, "seed"),
    ({"width": 64.0}, TypeError, "width"),
    ({"spp": True}, TypeError, "spp"),
])
def test_bad_render_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        RenderOptions(**kwargs)


class UntouchableStream:
    """The stand-in context's stream: taking a reference to it is fine, any use of it fails the test."""

    def __getattribute__(self, name):
        raise AssertionError(f"the context's stream was used ({name}) before the input was checked")


class Untouchable(Context):
    """A stand-in open context: any use of it would be GPU work, and fails the test.

    Only asking whether it is open and taking a reference to its stream (which fails on any use) are allowed.
    """

    handle = 0xC0DE  # open
    _ALLOWED = frozenset({"handle", "require_open", "__class__"})

    def __init__(self) -> None:  # no super().__init__(): that would load the driver
        pass

    def __getattribute__(self, name):
        if name in type(self)._ALLOWED:
            return object.__getattribute__(self, name)
        if name == "stream":
            return UntouchableStream()
        raise AssertionError(f"the context was used ({name}) before the input was checked")


@pytest.mark.parametrize("options, error", [
    ({"width": 0}, ValueError),
    ({"max_depth": 0}, ValueError),
    ({"spp": -1}, ValueError),
    ({"widht": 64}, TypeError),
    ("fast", TypeError),
])
def test_bad_options_fail_before_gpu_work(options, error):
    with pytest.raises(error):
        RenderPipeline(Untouchable(), cornell_box(), options)


def test_not_a_context():
    with pytest.raises(TypeError, match=r"ctx must be an optixasync.Context \(or CpuContext\), got object"):
        RenderPipeline(object(), cornell_box())


def test_bad_scenes_fail_before_gpu_work():
    with pytest.raises(ValueError, match="no meshes"):
        RenderPipeline(Untouchable(), Scene([], Camera((0, 0, 1), (0, 0, 0))))
    with pytest.raises(TypeError, match="Scene"):
        RenderPipeline(Untouchable(), [rectangle()])
    flat = np.zeros((3, 3), np.float32)  # an emitter of zero area
    lamp = Mesh(flat, np.array([[0, 1, 2]], np.int32), Material(emission=(1, 1, 1)))
    with pytest.raises(ValueError, match="zero total area"):
        RenderPipeline(Untouchable(), Scene([lamp], Camera((0, 0, 1), (0, 0, 0))))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"outputs": "zbuffer"}, ValueError, "unknown output 'zbuffer'"),
    ({"outputs": ("image", 3)}, TypeError, "output names"),
    ({"integrator": "bidirectional"}, ValueError, "integrator must be one of"),
    ({"stages": [object()]}, TypeError, "Stage objects"),
    ({"outputs": "denoised"}, ValueError, "cannot write 'denoised'"),
    ({"readback": "albedo"}, ValueError, "do not make 'albedo'"),
    ({"frames_in_flight": 0}, ValueError, "frames_in_flight"),
])
def test_bad_pipeline_arguments_fail_before_gpu_work(kwargs, error, match):
    with pytest.raises(error, match=match):
        RenderPipeline(Untouchable(), cornell_box(), **kwargs)


# --- emitter table ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weights", [
    [1.0], [1.0, 1.0], [3.0, 1.0], [0.0, 2.0, 0.0, 1.0], np.random.default_rng(4).exponential(size=1000),
    np.r_[np.ones(50), 1e6],
])
def test_alias_table_reproduces_the_weights(weights):
    weights = np.asarray(weights, np.float64)
    q, alias = alias_table(weights)
    assert q.dtype == np.float32 and alias.dtype == np.uint32
    assert ((q >= 0) & (q <= 1)).all() and (alias < len(weights)).all()
    np.testing.assert_allclose(alias_probabilities(q, alias), weights / weights.sum(), atol=2e-7)
    assert alias_probabilities(q, alias)[weights == 0].max(initial=0) < 1e-7


def test_alias_table_simulated_like_the_kernel():
    """Entry = high 32 bits of r * n, fraction = low 32 bits / 2**32, as in the kernel: frequencies match."""
    weights = np.array([5.0, 1.0, 0.0, 2.0, 8.0])
    q, alias = alias_table(weights)
    r = np.random.default_rng(7).integers(0, 2**32, size=400_000, dtype=np.uint64)
    product = r * np.uint64(len(weights))
    k = (product >> np.uint64(32)).astype(np.int64)
    fraction = (product & np.uint64(0xFFFFFFFF)).astype(np.float64) / 2**32
    chosen = np.where(fraction >= q[k], alias[k], k)
    freq = np.bincount(chosen, minlength=len(weights)) / len(r)
    expected = weights / weights.sum()
    tolerance = 5 * np.sqrt(expected * (1 - expected) / len(r)) + 1e-9  # 5 binomial standard errors
    assert (np.abs(freq - expected) <= tolerance).all(), (freq, expected)
    assert freq[2] == 0.0


def test_alias_table_rejects_bad_weights():
    for bad in ([], [0.0, 0.0], [1.0, -1.0], [1.0, np.nan]):
        with pytest.raises(ValueError):
            alias_table(bad)


def test_cornell_emitter_table():
    scene = cornell_box()
    table = build_emitter_table(scene.meshes)
    light = scene.meshes[7]
    assert len(table) == 2
    np.testing.assert_array_equal(table.offsets, np.zeros(8, np.uint32))
    assert table.total_area == pytest.approx(0.46 * 0.38)
    e = table.entries
    np.testing.assert_allclose(e["pdf"], 1 / (0.46 * 0.38), rtol=1e-6)
    np.testing.assert_allclose(e["area"], 0.46 * 0.38 / 2, rtol=1e-6)
    np.testing.assert_allclose(e["radiance"], [light.material.emission] * 2, rtol=1e-7)
    v0, v1, v2 = light.corners()
    np.testing.assert_allclose(e["p0"], v0, atol=1e-7)
    np.testing.assert_allclose(e["p0"] + e["e1"], v1, atol=1e-7)
    np.testing.assert_allclose(e["p0"] + e["e2"], v2, atol=1e-7)
    n = np.cross(e["e1"], e["e2"])
    assert (n[:, 1] < 0).all()  # the winding of the table keeps the light's front side: down
    np.testing.assert_allclose(alias_probabilities(e["alias_q"], e["alias"]), [0.5, 0.5], atol=1e-7)


def test_emitter_table_reads_the_given_host_copies():
    """A mesh whose arrays live on the device: the table is built from host copies of both arrays."""
    scene = cornell_box()
    light = scene.meshes[7]
    flipped = light.indices[:, ::-1].copy()  # other triangles than the mesh's own: the copies must be the ones read
    vertices = [None] * len(scene.meshes)
    indices = [None] * len(scene.meshes)
    vertices[7], indices[7] = light.vertices + np.float32(1.0), flipped
    table = build_emitter_table(scene.meshes, vertices, indices)
    own = build_emitter_table(scene.meshes)
    np.testing.assert_allclose(table.entries["p0"], light.vertices[flipped[:, 0]] + 1.0, atol=1e-6)
    assert not np.allclose(table.entries["p0"], own.entries["p0"])
    assert table.total_area == pytest.approx(own.total_area)


def test_emitter_table_of_several_meshes():
    lamp = rectangle(np.diag([0.5, 0.5, 1.0, 1.0]), Material(emission=(2, 2, 2)), "lamp")  # area 1
    ball = sphere((0, 3, 0), 0.5, Material(emission=(0, 1, 0)), subdivisions=1, name="ball")
    scene = Scene([rectangle(name="floor"), lamp, rectangle(name="wall"), ball], Camera((0, 0, 5), (0, 0, 0)))
    table = build_emitter_table(scene.meshes)
    assert len(table) == 2 + 80
    np.testing.assert_array_equal(table.offsets, [0, 0, 0, 2])
    total = 1.0 + ball.areas().sum()
    assert table.total_area == pytest.approx(total)
    # Selection by power: area times luminance (the lamp's is 2, the ball's the green weight).
    green = LUMINANCE[1]
    assert green == pytest.approx(0.7152, abs=1e-4)
    power = np.r_[lamp.areas() * 2.0, ball.areas() * green]
    assert table.power == pytest.approx(math.pi * power.sum())
    p = alias_probabilities(table.entries["alias_q"], table.entries["alias"])
    np.testing.assert_allclose(p, power / power.sum(), atol=1e-7)
    # pdf per unit area = probability / area: luminance / total power, the same on every triangle of a mesh
    np.testing.assert_allclose(table.entries["pdf"][:2], 2.0 / power.sum(), rtol=1e-6)
    np.testing.assert_allclose(table.entries["pdf"][2:], green / power.sum(), rtol=1e-6)
    np.testing.assert_allclose(table.selected(0.25)["pdf"], 0.25 * table.entries["pdf"], rtol=1e-6)
    np.testing.assert_allclose(table.entries["radiance"][:2], [[2, 2, 2]] * 2)
    np.testing.assert_allclose(table.entries["radiance"][2:], [[0, 1, 0]] * 80)


# --- tonemap ----------------------------------------------------------------------------------------------------------


def test_tonemap_known_values():
    linear = np.array([[0.0, 1.0, 0.5], [0.0031308, 0.2, 2.0], [np.nan, np.inf, -1.0]], np.float32)[None]
    out = tonemap_srgb(linear)
    assert out.dtype == np.uint8 and out.shape == (1, 3, 3)
    # 0.5 -> 1.055 * 0.5 ** (1 / 2.4) - 0.055 = 0.7354 -> 188; 0.2 -> 0.4845 -> 124; 0.0031308 -> 0.04045 -> 10
    np.testing.assert_array_equal(out[0], [[0, 255, 188], [10, 124, 255], [0, 255, 0]])


def test_tonemap_inverts_srgb_to_linear():
    codes = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(tonemap_srgb(np.repeat(srgb_to_linear(codes)[:, None], 3, axis=1)),
                                  np.repeat(codes[:, None], 3, axis=1))
    with pytest.raises(ValueError, match="last axis"):
        tonemap_srgb(np.zeros((4, 4, 4)))


# --- launch parameters and records ----------------------------------------------------------------------------------


def test_fill_params():
    options = RenderOptions(width=200, height=100, max_depth=6, rr_depth=3, seed=42)
    camera = Camera((0, 0, 3.9), (0, 0, 0))
    params = np.zeros((), PATH_PARAMS)
    scene = np.zeros((), SCENE_RECORD)
    scene["meshes"], scene["lights"], scene["num_lights"], scene["handle"] = 0x3000, 0x4000, 2, 0xABCDEF
    fill_params(params, options=options, camera=camera, accum=0x1000, image=0x2000, scene=scene, sample_offset=12,
                spp=4, outputs={"radiance": 0x5000, "aov_sums": 0x6000})
    assert (int(params["accum"]), int(params["image"])) == (0x1000, 0x2000)
    assert params["scene"] == scene  # the scene record in one piece
    assert (int(params["scene"]["meshes"]), int(params["scene"]["lights"]), int(params["scene"]["num_lights"]),
            int(params["scene"]["handle"])) == (0x3000, 0x4000, 2, 0xABCDEF)
    assert (int(params["radiance"]), int(params["aov_sums"]), int(params["albedo"]), int(params["normal"])) == (
        0x5000, 0x6000, 0, 0)
    t = math.tan(math.radians(39.3077) / 2)
    np.testing.assert_allclose(params["eye"], [0, 0, 3.9], rtol=1e-7)
    np.testing.assert_allclose(params["cam_u"], [2 * t, 0, 0], rtol=1e-6, atol=1e-7)  # twice as wide as high
    np.testing.assert_allclose(params["cam_v"], [0, t, 0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(params["cam_w"], [0, 0, -1])
    assert (int(params["width"]), int(params["height"]), int(params["sample_offset"]), int(params["spp"])) == (
        200, 100, 12, 4)
    assert (int(params["accumulate"]), int(params["seed"]), int(params["max_depth"]), int(params["rr_depth"])) == (
        1, 42, 6, 3)
    assert float(params["inv_total"]) == np.float32(1 / 16)
    assert int(params["orthographic"]) == 0 and float(params["ray_length"]) == np.float32(1e16)  # the old tmax
    fill_params(params, options=options, camera=camera, accum=1, scene=scene, sample_offset=0, spp=8)
    assert int(params["accumulate"]) == 0 and int(params["image"]) == 0 and int(params["radiance"]) == 0


def test_fill_params_of_an_orthographic_camera():
    """The eye moves onto the near plane, U and V are the half extents, camera rays run zfar - znear."""
    options = RenderOptions(width=200, height=100)
    camera = Camera.orthographic_at((1, 2, 10), (1, 2, 0), xmag=3.0, ymag=1.5, znear=2.0, zfar=7.0)
    params = np.zeros((), PATH_PARAMS)
    fill_params(params, options=options, camera=camera, accum=1, scene=np.zeros((), SCENE_RECORD), sample_offset=0,
                spp=1)
    assert int(params["orthographic"]) == 1 and float(params["ray_length"]) == 5.0
    np.testing.assert_allclose(params["eye"], [1, 2, 8])
    np.testing.assert_allclose(params["cam_u"], [3, 0, 0], atol=1e-7)
    np.testing.assert_allclose(params["cam_v"], [0, 1.5, 0], atol=1e-7)
    np.testing.assert_allclose(params["cam_w"], [0, 0, -1])
    # a plain (eye, U, V, W) basis is a pinhole's
    fill_params(params, options=options, camera=None, basis=tuple(camera.basis(200, 100)), accum=1,
                scene=np.zeros((), SCENE_RECORD), sample_offset=0, spp=1)
    assert int(params["orthographic"]) == 0


def test_launch_plan():
    assert launch_plan(10, 4) == [(0, 4), (4, 4), (8, 2)]
    assert launch_plan(16, 16) == [(0, 16)]
    assert launch_plan(3, 1) == [(0, 1), (1, 1), (2, 1)]


def test_mesh_records():
    scene = cornell_box()
    scene.meshes[0] = rectangle(np.eye(4), Material((0.1, 0.2, 0.3), two_sided=True), "floor")
    table = build_emitter_table(scene.meshes)
    attributes = [(3000 + k, 0, 0, 5000 + k) for k in range(8)]
    records = mesh_records(scene, [1000 + k for k in range(8)], [2000 + k for k in range(8)], table.offsets,
                           [4000 + k for k in range(8)], attributes)
    assert records.dtype == MESH_RECORD
    assert records["vertices"].tolist() == [1000 + k for k in range(8)]
    assert records["indices"].tolist() == [2000 + k for k in range(8)]
    assert records["material"].tolist() == [4000 + k for k in range(8)]
    assert records["normals"].tolist() == [3000 + k for k in range(8)]
    assert records["uvs"].tolist() == [0] * 8
    assert records["colors"].tolist() == [5000 + k for k in range(8)]
    assert records["flags"].tolist() == [MESH_TWO_SIDED] + [0] * 6 + [MESH_EMISSIVE | MESH_LIGHT_SAMPLED]
    assert records["emitter_offset"].tolist() == [0] * 8


def test_mesh_flags_of_cut_out_glass_and_textured_emitters():
    texture = Texture(np.zeros((2, 2, 4), np.uint8))
    uvs = np.zeros((4, 2), np.float32)
    glowing = Material(emission=(1, 1, 1), emission_texture=texture)
    leaf = Material(reflectance_texture=texture, alpha_mode="mask")
    veil = Material(alpha_mode="blend")
    glass = Material(bsdf="dielectric")
    flags = [mesh_flags(Mesh(rectangle().vertices, rectangle().indices, m, uvs=uvs))
             for m in (glowing, leaf, veil, glass)]
    assert flags == [MESH_EMISSIVE, MESH_ALPHA_MASK, MESH_ALPHA_BLEND, MESH_TWO_SIDED]  # glass: both sides


def test_the_three_sidedness_modes_and_who_runs_the_any_hit_program():
    square = rectangle()
    cases = {"two_sided": Material(two_sided=True), "black_back": Material(),
             "cull_back": Material(cull_back=True)}
    flags = {}
    for mode, material in cases.items():
        assert material.sidedness == mode
        mesh = Mesh(square.vertices, square.indices, material)
        flags[mode] = (mesh_flags(mesh), runs_any_hit(mesh))
    assert flags == {"two_sided": (MESH_TWO_SIDED, False), "black_back": (0, False),
                     "cull_back": (MESH_CULL_BACK, True)}  # the others keep any-hit off: the same trace as before
    assert Material(bsdf="dielectric").sidedness == "two_sided"
    assert runs_any_hit(Mesh(square.vertices, square.indices, Material(alpha_mode="mask")))
    for bad, message in ((dict(two_sided=True, cull_back=True), "has no back to cull"),
                         (dict(bsdf="dielectric", cull_back=True), "has no back to cull")):
        with pytest.raises(ValueError, match=message):
            Material(**bad)
    with pytest.raises(TypeError, match="cull_back must be a bool"):
        Material(cull_back=1)


def test_placed_records_follow_their_transforms():
    """place_records: an instance's to_world, its inverse transpose and its mirror bit, as mesh_records sets them."""
    base = rectangle()
    turn = np.array([[0, -1, 0, 1.0], [1, 0, 0, 2.0], [0, 0, 1, 3.0]])
    meshes = [Mesh(base.vertices, base.indices, Material(), transform=np.eye(3, 4)), base,
              Mesh(base.vertices, base.indices, Material(), transform=np.eye(3, 4))]
    scene = Scene(meshes, Camera((0, 0, 5), (0, 0, 0)))
    records = mesh_records(scene, [0] * 3, [0] * 3, np.zeros(3, np.uint32), [0] * 3)
    mirror = np.diag([-2.0, 1.0, 1.0, 0.0])[:3]
    placed = place_records(records, np.stack([turn, np.eye(3, 4) * 7, mirror]))
    expected = mesh_records(Scene([Mesh(base.vertices, base.indices, Material(), transform=turn), base,
                                   Mesh(base.vertices, base.indices, Material(), transform=mirror)],
                                  scene.camera), [0] * 3, [0] * 3, np.zeros(3, np.uint32), [0] * 3)
    for field in ("to_world", "normal_to_world", "flags"):
        np.testing.assert_allclose(placed[field], expected[field], rtol=1e-6, err_msg=field)
    assert placed["flags"][2] & MESH_MIRRORED and not records["flags"][2] & MESH_MIRRORED
    np.testing.assert_array_equal(placed[1], records[1])  # in world space: not placed


def test_material_records():
    texture = Texture(np.zeros((2, 2, 3), np.uint8), transform=TextureTransform(offset=(0.5, 0.25), scale=(2, 3)))
    gold = Material(bsdf="conductor", alpha=0.2, eta=(0.2, 0.4, 1.4), k=(3.5, 2.4, 1.8), reflectance=1.0,
                    ext_ior=1.25, reflectance_texture=texture)
    record = material_record(gold, lambda t: 77 if t is texture else 0)
    assert record.dtype == MATERIAL_RECORD
    assert int(record["type"]) == bsdf_index("conductor") == 1  # the registry's order is the kernel's index
    # the conductor's params: eta and k relative to the exterior, then alpha (bsdf_conductor.h)
    np.testing.assert_allclose(record["params"][:3], np.array([0.2, 0.4, 1.4]) / 1.25, rtol=1e-6)
    np.testing.assert_allclose(record["params"][3:6], np.array([3.5, 2.4, 1.8]) / 1.25, rtol=1e-6)
    assert float(record["params"][6]) == pytest.approx(0.2) and not record["params"][7:].any()
    assert int(record["color_texture"]) == 77 and int(record["normal_texture"]) == 0
    np.testing.assert_allclose(record["color_texture_uv"], [2, 0, 0.5, 0, 3, 0.25], atol=1e-7)
    np.testing.assert_allclose(record["normal_texture_uv"], [1, 0, 0, 0, 1, 0])  # identity where empty
    gltf = material_record(Material(bsdf="metallic_roughness", roughness=0.5, metallic=0.25))
    # glTF's roughness travels as is: the kernel multiplies the texture's green in, then squares it
    assert float(gltf["params"][0]) == 0.5 and float(gltf["params"][1]) == 0.25
    glass = material_record(Material(bsdf="dielectric", int_ior=1.5, ext_ior=1.2))
    assert float(glass["params"][0]) == pytest.approx(1.25)
    plastic = Material(bsdf="plastic", alpha=0.1, int_ior=1.49, reflectance=0.5)
    record = material_record(plastic, table=1234)
    assert int(record["table"]) == 1234 and 0.0 < float(record["params"][2]) < 1.0
    table = bsdf_family("plastic").table(plastic)
    assert table.dtype == np.float32 and table.shape == (PLASTIC_TABLE_SIZE,)
    assert bsdf_family("diffuse").table(Material()) is None


# --- the numpy reference used by the GPU tests ---------------------------------------------------------------------


def test_reference_direct_lighting_matches_the_closed_form():
    """Under the centre of a parallel rectangular light: four corner form factors, by the closed form."""
    ref = load_reference()
    a, b, h, le = 0.46, 0.38, 1.99, 3.0
    light = rectangle(np.array([[a / 2, 0, 0, 0], [0, 0, -b / 2, h], [0, b / 2, 0, 0], [0, 0, 0, 1]]),
                      Material(emission=(le, le, le)), "light")
    scene = Scene([light], Camera((0, 0, 5), (0, 0, 0)))
    rho = np.array([0.5, 0.25, 1.0])
    got = ref.direct_lighting(scene, [[0, 0, 0]], [[0, 1, 0]], rho, n=24)[0]
    irradiance = 4 * ref.irradiance_parallel_rectangle(a / 2, b / 2, h, le)
    np.testing.assert_allclose(got, rho / np.pi * irradiance, rtol=2e-4)
    # seen from above the light's back, nothing arrives (one-sided emission)
    assert (ref.direct_lighting(scene, [[0, 2 * h, 0]], [[0, -1, 0]], rho, n=4) == 0).all()


def test_reference_visibility_and_casting():
    ref = load_reference()
    scene = cornell_box()
    tris = ref.scene_triangles(scene)
    # straight down from the camera's height onto the floor: hits the floor (mesh 0) at t = 1
    t, k = ref.cast(tris, [[0.0, 0.0, 0.9]], [[0.0, -1.0, 0.0]])
    assert t[0] == pytest.approx(1.0) and tris["mesh"][k[0]] == 0
    # a floor point under the tall box sees no light; one in the open does
    blocked = ref.segment_blocked(tris, [[-0.33, -0.999, -0.28], [-0.6, -0.999, 0.8]], [[0, 0.99, 0.01]] * 2)
    assert blocked.tolist() == [True, False]
    lit = ref.direct_lighting(scene, [[-0.33, -1.0, -0.28], [-0.6, -1.0, 0.8]], [[0, 1, 0]] * 2, (1, 1, 1), n=4)
    assert (lit[0] == 0).all() and (lit[1] > 0).all()


def test_placement_matrices_are_checked_before_any_gpu_work():
    from optixasync.render._device_scene import placement_matrices

    good = np.tile(np.eye(3, 4), (2, 1, 1))
    np.testing.assert_array_equal(placement_matrices(np.tile(np.eye(4), (2, 1, 1)), 2), good)  # 4x4 rows dropped
    for bad, match in ((np.zeros((3, 3, 4)), r"must be \(2, 3, 4\)"), (good * np.nan, "must be finite"),
                       (np.stack([np.eye(3, 4), np.zeros((3, 4))]), "transform of mesh 1 is not invertible"),
                       ("nope", "must be numbers")):
        with pytest.raises(ValueError, match=match):
            placement_matrices(bad, 2)


def test_a_device_placement_rewrites_what_it_uploaded_in_place():
    from types import SimpleNamespace

    from optixasync.render._placement import DevicePlacement

    copies = []

    class Ctx:
        def upload(self, array, stream):
            return SimpleNamespace(data=SimpleNamespace(ptr=0x1000 + 0x100 * len(copies)), nbytes=array.nbytes,
                                   host=array.copy())

        def upload_into(self, target, array, stream):
            copies.append((target, bytes(array), stream))

    placement = DevicePlacement.__new__(DevicePlacement)
    placement.ctx, placement.stream, placement._kept, placement._uploads = Ctx(), "setup", [], {}
    address = placement.upload(np.arange(4, dtype=np.uint32), "records")
    placement.rewrite(address, np.arange(4, 8, dtype=np.uint32), "frame")
    ((target, data, stream),) = copies
    assert target.data.ptr == address and stream == "frame"
    assert data == np.arange(4, 8, dtype=np.uint32).tobytes()
    with pytest.raises(ValueError, match="no table was uploaded at 0x99"):
        placement.rewrite(0x99, np.zeros(4, np.uint32), "frame")
