"""Scenes from OpenUSD stages (``.usd``, ``.usda``, ``.usdc``, ``.usdz``), read through Pixar's ``usd-core``.

:func:`load_usd` composes a stage with ``pxr`` (the ``usd`` extra: ``pip
install 'optixasync[usd]'``) and reads it into a :class:`Scene`;
:func:`read_usd` also gives the :class:`UsdAnimation` of its time samples.
``optixasync render --scene x.usda`` (and ``view``) read it the same way.

What is read
------------
* Geometry (:mod:`optixasync.scene._usd_mesh`, :mod:`._usd_shapes`):
  ``Mesh`` (fan-triangulated polygons, holes, ``leftHanded`` orientation,
  normals, ``st`` and ``displayColor`` primvars of any interpolation,
  material ``GeomSubset`` pieces, ``doubleSided``), ``Cube``, ``Cylinder``,
  ``Cone`` and ``Capsule`` (tessellated), ``Sphere`` and ``Points`` (the
  renderer's exact spheres), ``BasisCurves`` (round curves).
* The ``Xform`` hierarchy (``resetXformStack`` included), ``visibility``
  and ``purpose`` (guides and proxies are not drawn), instanceable prims
  and ``PointInstancer`` (their meshes share arrays: instances of one
  structure), see :mod:`optixasync.scene._usd_reader`.
* Materials: ``UsdPreviewSurface`` with ``UsdUVTexture`` and
  ``UsdTransform2d`` (:mod:`optixasync.scene._usd_materials`, which lists
  what is approximated; each approximation warns once, naming it). An
  unbound gprim takes its constant ``displayColor``.
* Lights: ``DistantLight``, ``SphereLight``, ``DiskLight``, ``RectLight``,
  ``DomeLight`` (:mod:`optixasync.scene._usd_lights`); cameras:
  ``UsdGeomCamera``, the first in namespace order or the one named.
* Time: ``time=`` picks the time code the scene shows (default the stage's
  ``startTimeCode``, else each attribute's earliest sample); time-sampled
  transforms make the :class:`UsdAnimation` that ``render --frames`` plays
  (``NodeMotion``), and, when the camera's ``shutter:open`` and
  ``shutter:close`` span an interval, motion keys over it (motion blur).

Not read: subdivision (a subdivision surface is drawn as its control cage,
shaded smooth), skinning and blend shapes, time-sampled points over frames
(``time=`` reads them at one time), volumes, ``NurbsPatch`` and
``NurbsCurves``, cylinder and geometry lights, render settings.

Hostile files
-------------
As the glTF reader (:mod:`optixasync.scene._gltf`): every sublayer,
reference, payload and texture must lead to a regular file inside the
asset's folder or :attr:`LoadLimits.allowed_folders`, checked before USD
opens it (:mod:`optixasync.scene._usd_stage`); the prims the stage composes
(a referenced prim counted once per reference), the nesting of composition
arcs, the prims visited, the instances placed, every array and the bytes
held are bounded by :class:`LoadLimits` before the work is done; a malformed
layer is a ``ValueError`` naming the file and the prim.

Blocking calls
--------------
None: file reading on the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._limits import LoadLimits, as_limits
from ._scene import Scene
from ._usd_motion import UsdAnimation
from ._usd_reader import UsdAsset, UsdReader
from ._usd_stage import USD_SUFFIXES, UsdDocument, open_stage, pxr_modules, usd_errors

__all__ = ["USD_SUFFIXES", "UsdAnimation", "UsdAsset", "load_usd", "read_usd"]


def read_usd(path: str | Path, *, time: float | None = None, camera: str | None = None,
             limits: LoadLimits | dict[str, Any] | None = None, motion_blur: bool = True) -> UsdAsset:
    """Compose a USD stage and read it: its :class:`Scene`, and the :class:`UsdAnimation` of its time samples.

    Parameters
    ----------
    path : str or Path
        A ``.usd``, ``.usda``, ``.usdc`` or ``.usdz`` file.
    time : float or None
        The time code the scene shows; None: the stage's ``startTimeCode`` when it gives one, else each
        attribute's default value or its earliest time sample.
    camera : str or None
        The camera's prim path or name; None: the stage's first camera, else a camera framing the meshes.
    limits : LoadLimits, dict or None
        Resource limits of the load (None: the defaults).
    motion_blur : bool
        Give the meshes that move while the camera's shutter is open motion keys over it (and the scene its
        shutter); then the asset has no animation. False: the moving meshes are instances that the animation
        places frame by frame.

    Returns
    -------
    UsdAsset

    Raises
    ------
    MissingExtraError
        Without ``usd-core`` (the ``usd`` extra).
    FileNotFoundError, AssetPathError, LoadLimitError, ValueError, OSError
        As :func:`load_usd`.
    """
    path = Path(path)
    limits = as_limits(limits)
    if not path.is_file():
        raise FileNotFoundError(f"USD file not found: {str(path)!r}" if not path.exists()
                                else f"not a file: {str(path)!r}")
    if path.suffix.lower() not in USD_SUFFIXES:
        raise ValueError(f"{str(path)!r} is not a USD file: its suffix must be one of {', '.join(USD_SUFFIXES)}")
    pxr_modules()
    doc = UsdDocument(path, limits)
    open_stage(doc)
    with usd_errors(doc.file, "cannot read the stage"):
        return UsdReader(doc, time, camera, motion_blur).read()


def load_usd(path: str | Path, *, time: float | None = None, camera: str | None = None,
             limits: LoadLimits | dict[str, Any] | None = None) -> Scene:
    """Read a USD stage (``.usd``, ``.usda``, ``.usdc``, ``.usdz``) into a :class:`Scene`.

    ``read_usd(path, time=time, camera=camera, limits=limits).scene``: meshes (instanced where the stage
    instances them), spheres and curves, ``UsdPreviewSurface`` materials, ``UsdLux`` lights and the camera, at
    ``time``, with motion blur over the camera's shutter.

    Parameters
    ----------
    path : str or Path
    time : float or None
        The time code (None: the stage's start, see :func:`read_usd`).
    camera : str or None
        A camera's prim path or name (None: the first camera).
    limits : LoadLimits, dict or None

    Raises
    ------
    MissingExtraError
        Without ``usd-core``: ``pip install 'optixasync[usd]'``.
    FileNotFoundError
        A missing file, or a layer or texture it names (naming it as the layer writes it).
    AssetPathError
        A sublayer, reference, payload or texture leading outside the asset's folder (a ``ValueError``).
    LoadLimitError
        A count, size or nesting beyond ``limits`` (a ``ValueError``).
    ValueError
        A malformed layer, a cycle of references, counts that do not add up, an index out of range, a camera
        that is not there; the message names the file and the prim.
    OSError
        A file that cannot be read.
    """
    return read_usd(path, time=time, camera=camera, limits=limits).scene
