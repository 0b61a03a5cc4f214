"""The host build of a batch's raygens: views, worlds, lanes and every output, run on the CPU.

:class:`HostBatch` fills the launch parameters with the library's own code (``SceneTables`` through the host
placement, ``Views.records``, ``WorldLayout``, ``fill_params``, ``fill_batch``, the integrators' variant masks) and
runs ``oa_host_launch3`` of the host library, whose raygens are the kernel's (``view_pixel.h``). Worlds are placed
by the kernel's own ``place_world_mesh`` through ``oa_host_place_worlds``; the stand-in intersects every world's
records, so a world that saw another's meshes would show it.
"""

from __future__ import annotations

import ctypes
import functools
import tempfile
from pathlib import Path

import numpy as np
from host_build import THREADS, HostPlacement, aligned, build_pathtracer_library

from optixasync.render import RenderOptions, Views, check_scene
from optixasync.render._batch import BatchLaunch
from optixasync.render._gbuffer import GBufferIntegrator
from optixasync.render._layout import PATH_PARAMS, VIEW_BATCH
from optixasync.render._outputs import (
    OUTPUTS,
    VARIANT_PRIMARY,
    VARIANT_VIEWS,
    VARIANT_WORLDS,
    output_mask,
    output_shape,
)
from optixasync.render._params import fill_batch, fill_params
from optixasync.render._path import PathIntegrator as _Path
from optixasync.render._tables import SceneTables
from optixasync.render._views import view_worlds
from optixasync.render._worlds import WorldLayout

__all__ = ["ALL", "GBUFFER", "MASKS", "HostBatch", "batch_library"]

#: Every output bit of the path tracer, and the G-buffer integrator's.
ALL = output_mask(n for n, o in OUTPUTS.items() if o.bit)
GBUFFER = output_mask(GBufferIntegrator.outputs)
V, W, P = VARIANT_VIEWS, VARIANT_WORLDS, VARIANT_PRIMARY
#: The raygens of the batch library: the single camera's plain and colour ones, a batch's plain (lanes), colour,
#: every output, every output with worlds, and the G-buffer integrator's.
MASKS = (0, 3, V, V | 3, V | ALL, V | W | ALL, V | P | GBUFFER)


@functools.lru_cache(maxsize=1)
def batch_library() -> ctypes.CDLL:
    """The host library of :data:`MASKS`, built once per test process."""
    lib = build_pathtracer_library(Path(tempfile.mkdtemp(prefix="oa_views_host_")), MASKS)
    lib.oa_host_launch3.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                    ctypes.c_uint]
    lib.oa_host_launch3.restype = ctypes.c_int
    lib.oa_host_trace_counts.argtypes = [ctypes.c_void_p]
    lib.oa_host_place_worlds.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p,
                                         ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return lib


class HostBatch:
    """A pipeline's batch on the host: tables, views, worlds and the output buffers, launched by the host kernel.

    The variant is one of :data:`MASKS`: every output (with worlds or not), the G-buffer integrator's
    (``gbuffer``), or image and radiance alone (``colour``); ``self.out[name]`` is each of its outputs'
    (views, H, W, C) array (``outputs`` is only what the caller reads).
    """

    def __init__(self, scene, options: RenderOptions, views: Views | None = None, outputs=("radiance",), *,
                 worlds=None, gbuffer: bool = False, colour: bool = False, lib=None) -> None:
        self.lib = lib or batch_library()
        self.scene, self.options = check_scene(scene), options
        self.placement = HostPlacement()
        self.tables = SceneTables(scene, self.placement)
        self.views = views if views is not None else Views.cameras([scene.camera])
        self.layout = WorldLayout.of(scene, worlds) if worlds is not None else None
        self.count = self.views.count
        self.worlds_of = view_worlds(self.views, self.count, self.layout.count if self.layout else 1)
        self.gbuffer = gbuffer
        bits = GBUFFER if gbuffer else 3 if colour else ALL
        self.outputs = tuple(n for n, o in OUTPUTS.items() if o.bit & bits)
        assert set(outputs) <= set(self.outputs), (outputs, self.outputs)
        self._mask = V | bits | (P if gbuffer else 0) | (W if worlds is not None else 0)
        assert self._mask in MASKS, hex(self._mask)
        h, w, b = options.height, options.width, self.count
        self.out = {name: aligned(np.zeros(output_shape(name, w, h, b), OUTPUTS[name].dtype)) for name in self.outputs}
        self.sums = aligned(np.zeros((b, h, w, 2, 4), np.float32))
        self.accum = aligned(np.zeros((b, h, w, 4), np.float32))
        self.record = self.tables.record.copy()
        self.record["handle"] = 1
        self.counts = np.array([m.num_triangles for m in scene.meshes], np.uint32)
        self.materials = aligned(np.asarray(self.tables.materials.indices, np.uint32))
        self.view_records = aligned(self.views.records(w, h, options.seed, self.worlds_of))
        self.previous_views = self.view_records
        self.previous_meshes = None
        if self.layout is not None:
            self._place_worlds()

    def _place_worlds(self) -> None:
        base = self.layout.records(self.tables.mesh_records, self.scene)
        self.world_records = [aligned(base), aligned(base)]
        self.current = 0
        self.instances = aligned(np.zeros((len(base), 20), np.float32))
        self.offsets = aligned(self.layout.offsets)
        self.record["meshes"] = self.world_records[0].ctypes.data
        self.record["instanced"] = 1
        self.counts = np.tile(self.counts, self.layout.count)
        self.movable = aligned(np.asarray(self.layout.movable, np.uint32))

    def move(self, transforms: np.ndarray) -> None:
        """Place the movable meshes by ``transforms`` (worlds, movable, 3 or 4, 4) as the GPU's kernel does."""
        t = aligned(np.ascontiguousarray(transforms, np.float32))
        stride = self.layout.check_transforms_shape(t.shape)
        self.current ^= 1
        records = self.world_records[self.current]
        self.lib.oa_host_place_worlds(t.ctypes.data, stride, self.layout.count, len(self.layout.movable),
                                      self.movable.ctypes.data, self.layout.meshes, self.offsets.ctypes.data,
                                      records.ctypes.data, self.instances.ctypes.data)
        self.previous_meshes = self.world_records[self.current ^ 1]
        self.record["meshes"] = records.ctypes.data

    def set_views(self, views: Views) -> None:
        """New views for the next launch (the current ones become the previous launch's, for motion)."""
        self.previous_views = self.view_records
        self.views = views
        self.view_records = aligned(views.records(self.options.width, self.options.height, self.options.seed,
                                                  self.worlds_of))

    def mask(self) -> int:
        """The variant's mask, as the integrator computes it from the output names."""
        names = {*self.outputs, "+views", *(("+worlds",) if self.layout is not None else ())}
        mask = (GBufferIntegrator if self.gbuffer else _Path).mask_of(names)
        assert mask == self._mask
        return mask

    def batch_record(self, lanes: int) -> np.ndarray:
        record = np.zeros((), VIEW_BATCH)
        record["views"], record["prev_views"] = self.view_records.ctypes.data, self.previous_views.ctypes.data
        record["num_views"], record["lanes"], record["jitter"] = self.count, lanes, int(self.options.jitter)
        record["mesh_materials"], record["pose_stride"] = self.materials.ctypes.data, 12
        if self.layout is not None:
            previous = self.previous_meshes if self.previous_meshes is not None else self.world_records[self.current]
            record["prev_meshes"], record["world_offsets"] = previous.ctypes.data, self.offsets.ctypes.data
            record["cell_lo"], record["cell_hi"] = self.layout.cell_lo, self.layout.cell_hi
            record["meshes_per_world"] = self.layout.meshes
        return record

    def launch(self, sample_offset: int, spp: int, lanes: int = 1, accumulate: bool | None = None) -> None:
        """One launch of ``spp`` samples from ``sample_offset`` (``lanes`` > 1: into lane sums, outputs unwritten)."""
        if lanes > 1 and self.accum.shape[0] != self.count * lanes:
            h, w = self.options.height, self.options.width
            self.accum = aligned(np.zeros((self.count * lanes, h, w, 4), np.float32))
        params = np.zeros((), PATH_PARAMS)
        addresses = {name: a.ctypes.data for name, a in self.out.items()}
        addresses["aov_sums"] = self.sums.ctypes.data
        fill_params(params, options=self.options, camera=self.scene.camera, accum=self.accum.ctypes.data,
                    scene=self.record, sample_offset=sample_offset, spp=spp, image=addresses.get("image", 0),
                    outputs={k: v for k, v in addresses.items() if k in ("radiance", "albedo", "normal", "aov_sums")},
                    accumulate=accumulate)
        fill_batch(params, BatchLaunch(self.batch_record(lanes), None, self.count, self.layout is not None),
                   addresses, lanes)
        mask = self.mask() if lanes == 1 else _Path.mask_of({"+views"})
        self.lib.oa_host_launch3(params.ctypes.data, self.counts.ctypes.data, len(self.counts), THREADS, mask,
                                 self.count * lanes)
        self.previous_views = self.view_records  # a launch's views are the next one's previous views
        self.previous_meshes = None if self.layout is None else self.world_records[self.current]

    def render(self, spp: int, per_launch: int | None = None) -> np.ndarray:
        """Launches of ``per_launch`` samples (default all) from sample 0; the mean radiance (views, H, W, 3)."""
        per_launch = per_launch or spp
        for offset in range(0, spp, per_launch):
            self.launch(offset, min(per_launch, spp - offset))
        return self.accum[..., :3] / np.float32(spp)



