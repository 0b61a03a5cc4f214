"""A dataset writer: randomized cameras, materials and lights rendered to files, with intrinsics and poses in JSON.

:func:`write_dataset` renders ``count`` samples of a scene. Samples are made in
*variations* of ``views_per_variation``: a variation is a copy of the scene
with its materials' colours jittered and its lights (emission, environment)
scaled, rendered once as a batch of views (:class:`~optixasync.render.Views`),
one randomized pinhole camera per sample, looking at the scene's centre
(domain randomization). Every random choice is a function of ``seed`` and the
sample's index or its variation's alone, and each view has its own seed, so a
sample's files are the same whatever else was rendered with it: a run that was
interrupted resumes where it stopped, rendering only the samples it lacks, and
gives the same files as a run that was not.

Layout of the folder (also in ``dataset.json``, with the options, the id maps
and the outputs):

====================  ==============================================================================
file                  contents
====================  ==============================================================================
``dataset.json``      ``layout`` version, ``options``, ``meshes`` (name per ``mesh_id``), ``materials``
                      (per ``material_id``), ``outputs``, ``conventions``; written first
``NNNNNN.png``        the ``image`` output, 8-bit sRGB RGB (when asked for)
``NNNNNN.exr``        the ``radiance`` output, linear float RGB (``"exr"`` in ``formats``, the exr extra)
``NNNNNN.npz``        every other output asked for, by name: (H, W) for one channel, else (H, W, C)
``NNNNNN.json``       ``index``, ``variation``, ``seed``, ``width``, ``height``, ``K`` (3x3 intrinsics, pixel
                      centres at +0.5), ``cam_to_world_opencv`` and ``cam_to_world_opengl`` (4x4), ``fov``,
                      ``light_scale``, the files; written last, so that it marks the sample complete
====================  ==============================================================================

Every file is written under a temporary name and renamed (:func:`optixasync.io.atomic_write`).

Blocking calls
--------------
Each variation creates a :class:`~optixasync.render.RenderPipeline` (set-up:
the scene's tables and structure, the program from the PTX cache), renders a
still and waits for it (that is the point), then writes the files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..scene import Material, Scene
from ..validation import as_int, coerce_options
from ._outputs import OUTPUTS, check_output_names
from ._params import MAX_SAMPLES
from ._views import Views

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["DATASET_LAYOUT", "DatasetOptions", "DatasetReport", "write_dataset"]

#: The version of the folder's layout (``dataset.json``'s ``layout``).
DATASET_LAYOUT = 1
#: The most samples one dataset has (ten million: file names of seven digits).
MAX_DATASET_SAMPLES = 10_000_000


@dataclass(frozen=True)
class DatasetOptions:
    """What :func:`write_dataset` renders and how it randomizes.

    Attributes
    ----------
    count : int
        Samples (files ``000000`` ... ``count - 1``).
    width, height, spp, max_depth : int
        As :class:`~optixasync.render.RenderOptions`.
    outputs : tuple of str
        The outputs written (:data:`~optixasync.render.OUTPUTS`).
    formats : tuple of str
        ``"png"`` (the image), ``"npz"`` (the other outputs), ``"exr"`` (the radiance, linear).
    views_per_variation : int
        Samples rendered together, in one launch, from one randomized copy of the scene.
    seed : int
    distance : pair of float
        The camera's distance from the scene's centre, in units of the scene's radius.
    elevation : pair of float
        Its elevation above the horizontal plane, in degrees.
    fov : pair of float
        Its vertical field of view, in degrees.
    color_jitter : float
        Each material's colour is multiplied by a factor in [1 - j, 1 + j] per channel (clamped to [0, 1]).
    light_scale : pair of float
        Emission and environment are multiplied by one factor in this range per variation.
    jitter : bool
        Antialiasing (``RenderOptions.jitter``); the G-buffer outputs then are of a point of the pixel.
    """

    count: int = 100
    width: int = 128
    height: int = 128
    spp: int = 16
    max_depth: int = 4
    outputs: tuple[str, ...] = ("image", "depth", "mesh_id")
    formats: tuple[str, ...] = ("png", "npz")
    views_per_variation: int = 8
    seed: int = 0
    distance: tuple[float, float] = (1.6, 2.4)
    elevation: tuple[float, float] = (10.0, 50.0)
    fov: tuple[float, float] = (35.0, 55.0)
    color_jitter: float = 0.2
    light_scale: tuple[float, float] = (0.6, 1.4)
    jitter: bool = False

    def __post_init__(self) -> None:
        for name in ("count", "width", "height", "spp", "max_depth", "views_per_variation"):
            object.__setattr__(self, name, as_int(f"dataset {name}", getattr(self, name), 1))
        # Bounded before any work: a to-do list of 10^12 samples was being built, a file check per sample.
        as_int("dataset count", self.count, 1, MAX_DATASET_SAMPLES)
        as_int("dataset spp", self.spp, 1, MAX_SAMPLES)
        object.__setattr__(self, "seed", as_int("dataset seed", self.seed, 0, 2**32 - 1))
        object.__setattr__(self, "outputs", check_output_names(self.outputs, "dataset outputs"))
        if "rays" in self.outputs or "denoised" in self.outputs:
            raise ValueError("dataset outputs are per-pixel outputs of the path tracer (not rays or denoised)")
        formats = (self.formats,) if isinstance(self.formats, str) else tuple(self.formats)
        unknown = sorted(set(formats) - {"png", "npz", "exr"})
        if unknown or not formats:
            raise ValueError(f"dataset formats are png, npz and exr, got {formats!r}")
        object.__setattr__(self, "formats", formats)
        for name in ("distance", "elevation", "fov", "light_scale"):
            low, high = (float(v) for v in getattr(self, name))
            if not (math.isfinite(low) and math.isfinite(high) and low <= high):
                raise ValueError(f"dataset {name} must be a (low, high) pair with low <= high, "
                                 f"got {getattr(self, name)!r}")
            object.__setattr__(self, name, (low, high))
        if not (0 < self.fov[0] and self.fov[1] < 180):
            raise ValueError(f"dataset fov must be inside (0, 180) degrees, got {self.fov}")
        if not 0 <= self.color_jitter <= 1:
            raise ValueError(f"dataset color_jitter must be in [0, 1], got {self.color_jitter}")


@dataclass
class DatasetReport:
    """What a :func:`write_dataset` call did: samples rendered now, found complete already, variations rendered."""

    rendered: list[int]
    skipped: int
    variations: int


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng([seed, *key])


def _centre_and_radius(scene: Scene) -> tuple[np.ndarray, float]:
    points = [np.asarray(m.vertices, np.float64) @ m.transform[:, :3].T + m.transform[:, 3]
              if m.transform is not None else np.asarray(m.vertices, np.float64) for m in scene.meshes
              if not m.on_device]
    box = np.concatenate(points) if points else np.zeros((1, 3))
    low, high = box.min(axis=0), box.max(axis=0)
    return (low + high) / 2, max(float(np.linalg.norm(high - low)) / 2, 1e-3)


def camera_of(options: DatasetOptions, index: int, centre: np.ndarray, radius: float) -> dict[str, Any]:
    """Sample ``index``'s camera: its intrinsics ``K``, OpenCV and OpenGL camera-to-world poses, fov."""
    rng = _rng(options.seed, 1, index)
    distance = radius * rng.uniform(*options.distance)
    elevation = math.radians(rng.uniform(*options.elevation))
    azimuth = rng.uniform(0.0, 2 * math.pi)
    fov = rng.uniform(*options.fov)
    eye = centre + distance * np.array([math.cos(elevation) * math.sin(azimuth), math.sin(elevation),
                                        math.cos(elevation) * math.cos(azimuth)])
    forward = (centre - eye) / np.linalg.norm(centre - eye)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = np.column_stack([right, down, forward]), eye
    focal = (options.height / 2) / math.tan(math.radians(fov) / 2)
    k = np.array([[focal, 0, options.width / 2], [0, focal, options.height / 2], [0, 0, 1]])
    return {"K": k, "cam_to_world_opencv": pose, "cam_to_world_opengl": pose @ np.diag([1.0, -1.0, -1.0, 1.0]),
            "fov": fov}


def variation_of(scene: Scene, options: DatasetOptions, variation: int) -> tuple[Scene, float]:
    """A copy of ``scene`` with its materials' colours jittered and its lights scaled; and the light scale."""
    rng = _rng(options.seed, 2, variation)
    scale = float(rng.uniform(*options.light_scale))
    changed: dict[int, Material] = {}
    meshes = []
    for mesh in scene.meshes:
        material = changed.get(id(mesh.material))
        if material is None:
            j = options.color_jitter
            colour = np.clip(np.asarray(mesh.material.reflectance) * rng.uniform(1 - j, 1 + j, 3), 0.0, 1.0)
            material = replace(mesh.material, reflectance=tuple(colour),
                               emission=tuple(np.asarray(mesh.material.emission) * scale))
            changed[id(mesh.material)] = material
        meshes.append(replace(mesh, material=material))  # its arrays shared, not copied
    environment = scene.environment
    if environment is not None:
        environment = replace(environment, scale=environment.scale * scale)
    return Scene(meshes, scene.camera, environment, list(scene.lights)), scale


def _sample_files(folder: Path, index: int, options: DatasetOptions) -> dict[str, str]:
    stem = f"{index:06d}"
    files = {}
    if "image" in options.outputs and "png" in options.formats:
        files["image"] = f"{stem}.png"
    if "radiance" in options.outputs and "exr" in options.formats:
        files["radiance"] = f"{stem}.exr"
    if "npz" in options.formats and any(n not in files for n in options.outputs):
        files["arrays"] = f"{stem}.npz"
    return files


def _complete(folder: Path, index: int, options: DatasetOptions) -> bool:
    marker = folder / f"{index:06d}.json"
    return marker.is_file() and all((folder / f).is_file() for f in _sample_files(folder, index, options).values())


def _header(scene: Scene, options: DatasetOptions) -> dict[str, Any]:
    from ._ids import id_names

    names = id_names(scene)
    return {"layout": DATASET_LAYOUT, "options": asdict(options), "meshes": names["meshes"],
            "materials": [{"bsdf": m.bsdf, "reflectance": list(m.reflectance)} for m in names["materials"]],
            "outputs": {n: {"dtype": OUTPUTS[n].dtype.name, "channels": OUTPUTS[n].channels,
                            "meaning": OUTPUTS[n].meaning} for n in options.outputs},
            "conventions": {"film": "pixels, x right, y down, pixel centres at +0.5",
                            "cam_to_world_opencv": "x right, y down, z forward",
                            "cam_to_world_opengl": "x right, y up, looking along -z"}}


def _write_header(folder: Path, header: dict[str, Any]) -> None:
    from ..io import atomic_write

    path = folder / "dataset.json"
    if path.is_file():
        found = json.loads(path.read_text())
        if found.get("options") != json.loads(json.dumps(header["options"])) or found.get("layout") != DATASET_LAYOUT:
            raise ValueError(f"{folder} holds a dataset made with other options: resume it with the same options, "
                             "or write to another folder")
        return
    atomic_write(path, lambda p: p.write_text(json.dumps(header, indent=1)))


def write_dataset(ctx: Context, scene: Scene, folder: str | Path, options: DatasetOptions | dict | None = None, *,
                  progress: Callable[[int, int], None] | bool | None = None) -> DatasetReport:
    """Render ``options.count`` samples of ``scene`` into ``folder`` (see the module documentation), resuming.

    ``progress(done, count)`` is called after each variation (True: a tqdm bar when tqdm is installed).

    Raises
    ------
    TypeError, ValueError
        On bad options, a bad scene, or a folder holding a dataset of other options.
    """
    from ._device_scene import check_scene

    options = coerce_options(DatasetOptions, options)
    scene = check_scene(scene)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _write_header(folder, _header(scene, options))
    todo = [k for k in range(options.count) if not _complete(folder, k, options)]
    report = DatasetReport([], options.count - len(todo), 0)
    report_progress = _progress(progress, options.count)
    centre, radius = _centre_and_radius(scene)
    per = options.views_per_variation
    for variation in sorted({k // per for k in todo}):
        indices = [k for k in todo if k // per == variation]
        _render_variation(ctx, scene, folder, options, variation, indices, centre, radius)
        report.rendered += indices
        report.variations += 1
        report_progress(report.skipped + len(report.rendered))
    return report


def _progress(progress: Any, count: int) -> Callable[[int], None]:
    if callable(progress):
        return lambda done: progress(done, count)
    if progress:
        try:
            from tqdm import tqdm
        except ImportError:
            return lambda done: None
        bar = tqdm(total=count, unit="sample")

        def update(done: int) -> None:
            bar.update(done - bar.n)
            if done >= count:
                bar.close()

        return update
    return lambda done: None


def _render_variation(ctx: Context, scene: Scene, folder: Path, options: DatasetOptions, variation: int,
                      indices: list[int], centre: np.ndarray, radius: float) -> None:
    """Render the samples ``indices`` of one variation as one batch of views; write their files."""
    from ._options import RenderOptions
    from ._pipeline import RenderPipeline

    varied, scale = variation_of(scene, options, variation)
    cameras = [camera_of(options, k, centre, radius) for k in indices]
    views = Views.pinhole([c["K"] for c in cameras], np.stack([c["cam_to_world_opencv"] for c in cameras]),
                          seeds=[(options.seed * 1_000_003 + k) % 2**32 for k in indices])
    render = RenderOptions(width=options.width, height=options.height, spp=options.spp, max_depth=options.max_depth,
                           jitter=options.jitter)
    with RenderPipeline(ctx, varied, render, views=views, outputs=options.outputs, readback=options.outputs) as p:
        with p.still() as result:
            arrays = {name: np.array(result[name]) for name in options.outputs}
    for b, k in enumerate(indices):
        _write_sample(folder, options, k, variation, scale, cameras[b], {n: a[b] for n, a in arrays.items()})


def _write_sample(folder: Path, options: DatasetOptions, index: int, variation: int, scale: float,
                  camera: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    from ..io import atomic_write, write_image

    files = _sample_files(folder, index, options)
    if "image" in files:
        write_image(folder / files["image"], arrays["image"][..., :3])
    if "radiance" in files:
        write_image(folder / files["radiance"], arrays["radiance"][..., :3])
    if "arrays" in files:
        rest = {n: (a[..., 0] if a.shape[-1] == 1 else a) for n, a in arrays.items()
                if files.get(n) is None}
        atomic_write(folder / files["arrays"], lambda p: _savez(p, rest))
    meta = {"index": index, "variation": variation, "seed": (options.seed * 1_000_003 + index) % 2**32,
            "width": options.width, "height": options.height, "light_scale": scale,
            "K": camera["K"].tolist(), "cam_to_world_opencv": camera["cam_to_world_opencv"].tolist(),
            "cam_to_world_opengl": camera["cam_to_world_opengl"].tolist(), "fov": camera["fov"], "files": files}
    atomic_write(folder / f"{index:06d}.json", lambda p: p.write_text(json.dumps(meta, indent=1)))


def _savez(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)
