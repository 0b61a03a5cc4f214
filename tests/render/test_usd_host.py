"""A USD stage rendered through the host build of the kernel equals the same scene built in Python.

``usd_scenes.py`` writes a stage (a floor, three instances of a box, preview surfaces, a distant light, a
point-like sphere light, a dome and a camera) and builds the scene its schemas describe with the scene API. Both
render on the CPU through ``pathtracer_host.cpp`` with the same seed: the same tables, the same random numbers,
so the images agree to float rounding. Skipped without a C++ compiler.
"""

from __future__ import annotations

import numpy as np
import pytest
from host_build import HostTracer, build_pathtracer_library, compiler, host_render
from test_gltf_host import HostFrames
from usd_scenes import python_twin, slide_columns, write_sample_stage, write_slide_stage

pytest.importorskip("pxr", reason="the usd extra (usd-core) is not installed")

from optixasync.render import NodeMotion, RenderOptions  # noqa: E402
from optixasync.scene import load_usd, read_usd  # noqa: E402


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("usd_host"), (1,))


def test_the_stage_reads_as_its_python_twin(tmp_path):
    write_sample_stage(tmp_path / "sample.usda")
    scene, twin = load_usd(tmp_path / "sample.usda"), python_twin()
    assert [m.name for m in scene.meshes] == [m.name for m in twin.meshes]
    assert scene.instanced == twin.instanced == [1, 2, 3]
    for a, b in zip(scene.meshes, twin.meshes, strict=True):
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_allclose(a.vertices, b.vertices, atol=1e-6)
        ma, mb = a.material, b.material  # USD stores color3f and float: float32 roundings of the twin's values
        assert (ma.bsdf, ma.sidedness, ma.name) == (mb.bsdf, mb.sidedness, mb.name)
        np.testing.assert_allclose([*ma.reflectance, ma.metallic, ma.roughness],
                                   [*mb.reflectance, mb.metallic, mb.roughness], rtol=1e-7)
        if b.transform is not None:
            np.testing.assert_allclose(a.transform, b.transform, atol=1e-9)
    (sun, lamp), (twin_sun, twin_lamp) = scene.lights, twin.lights
    np.testing.assert_allclose(sun.direction, twin_sun.direction, atol=1e-9)
    np.testing.assert_allclose(sun.irradiance, twin_sun.irradiance, rtol=1e-6)
    np.testing.assert_allclose(lamp.position, twin_lamp.position)
    np.testing.assert_allclose(lamp.intensity, twin_lamp.intensity, rtol=1e-6)
    np.testing.assert_allclose(scene.environment.radiance, twin.environment.radiance, rtol=1e-6)
    assert scene.camera.fov == pytest.approx(twin.camera.fov)
    np.testing.assert_allclose(scene.camera.eye, twin.camera.eye, atol=1e-9)
    np.testing.assert_allclose(np.subtract(scene.camera.target, scene.camera.eye),
                               np.subtract(twin.camera.target, twin.camera.eye), atol=1e-9)


def test_the_stage_renders_as_its_python_twin(host_kernel, tmp_path):
    write_sample_stage(tmp_path / "sample.usdc")
    options = dict(width=36, height=24, max_depth=3, seed=7)
    image = host_render(host_kernel, load_usd(tmp_path / "sample.usdc"), 16, **options)
    twin = host_render(host_kernel, python_twin(), 16, **options)
    assert image.mean() > 0.05  # lit: the floor and boxes are seen
    close = np.isclose(image, twin, rtol=1e-4, atol=1e-5).all(axis=2)
    # the same samples; a ray grazing an edge may fall either side of it under float rounding
    assert close.mean() > 0.99, f"{(~close).sum()} of {close.size} pixels differ"
    np.testing.assert_allclose(image.mean(axis=(0, 1)), twin.mean(axis=(0, 1)), rtol=2e-3)


def test_time_samples_play_frame_by_frame(host_kernel, tmp_path):
    """The stage's translate samples, played by NodeMotion at 0.25 s a frame: the square is where the samples'
    linear interpolation puts it, black on the white dome (max depth 1)."""
    write_slide_stage(tmp_path / "slide.usda")
    asset = read_usd(tmp_path / "slide.usda", motion_blur=False)
    assert asset.scene.instanced == [0] and asset.animation.moving.tolist() == [True]
    w = h = 16
    tracer = HostTracer(host_kernel, asset.scene, RenderOptions(width=w, height=h, spp=4, max_depth=1))
    frames, motion = HostFrames(tracer), NodeMotion(asset.animation, dt=0.25)
    for k in range(5):
        motion(frames, k, None)
        row = tracer.render(4)[h // 2, :, 0]
        dark = slide_columns(w, 0.25 * k)
        assert dark.sum() == 4, k
        np.testing.assert_array_equal(row[dark], 0.0)
        np.testing.assert_allclose(row[~dark], 1.0, rtol=1e-6)
