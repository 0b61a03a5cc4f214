"""The G-buffer integrator, ``"gbuffer"``: camera rays only, no shading (the peer of Mitsuba's ``aov`` integrator).

Each sample traces its camera ray and reports its hit through the same hooks
as the path tracer's first vertex (``kernels/pathtracer/view_path.h``'s
``trace_primary``), so its outputs are the path tracer's bit for bit: depth,
distance, position, the normals, the ids, UV, motion, albedo (the surface's
colour, its textures applied, and emission clamped to [0, 1]), coverage, the
sample count and the ray counter (camera rays only). No light source is
sampled and no BSDF evaluated, so a launch costs one ray per sample. The
program is the path tracer's module with only this integrator's raygens
(``VARIANT_PRIMARY``); every launch is a batch's raygen (one view for the
pipeline's camera).

Blocking calls
--------------
As the path tracer's (:mod:`._path`): compiling at creation, ``optixLaunch``
blocks only with validation mode on.
"""

from __future__ import annotations

from ._integrator import register_integrator
from ._outputs import G_SAMPLE_OUTPUTS, VARIANT_PRIMARY, VARIANT_VIEWS
from ._path import PathIntegrator

__all__ = ["GBufferIntegrator"]


@register_integrator
class GBufferIntegrator(PathIntegrator):
    """Primary hits only (see the module documentation): the outputs of a G-buffer, no colour."""

    name = "gbuffer"
    outputs = G_SAMPLE_OUTPUTS | frozenset({"albedo", "normal", "coverage", "spp", "rays"})
    variant_bits = VARIANT_VIEWS | VARIANT_PRIMARY
    batched = True
