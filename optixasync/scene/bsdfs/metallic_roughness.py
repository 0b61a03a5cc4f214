"""``"metallic_roughness"``: glTF 2.0's material (``kernels/pathtracer/bsdf_metallic_roughness.h``).

Packs ``params[0]`` = ``roughness``, ``[1]`` = ``metallic`` (the kernel squares the roughness after the
texture's green channel scaled it). The reference renderer has no exact twin of glTF's Schlick-Fresnel model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._bsdf import BsdfFamily

__all__ = ["MetallicRoughnessFamily"]


class MetallicRoughnessFamily(BsdfFamily):
    name = "metallic_roughness"
    header = "pathtracer/bsdf_metallic_roughness.h"
    struct = "MetallicRoughnessBsdf"

    def pack(self, material: Any) -> Sequence[float]:
        return (material.roughness, material.metallic)
