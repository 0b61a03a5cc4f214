"""Spheres and curves on the host side: the scene API's checks, the shape table and records, the layouts against
the kernel (NVRTC), the program variants, and the structures and SBT the device scene asks for (a stand-in
context). No GPU."""

from __future__ import annotations

import dataclasses
import importlib.util
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from optixasync.errors import OptixAsyncError, ShapeError
from optixasync.program import PipelineOptions, compile_ptx
from optixasync.render import check_scene
from optixasync.render._layout import MESH_EMISSIVE, MESH_TWO_SIDED, SCENE_RECORD
from optixasync.render._path import COMPILE_OPTIONS, INSTANCED_PIPELINE_OPTIONS
from optixasync.render._primitives import (
    SHAPE_KINDS,
    SHAPE_MATERIAL,
    SHAPE_ONE_RADIUS,
    SHAPE_RECORD,
    SHAPE_STRUCT_NAMES,
)
from optixasync.render._shape_accel import hit_kinds, shape_instances, shape_pipeline_options
from optixasync.render._source import pathtracer_source
from optixasync.render._tables import SceneTables, scene_radius
from optixasync.scene import (
    Camera,
    Curves,
    Environment,
    Material,
    Mesh,
    Scene,
    Spheres,
    Texture,
    cornell_box,
    rectangle,
    strand_segments,
)

HERE = Path(__file__).resolve().parent
VARIANTS = (0, 1, 14, 15)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOST = _load(HERE / "host_build.py", "shapes_host_build")


def program(shapes: bool):
    source = pathtracer_source(VARIANTS, shapes=shapes)
    return source, dataclasses.replace(COMPILE_OPTIONS, include_dirs=source.include_dirs)


@pytest.fixture(scope="module")
def shapes_ptx() -> str:
    source, options = program(True)
    return compile_ptx(source.text, "pathtracer_shapes.cu", options)


def cloud(n: int = 5, **options) -> Spheres:
    rng = np.random.default_rng(n)
    return Spheres(rng.uniform(-1, 1, (n, 3)), rng.uniform(0.05, 0.1, n), **options)


def hair(kind: str = "cubic_bspline", **options) -> Curves:
    strands = [np.stack([np.full(6, x), np.linspace(0, 1, 6), np.zeros(6)], axis=1) for x in (-0.5, 0.0, 0.5)]
    return Curves.from_strands(strands, 0.01, kind, **options)


# --- the kernel -------------------------------------------------------------------------------------------------------


def test_shape_layouts_match_the_kernel():
    source, options = program(True)
    probes, checks, expected = [], [], []
    for struct, dtype in SHAPE_STRUCT_NAMES.items():
        checks.append(f'static_assert(sizeof({struct}) == {dtype.itemsize}, "size of {struct}");')
        checks.append(f'static_assert(alignof({struct}) == 8, "alignment of {struct}");')
        for name in dtype.names:
            probes.append(f"(const char*)&(({struct}*)0)->{name}")
            expected.append(dtype.fields[name][1])
    for name in ("num_shapes", "shapes"):
        probes.append(f"(const char*)&((SceneRecord*)0)->{name}")
        expected.append(SCENE_RECORD.fields[name][1])
    text = compile_ptx(source.text + "\n#include \"pathtracer/shapes.h\"\n" + "\n".join(checks) + "\n"
                       'extern "C" __device__ const char* oa_layout_probe[] = {' + ", ".join(probes) + "};\n",
                       "shapes_layout.cu", options)
    match = re.search(r"oa_layout_probe\[(\d+)\]\s*=\s*\{([^}]*)\}", text)
    assert match and [int(v) for v in match.group(2).split(",")] == expected
    assert SHAPE_RECORD.itemsize == 80 and SHAPE_MATERIAL.itemsize == 16


def test_shape_layout_probe_can_fail():
    source, options = program(True)
    with pytest.raises(Exception, match="size of ShapeRecord"):
        compile_ptx(source.text + '\nstatic_assert(sizeof(ShapeRecord) == 60, "size of ShapeRecord");\n',
                    "shapes_bad_layout.cu", options)


def test_the_kinds_match_the_kernel_enum():
    text = (Path(__file__).parents[2] / "kernels" / "pathtracer" / "shapes.h").read_text()
    names = {"sphere": "SPHERES", "linear": "LINEAR", "quadratic_bspline": "QUADRATIC_BSPLINE",
             "cubic_bspline": "CUBIC_BSPLINE", "catmull_rom": "CATMULL_ROM", "bezier": "BEZIER", "custom": "CUSTOM"}
    for kind, value in SHAPE_KINDS.items():
        assert re.search(rf"SHAPE_{names[kind]} = {value}u", text), kind
    assert re.search(rf"SHAPE_ONE_RADIUS = 1u << {SHAPE_ONE_RADIUS.bit_length() - 1}", text)


def test_the_shapes_program_has_the_shape_closest_hits(shapes_ptx):
    entries = set(re.findall(r"\.entry\s+(\w+)", shapes_ptx))
    assert {"__closesthit__sphere", "__closesthit__curve", "__closesthit__radiance"} <= entries
    assert {f"__raygen__outputs_{v}" for v in VARIANTS} <= entries
    sphere = shapes_ptx.split(".entry __closesthit__sphere")[1].split(".entry")[0]
    curve = shapes_ptx.split(".entry __closesthit__curve")[1].split(".entry")[0]
    assert sphere.count("_optix_set_payload") == 3 and "_optix_read_instance_id" in sphere
    assert curve.count("_optix_set_payload") == 4 and "_optix_get_curve_parameter" in curve
    assert not re.search(r"\.f64\b", shapes_ptx), "double precision in the path tracer"
    assert ".local" not in shapes_ptx and "__local_depot" not in shapes_ptx, "local memory"


def test_a_scene_of_meshes_compiles_the_program_without_shapes():
    plain, shapes = pathtracer_source(VARIANTS), pathtracer_source(VARIANTS, shapes=True)
    assert "OA_SHAPES" not in plain.text and "#define OA_SHAPES 1" in shapes.text
    assert shapes.text.replace("#define OA_SHAPES 1  // the scene has spheres or curves\n", "") == plain.text


def test_the_pipeline_intersects_the_scene_kinds():
    options = shape_pipeline_options(INSTANCED_PIPELINE_OPTIONS, ["sphere", "cubic_bspline", "linear"])
    flags = int(options.primitive_type_flags)
    from optixasync import PrimitiveTypeFlags as F

    assert flags == int(F.TRIANGLE | F.SPHERE | F.ROUND_CUBIC_BSPLINE | F.ROUND_LINEAR)
    assert options.num_payload_values == 5 and options.traversable_graph_flags == \
        INSTANCED_PIPELINE_OPTIONS.traversable_graph_flags
    assert isinstance(options, PipelineOptions)


# --- the scene API ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make, match", [
    (lambda: Spheres(np.zeros((3, 3)), [0.1, -1.0, 0.2]), "radii must be finite and >= 0: entry 1 is -1.0"),
    (lambda: Spheres(np.zeros((3, 3)), [0.1, np.nan, 0.2]), "entry 1 is nan"),
    (lambda: Spheres(np.zeros((2, 3)), float("nan")), "finite and >= 0, got nan"),
    (lambda: Spheres(np.zeros((2, 3)), -0.5), "finite and >= 0, got -0.5"),
    (lambda: Spheres(np.zeros((2, 3)), np.ones(3)), r"shape \(2,\)"),
    (lambda: Spheres(np.array([[0, 0, np.inf]]), 0.1), "NaN or Inf"),
    (lambda: Spheres(np.zeros((0, 3)), 0.1), "centers is empty"),
    (lambda: Spheres(np.zeros((2, 2)), 0.1), r"\(N, 3\)"),
    (lambda: Spheres(np.zeros((2, 3)), 0.1, colors=np.ones((2, 4))), r"colors must have shape \(2, 3\)"),
    (lambda: Spheres(np.zeros((2, 3)), 0.1, colors=-np.ones((2, 3))), "colors must be finite and >= 0"),
    (lambda: Spheres(np.zeros((2, 3)), 0.1, material=[Material(), Material()]), "no material_ids"),
    (lambda: Spheres(np.zeros((2, 3)), 0.1, material=[Material()], material_ids=[0, 1]), "material_ids span"),
    (lambda: Spheres(np.zeros((2, 3)), 0.1, material=Material(opacity=0.5, alpha_mode="blend")), "opaque"),
    (lambda: Curves(np.zeros((4, 3)), 0.1, material=Material(cull_back=True)), "cull_back culls mesh triangles"),
    (lambda: Spheres(np.zeros((2, 3)), 0.1, material=[]), "empty sequence of materials"),
    (lambda: Curves(np.zeros((3, 3)), 0.1), "too few for a 'cubic_bspline' segment, which reads 4"),
    (lambda: Curves(np.zeros((1, 3)), 0.1, kind="linear"), "reads 2"),
    (lambda: Curves(np.zeros((5, 3)), 0.1, segments=np.array([0, 2])), "last segment may start at 1"),
    (lambda: Curves(np.zeros((5, 3)), 0.1, segments=np.array([-1, 0])), r"span \[-1, 0\]"),
    (lambda: Curves(np.zeros((5, 3)), 0.1, kind="flat_quadratic_bspline"), "round kinds"),
    (lambda: Curves(np.zeros((5, 3)), 0.1, kind="cubic_bspline_rocaps"), "round kinds"),
    (lambda: Curves(np.zeros((5, 3)), [0.1, 0.1, np.nan, 0.1, 0.1]), "entry 2 is nan"),
    (lambda: Curves(np.zeros((5, 3)), 0.1, material_ids=[0, 0, 0]), "material_ids must be integers of shape"),
    (lambda: Curves.from_strands([np.zeros((4, 3)), np.zeros((2, 3))], 0.1), "strand 1 has 2 control point"),
    (lambda: Curves.from_strands([np.zeros((6, 3))], 0.1, "bezier"), "3 k \\+ 1"),
    (lambda: Curves.from_strands([np.zeros((4, 3))], [np.ones(3)]), "one entry per control point"),
    (lambda: Curves.from_strands([], 0.1), "at least one strand"),
])
def test_bad_shapes_are_refused_on_the_host(make, match):
    with pytest.raises(ShapeError, match=match) as caught:
        make()
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, OptixAsyncError)
    assert str(pickle.loads(pickle.dumps(caught.value))) == str(caught.value)


def test_shape_type_errors():
    with pytest.raises(TypeError, match="material must be a Material"):
        Spheres(np.zeros((2, 3)), 0.1, material="red")
    with pytest.raises(TypeError, match="must be one of Spheres, Curves, CustomPrimitives, got Mesh"):
        Scene([], shapes=[rectangle()])
    with pytest.raises(TypeError, match="expected a Mesh, Spheres, Curves or CustomPrimitives"):
        Scene().add("a ball")


def test_normal_maps_are_for_meshes():
    normal_map = Texture(np.full((2, 2, 3), 128, np.uint8), srgb=False)
    with pytest.raises(ShapeError, match="normal map"):
        Spheres(np.zeros((1, 3)), 0.1, material=Material(normal_texture=normal_map))


def test_strand_segments():
    assert strand_segments([4, 5], "cubic_bspline").tolist() == [0, 4, 5]
    assert strand_segments([3, 2], "linear").tolist() == [0, 1, 3]
    assert strand_segments([7, 4], "bezier").tolist() == [0, 3, 7]
    curves = hair("catmull_rom")
    assert curves.num_segments == 9 and curves.num_points == 18 and curves.segments.dtype == np.uint32


def test_shapes_in_a_scene():
    scene = Scene([rectangle()])
    balls = scene.add(cloud())
    strands = scene.add(hair())
    assert scene.shapes == [balls, strands] and len(scene.meshes) == 1
    assert balls.num_primitives == 5 and strands.num_primitives == 9
    assert "5 spheres" in repr(balls) and "9 segments" in repr(strands)
    assert not balls.on_device and not strands.on_device


def test_check_scene_with_shapes():
    lit = Environment(radiance=(1.0, 1.0, 1.0))
    assert check_scene(Scene([], shapes=[cloud()], environment=lit))
    assert check_scene(Scene([], shapes=[cloud(material=Material((0, 0, 0), (1, 1, 1)))]))  # an emissive shape
    with pytest.raises(ValueError, match="no meshes and no shapes"):
        check_scene(Scene())
    with pytest.raises(ValueError, match="no light"):
        check_scene(Scene([], shapes=[cloud()]))
    dynamic = Mesh(np.eye(3, dtype=np.float32), np.array([[0, 1, 2]], np.int32), dynamic=True)
    with pytest.raises(ValueError, match="dynamic meshes and shapes"):
        check_scene(Scene([dynamic], shapes=[cloud()], environment=lit))
    balls = cloud()
    scene = Scene([], shapes=[balls], environment=lit)
    balls.material = Material(opacity=0.5, alpha_mode="mask")  # replaced after the shape was made
    with pytest.raises(ShapeError, match="opaque"):
        check_scene(scene)


# --- the tables -------------------------------------------------------------------------------------------------------


def test_the_shape_table_groups_by_kind_and_fills_the_records():
    red, glow = Material((0.8, 0.1, 0.1), two_sided=True), Material((0, 0, 0), (2, 2, 2))
    first, second = cloud(3), cloud(4, colors=np.full((4, 3), 0.5), material=[red, glow], material_ids=[0, 1, 1, 0])
    strands, lines = hair(material=red), hair("linear")
    single = Spheres(np.zeros((2, 3)), 0.25)
    scene = Scene([cornell_box().meshes[0]], shapes=[strands, first, lines, second, single],
                  environment=Environment(radiance=(1, 1, 1)))
    tables = SceneTables(scene, HOST.HostPlacement())
    table = tables.shapes
    assert table.shapes == [first, second, single, lines, strands]  # spheres, then the curve kinds in order
    assert table.groups == [("sphere", 0, 3), ("linear", 3, 1), ("cubic_bspline", 4, 1)]
    records = np.frombuffer(np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * (5 * SHAPE_RECORD.itemsize))
                                                  .from_address(table.pointer)), SHAPE_RECORD)
    assert records["kind"].tolist() == [0, 0, 0, SHAPE_KINDS["linear"], SHAPE_KINDS["cubic_bspline"]]
    assert records["count"].tolist() == [3, 4, 2, 15, 9]
    assert records["flags"].tolist() == [0, 0, SHAPE_ONE_RADIUS, 0, 0]
    assert records["num_materials"].tolist() == [1, 2, 1, 1, 1]
    assert records[1]["colors"] != 0 and records[1]["material_ids"] != 0 and records[0]["colors"] == 0
    assert records[3]["indices"] != 0 and records[0]["indices"] == 0
    materials = np.frombuffer(np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * (2 * SHAPE_MATERIAL.itemsize))
                                                    .from_address(int(records[1]["materials"]))), SHAPE_MATERIAL)
    assert materials["flags"].tolist() == [MESH_TWO_SIDED, MESH_EMISSIVE]
    assert materials["material"].tolist() == [tables.materials.pointer(red), tables.materials.pointer(glow)]
    assert tables.materials.materials[0] is scene.meshes[0].material  # the meshes' materials come first
    assert tables.record["num_shapes"] == 5 and tables.record["shapes"] == table.pointer
    assert tables.record["instanced"] == 1  # shapes need an instance structure
    assert table.radii[2] == 0.25 and table.radii[3].shape == (18,)  # a curve input takes a radius per point
    assert hit_kinds(True, 1, table) == ("triangle", "sphere", "sphere", "sphere", "linear", "cubic_bspline")
    assert hit_kinds(False, 3, table) == ("triangle",) * 3


def test_a_mesh_scene_has_no_shape_table():
    tables = SceneTables(cornell_box(), HOST.HostPlacement())
    assert len(tables.shapes) == 0 and tables.shapes.pointer == 0 and tables.record["num_shapes"] == 0
    assert tables.record["instanced"] == 0


def test_the_scene_radius_counts_the_shapes():
    balls = Spheres(np.array([[10.0, 0.0, 0.0], [-10.0, 0.0, 0.0]]), 1.0)
    assert scene_radius(Scene([], shapes=[balls])) == pytest.approx(np.linalg.norm([22.0, 2.0, 2.0]) / 2)
    assert scene_radius(Scene([rectangle()])) == pytest.approx(np.sqrt(8.0) / 2)


# --- the structures (a stand-in context) ------------------------------------------------------------------------------


@pytest.fixture
def fake_ctx(monkeypatch):
    fake = _load(HERE.parent / "accel" / "fake_device.py", "shapes_fake_device")
    fake.install(monkeypatch)
    return fake.FakeContext()


def test_one_gas_per_kind_and_an_instance_each(fake_ctx):
    from optixasync._optix import types as t

    scene = Scene([], shapes=[hair(), cloud(3), hair("linear"), cloud(4)])
    table = SceneTables(scene, HOST.HostPlacement()).shapes
    structures, instances = shape_instances(fake_ctx, table, 1, fake_ctx.stream)
    assert [g.kind for g in structures] == ["sphere", "linear", "cubic_bspline"]
    assert [(i.instance_id, i.sbt_offset) for i in instances] == [(0, 1), (2, 3), (3, 4)]
    assert all(np.array_equal(i.transform, np.eye(3, 4)) for i in instances)
    builds = fake_ctx.api.builds
    assert [len(b["inputs"]) for b in builds] == [2, 1, 1]  # each shape one build input
    assert [b["inputs"][0].type for b in builds] == [t.BuildInputType.SPHERES, t.BuildInputType.CURVES,
                                                     t.BuildInputType.CURVES]
    spheres = builds[0]["inputs"][1].sphereArray
    assert spheres.numVertices == 4 and spheres.singleRadius == 0
    assert np.array_equal(fake_ctx.uploaded[spheres.vertexBuffers[0]], table.points[1])
    cubic = builds[2]["inputs"][0].curveArray
    assert cubic.curveType == t.PrimitiveType.ROUND_CUBIC_BSPLINE and cubic.numPrimitives == 9
    assert np.array_equal(fake_ctx.uploaded[cubic.indexBuffer], table.indices[3])


# --- the Mitsuba twin (the dictionary; rendering it needs Mitsuba, see test_shapes_gpu.py) --------------------------


def test_spheres_become_mitsuba_sphere_shapes():
    from optixasync.testing._mitsuba import mitsuba_bsdf
    from optixasync.testing._mitsuba_shapes import mitsuba_shapes

    red, glow = Material((0.8, 0.2, 0.2)), Material((0, 0, 0), (3, 3, 3), name="glow")
    balls = Spheres(np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]), np.array([0.5, 0.25], np.float32),
                    np.array([[1.0, 0.5, 0.5], [1.0, 1.0, 1.0]]), [red, glow], [0, 1])
    shapes = mitsuba_shapes([balls], None, mitsuba_bsdf)  # plain colours need no Mitsuba module
    first, second = shapes["spheres_000_000000"], shapes["spheres_000_000001"]
    assert first["type"] == "sphere" and first["center"] == [0.0, 0.0, 0.0] and first["radius"] == 0.5
    assert first["bsdf"] == {"type": "diffuse", "reflectance": {"type": "rgb", "value": [0.8, 0.1, 0.1]}}
    assert "emitter" not in first and second["emitter"]["radiance"]["value"] == [3.0, 3.0, 3.0]
    assert second["center"] == [1.0, 2.0, 3.0] and second["radius"] == 0.25
    with pytest.raises(ValueError, match="curves have no exact Mitsuba twin"):
        mitsuba_shapes([hair()], None, mitsuba_bsdf)


# --- custom primitives ------------------------------------------------------------------------------------------------


def test_the_custom_program_has_its_intersection_program():
    from optixasync.scene import CustomPrimitives

    source = pathtracer_source(VARIANTS, custom=True, motion=True)
    assert "#define OA_SHAPES 1" in source.text and "#define OA_CUSTOM 1" in source.text
    assert "DiskPrimitive::intersect(data, origin, direction, tmin, tmax, t)" in source.text
    options = dataclasses.replace(COMPILE_OPTIONS, include_dirs=source.include_dirs)
    ptx = compile_ptx(source.text, "pathtracer_custom.cu", options)
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    assert {"__intersection__custom", "__closesthit__custom", "__closesthit__sphere"} <= entries
    body = ptx.split(".entry __intersection__custom")[1].split(".entry")[0]
    assert "_optix_report_intersection_0" in body and "_optix_get_object_ray_origin_x" in body
    assert not re.search(r"\.f64\b", ptx) and ".local" not in ptx
    disks = CustomPrimitives("disk", [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5]])
    from optixasync.testing._mitsuba import mitsuba_bsdf
    from optixasync.testing._mitsuba_shapes import mitsuba_shapes

    with pytest.raises(ValueError, match="custom primitives have no Mitsuba twin"):
        mitsuba_shapes([disks], None, mitsuba_bsdf)


def test_custom_shapes_get_a_gas_of_boxes_and_a_record_of_their_type(fake_ctx):
    from optixasync._optix import types as t
    from optixasync.render._primitives import SHAPE_KINDS
    from optixasync.scene import CustomPrimitives

    disks = CustomPrimitives("disk", [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5], [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.25]])
    scene = Scene([], shapes=[disks, cloud(2)])
    tables = SceneTables(scene, HOST.HostPlacement())
    table = tables.shapes
    assert table.groups == [("sphere", 0, 1), ("custom", 1, 1)]
    assert hit_kinds(True, 0, table) == ("triangle", "sphere", "custom")
    raw = (np.ctypeslib.ctypes.c_uint8 * (2 * SHAPE_RECORD.itemsize)).from_address(table.pointer)
    record = np.frombuffer(np.ctypeslib.as_array(raw), SHAPE_RECORD)[1]
    assert (record["kind"], record["count"], record["stride"], record["custom_type"]) == (SHAPE_KINDS["custom"], 2, 7, 0)
    assert record["boxes"] != 0 and record["radii"] == 0
    structures, instances = shape_instances(fake_ctx, table, 1, fake_ctx.stream)
    assert [g.kind for g in structures] == ["sphere", "custom"] and instances[1].sbt_offset == 2
    build = fake_ctx.api.builds[-1]["inputs"][0]
    assert build.type == t.BuildInputType.CUSTOM_PRIMITIVES
    assert np.array_equal(fake_ctx.uploaded[build.customPrimitiveArray.aabbBuffers[0]], disks.boxes)


def test_placing_a_scene_with_shapes_moves_its_placed_meshes_only():
    """A node animation's ``place`` over a scene that shapes make instanced (the real device scene over the stub):
    the mesh with a transform moves, in its record and its instance; the world-space mesh and the shapes stay."""
    from graph_rig import StubCuda

    from optixasync.render._device_scene import DeviceScene

    placed = rectangle(np.eye(4), Material())
    placed.transform = np.eye(3, 4)
    scene = Scene([placed, rectangle(np.eye(4), Material())], Camera((0, 0, 3), (0, 0, 0)),
                  environment=Environment(radiance=(1, 1, 1)), shapes=[cloud(2)])
    shift, ignored = np.eye(3, 4), np.eye(3, 4)
    shift[0, 3], ignored[1, 3] = 0.5, 2.0
    with StubCuda() as cuda:
        ctx = cuda.context()
        device = DeviceScene(ctx, scene, ctx.stream)
        before = [np.array(i.transform) for i in device.accel.instances]
        device.place(np.stack([shift, ignored]), device.stream)
        after = [np.array(i.transform) for i in device.accel.instances]
        assert len(after) == 3 and np.allclose(after[0], shift)
        assert np.array_equal(after[1], before[1]) and np.array_equal(after[2], before[2])  # world space, spheres
        assert np.allclose(device.tables.mesh_records["to_world"][0], shift.reshape(-1))
        device.close()
