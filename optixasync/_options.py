"""Helpers shared by the option dataclasses: accept an instance, a dict or None."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["coerce_options"]


def coerce_options(cls: type[T], value: Any) -> T:
    """Return ``value`` as an instance of the dataclass ``cls``.

    ``None`` gives the defaults, a ``dict`` gives ``cls(**value)``; unknown keys
    raise ``TypeError`` naming them and the accepted ones.
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, dict):
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(value) - names)
        if unknown:
            raise TypeError(f"unknown {cls.__name__} option(s) {unknown}; accepted: {sorted(names)}")
        return cls(**value)
    raise TypeError(f"expected {cls.__name__}, dict or None, got {type(value).__name__}")
