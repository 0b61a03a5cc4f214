"""The environment on the device: its map, the importance-sampling tables and the ``EnvironmentRecord``.

:class:`DeviceEnvironment` turns a host :class:`~optixasync.scene.Environment`
into what ``kernels/pathtracer/environment.h`` reads: the map as float4
texels, a marginal CDF over the bands between rows and, per band, a
conditional CDF over its cells, built on the GPU from the uploaded pixels,
and the record that points at them. :func:`environment_tables` builds the
same tables with numpy, for the CPU tests and the host build of the kernel;
both run :func:`_fill_tables`, once with numpy and once with CuPy.

The tables (environment.h derives the density from them): row ``i`` of the
lookup image lies at ``theta = pi i / (H - 1)``, column ``j``'s centre at
``u = (j + 1/2) / W``. Cell ``(i, j)`` spans rows ``i..i+1`` and column
centres ``j..j+1`` (``j + 1`` wrapping to 0): the four texels the bilinear
lookup blends inside it. Its weight is the luminance of the lookup
integrated over the cell's solid angle (exactly: the lookup is linear
between the texels, and :func:`~optixasync.scene._environment.band_weights`
integrates ``sin(theta)`` against it). A band whose cells all weigh 0 gets
a uniform conditional CDF (it is never picked); a black map gets weights of
the bands' solid angles (near-uniform over the sphere).

Blocking calls
--------------
None besides set-up allocations: :class:`DeviceEnvironment` uploads through
pinned staging (the first staging buffer of a size is a new
``cuMemHostAlloc``), allocates its arrays and CuPy's temporaries from the
stream-ordered pool and enqueues CuPy kernels on the set-up stream. Nothing
is read back or waited for. The first environment of a process compiles
CuPy's kernels (seconds, then cached on disk).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._structs import struct_dtype
from ..cuda import as_cupy_stream
from ..scene._environment import LUMINANCE_WEIGHTS, Environment, band_weights, lookup_height, lookup_image

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["ENVIRONMENT_RECORD", "DeviceEnvironment", "EnvironmentTables", "environment_record",
           "environment_tables"]

#: ``EnvironmentRecord`` of ``kernels/pathtracer/environment.h``.
ENVIRONMENT_RECORD: np.dtype = struct_dtype([
    ("texels", "ptr"), ("marginal_cdf", "ptr"), ("conditional_cdf", "ptr"),
    ("radiance", "float3"), ("scale", "float"),
    ("axis_x", "float3"), ("axis_y", "float3"), ("axis_z", "float3"),
    ("width", "uint"), ("height", "uint"),
])


class EnvironmentTables(NamedTuple):
    """What the device reads of a map, on the host (float32 numpy arrays).

    Attributes
    ----------
    texels : numpy.ndarray
        (H, W, 4): the lookup image (a 2-row map with its last row repeated), rgb and w = 0.
    marginal_cdf : numpy.ndarray
        (H,): CDF over the ``H - 1`` bands, from 0 to 1.
    conditional_cdf : numpy.ndarray
        (H - 1, W + 1): per band, the CDF over its ``W`` cells, from 0 to 1.
    """

    texels: np.ndarray
    marginal_cdf: np.ndarray
    conditional_cdf: np.ndarray


def _fill_tables(xp: Any, texels: Any, weights: Any, marginal: Any, conditional: Any) -> None:
    """Write the CDFs of the lookup image ``texels`` (H, W, 4) into ``marginal`` (H,) and ``conditional`` (H-1, W+1).

    ``xp`` is numpy or CuPy (then every array is on the device and the
    current stream runs the work: no value comes back to the host).
    ``weights`` is :func:`band_weights` (H - 1, 2) as float64. Sums are in float64.
    """
    width = texels.shape[1]
    w_r, w_g, w_b = LUMINANCE_WEIGHTS
    rgb = texels[..., :3].astype(xp.float64)
    lum = (rgb[..., 0] * w_r + rgb[..., 1] * w_g) + rgb[..., 2] * w_b
    right = xp.concatenate([lum[:, 1:], lum[:, :1]], axis=1)  # the texel of column j + 1, wrapping
    # the luminance integrated over each cell (without the common factor pi / W): the lookup is linear in u
    # along a row between the two centres, so each row contributes its two texels' mean
    cells = (lum[:-1] + right[:-1]) * weights[:, :1] + (lum[1:] + right[1:]) * weights[:, 1:]
    row_cdf = xp.cumsum(cells, axis=1)
    row_sum = row_cdf[:, -1]
    positive = row_sum > 0
    uniform = xp.arange(1, width + 1, dtype=xp.float64) / width
    conditional[:, 0] = 0.0
    conditional[:, 1:] = xp.where(positive[:, None], row_cdf / xp.where(positive, row_sum, 1.0)[:, None], uniform)
    conditional[:, -1] = 1.0  # exactly: the sampler relies on u < cdf[last] for every u < 1
    band_cdf = xp.cumsum(row_sum)
    total = band_cdf[-1]
    fallback = xp.cumsum(weights[:, 0] + weights[:, 1])  # a black map: the bands' solid angles
    marginal[0] = 0.0
    marginal[1:] = xp.where(total > 0, band_cdf / xp.where(total > 0, total, 1.0), fallback / fallback[-1])
    marginal[-1] = 1.0


def environment_tables(image: np.ndarray) -> EnvironmentTables:
    """The texels and CDFs the device reads for map ``image`` (H, W, 3 or 4), computed with numpy.

    ``image`` is an :attr:`Environment.image` (or any array of its form).
    The GPU build in :class:`DeviceEnvironment` runs the same arithmetic;
    its tables match these to the last bit or so (the order of its sums differs).
    """
    pixels = lookup_image(np.asarray(image, dtype=np.float32)[..., :3])
    height, width = pixels.shape[:2]
    texels = np.zeros((height, width, 4), np.float32)
    texels[..., :3] = pixels
    marginal = np.empty(height, np.float32)
    conditional = np.empty((height - 1, width + 1), np.float32)
    _fill_tables(np, texels, band_weights(height), marginal, conditional)
    return EnvironmentTables(texels, marginal, conditional)


def environment_record(environment: Environment, texels: int = 0, marginal_cdf: int = 0,
                       conditional_cdf: int = 0) -> np.ndarray:
    """The ``EnvironmentRecord`` of ``environment`` (a numpy scalar of :data:`ENVIRONMENT_RECORD`).

    The three addresses are those of the :class:`EnvironmentTables` arrays
    on the device (0 for a constant environment, which has none).
    """
    record = np.zeros((), ENVIRONMENT_RECORD)
    record["texels"], record["marginal_cdf"], record["conditional_cdf"] = texels, marginal_cdf, conditional_cdf
    record["radiance"] = environment.radiance if environment.radiance is not None else (0.0, 0.0, 0.0)
    record["scale"] = environment.scale
    to_world = environment.to_world if environment.to_world is not None else np.eye(3)
    record["axis_x"], record["axis_y"], record["axis_z"] = to_world[:, 0], to_world[:, 1], to_world[:, 2]
    if environment.image is not None:
        record["width"] = environment.image.shape[1]
        record["height"] = lookup_height(environment.image.shape[0])
    return record


class DeviceEnvironment:
    """The device side of an :class:`Environment`: texels, sampling tables and the record, built on the GPU.

    Parameters
    ----------
    ctx : Context
    environment : Environment
        Read at creation.
    stream : cupy.cuda.Stream or stream-like
        The set-up stream: the uploads and the table construction are
        enqueued on it, and launches that read the environment must be
        ordered after it (as after the rest of a scene's set-up).

    Attributes
    ----------
    environment : Environment
    texels, marginal_cdf, conditional_cdf : cupy.ndarray or None
        The :class:`EnvironmentTables` on the device (None for a constant environment).
    record : numpy.ndarray
        The host copy of the ``EnvironmentRecord``.
    """

    def __init__(self, ctx: Context, environment: Environment, stream: Any) -> None:
        if not isinstance(environment, Environment):
            raise TypeError(f"environment must be an optixasync.scene.Environment, got {type(environment).__name__}")
        self.ctx = ctx
        self.environment = environment
        stream = as_cupy_stream(stream)
        self.texels = self.marginal_cdf = self.conditional_cdf = None
        if environment.image is not None:
            self._build_tables(environment.image, stream)
        pointers = [int(a.data.ptr) for a in (self.texels, self.marginal_cdf, self.conditional_cdf)] \
            if self.texels is not None else [0, 0, 0]
        self.record = environment_record(environment, *pointers)
        self._record = ctx.upload(np.frombuffer(self.record.tobytes(), np.uint8), stream)
        ctx.track(self)

    def _build_tables(self, image: np.ndarray, stream: Any) -> None:
        """Upload ``image`` and build the texels and CDFs from it on ``stream`` (CuPy, no readback)."""
        import cupy

        height, width = image.shape[:2]
        rows = lookup_height(height)
        memory = self.ctx.memory
        pixels = self.ctx.upload(image, stream)  # (H, W, 3) float32
        weights = self.ctx.upload(band_weights(rows), stream)
        self.texels = memory.empty((rows, width, 4), np.float32, stream)
        self.marginal_cdf = memory.empty((rows,), np.float32, stream)
        self.conditional_cdf = memory.empty((rows - 1, width + 1), np.float32, stream)
        # CuPy's array operations run on its current stream; their temporaries come from the stream-ordered
        # pool on that stream (CuPy's own pool would cudaMalloc them and keep them: 671 MB after a 4096 x 2049
        # map), freed on the stream once the kernels that use them have run.
        with memory.scope(stream):
            self.texels[:height, :, :3] = pixels
            if rows > height:  # a 2-row map: the last row repeated
                self.texels[height:, :, :3] = pixels[height - 1:]
            self.texels[..., 3] = 0.0
            _fill_tables(cupy, self.texels, weights, self.marginal_cdf, self.conditional_cdf)
        # Held until the stream has run the kernels that read them: freed now, from outside the stream's
        # context, their memory could be handed out again before those kernels ran.
        self.ctx.deferred.after(stream, pixels, weights)

    @property
    def record_array(self) -> Any:
        """The device ``EnvironmentRecord``, as uint8 (what a rewrite of its scale writes into)."""
        if self._record is None:
            raise RuntimeError("this DeviceEnvironment is closed")
        return self._record

    @property
    def pointer(self) -> int:
        """Device address of the ``EnvironmentRecord``."""
        if self._record is None:
            raise RuntimeError("this DeviceEnvironment is closed")
        return int(self._record.data.ptr)

    @property
    def power(self) -> float:
        """:attr:`Environment.power` (host side): the luminance integrated over the sphere, for light selection."""
        return self.environment.power

    def close(self) -> None:
        """Release the device arrays (the caller waited for the launches that read them). Idempotent."""
        self.texels = self.marginal_cdf = self.conditional_cdf = None
        self._record = None
