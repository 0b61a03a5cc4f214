"""A scene: meshes, shapes (spheres, curves), lights and a camera. Plain host data; the renderer turns it into GPU
structures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._camera import Camera
from ._environment import Environment
from ._mesh import Mesh
from ._motion import check_shutter
from ._shape_kinds import check_shape, is_shape

__all__ = ["Scene"]


@dataclass(eq=False)
class Scene:
    """Meshes seen through a camera.

    Attributes
    ----------
    meshes : list of Mesh
        In order: mesh ``i`` is build input ``i`` of the renderer's
        acceleration structure (and ``RenderPipeline.vertices(i)``).
    camera : Camera
        Defaults to the Cornell box camera (eye at z = 3.9 looking along -z).
    environment : Environment or None
        Light arriving from infinitely far away (a constant or an HDR map),
        seen by rays that leave the scene; None: black.
    lights : list
        Punctual lights (:class:`PointLight`, :class:`SpotLight`,
        :class:`DirectionalLight`, or a kind of one's own with a light type
        registered in the renderer). Emissive meshes and the environment are
        the scene's other light sources.
    shapes : list
        Primitives beside the triangle meshes: :class:`Spheres` (point
        clouds), :class:`Curves` (hair, fibres) and
        :class:`CustomPrimitives` (of registered types), shaded with the
        same materials. Emissive shapes light the scene through BSDF
        sampling only (they are not light-sampled).
    shutter : (float, float) or None
        Motion blur: the times the camera's shutter opens and closes; every
        camera path samples one time in it, and meshes with a
        :attr:`Mesh.motion` are where their keys put them then. None (the
        default): no motion blur, every ray at time 0.

    Raises
    ------
    TypeError
        On a mesh that is not a :class:`Mesh`, a shape that is not a :class:`Spheres`, :class:`Curves` or
        :class:`CustomPrimitives`, or a camera that is not a :class:`Camera`.
    """

    meshes: list[Mesh] = field(default_factory=list)
    camera: Camera = field(default_factory=lambda: Camera((0.0, 0.0, 3.9), (0.0, 0.0, 0.0)))
    environment: Environment | None = None
    lights: list[Any] = field(default_factory=list)
    shapes: list[Any] = field(default_factory=list)
    shutter: Any = None

    def __post_init__(self) -> None:
        self.shutter = check_shutter(self.shutter)
        self.meshes = list(self.meshes)
        self.lights = list(self.lights)
        self.shapes = list(self.shapes)
        for k, mesh in enumerate(self.meshes):
            if not isinstance(mesh, Mesh):
                raise TypeError(f"scene mesh {k} must be a Mesh, got {type(mesh).__name__}")
        for k, shape in enumerate(self.shapes):
            check_shape(shape, f"scene shape {k}")
        if not isinstance(self.camera, Camera):
            raise TypeError(f"scene camera must be a Camera, got {type(self.camera).__name__}")
        if self.environment is not None and not isinstance(self.environment, Environment):
            raise TypeError(f"scene environment must be an Environment or None, got {type(self.environment).__name__}")

    def add(self, item: Any) -> Any:
        """Append a :class:`Mesh` to the meshes, or spheres, curves or custom primitives to the shapes; return it."""
        if is_shape(item):
            self.shapes.append(check_shape(item, "the shape"))
            return item
        if not isinstance(item, Mesh):
            raise TypeError(f"expected a Mesh, Spheres, Curves or CustomPrimitives, got {type(item).__name__}")
        self.meshes.append(item)
        return item

    @property
    def emitters(self) -> list[int]:
        """Indices of the emissive meshes."""
        return [k for k, mesh in enumerate(self.meshes) if mesh.material.is_emissive]

    @property
    def dynamic(self) -> list[int]:
        """Indices of the meshes whose vertices may move."""
        return [k for k, mesh in enumerate(self.meshes) if mesh.dynamic]

    @property
    def instanced(self) -> list[int]:
        """Indices of the meshes placed by a transform (instances; see :attr:`Mesh.transform`)."""
        return [k for k, mesh in enumerate(self.meshes) if mesh.instanced]

    @property
    def moving(self) -> list[int]:
        """Indices of the meshes with motion keys (:attr:`Mesh.motion`)."""
        return [k for k, mesh in enumerate(self.meshes) if mesh.motion is not None]

    @property
    def num_triangles(self) -> int:
        return sum(mesh.num_triangles for mesh in self.meshes)

    def find(self, name: str) -> int:
        """Index of the first mesh called ``name``; KeyError if none."""
        for k, mesh in enumerate(self.meshes):
            if mesh.name == name:
                return k
        raise KeyError(f"no mesh named {name!r}; the scene has {[m.name for m in self.meshes]}")
