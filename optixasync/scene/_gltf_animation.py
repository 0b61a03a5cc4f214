"""glTF node animations: translation, rotation and scale channels, sampled in numpy.

A :class:`GltfAnimation` holds its channels (a node, a path and a sampler
each) and the rest pose of the nodes it moves; :meth:`GltfAnimation.sample`
evaluates every channel at a time, as the specification's appendix
defines the three interpolations:

* ``STEP``: the value of the last keyframe at or before the time;
* ``LINEAR``: linear between keyframes, spherical linear (slerp, along the
  shorter arc) for rotations;
* ``CUBICSPLINE``: the cubic Hermite spline through the keyframes with the
  file's in- and out-tangents (scaled by the keyframe interval), rotations
  normalised after.

Before the first keyframe a channel holds its first value, after the last
its last. ``weights`` channels (morph targets) and channels of nodes given by
``matrix`` are skipped with one warning each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._gltf_data import GltfDocument
from ._gltf_nodes import NodeLocals, trs_matrices

__all__ = ["INTERPOLATIONS", "GltfAnimation", "GltfChannel", "GltfSampler", "read_animations"]

#: glTF's sampler interpolations.
INTERPOLATIONS = ("LINEAR", "STEP", "CUBICSPLINE")
_PATHS = {"translation": 3, "rotation": 4, "scale": 3}


@dataclass(frozen=True, eq=False)
class GltfSampler:
    """Keyframes of one animated property.

    Attributes
    ----------
    input : numpy.ndarray
        (K,) float64 keyframe times, seconds, strictly increasing.
    output : numpy.ndarray
        (K, W) float64 values, or (3K, W) for ``CUBICSPLINE`` (in-tangent, value, out-tangent per keyframe).
    interpolation : str
        One of :data:`INTERPOLATIONS`.
    """

    input: np.ndarray
    output: np.ndarray
    interpolation: str

    def evaluate(self, time: float, rotation: bool = False) -> np.ndarray:
        """The value (W,) at ``time``; ``rotation``: quaternions (slerp for LINEAR, normalised results)."""
        times = self.input
        cubic = self.interpolation == "CUBICSPLINE"
        values = self.output[1::3] if cubic else self.output
        if time <= times[0] or len(times) == 1:
            return _unit(values[0]) if rotation else values[0].copy()
        if time >= times[-1]:
            return _unit(values[-1]) if rotation else values[-1].copy()
        k = int(np.searchsorted(times, time, side="right")) - 1
        span = times[k + 1] - times[k]
        u = (time - times[k]) / span
        if self.interpolation == "STEP":
            out = values[k].copy()
        elif cubic:
            out_tangent, in_tangent = self.output[3 * k + 2], self.output[3 * (k + 1)]
            u2, u3 = u * u, u * u * u
            out = ((2 * u3 - 3 * u2 + 1) * values[k] + span * (u3 - 2 * u2 + u) * out_tangent
                   + (-2 * u3 + 3 * u2) * values[k + 1] + span * (u3 - u2) * in_tangent)
        elif rotation:
            return _slerp(values[k], values[k + 1], u)
        else:
            out = (1.0 - u) * values[k] + u * values[k + 1]
        return _unit(out) if rotation else out


@dataclass(frozen=True, eq=False)
class GltfChannel:
    """One animated property: ``path`` (``translation``, ``rotation`` or ``scale``) of ``node``, keyed by ``sampler``."""

    node: int
    path: str
    sampler: GltfSampler


@dataclass(frozen=True, eq=False)
class GltfAnimation:
    """A glTF animation of node transforms.

    Attributes
    ----------
    index : int
        ``animations[index]`` of the file.
    name : str
    channels : tuple of GltfChannel
    start, end : float
        The first and last keyframe time over every channel, seconds.
    rest : dict of int to (translation, rotation, scale)
        The rest pose of each animated node (3, 4 and 3 float64), which a channel replaces part of.
    """

    index: int
    name: str
    channels: tuple[GltfChannel, ...]
    start: float
    end: float
    rest: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]

    @property
    def nodes(self) -> list[int]:
        """The nodes this animation moves, in ascending order."""
        return sorted(self.rest)

    def sample_trs(self, time: float) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each animated node's (translation, rotation, scale) at ``time`` seconds.

        Raises
        ------
        ValueError
            If ``time`` is not a finite number (NaN fell through every comparison to an ``IndexError``).
        """
        if isinstance(time, bool) or not isinstance(time, (int, float, np.integer, np.floating)) or \
                not math.isfinite(time):
            raise ValueError(f"an animation is sampled at a finite time in seconds, got {time!r:.40}")
        pose = {node: [t.copy(), r.copy(), s.copy()] for node, (t, r, s) in self.rest.items()}
        slot = {"translation": 0, "rotation": 1, "scale": 2}
        for channel in self.channels:
            pose[channel.node][slot[channel.path]] = channel.sampler.evaluate(float(time), channel.path == "rotation")
        return {node: (t, r, s) for node, (t, r, s) in pose.items()}

    def sample(self, time: float) -> dict[int, np.ndarray]:
        """The local 4x4 matrix (row-major, ``T * R * S``) at ``time`` seconds of every node the animation moves."""
        pose = self.sample_trs(time)
        nodes = list(pose)
        if not nodes:
            return {}
        matrices = trs_matrices(np.array([pose[n][0] for n in nodes]), np.array([pose[n][1] for n in nodes]),
                                np.array([pose[n][2] for n in nodes]))
        return dict(zip(nodes, matrices, strict=True))


def _unit(q: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0.0 else np.array([0.0, 0.0, 0.0, 1.0])


def _slerp(a: np.ndarray, b: np.ndarray, u: float) -> np.ndarray:
    """Spherical linear interpolation of unit quaternions along the shorter arc."""
    a, b = _unit(a), _unit(b)
    dot = float(np.dot(a, b))
    if dot < 0.0:
        b, dot = -b, -dot
    if dot > 0.9995:  # nearly the same rotation: linear, then normalised
        return _unit((1.0 - u) * a + u * b)
    theta = np.arccos(dot)
    return (np.sin((1.0 - u) * theta) * a + np.sin(u * theta) * b) / np.sin(theta)


def read_animations(doc: GltfDocument, locals_: NodeLocals) -> list[GltfAnimation]:
    """Every animation of the file; ValueError naming the animation, channel or sampler when malformed."""
    out = []
    for a, animation in enumerate(doc.items("animations")):
        name = animation.get("name") if isinstance(animation.get("name"), str) else ""
        label = f"animation {a}" + (f" ({name[:200]!r})" if name else "")
        samplers = animation.get("samplers") or []
        channels = animation.get("channels") or []
        if not (isinstance(samplers, list) and isinstance(channels, list)
                and all(isinstance(x, dict) for x in samplers + channels)):
            raise ValueError(f"{doc.file}: {label}: samplers and channels must be arrays of objects")
        read: dict[tuple[int, str], GltfSampler] = {}
        kept = []
        for c, channel in enumerate(channels):
            found = _channel(doc, locals_, channel, samplers, read, f"{label} channel {c}")
            if found is not None:
                kept.append(found)
        rest = {ch.node: (locals_.translation[ch.node].copy(), locals_.rotation[ch.node].copy(),
                          locals_.scale[ch.node].copy()) for ch in kept}
        start = min((float(ch.sampler.input[0]) for ch in kept), default=0.0)
        end = max((float(ch.sampler.input[-1]) for ch in kept), default=0.0)
        out.append(GltfAnimation(a, name[:200] or f"animation{a}", tuple(kept), start, end, rest))
    return out


def _channel(doc: GltfDocument, locals_: NodeLocals, channel: dict[str, Any], samplers: list[dict[str, Any]],
             read: dict[tuple[int, str], GltfSampler], label: str) -> GltfChannel | None:
    """One channel (None when skipped: no node, morph weights, a node given by ``matrix``)."""
    target = channel.get("target")
    if not isinstance(target, dict):
        raise ValueError(f"{doc.file}: {label}: target must be an object")
    path = target.get("path")
    if target.get("node") is None:
        return None  # the specification: a channel without a node is ignored (an extension animates something)
    node = doc.idx(target["node"], "nodes", f"{label}: target node")
    if path == "weights":
        doc.warn_once("morph-animation", f"{label} animates morph target weights: ignored (morph targets are)")
        return None
    if not isinstance(path, str) or path not in _PATHS:
        raise ValueError(f"{doc.file}: {label}: target path must be translation, rotation, scale or weights, got "
                         f"{str(path)[:32]!r}")
    if locals_.has_matrix[node]:
        doc.warn_once(f"matrix-animation:{node}", f"{label} animates node {node}, which is given by a matrix "
                      "(glTF forbids it): the channel is ignored")
        return None
    sampler_index = channel.get("sampler")
    if isinstance(sampler_index, bool) or not isinstance(sampler_index, int) or not 0 <= sampler_index < len(samplers):
        raise ValueError(f"{doc.file}: {label}: sampler is {str(sampler_index)[:16]}, out of range: the animation "
                         f"has {len(samplers)}")
    key = (sampler_index, path)
    if key not in read:
        read[key] = _sampler(doc, samplers[sampler_index], path, f"{label} sampler {sampler_index}")
    return GltfChannel(node, path, read[key])


def _sampler(doc: GltfDocument, sampler: dict[str, Any], path: str, label: str) -> GltfSampler:
    interpolation = sampler.get("interpolation", "LINEAR")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"{doc.file}: {label}: interpolation must be LINEAR, STEP or CUBICSPLINE, got "
                         f"{str(interpolation)[:32]!r}")
    times = doc.accessor(sampler.get("input"), f"{label} input", ("SCALAR",))[:, 0]
    width = _PATHS[path]
    values = doc.accessor(sampler.get("output"), f"{label} output", (f"VEC{width}",))
    if len(times) == 0 or (interpolation == "CUBICSPLINE" and len(times) < 2):
        raise ValueError(f"{doc.file}: {label}: needs at least {2 if interpolation == 'CUBICSPLINE' else 1} "
                         "keyframes")
    if not (np.diff(times) > 0).all():
        raise ValueError(f"{doc.file}: {label}: input times must be strictly increasing")
    expected = len(times) * (3 if interpolation == "CUBICSPLINE" else 1)
    if len(values) != expected:
        raise ValueError(f"{doc.file}: {label}: {len(values)} output values for {len(times)} keyframes "
                         f"({interpolation} needs {expected})")
    return GltfSampler(times, values, interpolation)
