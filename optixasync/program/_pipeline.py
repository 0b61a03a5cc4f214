"""OptiX pipelines: link, size the stacks, launch.

Blocking calls
--------------
* ``optixPipelineCreate`` compiles on the CPU (set-up).
* ``optixLaunch`` returns at once unless the context has validation mode
  on, in which case it waits for all outstanding work of the context.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._optix import check, log_buffer
from .._optix import types as t
from ..cuda import device_pointer
from ..validation import as_int, coerce_options
from ._module import ProgramGroup
from ._options import PipelineOptions
from ._sbt import ShaderBindingTable

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["Pipeline", "compute_stack_sizes", "merge_stack_sizes"]


def merge_stack_sizes(sizes: Sequence[t.StackSizes]) -> t.StackSizes:
    """Field-wise maximum over the stack sizes of several program groups."""
    merged = t.StackSizes()
    for s in sizes:
        for name, _ in t.StackSizes._fields_:
            setattr(merged, name, max(getattr(merged, name), getattr(s, name)))
    return merged


def compute_stack_sizes(
    sizes: t.StackSizes, max_trace_depth: int, max_cc_depth: int = 0, max_dc_depth: int = 0
) -> tuple[int, int, int]:
    """The three stack sizes ``optixPipelineSetStackSize`` needs.

    Returns
    -------
    (direct_callable_from_traversal, direct_callable_from_state, continuation)
        In bytes, following the OptiX programming guide's formula: the
        raygen frame, plus one closest-hit/miss frame per nested trace level,
        plus, at the deepest level, the larger of that and intersection+any-hit.
    """
    cc_tree = max_cc_depth * sizes.cssCC
    ch_or_ms_plus_cc = max(sizes.cssCH, sizes.cssMS) + cc_tree
    dc = max_dc_depth * sizes.dssDC
    continuation = (
        sizes.cssRG
        + cc_tree
        + (max(max_trace_depth, 1) - 1) * ch_or_ms_plus_cc
        + min(max_trace_depth, 1) * max(ch_or_ms_plus_cc, sizes.cssIS + sizes.cssAH)
    )
    return dc, dc, continuation


class Pipeline:
    """A linked OptiX pipeline with its stack sizes set.

    Created through :meth:`Context.create_pipeline` (or this constructor: both
    register the pipeline with the context, which closes it).

    Parameters
    ----------
    ctx : Context
    program_groups : sequence of ProgramGroup
        Exactly one raygen group, any number of miss and hit groups.
    max_trace_depth : int
        Deepest nesting of ``trace`` calls (1: raygen traces, hit programs do not).
    pipeline_options : PipelineOptions or dict, optional
        Must equal the options every module was compiled with (default: theirs).
    """

    def __init__(
        self,
        ctx: Context,
        program_groups: Sequence[ProgramGroup],
        *,
        max_trace_depth: int = 1,
        pipeline_options: PipelineOptions | dict | None = None,
    ) -> None:
        ctx.require_open()
        self.ctx = ctx
        groups = list(program_groups)
        if not groups or not all(isinstance(g, ProgramGroup) for g in groups):
            raise TypeError("program_groups must be a non-empty sequence of ProgramGroup")
        for group in groups:
            ctx.require_own(group, "a program group of the pipeline")
        if sum(g.kind == t.ProgramGroupKind.RAYGEN for g in groups) != 1:
            raise ValueError("a pipeline needs exactly one raygen program group")
        max_trace_depth = as_int("max_trace_depth", max_trace_depth, 1, 31)
        module_options = {m.pipeline_options for g in groups for m in g.modules}
        if pipeline_options is None:
            if len(module_options) > 1:
                raise ValueError("the modules of one pipeline were compiled with different PipelineOptions")
            options = next(iter(module_options)) if module_options else PipelineOptions()
        else:
            options = coerce_options(PipelineOptions, pipeline_options)
            if module_options - {options}:
                raise ValueError("pipeline_options differ from the options its modules were compiled with")
        self.pipeline_options = options
        self.program_groups = groups
        self.max_trace_depth = max_trace_depth

        compile_struct = options.to_struct()
        link = t.PipelineLinkOptions(self.max_trace_depth)
        handles = (ctypes.c_void_p * len(groups))(*[g.handle for g in groups])
        log, log_size = log_buffer()
        handle = ctypes.c_void_p()
        check(
            ctx.api.optixPipelineCreate(
                ctx.handle, ctypes.byref(compile_struct), ctypes.byref(link), handles, len(groups), log,
                ctypes.byref(log_size), ctypes.byref(handle),
            ),
            "optixPipelineCreate",
            log.value,
            api=ctx.api,
        )
        self.handle = handle.value or 0
        sizes = merge_stack_sizes([g.stack_sizes(self) for g in groups])
        dc_traversal, dc_state, continuation = compute_stack_sizes(sizes, self.max_trace_depth)
        self.stack_sizes = (dc_traversal, dc_state, continuation)
        check(
            ctx.api.optixPipelineSetStackSize(
                self.handle, dc_traversal, dc_state, continuation, options.max_traversable_depth
            ),
            "optixPipelineSetStackSize",
            api=ctx.api,
        )
        ctx.track(self)

    def launch(
        self, sbt: ShaderBindingTable, params: Any, width: int, height: int = 1, depth: int = 1, *,
        stream: Any = None, params_size: int | None = None,
    ) -> None:
        """Enqueue ``optixLaunch`` on ``stream`` (default: the context's stream).

        The launch waits (on the GPU) for the SBT's upload when it ran on another stream.

        Parameters
        ----------
        sbt : ShaderBindingTable
            Created with this pipeline's context.
        params : cupy.ndarray, MemoryPointer or int
            Device memory holding the launch parameters. OptiX reads it when
            the launch starts executing, so it must not be overwritten by the
            host before then (use a per-frame slot, see ``FrameScheduler``).
        width, height, depth : int
            Launch dimensions, each at least 1.
        params_size : int, optional
            Size of the parameter block (default: ``params.nbytes``); at most
            ``params.nbytes`` when ``params`` has one.

        Raises
        ------
        TypeError, ValueError
            On a bad argument, naming it; raised before any GPU work.
        RuntimeError
            If the pipeline or ``sbt`` is closed (its device addresses would be freed memory).
        """
        if not isinstance(sbt, ShaderBindingTable):
            raise TypeError(f"sbt must be a ShaderBindingTable, got {type(sbt).__name__}")
        self.ctx.require_own(sbt, "the shader binding table")
        dims = (as_int("width", width), as_int("height", height), as_int("depth", depth))
        if min(dims) < 1:
            raise ValueError(f"launch dimensions must be at least 1, got {dims}")
        if dims[0] * dims[1] * dims[2] > 2**30:
            raise ValueError(f"launch of {dims} exceeds OptiX's limit of 2**30 threads")
        available = getattr(params, "nbytes", None)
        if params_size is None:
            if available is None:
                raise TypeError("pass params_size when params is not an array")
            params_size = int(available)
        else:
            params_size = as_int("params_size", params_size, 0)
            if available is not None and params_size > int(available):
                # OptiX would read past the end of the parameter block.
                raise ValueError(f"params_size {params_size} exceeds the {int(available)} bytes of params")
        if self.handle == 0:
            raise RuntimeError("launch on a closed Pipeline")
        if sbt.closed:
            raise RuntimeError("launch with a closed ShaderBindingTable (its records are freed)")
        handle = sbt.ready.order(self.ctx.stream if stream is None else stream)
        check(
            self.ctx.api.optixLaunch(
                self.handle, handle, device_pointer(params), params_size, ctypes.byref(sbt.struct), *dims
            ),
            "optixLaunch",
            api=self.ctx.api,
        )

    def close(self) -> None:
        if self.handle:
            self.ctx.api.optixPipelineDestroy(self.handle)
            self.handle = 0

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
