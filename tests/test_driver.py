"""The driver probe: the driver's CUDA version, the matching extra, and one message per missing piece; CPU only.

``optixasync._driver`` is the package's one driver probe (the CLI, the compiler, the examples and this suite's
GPU skips ask it) and has no public re-export beyond ``optixasync.program.driver_cuda_version``; its answers are
cached per process, so each test that fakes the driver clears the caches before and after.
"""

from __future__ import annotations

import sys

import pytest

from optixasync import _driver
from optixasync.errors import MissingExtraError, OptixAsyncError
from optixasync.program import driver_cuda_version


def _clear_caches() -> None:
    _driver._cuda_library.cache_clear()
    driver_cuda_version.cache_clear()
    _driver.device_count.cache_clear()


@pytest.fixture
def fresh_probe():
    """The probe's cached answers forgotten before the test and after it (so later tests see the real machine)."""
    _clear_caches()
    yield
    _clear_caches()


@pytest.fixture
def no_driver(monkeypatch, fresh_probe):
    """A machine where no driver library loads."""

    def no_lib(name, *args, **kwargs):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(_driver.ctypes, "CDLL", no_lib)


# --- driver_cuda_version --------------------------------------------------------------------------------------------


def test_program_reexports_the_probe():
    assert driver_cuda_version is _driver.driver_cuda_version


def test_driver_cuda_version_type(fresh_probe):
    version = driver_cuda_version()
    assert version is None or (isinstance(version, int) and version >= 10000)


def test_driver_cuda_version_without_driver(no_driver):
    assert driver_cuda_version() is None
    assert _driver.load_cuda_library() is None


def test_driver_cuda_version_with_fake_driver(monkeypatch, fresh_probe):
    class FakeFn:
        def __call__(self, ref):
            ref._obj.value = 13000  # byref() keeps the c_int it points at in _obj
            return 0

    class FakeLib:
        cuDriverGetVersion = FakeFn()

    monkeypatch.setattr(_driver.ctypes, "CDLL", lambda name: FakeLib())
    assert driver_cuda_version() == 13000
    assert _driver.cuda_extra() == "cuda13"


def test_driver_cuda_version_of_a_refusing_driver(monkeypatch, fresh_probe):
    class FakeLib:
        @staticmethod
        def cuDriverGetVersion(ref):
            return 3  # CUDA_ERROR_NOT_INITIALIZED

    monkeypatch.setattr(_driver.ctypes, "CDLL", lambda name: FakeLib())
    assert driver_cuda_version() is None


# --- cuda_extra -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "extra"), [(13000, "cuda13"), (13050, "cuda13"), (14000, "cuda13"),
                                                (12040, "cuda12"), (12090, "cuda12")])
def test_cuda_extra(version, extra):
    assert _driver.cuda_extra(version) == extra


def test_cuda_extra_without_a_version(no_driver):
    assert _driver.cuda_extra(None) is None
    assert _driver.cuda_extra() is None


# --- messages -------------------------------------------------------------------------------------------------------


def test_no_driver_message():
    message = _driver.no_driver_message()
    assert "\n" not in message
    assert _driver.CUDA_LIBRARY in message
    assert "install the NVIDIA driver" in message
    assert "R535" in message
    assert "container" in message
    detailed = _driver.no_driver_message("libcuda.so.1: cannot open shared object file")
    assert "\n" not in detailed
    assert detailed == message + " [libcuda.so.1: cannot open shared object file]"


def test_no_optix_message():
    message = _driver.no_optix_message()
    assert "\n" not in message
    assert "libnvoptix.so.1" in message
    assert "NVIDIA_DRIVER_CAPABILITIES" in message
    assert "graphics" in message
    assert "OPTIXASYNC_OPTIX_LIBRARY" in message  # what to do when it is installed elsewhere
    assert "R535" in message
    detailed = _driver.no_optix_message("libnvoptix.so.1: cannot open shared object file")
    assert "\n" not in detailed
    assert detailed.endswith(" [libnvoptix.so.1: cannot open shared object file]")
    assert detailed.count("libnvoptix.so.1: cannot open") == 1


# --- unavailable_reason, device queries, CuPy -----------------------------------------------------------------------


def test_unavailable_reason_without_driver(no_driver):
    assert _driver.unavailable_reason() == _driver.no_driver_message()
    assert _driver.device_count() == 0
    assert _driver.devices() == []


@pytest.mark.skipif(_driver.load_cuda_library() is not None, reason="the NVIDIA driver is installed here")
def test_unavailable_reason_on_this_machine_is_the_no_driver_message():
    assert _driver.unavailable_reason() == _driver.no_driver_message()


def test_unavailable_reason_with_a_driver_but_no_device(monkeypatch, fresh_probe):
    class FakeLib:
        @staticmethod
        def cuInit(flags):
            return 0

        @staticmethod
        def cuDeviceGetCount(ref):
            ref._obj.value = 0
            return 0

    monkeypatch.setattr(_driver.ctypes, "CDLL", lambda name: FakeLib())
    assert _driver.device_count() == 0
    reason = _driver.unavailable_reason()
    assert reason is not None and reason.startswith("no CUDA device")
    assert "\n" not in reason


def test_require_cupy_names_the_extra(monkeypatch, no_driver):
    monkeypatch.setitem(sys.modules, "cupy", None)  # "import cupy" raises ImportError
    with pytest.raises(MissingExtraError) as info:
        _driver.require_cupy()
    assert isinstance(info.value, ImportError)
    assert isinstance(info.value, OptixAsyncError)
    assert "pip install 'optixasync[cuda13]'" in str(info.value)  # no driver to ask: the newest extra
    assert info.value.package == "cupy-cuda13x"
