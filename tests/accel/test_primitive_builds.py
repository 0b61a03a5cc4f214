"""What a build asks OptiX for, per primitive kind, with and without motion; motion transforms (CPU stand-ins).

The stand-in context (``fake_device``) records each ``optixAccelBuild``: the build options and a copy of every
``OptixBuildInput``; uploads keep their host contents by address, so each field is checked against the data it
points at.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from fake_device import FakeContext, install, keys_at

from optixasync._optix import types as t
from optixasync.accel import (
    AccelOptions,
    CurveInput,
    CustomInput,
    GeometryAccel,
    Instance,
    InstanceAccel,
    MatrixMotionTransform,
    SphereInput,
    SRTMotionTransform,
    TriangleInput,
    srt_key,
)


@pytest.fixture
def ctx(monkeypatch) -> FakeContext:
    install(monkeypatch)
    return FakeContext()


def points(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, 3)).astype(np.float32)


def last_inputs(ctx) -> list:
    return ctx.api.builds[-1]["inputs"]


def test_spheres(ctx):
    centers, radii = points(4), np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    ids = np.array([0, 1, 0, 1], np.uint32)
    gas = GeometryAccel(ctx, SphereInput(centers, radii, ids, num_sbt_records=2))
    assert (gas.kind, gas.num_primitives, gas.num_triangles) == ("sphere", 4, 0)
    b = last_inputs(ctx)[0]
    assert b.type == t.BuildInputType.SPHERES
    s = b.sphereArray
    assert (s.numVertices, s.vertexStrideInBytes, s.singleRadius, s.radiusStrideInBytes) == (4, 12, 0, 4)
    assert np.array_equal(ctx.uploaded[s.vertexBuffers[0]], centers)
    assert np.array_equal(ctx.uploaded[s.radiusBuffers[0]], radii)
    assert np.array_equal(ctx.uploaded[s.sbtIndexOffsetBuffer], ids) and s.sbtIndexOffsetSizeInBytes == 4
    assert s.numSbtRecords == 2 and [s.flags[k] for k in range(2)] == [int(t.GeometryFlags.DISABLE_ANYHIT)] * 2


def test_spheres_of_one_radius(ctx):
    GeometryAccel(ctx, SphereInput(points(3), 0.5, any_hit=True))
    s = last_inputs(ctx)[0].sphereArray
    assert (s.singleRadius, s.radiusStrideInBytes) == (1, 0)
    assert ctx.uploaded[s.radiusBuffers[0]].tolist() == [0.5]
    assert s.flags[0] == int(t.GeometryFlags.NONE)


@pytest.mark.parametrize(("kind", "curve_type"), [("linear", 0x2503), ("cubic_bspline", 0x2502),
                                                  ("catmull_rom", 0x2504), ("bezier", 0x2507),
                                                  ("flat_quadratic_bspline", 0x2505)])
def test_curves(ctx, kind, curve_type):
    vertices, widths = points(8), np.linspace(0.01, 0.08, 8, dtype=np.float32)
    gas = GeometryAccel(ctx, CurveInput(vertices, widths, kind=kind))
    c = last_inputs(ctx)[0].curveArray
    assert last_inputs(ctx)[0].type == t.BuildInputType.CURVES
    assert gas.kind == kind and c.curveType == curve_type
    degree = {"linear": 1, "flat_quadratic_bspline": 2}.get(kind, 3)
    assert (c.numPrimitives, c.numVertices, c.vertexStrideInBytes, c.widthStrideInBytes) == (8 - degree, 8, 12, 4)
    assert np.array_equal(ctx.uploaded[c.vertexBuffers[0]], vertices)
    assert np.array_equal(ctx.uploaded[c.widthBuffers[0]], widths)
    assert ctx.uploaded[c.indexBuffer].tolist() == list(range(8 - degree)) and c.indexStrideInBytes == 4
    assert (c.flag, c.endcapFlags) == (int(t.GeometryFlags.DISABLE_ANYHIT), 0)


def test_curves_with_end_caps(ctx):
    GeometryAccel(ctx, CurveInput(points(5), np.ones(5, np.float32), kind="bezier", endcaps=True))
    assert last_inputs(ctx)[0].curveArray.endcapFlags == int(t.CurveEndcapFlags.ON)


def test_rocaps_need_abi_105(monkeypatch):
    install(monkeypatch)
    curve = CurveInput(points(5), np.ones(5, np.float32), kind="cubic_bspline_rocaps")
    old = FakeContext(abi=93)
    with pytest.raises(ValueError, match="need OptiX ABI 105 \\(OptiX 9.0\\) or newer; this context uses 93"):
        GeometryAccel(old, curve)
    assert old.api.builds == []
    new = FakeContext(abi=105)
    GeometryAccel(new, curve)
    assert new.api.builds[-1]["inputs"][0].curveArray.curveType == 0x2509


def test_custom_primitives(ctx):
    boxes = np.array([[0, 0, 0, 1, 1, 1], [2, 0, 0, 3, 1, 1]], np.float32)
    gas = GeometryAccel(ctx, CustomInput(boxes))
    b = last_inputs(ctx)[0]
    assert b.type == t.BuildInputType.CUSTOM_PRIMITIVES and gas.kind == "custom"
    c = b.customPrimitiveArray
    assert (c.numPrimitives, c.strideInBytes, c.numSbtRecords) == (2, 24, 1)
    assert np.array_equal(ctx.uploaded[c.aabbBuffers[0]], boxes)


@pytest.mark.parametrize("inputs", [
    lambda: [TriangleInput(points(3)), SphereInput(points(2), 0.1)],
    lambda: [SphereInput(points(2), 0.1), CustomInput(np.array([[0, 0, 0, 1, 1, 1]], np.float32))],
    lambda: [CurveInput(points(4), np.ones(4, np.float32)), CurveInput(points(4), np.ones(4, np.float32), kind="bezier")],
])
def test_several_primitive_kinds_in_one_gas_are_refused(ctx, inputs):
    with pytest.raises(ValueError, match="one GAS holds one primitive kind \\(OptiX forbids mixing them\\)"):
        GeometryAccel(ctx, inputs())
    assert ctx.api.builds == [] and ctx.uploaded == {}  # refused before any upload


def test_curves_with_and_without_end_caps_in_one_gas(ctx):
    with pytest.raises(ValueError, match="all have end caps or all have none"):
        GeometryAccel(ctx, [CurveInput(points(4), np.ones(4, np.float32), endcaps=True),
                            CurveInput(points(4), np.ones(4, np.float32))])


def test_inputs_that_are_not_build_inputs(ctx):
    with pytest.raises(TypeError, match="TriangleInput, SphereInput, CurveInput or CustomInput"):
        GeometryAccel(ctx, [points(3)])
    with pytest.raises(TypeError, match="non-empty"):
        GeometryAccel(ctx, [])


# --- motion ---------------------------------------------------------------------------------------------------------

MOTION = AccelOptions(motion={"keys": 2, "time_begin": 0.0, "time_end": 1.0, "start_vanish": True})


def test_moving_spheres_give_one_buffer_per_key(ctx):
    start, end = points(3, 1), points(3, 2)
    GeometryAccel(ctx, SphereInput([start, end], [0.1, 0.3]), MOTION)
    build = ctx.api.builds[-1]
    assert build["motion"] == (2, int(t.MotionFlags.START_VANISH), 0.0, 1.0)
    s = build["inputs"][0].sphereArray
    assert [ctx.uploaded[p].tolist() for p in keys_at(s.radiusBuffers, 2)] == [[pytest.approx(0.1)],
                                                                                 [pytest.approx(0.3)]]
    assert np.array_equal(ctx.uploaded[s.vertexBuffers[0]], start) and np.array_equal(ctx.uploaded[s.vertexBuffers[1]], end)


def test_moving_curves_and_boxes(ctx):
    widths = np.ones(4, np.float32)
    GeometryAccel(ctx, CurveInput([points(4), points(4, 1)], [widths, widths * 2]), MOTION)
    c = last_inputs(ctx)[0].curveArray
    assert ctx.uploaded[c.widthBuffers[1]].tolist() == [2.0] * 4
    boxes = np.array([[0, 0, 0, 1, 1, 1]], np.float32)
    GeometryAccel(ctx, CustomInput([boxes, boxes + 1]), MOTION)
    a = last_inputs(ctx)[0].customPrimitiveArray
    assert ctx.uploaded[a.aabbBuffers[1]].tolist() == [[1, 1, 1, 2, 2, 2]]


def test_motion_keys_must_match_the_motion_options(ctx):
    with pytest.raises(ValueError, match="inputs\\[0\\] gives 2 motion key\\(s\\) but AccelOptions.motion is not set"):
        GeometryAccel(ctx, TriangleInput([points(3), points(3)]))
    with pytest.raises(ValueError, match="inputs\\[1\\] gives 1 motion key\\(s\\) but AccelOptions.motion has 2 keys"):
        GeometryAccel(ctx, [TriangleInput([points(3), points(3)]), TriangleInput(points(3))], MOTION)
    assert ctx.api.builds == []


def test_refit_of_a_moving_structure(ctx):
    options = AccelOptions(allow_update=True, motion={"keys": 2})
    gas = GeometryAccel(ctx, SphereInput([points(3), points(3, 1)], [0.1, 0.1]), options)
    moved = [points(3, 5), points(3, 6)]
    gas.refit(moved)  # one input: its key list alone
    build = ctx.api.builds[-1]
    assert build["operation"] == t.BuildOperation.UPDATE and build["motion"][0] == 2
    s = build["inputs"][0].sphereArray
    assert np.array_equal(ctx.uploaded[s.vertexBuffers[1]], moved[1])
    gas.refit([moved])  # or one entry per input
    with pytest.raises(ValueError, match="built with 2 motion key\\(s\\), got 1"):
        gas.refit([[points(3)]])
    with pytest.raises(ValueError, match="refit changes the sphere count: built with 3, got 4"):
        gas.refit([points(4), points(4)])


def test_refit_of_curves_moves_the_control_points(ctx):
    widths = np.ones(5, np.float32)
    gas = GeometryAccel(ctx, CurveInput(points(5), widths), AccelOptions(allow_update=True))
    moved = points(5, 9)
    gas.refit(moved)
    c = last_inputs(ctx)[0].curveArray
    assert np.array_equal(ctx.uploaded[c.vertexBuffers[0]], moved)
    assert np.array_equal(ctx.uploaded[c.widthBuffers[0]], widths)  # the widths stay


# --- motion transforms ----------------------------------------------------------------------------------------------


def _struct(ctx, transform) -> bytes:
    pointer, kind = ctx.api.converted[-1]
    assert pointer % 64 == 0  # aligned although the allocation was not
    return bytes(ctx.uploaded[pointer]), kind


def test_matrix_motion_transform(ctx):
    gas = GeometryAccel(ctx, TriangleInput(points(3)))
    start, end = np.eye(3, 4), np.eye(3, 4)
    end[0, 3] = 2.0
    transform = MatrixMotionTransform(ctx, gas, [start, end], {"keys": 2, "time_begin": 0.0, "time_end": 2.0})
    raw, kind = _struct(ctx, transform)
    assert kind == t.TraversableType.MATRIX_MOTION_TRANSFORM and transform.handle == 0x7001
    header = t.MatrixMotionTransform.from_buffer_copy(raw)
    assert header.child == gas.handle
    assert (header.motionOptions.numKeys, header.motionOptions.timeBegin, header.motionOptions.timeEnd) == (2, 0.0, 2.0)
    keys = np.frombuffer(raw[32:], np.float32).reshape(2, 3, 4)
    assert np.array_equal(keys[0], start) and keys[1][0, 3] == 2.0
    assert len(raw) == ctypes.sizeof(t.MatrixMotionTransform)


def test_a_transform_of_three_keys_is_longer_than_the_declared_struct(ctx):
    gas = GeometryAccel(ctx, TriangleInput(points(3)))
    MatrixMotionTransform(ctx, gas, [np.eye(4)] * 3)
    raw, _ = _struct(ctx, None)
    assert len(raw) == 32 + 3 * 48 and t.MatrixMotionTransform.from_buffer_copy(raw[:128]).motionOptions.numKeys == 3


def test_srt_motion_transform(ctx):
    gas = GeometryAccel(ctx, TriangleInput(points(3)))
    half = np.sqrt(0.5)
    keys = [srt_key(), srt_key(rotation=(0, 0, half, half), translation=(1, 2, 3))]
    SRTMotionTransform(ctx, gas, keys)
    raw, kind = _struct(ctx, None)
    assert kind == t.TraversableType.SRT_MOTION_TRANSFORM and len(raw) == ctypes.sizeof(t.SRTMotionTransform)
    second = t.SRTData.from_buffer_copy(raw[32 + 64:])
    assert (second.qz, second.qw, second.tx, second.tz) == pytest.approx((half, half, 1.0, 3.0))
    assert (second.sx, second.sy, second.sz) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(("make", "match"), [
    (lambda g: MatrixMotionTransform(g.ctx, g, [np.eye(3, 4)]), "at least 2 keys"),
    (lambda g: MatrixMotionTransform(g.ctx, g, [np.eye(3, 4), np.zeros((3, 4))]), "keys\\[1\\] is singular"),
    (lambda g: MatrixMotionTransform(g.ctx, g, [np.eye(3, 4)] * 2, {"keys": 3}), "say 3 keys but 2 were given"),
    (lambda g: SRTMotionTransform(g.ctx, g, [srt_key(), np.zeros(16)]), "quaternion .* must have unit length"),
    (lambda g: SRTMotionTransform(g.ctx, g, [srt_key(), np.zeros(12)]), "16 finite numbers"),
    (lambda g: srt_key(scale=(1, 0, 1)), "no zero component"),
    (lambda g: srt_key(rotation=(0, 0, 0, 0)), "non-zero quaternion"),
])
def test_bad_motion_transforms(ctx, make, match):
    gas = GeometryAccel(ctx, TriangleInput(points(3)))
    with pytest.raises(ValueError, match=match):
        make(gas)
    assert ctx.api.converted == []


def test_a_motion_instance_and_a_stale_child(ctx):
    gas = GeometryAccel(ctx, TriangleInput(points(3)), AccelOptions(allow_compaction=True))
    transform = MatrixMotionTransform(ctx, gas, [np.eye(3, 4)] * 2)
    ias = InstanceAccel(ctx, [Instance(transform)])
    assert ias.records()["handle"][0] == transform.handle
    gas.handle = 0x9999  # as a compaction or rebuild would leave it
    assert transform.stale
    with pytest.raises(ValueError, match="motion transform was rebuilt or compacted .* call transform.update\\(\\)"):
        ias.rebuild()
    transform.update()
    assert not transform.stale and t.MatrixMotionTransform.from_buffer_copy(_struct(ctx, None)[0]).child == 0x9999
    ias.rebuild()
    with pytest.raises(TypeError, match="acceleration structure or a transform"):
        MatrixMotionTransform(ctx, points(3), [np.eye(3, 4)] * 2)
