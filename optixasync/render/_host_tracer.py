"""Launches of the path tracer's host build over the scene tables placed in host memory.

:func:`pathtracer_library` is the CPU device's build of the generated program (``pathtracer_source(...,
host=True)``, the registered BSDF families and light types) with ``kernels/host/pathtracer_host.cpp``, cached
on disk (:mod:`optixasync.cpu._build`). :class:`HostTracer` holds a scene's tables, built by the code the GPU
uses (:class:`~optixasync.render._tables.SceneTables`) through a :class:`HostPlacement`, and runs launches:
``oa_host_launch(params, triangle counts, mesh count, threads, variant)`` runs the raygen of ``variant`` (an
``OUTPUT_*`` mask) for every pixel, with launch parameters written by the same ``fill_params``.

The library keeps a launch's state in globals: launches of one library are serialised by a lock of its own.

Blocking calls
--------------
:meth:`HostTracer.launch` runs the launch on the CPU and returns when it is done (ctypes releases the GIL for
it). :func:`pathtracer_library` may run the compiler (a cache miss).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from ._device_scene import check_scene
from ._host_placement import HostPlacement, aligned
from ._layout import PATH_PARAMS
from ._options import RenderOptions
from ._params import fill_params
from ._tables import SceneTables

__all__ = ["IMAGE", "PLAIN", "HostTracer", "declare", "pathtracer_library", "scene_program"]

#: Output variants: none (a still's launch), the image alone.
PLAIN, IMAGE = 0, 1
#: What a negative status of ``oa_host_launch`` says the program lacks.
_NEEDS = {-1: "spheres or curves (shapes=True)", -2: "moving meshes (motion=True)",
          -3: "custom primitives (custom=True)"}
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    """Declare the launch entry of a path tracer library (and give the library its launch lock); ``lib``."""
    lib.oa_host_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
    lib.oa_host_launch.restype = ctypes.c_int
    with _LOCKS_LOCK:
        _LOCKS.setdefault(str(lib._name), threading.Lock())
    return lib


def scene_program(scene: Any) -> dict[str, bool]:
    """The program keywords a scene needs: ``shapes``, ``motion``, ``custom`` (of ``pathtracer_source``)."""
    custom = any(shape.kind == "custom" for shape in scene.shapes)
    return {"shapes": bool(scene.shapes), "motion": bool(scene.moving), "custom": custom}


def pathtracer_library(variants: tuple[int, ...], *, shapes: bool = False, motion: bool = False,
                       custom: bool = False, features: Any = None) -> ctypes.CDLL:
    """The CPU device's path tracer for the output ``variants`` (built, or loaded from the cache).

    ``features`` (a :class:`~optixasync.render._features.ProgramFeatures`) specializes the program; None: generic.

    Raises
    ------
    CompilerNotFoundError, HostBuildError
        Without a compiler, or when the build fails.
    """
    from ..cpu._build import cached_library
    from ._source import pathtracer_source

    source = pathtracer_source(variants, host=True, shapes=shapes, motion=motion, custom=custom, features=features)
    return declare(cached_library("pathtracer_host.cpp", source.text, include_dirs=source.include_dirs))


class HostTracer:
    """The library's own scene tables, placed in host memory, and launches of the host kernel over them.

    Outputs beside the image are kept in host arrays: ``accum`` (H, W, 4) float32 sums (RGB, dropped samples),
    ``image`` (H, W, 4) uint8 sRGB, ``sums`` and ``outputs`` (radiance, albedo, normal) for variants with them.
    """

    def __init__(self, lib: ctypes.CDLL, scene: Any, options: RenderOptions, threads: int = 1) -> None:
        self.lib, self.scene, self.options = lib, check_scene(scene), options
        self.threads = int(threads)
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

    def launch(self, sample_offset: int, spp: int, variant: int = IMAGE, *, accumulate: bool | None = None,
               camera: Any = None) -> None:
        """Samples ``sample_offset`` ... ``+ spp - 1`` into ``accum`` (added when ``accumulate``: by default, when
        ``sample_offset`` > 0) with the raygen of ``variant``, seen from ``camera`` (default: the scene's)."""
        params = np.zeros((), PATH_PARAMS)
        outputs = {}
        if variant & 14:
            outputs = {"aov_sums": self.sums.ctypes.data, **{k: v.ctypes.data for k, v in self.outputs.items()}}
        fill_params(params, options=self.options, camera=self.scene.camera if camera is None else camera,
                    accum=self.accum.ctypes.data, scene=self.record, sample_offset=sample_offset, spp=spp,
                    image=self.image.ctypes.data if variant & IMAGE else 0, outputs=outputs, accumulate=accumulate)
        with _LOCKS[str(self.lib._name)]:
            status = self.lib.oa_host_launch(params.ctypes.data, self.counts.ctypes.data, len(self.counts),
                                             self.threads, variant)
        if status != 0:
            need = _NEEDS.get(status, f"status {status}")
            raise RuntimeError(f"the host kernel refused the launch: the scene has {need}, which its program "
                               "was not built for")

    def place(self, transforms: Any, stream: Any = None) -> None:
        """Move the instanced meshes (the device scene's ``place``: the library's mesh-record rewrite)."""
        from ._device_scene import placement_matrices

        self.tables.place(placement_matrices(transforms, len(self.scene.meshes)), stream)
