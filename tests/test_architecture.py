"""The package's structure, checked: imports point down the layer order, modules and functions stay small.

:data:`LAYERS` is the layer order, written here once (``docs/architecture.md``
explains it): a module may import modules of its own layer and of layers
before it, never after. ``diagnostics`` sits beside the stack: it imports
only the layers up to :data:`BESIDE_UP_TO`, and only the top layer imports it.
The checker reads the source with ``ast`` (lazy imports inside functions
count too) and is itself tested on a small synthetic package, so it can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "optixasync"

#: The layers, bottom first, and the top-level names of ``optixasync`` in each.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("errors", "_exit", "_config", "validation", "_structs", "_version")),
    ("binding", ("_optix", "_driver")),
    ("cuda", ("cuda",)),
    ("program", ("program",)),
    ("accel", ("accel",)),
    ("scheduler", ("scheduler",)),
    ("scene", ("scene",)),
    ("render", ("render",)),
    ("denoise", ("denoise",)),
    ("viewer", ("viewer",)),
    ("multi", ("multi",)),
    ("top", ("testing", "cli", "__main__", "__init__")),
]
#: Packages beside the stack, and the highest layer each may import.
BESIDE: dict[str, str] = {"diagnostics": "cuda"}
BESIDE_UP_TO = BESIDE["diagnostics"]

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
LONG_FUNCTION_MARK = "# Long because"


def rank_of(layers: list[tuple[str, tuple[str, ...]]]) -> dict[str, int]:
    return {name: k for k, (_layer, names) in enumerate(layers) for name in names}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 2:
        parts = parts[:-1]
    return ".".join(parts)


def top_name(module: str) -> str:
    """``optixasync.cuda._memory`` -> ``cuda``; the package's own ``__init__`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path, module: str, package: str) -> list[tuple[int, str]]:
    """Every ``package`` module imported by the file (absolute, resolved from relative), with its line."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == package]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != package:
                continue
            if node.module is None or target.count(".") == 0:  # "from . import x": x is a module of that package
                found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, target))
    return found


def layer_violations(root: Path, layers: list[tuple[str, tuple[str, ...]]], beside: dict[str, str]) -> list[str]:
    """Every import of ``root`` (a package directory) that points up the layer order."""
    package = root.name
    rank = rank_of(layers)
    top = len(layers) - 1
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(root, path)
        here = top_name(module)
        for line, target in imports_of(path, module, package):
            there = top_name(target)
            if there == here:
                continue
            where = f"{path.relative_to(root.parent)}:{line} imports {target}"
            if there in beside and here not in beside and rank.get(here, top) != top:
                problems.append(f"{where}: only the top layer may import {there}")
            elif here in beside:
                if there not in beside and rank.get(there, top) > rank[beside[here]]:
                    problems.append(f"{where}: {here} imports only up to the {beside[here]} layer")
            elif there not in beside:
                if there not in rank:
                    problems.append(f"{where}: {there} is in no layer (add it to LAYERS)")
                elif here not in rank:
                    problems.append(f"{path.relative_to(root.parent)}: {here} is in no layer (add it to LAYERS)")
                elif rank[there] > rank[here]:
                    problems.append(f"{where}: the {layers[rank[there]][0]} layer is above the "
                                    f"{layers[rank[here]][0]} layer")
    return problems


def test_every_import_points_down_the_layer_order():
    problems = layer_violations(PACKAGE, LAYERS, BESIDE)
    assert not problems, "imports that point up the layer order:\n" + "\n".join(problems)


def test_every_top_level_name_has_a_layer():
    names = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    known = set(rank_of(LAYERS)) | set(BESIDE)
    assert names <= known, f"modules or packages in no layer: {sorted(names - known)}"


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_checker_catches_upward_imports(tmp_path):
    root = tmp_path / "pkg"
    layers = [("low", ("low",)), ("mid", ("mid",)), ("top", ("__init__",))]
    _write(root, "__init__.py", "from . import mid\n")
    _write(root, "low/__init__.py", "")
    _write(root, "low/_a.py", "def f():\n    from ..mid import thing  # a lazy upward import\n")
    _write(root, "mid/__init__.py", "from ..low import _a\nfrom pkg.diag import probe\n")
    _write(root, "diag/__init__.py", "from ..mid import x\nfrom ..low import y\n")
    problems = layer_violations(root, layers, {"diag": "low"})
    assert len(problems) == 3, problems
    assert any("low/_a.py:2 imports pkg.mid" in p and "above" in p for p in problems)
    assert any("mid/__init__.py:2 imports pkg.diag" in p and "only the top layer" in p for p in problems)
    assert any("diag/__init__.py:1 imports pkg.mid" in p and "only up to the low layer" in p for p in problems)


def test_the_checker_accepts_a_clean_tree(tmp_path):
    root = tmp_path / "pkg"
    _write(root, "__init__.py", "from .mid import thing\nfrom . import diag\n")
    _write(root, "low/__init__.py", "")
    _write(root, "mid/__init__.py", "from ..low import _a\nimport pkg.low\n")
    _write(root, "diag/__init__.py", "from ..low import y\n")
    assert layer_violations(root, [("low", ("low",)), ("mid", ("mid",)), ("top", ("__init__",))], {"diag": "low"}) == []


def _function_sizes(path: Path) -> list[tuple[str, int, int, bool]]:
    """(name, first line, lines of code without the docstring, carries the long-function mark) per function."""
    source = path.read_text()
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            start = body[0].end_lineno + 1 if ast.get_docstring(node) and len(body) > 1 else body[0].lineno
            text = lines[node.lineno - 1 : node.end_lineno]
            out.append((node.name, node.lineno, node.end_lineno - start + 1, any(LONG_FUNCTION_MARK in t for t in text)))
    return out


def test_modules_stay_small():
    large = [(str(p.relative_to(PACKAGE.parent)), n) for p in PACKAGE.rglob("*.py")
             if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not large, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {large}"


def test_long_functions_say_why():
    long = [f"{p.relative_to(PACKAGE.parent)}:{line} {name} ({n} lines)"
            for p in PACKAGE.rglob("*.py") for name, line, n, marked in _function_sizes(p)
            if n > MAX_FUNCTION_LINES and not marked]
    assert not long, (f"functions over {MAX_FUNCTION_LINES} lines of code without a '{LONG_FUNCTION_MARK}' "
                      f"comment: {long}")


@pytest.mark.parametrize("size, marked, ok", [(10, False, True), (61, False, False), (61, True, True)])
def test_the_size_rule_can_fail(tmp_path, size, marked, ok):
    body = "\n".join(f"    x{k} = {k}" for k in range(size))
    mark = f"    {LONG_FUNCTION_MARK} it is a table.\n" if marked else ""
    path = tmp_path / "m.py"
    path.write_text(f'def f():\n    """Doc."""\n{mark}{body}\n')
    (name, _line, n, has_mark), = _function_sizes(path)
    assert (n <= MAX_FUNCTION_LINES or has_mark) is ok


BLOCKING_HEADING = "Blocking calls"


def _talks_to_cuda(source: str) -> bool:
    return any(word in source for word in ("cupy", "stream", ".api.optix"))


def test_every_module_that_talks_to_cuda_lists_its_blocking_calls():
    """Each CUDA-facing module documents, under a "Blocking calls" heading, what may block the host and why."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        if path.name == "__init__.py" or not _talks_to_cuda(source):
            continue
        doc = ast.get_docstring(ast.parse(source)) or ""
        lines = doc.splitlines()
        heading = any(line.strip() == BLOCKING_HEADING and k + 1 < len(lines) and set(lines[k + 1].strip()) == {"-"}
                      for k, line in enumerate(lines))
        if not heading:
            missing.append(str(path.relative_to(PACKAGE.parent)))
    assert not missing, f"modules that talk to CUDA without a '{BLOCKING_HEADING}' section: {missing}"
