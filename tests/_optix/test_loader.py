"""The ABI name tables, the library loader, ``check`` and the error types; no driver needed.

``OptixApi`` itself is exercised against a small stand-in for ``libnvoptix`` built with the C compiler
(skipped where there is none): it exports ``optixQueryFunctionTable`` and accepts ABIs 87 and 105 only.
"""

from __future__ import annotations

import ctypes
import pickle
import shutil
import subprocess
import sys

import pytest

# These are the tests of the OptiX binding layer itself: its package interface (``optixasync._optix``) where it
# has one, and its loader and prototype tables (pure logic, no public door) below that.
from optixasync._optix import (
    ABI_TABLES,
    DEFAULT_ABI,
    LIBRARY_ENV,
    LOG_SIZE,
    OptixApi,
    _api,
    _loader,
    check,
    get_api,
    log_buffer,
    result_name,
)
from optixasync._optix._loader import (
    ABI_OPTIX_VERSIONS,
    ABI_TABLE_SIZES,
    check_abi,
    library_names,
    load_library,
    probe_abi,
    query_function_table,
)
from optixasync.errors import CudaError, DriverNotFoundError, NvrtcError, OptixAsyncError, OptixError

# --- ABI tables -----------------------------------------------------------------------------------------------------


def test_abi_87_table():
    names = ABI_TABLES[87]
    assert len(names) == 48
    assert len(set(names)) == 48
    assert names[:3] == ("optixGetErrorName", "optixGetErrorString", "optixDeviceContextCreate")
    assert names[-1] == "optixDenoiserCreateWithUserModel"


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("optixModuleCreate", 12),
        ("optixProgramGroupCreate", 18),
        ("optixPipelineCreate", 21),
        ("optixPipelineSetStackSize", 23),
        ("optixAccelBuild", 25),
        ("optixAccelCompact", 29),
        ("optixSbtRecordPackHeader", 38),
        ("optixLaunch", 39),
    ],
)
def test_abi_87_entry_positions(name, index):
    assert ABI_TABLES[87].index(name) == index


def test_abi_table_sizes():
    assert ABI_TABLE_SIZES == {87: 48, 93: 48, 105: 52, 118: 58}
    assert set(ABI_OPTIX_VERSIONS) == set(ABI_TABLE_SIZES)
    assert ABI_OPTIX_VERSIONS[87] == "8.0"
    assert DEFAULT_ABI == 87
    for abi, names in ABI_TABLES.items():
        assert len(names) == ABI_TABLE_SIZES[abi], abi


def test_every_prototype_is_in_the_abi_87_table():
    missing = sorted(set(_api._PROTOTYPES) - set(ABI_TABLES[87]))
    assert missing == []


def test_prototypes_cover_what_the_library_calls():
    for name in ("optixGetErrorName", "optixGetErrorString", "optixDeviceContextCreate", "optixModuleCreate",
                 "optixProgramGroupCreate", "optixPipelineCreate", "optixPipelineSetStackSize",
                 "optixAccelComputeMemoryUsage", "optixAccelBuild", "optixSbtRecordPackHeader", "optixLaunch"):
        assert name in _api._PROTOTYPES, name


# --- loading --------------------------------------------------------------------------------------------------------


def test_library_names_default(monkeypatch):
    monkeypatch.delenv(LIBRARY_ENV, raising=False)
    names = library_names()
    assert names
    assert any("nvoptix" in n for n in names)


def test_library_names_honours_the_environment(monkeypatch, tmp_path):
    path = str(tmp_path / "custom" / "libnvoptix.so.1")
    monkeypatch.setenv(LIBRARY_ENV, path)
    assert library_names() == [path]


def test_load_library_missing_names_path_and_variable(monkeypatch, tmp_path):
    path = str(tmp_path / "does-not-exist" / "libnvoptix.so.1")
    monkeypatch.setenv(LIBRARY_ENV, path)
    with pytest.raises(DriverNotFoundError) as info:
        load_library()
    message = str(info.value)
    assert path in message
    assert LIBRARY_ENV in message
    assert isinstance(info.value, OptixAsyncError)
    # One line, saying what to do, and the loader's own text once (no doubled "Tried: x: x:").
    assert "\n" not in message
    assert "NVIDIA_DRIVER_CAPABILITIES" in message
    assert message.count(path) == 1
    assert "Tried:" not in message


# --- supported ABIs -------------------------------------------------------------------------------------------------


def test_check_abi_accepts_the_abis_with_a_name_table():
    for abi in ABI_TABLES:
        assert check_abi(abi) == abi
    assert check_abi(DEFAULT_ABI) == 87


@pytest.mark.parametrize("abi", [93, 105, 118, 0, -1, "87", 87.0, True])
def test_check_abi_rejects_the_others_naming_the_supported_ones(abi):
    with pytest.raises(ValueError) as info:
        check_abi(abi)
    message = str(info.value)
    assert repr(abi) in message
    assert "supported: 87 (OptiX 8.0)" in message


@pytest.mark.parametrize("abi", [93, 105, 118])
def test_an_unsupported_abi_fails_before_the_library_is_loaded(monkeypatch, tmp_path, abi):
    # The library path does not exist: a ValueError (not DriverNotFoundError) shows the ABI is checked first.
    monkeypatch.setenv(LIBRARY_ENV, str(tmp_path / "does-not-exist" / "libnvoptix.so.1"))
    with pytest.raises(ValueError, match="supported: 87 \\(OptiX 8.0\\)"):
        get_api(abi)
    with pytest.raises(ValueError, match="supported: 87 \\(OptiX 8.0\\)"):
        OptixApi(abi)


def test_log_buffer():
    buffer, size = log_buffer()
    assert LOG_SIZE == 8192
    assert len(buffer) == LOG_SIZE
    assert size.value == LOG_SIZE
    assert buffer.value == b""
    other, _ = log_buffer()
    assert ctypes.addressof(other) != ctypes.addressof(buffer)  # a fresh buffer per call


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses the Linux libm")
def test_query_function_table_without_the_entry_point():
    lib = ctypes.CDLL("libm.so.6")  # a library without optixQueryFunctionTable
    with pytest.raises(DriverNotFoundError, match="optixQueryFunctionTable"):
        query_function_table(lib, 87)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses the Linux libm")
def test_probe_abi_without_the_entry_point():
    lib = ctypes.CDLL("libm.so.6")
    with pytest.raises(DriverNotFoundError, match="optixQueryFunctionTable"):
        probe_abi(lib, 87)


# --- check and result names -----------------------------------------------------------------------------------------


def test_check_success_returns_none():
    assert check(0, "optixFoo") is None
    assert check(0, "optixFoo", b"ignored log") is None


def test_check_raises_with_status_name_and_log():
    with pytest.raises(OptixError) as info:
        check(7001, "optixFoo", b"some log\0junk")
    err = info.value
    assert err.status == 7001
    assert err.name == "OPTIX_ERROR_INVALID_VALUE"
    assert err.log == "some log"
    assert "junk" not in err.log
    message = str(err)
    assert "optixFoo" in message
    assert "some log" in message
    assert "OPTIX_ERROR_INVALID_VALUE" in message


def test_check_accepts_a_str_log():
    with pytest.raises(OptixError) as info:
        check(7251, "optixPipelineCreate", "link failed here")
    assert info.value.log == "link failed here"
    assert info.value.name == "OPTIX_ERROR_PIPELINE_LINK_ERROR"


def test_check_without_log_has_no_log_section():
    with pytest.raises(OptixError) as info:
        check(7003, "optixBar")
    assert info.value.log == ""
    assert "--- log ---" not in str(info.value)


def test_optix_error_pickles():
    with pytest.raises(OptixError) as info:
        check(7001, "optixFoo", b"some log\0junk")
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is OptixError
    assert (copy.status, copy.name, copy.log) == (7001, "OPTIX_ERROR_INVALID_VALUE", "some log")
    assert copy.explanation == info.value.explanation
    assert str(copy) == str(info.value)


@pytest.mark.parametrize("cls", [NvrtcError, CudaError])
def test_status_errors_pickle(cls):
    err = cls(6, "NVRTC_ERROR_COMPILATION", "compiling x.cu failed", "x.cu(1): error: bad")
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is cls
    assert (copy.status, copy.name, copy.explanation, copy.log) == (
        6, "NVRTC_ERROR_COMPILATION", "compiling x.cu failed", "x.cu(1): error: bad"
    )
    assert str(copy) == str(err)
    assert isinstance(copy, OptixAsyncError)


def test_driver_not_found_error_pickles():
    copy = pickle.loads(pickle.dumps(DriverNotFoundError("no driver here")))
    assert type(copy) is DriverNotFoundError
    assert str(copy) == "no driver here"


def test_result_names():
    assert result_name(0) == "OPTIX_SUCCESS"
    assert result_name(7001) == "OPTIX_ERROR_INVALID_VALUE"
    assert result_name(7801) == "OPTIX_ERROR_UNSUPPORTED_ABI_VERSION"
    assert result_name(7999) == "OPTIX_ERROR_UNKNOWN"
    unknown = result_name(12345)
    assert "12345" in unknown
    assert unknown.startswith("OPTIX_")


# --- OptixApi against a stand-in driver library ---------------------------------------------------------------------

_FAKE_OPTIX_C = r"""
#include <stddef.h>

static const char* fake_error_name(int status) { (void)status; return "OPTIX_ERROR_FAKE"; }
static const char* fake_error_string(int status) { (void)status; return "fake explanation"; }
static int fake_entry(void) { return 0; }

int optixQueryFunctionTable(int abi, unsigned int numOptions, int* keys, const void** values, void* table,
                            size_t sizeOfTable) {
    size_t count;
    void** entries = (void**)table;
    (void)numOptions; (void)keys; (void)values;
    if (abi == 87) count = 48;
    else if (abi == 105) count = 52;
    else return 7801;
    if (sizeOfTable != count * sizeof(void*)) return 7802;
    entries[0] = (void*)&fake_error_name;
    entries[1] = (void*)&fake_error_string;
    for (size_t i = 2; i < count; ++i) entries[i] = (void*)&fake_entry;
    return 0;
}
"""


@pytest.fixture(scope="module")
def fake_library(tmp_path_factory):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in OptiX library")
    directory = tmp_path_factory.mktemp("fake_optix")
    source = directory / "fake_optix.c"
    source.write_text(_FAKE_OPTIX_C)
    library = directory / "libfakeoptix.so"
    result = subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"could not build the stand-in OptiX library: {result.stderr.strip()}")
    return str(library)


@pytest.fixture
def fake_driver(fake_library, monkeypatch):
    monkeypatch.setenv(LIBRARY_ENV, fake_library)
    return fake_library


def test_probe_abi_reports_the_driver_answer(fake_driver):
    lib = load_library()
    assert probe_abi(lib, 87) == 0
    assert probe_abi(lib, 105) == 0
    assert probe_abi(lib, 93) == 7801
    assert probe_abi(lib, 118) == 7801


def test_query_function_table_returns_named_addresses(fake_driver):
    status, entries = query_function_table(load_library(), 87)
    assert status == 0
    assert list(entries) == list(ABI_TABLES[87])
    assert all(entries.values())


def test_optix_api_binds_every_prototype(fake_driver):
    api = OptixApi(87)
    assert api.abi == 87
    for name in _api._PROTOTYPES:
        assert callable(getattr(api, name)), name
    assert api.error_name(7001) == "OPTIX_ERROR_FAKE"
    assert api.error_string(7001) == "fake explanation"


def test_check_uses_the_driver_names(fake_driver):
    api = OptixApi(87)
    with pytest.raises(OptixError) as info:
        check(7001, "optixFoo", b"", api=api)
    assert info.value.name == "OPTIX_ERROR_FAKE"
    assert "optixFoo failed (fake explanation)" in str(info.value)


def test_optix_api_refused_abi(fake_driver, monkeypatch):
    monkeypatch.setitem(ABI_TABLES, 118, tuple(f"entry{i}" for i in range(58)))
    with pytest.raises(OptixError) as info:
        OptixApi(118)
    assert info.value.status == 7801
    assert info.value.name == "OPTIX_ERROR_UNSUPPORTED_ABI_VERSION"
    assert "driver" in str(info.value)
    assert "118" in str(info.value)


def test_optix_api_wrong_table_size(fake_driver, monkeypatch):
    monkeypatch.setitem(ABI_TABLES, 105, tuple(f"entry{i}" for i in range(50)))
    with pytest.raises(OptixError) as info:
        OptixApi(105)
    assert info.value.status == 7802
    assert "105" in str(info.value)


def test_optix_api_missing_entry(fake_driver, monkeypatch):
    renamed = tuple("somethingElse" if n == "optixLaunch" else n for n in ABI_TABLES[87])
    monkeypatch.setitem(ABI_TABLES, 87, renamed)
    with pytest.raises(OptixError) as info:
        OptixApi(87)
    assert info.value.status == 7805
    assert "optixLaunch" in str(info.value)


def test_loader_module_names_its_table_dict():
    # ``optixasync._optix.ABI_TABLES`` is the loader's dict itself, so patching one patches the other.
    from optixasync import _optix

    assert _optix.ABI_TABLES is _loader.ABI_TABLES
