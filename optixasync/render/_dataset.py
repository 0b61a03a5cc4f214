"""A dataset writer: randomized cameras, materials and lights rendered to files, with intrinsics and poses in JSON.

:func:`write_dataset` renders ``count`` samples of a scene. Samples are made in
*variations* of ``views_per_variation``: a variation is the scene with its
materials' colours jittered and all its lights (emission, environment,
punctual lights) scaled by one factor, rendered as one frame of a batch of
views (:class:`~optixasync.render.Views`),
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
``NNNNNN.<out>.npy``  the same outputs, one uncompressed file each (``"npy"`` in ``formats``)
``NNNNNN.instances``  ``.json``: one COCO RLE mask per mesh seen, from ``mesh_id`` (``"rle"``, the coco extra)
``NNNNNN.json``       ``index``, ``variation``, ``seed``, ``width``, ``height``, ``K`` (3x3 intrinsics, pixel
                      centres at +0.5), ``cam_to_world_opencv`` and ``cam_to_world_opengl`` (4x4), ``fov``,
                      ``light_scale``, the files; written last, so that it marks the sample complete
====================  ==============================================================================

Every file is written under a temporary name and renamed (:func:`optixasync.io.atomic_write`); the bytes of
every file are a function of the sample alone (:mod:`._dataset_files`).

How it runs: one :class:`~optixasync.render.RenderPipeline` for the run (its
tables, structure and program built once); each variation is one frame of its
scheduler, whose colours and light scale are rewritten in the tables on the
frame's stream (:meth:`~optixasync.render.RenderPipeline.update_tables`) and
whose views are the variation's cameras. ``frames_in_flight`` frames render
while worker threads encode and write the files of the frames before
(:class:`~._dataset_files.SampleWriter`, at most ``max_pending`` samples
held, so that a slower disk holds the renders back instead of filling the
memory). A variation is always rendered whole (a missing sample's
neighbours are rendered again, not written), and the last one is filled up by
repeating its last view: the batch keeps its size, and each view's pixels
depend on its own camera and seed alone.

Blocking calls
--------------
* Creating the pipeline: set-up (the scene's tables and structure, the
  program from the PTX cache).
* The scheduler's slot fence when ``frames_in_flight`` frames are on the
  GPU, and the drain of the last frames.
* :meth:`SampleWriter.submit` when ``max_pending`` samples wait for the disk
  (backpressure, counted in :attr:`DatasetReport.disk_wait_s`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..scene import Material, Scene
from ..validation import as_int, coerce_options
from ._dataset_files import (
    FORMATS,
    PNG_ENCODERS,
    DatasetProgress,
    SampleWriter,
    check_coco,
    check_png_encoder,
    default_png_encoder,
    file_channels,
    sample_files,
    write_sample,
)
from ._outputs import OUTPUTS, check_output_names
from ._params import MAX_SAMPLES
from ._views import Views

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["DATASET_LAYOUT", "DatasetOptions", "DatasetReport", "write_dataset"]

#: The version of the folder's layout (``dataset.json``'s ``layout``).
DATASET_LAYOUT = 2  # 2: every light scaled, deterministic NPZ bytes, PNG zlib level 1
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
        ``"png"`` (the image), ``"npz"`` (the other outputs, deflated), ``"npy"`` (the other outputs,
        uncompressed, a file each), ``"exr"`` (the radiance, linear), ``"rle"`` (instance masks of ``mesh_id``
        as COCO RLE).
    png_compression : int
        zlib level of the PNG files, 0 to 9 (1 by default: the fastest that compresses).
    png_encoder : str
        ``"imagecodecs"`` (fast, releases the GIL; the ``dataset`` extra), ``"pillow"``, or ``"auto"`` (the
        default): imagecodecs when installed, else Pillow, resolved at creation (the files' bytes depend on it, so
        a folder is resumed only with the encoder that began it).
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
        Every light (emission, environment, punctual lights) is multiplied by one factor in this range per
        variation (> 0).
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
    png_compression: int = 1
    png_encoder: str = "auto"

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
        unknown = sorted(set(formats) - set(FORMATS))
        if unknown or not formats:
            raise ValueError(f"dataset formats are {', '.join(FORMATS)}, got {formats!r}")
        if "rle" in formats and "mesh_id" not in self.outputs:
            raise ValueError("dataset format rle (instance masks) needs the mesh_id output")
        object.__setattr__(self, "formats", formats)
        object.__setattr__(self, "png_compression", as_int("dataset png_compression", self.png_compression, 0, 9))
        encoder = default_png_encoder() if self.png_encoder == "auto" else self.png_encoder
        if encoder not in PNG_ENCODERS:
            raise ValueError(f"dataset png_encoder must be auto, {' or '.join(PNG_ENCODERS)}, got {encoder!r}")
        object.__setattr__(self, "png_encoder", encoder)
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
        if not self.light_scale[0] > 0:
            raise ValueError(f"dataset light_scale must be > 0, got {self.light_scale}")


@dataclass
class DatasetReport:
    """What a :func:`write_dataset` call did.

    Attributes
    ----------
    rendered : list of int
        The samples written now, in order.
    skipped : int
        Samples found complete already.
    variations : int
        Frames rendered (one per variation).
    seconds : float
        Wall time of the renders and writes (from the pipeline's creation to the last file).
    gpu_ms : float
        GPU time of the frames (their timing events).
    disk_wait_s : float
        Time the renders waited for the writers (the disk or the encoders slower than the GPU).
    """

    rendered: list[int]
    skipped: int
    variations: int
    seconds: float = 0.0
    gpu_ms: float = 0.0
    disk_wait_s: float = 0.0

    @property
    def samples_per_s(self) -> float:
        """Samples written per second of :attr:`seconds`."""
        return len(self.rendered) / self.seconds if self.seconds > 0 else 0.0

    @property
    def gpu_busy(self) -> float:
        """The GPU's share of the wall time: :attr:`gpu_ms` over :attr:`seconds`."""
        return self.gpu_ms / 1e3 / self.seconds if self.seconds > 0 else 0.0


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


def variation_of(scene: Scene, options: DatasetOptions, variation: int) -> tuple[dict[Material, Material], float]:
    """Variation ``variation``'s new value of each distinct material (its colour jittered) and its light scale.

    The light scale multiplies every light of the scene (emission, environment, punctual lights):
    :meth:`RenderPipeline.update_tables <optixasync.render.RenderPipeline.update_tables>` takes both.
    """
    rng = _rng(options.seed, 2, variation)
    scale = float(rng.uniform(*options.light_scale))
    changed: dict[Material, Material] = {}
    j = options.color_jitter
    for material in [m.material for m in scene.meshes] + [m for s in scene.shapes for m in s.materials]:
        if material not in changed:
            colour = np.clip(np.asarray(material.reflectance) * rng.uniform(1 - j, 1 + j, 3), 0.0, 1.0)
            changed[material] = replace(material, reflectance=tuple(float(c) for c in colour))
    return changed, scale


def varied_scene(scene: Scene, options: DatasetOptions, variation: int) -> Scene:
    """The scene that variation ``variation`` renders, as a scene of its own (what a rebuild would render)."""
    materials, scale = variation_of(scene, options, variation)
    meshes = [replace(m, material=replace(materials[m.material], emission=tuple(
        float(e) * scale for e in m.material.emission))) for m in scene.meshes]
    environment = scene.environment
    if environment is not None:
        environment = replace(environment, scale=environment.scale * scale)
    lights = [replace(light, **{name: tuple(float(v) * scale for v in getattr(light, name))
                                for name in ("intensity", "irradiance") if hasattr(light, name)})
              for light in scene.lights]
    return Scene(meshes, scene.camera, environment, lights, list(scene.shapes), scene.shutter)


def _complete(folder: Path, index: int, options: DatasetOptions) -> bool:
    marker = folder / f"{index:06d}.json"
    return marker.is_file() and all((folder / f).is_file() for f in sample_files(index, options).values())


def _header(scene: Scene, options: DatasetOptions) -> dict[str, Any]:
    from ._ids import id_names

    names = id_names(scene)
    return {"layout": DATASET_LAYOUT, "options": asdict(options), "meshes": names["meshes"],
            "materials": [{"bsdf": m.bsdf, "reflectance": list(m.reflectance)} for m in names["materials"]],
            "outputs": {n: {"dtype": OUTPUTS[n].dtype.name, "channels": file_channels(n, OUTPUTS[n].channels),
                            "meaning": OUTPUTS[n].meaning} for n in options.outputs},
            "conventions": {"film": "pixels, x right, y down, pixel centres at +0.5",
                            "cam_to_world_opencv": "x right, y down, z forward",
                            "cam_to_world_opengl": "x right, y up, looking along -z"}}


def _write_header(folder: Path, header: dict[str, Any]) -> None:
    from ..io import atomic_write

    path = folder / "dataset.json"
    if path.is_file():
        found, wanted = json.loads(path.read_text()), json.loads(json.dumps(header["options"]))
        if found.get("options") != wanted or found.get("layout") != DATASET_LAYOUT:
            old = found.get("options") if isinstance(found.get("options"), dict) else {}
            differ = sorted(k for k in set(old) | set(wanted) if old.get(k) != wanted.get(k)) or ["layout"]
            raise ValueError(f"{folder} holds a dataset made with other options ({', '.join(differ)} differ): resume "
                             "it with the same options, or write to another folder")
        return
    atomic_write(path, lambda p: p.write_text(json.dumps(header, indent=1)))


def write_dataset(ctx: Context, scene: Scene, folder: str | Path, options: DatasetOptions | dict | None = None, *,
                  progress: Callable[[int, int], None] | bool | None = None, workers: int = 4,
                  max_pending: int | None = None, frames_in_flight: int = 2) -> DatasetReport:
    """Render ``options.count`` samples of ``scene`` into ``folder`` (see the module documentation), resuming.

    One :class:`~optixasync.render.RenderPipeline` renders every variation; ``frames_in_flight`` frames are on
    the GPU while ``workers`` threads encode and write the files of those before, at most ``max_pending``
    samples (default ``4 * workers``) held: a slower disk holds the renders back. ``progress(done, count)`` is
    called whenever a variation's files are all written (True: a tqdm bar, samples/s). The workers, the queue
    and the frames in flight change when files are written, never what they hold.

    Raises
    ------
    TypeError, ValueError
        On bad options, a bad scene, or a folder holding a dataset of other options (before any GPU work).
    MissingExtraError
        For ``"rle"`` without pycocotools (the ``dataset`` extra), ``"exr"`` without OpenEXR (the ``exr`` extra),
        before any GPU work.
    """
    from ._device_scene import check_scene

    options = coerce_options(DatasetOptions, options)
    workers = as_int("workers", workers, 1)
    max_pending = as_int("max_pending", 4 * workers if max_pending is None else max_pending, 1)
    frames_in_flight = as_int("frames_in_flight", frames_in_flight, 1)
    scene = check_scene(scene)
    if "rle" in options.formats:
        check_coco()
    if "png" in options.formats:
        check_png_encoder(options.png_encoder)
    if "exr" in options.formats and "radiance" in options.outputs:
        from ..io._exr import import_openexr

        import_openexr("a dataset's EXR files")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    header = _header(scene, options)
    _write_header(folder, header)
    todo = [k for k in range(options.count) if not _complete(folder, k, options)]
    report = DatasetReport([], options.count - len(todo), 0)
    if not todo:
        return report
    run = _Run(ctx, scene, folder, options, header["meshes"], report, DatasetProgress(progress, options.count))
    start = time.perf_counter()
    try:
        run.render(todo, workers, max_pending, frames_in_flight)
    finally:
        report.seconds = time.perf_counter() - start
        run.report_progress.close()
    return report


class _Run:
    """One run of :func:`write_dataset`: the variations' frames submitted, their results handed to the writers."""

    def __init__(self, ctx: Context, scene: Scene, folder: Path, options: DatasetOptions, names: list[str],
                 report: DatasetReport, report_progress: DatasetProgress) -> None:
        self.ctx, self.scene, self.folder, self.options, self.names = ctx, scene, folder, options, names
        self.report, self.report_progress = report, report_progress
        self.centre, self.radius = _centre_and_radius(scene)
        self._frames: dict[int, tuple[int, list[int], list[dict[str, Any]], float]] = {}
        self._left: dict[int, int] = {}  # variation -> samples of it still to write
        self._sizes: dict[int, int] = {}  # variation -> samples of it written in this run
        self._done = report.skipped

    def views_of(self, variation: int) -> tuple[Views, list[int], list[dict[str, Any]]]:
        """Variation ``variation``'s views (its samples', the last one repeated to fill the batch), its samples."""
        per = self.options.views_per_variation
        indices = list(range(variation * per, min((variation + 1) * per, self.options.count)))
        cameras = [camera_of(self.options, k, self.centre, self.radius) for k in indices]
        padded = indices + [indices[-1]] * (per - len(indices))
        pad = cameras + [cameras[-1]] * (per - len(cameras))
        views = Views.pinhole([c["K"] for c in pad], np.stack([c["cam_to_world_opencv"] for c in pad]),
                              seeds=[sample_seed(self.options, k) for k in padded])
        return views, indices, cameras

    def render(self, todo: list[int], workers: int, max_pending: int, frames_in_flight: int) -> None:
        from ._options import RenderOptions
        from ._pipeline import RenderPipeline

        o = self.options
        variations = sorted({k // o.views_per_variation for k in todo})
        wanted = set(todo)
        render = RenderOptions(width=o.width, height=o.height, spp=o.spp, max_depth=o.max_depth, jitter=o.jitter)
        first_views = self.views_of(variations[0])[0]
        writer = SampleWriter(self._write, workers, max_pending)
        aborted = True
        try:
            with RenderPipeline(self.ctx, self.scene, render, views=first_views, outputs=o.outputs,
                                readback=o.outputs, frames_in_flight=frames_in_flight) as pipeline:
                scheduler = pipeline.scheduler
                for variation in variations:
                    self._submit(pipeline, variation, wanted)
                    self._hand_over(scheduler.poll(), writer)
                    self._written(writer.done())
                self._hand_over(scheduler.drain(), writer)
            aborted = False
        finally:
            written = writer.close(abort=aborted)
            if not aborted:
                self._written(written)

    def _submit(self, pipeline: Any, variation: int, wanted: set[int]) -> None:
        materials, scale = variation_of(self.scene, self.options, variation)
        views, indices, cameras = self.views_of(variation)
        with pipeline.scheduler.frame() as frame:
            pipeline.update_tables(materials, scale, stream=frame)
            pipeline.record(frame, self.options.spp, views=views)
        keep = [b for b, k in enumerate(indices) if k in wanted]
        self._frames[frame.index] = (variation, [indices[b] for b in keep], [cameras[b] for b in keep], scale)
        self._left[variation] = self._sizes[variation] = len(keep)
        self.report.variations += 1

    def _hand_over(self, results: list[Any], writer: SampleWriter) -> None:
        """Each completed frame's samples to the writers (views of its pinned readbacks: no copy)."""
        for result in results:
            variation, indices, cameras, scale = self._frames.pop(result.index)
            self.report.gpu_ms += float(result.stats.gpu_ms or 0.0)
            with result:
                arrays = {n: result[n] for n in self.options.outputs}
            per = self.options.views_per_variation
            for k, camera in zip(indices, cameras, strict=True):
                b = k - variation * per
                writer.submit(k, {n: a[b] for n, a in arrays.items()}, _meta(self.options, k, variation, scale,
                                                                            camera))
        self.report.disk_wait_s = writer.waited_s

    def _write(self, index: int, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        write_sample(self.folder, self.options, index, arrays, meta, self.names)

    def _written(self, indices: list[int]) -> None:
        """Count the samples written; report each variation whose samples are all written."""
        per = self.options.views_per_variation
        finished = []
        for k in sorted(indices):
            self.report.rendered.append(k)
            variation = k // per
            self._left[variation] -= 1
            if self._left[variation] == 0:
                del self._left[variation]
                finished.append(variation)
        self.report.rendered.sort()
        for variation in finished:
            self._done += self._sizes.pop(variation)
            self.report_progress(self._done)


def sample_seed(options: DatasetOptions, index: int) -> int:
    """The seed of sample ``index``'s view (its random numbers depend on it alone)."""
    return (options.seed * 1_000_003 + index) % 2**32


def _meta(options: DatasetOptions, index: int, variation: int, scale: float, camera: dict[str, Any]) -> dict[str, Any]:
    return {"index": index, "variation": variation, "seed": sample_seed(options, index),
            "width": options.width, "height": options.height, "light_scale": scale,
            "K": camera["K"].tolist(), "cam_to_world_opencv": camera["cam_to_world_opencv"].tolist(),
            "cam_to_world_opengl": camera["cam_to_world_opengl"].tolist(), "fov": camera["fov"]}
