"""The command line's progress bar (tqdm), public for scripts that drive the library the same way.
"""

from __future__ import annotations

from typing import Any

__all__ = ["progress_bar"]


def progress_bar(total: int, unit: str, quiet: bool = False) -> Any:
    """A tqdm bar of ``total`` ``unit``s on stderr that disappears when it closes (``quiet``: none at all).

    Use it as a context manager and call ``update(n)``.
    """
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, disable=quiet, dynamic_ncols=True, leave=False)
