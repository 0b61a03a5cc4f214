"""Custom primitives: shapes the path tracer draws through an intersection function of their own.

A :class:`CustomPrimitiveType` is one Python descriptor and one device
header, registered by name (:func:`register_custom_primitive`) like a BSDF
family: the descriptor says how many floats describe one primitive, checks
them and gives each primitive's bounding box; the header's struct (namespace
``pt``) intersects a ray with one primitive and gives the outward unit normal
at a hit::

    struct MyPrimitive {
        // The nearest t in [tmin, tmax] where the ray origin + t direction meets the primitive `data` describes.
        static __forceinline__ __device__ bool intersect(const float* data, float3 origin, float3 direction,
                                                         float tmin, float tmax, float& t);
        // The unit normal at `point` of the primitive (its front side: where emission leaves).
        static __forceinline__ __device__ float3 normal(const float* data, float3 point);
    };

The renderer generates the dispatch over the registered types (their
registration order is the index a shape record carries), builds the boxes
into a custom-primitive GAS, and runs one ``__intersection__`` program that
calls the type's ``intersect``; the host build of the kernel calls the same
function on the CPU. :class:`CustomPrimitives` are such primitives in a scene,
with materials, colours and material ids as spheres have. The built-in type
``"disk"`` (:mod:`optixasync.scene.primitives`) draws oriented disks (surfels).

Host-side data only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import ShapeError
from ..validation import check_aabbs, is_device_array
from ._material import Material
from ._shapes import shape_colors, shape_label, shape_material_ids, shape_materials

__all__ = ["MAX_CUSTOM_FLOATS", "CustomPrimitiveType", "CustomPrimitives", "custom_primitive", "custom_primitive_index",
           "custom_primitives", "register_custom_primitive"]

#: The most floats one primitive of a custom type may take.
MAX_CUSTOM_FLOATS = 64


class CustomPrimitiveType:
    """One custom primitive type's descriptor; subclass it and register an instance.

    Attributes
    ----------
    name : str
        What :attr:`CustomPrimitives.primitive` names it by.
    header : str
        Its device header, relative to the package's kernels folder or absolute.
    struct : str
        The C++ struct the header defines in namespace ``pt`` (``intersect`` and ``normal``, see the module).
    floats : int
        Floats per primitive (the rows of :attr:`CustomPrimitives.data`).
    """

    name: str = ""
    header: str = ""
    struct: str = ""
    floats: int = 0

    def check(self, data: np.ndarray, label: str) -> None:
        """Raise :class:`~optixasync.errors.ShapeError`, naming ``label``, for primitives this type cannot draw."""

    def bounds(self, data: np.ndarray) -> np.ndarray:
        """The (N, 6) float32 boxes (min x, y, z, max x, y, z) around each primitive of ``data`` (N, floats)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<custom primitive {self.name!r} ({self.struct} in {self.header})>"


_types: dict[str, CustomPrimitiveType] = {}


def register_custom_primitive(kind: CustomPrimitiveType) -> CustomPrimitiveType:
    """Add ``kind`` to the custom primitive types the renderer compiles (its index: the count so far).

    Registering the same type again (the same class name, header, struct and floats) keeps the first and returns
    it.

    Raises
    ------
    TypeError, ValueError
        A descriptor that is not a :class:`CustomPrimitiveType`, lacks its name, header, struct or floats, or
        takes the name of another registered type.
    """
    if not isinstance(kind, CustomPrimitiveType):
        raise TypeError(f"register_custom_primitive takes a CustomPrimitiveType, got {type(kind).__name__}")
    for name in ("name", "header", "struct"):
        if not isinstance(getattr(kind, name), str) or not getattr(kind, name):
            raise ValueError(f"a custom primitive type needs a {name} (a non-empty str), got {getattr(kind, name)!r}")
    if not kind.struct.isidentifier():
        raise ValueError(f"the custom primitive type's struct must be a C++ identifier, got {kind.struct!r}")
    if not isinstance(kind.floats, int) or not 1 <= kind.floats <= MAX_CUSTOM_FLOATS:
        raise ValueError(f"a custom primitive type takes 1 to {MAX_CUSTOM_FLOATS} floats per primitive, got "
                         f"{kind.floats!r}")
    existing = _types.get(kind.name)
    if existing is kind or (existing is not None and _same(existing, kind)):
        return existing  # registering again (a notebook cell run twice) keeps the first
    if existing is not None:
        raise ValueError(f"a custom primitive type named {kind.name!r} is registered already ({existing!r})")
    _types[kind.name] = kind
    return kind


def _same(a: CustomPrimitiveType, b: CustomPrimitiveType) -> bool:
    """Whether two descriptors are the same type made twice: one class name, header, struct and width."""
    return (type(a).__qualname__, a.header, a.struct, a.floats) == (type(b).__qualname__, b.header, b.struct, b.floats)


def custom_primitives() -> tuple[CustomPrimitiveType, ...]:
    """The registered custom primitive types, in registration order (the kernel's type index)."""
    return tuple(_types.values())


def custom_primitive(name: Any) -> CustomPrimitiveType:
    """The registered type ``name``; ShapeError naming the registered ones otherwise."""
    kind = _types.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ShapeError(f"custom primitive type must be one of {tuple(_types)}, got {name!r}")
    return kind


def custom_primitive_index(name: str) -> int:
    """The kernel's index of type ``name`` (its registration order)."""
    return list(_types.values()).index(custom_primitive(name))


@dataclass(eq=False)
class CustomPrimitives:
    """Primitives of a registered custom type: one row of floats each, intersected by the type's device code.

    Attributes
    ----------
    primitive : str
        The registered type (:func:`custom_primitives`), e.g. ``"disk"``.
    data : array (N, floats)
        One row per primitive, in the type's layout (host; stored as float32, checked finite and by the type).
    colors : array (N, 3) or None
        Linear RGB per primitive, multiplying the reflectance.
    material : Material or sequence of Material
    material_ids : array (N,) of ints or None
    name : str

    Attributes set on creation: ``boxes`` (N, 6) float32, the type's bounds of each primitive.

    Raises
    ------
    ShapeError
        An unregistered type, data of the wrong shape or not finite, what the type refuses, bad colours or ids.
    """

    primitive: str
    data: Any
    colors: Any = None
    material: Any = field(default_factory=Material)
    material_ids: Any = None
    name: str = ""

    kind: ClassVar[str] = "custom"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"custom primitives name must be a str, got {type(self.name).__name__}")
        self.type = custom_primitive(self.primitive)
        label = self.label
        if is_device_array(self.data):
            raise TypeError(f"{label}: data must be a host (numpy) array (the bounds are computed on the host)")
        data = np.asarray(self.data, np.float64)
        if data.ndim != 2 or data.shape[1] != self.type.floats or not len(data):
            raise ShapeError(f"{label}: data must have shape (N, {self.type.floats}) (one row per primitive), got "
                             f"{data.shape}")
        if not np.isfinite(data).all():
            raise ShapeError(f"{label}: data contains NaN or Inf (first at row "
                             f"{int(np.argwhere(~np.isfinite(data).all(axis=1))[0, 0])})")
        self.data = np.ascontiguousarray(data, np.float32)
        self.type.check(self.data, label)
        self.boxes = np.ascontiguousarray(self.type.bounds(self.data), np.float32)
        try:
            check_aabbs(self.boxes, f"{label} bounds")
        except ValueError as exc:
            raise ShapeError(f"{label}: the type's bounds are not boxes: {exc}") from None
        if self.boxes.shape[0] != len(self.data):
            raise ShapeError(f"{label}: the type gave {self.boxes.shape[0]} boxes for {len(self.data)} primitives")
        self.num_custom = len(self.data)
        self.colors = shape_colors(self.colors, self.num_custom, label)
        self.check_materials()

    @property
    def label(self) -> str:
        return shape_label(f"{self.primitive} primitives", self.name)

    def check_materials(self) -> None:
        """Check the materials and material ids (again: ``material`` may have been replaced since)."""
        self.materials = shape_materials(self.material, self.label)
        self.material_ids = shape_material_ids(self.material_ids, self.num_custom, len(self.materials), self.label,
                                               "primitive")

    @property
    def num_primitives(self) -> int:
        return self.num_custom

    @property
    def on_device(self) -> bool:
        return False

    @property
    def is_emissive(self) -> bool:
        return any(m.is_emissive for m in self.materials)

    def bounds(self) -> np.ndarray:
        """The (2, 3) box around every primitive."""
        return np.stack([self.boxes[:, :3].min(axis=0), self.boxes[:, 3:].max(axis=0)]).astype(np.float64)

    def __repr__(self) -> str:
        return f"<optixasync.scene.CustomPrimitives {self.label}: {self.num_custom:,} primitives>"
