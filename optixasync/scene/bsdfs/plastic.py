"""``"plastic"``: a diffuse base under a GGX dielectric coating (``kernels/pathtracer/bsdf_plastic.h``).

Packs ``params[0]`` = ``int_ior / ext_ior``, ``[1]`` = ``alpha``, ``[2]`` = the coating's internal reflectance;
its table is the coating's external transmittance (:mod:`._plastic_tables`, computed once per (eta, alpha)).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._bsdf import BsdfFamily
from ._plastic_tables import plastic_constants

__all__ = ["PlasticFamily"]


class PlasticFamily(BsdfFamily):
    name = "plastic"
    header = "pathtracer/bsdf_plastic.h"
    struct = "PlasticBsdf"

    def check(self, material: Any, label: str) -> None:
        if material.alpha <= 0.0:
            raise ValueError(f"{label}: a plastic needs alpha > 0 (its coating is a rough dielectric), got 0")
        if material.int_ior == material.ext_ior:
            raise ValueError(f"{label}: a plastic needs int_ior != ext_ior (a coating of the same index is no "
                             f"coating), got {material.int_ior} for both")

    def pack(self, material: Any) -> Sequence[float]:
        # The same float64 eta as the table: one entry of its cache.
        eta = material.int_ior / material.ext_ior
        return (eta, material.alpha, plastic_constants(eta, material.alpha).internal_reflectance)

    def table(self, material: Any) -> np.ndarray:
        return np.ascontiguousarray(plastic_constants(material.int_ior / material.ext_ior,
                                                      material.alpha).transmittance, np.float32)

    def mitsuba(self, material: Any, reflectance: Any) -> dict[str, Any]:
        return {"type": "roughplastic", "distribution": "ggx", "alpha": material.alpha, "int_ior": material.int_ior,
                "ext_ior": material.ext_ior, "diffuse_reflectance": reflectance, "nonlinear": False}
