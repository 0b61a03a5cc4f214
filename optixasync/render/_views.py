"""Many views per launch: a batch of B cameras (pinhole intrinsics, orthographic, the scene's camera), as records.

A :class:`Views` is what a :class:`~optixasync.render.RenderPipeline` made with
``views=`` renders in each launch, one (height, width) image per view, its
outputs as (B, height, width, channels) device arrays.

Conventions
-----------
* **Film coordinates** are pixels, x to the right and y down, over
  [0, width] x [0, height]: the centre of pixel (i, j) is (i + 0.5, j + 0.5)
  (the convention of COLMAP and of most renderers). OpenCV calibrations put
  pixel centres at integers: add 0.5 to their cx and cy
  (:meth:`Views.pinhole` does when given ``pixel_centers=0.0``).
* **Pinhole** intrinsics are those of the matrix K = [[fx, 0, cx], [0, fy, cy],
  [0, 0, 1]]: film point (u, v) looks along ((u - cx) / fx, (v - cy) / fy, 1)
  in the camera's frame (OpenCV axes: x right, y down, z forward).
* **Orthographic** views use the same film coordinates with fx, fy in pixels
  per world unit: film point (u, v) starts at ((u - cx) / fx, (v - cy) / fy, 0)
  on the camera's plane and looks along its forward axis. Its rays have no
  end, but those of an orthographic :class:`~optixasync.scene.Camera` with a
  far plane (:meth:`Views.cameras`) run ``zfar - znear``, as the single
  camera's do.
* **Poses** are camera-to-world matrices (4x4 or 3x4, row-major). In the
  ``"opencv"`` convention (robotics, COLMAP, OpenCV) the rotation's columns
  are the camera's right, down and forward axes; in ``"opengl"`` (Blender,
  NeRF, glTF cameras, :meth:`Camera.from_matrix <optixasync.scene.Camera.from_matrix>`)
  they are right, up and backward: the camera looks along -z. The rotation
  must be orthonormal (checked for host poses to 1e-4; device poses are
  used as given).
* **Seeds**: view b draws its random numbers from its own seed (default
  ``options.seed + b``), the pixel and the sample index, so a view renders
  the same bits in any batch it is part of.

Poses may be a device array (a PyTorch tensor, CuPy, JAX: anything
:func:`~optixasync.cuda.consume_device_array` takes) of shape (B, 4, 4) or
(B, 3, 4), float32, C-contiguous, on the pipeline's GPU: it is read on the
GPU at every launch (a copy on the frame's stream, no host copy), so a
caller may rewrite it in place between steps.

Blocking calls
--------------
None: host arrays and records (the device poses are read by the pipeline,
:mod:`._batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..scene import Camera
from ..scene._camera import UNBOUNDED_RAY
from ..validation import dlpack_device
from ._layout import VIEW_RECORD

__all__ = ["CONVENTIONS", "MAX_VIEWS", "VIEW_CAMERA", "VIEW_ORTHOGRAPHIC", "VIEW_PINHOLE", "Views",
           "view_worlds"]

#: ``ViewKind`` values (``kernels/pathtracer/view_records.h``).
VIEW_CAMERA, VIEW_PINHOLE, VIEW_ORTHOGRAPHIC = 0, 1, 2
#: ``PoseConvention`` values by name.
CONVENTIONS = {"opencv": 0, "opengl": 1}
#: The most views of a batch (the launch's depth, times its lanes, is bounded by the launch size too).
MAX_VIEWS = 2**20


def _is_device_array(value: Any) -> bool:
    return hasattr(value, "__cuda_array_interface__") or (dlpack_device(value) or (1, 0))[0] != 1


def _host_poses(poses: Any, count: int | None) -> np.ndarray:
    """Host poses as (B, 3, 4) float64, checked: finite, rigid rotations."""
    p = np.asarray(poses, dtype=np.float64)
    if p.ndim == 2:
        p = p[None]
    if p.ndim != 3 or p.shape[1:] not in ((3, 4), (4, 4)) or not len(p):
        raise ValueError(f"poses must be (B, 4, 4) or (B, 3, 4) camera-to-world matrices, got shape {p.shape}")
    if count is not None and len(p) != count:
        raise ValueError(f"poses holds {len(p)} poses for {count} views")
    if not np.isfinite(p).all():
        raise ValueError("poses must be finite")
    r = p[:, :3, :3]
    error = np.abs(np.einsum("bji,bjk->bik", r, r) - np.eye(3)).max()
    if error > 1e-4:
        raise ValueError(f"poses must have orthonormal rotations (no scale or shear): R^T R differs from I by "
                         f"{error:.3g}")
    return p[:, :3, :4]


def _device_poses(poses: Any) -> tuple[int, tuple[int, ...]]:
    """(count, shape) of device poses, from their interface alone (checked again when the pipeline reads them)."""
    shape = tuple(getattr(poses, "shape", ()))
    if len(shape) != 3 or shape[1:] not in ((3, 4), (4, 4)) or not shape[0]:
        raise ValueError(f"poses must be (B, 4, 4) or (B, 3, 4) camera-to-world matrices, got shape {shape}")
    return int(shape[0]), shape


def _intrinsics(intrinsics: Any, count: int, pixel_centers: float) -> np.ndarray:
    """(B, 4) float64 fx, fy, cx, cy from (4,), (B, 4), a 3x3 K or (B, 3, 3)."""
    k = np.asarray(intrinsics, dtype=np.float64)
    if k.shape[-2:] == (3, 3):
        k = np.stack([k[..., 0, 0], k[..., 1, 1], k[..., 0, 2], k[..., 1, 2]], axis=-1)
    k = np.broadcast_to(k, (count, 4)) if k.shape == (4,) else k
    if k.shape != (count, 4):
        raise ValueError(f"intrinsics must be (4,) or (B, 4) fx, fy, cx, cy (or 3x3 matrices K) for {count} views, "
                         f"got shape {np.shape(intrinsics)}")
    if not np.isfinite(k).all() or not (k[:, :2] > 0).all():
        raise ValueError("intrinsics must be finite with positive fx and fy")
    out = k.copy()
    out[:, 2:] += 0.5 - float(pixel_centers)
    return out


def orthographic_camera_view(camera: Camera, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """The intrinsics (fx, fy, cx, cy) and OpenCV camera-to-world (3, 4) of an orthographic ``camera`` as a batch's
    orthographic view of a width x height film: its rays start on its near plane (as the single camera's do), one
    pixel is ``2 xmag / width`` world units across, and depth is measured from the near plane."""
    eye, u, v, w = camera.basis(width, height)[:4]
    xmag, ymag = float(np.linalg.norm(u)), float(np.linalg.norm(v))
    pose = np.column_stack([u / xmag, -v / ymag, w, eye])
    return np.array([width / (2 * xmag), height / (2 * ymag), width / 2, height / 2]), pose


def view_worlds(views: Views | None, count: int, worlds: int) -> np.ndarray:
    """The world of each of ``count`` views among ``worlds`` (the views' own, or shared out evenly in order).

    Raises
    ------
    ValueError
        Naming ``views.worlds``: a world out of range, or views that cannot be shared out evenly.
    """
    if views is not None and views.worlds is not None:
        if (views.worlds >= worlds).any():
            raise ValueError(f"views.worlds names world {int(views.worlds.max())}, but there are {worlds} worlds")
        return views.worlds.astype(np.uint32)
    if count % worlds:
        raise ValueError(f"{count} views for {worlds} worlds: give Views(..., worlds=...) to say which world each "
                         "view traces (by default the views are shared out evenly, in order)")
    return (np.arange(count) // (count // worlds)).astype(np.uint32)


class Views:
    """B views of one launch (see the module documentation for the conventions).

    Make them with :meth:`pinhole`, :meth:`orthographic` or :meth:`cameras`; join batches with :meth:`stack`.

    Attributes
    ----------
    count : int
    kinds : numpy.ndarray
        (B,) uint32 ``VIEW_*`` per view.
    intrinsics : numpy.ndarray
        (B, 4) float64 fx, fy, cx, cy (pixel centres at +0.5).
    convention : int
        0 (OpenCV) or 1 (OpenGL) for the poses.
    poses : numpy.ndarray or device array or None
        Host poses (B, 3, 4) float64, a device array (B, 4, 4) or (B, 3, 4) float32, or None (camera views).
    cameras : list of Camera or None
    worlds : numpy.ndarray or None
        (B,) the world each view traces (None: decided by the pipeline's worlds).
    seeds : numpy.ndarray or None
        (B,) seeds (None: ``options.seed + b``).
    """

    def __init__(self, kinds: np.ndarray, intrinsics: np.ndarray, poses: Any, convention: int,
                 cameras: list[Camera] | None = None, worlds: Any = None, seeds: Any = None) -> None:
        self.count = len(kinds)
        if not 1 <= self.count <= MAX_VIEWS:
            raise ValueError(f"views must hold 1 to {MAX_VIEWS} views, got {self.count}")
        self.kinds = np.asarray(kinds, np.uint32)
        self.intrinsics = intrinsics
        self.poses = poses
        self.convention = convention
        self.cameras = cameras
        self.worlds = None if worlds is None else self._per_view(worlds, "worlds")
        self.seeds = None if seeds is None else self._per_view(seeds, "seeds", 2**32)

    def _per_view(self, values: Any, name: str, limit: int | None = None) -> np.ndarray:
        v = np.asarray(values)
        if v.shape != (self.count,) or v.dtype.kind not in "iu" or (v < 0).any() or (limit and (v >= limit).any()):
            raise ValueError(f"{name} must be {self.count} non-negative integers (one per view), got {values!r}")
        return v.astype(np.uint64)

    @staticmethod
    def _convention(convention: str) -> int:
        if convention not in CONVENTIONS:
            raise ValueError(f"convention must be one of {tuple(CONVENTIONS)}, got {convention!r}")
        return CONVENTIONS[convention]

    @classmethod
    def _posed(cls, kind: int, intrinsics: Any, poses: Any, convention: str, pixel_centers: float, worlds: Any,
               seeds: Any) -> Views:
        code = cls._convention(convention)
        if _is_device_array(poses):
            count, _shape = _device_poses(poses)
        else:
            poses = _host_poses(poses, None)
            count = len(poses)
        return cls(np.full(count, kind), _intrinsics(intrinsics, count, pixel_centers), poses, code,
                   worlds=worlds, seeds=seeds)

    @classmethod
    def pinhole(cls, intrinsics: Any, poses: Any, *, convention: str = "opencv", pixel_centers: float = 0.5,
                worlds: Any = None, seeds: Any = None) -> Views:
        """Pinhole views: ``intrinsics`` (4,) or (B, 4) fx, fy, cx, cy in pixels (or 3x3 K), ``poses`` (B, 4, 4).

        ``pixel_centers`` is where the calibration puts the centre of pixel 0: 0.5 (the default) or 0.0
        (OpenCV's), which adds 0.5 to cx and cy.

        Raises
        ------
        ValueError
            Naming the argument: poses of another shape, not finite or not rigid; intrinsics of another shape,
            not finite or with fx, fy <= 0; an unknown convention; worlds or seeds not one per view.
        """
        return cls._posed(VIEW_PINHOLE, intrinsics, poses, convention, pixel_centers, worlds, seeds)

    @classmethod
    def orthographic(cls, intrinsics: Any, poses: Any, *, convention: str = "opencv", pixel_centers: float = 0.5,
                     worlds: Any = None, seeds: Any = None) -> Views:
        """Orthographic views: fx, fy in pixels per world unit, cx, cy in pixels; ``poses`` as :meth:`pinhole`."""
        return cls._posed(VIEW_ORTHOGRAPHIC, intrinsics, poses, convention, pixel_centers, worlds, seeds)

    @classmethod
    def cameras(cls, cameras: Sequence[Camera] | Camera, *, worlds: Any = None, seeds: Any = None) -> Views:
        """Views of :class:`~optixasync.scene.Camera` objects: a pinhole's rays are the single-camera raygen's (the
        same bits); an orthographic camera is an orthographic view whose rays start on its near plane
        (:func:`orthographic_camera_view`; the same rays to a rounding) and run ``zfar - znear``, nothing beyond
        its far plane seen.

        Raises
        ------
        TypeError
            If an element is not a Camera.
        """
        cams = [cameras] if isinstance(cameras, Camera) else list(cameras)
        if not cams or not all(isinstance(c, Camera) for c in cams):
            raise TypeError("cameras must be optixasync.scene.Camera objects")
        kinds = [VIEW_ORTHOGRAPHIC if c.orthographic else VIEW_CAMERA for c in cams]
        return cls(np.asarray(kinds), np.zeros((len(cams), 4)), None, 0, cameras=cams, worlds=worlds, seeds=seeds)

    @classmethod
    def stack(cls, batches: Sequence[Views]) -> Views:
        """One batch of the views of ``batches``, in order (host poses and cameras only, one convention)."""
        batches = list(batches)
        if not batches or not all(isinstance(b, Views) for b in batches):
            raise TypeError("stack takes a sequence of Views")
        if any(b.poses is not None and not isinstance(b.poses, np.ndarray) for b in batches):
            raise ValueError("stack joins views with host poses (or cameras): device poses cannot be joined")
        posed = [b.convention for b in batches if b.poses is not None]
        if len(set(posed)) > 1:
            raise ValueError("stack joins views of one pose convention")
        poses = np.concatenate([b.poses if b.poses is not None else np.zeros((b.count, 3, 4)) for b in batches])
        cams = [c for b in batches for c in (b.cameras or [None] * b.count)]

        def joined(name: str) -> Any:
            parts = [getattr(b, name) for b in batches]
            return None if all(p is None for p in parts) else np.concatenate(
                [p if p is not None else np.zeros(b.count, np.uint64) for p, b in zip(parts, batches, strict=True)])

        return cls(np.concatenate([b.kinds for b in batches]), np.concatenate([b.intrinsics for b in batches]),
                   poses if posed else None, posed[0] if posed else 0, cams, joined("worlds"), joined("seeds"))

    @property
    def device_poses(self) -> bool:
        """Whether the poses are a device array (read on the GPU at every launch)."""
        return self.poses is not None and not isinstance(self.poses, np.ndarray)

    def records(self, width: int, height: int, seed: int, worlds: Any) -> np.ndarray:
        """The (B,) ``ViewRecord`` array for a width x height launch; ``worlds`` is the world of each view."""
        records = np.zeros(self.count, VIEW_RECORD)
        records["kind"], records["convention"] = self.kinds, self.convention
        records["world"] = worlds
        records["seed"] = (self.seeds if self.seeds is not None else
                           (np.uint64(seed) + np.arange(self.count, dtype=np.uint64)) % np.uint64(2**32))
        records["fx"], records["fy"], records["cx"], records["cy"] = self.intrinsics.T
        records["ray_length"] = UNBOUNDED_RAY
        if isinstance(self.poses, np.ndarray):
            records["to_world"] = self.poses.reshape(self.count, 12)
        for b, camera in enumerate(self.cameras or ()):
            if camera is not None and self.kinds[b] == VIEW_CAMERA:
                eye, u, v, w = camera.basis(width, height)
                records["to_world"][b] = np.column_stack([u, v, w, eye]).reshape(12)
            elif camera is not None and camera.orthographic and self.kinds[b] == VIEW_ORTHOGRAPHIC:
                intrinsics, pose = orthographic_camera_view(camera, width, height)
                records["ray_length"][b] = camera.basis(width, height).ray_length
                records["fx"][b], records["fy"][b], records["cx"][b], records["cy"][b] = intrinsics
                records["to_world"][b], records["convention"][b] = pose.reshape(12), CONVENTIONS["opencv"]
        return records

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        kinds = sorted({("camera", "pinhole", "orthographic")[k] for k in self.kinds.tolist()})
        where = "device poses" if self.device_poses else "host poses" if self.poses is not None else "cameras"
        return f"<optixasync.render.Views {self.count} {'/'.join(kinds)} ({where})>"
