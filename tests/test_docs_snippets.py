"""Every Python block of README.md, the getting-started, install and notebook pages and docs/tutorials/*.md runs as written.

The fenced ```python blocks of one page run in order in one namespace (a page may build on its earlier blocks),
in a temporary working directory (they may write images). A block that touches the GPU (it creates a
``Context``, uses CuPy, or uses a name that an earlier GPU block bound) makes its page a GPU test; the page's
other blocks, which must then not depend on the GPU ones, also run on the CPU. Blocks are compiled under the
page's path with their line numbers in the page, so a failure points at the line of the Markdown file (and
syncwatch attributes stalls to it). Non-runnable text (shell commands, output samples) is fenced as ``bash``,
``console`` or ``text``, never ``python``. A block whose first line is ``# needs NAME (...)`` runs only where
the module ``NAME`` imports (Mitsuba, say, which no extra brings); elsewhere it is left out and reported.
The shell commands of the install and getting-started pages are checked by ``tests/test_docs_commands.py``.
"""

from __future__ import annotations

import ast
import gc
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from optixasync.errors import MissingExtraError

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *(ROOT / "docs" / name for name in ("getting-started.md", "install.md", "notebook.md")),
         *sorted((ROOT / "docs" / "tutorials").glob("*.md"))]
PYTHON_LANGUAGES = {"python", "py", "python3"}

#: Calls that touch CUDA, whatever the block's other contents.
GPU_CALLS = {"Context", "spin_gpu", "create_stream", "syncwatch", "assert_no_sync", "blocks",
             "render_triangle", "Farm", "LocalGPUs", "DaskGPUs"}
#: Calls that need CUPTI (the ``diagnostics`` extra).
CUPTI_CALLS = {"syncwatch", "assert_no_sync"}

_NEEDS = re.compile(r"^# needs (?P<module>[A-Za-z_][A-Za-z0-9_.]*)\b")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # line number, in the page, of the block's first code line
    source: str
    gpu: bool = False
    cupti: bool = False
    needs: str | None = None  # a module the block imports that no extra brings (``# needs NAME``)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def fenced_blocks(text: str) -> list[tuple[str, int, str]]:
    """``(language, first code line, code)`` of every fenced block of a Markdown text, in order."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        language = (opening["info"].split() or [""])[0].lower()
        first = i + 2  # 1-based number of the line after the opening fence
        body = []
        i += 1
        while i < len(lines):
            closing = _FENCE.match(lines[i])
            if (closing is not None and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence)
                    and not closing["info"].strip()):
                break
            body.append(lines[i][indent:] if not lines[i][:indent].strip() else lines[i])
            i += 1
        blocks.append((language, first, "\n".join(body)))
        i += 1
    return blocks


def _bound_names(tree: ast.AST) -> set[str]:
    """Names a block binds (assignments, loop and ``with`` targets, functions, classes), imports left out."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _called(tree: ast.AST) -> set[str]:
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                called.add(func.id)
            elif isinstance(func, ast.Attribute):
                called.add(func.attr)
    return called


def _uses_cupy(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "cupy":
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m == "cupy" or m.startswith("cupy.") for m in modules):
                return True
    return False


def classify(path: Path, text: str) -> list[Block]:
    """The Python blocks of a Markdown text, each marked as a GPU or CPU block."""
    out = []
    gpu_names: set[str] = set()  # names bound by GPU blocks: a later block using one touches the GPU too
    for language, line, source in fenced_blocks(text):
        if language not in PYTHON_LANGUAGES:
            continue
        tree = ast.parse(source, filename=f"{path}:{line}")
        called = _called(tree)
        loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        gpu = bool(called & GPU_CALLS) or _uses_cupy(tree) or bool(loaded & gpu_names)
        if gpu:
            gpu_names |= _bound_names(tree)
        needs = _NEEDS.match(source)
        out.append(Block(path, line, source, gpu=gpu, cupti=bool(called & CUPTI_CALLS),
                         needs=needs["module"] if needs else None))
    return out


BLOCKS = {path: classify(path, path.read_text(encoding="utf-8")) for path in PAGES}


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _run(blocks: list[Block], namespace: dict) -> None:
    left_out = [b for b in blocks if b.needs and not _importable(b.needs)]
    for block in blocks:
        if block in left_out:
            continue
        # Padding keeps the page's line numbers: tracebacks (and syncwatch) point at the Markdown file.
        code = compile("\n" * (block.line - 1) + block.source, str(block.path), "exec", dont_inherit=True)
        exec(code, namespace)
    if left_out:
        import warnings

        warnings.warn("left out (module missing): " + ", ".join(f"{b.where} needs {b.needs}" for b in left_out),
                      stacklevel=2)


def test_pages_exist_and_have_python_blocks():
    assert (ROOT / "README.md") in PAGES and ROOT / "docs" / "getting-started.md" in PAGES
    tutorials = {p.name for p in PAGES if p.parent.name == "tutorials"}
    assert {"index.md", "scheduler.md", "own-program.md", "accel.md", "path-tracer.md", "syncwatch.md"} <= tutorials
    for path, blocks in BLOCKS.items():
        if path.name not in ("index.md", "install.md"):
            assert blocks, f"{_page_id(path)} has no ```python block"


def test_fence_parser_keeps_line_numbers():
    text = "intro\n\n```python\na = 1\nb = 2\n```\n\n```text\nnot python\n```\n"
    assert fenced_blocks(text) == [("python", 4, "a = 1\nb = 2"), ("text", 9, "not python")]


def test_gpu_classification():
    text = ("```python\nimport numpy as np\nx = np.ones(3)\n```\n"
            "```python\nimport optixasync\nctx = optixasync.Context()\n```\n"
            "```python\ny = x * 2\n```\n"
            "```python\nsched = make(ctx)\n```\n"
            "```python\nsched.close()\n```\n"
            "```python\nimport cupy\n```\n"
            "```python\nwith syncwatch() as watch:\n    pass\n```\n")
    blocks = classify(ROOT / "README.md", text)
    assert [b.gpu for b in blocks] == [False, True, False, True, True, True, True]
    assert [b.cupti for b in blocks] == [False] * 6 + [True]


@pytest.mark.parametrize("path", PAGES, ids=_page_id)
def test_python_blocks_compile(path):
    """Every Python block is valid Python (GPU blocks included, checked here without a GPU)."""
    for block in BLOCKS[path]:
        compile(block.source, block.where, "exec", dont_inherit=True)
        assert not re.search(r"^\s*(\$|>>>) ", block.source, re.MULTILINE), (
            f"{block.where}: a shell or interpreter transcript fenced as python")


@pytest.mark.parametrize("path", [p for p in PAGES if any(not b.gpu for b in BLOCKS[p])], ids=_page_id)
def test_cpu_blocks_run(path, tmp_path, monkeypatch):
    """The blocks that need no GPU run anywhere, in order, in one namespace."""
    monkeypatch.chdir(tmp_path)
    _run([b for b in BLOCKS[path] if not b.gpu], {"__name__": "__main__"})


#: Modules of the optional extras (pyproject.toml) a page may import: missing on a machine, the page is skipped.
OPTIONAL_MODULES = {"anywidget", "aiohttp", "dask", "distributed", "imageio_ffmpeg", "mitsuba", "OpenEXR", "pyoidn",
                    "simplejpeg", "trimesh", "cupti", "nvtx", "rich", "matplotlib"}


def _close_contexts(namespace: dict) -> None:
    """Close the contexts a page left open (it failed before its last block)."""
    from optixasync.cuda import Context

    for value in list(namespace.values()):
        if isinstance(value, Context) and not value.closed:
            try:
                value.close()
            except Exception:  # the page's own failure is the one to report
                pass


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.gpu) for p in PAGES
                                  if any(b.gpu for b in BLOCKS[p])], ids=_page_id)
def test_page_runs_on_the_gpu(path, tmp_path, monkeypatch):
    """All blocks of the page, in order, in one namespace."""
    blocks = BLOCKS[path]
    if any(b.cupti for b in blocks):
        pytest.importorskip("cupti.cupti", reason="cupti-python is not installed: pip install -e '.[diagnostics]'")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    # Earlier tests' garbage (a dropped context's pinned pool) is freed now, not inside a page's watched loop,
    # where syncwatch would rightly report its cuMemFreeHost calls (seen once, in a full run).
    gc.collect()
    try:
        _run(blocks, namespace)
    except MissingExtraError as exc:  # a GPU machine without an optional package the page uses
        pytest.skip(f"{_page_id(path)} uses the {exc.extra!r} extra, whose {exc.package!r} is not installed here")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in OPTIONAL_MODULES:
            raise
        pytest.skip(f"{_page_id(path)} imports {exc.name!r}, an optional package not installed here")
    finally:
        _close_contexts(namespace)


def test_a_block_may_name_a_module_it_needs():
    text = "```python\n# needs mitsuba (pip install mitsuba)\nimport mitsuba\n```\n```python\nx = 1\n```\n"
    blocks = classify(ROOT / "README.md", text)
    assert [b.needs for b in blocks] == ["mitsuba", None]
    namespace: dict = {}
    if not _importable("mitsuba"):
        with pytest.warns(UserWarning, match="needs mitsuba"):
            _run(blocks, namespace)
        assert namespace["x"] == 1
