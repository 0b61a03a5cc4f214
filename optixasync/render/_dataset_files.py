"""The dataset writer's files: each format's encoder, deterministic bytes, atomic files, a bounded pool of workers.

:class:`SampleWriter` writes the files of one sample on a worker thread
while the GPU renders the next frames: its :meth:`~SampleWriter.submit`
waits when ``max_pending`` samples are queued or being written, so that a
disk slower than the GPU slows the renders down (backpressure) instead of
growing the memory held. Every file is written under a temporary name and
renamed (:func:`optixasync.io.atomic_write`), the sample's JSON last: it
marks the sample complete. Every file's bytes depend on the sample's
values alone (the NPZ members carry a fixed date, not the time of
writing), so that a resumed run writes what an uninterrupted one does.

Formats (``DatasetOptions.formats``):

=======  =================================================================================================
``png``  the ``image`` output, 8-bit sRGB RGB, zlib level ``png_compression``; encoded by ``png_encoder``
``exr``  the ``radiance`` output, linear float RGB (the ``exr`` extra)
``npz``  the other outputs in one zip, by name, deflated
``npy``  the other outputs, one uncompressed ``NNNNNN.<name>.npy`` each
``rle``  instance masks of the ``mesh_id`` output as COCO RLE (``pycocotools``, the ``dataset`` extra)
=======  =================================================================================================

Arrays are stored compact: (H, W) for one channel, and the RGB of the outputs whose fourth channel is a
constant (:data:`CONSTANT_W`: ``radiance``, ``albedo``, ``normal``).

PNG encoders (``DatasetOptions.png_encoder``): ``"imagecodecs"`` (libpng with the RLE strategy and the SUB filter,
OpenCV's fast setting; it releases the GIL: 2.75 ms for a 256x256 path-traced image against Pillow's 12.6 ms at
level 1, 162 KiB against 163 KiB, on a loaded 2-core machine; the ``dataset`` extra) and ``"pillow"``. The
bytes differ between the two, so the encoder is one of the dataset's options.
"""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingExtraError

DatasetOptions = Any  # optixasync.render.DatasetOptions (the module that imports this one)

__all__ = ["CONSTANT_W", "FORMATS", "PNG_ENCODERS", "DatasetProgress", "SampleWriter", "coco_masks", "compact",
           "sample_files", "write_npz", "write_png"]

#: The file formats a dataset can hold (see the module documentation).
FORMATS = ("png", "npz", "npy", "exr", "rle")
#: The date of every NPZ member (the earliest a zip holds): the files' bytes do not depend on when they were written.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
#: Deflate level of the NPZ members: 1 (fastest) compresses depth and ids nearly as well as 6.
_NPZ_LEVEL = 1
#: The id of a miss in the ``mesh_id`` output.
_MISS = 0xFFFFFFFF
#: Outputs whose fourth channel is a constant (w = 1 or 0): their files hold RGB.
CONSTANT_W = frozenset({"radiance", "albedo", "normal", "denoised"})
#: The PNG encoders (``DatasetOptions.png_encoder``).
PNG_ENCODERS = ("imagecodecs", "pillow")


def file_channels(name: str, channels: int) -> int:
    """The channels of output ``name`` in the files (its last axis, or none for one channel)."""
    return 3 if name in CONSTANT_W and channels == 4 else channels


def compact(name: str, array: np.ndarray) -> np.ndarray:
    """``array`` as the files hold it: (H, W) for one channel, RGB for the outputs of :data:`CONSTANT_W`."""
    if array.shape[-1] == 1:
        return array[..., 0]
    return array[..., :3] if name in CONSTANT_W and array.shape[-1] == 4 else array


def sample_files(index: int, options: DatasetOptions) -> dict[str, str]:
    """The files of sample ``index``, by what they hold (an output's name, ``"arrays"``, ``"instances"``)."""
    stem = f"{index:06d}"
    files = {}
    if "image" in options.outputs and "png" in options.formats:
        files["image"] = f"{stem}.png"
    if "radiance" in options.outputs and "exr" in options.formats:
        files["radiance"] = f"{stem}.exr"
    rest = [n for n in options.outputs if n not in files]
    if "npz" in options.formats and rest:
        files["arrays"] = f"{stem}.npz"
    if "npy" in options.formats:
        files.update({n: f"{stem}.{n}.npy" for n in rest})
    if "rle" in options.formats:
        files["instances"] = f"{stem}.instances.json"
    return files


def arrays_of(files: dict[str, str], arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays of the NPZ file: the outputs no other file holds, compact (:func:`compact`)."""
    return {n: compact(n, a) for n, a in arrays.items() if files.get(n) is None}


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``arrays`` as an NPZ file (``numpy.load`` reads it) whose bytes depend on the arrays alone."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=_NPZ_LEVEL) as archive:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            member.compress_type = zipfile.ZIP_DEFLATED
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
            archive.writestr(member, buffer.getvalue(), compresslevel=_NPZ_LEVEL)


def write_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(array), allow_pickle=False)


def write_png(path: Path, rgb: np.ndarray, level: int, encoder: str) -> None:
    """``rgb`` (H, W, 3) uint8 as a PNG file, by ``encoder`` (:data:`PNG_ENCODERS`) at zlib ``level``."""
    rgb = np.ascontiguousarray(rgb)
    if encoder == "imagecodecs":
        import imagecodecs

        path.write_bytes(imagecodecs.png_encode(rgb, level=level, strategy=3, filter=16))  # Z_RLE, PNG_FILTER_SUB
        return
    from PIL import Image

    Image.fromarray(rgb, "RGB").save(path, format="PNG", compress_level=level)


def default_png_encoder() -> str:
    """``"imagecodecs"`` when it is installed, else ``"pillow"`` (what ``png_encoder="auto"`` resolves to)."""
    import importlib.util

    return "imagecodecs" if importlib.util.find_spec("imagecodecs") is not None else "pillow"


def check_png_encoder(encoder: str) -> None:
    """Raise :class:`MissingExtraError` when ``encoder`` is ``"imagecodecs"`` and it is not installed."""
    if encoder == "imagecodecs" and default_png_encoder() != "imagecodecs":
        raise MissingExtraError("the imagecodecs PNG encoder", "imagecodecs", "dataset")


def _mask_module() -> Any:
    try:
        from pycocotools import mask
    except ImportError:
        raise MissingExtraError("instance masks as COCO RLE", "pycocotools", "dataset") from None
    return mask


def check_coco() -> None:
    """Raise :class:`MissingExtraError` (naming the ``coco`` extra) when pycocotools is missing."""
    _mask_module()


def coco_masks(ids: np.ndarray, names: list[str]) -> list[dict[str, Any]]:
    """One COCO RLE mask per mesh seen in ``ids`` ((H, W) uint32 ``mesh_id``, misses ``0xFFFFFFFF``), by id.

    Each entry: ``mesh_id``, ``name``, ``segmentation`` (``{"size": [H, W], "counts": str}``, what
    ``pycocotools.mask.decode`` reads), ``area`` (pixels) and ``bbox`` (x, y, width, height).
    """
    mask = _mask_module()
    ids = np.asarray(ids).reshape(ids.shape[0], ids.shape[1])
    out = []
    for k in (int(v) for v in np.unique(ids) if int(v) != _MISS):
        rle = mask.encode(np.asfortranarray((ids == k)[..., None].astype(np.uint8)))[0]
        out.append({"mesh_id": k, "name": names[k] if k < len(names) else "",
                    "segmentation": {"size": [int(s) for s in rle["size"]], "counts": rle["counts"].decode("ascii")},
                    "area": int(mask.area(rle)), "bbox": [float(v) for v in mask.toBbox(rle)]})
    return out


def write_sample(folder: Path, options: DatasetOptions, index: int, arrays: dict[str, np.ndarray],
                 meta: dict[str, Any], mesh_names: list[str]) -> None:
    """Every file of sample ``index``, its JSON (``meta`` with the files) last."""
    from ..io import atomic_write, write_image

    files = sample_files(index, options)
    if files.get("image", "").endswith(".png"):
        atomic_write(folder / files["image"],
                     lambda p: write_png(p, arrays["image"][..., :3], options.png_compression, options.png_encoder))
    if files.get("radiance", "").endswith(".exr"):
        write_image(folder / files["radiance"], arrays["radiance"][..., :3])
    if "arrays" in files:
        rest = arrays_of(files, arrays)
        atomic_write(folder / files["arrays"], lambda p: write_npz(p, rest))
    for name in options.outputs:
        if files.get(name, "").endswith(".npy"):
            array = compact(name, arrays[name])
            atomic_write(folder / files[name], lambda p, a=array: write_npy(p, a))
    if "instances" in files:
        masks = {"index": index, "instances": coco_masks(arrays["mesh_id"], mesh_names)}
        atomic_write(folder / files["instances"], lambda p: p.write_text(json.dumps(masks)))
    meta = {**meta, "files": files}
    atomic_write(folder / f"{index:06d}.json", lambda p: p.write_text(json.dumps(meta, indent=1)))


class SampleWriter:
    """Samples' files written by ``workers`` threads, at most ``max_pending`` samples held (see the module doc).

    ``write(index, arrays, meta)`` writes one sample; :meth:`done` returns the indices written since the last call
    (and raises the first error of a write); :meth:`close` waits for them all (``abort``: drops those not started).

    Attributes
    ----------
    waited_s : float
        Seconds :meth:`submit` waited for a free place (the disk being slower than the renders).
    """

    def __init__(self, write: Callable[[int, dict[str, np.ndarray], dict[str, Any]], None], workers: int,
                 max_pending: int) -> None:
        self._write = write
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="optixasync-dataset")
        self._slots = threading.BoundedSemaphore(max_pending)
        self._futures: dict[Future, int] = {}
        self.waited_s = 0.0

    def submit(self, index: int, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Queue sample ``index`` (its arrays kept by reference until written); waits while ``max_pending`` are."""
        if not self._slots.acquire(blocking=False):
            start = time.perf_counter()
            self._slots.acquire()
            self.waited_s += time.perf_counter() - start
        try:
            future = self._pool.submit(self._run, index, arrays, meta)
        except BaseException:
            self._slots.release()
            raise
        self._futures[future] = index

    def _run(self, index: int, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        try:
            self._write(index, arrays, meta)
        finally:
            self._slots.release()

    def done(self) -> list[int]:
        """The samples written since the last call; raises the first failed write's error."""
        finished = [f for f in self._futures if f.done()]
        for future in finished:
            future.result()
        return [self._futures.pop(f) for f in finished]

    def close(self, abort: bool = False) -> list[int]:
        """Wait for the queued samples (``abort``: only for those being written); the samples written since
        :meth:`done`."""
        self._pool.shutdown(wait=True, cancel_futures=abort)
        if abort:
            self._futures = {f: k for f, k in self._futures.items() if not f.cancelled()}
        return self.done()


class DatasetProgress:
    """``progress(done, count)`` or a tqdm bar (samples/s), or nothing."""

    def __init__(self, progress: Any, count: int) -> None:
        self._call = progress if callable(progress) else None
        self._count = count
        self._bar = None
        if progress is True:
            from tqdm import tqdm

            self._bar = tqdm(total=count, unit="sample", dynamic_ncols=True)

    def __call__(self, done: int) -> None:
        if self._bar is not None:
            self._bar.update(done - self._bar.n)
        if self._call is not None:
            self._call(done, self._count)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
