"""GPU: USD stages through the render pipeline (the host tests' twins, and Mitsuba 3 where a twin exists).

The sample stage of ``usd_scenes.py`` renders as the same scene built in Python, the time samples of a stage play
frame by frame through :class:`~optixasync.render.NodeMotion`, and a stage of displayColor'd double-sided gprims
under a rect light and a dome (materials that have an exact Mitsuba twin) matches Mitsuba per block.
"""

from __future__ import annotations

import numpy as np
import pytest
from usd_scenes import python_twin, slide_columns, write_sample_stage, write_slide_stage

from optixasync.render import NodeMotion, RenderOptions, RenderPipeline

pytest.importorskip("pxr", reason="the usd extra (usd-core) is not installed")
from pxr import Gf, Usd, UsdGeom, UsdLux  # noqa: E402

from optixasync.scene import load_usd, read_usd  # noqa: E402

pytestmark = pytest.mark.gpu


def render(ctx, scene, spp, **options):
    with RenderPipeline(ctx, scene, RenderOptions(spp=spp, **options)) as pipeline:
        return pipeline.render(spp)


def test_the_sample_stage_renders_as_its_python_twin(ctx, tmp_path):
    write_sample_stage(tmp_path / "sample.usdc")
    options = dict(width=96, height=64, max_depth=4, seed=3)
    ours = render(ctx, load_usd(tmp_path / "sample.usdc"), 64, **options)
    twin = render(ctx, python_twin(), 64, **options)
    close = np.isclose(ours, twin, rtol=1e-4, atol=1e-5).all(axis=2)
    assert close.mean() > 0.99, f"{(~close).sum()} of {close.size} pixels differ"


def test_time_samples_play_frame_by_frame(ctx, tmp_path):
    write_slide_stage(tmp_path / "slide.usda")
    asset = read_usd(tmp_path / "slide.usda", motion_blur=False)
    w = h = 16
    with RenderPipeline(ctx, asset.scene, RenderOptions(width=w, height=h, max_depth=1), outputs=("radiance",),
                        frames_in_flight=2) as pipeline:
        images = []
        for result in pipeline.frames(5, 8, update=NodeMotion(asset.animation, dt=0.25)):
            with result:
                images.append(np.array(result["radiance"][..., :3]))
    for k, image in enumerate(images):
        dark = slide_columns(w, k * 0.25)
        row = image[h // 2, :, 0]
        np.testing.assert_array_equal(row[dark], 0.0)
        np.testing.assert_allclose(row[~dark], 1.0, rtol=1e-6)


def test_a_diffuse_stage_matches_mitsuba_per_block(ctx, tmp_path):
    mi = pytest.importorskip("mitsuba", reason="Mitsuba 3 is not installed: pip install mitsuba")
    from optixasync.testing import mitsuba_scene_dict

    mi.set_variant("cuda_ad_rgb" if "cuda_ad_rgb" in mi.variants() else "scalar_rgb")
    stage = Usd.Stage.CreateNew(str(tmp_path / "diffuse.usda"))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    floor = UsdGeom.Mesh.Define(stage, "/Floor")
    floor.CreatePointsAttr([(-2, 0, -2), (2, 0, -2), (2, 0, 2), (-2, 0, 2)])
    floor.CreateFaceVertexCountsAttr([4])
    floor.CreateFaceVertexIndicesAttr([0, 3, 2, 1])
    for path, colour, kind, place in (("/Box", (0.7, 0.3, 0.2), "Cube", (-0.5, 0.5, 0)),
                                      ("/Can", (0.2, 0.5, 0.7), "Cylinder", (0.7, 0.5, 0.2))):
        prim = stage.DefinePrim(path, kind)
        UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(*place))
        UsdGeom.Xformable(prim).AddScaleOp().Set(Gf.Vec3f(0.5, 0.5, 0.5))
        UsdGeom.Gprim(prim).CreateDisplayColorAttr([colour])
        UsdGeom.Gprim(prim).CreateDoubleSidedAttr(True)
    UsdGeom.Gprim(floor.GetPrim()).CreateDisplayColorAttr([(0.6, 0.6, 0.6)])
    UsdGeom.Gprim(floor.GetPrim()).CreateDoubleSidedAttr(True)
    lamp = UsdLux.RectLight.Define(stage, "/Lamp")
    lamp.CreateIntensityAttr(6.0)
    lamp.AddTranslateOp().Set(Gf.Vec3d(0, 2.5, 0))
    lamp.AddRotateXOp().Set(90.0)  # -z turned to -y: it shines down
    UsdLux.DomeLight.Define(stage, "/Sky").CreateIntensityAttr(0.3)
    camera = UsdGeom.Camera.Define(stage, "/Cam")
    camera.AddTranslateOp().Set(Gf.Vec3d(0, 1.2, 4))
    camera.AddRotateXOp().Set(-12.0)
    stage.GetRootLayer().Save()
    scene = load_usd(tmp_path / "diffuse.usda")
    assert {m.material.bsdf for m in scene.meshes} == {"diffuse"}
    size, spp = 64, 1024
    ours = render(ctx, scene, spp, width=size, height=size, max_depth=6)
    theirs = np.array(mi.render(mi.load_dict(mitsuba_scene_dict(scene, width=size, height=size, spp=spp,
                                                                max_depth=6)), spp=spp))[..., :3]
    blocks = lambda a: a.reshape(size // 8, 8, size // 8, 8, 3).mean(axis=(1, 3))  # noqa: E731
    assert np.abs(blocks(ours) - blocks(theirs)).max() < 0.03 * max(blocks(theirs).max(), 1e-3)
