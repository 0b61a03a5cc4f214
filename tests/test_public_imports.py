"""Examples and tutorials use the public surface only: no import of a private module or name of optixasync.

A private module is one with a component starting with ``_`` (``optixasync.render._path``); a private name is
one imported as ``from optixasync.x import _y``. The checker reads the source with ``ast`` (the tutorials'
Python blocks too) and is tested on snippets, so it can fail.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def private_imports(source: str) -> list[str]:
    """The private optixasync modules and names ``source`` imports, as written."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "optixasync" and any(p.startswith("_") for p in parts[1:]):
                found.append(name)
    return sorted(set(found))


def sources() -> list[tuple[str, str]]:
    out = [(str(p.relative_to(REPO)), p.read_text()) for p in sorted((REPO / "examples").glob("*.py"))]
    for page in sorted((REPO / "docs" / "tutorials").glob("*.md")):
        for k, block in enumerate(FENCE.findall(page.read_text())):
            out.append((f"{page.relative_to(REPO)} block {k + 1}", block))
    return out


@pytest.mark.parametrize("name, source", sources(), ids=[name for name, _ in sources()])
def test_examples_and_tutorials_import_only_public_names(name, source):
    try:
        found = private_imports(source)
    except SyntaxError:
        pytest.skip(f"{name} is not a whole Python program (a fragment of one)")
    assert not found, f"{name} imports private optixasync modules or names: {found}"


def imported_names(source: str) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from optixasync... import name`` in ``source``.

    Imports in an ``except`` handler are left out: they are the fallbacks of code that also runs against
    earlier trees (a benchmark's before/after).
    """
    tree = ast.parse(source)
    fallback = {id(n) for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) for n in ast.walk(h)}
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.ImportFrom) and node.level == 0 and id(node) not in fallback
                and (node.module or "").split(".")[0] == "optixasync"):
            out += [(node.module, alias.name) for alias in node.names]
    return out


def all_sources() -> list[tuple[str, str]]:
    """:func:`sources`, the tests and benchmarks (GPU ones too: they never run here), and every docs page."""
    out = sources()
    for folder in ("tests", "benchmarks"):
        out += [(str(p.relative_to(REPO)), p.read_text()) for p in sorted((REPO / folder).rglob("*.py"))]
    for page in sorted((REPO / "docs").glob("*.md")):
        for k, block in enumerate(FENCE.findall(page.read_text())):
            out.append((f"{page.relative_to(REPO)} block {k + 1}", block))
    return out


@pytest.mark.parametrize("name, source", all_sources(), ids=[name for name, _ in all_sources()])
def test_what_they_import_exists(name, source):
    """A name moved or renamed in the package is caught here, without a GPU, not when the page runs on one."""
    import importlib

    try:
        wanted = imported_names(source)
    except SyntaxError:
        pytest.skip(f"{name} is not a whole Python program (a fragment of one)")
    missing = []
    for module, attr in wanted:
        owner = importlib.import_module(module)
        if not hasattr(owner, attr):
            try:
                importlib.import_module(f"{module}.{attr}")
            except ImportError:
                missing.append(f"{module}.{attr}")
    assert not missing, f"{name} imports names that do not exist: {missing}"


def test_there_are_examples_and_tutorial_blocks():
    names = [name for name, _ in sources()]
    assert sum(n.startswith("examples/") for n in names) >= 3
    assert sum("tutorials" in n for n in names) >= 10


@pytest.mark.parametrize("source, expected", [
    ("from optixasync.render._path import PathIntegrator", ["optixasync.render._path",
                                                            "optixasync.render._path.PathIntegrator"]),
    ("import optixasync._driver", ["optixasync._driver"]),
    ("from optixasync.cuda import _memory", ["optixasync.cuda._memory"]),
    ("from optixasync.render import RenderPipeline\nimport numpy._core", []),
    ("from optixasync import Context", []),
])
def test_the_checker_can_fail(source, expected):
    assert private_imports(source) == expected


def test_fallback_imports_are_left_out():
    source = "try:\n    from optixasync.render import A\nexcept ImportError:\n    from optixasync.render import B\n"
    assert imported_names(source) == [("optixasync.render", "A")]
