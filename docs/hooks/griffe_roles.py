"""Griffe extension: Sphinx cross-reference roles in docstrings shown as code.

optixasync's numpydoc docstrings name other objects with Sphinx roles
(``:class:`~optixasync.Context```, ``:meth:`launch```). mkdocstrings renders
Markdown, where those would appear literally; this extension rewrites each
role to inline code with the name as written (the last component after a
``~``) before the docstrings are parsed. The source files are not changed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(?P<tilde>~?)(?P<target>[^`]+)`")


def rest_to_markdown(text: str) -> str:
    return _ROLE.sub(lambda m: "`" + (m["target"].rsplit(".", 1)[-1] if m["tilde"] else m["target"]) + "`", text)


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rest_to_markdown(obj.docstring.value)
