"""numpy references for the path tracer tests: ray casting against a scene, pixel rays, direct lighting.

Everything is float64 and vectorised. Loaded by the render tests through ``load_reference()`` (a unique module
name, because other test folders have their own ``reference.py``).

``direct_lighting`` integrates the light arriving at surface points straight from the scene's emitters:

    L_direct(x) = rho / pi * sum over emitter triangles of  Le * cos(surface) * cos(light) / r^2 * V(x, y) dA(y)

with the midpoint rule on ``n * n`` sub-triangles of every emitter triangle, one-sided emission (only towards
the emitter's front side) and visibility through every triangle of the scene. For a Lambertian surface this
is exactly what a path tracer with ``max_depth = 2`` converges to.
"""

from __future__ import annotations

import numpy as np

__all__ = ["scene_triangles", "cast", "segment_blocked", "pixel_rays", "covered_pixels", "direct_lighting",
           "subdivide_triangle", "irradiance_parallel_rectangle"]

_CHUNK = 2_000_000  # rays x triangles per temporary


def scene_triangles(scene) -> dict[str, np.ndarray]:
    """All triangles of ``scene`` (host meshes): corners ``v0, v1, v2`` (T, 3), owning ``mesh`` and ``prim`` (T,)."""
    v0, v1, v2, mesh, prim = [], [], [], [], []
    for k, m in enumerate(scene.meshes):
        a, b, c = m.corners()
        v0.append(a)
        v1.append(b)
        v2.append(c)
        mesh.append(np.full(len(a), k))
        prim.append(np.arange(len(a)))
    return {"v0": np.concatenate(v0), "v1": np.concatenate(v1), "v2": np.concatenate(v2),
            "mesh": np.concatenate(mesh), "prim": np.concatenate(prim)}


def _intersect(tris: dict[str, np.ndarray], o: np.ndarray, d: np.ndarray) -> np.ndarray:
    """t of every (ray, triangle) pair, inf where the ray's line misses the triangle (Moller-Trumbore, two-sided)."""
    e1 = tris["v1"] - tris["v0"]
    e2 = tris["v2"] - tris["v0"]
    p = np.cross(d[:, None, :], e2[None])
    det = np.einsum("rtk,tk->rt", p, e1)
    s = o[:, None, :] - tris["v0"][None]
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        u = np.einsum("rtk,rtk->rt", s, p) * inv
        q = np.cross(s, e1[None])
        v = np.einsum("rtk,rtk->rt", q, np.broadcast_to(d[:, None, :], q.shape)) * inv
        t = np.einsum("rtk,tk->rt", q, e2) * inv
        ok = (det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1)
    return np.where(ok, t, np.inf)


def cast(tris: dict[str, np.ndarray], origins: np.ndarray, directions: np.ndarray,
         tmin: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Closest hits: ``(t, triangle)`` per ray (inf and -1 for a miss); ``t`` in units of the direction."""
    o = np.asarray(origins, np.float64).reshape(-1, 3)
    d = np.asarray(directions, np.float64).reshape(-1, 3)
    t_best = np.full(len(o), np.inf)
    index = np.full(len(o), -1)
    step = max(1, _CHUNK // len(tris["v0"]))
    for start in range(0, len(o), step):
        t = _intersect(tris, o[start:start + step], d[start:start + step])
        t = np.where(t > tmin, t, np.inf)
        k = np.argmin(t, axis=1)
        best = t[np.arange(len(k)), k]
        t_best[start:start + step] = best
        index[start:start + step] = np.where(np.isfinite(best), k, -1)
    return t_best, index


def segment_blocked(tris: dict[str, np.ndarray], origins: np.ndarray, targets: np.ndarray,
                    eps: float = 1e-6) -> np.ndarray:
    """Whether any triangle cuts the open segment from each origin to its target (both (N, 3))."""
    o = np.asarray(origins, np.float64).reshape(-1, 3)
    d = np.asarray(targets, np.float64).reshape(-1, 3) - o
    blocked = np.zeros(len(o), bool)
    step = max(1, _CHUNK // len(tris["v0"]))
    for start in range(0, len(o), step):
        t = _intersect(tris, o[start:start + step], d[start:start + step])
        blocked[start:start + step] = ((t > eps) & (t < 1.0 - eps)).any(axis=1)
    return blocked


def pixel_rays(camera, width: int, height: int, pixels: np.ndarray, sub: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Rays through ``sub x sub`` stratified positions of each pixel ``(x, y)`` in ``pixels`` (P, 2).

    Returns ``origins`` (P, sub*sub, 3) and unit ``directions`` (P, sub*sub, 3).
    """
    pixels = np.asarray(pixels, np.float64).reshape(-1, 2)
    offsets = (np.arange(sub) + 0.5) / sub
    ox, oy = np.meshgrid(offsets, offsets)
    positions = pixels[:, None, :] + np.stack([ox.ravel(), oy.ravel()], axis=1)[None]
    directions = camera.ray_directions(positions.reshape(-1, 2), width, height).reshape(len(pixels), sub * sub, 3)
    origins = np.broadcast_to(np.asarray(camera.eye, np.float64), directions.shape).copy()
    return origins, directions


def covered_pixels(camera, tris: dict[str, np.ndarray], width: int, height: int, mesh: int,
                   grid: int = 5) -> np.ndarray:
    """(H, W) mask of pixels that see only mesh ``mesh``, with a one-pixel margin.

    A pixel qualifies when the camera rays through a ``grid x grid`` lattice of its footprint, corners
    included, all hit ``mesh`` first, and so do those of its eight neighbours (the margin keeps pixels that
    an edge crosses between lattice points out).
    """
    pixels = np.array([(x, y) for y in range(height) for x in range(width)], np.float64)
    lattice = np.linspace(0.0, 1.0, grid)
    ox, oy = np.meshgrid(lattice, lattice)
    positions = (pixels[:, None, :] + np.stack([ox.ravel(), oy.ravel()], axis=1)[None]).reshape(-1, 2)
    directions = camera.ray_directions(positions, width, height)
    origins = np.broadcast_to(np.asarray(camera.eye, np.float64), directions.shape)
    _, k = cast(tris, origins, directions)
    hits = (k >= 0) & (tris["mesh"][np.maximum(k, 0)] == mesh)
    covered = hits.reshape(height, width, -1).all(axis=2)
    padded = np.pad(covered, 1)
    eroded = np.ones_like(covered)
    for dy in range(3):
        for dx in range(3):
            eroded &= padded[dy:dy + height, dx:dx + width]
    return eroded


def subdivide_triangle(p0: np.ndarray, p1: np.ndarray, p2: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Centroids (n*n, 3) and areas (n*n,) of the ``n * n`` congruent sub-triangles of a triangle."""
    e1, e2 = (p1 - p0) / n, (p2 - p0) / n
    centroids, count = [], 0
    for i in range(n):
        for j in range(n - i):
            base = p0 + i * e1 + j * e2
            centroids.append(base + (e1 + e2) / 3.0)  # upright sub-triangle
            count += 1
            if j < n - i - 1:
                centroids.append(base + 2.0 * (e1 + e2) / 3.0)  # inverted one
                count += 1
    area = 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0)) / (n * n)
    return np.array(centroids), np.full(count, area)


def direct_lighting(scene, points: np.ndarray, normals: np.ndarray, reflectance, n: int = 16,
                    occluders: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Outgoing radiance (N, 3) of Lambertian points lit directly by the scene's emitters.

    Parameters
    ----------
    points, normals : (N, 3)
        Surface points and their unit normals on the side being lit.
    reflectance : RGB
    n : int
        Each emitter triangle is integrated with the midpoint rule on ``n * n`` sub-triangles.
    occluders : triangles from :func:`scene_triangles`, optional
        Visibility is tested against these (default: every triangle of the scene).
    """
    points = np.asarray(points, np.float64).reshape(-1, 3)
    normals = np.asarray(normals, np.float64).reshape(-1, 3)
    tris = scene_triangles(scene) if occluders is None else occluders
    irradiance = np.zeros((len(points), 3))
    for k in scene.emitters:
        mesh = scene.meshes[k]
        le = np.asarray(mesh.material.emission, np.float64)
        for a, b, c, nl in zip(*mesh.corners(), mesh.face_normals(), strict=True):
            y, area = subdivide_triangle(a, b, c, n)
            d = y[None, :, :] - points[:, None, :]  # (N, S, 3)
            r2 = np.einsum("nsk,nsk->ns", d, d)
            w = d / np.sqrt(r2)[..., None]
            cos_s = np.einsum("nsk,nk->ns", w, normals)
            cos_l = -np.einsum("nsk,k->ns", w, nl)
            g = np.where((cos_s > 0) & (cos_l > 0), cos_s * cos_l / r2, 0.0) * area[None]
            origins = np.repeat(points, len(y), axis=0) + 1e-7 * np.repeat(normals, len(y), axis=0)
            blocked = segment_blocked(tris, origins, np.tile(y, (len(points), 1))).reshape(g.shape)
            irradiance += (g * ~blocked).sum(axis=1)[:, None] * le[None]
    return np.asarray(reflectance, np.float64)[None] / np.pi * irradiance


def irradiance_parallel_rectangle(a: float, b: float, h: float, radiance: float = 1.0) -> float:
    """Irradiance at a point a distance ``h`` below one corner of a parallel ``a x b`` Lambertian emitter.

    The classical closed form of the differential-area-to-parallel-rectangle form factor, times ``pi L``.
    """
    x, y = a / h, b / h
    sx, sy = np.sqrt(1 + x * x), np.sqrt(1 + y * y)
    factor = (x / sx * np.arctan(y / sx) + y / sy * np.arctan(x / sy)) / (2 * np.pi)
    return float(np.pi * radiance * factor)
