"""MkDocs hook: an API page shows exactly the names in its module's ``__all__``.

mkdocstrings' ``filters: public`` already selects the names in ``__all__``, but
``show_if_no_docstring: false`` then drops those without a docstring of their
own (constants, dtypes, enums, type aliases, ``__version__``), and turning it on
everywhere would list every undocumented dunder method and attribute as well.
So for each bare ``::: optixasync.xxx`` line this hook adds the mkdocstrings
option ``members:`` with the module's ``__all__``, read from the source with
``ast`` (nothing is imported). Members of those members still go through the
global filters. A block that already has options is left alone.

After rendering, every name so requested must have its anchor on the page:
a name griffe cannot resolve (say, re-exported from a module that no longer
defines it) fails the build instead of vanishing from the reference.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

_DIRECTIVE = re.compile(r"^:::[ \t]+(?P<ident>optixasync(?:\.[A-Za-z_][A-Za-z0-9_]*)*)[ \t]*$", re.MULTILINE)


def module_all(root: Path, ident: str) -> list[str] | None:
    """The names in ``__all__`` of module ``ident`` below ``root``, or None if it has no literal ``__all__``."""
    base = root.joinpath(*ident.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.is_file():
        raise PluginError(f"api_members: no module {ident} at {path}")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            names = (names or []) + list(ast.literal_eval(node.value))
    return names


_requested: dict[str, list[str]] = {}  # page source path -> "module.name" anchors it must have


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    root = Path(config.config_file_path).resolve().parent
    _requested[page.file.src_uri] = []

    def expand(match: re.Match) -> str:
        rest = markdown[match.end():]
        if re.match(r"\n[ \t]+\S", rest):  # the block has options of its own
            return match.group(0)
        names = module_all(root, match["ident"])
        if not names:
            return match.group(0)
        _requested[page.file.src_uri] += [f"{match['ident']}.{name}" for name in names]
        members = "".join(f"\n        - {name}" for name in names)
        return f"{match.group(0)}\n    options:\n      members:{members}"

    return _DIRECTIVE.sub(expand, markdown)


def on_page_content(html: str, page, config, files, **kwargs) -> str:
    absent = [anchor for anchor in _requested.get(page.file.src_uri, []) if f'id="{anchor}"' not in html]
    if absent:
        raise PluginError(
            f"api_members: {page.file.src_uri}: these names are in __all__ but were not rendered "
            f"(griffe could not resolve them): {', '.join(absent)}"
        )
    return html
