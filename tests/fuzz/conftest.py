"""The fuzz suite's harness: seeds, the per-case checks, and the limits the loaders run under.

Every test runs twice: with the fixed seed (the same cases on every run) and with a rotating one (new cases
each run, from the clock), both shown in the test id (``[seed=...]``) and in every failure message. To
replay a failure: ``OPTIXASYNC_FUZZ_SEED=<seed> python -m pytest tests/fuzz``.

Each case is checked for: success or one of the loader's documented exceptions; time under
:data:`CASE_SECONDS` (a hang guard); a peak of traced memory under :data:`CASE_BYTES`; and no file opened
outside the case's asset folder (an audit hook on ``open``). The bounds are generous safety limits, not
measurements: a case takes milliseconds and a few MiB.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from optixasync.scene import LoadLimits
from optixasync.testing import TimeLimitExceeded, outside, peak_memory, record_opens, time_limit

#: The seed every run uses.
FIXED_SEED = 20260101
#: A hang guard per case, seconds.
CASE_SECONDS = 10.0
#: Traced memory one case may peak at (Python objects and numpy buffers).
CASE_BYTES = 256 << 20
#: The limits the loaders run under: small enough that the memory bound above checks them.
LIMITS = LoadLimits(max_file_bytes=16 << 20, max_total_bytes=64 << 20, max_json_bytes=4 << 20, max_nodes=20_000,
                    max_instances=100_000, max_accessor_count=1 << 20, max_image_pixels=4 << 20)


def _rotating_seed() -> int:
    return int(os.environ.get("OPTIXASYNC_FUZZ_SEED") or int(time.time()) % 1_000_000_000)


SEEDS = [FIXED_SEED, _rotating_seed()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" in metafunc.fixturenames:
        metafunc.parametrize("seed", SEEDS, ids=[f"seed={s}" for s in SEEDS])


class CaseFailure(AssertionError):
    """A fuzz case broke a rule; the message names the seed, the case and how to replay it."""


def check_case(load: Callable[[], object], folder: Path, allowed: tuple[type[BaseException], ...], *, seed: int,
               case: int, what: str) -> str:
    """Run ``load`` under the checks; ``"ok"`` or the name of the documented exception it raised."""
    where = f"{what} case {case} of seed {seed} (replay: OPTIXASYNC_FUZZ_SEED={seed})"
    outcome = "ok"
    with record_opens() as opened, peak_memory() as peak, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with time_limit(CASE_SECONDS):
                load()
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
    return outcome


@pytest.fixture
def case_folders(tmp_path):
    """(the asset folder, a private folder beside it with files a hostile asset would like to read)."""
    asset, private = tmp_path / "asset", tmp_path / "private"
    asset.mkdir()
    private.mkdir()
    (private / "secret.bin").write_bytes(bytes(range(36)))
    (private / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    return asset, private
