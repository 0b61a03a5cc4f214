"""Custom primitives drawn by the path tracer's kernel on the CPU: the built-in disks, and a type added from the
test folder only (axis-aligned boxes, ``extension/custom_descriptors.py``), against closed forms.

The host build of the program a scene with custom primitives compiles (``OA_CUSTOM``) runs the kernel's own
intersection program (``__intersection__custom``, the generated dispatch over the registered types) on every
candidate the stand-in's hierarchy finds, and its closest-hit program and hit attributes (``hit_custom.h``).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from host_build import build_pathtracer_library, compiler, host_render

from optixasync.errors import ShapeError
from optixasync.scene import (
    Camera,
    CustomPrimitives,
    CustomPrimitiveType,
    DirectionalLight,
    Material,
    Scene,
    _custom,
    custom_primitives,
    register_custom_primitive,
)
from optixasync.scene._custom import custom_primitive_index

HERE = Path(__file__).resolve().parent
LAMP = Material((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
CAMERA = Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=40.0)
SIZE, SPP = 32, 64


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


R = _load(HERE / "shape_reference.py", "custom_shape_reference")


@pytest.fixture(scope="module")
def box_type():
    """The test folder's box type, registered for this module's tests and removed after."""
    before = dict(_custom._types)
    descriptors = _load(HERE / "extension" / "custom_descriptors.py", "custom_extension_descriptors")
    yield descriptors.register()
    _custom._types.clear()
    _custom._types.update(before)


@pytest.fixture(scope="module")
def custom_kernel(tmp_path_factory, box_type):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("custom_host"), (0, 1, 15), custom=True)


def disk_coverage(camera, width, height, center, normal, radius, sub=16):
    eye, d = R.pixel_lattice(camera, width, height, sub)
    n = np.asarray(normal, np.float64) / np.linalg.norm(normal)
    t = ((np.asarray(center) - eye) @ n) / (d @ n)
    p = eye + d * t[..., None] - center
    return ((np.einsum("...k,...k", p, p) <= radius * radius) & (t > 0)).mean(axis=2)


def test_the_disk_type_is_registered():
    assert "disk" in [t.name for t in custom_primitives()] and custom_primitive_index("disk") == 0


def test_an_emissive_disk_covers_its_ellipse(custom_kernel):
    center, normal, radius = np.array([0.1, -0.1, 0.0]), np.array([0.3, 0.5, 1.0]), 0.6
    disks = CustomPrimitives("disk", [[*center, *normal, radius]], material=LAMP)
    image = host_render(custom_kernel, Scene([], CAMERA, shapes=[disks]), SPP, width=SIZE, height=SIZE, max_depth=1)
    covered = disk_coverage(CAMERA, SIZE, SIZE, center, normal, radius)
    assert (np.abs(image[..., 0] - covered) <= 5 * np.sqrt(covered * (1 - covered) / SPP) + 1 / SPP).all()
    assert abs(image[..., 0].sum() - covered.sum()) < 0.01 * covered.sum()


def test_a_disk_seen_from_its_back_does_not_emit(custom_kernel):
    disks = CustomPrimitives("disk", [[0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.5]], material=LAMP)
    image = host_render(custom_kernel, Scene([], CAMERA, shapes=[disks]), 4, width=16, height=16, max_depth=1)
    assert (image == 0).all()


def test_disks_of_two_materials_and_colours_under_a_directional_light(custom_kernel):
    data = [[-0.5, 0.0, 0.0, 0.0, 0.0, 1.0, 0.3], [0.5, 0.0, 0.0, 0.0, 0.0, 1.0, 0.3]]
    disks = CustomPrimitives("disk", data, colors=[[1.0, 0.5, 0.25], [1.0, 1.0, 1.0]],
                             material=[Material((0.8, 0.8, 0.8)), Material((0.4, 0.4, 0.4))], material_ids=[0, 1])
    light = DirectionalLight((0.0, -0.6, -0.8), (2.0, 2.0, 2.0))
    image = host_render(custom_kernel, Scene([], CAMERA, lights=[light], shapes=[disks]), 8, width=SIZE,
                        height=SIZE, max_depth=2)
    for row, color, albedo in zip(data, ([1.0, 0.5, 0.25], [1.0, 1.0, 1.0]), (0.8, 0.4), strict=True):
        x, y = CAMERA.project([row[:3]], SIZE, SIZE)[0]
        expected = albedo * np.array(color) / math.pi * 2.0 * 0.8  # cos = 0.8: the light comes 37 degrees off
        np.testing.assert_allclose(image[int(y), int(x)], expected, rtol=1e-5)


def test_a_type_from_the_test_folder_draws_boxes(custom_kernel, box_type):
    """Two unit boxes, one behind and beside the other; the near one's front face is lit head-on."""
    boxes = CustomPrimitives("test_box", [[-0.8, -0.3, -0.3, -0.2, 0.3, 0.3], [0.1, -0.4, -1.0, 0.9, 0.4, -0.2]],
                             material=Material((0.5, 0.5, 0.5)))
    light = DirectionalLight((0.0, 0.0, -1.0), (math.pi, math.pi, math.pi))
    image = host_render(custom_kernel, Scene([], CAMERA, lights=[light], shapes=[boxes]), 16, width=SIZE,
                        height=SIZE, max_depth=2)
    x, y = CAMERA.project([[-0.5, 0.0, 0.3]], SIZE, SIZE)[0]
    np.testing.assert_allclose(image[int(y), int(x)], 0.5, rtol=1e-5)  # albedo / pi * E * 1
    corners = CAMERA.project([[-0.8, -0.3, 0.3], [-0.2, 0.3, 0.3]], SIZE, SIZE)
    lit = image[..., 0] > 0.25
    ys, xs = np.nonzero(lit[:, : SIZE // 2])
    assert xs.min() >= math.floor(corners[:, 0].min()) and xs.max() <= math.ceil(corners[:, 0].max())
    assert ys.min() >= math.floor(corners[:, 1].min()) and ys.max() <= math.ceil(corners[:, 1].max())
    x, y = CAMERA.project([[0.5, 0.0, -0.2]], SIZE, SIZE)[0]
    np.testing.assert_allclose(image[int(y), int(x)], 0.5, rtol=1e-5)  # the far box's front face, lit the same


def test_the_plain_shapes_program_refuses_custom_primitives(tmp_path):
    if compiler() is None:
        pytest.skip("no C++ compiler")
    shapes_only = build_pathtracer_library(tmp_path, (1,), shapes=True)
    disks = CustomPrimitives("disk", [[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5]], material=LAMP)
    with pytest.raises(RuntimeError, match="custom=True"):
        host_render(shapes_only, Scene([], CAMERA, shapes=[disks]), 1, width=4, height=4)


@pytest.mark.parametrize("make, error, match", [
    (lambda: CustomPrimitives("cone", [[0.0] * 7]), ShapeError, "must be one of"),
    (lambda: CustomPrimitives("disk", [[0.0] * 6]), ShapeError, r"shape \(N, 7\)"),
    (lambda: CustomPrimitives("disk", np.zeros((0, 7))), ShapeError, r"shape \(N, 7\)"),
    (lambda: CustomPrimitives("disk", [[0, 0, 0, 0, 0, 0, 1.0]]), ShapeError, "zero normal"),
    (lambda: CustomPrimitives("disk", [[0, 0, 0, 0, 0, 1, -1.0]]), ShapeError, "radii must be >= 0"),
    (lambda: CustomPrimitives("disk", [[0, 0, np.nan, 0, 0, 1, 1.0]]), ShapeError, "NaN or Inf"),
    (lambda: CustomPrimitives("disk", [[0, 0, 0, 0, 0, 1, 1.0]], colors=[[1, 1]]), ShapeError, "colors"),
])
def test_bad_custom_primitives_are_refused_on_the_host(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_the_registry_refuses_bad_types(box_type):
    class Nameless(CustomPrimitiveType):
        header, struct, floats = "pathtracer/custom_disk.h", "DiskPrimitive", 7

    class Wide(CustomPrimitiveType):
        name, header, struct, floats = "wide", "pathtracer/custom_disk.h", "DiskPrimitive", 65

    with pytest.raises(ValueError, match="needs a name"):
        register_custom_primitive(Nameless())
    with pytest.raises(ValueError, match="1 to 64 floats"):
        register_custom_primitive(Wide())
    class OtherBox(type(box_type)):
        struct = "SomethingElse"

    with pytest.raises(ValueError, match="registered already"):
        register_custom_primitive(OtherBox())
    with pytest.raises(TypeError, match="takes a CustomPrimitiveType"):
        register_custom_primitive("box")
    assert register_custom_primitive(box_type) is box_type  # the same descriptor again: nothing happens
    assert register_custom_primitive(type(box_type)()) is box_type  # the same type made again: the first stays
