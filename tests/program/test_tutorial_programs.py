"""The device code of every tutorial compiles with NVRTC on the CPU, with every program and callable it declares.

A tutorial's device code is a string constant of one of its ``python`` blocks (``SOURCE = r\"\"\"...\"\"\"``);
the pages themselves run on the GPU in ``tests/test_docs_snippets.py``. Here each such string is compiled, so a
page whose CUDA no longer compiles (a renamed helper of ``optixasync_device.h``) fails on any machine.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from optixasync.program import compile_ptx
from optixasync.program._module import _CALLABLE_RE, _ENTRY_RE

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def device_sources(path: Path) -> list[tuple[str, str]]:
    """``(name, CUDA text)`` of the string constants holding OptiX programs in a page's python blocks."""
    found = []
    for block in _FENCE.findall(path.read_text(encoding="utf-8")):
        for node in ast.walk(ast.parse(block)):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str) and "OA_PROGRAM" in node.value.value):
                found.append((node.targets[0].id, node.value.value))  # type: ignore[attr-defined]
    return found


PROGRAMS = [(path, name, text) for path in TUTORIALS for name, text in device_sources(path)]


def test_the_new_tutorials_carry_device_code():
    pages = {path.name for path, _, _ in PROGRAMS}
    assert {"own-program.md", "spheres.md", "curves.md", "custom-primitives.md", "callables.md",
            "motion-blur.md"} <= pages


@pytest.mark.parametrize(("path", "name", "text"), PROGRAMS, ids=[f"{p.name}:{n}" for p, n, _ in PROGRAMS])
def test_tutorial_device_code_compiles(path, name, text):
    ptx = compile_ptx(text, f"{path.stem}.cu")
    declared = set(re.findall(r"OA_PROGRAM\s+(__\w+)\s*\(", text))
    assert declared and declared <= set(_ENTRY_RE.findall(ptx))
    assert set(re.findall(r"OA_CALLABLE\(\w+\)\s+(__\w+)\s*\(", text)) == set(_CALLABLE_RE.findall(ptx))
