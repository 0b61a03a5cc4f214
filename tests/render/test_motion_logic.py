"""Motion blur on the host side: the scene API's checks, the motion table and its layout against the kernel
(NVRTC), the program variant, and the structures the device scene asks for (a stand-in context). No GPU."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from optixasync._optix import types as t
from optixasync.program import compile_ptx
from optixasync.render import check_scene
from optixasync.render._motion import MESH_MOTION, MotionTable, moving_structure
from optixasync.render._path import COMPILE_OPTIONS, MOTION_PIPELINE_OPTIONS, PIPELINE_OPTIONS, pipeline_options
from optixasync.render._source import pathtracer_source
from optixasync.render._tables import SceneTables, needs_instances
from optixasync.scene import Environment, Material, Mesh, MeshMotion, Scene, cornell_box, rectangle

HERE = Path(__file__).resolve().parent


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOST = _load(HERE / "host_build.py", "motion_host_build")
SHIFT = [np.array([[1.0, 0, 0, x], [0, 1, 0, 0], [0, 0, 1, 0]]) for x in (-0.5, 0.0, 0.5)]


def square(**fields) -> Mesh:
    base = rectangle(np.diag([0.3, 0.3, 1.0, 1.0]))
    return Mesh(base.vertices, base.indices, Material(), **fields)


def test_the_motion_layout_matches_the_kernel():
    source = pathtracer_source((0, 1), motion=True)
    options = dataclasses.replace(COMPILE_OPTIONS, include_dirs=source.include_dirs)
    probes = [f"(const char*)&((MeshMotion*)0)->{name}" for name in MESH_MOTION.names]
    probes += [f"(const char*)&((SceneRecord*)0)->{name}" for name in ("motions", "shutter_open", "shutter_close")]
    from optixasync.render._layout import SCENE_RECORD

    expected = [MESH_MOTION.fields[n][1] for n in MESH_MOTION.names]
    expected += [SCENE_RECORD.fields[n][1] for n in ("motions", "shutter_open", "shutter_close")]
    text = compile_ptx(source.text + f'\nstatic_assert(sizeof(MeshMotion) == {MESH_MOTION.itemsize}, "size");\n'
                       'extern "C" __device__ const char* oa_layout_probe[] = {' + ", ".join(probes) + "};\n",
                       "motion_layout.cu", options)
    match = re.search(r"oa_layout_probe\[(\d+)\]\s*=\s*\{([^}]*)\}", text)
    assert match and [int(v) for v in match.group(2).split(",")] == expected
    assert MESH_MOTION.itemsize == 32


def test_the_motion_program_samples_a_time_per_path():
    plain, moving = pathtracer_source((0, 1)), pathtracer_source((0, 1), motion=True)
    assert "OA_MOTION" not in plain.text and "#define OA_MOTION 1" in moving.text
    options = dataclasses.replace(COMPILE_OPTIONS, include_dirs=moving.include_dirs)
    ptx = compile_ptx(moving.text, "pathtracer_motion.cu", options)
    body = ptx.split(".entry __raygen__outputs_1(")[1].split(".entry")[0]
    assert body.count("_optix_trace_typed_32") == 2
    assert not re.search(r"\.f64\b", ptx) and ".local" not in ptx


def test_pipeline_options_with_motion():
    assert pipeline_options(False, False, []) is PIPELINE_OPTIONS
    options = pipeline_options(True, True, ["sphere"])
    assert options.uses_motion_blur and options.traversable_graph_flags == t.TraversableGraphFlags.ALLOW_ANY
    assert int(options.primitive_type_flags) == int(t.PrimitiveTypeFlags.TRIANGLE | t.PrimitiveTypeFlags.SPHERE)
    assert MOTION_PIPELINE_OPTIONS.num_payload_values == 5


@pytest.mark.parametrize("make, error, match", [
    (lambda: MeshMotion(), ValueError, "one of them"),
    (lambda: MeshMotion(transforms=SHIFT, vertices=[np.zeros((3, 3), np.float32)] * 2), ValueError, "one of them"),
    (lambda: MeshMotion(transforms=SHIFT[:1]), ValueError, "2 to 1024 keys, got 1"),
    (lambda: MeshMotion(transforms=np.stack(SHIFT)), TypeError, "a list of arrays"),
    (lambda: MeshMotion(transforms=SHIFT, times=(1.0, 1.0)), ValueError, "end > begin"),
    (lambda: MeshMotion(transforms=SHIFT, times=(0.0, np.nan)), ValueError, "finite"),
    (lambda: MeshMotion(transforms=[np.eye(4), np.zeros((4, 4))]), ValueError, "singular|invertible|last row"),
    (lambda: MeshMotion(vertices=[np.zeros((3, 3), np.float32), np.zeros((4, 3), np.float32)]), ValueError,
     "different counts"),
    (lambda: square(motion=MeshMotion(vertices=[np.zeros((3, 3), np.float32)] * 2)), ValueError,
     "3 vertices per key but the mesh has 4"),
    (lambda: square(motion=MeshMotion(transforms=SHIFT), transform=np.eye(4)), ValueError, "transform and motion"),
    (lambda: Mesh(square().vertices, square().indices, Material((0, 0, 0), (1, 1, 1)),
                  motion=MeshMotion(transforms=SHIFT)), ValueError, "emissive and has motion keys"),
    (lambda: Mesh(square().vertices, square().indices, dynamic=True, motion=MeshMotion(transforms=SHIFT)),
     ValueError, "dynamic and has motion keys"),
    (lambda: square(normals=np.tile([0, 0, 1.0], (4, 1)),
                    motion=MeshMotion(vertices=[square().vertices] * 2)), ValueError, "deforms and has normals"),
    (lambda: Mesh(square().vertices, square().indices, Material(cull_back=True), motion=MeshMotion(transforms=SHIFT)),
     ValueError, "culls its back faces and has motion keys"),
    (lambda: square(motion="fast"), TypeError, "MeshMotion or None"),
    (lambda: Scene(shutter=(1.0, 0.0)), ValueError, "closes before it opens"),
    (lambda: Scene(shutter=(0.0,)), TypeError, "two numbers"),
])
def test_bad_motion_is_refused_on_the_host(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_check_scene_checks_motion_again():
    mesh = square(motion=MeshMotion(transforms=SHIFT))
    scene = Scene([mesh], environment=Environment(radiance=(1, 1, 1)), shutter=(0.0, 1.0))
    assert check_scene(scene) is scene and scene.moving == [0]
    mesh.material = Material((0, 0, 0), (1, 1, 1))  # made emissive after the motion was checked
    with pytest.raises(ValueError, match="emissive and has motion keys"):
        check_scene(scene)
    scene.meshes[0].material = Material()
    scene.shutter = (2.0, 1.0)
    with pytest.raises(ValueError, match="closes before it opens"):
        check_scene(scene)


def test_the_motion_table_and_scene_record():
    keys = [square().vertices, square().vertices * np.float32(2)]
    scene = Scene([rectangle(), square(motion=MeshMotion(transforms=SHIFT, times=(0.0, 2.0))),
                   square(motion=MeshMotion(vertices=keys))], environment=Environment(radiance=(1, 1, 1)),
                  shutter=(0.25, 0.75))
    assert needs_instances(scene) and not needs_instances(cornell_box())
    tables = SceneTables(scene, HOST.HostPlacement())
    record = tables.record
    assert record["instanced"] == 1 and record["motions"] == tables.motions.pointer != 0
    assert (record["shutter_open"], record["shutter_close"]) == (0.25, 0.75)
    raw = (np.ctypeslib.ctypes.c_uint8 * (3 * MESH_MOTION.itemsize)).from_address(tables.motions.pointer)
    motions = np.frombuffer(np.ctypeslib.as_array(raw), MESH_MOTION)
    assert motions["num_keys"].tolist() == [0, 3, 2]
    assert motions[1]["time_end"] == 2.0 and motions[1]["transforms"] != 0 and motions[1]["vertex_keys"] == 0
    assert motions[2]["vertex_keys"] != 0 and motions[2]["transforms"] == 0
    placed = (np.ctypeslib.ctypes.c_float * 36).from_address(int(motions[1]["transforms"]))
    np.testing.assert_array_equal(np.ctypeslib.as_array(placed).reshape(3, 3, 4), np.stack(SHIFT))
    assert len(tables.motions.vertex_keys[2]) == 2
    static = SceneTables(cornell_box(), HOST.HostPlacement()).record
    assert static["motions"] == 0 and static["shutter_open"] == static["shutter_close"] == 0
    assert MotionTable(cornell_box(), HOST.HostPlacement()).pointer == 0


@pytest.fixture
def fake_ctx(monkeypatch):
    fake = _load(HERE.parent / "accel" / "fake_device.py", "motion_fake_device")
    fake.install(monkeypatch)
    return fake.FakeContext()


def test_a_moving_instance_is_a_motion_transform_and_a_deforming_mesh_a_motion_gas(fake_ctx):
    from optixasync.accel import GeometryAccel, MatrixMotionTransform

    keys = [square().vertices, square().vertices * np.float32(2)]
    scene = Scene([square(motion=MeshMotion(transforms=SHIFT, times=(0.0, 2.0))),
                   square(motion=MeshMotion(vertices=keys))])
    tables = SceneTables(scene, HOST.HostPlacement())
    geometry = tables.geometry
    child, made = moving_structure(fake_ctx, scene, tables.motions, 0, geometry.indices[0], geometry.vertices[0],
                                   fake_ctx.stream)
    assert isinstance(child, MatrixMotionTransform) and made[-1] is child and len(child.keys) == 3
    assert (child.motion.keys, child.motion.time_begin, child.motion.time_end) == (3, 0.0, 2.0)
    assert fake_ctx.api.builds[-1]["motion"][0] in (0, 1)  # its GAS is static
    child, made = moving_structure(fake_ctx, scene, tables.motions, 1, geometry.indices[1], geometry.vertices[1],
                                   fake_ctx.stream)
    assert isinstance(child, GeometryAccel) and made == [child]
    assert fake_ctx.api.builds[-1]["motion"] == (2, 0, 0.0, 1.0)
