"""NVTX ranges around the phases of a frame, for Nsight Systems; free when switched off.

The scheduler, the accel structures and ``Context.upload`` wrap their phases
in ``with _nvtx.annotate("optixasync.launch"):``. While NVTX is off (the
default), :func:`annotate` is a function returning one shared do-nothing
object, so a range costs one call (about 0.1 us) and the ``nvtx`` package is
never imported. :func:`enable_nvtx` swaps in the real function; callers look
``annotate`` up on this module at each use, so the swap reaches them all.

Switch it on with ``OPTIXASYNC_NVTX=1`` in the environment (read when
optixasync is imported) or ``optixasync.diagnostics.enable_nvtx()``.

Blocking calls
--------------
None. NVTX pushes and pops are host-side markers; without a profiler
attached they return at once.

Range names (domain ``optixasync``): ``optixasync.acquire`` (a frame slot,
including its fence wait), ``optixasync.upload``, ``optixasync.build``,
``optixasync.refit``, ``optixasync.compact``, ``optixasync.launch``,
``optixasync.readback``, ``optixasync.submit``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from ..errors import MissingExtraError

__all__ = [
    "NVTX_ENV",
    "RANGE_COLORS",
    "annotate",
    "enable_nvtx",
    "disable_nvtx",
    "nvtx_enabled",
    "nvtx_range",
]

#: Environment variable that switches the ranges on at import (``1``, ``true`` or ``yes``).
NVTX_ENV = "OPTIXASYNC_NVTX"

#: ARGB colours of the phases, so the timeline reads at a glance.
RANGE_COLORS: dict[str, int] = {
    "optixasync.acquire": 0xFF9E9E9E,  # grey: waiting for a slot is not work
    "optixasync.upload": 0xFF2196F3,
    "optixasync.build": 0xFFFF9800,
    "optixasync.refit": 0xFFFFC107,
    "optixasync.compact": 0xFF795548,
    "optixasync.launch": 0xFF4CAF50,
    "optixasync.readback": 0xFF9C27B0,
    "optixasync.submit": 0xFF607D8B,
}
_DEFAULT_COLOR = 0xFF00BCD4
_DOMAIN = "optixasync"


class _NoRange:
    """The range used while NVTX is off: entering and leaving it does nothing."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_RANGE = _NoRange()


class _Range:
    """One named NVTX range of the ``optixasync`` domain (its attributes registered once)."""

    __slots__ = ("_domain", "_attributes")

    def __init__(self, domain: Any, attributes: Any) -> None:
        self._domain = domain
        self._attributes = attributes

    def __enter__(self) -> None:
        self._domain.push_range(self._attributes)

    def __exit__(self, *exc: object) -> None:
        self._domain.pop_range()


def _annotate_off(message: str) -> _NoRange:
    return _NO_RANGE


_domain: Any = None
_ranges: dict[str, _Range] = {}


def _annotate_on(message: str) -> _Range:
    rng = _ranges.get(message)
    if rng is None:
        # Names are a handful of constants: cache their attributes (NVTX registers the strings once).
        color = RANGE_COLORS.get(message, _DEFAULT_COLOR)
        rng = _ranges[message] = _Range(_domain, _domain.get_event_attributes(message=message, color=color))
    return rng


#: ``with annotate("optixasync.launch"): ...`` -- replaced by :func:`enable_nvtx`; look it up on the module.
annotate = _annotate_off


def nvtx_range(message: str) -> Any:
    """A context manager for an NVTX range named ``message`` (a no-op while NVTX is off)."""
    return annotate(message)


def nvtx_enabled() -> bool:
    """Whether optixasync currently emits NVTX ranges."""
    return annotate is _annotate_on


def enable_nvtx(on: bool = True) -> None:
    """Emit NVTX ranges around optixasync's frame phases (``on=False`` switches them off).

    Raises
    ------
    MissingExtraError
        If the ``nvtx`` package is not installed.
    """
    global annotate, _domain
    if not on:
        annotate = _annotate_off
        return
    try:
        import nvtx
    except ImportError as exc:
        raise MissingExtraError("NVTX ranges (OPTIXASYNC_NVTX=1 or enable_nvtx())", "nvtx") from exc
    if _domain is None:
        _domain = nvtx.get_domain(_DOMAIN)
        _ranges.clear()
    annotate = _annotate_on


def disable_nvtx() -> None:
    """Stop emitting NVTX ranges."""
    enable_nvtx(False)


def _env_requests_nvtx(environ: Any = os.environ) -> bool:
    return environ.get(NVTX_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _enable_from_environment() -> None:
    """Honour ``OPTIXASYNC_NVTX=1`` at import; without the ``nvtx`` package, warn instead of failing the import."""
    if not _env_requests_nvtx():
        return
    try:
        enable_nvtx()
    except MissingExtraError as exc:
        warnings.warn(f"{NVTX_ENV} is set but NVTX ranges stay off: {exc}", RuntimeWarning, stacklevel=2)


_enable_from_environment()
