"""numpy dtypes with the layout CUDA gives a struct, for launch parameters and SBT data.

numpy's ``align=True`` aligns a field to its element type, but CUDA aligns
``float2`` to 8 and ``float4`` to 16 bytes; :func:`struct_dtype` places each
field at the offset ``nvcc``/NVRTC would.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["struct_dtype", "cuda_alignment", "CUDA_TYPES"]

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


def struct_dtype(fields: Sequence[tuple[str, str | np.dtype] | tuple[str, str | np.dtype, int]],
                 min_alignment: int = 1) -> np.dtype:
    """A structured dtype laid out like the CUDA struct with these fields.

    Parameters
    ----------
    fields : sequence of (name, type) or (name, type, count)
        ``type`` is a key of :data:`CUDA_TYPES` (``"float3"``, ``"ptr"``, ...) or a dtype made by this
        function (a nested struct, aligned as CUDA aligns it); ``count`` makes a fixed-size array member.
    min_alignment : int
        Lower bound of the struct's alignment (16 for an SBT record).

    Returns
    -------
    numpy.dtype
        Its ``metadata["cuda_alignment"]`` is the struct's alignment.

    Raises
    ------
    ValueError
        On an unknown type name, a nested dtype not made by this function, or a duplicate field name.
    """
    names, formats, offsets = [], [], []
    offset = 0
    alignment = max(1, int(min_alignment))
    for field in fields:
        name, type_name = field[0], field[1]
        count = int(field[2]) if len(field) > 2 else 1  # type: ignore[misc]
        if name in names:
            raise ValueError(f"duplicate field name {name!r}")
        if isinstance(type_name, np.dtype):
            align = cuda_alignment(type_name)
            base, lanes, size = type_name, 1, type_name.itemsize
        elif type_name in CUDA_TYPES:
            base, lanes, align = CUDA_TYPES[type_name]
            size = np.dtype(base).itemsize * lanes
        else:
            raise ValueError(f"unknown CUDA type {type_name!r} for field {name!r}; known: {sorted(CUDA_TYPES)}")
        offset = (offset + align - 1) // align * align
        shape = tuple(s for s in (count, lanes) if s > 1)
        names.append(name)
        formats.append((base, shape) if shape else base)
        offsets.append(offset)
        offset += size * count
        alignment = max(alignment, align)
    itemsize = (offset + alignment - 1) // alignment * alignment
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": max(itemsize, alignment)},
                    metadata={"cuda_alignment": alignment})


def cuda_alignment(dtype: np.dtype) -> int:
    """The CUDA alignment of a struct dtype made by :func:`struct_dtype`.

    Raises
    ------
    ValueError
        For a dtype that :func:`struct_dtype` did not make (its alignment is unknown).
    """
    metadata = dtype.metadata or {}
    if "cuda_alignment" not in metadata:
        raise ValueError("a nested struct field needs a dtype made by struct_dtype (its CUDA alignment is unknown)")
    return int(metadata["cuda_alignment"])
