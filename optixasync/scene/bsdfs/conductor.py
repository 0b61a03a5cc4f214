"""``"conductor"``: a metal, smooth or GGX (``kernels/pathtracer/bsdf_conductor.h``).

Packs ``params[0..2]`` = ``eta / ext_ior``, ``[3..5]`` = ``k / ext_ior``, ``[6]`` = ``alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._bsdf import BsdfFamily

__all__ = ["ConductorFamily"]


class ConductorFamily(BsdfFamily):
    name = "conductor"
    header = "pathtracer/bsdf_conductor.h"
    struct = "ConductorBsdf"

    def check(self, material: Any, label: str) -> None:
        if not any(v > 0.0 for v in (*material.eta, *material.k)):
            raise ValueError(f"{label}: a conductor needs eta or k > 0 in some channel, got eta {material.eta} and "
                             f"k {material.k}")

    def pack(self, material: Any) -> Sequence[float]:
        eta = np.asarray(material.eta) / material.ext_ior
        k = np.asarray(material.k) / material.ext_ior
        return (*eta, *k, material.alpha)

    def mitsuba(self, material: Any, reflectance: Any) -> dict[str, Any]:
        bsdf = {"eta": {"type": "rgb", "value": [float(c) for c in material.eta]},
                "k": {"type": "rgb", "value": [float(c) for c in material.k]}, "specular_reflectance": reflectance}
        if material.alpha == 0.0:
            return {"type": "conductor", **bsdf}
        return {"type": "roughconductor", "distribution": "ggx", "alpha": material.alpha, "sample_visible": True,
                **bsdf}
