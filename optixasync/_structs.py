"""numpy dtypes with the layout CUDA gives a struct, for launch parameters and SBT data.

numpy's ``align=True`` aligns a field to its element type, but CUDA aligns
``float2`` to 8 and ``float4`` to 16 bytes; :func:`struct_dtype` places each
field at the offset ``nvcc``/NVRTC would.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["struct_dtype", "CUDA_TYPES"]

# name -> (numpy base type, element count, alignment in bytes)
CUDA_TYPES: dict[str, tuple[str, int, int]] = {
    "float": ("<f4", 1, 4),
    "int": ("<i4", 1, 4),
    "uint": ("<u4", 1, 4),
    "float2": ("<f4", 2, 8),
    "float3": ("<f4", 3, 4),
    "float4": ("<f4", 4, 16),
    "int2": ("<i4", 2, 8),
    "uint2": ("<u4", 2, 8),
    "uint3": ("<u4", 3, 4),
    "uint4": ("<u4", 4, 16),
    "u64": ("<u8", 1, 8),
    "ptr": ("<u8", 1, 8),
    "handle": ("<u8", 1, 8),
    "double": ("<f8", 1, 8),
}


def struct_dtype(fields: Sequence[tuple[str, str] | tuple[str, str, int]], min_alignment: int = 1) -> np.dtype:
    """A structured dtype laid out like the CUDA struct with these fields.

    Parameters
    ----------
    fields : sequence of (name, type) or (name, type, count)
        ``type`` is a key of :data:`CUDA_TYPES` (``"float3"``, ``"ptr"``, ...);
        ``count`` makes a fixed-size array member.
    min_alignment : int
        Lower bound of the struct's alignment (16 for an SBT record).

    Raises
    ------
    ValueError
        On an unknown type name or a duplicate field name.
    """
    names, formats, offsets = [], [], []
    offset = 0
    alignment = max(1, int(min_alignment))
    for field in fields:
        name, type_name = field[0], field[1]
        count = int(field[2]) if len(field) > 2 else 1  # type: ignore[misc]
        if type_name not in CUDA_TYPES:
            raise ValueError(f"unknown CUDA type {type_name!r} for field {name!r}; known: {sorted(CUDA_TYPES)}")
        if name in names:
            raise ValueError(f"duplicate field name {name!r}")
        base, lanes, align = CUDA_TYPES[type_name]
        offset = (offset + align - 1) // align * align
        shape = tuple(s for s in (count, lanes) if s > 1)
        names.append(name)
        formats.append((base, shape) if shape else base)
        offsets.append(offset)
        offset += np.dtype(base).itemsize * lanes * count
        alignment = max(alignment, align)
    itemsize = (offset + alignment - 1) // alignment * alignment
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": max(itemsize, alignment)})
