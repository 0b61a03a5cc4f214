"""OptiX pipelines: link, size the stacks, launch.

Blocking calls
--------------
* ``optixPipelineCreate`` compiles on the CPU (set-up).
* ``optixLaunch`` returns at once unless the context has validation mode
  on, in which case it waits for all outstanding work of the context, or
  OptiX's own ring of launch resources wraps (public evidence, see
  :mod:`optixasync.cuda._launch_queue`): then it waits for the oldest launch.
* With a limit on the context's launch queue (off by default),
  :meth:`Pipeline.launch` waits on the oldest queued launch's event first,
  when the limit is reached: the designed wait that replaces OptiX's.

A launch on a stream being captured into a CUDA graph is refused
(:class:`~optixasync.errors.GraphCaptureError`, ``LAUNCH_NOT_REPLAYABLE``).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._optix import check, log_buffer
from .._optix import types as t
from .._optix._primitives import primitive_kind
from ..cuda import capture_of, device_pointer, stream_handle
from ..errors import GraphCaptureError
from ..validation import as_int, coerce_options
from ._groups import ProgramGroup
from ._options import PipelineOptions
from ._sbt import ShaderBindingTable

if TYPE_CHECKING:
    from ..cuda import Context, QueueWait

__all__ = ["MAX_CALLABLE_DEPTH", "Pipeline", "check_callable_depths", "check_primitives", "compute_stack_sizes",
           "merge_stack_sizes"]

#: The deepest callable call graph a pipeline may declare (optixasync's bound; OptiX states none).
MAX_CALLABLE_DEPTH = 64

#: Why an OptiX launch is refused inside a CUDA-graph capture. Measured on an H200 with driver R580 (OptiX ABIs
#: 87, 93 and 105; relaxed, thread-local and global capture modes; with and without a settled device): the capture
#: succeeds, and the replayed launch runs with launch data OptiX no longer holds: the raygen reads zeroed
#: parameters and its threads write past the launch's width at address 0x80 (compute-sanitizer), then the context
#: is lost. A plain CUDA kernel captured and replayed the same way computes the right values.
LAUNCH_NOT_REPLAYABLE = ("an OptiX launch: replayed from a CUDA graph it ran with launch data OptiX no longer held "
                         "(an illegal address on an H200, driver R580); frames with OptiX launches run eagerly")


def merge_stack_sizes(sizes: Sequence[t.StackSizes]) -> t.StackSizes:
    """Field-wise maximum over the stack sizes of several program groups."""
    merged = t.StackSizes()
    for s in sizes:
        for name, _ in t.StackSizes._fields_:
            setattr(merged, name, max(getattr(merged, name), getattr(s, name)))
    return merged


def compute_stack_sizes(
    sizes: t.StackSizes, max_trace_depth: int, max_cc_depth: int = 0, max_dc_depth: int = 0,
    max_dc_depth_from_traversal: int | None = None,
) -> tuple[int, int, int]:
    """The three stack sizes ``optixPipelineSetStackSize`` needs.

    Parameters
    ----------
    sizes : StackSizes
        The field-wise maximum over the pipeline's program groups (:func:`merge_stack_sizes`).
    max_trace_depth : int
        Deepest nesting of traces.
    max_cc_depth : int
        Deepest chain of continuation callables (each calling the next).
    max_dc_depth : int
        Deepest chain of direct callables called from raygen, miss, closest hit or continuation callables.
    max_dc_depth_from_traversal : int, optional
        The same from intersection and any-hit programs (default: ``max_dc_depth``).

    Returns
    -------
    (direct_callable_from_traversal, direct_callable_from_state, continuation)
        In bytes, following the OptiX programming guide's formula: the
        raygen frame, plus one closest-hit/miss frame per nested trace level,
        plus, at the deepest level, the larger of that and intersection+any-hit;
        each frame that may call continuation callables carries their chain.
    """
    from_traversal = max_dc_depth if max_dc_depth_from_traversal is None else max_dc_depth_from_traversal
    cc_tree = max_cc_depth * sizes.cssCC
    ch_or_ms_plus_cc = max(sizes.cssCH, sizes.cssMS) + cc_tree
    continuation = (
        sizes.cssRG
        + cc_tree
        + (max(max_trace_depth, 1) - 1) * ch_or_ms_plus_cc
        + min(max_trace_depth, 1) * max(ch_or_ms_plus_cc, sizes.cssIS + sizes.cssAH)
    )
    return from_traversal * sizes.dssDC, max_dc_depth * sizes.dssDC, continuation


def check_callable_depths(groups: Sequence[ProgramGroup], direct: int, continuation: int) -> None:
    """Refuse callables a pipeline has no stack for.

    Raises
    ------
    ValueError
        A direct callable with ``max_direct_callable_depth`` 0, or a continuation callable with
        ``max_continuation_callable_depth`` 0: OptiX would size no stack for them, and the first call would
        overflow it on the GPU.
    """
    counts = {"direct": (sum(g.direct for g in groups), direct, "max_direct_callable_depth"),
              "continuation": (sum(g.continuation for g in groups), continuation, "max_continuation_callable_depth")}
    for which, (count, depth, name) in counts.items():
        if count and depth == 0:
            raise ValueError(f"the pipeline has {count} {which} callable program(s) but {name} is 0: "
                             f"declare how deep their calls nest ({name}=1 when none calls another)")


def check_primitives(groups: Sequence[ProgramGroup], options: PipelineOptions) -> None:
    """Refuse hit groups whose primitives the pipeline's ``primitive_type_flags`` leave out.

    Raises
    ------
    ValueError
        Naming the flag to add.
    """
    for group in groups:
        if group.intersection is None:
            continue
        kind = primitive_kind(group.intersection)
        if not int(options.primitive_type_flags) & int(kind.flag):
            raise ValueError(f"a hit group intersects {kind.name!r} primitives but the pipeline's "
                             f"primitive_type_flags leave them out: add PrimitiveTypeFlags.{kind.flag.name}")


class Pipeline:
    """A linked OptiX pipeline with its stack sizes set.

    The constructor registers the pipeline with the context, which closes it.

    Parameters
    ----------
    ctx : Context
    program_groups : sequence of ProgramGroup
        Exactly one raygen group, any number of miss, hit and callables groups.
    max_trace_depth : int
        Deepest nesting of ``trace`` calls (1: raygen traces, hit programs do not).
    max_direct_callable_depth, max_continuation_callable_depth : int
        Deepest chain of direct (continuation) callables calling each other: 1 when a program calls one
        and that one calls none. Needed, at least 1, when the groups hold such callables.
    max_traversable_depth : int, optional
        Depth of the traversable graph traced (default: from the options' graph flags, see
        :attr:`PipelineOptions.max_traversable_depth`): an IAS over motion transforms over GASes is 3.
    pipeline_options : PipelineOptions or dict, optional
        Must equal the options every module was compiled with (default: theirs).

    Attributes
    ----------
    stack_sizes : tuple of int
        ``(direct callables from traversal, direct callables from state, continuation)`` in bytes.

    Raises
    ------
    TypeError, ValueError
        Bad groups or depths (see :func:`check_callable_depths`, :func:`check_primitives`), before OptiX
        is asked.
    """

    def __init__(
        self,
        ctx: Context,
        program_groups: Sequence[ProgramGroup],
        *,
        max_trace_depth: int = 1,
        max_direct_callable_depth: int = 0,
        max_continuation_callable_depth: int = 0,
        max_traversable_depth: int | None = None,
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
        self.max_direct_callable_depth = as_int("max_direct_callable_depth", max_direct_callable_depth, 0,
                                                MAX_CALLABLE_DEPTH)
        self.max_continuation_callable_depth = as_int("max_continuation_callable_depth",
                                                      max_continuation_callable_depth, 0, MAX_CALLABLE_DEPTH)
        check_callable_depths(groups, self.max_direct_callable_depth, self.max_continuation_callable_depth)
        self.pipeline_options = options = self._options(groups, pipeline_options)
        check_primitives(groups, options)
        self.max_traversable_depth = (options.max_traversable_depth if max_traversable_depth is None
                                      else as_int("max_traversable_depth", max_traversable_depth, 1, 31))
        self.program_groups = groups
        self.max_trace_depth = max_trace_depth
        self.handle = self._create(groups)
        sizes = merge_stack_sizes([g.stack_sizes(self) for g in groups])
        self.stack_sizes = compute_stack_sizes(sizes, self.max_trace_depth, self.max_continuation_callable_depth,
                                               self.max_direct_callable_depth)
        check(
            ctx.api.optixPipelineSetStackSize(self.handle, *self.stack_sizes, self.max_traversable_depth),
            "optixPipelineSetStackSize",
            api=ctx.api,
        )
        ctx.track(self)

    @staticmethod
    def _options(groups: list[ProgramGroup], given: PipelineOptions | dict | None) -> PipelineOptions:
        module_options = {m.pipeline_options for g in groups for m in g.modules}
        if given is None:
            if len(module_options) > 1:
                raise ValueError("the modules of one pipeline were compiled with different PipelineOptions")
            return next(iter(module_options)) if module_options else PipelineOptions()
        options = coerce_options(PipelineOptions, given)
        if module_options - {options}:
            raise ValueError("pipeline_options differ from the options its modules were compiled with")
        return options

    def _link_options(self) -> Any:
        structs = self.ctx.api.structs
        link = structs.pipeline_link_options()
        link.maxTraceDepth = self.max_trace_depth
        if structs.has_link_depths:  # ABI 118 sizes its default stacks from these; the older ones take them below
            link.maxContinuationCallableDepth = self.max_continuation_callable_depth
            link.maxDirectCallableDepthFromState = self.max_direct_callable_depth
            link.maxDirectCallableDepthFromTraversal = self.max_direct_callable_depth
            link.maxTraversableGraphDepth = self.max_traversable_depth
        return link

    def _create(self, groups: list[ProgramGroup]) -> int:
        ctx = self.ctx
        compile_struct = self.pipeline_options.to_struct(ctx.abi)
        link = self._link_options()
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
        return handle.value or 0

    def launch(
        self, sbt: ShaderBindingTable, params: Any, width: int, height: int = 1, depth: int = 1, *,
        stream: Any = None, params_size: int | None = None, queue_owner: Any = None,
    ) -> QueueWait | None:
        """Enqueue ``optixLaunch`` on ``stream`` (default: the context's stream).

        The launch waits (on the GPU) for the SBT's upload when it ran on another stream. With a limit on the
        context's launch queue (``ctx.launch_queue``, off by default), a launch that would find that many
        launches of the context queued first waits on the host for the oldest one's event (the designed wait
        of :mod:`optixasync.cuda._launch_queue`), and each launch records an event after itself.

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
        queue_owner : object, optional
            Who launches, for the launch queue's causes (a frame scheduler passes its own token).

        Returns
        -------
        QueueWait or None
            The launch queue's wait before this launch, if it had to wait.

        Raises
        ------
        TypeError, ValueError
            On a bad argument, naming it; raised before any GPU work.
        RuntimeError
            If the pipeline or ``sbt`` is closed (its device addresses would be freed memory).
        GraphCaptureError
            If ``stream`` is being captured into a CUDA graph: a replayed OptiX launch does not run what was
            captured (see ``LAUNCH_NOT_REPLAYABLE``); the frame scheduler runs such frames eagerly.
        """
        # Called once or more per frame: plain ints and the owning context pass the checks without the
        # general validators (their Python cost was part of every frame's submit time).
        if not isinstance(sbt, ShaderBindingTable):
            raise TypeError(f"sbt must be a ShaderBindingTable, got {type(sbt).__name__}")
        if sbt.ctx is not self.ctx:
            self.ctx.require_own(sbt, "the shader binding table")
        if type(width) is int and type(height) is int and type(depth) is int:
            dims = (width, height, depth)
        else:
            dims = (as_int("width", width), as_int("height", height), as_int("depth", depth))
        if min(dims) < 1:
            raise ValueError(f"launch dimensions must be at least 1, got {dims}")
        if dims[0] * dims[1] * dims[2] > 2**30:
            raise ValueError(f"launch of {dims} exceeds OptiX's limit of 2**30 threads")
        available = None if type(params) is int else getattr(params, "nbytes", None)
        if params_size is None:
            if available is None:
                raise TypeError("pass params_size when params is not an array")
            params_size = int(available)
        else:
            if type(params_size) is not int or params_size < 0:
                params_size = as_int("params_size", params_size, 0)
            if available is not None and params_size > int(available):
                # OptiX would read past the end of the parameter block.
                raise ValueError(f"params_size {params_size} exceeds the {int(available)} bytes of params")
        if self.handle == 0:
            raise RuntimeError("launch on a closed Pipeline")
        if sbt.closed:
            raise RuntimeError("launch with a closed ShaderBindingTable (its records are freed)")
        target = stream_handle(self.ctx.stream if stream is None else stream)
        queue, wait = self.ctx.launch_queue, None
        if capture_of(target) is not None:
            if not getattr(self.ctx.api, "launches_replay", False):
                raise GraphCaptureError(LAUNCH_NOT_REPLAYABLE)  # (a test's stand-in API may say its launches replay)
            queue = None  # a captured launch is counted by no queue: no wait, no event inside the capture
        elif queue.limit is not None:
            wait = queue.make_room(queue_owner)  # the designed wait, before OptiX would wait inside optixLaunch
        handle = sbt.ready.order(target)
        status = self.ctx.api.optixLaunch(
            self.handle, handle, params if type(params) is int else device_pointer(params), params_size,
            ctypes.byref(sbt.struct), *dims,
        )
        if status:  # OPTIX_SUCCESS is 0: the common case skips the check's call
            check(status, "optixLaunch", api=self.ctx.api)
        if queue is not None and queue.limit is not None:
            queue.record(handle, queue_owner)
        return wait

    def close(self) -> None:
        if self.handle:
            self.ctx.api.optixPipelineDestroy(self.handle)
            self.handle = 0

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
