"""The CPU device: ``RenderPipeline(CpuContext(), scene)`` against the host-build tests' own kernel.

The device builds ``kernels/host/pathtracer_host.cpp`` with the generated program into its cache and renders
through the package's host tables; the tests' ``host_build`` builds the same source into a folder of its own.
Same seed, same pixels, bit for bit, whatever the thread count or the samples per launch. The triangle
hierarchy of the host build is checked against a build without it (every ray tests every triangle), and the
refusals are checked to come before any build. Skipped without a C++ compiler.
"""

from __future__ import annotations

import numpy as np
import pytest
from gltf_scenes import SQUARE_FACES_BACK, material, perspective_node, square_node, write
from host_build import build_pathtracer_library, compiler, host_render

from optixasync import CpuContext
from optixasync.errors import CompilerNotFoundError
from optixasync.render import RenderOptions, RenderPipeline, Tonemap, Views, _cpu_pipeline
from optixasync.scene import Camera, Material, cornell_box, material_scene, read_gltf, rectangle
from optixasync.testing import GltfBuilder

needs_compiler = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (c++, g++ or clang++) for the "
                                                               "CPU device")


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("cpu_device_host"), (0, 1, 15))


@pytest.fixture(scope="module")
def loop_kernel(tmp_path_factory):
    """The host build without the triangle hierarchy: every ray tests every triangle."""
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return build_pathtracer_library(tmp_path_factory.mktemp("cpu_device_loop"), (0, 1), flags=("-DOA_HOST_NO_BVH",))


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("OPTIXASYNC_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cpu-device-cache"))


def marker_scene(tmp_path):
    """A glTF asset: a glowing marker behind a one-sided plane whose back faces the camera, lit by a sky."""
    from optixasync.scene import Environment

    g = GltfBuilder()
    glow = material(g, base=(0.0, 0.0, 0.0, 1.0), emissive=(1.0, 0.6, 0.3))
    plane = material(g, base=(0.8, 0.8, 0.8, 1.0))
    floor = material(g, base=(0.5, 0.7, 0.5, 1.0), double_sided=True)
    roots = [square_node(g, glow, scale=0.5, name="marker"),
             square_node(g, plane, z=1.0, faces=SQUARE_FACES_BACK, name="plane"),
             square_node(g, floor, scale=3.0, z=-1.0, name="floor"),
             perspective_node(g, 3.0, 40.0)]
    path = write(g, tmp_path / "marker.gltf", *roots)
    scene = read_gltf(path).to_scene()
    scene.environment = Environment(radiance=(0.3, 0.3, 0.4))
    return path, scene


@needs_compiler
@pytest.mark.parametrize("threads, per_launch", [(1, 0), (2, 3)])
def test_cornell_box_pixels_are_the_host_builds(host_kernel, threads, per_launch):
    scene = cornell_box()
    options = dict(width=32, height=24, max_depth=6, seed=7)
    expected = host_render(host_kernel, scene, 8, **options)
    with RenderPipeline(CpuContext(threads=threads), scene, RenderOptions(samples_per_launch=per_launch, **options)) \
            as pipeline:
        assert type(pipeline).__name__ == "CpuRenderPipeline"
        image = pipeline.render(8)
        assert pipeline.last_nonfinite == 0 and pipeline.last_render_ms > 0
    assert image.shape == (24, 32, 3) and image.dtype == np.float32
    assert image.mean() > 0.05
    np.testing.assert_array_equal(image, expected)


@needs_compiler
def test_material_scene_pixels_are_the_host_builds(host_kernel):
    scene = material_scene()  # 286,726 triangles, textures, an environment map
    options = dict(width=16, height=12, max_depth=4, seed=3)
    expected = host_render(host_kernel, scene, 2, **options)
    with RenderPipeline(CpuContext(threads=2), scene, RenderOptions(**options)) as pipeline:
        image = pipeline.render(2)
    assert image.mean() > 0.01
    np.testing.assert_array_equal(image, expected)


@needs_compiler
def test_the_triangle_hierarchy_keeps_every_hit(host_kernel, loop_kernel, tmp_path):
    """The hierarchy prunes only: its pixels are those of testing every triangle (ties included: the Cornell
    box's walls share edges; the asset has a culled one-sided plane, whose any-hit program runs per candidate)."""
    _, asset = marker_scene(tmp_path)
    for scene, spp in ((cornell_box(), 4), (asset, 4)):
        options = dict(width=20, height=16, max_depth=5, seed=11)
        np.testing.assert_array_equal(host_render(host_kernel, scene, spp, **options),
                                      host_render(loop_kernel, scene, spp, **options))


@needs_compiler
def test_progressive_frames_add_up_to_the_still(host_kernel):
    scene = cornell_box()
    options = RenderOptions(width=16, height=16, seed=2)
    with RenderPipeline(CpuContext(threads=2), scene, options) as pipeline:
        results = list(pipeline.frames(4, 2))
        assert [r.samples for r in results] == [2, 4, 6, 8] and pipeline.samples_done == 8
        progressive = np.array(pipeline.accumulation)
        last = results[-1]["image"]
        assert last.shape == (16, 16, 4) and last.dtype == np.uint8 and last[..., :3].max() > 0
        sums = pipeline.render_sums(0, 8)
    np.testing.assert_array_equal(progressive, sums)
    np.testing.assert_array_equal(progressive[..., :3] / np.float32(8), host_render(host_kernel, scene, 8, width=16,
                                                                                       height=16, seed=2))


@needs_compiler
def test_a_new_camera_restarts_the_accumulation():
    scene = cornell_box()
    with RenderPipeline(CpuContext(threads=1), scene, RenderOptions(width=8, height=8)) as pipeline:
        list(pipeline.frames(2, 1))
        pipeline.camera = Camera((0.0, 1.0, 3.0), (0.0, 1.0, 0.0), fov=50.0)
        assert pipeline.samples_done == 0
        assert next(pipeline.frames(1, 1)).samples == 1


@pytest.mark.parametrize("kwargs, named", [
    (dict(integrator="gbuffer"), "'gbuffer' integrator"),
    (dict(outputs=("image", "depth")), "outputs ['depth']"),
    (dict(stages=[Tonemap()]), "stages (Tonemap)"),
    (dict(graphs=True), "frame graphs"),
    (dict(readback="depth"), "readbacks of ['depth']"),
    (dict(scheduler_options={"keep_results": False}), "scheduler_options"),
])
def test_what_needs_the_gpu_is_refused_before_any_build(monkeypatch, kwargs, named):
    def no_build(*args, **kw):
        raise AssertionError("the kernel was built before the refusal")

    monkeypatch.setattr(_cpu_pipeline, "pathtracer_library", no_build)
    ctx = _context(monkeypatch)
    with pytest.raises(ValueError, match="the CPU device does not run") as info:
        RenderPipeline(ctx, cornell_box(), **kwargs)
    assert named in str(info.value)


def test_views_are_refused_before_any_build(monkeypatch):
    monkeypatch.setattr(_cpu_pipeline, "pathtracer_library", lambda *a, **k: pytest.fail("built"))
    views = Views.cameras([cornell_box().camera])
    with pytest.raises(ValueError, match="a pipeline with views"):
        RenderPipeline(_context(monkeypatch), cornell_box(), views=views)


@needs_compiler
def test_gpu_frame_methods_are_refused_by_name():
    with RenderPipeline(CpuContext(threads=1), cornell_box(), RenderOptions(width=4, height=4)) as pipeline:
        for call, named in ((lambda: pipeline.record(None), "record()"), (lambda: pipeline.scheduler, "scheduler"),
                            (lambda: pipeline.refit(), "refit()"), (lambda: pipeline.still(4), "still()"),
                            (lambda: pipeline.frames(1, update=lambda *a: None), "frame updates")):
            with pytest.raises(ValueError, match="the CPU device does not run") as info:
                call()
            assert named in str(info.value)


def test_without_a_compiler_the_context_says_so(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(CompilerNotFoundError, match="C\\+\\+17 compiler, and none was found"):
        CpuContext()
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    with pytest.raises(CompilerNotFoundError, match="CXX='no-such-compiler-here' names no program"):
        CpuContext()


def test_threads_are_checked(monkeypatch):
    ctx = _context(monkeypatch)
    assert ctx.threads >= 1
    with pytest.raises(ValueError, match="threads"):
        CpuContext(threads=0)
    with pytest.raises(TypeError, match="threads"):
        CpuContext(threads=1.5)


@needs_compiler
def test_a_scene_with_a_culled_plane_and_a_sky_renders_as_the_host_build(host_kernel, tmp_path):
    _, scene = marker_scene(tmp_path)
    scene.add(rectangle(np.array([[0.3, 0, 0, 0.8], [0, 0.3, 0, 0.8], [0, 0, 1, 0.5]]), Material((0.9, 0.2, 0.2))))
    options = dict(width=24, height=24, max_depth=4, seed=5)
    with RenderPipeline(CpuContext(threads=2), scene, RenderOptions(**options)) as pipeline:
        image = pipeline.render(4)
    np.testing.assert_array_equal(image, host_render(host_kernel, scene, 4, **options))


def _context(monkeypatch) -> CpuContext:
    """A CPU context whether or not this machine has a compiler (the refusals need none)."""
    monkeypatch.setattr("optixasync.cpu._context.find_compiler", lambda: "/usr/bin/c++")
    return CpuContext()


@needs_compiler
def test_a_scene_with_spheres_gets_the_program_built_for_shapes(tmp_path):
    """The device builds the program a scene's features need (here spheres: OA_SHAPES); the pixels are those of
    the host build made for shapes."""
    from optixasync.scene import Spheres

    scene = cornell_box()
    scene.shapes.append(Spheres([[0.0, 0.3, 0.0], [0.25, 0.15, 0.2]], 0.12, material=Material((0.9, 0.9, 0.9))))
    options = dict(width=20, height=20, max_depth=4, seed=1)
    lib = build_pathtracer_library(tmp_path / "shapes", (0, 1), shapes=True)
    with RenderPipeline(CpuContext(threads=2), scene, RenderOptions(**options)) as pipeline:
        image = pipeline.render(4)
    expected = host_render(lib, scene, 4, **options)
    np.testing.assert_array_equal(image, expected)
    assert not np.array_equal(image, host_render(lib, cornell_box(), 4, **options))  # the spheres are in it
