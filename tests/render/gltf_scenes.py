"""Small glTF files built for the renderer-side tests, and the analytic footprints of what they show.

Each file is written by :class:`optixasync.testing.GltfBuilder` and read by the library's own reader, so the
tests go from the file's JSON to pixels. The cameras look straight down -z, so that a square in a plane z = c
covers an axis-aligned rectangle of the image whose edges are known in closed form (:func:`coverage`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from optixasync.testing import GltfBuilder

#: The square [-1, 1]^2 at z = 0, its front +z.
SQUARE = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
SQUARE_FACES = np.array([[0, 1, 2], [0, 2, 3]], np.uint32)
#: The same square, its front -z (the winding reversed).
SQUARE_FACES_BACK = SQUARE_FACES[:, ::-1].copy()


def material(g: GltfBuilder, *, base=(1.0, 1.0, 1.0, 1.0), emissive=(0.0, 0.0, 0.0), double_sided=False,
             **extra) -> int:
    """A metallic-roughness material (metallic 0, roughness 1) of the file; its index."""
    return g.add("materials", {"pbrMetallicRoughness": {"baseColorFactor": list(base), "metallicFactor": 0.0,
                                                        "roughnessFactor": 1.0},
                               "emissiveFactor": list(emissive), "doubleSided": double_sided, **extra})


def square_node(g: GltfBuilder, material_index: int, *, scale=1.0, z=0.0, xy=(0.0, 0.0), faces=SQUARE_FACES,
                name="square", **node) -> int:
    """A node placing a square of half side ``scale`` at depth ``z``, centred at ``xy``."""
    mesh = g.mesh(SQUARE, faces.reshape(-1), material=material_index, name=name)
    return g.node(mesh=mesh, translation=[float(xy[0]), float(xy[1]), float(z)], scale=[scale, scale, 1.0],
                  name=name, **node)


def perspective_node(g: GltfBuilder, z: float, yfov_degrees: float) -> int:
    camera = g.add("cameras", {"type": "perspective", "perspective": {"yfov": math.radians(yfov_degrees),
                                                                      "znear": 0.01}})
    return g.node(camera=camera, translation=[0.0, 0.0, float(z)], name="eye")


def orthographic_node(g: GltfBuilder, xmag: float, ymag: float, znear: float, zfar: float,
                      translation=(0.0, 0.0, 5.0)) -> int:
    camera = g.add("cameras", {"type": "orthographic", "orthographic": {"xmag": xmag, "ymag": ymag,
                                                                        "znear": znear, "zfar": zfar}})
    return g.node(camera=camera, translation=[float(t) for t in translation], name="ortho")


def lights(g: GltfBuilder, *records: dict) -> list[int]:
    """Add ``KHR_lights_punctual`` lights to the document; their indices."""
    g.doc.setdefault("extensionsUsed", []).append("KHR_lights_punctual")
    g.doc.setdefault("extensions", {})["KHR_lights_punctual"] = {"lights": list(records)}
    return list(range(len(records)))


def write(g: GltfBuilder, path: Path, *roots: int) -> Path:
    g.scene(*roots)
    return g.write_gltf(Path(path))


def coverage(rect, width: int, height: int, centre=(0.0, 0.0), xmag=None, ymag=None, tangent=None, depth=None):
    """Per pixel, whether its whole footprint lies inside the world rectangle ``rect`` (x0, x1, y0, y1) and whether
    none of it does, for a camera looking down -z from ``centre`` (x, y).

    Orthographic: the image spans ``centre +- (xmag, ymag)``. Pinhole (``tangent``: tan of half the vertical fov,
    images at least as wide as tall): at ``depth`` below the eye it spans ``+- depth * tangent`` times the aspect.
    """
    if xmag is None:
        ymag = depth * tangent
        xmag = ymag * width / height
    xs = centre[0] - xmag + 2.0 * xmag * np.arange(width + 1) / width   # pixel column edges, left to right
    ys = centre[1] + ymag - 2.0 * ymag * np.arange(height + 1) / height  # pixel row edges, top to bottom
    x0, x1, y0, y1 = rect
    col_in = (xs[:-1] >= x0) & (xs[1:] <= x1)
    col_out = (xs[1:] <= x0) | (xs[:-1] >= x1)
    row_in = (ys[1:] >= y0) & (ys[:-1] <= y1)
    row_out = (ys[:-1] <= y0) | (ys[1:] >= y1)
    inside = row_in[:, None] & col_in[None, :]
    outside = row_out[:, None] | col_out[None, :]
    return inside, outside
