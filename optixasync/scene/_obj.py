"""Scenes from Wavefront OBJ files with their MTL materials.

A small parser of its own rather than trimesh (the ``mesh`` extra): it needs
no optional package, keeps the file's per-corner ``v/vt/vn`` triples exactly
(a vertex is split only where its UV or normal differ), reports errors with
the file and line, and controls the UV convention: OBJ's ``v`` grows up the
image, ours (glTF's) down, so ``v`` becomes ``1 - v``.

What is read
------------
* ``v``, ``vt``, ``vn`` and polygonal ``f`` (fan-triangulated, negative
  indices relative to the end), grouped by ``usemtl``: one :class:`Mesh` per
  material. ``mtllib`` files are read relative to the OBJ; points, lines,
  curves, groups and smoothing groups are ignored.
* MTL: ``Kd`` (diffuse reflectance), ``map_Kd`` (an sRGB reflectance texture
  that replaces ``Kd``, as most exporters mean it), ``Ke`` and ``map_Ke``
  (emission; the texture replaces ``Ke``, or is scaled by it when given),
  ``d`` / ``Tr`` (opacity: below 1 the material is blended; 0, which some
  exporters write for opaque, is read as opaque with a warning), ``norm``
  (a tangent-space normal map) and the PBR extension's ``Pr`` / ``Pm``
  (roughness, metallic: the material becomes glTF's metallic-roughness
  model). Texture options ``-o``, ``-s`` (as a :class:`TextureTransform`) and
  ``-clamp`` are honoured, others skipped.
* Everything else (``Ka``, ``Ks``, ``Ns``, ``illum``, ``Ni``, bump maps) is
  ignored: the materials are diffuse unless ``Pr``/``Pm`` say otherwise. Every
  material is two-sided, because OBJ files rarely keep a consistent winding.

Hostile files
-------------
``mtllib`` names (relative to the OBJ) and texture files (relative to their
MTL) must lead inside the OBJ's folder (or :attr:`LoadLimits.allowed_folders`)
after following links, absolute paths included:
:class:`~optixasync.errors.AssetPathError` names the reference as written,
and nothing outside is opened. Each material library is read once. The
OBJ, MTL and texture files are bounded by ``max_file_bytes``, the parsed
statements (charged at 8 bytes per byte of text) and decoded textures by
``max_total_bytes``, texture pixels by ``max_image_pixels``
(:class:`~optixasync.errors.LoadLimitError`). Messages quote at most 80
characters of a statement.

Blocking calls
--------------
None: file reading on the host.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._warnings import warn
from ..validation import parse_ascii_float, parse_ascii_int
from ._files import AssetFiles, is_file
from ._frames import framing_camera, generate_tangents
from ._limits import LoadLimits, as_limits
from ._material import Material
from ._mesh import Mesh
from ._scene import Scene
from ._texture import Texture, TextureTransform, decode_image

__all__ = ["load_obj"]

#: Bytes charged to the load's budget per byte of OBJ or MTL text (the parsed statements and their numbers).
_PARSED_BYTES_PER_BYTE = 8

# Texture statement options and how many arguments each takes (at most; -o, -s, -t take 1 to 3 numbers).
_MAP_OPTIONS = {"-blendu": 1, "-blendv": 1, "-bm": 1, "-boost": 1, "-cc": 1, "-clamp": 1, "-imfchan": 1, "-mm": 2,
                "-o": 3, "-s": 3, "-t": 3, "-texres": 1, "-type": 1}


def load_obj(path: str | Path, *, limits: LoadLimits | dict[str, Any] | None = None) -> Scene:
    """Read an OBJ file and its MTL materials into a :class:`Scene`: one mesh per material.

    Meshes are named ``"{stem}:{material}"`` (the file's stem alone when it
    has one material). The camera is :func:`framing_camera` of the meshes.
    ``limits`` (:class:`LoadLimits`, a dict of its fields, or None for the
    defaults) bounds what the files may cost.

    Raises
    ------
    FileNotFoundError
        A missing OBJ, MTL or texture file (a texture's message names its material).
    AssetPathError
        An ``mtllib`` or texture leading outside the OBJ's folder (a ``ValueError``).
    LoadLimitError
        A file, its statements or a texture beyond ``limits`` (a ``ValueError``).
    OSError
        A file that cannot be read.
    ValueError
        A malformed statement (naming the file and line), a face index out of
        range, an unreadable texture, an invalid material value, a textured
        material on faces without ``vt``, or no faces at all.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"OBJ file not found: {str(path)!r}" if not path.exists()
                                else f"not a file: {str(path)!r}")
    reader = _ObjReader(path, as_limits(limits))
    reader.read()
    meshes = reader.meshes()
    return Scene(meshes, framing_camera(meshes))


def read_obj_meshes(path: Path, limits: LoadLimits, material: Material) -> list[Mesh]:
    """The faces of an OBJ file as meshes of ``material`` (one per ``usemtl`` group), opening no MTL file.

    Raises as :func:`load_obj`, less what its materials and textures raise.
    """
    reader = _ObjReader(path, limits, material)
    reader.read()
    return reader.meshes()


def _numbers(parts: list[str], low: int, high: int, where: str, statement: str) -> list[float]:
    if not low <= len(parts) <= high:
        count = f"{low}" if low == high else f"{low} to {high}"
        raise ValueError(f"{where}: {statement} needs {count} numbers, got {len(parts)}")
    try:
        values = [parse_ascii_float(v, finite=False) for v in parts]  # ASCII digits only
    except ValueError:
        raise ValueError(f"{where}: {statement} needs numbers, got {_shown(' '.join(parts))}") from None
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{where}: {statement} has a non-finite value: {_shown(' '.join(parts))}")
    return values


def _shown(text: str) -> str:
    """``text`` quoted for a message: at most 80 characters of it."""
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _statements(data: bytes) -> list[tuple[int, str, str]]:
    """(line number, keyword, rest) of every statement; comments dropped, ``\\`` continuations joined."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # older exporters write names in the local 8-bit encoding
    out = []
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        line = line.split("#", 1)[0].rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            keyword, *rest = line.split(None, 1)
            out.append((start, keyword, rest[0].strip() if rest else ""))
    return out


class _ObjReader:
    """Reads one OBJ file; with ``material`` every face gets that material and no ``mtllib`` is opened."""

    def __init__(self, path: Path, limits: LoadLimits, material: Material | None = None) -> None:
        self.path = path
        self.override = material
        self.file = str(path)
        self.files = AssetFiles(path, limits)
        self.read_libraries: set[str] = set()
        self.positions: list[list[float]] = []
        self.texcoords: list[list[float]] = []
        self.normals: list[list[float]] = []
        # Per material name (None: no usemtl yet): flat lists of corner indices, three corners per triangle.
        self.groups: dict[str | None, tuple[list[int], list[int], list[int]]] = {}
        self.materials: dict[str, dict[str, Any]] = {}  # name -> raw MTL statements, with their file and line
        self.textures: dict[tuple[Any, ...], Texture] = {}
        self.ignored: set[str] = set()

    def statements(self, path: Path, element: str, reference: str | None = None) -> list[tuple[int, str, str]]:
        """The statements of an OBJ or MTL file, its size and parse charged to the load's budget."""
        data = self.files.read(path, element, reference)
        self.files.budget.charge(len(data) * _PARSED_BYTES_PER_BYTE, f"{element}'s statements")
        return _statements(data)

    def read(self) -> None:
        current: str | None = None
        for number, keyword, rest in self.statements(self.path, "the OBJ file"):
            where = f"{self.file}:{number}"
            parts = rest.split()
            if keyword == "v":
                if len(parts) < 3:
                    raise ValueError(f"{where}: v needs 3 coordinates, got {len(parts)}")
                self.positions.append(_numbers(parts[:3], 3, 3, where, "v"))  # x y z [w | r g b]
            elif keyword == "vt":
                uv = _numbers(parts, 1, 3, where, "vt")
                self.texcoords.append([uv[0], uv[1] if len(uv) > 1 else 0.0])
            elif keyword == "vn":
                self.normals.append(_numbers(parts, 3, 3, where, "vn"))
            elif keyword == "f":
                self.face(parts, current, where)
            elif keyword == "usemtl":
                current = rest
            elif keyword == "mtllib" and self.override is None:
                for name, path in self.mtl_names(rest, f"line {number}"):
                    self.read_mtl(path, name, where)
            elif keyword not in ("o", "g", "s", "mg", "vp"):
                self.ignored.add(keyword)
        if self.ignored & {"l", "p", "curv", "curv2", "surf"}:
            warn(f"{self.file}: points, lines, curves and surfaces are ignored (only faces are read)")

    def mtl_names(self, rest: str, element: str) -> list[tuple[str, Path]]:
        """(name, real path) of the libraries an ``mtllib`` names, each checked to lie inside the folder."""
        # One name with spaces, if that file exists (inside the folder); else several names separated by spaces.
        whole = self.files.resolve(rest.replace("\\", "/"), element, named_by=self.file)
        if is_file(whole) or len(rest.split()) <= 1:
            return [(rest, whole)]
        return [(name, self.files.resolve(name.replace("\\", "/"), element, named_by=self.file))
                for name in rest.split()]

    def face(self, parts: list[str], material: str | None, where: str) -> None:
        if len(parts) < 3:
            raise ValueError(f"{where}: a face needs at least 3 corners, got {len(parts)}")
        corners = [self.corner(token, where) for token in parts]
        group = self.groups.setdefault(material, ([], [], []))
        for k in range(1, len(corners) - 1):  # fan: exact for the convex polygons exporters write
            for corner in (corners[0], corners[k], corners[k + 1]):
                group[0].append(corner[0])
                group[1].append(corner[1])
                group[2].append(corner[2])

    def corner(self, token: str, where: str) -> tuple[int, int, int]:
        fields = token.split("/")
        if len(fields) > 3 or not fields[0]:
            raise ValueError(f"{where}: malformed face corner {token!r} (expected v, v/vt, v//vn or v/vt/vn)")
        out = []
        for k, (items, kind) in enumerate(((self.positions, "vertex"), (self.texcoords, "texture coordinate"),
                                           (self.normals, "normal"))):
            if k >= len(fields) or not fields[k]:
                out.append(-1)
                continue
            try:
                value = parse_ascii_int(fields[k], signed=True)
            except ValueError:
                raise ValueError(f"{where}: malformed face corner {token!r}") from None
            index = value - 1 if value > 0 else len(items) + value
            if value == 0 or not 0 <= index < len(items):
                raise ValueError(f"{where}: face corner {token!r} refers to {kind} {value}, but {len(items)} are "
                                 "defined so far")
            out.append(index)
        return out[0], out[1], out[2]

    def read_mtl(self, path: Path, name: str, where: str) -> None:
        if str(path) in self.read_libraries:  # each library once, however often it is named
            return
        if not is_file(path):
            raise FileNotFoundError(f"{where}: material library not found: {_shown(name)}")
        self.read_libraries.add(str(path))
        current: dict[str, Any] | None = None
        for number, keyword, rest in self.statements(path, f"material library {_shown(name)}", name):
            line = f"{path}:{number}"
            if keyword == "newmtl":
                current = {"_where": line, "_dir": path.parent}
                self.materials[rest] = current
            elif current is None:
                raise ValueError(f"{line}: {_shown(keyword)} before any newmtl")
            elif keyword in ("Kd", "Ke"):
                if rest.split()[:1] in (["spectral"], ["xyz"]):
                    raise ValueError(f"{line}: {keyword} {rest.split()[0]} is not supported (only RGB)")
                values = _numbers(rest.split(), 1, 3, line, keyword)
                if len(values) == 2:
                    raise ValueError(f"{line}: {keyword} needs 1 or 3 numbers, got 2")
                current[keyword] = tuple(values * 3 if len(values) == 1 else values)
            elif keyword in ("d", "Tr", "Pr", "Pm"):
                current[keyword] = _numbers(rest.split(), 1, 1, line, keyword)[0]
            elif keyword in ("map_Kd", "map_Ke", "norm"):
                current[keyword] = (rest, line)

    def texture(self, spec: tuple[str, str], srgb: bool, material: str) -> Texture:
        rest, line = spec
        tokens = rest.split()  # not shlex: Windows paths' backslashes are separators, not escapes
        offset, scale, clamp = [0.0, 0.0], [1.0, 1.0], False
        k = 0
        while k < len(tokens) and tokens[k] in _MAP_OPTIONS:
            option, arity = tokens[k], _MAP_OPTIONS[tokens[k]]
            args = []
            k += 1
            while len(args) < arity and k < len(tokens) - 1:  # the last token is always the file name
                if option in ("-o", "-s", "-t", "-mm", "-boost", "-bm", "-texres"):
                    try:
                        args.append(parse_ascii_float(tokens[k], finite=False))
                    except ValueError:
                        break
                else:
                    args.append(tokens[k])
                k += 1
            if option in ("-o", "-s") and args:
                target = offset if option == "-o" else scale
                target[0] = args[0]
                target[1] = args[1] if len(args) > 1 else (1.0 if option == "-s" else 0.0)  # the MTL defaults
            elif option == "-clamp" and args:
                clamp = str(args[0]).lower() == "on"
        if k >= len(tokens):
            raise ValueError(f"{line}: texture statement without a file name: {_shown(rest)}")
        name = " ".join(tokens[k:]).replace("\\", "/")
        file = self.files.resolve(name, f"line {line.rpartition(':')[2]}, texture of material {_shown(material)}",
                                  base=str(self.materials[material]["_dir"]), named_by=line.rpartition(":")[0])
        # -o and -s act on OBJ's bottom-up v; ours runs top-down: v_ours' = s_v v_ours + (1 - s_v - o_v).
        transform = TextureTransform((offset[0], 1.0 - scale[1] - offset[1]), 0.0, (scale[0], scale[1]))
        wrap = ("clamp", "clamp") if clamp else ("repeat", "repeat")
        key = (str(file), srgb, wrap, transform)
        if key not in self.textures:
            if not is_file(file):
                raise FileNotFoundError(f"{line}: texture of material {_shown(material)} not found: {_shown(name)} "
                                        f"({os.path.relpath(file, self.files.folder)} in {self.files.folder})")
            element = f"{line}: texture {_shown(name)} of material {_shown(material)}"
            data = decode_image(self.files.read(file, element, name), self.file, self.files.limits, self.files.budget,
                                element)
            try:
                self.textures[key] = Texture(data, srgb=srgb, wrap=wrap, transform=transform, name=str(file))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{line}: material {_shown(material)}: {exc}") from None
        return self.textures[key]

    def material(self, name: str | None) -> Material:
        if self.override is not None:
            return self.override
        if name is None:
            return Material(two_sided=True, name="default")
        raw = self.materials.get(name)
        if raw is None:
            warn(f"{self.file}: material {_shown(name)} is not defined in any mtllib: a grey diffuse default is used")
            return Material(two_sided=True, name=name)
        fields: dict[str, Any] = {"name": name, "two_sided": True}
        kd = raw.get("Kd", (0.8, 0.8, 0.8))
        if "map_Kd" in raw:
            fields["reflectance_texture"] = self.texture(raw["map_Kd"], True, name)
            kd = (1.0, 1.0, 1.0)  # the texture is the colour; exporters write Kd beside it for viewers without one
        fields["reflectance"] = kd
        emission = raw.get("Ke", (0.0, 0.0, 0.0))
        if "map_Ke" in raw:
            fields["emission_texture"] = self.texture(raw["map_Ke"], True, name)
            if max(emission) <= 0.0:
                emission = (1.0, 1.0, 1.0)
        fields["emission"] = emission
        if "norm" in raw:
            fields["normal_texture"] = self.texture(raw["norm"], False, name)
        opacity = raw["d"] if "d" in raw else 1.0 - raw["Tr"] if "Tr" in raw else 1.0
        if opacity <= 0.0:  # some exporters write d 0 (or Tr 1) for opaque; an invisible material is never meant
            warn(f"{raw['_where']}: material {_shown(name)} has opacity 0 (d 0 or Tr 1): treated as opaque")
            opacity = 1.0
        if opacity < 1.0:
            fields.update(opacity=opacity, alpha_mode="blend")
        if "Pr" in raw or "Pm" in raw:
            fields.update(bsdf="metallic_roughness", roughness=raw.get("Pr", 1.0), metallic=raw.get("Pm", 0.0))
        try:
            return Material(**fields)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{raw['_where']}: {exc}") from None

    def meshes(self) -> list[Mesh]:
        groups = {name: corners for name, corners in self.groups.items() if corners[0]}
        if not groups:
            raise ValueError(f"{self.file} contains no faces")
        positions = np.asarray(self.positions, dtype=np.float64).reshape(-1, 3)
        texcoords = np.asarray(self.texcoords, dtype=np.float64).reshape(-1, 2)
        normals = np.asarray(self.normals, dtype=np.float64).reshape(-1, 3)
        out = []
        for name, (v, vt, vn) in groups.items():
            label = self.path.stem if len(groups) == 1 else f"{self.path.stem}:{name or 'default'}"
            material = self.material(name)
            corners = np.stack([np.asarray(v), np.asarray(vt), np.asarray(vn)], axis=1)
            unique, inverse = np.unique(corners, axis=0, return_inverse=True)
            uvs = self.attribute(unique[:, 1], texcoords, "vt", label)
            if uvs is not None:
                uvs = np.stack([uvs[:, 0], 1.0 - uvs[:, 1]], axis=1)  # OBJ's v grows up the image; ours down
            vertex_normals = self.attribute(unique[:, 2], normals, "vn", label)
            if material.textures and uvs is None:
                raise ValueError(f"{self.file}: the faces of material {name!r} have no texture coordinates (vt) but "
                                 f"the material has textures ({', '.join(material.textures)})")
            indices = np.ascontiguousarray(inverse.reshape(-1, 3), dtype=np.int32)
            tangents = None
            if material.normal_texture is not None:
                tangents = generate_tangents(positions[unique[:, 0]], indices, uvs, vertex_normals)
            try:
                out.append(Mesh(np.ascontiguousarray(positions[unique[:, 0]], dtype=np.float32), indices, material,
                                label, normals=_f32(vertex_normals), uvs=_f32(uvs), tangents=tangents))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{self.file}: material {name!r}: {exc}") from None
        return out

    def attribute(self, index: np.ndarray, values: np.ndarray, kind: str, label: str) -> np.ndarray | None:
        """Per-vertex ``values[index]``, or None when no corner has one; a warning when only some have."""
        present = index >= 0
        if not present.any():
            return None
        if not present.all():
            warn(f"{self.file}: mesh {_shown(label)}: some face corners have no {kind}: its {kind} are dropped")
            return None
        return values[index]


def _f32(array: np.ndarray | None) -> np.ndarray | None:
    return None if array is None else np.ascontiguousarray(array, dtype=np.float32)
