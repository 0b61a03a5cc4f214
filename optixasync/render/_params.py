"""Host-side packing of the path tracer's launch parameters, mesh and material records, and the launch plan.

Pure numpy: what ``kernels/pathtracer/records.h`` reads, filled from a
scene, options and device addresses.

Blocking calls
--------------
None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..scene import MATERIAL_PARAMS, Camera, CameraBasis, Material, Mesh, Scene, Texture, bsdf_family
from ..scene._bsdf import bsdf_index
from ..validation import as_int
from ._emitters import is_light_sampled
from ._layout import (
    MATERIAL_RECORD,
    MESH_ALPHA_BLEND,
    MESH_ALPHA_MASK,
    MESH_CULL_BACK,
    MESH_EMISSIVE,
    MESH_INSTANCED,
    MESH_LIGHT_SAMPLED,
    MESH_MIRRORED,
    MESH_RECORD,
    MESH_TWO_SIDED,
)
from ._options import RenderOptions

__all__ = ["MAX_SAMPLES", "fill_params", "launch_plan", "material_record", "mesh_flags", "mesh_records",
           "place_records", "positive_int", "runs_any_hit"]

MAX_SAMPLES = 2**32 - 1  # the kernel's sample index is a 32-bit unsigned int


def positive_int(name: str, value: Any) -> int:
    """``value`` as a positive int; TypeError/ValueError naming ``name`` otherwise."""
    return as_int(name, value, 1)


def launch_plan(total: int, per_launch: int) -> list[tuple[int, int]]:
    """``(sample_offset, spp)`` of each launch that renders ``total`` samples, ``per_launch`` at a time."""
    return [(start, min(per_launch, total - start)) for start in range(0, total, per_launch)]


def fill_params(params: Any, *, options: RenderOptions, camera: Camera, accum: int, scene: np.ndarray,
                sample_offset: int, spp: int, image: int = 0, outputs: dict[str, int] | None = None,
                basis: tuple[np.ndarray, ...] | None = None, accumulate: bool | None = None) -> None:
    """Write ``PathTracerParams`` into ``params`` (a numpy scalar of :data:`PATH_PARAMS`, pinned or not).

    ``accum`` and ``image`` are device addresses (``image`` 0: no tonemap); ``scene`` is the scene tables'
    ``SceneRecord`` (with the structure's handle), assigned in one piece. ``sample_offset`` is the absolute
    index of the launch's first sample (its random numbers depend on it). ``accumulate`` says whether the
    launch adds to the accumulation or overwrites it; by default (None) a launch with ``sample_offset`` 0
    overwrites and later ones add. ``basis`` is ``camera.basis(width, height)`` when the caller has it already
    (its :class:`~optixasync.scene.CameraBasis` says pinhole or orthographic, and how far camera rays run).
    ``outputs`` holds the device addresses of the other outputs the launch's variant writes, by field:
    ``aov_sums``, ``radiance``, ``albedo``, ``normal`` (the rest stay 0).
    """
    basis = basis if basis is not None else camera.basis(options.width, options.height)
    if not isinstance(basis, CameraBasis):
        basis = CameraBasis(*basis)  # a plain (eye, U, V, W): a pinhole without a far plane
    params["accum"], params["image"] = accum, image
    params["eye"], params["cam_u"], params["cam_v"], params["cam_w"] = basis
    params["orthographic"], params["ray_length"] = int(basis.orthographic), basis.ray_length
    params["width"], params["height"] = options.width, options.height
    if accumulate is None:
        accumulate = sample_offset > 0
    params["sample_offset"], params["spp"], params["accumulate"] = sample_offset, spp, int(bool(accumulate))
    params["seed"], params["max_depth"], params["rr_depth"] = options.seed, options.max_depth, options.rr_depth
    params["inv_total"] = 1.0 / (sample_offset + spp)
    for field in ("aov_sums", "radiance", "albedo", "normal"):
        params[field] = (outputs or {}).get(field, 0)
    params["scene"] = scene


def material_record(material: Material, texture_handle: Callable[[Texture | None], int] = lambda t: 0,
                    table: int = 0) -> np.ndarray:
    """The ``MaterialRecord`` of ``material`` (a numpy scalar of :data:`MATERIAL_RECORD`).

    ``texture_handle`` gives the device texture object of each of its textures; ``table`` is the device
    address of its family's precomputed table (:meth:`BsdfFamily.table`), 0 without one. The family's own
    parameters go to ``params`` as its descriptor packs them (:meth:`BsdfFamily.pack`).

    Raises
    ------
    ValueError
        If the family packs more than ``MATERIAL_PARAMS`` floats.
    """
    family = bsdf_family(material.bsdf)
    record = np.zeros((), MATERIAL_RECORD)
    record["type"] = bsdf_index(material.bsdf)
    record["opacity"] = material.opacity
    record["alpha_cutoff"] = material.alpha_cutoff
    record["normal_scale"] = material.normal_scale
    record["color"] = material.reflectance
    record["emission"] = material.emission
    record["table"] = table
    packed = np.asarray(family.pack(material), np.float64).reshape(-1)
    if len(packed) > MATERIAL_PARAMS:
        raise ValueError(f"the {material.bsdf!r} family packs {len(packed)} parameters, more than the record's "
                         f"{MATERIAL_PARAMS}")
    record["params"][: len(packed)] = packed
    for slot, texture in (("color_texture", material.reflectance_texture),
                          ("roughness_texture", material.metallic_roughness_texture),
                          ("emission_texture", material.emission_texture),
                          ("normal_texture", material.normal_texture)):
        record[slot] = texture_handle(texture)
        record[f"{slot}_uv"] = (texture.transform.matrix() if texture is not None else _IDENTITY_UV).reshape(-1)
    return record


_IDENTITY_UV = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)


def mesh_flags(mesh: Mesh) -> int:
    """The ``MeshFlags`` of ``mesh``."""
    material = mesh.material
    flags = MESH_TWO_SIDED if material.two_sided or material.transmits else 0
    if material.is_emissive:
        flags |= MESH_EMISSIVE
    if is_light_sampled(mesh):
        flags |= MESH_LIGHT_SAMPLED
    if mesh.transform is not None:
        flags |= MESH_INSTANCED | (MESH_MIRRORED if mesh.mirrored else 0)
    if material.alpha_mode == "mask":
        flags |= MESH_ALPHA_MASK
    elif material.alpha_mode == "blend":
        flags |= MESH_ALPHA_BLEND
    if material.sidedness == "cull_back":
        flags |= MESH_CULL_BACK
    return flags


def runs_any_hit(mesh: Mesh) -> bool:
    """Whether the mesh's geometry is built with its any-hit program: cut-outs, and culled back faces.

    The others skip it (OptiX disables any-hit per build input), so a scene without such meshes traces as
    if the program had none.
    """
    return mesh.material.alpha_mode != "opaque" or mesh.material.sidedness == "cull_back"


def mesh_records(scene: Scene, vertex_pointers: list[int], index_pointers: list[int], emitter_offsets: np.ndarray,
                 material_pointers: list[int],
                 attribute_pointers: list[tuple[int, int, int, int]] | None = None) -> np.ndarray:
    """The ``MeshRecord`` array of ``scene`` (host), given the device addresses of each mesh's arrays.

    ``material_pointers[k]`` is the address of mesh ``k``'s ``MaterialRecord``; ``attribute_pointers[k]`` the
    addresses of its (normals, uvs, tangents, colors), 0 for those it lacks (None: none has any).
    """
    records = np.zeros(len(scene.meshes), MESH_RECORD)
    for k, mesh in enumerate(scene.meshes):
        records[k]["vertices"], records[k]["indices"] = vertex_pointers[k], index_pointers[k]
        if attribute_pointers is not None:
            records[k]["normals"], records[k]["uvs"], records[k]["tangents"], records[k]["colors"] = \
                attribute_pointers[k]
        records[k]["material"] = material_pointers[k]
        records[k]["emitter_offset"] = int(emitter_offsets[k])
        records[k]["flags"] = mesh_flags(mesh)
        if mesh.transform is not None:
            records[k]["to_world"] = mesh.transform.reshape(-1)
            records[k]["normal_to_world"] = np.linalg.inv(mesh.transform[:, :3]).T.reshape(-1)
    return records


def place_records(records: np.ndarray, transforms: np.ndarray) -> np.ndarray:
    """A copy of the ``MeshRecord`` array ``records`` with its instanced meshes placed by ``transforms`` (M, 3, 4).

    Each instanced record (``MESH_INSTANCED``) gets its ``to_world``, its ``normal_to_world`` (the inverse
    transpose) and its ``MESH_MIRRORED`` bit from its row of ``transforms`` (checked finite and invertible by
    the caller), as :func:`mesh_records` sets them; the others are copied unchanged.
    """
    out = records.copy()
    instanced = (out["flags"] & np.uint32(MESH_INSTANCED)) != 0
    matrices = np.asarray(transforms, np.float64)[instanced]
    linear = matrices[:, :, :3]
    out["to_world"][instanced] = matrices.reshape(-1, 12)
    out["normal_to_world"][instanced] = np.swapaxes(np.linalg.inv(linear), 1, 2).reshape(-1, 9)
    mirrored = np.where(np.linalg.det(linear) < 0, np.uint32(MESH_MIRRORED), np.uint32(0))
    out["flags"][instanced] = (out["flags"][instanced] & ~np.uint32(MESH_MIRRORED)) | mirrored
    return out
