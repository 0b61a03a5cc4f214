"""Package-wide settings read from the environment, and where files live.

Blocking calls
--------------
None: environment and path lookups only.

Environment variables
---------------------
OPTIXASYNC_CACHE_DIR
    Directory of the PTX cache and of OptiX's own module cache
    (default: ``$XDG_CACHE_HOME/optixasync`` or ``~/.cache/optixasync``).
OPTIXASYNC_OPTIX_LIBRARY
    Explicit path of ``libnvoptix.so.1``.
OPTIXASYNC_DISABLE_CACHE
    Set to ``1`` to compile every kernel afresh and keep nothing on disk.
OPTIXASYNC_OPTIX_QUEUE_LIMIT
    At most this many OptiX launches queued per OptiX device context (see
    :mod:`optixasync.cuda._launch_queue`); unset or empty: no limit (the default).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "cache_dir", "cache_enabled", "kernels_dir", "optix_cache_dir", "optix_library_override", "ptx_cache_dir",
    "CACHE_DIR_ENV", "OPTIX_LIBRARY_ENV", "OPTIX_QUEUE_LIMIT_ENV", "optix_queue_limit",
]

CACHE_DIR_ENV = "OPTIXASYNC_CACHE_DIR"
#: Environment variable holding an explicit path to the OptiX driver library (read here only).
OPTIX_LIBRARY_ENV = "OPTIXASYNC_OPTIX_LIBRARY"
#: Environment variable bounding the OptiX launches queued per device context (read here only).
OPTIX_QUEUE_LIMIT_ENV = "OPTIXASYNC_OPTIX_QUEUE_LIMIT"


def cache_dir() -> Path:
    """Directory of the on-disk kernel caches (created on demand by writers)."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "optixasync"


def ptx_cache_dir() -> Path:
    """Directory of optixasync's PTX cache entries."""
    return cache_dir() / "ptx"


def optix_cache_dir() -> Path:
    """Directory handed to OptiX for its own module cache."""
    return cache_dir() / "optix"


def optix_library_override() -> str | None:
    """The path in :data:`OPTIX_LIBRARY_ENV`, or None when it is unset or empty."""
    return os.environ.get(OPTIX_LIBRARY_ENV) or None


def optix_queue_limit() -> int | None:
    """The limit in :data:`OPTIX_QUEUE_LIMIT_ENV`, or None when it is unset or empty.

    Raises
    ------
    ValueError
        When it is set to anything but an integer >= 1, naming the variable.
    """
    text = os.environ.get(OPTIX_QUEUE_LIMIT_ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{OPTIX_QUEUE_LIMIT_ENV} must be an integer >= 1 (OptiX launches queued per context) "
                         f"or unset, got {text!r}")
    return value


def cache_enabled() -> bool:
    return os.environ.get("OPTIXASYNC_DISABLE_CACHE", "") not in ("1", "true", "yes")


def kernels_dir() -> Path:
    """Directory holding the package's ``.cu`` programs and device headers.

    An installed wheel carries them as ``optixasync/kernels``; a source
    checkout keeps them in the top-level ``kernels/`` folder.
    """
    here = Path(__file__).resolve().parent
    installed = here / "kernels"
    if installed.is_dir():
        return installed
    return here.parent / "kernels"
