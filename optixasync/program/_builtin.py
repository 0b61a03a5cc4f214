"""The built-in intersection modules of OptiX: spheres and the curve kinds (``optixBuiltinISModuleGet``).

OptiX intersects spheres and curves with programs of its own. A hit group
for such geometry takes the built-in module of the kind as its
intersection module (and no intersection entry name); the module must be
asked for with the pipeline options of the pipeline it goes into, the
build flags of the structures it intersects, and whether they move.

Blocking calls
--------------
``optixBuiltinISModuleGet`` may compile on the CPU the first time a kind is
asked for: set-up time.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

from .._optix import check
from .._optix import types as t
from .._optix._abi import abi_name
from .._optix._primitives import PrimitiveKind, primitive_kind
from ..validation import coerce_options
from ._options import ModuleOptions, PipelineOptions

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["BuiltinModule", "check_builtin_kind"]

#: Build flags of an ``AccelOptions()`` structure (``prefer="fast_trace"``), the default of both.
DEFAULT_BUILD_FLAGS = int(t.BuildFlags.PREFER_FAST_TRACE)


def check_builtin_kind(kind: PrimitiveKind, abi: int, pipeline_options: PipelineOptions, *, motion: bool,
                       endcaps: bool) -> None:
    """Refuse what OptiX would refuse for a built-in module of ``kind``, naming the fix.

    Raises
    ------
    ValueError
        A kind without a built-in module (triangles, custom primitives), one newer than the ABI, a pipeline
        whose primitive flags leave it out, motion without ``uses_motion_blur``, end caps on a kind without.
    """
    if not kind.builtin:
        raise ValueError(f"{kind.name!r} has no built-in intersection module: OptiX intersects triangles itself, and "
                         "custom primitives need an __intersection__ program of your own")
    if abi < kind.min_abi:
        raise ValueError(f"the {kind.name!r} curves need OptiX ABI {abi_name(kind.min_abi)} or newer; this context "
                         f"uses {abi_name(abi)}: create it with abi={kind.min_abi} or abi='newest'")
    if not int(pipeline_options.primitive_type_flags) & int(kind.flag):
        raise ValueError(f"PipelineOptions.primitive_type_flags must include PrimitiveTypeFlags.{kind.flag.name} for "
                         f"the {kind.name!r} intersection module")
    if motion and not pipeline_options.uses_motion_blur:
        raise ValueError("a built-in module for moving geometry (motion=True) needs "
                         "PipelineOptions(uses_motion_blur=True)")
    if endcaps and not (kind.is_curve and kind.degree and kind.degree > 1):
        raise ValueError(f"end caps are for quadratic and cubic curves; {kind.name!r} has none to switch on "
                         "(linear curves always have round caps)")


class BuiltinModule:
    """The intersection module OptiX provides for spheres or one kind of curve.

    Parameters
    ----------
    ctx : Context
    primitive : str
        ``"sphere"`` or a curve kind (``"linear"``, ``"quadratic_bspline"``, ``"cubic_bspline"``,
        ``"catmull_rom"``, ``"bezier"``, ``"flat_quadratic_bspline"``, and from ABI 105 the ``_rocaps``
        forms of the round quadratic and cubic kinds).
    pipeline_options : PipelineOptions or dict, optional
        Those of the pipeline the module goes into (its ``primitive_type_flags`` must include the kind).
    module_options : ModuleOptions or dict, optional
    build_flags : int
        The build flags of the structures it intersects (``GeometryAccel.options.build_flags``); the default
        is that of ``AccelOptions()``. Structures whose spheres or control points the hit programs read back
        are built with ``random_vertex_access=True``, and their flags passed here.
    motion : bool
        The structures have motion keys (vertex motion blur).
    endcaps : bool
        Flat caps at both ends of quadratic and cubic curve segments (``OPTIX_CURVE_ENDCAP_ON``); the
        curve inputs must be built with the same setting.

    Attributes
    ----------
    kind : PrimitiveKind
    primitive : str
    entries : frozenset
        Empty: a hit group names no intersection entry with a built-in module.

    Raises
    ------
    ValueError
        See :func:`check_builtin_kind`; raised before OptiX is asked.
    """

    def __init__(self, ctx: Context, primitive: str, *, pipeline_options: PipelineOptions | dict | None = None,
                 module_options: ModuleOptions | dict | None = None, build_flags: int = DEFAULT_BUILD_FLAGS,
                 motion: bool = False, endcaps: bool = False) -> None:
        ctx.require_open()
        self.ctx = ctx
        self.kind = primitive_kind(primitive)
        self.primitive = self.kind.name
        self.pipeline_options = coerce_options(PipelineOptions, pipeline_options)
        self.module_options = coerce_options(ModuleOptions, module_options)
        self.motion, self.endcaps = bool(motion), bool(endcaps)
        check_builtin_kind(self.kind, ctx.abi, self.pipeline_options, motion=self.motion, endcaps=self.endcaps)
        self.name = f"builtin {self.primitive}"
        self.entries: frozenset[str] = frozenset()
        self.options = t.BuiltinISOptions(int(self.kind.type), int(self.motion), int(build_flags),
                                          int(t.CurveEndcapFlags.ON if self.endcaps else t.CurveEndcapFlags.DEFAULT))
        module_struct = self.module_options.to_struct(ctx.abi)
        pipeline_struct = self.pipeline_options.to_struct(ctx.abi)
        handle = ctypes.c_void_p()
        check(ctx.api.optixBuiltinISModuleGet(ctx.handle, ctypes.byref(module_struct), ctypes.byref(pipeline_struct),
                                              ctypes.byref(self.options), ctypes.byref(handle)),
              f"optixBuiltinISModuleGet({self.primitive})", api=ctx.api)
        self.handle: int = handle.value or 0
        ctx.track(self)

    def require_entry(self, entry: str, prefix: str) -> bytes:
        raise ValueError(f"the {self.name} intersection module has no entry points: pass it as intersection_module "
                         f"without an intersection name (got {entry!r})")

    def close(self) -> None:
        """Forget the module: built-in modules belong to the OptiX context (no ``optixModuleDestroy`` for them)."""
        self.handle = 0

    def __repr__(self) -> str:
        return f"<optixasync.BuiltinModule {self.primitive}>"
