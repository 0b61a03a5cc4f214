"""What a multi-GPU job is made of: tasks, sample ranges, frames, the GPU list.

Pure Python: splitting and naming work, no device involved.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..validation import as_int, parse_ascii_int

__all__ = ["FrameOutput", "FrameTask", "SampleRange", "Task", "batches", "parse_gpus", "split_samples"]

#: The path tracer's sample index is a 32-bit unsigned int.
_MAX_SAMPLES = 2**32 - 1


class Task(NamedTuple):
    """One unit of a job: ``payload`` at ``position`` in the job's list (the key of in-order, exactly-once delivery)."""

    position: int
    payload: Any


class SampleRange(NamedTuple):
    """The absolute samples ``first`` ... ``first + count - 1`` of every pixel of one image."""

    first: int
    count: int


class FrameTask(NamedTuple):
    """Frame ``index`` of a sequence: ``spp`` samples, ``update`` applied first, written to ``path`` (None: returned).

    ``update(tracer, index, frame)`` moves the scene to the frame (writes vertices, refits) on the
    frame's stream and returns the frame's camera, or None for the scene's own.
    """

    index: int
    spp: int
    path: str | None = None
    update: Any = None


class FrameOutput(NamedTuple):
    """A finished frame: its index, the file the worker wrote (or None) and the image (or None when written).

    ``image`` is sRGB ``uint8`` (height, width, 3) when the frame was not written to a file.
    """

    index: int
    path: Path | None
    image: Any = None


def split_samples(total: int, parts: int, *, first: int = 0, weights: Sequence[float] | None = None) -> list[SampleRange]:
    """Split the samples ``first`` ... ``first + total - 1`` into ``parts`` disjoint, consecutive ranges.

    Parameters
    ----------
    total : int
        Samples per pixel of the image.
    parts : int
        Ranges wanted; fewer come back when ``total < parts`` (no range is empty).
    first : int
        Absolute index of the first sample.
    weights : sequence of float, optional
        Relative speed of each part's worker (equal by default): the ranges are proportional to them.

    Raises
    ------
    ValueError
        On a non-positive total or part count, weights of the wrong length or not positive, or a range
        beyond the kernel's 32-bit sample index.
    """
    total, parts, first = as_int("total", total, 1), as_int("parts", parts, 1), as_int("first", first, 0)
    if first + total > _MAX_SAMPLES:
        raise ValueError(f"samples {first} ... {first + total - 1} exceed the kernel's 32-bit sample index")
    if weights is None:
        weights = [1.0] * parts
    weights = [float(w) for w in weights]
    if len(weights) != parts:
        raise ValueError(f"got {len(weights)} weights for {parts} parts")
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise ValueError(f"weights must be finite and positive, got {weights}")
    # Cumulative rounding: the boundaries are the rounded cumulative shares, so the counts add up exactly.
    scale = total / sum(weights)
    bounds, running = [0], 0.0
    for w in weights:
        running += w
        bounds.append(min(total, round(running * scale)))
    bounds[-1] = total
    return [SampleRange(first + lo, hi - lo) for lo, hi in zip(bounds, bounds[1:], strict=False) if hi > lo]


def parse_gpus(spec: Any, available: int) -> tuple[int, ...]:
    """The device ordinals of ``spec``: ``"all"``, ``"0,1"``, an int, or a sequence of ints.

    A sequence may name a device twice (two workers sharing it); the text form may not.

    Raises
    ------
    ValueError
        On an empty list, an unknown device (naming how many there are), a device named twice in the
        text form, or text that is not ``all`` or comma-separated integers.
    TypeError
        On anything else.
    """
    if isinstance(spec, str):
        text = spec.strip().lower()
        if text == "all":
            if available < 1:
                raise ValueError("no CUDA device is visible")
            return tuple(range(available))
        try:
            devices = tuple(parse_ascii_int(p.strip(), "a GPU") for p in text.split(","))
        except ValueError:
            raise ValueError(f"GPUs must be 'all' or comma-separated device numbers such as 0,1; got {spec!r}") from None
        twice = sorted({d for d in devices if devices.count(d) > 1})
        if twice:
            raise ValueError(f"GPU {twice[0]} is listed twice in {spec!r}")
    elif isinstance(spec, (int,)) and not isinstance(spec, bool):
        devices = (spec,)
    elif isinstance(spec, Sequence):
        devices = tuple(as_int("gpu", d, 0) for d in spec)
    else:
        raise TypeError(f"gpus must be 'all', an int or a sequence of ints, got {type(spec).__name__}")
    if not devices:
        raise ValueError("the GPU list is empty")
    for d in devices:
        if not 0 <= d < available:
            raise ValueError(f"there is no GPU {d}: {available} visible (0 ... {available - 1})" if available
                             else f"there is no GPU {d}: no CUDA device is visible")
    return devices


def batches(tasks: Sequence[Task], size: int) -> list[list[Task]]:
    """``tasks`` in consecutive groups of ``size`` (the last may be shorter)."""
    size = as_int("size", size, 1)
    return [list(tasks[k:k + size]) for k in range(0, len(tasks), size)]
