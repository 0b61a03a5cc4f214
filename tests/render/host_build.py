"""The kernel's device code built for the CPU: what the host-build tests share.

``pathtracer_host.cpp``, ``environment_host.cpp`` and ``bsdf_host.cpp`` compile the headers of
``kernels/pathtracer/`` unchanged with the host C++ compiler, after ``cuda_host_shims.h`` supplies what NVRTC
and OptiX would. :func:`build_host_library` builds one of them against a copy of the kernels tree whose
``optixasync_device.h`` is empty (the harness provides the device interface; a copy rather than ``-I``, because
a quoted include looks next to the including file first and would find the real device header there).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from optixasync.render import RenderOptions, check_scene
from optixasync.render._layout import PATH_PARAMS
from optixasync.render._params import fill_params
from optixasync.render._tables import SceneTables
from optixasync.scene import Scene

HERE = Path(__file__).resolve().parent

__all__ = ["aligned", "build_host_library", "compiler"]


def compiler() -> str | None:
    """The C++ compiler of the host builds: $CXX, c++, g++ or clang++ (None if there is none)."""
    return shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++") or shutil.which("clang++")


def build_host_library(source: str, build: Path, *flags: str) -> ctypes.CDLL:
    """Compile ``source`` (a file beside this one) into a shared library in ``build`` and load it.

    Raises
    ------
    RuntimeError
        Without a compiler, or with the compiler's messages when the build fails.
    """
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (c++, g++ or clang++)")
    from optixasync._config import kernels_dir  # the package's kernels (checkout or wheel) have no public door

    kernels = Path(build) / "kernels"
    shutil.copytree(kernels_dir(), kernels)
    (kernels / "optixasync_device.h").write_text("#pragma once\n")
    library = Path(build) / f"lib{Path(source).stem}.so"
    command = [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-pthread", "-Wall", "-Wno-unused-function", *flags,
               f"-I{kernels}", str(HERE / source), "-o", str(library)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"host build of {source} failed:\n{result.stderr}")
    return ctypes.CDLL(str(library))


def aligned(array: np.ndarray, alignment: int = 16) -> np.ndarray:
    """A copy of ``array`` whose data starts on an ``alignment``-byte boundary (float4 loads need it)."""
    raw = np.zeros(array.nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def build_pathtracer_library(build: Path, variants=(0, 1, 15), families=None, types=None, *,
                             shapes: bool = False, motion: bool = False, custom: bool = False,
                             features=None) -> ctypes.CDLL:
    """The host build of the path tracer's generated program (the registered families and types by default).

    ``oa_host_launch(params, triangle counts, mesh count, threads, variant)`` runs the raygen of ``variant`` (an
    ``OUTPUT_*`` mask among ``variants``); it returns -1 for a scene with spheres or curves unless the program was
    built for them (``shapes``: the program a scene with shapes compiles, ``OA_SHAPES``), -2 for a scene with
    moving meshes unless built with ``motion`` (``OA_MOTION``), -3 for custom primitives unless built with
    ``custom`` (``OA_CUSTOM``, with the registered custom primitive types). ``features`` specializes the program
    (``optixasync.render._features.ProgramFeatures``; None: the generic one).
    """
    from optixasync.render._source import pathtracer_source

    build = Path(build)
    build.mkdir(parents=True, exist_ok=True)
    source = pathtracer_source(variants, families, types, host=True, shapes=shapes, motion=motion,
                               custom=custom, features=features)
    (build / "program.cu").write_text(source.text)
    lib = build_host_library("pathtracer_host.cpp", build, '-DOA_PROGRAM_SOURCE="program.cu"', f"-I{build}",
                             *(f"-I{d}" for d in source.include_dirs))
    lib.oa_host_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
    lib.oa_host_launch.restype = ctypes.c_int
    return lib


#: ``HostTexture`` of pathtracer_host.cpp: texels pointer, width, height, wrap u, wrap v, nearest.
HOST_TEXTURE = np.dtype({"names": ["texels", "width", "height", "wrap_u", "wrap_v", "nearest"],
                         "formats": ["<u8", "<i4", "<i4", "<i4", "<i4", "<i4"],
                         "offsets": [0, 8, 12, 16, 20, 24], "itemsize": 32})
WRAPS = {"repeat": 0, "clamp": 1, "mirror": 2}


class HostPlacement:
    """The scene tables' placement of the host build: aligned host copies, host textures, numpy environment tables.

    What the device placement uploads is kept here in host arrays; the kernel reads them through the same
    records, which the library's own table code (``optixasync.render._tables``) builds.
    """

    def __init__(self) -> None:
        self.keep: list[np.ndarray] = []  # everything a record points into
        self._shared: dict[int, np.ndarray] = {}

    def _keep(self, array: np.ndarray) -> np.ndarray:
        array = aligned(np.ascontiguousarray(array))
        self.keep.append(array)
        return array

    def upload(self, array: np.ndarray, name: str) -> int:
        return self._keep(array).ctypes.data

    def rewrite(self, address: int, array: np.ndarray, stream=None) -> None:
        target = next(a for a in self.keep if a.ctypes.data == address)
        data = np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8)
        assert data.nbytes == target.nbytes
        target.view(np.uint8).reshape(-1)[...] = data

    def mesh_array(self, array, name: str, dtype, shared: bool) -> np.ndarray:
        target = np.float32 if dtype is np.float32 else np.uint32  # indices read as unsigned, as on the device
        if shared and id(array) in self._shared:
            return self._shared[id(array)]
        placed = self._keep(np.asarray(array, target))
        if shared:
            self._shared[id(array)] = placed
        return placed

    def address(self, placed: np.ndarray) -> int:
        return placed.ctypes.data

    def host_copy(self, placed: np.ndarray, original) -> np.ndarray:
        return placed

    def textures(self, textures):
        from optixasync.io import srgb_to_linear
        from optixasync.render._textures import texel_data

        handles: dict[int, int] = {}
        for texture in textures:
            if id(texture) in handles:
                continue
            data, srgb = texel_data(texture)
            scale = 255.0 if data.dtype == np.uint8 else 65535.0 if data.dtype == np.uint16 else 1.0
            texels = data.astype(np.float32) / scale
            if srgb:
                texels[..., :3] = srgb_to_linear(texels[..., :3], 1.0)
            record = np.zeros((), HOST_TEXTURE)
            record["texels"] = self.upload(np.ascontiguousarray(texels, np.float32), "texels")
            record["height"], record["width"] = texels.shape[:2]
            record["wrap_u"], record["wrap_v"] = WRAPS[texture.wrap[0]], WRAPS[texture.wrap[1]]
            record["nearest"] = int(texture.filter == "nearest")
            handles[id(texture)] = self.upload(np.atleast_1d(record), "texture")
        return lambda texture: 0 if texture is None else handles[id(texture)]

    def environment(self, environment) -> int:
        from optixasync.render._environment import environment_record, environment_tables

        pointers = (0, 0, 0)
        if environment.image is not None:
            pointers = tuple(self.upload(a, "environment table") for a in environment_tables(environment.image))
        return self.upload(np.atleast_1d(environment_record(environment, *pointers)), "environment")

    def environment_record(self, address: int) -> np.ndarray:
        from optixasync.render._environment import ENVIRONMENT_RECORD

        target = next(a for a in self.keep if a.ctypes.data == address)
        return np.frombuffer(target.tobytes(), ENVIRONMENT_RECORD)[0].copy()

    def ready(self):
        return None


#: Output variants: none (a still's launch), the image alone.
PLAIN, IMAGE = 0, 1
#: Threads of a host launch.
THREADS = max(1, min(16, os.cpu_count() or 1))


class HostTracer:
    """The library's own scene tables, placed in host memory, and launches of the host kernel over them.

    The tables are built by the code the device uses (``SceneTables``) through a host placement; the launch
    parameters by the same ``fill_params``. Outputs beside the image are kept in host arrays.
    """

    def __init__(self, lib, scene: Scene, options: RenderOptions) -> None:
        self.lib, self.scene, self.options = lib, check_scene(scene), options
        self.placement = HostPlacement()
        self.tables = SceneTables(scene, self.placement)
        self.record = self.tables.record.copy()
        self.record["handle"] = 1  # the stand-in traces every mesh record; there is no structure
        self.table = self.tables.lights.emitters
        self.counts = np.array([m.num_triangles for m in scene.meshes], np.uint32)
        h, w = options.height, options.width
        self.accum = aligned(np.zeros((h, w, 4), np.float32))
        self.image = aligned(np.zeros((h, w, 4), np.uint8))
        self.sums = aligned(np.zeros((h, w, 2, 4), np.float32))
        self.outputs = {name: aligned(np.zeros((h, w, 4), np.float32)) for name in ("radiance", "albedo", "normal")}

    def launch(self, sample_offset: int, spp: int, variant: int = IMAGE) -> None:
        params = np.zeros((), PATH_PARAMS)
        outputs = {}
        if variant & 14:
            outputs = {"aov_sums": self.sums.ctypes.data, **{k: v.ctypes.data for k, v in self.outputs.items()}}
        fill_params(params, options=self.options, camera=self.scene.camera, accum=self.accum.ctypes.data,
                    scene=self.record, sample_offset=sample_offset, spp=spp,
                    image=self.image.ctypes.data if variant & IMAGE else 0, outputs=outputs)
        status = self.lib.oa_host_launch(params.ctypes.data, self.counts.ctypes.data, len(self.counts), THREADS,
                                         variant)
        if status != 0:
            need = {-1: "shapes=True (spheres or curves)", -2: "motion=True (moving meshes)",
                    -3: "custom=True (custom primitives)"}.get(status, f"status {status}")
            raise RuntimeError(f"the host kernel refused the launch: the scene needs the library built with "
                               f"build_pathtracer_library(..., {need})")

    def place(self, transforms, stream=None) -> None:
        """Move the instanced meshes (the device scene's ``place``: the library's mesh-record rewrite)."""
        from optixasync.render._device_scene import placement_matrices

        self.tables.place(placement_matrices(transforms, len(self.scene.meshes)), stream)

    def render(self, spp: int, per_launch: int | None = None, variant: int = IMAGE) -> np.ndarray:
        per_launch = per_launch or spp
        for offset in range(0, spp, per_launch):
            self.launch(offset, min(per_launch, spp - offset), variant)
        assert (self.accum[..., 3] == 0).all()  # no NaN/Inf sample
        return self.accum[..., :3] / np.float32(spp)


def host_render(lib, scene, spp, **options) -> np.ndarray:
    """The accumulated radiance (H, W, 3) of ``spp`` samples of ``scene`` by the host kernel."""
    return HostTracer(lib, scene, RenderOptions(spp=spp, **options)).render(spp)
