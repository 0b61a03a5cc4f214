"""Every bad argument is refused, naming it, before any OIDN call (counted on the library wrapper)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from optixasync.denoise import DenoiseError, Denoiser
from optixasync.denoise._images import check_aliasing, describe_image
from optixasync.denoise._oidn import load_library

H, W = 24, 40


class FakeDeviceArray:
    """Just enough of a device array: ``__cuda_array_interface__`` (v3) over a made-up pointer."""

    def __init__(self, shape=(H, W, 3), typestr="<f4", strides=None, ptr=0x7F0000000000, readonly=False, mask=None,
                 device_id=None) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (ptr, readonly), "strides": strides, "version": 3,
            "stream": 1, "mask": mask,
        }
        if device_id is not None:
            self.device = type("Device", (), {"id": device_id})()


@pytest.fixture()
def images(scene_factory) -> dict[str, np.ndarray]:
    scene = scene_factory(H, W)
    return {"color": scene.noisy.copy(), "output": np.zeros_like(scene.noisy), "albedo": scene.albedo.copy(),
            "normal": scene.normal.copy()}


@pytest.fixture()
def den(oidn_cpu):
    with Denoiser(W, H, {"albedo": True, "normal": True, "clean_aux": True}, device="cpu") as denoiser:
        yield denoiser


def _strided(shape, strides, base=None) -> np.ndarray:
    base = np.zeros(H * W * 8, np.float32) if base is None else base
    return np.lib.stride_tricks.as_strided(base, shape=shape, strides=strides)


def _misaligned() -> np.ndarray:
    raw = np.zeros(H * W * 12 + 8, np.uint8)
    return raw[2 : 2 + H * W * 12].view(np.float32).reshape(H, W, 3)


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


# Each case: (what to change, given the good arrays) -> expected error and the pattern naming the argument.
CASES: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], type[Exception], str]] = [
    ("color float64", lambda a: {"color": a["color"].astype(np.float64)}, TypeError, "color must be float32"),
    ("output float16", lambda a: {"output": a["output"].astype(np.float16)}, TypeError, "output must be float32"),
    ("albedo int32", lambda a: {"albedo": a["albedo"].astype(np.int32)}, TypeError, "albedo must be float32"),
    ("color 2-d", lambda a: {"color": a["color"][..., 0]}, ValueError, r"color must have shape \(height, width, 3\)"),
    ("color 2 channels", lambda a: {"color": a["color"][..., :2]}, ValueError, "color must have shape"),
    ("normal 5 channels", lambda a: {"normal": np.zeros((H, W, 5), np.float32)}, ValueError, "normal must have shape"),
    ("color taller", lambda a: {"color": np.zeros((H + 1, W, 3), np.float32)}, ValueError, r"color is 40x25 .*resize"),
    ("output transposed", lambda a: {"output": np.zeros((W, H, 3), np.float32)}, ValueError, "output is 24x40"),
    ("color strided channels", lambda a: {"color": np.zeros((H, W, 6), np.float32)[..., ::2]}, ValueError,
     "color's channels must be contiguous"),
    ("color reversed channels", lambda a: {"color": a["color"][..., ::-1]}, ValueError,
     "color's channels must be contiguous"),
    ("albedo rows reversed", lambda a: {"albedo": a["albedo"][::-1]}, ValueError, "albedo's row stride"),
    ("color pixel stride 8", lambda a: {"color": _strided((H, W, 3), (W * 12, 8, 4))}, ValueError,
     "color's pixel stride"),
    ("color rows overlap", lambda a: {"color": _strided((H, W, 3), (12, 12 * W, 4))}, ValueError,
     "color's pixel stride|color's row stride"),
    ("output rows overlap", lambda a: {"output": _strided((H, W, 3), (W * 8, 12, 4))}, ValueError,
     "output's row stride"),
    ("normal misaligned", lambda a: {"normal": _misaligned()}, ValueError, "normal's data pointer"),
    ("albedo missing", lambda a: {"albedo": None}, ValueError, "albedo is missing"),
    ("normal missing", lambda a: {"normal": None}, ValueError, "normal is missing"),
    ("output read-only", lambda a: {"output": _readonly(a["output"])}, ValueError, "output is read-only"),
    ("output is albedo", lambda a: {"output": a["albedo"]}, ValueError, "output overlaps albedo"),
    ("output is normal (view)", lambda a: {"output": a["normal"][:, :]}, ValueError, "output overlaps normal"),
    ("output shifted over color", lambda a: _shifted(), ValueError, "output overlaps color without being"),
    ("color device array", lambda a: {"color": FakeDeviceArray()}, TypeError, "color is a device array"),
    ("output list", lambda a: {"output": a["output"].tolist()}, TypeError, "output must be a numpy array"),
    ("stream on cpu", lambda a: {"stream": 12345}, ValueError, "stream: a 'cpu' denoiser"),
]


def _shifted() -> dict[str, np.ndarray]:
    base = np.ones((H + 1, W, 3), np.float32)
    return {"color": base[:-1], "output": base[1:]}


@pytest.mark.parametrize(("change", "error", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_argument_raises_before_any_oidn_call(den, images, change, error, match) -> None:
    lib = load_library()
    kwargs = {**images, **change(images)}
    calls, stats = lib.total_calls(), den.stats
    with pytest.raises(error, match=match):
        den.denoise(**kwargs)
    if "stream" not in kwargs:  # prepare() takes the same images and checks them the same way
        with pytest.raises(error, match=match):
            den.prepare(**kwargs)
    assert lib.total_calls() == calls, f"OIDN was called: {lib.calls}"
    assert den.stats == stats and den.stats.filter_sets_created == 0


def test_unexpected_guide_raises_before_any_oidn_call(oidn_cpu, images) -> None:
    lib = load_library()
    with Denoiser(W, H, device="cpu") as den:
        calls = lib.total_calls()
        with pytest.raises(ValueError, match="albedo was given but the denoiser was created without it"):
            den.denoise(images["color"], images["output"], albedo=images["albedo"])
        with pytest.raises(ValueError, match="normal was given"):
            den.denoise(images["color"], images["output"], normal=images["normal"])
        assert lib.total_calls() == calls


def test_good_arguments_after_bad_ones_work(den, images) -> None:
    with pytest.raises(ValueError):
        den.denoise(images["color"], images["albedo"], images["albedo"], images["normal"])
    den.denoise(**images)
    assert den.stats.frames == 1 and np.abs(images["output"]).sum() > 0


def test_closed_denoiser_refuses(oidn_cpu, images) -> None:
    den = Denoiser(W, H, {"albedo": True, "normal": True}, device="cpu")
    den.close()
    den.close()  # idempotent
    lib = load_library()
    calls = lib.total_calls()
    for call in (lambda: den.denoise(**images), lambda: den.prepare(**images), lambda: den.resize(8, 8),
                 den.synchronize):
        with pytest.raises(DenoiseError, match="closed"):
            call()
    assert lib.total_calls() == calls and den.closed


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((0, H), {}, ValueError, r"width must be in \[1, 65536\]"),
        ((W, 70000), {}, ValueError, "height must be in"),
        ((1.5, H), {}, TypeError, "width must be an integer"),
        ((True, H), {}, TypeError, "width must be an integer, got a bool"),
        ((W, H), {"device": "gpu"}, ValueError, "device must be one of"),
        ((W, H), {"device": "cuda", "device_id": -1}, ValueError, "device_id must be >= 0"),
        ((W, H), {"device": "cuda", "device_id": True}, TypeError, "device_id must be an integer"),
        ((W, H), {"device": "cuda", "device_id": "0"}, TypeError, "device_id must be an integer"),
        ((W, H), {"device": "cuda", "stream": 0}, ValueError, "stream: the legacy default stream"),
        ((W, H), {"device": "cuda", "stream": 1}, ValueError, "stream: the legacy default stream"),
        ((W, H), {"device": "cuda", "stream": "s"}, TypeError, "stream: expected a CUDA stream"),
        ((W, H), {"device": "cuda", "stream": 2.0}, TypeError, "stream: expected a CUDA stream"),
        ((W, H), {"device": "cpu", "stream": 5}, ValueError, "stream: a 'cpu' denoiser"),
        ((W, H, {"quality": "best"}), {"device": "cpu"}, ValueError, "quality must be one of"),
        ((W, H, {"hdr": 1}), {"device": "cpu"}, TypeError, "hdr must be a bool"),
        ((W, H, "high"), {"device": "cpu"}, TypeError, "expected DenoiseOptions, dict or None"),
    ],
)
def test_bad_constructor_arguments_raise_before_any_oidn_call(oidn_cpu, args, kwargs, error, match) -> None:
    lib = load_library()
    calls = lib.total_calls()
    with pytest.raises(error, match=match):
        Denoiser(*args, **kwargs)
    assert lib.total_calls() == calls


# ------------------------------------------------- device-array descriptions ('cuda' rules, no GPU needed)


def test_cuda_array_interface_contiguous() -> None:
    view = describe_image("color", FakeDeviceArray(), "cuda", W, H, 0)
    assert (view.pixel_stride, view.row_stride, view.channels) == (12, W * 12, 3)
    view = describe_image("color", FakeDeviceArray(shape=(H, W, 4)), "cuda", W, H, 0)
    assert (view.pixel_stride, view.row_stride, view.channels) == (16, W * 16, 4)


def test_cuda_array_interface_rgb_view_of_rgba() -> None:
    view = describe_image("color", FakeDeviceArray(strides=(W * 16, 16, 4)), "cuda", W, H, 0)
    assert (view.pixel_stride, view.row_stride) == (16, W * 16)


@pytest.mark.parametrize(
    ("array", "error", "match"),
    [
        (np.zeros((H, W, 3), np.float32), TypeError, "color is a numpy array .*device arrays"),
        (FakeDeviceArray(typestr="<f8"), TypeError, "color must be float32, got float64"),
        (FakeDeviceArray(typestr="<f2"), TypeError, "color must be float32, got float16"),
        (FakeDeviceArray(mask=object()), ValueError, "color is a masked array"),
        (FakeDeviceArray(device_id=1), ValueError, "color lives on CUDA device 1"),
        (FakeDeviceArray(ptr=0), ValueError, "color's data pointer must be non-null"),
        (FakeDeviceArray(strides=(W * 12, 12, 8)), ValueError, "channels must be contiguous"),
        (FakeDeviceArray(shape=(H, W)), ValueError, "color must have shape"),
        (object(), TypeError, "color must expose __cuda_array_interface__"),
    ],
)
def test_cuda_array_interface_refused(array, error, match) -> None:
    with pytest.raises(error, match=match):
        describe_image("color", array, "cuda", W, H, 0)


def test_cuda_read_only_output_and_inplace() -> None:
    color = describe_image("color", FakeDeviceArray(), "cuda", W, H, 0)
    output = describe_image("output", FakeDeviceArray(readonly=True), "cuda", W, H, 0)
    with pytest.raises(ValueError, match="output is read-only"):
        check_aliasing(output, [color])
    same = describe_image("output", FakeDeviceArray(), "cuda", W, H, 0)
    assert check_aliasing(same, [color]) is True
    apart = describe_image("output", FakeDeviceArray(ptr=0x7F0000000000 + H * W * 12), "cuda", W, H, 0)
    assert check_aliasing(apart, [color]) is False


def test_unclosed_denoiser_is_closed_with_a_warning(oidn_cpu, images) -> None:
    import gc

    lib = load_library()
    den = Denoiser(W, H, {"albedo": True, "normal": True}, device="cpu")
    den.denoise(**images)
    assert "on cpu" in repr(den) and "1 filter set(s) cached" in repr(den)
    released = lib.calls["oidnReleaseDevice"]
    with pytest.warns(ResourceWarning, match="without close"):
        del den
        gc.collect()
    assert lib.calls["oidnReleaseDevice"] == released + 1
