"""``UsdLux`` lights and ``UsdGeomCamera`` cameras, in the renderer's units and conventions.

A light's radiance is ``intensity * 2**exposure * color`` (UsdLux's rule;
``enableColorTemperature`` is ignored with a warning). With ``normalize``
it is divided by the light's world-space area (by its solid angle for a
distant light), so its power does not change with its size.

* ``DistantLight``: a :class:`DirectionalLight` along the light's -z, of
  irradiance ``radiance * solid angle`` of a disc of ``angle`` degrees
  (normalised: the radiance itself).
* ``RectLight`` (``width`` x ``height``) and ``DiskLight`` (``radius``),
  in their local xy plane, emitting towards -z: emissive meshes
  (light-sampled and MIS-combined like every emitter). Their textures are
  ignored with a warning.
* ``SphereLight``: an emissive sphere mesh of ``radius``; with
  ``treatAsPoint`` (or radius 0) a :class:`PointLight` of intensity
  ``radiance * pi * radius**2`` (the sphere's, seen from afar; radius 0: the
  radiance itself), a :class:`SpotLight` with ``ShapingAPI``'s
  ``shaping:cone:angle`` and ``softness``.
* ``DomeLight``: the scene's :class:`Environment`: its latitude-longitude
  ``texture:file`` (OpenEXR's convention, which the renderer's environment
  map shares) or a constant, times its radiance, turned by the light's
  rotation (and, for ``DomeLight_1``, its ``poleAxis``). One dome is used; others are dropped with a warning.

Cylinder, geometry, portal and plug-in lights are skipped with a warning.
Cameras: ``focalLength`` and the apertures give the field of view along the
smaller aperture axis (exact for an image of the aperture's aspect ratio);
an orthographic camera's apertures (tenths of a scene unit) and
``clippingRange`` its extent; aperture offsets are ignored with a warning.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._camera import Camera
from ._environment import Environment
from ._lights import DirectionalLight, PointLight, SpotLight
from ._material import Material
from ._mesh import Mesh, sphere
from ._usd_stage import UsdDocument

__all__ = ["LIGHT_TYPES", "read_camera", "read_light"]

#: The prim types read as lights.
LIGHT_TYPES = ("DistantLight", "RectLight", "DiskLight", "SphereLight", "DomeLight", "DomeLight_1",
               "CylinderLight", "GeometryLight", "PortalLight", "PluginLight")


def _input(prim: Any, name: str, time: Any, default: Any) -> Any:
    attr = prim.GetAttribute(f"inputs:{name}") or prim.GetAttribute(name)
    value = attr.Get(time) if attr else None
    return default if value is None else value


def _finite(value: Any, label: str, name: str, minimum: float = 0.0) -> float:
    v = float(value)
    if not (math.isfinite(v) and v >= minimum):
        raise ValueError(f"{label}: {name} must be a finite number >= {minimum}, got {v}")
    return v


def light_radiance(doc: UsdDocument, prim: Any, time: Any, label: str) -> np.ndarray:
    """``intensity * 2**exposure * color`` (RGB float64)."""
    intensity = _finite(_input(prim, "intensity", time, 1.0), label, "intensity")
    exposure = float(_input(prim, "exposure", time, 0.0))
    if not math.isfinite(exposure) or abs(exposure) > 64:
        raise ValueError(f"{label}: exposure must be a finite number in [-64, 64], got {exposure}")
    color = np.array([_finite(c, label, "color") for c in _input(prim, "color", time, (1.0, 1.0, 1.0))])
    if bool(_input(prim, "enableColorTemperature", time, False)):
        doc.warn_once(f"temperature:{prim.GetPath()}", f"{label}: colorTemperature is ignored")
    return intensity * 2.0**exposure * color


def _scales(world: np.ndarray) -> np.ndarray:
    return np.linalg.norm(world[:3, :3], axis=0)


def read_light(doc: UsdDocument, prim: Any, world: np.ndarray, time: Any) -> tuple[str, Any] | None:
    """``("light" | "mesh" | "environment", object)`` for a light prim (``world``: its 4x4 local-to-world)."""
    kind = prim.GetTypeName()
    label = f"{doc.file}: light {prim.GetPath()}"
    name = str(prim.GetPath())
    radiance = light_radiance(doc, prim, time, label)
    normalize = bool(_input(prim, "normalize", time, False))
    if kind == "DistantLight":
        angle = math.radians(_finite(_input(prim, "angle", time, 0.53), label, "angle"))
        solid = 2.0 * math.pi * (1.0 - math.cos(min(angle, math.pi) / 2.0))
        irradiance = radiance if normalize else radiance * solid
        return "light", DirectionalLight(tuple(-world[:3, 2]), tuple(irradiance), name)
    if kind in ("RectLight", "DiskLight"):
        if prim.GetAttribute("inputs:texture:file") and prim.GetAttribute("inputs:texture:file").HasAuthoredValue():
            doc.warn_once(f"lighttex:{name}", f"{label}: its texture is ignored (it emits its colour)")
        if kind == "RectLight":
            w = _finite(_input(prim, "width", time, 1.0), label, "width") / 2.0
            h = _finite(_input(prim, "height", time, 1.0), label, "height") / 2.0
            vertices = np.array([[-w, -h, 0.0], [w, -h, 0.0], [w, h, 0.0], [-w, h, 0.0]])
        else:
            r = _finite(_input(prim, "radius", time, 0.5), label, "radius")
            phi = np.linspace(0.0, 2.0 * math.pi, 65)[:-1]
            vertices = np.vstack([[0.0, 0.0, 0.0], np.stack([r * np.cos(phi), r * np.sin(phi), 0 * phi], 1)])
        if kind == "RectLight":
            tris = np.array([[0, 2, 1], [0, 3, 2]])  # winding normal -z: the side the light emits to
        else:
            k = np.arange(64)
            tris = np.stack([np.zeros(64, np.int64), 1 + (k + 1) % 64, 1 + k], 1)
        mesh = Mesh(vertices.astype(np.float32), tris.astype(np.int32), name=name).transformed(world)
        area = float(mesh.areas().sum())
        if not area > 0:
            raise ValueError(f"{label}: the light has no area")
        emission = radiance / area if normalize else radiance
        mesh = Mesh(mesh.vertices, mesh.indices, Material(reflectance=(0.0, 0.0, 0.0), emission=tuple(emission),
                                                          name=name), name)
        return "mesh", mesh
    if kind == "SphereLight":
        r = _finite(_input(prim, "radius", time, 0.5), label, "radius") * float(_scales(world).mean())
        area = 4.0 * math.pi * r * r
        position = tuple(world[:3, 3])
        cone = prim.GetAttribute("inputs:shaping:cone:angle")
        point = bool(_input(prim, "treatAsPoint", time, False)) or r == 0.0 or (cone and cone.HasAuthoredValue())
        if point:
            intensity = radiance if r == 0.0 else radiance * math.pi * r * r
            if normalize and area > 0:
                intensity = intensity / area
            if cone and cone.HasAuthoredValue():
                outer = math.radians(min(90.0, _finite(cone.Get(time), label, "shaping:cone:angle")))
                softness = min(1.0, _finite(_input(prim, "shaping:cone:softness", time, 0.0), label, "softness"))
                inner = outer * (1.0 - softness) * 0.999
                return "light", SpotLight(position, tuple(-world[:3, 2]), tuple(intensity), inner, max(outer, 1e-6),
                                          name)
            return "light", PointLight(position, tuple(intensity), name)
        emission = radiance / area if normalize else radiance
        material = Material(reflectance=(0.0, 0.0, 0.0), emission=tuple(emission), name=name)
        return "mesh", sphere(position, r, material, subdivisions=3, smooth=True, name=name)
    if kind in ("DomeLight", "DomeLight_1"):
        return "environment", _dome(doc, prim, world, time, label, radiance)
    doc.warn_once(f"light:{kind}", f"{label}: {kind} lights are not drawn (skipped)")
    return None


def _dome(doc: UsdDocument, prim: Any, world: np.ndarray, time: Any, label: str, radiance: np.ndarray) -> Environment:
    from ._environment_files import load_environment
    from ._usd_materials import _authoring_layer

    rotation = world[:3, :3] / _scales(world)
    attr = prim.GetAttribute("inputs:texture:file")
    asset = attr.Get(time) if attr else None
    if asset is None or not asset.path:
        return Environment(radiance=tuple(radiance), name=str(prim.GetPath()))
    layout = str(_input(prim, "texture:format", time, "automatic"))
    if layout not in ("automatic", "latlong"):
        raise ValueError(f"{label}: texture:format {layout!r} is not read (only latlong maps)")
    from pxr import UsdGeom

    pole = str(_input(prim, "poleAxis", time, "scene")) if prim.GetTypeName() == "DomeLight_1" else "Y"
    if pole == "scene":
        pole = str(UsdGeom.GetStageUpAxis(prim.GetStage()))
    if pole == "Z":  # the map's +Y pole turned to +Z
        rotation = rotation @ np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    path = doc.asset_path(asset.path, _authoring_layer(attr), f"light {prim.GetPath()} texture:file")
    env = load_environment(path, scale=1.0, to_world=rotation, limits=doc.limits)
    image = env.image * radiance.astype(np.float32)
    return Environment(image=image, to_world=rotation, name=str(prim.GetPath()))


def read_camera(doc: UsdDocument, prim: Any, world: np.ndarray, time: Any) -> Camera:
    """The renderer's camera for a ``UsdGeomCamera`` prim placed by ``world`` (4x4 local-to-world)."""
    from pxr import UsdGeom

    camera = UsdGeom.Camera(prim)
    label = f"{doc.file}: camera {prim.GetPath()}"
    h_ap = _finite(camera.GetHorizontalApertureAttr().Get(time), label, "horizontalAperture", 1e-12)
    v_ap = _finite(camera.GetVerticalApertureAttr().Get(time), label, "verticalAperture", 1e-12)
    if any(float(a.Get(time) or 0.0) != 0.0 for a in (camera.GetHorizontalApertureOffsetAttr(),
                                                       camera.GetVerticalApertureOffsetAttr())):
        doc.warn_once(f"offset:{prim.GetPath()}", f"camera {prim.GetPath()}: aperture offsets are ignored")
    m = world.copy()
    scale = _scales(m)
    if not (scale > 0).all():
        raise ValueError(f"{label}: its transform scales it to zero")
    m[:3, :3] = m[:3, :3] / scale
    if str(camera.GetProjectionAttr().Get(time)) == "orthographic":
        near, far = (float(c) for c in camera.GetClippingRangeAttr().Get(time))
        return Camera.from_matrix(m, xmag=h_ap * 0.05, ymag=v_ap * 0.05, znear=max(near, 0.0), zfar=far)
    focal = _finite(camera.GetFocalLengthAttr().Get(time), label, "focalLength", 1e-12)
    smaller = min(h_ap, v_ap)
    fov = math.degrees(2.0 * math.atan(smaller / (2.0 * focal)))
    return Camera.from_matrix(m, fov=fov)
