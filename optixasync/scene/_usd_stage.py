"""Opening a USD stage as untrusted input: every layer checked before USD composes it.

:func:`open_stage` walks the root layer's sublayers, references and payloads
(those inside variants too) before the stage is composed: each asset path is
resolved against the layer naming it and must lead to a regular file inside
the asset's folder (or :attr:`LoadLimits.allowed_folders
<optixasync.scene.LoadLimits>`) whose size is within ``max_file_bytes``;
only then is that layer opened. A path that names no file here is an error
before USD could look for it elsewhere (on its search paths). The prims the
composed stage will hold are counted over the layers by dynamic programming
(a prim referenced *n* times counts *n* times, so a small file whose prims
each reference the previous one twice is refused before USD composes
2^depth prims), and so is the nesting of composition arcs. Once the stage is
composed, the layers it used are checked again.

USD reports a malformed layer through ``pxr.Tf.ErrorException``; it
becomes a ``ValueError`` naming the file and the prim USD names.

Blocking calls
--------------
None: file reading on the host.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .._warnings import warn
from ..errors import AssetPathError, LoadLimitError, MissingExtraError
from ._files import OUTSIDE, AssetFiles, is_file
from ._limits import LoadBudget, LoadLimits

__all__ = ["MAX_ARC_DEPTH", "USD_SUFFIXES", "UsdDocument", "open_stage", "pxr_modules", "usd_errors"]

#: Warnings one load gives at most.
MAX_WARNINGS = 32
#: File suffixes of USD layers (case-insensitive).
USD_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")
#: How deep composition arcs (a reference whose target references another, ...) may nest (at most
#: ``max_node_depth`` too).
MAX_ARC_DEPTH = 64
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?![/\\])|^[A-Za-z][A-Za-z0-9+.-]+://")
#: The prim-spec fields of composition arcs that bring prims.
_ARC_KEYS = frozenset({"references", "payload", "inheritPaths", "specializes"})
_TF_MESSAGE = re.compile(r" : '(?P<message>.*)'\s*$", re.S)


def pxr_modules() -> ModuleType:
    """The ``pxr`` package (Pixar's ``usd-core``); MissingExtraError naming the ``usd`` extra without it."""
    try:
        import pxr
        from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdLux, UsdShade  # noqa: F401 (loads the schemas)
    except ImportError as exc:
        raise MissingExtraError("reading USD files", "usd-core", "usd") from exc
    return pxr


@contextmanager
def usd_errors(file: str, what: str = "malformed USD layer") -> Iterator[None]:
    """Turn ``pxr.Tf.ErrorException`` raised inside into a ValueError naming ``file`` (and the prim USD names)."""
    from pxr import Tf

    try:
        yield
    except Tf.ErrorException as exc:
        text = str(exc).strip()
        found = _TF_MESSAGE.search(text)
        message = (found["message"] if found else text).strip()
        raise ValueError(f"{file}: {what}: {message[:400]}") from None


@dataclass
class UsdDocument:
    """One load: the file, its limits and byte budget, the files it may read, its warnings and its stage.

    Attributes
    ----------
    path : Path
    limits : LoadLimits
    files : AssetFiles
    stage : pxr.Usd.Stage or None
    layers : list
        The layers opened by :func:`open_stage` (held so that USD's registry keeps them while it composes).
    """

    path: Path
    limits: LoadLimits
    files: AssetFiles = field(init=False)
    stage: Any = None
    layers: list[Any] = field(default_factory=list)
    warned: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.files = AssetFiles(self.path, self.limits)

    @property
    def file(self) -> str:
        return str(self.path)

    @property
    def budget(self) -> LoadBudget:
        return self.files.budget

    def warn_once(self, key: str, message: str) -> None:
        """Warn ``message`` (prefixed by the file) once per ``key``; at most 32 warnings a load."""
        if key in self.warned or len(self.warned) > MAX_WARNINGS:
            return
        self.warned.add(key)
        if len(self.warned) > MAX_WARNINGS:
            message = f"more than {MAX_WARNINGS} warnings: the rest are not shown"
        warn(f"{self.file}: {message}")

    def asset_path(self, reference: str, anchor: Any, element: str) -> Path:
        """The real path of an asset path (a texture), anchored at the layer ``anchor``, checked to lie inside.

        Raises
        ------
        AssetPathError
            Outside the allowed folders, a URL, or not a regular file.
        FileNotFoundError
            No such file.
        """
        from pxr import Sdf

        owner = anchor.realPath or anchor.identifier if anchor is not None else self.file
        if _SCHEME.match(reference) or "\0" in reference:
            raise AssetPathError(owner, element, reference, "only relative file paths are read")
        resolved = Sdf.ComputeAssetPathRelativeToLayer(anchor, reference) if anchor is not None else reference
        outer = _package(resolved)
        real = os.path.realpath(outer)
        if not self.files.inside(real):
            raise AssetPathError(owner, element, reference, OUTSIDE)
        if not os.path.exists(real):
            raise FileNotFoundError(f"{owner}: {element}: file not found: {reference!r}")
        if not is_file(Path(real)):
            raise AssetPathError(owner, element, reference, "it is not a regular file")
        if "[" in resolved:
            raise AssetPathError(owner, element, reference, "files inside a .usdz package are not read as textures")
        return Path(real)


def _package(resolved: str) -> str:
    """The file part of a package-relative path ``x.usdz[inner.usda]`` (the path itself otherwise)."""
    return resolved.split("[", 1)[0] if resolved.endswith("]") and "[" in resolved else resolved


def open_stage(doc: UsdDocument) -> Any:
    """The composed ``Usd.Stage`` of ``doc.path``, every layer checked first (see the module's docstring).

    Raises
    ------
    AssetPathError
        A sublayer, reference, payload or layer leading outside the allowed folders (a ``ValueError``).
    FileNotFoundError
        A layer it names is missing.
    LoadLimitError
        Too many layers or prims (``max_nodes``), arcs nested too deep, a layer over ``max_file_bytes``.
    ValueError
        A malformed layer or a cycle of references (naming the file and prim).
    """
    pxr = pxr_modules()
    root = _open_layer(doc, str(doc.path), None, "the file")
    pending = [root]
    seen = {root.identifier: root}
    while pending:
        layer = pending.pop()
        for reference in layer.GetCompositionAssetDependencies():
            if not reference:  # an internal reference (a prim path of the same layer stack)
                continue
            target = _dependency(doc, layer, reference)
            if target.identifier not in seen:
                seen[target.identifier] = target
                pending.append(target)
                doc.budget.check(len(seen), "max_nodes", "the layers (sublayers, references and payloads)")
    doc.layers = list(seen.values())
    total = PrimCounter(doc, seen).stage_prims(root)
    doc.budget.charge(total * 512, "the composed prims")  # about what USD holds per composed prim
    with usd_errors(doc.file, "cannot compose the stage"):
        stage = pxr.Usd.Stage.Open(root, pxr.Usd.Stage.LoadAll)
    for layer in stage.GetUsedLayers():  # defence in depth: nothing composed from elsewhere
        real = layer.realPath
        if real and not layer.anonymous and not doc.files.inside(os.path.realpath(_package(real))):
            raise AssetPathError(doc.file, "a layer the stage uses", layer.identifier, OUTSIDE)
    for error in stage.GetCompositionErrors()[:4]:
        doc.warn_once(f"composition:{str(error)[:80]}", f"composition error: {str(error)[:300]}")
    doc.stage = stage
    return stage


def _dependency(doc: UsdDocument, layer: Any, reference: str) -> Any:
    """The layer an asset path of ``layer`` names, after checking where it leads."""
    from pxr import Sdf

    owner = layer.realPath or layer.identifier
    element = "a sublayer, reference or payload"
    if _SCHEME.match(reference) or "\0" in reference:
        raise AssetPathError(owner, element, reference, "only relative file paths are read")
    resolved = Sdf.ComputeAssetPathRelativeToLayer(layer, reference)
    real = os.path.realpath(_package(resolved))
    if not doc.files.inside(real):
        raise AssetPathError(owner, element, reference, OUTSIDE)
    if not os.path.exists(real):
        raise FileNotFoundError(f"{owner}: {element}: file not found: {reference!r}")
    if not is_file(Path(real)):
        raise AssetPathError(owner, element, reference, "it is not a regular file")
    if not real.lower().endswith(USD_SUFFIXES):
        raise AssetPathError(owner, element, reference, f"it is not a USD layer ({', '.join(USD_SUFFIXES)})")
    return _open_layer(doc, resolved if "[" in resolved else real, owner, reference)


def _open_layer(doc: UsdDocument, path: str, owner: str | None, element: str) -> Any:
    """Open (or re-read) the layer ``path`` after checking its size."""
    from pxr import Sdf

    size = os.stat(_package(path)).st_size
    doc.files.check_size(size, element if owner is None else f"{element} (named by {owner})")
    shown = path if owner is None else f"{owner}: {element}"
    with usd_errors(shown):
        layer = Sdf.Layer.Find(path)
        if layer is not None and not layer.dirty:
            layer.Reload(True)  # a layer held elsewhere in the process: read what is on disk now
        elif layer is None:
            layer = Sdf.Layer.FindOrOpen(path)
    if layer is None:
        raise ValueError(f"{shown}: USD cannot read this layer")
    return layer


class PrimCounter:
    """Upper bounds of the prims a stage composes, counted over its layers' prim specs.

    A prim spec counts once, plus what each of its references, payloads, inherits and specializes brings
    (the target's count, once per arc), and its variants' specs count too (all of them, whichever is
    selected). A target's specs are the sorted path strings equal to it or below it (``P/...``, ``P{...``),
    found by bisection.
    Counts saturate just above ``max_nodes``; arcs nest at most :data:`MAX_ARC_DEPTH` deep.
    """

    def __init__(self, doc: UsdDocument, layers: dict[str, Any]) -> None:
        self.doc = doc
        self.layers = layers
        self.cap = doc.limits.max_nodes + 1
        self.memo: dict[tuple[str, str], int] = {}
        self.active: set[tuple[str, str]] = set()
        self.indices: dict[str, tuple[list[str], list[str], list[Any]]] = {}

    def stage_prims(self, root: Any) -> int:
        total = self.layer_prims(root, 0)
        if total >= self.cap:
            raise LoadLimitError(self.doc.file, "the prims of the composed stage (a prim referenced n times counts "
                                 "n times)", "max_nodes", self.doc.limits.max_nodes)
        return total

    def layer_prims(self, layer: Any, depth: int) -> int:
        key = (layer.identifier, "/")
        if key in self.memo:
            return self.memo[key]
        self._enter(key, layer, depth)
        paths, arc_paths, arc_specs = self.index(layer)
        total = len(paths) + self.arcs(layer, arc_specs, 0, len(arc_specs), depth)
        for sub in layer.subLayerPaths:
            target = self._layer(layer, sub)
            if target is not None:
                total += self.layer_prims(target, depth + 1)
        return self._leave(key, total)

    def index(self, layer: Any) -> tuple[list[str], list[str], list[Any]]:
        """A layer's prim paths (sorted strings, variants' included), and those of its specs with arcs and the specs.

        One ``Traverse`` and one info-key query per prim spec: walking ``nameChildren`` costs several times more.
        """
        key = layer.identifier
        if key not in self.indices:
            from pxr import Sdf

            found: list[Any] = []
            layer.Traverse(Sdf.Path.absoluteRootPath, found.append)
            prims = [p for p in found
                     if (p.IsPrimPath() or p.IsPrimVariantSelectionPath()) and not p.IsAbsoluteRootPath()]
            self.doc.budget.charge(len(prims) * 64, f"the prim specs of {layer.identifier}")
            with_arcs = []
            for path in prims:
                spec = layer.GetPrimAtPath(path)
                if spec is not None and not _ARC_KEYS.isdisjoint(spec.ListInfoKeys()):
                    with_arcs.append((str(path), spec))
            with_arcs.sort(key=lambda item: item[0])
            self.indices[key] = (sorted(str(p) for p in prims), [a for a, _ in with_arcs], [b for _, b in with_arcs])
        return self.indices[key]

    def target_prims(self, layer: Any, path: Any, depth: int) -> int:
        """The prims an arc to ``path`` in ``layer`` brings (its default prim, or every root, for an empty path)."""
        if path.isEmpty:
            default = layer.defaultPrim
            if not default:
                return self.layer_prims(layer, depth + 1)
            target = "/" + default
        else:
            target = str(path)
        key = (layer.identifier, target)
        if key in self.memo:
            return self.memo[key]
        paths, arc_paths, arc_specs = self.index(layer)
        self._enter(key, layer, depth)
        total = 0
        for lo_key, hi_key in ((target, target + "\0"), (target + "/", target + "0"), (target + "{", target + "|")):
            total += bisect.bisect_left(paths, hi_key) - bisect.bisect_left(paths, lo_key)
            total += self.arcs(layer, arc_specs, bisect.bisect_left(arc_paths, lo_key),
                               bisect.bisect_left(arc_paths, hi_key), depth + 1)
        return self._leave(key, total)

    def arcs(self, layer: Any, specs: list[Any], lo: int, hi: int, depth: int) -> int:
        """What the arcs of ``specs[lo:hi]`` bring, saturated just above ``max_nodes``."""
        total = 0
        for s in specs[lo:hi]:
            keys = s.ListInfoKeys()
            if "references" in keys:
                for ref in s.referenceList.GetAddedOrExplicitItems():
                    total += self._arc(layer, ref.assetPath, ref.primPath, depth)
            if "payload" in keys:
                for ref in s.payloadList.GetAddedOrExplicitItems():
                    total += self._arc(layer, ref.assetPath, ref.primPath, depth)
            if "inheritPaths" in keys:
                for path in s.inheritPathList.GetAddedOrExplicitItems():
                    total += self._arc(layer, "", path, depth)
            if "specializes" in keys:
                for path in s.specializesList.GetAddedOrExplicitItems():
                    total += self._arc(layer, "", path, depth)
            if total >= self.cap:
                return self.cap
        return total

    def _arc(self, layer: Any, asset: str, path: Any, depth: int) -> int:
        target = layer if not asset else self._layer(layer, asset)
        return 0 if target is None else self.target_prims(target, path, depth)

    def _layer(self, layer: Any, asset: str) -> Any:
        from pxr import Sdf

        resolved = Sdf.ComputeAssetPathRelativeToLayer(layer, asset)
        found = Sdf.Layer.Find(resolved)
        return self.layers.get(found.identifier) if found is not None else None

    def _enter(self, key: tuple[str, str], layer: Any, depth: int) -> None:
        if key in self.active:
            raise ValueError(f"{layer.realPath or layer.identifier}: prim {key[1]}: its references (or payloads, "
                             "inherits, sublayers) form a cycle")
        deepest = min(MAX_ARC_DEPTH, self.doc.limits.max_node_depth)
        if depth > deepest:
            raise LoadLimitError(self.doc.file, "the nesting of references, payloads and sublayers",
                                 "max_node_depth", deepest, depth)
        self.active.add(key)

    def _leave(self, key: tuple[str, str], total: int) -> int:
        self.active.discard(key)
        self.memo[key] = min(total, self.cap)
        return self.memo[key]
