"""available_denoisers(), the missing-package error and OIDN's errors as exceptions."""

from __future__ import annotations

import ctypes
import os
import pickle
import sys

import pytest

from optixasync.denoise import (
    OPTIX_WEIGHTS_FILE,
    DenoiseError,
    Denoiser,
    MissingExtraError,
    OidnError,
    _oidn,
    available_denoisers,
)

MISSING = ("the denoiser needs the 'pyoidn' package, which is not installed: pip install 'optixasync[denoise]' "
           "(or pip install pyoidn)")


def _driver_present() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_every_backend_is_reported() -> None:
    status = available_denoisers()
    assert set(status) == {"oidn-cpu", "oidn-cuda", "optix"}
    for name, text in status.items():
        assert text.startswith(("available: ", "not available: ")), (name, text)
        assert "\n" not in text
    print("\n" + "\n".join(f"{name:10}: {text}" for name, text in status.items()))


def test_cpu_device_works_here(oidn_cpu) -> None:
    text = available_denoisers()["oidn-cpu"]
    assert text.startswith("available: Intel Open Image Denoise 2."), text
    assert "CPU device" in text


@pytest.mark.skipif(os.path.exists(OPTIX_WEIGHTS_FILE), reason=f"{OPTIX_WEIGHTS_FILE} exists here")
def test_optix_weights_missing() -> None:
    assert available_denoisers()["optix"] == (
        "not available: the OptiX denoiser's weights file /usr/share/nvidia/nvoptix.bin is missing "
        "(containers need NVIDIA_DRIVER_CAPABILITIES to include graphics)"
    )


@pytest.mark.skipif(_driver_present(), reason="the NVIDIA driver is installed here (libcuda.so.1 loads)")
def test_cuda_device_without_driver(oidn_cpu) -> None:
    assert available_denoisers()["oidn-cuda"] == "not available: no NVIDIA driver (libcuda.so.1 cannot be loaded)"


@pytest.fixture()
def no_oidn(monkeypatch):
    """As if pyoidn were not installed: nothing to load."""
    monkeypatch.setattr(_oidn, "_library", None)
    monkeypatch.setattr(_oidn, "library_candidates", lambda: ["/nonexistent/libOpenImageDenoise.so.2"])


def test_missing_package_error(no_oidn) -> None:
    with pytest.raises(MissingExtraError) as info:
        Denoiser(64, 64, device="cpu")
    error = info.value
    assert str(error) == MISSING
    assert isinstance(error, ImportError)
    assert (error.feature, error.package, error.extra) == ("the denoiser", "pyoidn", "denoise")
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == MISSING and again.extra == "denoise"


def test_missing_package_reported_not_raised(no_oidn) -> None:
    status = available_denoisers()
    assert status["oidn-cpu"] == status["oidn-cuda"] == f"not available: {MISSING}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux library names")
def test_candidates_find_the_bundled_library(oidn_cpu) -> None:
    candidates = _oidn.library_candidates()
    assert candidates[-2:] == ["libOpenImageDenoise.so.2", "libOpenImageDenoise.so"]
    assert _oidn.load_library().path in candidates


def test_oidn_error_carries_code_name_and_message(oidn_cpu) -> None:
    lib = _oidn.load_library()
    with Denoiser(8, 8, device="cpu") as den:
        assert lib.oidnNewFilter(den._device.handle, b"NoSuchFilter") is None
        with pytest.raises(OidnError) as info:
            lib.check(den._device.handle, "creating a filter")
        lib.check(den._device.handle, "nothing")  # the error was consumed
    error = info.value
    assert isinstance(error, DenoiseError) and isinstance(error, RuntimeError)
    assert (error.code, error.name, error.operation) == (2, "OIDN_ERROR_INVALID_ARGUMENT", "creating a filter")
    assert "unknown filter type" in error.message
    assert str(error).startswith("OIDN_ERROR_INVALID_ARGUMENT while creating a filter: unknown filter type")
    again = pickle.loads(pickle.dumps(error))
    assert (again.code, again.name, again.message, str(again)) == (error.code, error.name, error.message, str(error))
