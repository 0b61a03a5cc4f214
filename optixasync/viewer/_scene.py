"""Conversion of viewer poses to :class:`optixasync.scene.Camera` (imports the scene package when called)."""

from __future__ import annotations

from typing import Any

from ._camera import CameraPose

__all__ = ["to_scene_camera", "pose_from_scene_camera"]


def to_scene_camera(pose: CameraPose) -> Any:
    """``optixasync.scene.Camera(eye, target, up=..., fov=...)`` for ``pose``."""
    from optixasync.scene import Camera

    return Camera(pose.eye, pose.target, up=pose.up, fov=pose.fov)


def pose_from_scene_camera(camera: Any) -> CameraPose:
    """The :class:`CameraPose` of an ``optixasync.scene.Camera`` (or anything with eye, target, up, fov)."""
    return CameraPose(tuple(map(float, camera.eye)), tuple(map(float, camera.target)),  # type: ignore[arg-type]
                      tuple(map(float, camera.up)), float(camera.fov))
