"""The instance structure over device-written records: its checks of the records, on the CPU (the build is a GPU
test: ``tests/render/test_views_gpu.py`` runs it through the worlds of a render pipeline)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from optixasync.accel import INSTANCE_DTYPE, DeviceInstanceAccel


def records(nbytes: int, ptr: int = 0x10000, contiguous: bool = True):
    """A stand-in of a CuPy array: its bytes, address and contiguity."""
    return SimpleNamespace(nbytes=nbytes, data=SimpleNamespace(ptr=ptr), flags=SimpleNamespace(c_contiguous=contiguous))


def test_whole_aligned_records_count_their_instances():
    assert INSTANCE_DTYPE.itemsize == 80
    assert DeviceInstanceAccel._check_records(records(80 * 1000)) == 1000


@pytest.mark.parametrize("array, error, match", [
    (b"\x00" * 80, TypeError, "CuPy device array"),
    (records(80 * 3, contiguous=False), ValueError, "C-contiguous"),
    (records(0), ValueError, "whole 80-byte instance records"),
    (records(81), ValueError, "whole 80-byte instance records"),
    (records(80, ptr=0x10008), ValueError, "16-byte boundary"),
    (records(80 * (2**24 + 1)), ValueError, "exceed the 16777216"),
])
def test_bad_records_are_refused_before_any_build(array, error, match):
    with pytest.raises(error, match=match):
        DeviceInstanceAccel._check_records(array)


@pytest.mark.gpu
def test_a_refit_reads_the_records_as_a_kernel_left_them(ctx):
    """Two instances of one triangle; the records' transforms rewritten on the GPU, then one refit: the rays see it."""
    import cupy
    import numpy as np

    from optixasync.accel import AccelOptions, GeometryAccel, Instance, InstanceAccel, RayCaster, TriangleInput

    triangle = GeometryAccel(ctx, TriangleInput(np.array([[-1, -1, 0], [1, -1, 0], [0, 1, 0]], np.float32),
                                                np.array([[0, 1, 2]], np.int32)))
    host = InstanceAccel(ctx, [Instance(triangle, np.eye(3, 4), instance_id=k) for k in range(2)]).records()
    host["transform"][1, :, 3] = (5.0, 0.0, 0.0)
    device = ctx.upload(np.frombuffer(host.tobytes(), np.uint8), ctx.stream)
    ias = DeviceInstanceAccel(ctx, device, [triangle], AccelOptions(allow_update=True), stream=ctx.stream)
    caster = RayCaster(ctx)
    origins = np.array([[0, 0, 1], [5, 0, 1], [9, 0, 1]], np.float32)
    down = np.tile([0, 0, -1], (3, 1)).astype(np.float32)
    np.testing.assert_array_equal(caster.cast(ias, origins, down)["inst"], [0, 1, -1])
    with ctx.memory.scope(ctx.stream):  # a "kernel" moves instance 1 to x = 9, on the stream
        view = device.view(cupy.float32).reshape(2, 20)
        view[1, 3] = 9.0
    ias.refit(ctx.stream)
    np.testing.assert_array_equal(caster.cast(ias, origins, down)["inst"], [0, -1, 1])
    assert ias.refits == 1
    ias.close()
