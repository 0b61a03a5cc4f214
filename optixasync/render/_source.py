"""The path tracer's program source: the dispatches over the registered BSDF families and light types, generated.

``kernels/pathtracer.cu`` holds the raygen, hit and miss programs; what a
new BSDF family or light type adds is generated in front of it from the
registered descriptors (:func:`~optixasync.scene.bsdf_families`,
:func:`~optixasync.render.lights.light_types`): the headers' includes, the BSDF
union and its switches (``bsdf.h`` lists what they provide), the light
switches (``light_dispatch.h``), the output sets the raygens are built
for, and, for a scene with spheres or curves, ``OA_SHAPES`` (their
closest-hit programs and hit attributes), for a scene with custom
primitives ``OA_CUSTOM`` and the dispatch over the registered custom
primitive types (:func:`~optixasync.scene.custom_primitives`), for a scene with moving meshes
``OA_MOTION`` (a time per camera path, moving triangles shaded where they
are then). A scene of static meshes compiles without either, as it did
before they existed. The family and type indices are the registration order, which the
material and light records carry (their packers ask the same registries).

The text is a pure function of the registries and the variants, so the PTX
cache (which hashes the source and every header under the include folders)
compiles it once.

Blocking calls
--------------
None: string building.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._config import kernels_dir
from ..scene import BsdfFamily, CustomPrimitiveType, bsdf_families, custom_primitives
from ._features import GENERIC, ProgramFeatures
from ._outputs import VARIANT_VIEWS
from .lights import LightType, light_types

__all__ = ["ProgramSource", "pathtracer_source"]


@dataclass(frozen=True)
class ProgramSource:
    """Generated source text and the include folders it needs beside the package's kernels folder."""

    text: str
    include_dirs: tuple[str, ...]
    variants: tuple[int, ...]


def _include(header: str, dirs: list[str]) -> str:
    """The ``#include`` of a descriptor's header (a folder outside the kernels is added to ``dirs``)."""
    path = Path(header)
    if not path.is_absolute():
        if not (kernels_dir() / path).is_file():
            raise ValueError(f"header {header!r} is not in the package's kernels folder ({kernels_dir()})")
        return f'#include "{path.as_posix()}"'
    if not path.is_file():
        raise ValueError(f"header {header!r} does not exist")
    if str(path.parent) not in dirs:
        dirs.append(str(path.parent))
    return f'#include "{path.name}"'


def _switch(indices: Sequence[int], case: str) -> str:
    """``case k:`` lines for the indices but the first (``case`` formatted with k), and ``default:`` for the first."""
    lines = [f"        case {k}u: {case.format(k=k)}" for k in indices[1:]]
    return "\n".join([*lines, f"        default: {case.format(k=indices[0])}"])


def _bsdf_dispatch(families: Sequence[tuple[int, BsdfFamily]]) -> str:
    """The BSDF union and switches over ``families`` ((registration index, family) pairs; the first is the default:
    an index outside them takes its branch)."""
    indices = [k for k, _ in families]
    first, first_family = families[0]
    members = "\n".join(f"        {f.struct} f{k};" for k, f in families)
    makes = "\n".join([*(f"        case {k}u: b.f{k} = {f.struct}::make(m, uv, color); break;"
                          for k, f in families[1:]),
                        f"        default: b.type = {first}u; b.f{first} = {first_family.struct}::make(m, uv, color); "
                        "break;"])
    transmits = " || ".join(f"(b.type == {k}u && {f.struct}::kTransmits)" for k, f in families)
    return f"""namespace pt {{

struct Bsdf {{
    unsigned int type;
    union {{
{members}
    }};
    __forceinline__ __device__ Bsdf() : type({first}u), f{first}() {{}}
}};

__forceinline__ __device__ Bsdf surface_bsdf(const MaterialRecord& m, float2 uv, float3 color) {{
    Bsdf b;
    b.type = m.type;
    switch (b.type) {{
{makes}
    }}
    return b;
}}

__forceinline__ __device__ bool bsdf_transmits(const Bsdf& b) {{ return {transmits}; }}

__forceinline__ __device__ bool bsdf_is_delta(const Bsdf& b) {{
    switch (b.type) {{
{_switch(indices, "return b.f{k}.is_delta();")}
    }}
}}

__forceinline__ __device__ BsdfValue bsdf_eval(const Bsdf& b, float3 wo, float3 wi) {{
    switch (b.type) {{
{_switch(indices, "return b.f{k}.eval(wo, wi);")}
    }}
}}

__forceinline__ __device__ float bsdf_pdf(const Bsdf& b, float3 wo, float3 wi) {{
    switch (b.type) {{
{_switch(indices, "return b.f{k}.pdf(wo, wi);")}
    }}
}}

__forceinline__ __device__ BsdfSample bsdf_sample(const Bsdf& b, float3 wo, Pcg32& rng) {{
    switch (b.type) {{
{_switch(indices, "return b.f{k}.sample(wo, rng);")}
    }}
}}

}}  // namespace pt
#define OA_BSDF_DISPATCH 1
"""


def _light_dispatch(types: Sequence[tuple[int, LightType]]) -> str:
    """The light switches over ``types`` ((registration index, type) pairs; the first is the default)."""
    def cases(call: str) -> str:
        lines = [f"        case {k}u: return {t.struct}::{call}" for k, t in types[1:]]
        return "\n".join([*lines, f"        default: return {types[0][1].struct}::{call}"])

    sample, scale = cases("sample(light, point, rng);"), cases("scale(light, s, bsdf_pdf);")
    return f"""namespace pt {{

__forceinline__ __device__ LightSample light_sample(const LightRecord& light, float3 point, Pcg32& rng) {{
    switch (light.type) {{
{sample}
    }}
}}

__forceinline__ __device__ float light_scale_of(const LightRecord& light, const LightSample& s, float bsdf_pdf) {{
    switch (light.type) {{
{scale}
    }}
}}

}}  // namespace pt
#define OA_LIGHT_DISPATCH 1
"""


def pathtracer_source(variants: Sequence[int], families: Sequence[BsdfFamily] | None = None,
                      types: Sequence[LightType] | None = None, *, host: bool = False,
                      shapes: bool = False, motion: bool = False, custom: bool = False,
                      customs: Sequence[CustomPrimitiveType] | None = None,
                      features: ProgramFeatures | None = None) -> ProgramSource:
    """The path tracer's source for the output sets ``variants`` (``OUTPUT_*`` bit masks, one raygen each).

    A mask with :data:`~optixasync.render._outputs.VARIANT_VIEWS` is a raygen of a batch of views
    (``kernels/pathtracer/view_pixel.h``, listed in ``OA_VIEW_VARIANTS``); the others are the single camera's
    (``OA_RAYGEN_VARIANTS``). Every raygen is named ``__raygen__outputs_<mask>``.

    ``families`` and ``types`` default to the registered ones (the renderer packs records with those).
    ``host`` adds ``oa_host_raygen(mask)``, which runs a variant's raygen: the entry of the host build of the
    kernel, where there is no OptiX to pick one (the CPU tests). ``shapes`` builds the program for a scene with
    spheres or curves (``OA_SHAPES``: their closest-hit programs, and their hit attributes in the integrator);
    ``motion`` for a scene with moving meshes (``OA_MOTION``: motion blur); ``custom`` for a scene with custom
    primitives (``OA_CUSTOM``, which implies ``shapes``: the intersection program and the dispatch over
    ``customs``, by default the registered custom primitive types). ``features`` (:mod:`._features`) compiles out
    what a scene does not use: the BSDF families and light types outside its sets (their headers are not included;
    the indices stay the registration order) and each switch it turns off; None or
    :data:`~optixasync.render._features.GENERIC` keeps everything.

    Raises
    ------
    ValueError
        On no variant, a variant without the image or radiance, a descriptor's header that does not exist, or features
    that name no registered family or light type among ``families`` and ``types``.
    """
    families = list(bsdf_families() if families is None else families)
    customs = list(custom_primitives() if customs is None else customs)
    shapes = shapes or custom
    if custom and not customs:
        raise ValueError("a program for custom primitives needs at least one registered custom primitive type")
    types = list(light_types() if types is None else types)
    variants = tuple(sorted({int(v) for v in variants}))
    if not variants or not families or not types:
        raise ValueError("the path tracer needs at least one output variant, BSDF family and light type")
    features = GENERIC if features is None else features
    used_families = _kept(families, features.families, "BSDF family")
    used_types = _kept(types, features.light_types, "light type")
    dirs: list[str] = []
    bsdf_includes = "\n".join(_include(f.header, dirs) for _, f in used_families)
    light_includes = "\n".join(_include(t.header, dirs) for _, t in used_types)
    text = "\n".join([
        "// Generated by optixasync.render._source: the registered BSDF families and light types, and the output",
        "// sets of the raygen programs, in front of the path tracer's programs.",
        *(["#define OA_SHAPES 1  // the scene has spheres or curves"] if shapes else []),
        *(["#define OA_MOTION 1  // the scene has moving meshes (motion blur)"] if motion else []),
        *features.defines(),
        '#include "optixasync_device.h"',
        '#include "pathtracer/bsdf_interface.h"',
        '#include "pathtracer/random.h"',
        '#include "pathtracer/records.h"',
        bsdf_includes,
        _bsdf_dispatch(used_families),
        '#include "pathtracer/lights.h"',
        light_includes,
        _light_dispatch(used_types),
        *([_custom_dispatch(customs, dirs)] if custom else []),
        "#define OA_RAYGEN_VARIANTS(X) " + " ".join(f"X({v})" for v in variants if not v & VARIANT_VIEWS),
        "#define OA_VIEW_VARIANTS(X) " + " ".join(f"X({v})" for v in variants if v & VARIANT_VIEWS),
        '#include "pathtracer.cu"',
        _host_entry(variants) if host else "",
        "",
    ])
    return ProgramSource(text, tuple(dirs), variants)


def _kept(items: Sequence[Any], names: frozenset[str] | None, what: str) -> list[tuple[int, Any]]:
    """(registration index, item) of the ``items`` named in ``names`` (all of them for None)."""
    kept = [(k, item) for k, item in enumerate(items) if names is None or item.name in names]
    if not kept:
        raise ValueError(f"the program's features name no {what} of those given: {sorted(names or ())}")
    return kept


def _custom_dispatch(customs: Sequence[CustomPrimitiveType], dirs: list[str]) -> str:
    """The includes of the custom types' headers and their ``custom_intersect`` and ``custom_normal`` dispatch."""
    includes = "\n".join(_include(c.header, dirs) for c in customs)

    def cases(call: str) -> str:
        lines = [f"        case {k}u: return {c.struct}::{call}" for k, c in enumerate(customs) if k > 0]
        return "\n".join([*lines, f"        default: return {customs[0].struct}::{call}"])

    return f"""{includes}
namespace pt {{

__forceinline__ __device__ bool custom_intersect(unsigned int type, const float* data, float3 origin, float3 direction,
                                                 float tmin, float tmax, float& t) {{
    switch (type) {{
{cases("intersect(data, origin, direction, tmin, tmax, t);")}
    }}
}}

__forceinline__ __device__ float3 custom_normal(unsigned int type, const float* data, float3 point) {{
    switch (type) {{
{cases("normal(data, point);")}
    }}
}}

}}  // namespace pt
#define OA_CUSTOM 1
"""


def _host_entry(variants: Sequence[int]) -> str:
    cases = "\n".join(f"        case {v}u: __raygen__outputs_{v}(); break;" for v in variants)
    return f"""extern "C" inline void oa_host_raygen(unsigned int mask) {{
    switch (mask) {{
{cases}
        default: break;
    }}
}}"""
