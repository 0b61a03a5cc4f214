"""BSDF families: one Python descriptor and one device header each, registered by name.

A :class:`BsdfFamily` says everything about a family outside its device code:
the :class:`~optixasync.scene.Material` fields it reads and how they are
checked, how they are packed into the material record's ``params`` floats,
what it precomputes on the host (a table in device memory), and its twin in
the reference renderer (Mitsuba 3). Its header (``kernels/pathtracer/
bsdf_<name>.h``, or any file a descriptor names) holds the struct the device
code evaluates (``kernels/pathtracer/bsdf_interface.h`` says what it
provides). The renderer generates the kernel's dispatch over the registered
families, in registration order, which is also the family index the material
record carries: adding a family is adding these two files and one
:func:`register_bsdf` call, with no edit of the renderer or the kernel.

The built-in families (:mod:`optixasync.scene.bsdfs`) are registered when
:mod:`optixasync.scene` is imported.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: A :class:`~optixasync.scene.Material` (the descriptors read its fields; named so to keep ``_material``, which
#: asks the registry, from being imported back).
Material = Any

__all__ = ["MAX_BSDF_FAMILIES", "MATERIAL_PARAMS", "BsdfFamily", "bsdf_families", "bsdf_family", "bsdf_index",
           "register_bsdf"]

#: Floats of a family's own parameters in the material record (``MATERIAL_PARAMS`` in ``records.h``).
MATERIAL_PARAMS = 16
#: The most families a program dispatches over.
MAX_BSDF_FAMILIES = 64


class BsdfFamily:
    """One BSDF family's descriptor; subclass it and register an instance with :func:`register_bsdf`.

    Attributes
    ----------
    name : str
        What :attr:`Material.bsdf` names it by.
    header : str
        Its device header: a path relative to the package's kernels folder (``"pathtracer/bsdf_diffuse.h"``)
        or an absolute path.
    struct : str
        The C++ struct the header defines (in namespace ``pt``), with ``kTransmits``, ``make``,
        ``is_delta``, ``eval``, ``pdf`` and ``sample`` (``bsdf_interface.h``).
    transmits : bool
        Light passes through (the header's ``kTransmits``): such materials are two-sided.
    parameters : dict of str to (default, low, high)
        The family's own parameters, given as ``Material(parameters={...})`` beyond the named fields;
        ``low``/``high`` bound them (None: unbounded). The built-in families read named fields only.
    """

    name: str = ""
    header: str = ""
    struct: str = ""
    transmits: bool = False
    parameters: Mapping[str, tuple[float, float | None, float | None]] = {}

    def check(self, material: Material, label: str) -> None:
        """Raise ``ValueError`` or ``TypeError``, naming ``label``, for values this family cannot render."""

    def pack(self, material: Material) -> Sequence[float]:
        """The floats of the material record's ``params`` (at most :data:`MATERIAL_PARAMS`), in the header's order."""
        return ()

    def table(self, material: Material) -> np.ndarray | None:
        """A float32 table the family precomputes on the host, uploaded once and pointed at by the record."""
        return None

    def mitsuba(self, material: Material, reflectance: Any) -> dict[str, Any] | None:
        """The reference renderer's BSDF dictionary of ``material`` (``reflectance``: its colour, textured or
        not, as Mitsuba takes it), or None where it has no exact twin."""
        return None

    def resolve_parameters(self, values: Mapping[str, Any], label: str) -> tuple[tuple[str, float], ...]:
        """``values`` checked against :attr:`parameters`, defaults filled in, as sorted (name, value) pairs."""
        unknown = sorted(set(values) - set(self.parameters))
        if unknown:
            known = ", ".join(sorted(self.parameters)) or "none"
            raise ValueError(f"{label}: the {self.name!r} BSDF has no parameter {unknown[0]!r} (its parameters: {known})")
        out = []
        for key, (default, low, high) in sorted(self.parameters.items()):
            value = values.get(key, default)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{label}: parameter {key!r} must be a number, got {value!r}")
            value = float(value)
            if not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high):
                raise ValueError(f"{label}: parameter {key!r} must be finite and in [{low}, {high}], got {value}")
            out.append((key, value))
        return tuple(out)

    def __repr__(self) -> str:
        return f"<BSDF family {self.name!r} ({self.struct} in {self.header})>"


_families: dict[str, BsdfFamily] = {}


def register_bsdf(family: BsdfFamily) -> BsdfFamily:
    """Add ``family`` to the families the renderer compiles (at the end: its index is the count so far).

    Registering the same descriptor again does nothing; another family of a registered name is refused.

    Raises
    ------
    TypeError, ValueError
        On a descriptor that is not a :class:`BsdfFamily`, lacks its name, header or struct, or takes a name
        already registered; beyond :data:`MAX_BSDF_FAMILIES`.
    """
    if not isinstance(family, BsdfFamily):
        raise TypeError(f"register_bsdf takes a BsdfFamily, got {type(family).__name__}")
    for field in ("name", "header", "struct"):
        value = getattr(family, field)
        if not isinstance(value, str) or not value:
            raise ValueError(f"a BSDF family needs a {field} (a non-empty str), got {value!r}")
    if not family.struct.isidentifier():
        raise ValueError(f"the BSDF family's struct must be a C++ identifier, got {family.struct!r}")
    existing = _families.get(family.name)
    if existing is family:
        return family
    if existing is not None:
        raise ValueError(f"a BSDF family named {family.name!r} is registered already ({existing!r})")
    if len(_families) >= MAX_BSDF_FAMILIES:
        raise ValueError(f"at most {MAX_BSDF_FAMILIES} BSDF families can be registered")
    _families[family.name] = family
    return family


def bsdf_families() -> tuple[BsdfFamily, ...]:
    """The registered families, in registration order (the kernel's family index)."""
    return tuple(_families.values())


def bsdf_family(name: str) -> BsdfFamily:
    """The registered family ``name``; ``ValueError`` naming the registered ones otherwise."""
    family = _families.get(name) if isinstance(name, str) else None
    if family is None:
        raise ValueError(f"bsdf must be one of {tuple(_families)}, got {name!r}")
    return family


def bsdf_index(name: str) -> int:
    """The kernel's index of family ``name`` (its registration order)."""
    family = bsdf_family(name)
    return list(_families.values()).index(family)
