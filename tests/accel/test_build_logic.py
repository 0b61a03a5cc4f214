"""Build bookkeeping of acceleration structures on a stand-in device context (CPU, no driver).

The stand-in answers the OptiX calls a build makes and records, in order, what the device would be asked
to do (event records, copies, stream waits, deferred releases), so the order of those requests is checked
here without a GPU.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from optixasync._optix import types as t
from optixasync.accel import AccelStructure, GeometryAccel, Instance, InstanceAccel, RayCaster
from optixasync.cuda import Context
from optixasync.errors import OptixError


class FakeStream:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class FakeEvent:
    def __init__(self, log: list, kind: str) -> None:
        self.log, self.kind = log, kind
        self.ptr = id(self)
        self.done = False

    def record(self, stream) -> None:
        self.log.append(("record", self.kind, stream.ptr, self))


class FakeApi:
    """The OptiX calls of a build; ``fail`` makes ``optixAccelBuild`` refuse; its builds may be captured."""

    builds_replay = True

    def __init__(self) -> None:
        self.fail = False
        self.builds = 0
        self._handles = itertools.count(0x100)

    def optixAccelComputeMemoryUsage(self, ctx, options, structs, count, sizes):
        sizes._obj.outputSizeInBytes, sizes._obj.tempSizeInBytes, sizes._obj.tempUpdateSizeInBytes = 256, 128, 64
        return 0

    def optixAccelBuild(self, ctx, stream, options, structs, count, temp, temp_size, output, output_size, handle,
                        emit, emit_count):
        if self.fail:
            return 7001
        self.builds += 1
        handle._obj.value = next(self._handles)
        return 0

    def error_name(self, status):
        return "OPTIX_ERROR_INVALID_VALUE"

    def error_string(self, status):
        return "refused"


class FakeContext(Context):
    """A device context without a device: the real ownership checks, stand-ins for the driver and memory."""

    def __init__(self, device_id: int = 0) -> None:  # no super().__init__(): it would load the driver
        self.handle = 0xC0DE
        self.device_id = device_id
        self.api = FakeApi()
        self.log: list = []
        self.stream = FakeStream(0x5000)
        self.tracked: list = []
        addresses = itertools.count(0xD000, 0x100)
        self.memory = SimpleNamespace(
            alloc=lambda nbytes, stream: SimpleNamespace(ptr=next(addresses), nbytes=nbytes),
            empty=lambda shape, dtype, stream: SimpleNamespace(data=SimpleNamespace(ptr=next(addresses)), shape=shape,
                                                               dtype=np.dtype(dtype)))
        self.pinned = SimpleNamespace(download=self._download)
        self.deferred = SimpleNamespace(after=self._after)

    def _after(self, stream, *objects):
        self.log.append(("deferred", stream.ptr, objects))
        event = FakeEvent(self.log, "fence")
        event.record(stream)
        return event

    def _download(self, device_array, stream):
        view = np.zeros(device_array.shape, device_array.dtype)
        self.log.append(("copy", stream.ptr, view))
        return view

    def upload(self, array, stream=None):
        return SimpleNamespace(data=SimpleNamespace(ptr=0xF000))

    def track(self, resource):
        self.require_open()
        self.tracked.append(resource)
        return resource


class StandInAccel(AccelStructure):
    """A structure with one (empty) build input: what the base class does, without geometry."""

    def __init__(self, ctx, options=None) -> None:
        super().__init__(ctx, options, None)
        self._count = 1
        self._structs = (t.BuildInput * 1)()
        self._build(t.BuildOperation.BUILD, self.stream)

    def rebuild(self, stream) -> None:
        self._build(t.BuildOperation.BUILD, self._use_stream(stream))

    def _release_inputs(self) -> None:
        self._structs = None


@pytest.fixture
def ctx(monkeypatch):
    context = FakeContext()
    timing_events: list = []

    def timing_event():
        timing_events.append(FakeEvent(context.log, "timing"))
        return timing_events[-1]

    monkeypatch.setattr("optixasync.cuda._events.timing_event", timing_event)
    monkeypatch.setattr("optixasync.cuda._ready.wait_event",
                        lambda stream, event: context.log.append(("wait", stream, event)))
    monkeypatch.setattr("optixasync.cuda._ready.event_done", lambda event: event.done)
    context.timing_events = timing_events
    return context


def test_with_compaction_the_structure_is_ready_only_after_the_size_copy(ctx):
    accel = StandInAccel(ctx, {"allow_compaction": True})
    copy = next(k for k, entry in enumerate(ctx.log) if entry[0] == "copy")
    staging = ctx.log[copy][2]
    ready = accel.ready.event
    assert ready.kind == "fence" and ctx.log.index(("record", "fence", 0x5000, ready)) > copy
    assert accel._size_event is ready  # compacted_size reads the staging once this event has passed

    other = FakeStream(0x6000)
    accel.rebuild(other)
    wait = ctx.log.index(("wait", 0x6000, ready))
    handed = next(k for k, entry in enumerate(ctx.log) if entry[0] == "deferred" and staging in entry[2])
    assert ctx.log[handed][1] == 0x6000 and handed > wait  # the staging goes back only after the copy


def test_without_compaction_the_structure_is_ready_after_the_build(ctx):
    accel = StandInAccel(ctx)
    assert accel.ready.event.kind == "timing" and accel.ready.event is accel._build_timer._pending[-1].end
    assert not any(entry[0] == "copy" for entry in ctx.log)


def test_a_failed_rebuild_closes_the_structure_and_gives_back_the_start_event(ctx):
    accel = StandInAccel(ctx, {"allow_compaction": True})
    ctx.api.fail = True
    with pytest.raises(OptixError, match="optixAccelBuild"):
        accel.rebuild(None)
    assert accel.handle == 0 and accel.buffer is None and accel._size_staging is None
    with pytest.raises(RuntimeError, match="StandInAccel is closed"):
        accel.rebuild(None)
    created = len(ctx.timing_events)
    accel._build_timer.start(ctx.stream)
    assert len(ctx.timing_events) == created  # the failed build's start event came back to the pool


def test_a_failed_first_build_leaves_a_closed_structure(ctx):
    ctx.api.fail = True
    with pytest.raises(OptixError, match="optixAccelBuild"):
        StandInAccel(ctx, {"allow_update": True})
    accel = ctx.tracked[-1]
    assert accel.handle == 0 and accel.buffer is None and accel._temp_update is None


def test_instance_accel_rebuild_checks_everything_before_changing_its_instances(ctx):
    child, other = StandInAccel(ctx), StandInAccel(ctx)
    ias = InstanceAccel(ctx, [Instance(child)])
    instances = list(ias.instances)
    other.close()
    with pytest.raises(ValueError, match="instance 1 refers to a closed acceleration structure"):
        ias.rebuild([Instance(child), Instance(other)])
    assert ias.instances == instances
    foreign = StandInAccel(FakeContext(device_id=1))
    with pytest.raises(ValueError, match="belongs to another context"):
        ias.rebuild([Instance(foreign)])
    assert ias.instances == instances
    ias.close()
    with pytest.raises(RuntimeError, match="InstanceAccel is closed"):
        ias.rebuild([Instance(child)])
    assert ias.instances == instances


@pytest.mark.parametrize(("name", "value", "exc"), [("visibility_mask", 0x100, ValueError), ("instance_id", 1.0, TypeError),
                                                    ("sbt_offset", -1, ValueError), ("flags", True, TypeError)])
def test_instance_fields_are_integers_in_range(ctx, name, value, exc):
    with pytest.raises(exc, match=f"Instance.{name}"):
        Instance(StandInAccel(ctx), **{name: value})
    instance = Instance(StandInAccel(ctx), visibility_mask=np.uint8(3), flags=np.int64(1))
    assert type(instance.visibility_mask) is int and type(instance.flags) is int


def test_casting_against_a_closed_structure_is_refused(ctx):
    accel = StandInAccel(ctx)
    accel.close()
    caster = RayCaster.__new__(RayCaster)  # its pipeline is never reached
    caster.ctx = ctx
    rays = np.zeros((4, 3), np.float32)
    with pytest.raises(RuntimeError, match="closed StandInAccel"):
        caster.cast(accel, rays, rays)


def test_a_library_array_of_another_device_is_refused_before_the_build(ctx):
    pytest.importorskip("cupy")  # the view is labelled with its device; no CUDA call is made
    from optixasync.cuda._interop import _Owner, _view

    on_device_1 = _view(0x10000, (3, 3), np.dtype(np.float32), _Owner(object()), 1)
    gas = GeometryAccel.__new__(GeometryAccel)
    gas.ctx = ctx
    with pytest.raises(ValueError, match="vertices is on CUDA device 1, but the optixasync context is on device 0"):
        gas._device_array(on_device_1, ctx.stream, "vertices", np.float32)
    on_device_0 = _view(0x10000, (3, 3), np.dtype(np.float32), _Owner(object()), 0)
    assert gas._device_array(on_device_0, ctx.stream, "vertices", np.float32) is on_device_0



def test_a_build_api_that_cannot_be_captured_refuses_the_refit_before_calling_optix(ctx):
    from optixasync.accel._base import BUILD_NOT_CAPTURABLE
    from optixasync.cuda._capture import Capture, _active
    from optixasync.errors import GraphCaptureError

    accel = StandInAccel(ctx, {"allow_update": True})
    handle = ctx.stream.ptr
    ctx.api.builds_replay = False
    _active[handle] = Capture(handle)
    try:
        builds = ctx.api.builds
        with pytest.raises(GraphCaptureError) as refused:
            accel._build(t.BuildOperation.UPDATE, ctx.stream)
        assert refused.value.reason == BUILD_NOT_CAPTURABLE and ctx.api.builds == builds
    finally:
        del _active[handle]
        ctx.api.builds_replay = True
    accel._build(t.BuildOperation.UPDATE, ctx.stream)  # outside the capture it refits
    assert ctx.api.builds == builds + 1


def test_a_refit_captured_into_a_graph_counts_and_checks_itself_at_every_launch(ctx):
    from optixasync.cuda._capture import Capture, _active

    accel = StandInAccel(ctx, {"allow_update": True, "rebuild_every": 3})
    handle = ctx.stream.ptr
    capture = Capture(handle)
    _active[handle] = capture  # the stream is being captured (what StreamGraph.record does around the work)
    records = len([e for e in ctx.log if e[0] == "record"])
    try:
        accel._build(t.BuildOperation.UPDATE, ctx.stream)
    finally:
        del _active[handle]
    accel._refits_since_build += 1  # what GeometryAccel.refit counts after the call
    accel.refits += 1
    assert len([e for e in ctx.log if e[0] == "record"]) == records  # no event recorded inside the capture
    assert accel.buffer in capture.holds
    assert [check() for check in capture.checks] == [None]
    end = FakeEvent(ctx.log, "fence")
    launches = [[hook(end, ctx.stream) for hook in capture.hooks] for _ in range(3)]
    assert accel.refits == 3  # the first launch is the call's own; two more refits
    assert accel.ready.event is end  # streams that trace the structure order after the graph's launch
    assert launches[0] == launches[1] == [None, None]
    assert launches[2][0] == "the structure's next refit is a full rebuild (AccelOptions.rebuild_every)"
    accel.rebuild(ctx.stream)  # outside the graph: new buffers
    assert [check() for check in capture.checks] == [
        "the acceleration structure was rebuilt, compacted or closed since the capture"]
