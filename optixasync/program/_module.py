"""OptiX modules compiled from CUDA source at run time.

Blocking calls
--------------
NVRTC (on a PTX cache miss) and ``optixModuleCreate`` compile on the CPU:
set-up time, seconds on a cold cache, milliseconds on a warm one. With
``compile_threads`` the OptiX part runs as ``optixModuleCreateWithTasks``
plus ``optixTaskExecute`` on that many threads, and the constructor waits
for them.
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
from ..validation import as_int, coerce_options
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
from ._tasks import compilation_state, execute_tasks

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["MAX_COMPILE_THREADS", "Module", "check_module_options", "resolve_source"]

_log = logging.getLogger("optixasync")
_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_]\w*)")
# Callables are device functions, not kernels: ``.visible .func (.param ...) __direct_callable__name(``.
_CALLABLE_RE = re.compile(r"\.func\s+(?:\([^)]*\)\s*)?(__(?:direct|continuation)_callable__\w+)")
#: The most threads ``compile_threads`` may ask for.
MAX_COMPILE_THREADS = 256


def check_module_options(module_options: ModuleOptions, pipeline_options: PipelineOptions) -> None:
    """Refuse combinations OptiX refuses, before it is asked.

    Raises
    ------
    ValueError
        Payload types with ``num_payload_values`` other than 0, or a bound value beyond the launch
        parameters' declared size.
    """
    if module_options.payload_types and pipeline_options.num_payload_values != 0:
        raise ValueError("a module with payload types needs PipelineOptions(num_payload_values=0): the payload "
                         f"types say how many registers each trace carries (got {pipeline_options.num_payload_values})")
    size = pipeline_options.launch_params_size
    for value in module_options.bound_values:
        if size and value.end > size:
            raise ValueError(f"bound value {value.annotation or value.offset!r} ends at byte {value.end}, past the "
                             f"{size} bytes of the launch parameters (PipelineOptions.launch_params_size)")


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

    The constructor registers the module with the context, which closes it.

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
    compile_threads : int
        0 (the default): one ``optixModuleCreate`` call compiles the module. N > 0: the module is created
        with ``optixModuleCreateWithTasks`` and its tasks run on N threads (parallel compilation of one
        module; the result is the same module). Off by default: the serial call is the path every GPU run
        of the test suite has taken.

    Attributes
    ----------
    entries : frozenset of str
        The ``__global__`` entry points found in the PTX, and the direct and continuation callables
        (``__direct_callable__``, ``__continuation_callable__`` device functions).
    tasks_executed : int
        With ``compile_threads``: how many compile tasks ran (0 otherwise).
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
        compile_threads: int = 0,
    ) -> None:
        start = time.perf_counter()
        ctx.require_open()
        self.ctx = ctx
        self.pipeline_options = coerce_options(PipelineOptions, pipeline_options)
        self.module_options = coerce_options(ModuleOptions, module_options)
        self.compile_threads = as_int("compile_threads", compile_threads, 0, MAX_COMPILE_THREADS)
        check_module_options(self.module_options, self.pipeline_options)
        self.tasks_executed = 0
        text, self.name = resolve_source(source)
        ptx, self.ptx_cache_hit = compile_ptx_cached(text, self.name, coerce_options(CompileOptions, compile_options), ctx.abi)
        self.nvrtc_seconds = time.perf_counter() - start
        cuda_version = driver_cuda_version()
        ptx, self.ptx_relabelled = fit_ptx_to_driver(ptx, cuda_version)
        self.entries = frozenset(_ENTRY_RE.findall(ptx)) | frozenset(_CALLABLE_RE.findall(ptx))
        optix_start = time.perf_counter()
        self.handle = self._create(ptx, cuda_version)
        self.optix_seconds = time.perf_counter() - optix_start
        self.compile_seconds = time.perf_counter() - start
        ctx.track(self)

    def _create(self, ptx: str, cuda_version: int | None) -> int:
        api = self.ctx.api
        module_struct = self.module_options.to_struct(self.ctx.abi)
        pipeline_struct = self.pipeline_options.to_struct(self.ctx.abi)
        data = ptx.encode()  # with tasks, OptiX reads it until the last task has run: held here until then
        log, log_size = log_buffer()
        handle = ctypes.c_void_p()
        args = (self.ctx.handle, ctypes.byref(module_struct), ctypes.byref(pipeline_struct), data, len(data), log,
                ctypes.byref(log_size), ctypes.byref(handle))
        if self.compile_threads:
            first_task = ctypes.c_void_p()
            status = api.optixModuleCreateWithTasks(*args, ctypes.byref(first_task))
        else:
            status = api.optixModuleCreate(*args)
        if status != 0 and cuda_version is not None and ptx_isa_version(ptx) > max_ptx_isa_for_cuda(cuda_version):
            raise OptixError(status, api.error_name(status), unsupported_ptx_message(nvrtc_version(), cuda_version),
                             log.value.decode(errors="replace"))
        check(status, f"{'optixModuleCreateWithTasks' if self.compile_threads else 'optixModuleCreate'}({self.name})",
              log.value, api=api)
        if self.compile_threads:
            self._run_tasks(handle.value or 0, first_task.value or 0, log)
        if log.value:
            _log.debug("optixModuleCreate(%s): %s", self.name, log.value.decode(errors="replace"))
        return handle.value or 0

    def _run_tasks(self, handle: int, first_task: int, log: Any) -> None:
        """Run the module's compile tasks; destroy it and raise if its compilation did not complete."""
        api = self.ctx.api
        try:
            failures: list[int] = []
            # A module OptiX found in its disk cache may be complete already, with no task to run.
            if first_task and compilation_state(api, handle) != t.ModuleCompileState.COMPLETED:
                self.tasks_executed, failures = execute_tasks(api, first_task, self.compile_threads)
            state = compilation_state(api, handle)
        except BaseException:
            api.optixModuleDestroy(handle)
            raise
        if state != t.ModuleCompileState.COMPLETED:
            api.optixModuleDestroy(handle)
            status = failures[0] if failures else int(t.OptixResult.ERROR_INTERNAL_COMPILER_ERROR)
            check(status, f"optixTaskExecute({self.name}) left the module {state.name.lower()}", log.value, api=api)

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
