"""The outputs a render pipeline can produce, by name: what each holds, its type and layout.

An integrator declares which outputs it writes (:attr:`Integrator.outputs`);
a stage declares which it reads and which it makes; a pipeline is asked for
outputs by name and works out what its integrator must write and which
program variant does it (each variant is a raygen of its own, so that a
launch carries no code for what it does not write). Every output is an
(height, width, 4) array of one frame slot, kept on the GPU (and read back
only when asked).

Blocking calls
--------------
None: names and bit masks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["OUTPUTS", "Output", "check_output_names", "output_mask"]


@dataclass(frozen=True)
class Output:
    """One output of a launch.

    Attributes
    ----------
    name : str
    bit : int
        Its ``OUTPUT_*`` bit in the kernel's variant mask (0: made by a stage, not by the integrator).
    dtype : numpy dtype
    meaning : str
    """

    name: str
    bit: int
    dtype: np.dtype
    meaning: str


#: The outputs known by name. ``image`` and ``radiance`` are of the running mean of the progressive accumulation
#: (or of a still's samples); ``albedo`` and ``normal`` are of the first hit, averaged the same way; ``denoised``
#: is made by the denoise stage.
OUTPUTS: dict[str, Output] = {o.name: o for o in (
    Output("image", 1 << 0, np.dtype(np.uint8), "sRGB of the mean radiance, 8-bit per channel, alpha 255"),
    Output("radiance", 1 << 1, np.dtype(np.float32), "mean radiance, linear RGB, w = 1"),
    Output("albedo", 1 << 2, np.dtype(np.float32), "mean albedo of the first hit, linear RGB in [0, 1], w = 1 "
           "(emitters: their emission clamped to [0, 1]; a miss: 0)"),
    Output("normal", 1 << 3, np.dtype(np.float32), "mean shading normal of the first hit, world space, facing the "
           "camera, xyz in [-1, 1], w = 0 (a miss: 0)"),
    Output("denoised", 0, np.dtype(np.float32), "the denoise stage's radiance, linear RGB, w = 1"),
)}


def check_output_names(names: Iterable[str] | str, what: str = "outputs") -> tuple[str, ...]:
    """``names`` (one name or several) as a tuple of known output names, in order, without repeats.

    Raises
    ------
    TypeError, ValueError
        On something that is not names, or an unknown name (the message lists the known ones).
    """
    if isinstance(names, str):
        names = (names,)
    try:
        names = tuple(names)
    except TypeError as exc:
        raise TypeError(f"{what} must be output names, got {names!r}") from exc
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must be output names (str), got {name!r}")
        if name not in OUTPUTS:
            raise ValueError(f"unknown output {name!r} in {what}: the outputs are {', '.join(OUTPUTS)}")
        if name not in out:
            out.append(name)
    return tuple(out)


def output_mask(names: Iterable[str]) -> int:
    """The kernel's variant mask of the integrator outputs among ``names``."""
    mask = 0
    for name in names:
        mask |= OUTPUTS[name].bit
    return mask
