"""The checks every fuzz case runs under, the limits the loaders get, and the folders a case lives in.

Each case is checked for: success or one of the target's documented exceptions; time under
:data:`CASE_SECONDS` (a hang guard); a peak of traced memory under :data:`CASE_BYTES`; and no file opened
outside the case's asset folder (an audit hook on ``open``). The bounds are generous safety limits, not
measurements: a case takes milliseconds and a few MiB.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import base64
import warnings
from collections.abc import Callable
from pathlib import Path

from ...scene import LoadLimits
from .._hostile import TimeLimitExceeded, outside, peak_memory, record_opens, time_limit

__all__ = ["CASE_BYTES", "CASE_SECONDS", "CaseFailure", "LIMITS", "check_case", "decode", "encode",
           "make_folders"]

#: A hang guard per case, seconds.
CASE_SECONDS = 10.0
#: Traced memory one case may peak at (Python objects and numpy buffers).
CASE_BYTES = 256 << 20
#: The limits the loaders run under: small enough that the memory bound above checks them.
LIMITS = LoadLimits(max_file_bytes=16 << 20, max_total_bytes=64 << 20, max_json_bytes=4 << 20, max_nodes=20_000,
                    max_instances=100_000, max_accessor_count=1 << 20, max_image_pixels=4 << 20)


class CaseFailure(AssertionError):
    """A fuzz case broke a rule; the message names the case (its seed and number, or its corpus file)."""


def check_case(load: Callable[[], object], folder: Path, allowed: tuple[type[BaseException], ...],
               where: str) -> tuple[str, object]:
    """Run ``load`` under the checks: ``("ok", its value)`` or ``(name of the documented exception, None)``.

    Raises
    ------
    CaseFailure
        On an undocumented exception, a run past :data:`CASE_SECONDS`, a peak over :data:`CASE_BYTES` or a file
        opened outside ``folder``; the message starts with ``where``.
    """
    outcome, value = "ok", None
    with record_opens() as opened, peak_memory() as peak, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with time_limit(CASE_SECONDS):
                value = load()
        except TimeLimitExceeded:
            raise CaseFailure(f"{where}: still running after {CASE_SECONDS} s") from None
        except allowed as exc:
            outcome = type(exc).__name__
        except Exception as exc:
            raise CaseFailure(f"{where}: undocumented {type(exc).__name__}: {str(exc)[:300]}") from exc
    if peak.bytes > CASE_BYTES:
        raise CaseFailure(f"{where}: peak traced memory {peak.bytes:,} bytes, over {CASE_BYTES:,}")
    escaped = outside(opened, [folder])
    if escaped:
        raise CaseFailure(f"{where}: opened files outside the asset's folder: {escaped[:5]}")
    return outcome, value


def make_folders(root: Path) -> tuple[Path, Path]:
    """(the asset folder, a private folder beside it with files a hostile asset would like to read), in ``root``."""
    asset, private = Path(root) / "asset", Path(root) / "private"
    asset.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    (private / "secret.bin").write_bytes(bytes(range(36)))
    (private / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    return asset, private


def encode(data: bytes) -> str:
    """Bytes as text for a case's JSON (base64)."""
    return base64.b64encode(data).decode("ascii")


def decode(text: str) -> bytes:
    """The bytes :func:`encode` wrote."""
    return base64.b64decode(text.encode("ascii"), validate=True)
