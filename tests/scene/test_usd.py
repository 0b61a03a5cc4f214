"""USD stages written with ``pxr`` in the test, read by ``load_usd``: the Scene's values against what the stage says.

Each test builds a small stage in ``tmp_path`` with the ``pxr`` API and checks the geometry, materials, lights,
cameras, instancing and time samples of the scene against values worked out by hand from the USD schemas.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pxr = pytest.importorskip("pxr", reason="the usd extra (usd-core) is not installed")
from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, UsdShade, Vt  # noqa: E402

from optixasync.scene import Curves, DirectionalLight, PointLight, Spheres, SpotLight, load_usd, read_usd  # noqa: E402


def new_stage(tmp_path, name="scene.usda"):
    path = tmp_path / name
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    return stage, path


def quad_mesh(stage, path, points=((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)), counts=(4,), indices=(0, 1, 2, 3)):
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.CreatePointsAttr([Gf.Vec3f(*p) for p in points])
    mesh.CreateFaceVertexCountsAttr(list(counts))
    mesh.CreateFaceVertexIndicesAttr(list(indices))
    mesh.CreateSubdivisionSchemeAttr("none")
    return mesh


def preview(stage, path, **inputs):
    """A UsdPreviewSurface material at ``path`` with constant ``inputs`` (name: (type, value))."""
    material = UsdShade.Material.Define(stage, path)
    shader = UsdShade.Shader.Define(stage, f"{path}/Surface")
    shader.CreateIdAttr("UsdPreviewSurface")
    for name, (kind, value) in inputs.items():
        shader.CreateInput(name, kind).Set(value)
    material.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
    return material, shader


def bind(prim, material):
    UsdShade.MaterialBindingAPI.Apply(prim).Bind(material)


def save(stage, path, **kwargs):
    stage.GetRootLayer().Save()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a test that expects a warning says so
        return load_usd(path, **kwargs)


def world_points(mesh):
    v = mesh.vertices.astype(np.float64)
    if mesh.transform is not None:
        v = v @ mesh.transform[:, :3].T + mesh.transform[:, 3]
    return v


# -- meshes ---------------------------------------------------------------------------------------------------------
def test_polygons_are_fan_triangulated_with_their_winding(tmp_path):
    stage, path = new_stage(tmp_path)
    quad_mesh(stage, "/Poly", points=[(0, 0, 0), (1, 0, 0), (1, 1, 0), (0.5, 1.5, 0), (0, 1, 0), (2, 0, 0)],
              counts=(5, 3), indices=(0, 1, 2, 3, 4, 1, 5, 2))
    scene = save(stage, path)
    (mesh,) = scene.meshes
    assert mesh.num_triangles == 3 + 1
    assert mesh.indices.tolist() == [[0, 1, 2], [0, 2, 3], [0, 3, 4], [1, 5, 2]]
    assert (mesh.face_normals()[:, 2] > 0.99).all()  # counter-clockwise seen from +z: the front faces +z


def test_left_handed_orientation_reverses_the_winding_and_holes_drop_faces(tmp_path):
    stage, path = new_stage(tmp_path)
    mesh = quad_mesh(stage, "/M", points=[(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0), (2, 1, 0)],
                     counts=(4, 4), indices=(0, 1, 2, 3, 1, 4, 5, 2))
    mesh.CreateOrientationAttr("leftHanded")
    mesh.CreateHoleIndicesAttr([1])
    (out,) = save(stage, path).meshes
    assert out.num_triangles == 2
    assert (out.face_normals()[:, 2] < -0.99).all()


def test_face_varying_normals_and_st_unweld_the_mesh_and_flip_v(tmp_path):
    stage, path = new_stage(tmp_path)
    mesh = quad_mesh(stage, "/M")
    normals = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("normals", Sdf.ValueTypeNames.Normal3fArray,
                                                      UsdGeom.Tokens.faceVarying)
    normals.Set([(0, 0, 1), (0, 0, 1), (0, 0.6, 0.8), (0, 0.6, 0.8)])
    st = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.vertex)
    st.Set([(0, 0), (1, 0), (1, 1), (0, 0.25)])
    (out,) = save(stage, path).meshes
    assert out.num_vertices == 4  # one per face corner: the quad's four
    np.testing.assert_allclose(out.normals[2], (0.0, 0.6, 0.8), atol=1e-6)
    np.testing.assert_allclose(out.uvs, [(0, 1), (1, 1), (1, 0), (0, 0.75)], atol=1e-6)


def test_indexed_uniform_colours_and_vertex_primvars(tmp_path):
    stage, path = new_stage(tmp_path)
    mesh = quad_mesh(stage, "/M", points=[(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], counts=(3, 3),
                     indices=(0, 1, 2, 0, 2, 3))
    color = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("displayColor", Sdf.ValueTypeNames.Color3fArray,
                                                    UsdGeom.Tokens.uniform)
    color.Set([(1, 0, 0), (0, 0, 1)])
    color.SetIndices(Vt.IntArray([1, 0]))
    (out,) = save(stage, path).meshes
    assert out.num_vertices == 6
    np.testing.assert_allclose(out.colors[:3, :3], [[0, 0, 1]] * 3)
    np.testing.assert_allclose(out.colors[3:, :3], [[1, 0, 0]] * 3)


def test_a_subdivision_surface_without_normals_is_shaded_smooth(tmp_path):
    stage, path = new_stage(tmp_path)
    mesh = quad_mesh(stage, "/M", points=[(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (1, 0, 1), (1, 1, 1)],
                     counts=(4, 4), indices=(0, 1, 2, 3, 1, 4, 5, 2))
    mesh.CreateSubdivisionSchemeAttr("catmullClark")
    (out,) = save(stage, path).meshes
    # vertex 1 is in one fan triangle of the +z face (area 1/2) and both of the -x face (area 1): area-weighted
    np.testing.assert_allclose(out.normals[1], np.array([-1.0, 0.0, 0.5]) / math.sqrt(1.25), atol=1e-6)
    np.testing.assert_allclose(out.normals[0], (0.0, 0.0, 1.0), atol=1e-6)


def test_geom_subsets_split_the_mesh_by_material(tmp_path):
    stage, path = new_stage(tmp_path)
    mesh = quad_mesh(stage, "/M", points=[(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (2, 0, 0), (2, 1, 0)],
                     counts=(4, 4), indices=(0, 1, 2, 3, 1, 4, 5, 2))
    red, _ = preview(stage, "/Looks/Red", diffuseColor=(Sdf.ValueTypeNames.Color3f, (1, 0, 0)))
    blue, _ = preview(stage, "/Looks/Blue", diffuseColor=(Sdf.ValueTypeNames.Color3f, (0, 0, 1)))
    bind(mesh.GetPrim(), blue)
    subset = UsdGeom.Subset.CreateGeomSubset(mesh, "right", UsdGeom.Tokens.face, Vt.IntArray([1]),
                                             UsdShade.Tokens.materialBind)
    bind(subset.GetPrim(), red)
    meshes = save(stage, path).meshes
    assert [m.name for m in meshes] == ["/M", "/M/right"]
    assert meshes[0].material.reflectance == (0.0, 0.0, 1.0) and meshes[1].material.reflectance == (1.0, 0.0, 0.0)
    assert meshes[0].vertices[:, 0].max() == 1.0 and meshes[1].vertices[:, 0].min() == 1.0
    assert meshes[0].num_vertices == 4 and meshes[1].num_vertices == 4  # each compacted to its own vertices


def test_double_sided_maps_to_the_renderers_sides(tmp_path):
    stage, path = new_stage(tmp_path)
    quad_mesh(stage, "/One")
    quad_mesh(stage, "/Two").CreateDoubleSidedAttr(True)
    one, two = save(stage, path).meshes
    assert one.material.sidedness == "cull_back" and two.material.sidedness == "two_sided"


# -- transforms, instancing, purpose ------------------------------------------------------------------------------
def test_xform_hierarchy_and_reset_xform_stack(tmp_path):
    stage, path = new_stage(tmp_path)
    parent = UsdGeom.Xform.Define(stage, "/P")
    parent.AddTranslateOp().Set(Gf.Vec3d(10, 0, 0))
    parent.AddScaleOp().Set(Gf.Vec3f(2, 2, 2))
    quad_mesh(stage, "/P/Child")
    reset = UsdGeom.Xform.Define(stage, "/P/Reset")
    reset.SetResetXformStack(True)
    reset.AddTranslateOp().Set(Gf.Vec3d(0, 5, 0))
    quad_mesh(stage, "/P/Reset/Quad")
    child, free = save(stage, path).meshes
    np.testing.assert_allclose(world_points(child)[2], (12, 2, 0))
    np.testing.assert_allclose(world_points(free)[2], (1, 6, 0))


def test_instanceable_prims_share_one_prototype(tmp_path):
    stage, path = new_stage(tmp_path)
    stage.CreateClassPrim("/Proto")
    quad_mesh(stage, "/Proto/Quad")
    for i in range(3):
        x = UsdGeom.Xform.Define(stage, f"/I{i}")
        x.GetPrim().GetReferences().AddInternalReference("/Proto")
        x.GetPrim().SetInstanceable(True)
        x.AddTranslateOp().Set(Gf.Vec3d(0, 3 * i, 0))
    scene = save(stage, path)
    assert len(scene.meshes) == 3 and scene.instanced == [0, 1, 2]
    assert len({id(m.vertices) for m in scene.meshes}) == 1  # one structure, placed three times
    for i, mesh in enumerate(scene.meshes):
        np.testing.assert_allclose(world_points(mesh)[0], (0, 3 * i, 0))


def test_point_instancer_places_its_prototypes(tmp_path):
    stage, path = new_stage(tmp_path)
    instancer = UsdGeom.PointInstancer.Define(stage, "/Field")
    instancer.AddTranslateOp().Set(Gf.Vec3d(0, 0, -5))
    quad_mesh(stage, "/Field/Protos/A")
    box = UsdGeom.Cube.Define(stage, "/Field/Protos/B")
    box.AddTranslateOp().Set(Gf.Vec3d(0, 1, 0))  # the prototype root's own transform is applied
    instancer.CreatePrototypesRel().SetTargets(["/Field/Protos/A", "/Field/Protos/B"])
    instancer.CreateProtoIndicesAttr([0, 1, 0, 1, 0])
    instancer.CreatePositionsAttr([(float(i), 0, 0) for i in range(5)])
    instancer.CreateInvisibleIdsAttr([4])
    scene = save(stage, path)
    quads = [m for m in scene.meshes if m.num_triangles == 2]
    boxes = [m for m in scene.meshes if m.num_triangles == 12]
    assert len(quads) == 2 and len(boxes) == 2
    np.testing.assert_allclose(sorted(q.transform[0, 3] for q in quads), [0.0, 2.0])
    for b, x in zip(boxes, (1.0, 3.0), strict=True):
        np.testing.assert_allclose(world_points(b).mean(axis=0), (x, 1.0, -5.0), atol=1e-6)


def test_guides_proxies_and_invisible_prims_are_not_drawn(tmp_path):
    stage, path = new_stage(tmp_path)
    UsdGeom.Imageable(quad_mesh(stage, "/Guide").GetPrim()).CreatePurposeAttr("guide")
    proxy = UsdGeom.Xform.Define(stage, "/Proxy")
    proxy.CreatePurposeAttr("proxy")
    quad_mesh(stage, "/Proxy/Quad")
    hidden = UsdGeom.Xform.Define(stage, "/Hidden")
    hidden.CreateVisibilityAttr("invisible")
    quad_mesh(stage, "/Hidden/Quad")
    UsdGeom.Imageable(quad_mesh(stage, "/Render").GetPrim()).CreatePurposeAttr("render")
    shown = UsdGeom.Xform.Define(stage, "/Shown")
    shown.CreatePurposeAttr("guide")  # a prim's own authored purpose wins over its ancestor's
    UsdGeom.Imageable(quad_mesh(stage, "/Shown/Quad").GetPrim()).CreatePurposeAttr("render")
    quad_mesh(stage, "/Shown/Inherits")  # none of its own: the guide's
    quad_mesh(stage, "/Inactive").GetPrim().SetActive(False)
    assert [m.name for m in save(stage, path).meshes] == ["/Render", "/Shown/Quad"]


# -- shapes ---------------------------------------------------------------------------------------------------------
def test_spheres_points_and_curves(tmp_path):
    stage, path = new_stage(tmp_path)
    ball = UsdGeom.Sphere.Define(stage, "/Ball")
    ball.CreateRadiusAttr(0.5)
    ball.AddTranslateOp().Set(Gf.Vec3d(1, 2, 3))
    ball.AddScaleOp().Set(Gf.Vec3f(2, 2, 2))
    points = UsdGeom.Points.Define(stage, "/Cloud")
    points.CreatePointsAttr([(0, 0, 0), (1, 0, 0)])
    points.CreateWidthsAttr([0.2, 0.4])
    curves = UsdGeom.BasisCurves.Define(stage, "/Hair")
    curves.CreateTypeAttr("cubic")
    curves.CreateBasisAttr("bspline")
    curves.CreateCurveVertexCountsAttr([4])
    curves.CreatePointsAttr([(0, 0, 0), (0, 1, 0), (0, 2, 0), (0, 3, 0)])
    curves.CreateWidthsAttr([0.1])
    shapes = save(stage, path).shapes
    sphere_shape, cloud, hair = shapes
    assert isinstance(sphere_shape, Spheres) and isinstance(cloud, Spheres) and isinstance(hair, Curves)
    np.testing.assert_allclose(sphere_shape.centers[0], (1, 2, 3))
    np.testing.assert_allclose(sphere_shape.radii, 1.0)
    np.testing.assert_allclose(cloud.radii, (0.1, 0.2))
    assert hair.kind == "cubic_bspline" and len(hair.segments) == 1
    np.testing.assert_allclose(hair.radii, 0.05)


@pytest.mark.parametrize("kind, bounds", [
    ("Cube", ((-1, -1, -1), (1, 1, 1))),
    ("Cylinder", ((-1, -1, -1), (1, 1, 1))),
    ("Cone", ((-1, -1, -1), (1, 1, 1))),
    ("Capsule", ((-0.5, -0.5, -1.0), (0.5, 0.5, 1.0))),
])
def test_implicit_gprims_are_tessellated_to_their_extent(tmp_path, kind, bounds):
    stage, path = new_stage(tmp_path)
    stage.DefinePrim("/Shape", kind)
    (mesh,) = save(stage, path).meshes
    np.testing.assert_allclose(mesh.vertices.min(axis=0), bounds[0], atol=1e-3)
    np.testing.assert_allclose(mesh.vertices.max(axis=0), bounds[1], atol=1e-3)
    # closed and outward: the winding normals' area-weighted sum vanishes and the centre is inside
    v0, v1, v2 = mesh.corners()
    centre_side = np.einsum("ij,ij->i", np.cross(v1 - v0, v2 - v0), v0)
    assert (centre_side > -1e-9).all()


def test_axis_turns_a_cylinder(tmp_path):
    stage, path = new_stage(tmp_path)
    cylinder = UsdGeom.Cylinder.Define(stage, "/C")
    cylinder.CreateAxisAttr("X")
    cylinder.CreateHeightAttr(4.0)
    cylinder.CreateRadiusAttr(0.5)
    (mesh,) = save(stage, path).meshes
    np.testing.assert_allclose(mesh.vertices.max(axis=0), (2.0, 0.5, 0.5), atol=1e-3)


# -- materials --------------------------------------------------------------------------------------------------
def test_preview_surface_values(tmp_path):
    stage, path = new_stage(tmp_path)
    material, _ = preview(stage, "/Looks/Gold", diffuseColor=(Sdf.ValueTypeNames.Color3f, (1.0, 0.8, 0.3)),
                          metallic=(Sdf.ValueTypeNames.Float, 1.0), roughness=(Sdf.ValueTypeNames.Float, 0.25),
                          emissiveColor=(Sdf.ValueTypeNames.Color3f, (0.5, 0.0, 0.0)),
                          opacityThreshold=(Sdf.ValueTypeNames.Float, 0.3))
    bind(quad_mesh(stage, "/M").GetPrim(), material)
    (mesh,) = save(stage, path).meshes
    m = mesh.material
    assert m.bsdf == "metallic_roughness" and m.name == "/Looks/Gold"
    np.testing.assert_allclose(m.reflectance, (1.0, 0.8, 0.3), rtol=1e-6)
    assert (m.metallic, m.roughness) == (1.0, 0.25)
    assert m.emission == pytest.approx((0.5, 0.0, 0.0))
    assert (m.alpha_mode, m.alpha_cutoff) == ("mask", pytest.approx(0.3))


def test_clearcoat_becomes_a_plastic_and_ior_warns(tmp_path):
    stage, path = new_stage(tmp_path)
    coat, _ = preview(stage, "/Looks/Coat", clearcoat=(Sdf.ValueTypeNames.Float, 1.0),
                      clearcoatRoughness=(Sdf.ValueTypeNames.Float, 0.2))
    glassy, _ = preview(stage, "/Looks/Ior", ior=(Sdf.ValueTypeNames.Float, 1.8))
    bind(quad_mesh(stage, "/A").GetPrim(), coat)
    bind(quad_mesh(stage, "/B").GetPrim(), glassy)
    stage.GetRootLayer().Save()
    with pytest.warns(UserWarning) as record:
        a, b = load_usd(path).meshes
    messages = " ".join(str(w.message) for w in record)
    assert "becomes a plastic" in messages and "ior 1.8 is ignored" in messages
    assert a.material.bsdf == "plastic" and a.material.alpha == pytest.approx(0.04)
    assert b.material.bsdf == "metallic_roughness"


def _png(path, pixels):
    from PIL import Image

    Image.fromarray(np.asarray(pixels, np.uint8)).save(path)
    return path


def texture_node(stage, material_path, name, file, output_type, st_source=None):
    tex = UsdShade.Shader.Define(stage, f"{material_path}/{name}")
    tex.CreateIdAttr("UsdUVTexture")
    tex.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(file)
    if st_source is not None:
        tex.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(st_source.ConnectableAPI(), "result")
    for output in ("rgb", "r", "g", "b", "a"):
        tex.CreateOutput(output, Sdf.ValueTypeNames.Float3 if output == "rgb" else Sdf.ValueTypeNames.Float)
    return tex


def test_textures_transform_and_packed_metallic_roughness(tmp_path):
    stage, path = new_stage(tmp_path)
    colour = np.zeros((2, 2, 3), np.uint8)
    colour[0, 0] = (255, 0, 0)
    _png(tmp_path / "colour.png", colour)
    _png(tmp_path / "rough.png", np.full((2, 2), 128, np.uint8))
    _png(tmp_path / "metal.png", np.full((4, 4, 3), (10, 20, 30), np.uint8))
    material, surface = preview(stage, "/Looks/T")
    reader = UsdShade.Shader.Define(stage, "/Looks/T/St")
    reader.CreateIdAttr("UsdPrimvarReader_float2")
    reader.CreateInput("varname", Sdf.ValueTypeNames.Token).Set("st")
    reader.CreateOutput("result", Sdf.ValueTypeNames.Float2)
    transform = UsdShade.Shader.Define(stage, "/Looks/T/Move")
    transform.CreateIdAttr("UsdTransform2d")
    transform.CreateInput("in", Sdf.ValueTypeNames.Float2).ConnectToSource(reader.ConnectableAPI(), "result")
    transform.CreateInput("rotation", Sdf.ValueTypeNames.Float).Set(90.0)
    transform.CreateInput("scale", Sdf.ValueTypeNames.Float2).Set((2.0, 3.0))
    transform.CreateInput("translation", Sdf.ValueTypeNames.Float2).Set((0.5, 0.25))
    transform.CreateOutput("result", Sdf.ValueTypeNames.Float2)
    diffuse = texture_node(stage, "/Looks/T", "Colour", "./colour.png", "rgb", transform)
    diffuse.CreateInput("wrapS", Sdf.ValueTypeNames.Token).Set("clamp")
    rough = texture_node(stage, "/Looks/T", "Rough", "./rough.png", "r", reader)
    metal = texture_node(stage, "/Looks/T", "Metal", "./metal.png", "b", reader)
    surface.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(diffuse.ConnectableAPI(), "rgb")
    surface.CreateInput("roughness", Sdf.ValueTypeNames.Float).ConnectToSource(rough.ConnectableAPI(), "r")
    surface.CreateInput("metallic", Sdf.ValueTypeNames.Float).ConnectToSource(metal.ConnectableAPI(), "b")
    mesh = quad_mesh(stage, "/M")
    UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, "vertex").Set(
        [(0, 0), (1, 0), (1, 1), (0, 1)])
    bind(mesh.GetPrim(), material)
    (out,) = save(stage, path).meshes
    m = out.material
    assert m.reflectance == (1.0, 1.0, 1.0) and m.reflectance_texture.srgb
    assert m.reflectance_texture.wrap == ("clamp", "repeat")
    np.testing.assert_array_equal(m.reflectance_texture.data[0, 0], (255, 0, 0))
    tt = m.reflectance_texture.transform
    assert tt.rotation == pytest.approx(math.pi / 2) and tt.scale == (2.0, 3.0)
    # st' = t + R(90) (s * st) = (0.5 - 3 t, 0.25 + 2 s) in USD's st; in v-down UV its offset (0.5 - 3, 1 - 0.25)
    assert tt.offset == pytest.approx((0.5 - 3.0, 0.75))
    # the renderer's uv = (s, 1 - t): check one point through both conventions
    s_, t_ = 0.2, 0.7
    usd = np.array([0.5 - 3.0 * t_, 0.25 + 2.0 * s_])
    uv = tt.matrix().astype(np.float64) @ np.array([s_, 1.0 - t_, 1.0])
    np.testing.assert_allclose(uv, (usd[0], 1.0 - usd[1]), atol=1e-6)
    packed = m.metallic_roughness_texture
    assert not packed.srgb and packed.shape[:2] == (4, 4)
    assert (packed.data[..., 1] == 128).all() and (packed.data[..., 2] == 30).all()
    assert (m.metallic, m.roughness) == (1.0, 1.0)


def test_a_texture_outside_the_folder_is_refused(tmp_path):
    from optixasync.errors import AssetPathError

    inner = tmp_path / "asset"
    inner.mkdir()
    _png(tmp_path / "secret.png", np.zeros((2, 2, 3), np.uint8))
    stage, path = new_stage(inner)
    material, surface = preview(stage, "/Looks/T")
    tex = texture_node(stage, "/Looks/T", "Colour", "../secret.png", "rgb")
    surface.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(tex.ConnectableAPI(), "rgb")
    mesh = quad_mesh(stage, "/M")
    UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, "vertex").Set(
        [(0, 0), (1, 0), (1, 1), (0, 1)])
    bind(mesh.GetPrim(), material)
    stage.GetRootLayer().Save()
    with pytest.raises(AssetPathError, match=r"'\.\./secret\.png' is refused"):
        load_usd(path)
    assert load_usd(path, limits={"allowed_folders": (tmp_path,)}).meshes[0].material.reflectance_texture is not None


# -- lights ---------------------------------------------------------------------------------------------------------
def test_distant_light_irradiance(tmp_path):
    stage, path = new_stage(tmp_path)
    sun = UsdLux.DistantLight.Define(stage, "/Sun")
    sun.CreateIntensityAttr(50000.0)
    sun.CreateColorAttr((1.0, 0.5, 0.25))
    sun.AddRotateXOp().Set(-90.0)  # -z turned to -y: the light shines down
    norm = UsdLux.DistantLight.Define(stage, "/Normalised")
    norm.CreateIntensityAttr(3.0)
    norm.CreateExposureAttr(1.0)
    norm.CreateNormalizeAttr(True)
    a, b = save(stage, path).lights
    assert isinstance(a, DirectionalLight)
    np.testing.assert_allclose(a.direction, (0, -1, 0), atol=1e-9)
    solid = 2 * math.pi * (1 - math.cos(math.radians(0.53) / 2))
    np.testing.assert_allclose(a.irradiance, np.array([1.0, 0.5, 0.25]) * 50000 * solid, rtol=1e-6)
    np.testing.assert_allclose(b.irradiance, (6.0, 6.0, 6.0))


def test_area_lights_become_emissive_meshes(tmp_path):
    stage, path = new_stage(tmp_path)
    rect = UsdLux.RectLight.Define(stage, "/Rect")
    rect.CreateWidthAttr(2.0)
    rect.CreateHeightAttr(0.5)
    rect.CreateIntensityAttr(4.0)
    rect.CreateNormalizeAttr(True)
    disk = UsdLux.DiskLight.Define(stage, "/Disk")
    disk.CreateRadiusAttr(0.25)
    disk.CreateIntensityAttr(2.0)
    ball = UsdLux.SphereLight.Define(stage, "/Ball")
    ball.CreateRadiusAttr(0.1)
    ball.AddTranslateOp().Set(Gf.Vec3d(0, 3, 0))
    scene = save(stage, path)
    r, d, s = scene.meshes
    assert scene.emitters == [0, 1, 2]
    assert r.areas().sum() == pytest.approx(1.0)
    np.testing.assert_allclose(r.material.emission, (4.0, 4.0, 4.0))  # normalised by its area, 1
    assert (r.face_normals()[:, 2] < -0.999).all() and (d.face_normals()[:, 2] < -0.999).all()  # emits along -z
    assert d.areas().sum() == pytest.approx(math.pi * 0.25**2, rel=0.01)
    np.testing.assert_allclose(d.material.emission, (2.0, 2.0, 2.0))
    np.testing.assert_allclose(s.vertices.mean(axis=0), (0, 3, 0), atol=1e-3)


def test_point_and_spot_lights(tmp_path):
    stage, path = new_stage(tmp_path)
    point = UsdLux.SphereLight.Define(stage, "/Point")
    point.CreateRadiusAttr(0.5)
    point.CreateTreatAsPointAttr(True)
    point.CreateIntensityAttr(4.0)
    spot = UsdLux.SphereLight.Define(stage, "/Spot")
    spot.CreateRadiusAttr(0.0)
    spot.CreateIntensityAttr(10.0)
    shaping = UsdLux.ShapingAPI.Apply(spot.GetPrim())
    shaping.CreateShapingConeAngleAttr(30.0)
    shaping.CreateShapingConeSoftnessAttr(0.5)
    p, s = save(stage, path).lights
    assert isinstance(p, PointLight) and isinstance(s, SpotLight)
    np.testing.assert_allclose(p.intensity, (4.0 * math.pi * 0.25,) * 3)
    np.testing.assert_allclose(s.intensity, (10.0,) * 3)
    assert s.outer_angle == pytest.approx(math.radians(30.0))
    assert s.inner_angle == pytest.approx(math.radians(15.0), rel=2e-3)


def test_dome_light_constant_and_map(tmp_path):
    stage, path = new_stage(tmp_path)
    dome = UsdLux.DomeLight.Define(stage, "/Sky")
    dome.CreateIntensityAttr(2.0)
    dome.CreateColorAttr((1.0, 0.5, 1.0))
    assert save(stage, path).environment.radiance == pytest.approx((2.0, 1.0, 2.0))
    sky = np.ones((4, 8, 3), np.float32)
    np.save(tmp_path / "sky.npy", sky)
    dome.CreateTextureFileAttr("./sky.npy")
    dome.AddRotateYOp().Set(90.0)
    env = save(stage, path).environment
    np.testing.assert_allclose(env.image[0, 0], (2.0, 1.0, 2.0))
    np.testing.assert_allclose(env.to_world, [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-9)


# -- cameras --------------------------------------------------------------------------------------------------------
def test_camera_field_of_view_and_placement(tmp_path):
    stage, path = new_stage(tmp_path)
    cam = UsdGeom.Camera.Define(stage, "/Cams/Main")
    cam.CreateFocalLengthAttr(50.0)
    cam.CreateHorizontalApertureAttr(36.0)
    cam.CreateVerticalApertureAttr(24.0)
    cam.AddTranslateOp().Set(Gf.Vec3d(0, 1, 10))
    side = UsdGeom.Camera.Define(stage, "/Cams/Side")
    side.CreateProjectionAttr("orthographic")
    side.CreateHorizontalApertureAttr(40.0)
    side.CreateVerticalApertureAttr(20.0)
    side.CreateClippingRangeAttr((0.5, 100.0))
    side.AddRotateYOp().Set(90.0)
    camera = save(stage, path).camera
    assert camera.fov == pytest.approx(math.degrees(2 * math.atan(24.0 / 100.0)))
    assert camera.eye == pytest.approx((0, 1, 10)) and camera.target == pytest.approx((0, 1, 9))
    ortho = load_usd(path, camera="Side").camera
    assert ortho.projection == "orthographic" and (ortho.xmag, ortho.ymag) == pytest.approx((2.0, 1.0))
    assert (ortho.znear, ortho.zfar) == (0.5, 100.0)
    np.testing.assert_allclose(np.subtract(ortho.target, ortho.eye), (-1, 0, 0), atol=1e-9)
    with pytest.raises(ValueError, match="no camera 'Nope'"):
        load_usd(path, camera="Nope")


# -- time -----------------------------------------------------------------------------------------------------------
def moving_stage(tmp_path, shutter=None):
    stage, path = new_stage(tmp_path)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(24)
    stage.SetTimeCodesPerSecond(24)
    mover = UsdGeom.Xform.Define(stage, "/Mover")
    op = mover.AddTranslateOp()
    op.Set(Gf.Vec3d(0, 0, 0), 0)
    op.Set(Gf.Vec3d(2, 0, 0), 24)
    quad_mesh(stage, "/Mover/Quad")
    quad_mesh(stage, "/Still")
    cam = UsdGeom.Camera.Define(stage, "/Cam")
    cam.AddTranslateOp().Set(Gf.Vec3d(0, 0, 5))
    if shutter is not None:
        cam.CreateShutterOpenAttr(shutter[0])
        cam.CreateShutterCloseAttr(shutter[1])
    stage.GetRootLayer().Save()
    return path


def test_time_picks_the_samples_and_frames_play_them(tmp_path):
    path = moving_stage(tmp_path)
    assert load_usd(path).meshes[0].transform[0, 3] == pytest.approx(0.0)
    assert load_usd(path, time=12).meshes[0].transform[0, 3] == pytest.approx(1.0)
    asset = read_usd(path, motion_blur=False)
    animation = asset.animation
    assert animation.moving.tolist() == [True, False] and asset.scene.instanced == [0]
    assert (animation.start, animation.end) == (0.0, 1.0)  # seconds: 24 time codes per second
    np.testing.assert_allclose(animation.transforms(0.25)[0, :, 3], (0.5, 0, 0))
    np.testing.assert_allclose(animation.transforms(0.25)[1], np.eye(4)[:3])
    np.testing.assert_allclose(animation.transforms(5.0)[0, :, 3], (2, 0, 0))  # held after the last sample
    assert animation.camera_at(0.5) is None


def test_camera_shutter_gives_motion_keys(tmp_path):
    path = moving_stage(tmp_path, shutter=(0.0, 12.0))
    asset = read_usd(path, time=6)
    mover = asset.scene.meshes[0]
    assert asset.animation is None and asset.scene.shutter == (0.0, 12.0)
    assert mover.motion is not None and mover.transform is None and not mover.material.cull_back
    keys = np.array(mover.motion.transforms)
    np.testing.assert_allclose(keys[0][:, 3], (0.5, 0, 0))  # time 6
    np.testing.assert_allclose(keys[-1][:, 3], (1.5, 0, 0))  # time 18
    assert asset.scene.meshes[1].motion is None


def test_points_at_a_time(tmp_path):
    stage, path = new_stage(tmp_path)
    mesh = quad_mesh(stage, "/M")
    points = mesh.GetPointsAttr()
    points.Set([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], 0)
    points.Set([(0, 0, 2), (1, 0, 2), (1, 1, 2), (0, 1, 2)], 10)
    stage.GetRootLayer().Save()
    assert load_usd(path).meshes[0].vertices[:, 2] == pytest.approx(0.0)  # the earliest sample
    assert load_usd(path, time=5).meshes[0].vertices[:, 2] == pytest.approx(1.0)


def test_a_moving_camera_is_part_of_the_animation(tmp_path):
    stage, path = new_stage(tmp_path)
    stage.SetTimeCodesPerSecond(10)
    quad_mesh(stage, "/Q")
    cam = UsdGeom.Camera.Define(stage, "/Cam")
    op = cam.AddTranslateOp()
    op.Set(Gf.Vec3d(0, 0, 5), 0)
    op.Set(Gf.Vec3d(0, 0, 9), 10)
    animation = save_and_read(stage, path)
    assert animation.moving.tolist() == [False]
    assert animation.camera_at(0.5).eye == pytest.approx((0, 0, 7))


def save_and_read(stage, path):
    stage.GetRootLayer().Save()
    return read_usd(path, motion_blur=False).animation


def test_a_usdz_package_with_a_reference_inside(tmp_path):
    from pxr import UsdUtils

    stage, _ = new_stage(tmp_path, "asset.usda")
    quad_mesh(stage, "/A/M")
    stage.SetDefaultPrim(stage.GetPrimAtPath("/A"))
    stage.GetRootLayer().Save()
    main, main_path = new_stage(tmp_path, "main.usda")
    main.DefinePrim("/Main").GetReferences().AddReference("./asset.usda")
    main.GetRootLayer().Save()
    assert UsdUtils.CreateNewUsdzPackage(Sdf.AssetPath(str(main_path)), str(tmp_path / "pack.usdz"))
    (tmp_path / "asset.usda").unlink()  # read from inside the package
    (mesh,) = load_usd(tmp_path / "pack.usdz").meshes
    assert mesh.name == "/Main/M" and mesh.num_triangles == 2


def test_a_dome_follows_a_z_up_stage(tmp_path):
    stage, path = new_stage(tmp_path)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    np.save(tmp_path / "sky.npy", np.ones((4, 8, 3), np.float32))
    dome = stage.DefinePrim("/Sky", "DomeLight_1")
    dome.CreateAttribute("inputs:texture:file", Sdf.ValueTypeNames.Asset).Set("./sky.npy")
    env = save(stage, path).environment
    np.testing.assert_allclose(env.to_world @ [0.0, 1.0, 0.0], (0, 0, 1), atol=1e-12)  # the map's pole is +z


def test_normal_map_and_opacity_from_the_colour_textures_alpha(tmp_path):
    stage, path = new_stage(tmp_path)
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[..., 3] = (0, 255)
    _png(tmp_path / "leaf.png", rgba)
    _png(tmp_path / "bumps.png", np.full((2, 2, 3), (128, 128, 255), np.uint8))
    material, surface = preview(stage, "/Looks/Leaf", opacityThreshold=(Sdf.ValueTypeNames.Float, 0.5))
    colour = texture_node(stage, "/Looks/Leaf", "Colour", "./leaf.png", "rgb")
    normal = texture_node(stage, "/Looks/Leaf", "Normal", "./bumps.png", "rgb")
    normal.CreateInput("scale", Sdf.ValueTypeNames.Float4).Set((2, 2, 2, 1))
    normal.CreateInput("bias", Sdf.ValueTypeNames.Float4).Set((-1, -1, -1, 0))
    normal.CreateInput("sourceColorSpace", Sdf.ValueTypeNames.Token).Set("raw")
    surface.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f).ConnectToSource(colour.ConnectableAPI(), "rgb")
    surface.CreateInput("opacity", Sdf.ValueTypeNames.Float).ConnectToSource(colour.ConnectableAPI(), "a")
    surface.CreateInput("normal", Sdf.ValueTypeNames.Normal3f).ConnectToSource(normal.ConnectableAPI(), "rgb")
    mesh = quad_mesh(stage, "/M")
    UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, "vertex").Set(
        [(0, 0), (1, 0), (1, 1), (0, 1)])
    bind(mesh.GetPrim(), material)
    m = save(stage, path).meshes[0].material
    assert (m.alpha_mode, m.alpha_cutoff, m.opacity) == ("mask", 0.5, 1.0)
    assert m.reflectance_texture.shape == (2, 2, 4)  # the image's alpha is the opacity
    np.testing.assert_array_equal(m.reflectance_texture.data[..., 3], rgba[..., 3])
    assert m.normal_texture is not None and not m.normal_texture.srgb
