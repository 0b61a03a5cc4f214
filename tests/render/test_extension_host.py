"""Growth by files: a BSDF family and a light type from ``tests/render/extension/`` only, and punctual lights.

The extension is two headers and one Python file of descriptors, registered through the public registries
(:func:`~optixasync.scene.register_bsdf`, :func:`~optixasync.render.lights.register_light_type`); nothing
under ``optixasync/`` or ``kernels/`` names them. The renderer generates its dispatch over them, NVRTC
compiles the program, and the host build of the kernel renders them against closed forms:

* a diffuse plane under a point light given by its power ``P`` (``I = P / 4 pi``), of the test family
  (Lambert times its parameter ``gain``, sampled uniformly over the hemisphere): ``gain rho I cos / (pi d^2)``;
* a furnace of the test family: the geometric series of its albedo, which tests its ``sample`` (uniform,
  weight ``2 rho gain cos``) and, through MIS with the emissive sphere, its ``eval`` and ``pdf``;
* the built-in point, spot and directional lights on a diffuse plane (the GPU test's closed forms), and
  light selection by power across the built-in and the new type together.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from host_build import HostTracer, build_pathtracer_library, compiler, host_render
from punctual import (
    ALBEDO,
    POINT,
    SPOT,
    SUN,
    check_one_light,
    expected_radiance,
    irradiance,
    plane_scene,
    point_irradiance,
)

import optixasync
from optixasync.program import CompileOptions, compile_ptx
from optixasync.render import RenderOptions
from optixasync.render.lights import _base as light_registry
from optixasync.scene import Camera, Material, Scene, _bsdf, bsdf_families, sphere
from optixasync.scene._bsdf import bsdf_index

HERE = Path(__file__).resolve().parent
EXTENSION = HERE / "extension"
W = H = 32


def load_descriptors():
    spec = importlib.util.spec_from_file_location("extension_descriptors", EXTENSION / "descriptors.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def extension():
    """The extension registered for this module's tests; the registries are restored after."""
    families, types = dict(_bsdf._families), dict(light_registry._types)
    module = load_descriptors()
    module.register()
    try:
        yield module
    finally:
        _bsdf._families.clear()
        _bsdf._families.update(families)
        light_registry._types.clear()
        light_registry._types.update(types)


@pytest.fixture(scope="module")
def host_kernel(extension, tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("extension_host"), (0, 1))


def test_the_extension_lives_outside_the_package(extension):
    package = Path(optixasync.__file__).resolve().parent
    files = [EXTENSION / "bsdf_uniform_lambert.h", EXTENSION / "light_power_point.h", EXTENSION / "descriptors.py"]
    for path in files:
        assert path.is_file() and package not in path.parents and "kernels" not in path.parts[:-1]
    for root in (package, package.parent / "kernels"):
        for source in root.rglob("*"):
            if source.suffix in (".py", ".h", ".cu"):
                text = source.read_text(errors="replace")
                assert "uniform_lambert" not in text and "PowerPoint" not in text, source


def test_registration_appends_the_family_and_the_type(extension):
    from optixasync.render._source import pathtracer_source
    from optixasync.render.lights import light_types

    assert bsdf_families()[-1].name == "uniform_lambert" and bsdf_index("uniform_lambert") == len(bsdf_families()) - 1
    assert light_types()[-1].name == "power_point"
    source = pathtracer_source([0, 1])
    assert '#include "bsdf_uniform_lambert.h"' in source.text and '#include "light_power_point.h"' in source.text
    assert str(EXTENSION) in source.include_dirs
    k = bsdf_index("uniform_lambert")
    assert f"case {k}u: b.f{k} = UniformLambertBsdf::make(m, uv, color);" in source.text
    assert f"case {len(light_types()) - 1}u: return PowerPointLight::sample(light, point, rng);" in source.text


def test_the_extension_compiles_with_nvrtc(extension):
    from optixasync.render._source import pathtracer_source

    source = pathtracer_source([0, 1])
    ptx = compile_ptx(source.text, "pathtracer_extension.cu",
                      CompileOptions(use_fast_math=True, include_dirs=source.include_dirs))
    assert {"__raygen__outputs_0", "__raygen__outputs_1"} <= set(re.findall(r"\.entry\s+(\w+)", ptx))


def test_the_family_checks_its_own_parameter(extension):
    assert dict(Material(bsdf="uniform_lambert", parameters={"gain": 0.25}).parameters) == {"gain": 0.25}
    assert dict(Material(bsdf="uniform_lambert").parameters) == {"gain": 1.0}
    with pytest.raises(ValueError, match="parameter 'gain' must be finite and in"):
        Material(bsdf="uniform_lambert", parameters={"gain": 2.0})
    with pytest.raises(ValueError, match="has no parameter 'shine'"):
        Material(bsdf="uniform_lambert", parameters={"shine": 1.0})


def power_point_irradiance(light, points):
    return point_irradiance(light.position, np.asarray(light.power) / (4.0 * math.pi), points)


def test_a_plane_of_the_new_family_under_the_new_light_matches_its_closed_form(extension, host_kernel):
    gain, spp = 0.5, 64
    light = extension.PowerPointLight((0.3, 1.2, -0.2), power=(20.0, 20.0, 20.0))
    material = Material(reflectance=ALBEDO, bsdf="uniform_lambert", parameters={"gain": gain})
    image = host_render(host_kernel, plane_scene(light, material=material), spp, width=W, height=H, seed=3)
    expected, spread, on_plane = expected_radiance(W, H, light, albedo=ALBEDO * gain,
                                                   irradiance_of=power_point_irradiance)
    check_one_light(image.astype(np.float64), spp, expected, spread, on_plane)


@pytest.mark.parametrize("gain", [1.0, 0.6])
def test_a_furnace_of_the_new_family_converges_to_the_geometric_series(extension, host_kernel, gain):
    a, depth = 0.5, 3
    room = sphere((0, 0, 0), 1.0, Material((a,) * 3, (1.0,) * 3, bsdf="uniform_lambert", parameters={"gain": gain}),
                  subdivisions=1, inward=True)
    scene = Scene([room], Camera((0.1, -0.05, 0.2), (0.3, 0.2, -1.0), fov=70.0))
    image = host_render(host_kernel, scene, 256, width=24, height=24, max_depth=depth, seed=11)
    ag = a * gain
    expected = (1 - ag**depth) / (1 - ag)
    pixels = image[..., 0].astype(np.float64).ravel()
    stderr = pixels.std(ddof=1) / math.sqrt(pixels.size)
    assert stderr < 0.0025 * expected
    assert abs(pixels.mean() - expected) < 0.01 * expected, (pixels.mean(), expected, stderr)


@pytest.mark.parametrize("light", [POINT, SPOT, SUN], ids=lambda light: light.name)
def test_a_diffuse_plane_under_a_built_in_light_matches_its_closed_form(extension, host_kernel, light):
    spp = 64
    image = host_render(host_kernel, plane_scene(light), spp, width=W, height=H, seed=3).astype(np.float64)
    np.testing.assert_allclose(image[..., 0] / ALBEDO[0], image[..., 2] / ALBEDO[2], rtol=1e-5)
    check_one_light(image, spp, *expected_radiance(W, H, light))


def test_lights_of_every_type_together_add_up(extension, host_kernel):
    """Selection by power across the built-in types and the new one: the sum of the closed forms, within noise."""
    bulb = extension.PowerPointLight((-0.6, 0.9, 0.4), power=(12.0, 12.0, 12.0))
    lights = (POINT, SPOT, SUN, bulb)

    def irradiance_of(light, points):
        return power_point_irradiance(light, points) if light is bulb else irradiance(light, points)

    a = host_render(host_kernel, plane_scene(*lights), 256, width=W, height=H, seed=5).astype(np.float64)
    b = host_render(host_kernel, plane_scene(*lights), 256, width=W, height=H, seed=6).astype(np.float64)
    assert not np.array_equal(a, b)
    expected, _, on_plane = expected_radiance(W, H, *lights, irradiance_of=irradiance_of)
    inside = on_plane.all(axis=-1)
    got, variance = (a + b) / 2, (a - b) ** 2 / 2
    pixels = np.argwhere(inside)
    bands = np.array_split(np.argsort(pixels[:, 1], kind="stable"), 4) + [np.arange(len(pixels))]
    for band in bands:
        y, x = pixels[band, 0], pixels[band, 1]
        mean_got, mean_ref = got[y, x].mean(axis=0), expected[y, x].mean(axis=0)
        stderr = np.sqrt(variance[y, x].sum(axis=0) / 2) / len(band)
        assert (stderr < 0.01 * mean_ref).all(), (stderr, mean_ref)
        assert (np.abs(mean_got - mean_ref) < 5 * stderr + 0.003 * mean_ref).all(), (mean_got, mean_ref, stderr)


def test_an_unregistered_light_class_is_refused_before_any_work(extension):
    class Lamp:
        position = (0.0, 1.0, 0.0)

    with pytest.raises(TypeError, match="scene light 0 is a Lamp, which no registered light type renders"):
        HostTracer(None, plane_scene(Lamp()), RenderOptions(width=8, height=8))
