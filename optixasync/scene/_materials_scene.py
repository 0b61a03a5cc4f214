"""The material scene: one sphere per BSDF and roughness on a ground plane, under a procedural sky and an area light.

Everything is made here with numpy, deterministically: the meshes, the
textures (a checker, a normal map of bumps, a leaf with an alpha cut-out)
and the sky. No file is read.

The conductors' complex indices of refraction are Mitsuba 3's ``conductor``
presets in its RGB variants: ``mi.traverse(mi.load_dict({"type":
"conductor", "material": "Au"}))`` (Mitsuba 3.9.1, ``scalar_rgb``) gives
the ``eta`` and ``k`` below, the spectral data of the preset reduced to
linear sRGB by Mitsuba itself.
"""

from __future__ import annotations

import math

import numpy as np

from ._camera import Camera
from ._environment import Environment
from ._material import Material
from ._mesh import Mesh, rectangle, sphere
from ._scene import Scene
from ._texture import Texture

__all__ = [
    "COPPER_ETA",
    "COPPER_K",
    "GOLD_ETA",
    "GOLD_K",
    "SUN_DIRECTION",
    "bumps_normal_map",
    "checker_texture",
    "leaf_quad",
    "leaf_texture",
    "material_environment",
    "material_scene",
]

#: Gold (Mitsuba's ``Au`` preset, RGB): real and imaginary parts of the index of refraction.
GOLD_ETA = (0.143036, 0.375307, 1.44205)
GOLD_K = (3.983, 2.38556, 1.60336)
#: Copper (Mitsuba's ``Cu`` preset, RGB).
COPPER_ETA = (0.201005, 0.92375, 1.10222)
COPPER_K = (3.91326, 2.45305, 2.14209)

#: The unit direction towards the sun of :func:`material_environment`: 40 degrees up, behind the camera's left.
SUN_DIRECTION = (-0.45451948, 0.64278761, 0.61657578)
_SUN_RADIUS = math.radians(2.5)  # five times the real sun's: a little less noise for as much light
_SUN_RADIANCE = 400.0
_ZENITH = np.array([0.08, 0.16, 0.42])
_HORIZON = np.array([0.45, 0.48, 0.55])
_GROUND = np.array([0.12, 0.10, 0.08])


def _directions(height: int, width: int) -> np.ndarray:
    """Unit directions (H, W, 3) of an environment image's texels.

    As :class:`Environment` maps them (Mitsuba's ``envmap``): row ``i`` at
    polar angle ``pi i / (H - 1)`` from +Y, column ``j`` at azimuth
    ``2 pi (j + 0.5) / W``, direction ``(sin phi sin theta, cos theta,
    -cos phi sin theta)``.
    """
    theta = np.pi * np.arange(height) / (height - 1)
    phi = 2.0 * np.pi * (np.arange(width) + 0.5) / width
    st, ct = np.sin(theta)[:, None], np.cos(theta)[:, None]
    return np.stack(np.broadcast_arrays(np.sin(phi)[None] * st, ct, -np.cos(phi)[None] * st), axis=-1)


def material_environment(width: int = 512) -> Environment:
    """A procedural sky: a blue gradient to a pale horizon, a dark ground below, and a small bright sun.

    Parameters
    ----------
    width : int
        Columns of the equirectangular image (>= 16); it has ``width // 2 + 1`` rows.

    Notes
    -----
    The sun is a disc of 2.5 degrees radius and radiance 400 around
    :data:`SUN_DIRECTION` with a one-texel soft edge and a faint glow; the
    sky's radiance is about 0.1-0.5; below the horizon a constant dark brown.
    """
    width = int(width)
    if width < 16:
        raise ValueError(f"width must be >= 16, got {width}")
    d = _directions(width // 2 + 1, width)
    up = d[..., 1:2]
    elevation = np.clip(up, 0.0, 1.0)
    sky = _HORIZON + (_ZENITH - _HORIZON) * np.sqrt(elevation)
    # Blend sky to ground over a thin band so that the horizon is not a one-texel step.
    blend = np.clip(up / 0.02 + 0.5, 0.0, 1.0)
    image = blend * sky + (1.0 - blend) * _GROUND
    angle = np.arccos(np.clip(d @ np.asarray(SUN_DIRECTION), -1.0, 1.0))
    texel = 2.0 * np.pi / width
    disc = np.clip((_SUN_RADIUS - angle) / texel + 0.5, 0.0, 1.0)
    glow = 2.0 * np.exp(-angle / 0.08)
    image = image + (_SUN_RADIANCE * disc + glow)[..., None] * np.array([1.0, 0.93, 0.82])
    return Environment(image=image.astype(np.float32), name="material sky")


def checker_texture(size: int = 256, cells: tuple[int, int] = (8, 4)) -> Texture:
    """An sRGB checker of ``cells`` (columns, rows) over a (size/2, size) image, shaded top to bottom.

    Two colours (orange and cream) alternate; the bottom of the image is
    40 % darker than the top, so that the texture's orientation shows.
    """
    w, h = int(size), int(size) // 2
    u = (np.arange(w) + 0.5) / w
    v = (np.arange(h) + 0.5) / h
    odd = ((np.floor(u * cells[0])[None] + np.floor(v * cells[1])[:, None]) % 2).astype(bool)
    colour = np.where(odd[..., None], [0.95, 0.45, 0.10], [0.95, 0.90, 0.78])
    colour = colour * (1.0 - 0.4 * v)[:, None, None]
    return Texture(np.round(colour * 255.0).astype(np.uint8), srgb=True, name="checker")


def bumps_normal_map(size: int = 256, cells: tuple[int, int] = (16, 8), strength: float = 0.6) -> Texture:
    """A tangent-space normal map (glTF's encoding) of round bumps on a (size/2, size) image.

    Each cell holds a spherical cap; its normal is ``normalize(-dh/dx,
    -dh/dy, 1)`` with x along +u and y along -v (glTF: +y towards the top
    of the image), stored as ``(n + 1) / 2`` in linear 8-bit RGB.
    """
    w, h = int(size), int(size) // 2
    # Cell-local coordinates in [-1, 1]; y points up the image.
    x = ((np.arange(w) + 0.5) / w * cells[0]) % 1.0 * 2.0 - 1.0
    y = -(((np.arange(h) + 0.5) / h * cells[1]) % 1.0 * 2.0 - 1.0)
    xx, yy = np.meshgrid(x, y)
    r2 = xx * xx + yy * yy
    inside = r2 < 0.64  # caps of radius 0.8 of the half cell
    cap = np.sqrt(np.maximum(1.0 - r2, 1e-6))
    dx = np.where(inside, -xx / cap, 0.0) * strength  # dh/dx of h = sqrt(1 - r^2)
    dy = np.where(inside, -yy / cap, 0.0) * strength
    n = np.stack([-dx, -dy, np.ones_like(dx)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return Texture(np.round((n + 1.0) * 0.5 * 255.0).astype(np.uint8), srgb=False, name="bumps")


def leaf_texture(size: int = 256) -> Texture:
    """An sRGB RGBA leaf: green with lighter veins, opaque inside the leaf's outline and its stem, clear outside."""
    n = int(size)
    u = (np.arange(n) + 0.5) / n
    s = 1.0 - (np.arange(n) + 0.5) / n  # 0 at the bottom of the image, 1 at the top
    x, t = np.meshgrid(u - 0.5, s)
    along = np.clip((t - 0.12) / 0.83, 0.0, 1.0)
    half_width = 0.36 * np.sin(np.pi * along) ** 0.8 * (1.0 - 0.25 * along)
    body = (t > 0.12) & (t < 0.95) & (np.abs(x) < half_width)
    stem = (t <= 0.14) & (t > 0.02) & (np.abs(x) < 0.012)
    midrib = np.abs(x) < 0.008
    side = np.abs(((t - 0.6 * np.abs(x)) * 9.0) % 1.0 - 0.5) < 0.06  # chevron veins
    colour = np.array([0.20, 0.50, 0.12]) * (0.8 + 0.4 * t)[..., None]
    colour = np.where((midrib | side)[..., None], [0.55, 0.75, 0.30], colour)
    rgba = np.concatenate([colour, (body | stem)[..., None].astype(np.float64)], axis=-1)
    return Texture(np.round(np.clip(rgba, 0.0, 1.0) * 255.0).astype(np.uint8), srgb=True, name="leaf")


def _placement(scale: tuple[float, float, float], yaw: float, pitch: float, at: tuple[float, float, float]
               ) -> np.ndarray:
    """A 3x4 affine: scale, then rotate by ``pitch`` about x, then by ``yaw`` about y, then translate."""
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    rot_y = np.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]])
    rot_x = np.array([[1.0, 0.0, 0.0], [0.0, cp, -sp], [0.0, sp, cp]])
    m = rot_y @ rot_x @ np.diag(scale)
    return np.concatenate([m, np.asarray(at, np.float64)[:, None]], axis=1)


def leaf_quad(matrix: np.ndarray, material: Material | None = None, name: str = "leaf") -> Mesh:
    """The square [-1, 1]^2 in z = 0 (front +z) with UVs (top-left corner (-1, 1) at (0, 0)), placed by ``matrix``.

    ``material`` defaults to a two-sided diffuse with :func:`leaf_texture`
    and ``alpha_mode="mask"``.
    """
    if material is None:
        material = Material(reflectance=(1.0, 1.0, 1.0), two_sided=True, reflectance_texture=leaf_texture(),
                            alpha_mode="mask", alpha_cutoff=0.5, name="leaf")
    vertices = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    uvs = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    quad = Mesh(vertices, np.array([[0, 1, 2], [0, 2, 3]], np.int32), material, name, uvs=uvs)
    return quad.transformed(matrix)


def _sphere_materials() -> list[Material | None]:
    """The grid's materials, row by row from the back, left to right (None: the leaf)."""
    mr = [(1.0, 0.2, (0.95, 0.64, 0.54)), (1.0, 0.6, (0.95, 0.64, 0.54)), (0.0, 0.2, (0.70, 0.08, 0.06)),
          (0.0, 0.6, (0.70, 0.08, 0.06))]
    return [
        Material(reflectance=(0.75, 0.75, 0.75), name="diffuse"),
        Material(bsdf="conductor", eta=GOLD_ETA, k=GOLD_K, reflectance=(1.0, 1.0, 1.0), name="gold"),
        Material(bsdf="conductor", alpha=0.05, eta=GOLD_ETA, k=GOLD_K, reflectance=(1.0, 1.0, 1.0), name="gold 0.05"),
        Material(bsdf="conductor", alpha=0.2, eta=GOLD_ETA, k=GOLD_K, reflectance=(1.0, 1.0, 1.0), name="gold 0.2"),
        Material(bsdf="conductor", alpha=0.5, eta=GOLD_ETA, k=GOLD_K, reflectance=(1.0, 1.0, 1.0), name="gold 0.5"),
        Material(bsdf="dielectric", int_ior=1.5, name="glass"),
        Material(bsdf="dielectric", alpha=0.2, int_ior=1.5, name="frosted glass 0.2"),
        Material(bsdf="plastic", alpha=0.1, reflectance=(0.10, 0.27, 0.60), int_ior=1.5, name="blue plastic 0.1"),
        Material(reflectance=(1.0, 1.0, 1.0), reflectance_texture=checker_texture(), name="checker"),
        Material(bsdf="conductor", alpha=0.1, eta=COPPER_ETA, k=COPPER_K, reflectance=(1.0, 1.0, 1.0),
                 normal_texture=bumps_normal_map(), name="bumped copper 0.1"),
        None,
        *(Material(bsdf="metallic_roughness", metallic=m, roughness=r, reflectance=c, name=f"glTF m{m:g} r{r:g}")
          for m, r, c in mr),
    ]


def _facing(position: tuple[float, float, float], target: tuple[float, float, float],
            half_size: tuple[float, float]) -> np.ndarray:
    """3x4 placement of the square [-1, 1]^2 (front +z) at ``position``, its front towards ``target``."""
    p, t = np.asarray(position, float), np.asarray(target, float)
    n = (t - p) / np.linalg.norm(t - p)
    u = np.cross((0.0, 1.0, 0.0), n)
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    return np.column_stack([u * half_size[0], v * half_size[1], n, p])


def material_scene(*, environment: Environment | None = None, subdivisions: int = 5) -> Scene:
    """Fifteen materials side by side: smooth spheres of radius 0.45 on a grid of 3 rows by 5, on a ground plane.

    Left to right, the back row (top of the image) first:

    1. back row: diffuse grey (0.75); smooth gold conductor; rough gold
       (GGX alpha 0.05); rough gold (0.2); rough gold (0.5);
    2. middle row: smooth glass (dielectric, ior 1.5); rough glass (0.2);
       rough blue plastic (alpha 0.1, ior 1.5); diffuse with an sRGB checker
       texture (:func:`checker_texture`); rough copper (0.1) with a normal
       map of bumps (:func:`bumps_normal_map`);
    3. front row: an alpha-masked leaf (a two-sided textured quad,
       :func:`leaf_quad`); glTF metallic-roughness spheres, (metallic,
       roughness) = (1, 0.2), (1, 0.6) (copper-coloured metal), (0, 0.2),
       (0, 0.6) (red dielectric).

    The textured spheres are turned half a turn about +y so that the seam of
    their latitude-longitude UVs faces away from the camera. The ground is a
    60 x 60 diffuse square (albedo 0.5) at y = 0; a 1.0 x 0.6 warm area light
    (radiance (60, 51, 42), one-sided, facing the grid) hangs above the camera, to the left and out of the
    picture, and the camera looks down at the grid from the front (+z).

    Parameters
    ----------
    environment : Environment, optional
        The light from the sky; default :func:`material_environment` (512 x 257).
    subdivisions : int
        Of each icosphere (5: 20,480 triangles a sphere).
    """
    radius = 0.45
    meshes: list[Mesh] = [rectangle(_placement((30.0, 30.0, 1.0), 0.0, -math.pi / 2, (0.0, 0.0, 0.0)),
                                    Material(reflectance=(0.5, 0.5, 0.5), name="ground"), name="ground")]
    for k, material in enumerate(_sphere_materials()):
        row, col = divmod(k, 5)
        centre = (1.1 * (col - 2), radius, 1.2 * (row - 1))
        if material is None:
            at = (centre[0], 0.5, centre[2])
            meshes.append(leaf_quad(_placement((0.36, 0.48, 1.0), -0.35, -0.15, at)))
            continue
        ball = sphere((0.0, 0.0, 0.0), radius, material, subdivisions=subdivisions, smooth=True, name=material.name)
        turn = math.pi if material.textures else 0.0
        meshes.append(ball.transformed(_placement((1.0, 1.0, 1.0), turn, 0.0, centre)))
    light = Material(reflectance=(0.0, 0.0, 0.0), emission=(60.0, 51.0, 42.0), name="area light")
    meshes.append(rectangle(_facing((-2.0, 7.5, 4.5), (0.0, radius, 0.0), (0.5, 0.3)), light, name="area light"))
    camera = Camera((0.0, 5.8, 7.6), (0.0, 0.0, -0.3), fov=40.0)
    return Scene(meshes, camera, material_environment() if environment is None else environment)
