"""Scenes from glTF 2.0 files (``.gltf`` with its buffers and images, or one ``.glb``).

:func:`read_gltf` decodes a file into a :class:`GltfAsset`: one object-space
:class:`Mesh` per primitive of every glTF mesh the scene uses, their
:class:`Material` objects, the node instances that place them (a primitive
key and a world matrix each) and the cameras. :func:`load_gltf` flattens an
asset into a :class:`Scene`: every instance becomes its own world-space mesh.
:func:`load_scene` picks the reader by the file's suffix (glTF or OBJ).

The document is read with Python's ``json`` (every extension's and
extra's JSON stays reachable in :attr:`GltfAsset.json`), so that loading
runs at the speed of the JSON: 16,000 nodes in 0.3 s and 100,000 in 1.9 s on a two-core machine
(``benchmarks/bench_gltf_load.py`` prints the scaling); images are decoded by
Pillow. Everything is host-side numpy and every check runs before any GPU
work. No optional package is needed.

What is read
------------
* Geometry: triangle primitives (strips and fans become triangle lists;
  points and lines are skipped with a warning), indexed or not, with
  ``POSITION``, ``NORMAL``, ``TEXCOORD_0``, ``TANGENT`` and ``COLOR_0`` (RGB
  or RGBA, float or normalized unsigned integers: :attr:`Mesh.colors`) of any
  component type (normalized integers included, so ``KHR_mesh_quantization``
  works), strided buffer views and sparse accessors. Nodes place meshes by
  ``matrix`` or translation, rotation and scale down the node tree of the
  default scene (the first scene when none is named the default; every root
  node when the file has no scene), and ``EXT_mesh_gpu_instancing`` adds
  instances. A node listed by several parents (which glTF forbids, but
  files do) is placed once per path from a root.
* Materials: glTF's metallic-roughness model (base colour, metallic,
  roughness, their textures, emission with ``KHR_materials_emissive_strength``,
  the normal map, alpha mode and cutoff, double-sidedness), with samplers
  (wrap modes, nearest or bilinear magnification) and ``KHR_texture_transform``.
  ``KHR_materials_transmission`` with ``KHR_materials_ior`` becomes a
  dielectric (see below). An image used by several materials with the same
  sampler, colour space and transform becomes one :class:`Texture` object.
* Cameras: perspective and orthographic cameras (``xmag``, ``ymag``,
  ``znear``, ``zfar``: :class:`Camera` with ``projection="orthographic"``),
  placed by their node (see :func:`load_gltf`), with their records in
  :class:`GltfCamera`.
* ``KHR_lights_punctual``: point, spot (inner and outer cone) and directional
  lights become the scene's :class:`PointLight`, :class:`SpotLight` and
  :class:`DirectionalLight` (light-sampled and MIS-combined like every light),
  their candela and lux converted to the renderer's radiometric units by
  ``light_scale`` (default 1 / 683 W/lm; see
  :mod:`optixasync.scene._gltf_cameras`); their records are
  :class:`GltfLight`. ``range`` is not applied (a warning).
* Animations: translation, rotation and scale channels with linear, step
  and cubic-spline interpolation, as :class:`GltfAnimation` records sampled in
  numpy (:meth:`GltfAnimation.sample`, :meth:`GltfAsset.pose`). A still shows
  the rest pose; :meth:`GltfAsset.animated_scene` gives the scene with the
  animated meshes as instances and the :class:`NodeAnimation` that places
  them, which ``optixasync.render.NodeMotion`` plays frame by frame
  (``optixasync render --frames N``).

Sides
-----
glTF has two kinds of material sides and the renderer three
(:data:`~optixasync.scene.SIDEDNESS`): ``doubleSided: true`` is
``two_sided=True`` (both sides reflect); ``doubleSided: false``, glTF's
default, is ``cull_back=True``: back faces are culled as glTF says, so that
every ray (camera, path and shadow rays) passes through a one-sided surface
seen from behind. The renderer's third mode, a one-sided surface whose back
is black (``two_sided=False, cull_back=False``, Mitsuba's convention and the
default of :class:`Material`), is not used for glTF assets. Culled meshes
run an any-hit test; scenes without them trace as before.

Approximations
--------------
* Transmission: a material with ``transmissionFactor > 0.5`` becomes a
  smooth or rough dielectric (``int_ior`` from ``KHR_materials_ior``, GGX
  ``alpha = roughness**2``, two-sided): fully transmissive, its base colour
  tint, metallic factor and base colour and metallic-roughness textures
  dropped (with a warning when they are not the neutral values). A factor in
  (0, 0.5] is rounded to opaque, with a warning. ``transmissionTexture`` is
  ignored with a warning.
* ``KHR_materials_ior`` on an opaque material: the metallic-roughness model
  keeps glTF's F0 of 0.04 (index 1.5); another index is ignored with a warning.
* Vertex colours (``COLOR_0``) multiply the base colour and its alpha the
  opacity, as glTF says. Skins and morph targets are not supported: ignored
  with one warning each (the static, unskinned base geometry is used); ``occlusionTexture`` is ignored without one (the path
  tracer computes occlusion itself); ``texCoord`` other than 0 is ignored with
  a warning (``TEXCOORD_0`` is used).
* Tangents missing where a normal map needs them are generated per vertex
  with Lengyel's method (:func:`generate_tangents`), not MikkTSpace, which
  glTF recommends: they agree on smooth, well-parametrised meshes and may
  differ slightly across UV seams.

Hostile files
-------------
A file is read as untrusted input:

* every buffer and image ``uri`` must lead inside the asset's folder (or
  :attr:`LoadLimits.allowed_folders`) after percent-decoding and following
  links: ``..``, ``%2e%2e``, absolute paths and links out are refused with
  :class:`~optixasync.errors.AssetPathError`, naming the URI as written; nothing
  outside is opened, and nothing but regular files is read;
* ``data:`` URIs are decoded after their size is checked;
* the JSON's size and nesting, the node count, the longest chain of nodes,
  the node placements (counted by dynamic programming before the graph is
  walked) and instances, every accessor's count (against its buffer, and a
  maximum), image pixels (Pillow's decompression-bomb error included) and the
  bytes the load holds are checked against :class:`LoadLimits` before they
  are allocated: a breach is a :class:`~optixasync.errors.LoadLimitError`
  naming the file, the element and the limit;
* only the documented exceptions leave :func:`read_gltf`: ``OSError``
  (``FileNotFoundError``) for files, ``ValueError`` (its subclasses above
  included) for content. ``tests/fuzz`` holds this to random and targeted
  files under time and memory bounds.

Blocking calls
--------------
None: file reading and decoding on the host.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._gltf_animation import GltfAnimation, GltfChannel, GltfSampler
from ._gltf_asset import GltfAsset, GltfInstance
from ._gltf_cameras import WATTS_PER_LUMEN, GltfCamera, GltfLight
from ._gltf_data import GLTF_EXTENSIONS, GltfDocument
from ._gltf_motion import NodeAnimation
from ._gltf_reader import GltfReader
from ._limits import LoadLimits, as_limits
from ._material import Material
from ._mesh import Mesh
from ._scene import Scene

__all__ = ["GLTF_EXTENSIONS", "SCENE_SUFFIXES", "WATTS_PER_LUMEN", "GltfAnimation", "GltfAsset", "GltfCamera",
           "GltfChannel", "GltfInstance", "GltfLight", "GltfSampler", "NodeAnimation", "load_gltf", "load_scene",
           "read_gltf"]

#: File suffixes :func:`load_scene` reads (case-insensitive); the USD ones need the ``usd`` extra.
SCENE_SUFFIXES = (".gltf", ".glb", ".obj", ".usd", ".usda", ".usdc", ".usdz")


def load_gltf(path: str | Path, *, camera: int | str | None = None, instancing: bool = True,
              limits: LoadLimits | dict[str, Any] | None = None, light_scale: float = WATTS_PER_LUMEN) -> Scene:
    """Read a glTF 2.0 file (``.gltf`` or ``.glb``) into a :class:`Scene`.

    Every node instance of every triangle primitive becomes one :class:`Mesh`
    (``read_gltf(path).to_scene(camera, ...)``), lit by the file's
    ``KHR_lights_punctual`` lights. A
    primitive placed by several nodes stays shared: its meshes hold the same
    arrays and a ``transform`` each, and the renderer builds its structure
    once (``instancing=False`` flattens every mesh to world space instead).

    Parameters
    ----------
    path : str or Path
    camera : int, str or None
        The camera: a glTF camera index, or the name of a camera or of its
        node. None: the first camera node of the scene, else
        :func:`framing_camera` of the meshes.
    instancing : bool
        Keep primitives placed by several nodes shared (instanced meshes).
    limits : LoadLimits, dict or None
        Resource limits of the load (None: the defaults); see :class:`LoadLimits`.
    light_scale : float
        Multiplies ``KHR_lights_punctual`` intensities (candela, lux) into the
        renderer's units: 1 / 683 W/lm by default, 1 to read them as they are.

    Returns
    -------
    Scene
        Its camera's ``fov`` is glTF's vertical ``yfov`` in degrees, which
        :class:`Camera` applies to the smaller image axis: exact for images at
        least as wide as tall. When the file's ``aspectRatio`` is below 1 (a
        portrait camera) ``fov`` is the horizontal field of view at that
        aspect instead, so that an image of the file's shape sees exactly
        what the file describes.

    Raises
    ------
    FileNotFoundError
        A missing file, buffer or image (naming it as the file writes it, and for an image the material
        using it).
    AssetPathError
        A buffer or image ``uri`` leading outside the asset's folder (a ``ValueError``).
    LoadLimitError
        A count, size or nesting beyond ``limits`` (a ``ValueError``).
    ValueError
        Malformed JSON or GLB, a required extension this reader lacks, an
        accessor or buffer view outside its buffer, an index out of range, an
        undecodable image, a textured material on a primitive without
        ``TEXCOORD_0``, no triangles, or a camera that is not there; the
        message names the file and the element.
    OSError
        A file that cannot be read.
    """
    with _collector_paused():
        return read_gltf(path, limits=limits).to_scene(camera, instancing=instancing, light_scale=light_scale)


def read_gltf(path: str | Path, *, limits: LoadLimits | dict[str, Any] | None = None) -> GltfAsset:
    """Decode a glTF 2.0 file into a :class:`GltfAsset` (primitives, materials, instances, cameras, lights, animations).

    Raises
    ------
    FileNotFoundError, AssetPathError, LoadLimitError, ValueError, OSError
        As :func:`load_gltf`.
    """
    path = Path(path)
    limits = as_limits(limits)
    if not path.is_file():
        raise FileNotFoundError(f"glTF file not found: {str(path)!r}" if not path.exists()
                                else f"not a file: {str(path)!r}")
    if path.suffix.lower() not in (".gltf", ".glb"):
        raise ValueError(f"{str(path)!r} is not a glTF file: its suffix must be .gltf or .glb")
    with _collector_paused():
        return GltfReader(GltfDocument(path, limits)).read()


def read_gltf_meshes(path: Path, limits: LoadLimits, material: Material) -> list[Mesh]:
    """The triangle primitives of a glTF file in world space, each of ``material``, decoding no image.

    Raises as :func:`read_gltf`, less what its materials and images raise.
    """
    with _collector_paused():
        asset = GltfReader(GltfDocument(path, limits), material).read()
    meshes = asset.scene_meshes(False)
    if not meshes:
        raise ValueError(f"mesh file {str(path)!r} contains no triangles")
    return meshes


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector during a load (restored after, if it was on).

    A document of 10^5 nodes is millions of small objects that live until the load ends and form no cycles;
    the collector would walk them all again and again (a sixth of the load's time at 10^5 nodes).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_scene(path: str | Path, **kwargs: Any) -> Scene:
    """Read a scene file, the reader chosen by suffix: ``.gltf``/``.glb`` :func:`load_gltf`, ``.obj`` :func:`load_obj`,
    ``.usd``/``.usda``/``.usdc``/``.usdz`` :func:`load_usd`.

    ``kwargs`` go to the reader (``camera=`` for glTF and USD, ``limits=`` for all).

    Raises
    ------
    ValueError
        On another suffix (the message lists :data:`SCENE_SUFFIXES`), and as the reader raises.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".gltf", ".glb"):
        return load_gltf(path, **kwargs)
    if suffix == ".obj":
        from ._obj import load_obj  # here: glTF files need no OBJ reader

        return load_obj(path, **kwargs)
    if suffix in (".usd", ".usda", ".usdc", ".usdz"):
        from ._usd import load_usd  # here: pxr is imported only for USD files

        return load_usd(path, **kwargs)
    raise ValueError(f"unsupported scene format {path.suffix or 'no suffix'!r} for {str(path)!r}: use one of "
                     f"{', '.join(SCENE_SUFFIXES)}")
