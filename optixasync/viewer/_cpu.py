"""A progressive CPU renderer in NumPy: shaded spheres on a checkered plane, for tests and ``view --cpu``.

Each frame casts ``spp`` jittered rays per pixel, analytically against four
spheres and the plane ``y = 0``: direct light from a sun of finite size (soft
shadows from jittered shadow rays), a sky for ambient light, and a mirror
sphere followed for up to ``max_depth - 1`` bounces. Samples accumulate while
camera, resolution and depth stay the same and restart when any changes; the
denoise setting applies a small blur that matters only while samples are few.
The camera follows the conventions of ``optixasync.scene.Camera`` (the field
of view spans the smaller image axis).

A sample is traced a tile of :data:`TILE_PIXELS` pixels at a time, so memory
stays a few tens of MiB at any resolution, and the source stops a frame's
samples as soon as the viewer's state changes: a settings message costs at
most what :data:`~optixasync.viewer.LIMITS` allows per frame, and never holds
the next change until a long frame ends.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..io import tonemap_srgb
from ._camera import CameraPose
from ._source import RenderLoop
from ._state import Settings, ViewState

__all__ = ["TILE_PIXELS", "CpuFrameSource", "CpuRenderer"]

#: Pixels traced at once: the working arrays of a tile (about 40 float32 values a ray) stay near 40 MiB.
TILE_PIXELS = 1 << 18

# center xyz, radius, albedo rgb, mirror reflectance
_SPHERES = np.array([
    [0.0, 1.0, 0.0, 1.0, 0.80, 0.25, 0.20, 0.0],
    [-2.2, 0.7, 0.8, 0.7, 0.90, 0.90, 0.90, 0.85],
    [2.0, 0.5, -0.6, 0.5, 0.20, 0.35, 0.85, 0.0],
    [0.7, 0.35, 1.9, 0.35, 0.95, 0.80, 0.20, 0.0],
], dtype=np.float32)
_SUN = np.array([0.45, 0.8, 0.35], np.float32) / np.linalg.norm([0.45, 0.8, 0.35])
_SUN_RADIUS = 0.08  # radians, jittered per sample: soft shadows that converge
_SUN_COLOR = np.array([1.9, 1.75, 1.55], np.float32)
_SKY_TOP, _SKY_HORIZON = np.array([0.25, 0.45, 0.85], np.float32), np.array([0.85, 0.9, 1.0], np.float32)
_FAR = np.float32(1e30)
_UP = np.array([[0.0], [1.0], [0.0]], np.float32)
#: The renderer's sRGB curve (optixasync.io.tonemap_srgb) at 4096 levels of the linear value.
_LUT = tonemap_srgb(np.repeat(np.linspace(0.0, 1.0, 4096, dtype=np.float32)[:, None], 3, axis=1))[:, 0]


def _normalize(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


class _Rays:
    """Rays as structure of arrays: origins ``o`` and unit directions ``d``, each (3, N) float32."""

    __slots__ = ("o", "d")

    def __init__(self, o: np.ndarray, d: np.ndarray) -> None:
        self.o, self.d = o, d


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _hit_spheres(rays: _Rays, t_best: np.ndarray, which: np.ndarray) -> None:
    """Nearest sphere hits, in place: ``t_best`` and ``which`` (sphere index; -1 none, -2 the plane)."""
    o, d = rays.o, rays.d
    for k, s in enumerate(_SPHERES):
        ox, oy, oz = o[0] - s[0], o[1] - s[1], o[2] - s[2]
        b = ox * d[0] + oy * d[1] + oz * d[2]
        disc = b * b - (ox * ox + oy * oy + oz * oz - s[3] * s[3])
        ok = disc > 0
        if not ok.any():
            continue
        t = -b - np.sqrt(np.maximum(disc, 0.0))
        closer = ok & (t > 1e-3) & (t < t_best)
        t_best[closer] = t[closer]
        which[closer] = k


def _trace(rays: _Rays) -> tuple[np.ndarray, np.ndarray]:
    """Nearest hits of the plane y = 0 and the spheres: ``(t, which)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(rays.d[1] < -1e-6, -rays.o[1] / rays.d[1], _FAR).astype(np.float32)
    which = np.where(t < _FAR, -2, -1).astype(np.int32)
    _hit_spheres(rays, t, which)
    return t, which


def _occluded(rays: _Rays) -> np.ndarray:
    """Whether each ray hits a sphere (the plane casts no shadow on anything above it)."""
    t = np.full(rays.o.shape[1], _FAR, np.float32)
    which = np.full(rays.o.shape[1], -1, np.int32)
    _hit_spheres(rays, t, which)
    return which >= 0


class CpuRenderer:
    """Renders and accumulates samples of the built-in scene for one camera and resolution at a time.

    Parameters
    ----------
    seed : int
        Seed of the sample jitter.
    """

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()  # the accumulation, between the render thread and linear() readers
        self._key: tuple[Any, ...] | None = None
        self._sum: np.ndarray | None = None
        self.samples = 0
        self._pool_size = -1
        self._pool: tuple[np.ndarray, np.ndarray] = (np.empty(0), np.empty(0))

    @staticmethod
    def default_camera() -> CameraPose:
        """A view of the whole scene."""
        return CameraPose((0.0, 2.2, 7.5), (0.0, 0.7, 0.0), (0.0, 1.0, 0.0), 40.0)

    def reset_if_changed(self, camera: CameraPose, settings: Settings) -> None:
        """Drop the accumulated samples when camera, resolution or depth differ from theirs."""
        key = (camera, settings.width, settings.height, settings.max_depth)
        if key != self._key:
            with self._lock:
                self._key = key
                self._sum = np.zeros((settings.height, settings.width, 3), np.float32)
                self.samples = 0

    def add_samples(self, camera: CameraPose, settings: Settings, spp: int,
                    stop: Callable[[], bool] | None = None) -> bool:
        """Accumulate ``spp`` samples per pixel (restarting first if the view changed); whether all were added.

        ``stop`` is asked between tiles: when it says True the sample in progress is dropped (a partial
        sample never enters the image) and the call returns False.
        """
        self.reset_if_changed(camera, settings)
        assert self._sum is not None
        for _ in range(spp):
            sample = self._sample(camera, settings.width, settings.height, settings.max_depth, stop)
            if sample is None:
                return False
            with self._lock:
                self._sum += sample
                self.samples += 1
        return True

    def linear(self, denoise: bool = False) -> np.ndarray:
        """The mean of the samples in linear RGB, (H, W, 3) float32 (a new array; safe from any thread)."""
        with self._lock:
            assert self._sum is not None
            linear = self._sum / max(self.samples, 1)
        return self._blur(linear) if denoise else linear

    def image(self, denoise: bool = False) -> np.ndarray:
        """The mean of the samples as sRGB, (H, W, 4) uint8 with alpha 255."""
        linear = self.linear(denoise)
        h, w, _ = linear.shape
        out = np.empty((h, w, 4), np.uint8)
        idx = np.clip(linear * 4095.0, 0.0, 4095.0).astype(np.int32)
        out[..., :3] = _LUT[idx]
        out[..., 3] = 255
        return out

    @staticmethod
    def _blur(x: np.ndarray) -> np.ndarray:
        """A separable [1 2 1] / 4 blur (edges clamped)."""
        p = np.pad(x, ((1, 1), (1, 1), (0, 0)), mode="edge")
        rows = 0.25 * p[:-2] + 0.5 * p[1:-1] + 0.25 * p[2:]
        return 0.25 * rows[:, :-2] + 0.5 * rows[:, 1:-1] + 0.25 * rows[:, 2:]

    def _pools(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Random pixel jitter (2, 2n) and sun directions (3, 2n); each sample uses a random window of n."""
        if self._pool_size != n:
            jitter = self._rng.random((2, 2 * n), np.float32)
            a, r = self._rng.random((2, 2 * n), np.float32)
            a *= np.float32(2 * math.pi)
            r = np.sqrt(r) * np.float32(_SUN_RADIUS)
            tangent = _normalize(np.cross(_SUN, [0.0, 0.0, 1.0])).astype(np.float32)
            bitangent = np.cross(_SUN, tangent).astype(np.float32)
            sun = _SUN[:, None] + tangent[:, None] * (np.cos(a) * r) + bitangent[:, None] * (np.sin(a) * r)
            self._pool = (jitter, (sun / np.sqrt(_dot(sun, sun))).astype(np.float32))
            self._pool_size = n
        return self._pool

    def _primary_rays(self, camera: CameraPose, width: int, height: int, jitter: np.ndarray, first: int) -> _Rays:
        """Primary rays of the pixels ``first ... first + n - 1`` (row-major), ``n`` the jitter's length."""
        eye = np.asarray(camera.eye, np.float32)
        w_axis = _normalize(np.asarray(camera.target, np.float32) - eye)
        u_axis = _normalize(np.cross(w_axis, np.asarray(camera.up, np.float32)))
        v_axis = np.cross(u_axis, w_axis)
        t = math.tan(math.radians(camera.fov) / 2.0)
        tan_x, tan_y = (t * width / height, t) if width >= height else (t, t * height / width)
        n = jitter.shape[1]
        pixel = np.arange(first, first + n, dtype=np.int64)
        sx = (np.float32(2.0 * tan_x / width) * ((pixel % width).astype(np.float32) + jitter[0]) - np.float32(tan_x))
        sy = (np.float32(tan_y) - np.float32(2.0 * tan_y / height) * ((pixel // width).astype(np.float32)
                                                                       + jitter[1]))
        d = w_axis[:, None] + u_axis[:, None] * sx + v_axis[:, None] * sy
        d /= np.sqrt(_dot(d, d))
        return _Rays(np.repeat(eye[:, None], n, axis=1), d.astype(np.float32, copy=False))

    def _sample(self, camera: CameraPose, width: int, height: int, max_depth: int,
                stop: Callable[[], bool] | None = None) -> np.ndarray | None:
        """One sample of every pixel, tile by tile; None when ``stop`` said so between tiles."""
        n = width * height
        tile = min(n, TILE_PIXELS)
        jitter_pool, sun_pool = self._pools(tile)
        out = np.empty((3, n), np.float32)
        for first in range(0, n, tile):
            if stop is not None and first and stop():
                return None
            count = min(tile, n - first)
            k = int(self._rng.integers(0, tile + 1))
            out[:, first:first + count] = self._tile(camera, width, height, max_depth, first,
                                                     jitter_pool[:, k:k + count], sun_pool[:, k:k + count])
        return out.T.reshape(height, width, 3)

    def _tile(self, camera: CameraPose, width: int, height: int, max_depth: int, first: int, jitter: np.ndarray,
              sun: np.ndarray) -> np.ndarray:
        rays = self._primary_rays(camera, width, height, jitter, first)
        color, mirror, albedo, normal, origin = _shade(rays, sun)
        alive = np.arange(jitter.shape[1])
        weight: np.ndarray | None = None
        for _ in range(max_depth - 1):
            bounce = mirror > 0
            if not bounce.any():
                break
            w = mirror[bounce] * albedo[:, bounce]
            weight = w if weight is None else weight[:, bounce] * w
            alive, normal, d = alive[bounce], normal[:, bounce], rays.d[:, bounce]
            rays = _Rays(origin[:, bounce], d - 2.0 * _dot(d, normal) * normal)
            contribution, mirror, albedo, normal, origin = _shade(rays, sun[:, alive])
            color[:, alive] += weight * contribution
        return color


def _shade(rays: _Rays, sun: np.ndarray) -> tuple[np.ndarray, ...]:
    """Trace ``rays`` and shade their hits: ``(color, mirror, albedo, normal, origin)``, each per ray.

    ``color`` is the light the ray brings back without its mirror part (sky for a miss); ``mirror`` the
    reflectance to follow (0 for misses); ``origin`` the hit point pushed off the surface.
    """
    t, which = _trace(rays)
    miss = which == -1
    p = rays.o + rays.d * np.where(miss, np.float32(0.0), t)
    sphere = which >= 0
    index = np.maximum(which, 0)
    s = _SPHERES[index].T  # (8, n) gathered once
    normal = np.where(sphere, (p - s[:3]) / s[3], _UP)
    checker = (np.floor(p[0]) + np.floor(p[2])) % 2 == 0
    albedo = np.where(sphere, s[4:7], np.where(checker, np.float32(0.7), np.float32(0.3)))
    mirror = np.where(sphere, s[7], np.float32(0.0))
    origin = p + normal * np.float32(1e-3)
    lit = np.maximum(_dot(normal, sun), 0.0)
    lit *= ~_occluded(_Rays(origin, sun))
    shade = _SUN_COLOR[:, None] * lit + _SKY_TOP[:, None] * (0.35 + 0.25 * normal[1])
    sky_t = np.clip(rays.d[1], 0.0, 1.0)
    sky = _SKY_HORIZON[:, None] + (_SKY_TOP - _SKY_HORIZON)[:, None] * sky_t
    color = np.where(miss, sky, (1.0 - mirror) * albedo * shade)
    return color, np.where(miss, np.float32(0.0), mirror), albedo, normal, origin


class CpuFrameSource(RenderLoop):
    """The NumPy renderer as a :class:`~optixasync.viewer.FrameSource` (no GPU).

    Renders ``settings.spp`` samples per frame and publishes the accumulated image with
    ``samples`` so far; once ``max_samples`` are reached it sleeps until the state changes.
    :meth:`linear_image` gives the linear values behind the newest frame (what a viewer's
    capture writes to an EXR file).

    Parameters
    ----------
    width, height : int
        Starting image size (the viewer's settings change it later).
    max_samples : int
        Samples per pixel after which the image is left as it is.
    fps_limit : float or None
        Most frames per second (None: as fast as NumPy renders).
    seed : int
        Seed of the sample jitter.
    """

    def __init__(self, width: int = 480, height: int = 270, max_samples: int = 1024, fps_limit: float | None = None,
                 seed: int = 0) -> None:
        super().__init__(fps_limit, name="optixasync-cpu-source")
        self._renderer = CpuRenderer(seed)
        self._max_samples = int(max_samples)
        self.initial_camera = CpuRenderer.default_camera()
        self.initial_settings = Settings(denoise=False, spp=1, width=int(width), height=int(height), max_depth=3)
        self._shown_version = -1
        self._shown_denoise = False

    def linear_image(self) -> np.ndarray | None:
        """A copy of the accumulated linear RGB image, (H, W, 3) float32 (blurred as shown), or None before any."""
        if self._renderer.samples == 0:
            return None
        return self._renderer.linear(self._shown_denoise).astype(np.float32, copy=False)

    def render(self, view: ViewState) -> tuple[np.ndarray, dict[str, Any]] | None:
        """Add ``spp`` samples and return the image, or None when converged and this state's frame is out."""
        s = view.settings
        renderer = self._renderer
        renderer.reset_if_changed(view.camera, s)
        if renderer.samples >= self._max_samples and self._shown_version == view.version:
            return None
        if not renderer.add_samples(view.camera, s, min(s.spp, self._max_samples - renderer.samples),
                                    stop=lambda: self.stale(view)):
            return None  # the state changed mid-frame: the loop renders the new one at once
        self._shown_version = view.version
        self._shown_denoise = s.denoise
        return renderer.image(s.denoise), {"samples": renderer.samples, "denoise": s.denoise,
                                           "frames_in_flight": 1, "extra": {"spp": s.spp, "source": "cpu"}}
