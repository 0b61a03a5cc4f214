"""Materials: which BSDF a surface has, its parameters and textures, and its emission.

A :class:`Material` names one BSDF family (a registered
:class:`~optixasync.scene.BsdfFamily`, :func:`~optixasync.scene.bsdf_families`)
and the parameters that family reads; the others are ignored. The built-in
families and their parameters follow the reference renderer (Mitsuba 3)
where it has the same model, and glTF 2.0 for ``"metallic_roughness"``:

=====================  ========================================================================================
``"diffuse"``          Lambertian; ``reflectance`` is the albedo.
``"conductor"``        A metal: exact conductor Fresnel of ``eta`` + i ``k`` (RGB, relative to the exterior)
                       times ``reflectance`` (the specular reflectance); smooth (a mirror) when ``alpha`` is 0,
                       else GGX microfacets of roughness ``alpha``.
``"dielectric"``       Glass: reflection and refraction with exact dielectric Fresnel between ``ext_ior``
                       (the side the winding normal points to) and ``int_ior``; smooth when ``alpha`` is 0,
                       else GGX. Always two-sided (both sides are the same interface).
``"plastic"``          A diffuse base of albedo ``reflectance`` under a GGX dielectric coating of roughness
                       ``alpha`` (> 0) and index ``int_ior`` / ``ext_ior`` (Mitsuba's ``roughplastic``).
``"metallic_roughness"`` glTF 2.0's material: base colour ``reflectance``, ``metallic``, ``roughness``
                       (GGX ``alpha = roughness**2``), Schlick Fresnel with F0 = mix(0.04, base, metallic).
=====================  ========================================================================================

Sides (:data:`SIDEDNESS`, :attr:`Material.sidedness`): a surface reflects on
both sides (``two_sided=True``); or on its front only, its back black
(``"black_back"``, the default: the reference renderer's convention, kept for
the comparisons with it); or on its front only, its back culled
(``cull_back=True``: glTF's ``doubleSided: false``): rays, shadow rays
included, pass through a back face as if it were not there.

Textures multiply their factor (glTF's convention): ``reflectance_texture``
(rgb times ``reflectance``, its alpha times ``opacity``),
``metallic_roughness_texture`` (glTF: green times ``roughness``, blue times
``metallic``), ``emission_texture`` (rgb times ``emission``) and a
tangent-space ``normal_texture`` (scaled by ``normal_scale``).

A registered family of one's own reads the named fields it needs and any
parameters of its own, given as ``parameters={...}`` and checked by its
descriptor.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import bsdfs as _builtin_families  # noqa: F401 (registers the built-in families first)
from ._bsdf import bsdf_family
from ._texture import Texture

__all__ = ["ALPHA_MODES", "SIDEDNESS", "Material", "triple"]
#: glTF's alpha modes: ``"opaque"`` ignores opacity; ``"mask"`` cuts out where it is below ``alpha_cutoff``;
#: ``"blend"`` is rendered as a stochastic mask (a ray passes with probability 1 - opacity).
ALPHA_MODES = ("opaque", "mask", "blend")
#: The three ways a surface has sides (:attr:`Material.sidedness`): both reflect; the back is black; the back is
#: culled (rays pass through it).
SIDEDNESS = ("two_sided", "black_back", "cull_back")


def triple(value: Any, name: str) -> tuple[float, float, float]:
    """``value`` as a tuple of three finite floats (a single number is repeated); ValueError/TypeError naming ``name``."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be 3 numbers, got {value!r}")
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = (value, value, value)
    try:
        items = [float(v) for v in value]
    except TypeError as exc:
        raise TypeError(f"{name} must be 3 numbers, got {value!r}") from exc
    except ValueError as exc:
        raise ValueError(f"{name} must be 3 numbers, got {value!r}") from exc
    if len(items) != 3:
        raise ValueError(f"{name} must have 3 components, got {len(items)}: {value!r}")
    if not all(math.isfinite(v) for v in items):
        raise ValueError(f"{name} must be finite, got {tuple(items)}")
    return items[0], items[1], items[2]


@dataclass(frozen=True)
class Material:
    """The surface of a mesh: a BSDF, its textures, and area emission.

    Attributes
    ----------
    reflectance : 3 floats in [0, 1]
        Diffuse albedo (``diffuse``, ``plastic``), specular reflectance
        (``conductor``) or base colour (``metallic_roughness``).
    emission : 3 floats >= 0
        Emitted radiance, leaving the front side only: the side of the
        winding normal ``cross(v1 - v0, v2 - v0)``.
    two_sided : bool
        False: reflecting surfaces are black seen from the back (the
        reference renderer's default). True: both sides reflect, each about
        its own side's normal. Dielectrics are always two-sided; emission
        stays one-sided.
    cull_back : bool
        For a one-sided surface: True culls its back faces, as glTF's
        ``doubleSided: false`` does (a ray arriving from the back, camera,
        path or shadow ray, passes through as if the surface were not there;
        the meshes of such materials run an any-hit test); False shows them
        black. Not with ``two_sided`` or a transmitting family.
    bsdf : str
        The name of a registered BSDF family (:func:`~optixasync.scene.bsdf_families`).
    alpha : float in [0, 1]
        GGX roughness of ``conductor``, ``dielectric`` and ``plastic`` (0:
        smooth; ``plastic`` needs > 0).
    eta, k : 3 floats >= 0
        ``conductor``: the complex index of refraction, per RGB channel
        (default 0 + 1i: a perfect mirror).
    int_ior, ext_ior : float > 0
        ``dielectric`` and ``plastic``: index inside and outside.
    metallic, roughness : float in [0, 1]
        ``metallic_roughness`` (glTF's factors; defaults 1 and 1 as in glTF).
    opacity : float in [0, 1]
        Coverage for ``alpha_mode`` mask and blend (glTF's base colour alpha).
    alpha_mode : str
        One of :data:`ALPHA_MODES`.
    alpha_cutoff : float in [0, 1]
        ``mask``: opacity below it is cut out.
    reflectance_texture, metallic_roughness_texture, emission_texture, normal_texture : Texture or None
    normal_scale : float
        Scales the normal map's x and y (glTF's ``normalTexture.scale``).
    parameters : dict of str to float
        The family's own parameters, beyond the named fields (checked and completed with their defaults by
        the family's descriptor; stored as sorted (name, value) pairs). The built-in families have none.
    name : str

    Raises
    ------
    ValueError, TypeError
        On an unknown BSDF or alpha mode, a non-finite or out-of-range
        parameter (roughness outside [0, 1], an index <= 0, a negative
        colour) or a texture that is not a :class:`Texture`; the message
        names the material and the field.
    """

    reflectance: tuple[float, float, float] = (0.8, 0.8, 0.8)
    emission: tuple[float, float, float] = (0.0, 0.0, 0.0)
    two_sided: bool = False
    bsdf: str = "diffuse"
    alpha: float = 0.0
    eta: tuple[float, float, float] = (0.0, 0.0, 0.0)
    k: tuple[float, float, float] = (1.0, 1.0, 1.0)
    int_ior: float = 1.5
    ext_ior: float = 1.0
    metallic: float = 1.0
    roughness: float = 1.0
    opacity: float = 1.0
    alpha_mode: str = "opaque"
    alpha_cutoff: float = 0.5
    reflectance_texture: Texture | None = None
    metallic_roughness_texture: Texture | None = None
    emission_texture: Texture | None = None
    normal_texture: Texture | None = None
    normal_scale: float = 1.0
    parameters: Any = ()
    name: str = ""
    cull_back: bool = False

    def __post_init__(self) -> None:
        label = f"material {self.name!r}" if self.name else "material"
        if not isinstance(self.name, str):
            raise TypeError(f"material name must be a str, got {type(self.name).__name__}")
        try:
            family = bsdf_family(self.bsdf)
        except ValueError as exc:
            raise ValueError(f"{label}: {exc}") from None
        if self.alpha_mode not in ALPHA_MODES:
            raise ValueError(f"{label}: alpha_mode must be one of {ALPHA_MODES}, got {self.alpha_mode!r}")
        for flag in ("two_sided", "cull_back"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{label}: {flag} must be a bool, got {type(getattr(self, flag)).__name__}")
        if self.cull_back and (self.two_sided or family.transmits):
            raise ValueError(f"{label}: cull_back culls the back of a one-sided surface; a two-sided or "
                             f"transmitting ({self.bsdf!r}) material has no back to cull")
        reflectance = triple(self.reflectance, f"{label} reflectance")
        emission = triple(self.emission, f"{label} emission")
        eta = triple(self.eta, f"{label} eta")
        k = triple(self.k, f"{label} k")
        if not all(0.0 <= v <= 1.0 for v in reflectance):
            raise ValueError(f"{label}: reflectance must lie in [0, 1] per channel, got {reflectance}")
        for field_name, value in (("emission", emission), ("eta", eta), ("k", k)):
            if not all(v >= 0.0 for v in value):
                raise ValueError(f"{label}: {field_name} must be >= 0 per channel, got {value}")
        scalars = {}
        for field_name, low, high in (("alpha", 0.0, 1.0), ("metallic", 0.0, 1.0), ("roughness", 0.0, 1.0),
                                      ("opacity", 0.0, 1.0), ("alpha_cutoff", 0.0, 1.0),
                                      ("int_ior", None, None), ("ext_ior", None, None),
                                      ("normal_scale", None, None)):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{label}: {field_name} must be a number, got {value!r}")
            value = float(value)
            if not math.isfinite(value):
                raise ValueError(f"{label}: {field_name} must be finite, got {value}")
            if low is not None and not low <= value <= high:
                raise ValueError(f"{label}: {field_name} must lie in [{low}, {high}], got {value}")
            scalars[field_name] = value
        for field_name in ("int_ior", "ext_ior"):
            if not scalars[field_name] > 0.0:
                raise ValueError(f"{label}: {field_name} must be > 0, got {scalars[field_name]}")
        self._check_textures(label, emission)
        given = self.parameters
        if not isinstance(given, Mapping):
            try:
                given = dict(given)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{label}: parameters must be a dict of name to number, got {self.parameters!r}") from exc
        parameters = family.resolve_parameters(given, label)
        # Frozen: normalise through object.__setattr__ so equal materials compare and hash equal.
        for field_name, value in (("reflectance", reflectance), ("emission", emission), ("eta", eta), ("k", k),
                                  ("parameters", parameters), *scalars.items()):
            object.__setattr__(self, field_name, value)
        family.check(self, label)  # the family's own rules, on the normalised values


    def _check_textures(self, label: str, emission: tuple[float, float, float]) -> None:
        """Each texture slot holds a Texture of the right kind (data slots linear, normal maps of 3 channels)."""
        for field_name in ("reflectance_texture", "metallic_roughness_texture", "emission_texture", "normal_texture"):
            texture = getattr(self, field_name)
            if texture is not None and not isinstance(texture, Texture):
                raise TypeError(f"{label}: {field_name} must be a Texture or None, got {type(texture).__name__}")
        for field_name in ("normal_texture", "metallic_roughness_texture"):
            texture = getattr(self, field_name)
            if texture is not None and texture.srgb:
                raise ValueError(f"{label}: {field_name} holds data, not colours: it must have srgb=False "
                                 f"({texture.name or 'the texture'} has srgb=True)")
        if self.normal_texture is not None and self.normal_texture.shape[2] < 3:
            raise ValueError(f"{label}: normal_texture needs 3 channels (x, y, z), "
                             f"{self.normal_texture.name or 'the texture'} has {self.normal_texture.shape[2]}")
        if self.emission_texture is not None and not max(emission) > 0.0:
            raise ValueError(f"{label}: emission_texture is set but emission is {emission}: the texture "
                             "multiplies the emission, so nothing would be emitted")

    @property
    def is_emissive(self) -> bool:
        """Whether any channel of the emission is positive."""
        return max(self.emission) > 0.0

    @property
    def textures(self) -> dict[str, Texture]:
        """The material's textures by field name (only those set)."""
        return {name: texture for name in ("reflectance_texture", "metallic_roughness_texture", "emission_texture",
                                           "normal_texture")
                if (texture := getattr(self, name)) is not None}

    @property
    def sidedness(self) -> str:
        """One of :data:`SIDEDNESS`: ``"two_sided"`` (dielectrics too), ``"cull_back"`` or ``"black_back"``."""
        if self.two_sided or self.transmits:
            return "two_sided"
        return "cull_back" if self.cull_back else "black_back"

    @property
    def transmits(self) -> bool:
        """Whether light passes through the surface (its family transmits: a dielectric)."""
        return bsdf_family(self.bsdf).transmits

    @property
    def family_parameters(self) -> dict[str, float]:
        """:attr:`parameters` as a dict."""
        return dict(self.parameters)
