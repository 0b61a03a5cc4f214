"""glTF's node graph: local transforms of every node, and the placements of the scene's nodes, counted first.

A node's local matrix is its ``matrix`` or ``T * R * S``, read for every
node in one pass and multiplied out vectorised. The scene's roots and the
``children`` lists make a graph that glTF says is a forest; files that list a
node under several parents (a DAG) are read too, a node being *placed* once
per path from a root. :func:`count_placements` counts those paths and the
longest chain by dynamic programming over the graph, in time linear in its
size, before anything is walked: a 1 KB file whose nodes each list the next
one twice would otherwise be walked 2^depth times. :func:`place_nodes` then
lists the placements depth first and computes their world matrices level
by level, one batched product per level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import LoadLimitError
from ._gltf_data import GltfDocument
from ._gltf_json import index

__all__ = ["NodeLocals", "Placements", "count_placements", "node_locals", "place_nodes", "quaternion_matrices",
           "scene_roots"]

_NUMBER = (int, float)
#: The node fields of numbers and their lengths.
_SHAPES = {"translation": 3, "rotation": 4, "scale": 3, "matrix": 16}


@dataclass(frozen=True)
class NodeLocals:
    """Every node's local transform: its rest translation, rotation and scale, and its 4x4 local matrix.

    Attributes
    ----------
    translation, rotation, scale : numpy.ndarray
        (N, 3), (N, 4) (unit quaternions ``x, y, z, w``) and (N, 3) float64: the node's TRS (identity
        for a node given by ``matrix``).
    matrix : numpy.ndarray
        (N, 4, 4) float64, row-major: ``matrix`` (transposed from the file's column order) or T * R * S.
    has_matrix : numpy.ndarray
        (N,) bool: the node gives ``matrix`` (an animation may not move it).
    children : list of list of int
        Each node's children, checked to be node indices.
    """

    translation: np.ndarray
    rotation: np.ndarray
    scale: np.ndarray
    matrix: np.ndarray
    has_matrix: np.ndarray
    children: list[list[int]]


@dataclass(frozen=True)
class Placements:
    """The placements of the scene's nodes, depth first, children in file order.

    Attributes
    ----------
    node : numpy.ndarray
        (P,) int64: the node of each placement.
    parent : numpy.ndarray
        (P,) int64: the placement of its parent, -1 for a root.
    depth : numpy.ndarray
        (P,) int64: 0 for roots.
    world : numpy.ndarray
        (P, 4, 4) float64: object-to-world matrices (at rest).
    """

    node: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    world: np.ndarray

    def worlds(self, local: np.ndarray) -> np.ndarray:
        """(P, 4, 4) world matrices for the local node matrices ``local`` (N, 4, 4): one product per level."""
        world = np.empty((len(self.node), 4, 4))
        with np.errstate(all="ignore"):  # overflow becomes Inf, checked by the caller
            for level in range(int(self.depth.max(initial=-1)) + 1):
                at = np.flatnonzero(self.depth == level)
                nodes = self.node[at]
                world[at] = local[nodes] if level == 0 else world[self.parent[at]] @ local[nodes]
        return world


def _vector(value: Any, count: int) -> list[float] | None:
    """``value`` as ``count`` floats (not yet checked finite), or None when it is not a list of such numbers."""
    if type(value) is not list or len(value) != count:
        return None
    for v in value:
        if type(v) not in _NUMBER:
            return None
    try:
        return [float(v) for v in value]
    except OverflowError:  # an integer beyond float64's range
        return None


def quaternion_matrices(q: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations of unit quaternions ``q`` (N, 4) ``(x, y, z, w)``."""
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    out = np.empty((len(q), 3, 3))
    out[:, 0, 0] = 1 - 2 * (y * y + z * z)
    out[:, 0, 1] = 2 * (x * y - z * w)
    out[:, 0, 2] = 2 * (x * z + y * w)
    out[:, 1, 0] = 2 * (x * y + z * w)
    out[:, 1, 1] = 1 - 2 * (x * x + z * z)
    out[:, 1, 2] = 2 * (y * z - x * w)
    out[:, 2, 0] = 2 * (x * z - y * w)
    out[:, 2, 1] = 2 * (y * z + x * w)
    out[:, 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def normalized_quaternions(q: np.ndarray, file: str, what: str) -> np.ndarray:
    """``q`` (N, 4) scaled to unit length (files round them); ValueError naming ``what`` on a zero one."""
    with np.errstate(all="ignore"):
        norm = np.sqrt(np.einsum("ij,ij->i", q, q))
    bad = np.flatnonzero(~(norm > 0.0) | ~np.isfinite(norm))
    if len(bad):
        raise ValueError(f"{file}: {what} {int(bad[0])}: rotation quaternion is zero or not finite")
    return q / norm[:, None]


def trs_matrices(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(N, 4, 4) matrices T * R * S of translations (N, 3), unit quaternions (N, 4) and scales (N, 3)."""
    out = np.zeros((len(t), 4, 4))
    with np.errstate(all="ignore"):
        out[:, :3, :3] = quaternion_matrices(q) * s[:, None, :]
    out[:, :3, 3] = t
    out[:, 3, 3] = 1.0
    return out


def node_locals(doc: GltfDocument) -> NodeLocals:
    """The local transform of every node, read in one pass; ValueError naming the first bad node.

    Raises
    ------
    LoadLimitError
        Over ``max_nodes``.
    ValueError
        On a child that is not a node index, a malformed or non-finite ``matrix``/TRS, a matrix that is
        not affine, a zero rotation.
    """
    nodes = doc.items("nodes")
    doc.budget.check(len(nodes), "max_nodes", "the node count")
    n = len(nodes)
    children = _children(doc, nodes)
    given: dict[str, tuple[list[int], list[Any]]] = {}
    for key, size in _SHAPES.items():  # one pass per field: comprehensions over the nodes, no per-node calls
        pairs = [(k, node[key]) for k, node in enumerate(nodes) if node.get(key) is not None]
        for k, value in pairs:
            if type(value) is not list or len(value) != size:
                raise ValueError(f"{doc.file}: node {k} {key} must be {size} finite numbers")
        given[key] = ([k for k, _ in pairs], [value for _, value in pairs])
    t, q, s = np.zeros((n, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)), np.ones((n, 3))
    for key, target in (("translation", t), ("rotation", q), ("scale", s)):
        which, values = given[key]
        if which:
            target[which] = _numbers(doc.file, key, which, values)
    q = normalized_quaternions(q, doc.file, "node")
    matrix = trs_matrices(t, q, s)
    has_matrix = np.zeros(n, bool)
    which = np.array(given["matrix"][0], np.int64)
    if len(which):
        values = _numbers(doc.file, "matrix", given["matrix"][0], given["matrix"][1]).reshape(-1, 4, 4)
        values = values.transpose(0, 2, 1)  # the file's column-major order
        last = np.abs(values[:, 3] - [0.0, 0.0, 0.0, 1.0]).max(axis=1)
        if (last > 1e-6).any():
            k = int(which[np.argmax(last > 1e-6)])
            raise ValueError(f"{doc.file}: node {k}: matrix is not affine (its last row is "
                             f"{values[np.argmax(last > 1e-6), 3].tolist()})")
        values[:, 3] = (0.0, 0.0, 0.0, 1.0)
        matrix[which] = values
        has_matrix[which] = True
    return NodeLocals(t, q, s, matrix, has_matrix, children)


def _children(doc: GltfDocument, nodes: list[dict[str, Any]]) -> list[list[int]]:
    """Every node's ``children`` (empty lists where absent), checked to be arrays of node indices."""
    children = [[] if kids is None else kids for kids in (node.get("children") for node in nodes)]
    flat = [c for kids in children if type(kids) is list for c in kids]
    if all(type(kids) is list for kids in children) and (not flat or ({type(c) for c in flat} == {int} and
                                                                         min(flat) >= 0 and max(flat) < len(nodes))):
        return children
    for k, kids in enumerate(children):
        if type(kids) is not list:
            raise ValueError(f"{doc.file}: node {k}: children must be an array of node indices")
        for child in kids:
            index(child, nodes, f"{doc.file}: node {k} child")
    raise AssertionError("unreachable: some child was not a node index")  # pragma: no cover


def _numbers(file: str, key: str, nodes: list[int], values: list[list[Any]]) -> np.ndarray:
    """The nodes' ``key`` arrays as one float64 array, each checked to be finite numbers; ValueError naming a node."""
    out = None
    if {type(x) for value in values for x in value} <= {int, float}:
        try:
            out = np.array(values, np.float64)
        except OverflowError:  # an integer beyond float64's range
            out = None
    if out is not None and np.isfinite(out).all():
        return out
    for k, value in zip(nodes, values, strict=True):
        numbers = _vector(value, len(value))
        if numbers is None or not all(math.isfinite(x) for x in numbers):
            raise ValueError(f"{file}: node {k} {key} must be {len(value)} finite numbers")
    raise AssertionError("unreachable: some value was not finite")  # pragma: no cover


def scene_roots(doc: GltfDocument, children: list[list[int]]) -> list[int]:
    """The root nodes of the default scene (the first scene when none is named; every root without a scene)."""
    nodes = doc.items("nodes")
    scenes = doc.items("scenes")
    if doc.json.get("scene") is not None:
        scene = scenes[doc.idx(doc.json["scene"], "scenes", "scene")]
    elif scenes:
        scene = scenes[0]
    else:  # no scene: show every node that is nobody's child
        listed = {c for kids in children for c in kids}
        return [k for k in range(len(nodes)) if k not in listed]
    roots = scene.get("nodes")
    roots = [] if roots is None else roots
    if type(roots) is not list:
        raise ValueError(f"{doc.file}: scene nodes must be an array of node indices")
    if roots and {type(r) for r in roots} == {int} and min(roots) >= 0 and max(roots) < len(nodes):
        return roots
    return [index(r, nodes, f"{doc.file}: scene node") for r in roots]


def count_placements(doc: GltfDocument, roots: list[int], children: list[list[int]]) -> tuple[list[int], int]:
    """(placements of each node below and including it, longest chain) after checking them against the limits.

    Linear in the number of nodes and child links, whatever the count of paths: each node's count is
    ``1 + the sum of its children's``, saturated just above ``max_instances``.

    Raises
    ------
    ValueError
        On a cycle (naming a node on it).
    LoadLimitError
        On more placements than ``max_instances`` or a chain longer than ``max_node_depth``.
    """
    cap = doc.limits.max_instances + 1
    size = [0] * len(children)
    height = [0] * len(children)
    state = bytearray(len(children))  # 0 unseen, 1 on the current path, 2 done
    for root in roots:
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:  # iterative depth-first post-order: a deep chain needs no recursion
            node, next_child = stack[-1]
            kids = children[node]
            if next_child < len(kids):
                stack[-1] = (node, next_child + 1)
                child = kids[next_child]
                if state[child] == 1:
                    raise ValueError(f"{doc.file}: the node tree has a cycle through node {child}")
                if state[child] == 0:
                    state[child] = 1
                    stack.append((child, 0))
                continue
            stack.pop()
            state[node] = 2
            size[node] = min(cap, 1 + sum(size[c] for c in kids))
            height[node] = 1 + max((height[c] for c in kids), default=0)
    total = min(cap, sum(size[r] for r in roots))
    if total >= cap:
        raise LoadLimitError(doc.file, "node placements (a node listed under several parents counts once per path "
                             "from a scene root)", "max_instances", doc.limits.max_instances)
    depth = max((height[r] for r in roots), default=0)
    doc.budget.check(depth, "max_node_depth", "the longest chain of nodes")
    return size, total


def is_forest(roots: list[int], children: list[list[int]]) -> bool:
    """Whether the graph below ``roots`` is a forest: distinct roots nobody lists, every node listed at most once.

    Then every node reachable is placed once and no cycle is reachable, so the placements need no counting.
    """
    flat = [c for kids in children for c in kids]
    if len(set(roots)) != len(roots):
        return False
    if not flat:
        return True
    listed = np.bincount(np.array(flat, np.int64), minlength=len(children))
    return bool(listed.max() <= 1 and (not roots or listed[np.array(roots, np.int64)].max() == 0))


def place_nodes(doc: GltfDocument, locals_: NodeLocals, roots: list[int]) -> Placements:
    """Every placement of the scene's nodes, depth first, with its world matrix; counted first.

    Raises
    ------
    ValueError, LoadLimitError
        As :func:`count_placements`; on a world matrix that overflows (naming its node).
    """
    children = locals_.children
    forest = is_forest(roots, children)
    if not forest:  # a node under several parents: count the paths before walking them
        count_placements(doc, roots, children)
    if not any(children[r] for r in roots):  # roots only (a flat file): nothing to walk
        order = np.array([(r, -1, 0) for r in roots], np.int64).reshape(-1, 3)
    else:
        placed: list[tuple[int, int, int]] = []
        stack = [(r, -1, 0) for r in reversed(roots)]
        while stack:  # at most N placements in a forest, at most max_instances (counted) otherwise
            item = stack.pop()
            placed.append(item)
            kids = children[item[0]]
            if kids:
                here, level = len(placed) - 1, item[2] + 1
                stack.extend([(child, here, level) for child in reversed(kids)])
        order = np.array(placed, np.int64).reshape(-1, 3)
    if forest:
        doc.budget.check(len(order), "max_instances", "node placements")
        doc.budget.check(int(order[:, 2].max(initial=-1)) + 1, "max_node_depth", "the longest chain of nodes")
    doc.budget.charge(len(order) * 160, "the node placements")  # world matrix and bookkeeping per placement
    placements = Placements(order[:, 0].copy(), order[:, 1].copy(), order[:, 2].copy(), np.empty((0, 4, 4)))
    world = placements.worlds(locals_.matrix)
    bad = np.flatnonzero(~np.isfinite(world.reshape(len(world), 16)).all(axis=1))  # 16: also with no placement
    if len(bad):
        raise ValueError(f"{doc.file}: node {int(placements.node[bad[0]])}: its world transform is not finite "
                         "(its or its ancestors' scales or translations overflow)")
    return Placements(placements.node, placements.parent, placements.depth, world)
