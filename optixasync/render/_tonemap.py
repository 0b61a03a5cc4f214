"""Linear radiance to 8-bit sRGB, on the host, with the kernel's curve.

The kernel tonemaps the running mean itself (``srgb8`` in
``kernels/pathtracer.cu``): clamp to [0, 1] (NaN to 0), the sRGB transfer
function, then round to the nearest code. :func:`tonemap_srgb` does the same
in float32 numpy; the kernel's fast ``pow`` may differ from numpy's by one
code at a rounding boundary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["tonemap_srgb", "srgb_to_linear"]


def tonemap_srgb(linear: Any) -> np.ndarray:
    """Linear RGB (..., 3) to sRGB ``uint8`` (..., 3)."""
    a = np.asarray(linear, dtype=np.float32)
    if a.ndim < 1 or a.shape[-1] != 3:
        raise ValueError(f"expected linear RGB with a last axis of 3, got shape {a.shape}")
    c = np.clip(np.nan_to_num(a, nan=0.0, posinf=1.0, neginf=0.0), np.float32(0), np.float32(1))
    low = c * np.float32(12.92)
    high = np.float32(1.055) * np.power(c, np.float32(1 / 2.4)) - np.float32(0.055)
    s = np.clip(np.where(c <= np.float32(0.0031308), low, high), np.float32(0), np.float32(1))
    return (s * np.float32(255) + np.float32(0.5)).astype(np.uint8)


def srgb_to_linear(codes: Any) -> np.ndarray:
    """The inverse curve: 8-bit sRGB codes to linear float32 (for comparisons in tests and tools)."""
    s = np.asarray(codes, dtype=np.float64) / 255.0
    return np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4).astype(np.float32)
