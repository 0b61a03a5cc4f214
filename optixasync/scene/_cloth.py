"""An animated scene for the asynchronous pipeline: a rippling cloth hanging in the Cornell box (host data).

The cloth is a grid of ``cells x cells`` quads (``2 * cells**2`` triangles;
708 cells give 1,002,528) hung from a rod under the ceiling. Its vertex
positions are a closed-form function of time: :meth:`ClothAnimation.positions`
evaluates it in numpy (the initial mesh and the tests' reference), and the
renderer's frame update :class:`optixasync.render.ClothMotion` evaluates the
same formula (:data:`CLOTH_WAVES`) on the GPU, into the renderer's vertex
buffer, and refits the structure, inside the frame.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._material import Material
    from ._mesh import Mesh
    from ._scene import Scene

__all__ = ["CLOTH_WAVES", "ClothAnimation", "cloth_indices"]

#: The wave constants shared by the GPU kernel and the numpy reference.
_K1, _W1, _V1 = 7.0, 2.1, 2.5  # main wave: across the cloth, moving sideways, tilted downwards
_K2, _W2, _V2 = 11.0, 1.3, 4.0  # a second, smaller wave running the other way
_PLEATS = 8.0  # folds across the width
_SWAY_RATE = 0.9
#: The same constants by name, for the GPU kernel of :class:`optixasync.render.ClothMotion`.
CLOTH_WAVES = {"K1": _K1, "W1": _W1, "V1": _V1, "K2": _K2, "W2": _W2, "V2": _V2, "PLEATS": _PLEATS,
               "SWAY": _SWAY_RATE}

_LIMIT = 0.98  # how close to a wall (at +-1) the cloth may come
_MAX_CELLS = 46339  # (cells + 1)**2 vertices must stay below 2**31


def cloth_indices(cells: int) -> np.ndarray:
    """Triangles of the ``cells x cells`` grid, int32 ``(2 * cells**2, 3)``, front faces towards +z.

    Vertex ``(i, j)`` (column ``i``, row ``j`` from the top) has index ``j * (cells + 1) + i``.
    """
    cells = int(cells)
    n = cells + 1
    i = np.arange(cells, dtype=np.int64)
    a = (i[:, None] * n + i[None, :]).ravel()  # top-left corner of each quad (row-major over rows j, columns i)
    b, c = a + 1, a + n  # b: one column right, c: one row down
    d = c + 1
    # (a, d, b) and (a, c, d) wind counter-clockwise seen from +z (x right, y up): the camera side.
    triangles = np.concatenate([np.stack([a, d, b], 1), np.stack([a, c, d], 1)])
    return triangles.astype(np.int32)


class ClothAnimation:
    """A cloth rippling in the Cornell box, animated on the GPU.

    Parameters
    ----------
    cells : int
        Quads along each side; the cloth has ``(cells + 1)**2`` vertices and ``2 * cells**2`` triangles.
    width, height : float
        Size of the cloth at rest (the room is 2 x 2 x 2, centred on the origin).
    top : float
        Height of the rod (the cloth's top edge).
    depth : float
        z of the cloth at rest (the back wall is at -1, the open side at +1).
    amplitude : float
        Amplitude of the waves at the hem (they fade to 0 at the rod).
    pleat : float
        Depth of the static folds across the width.
    sway : float
        Sideways swing of the hem.
    material : Material, optional
        Default: light grey, two-sided (both sides of the cloth are seen).

    Attributes
    ----------
    mesh_index : int or None
        Index of the cloth in the scene made by :meth:`scene` (None before).
    """

    def __init__(
        self,
        cells: int = 708,
        *,
        width: float = 1.5,
        height: float = 1.6,
        top: float = 0.85,
        depth: float = -0.2,
        amplitude: float = 0.12,
        pleat: float = 0.03,
        sway: float = 0.04,
        material: Material | None = None,
    ) -> None:
        if isinstance(cells, bool) or not isinstance(cells, (int, np.integer)) or cells < 1:
            raise ValueError(f"cells must be a positive integer, got {cells!r}")
        if cells > _MAX_CELLS:
            raise ValueError(f"cells must be at most {_MAX_CELLS} (the kernel indexes vertices with 32-bit ints), "
                             f"got {cells}")
        values = {"width": width, "height": height, "top": top, "depth": depth, "amplitude": amplitude,
                  "pleat": pleat, "sway": sway}
        for key, value in values.items():
            if not math.isfinite(value):
                raise ValueError(f"{key} must be finite, got {value}")
        for key in ("width", "height"):
            if values[key] <= 0:
                raise ValueError(f"{key} must be positive, got {values[key]}")
        for key in ("amplitude", "pleat", "sway"):
            if values[key] < 0:
                raise ValueError(f"{key} must be >= 0, got {values[key]}")
        # The formula's bounds, so that the clamp in the kernel never has to bend the cloth.
        if width / 2 + sway > _LIMIT:
            raise ValueError(f"width/2 + sway = {width / 2 + sway:.3f} leaves the room (walls at x = +-1)")
        if top > _LIMIT or top - height < -_LIMIT:
            raise ValueError(f"the cloth spans y in [{top - height:.3f}, {top:.3f}], outside the room (+-{_LIMIT})")
        if abs(depth) + 1.5 * amplitude + pleat > _LIMIT:
            raise ValueError(f"|depth| + 1.5 * amplitude + pleat = {abs(depth) + 1.5 * amplitude + pleat:.3f} "
                             f"leaves the room (walls at z = +-1)")
        self.cells = int(cells)
        self.width, self.height, self.top, self.depth = float(width), float(height), float(top), float(depth)
        self.amplitude, self.pleat, self.sway = float(amplitude), float(pleat), float(sway)
        self.material = material if material is not None else _default_material()
        self.mesh_index: int | None = None

    # -- geometry ----------------------------------------------------------------------
    @property
    def num_vertices(self) -> int:
        return (self.cells + 1) ** 2

    @property
    def num_triangles(self) -> int:
        return 2 * self.cells**2

    def indices(self) -> np.ndarray:
        """The triangles, int32 ``(2 * cells**2, 3)`` (see :func:`cloth_indices`)."""
        return cloth_indices(self.cells)

    def positions(self, t: float) -> np.ndarray:
        """The vertices at time ``t`` (seconds), computed in numpy: float32 ``((cells + 1)**2, 3)``.

        The same formula as the GPU kernel, in float64 before the final rounding.
        """
        n = self.cells + 1
        k = np.arange(n * n)
        u = (k % n) / self.cells
        s = (k // n) / self.cells
        x0 = self.width * (u - 0.5)
        wave = np.sin(_K1 * x0 - _W1 * t + _V1 * s) + 0.5 * np.sin(_K2 * x0 + _W2 * t - _V2 * s)
        folds = self.pleat * np.cos(_PLEATS * math.pi * u) * (1.0 - 0.5 * s)
        x = x0 + self.sway * s * s * math.sin(_SWAY_RATE * t)
        y = self.top - self.height * s
        z = self.depth + self.amplitude * s * wave + folds
        out = np.stack([x, y, z], axis=1)
        return np.clip(out, -_LIMIT, _LIMIT).astype(np.float32)

    def mesh(self, t: float = 0.0) -> Mesh:
        """The cloth at time ``t`` as a dynamic :class:`Mesh` (host arrays)."""
        from ._mesh import Mesh

        return Mesh(self.positions(t), self.indices(), material=self.material, name="cloth", dynamic=True)

    def scene(self) -> Scene:
        """The Cornell room (walls and light, no blocks) with the cloth at ``t = 0`` added.

        Sets :attr:`mesh_index` to the cloth's index in the scene.
        """
        from ._load import cornell_room

        scene = cornell_room()
        cloth = self.mesh(0.0)
        added = scene.add(cloth)
        matches = [k for k, m in enumerate(scene.meshes) if m is cloth or m is added]
        self.mesh_index = matches[-1] if matches else len(scene.meshes) - 1
        return scene

    def kernel_arguments(self, t: float) -> tuple[Any, ...]:
        """The shape parameters the GPU kernel takes after the output array: cells, t, width, ..., sway (numpy
        scalars of the kernel's types).

        Raises
        ------
        ValueError
            If ``t`` is not finite.
        """
        if not math.isfinite(t):
            raise ValueError(f"t must be finite, got {t}")
        return (np.int32(self.cells), np.float32(t), np.float32(self.width), np.float32(self.height),
                np.float32(self.top), np.float32(self.depth), np.float32(self.amplitude), np.float32(self.pleat),
                np.float32(self.sway))

    def __repr__(self) -> str:
        return f"<ClothAnimation {self.cells}x{self.cells} cells, {self.num_triangles} triangles>"


def _default_material() -> Material:
    from ._material import Material

    return Material(reflectance=(0.8, 0.8, 0.8), two_sided=True)
