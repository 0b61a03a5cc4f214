"""The public surface is chosen, not accreted: each public module's ``__all__`` is pinned in ``api_surface.json``.

A change to what a package exports fails here until the snapshot is updated on purpose
(``python tests/test_api_surface.py --update``), so a review sees every name a change adds or removes.
Every exported name must exist and carry a docstring when it is a class or a function.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).with_name("api_surface.json")


def public_modules() -> list[str]:
    """Every importable module of optixasync with no private component, the package first."""
    import optixasync

    names = ["optixasync"]
    for info in pkgutil.walk_packages(optixasync.__path__, "optixasync."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return sorted(names)


def surface() -> dict[str, list[str]]:
    """``{module: sorted __all__}`` for each public module that declares one."""
    out = {}
    for name in public_modules():
        exported = getattr(importlib.import_module(name), "__all__", None)
        if exported is not None:
            out[name] = sorted(exported)
    return out


def diff(pinned: dict[str, list[str]], now: dict[str, list[str]]) -> list[str]:
    """Lines naming each module and name added (+) or removed (-) between two surfaces."""
    lines = []
    for module in sorted(set(pinned) | set(now)):
        before, after = set(pinned.get(module, ())), set(now.get(module, ()))
        lines += [f"+ {module}.{n}" for n in sorted(after - before)]
        lines += [f"- {module}.{n}" for n in sorted(before - after)]
    return lines


def test_surface_matches_the_snapshot():
    pinned = json.loads(SNAPSHOT.read_text())
    changes = diff(pinned, surface())
    assert not changes, (
        "the public surface changed; if on purpose, run `python tests/test_api_surface.py --update`:\n"
        + "\n".join(changes)
    )


def test_diff_names_additions_and_removals():
    assert diff({"m": ["a", "b"]}, {"m": ["b", "c"], "n": ["d"]}) == ["+ m.c", "- m.a", "+ n.d"]


@pytest.mark.parametrize("module", sorted(surface()))
def test_exported_names_exist_and_are_documented(module):
    mod = importlib.import_module(module)
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"
    bare = [
        n
        for n in mod.__all__
        if (inspect.isclass(getattr(mod, n)) or inspect.isfunction(getattr(mod, n)))
        and not inspect.getdoc(getattr(mod, n))
    ]
    assert not bare, f"{module} exports classes or functions without a docstring: {bare}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_api_surface.py --update")
    SNAPSHOT.write_text(json.dumps(surface(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT} ({sum(map(len, surface().values()))} names)")
