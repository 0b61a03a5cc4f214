"""Each output of a batch's raygen against an analytic reference, on the CPU through the host build of the kernel.

A plane and a sphere mesh seen by pinhole (OpenCV and OpenGL poses) and orthographic views, their depth,
distance, position, both normals, ids, UV and coverage compared with closed forms and with a numpy ray caster
(``reference.py``); motion vectors against the reprojection of a moved camera and of a moved instance; the ray
counter against the stand-in's own count of the rays it traced. Every view here has ``jitter=False``, so the
G-buffer sample goes through the pixel's centre. Skipped, with the reason, without a C++ compiler.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from host_build import compiler
from host_views import HostBatch, batch_library

from optixasync.render import NO_ID, RenderOptions, Views, Worlds
from optixasync.scene import Camera, Environment, Material, Mesh, Scene, cube, sphere

HERE = Path(__file__).resolve().parent
W, H = 20, 14
FX, FY, CX, CY = 12.0, 11.0, 10.0, 7.0
EVERY = ("radiance", "depth", "distance", "position", "normal", "geometric_normal", "mesh_id", "primitive_id",
         "material_id", "uv", "coverage", "spp", "motion", "albedo")


def load_reference():
    spec = importlib.util.spec_from_file_location("render_reference", HERE / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lib():
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    return batch_library()


def options(**kw) -> RenderOptions:
    return RenderOptions(width=kw.pop("width", W), height=kw.pop("height", H), jitter=False, max_depth=2, **kw)


def lit(meshes, camera=None) -> Scene:
    scene = Scene(list(meshes), camera or Camera((0, 0, 0), (0, 0, 1)))
    scene.environment = Environment(radiance=(0.5, 0.5, 0.5))
    return scene


def plane(z: float, facing: float, uv: bool = True) -> Mesh:
    """The square [-5, 5]^2 at height z, its front facing ``facing`` (+1: +z, -1: -z), UV = (x + 5, y + 5) / 10."""
    v = np.array([[-5, -5, z], [5, -5, z], [5, 5, z], [-5, 5, z]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]] if facing > 0 else [[0, 2, 1], [0, 3, 2]], np.int32)
    uvs = (v[:, :2] + 5) / 10 if uv else None
    return Mesh(v, tris, Material((0.6, 0.4, 0.2)), "plane", uvs=uvs)


def centres() -> tuple[np.ndarray, np.ndarray]:
    """Film coordinates of the pixel centres, (H, W) each."""
    return np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)


def pose(eye=(0, 0, 0), yaw: float = 0.0) -> np.ndarray:
    """An OpenCV camera-to-world pose at ``eye`` turned by ``yaw`` radians about +y (0: looking along +z)."""
    c, s = np.cos(yaw), np.sin(yaw)
    m = np.eye(4)
    m[:3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    m[:3, 3] = eye
    return m


def test_plane_under_a_pinhole_view_in_both_conventions(lib):
    u, v = centres()
    a, b = (u - CX) / FX, (v - CY) / FY
    expected_position = np.stack([4 * a, 4 * b, np.full_like(a, 4.0)], -1)
    gl = np.diag([1.0, -1.0, -1.0, 1.0])  # the same camera in OpenGL axes (y up, looking along -z)
    for convention, matrix in (("opencv", pose()), ("opengl", pose() @ gl)):
        views = Views.pinhole([FX, FY, CX, CY], matrix[None], convention=convention)
        batch = HostBatch(lit([plane(4.0, -1.0)]), options(), views, EVERY, lib=lib)
        batch.launch(0, 2)
        out = {k: x[0] for k, x in batch.out.items()}
        np.testing.assert_allclose(out["depth"][..., 0], 4.0, rtol=1e-5)
        np.testing.assert_allclose(out["distance"][..., 0], 4 * np.sqrt(a * a + b * b + 1), rtol=1e-5)
        np.testing.assert_allclose(out["position"], expected_position, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out["geometric_normal"], np.broadcast_to([0, 0, -1], (H, W, 3)), atol=1e-6)
        np.testing.assert_allclose(out["normal"][..., :3], np.broadcast_to([0, 0, -1], (H, W, 3)), atol=1e-6)
        np.testing.assert_allclose(out["uv"], (expected_position[..., :2] + 5) / 10, atol=1e-5)
        assert (out["mesh_id"] == 0).all() and (out["material_id"] == 0).all()
        # the diagonal from (-5, -5) to (5, 5) splits the square: triangle 0 below it (x > y), 1 above
        below = expected_position[..., 0] > expected_position[..., 1]
        np.testing.assert_array_equal(out["primitive_id"][..., 0], np.where(below, 0, 1))
        assert (out["coverage"] == 1).all() and (out["spp"] == 2).all()
        np.testing.assert_allclose(out["motion"], 0, atol=1e-4)  # nothing moved
        np.testing.assert_allclose(out["albedo"][..., :3], np.broadcast_to([0.6, 0.4, 0.2], (H, W, 3)), rtol=1e-6)


def test_plane_under_an_orthographic_view(lib):
    u, v = centres()
    views = Views.orthographic([4.0, 4.0, CX, CY], pose((0.5, -0.25, 0))[None])  # 4 pixels per unit
    batch = HostBatch(lit([plane(3.0, -1.0)]), options(), views, EVERY, lib=lib)
    batch.launch(0, 1)
    out = {k: x[0] for k, x in batch.out.items()}
    x, y = (u - CX) / 4 + 0.5, (v - CY) / 4 - 0.25
    np.testing.assert_allclose(out["depth"][..., 0], 3.0, rtol=1e-6)
    np.testing.assert_allclose(out["distance"][..., 0], 3.0, rtol=1e-6)
    np.testing.assert_allclose(out["position"], np.stack([x, y, np.full_like(x, 3.0)], -1), atol=1e-5)


def test_an_orthographic_camera_as_a_batch_view_traces_its_own_rays(lib):
    """The camera's rays (its own float64 origins and direction) against the plane z = 3: depth from the near plane,
    the hit points, for a camera turned about its view and moved off the axis."""
    camera = Camera.orthographic_at((0.5, -0.25, 0.0), (0.5, -0.25, 1.0), up=(0.3, 1.0, 0.0), xmag=2.5, ymag=1.75,
                                    znear=0.5)
    batch = HostBatch(lit([plane(3.0, -1.0)], camera), options(), Views.cameras([camera]), EVERY, lib=lib)
    batch.launch(0, 1)
    out = {k: x[0] for k, x in batch.out.items()}
    u, v = centres()
    pixels = np.stack([u.ravel(), v.ravel()], -1)
    origins, directions = camera.ray_origins(pixels, W, H), camera.ray_directions(pixels, W, H)
    t = (3.0 - origins[:, 2]) / directions[:, 2]
    hits = (origins + t[:, None] * directions).reshape(H, W, 3)
    np.testing.assert_allclose(t, 2.5, rtol=1e-12)  # the rays start on the near plane
    np.testing.assert_allclose(out["depth"][..., 0], t.reshape(H, W), rtol=1e-6)
    np.testing.assert_allclose(out["distance"][..., 0], t.reshape(H, W), rtol=1e-6)
    np.testing.assert_allclose(out["position"], hits, atol=1e-5)
    np.testing.assert_allclose(out["motion"], 0, atol=1e-4)
    assert (out["mesh_id"] == 0).all() and (out["coverage"] == 1).all()


def test_a_miss_holds_the_documented_values(lib):
    views = Views.pinhole([FX, FY, CX, CY], pose(yaw=np.pi)[None])  # looking away from the plane
    batch = HostBatch(lit([plane(4.0, -1.0)]), options(), views, EVERY, lib=lib)
    batch.launch(0, 1)
    out = {k: x[0] for k, x in batch.out.items()}
    for name in ("depth", "distance", "position", "geometric_normal", "uv", "coverage"):
        assert (out[name] == 0).all(), name
    for name in ("mesh_id", "primitive_id", "material_id"):
        assert (out[name] == NO_ID).all(), name
    np.testing.assert_allclose(out["radiance"][..., :3], 0.5, rtol=1e-6)  # the environment


def sphere_hits(scene, views_pose, ref):
    """The numpy reference of the pixel centres' camera rays against the scene's triangles."""
    u, v = centres()
    local = np.stack([(u - CX) / FX, (v - CY) / FY, np.ones_like(u)], -1).reshape(-1, 3)
    directions = local @ views_pose[:3, :3].T
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    origins = np.broadcast_to(views_pose[:3, 3], directions.shape)
    tris = ref.scene_triangles(scene)
    t, k = ref.cast(tris, origins, directions)
    return origins, directions, t, k, tris


def test_sphere_mesh_outputs_match_a_numpy_ray_caster(lib):
    ref = load_reference()
    ball = sphere((0.2, -0.1, 5.0), 1.5, Material((0.3, 0.5, 0.7)), subdivisions=2, smooth=True, name="ball")
    scene = lit([ball])
    m = pose()
    batch = HostBatch(scene, options(), Views.pinhole([FX, FY, CX, CY], m[None]), EVERY, lib=lib)
    batch.launch(0, 1)
    out = {k: x[0].reshape(H * W, -1) for k, x in batch.out.items() if k != "rays"}
    o, d, t, k, tris = sphere_hits(scene, m, ref)
    hit = np.isfinite(t)
    assert 20 < hit.sum() < H * W  # the sphere covers part of the image
    np.testing.assert_array_equal(out["mesh_id"][:, 0] != NO_ID, hit)
    np.testing.assert_array_equal(out["coverage"][:, 0], hit.astype(np.float32))
    p = o + t[:, None] * d
    np.testing.assert_allclose(out["distance"][hit, 0], t[hit], rtol=1e-5)
    np.testing.assert_allclose(out["depth"][hit, 0], t[hit] * d[hit, 2], rtol=1e-5)
    np.testing.assert_allclose(out["position"][hit], p[hit], rtol=1e-5, atol=1e-5)
    # ids: the triangle the reference hits, but where the hit lies within rounding of another triangle's edge
    e1, e2 = tris["v1"][k] - tris["v0"][k], tris["v2"][k] - tris["v0"][k]
    ng = np.cross(e1, e2)
    ng /= np.linalg.norm(ng, axis=1, keepdims=True)
    same = out["primitive_id"][hit, 0] == tris["prim"][k[hit]]
    assert same.mean() > 0.97, same.mean()
    np.testing.assert_allclose(out["geometric_normal"][hit][same], ng[hit][same], atol=1e-5)
    # the shading normal: the vertex normals interpolated with the hit's barycentrics, facing the camera
    corners = ball.indices[tris["prim"][k[hit]]]
    s = p[hit] - tris["v0"][k[hit]]
    gram = np.stack([np.einsum("ij,ij->i", e1[hit], e1[hit]), np.einsum("ij,ij->i", e1[hit], e2[hit]),
                     np.einsum("ij,ij->i", e2[hit], e2[hit])], -1)
    se1, se2 = np.einsum("ij,ij->i", s, e1[hit]), np.einsum("ij,ij->i", s, e2[hit])
    det = gram[:, 0] * gram[:, 2] - gram[:, 1] ** 2
    b1, b2 = (gram[:, 2] * se1 - gram[:, 1] * se2) / det, (gram[:, 0] * se2 - gram[:, 1] * se1) / det
    n = ball.normals[corners]
    ns = n[:, 0] * (1 - b1 - b2)[:, None] + n[:, 1] * b1[:, None] + n[:, 2] * b2[:, None]
    ns /= np.linalg.norm(ns, axis=1, keepdims=True)
    ns *= -np.sign(np.einsum("ij,ij->i", ns, d[hit]))[:, None]
    np.testing.assert_allclose(out["normal"][hit][same][:, :3], ns[same], atol=2e-4)
    # and the mesh is the sphere, to its tessellation
    centre = np.array([0.2, -0.1, 5.0])
    radius = np.linalg.norm(p[hit] - centre, axis=1)
    assert np.abs(radius - 1.5).max() < 0.06


def test_motion_of_a_moved_camera_is_its_reprojection(lib):
    scene = lit([plane(4.0, -1.0)])
    first = Views.pinhole([FX, FY, CX, CY], pose()[None])
    batch = HostBatch(scene, options(), first, ("motion", "position"), lib=lib)
    batch.launch(0, 1)
    # a sideways step: every point of the plane moves by fx * dx / depth pixels
    batch.set_views(Views.pinhole([FX, FY, CX, CY], pose((0.5, 0, 0))[None]))
    batch.launch(0, 1)
    motion = batch.out["motion"][0]
    np.testing.assert_allclose(motion[..., 0], -FX * 0.5 / 4.0, rtol=1e-4)
    np.testing.assert_allclose(motion[..., 1], 0.0, atol=1e-4)
    # a turn: the film position now minus the previous camera's projection of the same point
    before = pose((0.5, 0, 0))
    batch.set_views(Views.pinhole([FX, FY, CX, CY], pose((0.5, 0, 0), yaw=0.1)[None]))
    batch.launch(0, 1)
    p = batch.out["position"][0].reshape(-1, 3).astype(np.float64)
    c = (p - before[:3, 3]) @ before[:3, :3]
    then = np.stack([FX * c[:, 0] / c[:, 2] + CX, FY * c[:, 1] / c[:, 2] + CY], -1)
    u, v = centres()
    expected = np.stack([u, v], -1).reshape(-1, 2) - then
    np.testing.assert_allclose(batch.out["motion"][0].reshape(-1, 2), expected, atol=2e-3)


def test_motion_of_a_moved_instance_is_its_reprojection(lib):
    box = cube(None, Material((0.8, 0.8, 0.8)), "box")
    scene = lit([plane(8.0, -1.0), box])
    views = Views.pinhole([FX, FY, CX, CY], pose()[None])
    batch = HostBatch(scene, options(), views, ("motion", "position", "mesh_id"), worlds=Worlds(1, movable=["box"]),
                      lib=lib)
    t0 = np.array([[[1, 0, 0, -0.3], [0, 1, 0, 0.1], [0, 0, 1, 4.0]]], np.float32)[None]
    t1 = np.array([[[1, 0, 0, 0.2], [0, 1, 0, 0.0], [0, 0, 1, 4.2]]], np.float32)[None]
    batch.move(t0)
    batch.launch(0, 1)
    batch.move(t1)
    batch.launch(0, 1)
    ids = batch.out["mesh_id"][0, ..., 0]
    on_box = ids == 1
    assert on_box.sum() > 10 and (ids == 0).sum() > 10
    p = batch.out["position"][0][on_box].astype(np.float64)
    before = p - t1[0, 0, :, 3] + t0[0, 0, :, 3]  # the same point of the box, where the box was
    then = np.stack([FX * before[:, 0] / before[:, 2] + CX, FY * before[:, 1] / before[:, 2] + CY], -1)
    u, v = centres()
    expected = np.stack([u, v], -1)[on_box] - then
    np.testing.assert_allclose(batch.out["motion"][0][on_box], expected, atol=2e-3)
    np.testing.assert_allclose(batch.out["motion"][0][ids == 0], 0.0, atol=2e-3)  # the plane stayed


def test_the_ray_counter_matches_the_stand_ins_own_count(lib):
    import ctypes

    from optixasync.scene import cornell_box

    scene = cornell_box()
    views = Views.cameras([scene.camera, Camera((0.0, 0.9, 2.5), (0.0, 0.9, 0.0))])
    batch = HostBatch(scene, RenderOptions(width=12, height=10, max_depth=5, rr_depth=2), views, ("radiance", "rays"),
                      lib=lib)
    counts = (ctypes.c_ulonglong * 2)()
    lib.oa_host_trace_counts(counts)  # zero the stand-in's count
    batch.launch(0, 3)
    lib.oa_host_trace_counts(counts)
    rays = batch.out["rays"].astype(np.int64)
    assert (rays[:, 0] == 12 * 10 * 3).all()  # one camera ray per sample
    assert rays[:, 0].sum() + rays[:, 1].sum() == counts[0]  # camera and bounce rays: the closest-hit traces
    assert rays[:, 2].sum() == counts[1] > 0  # shadow rays
    assert rays[:, 1].sum() > 0
