"""Host-side validation of sphere, curve, custom-primitive and moving inputs: each mistake a clear error, no GPU."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.accel import (
    AccelOptions,
    CurveInput,
    CustomInput,
    MotionOptions,
    SphereInput,
    TriangleInput,
    curve_segments,
)


def points(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (n, 3)).astype(np.float32)


# --- spheres --------------------------------------------------------------------------------------------------------


def test_spheres_with_one_radius_or_one_each():
    single = SphereInput(points(5), 0.25)
    assert single.single_radius and single.num_spheres == 5 and single.num_primitives == 5
    assert single.radius_keys[0].tolist() == [0.25]
    each = SphereInput(points(5), np.linspace(0.1, 0.5, 5, dtype=np.float32))
    assert not each.single_radius and each.num_keys == 1


@pytest.mark.parametrize(("radii", "match"), [
    (-0.5, "radii must be finite and >= 0, got -0.5"),
    (float("nan"), "radii must be finite and >= 0, got nan"),
    (np.array([0.1, -0.1, 0.2], np.float32), "radii must be finite and >= 0: entry 1 is -0.1"),
    (np.array([0.1, np.nan, 0.2], np.float32), "entry 1 is nan"),
    (np.array([0.1, 0.2], np.float32), "radii must have shape \\(3,\\), one per point"),
    (np.array([0.1, 0.2, 0.3], np.float64), "radii must have dtype float32"),
    ([0.1, 0.2, 0.3], "radii have 3 motion key\\(s\\) but centers 1.*per-sphere radii are one float32 array"),
])
def test_bad_radii(radii, match):
    with pytest.raises(ValueError, match=match):
        SphereInput(points(3), radii)


def test_sphere_material_ids():
    ids = np.array([0, 1, 1], np.uint32)
    assert SphereInput(points(3), 0.1, ids, num_sbt_records=2).material_ids is ids
    with pytest.raises(ValueError, match="material_ids reach 1 but num_sbt_records is 1"):
        SphereInput(points(3), 0.1, ids)
    with pytest.raises(ValueError, match="one per sphere"):
        SphereInput(points(3), 0.1, np.zeros(4, np.uint32), num_sbt_records=2)


# --- curves ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "degree"), [("linear", 1), ("quadratic_bspline", 2), ("cubic_bspline", 3),
                                              ("catmull_rom", 3), ("bezier", 3), ("flat_quadratic_bspline", 2)])
def test_one_strand_without_indices(kind, degree):
    curve = CurveInput(points(7), np.full(7, 0.05, np.float32), kind=kind)
    assert curve.num_segments == 7 - degree and curve.indices.tolist() == list(range(7 - degree))
    assert curve.curve.degree == degree


@pytest.mark.parametrize(("kind", "count"), [("linear", 1), ("quadratic_bspline", 2), ("cubic_bspline", 3),
                                             ("bezier", 3)])
def test_too_few_control_points_for_the_degree(kind, count):
    with pytest.raises(ValueError, match=f"{count} control point\\(s\\) are too few for a '{kind}' segment"):
        CurveInput(points(count), np.ones(count, np.float32), kind=kind)


def test_indices_against_the_degree():
    vertices, widths = points(8), np.ones(8, np.float32)
    assert CurveInput(vertices, widths, np.array([0, 4], np.uint32)).num_segments == 2
    with pytest.raises(ValueError, match="indices span \\[0, 5\\] .* the last segment may start at 4"):
        CurveInput(vertices, widths, np.array([0, 5], np.uint32))
    with pytest.raises(ValueError, match="indices span \\[-1, 2\\]"):
        CurveInput(vertices, widths, np.array([-1, 2], np.int32), kind="linear")
    with pytest.raises(ValueError, match="shape \\(S,\\), one per segment"):
        CurveInput(vertices, widths, np.array([[0, 1]], np.uint32))
    with pytest.raises(ValueError, match="at least one segment"):
        CurveInput(vertices, widths, np.zeros(0, np.uint32))


@pytest.mark.parametrize(("widths", "match"), [
    (np.array([0.1, -1, 0.1, 0.1], np.float32), "widths must be finite and >= 0: entry 1 is -1.0"),
    (np.array([0.1, np.inf, 0.1, 0.1], np.float32), "entry 1 is inf"),
    (np.ones(3, np.float32), "widths must have shape \\(4,\\)"),
])
def test_bad_widths(widths, match):
    with pytest.raises(ValueError, match=match):
        CurveInput(points(4), widths)


def test_curve_kinds_and_end_caps():
    with pytest.raises(ValueError, match="unknown curve kind 'spline'; known: linear, quadratic_bspline"):
        CurveInput(points(4), np.ones(4, np.float32), kind="spline")
    with pytest.raises(ValueError, match="unknown curve kind 'sphere'"):
        CurveInput(points(4), np.ones(4, np.float32), kind="sphere")
    with pytest.raises(ValueError, match="linear curves always have round caps"):
        CurveInput(points(4), np.ones(4, np.float32), kind="linear", endcaps=True)
    assert CurveInput(points(4), np.ones(4, np.float32), endcaps=True).endcaps


def test_strands_end_to_end():
    strands = [points(5, 1), points(4, 2), points(6, 3)]
    curve = CurveInput.from_strands(strands, 0.02, kind="cubic_bspline")
    assert curve.num_vertices == 15 and curve.indices.tolist() == [0, 1, 5, 9, 10, 11]
    assert curve_segments([2, 3], "linear").tolist() == [0, 2, 3]
    with pytest.raises(ValueError, match="strand 1 has 3 control point\\(s\\); a 'cubic_bspline' segment reads 4"):
        CurveInput.from_strands([points(5), points(3)], 0.02)
    with pytest.raises(ValueError, match="one radius per control point of each strand"):
        CurveInput.from_strands([points(5)], [np.ones(4, np.float32)])


# --- custom primitives ----------------------------------------------------------------------------------------------


def test_boxes():
    boxes = np.array([[0, 0, 0, 1, 1, 1], [2, 2, 2, 3, 3, 3]], np.float32)
    assert CustomInput(boxes).num_boxes == 2
    with pytest.raises(ValueError, match="box 1 .* has min > max"):
        CustomInput(np.array([[0, 0, 0, 1, 1, 1], [2, 2, 2, 1, 3, 3]], np.float32))
    with pytest.raises(ValueError, match="box 0 .* is not finite"):
        CustomInput(np.array([[0, 0, np.nan, 1, 1, 1]], np.float32))
    with pytest.raises(ValueError, match="shape \\(N, 6\\)"):
        CustomInput(np.zeros((2, 3), np.float32))


# --- motion keys ----------------------------------------------------------------------------------------------------


def test_motion_keys_of_each_kind():
    start, end = points(6, 1), points(6, 2)
    assert TriangleInput([start, end]).num_keys == 2
    assert SphereInput([start, end], [0.1, 0.2]).num_keys == 2
    assert CurveInput([start, end], [np.ones(6, np.float32)] * 2).num_keys == 2
    boxes = np.tile(np.array([0, 0, 0, 1, 1, 1], np.float32), (3, 1))
    assert CustomInput([boxes, boxes + 1, boxes + 2]).num_keys == 3


@pytest.mark.parametrize("make", [
    lambda a, b: TriangleInput([a, b]),
    lambda a, b: SphereInput([a, b], 0.1),
    lambda a, b: CurveInput([a, b], np.ones(6, np.float32)),
])
def test_motion_keys_of_different_counts(make):
    with pytest.raises(ValueError, match="the motion keys have different counts \\[6, 9\\]"):
        make(points(6), points(9))


def test_radii_and_widths_keys_match_the_positions():
    with pytest.raises(ValueError, match="radii have 1 motion key\\(s\\) but centers 2"):
        SphereInput([points(3), points(3)], 0.1)
    with pytest.raises(ValueError, match="widths have 1 motion key\\(s\\) but vertices 2"):
        CurveInput([points(4), points(4)], np.ones(4, np.float32))
    with pytest.raises(ValueError, match="no motion key"):
        TriangleInput([])


def test_motion_options():
    options = AccelOptions(motion={"keys": 3, "time_begin": -1, "time_end": 2, "end_vanish": True})
    assert options.motion == MotionOptions(3, -1.0, 2.0, False, True) and options.num_keys == 3
    assert options.motion.flags == 2 and options.motion.to_struct().numKeys == 3
    assert AccelOptions().num_keys == 1
    for bad, exc, match in [({"keys": 1}, ValueError, "MotionOptions.keys must be in \\[2, 65535\\]"),
                            ({"time_end": 0.0}, ValueError, "time_end > time_begin"),
                            ({"time_begin": float("nan")}, ValueError, "must be finite"),
                            ({"start_vanish": 1}, TypeError, "start_vanish must be a bool"),
                            ({"speed": 2}, TypeError, "unknown MotionOptions option")]:
        with pytest.raises(exc, match=match):
            AccelOptions(motion=bad)
