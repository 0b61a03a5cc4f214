"""What a path-tracer program is compiled for: the scene features its source keeps, the others compiled out.

The path tracer is one program for every scene unless it is specialized: a
Cornell box then still carries the code of every BSDF family, every light
type, textures, the environment, the cut-out any-hit test, per-vertex normals,
UVs, colours and tangents, and instance transforms, and pays for them in
registers and branches. :class:`ProgramFeatures` names what a program keeps;
:func:`scene_features` reads it off a scene; :meth:`ProgramFeatures.defines`
is what :func:`~optixasync.render._source.pathtracer_source` writes in front of
the kernel (``kernels/pathtracer/features.h`` turns the macros into the
``constexpr`` switches the headers test). A feature compiled out is one no
record of the scene carries, so a specialized program computes what the
generic one does, with the same expressions: its images are the same bits (the
host-build tests compare them).

Specialization is chosen at the integrator's creation and is off by default
(:func:`specialize_programs`, ``OPTIXASYNC_SPECIALIZE=1`` turns it on): it has
not yet been run on a GPU.

Blocking calls
--------------
None: reading the scene description.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ..scene import bsdf_families, bsdf_family
from ._params import runs_any_hit
from .lights import light_types

if TYPE_CHECKING:
    from ..scene import Scene

__all__ = ["GENERIC", "MAX_REGISTERS_ENV", "SPECIALIZE_ENV", "ProgramFeatures", "max_registers", "scene_features",
           "specialize_programs"]

#: Environment variable: ``1`` compiles the path tracer for each scene's features (:func:`scene_features`).
SPECIALIZE_ENV = "OPTIXASYNC_SPECIALIZE"
#: Environment variable: the register budget per thread of the path tracer's module (0 or unset: OptiX's choice).
MAX_REGISTERS_ENV = "OPTIXASYNC_MAX_REGISTERS"

#: The switches of ``kernels/pathtracer/features.h``, by field.
_MACROS = {"textures": "OA_HAS_TEXTURES", "environment": "OA_HAS_ENVIRONMENT", "any_hit": "OA_HAS_ANYHIT",
           "normals": "OA_HAS_NORMALS", "uvs": "OA_HAS_UVS", "colors": "OA_HAS_COLORS",
           "tangents": "OA_HAS_TANGENTS", "instances": "OA_HAS_INSTANCES"}


def specialize_programs() -> bool:
    """Whether :data:`SPECIALIZE_ENV` asks for programs specialized per scene (``1``, ``true`` or ``yes``)."""
    return os.environ.get(SPECIALIZE_ENV, "").strip().lower() in ("1", "true", "yes")


def max_registers() -> int:
    """The register budget :data:`MAX_REGISTERS_ENV` asks for the path tracer's module (0: OptiX's own choice).

    A tuning knob for the speed table (fewer registers, more resident warps, perhaps spills), not yet measured.

    Raises
    ------
    ValueError
        On a value that is not a whole number from 0 to 255 (ASCII digits).
    """
    text = os.environ.get(MAX_REGISTERS_ENV, "").strip()
    if not text:
        return 0
    if not (text.isascii() and text.isdigit()) or int(text) > 255:
        raise ValueError(f"{MAX_REGISTERS_ENV} must be a whole number from 0 to 255, got {text!r}")
    return int(text)


@dataclass(frozen=True)
class ProgramFeatures:
    """The scene features a path-tracer program is compiled for; each False one is compiled out.

    Attributes
    ----------
    families : frozenset of str or None
        The BSDF families (:attr:`~optixasync.scene.BsdfFamily.name`) the dispatch covers; None: every registered
        one. The others' headers are not included. Their indices stay the registration order.
    light_types : frozenset of str or None
        The light types (:attr:`~optixasync.render.lights.LightType.name`) the light dispatch covers; None: all.
    textures : bool
        Material texture lookups (colour, normal, emission, roughness maps).
    environment : bool
        Light from the environment on a miss.
    any_hit : bool
        Cut-out and culled surfaces; without, rays are traced with ``OPTIX_RAY_FLAG_DISABLE_ANYHIT`` and the hit
        group has no any-hit program.
    normals, uvs, colors, tangents : bool
        Meshes' per-vertex attributes.
    instances : bool
        Meshes placed by instance transforms (instanced meshes, moving meshes, a batch's worlds).
    """

    families: frozenset[str] | None = None
    light_types: frozenset[str] | None = None
    textures: bool = True
    environment: bool = True
    any_hit: bool = True
    normals: bool = True
    uvs: bool = True
    colors: bool = True
    tangents: bool = True
    instances: bool = True

    def __post_init__(self) -> None:
        for name in ("families", "light_types"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, str) or not isinstance(value, Iterable):
                    raise TypeError(f"ProgramFeatures.{name} must be a set of names or None, got {value!r}")
                value = frozenset(value)
                if not value or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"ProgramFeatures.{name} must name at least one {name[:-1]}, got {value!r}")
                object.__setattr__(self, name, value)
        known = {"families": {f.name for f in bsdf_families()}, "light_types": {t.name for t in light_types()}}
        for name, names in known.items():
            unknown = (getattr(self, name) or frozenset()) - names
            if unknown:
                raise ValueError(f"ProgramFeatures.{name}: {sorted(unknown)} not registered (known: {sorted(names)})")
        for f in fields(self):
            if f.name in _MACROS and not isinstance(getattr(self, f.name), bool):
                raise TypeError(f"ProgramFeatures.{f.name} must be a bool, got {getattr(self, f.name)!r}")

    def covers(self, other: ProgramFeatures) -> bool:
        """Whether a program compiled for these features renders a scene that needs ``other`` correctly."""
        for name in ("families", "light_types"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None and (theirs is None or not theirs <= mine):
                return False
        return all(getattr(self, name) or not getattr(other, name) for name in _MACROS)

    def defines(self) -> list[str]:
        """The ``#define`` lines of the switches compiled out (none for :data:`GENERIC`)."""
        return [f"#define {macro} 0  // the scene has no {name.replace('_', '-')}"
                for name, macro in _MACROS.items() if not getattr(self, name)]


#: Every feature: the one program of every scene.
GENERIC = ProgramFeatures()


def scene_features(scene: Scene, *, instanced: bool, worlds: bool = False,
                   light_type_names: Iterable[str] | None = None) -> ProgramFeatures:
    """The features ``scene`` needs of a program.

    Parameters
    ----------
    scene : Scene
    instanced : bool
        Its meshes are traced through an instance structure (the device scene's ``instanced``).
    worlds : bool
        The program renders a batch of worlds (each world's meshes placed by its transforms).
    light_type_names : iterable of str, optional
        The light types of the scene's light records (:class:`~optixasync.render._tables.LightTable`'s
        sources); by default every type with a source in the scene (``"triangles"`` for any emissive mesh).
    """
    meshes = scene.meshes
    materials = {m.material for m in meshes} | {m for shape in scene.shapes for m in shape.materials}
    if light_type_names is None:  # the emissive triangles' source comes from the tables: any emissive mesh's
        light_type_names = [t.name for t in light_types()
                            if list(t.sources(scene)) or (t.name == "triangles" and
                                                          any(m.material.is_emissive for m in meshes))]
    names = frozenset(light_type_names) or frozenset({light_types()[0].name})
    return ProgramFeatures(
        families=frozenset(bsdf_family(m.bsdf).name for m in materials) or frozenset({bsdf_families()[0].name}),
        light_types=names,
        textures=any(m.textures for m in materials),
        environment=scene.environment is not None,
        any_hit=any(runs_any_hit(m) for m in meshes),
        normals=any(m.normals is not None for m in meshes),
        uvs=any(m.uvs is not None for m in meshes),
        colors=any(m.colors is not None for m in meshes),
        tangents=any(m.tangents is not None for m in meshes),
        instances=bool(instanced or scene.moving or worlds or any(m.transform is not None for m in meshes)),
    )
