"""Program groups: raygen, miss, hit groups (closest hit, any hit, intersection) and callables.

Blocking calls
--------------
``optixProgramGroupCreate`` compiles on the CPU: set-up time.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

from .._optix import check, log_buffer
from .._optix import types as t
from ._builtin import BuiltinModule
from ._module import Module
from ._specialize import PayloadType, pack_payload_types

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["ProgramGroup"]

AnyModule = Module | BuiltinModule


def _payload_options(modules: list[Any], payload_type: PayloadType | None) -> tuple[t.ProgramGroupOptions, Any]:
    """The group options naming ``payload_type``, which every module of the group must declare."""
    options = t.ProgramGroupOptions()
    if payload_type is None:
        return options, None
    if not isinstance(payload_type, PayloadType):
        raise TypeError(f"payload_type must be a PayloadType, got {type(payload_type).__name__}")
    for module in modules:
        if payload_type not in module.module_options.payload_types:
            raise ValueError(f"module {module.name} does not declare this payload type "
                             "(ModuleOptions.payload_types)")
    struct, keep = pack_payload_types((payload_type,))
    options.payloadType = ctypes.addressof(struct)
    return options, keep


class ProgramGroup:
    """A raygen, miss, hit group or callables program group.

    Created with the class methods :meth:`raygen`, :meth:`miss`, :meth:`hitgroup` and :meth:`callables`;
    it registers itself with the context.

    Attributes
    ----------
    kind : ProgramGroupKind
    modules : list
        The modules it uses (kept alive while the group exists).
    direct, continuation : bool
        A callables group: whether it has a direct callable, a continuation callable.
    intersection : str or None
        A hit group: ``"custom"`` with an intersection program of its own, the primitive kind of its
        built-in intersection module, or None (triangles).
    """

    def __init__(self, ctx: Context, kind: t.ProgramGroupKind, desc: t.ProgramGroupDesc, modules: list[Any], *,
                 payload_type: PayloadType | None = None) -> None:
        ctx.require_open()
        for module in modules:
            ctx.require_own(module, "the module of a program group")
        self.ctx = ctx
        self.kind = kind
        self.modules = modules  # keep the modules alive while the group exists
        self.direct = self.continuation = False
        self.intersection: str | None = None
        self.payload_type = payload_type
        options, keep = _payload_options(modules, payload_type)
        log, log_size = log_buffer()
        handle = ctypes.c_void_p()
        check(
            ctx.api.optixProgramGroupCreate(
                ctx.handle, ctypes.byref(desc), 1, ctypes.byref(options), log, ctypes.byref(log_size), ctypes.byref(handle)
            ),
            f"optixProgramGroupCreate({kind.name.lower()})",
            log.value,
            api=ctx.api,
        )
        del keep  # OptiX copied the payload type during the call
        self.handle = handle.value or 0
        ctx.track(self)

    @classmethod
    def raygen(cls, ctx: Context, module: Module, entry: str, *, payload_type: PayloadType | None = None) -> ProgramGroup:
        desc = t.ProgramGroupDesc()
        desc.kind = t.ProgramGroupKind.RAYGEN
        desc.raygen.module = module.handle
        desc.raygen.entryFunctionName = module.require_entry(entry, "__raygen__")
        return cls(ctx, t.ProgramGroupKind.RAYGEN, desc, [module], payload_type=payload_type)

    @classmethod
    def miss(cls, ctx: Context, module: Module | None, entry: str | None, *,
             payload_type: PayloadType | None = None) -> ProgramGroup:
        """A miss program group; ``module=None, entry=None`` makes a group that does nothing on a miss.

        Raises
        ------
        ValueError
            If only one of ``module`` and ``entry`` is given (half a program is a mistake, not "no program").
        """
        if (module is None) != (entry is None):
            given, missing = ("module", "entry") if entry is None else ("entry", "module")
            raise ValueError(f"a miss program group needs both module and entry, or neither: {given} was given "
                             f"without {missing}")
        desc = t.ProgramGroupDesc()
        desc.kind = t.ProgramGroupKind.MISS
        if module is not None and entry is not None:
            desc.miss.module = module.handle
            desc.miss.entryFunctionName = module.require_entry(entry, "__miss__")
        return cls(ctx, t.ProgramGroupKind.MISS, desc, [module] if module else [], payload_type=payload_type)

    @classmethod
    def hitgroup(cls, ctx: Context, module: Module | None = None, closesthit: str | None = None,
                 anyhit: str | None = None, intersection: str | None = None, *,
                 intersection_module: AnyModule | None = None,
                 payload_type: PayloadType | None = None) -> ProgramGroup:
        """A hit group: closest hit and any hit in ``module``, and how its geometry is intersected.

        Parameters
        ----------
        module : Module, optional
            Holds the closest-hit and any-hit programs (and the intersection program, unless
            ``intersection_module`` is given).
        intersection : str, optional
            An ``__intersection__`` program, for custom primitives (AABB inputs).
        intersection_module : Module or BuiltinModule, optional
            The module of the intersection program: a :class:`BuiltinModule` (spheres, curves; then no
            ``intersection`` name), or another module holding ``intersection``.

        Raises
        ------
        ValueError
            A program name without a module, a name the module lacks or with the wrong prefix, a name
            with a built-in module.
        """
        desc = t.ProgramGroupDesc()
        desc.kind = t.ProgramGroupKind.HITGROUP
        if module is None and (closesthit is not None or anyhit is not None):
            raise ValueError("a hit group with closesthit or anyhit programs needs the module that holds them")
        if closesthit is not None:
            desc.hitgroup.moduleCH = module.handle
            desc.hitgroup.entryFunctionNameCH = module.require_entry(closesthit, "__closesthit__")
        if anyhit is not None:
            desc.hitgroup.moduleAH = module.handle
            desc.hitgroup.entryFunctionNameAH = module.require_entry(anyhit, "__anyhit__")
        modules = [module] if module is not None else []
        is_module = intersection_module if intersection_module is not None else module
        kind = None
        if isinstance(intersection_module, BuiltinModule):
            if intersection is not None:
                intersection_module.require_entry(intersection, "__intersection__")  # raises: it has none
            desc.hitgroup.moduleIS = intersection_module.handle
            kind = intersection_module.primitive
        elif intersection is not None:
            if is_module is None:
                raise ValueError("an intersection program needs the module that holds it")
            desc.hitgroup.moduleIS = is_module.handle
            desc.hitgroup.entryFunctionNameIS = is_module.require_entry(intersection, "__intersection__")
            kind = "custom"
        if intersection_module is not None and intersection_module is not module:
            modules.append(intersection_module)
        group = cls(ctx, t.ProgramGroupKind.HITGROUP, desc, modules, payload_type=payload_type)
        group.intersection = kind
        return group

    @classmethod
    def callables(cls, ctx: Context, module: Module, direct: str | None = None, continuation: str | None = None, *,
                  payload_type: PayloadType | None = None) -> ProgramGroup:
        """A callables group: a direct callable, a continuation callable, or both (one SBT record).

        Its index among the SBT's callables records is the ``sbt_index`` of ``oa::direct_call`` and
        ``oa::continuation_call``.

        Raises
        ------
        ValueError
            Neither program given, a name the module lacks or with the wrong prefix
            (``__direct_callable__``, ``__continuation_callable__``).
        """
        if direct is None and continuation is None:
            raise ValueError("a callables group needs a direct callable, a continuation callable, or both")
        desc = t.ProgramGroupDesc()
        desc.kind = t.ProgramGroupKind.CALLABLES
        if direct is not None:
            desc.callables.moduleDC = module.handle
            desc.callables.entryFunctionNameDC = module.require_entry(direct, "__direct_callable__")
        if continuation is not None:
            desc.callables.moduleCC = module.handle
            desc.callables.entryFunctionNameCC = module.require_entry(continuation, "__continuation_callable__")
        group = cls(ctx, t.ProgramGroupKind.CALLABLES, desc, [module], payload_type=payload_type)
        group.direct, group.continuation = direct is not None, continuation is not None
        return group

    def stack_sizes(self, pipeline: Any = None) -> t.StackSizes:
        sizes = t.StackSizes()
        check(
            self.ctx.api.optixProgramGroupGetStackSize(self.handle, ctypes.byref(sizes), pipeline.handle if pipeline else None),
            "optixProgramGroupGetStackSize",
            api=self.ctx.api,
        )
        return sizes

    def pack_header(self, host_address: int) -> None:
        """Write this group's 32-byte SBT record header at ``host_address``."""
        check(self.ctx.api.optixSbtRecordPackHeader(self.handle, host_address), "optixSbtRecordPackHeader", api=self.ctx.api)

    def close(self) -> None:
        if self.handle:
            self.ctx.api.optixProgramGroupDestroy(self.handle)
            self.handle = 0

    def __enter__(self) -> ProgramGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<optixasync.ProgramGroup {self.kind.name.lower()}>"
