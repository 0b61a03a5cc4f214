"""MkDocs hook: an API page shows exactly the names in its module's ``__all__``, the ones a user needs first.

mkdocstrings' ``filters: public`` already selects the names in ``__all__``, but
``show_if_no_docstring: false`` then drops those without a docstring of their
own (constants, dtypes, enums, type aliases, ``__version__``), and turning it on
everywhere would list every undocumented dunder method and attribute as well.
So each bare ``::: optixasync.xxx`` line becomes the module's docstring followed
by one ``:::`` block per name of its ``__all__`` (read from the source with
``ast``; nothing is imported), in this order: the names the page lists in its
front matter under ``api_lead`` (the user-facing classes and functions), then
the other classes, then the functions, then the constants and record layouts
(upper-case names), which used to open pages such as ``optixasync.render``.
Members of those members still go through the global filters; a class's
inherited members are shown when the page names them under ``api_inherited``
(a public class built from mixins, such as ``RenderPipeline``). A block that
already has options is left alone.

After rendering, every name so requested must have its anchor on the page:
a name griffe cannot resolve (say, re-exported from a module that no longer
defines it) fails the build instead of vanishing from the reference, and so
does an ``api_lead`` name that is not in ``__all__``.
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


def member_order(names: list[str], lead: list[str]) -> list[str]:
    """``lead`` first, then the classes, the functions and the constants of ``names`` (each in ``__all__`` order).

    The kind is read from the name, as PEP 8 writes it: ``UPPER_CASE`` (and dunders) a constant or
    record layout, ``CapWords`` a class (or a type alias), ``lower_case`` a function.
    """

    def rank(name: str) -> int:
        if name.startswith("__") or name.upper() == name:
            return 2
        return 0 if name[0].isupper() else 1

    rest = [name for name in names if name not in lead]
    return lead + sorted(rest, key=rank)  # sorted() is stable: __all__ order within each kind


_requested: dict[str, list[str]] = {}  # page source path -> "module.name" anchors it must have


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    root = Path(config.config_file_path).resolve().parent
    _requested[page.file.src_uri] = []

    def expand(match: re.Match) -> str:
        rest = markdown[match.end():]
        if re.match(r"\n[ \t]+\S", rest):  # the block has options of its own
            return match.group(0)
        ident = match["ident"]
        names = module_all(root, ident)
        if not names:
            return match.group(0)
        lead = list(page.meta.get("api_lead") or [])
        unknown = [name for name in lead if name not in names]
        if unknown:
            raise PluginError(f"api_members: {page.file.src_uri}: api_lead names {', '.join(unknown)}, "
                              f"which are not in __all__ of {ident}")
        _requested[page.file.src_uri] += [f"{ident}.{name}" for name in names]
        inherited = [str(name) for name in page.meta.get("api_inherited") or []]
        extra = f"\n      inherited_members: [{', '.join(inherited)}]" if inherited else ""
        blocks = [f"::: {ident}\n    options:\n      members: false"]
        for name in member_order(names, lead):
            blocks.append(f"::: {ident}.{name}\n    options:\n      show_root_heading: true\n"
                          f"      show_root_toc_entry: true\n      show_root_full_path: false\n      heading_level: 2"
                          f"{extra}")
        return "\n\n".join(blocks)

    return _DIRECTIVE.sub(expand, markdown)


def on_page_content(html: str, page, config, files, **kwargs) -> str:
    absent = [anchor for anchor in _requested.get(page.file.src_uri, []) if f'id="{anchor}"' not in html]
    if absent:
        raise PluginError(
            f"api_members: {page.file.src_uri}: these names are in __all__ but were not rendered "
            f"(griffe could not resolve them): {', '.join(absent)}"
        )
    return html
