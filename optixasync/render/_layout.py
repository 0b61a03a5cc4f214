"""Device layouts shared with ``kernels/pathtracer/records.h``: launch parameters, mesh records, emitter triangles.

Each dtype is built by :func:`optixasync.struct_dtype` from the fields of the
matching CUDA struct, in order; the CPU tests compile the kernel with
``static_assert``s generated from these dtypes, so a change on one side only
fails there.
"""

from __future__ import annotations

import numpy as np

from .._structs import struct_dtype

__all__ = ["EMITTER_TRIANGLE", "MESH_RECORD", "MESH_EMISSIVE", "MESH_TWO_SIDED", "PATH_PARAMS", "STRUCT_NAMES"]

#: ``PathTracerParams``: the launch parameters (``params`` in the kernel).
PATH_PARAMS: np.dtype = struct_dtype([
    ("accum", "ptr"), ("image", "ptr"), ("meshes", "ptr"), ("emitters", "ptr"), ("handle", "handle"),
    ("eye", "float3"), ("cam_u", "float3"), ("cam_v", "float3"), ("cam_w", "float3"),
    ("width", "uint"), ("height", "uint"), ("sample_offset", "uint"), ("spp", "uint"), ("accumulate", "uint"),
    ("seed", "uint"), ("max_depth", "uint"), ("rr_depth", "uint"), ("num_emitters", "uint"), ("inv_total", "float"),
    ("aov_sums", "ptr"), ("color", "ptr"), ("albedo", "ptr"), ("normal", "ptr"),
])

#: ``MeshRecord``: one per mesh (= build input = SBT GAS index), read by the raygen at every hit.
MESH_RECORD: np.dtype = struct_dtype([
    ("vertices", "ptr"), ("indices", "ptr"), ("reflectance", "float3"), ("emission", "float3"),
    ("emitter_offset", "uint"), ("flags", "uint"),
])

#: ``EmitterTriangle``: one per triangle of every emissive mesh, in world space (64 bytes, 16-aligned).
EMITTER_TRIANGLE: np.dtype = struct_dtype([
    ("p0", "float3"), ("pdf", "float"), ("e1", "float3"), ("alias_q", "float"), ("e2", "float3"), ("alias", "uint"),
    ("radiance", "float3"), ("area", "float"),
], min_alignment=16)

#: ``MeshFlags`` bits.
MESH_TWO_SIDED = 1 << 0
MESH_EMISSIVE = 1 << 1

#: CUDA struct name of each dtype (for the layout checks).
STRUCT_NAMES: dict[str, np.dtype] = {
    "PathTracerParams": PATH_PARAMS,
    "MeshRecord": MESH_RECORD,
    "EmitterTriangle": EMITTER_TRIANGLE,
}
