"""OptiX modules compiled from CUDA source at run time, and program groups.

Blocking calls
--------------
NVRTC (on a PTX cache miss), ``optixModuleCreate`` and
``optixProgramGroupCreate`` compile on the CPU: set-up time, seconds on a
cold cache, milliseconds on a warm one.
"""

from __future__ import annotations

import ctypes
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _config
from .._optix import check, log_buffer
from .._optix import types as t
from ..errors import OptixError
from ..validation import coerce_options
from ._cache import compile_ptx_cached
from ._nvrtc import (
    CompileOptions,
    driver_cuda_version,
    fit_ptx_to_driver,
    max_ptx_isa_for_cuda,
    nvrtc_version,
    ptx_isa_version,
    unsupported_ptx_message,
)
from ._options import ModuleOptions, PipelineOptions

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["Module", "ProgramGroup", "resolve_source"]

_log = logging.getLogger("optixasync")
_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_]\w*)")


def resolve_source(source: Any) -> tuple[str, str]:
    """Return ``(text, name)`` for a path, a file name in the package's kernels, or CUDA text."""
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".cu")):
        path = Path(source)
        if not path.is_file():
            candidate = _config.kernels_dir() / path
            if candidate.is_file():
                path = candidate
            else:
                raise FileNotFoundError(f"kernel source {str(source)!r} not found (looked in . and {_config.kernels_dir()})")
        return path.read_text(), path.name
    if isinstance(source, str):
        return source, "program.cu"
    raise TypeError(f"expected a .cu path or CUDA source text, got {type(source).__name__}")


class Module:
    """An OptiX module: CUDA source compiled by NVRTC to PTX, then by OptiX.

    Created through :meth:`Context.create_module` (or this constructor: both
    register the module with the context, which closes it).

    Parameters
    ----------
    ctx : Context
    source : str or Path
        A ``.cu`` path, the name of a kernel shipped with optixasync
        (``"hello_triangle.cu"``), or CUDA source text.
    pipeline_options : PipelineOptions or dict, optional
    module_options : ModuleOptions or dict, optional
    compile_options : CompileOptions or dict, optional
        NVRTC options (include directories, defines, architecture).

    Attributes
    ----------
    entries : frozenset of str
        The ``__global__`` entry points found in the PTX.
    ptx_cache_hit : bool
        Whether the PTX came from optixasync's disk cache.
    compile_seconds : float
        Host time spent in NVRTC (or the cache) plus ``optixModuleCreate``.
    """

    def __init__(
        self,
        ctx: Context,
        source: Any,
        *,
        pipeline_options: PipelineOptions | dict | None = None,
        module_options: ModuleOptions | dict | None = None,
        compile_options: CompileOptions | dict | None = None,
    ) -> None:
        start = time.perf_counter()
        ctx.require_open()
        self.ctx = ctx
        self.pipeline_options = coerce_options(PipelineOptions, pipeline_options)
        self.module_options = coerce_options(ModuleOptions, module_options)
        text, self.name = resolve_source(source)
        ptx, self.ptx_cache_hit = compile_ptx_cached(text, self.name, coerce_options(CompileOptions, compile_options), ctx.abi)
        self.nvrtc_seconds = time.perf_counter() - start
        cuda_version = driver_cuda_version()
        ptx, self.ptx_relabelled = fit_ptx_to_driver(ptx, cuda_version)
        self.entries = frozenset(_ENTRY_RE.findall(ptx))
        optix_start = time.perf_counter()
        self.handle = self._create(ptx, cuda_version)
        self.optix_seconds = time.perf_counter() - optix_start
        self.compile_seconds = time.perf_counter() - start
        ctx.track(self)

    def _create(self, ptx: str, cuda_version: int | None) -> int:
        api = self.ctx.api
        module_struct = self.module_options.to_struct()
        pipeline_struct = self.pipeline_options.to_struct()
        data = ptx.encode()
        log, log_size = log_buffer()
        handle = ctypes.c_void_p()
        status = api.optixModuleCreate(
            self.ctx.handle, ctypes.byref(module_struct), ctypes.byref(pipeline_struct), data, len(data), log,
            ctypes.byref(log_size), ctypes.byref(handle),
        )
        if status != 0 and cuda_version is not None and ptx_isa_version(ptx) > max_ptx_isa_for_cuda(cuda_version):
            raise OptixError(status, api.error_name(status), unsupported_ptx_message(nvrtc_version(), cuda_version),
                             log.value.decode(errors="replace"))
        check(status, f"optixModuleCreate({self.name})", log.value, api=api)
        if log.value:
            _log.debug("optixModuleCreate(%s): %s", self.name, log.value.decode(errors="replace"))
        return handle.value or 0

    def require_entry(self, entry: str, prefix: str) -> bytes:
        """Check that ``entry`` exists and has the OptiX prefix of its program kind."""
        if not isinstance(entry, str):
            raise TypeError(f"entry point name must be a str, got {type(entry).__name__}")
        if not entry.startswith(prefix):
            raise ValueError(f"entry point {entry!r} must start with {prefix!r} for this program kind")
        if entry not in self.entries:
            known = ", ".join(sorted(self.entries)) or "none"
            raise ValueError(f"module {self.name} has no entry point {entry!r}; it defines: {known}")
        return entry.encode()

    def close(self) -> None:
        if self.handle:
            self.ctx.api.optixModuleDestroy(self.handle)
            self.handle = 0

    def __enter__(self) -> Module:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<optixasync.Module {self.name} entries={sorted(self.entries)}>"


class ProgramGroup:
    """A raygen, miss or hit group program group.

    Created with the class methods :meth:`raygen`, :meth:`miss` and
    :meth:`hitgroup` (or ``Context.create_raygen`` and its siblings); it
    registers itself with the context.
    """

    def __init__(self, ctx: Context, kind: t.ProgramGroupKind, desc: t.ProgramGroupDesc,
                 modules: list[Module]) -> None:
        ctx.require_open()
        for module in modules:
            ctx.require_own(module, "the module of a program group")
        self.ctx = ctx
        self.kind = kind
        self.modules = modules  # keep the modules alive while the group exists
        options = t.ProgramGroupOptions()
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
        self.handle = handle.value or 0
        ctx.track(self)

    @classmethod
    def raygen(cls, ctx: Context, module: Module, entry: str) -> ProgramGroup:
        desc = t.ProgramGroupDesc()
        desc.kind = t.ProgramGroupKind.RAYGEN
        desc.raygen.module = module.handle
        desc.raygen.entryFunctionName = module.require_entry(entry, "__raygen__")
        return cls(ctx, t.ProgramGroupKind.RAYGEN, desc, [module])

    @classmethod
    def miss(cls, ctx: Context, module: Module | None, entry: str | None) -> ProgramGroup:
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
        return cls(ctx, t.ProgramGroupKind.MISS, desc, [module] if module else [])

    @classmethod
    def hitgroup(cls, ctx: Context, module: Module, closesthit: str | None = None, anyhit: str | None = None) -> ProgramGroup:
        desc = t.ProgramGroupDesc()
        desc.kind = t.ProgramGroupKind.HITGROUP
        if closesthit is not None:
            desc.hitgroup.moduleCH = module.handle
            desc.hitgroup.entryFunctionNameCH = module.require_entry(closesthit, "__closesthit__")
        if anyhit is not None:
            desc.hitgroup.moduleAH = module.handle
            desc.hitgroup.entryFunctionNameAH = module.require_entry(anyhit, "__anyhit__")
        return cls(ctx, t.ProgramGroupKind.HITGROUP, desc, [module])

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
