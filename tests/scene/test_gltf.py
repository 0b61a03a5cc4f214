"""glTF 2.0 (.gltf, .glb) and OBJ + MTL files read into Scenes: geometry, node transforms, materials, cameras, errors.

CPU only: every file is written here, JSON and binary buffers built with numpy.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pytest
from PIL import Image

from optixasync.scene import Camera, GltfAsset, generate_tangents, load_gltf, load_obj, load_scene, read_gltf
from optixasync.testing import GltfBuilder as Gltf

TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
QUAD = np.array([[-1, 1, 0], [1, 1, 0], [1, -1, 0], [-1, -1, 0]], np.float32)  # front +z
QUAD_UV = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32)  # (0, 0) top-left, as the image's row 0
QUAD_INDICES = np.array([0, 3, 2, 0, 2, 1], np.uint16)  # counter-clockwise seen from +z
def quaternion(axis, angle):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return [*(axis * math.sin(angle / 2)), math.cos(angle / 2)]


def apply(matrix, points):
    return np.asarray(points, np.float64) @ np.asarray(matrix)[:3, :3].T + np.asarray(matrix)[:3, 3]


def quad_gltf(tmp_path, material: dict | None = None, *, uv=QUAD_UV, **attributes) -> Gltf:
    g = Gltf()
    index = g.add("materials", material) if material is not None else None
    if uv is not None:
        attributes["TEXCOORD_0"] = uv
    g.scene(g.node(mesh=g.mesh(QUAD, QUAD_INDICES, index, name="quad", **attributes)))
    return g


# -- geometry and nodes --------------------------------------------------------------------------------------------


def test_instanced_mesh_gives_one_primitive_and_two_world_meshes(tmp_path):
    g = Gltf()
    mesh = g.mesh(TRIANGLE, [0, 1, 2], name="tri")
    g.scene(g.node(mesh=mesh, name="left", translation=[-2, 0, 0]), g.node(mesh=mesh, name="right",
                                                                           translation=[3, 0, 1]))
    path = g.write_glb(tmp_path / "two.glb")
    asset = read_gltf(path)
    assert isinstance(asset, GltfAsset)
    assert list(asset.meshes) == [(0, 0)]
    np.testing.assert_array_equal(asset.meshes[(0, 0)].vertices, TRIANGLE)
    assert [i.key for i in asset.instances] == [(0, 0), (0, 0)]
    np.testing.assert_array_equal(asset.instances[1].matrix[:3, 3], [3, 0, 1])
    scene = load_gltf(path, instancing=False)
    assert [m.name for m in scene.meshes] == ["left/tri", "right/tri"]
    np.testing.assert_array_equal(scene.meshes[0].vertices, TRIANGLE + [-2, 0, 0])
    np.testing.assert_array_equal(scene.meshes[1].vertices, TRIANGLE + [3, 0, 1])
    np.testing.assert_array_equal(scene.meshes[1].indices, [[0, 1, 2]])
    assert scene.meshes[0].indices.dtype == np.int32
    # By default the primitive stays shared: two instances of the same arrays, each with its placement.
    shared = load_gltf(path)
    assert [m.name for m in shared.meshes] == ["left/tri", "right/tri"]
    assert shared.meshes[0].vertices is shared.meshes[1].vertices is asset_vertices(shared)
    np.testing.assert_array_equal(shared.meshes[1].transform[:, 3], [3, 0, 1])
    for flat, instance in zip(scene.meshes, shared.meshes, strict=True):
        np.testing.assert_allclose(np.concatenate(instance.corners()), np.concatenate(flat.corners()), atol=1e-6)
    # A primitive used once is flattened: the scene stays one GAS.
    g.scene(g.node(mesh=mesh, name="alone", translation=[1, 0, 0]))
    single = load_gltf(g.write_glb(tmp_path / "one.glb"))
    assert not single.meshes[0].instanced
    np.testing.assert_array_equal(single.meshes[0].vertices, TRIANGLE + [1, 0, 0])


def asset_vertices(scene):
    return scene.meshes[0].vertices


def test_parent_matrix_and_child_trs_chain_with_normals(tmp_path):
    g = Gltf()
    normals = np.array([[0.0, 0.0, 1.0], [0.0, 0.6, 0.8], [0.0, 0.0, 1.0]])
    mesh = g.mesh(TRIANGLE, None, NORMAL=normals)  # non-indexed: sequential indices
    # Parent: scale 2 in x and translation (1, 2, 3), given column-major as glTF stores it.
    parent_m = np.array([[2, 0, 0, 1], [0, 1, 0, 2], [0, 0, 1, 3], [0, 0, 0, 1]], np.float64)
    child = g.node(mesh=mesh, translation=[0, 0, -1], rotation=quaternion([0, 1, 0], math.pi / 2), scale=[1, 3, 1])
    g.scene(g.node(matrix=parent_m.T.reshape(-1).tolist(), children=[child]))
    path = g.write_gltf(tmp_path / "chain.gltf")
    (mesh,) = load_gltf(path).meshes
    # Child: a quarter turn about +y takes x to -z and z to x; its scale stretches y by 3 first.
    rot_y = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]], np.float64)
    child_m = np.eye(4)
    child_m[:3, :3] = rot_y @ np.diag([1, 3, 1])
    child_m[:3, 3] = [0, 0, -1]
    world = parent_m @ child_m
    expected = apply(world, TRIANGLE)
    np.testing.assert_allclose(mesh.vertices, expected, atol=1e-6)
    np.testing.assert_allclose(expected[1], [1, 2, 1])  # (1, 0, 0) -> (0, 0, -1) -> (0, 0, -2) -> (1, 2, 1)
    np.testing.assert_array_equal(mesh.indices, [[0, 1, 2]])
    # The normal +z turns to +x, then the parent's x-scale 2 shrinks it (inverse transpose): still +x.
    np.testing.assert_allclose(mesh.normals[[0, 2]], [[1.0, 0.0, 0.0]] * 2, atol=1e-6)
    # (0, 0.6, 0.8): the child's y-scale 3 divides y, the turn takes z to x, the parent's x-scale halves x.
    expected_normal = np.array([0.8 / 2, 0.6 / 3, 0.0]) / np.linalg.norm([0.8 / 2, 0.6 / 3, 0.0])
    np.testing.assert_allclose(mesh.normals[1], expected_normal, atol=1e-6)
    linear = world[:3, :3]
    np.testing.assert_allclose(mesh.normals[1], normals[1] @ np.linalg.inv(linear) /
                               np.linalg.norm(normals[1] @ np.linalg.inv(linear)), atol=1e-6)
    # And it is the winding normal of the transformed triangle.
    assert mesh.face_normals()[0] @ [1, 0, 0] == pytest.approx(1.0)


def test_interleaved_strided_data_uri_uvs_normalized_and_strip(tmp_path):
    g = Gltf()
    strip = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]], np.float32)
    normals = np.tile(np.float32([0, 0, 1]), (4, 1))
    interleaved = np.concatenate([strip, normals], axis=1).astype(np.float32)  # 24-byte stride
    view = g.view(interleaved.tobytes(), stride=24)
    pos = g.add("accessors", {"bufferView": view, "componentType": 5126, "count": 4, "type": "VEC3"})
    nrm = g.add("accessors", {"bufferView": view, "byteOffset": 12, "componentType": 5126, "count": 4,
                              "type": "VEC3"})
    uv = g.accessor(np.array([[0, 0], [0, 65535], [65535, 0], [65535, 32768]], np.uint16), normalized=True)
    mesh = g.add("meshes", {"primitives": [{"attributes": {"POSITION": pos, "NORMAL": nrm, "TEXCOORD_0": uv},
                                            "mode": 5}]})
    g.scene(g.node(mesh=mesh))
    (m,) = load_gltf(g.write_gltf(tmp_path / "strip.gltf", data_uri=True)).meshes
    assert not (tmp_path / "strip.bin").exists()
    np.testing.assert_array_equal(m.vertices, strip)
    np.testing.assert_array_equal(m.normals, normals)
    np.testing.assert_allclose(m.uvs, [[0, 0], [0, 1], [1, 0], [1, 32768 / 65535]], rtol=0, atol=1e-7)
    # glTF's strip triangle i is (i, i + 1 + i % 2, i + 2 - i % 2): odd ones swap two corners, so all wind alike.
    np.testing.assert_array_equal(m.indices, [[0, 1, 2], [1, 3, 2]])
    np.testing.assert_allclose(m.face_normals(), [[0, 0, -1], [0, 0, -1]])  # this strip winds clockwise from +z


def test_sparse_accessor_fan_and_byte_indices(tmp_path):
    g = Gltf()
    base = g.accessor(np.zeros((4, 3), np.float32))
    g.doc["accessors"][base]["sparse"] = {
        "count": 3,
        "indices": {"bufferView": g.view(np.array([1, 2, 3], np.uint8).tobytes()), "componentType": 5121},
        "values": {"bufferView": g.view(np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32).tobytes())},
    }
    indices = g.accessor(np.array([0, 1, 2, 3], np.uint8))
    mesh = g.add("meshes", {"primitives": [{"attributes": {"POSITION": base}, "indices": indices, "mode": 6}]})
    g.scene(g.node(mesh=mesh))
    (m,) = load_gltf(g.write_glb(tmp_path / "fan.glb")).meshes
    np.testing.assert_array_equal(m.vertices, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    np.testing.assert_array_equal(m.indices, [[1, 2, 0], [2, 3, 0]])


def test_points_primitive_is_skipped_with_a_warning(tmp_path):
    g = Gltf()
    points = g.add("meshes", {"name": "cloud", "primitives": [
        {"attributes": {"POSITION": g.accessor(TRIANGLE)}, "mode": 0}]})
    g.scene(g.node(mesh=points), g.node(mesh=g.mesh(TRIANGLE)))
    with pytest.warns(UserWarning, match=r"mesh 0 \('cloud'\) primitive 0 is POINTS"):
        scene = load_gltf(g.write_glb(tmp_path / "points.glb"))
    assert len(scene.meshes) == 1


def test_gpu_instancing_extension(tmp_path):
    g = Gltf()
    g.doc["extensionsUsed"] = ["EXT_mesh_gpu_instancing"]
    translations = g.accessor(np.array([[0, 0, 0], [5, 0, 0]], np.float32))
    g.scene(g.node(mesh=g.mesh(TRIANGLE), translation=[0, 1, 0],
                   extensions={"EXT_mesh_gpu_instancing": {"attributes": {"TRANSLATION": translations}}}))
    scene = load_gltf(g.write_glb(tmp_path / "inst.glb"))
    assert scene.meshes[0].vertices is scene.meshes[1].vertices  # one primitive, two instances
    np.testing.assert_array_equal(np.concatenate(scene.meshes[1].corners()), TRIANGLE + [5, 1, 0])


# -- tangents ------------------------------------------------------------------------------------------------------


def test_generated_tangents_orthogonal_with_handedness(tmp_path):
    g = Gltf()
    g.image(tmp_path / "n.png", np.full((2, 2, 3), [128, 128, 255]))
    g.add("textures", {"source": 0})
    material = g.add("materials", {"normalTexture": {"index": 0, "scale": 0.5}})
    bent = np.array([[0, 0.2, 1]] * 4, np.float32)
    bent /= np.linalg.norm(bent, axis=1, keepdims=True)
    mirrored = QUAD_UV * [-1, 1] + [1, 0]  # u runs right to left
    g.scene(g.node(mesh=g.mesh(QUAD, QUAD_INDICES, material, TEXCOORD_0=QUAD_UV, NORMAL=bent)),
            g.node(mesh=g.mesh(QUAD, QUAD_INDICES, material, TEXCOORD_0=mirrored, NORMAL=bent)))
    plain, mirror = load_gltf(g.write_glb(tmp_path / "nm.glb")).meshes
    assert plain.material.normal_scale == 0.5
    for mesh, sign in ((plain, 1.0), (mirror, -1.0)):
        t = mesh.tangents
        np.testing.assert_allclose(np.einsum("ij,ij->i", t[:, :3], mesh.normals), 0.0, atol=1e-6)
        np.testing.assert_allclose(np.linalg.norm(t[:, :3], axis=1), 1.0, atol=1e-6)
        assert (np.sign(t[:, 0]) == sign).all()  # +u runs along +x, or -x when mirrored
        np.testing.assert_array_equal(t[:, 3], sign)
        # glTF's bitangent cross(n, t) * w points up the image (+y here) either way.
        bitangent = np.cross(mesh.normals, t[:, :3]) * t[:, 3:]
        assert (bitangent[:, 1] > 0.9).all()


def test_generate_tangents_without_normals_uses_face_normals():
    t = generate_tangents(QUAD, QUAD_INDICES.reshape(-1, 3), QUAD_UV)
    np.testing.assert_allclose(t, np.tile([1, 0, 0, 1], (4, 1)), atol=1e-7)


# -- materials and textures ----------------------------------------------------------------------------------------


def test_pbr_material_factors_textures_samplers_transform(tmp_path):
    g = Gltf()
    pixels = np.array([[[255, 0, 0, 255], [0, 255, 0, 128]], [[0, 0, 255, 255], [10, 20, 30, 0]]], np.uint8)
    Image.fromarray(pixels, "RGBA").save(tmp_path / "base.png")
    g.add("images", {"uri": "base.png", "name": "base"})
    g.add("images", {"uri": "mr.png"})
    Image.fromarray(np.array([[[0, 64, 200]]], np.uint8)).save(tmp_path / "mr.png")
    g.add("samplers", {"wrapS": 33071, "wrapT": 33648, "magFilter": 9728})
    g.add("textures", {"source": 0, "sampler": 0})
    g.add("textures", {"source": 1})
    g.doc["extensionsUsed"] = ["KHR_texture_transform", "KHR_materials_emissive_strength"]
    transform = {"offset": [0.5, 0.25], "rotation": 0.3, "scale": [2, 3]}
    material = {
        "name": "painted",
        "pbrMetallicRoughness": {"baseColorFactor": [0.5, 0.25, 1.0, 0.75], "metallicFactor": 0.2,
                                 "roughnessFactor": 0.6,
                                 "baseColorTexture": {"index": 0, "extensions": {"KHR_texture_transform": transform}},
                                 "metallicRoughnessTexture": {"index": 1}},
        "emissiveFactor": [1.0, 0.5, 0.0],
        "extensions": {"KHR_materials_emissive_strength": {"emissiveStrength": 4.0}},
        "alphaMode": "MASK", "alphaCutoff": 0.3, "doubleSided": True,
    }
    quad = quad_gltf(tmp_path, material)
    quad.doc.update({k: g.doc[k] for k in ("images", "samplers", "textures", "extensionsUsed")})
    scene = load_gltf(quad.write_gltf(tmp_path / "pbr.gltf"))
    (mesh,) = scene.meshes
    m = mesh.material
    assert m.bsdf == "metallic_roughness" and m.name == "painted"
    assert m.reflectance == (0.5, 0.25, 1.0) and m.opacity == 0.75
    assert m.metallic == 0.2 and m.roughness == 0.6
    assert m.emission == (4.0, 2.0, 0.0)
    assert m.alpha_mode == "mask" and m.alpha_cutoff == 0.3 and m.two_sided is True
    base = m.reflectance_texture
    assert base.srgb is True and base.wrap == ("clamp", "mirror") and base.filter == "nearest"
    assert base.transform.offset == (0.5, 0.25) and base.transform.scale == (2.0, 3.0)
    assert base.transform.rotation == pytest.approx(0.3)
    np.testing.assert_array_equal(base.data, pixels)  # row 0 is the image's top row
    mr = m.metallic_roughness_texture
    assert mr.srgb is False and mr.wrap == ("repeat", "repeat") and mr.filter == "bilinear"
    np.testing.assert_array_equal(mr.data[0, 0], [0, 64, 200])
    np.testing.assert_array_equal(mesh.uvs, QUAD_UV)


def test_texture_objects_shared_per_image_sampler_colour_space(tmp_path):
    g = quad_gltf(tmp_path, {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}},
                             "emissiveFactor": [1, 1, 1], "emissiveTexture": {"index": 1}})
    g.image(tmp_path / "shared.png", np.full((1, 2, 3), 200))
    g.add("textures", {"source": 0})
    g.add("textures", {"source": 0})  # another texture of the same image, no sampler
    m2 = g.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 1},
                                                      "metallicRoughnessTexture": {"index": 0}}})
    g.doc["nodes"].append({"mesh": g.mesh(QUAD, QUAD_INDICES, m2, TEXCOORD_0=QUAD_UV)})
    g.doc["scenes"][0]["nodes"].append(1)
    a, b = load_gltf(g.write_glb(tmp_path / "shared.glb")).meshes
    shared = a.material.reflectance_texture
    assert a.material.emission_texture is shared
    assert b.material.reflectance_texture is shared
    assert b.material.metallic_roughness_texture is not shared  # linear data: its own texture
    assert b.material.metallic_roughness_texture.srgb is False


def test_glb_embedded_image_and_default_material(tmp_path):
    g = Gltf()
    png = tmp_path / "x.png"
    Image.fromarray(np.array([[7, 9]], np.uint8)).save(png)
    g.add("images", {"bufferView": g.view(png.read_bytes()), "mimeType": "image/png"})
    g.add("textures", {"source": 0})
    textured = g.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    g.scene(g.node(mesh=g.mesh(QUAD, QUAD_INDICES, textured, TEXCOORD_0=QUAD_UV)),
            g.node(mesh=g.mesh(TRIANGLE)))
    png.unlink()
    textured_mesh, plain = load_gltf(g.write_glb(tmp_path / "embedded.glb")).meshes
    np.testing.assert_array_equal(textured_mesh.material.reflectance_texture.data[..., 0], [[7, 9]])
    default = plain.material  # glTF's default: white, metallic 1, roughness 1
    assert default.bsdf == "metallic_roughness" and default.reflectance == (1.0, 1.0, 1.0)
    assert default.metallic == 1.0 and default.roughness == 1.0 and default.two_sided is False
    assert default.sidedness == "cull_back"  # glTF's default material is single-sided: its back faces are culled


def test_double_sided_and_single_sided_materials_map_to_two_of_the_three_modes(tmp_path):
    """doubleSided true: both sides reflect; false (glTF's default): the back is culled, never black."""
    g = Gltf()
    one = g.add("materials", {"name": "one", "doubleSided": False})
    two = g.add("materials", {"name": "two", "doubleSided": True})
    implied = g.add("materials", {"name": "implied"})
    g.scene(*(g.node(mesh=g.mesh(TRIANGLE, material=m)) for m in (one, two, implied)))
    modes = [mesh.material.sidedness for mesh in load_gltf(g.write_glb(tmp_path / "sides.glb")).meshes]
    assert modes == ["cull_back", "two_sided", "cull_back"]


def test_transmission_and_ior_make_a_dielectric(tmp_path):
    g = quad_gltf(tmp_path, {"name": "glass", "pbrMetallicRoughness": {"roughnessFactor": 0.4, "metallicFactor": 0},
                             "extensions": {"KHR_materials_transmission": {"transmissionFactor": 1.0},
                                            "KHR_materials_ior": {"ior": 1.33}}})
    g.doc["extensionsUsed"] = ["KHR_materials_transmission", "KHR_materials_ior"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (mesh,) = load_gltf(g.write_glb(tmp_path / "glass.glb")).meshes
    m = mesh.material
    assert m.bsdf == "dielectric" and m.int_ior == 1.33 and m.ext_ior == 1.0
    assert m.alpha == pytest.approx(0.16) and m.two_sided is True


def test_weak_transmission_is_opaque_with_a_warning(tmp_path):
    g = quad_gltf(tmp_path, {"extensions": {"KHR_materials_transmission": {"transmissionFactor": 0.3}}})
    with pytest.warns(UserWarning, match="transmissionFactor 0.3 <= 0.5: treated as opaque"):
        (mesh,) = load_gltf(g.write_glb(tmp_path / "weak.glb")).meshes
    assert mesh.material.bsdf == "metallic_roughness"


# -- cameras -------------------------------------------------------------------------------------------------------


def test_perspective_camera_pose_fov_and_selection(tmp_path):
    g = quad_gltf(tmp_path, {}, uv=None)
    g.add("cameras", {"type": "perspective", "name": "main", "perspective": {"yfov": 0.5, "znear": 0.1,
                                                                             "aspectRatio": 1.5}})
    g.add("cameras", {"type": "perspective", "perspective": {"yfov": 0.8, "znear": 0.1, "aspectRatio": 0.5}})
    # A quarter turn about +y: the camera's -z (its view direction) becomes -x.
    g.doc["nodes"].append({"camera": 0, "translation": [4, 1, 0], "rotation": quaternion([0, 1, 0], math.pi / 2)})
    g.doc["nodes"].append({"camera": 1, "name": "tall", "translation": [0, 0, 5]})
    g.doc["scenes"][0]["nodes"] += [1, 2]
    path = g.write_glb(tmp_path / "cam.glb")
    camera = load_gltf(path).camera
    assert camera.fov == pytest.approx(math.degrees(0.5))  # landscape: the vertical fov is the smaller one
    np.testing.assert_allclose(camera.eye, [4, 1, 0], atol=1e-12)
    np.testing.assert_allclose(np.subtract(camera.target, camera.eye), [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(camera.up, [0, 1, 0], atol=1e-12)
    assert load_gltf(path, camera="main").camera.eye == camera.eye
    tall = load_gltf(path, camera=1).camera
    assert load_gltf(path, camera="tall").camera.eye == tall.eye == (0.0, 0.0, 5.0)
    # Portrait: Camera's fov spans the width, 2 atan(tan(yfov / 2) * aspect).
    assert tall.fov == pytest.approx(math.degrees(2 * math.atan(math.tan(0.4) * 0.5)))
    _, _, v, _ = tall.basis(100, 200)
    assert np.linalg.norm(v) == pytest.approx(math.tan(0.4))  # the file's vertical fov at the file's aspect
    with pytest.raises(ValueError, match="no camera 'nope'"):
        load_gltf(path, camera="nope")


def test_no_camera_frames_the_scene(tmp_path):
    g = Gltf()
    g.scene(g.node(mesh=g.mesh(QUAD * 3 + [10, 0, -4], QUAD_INDICES)))
    scene = load_gltf(g.write_glb(tmp_path / "nocam.glb"))
    assert isinstance(scene.camera, Camera)
    pixels = scene.camera.project(scene.meshes[0].vertices, 64, 64)
    assert np.isfinite(pixels).all() and (pixels >= 0).all() and (pixels <= 64).all()
    np.testing.assert_allclose(scene.camera.target, [10, 0, -4])


# -- extensions and bad input --------------------------------------------------------------------------------------


def test_required_unsupported_extension_raises(tmp_path):
    g = quad_gltf(tmp_path)
    g.doc["extensionsUsed"] = g.doc["extensionsRequired"] = ["KHR_draco_mesh_compression"]
    path = g.write_glb(tmp_path / "draco.glb")
    with pytest.raises(ValueError, match=r"draco\.glb requires the glTF extension KHR_draco_mesh_compression"):
        load_gltf(path)


def test_used_unsupported_extensions_warn_with_fallback(tmp_path):
    g = quad_gltf(tmp_path, uv=None)
    g.doc["extensionsUsed"] = ["KHR_materials_clearcoat", "KHR_lights_punctual", "KHR_texture_transform"]
    with pytest.warns(UserWarning) as record:
        load_gltf(g.write_glb(tmp_path / "used.glb"))
    messages = [str(w.message) for w in record]
    assert any("KHR_materials_clearcoat is not supported: ignored, the base material is used" in m for m in messages)
    assert not any("KHR_lights_punctual" in m for m in messages)  # implemented: its lights are the scene's
    assert not any("KHR_texture_transform" in m for m in messages)


def test_missing_image_names_image_and_material(tmp_path):
    g = quad_gltf(tmp_path, {"name": "wood", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    g.add("images", {"uri": "missing%20file.png"})
    g.add("textures", {"source": 0})
    with pytest.raises(FileNotFoundError, match=r"image 0 \('missing%20file.png'.*material 0 \('wood'\).*"
                                                r"missing file\.png"):
        load_gltf(g.write_gltf(tmp_path / "noimage.gltf"))


def test_missing_files_and_malformed_containers(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.gltf"):
        load_gltf(tmp_path / "nothing.gltf")
    (tmp_path / "bad.gltf").write_text("{not json")
    with pytest.raises(ValueError, match=r"bad\.gltf: malformed glTF JSON"):
        load_gltf(tmp_path / "bad.gltf")
    (tmp_path / "bad.glb").write_bytes(b"GLTF" + b"\0" * 20)
    with pytest.raises(ValueError, match=r"bad\.glb: not a GLB file: magic"):
        load_gltf(tmp_path / "bad.glb")
    g = quad_gltf(tmp_path)
    path = g.write_gltf(tmp_path / "nobin.gltf")
    (tmp_path / "nobin.bin").unlink()
    with pytest.raises(FileNotFoundError, match=r"nobin\.gltf: buffer 0: file not found: .*nobin\.bin"):
        load_gltf(path)


def test_accessor_out_of_buffer_bounds_and_index_out_of_range(tmp_path):
    g = quad_gltf(tmp_path)
    g.doc["accessors"][0]["count"] = 5  # POSITION: 4 vertices in its view
    with pytest.raises(ValueError, match=r"oob\.glb: accessor 0 \(POSITION of mesh 0 \('quad'\) primitive 0\) reads "
                                         r"bytes 0 to 60 of buffer view 0, which has 48 bytes"):
        load_gltf(g.write_glb(tmp_path / "oob.glb"))
    g = quad_gltf(tmp_path)
    g.doc["bufferViews"][0]["byteLength"] = 10_000
    with pytest.raises(ValueError, match="lies outside buffer 0"):
        load_gltf(g.write_glb(tmp_path / "view.glb"))
    g = Gltf()
    g.scene(g.node(mesh=g.mesh(TRIANGLE, np.array([0, 1, 3], np.uint16))))
    with pytest.raises(ValueError, match=r"idx\.glb: mesh 0 \('mesh0'\) primitive 0: index 3 is out of range"):
        load_gltf(g.write_glb(tmp_path / "idx.glb"))


def test_texture_without_texcoord_names_mesh_and_material(tmp_path):
    g = quad_gltf(tmp_path, {"name": "tex", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}, uv=None)
    g.image(tmp_path / "t.png", np.zeros((1, 1, 3)))
    g.add("textures", {"source": 0})
    with pytest.raises(ValueError, match=r"mesh 0 \('quad'\) primitive 0 has no TEXCOORD_0 but its material 0 "
                                         r"\('tex'\) has textures"):
        load_gltf(g.write_glb(tmp_path / "nouv.glb"))


def test_reading_gltf_needs_no_optional_package(tmp_path, monkeypatch):
    path = quad_gltf(tmp_path).write_glb(tmp_path / "q.glb")
    monkeypatch.setitem(sys.modules, "pygltflib", None)  # importing it would raise ImportError
    (mesh,) = load_gltf(path).meshes
    np.testing.assert_array_equal(mesh.vertices, QUAD)


# -- OBJ + MTL and the dispatcher ----------------------------------------------------------------------------------


def test_obj_with_mtl_texture_and_two_materials(tmp_path):
    Image.fromarray(np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [255, 255, 255]]], np.uint8)).save(
        tmp_path / "checker.png")
    (tmp_path / "scene.mtl").write_text(
        "newmtl red\nKd 0.8 0.1 0.1\n\n"
        "newmtl tex\nKd 0.5 0.5 0.5\nmap_Kd -clamp on -s 2 1 1 -o 0.25 0.5 checker.png\n\n"
        "newmtl lamp\nKd 0 0 0\nKe 5 4 3\n")
    (tmp_path / "scene.obj").write_text(
        "mtllib scene.mtl\n"
        "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 2\n"
        "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
        "vn 0 0 1\n"
        "usemtl tex\nf 1/1/1 2/2/1 3/3/1 4/4/1\n"  # a quad: two triangles
        "usemtl red\nf 1 2 5\n"
        "usemtl lamp\nf -5 -3 -1\n")
    scene = load_obj(tmp_path / "scene.obj")
    assert [m.name for m in scene.meshes] == ["scene:tex", "scene:red", "scene:lamp"]
    tex, red, lamp = scene.meshes
    assert tex.num_triangles == 2 and tex.vertices.shape == (4, 3)
    # OBJ's v = 0 is the image's bottom row; ours is the top: (x, y) corner -> uv (x, 1 - y).
    np.testing.assert_allclose(tex.uvs, 1.0 * (tex.vertices[:, :2] @ [[1, 0], [0, -1]]) + [0, 1])
    np.testing.assert_array_equal(tex.normals, np.tile([0, 0, 1], (4, 1)))
    texture = tex.material.reflectance_texture
    assert texture.srgb and texture.wrap == ("clamp", "clamp")
    # -s and -o act on OBJ's bottom-up v: top-down, v' = s_v v + (1 - s_v - o_v).
    assert texture.transform.scale == (2.0, 1.0) and texture.transform.offset == (0.25, -0.5)
    np.testing.assert_array_equal(texture.data[1, 0], [0, 0, 255])
    assert tex.material.reflectance == (1.0, 1.0, 1.0) and tex.material.bsdf == "diffuse"
    assert tex.material.two_sided
    np.testing.assert_allclose(tex.face_normals(), [[0, 0, 1], [0, 0, 1]])
    assert red.material.reflectance == pytest.approx((0.8, 0.1, 0.1)) and red.uvs is None and red.normals is None
    np.testing.assert_array_equal(np.sort(red.vertices, axis=0), [[0, 0, 0], [0, 0, 0], [1, 0, 2]])
    assert lamp.material.emission == (5.0, 4.0, 3.0)
    np.testing.assert_array_equal(lamp.vertices[lamp.indices[0]], [[0, 0, 0], [1, 1, 0], [0, 0, 2]])
    assert load_scene(tmp_path / "scene.obj").meshes[0].name == "scene:tex"


def test_obj_errors(tmp_path):
    (tmp_path / "a.obj").write_text("v 0 0 0\nv 1 0 0\nf 1 2 3\n")
    with pytest.raises(ValueError, match=r"a\.obj:3: face corner '3' refers to vertex 3, but 2 are defined"):
        load_obj(tmp_path / "a.obj")
    (tmp_path / "b.mtl").write_text("newmtl m\nmap_Kd gone.png\n")
    (tmp_path / "b.obj").write_text("mtllib b.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nusemtl m\nf 1/1 2/1 3/1\n")
    with pytest.raises(FileNotFoundError, match=r"b\.mtl:2: texture of material 'm' not found: .*gone\.png"):
        load_obj(tmp_path / "b.obj")


def test_load_scene_dispatch_and_unknown_suffix(tmp_path):
    path = quad_gltf(tmp_path, uv=None).write_gltf(tmp_path / "q.gltf")
    assert len(load_scene(path).meshes) == 1
    with pytest.raises(ValueError, match=r"unsupported scene format '\.ply'.*\.gltf, \.glb, \.obj"):
        load_scene(tmp_path / "x.ply")
