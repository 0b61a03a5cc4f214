"""Shared fixtures. GPU tests carry the ``gpu`` marker and skip, with the reason, where no GPU can run them."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """None when an NVIDIA GPU with OptiX is usable, else why not (the package's own driver probe, asked once)."""
    # optixasync._driver is the one driver probe of the package (the CLI and the examples ask it too);
    # it has no public re-export, and the suite must skip for exactly the reasons the package reports.
    from optixasync._driver import unavailable_reason

    return unavailable_reason()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason or gpu_unavailable_reason() or ""
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"GPU test skipped: {reason}"))


#: Where the skip summary says a folded skip comes from: the suite, not each file.
TESTS = Path(__file__).resolve().parent


def one_line_per_reason(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Make a skip report count under its reason alone: ``-rs`` then prints one line per reason (with its count)
    instead of one per file and line, so the no-driver reason of the GPU tests is one line, not one per file."""
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        report.longrepr = (str(TESTS), None, report.longrepr[2])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    one_line_per_reason(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    outcome = yield
    one_line_per_reason(outcome.get_result())


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """Kernel caches of the test session live in a temporary directory, not the user's cache."""
    import os

    previous = os.environ.get("OPTIXASYNC_CACHE_DIR")
    os.environ["OPTIXASYNC_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "cache")
    yield
    if previous is None:
        os.environ.pop("OPTIXASYNC_CACHE_DIR", None)
    else:
        os.environ["OPTIXASYNC_CACHE_DIR"] = previous


def session_abi() -> int | str:
    """The OptiX ABI of the session's context: ``OPTIXASYNC_TEST_ABI`` (a number or ``newest``), else the default.

    ``OPTIXASYNC_TEST_ABI=105 python -m pytest -m gpu`` runs the GPU suite through OptiX 9.0's function table.
    """
    import os

    from optixasync._optix import DEFAULT_ABI

    value = os.environ.get("OPTIXASYNC_TEST_ABI", "").strip()
    if not value:
        return DEFAULT_ABI
    return value if value == "newest" else int(value)


@pytest.fixture(scope="session")
def ctx(_session_cache):
    """One OptiX context for the whole GPU test session (its ABI: :func:`session_abi`)."""
    import optixasync

    context = optixasync.Context(abi=session_abi())
    yield context
    context.close()
