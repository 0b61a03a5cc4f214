"""Environment lighting on the host: a constant radiance or an equirectangular HDR map, and reading map files.

An :class:`Environment` is radiance arriving from infinitely far away, in
every direction no geometry blocks: the same everywhere (``radiance``) or
looked up in a latitude-longitude image (``image``). Directions meet the
image as in the reference renderer's ``envmap`` emitter: +Y is up and row 0
is the top of the sky; the image's left (and right) edge faces -Z, a
quarter of the way across faces +X, the middle +Z, three quarters -X
(``kernels/pathtracer/environment.h`` states the mapping exactly).
:func:`~optixasync.scene.load_environment` (in
:mod:`optixasync.scene._environment_files`) reads map files.

Blocking calls
--------------
None: file reading and numpy on the host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._material import triple

__all__ = [
    "LUMINANCE_WEIGHTS",
    "Environment",
    "band_weights",
    "lookup_height",
    "lookup_image",
]
#: Luminance of linear RGB (Rec. 709 primaries), the weights the reference renderer uses.
LUMINANCE_WEIGHTS = (0.212671, 0.715160, 0.072169)
#: Rows the map lookup needs: a 2-row image is looked up with its last row repeated (the reference
#: renderer pads it so).
LOOKUP_MIN_ROWS = 3
#: How far ``to_world.T @ to_world`` may be from the identity.
ORTHONORMAL_TOLERANCE = 1e-5


def lookup_height(height: int) -> int:
    """Rows of the lookup image of a map of ``height`` rows (:data:`LOOKUP_MIN_ROWS` at least)."""
    return max(int(height), LOOKUP_MIN_ROWS)


def lookup_image(image: np.ndarray) -> np.ndarray:
    """``image`` (H, W, C) as the lookup sees it: an image of fewer than 3 rows gets its last row repeated."""
    rows = lookup_height(image.shape[0])
    if rows == image.shape[0]:
        return image
    extra = np.repeat(image[-1:], rows - image.shape[0], axis=0)
    return np.concatenate([image, extra], axis=0)


def band_weights(height: int) -> np.ndarray:
    """(height - 1, 2): how much each of its two rows weighs in the integral of the lookup over each band.

    Row ``i`` of a lookup image of ``height`` rows lies at ``theta_i = pi i / (height - 1)`` (row 0 at the
    zenith, the last at the nadir) and band ``i`` between rows ``i`` and ``i + 1``, where the lookup is linear
    in theta: ``(1 - t) a + t b`` with ``t = (theta - theta_i) / dtheta``. Over the band,
    ``integral of that * sin(theta) dtheta = a * w[i, 0] + b * w[i, 1]``, with
    ``w[i, 1] = integral of t sin(theta) dtheta`` and ``w[i, 0] = cos(theta_i) - cos(theta_i+1) - w[i, 1]``.
    A band's two weights sum to its solid angle over ``2 pi``; all of them sum to 2.
    """
    rows = int(height) - 1
    step = np.pi / rows
    theta = step * np.arange(rows + 1, dtype=np.float64)
    upper, lower = theta[:-1], theta[1:]
    band = 2.0 * np.sin(0.5 * (upper + lower)) * np.sin(0.5 * step)  # cos(upper) - cos(lower), without cancelling
    second = (np.sin(lower) - np.sin(upper) - step * np.cos(lower)) / step
    return np.stack([band - second, second], axis=1)


def _label(name: str) -> str:
    return f"environment {name!r}" if name else "environment"


@dataclass(eq=False)
class Environment:
    """Light from infinitely far away: a constant radiance, or an equirectangular (latitude-longitude) map.

    Attributes
    ----------
    radiance : tuple of 3 floats, optional
        A constant environment: the same linear RGB radiance (>= 0) from every direction.
    image : numpy.ndarray, optional
        An environment map: (H, W, 3) or (H, W, 4) float16, float32 or float64
        linear RGB radiance (a fourth channel is dropped), at least 2x2,
        equirectangular with row 0 at the top of the sky. Stored as a
        read-only, C-contiguous float32 (H, W, 3) copy.
    scale : float
        Multiplies the radiance (>= 0, finite).
    to_world : array_like, optional
        A 3x3 orthonormal matrix (or a 4x4 affine one, whose translation is
        ignored) taking the map's own directions to world ones, as the
        reference renderer's ``to_world`` of ``envmap``: the radiance arriving
        from world direction ``d`` is the map's at ``to_world.T @ d``. Stored
        as a read-only float64 (3, 3) array; None means the identity.
    name : str
        Named in error messages (``load_environment`` sets the file name).

    Exactly one of ``radiance`` and ``image`` is set. The fields are checked
    and normalised at creation; make a new Environment (``dataclasses.replace``)
    rather than assigning to them.

    Raises
    ------
    ValueError
        On both or neither of ``radiance`` and ``image``; on an image of the
        wrong shape or smaller than 2x2, with NaN/Inf or negative values (the
        message gives how many pixels and the first one's row and column); a
        negative radiance; a negative or non-finite scale; a ``to_world``
        that is not orthonormal.
    TypeError
        On an image that is not a numpy array of floats, a non-numeric scale
        or radiance, a name that is not a string.
    """

    radiance: tuple[float, float, float] | None = None
    image: np.ndarray | None = None
    scale: float = 1.0
    to_world: np.ndarray | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"environment name must be a string, got {type(self.name).__name__}")
        label = _label(self.name)
        if (self.radiance is None) == (self.image is None):
            which = "both" if self.radiance is not None else "neither"
            raise ValueError(f"{label}: give exactly one of radiance (a constant) and image (a map), got {which}")
        if self.radiance is not None:
            radiance = triple(self.radiance, f"{label}: radiance")
            if not all(v >= 0.0 for v in radiance):
                raise ValueError(f"{label}: radiance must be >= 0 per channel, got {radiance}")
            self.radiance = radiance
        else:
            self.image = _check_image(self.image, label)
        self.scale = _check_scale(self.scale, label)
        self.to_world = None if self.to_world is None else _check_to_world(self.to_world, label)

    @property
    def is_constant(self) -> bool:
        """Whether this is a constant environment (no map)."""
        return self.image is None

    @property
    def mean_luminance(self) -> float:
        """The mean over all directions (per unit solid angle) of the luminance of the radiance, scale included.

        Luminance is ``LUMINANCE_WEIGHTS`` applied to linear RGB. For a map
        it is the exact integral of its bilinear lookup (over a whole turn in
        u a row counts with its mean, and between rows :func:`band_weights`
        integrates), up to rounding; computed once per image.
        """
        if self.image is None:
            return float(np.dot(LUMINANCE_WEIGHTS, self.radiance)) * self.scale
        cached = self.__dict__.get("_image_luminance")
        if cached is None or cached[0] is not self.image:
            cached = (self.image, _mean_image_luminance(self.image))
            self.__dict__["_image_luminance"] = cached  # not a field: kept out of repr and replace()
        return cached[1] * self.scale

    @property
    def power(self) -> float:
        """The luminance of the radiance integrated over the sphere of directions, ``4 pi * mean_luminance``.

        In W m^-2 when the radiance is in W m^-2 sr^-1: the power the
        environment sends through a unit area facing every way at once. A
        scene of bounding radius ``r`` receives about :meth:`scene_power`,
        ``pi r^2`` times this, which compares with an area light's
        ``pi * area * luminance(emission)``: that is how a light is chosen.
        """
        return 4.0 * math.pi * self.mean_luminance

    def scene_power(self, radius: float) -> float:
        """``pi radius^2 * power``: the power that enters a sphere of this radius (a scene's bounding sphere)."""
        return math.pi * float(radius) ** 2 * self.power


def _mean_image_luminance(image: np.ndarray) -> float:
    """Solid-angle mean of the luminance of the bilinear lookup of ``image`` (H, W, 3) float32."""
    image = lookup_image(image)
    row_means = (image @ np.asarray(LUMINANCE_WEIGHTS, np.float32)).mean(axis=1, dtype=np.float64)
    weights = band_weights(image.shape[0])
    rows = np.zeros(image.shape[0])
    rows[:-1] += weights[:, 0]
    rows[1:] += weights[:, 1]
    return float(np.dot(rows, row_means)) / 2.0  # the weights sum to 2


def _pixel_error(label: str, mask: np.ndarray, what: str) -> ValueError:
    row, col = divmod(int(np.flatnonzero(mask)[0]), mask.shape[1])
    count = int(np.count_nonzero(mask))
    return ValueError(f"{label}: image has {count} pixel{'s' if count != 1 else ''} with {what}, "
                      f"first at (row {row}, col {col})")


def _check_image(image: Any, label: str) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"{label}: image must be a numpy array of shape (H, W, 3) or (H, W, 4), "
                        f"got {type(image).__name__}")
    if image.dtype not in (np.float16, np.float32, np.float64):
        raise TypeError(f"{label}: image must hold float16, float32 or float64 linear RGB, got {image.dtype}")
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise ValueError(f"{label}: image must have shape (H, W, 3) or (H, W, 4), got {image.shape}")
    if image.shape[0] < 2 or image.shape[1] < 2:
        raise ValueError(f"{label}: image is too small, {image.shape[0]} x {image.shape[1]} pixels "
                         "(rows x columns): an environment map needs at least 2 x 2")
    with np.errstate(over="ignore", invalid="ignore"):
        pixels = np.array(image[..., :3], dtype=np.float32, order="C")  # a copy: later edits are not seen
    nonfinite = ~np.isfinite(pixels).all(axis=2)
    if nonfinite.any():
        raise _pixel_error(label, nonfinite, "NaN or Inf values (or values beyond float32's range)")
    negative = (pixels < 0).any(axis=2)
    if negative.any():
        raise _pixel_error(label, negative, "negative values")
    pixels.flags.writeable = False
    return pixels


def _check_scale(value: Any, label: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{label}: scale must be a number, got {value!r}")
    scale = float(value)
    if not math.isfinite(scale) or scale < 0.0:
        raise ValueError(f"{label}: scale must be finite and >= 0, got {scale}")
    return scale


def _check_to_world(value: Any, label: str) -> np.ndarray:
    try:
        matrix = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{label}: to_world must be a 3x3 or 4x4 matrix of numbers, got {value!r}") from exc
    if matrix.shape == (4, 4):
        if not np.array_equal(matrix[3], [0.0, 0.0, 0.0, 1.0]):
            raise ValueError(f"{label}: a 4x4 to_world must be affine (last row 0 0 0 1), got {matrix[3]}")
        matrix = matrix[:3, :3].copy()  # a distant light has no position: the translation does not matter
    if matrix.shape != (3, 3):
        raise ValueError(f"{label}: to_world must be a 3x3 or 4x4 matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{label}: to_world must be finite, got {matrix.tolist()}")
    error = float(np.abs(matrix.T @ matrix - np.eye(3)).max())
    if error > ORTHONORMAL_TOLERANCE:
        raise ValueError(f"{label}: to_world must be orthonormal (a rotation, possibly mirrored; no scaling): "
                         f"to_world.T @ to_world is {error:.3g} away from the identity")
    matrix.flags.writeable = False
    return matrix
