"""A small USD stage written with ``pxr``, and the same scene built with the Python scene API.

:func:`write_sample_stage` writes a floor, a prototype box instanced three times (one rotated), a preview
surface per material, a distant light, a point light (a sphere light treated as a point), a constant dome and a
camera. :func:`python_twin` builds what the USD schemas say that stage is, from the same numbers, with the
public scene API alone: lights in the renderer's units by UsdLux's rules, the camera's field of view from its
focal length and aperture. The host-build tests render both; the documentation's picture is the stage's render.
"""

from __future__ import annotations

import math

import numpy as np

from optixasync.scene import (
    Camera,
    DirectionalLight,
    Environment,
    Material,
    Mesh,
    PointLight,
    Scene,
    cube,
)

FLOOR = np.array([[-3, 0, -3], [3, 0, -3], [3, 0, 3], [-3, 0, 3]], np.float32)
FLOOR_FAN = np.array([[0, 3, 2], [0, 2, 1]], np.int32)  # the quad (0, 3, 2, 1) fanned: its front faces +y
BOX_PLACES = [((-1.2, 0.5, 0.0), 0.0), ((0.0, 0.5, -0.6), 30.0), ((1.2, 0.5, 0.3), 0.0)]
BOX_SIZE = 0.5  # the box's half width
MATERIALS = {"Floor": ((0.7, 0.7, 0.7), 0.0, 0.8), "Gold": ((1.0, 0.78, 0.34), 1.0, 0.3)}
SUN = (2.0, 1.0, (1.0, 0.95, 0.9))  # intensity, exposure, colour (normalised: the irradiance)
LAMP = (3.0, 0.1, (0.0, 2.0, 1.5))  # intensity, radius, position
SKY = (0.2, (0.6, 0.7, 1.0))
CAMERA = ((0.0, 2.0, 6.0), -15.0, 35.0, (36.0, 24.0))  # position, pitch (degrees about x), focal length, apertures


def box_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The box prototype: the library's cube scaled to half width :data:`BOX_SIZE`."""
    unit = cube()
    return (unit.vertices * np.float32(BOX_SIZE)).astype(np.float32), unit.indices


def write_sample_stage(path) -> None:
    """Write the sample stage to ``path`` (``.usda`` or ``.usdc``)."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, UsdShade

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    looks = {}
    for name, (colour, metallic, roughness) in MATERIALS.items():
        material = UsdShade.Material.Define(stage, f"/Looks/{name}")
        shader = UsdShade.Shader.Define(stage, f"/Looks/{name}/Surface")
        shader.CreateIdAttr("UsdPreviewSurface")
        shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).Set(colour)
        shader.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(metallic)
        shader.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(roughness)
        material.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
        looks[name] = material
    floor = UsdGeom.Mesh.Define(stage, "/World/Floor")
    floor.CreatePointsAttr([Gf.Vec3f(*map(float, p)) for p in FLOOR])
    floor.CreateFaceVertexCountsAttr([4])
    floor.CreateFaceVertexIndicesAttr([0, 3, 2, 1])
    floor.CreateSubdivisionSchemeAttr("none")
    UsdShade.MaterialBindingAPI.Apply(floor.GetPrim()).Bind(looks["Floor"])
    vertices, triangles = box_arrays()
    stage.CreateClassPrim("/Box")
    box = UsdGeom.Mesh.Define(stage, "/Box/Mesh")
    box.CreatePointsAttr([Gf.Vec3f(*map(float, p)) for p in vertices])
    box.CreateFaceVertexCountsAttr([3] * len(triangles))
    box.CreateFaceVertexIndicesAttr([int(i) for i in triangles.reshape(-1)])
    box.CreateSubdivisionSchemeAttr("none")
    UsdShade.MaterialBindingAPI.Apply(box.GetPrim()).Bind(looks["Gold"])
    for k, (position, angle) in enumerate(BOX_PLACES):
        place = UsdGeom.Xform.Define(stage, f"/World/Box{k}")
        place.GetPrim().GetReferences().AddInternalReference("/Box")
        place.GetPrim().SetInstanceable(True)
        place.AddTranslateOp().Set(Gf.Vec3d(*position))
        place.AddRotateYOp().Set(angle)
    intensity, exposure, colour = SUN
    sun = UsdLux.DistantLight.Define(stage, "/World/Sun")
    sun.CreateIntensityAttr(intensity)
    sun.CreateExposureAttr(exposure)
    sun.CreateColorAttr(colour)
    sun.CreateNormalizeAttr(True)
    sun.AddRotateXYZOp().Set(Gf.Vec3f(-50.0, 30.0, 0.0))
    power, radius, position = LAMP
    lamp = UsdLux.SphereLight.Define(stage, "/World/Lamp")
    lamp.CreateIntensityAttr(power)
    lamp.CreateRadiusAttr(radius)
    lamp.CreateTreatAsPointAttr(True)
    lamp.AddTranslateOp().Set(Gf.Vec3d(*position))
    sky_intensity, sky_colour = SKY
    sky = UsdLux.DomeLight.Define(stage, "/World/Sky")
    sky.CreateIntensityAttr(sky_intensity)
    sky.CreateColorAttr(sky_colour)
    eye, pitch, focal, (h_ap, v_ap) = CAMERA
    camera = UsdGeom.Camera.Define(stage, "/World/Camera")
    camera.CreateFocalLengthAttr(focal)
    camera.CreateHorizontalApertureAttr(h_ap)
    camera.CreateVerticalApertureAttr(v_ap)
    camera.AddTranslateOp().Set(Gf.Vec3d(*eye))
    camera.AddRotateXOp().Set(pitch)
    stage.GetRootLayer().Save()


def _rotation(axis: str, degrees: float) -> np.ndarray:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return {"x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]), "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


def python_twin() -> Scene:
    """The sample stage as the USD schemas define it, built with the scene API (doubleSided off: culled backs)."""
    def material(name: str) -> Material:
        colour, metallic, roughness = MATERIALS[name]
        return Material(bsdf="metallic_roughness", reflectance=colour, metallic=metallic, roughness=roughness,
                        cull_back=True, name=f"/Looks/{name}")

    meshes = [Mesh(FLOOR.copy(), FLOOR_FAN.copy(), material("Floor"), "/World/Floor")]
    vertices, triangles = box_arrays()
    gold = material("Gold")
    for k, (position, angle) in enumerate(BOX_PLACES):
        transform = np.hstack([_rotation("y", angle), np.array(position, np.float64)[:, None]])
        meshes.append(Mesh(vertices, triangles, gold, f"/World/Box{k}", transform=transform))
    intensity, exposure, colour = SUN
    # rotateXYZ applies x first, then y: the light's -z turned by Ry(30) Rx(-50)
    direction = _rotation("y", 30.0) @ _rotation("x", -50.0) @ np.array([0.0, 0.0, -1.0])
    sun = DirectionalLight(tuple(direction), tuple(intensity * 2.0**exposure * np.array(colour)))
    power, radius, position = LAMP
    lamp = PointLight(position, (power * math.pi * radius**2,) * 3)  # the sphere's intensity seen from afar
    sky_intensity, sky_colour = SKY
    eye, pitch, focal, (h_ap, v_ap) = CAMERA
    forward = _rotation("x", pitch) @ np.array([0.0, 0.0, -1.0])
    up = _rotation("x", pitch) @ np.array([0.0, 1.0, 0.0])
    camera = Camera(eye, tuple(np.add(eye, forward)), tuple(up), fov=math.degrees(2 * math.atan(v_ap / (2 * focal))))
    return Scene(meshes, camera, Environment(radiance=tuple(sky_intensity * np.array(sky_colour))), [sun, lamp])


def write_slide_stage(path) -> None:
    """A black double-sided square sliding from x = -0.5 to 0.5 over one second (24 time codes) under a white dome,
    seen by an orthographic camera of half width 1 (16 pixels across: the square's edges on pixel edges)."""
    from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux

    stage = Usd.Stage.CreateNew(str(path))
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(24)
    stage.SetTimeCodesPerSecond(24)
    mover = UsdGeom.Xform.Define(stage, "/Mover")
    op = mover.AddTranslateOp()
    op.Set(Gf.Vec3d(-0.5, 0, 0), 0)
    op.Set(Gf.Vec3d(0.5, 0, 0), 24)
    square = UsdGeom.Mesh.Define(stage, "/Mover/Square")
    square.CreatePointsAttr([(-0.25, -0.25, 0), (0.25, -0.25, 0), (0.25, 0.25, 0), (-0.25, 0.25, 0)])
    square.CreateFaceVertexCountsAttr([4])
    square.CreateFaceVertexIndicesAttr([0, 1, 2, 3])
    square.CreateDoubleSidedAttr(True)
    UsdGeom.PrimvarsAPI(square).CreatePrimvar("displayColor", Sdf.ValueTypeNames.Color3fArray).Set([(0, 0, 0)])
    UsdLux.DomeLight.Define(stage, "/Sky")
    camera = UsdGeom.Camera.Define(stage, "/Cam")
    camera.CreateProjectionAttr("orthographic")
    camera.CreateHorizontalApertureAttr(20.0)
    camera.CreateVerticalApertureAttr(20.0)
    camera.AddTranslateOp().Set(Gf.Vec3d(0, 0, 5))
    stage.GetRootLayer().Save()


def slide_columns(width: int, seconds: float) -> np.ndarray:
    """(width,) bool: the image columns the sliding square covers at ``seconds`` (the middle row's)."""
    xs = (np.arange(width) + 0.5) / width * 2.0 - 1.0  # pixel centres in world x
    return np.abs(xs - (-0.5 + seconds)) < 0.25
