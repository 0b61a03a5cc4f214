"""The scene tables' placement in host memory: what the CPU device's kernel reads instead of device memory.

:class:`HostPlacement` is a placement of :class:`~optixasync.render._tables.SceneTables` (as the device
placement of :mod:`._placement` is): every table is an aligned numpy copy whose address goes into the records,
textures are host texture records (``HostTexture`` of ``kernels/host/pathtracer_host.cpp``: linear RGBA
float32 texels, their size, wrap modes and filter), the environment's sampling tables numpy arrays. The
kernel reads them through the same records the GPU reads, built by the same table code.

Blocking calls
--------------
None: host memory only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["HOST_TEXTURE", "WRAPS", "HostPlacement", "aligned"]

#: ``HostTexture`` of pathtracer_host.cpp: texels pointer, width, height, wrap u, wrap v, nearest.
HOST_TEXTURE = np.dtype({"names": ["texels", "width", "height", "wrap_u", "wrap_v", "nearest"],
                         "formats": ["<u8", "<i4", "<i4", "<i4", "<i4", "<i4"],
                         "offsets": [0, 8, 12, 16, 20, 24], "itemsize": 32})
#: The host texture's wrap codes.
WRAPS = {"repeat": 0, "clamp": 1, "mirror": 2}


def aligned(array: np.ndarray, alignment: int = 16) -> np.ndarray:
    """A copy of ``array`` whose data starts on an ``alignment``-byte boundary (float4 loads need it)."""
    raw = np.zeros(array.nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


class HostPlacement:
    """The scene tables' placement of the host build: aligned host copies, host textures, numpy environment tables.

    Attributes
    ----------
    keep : list of numpy.ndarray
        Everything a record points into (kept alive as long as the placement).
    """

    def __init__(self) -> None:
        self.keep: list[np.ndarray] = []
        self._shared: dict[int, np.ndarray] = {}

    def _keep(self, array: np.ndarray) -> np.ndarray:
        array = aligned(np.ascontiguousarray(array))
        self.keep.append(array)
        return array

    def upload(self, array: np.ndarray, name: str) -> int:
        return self._keep(array).ctypes.data

    def rewrite(self, address: int, array: np.ndarray, stream: Any = None) -> None:
        target = next(a for a in self.keep if a.ctypes.data == address)
        data = np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8)
        if data.nbytes != target.nbytes:
            raise ValueError(f"a rewrite of {data.nbytes} bytes into a table of {target.nbytes}")
        target.view(np.uint8).reshape(-1)[...] = data

    def mesh_array(self, array: Any, name: str, dtype: Any, shared: bool) -> np.ndarray:
        target = np.float32 if dtype is np.float32 else np.uint32  # indices read as unsigned, as on the device
        if shared and id(array) in self._shared:
            return self._shared[id(array)]
        placed = self._keep(np.asarray(array, target))
        if shared:
            self._shared[id(array)] = placed
        return placed

    def address(self, placed: np.ndarray) -> int:
        return placed.ctypes.data

    def host_copy(self, placed: np.ndarray, original: Any) -> np.ndarray:
        return placed

    def textures(self, textures: Any) -> Callable[[Any], int]:
        from ..io import srgb_to_linear
        from ._textures import texel_data

        handles: dict[int, int] = {}
        for texture in textures:
            if id(texture) in handles:
                continue
            data, srgb = texel_data(texture)
            scale = 255.0 if data.dtype == np.uint8 else 65535.0 if data.dtype == np.uint16 else 1.0
            texels = data.astype(np.float32) / scale
            if srgb:
                texels[..., :3] = srgb_to_linear(texels[..., :3], 1.0)
            record = np.zeros((), HOST_TEXTURE)
            record["texels"] = self.upload(np.ascontiguousarray(texels, np.float32), "texels")
            record["height"], record["width"] = texels.shape[:2]
            record["wrap_u"], record["wrap_v"] = WRAPS[texture.wrap[0]], WRAPS[texture.wrap[1]]
            record["nearest"] = int(texture.filter == "nearest")
            handles[id(texture)] = self.upload(np.atleast_1d(record), "texture")
        return lambda texture: 0 if texture is None else handles[id(texture)]

    def environment(self, environment: Any) -> int:
        from ._environment import environment_record, environment_tables

        pointers = (0, 0, 0)
        if environment.image is not None:
            pointers = tuple(self.upload(a, "environment table") for a in environment_tables(environment.image))
        return self.upload(np.atleast_1d(environment_record(environment, *pointers)), "environment")

    def environment_record(self, address: int) -> np.ndarray:
        """The environment record placed at ``address`` (a copy, as the device placement reads one back)."""
        from ._environment import ENVIRONMENT_RECORD

        target = next(a for a in self.keep if a.ctypes.data == address)
        return np.frombuffer(target.tobytes(), ENVIRONMENT_RECORD)[0].copy()

    def ready(self) -> None:
        return None
