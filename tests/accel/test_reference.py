"""The numpy ray casting reference that the GPU tests compare against, checked on cases worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
import reference
from reference import ambiguous_rays, cast_instances_reference, cast_reference, transform_points

SQUARE_VERTICES = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
SQUARE_INDICES = np.array([[0, 1, 2], [0, 2, 3]], np.int32)  # prim 0 below the diagonal y = x, prim 1 above
DOWN = (0.0, 0.0, -1.0)


def square_at(z: float) -> np.ndarray:
    return SQUARE_VERTICES + np.array([0, 0, z], np.float32)


def cast_square(origins, directions, **kwargs):
    return cast_reference(SQUARE_VERTICES, SQUARE_INDICES, np.array(origins, np.float64),
                          np.array(directions, np.float64), **kwargs)


def stacked():
    """Two unit squares, at z = 0 (prims 0, 1) and z = 1 (prims 2, 3)."""
    vertices = np.concatenate([square_at(0.0), square_at(1.0)])
    indices = np.concatenate([SQUARE_INDICES, SQUARE_INDICES + 4])
    return vertices, indices


# --- one mesh -------------------------------------------------------------------------------------------------------


def test_straight_down_onto_the_square():
    hits = cast_square([[0.75, 0.25, 2.0], [0.25, 0.75, 2.0]], [DOWN, DOWN])
    assert hits["hit"].tolist() == [True, True]
    assert hits["prim"].tolist() == [0, 1]
    assert hits["inst"].tolist() == [0, 0]  # a bare mesh: instance 0
    np.testing.assert_allclose(hits["t"], [2.0, 2.0], rtol=1e-15)
    assert hits["prim"].dtype == np.int32 and hits["inst"].dtype == np.int32 and hits["hit"].dtype == bool


def test_t_is_in_units_of_the_direction_vector():
    hits = cast_square([[0.75, 0.25, 2.0], [0.75, 0.25, 2.0]], [(0, 0, -4.0), (0, 0, -0.5)])
    np.testing.assert_allclose(hits["t"], [0.5, 4.0], rtol=1e-15)


def test_oblique_ray():
    # from (0, 0, 2) toward (0.8, 0.2, 0): the target itself is at t = 1 for the unnormalised direction
    hits = cast_square([[0.0, 0.0, 2.0]], [(0.8, 0.2, -2.0)])
    assert hits["prim"].tolist() == [0]
    np.testing.assert_allclose(hits["t"], [1.0], rtol=1e-14)


def test_both_faces_are_hit():
    hits = cast_square([[0.75, 0.25, -3.0], [0.25, 0.75, 2.0]], [(0, 0, 1.0), DOWN])
    assert hits["hit"].all()
    np.testing.assert_allclose(hits["t"], [3.0, 2.0], rtol=1e-15)
    # reversing the winding changes nothing
    flipped = cast_reference(SQUARE_VERTICES, SQUARE_INDICES[:, ::-1], np.array([[0.75, 0.25, -3.0]]),
                             np.array([(0, 0, 1.0)]))
    assert flipped["prim"].tolist() == [0]
    np.testing.assert_allclose(flipped["t"], [3.0], rtol=1e-15)


@pytest.mark.parametrize(
    "origin, direction",
    [
        ([1.5, 0.5, 2.0], DOWN),  # beside the square
        ([0.5, 0.25, 2.0], (0, 0, 1.0)),  # pointing away from it
        ([-1.0, 0.5, 0.0], (1.0, 0.0, 0.0)),  # in the plane of the square: parallel, no hit
        ([0.5, 0.25, 2.0], (1.0, 0.0, 0.0)),  # parallel above it
    ],
)
def test_misses(origin, direction):
    hits = cast_square([origin], [direction])
    assert hits["hit"].tolist() == [False]
    assert hits["t"].tolist() == [-1.0]
    assert hits["prim"].tolist() == [-1]
    assert hits["inst"].tolist() == [-1]
    assert np.isnan(hits["bary"][0])


def test_nearest_of_two_stacked_triangles_wins():
    vertices, indices = stacked()
    origins = np.array([[0.75, 0.25, 5.0], [0.75, 0.25, -5.0], [0.25, 0.75, 5.0]])
    directions = np.array([DOWN, (0, 0, 1.0), DOWN])
    for order in (slice(None), slice(None, None, -1)):  # the order of the triangles does not matter
        perm = np.arange(len(indices))[order]
        hits = cast_reference(vertices, indices[perm], origins, directions)
        np.testing.assert_allclose(hits["t"], [4.0, 5.0, 4.0], rtol=1e-15)
        assert perm[hits["prim"]].tolist() == [2, 0, 3]
        np.testing.assert_allclose(hits["t_second"], [5.0, 6.0, 5.0], rtol=1e-15)


def test_tmin_and_tmax():
    vertices, indices = stacked()
    origin, direction = np.array([[0.75, 0.25, 5.0]]), np.array([DOWN])
    for tmin, tmax, prim, t in [
        (0.0, np.inf, 2, 4.0),
        (0.0, 3.5, -1, -1.0),  # both triangles beyond tmax
        (0.0, 4.5, 2, 4.0),
        (4.5, np.inf, 0, 5.0),  # the upper one before tmin: the lower one is hit
        (4.5, 4.9, -1, -1.0),  # between the two
        (5.5, np.inf, -1, -1.0),  # both before tmin
    ]:
        hits = cast_reference(vertices, indices, origin, direction, tmin=tmin, tmax=tmax)
        assert hits["prim"].tolist() == [prim], (tmin, tmax)
        np.testing.assert_allclose(hits["t"], [t], rtol=1e-15)
        assert hits["hit"].tolist() == [prim >= 0]


def test_hit_behind_the_origin_does_not_count():
    hits = cast_square([[0.75, 0.25, -1.0]], [DOWN])
    assert not hits["hit"][0]
    hits = cast_square([[0.75, 0.25, -1.0]], [DOWN], tmin=-2.0)
    np.testing.assert_allclose(hits["t"], [-1.0], rtol=1e-15)  # negative t allowed by tmin: the plane at t = -1
    assert hits["prim"].tolist() == [0]


# --- instances ------------------------------------------------------------------------------------------------------


def test_transform_points():
    transform = np.array([[2, 0, 0, 10], [0, 3, 0, -1], [0, 0, 1, 0.5]], np.float32)
    points = transform_points(SQUARE_VERTICES, transform)
    np.testing.assert_array_equal(points, [[10, -1, 0.5], [12, -1, 0.5], [12, 2, 0.5], [10, 2, 0.5]])


def test_translate_and_scale_move_the_hit():
    # scale by 2, then move to x in [10, 12], z = 1
    transform = np.array([[2, 0, 0, 10], [0, 2, 0, 0], [0, 0, 2, 1]], np.float32)
    origins = np.array([[11.5, 0.5, 5.0], [10.5, 1.5, 5.0], [0.75, 0.25, 5.0]])
    directions = np.array([DOWN] * 3)
    hits = cast_reference(SQUARE_VERTICES, SQUARE_INDICES, origins, directions, transforms=[(transform, 7)])
    assert hits["hit"].tolist() == [True, True, False]
    assert hits["prim"].tolist() == [0, 1, -1]
    assert hits["inst"].tolist() == [7, 7, -1]
    np.testing.assert_allclose(hits["t"], [4.0, 4.0, -1.0], rtol=1e-15)
    # barycentrics are those of the object-space point (0.75, 0.25): (0.25, 0.5, 0.25)
    np.testing.assert_allclose(hits["bary"][0], 0.25, rtol=1e-12)


def test_nearest_instance_wins_and_is_named():
    identity = np.eye(3, 4, dtype=np.float32)
    lifted = identity.copy()
    lifted[2, 3] = 2.0
    origins = np.array([[0.75, 0.25, 5.0], [0.75, 0.25, -5.0], [3.0, 3.0, 5.0]])
    directions = np.array([DOWN, (0, 0, 1.0), DOWN])
    hits = cast_reference(SQUARE_VERTICES, SQUARE_INDICES, origins, directions, transforms=[(identity, 3), (lifted, 9)])
    assert hits["inst"].tolist() == [9, 3, -1]
    assert hits["prim"].tolist() == [0, 0, -1]  # the primitive index within the mesh, not across instances
    np.testing.assert_allclose(hits["t"], [3.0, 5.0, -1.0], rtol=1e-15)


def test_instances_of_different_meshes():
    triangle = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    shifted = np.eye(3, 4, dtype=np.float32)
    shifted[0, 3] = 5.0
    instances = [
        (SQUARE_VERTICES, SQUARE_INDICES, np.eye(3, 4, dtype=np.float32), 1),
        (triangle, np.array([[0, 1, 2]], np.int32), shifted, 2),
    ]
    origins = np.array([[0.25, 0.75, 1.0], [5.2, 0.2, 1.0], [5.8, 0.8, 1.0]])
    hits = cast_instances_reference(instances, origins, np.array([DOWN] * 3))
    assert hits["inst"].tolist() == [1, 2, -1]
    assert hits["prim"].tolist() == [1, 0, -1]


def test_rotation_about_z():
    c, s = np.cos(np.pi / 2), np.sin(np.pi / 2)
    rotation = np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0]], np.float32)  # (x, y) -> (-y, x)
    hits = cast_reference(SQUARE_VERTICES, SQUARE_INDICES, np.array([[-0.25, 0.75, 1.0], [0.75, 0.25, 1.0]]),
                          np.array([DOWN, DOWN]), transforms=[(rotation, 4)])
    assert hits["prim"].tolist() == [0, -1]  # object point (0.75, 0.25) is world point (-0.25, 0.75)
    assert hits["inst"].tolist() == [4, -1]


# --- diagnostics for the comparison ---------------------------------------------------------------------------------


def test_barycentric_and_edge_distance():
    hits = cast_square([[0.75, 0.25, 2.0], [0.5, 0.1, 2.0]], [DOWN, (0, 0, -3.0)])
    # (0.75, 0.25) in triangle (0,0), (1,0), (1,1): barycentrics (0.25, 0.5, 0.25)
    np.testing.assert_allclose(hits["bary"], [0.25, 0.1], rtol=1e-12)
    # nearest edges: y = 0 and x = 1 at 0.25; y = 0 at 0.1 (the direction's length does not matter)
    np.testing.assert_allclose(hits["edge_distance"], [0.25, 0.1], rtol=1e-12)


def test_edge_distance_of_an_oblique_ray_is_perpendicular_to_the_ray():
    # tilted 60 degrees from the normal, toward +x: distances along y are seen unchanged, along x halved
    direction = np.array([[np.sin(np.pi / 3), 0.0, -np.cos(np.pi / 3)]])
    target = np.array([0.9, 0.5, 0.0])  # in prim 0; the nearest edge is x = 1 at 0.1, seen as 0.05
    origin = target - 2.0 * direction[0]
    hits = cast_square(origin[None], direction)
    assert hits["prim"].tolist() == [0]
    np.testing.assert_allclose(hits["edge_distance"], [0.05], rtol=1e-9)


def test_near_miss_is_reported_as_grazing():
    hits = cast_square([[1.0 + 1e-6, 0.5, 2.0]], [DOWN])
    assert not hits["hit"][0]
    assert hits["edge_distance"][0] == pytest.approx(1e-6, rel=1e-6)
    assert hits["bary_graze"][0] == pytest.approx(1e-6, rel=1e-6)
    assert ambiguous_rays(hits, edge_margin=1e-5)[0]
    assert ambiguous_rays(hits)[0]  # within the default barycentric margin too


def test_ambiguous_rays():
    vertices = np.concatenate([square_at(0.0), square_at(1e-6), square_at(1.0)])
    indices = np.concatenate([SQUARE_INDICES, SQUARE_INDICES + 8, SQUARE_INDICES + 4])  # z = 0, 1, 1e-6
    origins = np.array([
        [0.75, 0.25, 2.0],  # clear hit on z = 1 from above
        [0.5, 0.5 + 1e-7, -2.0],  # on the diagonal between prims 0 and 1
        [0.75, 0.25, 0.5],  # down: z = 1e-6 and z = 0 hit almost at the same t
        [1.2, 0.5, 0.5],  # clear miss
    ])
    directions = np.array([DOWN, (0, 0, 1.0), DOWN, DOWN])
    hits = cast_reference(vertices, indices, origins, directions)
    assert hits["prim"].tolist() == [2, 1, 4, -1]
    assert ambiguous_rays(hits).tolist() == [False, True, True, False]
    assert ambiguous_rays(hits, t_rel=1e-9).tolist() == [False, True, False, False]


def test_hit_near_tmax_is_ambiguous():
    hits = cast_square([[0.75, 0.25, 2.0]] * 3, [DOWN] * 3, tmax=2.0 + 1e-9)
    assert ambiguous_rays(hits).all()
    hits = cast_square([[0.75, 0.25, 2.0]], [DOWN], tmax=2.0 - 1e-9)
    assert not hits["hit"][0]
    assert ambiguous_rays(hits)[0]
    hits = cast_square([[0.75, 0.25, 2.0]], [DOWN], tmax=3.0)
    assert not ambiguous_rays(hits)[0]


# --- against an independent computation -----------------------------------------------------------------------------


def brute_force(vertices, indices, origins, directions, tmin=0.0, tmax=np.inf):
    """One ray, one triangle at a time: solve o + t d = v0 + u e1 + v e2 as a 3x3 linear system."""
    t_out = np.full(len(origins), -1.0)
    prim_out = np.full(len(origins), -1)
    for r, (o, d) in enumerate(zip(origins, directions, strict=True)):
        for k, (a, b, c) in enumerate(vertices[indices].astype(np.float64)):
            matrix = np.column_stack([-d, b - a, c - a])
            if abs(np.linalg.det(matrix)) < 1e-14:
                continue
            t, u, v = np.linalg.solve(matrix, o - a)
            if u >= 0 and v >= 0 and u + v <= 1 and tmin <= t <= tmax and (prim_out[r] < 0 or t < t_out[r]):
                t_out[r], prim_out[r] = t, k
    return t_out, prim_out


def random_scene(rng, num_tris, num_rays):
    centres = rng.uniform(-1, 1, (num_tris, 1, 3))
    vertices = (centres + rng.normal(0, 0.25, (num_tris, 3, 3))).reshape(-1, 3).astype(np.float32)
    indices = rng.permutation(len(vertices)).reshape(-1, 3).astype(np.int32)
    origins = rng.normal(size=(num_rays, 3))
    origins *= 3 / np.linalg.norm(origins, axis=1, keepdims=True)
    directions = rng.uniform(-1, 1, (num_rays, 3)) * 0.8 - origins
    return vertices, indices, origins, directions


def test_matches_brute_force_on_a_random_scene():
    vertices, indices, origins, directions = random_scene(np.random.default_rng(1), 40, 300)
    hits = cast_reference(vertices, indices, origins, directions)
    t, prim = brute_force(vertices, indices, origins, directions)
    clear = ~ambiguous_rays(hits)
    assert clear.mean() > 0.9
    assert 0.2 < hits["hit"].mean() < 0.95  # the scene is neither empty nor opaque
    np.testing.assert_array_equal(hits["prim"][clear], prim[clear])
    np.testing.assert_allclose(hits["t"][clear], t[clear], rtol=1e-10)


def test_matches_brute_force_with_an_interval():
    vertices, indices, origins, directions = random_scene(np.random.default_rng(2), 30, 200)
    hits = cast_reference(vertices, indices, origins, directions, tmin=0.5, tmax=0.9)
    t, prim = brute_force(vertices, indices, origins, directions, tmin=0.5, tmax=0.9)
    clear = ~ambiguous_rays(hits)
    assert clear.mean() > 0.9
    np.testing.assert_array_equal(hits["prim"][clear], prim[clear])
    np.testing.assert_allclose(hits["t"][clear], t[clear], rtol=1e-10)


def test_chunking_does_not_change_the_result(monkeypatch):
    vertices, indices, origins, directions = random_scene(np.random.default_rng(3), 50, 257)
    whole = cast_reference(vertices, indices, origins, directions)
    monkeypatch.setattr(reference, "_CHUNK_ELEMENTS", 7 * 50)  # 7 rays at a time, the last chunk short
    chunked = cast_reference(vertices, indices, origins, directions)
    for key in whole:
        np.testing.assert_array_equal(chunked[key], whole[key], err_msg=key)
    monkeypatch.setattr(reference, "_CHUNK_ELEMENTS", 1)  # fewer elements than triangles: one ray at a time
    single = cast_reference(vertices, indices, origins, directions)
    for key in whole:
        np.testing.assert_array_equal(single[key], whole[key], err_msg=key)


def test_no_rays_and_no_instances():
    empty = cast_square(np.zeros((0, 3)), np.zeros((0, 3)))
    assert all(len(v) == 0 for v in empty.values())
    none = cast_instances_reference([], np.array([[0.0, 0.0, 1.0]]), np.array([DOWN]))
    assert none["hit"].tolist() == [False] and none["inst"].tolist() == [-1]
