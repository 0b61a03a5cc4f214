"""Warnings attributed to the line that called into optixasync, not to the library's own code.

:func:`warn` walks up the stack past every frame of the package (whatever
depth the warning is raised at) and gives :func:`warnings.warn` the
``stacklevel`` of the first frame outside it: a loader's warning points at
the user's ``load_gltf(...)`` line, so filters by module and the default
"once per location" rule act on the user's code.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["caller_stacklevel", "warn"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def caller_stacklevel() -> int:
    """The ``stacklevel`` naming the first frame outside optixasync, for a ``warnings.warn`` in the function calling this."""
    frame = sys._getframe(1)  # the function about to warn: stacklevel 1
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` at the caller's line (the first frame outside the package)."""
    warnings.warn(message, category, stacklevel=caller_stacklevel())
