"""MkDocs hook: the list of calls that may block the host, generated from the package's docstrings.

Every module of ``optixasync`` that talks to CUDA says in its module docstring
which of its calls may block the host, and why, in one of these forms::

    Blocking calls: none, except ...              (a paragraph)

    Calls that may block the host, and why        (a numpydoc-style section,
    --------------------------------------         up to the next heading)
    * ...

    Calls that may block the host, and why (...): (a paragraph ending with a
                                                   colon, and the list after it)
    * ...

    Nothing here blocks: ...                      (a paragraph)

This hook finds the modules by walking ``optixasync/**/*.py``, reads each file
as text (``ast.get_docstring``; nothing is imported, so the site builds
without CuPy or a GPU) and replaces the marker ``<!-- blocking-calls -->`` in a
page with one heading per module and its section.

The build fails (``PluginError``) when a module whose code uses CuPy or a
stream has no such section, so the page cannot go stale without notice.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

MARKER = "<!-- blocking-calls -->"
PACKAGE = "optixasync"

# "Blocking calls", or "Calls [in optixasync|here|...] that may block the host[, and why]".
_TITLE = re.compile(r"^\s*(?:blocking\s+calls\b|calls\b.*\bmay\s+block\b)", re.IGNORECASE)
_LABEL = re.compile(r"^\s*blocking\s+calls\s*:\s*", re.IGNORECASE)
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_NOTHING = re.compile(r"^\s*nothing\s+(?:here|in\s+this\s+module)\s+blocks\b", re.IGNORECASE)
_CUDA_NAME = re.compile(r"cupy|stream")

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(?P<tilde>~?)(?P<target>[^`]+)`")
_LITERAL = re.compile(r"``(?P<code>[^`]+)``")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def uses_cuda(tree: ast.Module) -> bool:
    """Whether the code names CuPy or a stream.

    Strings, comments and docstrings do not count, nor do names a module only
    imports to re-export (a package's ``__init__``); importing CuPy itself does.
    """
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.split(".")[0] == "cupy"]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module] if node.level == 0 and (node.module or "").split(".")[0] == "cupy" else []
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.keyword) and node.arg:
            names = [node.arg]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        if any(_CUDA_NAME.search(name) for name in names):
            return True
    return False


def _paragraph_end(lines: list[str], start: int) -> int:
    end = start + 1
    while end < len(lines) and lines[end].strip():
        end += 1
    return end


def _is_heading(lines: list[str], i: int) -> bool:
    return bool(lines[i].strip()) and i + 1 < len(lines) and bool(_UNDERLINE.match(lines[i + 1]))


def blocking_sections(docstring: str) -> list[str]:
    """The text of each "Blocking calls" section of a module docstring, in order.

    * A heading (``Blocking calls`` or ``Calls ... may block ...``) underlined
      with dashes: everything up to the next heading.
    * A paragraph starting with such a title (``Blocking calls: none.``,
      ``Calls here that may block the host: ...``); when the paragraph ends
      with a colon, the block after it (a list) belongs to it too.
    * A paragraph starting with ``Nothing here blocks``.
    """
    lines = docstring.splitlines()
    sections: list[str] = []
    i = 0
    while i < len(lines):
        if _TITLE.match(lines[i]) and _is_heading(lines, i):
            end = i + 2
            while end < len(lines) and not _is_heading(lines, end):
                end += 1
            sections.append("\n".join(lines[i + 2:end]).strip())
            i = end
        elif _TITLE.match(lines[i]) or _NOTHING.match(lines[i]):
            end = _paragraph_end(lines, i)
            block = lines[i:end]
            if block[-1].rstrip().endswith(":"):
                start = end
                while start < len(lines) and not lines[start].strip():
                    start += 1
                if start < len(lines) and not _is_heading(lines, start):
                    end = _paragraph_end(lines, start)
                    block += [""] + lines[start:end]
            text = "\n".join(block).strip()
            label = _LABEL.match(text)
            if label:
                text = text[label.end():]
                text = text[:1].upper() + text[1:]
            sections.append(text)
            i = end
        else:
            i += 1
    return [section for section in sections if section]


def to_markdown(text: str) -> str:
    """reST roles and literals to Markdown code; a blank line after a list where a paragraph follows."""
    text = _ROLE.sub(lambda m: "`" + (m["target"].rsplit(".", 1)[-1] if m["tilde"] else m["target"]) + "`", text)
    text = _LITERAL.sub(lambda m: "`" + m["code"] + "`", text)
    out: list[str] = []
    in_list = False
    for line in text.splitlines():
        bullet = line.lstrip().startswith(("* ", "- "))
        if in_list and line.strip() and not bullet and not line.startswith((" ", "\t")):
            out.append("")
            in_list = False
        if bullet:
            if not in_list and out and out[-1].strip():
                out.append("")
            in_list = True
        elif not line.strip():
            in_list = False
        out.append(line)
    return "\n".join(out)


def collect(package_dir: Path) -> dict[str, list[str]]:
    """Module name -> its blocking-call sections; raises if a CUDA module has none."""
    found: dict[str, list[str]] = {}
    missing: list[str] = []
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        name = module_name(path, package_dir)
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source, filename=str(path))
        except SyntaxError as exc:
            raise PluginError(f"blocking_calls: cannot parse {path}: {exc}") from exc
        sections = blocking_sections(ast.get_docstring(tree) or "")
        if sections:
            found[name] = sections
        elif uses_cuda(tree):
            missing.append(f"{name} ({path})")
    if missing:
        raise PluginError(
            "blocking_calls: these modules use CUDA but their docstring has no 'Blocking calls:' paragraph "
            "or 'Calls that may block the host, and why' section:\n  " + "\n  ".join(missing)
        )
    if not found:
        raise PluginError(f"blocking_calls: no module of {package_dir} documents its blocking calls")
    return found


def render(found: dict[str, list[str]], level: int = 3) -> str:
    hashes = "#" * level
    parts = []
    for name, sections in found.items():
        parts.append(f"{hashes} `{name}`\n\n" + "\n\n".join(to_markdown(s) for s in sections))
    return "\n\n".join(parts) + "\n"


_generated: str | None = None


def on_pre_build(config, **kwargs) -> None:
    global _generated
    root = Path(config.config_file_path).resolve().parent
    _generated = render(collect(root / PACKAGE))


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if MARKER not in markdown:
        return markdown
    if _generated is None:
        raise PluginError("blocking_calls: on_pre_build did not run")
    return markdown.replace(MARKER, _generated)
