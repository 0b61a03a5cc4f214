"""The public Context: bad arguments fail before the machine is asked anything; closing always completes (CPU)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

import optixasync
from optixasync.errors import CudaError


@pytest.mark.parametrize("abi", [84, 0, "87", True, "latest", None])
def test_unsupported_abi_is_a_clear_value_error(monkeypatch, abi):
    monkeypatch.setattr("optixasync.cuda._context.load_cuda_library", _no_machine_call)
    with pytest.raises(ValueError, match=r"OptiX ABI .* is not supported by optixasync; supported: 87 \(OptiX 8.0\), "
                                         r"93 \(OptiX 8.1\), 105 \(OptiX 9.0\), 118 \(OptiX 9.1\), or 'newest'"):
        optixasync.Context(abi=abi)


def test_one_context_class_and_one_creation_path():
    """Context is the one context class (defined in the cuda layer); resources are made by their constructors."""
    import optixasync.cuda

    assert optixasync.Context is optixasync.cuda.Context
    assert not hasattr(optixasync, "DeviceContext") and not hasattr(optixasync.cuda, "DeviceContext")
    assert not [name for name in dir(optixasync.Context) if name.startswith("create_")]


@pytest.mark.parametrize(("level", "exc"), [(5, ValueError), (-1, ValueError), (2.0, TypeError), (True, TypeError)])
def test_log_level_is_checked_before_the_machine_is_asked(monkeypatch, level, exc):
    monkeypatch.setattr("optixasync.cuda._context.load_cuda_library", _no_machine_call)
    with pytest.raises(exc, match="log_level"):
        optixasync.Context(log_level=level)


def _no_machine_call(*args):
    raise AssertionError("the driver was asked before the arguments were checked")


# --- closing: every step runs, the OptiX context always goes ----------------------------------------------------------
#
# A device context is assembled from stand-ins (no driver): what close() and the constructor's clean-up do is
# recorded in `calls`.


class FakeApi:
    def __init__(self, calls: list) -> None:
        self.calls = calls

    def optixDeviceContextCreate(self, cu_context, options, handle):
        handle._obj.value = 0xC0DE  # byref() keeps the object it points at in _obj
        self.calls.append("create")
        return 0

    def optixDeviceContextDestroy(self, handle):
        self.calls.append(("destroy", handle))
        return 0

    def optixDeviceContextGetProperty(self, handle, prop, value, size):
        self.calls.append(("property", prop))
        return 0  # every property reads 0


class FakeResource:
    def __init__(self, calls: list, name: str, error: Exception | None = None) -> None:
        self.calls, self.name, self.error = calls, name, error

    def close(self) -> None:
        self.calls.append(f"close {self.name}")
        if self.error is not None:
            raise self.error


def fake_device_context(cls=optixasync.Context, sync_error: Exception | None = None):
    """A device context over stand-ins, open, as the constructor leaves it; returns it and its call record."""
    calls: list = []
    ctx = cls.__new__(cls)
    _fill(ctx, calls, sync_error)
    return ctx, calls


def _fill(ctx, calls: list, sync_error: Exception | None = None) -> None:
    def synchronize():
        calls.append("synchronize")
        if sync_error is not None:
            raise sync_error

    ctx.handle = 0xC0DE
    ctx.device_id = 0
    ctx.api = FakeApi(calls)
    ctx.device = SimpleNamespace(synchronize=synchronize)
    ctx._tracked, ctx._serial = {}, itertools.count()
    ctx.deferred = SimpleNamespace(clear=lambda: calls.append("deferred.clear"))
    ctx.memory = SimpleNamespace(trim=lambda: calls.append("memory.trim"))
    ctx.pinned = SimpleNamespace(release=lambda: calls.append("pinned.release"))


def test_close_runs_every_step_in_order():
    ctx, calls = fake_device_context()
    first, second = FakeResource(calls, "first"), FakeResource(calls, "second")
    ctx.track(first)
    ctx.track(second)
    ctx.close()
    assert calls == ["synchronize", "close second", "close first", "synchronize", "deferred.clear", "synchronize",
                     "memory.trim", "pinned.release", ("destroy", 0xC0DE)]
    assert ctx.closed
    ctx.close()  # idempotent
    assert calls.count(("destroy", 0xC0DE)) == 1


def test_close_after_a_sticky_error_still_closes_everything_and_raises_the_first_error():
    sticky = CudaError(700, "cudaErrorIllegalAddress", "an illegal memory access was encountered")
    ctx, calls = fake_device_context(sync_error=sticky)
    resources = [FakeResource(calls, "a"), FakeResource(calls, "b", ValueError("b failed")), FakeResource(calls, "c")]
    for resource in resources:
        ctx.track(resource)
    with pytest.raises(CudaError) as info:
        ctx.close()
    assert info.value is sticky  # the first error, not the later ones
    assert ["close c", "close b", "close a"] == [c for c in calls if isinstance(c, str) and c.startswith("close")]
    assert "deferred.clear" not in calls  # the device was not seen idle: what is held stays held
    assert calls[-1] == ("destroy", 0xC0DE) and ctx.closed
    ctx.close()  # closed: nothing is tried again
    assert calls.count(("destroy", 0xC0DE)) == 1


def test_a_failing_close_does_not_hide_the_error_of_a_with_block(caplog):
    ctx, calls = fake_device_context(sync_error=CudaError(700, "cudaErrorIllegalAddress", "illegal address"))
    with pytest.raises(KeyError, match="the body's error"):
        with ctx:
            raise KeyError("the body's error")
    assert ctx.closed and calls[-1] == ("destroy", 0xC0DE)
    assert "cudaErrorIllegalAddress" in caplog.text


def test_a_failure_after_the_optix_context_is_created_destroys_it(monkeypatch):
    calls: list = []
    device = SimpleNamespace(id=0, use=lambda: None)
    cupy = SimpleNamespace(cuda=SimpleNamespace(Device=lambda *args: device, runtime=SimpleNamespace(free=lambda p: None),
                                                driver=SimpleNamespace(ctxGetCurrent=lambda: 0x1234)))
    monkeypatch.setattr("optixasync.cuda._context.load_cuda_library", lambda: object())
    api = FakeApi(calls)
    api.abi = 87
    monkeypatch.setattr("optixasync.cuda._context.get_api", lambda abi: api)
    monkeypatch.setattr("optixasync.cuda._context.require_cupy", lambda: cupy)

    def no_stream():
        raise CudaError(2, "cudaErrorMemoryAllocation", "creating a stream failed")

    monkeypatch.setattr("optixasync.cuda._context.create_stream", no_stream)
    with pytest.raises(CudaError, match="creating a stream"):
        optixasync.Context(disk_cache=False)
    assert calls[0] == "create" and calls[-1] == ("destroy", 0xC0DE)
    assert [c for c in calls[1:-1] if c[0] != "property"] == []


@pytest.mark.parametrize(("abi", "asked"), [(87, 87), (105, 105), ("newest", "newest")])
def test_the_abi_request_reaches_the_binding_and_the_properties_are_read(monkeypatch, abi, asked):
    calls: list = []
    device = SimpleNamespace(id=0, use=lambda: None)
    cupy = SimpleNamespace(cuda=SimpleNamespace(Device=lambda *args: device, runtime=SimpleNamespace(free=lambda p: None),
                                                driver=SimpleNamespace(ctxGetCurrent=lambda: 0x1234)))
    monkeypatch.setattr("optixasync.cuda._context.load_cuda_library", lambda: object())
    requested = []
    api = FakeApi(calls)
    api.abi = 105 if abi == "newest" else abi  # what the negotiation picks on an R580 driver

    def get_api(request):
        requested.append(request)
        return api

    monkeypatch.setattr("optixasync.cuda._context.get_api", get_api)
    monkeypatch.setattr("optixasync.cuda._context.require_cupy", lambda: cupy)

    def stop():
        raise CudaError(2, "cudaErrorMemoryAllocation", "stop here")

    monkeypatch.setattr("optixasync.cuda._context.create_stream", stop)
    with pytest.raises(CudaError, match="stop here"):
        optixasync.Context(abi=abi, disk_cache=False)
    assert requested == [asked]
    asked_properties = [c[1] for c in calls if c[0] == "property"]
    assert 0x2005 in asked_properties and 0x200A in asked_properties  # RT core version, shader execution reordering
    assert (0x200B in asked_properties) == (api.abi >= 105)  # cooperative vectors: ABI 105 and later only


@pytest.mark.parametrize("close_fails", [False, True])
def test_a_failed_set_up_step_closes_the_context_and_raises_its_own_error(monkeypatch, close_fails):
    record: list = []

    def fake_init(self, *args, warm_up=True, **kwargs):
        _fill(self, record, CudaError(700, "cudaErrorIllegalAddress", "illegal address") if close_fails else None)
        self.warm_up = warm_up
        if warm_up:
            self._run_setup_steps()

    def failing_warm_up(ctx):
        raise RuntimeError("the warm-up failed")

    monkeypatch.setattr(optixasync.Context, "__init__", fake_init)
    monkeypatch.setattr("optixasync.cuda._context._setup_steps", [failing_warm_up])
    with pytest.raises(RuntimeError, match="the warm-up failed"):
        optixasync.Context()
    assert record[-1] == ("destroy", 0xC0DE)
    optixasync.Context(warm_up=False)  # no step runs


def test_the_accel_warm_up_is_a_registered_set_up_step():
    from optixasync.accel import _warmup
    from optixasync.cuda import _context, register_setup_step

    assert _warmup.warm_up in _context._setup_steps
    before = list(_context._setup_steps)
    register_setup_step(_warmup.warm_up)  # registering again runs it once
    assert _context._setup_steps == before
