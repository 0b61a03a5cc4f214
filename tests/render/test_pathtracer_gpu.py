"""The path tracer on a GPU, against closed forms and a numpy reference.

* White furnace: inside a closed sphere of albedo a emitting Le, every pixel converges to
  Le (1 - a^D) / (1 - a) with max_depth D (Le / (1 - a) for large D): this checks the depth convention,
  that light sampling and BSDF sampling share the emission exactly once (MIS), and Russian roulette.
* max_depth 1 shows exactly the light; max_depth 2 matches a numpy integration of direct lighting.
* Determinism, seeds, launch splits, progressive frames through a scheduler of one's own, refits of a dynamic
  mesh (the pipeline's own frames, stills and stages: ``test_pipeline_gpu.py``).

Noisy comparisons use standard errors estimated from the images themselves (pixels are independent), with
a check that the estimate is small enough for the test to be able to fail.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from optixasync.io import tonemap_srgb
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Camera, Material, Mesh, Scene, cornell_box, rectangle, sphere
from optixasync.scheduler import FrameScheduler

pytestmark = pytest.mark.gpu


def load_reference():
    spec = importlib.util.spec_from_file_location("render_reference", Path(__file__).with_name("reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render(ctx, scene, **options) -> np.ndarray:
    with RenderPipeline(ctx, scene, RenderOptions(**options)) as pipeline:
        image = pipeline.render()
        assert pipeline.last_nonfinite == 0
    assert image.dtype == np.float32 and image.shape == (options["height"], options["width"], 3)
    return image


def pixel_masks(corners_inside: np.ndarray) -> np.ndarray:
    """From a (H+1, W+1) mask of pixel corners inside a convex region: pixels whose 4 corners are all inside."""
    c = corners_inside
    return c[:-1, :-1] & c[1:, :-1] & c[:-1, 1:] & c[1:, 1:]


def box_masks(bounds: tuple[float, float, float, float], width: int, height: int,
              margin: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(inside, outside) pixel masks of an axis-aligned image rectangle (x0, x1, y0, y1) in pixel units."""
    x0, x1, y0, y1 = bounds
    xs, ys = np.arange(width), np.arange(height)
    inside = ((xs[None] >= x0) & (xs[None] + 1 <= x1)) & ((ys[:, None] >= y0) & (ys[:, None] + 1 <= y1))
    outside = ((xs[None] + 1 < x0 - margin) | (xs[None] > x1 + margin)) | (
        (ys[:, None] + 1 < y0 - margin) | (ys[:, None] > y1 + margin))
    return inside, outside


def projected_bounds(camera: Camera, points, width: int, height: int) -> tuple[float, float, float, float]:
    p = camera.project(points, width, height)
    assert np.isfinite(p).all()
    return p[:, 0].min(), p[:, 0].max(), p[:, 1].min(), p[:, 1].max()


# --- white furnace --------------------------------------------------------------------------------------------------

FURNACE_CAMERA = Camera((0.1, -0.05, 0.2), (0.3, 0.2, -1.0), fov=70.0)


def furnace(albedo: float = 0.5, le: float = 1.0, extra: tuple = ()) -> Scene:
    room = sphere((0.0, 0.0, 0.0), 1.0, Material((albedo,) * 3, (le,) * 3), subdivisions=3, inward=True,
                  name="room")
    return Scene([room, *extra], FURNACE_CAMERA)


def assert_uniform(image: np.ndarray, expected: float, mask: np.ndarray | None = None, rel: float = 0.01) -> None:
    """The image's mean is ``expected`` within ``rel``; so is every 8x8 block, within its own noise."""
    np.testing.assert_array_equal(image[..., 0], image[..., 1])  # a grey scene: the channels are computed alike
    np.testing.assert_array_equal(image[..., 0], image[..., 2])
    pixels = image[..., 0].astype(np.float64)
    values = pixels[mask] if mask is not None else pixels.ravel()
    stderr = values.std(ddof=1) / math.sqrt(values.size)
    assert stderr < 0.2 * rel * expected, f"too noisy for a {rel:.0%} test: standard error {stderr:.4g}"
    assert abs(values.mean() - expected) < rel * expected, (values.mean(), expected, stderr)
    if mask is None:
        h, w = pixels.shape
        blocks = pixels.reshape(h // 8, 8, w // 8, 8).mean(axis=(1, 3))
        block_err = pixels.std(ddof=1) / 8
        worst = np.abs(blocks - expected).max()
        assert worst < rel * expected + 5 * block_err, (worst, block_err)


def test_furnace_max_depth_1_is_exactly_the_emission(ctx):
    image = render(ctx, furnace(le=1.5), width=64, height=64, spp=4, max_depth=1)
    np.testing.assert_array_equal(image, 1.5)  # every camera ray hits the emitting room, nothing else counts


@pytest.mark.parametrize("max_depth, rr_depth", [(2, 5), (3, 5), (64, 5), (64, 1)])
def test_furnace_converges_to_the_geometric_series(ctx, max_depth, rr_depth):
    a, le = 0.5, 1.0
    expected = le * (1 - a**max_depth) / (1 - a)  # Le (1 + a + ... + a^(D-1))
    image = render(ctx, furnace(a, le), width=64, height=64, spp=256, max_depth=max_depth, rr_depth=rr_depth,
                   seed=max_depth)
    assert_uniform(image, expected)


def test_two_sided_reflector_is_invisible_in_the_furnace_one_sided_back_is_black(ctx):
    """A perfect two-sided reflector in a uniform radiance field reflects the same field: it disappears.
    The same plate one-sided and seen from its back is black."""
    camera = Camera((0.0, 0.0, 0.5), (0.0, 0.0, -1.0), fov=60.0)
    # a mirror placement (negative determinant): the front side must stay the transformed +z, i.e. away from us
    plate = np.array([[0.2, 0, 0, 0], [0, 0.2, 0, 0], [0, 0, -1, -0.3], [0, 0, 0, 1]], np.float64)
    corners = [[-0.2, -0.2, -0.3], [0.2, -0.2, -0.3], [0.2, 0.2, -0.3], [-0.2, 0.2, -0.3]]
    inside, _ = box_masks(projected_bounds(camera, corners, 64, 64), 64, 64)
    assert inside.sum() > 300
    expected = 1.0 / (1 - 0.5)
    for two_sided in (True, False):
        reflector = rectangle(plate, Material((1.0, 1.0, 1.0), two_sided=two_sided), "plate")
        assert reflector.face_normals()[0][2] < 0
        scene = furnace(0.5, 1.0, (reflector,))
        scene.camera = camera
        image = render(ctx, scene, width=64, height=64, spp=256, max_depth=64, seed=11)
        if two_sided:
            assert_uniform(image, expected)
            assert_uniform(image, expected, mask=inside, rel=0.02)
        else:
            np.testing.assert_array_equal(image[inside], 0.0)


# --- seeds, determinism, launch splits ------------------------------------------------------------------------------


def test_same_seed_same_image_different_seed_same_mean(ctx):
    scene = cornell_box()
    options = RenderOptions(width=48, height=48, spp=16, seed=1, samples_per_launch=4)
    with RenderPipeline(ctx, scene, options) as pipeline:
        calls: list[int] = []
        a = pipeline.render(progress=calls.append)
        assert calls == [4, 8, 12, 16]
        again = pipeline.render()
        pipeline.options = RenderOptions(width=48, height=48, spp=16, seed=1, samples_per_launch=3)
        split = pipeline.render(progress=calls.append)
        assert calls[4:] == [3, 6, 9, 12, 15, 16]
        pipeline.options = RenderOptions(width=48, height=48, spp=16, seed=1)
        whole = pipeline.render()
        assert pipeline.last_launch_ms is not None and pipeline.last_launch_ms > 0
    np.testing.assert_array_equal(a, again)
    np.testing.assert_array_equal(a, split)  # the sums do not depend on how samples are split into launches
    np.testing.assert_array_equal(a, whole)
    c = render(ctx, scene, width=48, height=48, spp=16, seed=1)
    np.testing.assert_array_equal(a, c)  # a fresh pipeline, the same bits
    b = render(ctx, scene, width=48, height=48, spp=16, seed=2)
    lit = a.sum(axis=2) > 0
    assert (a != b)[lit].mean() > 0.95  # independent noise (the border past the box's open front is black)
    # different seeds, the same expectation: the mean difference is within a few standard errors of zero
    a32 = render(ctx, scene, width=48, height=48, spp=32, seed=7).astype(np.float64)
    b32 = render(ctx, scene, width=48, height=48, spp=32, seed=8)
    d = (a32 - b32).reshape(-1, 3)
    for channel in range(3):
        stderr = d[:, channel].std(ddof=1) / math.sqrt(len(d))
        assert abs(d[:, channel].mean()) < 4 * stderr, (channel, d[:, channel].mean(), stderr)
        assert stderr < 0.025 * a32[..., channel].mean()  # so a 10% difference would fail


def test_emitters_given_as_device_arrays_render_as_host_ones(ctx):
    """An emissive mesh with device indices only, or device vertices only: the same bits as the host scene."""
    import dataclasses

    import cupy

    scene = cornell_box()
    k = scene.find("light")
    light = scene.meshes[k]
    expected = render(ctx, scene, width=32, height=32, spp=8, seed=3)
    for device_part in ("indices", "vertices"):
        meshes = list(scene.meshes)
        meshes[k] = dataclasses.replace(light, **{device_part: cupy.asarray(getattr(light, device_part))})
        image = render(ctx, dataclasses.replace(scene, meshes=meshes), width=32, height=32, spp=8, seed=3)
        np.testing.assert_array_equal(image, expected, err_msg=f"emitter with device {device_part}")


# --- depth convention and direct lighting ---------------------------------------------------------------------------


def test_max_depth_1_shows_only_the_light(ctx):
    scene = cornell_box()
    light = scene.meshes[scene.find("light")]
    w = h = 256
    image = render(ctx, scene, width=w, height=h, spp=8, max_depth=1)
    # pixel corners whose camera ray meets the light's rectangle (the plane y = 0.99; nothing is in the way)
    xs, ys = np.meshgrid(np.arange(w + 1), np.arange(h + 1))
    d = scene.camera.ray_directions(np.stack([xs.ravel(), ys.ravel()], 1), w, h)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (0.99 - scene.camera.eye[1]) / d[:, 1]
        hit = np.asarray(scene.camera.eye) + t[:, None] * d
        on_light = (t > 0) & (np.abs(hit[:, 0]) <= 0.23) & (np.abs(hit[:, 2] - 0.01) <= 0.19)
    inside = pixel_masks(on_light.reshape(h + 1, w + 1))
    _, outside = box_masks(projected_bounds(scene.camera, light.vertices, w, h), w, h)
    assert inside.sum() > 100 and outside.sum() > 0.9 * w * h
    np.testing.assert_allclose(image[inside], np.broadcast_to(light.material.emission, (inside.sum(), 3)), rtol=1e-6)
    np.testing.assert_array_equal(image[outside], 0.0)
    edge = ~inside & ~outside
    assert (image[edge] >= 0).all() and (image[edge] <= np.asarray(light.material.emission, np.float32) * 1.000001).all()


def test_max_depth_2_matches_numpy_direct_lighting_on_the_floor(ctx):
    ref = load_reference()
    scene = cornell_box()
    w = h = 64
    options = dict(width=w, height=h, spp=1024, max_depth=2)
    a = render(ctx, scene, seed=5, **options).astype(np.float64)
    b = render(ctx, scene, seed=6, **options).astype(np.float64)
    # floor pixels (every other row): the whole footprint, and the neighbours', sees the floor only
    tris = ref.scene_triangles(scene)
    mask = ref.covered_pixels(scene.camera, tris, w, h, scene.find("floor"))
    mask[1::2] = False
    pixels = np.argwhere(mask)[:, ::-1]
    assert len(pixels) >= 40
    origins, directions = ref.pixel_rays(scene.camera, w, h, pixels, sub=8)
    t, _ = ref.cast(tris, origins.reshape(-1, 3), directions.reshape(-1, 3))
    points = origins.reshape(-1, 3) + t[:, None] * directions.reshape(-1, 3)
    white = scene.meshes[scene.find("floor")].material.reflectance
    expected = ref.direct_lighting(scene, points, np.tile([0.0, 1.0, 0.0], (len(points), 1)), white, n=8,
                                   occluders=tris).reshape(len(pixels), -1, 3).mean(axis=1)
    assert (expected > 0).all(axis=1).sum() > 0.5 * len(pixels)  # mostly lit, some in the boxes' shadows
    got_a = a[pixels[:, 1], pixels[:, 0]]
    got_b = b[pixels[:, 1], pixels[:, 0]]
    got = (got_a + got_b) / 2
    variance = (got_a - got_b) ** 2 / 2  # unbiased per-pixel variance of one render
    # compare groups of pixels (four column bands, and all of them): mean, with its standard error
    bands = np.array_split(np.argsort(pixels[:, 0], kind="stable"), 4) + [np.arange(len(pixels))]
    for band in bands:
        mean_got, mean_ref = got[band].mean(axis=0), expected[band].mean(axis=0)
        stderr = np.sqrt(variance[band].sum(axis=0) / 2) / len(band)
        assert (stderr < 0.02 * mean_ref).all(), (stderr, mean_ref)
        assert (np.abs(mean_got - mean_ref) < 5 * stderr + 0.005 * mean_ref).all(), (mean_got, mean_ref, stderr)


def test_cornell_box_walls_have_their_colours(ctx):
    scene = cornell_box()
    image = render(ctx, scene, width=64, height=64, spp=64)
    assert np.isfinite(image).all() and (image >= 0).all()
    assert (image.reshape(-1, 3).sum(axis=1) > 0).mean() > 0.85  # all but a thin border past the open front

    def block(point):
        x, y = scene.camera.project([point], 64, 64)[0]
        return image[int(y) - 1:int(y) + 2, int(x) - 1:int(x) + 2].reshape(-1, 3).mean(axis=0)

    red, green = block((-1.0, 0.2, -0.5)), block((1.0, 0.2, -0.5))
    assert red[0] > 2 * red[1] and red[0] > 2 * red[2], red
    assert green[1] > 1.3 * green[0] and green[1] > 1.5 * green[2], green
    x_red = scene.camera.project([(-1.0, 0.2, -0.5)], 64, 64)[0, 0]
    assert x_red < 32  # the red wall is on the left


# --- progressive rendering through the scheduler ---------------------------------------------------------------------


def test_progressive_frames_equal_the_offline_render(ctx):
    import cupy

    options = RenderOptions(width=32, height=32, spp=16, seed=3)
    with RenderPipeline(ctx, cornell_box(), options) as pipeline:
        sched = FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype)  # its own stream: set-up waited on the GPU
        results = []
        try:
            for _ in range(4):
                with sched.frame() as f:
                    made = pipeline.record(f, 4)
                assert sorted(made) == ["image"]  # the frame slot's buffers: the image the launch tonemapped
                assert made["image"].shape == (32, 32, 4) and made["image"].dtype == np.uint8
                results += sched.poll()
            results += sched.drain()
            accum = cupy.asnumpy(pipeline.accumulation)  # every frame has completed
            assert pipeline.samples_done == 16
            offline = pipeline.render(16)  # the same camera and seed, all samples in one launch
            first = pipeline.render(4)
            with sched.frame() as f:
                pipeline.record(f, 2, readback=None)  # no readback
            with sched.frame() as f:  # another camera restarts the accumulation
                pipeline.record(f, 2, readback="image", camera=Camera((0.2, 0.0, 3.9), (0.0, 0.0, 0.0)))
            with pytest.raises(ValueError, match="spp"), sched.frame() as f:
                pipeline.record(f, 0)
            with pytest.raises(ValueError, match="do not make 'radiance'"), sched.frame() as f:
                pipeline.record(f, 1, readback="radiance")  # an output this pipeline's frames do not make
            with pytest.raises(RuntimeError, match="once per frame"), sched.frame() as f:
                pipeline.record(f, 1, readback=None)
                assert f.launched
                pipeline.record(f, 1, readback=None)  # a second launch would overwrite the frame's parameters
            extra = sched.drain()
            assert pipeline.samples_done == 3
        finally:
            sched.close()
    assert [r.index for r in results] == [0, 1, 2, 3]  # in order
    for r in results:
        assert r["image"].shape == (32, 32, 4) and r["image"].dtype == np.uint8
        assert (r["image"][..., 3] == 255).all()
    assert [sorted(r.readbacks) for r in extra] == [[], ["image"]]  # the aborted frames deliver nothing
    np.testing.assert_array_equal(accum[..., :3] / np.float32(16), offline)  # bit for bit
    assert (accum[..., 3] == 0).all()  # no sample was dropped as NaN/Inf
    tonemapped = tonemap_srgb(offline).astype(int)
    assert np.abs(results[-1]["image"][..., :3].astype(int) - tonemapped).max() <= 1  # fast pow: one code at most
    assert np.abs(results[0]["image"][..., :3].astype(int) - tonemap_srgb(first).astype(int)).max() <= 1
    assert not np.array_equal(results[0]["image"], results[-1]["image"])


# --- dynamic meshes ---------------------------------------------------------------------------------------------------


def test_refit_moves_the_occluder_where_predicted(ctx):
    backdrop = rectangle(np.array([[2.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 1, -1.0]]),
                         Material((0.0, 0.0, 0.0), emission=(1.0, 1.0, 1.0)), "backdrop")
    plate = rectangle(np.array([[0.3, 0, 0, -0.5], [0, 0.3, 0, 0.0], [0, 0, 1, 0.0]]), Material((0.0, 0.0, 0.0)))
    occluder = Mesh(plate.vertices, plate.indices, plate.material, "occluder", dynamic=True)
    scene = Scene([backdrop, occluder], Camera((0.0, 0.0, 3.0), (0.0, 0.0, 0.0), fov=45.0))
    w = h = 64
    moved = occluder.vertices + np.array([1.0, 0.0, 0.0], np.float32)
    with RenderPipeline(ctx, scene, RenderOptions(width=w, height=h, spp=4, max_depth=1)) as pipeline:
        accel = pipeline.device_scene.accel
        assert accel.options.allow_update and not accel.options.allow_compaction
        before = pipeline.render()
        pipeline.vertices(1).set(moved, stream=pipeline.stream)  # ordered before the refit on the same stream
        pipeline.refit()
        after = pipeline.render()
        with pytest.raises(IndexError):
            pipeline.vertices(2)
    old_in, old_out = box_masks(projected_bounds(scene.camera, occluder.vertices, w, h), w, h)
    new_in, new_out = box_masks(projected_bounds(scene.camera, moved, w, h), w, h)
    assert old_in.sum() > 50 and new_in.sum() > 50 and not (old_in & new_in).any()
    np.testing.assert_array_equal(before[old_in], 0.0)
    np.testing.assert_array_equal(before[old_out], 1.0)
    np.testing.assert_array_equal(after[new_in], 0.0)
    np.testing.assert_array_equal(after[new_out], 1.0)
    np.testing.assert_array_equal(after[old_in & new_out], 1.0)  # where the occluder was, the backdrop shows


# --- bad input --------------------------------------------------------------------------------------------------------


#: Mistakes refused before any GPU work: (exception, message fragment, the call given a context). The CPU test
#: ``test_bad_pipeline_input.py`` runs the same list over the stub, so that a changed name or message fails there.
MISTAKES = [
    (ValueError, "image size", lambda ctx: RenderPipeline(ctx, cornell_box(), {"width": 0})),
    (ValueError, "max_depth", lambda ctx: RenderPipeline(ctx, cornell_box(), {"max_depth": 0})),
    (ValueError, "finite", lambda ctx: Material(reflectance=(math.nan, 0.5, 0.5))),
    (ValueError, ">= 0", lambda ctx: Material(emission=(-1.0, 0.0, 0.0))),
    (ValueError, "emissive and dynamic", lambda ctx: Mesh(np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int32),
                                                         Material(emission=(1, 1, 1)), dynamic=True)),
    # depth is an output now: a name no integrator or stage knows.
    (ValueError, "unknown output 'depth_of_field'",
     lambda ctx: RenderPipeline(ctx, cornell_box(), outputs=("image", "depth_of_field"))),
    (ValueError, "cannot write 'denoised'", lambda ctx: RenderPipeline(ctx, cornell_box(), outputs=("denoised",))),
    (ValueError, "integrator must be one of",
     lambda ctx: RenderPipeline(ctx, cornell_box(), integrator="bidirectional")),
    (TypeError, "stages must be Stage objects", lambda ctx: RenderPipeline(ctx, cornell_box(), stages=[print])),
]


def test_bad_input_is_a_value_error_and_the_context_stays_usable(ctx):
    for exc, match, mistake in MISTAKES:
        with pytest.raises(exc, match=match):
            mistake(ctx)
    with RenderPipeline(ctx, cornell_box(), {"width": 8, "height": 8, "spp": 2}) as pipeline:
        with pytest.raises(ValueError, match="no dynamic mesh"):
            pipeline.refit()
        with pytest.raises(ValueError, match="spp"):
            pipeline.render(0)
        with pytest.raises(TypeError, match="spp"):
            pipeline.render(1.5)
        with pytest.raises(ValueError, match="count"):
            list(pipeline.frames(-1))
        image = pipeline.render()
    assert image.shape == (8, 8, 3) and np.isfinite(image).all() and image.max() > 0
    with pytest.raises(RuntimeError, match="closed"):
        pipeline.render()
    with pytest.raises(RuntimeError, match="closed"):
        list(pipeline.frames(1))
