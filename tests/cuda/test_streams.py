"""``stream_handle`` accepts every stream-like kind and refuses the legacy default stream; no GPU needed."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import pytest

from optixasync.cuda import as_cupy_stream, stream_handle


@pytest.mark.parametrize("stream", [0, 1, SimpleNamespace(ptr=0), SimpleNamespace(__cuda_stream__=lambda: (0, 0))])
def test_legacy_default_stream_is_refused(stream):
    with pytest.raises(ValueError, match="legacy default stream"):
        stream_handle(stream)


def test_raw_handle():
    assert stream_handle(0x7F00_1234) == 0x7F00_1234


def test_object_with_ptr():
    assert stream_handle(SimpleNamespace(ptr=0xABC0)) == 0xABC0


def test_cuda_stream_protocol():
    class Foreign:
        def __cuda_stream__(self):
            return (0, 0x5150)

    assert stream_handle(Foreign()) == 0x5150


def test_cuda_stream_protocol_wins_over_ptr():
    class Both:
        ptr = 0x1111

        def __cuda_stream__(self):
            return (0, 0x2222)

    assert stream_handle(Both()) == 0x2222


@pytest.mark.parametrize("stream", ["stream", None, 1.5, object()])
def test_not_a_stream(stream):
    with pytest.raises(TypeError, match="CUDA stream"):
        stream_handle(stream)


def test_result_is_a_plain_int():
    assert type(stream_handle(SimpleNamespace(ptr=0x10))) is int


@pytest.mark.parametrize("handle", [-1, -0x7F00])
def test_negative_handle_is_refused(handle):
    with pytest.raises(ValueError, match="negative"):
        stream_handle(handle)


class ForeignStream:
    """A stream of another library: destroying it (when collected) would destroy its CUstream."""

    def __cuda_stream__(self):
        return (0, 0x5150)


@pytest.mark.filterwarnings("error::DeprecationWarning")  # no ExternalStream: CuPy 14 deprecates it
def test_the_wrapper_of_a_foreign_stream_keeps_it_alive():
    pytest.importorskip("cupy")  # wrapping a handle makes no CUDA call
    foreign = ForeignStream()
    alive = weakref.ref(foreign)
    wrapper = as_cupy_stream(foreign)
    assert wrapper.ptr == 0x5150
    del foreign
    gc.collect()
    assert alive() is not None  # held by the wrapper: structures keep the wrapper, not the user's object
    del wrapper
    gc.collect()
    assert alive() is None
