"""USD time samples as a scene's frames: where each moving mesh (and the camera) is at a time.

A :class:`UsdAnimation` holds the world transforms of the meshes that time
samples move, evaluated by USD at every time sample of their transforms (and
their ancestors'), and interpolates linearly between them, entry by entry:
exact at the samples, and where USD interpolates the matrices themselves.
``optixasync.render.NodeMotion`` plays it frame by frame, as it plays a glTF
node animation: the moving meshes are instances, so each frame rewrites
their transforms in the instance structure and rebuilds nothing else.

Blocking calls
--------------
None: numpy on the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._camera import Camera

__all__ = ["MAX_TIME_SAMPLES", "UsdAnimation", "interpolate"]

#: The most time samples a USD animation keeps (the first ones, in order).
MAX_TIME_SAMPLES = 4096


def interpolate(times: np.ndarray, keys: np.ndarray, time: float) -> np.ndarray:
    """``keys`` (K, ...) at ``time``: linear between the samples ``times`` (K,), held outside them."""
    if len(times) == 1 or time <= times[0]:
        return keys[0].copy()
    if time >= times[-1]:
        return keys[-1].copy()
    k = int(np.searchsorted(times, time, side="right")) - 1
    w = (time - times[k]) / (times[k + 1] - times[k])
    return (1.0 - w) * keys[k] + w * keys[k + 1]


@dataclass(frozen=True, eq=False)
class UsdAnimation:
    """The meshes of one USD scene, and its camera, at any time of the stage's time samples.

    Attributes
    ----------
    times : numpy.ndarray
        (K,) float64 sample times, seconds (time codes over ``timeCodesPerSecond``), increasing.
    keys : numpy.ndarray
        (K, J, 3, 4) float64: the transforms of the J moving meshes at the samples.
    moving : numpy.ndarray
        (M,) bool: the scene meshes the samples move (instances: they have a ``transform``).
    rest : numpy.ndarray
        (M, 3, 4) float64: each scene mesh's ``transform`` (the identity for a mesh in world space).
    camera_keys : numpy.ndarray or None
        (K, 4, 4) the camera-to-world matrix at the samples, when they move the camera.
    camera : Camera or None
        The scene's camera at rest (its field of view and projection are kept while it moves).
    name : str
        The stage's file.
    """

    times: np.ndarray
    keys: np.ndarray
    moving: np.ndarray
    rest: np.ndarray
    camera_keys: np.ndarray | None = None
    camera: Camera | None = None
    name: str = ""

    @property
    def start(self) -> float:
        """The first sample time, seconds."""
        return float(self.times[0])

    @property
    def end(self) -> float:
        """The last sample time, seconds."""
        return float(self.times[-1])

    def transforms(self, time: float) -> np.ndarray:
        """(M, 3, 4) float64 ``transform`` of every scene mesh at ``time`` seconds (:attr:`rest` for the others).

        Raises
        ------
        ValueError
            When a moved mesh's transform is not invertible (scaled to zero between samples).
        """
        out = self.rest.copy()
        if self.moving.any():
            out[self.moving] = interpolate(self.times, self.keys, float(time))
            if not (np.abs(np.linalg.det(out[self.moving, :, :3])) > 0.0).all():
                raise ValueError(f"{self.name} at {time} s: a moving mesh is scaled to zero: it cannot be placed")
        return out

    def camera_at(self, time: float) -> Camera | None:
        """The camera at ``time`` when the samples move it, else None (the scene's camera stays)."""
        if self.camera_keys is None or self.camera is None:
            return None
        m = interpolate(self.times, self.camera_keys, float(time))
        c = self.camera
        if c.projection == "orthographic":
            return Camera.from_matrix(m, xmag=c.xmag, ymag=c.ymag, znear=c.znear, zfar=c.zfar)
        return Camera.from_matrix(m, fov=c.fov)
