"""A device context without a device, for the program layer's CPU tests: the OptiX calls answered and recorded.

``FakeContext(abi=...)`` has the real ownership checks of ``Context``; its ``api`` answers module creation (serial
or with tasks), built-in intersection modules, program groups, pipelines and SBT headers, records what it was
asked (``api.calls``), and fails the test on any other OptiX call.
"""

from __future__ import annotations

import ctypes
import itertools
from types import SimpleNamespace

import numpy as np

from optixasync._optix import structs_for
from optixasync._optix import types as t
from optixasync.cuda import Context


class UnexpectedCall(AssertionError):
    pass


def _snapshot(desc: t.ProgramGroupDesc) -> SimpleNamespace:
    """The program group description as it was during the call (its name pointers are only valid then)."""
    def fields(struct: ctypes.Structure) -> SimpleNamespace:
        return SimpleNamespace(**{name: getattr(struct, name) for name, _ in struct._fields_})

    return SimpleNamespace(kind=desc.kind, flags=desc.flags, raygen=fields(desc.raygen), miss=fields(desc.miss),
                           hitgroup=fields(desc.hitgroup), callables=fields(desc.callables))


class FakeApi:
    def __init__(self, abi: int = 87) -> None:
        self.abi = abi
        self.structs = structs_for(abi)
        self._handles = itertools.count(0x1000, 0x10)
        self.calls: list[tuple] = []
        self.stack_sizes = dict(cssRG=100, cssMS=20, cssCH=50, cssAH=8, cssIS=16, cssCC=0, dssDC=0)
        # the compile tasks: task -> its children; a failing task; the state after the last one
        self.task_tree: dict[int, list[int]] = {1: [2, 3, 4], 2: [5, 6], 3: [], 4: [7], 5: [], 6: [], 7: []}
        self.failing_task: int | None = None
        self.cached = False  # a module found in OptiX's disk cache: complete before any task runs
        self.executed: list[int] = []
        self.destroyed: list[int] = []

    def _new_handle(self, handle_ref) -> int:
        handle_ref._obj.value = next(self._handles)  # byref() keeps the object it points at in _obj
        return handle_ref._obj.value

    def optixModuleCreate(self, ctx, module_options, pipeline_options, data, size, log, log_size, handle):
        self.calls.append(("optixModuleCreate", module_options._obj, pipeline_options._obj, bytes(data[:size])))
        self._new_handle(handle)
        return 0

    def optixModuleCreateWithTasks(self, ctx, module_options, pipeline_options, data, size, log, log_size, handle,
                                   first_task):
        self.calls.append(("optixModuleCreateWithTasks", module_options._obj, pipeline_options._obj,
                           bytes(data[:size])))
        self.module = self._new_handle(handle)
        first_task._obj.value = 1
        return 0

    def optixTaskExecute(self, task, children, max_children, created):
        self.executed.append(task)
        if task == self.failing_task:
            created._obj.value = 0
            return 7299
        kids = self.task_tree[task]
        assert len(kids) <= max_children
        for k, kid in enumerate(kids):
            children[k] = kid
        created._obj.value = len(kids)
        return 0

    def optixModuleGetCompilationState(self, module, state):
        done = sorted(self.executed) == sorted(self.task_tree) or self.cached
        failed = self.failing_task is not None
        state._obj.value = int(t.ModuleCompileState.FAILED if failed else
                               t.ModuleCompileState.COMPLETED if done else t.ModuleCompileState.STARTED)
        return 0

    def optixModuleDestroy(self, module):
        self.destroyed.append(module)
        return 0

    def optixBuiltinISModuleGet(self, ctx, module_options, pipeline_options, builtin_options, handle):
        self.calls.append(("optixBuiltinISModuleGet", t.BuiltinISOptions.from_buffer_copy(builtin_options._obj),
                           pipeline_options._obj))
        self._new_handle(handle)
        return 0

    def optixProgramGroupCreate(self, ctx, desc, count, options, log, log_size, handle):
        payload = options._obj.payloadType
        payload_type = None
        if payload:
            struct = t.PayloadType.from_address(payload)
            payload_type = [struct.payloadSemantics[k] for k in range(struct.numPayloadValues)]
        self.calls.append(("optixProgramGroupCreate", _snapshot(desc._obj), payload_type))
        self._new_handle(handle)
        return 0

    def optixProgramGroupGetStackSize(self, group, sizes, pipeline):
        for name, value in self.stack_sizes.items():
            setattr(sizes._obj, name, value)
        return 0

    def optixPipelineCreate(self, ctx, compile_options, link_options, groups, count, log, log_size, handle):
        self.calls.append(("optixPipelineCreate", compile_options._obj, link_options._obj))
        self._new_handle(handle)
        return 0

    def optixPipelineSetStackSize(self, pipeline, dc_traversal, dc_state, continuation, depth):
        self.calls.append(("optixPipelineSetStackSize", (dc_traversal, dc_state, continuation, depth)))
        return 0

    def optixSbtRecordPackHeader(self, group, address):
        ctypes.memset(address, 0xA0 + (group & 0xF), 32)
        return 0

    def optixPipelineDestroy(self, pipeline):
        return 0

    def optixProgramGroupDestroy(self, group):
        return 0

    def error_name(self, status):
        return "OPTIX_ERROR_FAKE"

    def error_string(self, status):
        return "refused"

    def last(self, name: str) -> tuple:
        return next(c for c in reversed(self.calls) if c[0] == name)

    def __getattr__(self, name):
        raise UnexpectedCall(f"unexpected OptiX call {name}")


class FakeContext(Context):
    """A device context without a device: the real ownership checks, stand-ins for the driver and memory."""

    def __init__(self, device_id: int = 0, abi: int = 87) -> None:  # no super().__init__(): it would load the driver
        self.handle = 0xC0DE
        self.device_id = device_id
        self.abi = abi
        self.api = FakeApi(abi)
        self.stream = 0x5000 + device_id  # a raw CUstream handle is a stream-like
        self.tracked: list = []
        self.memory = SimpleNamespace(empty=lambda shape, dtype, stream: SimpleNamespace(
            data=SimpleNamespace(ptr=0xD000), nbytes=int(np.prod(shape)) * np.dtype(dtype).itemsize))
        self.uploads: list = []
        self.deferred = SimpleNamespace(after=lambda stream, *objects: SimpleNamespace(done=True, ptr=0xE000))

    def upload_into(self, target, array, stream=None) -> None:
        self.uploads.append((target, np.array(array)))

    def track(self, resource):
        self.require_open()
        self.tracked.append(resource)
        return resource
