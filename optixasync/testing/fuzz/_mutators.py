"""Mutators of the fuzz targets: hostile values, JSON trees changed in place, bytes flipped, cut and spliced.

All randomness comes from the ``random.Random`` passed in, so a seed gives the same cases every time.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import copy
import random
from typing import Any

__all__ = ["HOSTILE_PATHS", "HOSTILE_VALUES", "hostile", "mutate_bytes", "mutate_json", "mutate_text"]

#: Paths a hostile asset names: out of its folder in every spelling, and odd files inside it.
HOSTILE_PATHS = [
    "../private/secret.bin", "%2e%2e/private/secret.bin", "..%2Fprivate%2Fsecret.bin", "sub/../../private/passwd",
    "/etc/passwd", "../../../../../../etc/passwd", "C:/Windows/win.ini", "file:///etc/passwd",
    "http://example.invalid/x.bin", "\\\\server\\share\\x", "..\\private\\passwd", "%00", "a%ZZb", "%c3%28",
    ".", "..", "", " ", "./", "t.bin\x00.png", "tex.png/..", "x" * 300, "%2e%2e%2f" * 20 + "etc/passwd",
    "data:application/octet-stream;base64,AAAA", "data:,abc", "data:image/png;base64,!!!!", "data:",
    "\ud800.bin", "x" * 5000, "sub/\udcff", "data:image/png;base64,JVBTLUFkb2JlLTMuMCBFUFNGLTMuMAo=",
]
#: Values that break assumptions: wrong types, extremes, huge counts, deep nesting.
HOSTILE_VALUES: list[Any] = [
    None, True, False, -1, 0, 1, 2, 3, 7, 255, 65535, 2**31, 2**32 + 1, 2**63, 10**30, -(2**31), 0.5, -0.0, 1e308,
    -1e308, 1e-320, "", "x", "NaN", "POSITION", "VEC3", "MAT4", "SCALAR", [], [0], [0, 0, 0], [1e308] * 3,
    [0, 0, 0, 0], [1] * 16, [None, None, None], [[[]]], {}, {"a": 1}, {"index": 0}, {"light": 0},
    {"attributes": {"POSITION": 0}}, list(range(64)), "x" * 5000,
]


def hostile(rng: random.Random) -> Any:
    """A hostile value (a copy: callers may nest it)."""
    pick = rng.random()
    if pick < 0.15:
        return rng.choice(HOSTILE_PATHS)
    if pick < 0.25:
        return rng.randrange(-3, 12)
    if pick < 0.30:
        return _nested(rng.randrange(1, 200))
    return copy.deepcopy(rng.choice(HOSTILE_VALUES))


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _containers(tree: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (path, dict or list) in ``tree``."""
    found = []
    if isinstance(tree, (dict, list)):
        found.append((path, tree))
        items = tree.items() if isinstance(tree, dict) else enumerate(tree)
        for key, value in items:
            found.extend(_containers(value, (*path, key)))
    return found


def mutate_json(doc: dict[str, Any], rng: random.Random, steps: int) -> dict[str, Any]:
    """A copy of ``doc`` with ``steps`` random edits: values replaced, keys removed or added, items duplicated."""
    doc = copy.deepcopy(doc)
    for _ in range(steps):
        containers = _containers(doc)
        _path, node = rng.choice(containers)
        if isinstance(node, dict):
            op = rng.random()
            if node and op < 0.55:
                node[rng.choice(list(node))] = hostile(rng)
            elif node and op < 0.7:
                del node[rng.choice(list(node))]
            else:
                key = rng.choice(["uri", "count", "children", "mesh", "camera", "byteOffset", "byteLength",
                                  "byteStride", "bufferView", "sparse", "extensions", "scale", "matrix",
                                  "translation", "rotation", "nodes", "scene", "type", "componentType", "mode",
                                  "indices", "material", "source", "sampler", "skin", "targets", "light"])
                node[key] = hostile(rng)
        elif node:
            op = rng.random()
            k = rng.randrange(len(node))
            if op < 0.5:
                node[k] = hostile(rng)
            elif op < 0.7:
                node.extend(copy.deepcopy(node[k]) for _ in range(rng.randrange(1, 4)))
            elif op < 0.85:
                del node[k]
            else:
                node.insert(k, hostile(rng))
        else:
            node.append(hostile(rng))
    return doc


def mutate_bytes(data: bytes, rng: random.Random, steps: int) -> bytes:
    """``data`` with ``steps`` random edits: bytes flipped or set to extremes, cut, repeated, spliced."""
    out = bytearray(data)
    for _ in range(steps):
        if not out:
            out += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
            continue
        op = rng.random()
        k = rng.randrange(len(out))
        if op < 0.35:
            out[k] ^= 1 << rng.randrange(8)
        elif op < 0.55:
            out[k] = rng.choice([0, 1, 0x7F, 0x80, 0xFF])
        elif op < 0.65:
            del out[k:]
        elif op < 0.75:
            end = min(len(out), k + rng.randrange(1, 64))
            out[k:k] = out[k:end] * rng.randrange(1, 8)
        elif op < 0.85:
            del out[k:k + rng.randrange(1, 32)]
        else:
            out[k:k] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    return bytes(out)


def mutate_text(text: str, rng: random.Random, steps: int, tokens: list[str]) -> str:
    """``text`` (lines of statements) with ``steps`` edits: tokens replaced by ``tokens`` or hostile paths,
    lines dropped, repeated, or added."""
    lines = text.splitlines()
    for _ in range(steps):
        op = rng.random()
        if not lines or op < 0.15:
            lines.insert(rng.randrange(len(lines) + 1), " ".join(rng.choice(tokens) for _ in range(rng.randrange(1, 6))))
            continue
        k = rng.randrange(len(lines))
        parts = lines[k].split(" ")
        if op < 0.6:
            parts[rng.randrange(len(parts))] = rng.choice(tokens + HOSTILE_PATHS[:12])
            lines[k] = " ".join(parts)
        elif op < 0.7:
            del lines[k]
        elif op < 0.8:
            lines[k:k] = [lines[k]] * rng.randrange(1, 50)
        elif op < 0.9:
            lines[k] = lines[k] + " " + " ".join(rng.choice(tokens) for _ in range(rng.randrange(1, 300)))
        else:
            lines[k] = lines[k] + "\\"
    return "\n".join(lines) + "\n"
