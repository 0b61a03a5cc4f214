"""Loaded meshes render where the camera model says they are.

An emissive mesh read from an OBJ and a PLY file, alone in a black scene, is
rendered at max_depth 1; the lit pixels must be the triangles' silhouette
predicted by projecting them with ``Camera.project`` and testing pixel centres
(one pixel of slack along the outline). The prediction uses vertices
transformed here in numpy, so the loader's transforms are checked too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from optixasync.scene import Camera, Material, Scene, load_mesh

pytest.importorskip("trimesh", reason="trimesh (the 'mesh' extra) is needed to read mesh files")

WIDTH, HEIGHT = 64, 48
GLOW = Material(reflectance=(0.0, 0.0, 0.0), emission=(1.0, 1.0, 1.0), two_sided=True)

CUBE_V = np.array([[x, y, z] for z in (-0.5, 0.5) for y in (-0.5, 0.5) for x in (-0.5, 0.5)], np.float64)
CUBE_QUADS = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]]
TETRA_V = np.array([[-0.6, -0.5, -0.3], [0.7, -0.4, -0.2], [0.0, 0.6, 0.0], [0.1, -0.1, 0.6]], np.float64)
TETRA_F = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]


def rotation(yaw_degrees: float, pitch_degrees: float, offset=(0.0, 0.0, 0.0)) -> np.ndarray:
    a, b = math.radians(yaw_degrees), math.radians(pitch_degrees)
    yaw = np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])
    pitch = np.array([[1, 0, 0], [0, math.cos(b), -math.sin(b)], [0, math.sin(b), math.cos(b)]])
    m = np.eye(4)
    m[:3, :3] = pitch @ yaw
    m[:3, 3] = offset
    return m


def camera() -> Camera:
    return Camera.look_at((0.3, 0.4, 4.0), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0), 40.0)


def predicted_mask(triangles_world: np.ndarray, cam: Camera) -> np.ndarray:
    """(H, W) bool: pixel centres inside any projected triangle."""
    projected = np.asarray(cam.project(triangles_world.reshape(-1, 3), WIDTH, HEIGHT), np.float64).reshape(-1, 3, 2)
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    px, py = xs.ravel() + 0.5, ys.ravel() + 0.5
    mask = np.zeros(px.shape, bool)
    for (x0, y0), (x1, y1), (x2, y2) in projected:
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if abs(area) < 1e-12:
            continue
        w0 = ((x1 - px) * (y2 - py) - (x2 - px) * (y1 - py)) / area
        w1 = ((x2 - px) * (y0 - py) - (x0 - px) * (y2 - py)) / area
        w2 = 1.0 - w0 - w1
        mask |= (w0 >= 0) & (w1 >= 0) & (w2 >= 0)
    return mask.reshape(HEIGHT, WIDTH)


def outline(mask: np.ndarray) -> np.ndarray:
    """Pixels within one pixel (8-neighbourhood) of the mask's boundary."""
    padded = np.pad(mask, 1, mode="edge")
    windows = [padded[1 + dy:1 + dy + HEIGHT, 1 + dx:1 + dx + WIDTH] for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    stack = np.stack(windows)
    return stack.any(axis=0) & ~stack.all(axis=0)


def render(ctx, mesh) -> np.ndarray:
    from optixasync.render import RenderOptions, RenderPipeline

    scene = Scene(meshes=[mesh], camera=camera())
    options = RenderOptions(width=WIDTH, height=HEIGHT, spp=4, max_depth=1, seed=3)
    with RenderPipeline(ctx, scene, options) as pipeline:
        image = pipeline.render()
    assert image.shape == (HEIGHT, WIDTH, 3) and image.dtype == np.float32
    return image


def test_test_meshes_face_outwards():
    """CPU: emission leaves the front side only, so the closed test meshes must wind outwards."""
    cube_faces = [[q[0], q[k], q[k + 1]] for q in CUBE_QUADS for k in (1, 2)]
    for vertices, faces in ((CUBE_V, cube_faces), (TETRA_V, TETRA_F)):
        tri = vertices[np.array(faces)]
        normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        outwards = tri.mean(axis=1) - vertices.mean(axis=0)
        assert (np.einsum("ij,ij->i", normals, outwards) > 0).all()


def check_silhouette(image: np.ndarray, expected: np.ndarray) -> None:
    lit = image.max(axis=2) > 0.5
    band = outline(expected)
    wrong = (lit != expected) & ~band
    assert expected.sum() > 150, "the test mesh should cover a good part of the image"
    assert not wrong.any(), (
        f"{int(wrong.sum())} pixels away from the outline disagree: lit {int((lit & ~expected & ~band).sum())} "
        f"outside the silhouette, dark {int((~lit & expected & ~band).sum())} inside it"
    )
    inside, outside = expected & ~band, ~expected & ~band
    np.testing.assert_allclose(image[inside], 1.0, atol=1e-3)  # the emission, seen directly
    assert (image[outside] <= 1e-6).all()  # a black scene: nothing else emits or reflects


@pytest.mark.gpu
def test_obj_cube_silhouette(ctx, tmp_path):
    path = tmp_path / "cube.obj"
    path.write_text("".join(f"v {x} {y} {z}\n" for x, y, z in CUBE_V) +
                    "".join("f " + " ".join(str(i + 1) for i in q) + "\n" for q in CUBE_QUADS))
    matrix = rotation(30.0, 25.0, offset=(0.2, -0.1, 0.0))
    (mesh,) = load_mesh(path, GLOW, matrix)
    world = CUBE_V @ matrix[:3, :3].T + matrix[:3, 3]
    triangles = np.array([[world[q[0]], world[q[k]], world[q[k + 1]]] for q in CUBE_QUADS for k in (1, 2)])
    check_silhouette(render(ctx, mesh), predicted_mask(triangles, camera()))


@pytest.mark.gpu
def test_ply_tetrahedron_silhouette(ctx, tmp_path):
    path = tmp_path / "tetra.ply"
    header = ["ply", "format ascii 1.0", "element vertex 4", "property float x", "property float y",
              "property float z", "element face 4", "property list uchar int vertex_indices", "end_header"]
    body = [" ".join(repr(float(c)) for c in v) for v in TETRA_V] + ["3 " + " ".join(map(str, f)) for f in TETRA_F]
    path.write_text("\n".join(header + body) + "\n")
    scale = np.diag([1.5, 1.5, 1.5, 1.0])
    (mesh,) = load_mesh(path, GLOW, scale)
    world = TETRA_V * 1.5
    check_silhouette(render(ctx, mesh), predicted_mask(world[np.array(TETRA_F)], camera()))


def test_camera_project_follows_the_pinhole_convention():
    """CPU: ``Camera.project`` - the prediction above - puts points where a pinhole camera with the fov
    along the smaller image axis, x right and row 0 at the top, would."""
    cam = camera()
    eye, target = np.array(cam.eye, np.float64), np.array(cam.target, np.float64)
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, (0.0, 1.0, 0.0))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    rng = np.random.default_rng(5)
    points = rng.uniform(-1, 1, (20, 3))
    d = points - eye
    tan_half = math.tan(math.radians(40.0) / 2)
    half = min(WIDTH, HEIGHT) / 2
    x = WIDTH / 2 + (d @ right) / (d @ forward) / tan_half * half
    y = HEIGHT / 2 - (d @ up) / (d @ forward) / tan_half * half
    np.testing.assert_allclose(np.asarray(cam.project(points, WIDTH, HEIGHT)), np.stack([x, y], 1), atol=1e-3)
