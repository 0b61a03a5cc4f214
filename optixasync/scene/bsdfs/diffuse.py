"""``"diffuse"``: Lambertian reflection (``kernels/pathtracer/bsdf_diffuse.h``); its albedo is the colour."""

from __future__ import annotations

from typing import Any

from .._bsdf import BsdfFamily

__all__ = ["DiffuseFamily"]


class DiffuseFamily(BsdfFamily):
    name = "diffuse"
    header = "pathtracer/bsdf_diffuse.h"
    struct = "DiffuseBsdf"

    def mitsuba(self, material: Any, reflectance: Any) -> dict[str, Any]:
        return {"type": "diffuse", "reflectance": reflectance}
