"""Options of the denoiser."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from ..validation import as_int
from ._oidn import QUALITY

__all__ = ["DenoiseOptions", "MAX_FILTERS_LIMIT"]

#: Upper bound of ``DenoiseOptions.max_filters``.
MAX_FILTERS_LIMIT = 64


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


@dataclass(frozen=True)
class DenoiseOptions:
    """What the :class:`~optixasync.denoise.Denoiser` filters and how.

    Attributes
    ----------
    hdr : bool
        The color image is high dynamic range (linear radiance, any
        non-negative value). False: low dynamic range, values in [0, 1].
    albedo : bool
        The filter takes an albedo guide (``denoise(albedo=...)``), values in [0, 1].
    normal : bool
        The filter takes a normal guide (``denoise(normal=...)``), values in
        [-1, 1], any space. OIDN accepts normals only together with albedo.
    clean_aux : bool
        The guides are noise-free (OIDN's ``cleanAux``), as when they come
        from the first hit of a pinhole camera without depth of field or
        motion blur: sharpest result.
    prefilter_aux : bool
        The guides are noisy and are denoised first, each by its own OIDN
        ``RT`` filter (into buffers the denoiser owns), before the main
        filter runs with ``cleanAux`` on them, as OIDN recommends for noisy
        guides. Costs one more filter execution per guide per frame. With neither
        ``clean_aux`` nor ``prefilter_aux``, noisy guides go to the main
        filter as they are (fastest, blurrier).
    quality : {"high", "balanced", "fast"}
        OIDN's quality mode: ``high`` for final frames, ``balanced`` and
        ``fast`` for interactive rendering.
    input_scale : float or None
        OIDN's ``inputScale``: the factor that brings the color image's
        values to about 1 (HDR) before filtering; the output is scaled back.
        None lets OIDN compute it from the image (on the device, no readback).
    max_filters : int
        Bound of the denoiser's cache of committed filters: one entry per
        distinct set of buffers passed to :meth:`Denoiser.denoise`. Use at
        least the number of frame slots that each pass their own buffers.

    Raises
    ------
    TypeError
        On a value of the wrong type (a bool given as an int, and so on).
    ValueError
        On an unknown quality, an ``input_scale`` that is not finite and
        positive, ``max_filters`` outside [1, 64], a normal guide without
        albedo, both ``clean_aux`` and ``prefilter_aux``, or either of them
        without a guide.
    """

    hdr: bool = True
    albedo: bool = False
    normal: bool = False
    clean_aux: bool = False
    prefilter_aux: bool = False
    quality: str = "high"
    input_scale: float | None = None
    max_filters: int = 4

    def __post_init__(self) -> None:
        for name in ("hdr", "albedo", "normal", "clean_aux", "prefilter_aux"):
            _bool(name, getattr(self, name))
        if not isinstance(self.quality, str):
            raise TypeError(f"quality must be a str, got {type(self.quality).__name__} {self.quality!r}")
        if self.quality not in QUALITY:
            raise ValueError(f"quality must be one of {sorted(QUALITY)}, got {self.quality!r}")
        if self.input_scale is not None:
            if isinstance(self.input_scale, bool) or not isinstance(self.input_scale, numbers.Real):
                raise TypeError(f"input_scale must be a float or None, got {type(self.input_scale).__name__}")
            scale = float(self.input_scale)
            if not math.isfinite(scale) or scale <= 0.0:
                raise ValueError(f"input_scale must be finite and positive (None: automatic), got {scale!r}")
            object.__setattr__(self, "input_scale", scale)
        object.__setattr__(self, "max_filters", as_int("max_filters", self.max_filters, 1, MAX_FILTERS_LIMIT))
        if self.normal and not self.albedo:
            raise ValueError("normal=True needs albedo=True: OIDN's RT filter takes normals only together with albedo")
        if self.clean_aux and self.prefilter_aux:
            raise ValueError("clean_aux and prefilter_aux exclude each other: prefiltering makes noisy guides clean")
        if (self.clean_aux or self.prefilter_aux) and not self.albedo:
            which = "clean_aux" if self.clean_aux else "prefilter_aux"
            raise ValueError(f"{which}=True needs a guide (albedo=True, optionally normal=True)")

    @property
    def guides(self) -> tuple[str, ...]:
        """Names of the guides the filter takes, in OIDN's order (``()``, ``("albedo",)`` or both)."""
        return ("albedo", "normal")[: int(self.albedo) + int(self.normal)]
