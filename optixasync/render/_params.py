"""Host-side packing of the path tracer's launch parameters and mesh records, and the launch plan.

Pure numpy: what ``kernels/pathtracer/records.h`` reads, filled from a
scene, options and device addresses.

Blocking calls
--------------
None.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..scene import Camera, Scene
from ..validation import as_int
from ._layout import MESH_EMISSIVE, MESH_RECORD, MESH_TWO_SIDED
from ._options import RenderOptions

__all__ = ["MAX_SAMPLES", "fill_params", "launch_plan", "mesh_records", "positive_int"]

MAX_SAMPLES = 2**32 - 1  # the kernel's sample index is a 32-bit unsigned int


def positive_int(name: str, value: Any) -> int:
    """``value`` as a positive int; TypeError/ValueError naming ``name`` otherwise."""
    return as_int(name, value, 1)


def launch_plan(total: int, per_launch: int) -> list[tuple[int, int]]:
    """``(sample_offset, spp)`` of each launch that renders ``total`` samples, ``per_launch`` at a time."""
    return [(start, min(per_launch, total - start)) for start in range(0, total, per_launch)]


def fill_params(params: Any, *, options: RenderOptions, camera: Camera, accum: int, image: int, meshes: int,
                emitters: int, num_emitters: int, handle: int, sample_offset: int, spp: int,
                basis: tuple[np.ndarray, ...] | None = None, aovs: tuple[int, int, int, int] | None = None) -> None:
    """Write ``PathTracerParams`` into ``params`` (a numpy scalar of :data:`PATH_PARAMS`, pinned or not).

    ``accum``, ``image``, ``meshes`` and ``emitters`` are device addresses (``image`` 0: no tonemap).
    A launch with ``sample_offset`` 0 overwrites the accumulation; later ones add to it. ``basis`` is
    ``camera.basis(width, height)`` when the caller has it already. ``aovs`` is the device addresses of
    (AOV sums, colour, albedo, normal) for a launch that writes the denoiser's inputs (None: it does not).
    """
    eye, u, v, w = basis if basis is not None else camera.basis(options.width, options.height)
    params["accum"], params["image"], params["meshes"], params["emitters"] = accum, image, meshes, emitters
    params["handle"] = handle
    params["eye"], params["cam_u"], params["cam_v"], params["cam_w"] = eye, u, v, w
    params["width"], params["height"] = options.width, options.height
    params["sample_offset"], params["spp"], params["accumulate"] = sample_offset, spp, int(sample_offset > 0)
    params["seed"], params["max_depth"], params["rr_depth"] = options.seed, options.max_depth, options.rr_depth
    params["num_emitters"] = num_emitters
    params["inv_total"] = 1.0 / (sample_offset + spp)
    params["aov_sums"], params["color"], params["albedo"], params["normal"] = aovs if aovs is not None else (0, 0, 0, 0)


def mesh_records(scene: Scene, vertex_pointers: list[int], index_pointers: list[int],
                 emitter_offsets: np.ndarray) -> np.ndarray:
    """The ``MeshRecord`` array of ``scene`` (host), given the device addresses of each mesh's arrays."""
    records = np.zeros(len(scene.meshes), MESH_RECORD)
    for k, mesh in enumerate(scene.meshes):
        material = mesh.material
        records[k]["vertices"], records[k]["indices"] = vertex_pointers[k], index_pointers[k]
        records[k]["reflectance"], records[k]["emission"] = material.reflectance, material.emission
        records[k]["emitter_offset"] = int(emitter_offsets[k])
        records[k]["flags"] = (MESH_TWO_SIDED if material.two_sided else 0) | (MESH_EMISSIVE if material.is_emissive else 0)
    return records
