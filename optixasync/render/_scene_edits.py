"""The scene edits of a render pipeline: dynamic vertices, refits, instance placements and table updates.

:class:`SceneEdits` holds these methods of :class:`~optixasync.render.RenderPipeline`; each is ordered on a
stream (default: the pipeline's; a frame's for its launch) and restarts the accumulation, since the old samples
show the old scene.

Blocking calls
--------------
None: each enqueues its work on the stream it is given (see :class:`~optixasync.render.DeviceScene`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._device_scene import DeviceScene

__all__ = ["SceneEdits"]


class SceneEdits:
    """Changes to a pipeline's scene after its creation (mixed into :class:`~optixasync.render.RenderPipeline`)."""

    # what the pipeline provides (with _check_open and reset)
    device_scene: DeviceScene
    stream: Any

    def vertices(self, mesh_index: int, stream: Any = None) -> Any:
        """The device vertex array (V, 3) float32 of mesh ``mesh_index``, read by the structure and the shading.

        To move a dynamic mesh, write new positions here on the frame's stream, then call :meth:`refit` on the
        same stream. Pass that ``stream`` here to order it after the set-up (the initial upload of these
        vertices) before the first write; it costs nothing once done.
        """
        return self.device_scene.vertices(mesh_index, stream)

    def refit(self, stream: Any = None) -> None:
        """Refit the structure after dynamic vertices changed, ordered on ``stream`` (default: the pipeline's).

        Also restarts the accumulation (the old samples show the old geometry).

        Raises
        ------
        ValueError
            If the scene has no dynamic mesh.
        """
        self._check_open()
        self.device_scene.refit(self.stream if stream is None else stream)
        self.reset()

    def place(self, transforms: Any, stream: Any = None) -> None:
        """Move the instanced meshes to new object-to-world ``transforms`` (M, 3, 4), ordered on ``stream``.

        Rewrites their mesh records and rebuilds the instance structure (:meth:`DeviceScene.place`); a
        frame update calls it with its frame (:class:`NodeMotion`). Also restarts the accumulation.

        Raises
        ------
        ValueError
            Without instanced meshes, or on bad transforms (before any GPU work).
        """
        self._check_open()
        self.device_scene.place(transforms, self.stream if stream is None else stream)
        self.reset()

    def update_tables(self, materials: Any = None, light_scale: float | None = None, stream: Any = None) -> None:
        """Change materials' colours and the lights' strength in place on ``stream`` (default: the pipeline's;
        a frame for its launch), without a rebuild; restarts the accumulation (:mod:`._table_updates`).

        ``materials`` maps scene materials to new values differing in what their record holds (colour,
        roughness; not family, textures, alpha mode, emission); ``light_scale`` multiplies every light of the
        scene. Raises TypeError or ValueError (a stranger material, a change that needs a new pipeline, a bad
        scale) before any GPU work.
        """
        self._check_open()
        update = self.device_scene.updates.check(materials, light_scale)  # type: ignore[union-attr]
        self.device_scene.update_tables(update, self.stream if stream is None else stream)
        self.reset()
