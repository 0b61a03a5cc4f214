"""The sRGB curve of the renderer, on the host: linear to 8-bit codes and back.

The kernels encode with ``srgb8`` in ``kernels/pathtracer/film.h`` (the path
tracer's in-launch tonemap, and the tonemap stage, which includes that
header): clamp to [0, 1] (NaN to 0), the sRGB transfer function, then round
to the nearest code. :func:`tonemap_srgb` computes the same curve in float32
numpy; the kernels' fast ``pow`` may differ from numpy's by one code at a
rounding boundary. The CPU viewer's lookup table is built from it too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["srgb8", "srgb_to_linear", "tonemap_srgb"]


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


def srgb8(linear: Any) -> np.ndarray:
    """Linear RGB(A) floats -> 8-bit sRGB with the renderer's curve (alpha is kept linear, clipped to [0, 1]).

    Parameters
    ----------
    linear : array_like, shape (H, W, 3) or (H, W, 4)
    """
    linear = np.asarray(linear, dtype=np.float32)
    if linear.ndim != 3 or linear.shape[2] not in (3, 4):
        raise ValueError(f"expected an image of shape (H, W, 3) or (H, W, 4), got shape {linear.shape}")
    rgb = tonemap_srgb(linear[..., :3])
    if linear.shape[-1] == 3:
        return rgb
    alpha = np.clip(np.nan_to_num(linear[..., 3:], nan=0.0), 0.0, 1.0)
    return np.concatenate([rgb, (alpha * 255.0 + 0.5).astype(np.uint8)], axis=-1)


def srgb_to_linear(codes: Any, scale: float = 255.0) -> np.ndarray:
    """The inverse curve: sRGB codes (8-bit by default; ``scale`` is the code of 1) to linear float32."""
    s = np.clip(np.asarray(codes, dtype=np.float64) / scale, 0.0, 1.0)
    return np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4).astype(np.float32)
