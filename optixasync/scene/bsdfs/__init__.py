"""The built-in BSDF families, one descriptor module each, registered in the kernel's historical order.

============================  ========================================================================================
``"diffuse"``                 Lambertian; ``reflectance`` is the albedo.
``"conductor"``               A metal: exact conductor Fresnel of ``eta`` + i ``k`` (RGB, relative to the exterior)
                              times ``reflectance``; smooth when ``alpha`` is 0, else GGX of roughness ``alpha``.
``"dielectric"``              Glass: reflection and refraction between ``ext_ior`` and ``int_ior``; smooth or GGX.
``"plastic"``                 A diffuse base under a GGX dielectric coating (Mitsuba's ``roughplastic``).
``"metallic_roughness"``      glTF 2.0's material: base colour, ``metallic``, ``roughness`` (alpha = roughness^2).
============================  ========================================================================================

Each is a :class:`~optixasync.scene.BsdfFamily` with its header in ``kernels/pathtracer/``.
"""

from __future__ import annotations

from .._bsdf import register_bsdf
from .conductor import ConductorFamily
from .dielectric import DielectricFamily
from .diffuse import DiffuseFamily
from .metallic_roughness import MetallicRoughnessFamily
from .plastic import PlasticFamily

__all__ = ["ConductorFamily", "DielectricFamily", "DiffuseFamily", "MetallicRoughnessFamily", "PlasticFamily"]

for _family in (DiffuseFamily(), ConductorFamily(), DielectricFamily(), PlasticFamily(), MetallicRoughnessFamily()):
    register_bsdf(_family)
