"""Scene variations as rewrites of the tables in place: material colours and the lights' strength, no rebuild.

A dataset (:func:`~optixasync.render.write_dataset`) or a training stream
renders many copies of one scene that differ only in their materials'
colours and in how strong the lights are. Rebuilding the tables, the
structure and the program for each copy is what made the writer slow;
:class:`TableUpdates` instead rewrites the records the kernel reads, where
they are, on the frame's stream:

* ``materials``: new :class:`~optixasync.scene.Material` values for some of
  the scene's materials: each one's ``MaterialRecord`` is packed again (same
  BSDF family, textures, alpha mode and emission; its family's precomputed
  table, when it has one, unchanged);
* ``light_scale``: every light multiplied by one factor, relative to the
  scene: the emissive materials' emission, the emitter table's radiance, the
  environment's scale and each punctual light's intensity (irradiance).

What can change is what leaves the structure, the programs and the lights'
selection probabilities as they are: a uniform factor on every light keeps
the probabilities (they are ratios of powers), and a colour is in no table
but the material record. Anything else (a new emission of one material, a
new texture, a BSDF of another family) needs a new pipeline, and is refused.
The rewritten tables hold what the tables of the varied scene, built anew,
would hold (a CPU test compares them field by field).

Blocking calls
--------------
None: each rewrite goes through pinned staging on the given stream
(:meth:`Context.upload_into`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..scene import Material, bsdf_family
from ._emitters import is_light_sampled
from ._params import material_record
from .lights import light_type

if TYPE_CHECKING:
    from ._placement import Placement
    from ._tables import SceneTables

__all__ = ["TableUpdate", "TableUpdates"]

#: The fields of the punctual lights' records that a light scale multiplies.
_STRENGTH_FIELDS = ("intensity", "irradiance", "radiance")
#: Fields a varied material must keep (what else than its record would change).
_KEPT_FIELDS = ("bsdf", "emission", "alpha_mode", "two_sided", "cull_back", "reflectance_texture",
                "metallic_roughness_texture", "emission_texture", "normal_texture")


@dataclass(frozen=True)
class TableUpdate:
    """A checked update (no GPU work yet): the materials' new values by table index, the new light scale."""

    materials: dict[int, Material]
    light_scale: float | None


class TableUpdates:
    """Rewrites of a scene's tables in place (see the module documentation).

    Parameters
    ----------
    tables : SceneTables
    placement : Placement
        Where ``tables`` were placed (its ``rewrite``).

    Attributes
    ----------
    materials : list of Material
        The current value of each distinct material (the tables' order), the scene's until an update.
    light_scale : float
        The current factor on every light (1: the scene's).
    """

    def __init__(self, tables: SceneTables, placement: Placement) -> None:
        self._tables = tables
        self._placement = placement
        self._index = {m: k for k, m in enumerate(tables.materials.materials)}
        self.materials = list(tables.materials.materials)
        self.light_scale = 1.0
        self._family_tables: dict[int, np.ndarray] = {}

    # -- before any GPU work ---------------------------------------------------------------------------------------
    def check(self, materials: Mapping[Material, Material] | None = None,
              light_scale: float | None = None) -> TableUpdate:
        """``materials`` ({a material of the scene: its new value}) and ``light_scale`` checked.

        Raises
        ------
        TypeError, ValueError
            Naming the material: one the scene does not have, a new value that changes more than its record
            (family, textures, alpha mode, sidedness, emission: use ``light_scale`` for emission), or a light
            scale that is not a finite number > 0.
        """
        changed: dict[int, Material] = {}
        if materials is not None:
            if not isinstance(materials, Mapping):
                raise TypeError(f"materials must map scene materials to new ones, got {type(materials).__name__}")
            for old, new in materials.items():
                k = self._index.get(old) if isinstance(old, Material) else None
                if k is None:
                    raise ValueError(f"materials: {_label(old)} is not one of the scene's materials")
                if not isinstance(new, Material):
                    raise TypeError(f"materials: the new value of {_label(old)} must be a Material, "
                                    f"got {type(new).__name__}")
                self._check_material(k, old, new)
                changed[k] = new
        if light_scale is not None:
            if isinstance(light_scale, bool) or not isinstance(light_scale, numbers.Real) \
                    or not math.isfinite(float(light_scale)) or not float(light_scale) > 0:
                raise ValueError(f"light_scale must be a finite number > 0, got {light_scale!r}")
            light_scale = float(light_scale)
        return TableUpdate(changed, light_scale)

    def _check_material(self, k: int, old: Material, new: Material) -> None:
        for name in _KEPT_FIELDS:
            if getattr(new, name) != getattr(old, name):
                hint = " (scale the lights with light_scale)" if name == "emission" else ""
                raise ValueError(f"materials: the new value of {_label(old)} changes its {name}{hint}: only what "
                                 "its record holds can change without a new pipeline")
        if old in self._tables.materials.family_tables:
            before = self._family_tables.get(k)
            if before is None:
                before = self._family_tables[k] = np.asarray(bsdf_family(old.bsdf).table(old), np.float32)
            if not np.array_equal(np.asarray(bsdf_family(new.bsdf).table(new), np.float32), before):
                raise ValueError(f"materials: the new value of {_label(old)} changes its {old.bsdf!r} family's "
                                 "precomputed table: it needs a new pipeline")

    # -- the rewrites ----------------------------------------------------------------------------------------------
    def apply(self, update: TableUpdate, stream: Any) -> None:
        """Rewrite what ``update`` changes, on ``stream`` (launches ordered after it see the new values)."""
        scale_changed = update.light_scale is not None and update.light_scale != self.light_scale
        for k, material in update.materials.items():
            self.materials[k] = material
        if scale_changed:
            self.light_scale = float(update.light_scale)  # type: ignore[arg-type]
        if update.materials or scale_changed:
            self._write_materials(stream)
        if scale_changed:
            self._write_lights(stream)

    def _write_materials(self, stream: Any) -> None:
        table = self._tables.materials
        records = np.stack([self._record(table.materials[k], m) for k, m in enumerate(self.materials)])
        self._placement.rewrite(table.base, records, stream)

    def _record(self, original: Material, material: Material) -> np.ndarray:
        table = self._tables.materials
        record = material_record(material, table.texture_handle, table.family_tables.get(original, 0))
        if self.light_scale != 1.0:
            record["emission"] = np.asarray(original.emission, np.float64) * self.light_scale
        return record

    def _write_lights(self, stream: Any) -> None:
        lights, s = self._tables.lights, self.light_scale
        for (kind, source, probability), address in zip(lights.sources, lights.addresses, strict=True):
            if kind is light_type("triangles"):
                self._placement.rewrite(address, self._emitters(source.selected(probability), s), stream)
            elif kind is light_type("environment"):
                record = self._placement.environment_record(address)
                record["scale"] = source.scale * s
                self._placement.rewrite(address, np.atleast_1d(record), stream)
            else:  # the record of the scaled light, as the tables of a scene holding it would pack it
                scaled = {name: tuple(float(v) * s for v in getattr(source, name)) for name in _STRENGTH_FIELDS
                          if hasattr(source, name)}
                self._placement.rewrite(address, np.atleast_1d(kind.pack(dataclasses.replace(source, **scaled))),
                                        stream)

    def _emitters(self, entries: np.ndarray, s: float) -> np.ndarray:
        """The emitter entries with each mesh's radiance its emission times ``s`` (the pdfs do not change)."""
        scene, offsets = self._tables.scene, self._tables.lights.emitters.offsets
        for k, mesh in enumerate(scene.meshes):
            if is_light_sampled(mesh):
                first = int(offsets[k])
                entries["radiance"][first: first + mesh.num_triangles] = np.asarray(mesh.material.emission) * s
        return entries


def _label(material: Any) -> str:
    name = getattr(material, "name", "")
    return f"material {name!r}" if name else f"the material {material!r}"[:120]
