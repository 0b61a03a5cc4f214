"""The outputs a render pipeline can produce, by name: what each holds, its type and layout.

An integrator declares which outputs it writes (:attr:`Integrator.outputs`);
a stage declares which it reads and which it makes; a pipeline is asked for
outputs by name and works out what its integrator must write and which
program variant does it (each variant is a raygen of its own, so that a
launch carries no code for what it does not write). Every output is an
array of one frame slot, kept on the GPU (and read back only when asked):
(height, width, channels) for one camera, (views, height, width, channels)
for a batch of views (:class:`~optixasync.render.Views`); ``rays`` is (3,)
or (views, 3). Row 0 is the top of the image.

====================  =======  ========  ==================================================================
name                  dtype    channels  meaning (a miss: what a pixel whose ray hit nothing holds)
====================  =======  ========  ==================================================================
``image``             uint8    4         sRGB of the mean radiance, alpha 255
``radiance``          float32  4         mean radiance, linear RGB, w = 1
``albedo``            float32  4         mean albedo of the first hit, linear RGB in [0, 1], w = 1 (emitters:
                                         their emission clamped to [0, 1]; a miss: 0)
``normal``            float32  4         mean shading normal of the first hit, world space, facing the camera,
                                         w = 0 (a miss: 0)
``depth``             float32  1         camera-space z of the G-buffer sample's hit: the distance from the
                                         camera's plane along its forward axis (a miss: 0)
``distance``          float32  1         distance along the G-buffer sample's ray to its hit, from the eye
                                         (orthographic: from the film plane) (a miss: 0)
``position``          float32  3         world position of the hit (a world's own coordinates) (a miss: 0)
``geometric_normal``  float32  3         unit winding normal of the hit triangle, world space, not flipped
                                         towards the camera: it points to the triangle's front (a miss: 0)
``mesh_id``           uint32   1         index of the mesh hit in ``scene.meshes`` (an instance is a mesh)
                                         (a miss: 0xFFFFFFFF)
``primitive_id``      uint32   1         index of the triangle in its mesh (a miss: 0xFFFFFFFF)
``material_id``       uint32   1         index of the mesh's material among the scene's distinct materials,
                                         in order of first use (:func:`~optixasync.render.id_names`)
                                         (a miss: 0xFFFFFFFF)
``uv``                float32  2         texture coordinates of the hit (a miss, or a mesh without UVs: 0)
``motion``            float32  2         screen-space motion in pixels, x right and y down: the film position
                                         of the G-buffer sample minus that of the same surface point in the
                                         previous launch's view, placed by the previous instance transforms;
                                         a miss: the same for its direction (a pinhole or camera view), 0
                                         behind the previous view
``coverage``          float32  1         fraction of the samples whose camera ray hit a surface (alpha)
``spp``               uint32   1         samples in the pixel's mean (NaN or Inf samples are dropped)
``rays``              uint64   3         per launch and view: camera, bounce (BSDF-sampled) and shadow rays
                                         traced, added up over the launches of a frame
``denoised``          float32  4         the denoise stage's radiance, linear RGB, w = 1
====================  =======  ========  ==================================================================

The **G-buffer sample** of a pixel is the camera ray of its first sample in
the launch: at a uniform point of the pixel (``RenderOptions.jitter``, the
default) or at its centre (``jitter=False``, what analytic comparisons and
most vision datasets want). ``depth`` ... ``motion`` come from it; ``albedo``,
``normal`` and ``coverage`` are means over every sample, like the colour.

Blocking calls
--------------
None: names and bit masks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["G_SAMPLE_OUTPUTS", "OUTPUTS", "SINGLE_CAMERA_OUTPUTS", "SUMS_OUTPUTS", "VARIANT_PRIMARY",
           "VARIANT_VIEWS", "VARIANT_WORLDS", "VIEWS", "WORLDS", "Output", "check_output_names", "output_mask",
           "output_shape"]

#: Bits of a variant's mask beside its outputs' (``kernels/pathtracer/view_records.h``'s ``VariantBits``).
VARIANT_VIEWS, VARIANT_WORLDS, VARIANT_PRIMARY = 1 << 16, 1 << 17, 1 << 18
#: Flags an integrator's variant sets may hold beside output names: a batch's raygen, with worlds.
VIEWS, WORLDS = "+views", "+worlds"


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
    channels : int
        The last axis of its array.
    per_pixel : bool
        False for ``rays`` (3 counters per view, not an image).
    """

    name: str
    bit: int
    dtype: np.dtype
    meaning: str
    channels: int = 4
    per_pixel: bool = True


_F32, _U32 = np.dtype(np.float32), np.dtype(np.uint32)

#: The outputs known by name (the table of the module documentation).
OUTPUTS: dict[str, Output] = {o.name: o for o in (
    Output("image", 1 << 0, np.dtype(np.uint8), "sRGB of the mean radiance, 8-bit per channel, alpha 255"),
    Output("radiance", 1 << 1, _F32, "mean radiance, linear RGB, w = 1"),
    Output("albedo", 1 << 2, _F32, "mean albedo of the first hit, linear RGB in [0, 1], w = 1 "
           "(emitters: their emission clamped to [0, 1]; a miss: 0)"),
    Output("normal", 1 << 3, _F32, "mean shading normal of the first hit, world space, facing the "
           "camera, xyz in [-1, 1], w = 0 (a miss: 0)"),
    Output("depth", 1 << 4, _F32, "camera-space z of the G-buffer sample's hit (a miss: 0)", 1),
    Output("distance", 1 << 5, _F32, "distance along the G-buffer sample's ray to its hit (a miss: 0)", 1),
    Output("position", 1 << 6, _F32, "world position of the G-buffer sample's hit (a miss: 0)", 3),
    Output("geometric_normal", 1 << 7, _F32, "unit winding normal of the hit triangle, world space (a miss: 0)", 3),
    Output("mesh_id", 1 << 8, _U32, "index of the mesh hit in scene.meshes (a miss: 0xFFFFFFFF)", 1),
    Output("primitive_id", 1 << 9, _U32, "index of the triangle in its mesh (a miss: 0xFFFFFFFF)", 1),
    Output("material_id", 1 << 10, _U32, "index of the material among the scene's distinct materials "
           "(a miss: 0xFFFFFFFF)", 1),
    Output("uv", 1 << 11, _F32, "texture coordinates of the hit (a miss: 0)", 2),
    Output("motion", 1 << 12, _F32, "film position now minus in the previous view, pixels, x right, y down", 2),
    Output("coverage", 1 << 13, _F32, "fraction of the samples whose camera ray hit a surface", 1),
    Output("spp", 1 << 14, _U32, "samples in the pixel's mean (NaN/Inf samples dropped)", 1),
    Output("rays", 1 << 15, np.dtype(np.uint64), "camera, bounce and shadow rays traced, per view", 3, False),
    Output("denoised", 0, _F32, "the denoise stage's radiance, linear RGB, w = 1"),
)}

#: What the single-camera raygens write (``kernels/pathtracer.cu``); any other output takes a batch's raygen.
SINGLE_CAMERA_OUTPUTS = frozenset({"image", "radiance", "albedo", "normal"})
#: The outputs of the G-buffer sample.
G_SAMPLE_OUTPUTS = frozenset({"depth", "distance", "position", "geometric_normal", "mesh_id", "primitive_id",
                              "material_id", "uv", "motion"})
#: The outputs kept as running sums over the samples of an accumulation (the first-hit sums).
SUMS_OUTPUTS = frozenset({"albedo", "normal", "coverage"})


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
    """The kernel's variant mask of ``names``: their outputs' bits, and the flags' (:data:`VIEWS`, :data:`WORLDS`)."""
    mask = 0
    for name in names:
        mask |= VARIANT_VIEWS if name == VIEWS else VARIANT_WORLDS if name == WORLDS else OUTPUTS[name].bit
    return mask


def output_shape(name: str, width: int, height: int, views: int | None = None) -> tuple[int, ...]:
    """The array shape of output ``name``: (height, width, channels), with ``views`` (views, ...) in front."""
    output = OUTPUTS[name]
    shape = (height, width, output.channels) if output.per_pixel else (output.channels,)
    return shape if views is None else (views, *shape)
