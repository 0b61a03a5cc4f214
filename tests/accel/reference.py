"""A numpy reference for closest-hit ray casting against triangle meshes, for checking GPU results.

Everything is computed in float64 with a vectorised Möller–Trumbore test, in chunks of rays so that the
(rays x triangles) temporaries stay well under a gigabyte. Triangles are two-sided (no face culling) and
``t`` is in units of the direction vector as given (it is not normalised), as in OptiX.

Besides the hits, the result carries what a comparison with a float32 implementation needs to know which
rays are too close to call:

``bary``
    min(b0, b1, b2) at the nearest hit (NaN for a miss).
``bary_graze``
    The smallest |min(b0, b1, b2)| over the triangles hit or nearly hit (min barycentric above -0.5) at
    or before the nearest hit, or anywhere in [tmin, tmax] for a miss (inf if none).
``edge_distance``
    For the same triangles, the distance, measured perpendicular to the ray, between the ray and that
    triangle's nearest edge line; the smallest of these (inf if none). Small means the ray grazes an edge,
    where float32 may decide either way.
``t_second``
    The second smallest ``t`` among the hits in [tmin, tmax] (inf if fewer than two).
``cos_incidence``
    |cos| of the angle between the ray and the normal of the triangle at the nearest hit (NaN for a miss).
    Near zero the ray grazes the triangle's plane and ``t`` is ill-conditioned: a float32 rounding of the
    corners moves it far along the ray.
``t_boundary``
    The smallest relative gap between the ``t`` of any triangle the ray passes through and ``tmin`` or
    ``tmax`` (inf if none): a hit that close to the interval's ends may fall either way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["cast_reference", "cast_instances_reference", "ambiguous_rays", "transform_points"]

# Elements of one (rays x triangles) float64 temporary; a few dozen of those are alive at once.
_CHUNK_ELEMENTS = 1_500_000
# Triangles whose min barycentric is above -_NEAR are kept for the grazing analysis.
_NEAR = 0.5


def transform_points(points: np.ndarray, transform: np.ndarray) -> np.ndarray:
    """Apply a 3x4 row-major affine transform (object to world) to (N, 3) points, in float64."""
    transform = np.asarray(transform, np.float64).reshape(3, 4)
    return np.asarray(points, np.float64) @ transform[:, :3].T + transform[:, 3]


def _as_rays(origins: np.ndarray, directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    origins = np.asarray(origins, np.float64).reshape(-1, 3)
    directions = np.asarray(directions, np.float64).reshape(-1, 3)
    if origins.shape != directions.shape:
        raise ValueError(f"origins {origins.shape} and directions {directions.shape} differ")
    return origins, directions


def _cast_triangles(v0: np.ndarray, v1: np.ndarray, v2: np.ndarray, origins: np.ndarray, directions: np.ndarray,
                    tmin: float, tmax: float) -> dict[str, np.ndarray]:
    """Closest hits of rays against world-space triangles given by their corners (T, 3) each."""
    num_rays, num_tris = len(origins), len(v0)
    t_best = np.full(num_rays, np.inf)
    prim = np.full(num_rays, -1, np.int64)
    bary = np.full(num_rays, np.nan)
    t_second = np.full(num_rays, np.inf)
    edge_distance = np.full(num_rays, np.inf)
    t_boundary = np.full(num_rays, np.inf)
    bary_graze = np.full(num_rays, np.inf)
    cos_incidence = np.full(num_rays, np.nan)
    result = {"t": t_best, "prim": prim, "bary": bary, "bary_graze": bary_graze, "t_second": t_second,
              "edge_distance": edge_distance, "t_boundary": t_boundary, "cos_incidence": cos_incidence}
    if num_rays == 0 or num_tris == 0:
        return result

    e1 = v1 - v0
    e2 = v2 - v0
    e12 = v2 - v1
    chunk = max(1, _CHUNK_ELEMENTS // num_tris)
    for start in range(0, num_rays, chunk):
        stop = min(start + chunk, num_rays)
        o = origins[start:stop, None, :]
        d = directions[start:stop, None, :]
        pvec = np.cross(d, e2[None])
        det = np.einsum("rtk,tk->rt", pvec, e1)
        tvec = o - v0[None]
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(det != 0.0, 1.0 / det, np.nan)
            b1 = np.einsum("rtk,rtk->rt", tvec, pvec) * inv
            del pvec
            qvec = np.cross(tvec, e1[None])
            del tvec
            b2 = np.einsum("rtk,rtk->rt", qvec, np.broadcast_to(d, qvec.shape)) * inv
            t = np.einsum("rtk,tk->rt", qvec, e2) * inv
            del qvec
        b0 = 1.0 - b1 - b2
        bmin = np.minimum(np.minimum(b0, b1), b2)  # NaN where the ray is parallel to the plane
        through = bmin >= 0.0  # the line passes through the triangle (False for NaN)
        inside = through & (t >= tmin) & (t <= tmax)

        t_in = np.where(inside, t, np.inf)
        if num_tris >= 2:
            two = np.partition(t_in, 1, axis=1)[:, :2]
            t_second[start:stop] = two.max(axis=1)
        nearest = np.argmin(t_in, axis=1)
        rows = np.arange(stop - start)
        t_near = t_in[rows, nearest]
        hit = np.isfinite(t_near)
        t_best[start:stop] = t_near
        prim[start:stop] = np.where(hit, nearest, -1)
        bary[start:stop] = np.where(hit, bmin[rows, nearest], np.nan)

        # ends of the interval: any triangle the line passes through with t close to tmin or tmax
        with np.errstate(invalid="ignore", divide="ignore"):
            gaps = []
            for bound in (tmin, tmax):
                if np.isfinite(bound):
                    scale = np.maximum(np.maximum(abs(bound), np.abs(t)), np.finfo(np.float64).tiny)
                    gaps.append(np.where(through, np.abs(t - bound) / scale, np.inf).min(axis=1))
            if gaps:
                t_boundary[start:stop] = np.minimum.reduce(gaps)

        # grazing: triangles nearly hit at or before the nearest hit (or anywhere in range for a miss)
        limit = np.where(hit, t_near, tmax)[:, None]
        reach = np.where(np.isfinite(limit), np.abs(limit) * 1e-3, 0.0)
        lowest = tmin - 1e-3 * abs(tmin) if np.isfinite(tmin) else -np.inf
        with np.errstate(invalid="ignore"):
            near = (bmin > -_NEAR) & (t >= lowest) & (t <= limit + reach)
        r_idx, t_idx = np.nonzero(near)
        if len(r_idx):
            dn = directions[start + r_idx]
            dn = dn / np.linalg.norm(dn, axis=1, keepdims=True)
            # twice the triangle's area projected along the ray, and its edges' projected lengths
            area2 = np.abs(det[r_idx, t_idx]) / np.linalg.norm(directions[start + r_idx], axis=1)
            heights = []
            for b, edge in ((b0, e12), (b1, e2), (b2, e1)):
                length = np.linalg.norm(np.cross(dn, edge[t_idx]), axis=1)
                with np.errstate(divide="ignore", invalid="ignore"):
                    heights.append(np.where(length > 0, b[r_idx, t_idx] * area2 / length, 0.0))
            clearance = np.abs(np.minimum.reduce(heights))
            per_ray = np.full(stop - start, np.inf)
            np.minimum.at(per_ray, r_idx, clearance)
            edge_distance[start:stop] = per_ray
            per_ray = np.full(stop - start, np.inf)
            np.minimum.at(per_ray, r_idx, np.abs(bmin[r_idx, t_idx]))
            bary_graze[start:stop] = per_ray
    hit = prim >= 0
    normals = np.cross(e1[prim[hit]], e2[prim[hit]])
    cos_incidence[hit] = np.abs(np.einsum("rk,rk->r", normals, directions[hit])) / (
        np.linalg.norm(normals, axis=1) * np.linalg.norm(directions[hit], axis=1)
    )
    return result


def _finish(raw: dict[str, np.ndarray], inst: np.ndarray) -> dict[str, np.ndarray]:
    hit = raw["prim"] >= 0
    return {
        "t": np.where(hit, raw["t"], -1.0),
        "prim": raw["prim"].astype(np.int32),
        "inst": np.where(hit, inst, -1).astype(np.int32),
        "hit": hit,
        "bary": raw["bary"],
        "bary_graze": raw["bary_graze"],
        "edge_distance": raw["edge_distance"],
        "t_second": raw["t_second"],
        "t_boundary": raw["t_boundary"],
        "cos_incidence": raw["cos_incidence"],
    }


def cast_instances_reference(instances: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, int]],
                             origins: np.ndarray, directions: np.ndarray, tmin: float = 0.0,
                             tmax: float = np.inf) -> dict[str, np.ndarray]:
    """Closest hits against instanced meshes.

    Parameters
    ----------
    instances : sequence of (vertices (N, 3), indices (M, 3), transform (3, 4), instance_id)
        Each instance's transform maps its object space to world space; the meshes are transformed and
        intersected in world space (``t`` is the same along the world and the object ray).

    Returns
    -------
    dict of (R,) arrays
        ``t`` (float64, -1 for a miss), ``prim`` (int32, the primitive index within its mesh, -1 for a
        miss), ``inst`` (int32, the instance id, -1 for a miss), ``hit`` (bool), and the diagnostics
        ``bary``, ``edge_distance``, ``t_second``, ``t_boundary`` described in the module docstring.
    """
    origins, directions = _as_rays(origins, directions)
    corners: list[list[np.ndarray]] = [[], [], []]
    owner, local = [], []
    for k, (vertices, indices, transform, _instance_id) in enumerate(instances):
        world = np.asarray(vertices, np.float64).reshape(-1, 3)
        if transform is not None:
            world = transform_points(world, transform)
        indices = np.asarray(indices, np.int64).reshape(-1, 3)
        for c in range(3):
            corners[c].append(world[indices[:, c]])
        owner.append(np.full(len(indices), k, np.int64))
        local.append(np.arange(len(indices), dtype=np.int64))
    if not owner:
        empty = np.zeros((0, 3))
        return _finish(_cast_triangles(empty, empty, empty, origins, directions, tmin, tmax), np.zeros(len(origins)))
    v0, v1, v2 = (np.concatenate(c) for c in corners)
    owner_all, local_all = np.concatenate(owner), np.concatenate(local)
    raw = _cast_triangles(v0, v1, v2, origins, directions, tmin, tmax)
    hit = raw["prim"] >= 0
    which = np.where(hit, raw["prim"], 0)
    ids = np.array([int(i[3]) for i in instances], np.int64)
    inst = ids[owner_all[which]]
    raw["prim"] = np.where(hit, local_all[which], -1)
    return _finish(raw, inst)


def cast_reference(vertices: np.ndarray, indices: np.ndarray, origins: np.ndarray, directions: np.ndarray,
                   tmin: float = 0.0, tmax: float = np.inf,
                   transforms: Sequence[tuple[np.ndarray, int]] | None = None) -> dict[str, np.ndarray]:
    """Closest hits of rays against one triangle mesh, or against transformed copies of it.

    Parameters
    ----------
    vertices : (N, 3) array
    indices : (M, 3) integer array
    origins, directions : (R, 3) arrays
        ``t`` is measured in units of each direction vector, which need not be normalised.
    tmin, tmax : float
        Only hits with tmin <= t <= tmax count.
    transforms : sequence of (transform (3, 4), instance_id), optional
        Without it the bare mesh is cast against and a hit's ``inst`` is 0 (OptiX reports ~0 for a bare
        GAS: compare ``inst`` only for instances); with it, one copy of the mesh per transform (object to
        world), as an instance accel would hold.

    Returns
    -------
    dict of (R,) arrays: see :func:`cast_instances_reference`.
    """
    if transforms is None:
        instances = [(vertices, indices, None, 0)]
    else:
        instances = [(vertices, indices, transform, instance_id) for transform, instance_id in transforms]
    return cast_instances_reference(instances, origins, directions, tmin, tmax)


def ambiguous_rays(ref: dict[str, np.ndarray], *, bary_margin: float = 1e-4, t_rel: float = 1e-5,
                   edge_margin: float = 0.0, min_cos: float = 0.0) -> np.ndarray:
    """Rays whose closest hit a float32 implementation may legitimately decide differently.

    A ray is ambiguous when its nearest hit, or a triangle it hits or nearly hits before that (anywhere in
    range for a miss), lies within ``bary_margin`` (barycentric) of an edge, when it passes within
    ``edge_margin`` (world units, perpendicular to the ray) of the edge of any triangle hit or nearly hit
    before its nearest hit, when its two nearest hits differ by less than ``t_rel`` relative,
    when a triangle it passes through lies within ``t_rel`` relative of tmin or tmax, or when it meets the
    plane of its nearest hit at a grazing angle (|cos| to the normal below ``min_cos``).
    """
    hit = ref["hit"]
    close_edge = (hit & (ref["bary"] < bary_margin)) | (ref["bary_graze"] < bary_margin)
    grazing = ref["edge_distance"] < edge_margin
    with np.errstate(invalid="ignore"):
        t_near = np.where(hit, ref["t"], np.nan)
        close_pair = hit & (np.abs(ref["t_second"] - t_near) <= t_rel * np.abs(t_near))
    boundary = ref["t_boundary"] < t_rel
    with np.errstate(invalid="ignore"):
        glancing = hit & (ref["cos_incidence"] < min_cos)
    return close_edge | grazing | close_pair | boundary | glancing
