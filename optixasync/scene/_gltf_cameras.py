"""What glTF nodes place besides meshes: cameras (perspective and orthographic) and ``KHR_lights_punctual`` lights.

Both are plain host records (:class:`GltfCamera`, :class:`GltfLight`), one per
placement of their node, with the node's world matrix. Every camera also
becomes a :class:`~optixasync.scene.Camera` (a pinhole, or an orthographic
camera with glTF's ``xmag``, ``ymag``, ``znear`` and ``zfar``). Lights keep the
extension's values and units (``intensity`` in candela for point and spot
lights, in lux for directional ones) and become the renderer's
:class:`~optixasync.scene.PointLight`, :class:`~optixasync.scene.SpotLight`
and :class:`~optixasync.scene.DirectionalLight` through
:meth:`GltfLight.scene_light`.

Light units
-----------
The renderer's lights are radiometric: radiant intensity (W/sr) and
irradiance (W/m^2), in the units of its radiance. The extension's are
photometric: candela (lm/sr) and lux (lm/m^2). :meth:`GltfLight.scene_light`
multiplies ``color * intensity`` by ``scale``, by default
:data:`WATTS_PER_LUMEN` = 1 / 683 W/lm: the luminous efficacy that defines the
candela (monochromatic 555 nm light), the conversion the extension's units
and Blender's exporter use. So a glTF point light of 683 cd gives a surface
facing it 1 unit away an irradiance of 1, what a uniform sky of radiance
1 / pi gives an open surface. Real-time viewers read candela and lux as their units at
exposure 1 instead; ``scale=1`` does the same. ``range`` is not applied:
light falls off by the inverse square everywhere (the extension allows it;
a warning says so once per file).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._camera import Camera
from ._gltf_data import GltfDocument
from ._gltf_json import floats, number
from ._lights import DirectionalLight, PointLight, SpotLight

__all__ = ["LIGHT_TYPES", "WATTS_PER_LUMEN", "GltfCamera", "GltfLight", "read_camera", "read_light", "scene_lights"]

#: ``KHR_lights_punctual`` light types.
LIGHT_TYPES = ("point", "spot", "directional")
#: The default conversion of the extension's photometric units to the renderer's radiometric ones: 1 / 683 W/lm.
WATTS_PER_LUMEN = 1.0 / 683.0


@dataclass(frozen=True)
class GltfCamera:
    """A camera node of the scene.

    Attributes
    ----------
    index : int
        The glTF camera (``cameras[index]``).
    node : int
        The node that places it.
    name : str
        The camera's name, else its node's, else ``"camera{index}"``.
    projection : str
        ``"perspective"`` or ``"orthographic"``.
    camera : Camera
        The world-space camera (a pinhole, or an orthographic :class:`Camera`).
    yfov : float or None
        glTF's vertical field of view, radians (perspective only).
    aspect_ratio : float or None
        The file's width / height, if it gives one (it only informs the fov conversion).
    znear, zfar : float or None
        The clipping distances (``zfar`` None: a perspective camera without a far plane).
    xmag, ymag : float or None
        Half the width and height of an orthographic camera's view, in world units (orthographic only).
    matrix : numpy.ndarray or None
        The camera's 4x4 camera-to-world matrix (row-major; it looks along its -z, +y up).
    placement : int
        Its node's placement in :attr:`GltfAsset.placements` (-1 when unknown).
    """

    index: int
    node: int
    name: str
    projection: str
    camera: Camera
    yfov: float | None = None
    aspect_ratio: float | None = None
    znear: float | None = None
    zfar: float | None = None
    xmag: float | None = None
    ymag: float | None = None
    matrix: np.ndarray | None = None
    placement: int = -1

    def placed(self, matrix: np.ndarray) -> Camera:
        """This camera (its projection and view) placed by another camera-to-world ``matrix`` (an animated node's)."""
        c = self.camera
        if c.orthographic:
            return Camera.from_matrix(matrix, xmag=c.xmag, ymag=c.ymag, znear=c.znear, zfar=c.zfar)
        return Camera.from_matrix(matrix, c.fov)


@dataclass(frozen=True)
class GltfLight:
    """A ``KHR_lights_punctual`` light placed by a node, as the extension gives it.

    Attributes
    ----------
    index : int
        The light in the document's ``extensions.KHR_lights_punctual.lights``.
    node : int
        The node that places it.
    name : str
        The light's name, else its node's, else ``"light{index}"``.
    type : str
        ``"point"``, ``"spot"`` or ``"directional"``.
    color : tuple of 3 floats
        Linear RGB in [0, 1].
    intensity : float
        Candela (lm/sr) for point and spot lights, lux (lm/m^2) for directional ones.
    range : float or None
        Distance beyond which the light does not reach (None: infinite); not for directional lights.
    inner_cone_angle, outer_cone_angle : float or None
        A spot light's cone, radians from its axis: full intensity inside the inner angle, none outside
        the outer one (None for other types).
    matrix : numpy.ndarray
        The node's 4x4 world matrix (row-major); the light shines along its -z.
    """

    index: int
    node: int
    name: str
    type: str
    color: tuple[float, float, float]
    intensity: float
    range: float | None
    inner_cone_angle: float | None
    outer_cone_angle: float | None
    matrix: np.ndarray

    @property
    def position(self) -> np.ndarray:
        """World position (3,) of a point or spot light."""
        return self.matrix[:3, 3].copy()

    @property
    def direction(self) -> np.ndarray:
        """Unit world direction (3,) the light shines in (the node's -z)."""
        d = -self.matrix[:3, 2]
        return d / np.linalg.norm(d)

    def scene_light(self, scale: float = WATTS_PER_LUMEN) -> PointLight | SpotLight | DirectionalLight:
        """The renderer's light: ``color * intensity * scale`` as radiant intensity or irradiance (module doc).

        Raises
        ------
        ValueError
            On a ``scale`` that is not a finite number >= 0, or a node that gives no direction (a zero z axis).
        """
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale >= 0):
            raise ValueError(f"light scale must be a finite number >= 0, got {scale!r}")
        rgb = tuple(float(c) * self.intensity * float(scale) for c in self.color)
        if self.type == "point":
            return PointLight(tuple(self.position), rgb, name=self.name)
        if not np.linalg.norm(self.matrix[:3, 2]) > 0.0:
            raise ValueError(f"light {self.name!r}: node {self.node} has a zero z axis: the light has no direction")
        if self.type == "spot":
            assert self.inner_cone_angle is not None and self.outer_cone_angle is not None
            return SpotLight(tuple(self.position), tuple(self.direction), rgb, self.inner_cone_angle,
                             self.outer_cone_angle, name=self.name)
        return DirectionalLight(tuple(self.direction), rgb, name=self.name)


def read_camera(doc: GltfDocument, index: int, node: int, world: np.ndarray, node_name: str | None) -> GltfCamera:
    """Camera ``index`` of the file placed at ``world`` by ``node``; ValueError naming the camera when malformed."""
    cam = doc.items("cameras")[index]
    own = cam.get("name") if isinstance(cam.get("name"), str) else None
    name = (own or node_name or f"camera{index}")[:200]
    label = f"{doc.file}: camera {index} ({name!r})"
    kind = cam.get("type")
    if kind not in ("perspective", "orthographic"):
        raise ValueError(f"{label}: type must be perspective or orthographic, got {str(kind)[:32]!r}")
    params = cam.get(kind)
    if not isinstance(params, dict):
        raise ValueError(f"{label} is {kind} but has no {kind} object")
    znear = None if params.get("znear") is None else number(params.get("znear"), math.nan, f"{label} znear")
    zfar = None if params.get("zfar") is None else number(params.get("zfar"), math.nan, f"{label} zfar")
    if kind == "orthographic":
        xmag = number(params.get("xmag"), math.nan, f"{label} xmag")
        ymag = number(params.get("ymag"), math.nan, f"{label} ymag")
        if xmag == 0.0 or ymag == 0.0 or not (math.isfinite(xmag) and math.isfinite(ymag)):
            raise ValueError(f"{label}: xmag and ymag must be finite and not zero, got {xmag} and {ymag}")
        if znear is None or zfar is None or not 0.0 <= znear < zfar:
            raise ValueError(f"{label}: an orthographic camera needs 0 <= znear < zfar, got {znear} and {zfar}")
        if xmag < 0.0 or ymag < 0.0:
            doc.warn_once(f"ortho-sign:{index}", f"camera {index} ({name!r}) has a negative xmag or ymag "
                          f"({xmag}, {ymag}), which glTF advises against: their magnitudes are used (no mirror)")
        try:
            camera = Camera.from_matrix(world, xmag=abs(xmag), ymag=abs(ymag), znear=znear, zfar=zfar)
        except ValueError as exc:
            raise ValueError(f"{label}, node {node}: {exc}") from None
        return GltfCamera(index, node, name, kind, camera, znear=znear, zfar=zfar, xmag=xmag, ymag=ymag,
                          matrix=world.copy())
    yfov = number(params.get("yfov"), math.nan, f"{label} yfov")
    if not 0.0 < yfov < math.pi:
        raise ValueError(f"{label}: yfov must be in (0, pi) radians, got {yfov}")
    if (znear is not None and not znear > 0.0) or (zfar is not None and not zfar > (znear or 0.0)):
        raise ValueError(f"{label}: a perspective camera needs 0 < znear (< zfar), got {znear} and {zfar}")
    aspect = params.get("aspectRatio")
    aspect = None if aspect is None else number(aspect, 1.0, f"{label} aspectRatio")
    if aspect is not None and not aspect > 0.0:
        raise ValueError(f"{label}: aspectRatio must be positive, got {aspect}")
    # Camera's fov spans the smaller image axis: glTF's yfov for landscape images, the horizontal one for portrait.
    fov = yfov if aspect is None or aspect >= 1.0 else 2.0 * math.atan(math.tan(yfov / 2.0) * aspect)
    try:
        camera = Camera.from_matrix(world, math.degrees(fov))
    except ValueError as exc:
        raise ValueError(f"{label}, node {node}: {exc}") from None
    return GltfCamera(index, node, name, kind, camera, yfov, aspect, znear, zfar, matrix=world.copy())


def scene_lights(doc: GltfDocument) -> list[dict[str, Any]]:
    """The document's ``extensions.KHR_lights_punctual.lights`` (objects), empty when it has none."""
    extension = doc.extension(doc.json, "KHR_lights_punctual", "the document")
    if extension is None:
        return []
    lights = extension.get("lights")
    if not isinstance(lights, list) or not all(isinstance(light, dict) for light in lights):
        raise ValueError(f"{doc.file}: KHR_lights_punctual: lights must be an array of objects")
    return lights


def read_light(doc: GltfDocument, lights: list[dict[str, Any]], index: int, node: int, world: np.ndarray,
               node_name: str | None) -> GltfLight:
    """Light ``index`` placed at ``world`` by ``node``, checked against the extension's ranges."""
    light = lights[index]
    own = light.get("name") if isinstance(light.get("name"), str) else None
    name = (own or node_name or f"light{index}")[:200]
    label = f"{doc.file}: KHR_lights_punctual light {index} ({name!r})"
    kind = light.get("type")
    if kind not in LIGHT_TYPES:
        raise ValueError(f"{label}: type must be point, spot or directional, got {str(kind)[:32]!r}")
    color = floats(light["color"], 3, f"{label} color") if light.get("color") is not None else np.ones(3)
    if not ((color >= 0.0) & (color <= 1.0)).all():
        raise ValueError(f"{label}: color must be 3 numbers in [0, 1], got {color.tolist()}")
    intensity = number(light.get("intensity"), 1.0, f"{label} intensity")
    if intensity < 0.0:
        raise ValueError(f"{label}: intensity must be >= 0, got {intensity}")
    reach = None if light.get("range") is None or kind == "directional" else number(light["range"], 0.0,
                                                                                    f"{label} range")
    if reach is not None and not reach > 0.0:
        raise ValueError(f"{label}: range must be positive, got {reach}")
    if reach is not None and math.isfinite(reach):
        doc.warn_once("light-range", f"KHR_lights_punctual light {index} ({name!r}) has range {reach}: not applied, "
                      "its light falls off by the inverse square everywhere")
    inner = outer = None
    if kind == "spot":
        spot = light.get("spot") if isinstance(light.get("spot"), dict) else {}
        inner = number(spot.get("innerConeAngle"), 0.0, f"{label} innerConeAngle")
        outer = number(spot.get("outerConeAngle"), math.pi / 4.0, f"{label} outerConeAngle")
        if not 0.0 <= inner < outer <= math.pi / 2.0:
            raise ValueError(f"{label}: the cone needs 0 <= innerConeAngle < outerConeAngle <= pi/2, got {inner} "
                             f"and {outer}")
    return GltfLight(index, node, name, kind, (float(color[0]), float(color[1]), float(color[2])), intensity, reach,
                     inner, outer, world.copy())
