"""Device layouts shared with ``kernels/pathtracer/records.h``: launch parameters, the scene record and its tables.

Each dtype is built by :func:`optixasync.struct_dtype` from the fields of the
matching CUDA struct, in order; the CPU tests compile the kernel with
``static_assert``s generated from these dtypes, so a change on one side only
fails there.
"""

from __future__ import annotations

import numpy as np

from .._structs import struct_dtype
from ..scene import MATERIAL_PARAMS
from ._environment import ENVIRONMENT_RECORD

__all__ = ["EMITTER_TRIANGLE", "LIGHT_RECORD", "MATERIAL_RECORD", "MESH_ALPHA_BLEND", "MESH_ALPHA_MASK",
           "MESH_CULL_BACK", "MESH_EMISSIVE",
           "MESH_INSTANCED", "MESH_LIGHT_SAMPLED", "MESH_MIRRORED", "MESH_RECORD", "MESH_TWO_SIDED", "NESTED_MEMBERS",
           "OUTPUT_RECORD", "PATH_PARAMS", "SCENE_RECORD", "STRUCT_NAMES", "VIEW_BATCH",
           "VIEW_RECORD"]

#: ``MeshRecord``: one per mesh (= build input = SBT GAS index), read by the raygen at every hit.
MESH_RECORD: np.dtype = struct_dtype([
    ("vertices", "ptr"), ("indices", "ptr"), ("normals", "ptr"), ("uvs", "ptr"), ("tangents", "ptr"),
    ("colors", "ptr"), ("material", "ptr"), ("emitter_offset", "uint"), ("flags", "uint"), ("to_world", "float", 12),
    ("normal_to_world", "float", 9),
])


def _texture_slot(name: str) -> list[tuple[str, str] | tuple[str, str, int]]:
    """The fields of a ``TextureSlot`` member called ``name`` (a nested struct, laid out flat)."""
    return [(name, "u64"), (f"{name}_uv", "float", 6)]


#: ``MaterialRecord``: one per material, pointed at by the mesh records; ``params`` is the family's own.
MATERIAL_RECORD: np.dtype = struct_dtype([
    ("type", "uint"), ("opacity", "float"), ("alpha_cutoff", "float"), ("normal_scale", "float"),
    ("color", "float3"), ("emission", "float3"), ("table", "ptr"),
    *_texture_slot("color_texture"), *_texture_slot("roughness_texture"), *_texture_slot("emission_texture"),
    *_texture_slot("normal_texture"), ("params", "float", MATERIAL_PARAMS),
])

#: ``EmitterTriangle``: one per triangle of every emissive mesh, in world space (64 bytes, 16-aligned).
EMITTER_TRIANGLE: np.dtype = struct_dtype([
    ("p0", "float3"), ("pdf", "float"), ("e1", "float3"), ("alias_q", "float"), ("e2", "float3"), ("alias", "uint"),
    ("radiance", "float3"), ("area", "float"),
], min_alignment=16)

#: ``LightRecord``: one per light source, in the order of the selection CDF.
LIGHT_RECORD: np.dtype = struct_dtype([
    ("type", "uint"), ("cdf", "float"), ("probability", "float"), ("count", "uint"), ("data", "ptr"),
])

#: ``SceneRecord``: the addresses of the scene tables, one field of the launch parameters.
SCENE_RECORD: np.dtype = struct_dtype([
    ("meshes", "ptr"), ("lights", "ptr"), ("emitters", "ptr"), ("environment", "ptr"), ("handle", "handle"),
    ("num_lights", "uint"), ("environment_probability", "float"), ("instanced", "uint"), ("num_shapes", "uint"),
    ("shapes", "ptr"), ("motions", "ptr"), ("shutter_open", "float"), ("shutter_close", "float"),
])

#: ``ViewRecord`` (``kernels/pathtracer/view_records.h``): one view of a batch.
VIEW_RECORD: np.dtype = struct_dtype([
    ("kind", "uint"), ("convention", "uint"), ("world", "uint"), ("seed", "uint"),
    ("fx", "float"), ("fy", "float"), ("cx", "float"), ("cy", "float"), ("to_world", "float", 12),
    ("ray_length", "float"),
])

#: ``ViewBatch``: the views of a launch, their previous state (motion) and the worlds' cells.
VIEW_BATCH: np.dtype = struct_dtype([
    ("views", "ptr"), ("poses", "ptr"), ("prev_views", "ptr"), ("prev_poses", "ptr"), ("prev_meshes", "ptr"),
    ("world_offsets", "ptr"), ("mesh_materials", "ptr"), ("cell_lo", "float3"), ("cell_hi", "float3"),
    ("num_views", "uint"), ("lanes", "uint"), ("pose_stride", "uint"), ("meshes_per_world", "uint"),
    ("jitter", "uint"),
])

#: ``OutputRecord``: the device addresses of the outputs beyond the first four (0: not written).
OUTPUT_RECORD: np.dtype = struct_dtype([(name, "ptr") for name in (
    "depth", "distance", "position", "geometric_normal", "mesh_id", "primitive_id", "material_id", "uv", "motion",
    "coverage", "spp", "rays")])

#: ``PathTracerParams``: the launch parameters (``params`` in the kernel).
PATH_PARAMS: np.dtype = struct_dtype([
    ("accum", "ptr"), ("image", "ptr"),
    ("eye", "float3"), ("cam_u", "float3"), ("cam_v", "float3"), ("cam_w", "float3"),
    ("width", "uint"), ("height", "uint"), ("sample_offset", "uint"), ("spp", "uint"), ("accumulate", "uint"),
    ("seed", "uint"), ("max_depth", "uint"), ("rr_depth", "uint"), ("inv_total", "float"),
    ("orthographic", "uint"), ("ray_length", "float"),
    ("aov_sums", "ptr"), ("radiance", "ptr"), ("albedo", "ptr"), ("normal", "ptr"),
    ("scene", SCENE_RECORD), ("batch", VIEW_BATCH), ("out", OUTPUT_RECORD),
])

#: ``MeshFlags`` bits.
MESH_TWO_SIDED = 1 << 0
MESH_EMISSIVE = 1 << 1
MESH_ALPHA_MASK = 1 << 2
MESH_ALPHA_BLEND = 1 << 3
MESH_LIGHT_SAMPLED = 1 << 4
MESH_INSTANCED = 1 << 5
MESH_MIRRORED = 1 << 6
MESH_CULL_BACK = 1 << 7

#: The CUDA member of each dtype field that lives in a nested struct laid out flat (the texture slots).
NESTED_MEMBERS: dict[str, str] = {
    **{slot: f"{slot}.texture" for slot in ("color_texture", "roughness_texture", "emission_texture",
                                           "normal_texture")},
    **{f"{slot}_uv": f"{slot}.uv" for slot in ("color_texture", "roughness_texture", "emission_texture",
                                               "normal_texture")},
}

#: CUDA struct name of each dtype (for the layout checks).
STRUCT_NAMES: dict[str, np.dtype] = {
    "PathTracerParams": PATH_PARAMS,
    "SceneRecord": SCENE_RECORD,
    "LightRecord": LIGHT_RECORD,
    "MeshRecord": MESH_RECORD,
    "ViewRecord": VIEW_RECORD,
    "ViewBatch": VIEW_BATCH,
    "OutputRecord": OUTPUT_RECORD,
    "MaterialRecord": MATERIAL_RECORD,
    "EnvironmentRecord": ENVIRONMENT_RECORD,
    "EmitterTriangle": EMITTER_TRIANGLE,
}
