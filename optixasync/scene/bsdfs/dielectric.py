"""``"dielectric"``: glass, smooth or GGX (``kernels/pathtracer/bsdf_dielectric.h``); always two-sided.

Packs ``params[0]`` = ``int_ior / ext_ior``, ``[1]`` = ``alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._bsdf import BsdfFamily

__all__ = ["DielectricFamily"]


class DielectricFamily(BsdfFamily):
    name = "dielectric"
    header = "pathtracer/bsdf_dielectric.h"
    struct = "DielectricBsdf"
    transmits = True

    def pack(self, material: Any) -> Sequence[float]:
        return (material.int_ior / material.ext_ior, material.alpha)

    def mitsuba(self, material: Any, reflectance: Any) -> dict[str, Any]:
        bsdf = {"int_ior": material.int_ior, "ext_ior": material.ext_ior}
        if material.alpha == 0.0:
            return {"type": "dielectric", **bsdf}
        return {"type": "roughdielectric", "distribution": "ggx", "alpha": material.alpha, "sample_visible": True,
                **bsdf}
