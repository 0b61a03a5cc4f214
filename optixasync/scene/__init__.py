"""Scenes for the path tracer: materials, textures, triangle meshes, spheres and curves, lights, the camera, built-in
scenes.

Plain host-side data (numpy); :class:`optixasync.render.RenderPipeline` turns a
:class:`Scene` into an acceleration structure and device records. The file
readers (glTF, OBJ, textures, environment maps) treat files as untrusted:
they read only inside an asset's folder and check every count against
:class:`LoadLimits` before allocating.
"""

from __future__ import annotations

from ._bsdf import MATERIAL_PARAMS, BsdfFamily, bsdf_families, bsdf_family, register_bsdf
from ._camera import DEFAULT_FOV, PROJECTIONS, Camera, CameraBasis
from ._cloth import ClothAnimation
from ._cornell import cornell_box
from ._curves import CURVE_DEGREES, Curves, strand_segments
from ._custom import (
    CustomPrimitives,
    CustomPrimitiveType,
    custom_primitives,
    register_custom_primitive,
)
from ._environment import Environment
from ._environment_files import ENVIRONMENT_SUFFIXES, load_environment
from ._frames import framing_camera, generate_tangents
from ._gltf import (
    GLTF_EXTENSIONS,
    SCENE_SUFFIXES,
    WATTS_PER_LUMEN,
    GltfAnimation,
    GltfAsset,
    GltfCamera,
    GltfInstance,
    GltfLight,
    NodeAnimation,
    load_gltf,
    load_scene,
    read_gltf,
)
from ._lights import DirectionalLight, PointLight, SpotLight
from ._limits import LoadLimits
from ._load import (
    MESH_SUFFIXES,
    cornell_room,
    fit_matrix,
    fit_to_box,
    load_into_cornell_box,
    load_mesh,
)
from ._material import ALPHA_MODES, SIDEDNESS, Material
from ._materials_scene import (
    COPPER_ETA,
    COPPER_K,
    GOLD_ETA,
    GOLD_K,
    material_scene,
)
from ._mesh import Mesh, cube, rectangle, sphere
from ._motion import MeshMotion
from ._obj import load_obj
from ._scene import Scene
from ._spheres import Spheres
from ._texture import TEXTURE_FILTERS, TEXTURE_WRAPS, Texture, TextureTransform, load_texture
from ._usd import USD_SUFFIXES, UsdAnimation, UsdAsset, load_usd, read_usd

__all__ = [
    "COPPER_ETA",
    "COPPER_K",
    "GOLD_ETA",
    "GOLD_K",
    "material_scene",
    "GLTF_EXTENSIONS",
    "GltfAnimation",
    "GltfAsset",
    "GltfCamera",
    "GltfInstance",
    "GltfLight",
    "NodeAnimation",
    "WATTS_PER_LUMEN",
    "LoadLimits",
    "SCENE_SUFFIXES",
    "framing_camera",
    "generate_tangents",
    "load_gltf",
    "load_obj",
    "load_scene",
    "read_gltf",
    "USD_SUFFIXES",
    "UsdAnimation",
    "UsdAsset",
    "load_usd",
    "read_usd",
    "ALPHA_MODES",
    "SIDEDNESS",
    "BsdfFamily",
    "MATERIAL_PARAMS",
    "bsdf_families",
    "bsdf_family",
    "register_bsdf",
    "ENVIRONMENT_SUFFIXES",
    "Environment",
    "TEXTURE_FILTERS",
    "TEXTURE_WRAPS",
    "Texture",
    "TextureTransform",
    "load_environment",
    "load_texture",
    "MESH_SUFFIXES",
    "CURVE_DEGREES",
    "Camera",
    "CameraBasis",
    "PROJECTIONS",
    "ClothAnimation",
    "Curves",
    "CustomPrimitiveType",
    "CustomPrimitives",
    "custom_primitives",
    "register_custom_primitive",
    "DEFAULT_FOV",
    "Material",
    "PointLight",
    "SpotLight",
    "DirectionalLight",
    "Mesh",
    "MeshMotion",
    "Scene",
    "Spheres",
    "cornell_box",
    "cornell_room",
    "cube",
    "fit_matrix",
    "fit_to_box",
    "load_into_cornell_box",
    "load_mesh",
    "rectangle",
    "sphere",
    "strand_segments",
]
