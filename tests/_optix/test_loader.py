"""The ABI tables, the negotiation, the library loader, ``check`` and the error types; no driver needed.

``OptixApi`` itself is exercised against a small stand-in for ``libnvoptix`` built with the C compiler
(skipped where there is none): it exports ``optixQueryFunctionTable``, checks the table size of each ABI, and
accepts the ABIs a test tells it to (by default those of an R580 driver: 87, 93 and 105, refusing 118).

The slot positions below are facts of NVIDIA's ``optix_function_table.h`` of OptiX 8.0, 8.1, 9.0 and 9.1
(``OPTIX_ABI_VERSION`` 87, 93, 105, 118), counted in the headers' ``OptixFunctionTable`` struct.
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
from optixasync import _config, _driver
from optixasync._optix import (
    ABI_OPTIX_VERSIONS,
    ABI_TABLES,
    DEFAULT_ABI,
    LOG_SIZE,
    NEWEST,
    SUPPORTED_ABIS,
    OptixApi,
    _api,
    check,
    check_abi,
    get_api,
    log_buffer,
    result_name,
)
from optixasync._optix._abi import check_abi_request
from optixasync._optix._loader import negotiate_abi, probe_abi, query_function_table
from optixasync.errors import CudaError, DriverNotFoundError, NvrtcError, OptixAsyncError, OptixError

LIBRARY_ENV = _config.OPTIX_LIBRARY_ENV

# --- ABI tables -----------------------------------------------------------------------------------------------------

#: Slots per ABI, from the headers: sizeof(OptixFunctionTable) / 8 (384, 400, 416 and 480 bytes).
TABLE_SIZES = {87: 48, 93: 50, 105: 52, 118: 60}

#: (ABI, slot name) -> position in the headers' OptixFunctionTable.
SLOTS = {
    87: {"optixGetErrorName": 0, "optixDeviceContextGetProperty": 4, "optixModuleCreate": 12,
         "optixModuleCreateWithTasks": 13, "optixModuleGetCompilationState": 14, "optixModuleDestroy": 15,
         "optixBuiltinISModuleGet": 16, "optixTaskExecute": 17, "optixProgramGroupCreate": 18,
         "optixProgramGroupGetStackSize": 20, "optixPipelineCreate": 21, "optixPipelineSetStackSize": 23,
         "optixAccelComputeMemoryUsage": 24, "optixAccelBuild": 25, "optixAccelCompact": 29,
         "optixConvertPointerToTraversableHandle": 31, "optixSbtRecordPackHeader": 38, "optixLaunch": 39,
         "optixDenoiserCreate": 40, "optixDenoiserCreateWithUserModel": 47},
    93: {"optixModuleCreate": 12, "optixTaskExecute": 17, "optixPipelineSetStackSize": 23, "optixAccelBuild": 25,
         "optixSbtRecordPackHeader": 38, "optixLaunch": 39, "optixPlaceholder001": 40, "optixPlaceholder002": 41,
         "optixDenoiserCreate": 42, "optixDenoiserCreateWithUserModel": 49},
    105: {"optixModuleCreate": 12, "optixBuiltinISModuleGet": 16, "optixTaskExecute": 17,
          "optixPipelineCreate": 21, "optixAccelBuild": 25, "optixConvertPointerToTraversableHandle": 31,
          "optixClusterAccelComputeMemoryUsage": 38, "optixClusterAccelBuild": 39, "optixSbtRecordPackHeader": 40,
          "optixLaunch": 41, "optixCoopVecMatrixConvert": 42, "optixDenoiserCreate": 44,
          "optixDenoiserCreateWithUserModel": 51},
    118: {"optixModuleCreate": 12, "optixModuleCreateWithTasks": 13, "optixModuleGetCompilationState": 14,
          "optixModuleCancelCreation": 15, "optixStub": 16, "optixModuleDestroy": 18,
          "optixBuiltinISModuleGet": 19, "optixTaskExecute": 20, "optixProgramGroupCreate": 24,
          "optixProgramGroupGetStackSize": 26, "optixPipelineCreate": 27, "optixPipelineSetStackSize": 30,
          "optixAccelComputeMemoryUsage": 32, "optixAccelBuild": 33, "optixAccelCompact": 37,
          "optixConvertPointerToTraversableHandle": 39, "stub1": 44, "stub2": 45, "optixClusterAccelBuild": 47,
          "optixSbtRecordPackHeader": 48, "optixLaunch": 49, "optixCoopVecMatrixConvert": 50,
          "optixDenoiserCreate": 52, "optixDenoiserCreateWithUserModel": 59},
}


@pytest.mark.parametrize("abi", sorted(TABLE_SIZES))
def test_table_sizes_are_the_headers(abi):
    names = ABI_TABLES[abi]
    assert len(names) == TABLE_SIZES[abi]
    assert len(set(names)) == len(names)
    assert names[:3] == ("optixGetErrorName", "optixGetErrorString", "optixDeviceContextCreate")
    assert names[-1] == "optixDenoiserCreateWithUserModel"


@pytest.mark.parametrize(("abi", "name"), [(abi, name) for abi, slots in sorted(SLOTS.items()) for name in slots])
def test_slot_positions_are_the_headers(abi, name):
    assert ABI_TABLES[abi].index(name) == SLOTS[abi][name]


def test_the_abis_and_their_order():
    assert set(ABI_TABLES) == set(ABI_OPTIX_VERSIONS) == {87, 93, 105, 118}
    assert ABI_OPTIX_VERSIONS == {87: "8.0", 93: "8.1", 105: "9.0", 118: "9.1"}
    assert SUPPORTED_ABIS == (118, 105, 93, 87)  # the negotiation tries the newest first
    assert DEFAULT_ABI == 87


def test_the_abis_differ_where_the_headers_do():
    assert ABI_TABLES[93][:40] == ABI_TABLES[87][:40] and ABI_TABLES[93][42:] == ABI_TABLES[87][40:]
    assert ABI_TABLES[105][:38] == ABI_TABLES[87][:38]
    assert "optixDisplacementMicromapArrayBuild" in ABI_TABLES[105]
    assert "optixDisplacementMicromapArrayBuild" not in ABI_TABLES[118]


@pytest.mark.parametrize("abi", sorted(TABLE_SIZES))
def test_every_prototype_is_in_every_abi_table(abi):
    assert sorted(set(_api._PROTOTYPES) - set(ABI_TABLES[abi])) == []


def test_prototypes_cover_what_the_library_calls():
    for name in ("optixGetErrorName", "optixGetErrorString", "optixDeviceContextCreate", "optixModuleCreate",
                 "optixModuleCreateWithTasks", "optixTaskExecute", "optixModuleGetCompilationState",
                 "optixBuiltinISModuleGet", "optixProgramGroupCreate", "optixPipelineCreate",
                 "optixPipelineSetStackSize", "optixAccelComputeMemoryUsage", "optixAccelBuild",
                 "optixConvertPointerToTraversableHandle", "optixSbtRecordPackHeader", "optixLaunch",
                 "optixDeviceContextGetProperty"):
        assert name in _api._PROTOTYPES, name


# --- loading --------------------------------------------------------------------------------------------------------


def test_library_names_default(monkeypatch):
    monkeypatch.delenv(LIBRARY_ENV, raising=False)
    names = _driver.optix_library_names()
    assert names
    assert any("nvoptix" in n for n in names)


def test_library_names_honours_the_environment(monkeypatch, tmp_path):
    path = str(tmp_path / "custom" / "libnvoptix.so.1")
    monkeypatch.setenv(LIBRARY_ENV, path)
    assert _driver.optix_library_names() == [path]


def test_load_library_missing_names_path_and_variable(monkeypatch, tmp_path):
    path = str(tmp_path / "does-not-exist" / "libnvoptix.so.1")
    monkeypatch.setenv(LIBRARY_ENV, path)
    with pytest.raises(DriverNotFoundError) as info:
        _driver.load_optix_library()
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
        assert check_abi_request(abi) == abi
    assert check_abi_request(NEWEST) == "newest"


@pytest.mark.parametrize("abi", [84, 0, -1, "87", 87.0, True, "Newest", None])
def test_check_abi_rejects_the_others_naming_the_supported_ones(abi):
    with pytest.raises(ValueError) as info:
        check_abi_request(abi)
    message = str(info.value)
    assert repr(abi) in message
    assert "supported: 87 (OptiX 8.0), 93 (OptiX 8.1), 105 (OptiX 9.0), 118 (OptiX 9.1)" in message
    assert "'newest'" in message


@pytest.mark.parametrize("abi", [84, "latest"])
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

/* Which ABIs this driver accepts: bit k of the mask for the k-th of 87, 93, 105, 118 (an R580 driver: 0x7). */
static unsigned int accepted = 0x7;
static int asked[4];

void fake_accept(unsigned int mask) { accepted = mask; for (int k = 0; k < 4; ++k) asked[k] = 0; }
int fake_asked(int k) { return asked[k]; }

int optixQueryFunctionTable(int abi, unsigned int numOptions, int* keys, const void** values, void* table,
                            size_t sizeOfTable) {
    static const int abis[4] = {87, 93, 105, 118};
    static const size_t slots[4] = {48, 50, 52, 60};
    void** entries = (void**)table;
    (void)numOptions; (void)keys; (void)values;
    for (int k = 0; k < 4; ++k) {
        if (abi != abis[k]) continue;
        ++asked[k];
        if (!(accepted & (1u << k))) return 7801;
        if (sizeOfTable != slots[k] * sizeof(void*)) return 7802;
        entries[0] = (void*)&fake_error_name;
        entries[1] = (void*)&fake_error_string;
        for (size_t i = 2; i < slots[k]; ++i) entries[i] = (void*)&fake_entry;
        return 0;
    }
    return 7801;
}
"""

_MASK_BITS = {87: 1, 93: 2, 105: 4, 118: 8}


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


class FakeDriver:
    """The stand-in library, loaded: ``accept(*abis)`` sets what it accepts; ``asked(abi)`` counts requests."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lib = ctypes.CDLL(path)
        self.accept(87, 93, 105)

    def accept(self, *abis: int) -> None:
        self.lib.fake_accept(ctypes.c_uint(sum(_MASK_BITS[a] for a in abis)))

    def asked(self, abi: int) -> int:
        return int(self.lib.fake_asked(sorted(_MASK_BITS).index(abi)))


@pytest.fixture
def fake_driver(fake_library, monkeypatch):
    monkeypatch.setenv(LIBRARY_ENV, fake_library)
    monkeypatch.setattr(_api, "_api_cache", {})
    return FakeDriver(fake_library)


def test_probe_abi_reports_the_driver_answer(fake_driver):
    lib = _driver.load_optix_library()
    assert [probe_abi(lib, abi) for abi in (87, 93, 105, 118)] == [0, 0, 0, 7801]
    fake_driver.accept(87)
    assert [probe_abi(lib, abi) for abi in (87, 93, 105, 118)] == [0, 7801, 7801, 7801]


def test_query_function_table_returns_named_addresses(fake_driver):
    for abi in (87, 93, 105):
        status, entries = query_function_table(_driver.load_optix_library(), abi)
        assert status == 0
        assert list(entries) == list(ABI_TABLES[abi])
        assert all(entries.values())


def test_negotiation_takes_the_newest_accepted_abi(fake_driver):
    lib = _driver.load_optix_library()
    chosen = negotiate_abi(lib)
    assert chosen.abi == 105 and chosen.refused == {118: 7801}
    assert list(chosen.entries) == list(ABI_TABLES[105])
    fake_driver.accept(87, 93, 105, 118)  # an R590 driver
    assert negotiate_abi(lib).abi == 118 and negotiate_abi(lib).refused == {}
    fake_driver.accept(87)  # an R535 driver
    assert negotiate_abi(lib).abi == 87 and negotiate_abi(lib).refused == {118: 7801, 105: 7801, 93: 7801}
    fake_driver.accept()
    assert negotiate_abi(lib).abi is None


def test_newest_falls_back_silently(fake_driver, caplog):
    api = OptixApi(NEWEST)
    assert (api.abi, api.requested, api.refused) == (105, "newest", {118: 7801})
    assert api.structs.abi == 105 and api.structs.has_clustered_geometry and not api.structs.has_link_depths
    assert [fake_driver.asked(abi) for abi in (118, 105, 93, 87)] == [1, 1, 0, 0]  # newest first, then stop
    assert not caplog.records  # a refusal is no warning


def test_every_abi_can_be_pinned(fake_driver):
    fake_driver.accept(87, 93, 105, 118)
    for abi in (87, 93, 105, 118):
        api = OptixApi(abi)
        assert api.abi == abi == api.structs.abi and api.refused == {}
        for name in _api._PROTOTYPES:
            assert callable(getattr(api, name)), name
    assert OptixApi(118).structs.has_link_depths


def test_a_pinned_abi_the_driver_lacks_names_those_it_accepts(fake_driver):
    with pytest.raises(OptixError) as info:
        OptixApi(118)
    err = info.value
    assert err.status == 7801 and err.name == "OPTIX_ERROR_UNSUPPORTED_ABI_VERSION"
    message = str(err)
    assert "does not accept OptiX ABI 118 (OptiX 9.1)" in message
    assert "it accepts 87 (OptiX 8.0), 93 (OptiX 8.1), 105 (OptiX 9.0)" in message
    assert "abi='newest'" in message


def test_a_driver_that_accepts_nothing(fake_driver):
    fake_driver.accept()
    with pytest.raises(OptixError, match="nor any other that optixasync speaks; ABI 87 \\(OptiX 8.0\\) needs driver R535"):
        OptixApi(87)
    with pytest.raises(OptixError) as info:
        OptixApi(NEWEST)
    assert info.value.status == 7801


def test_get_api_caches_per_request(fake_driver):
    assert get_api(87) is get_api(87)
    assert get_api(NEWEST) is get_api("newest")
    assert get_api(NEWEST).abi == 105 and get_api(87).abi == 87


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


def test_one_owner_for_the_library_and_its_variable():
    """The environment variable is named in _config alone, and only _driver loads the library."""
    from pathlib import Path

    import optixasync

    root = Path(optixasync.__file__).parent
    named = [p.relative_to(root) for p in root.rglob("*.py") if '"OPTIXASYNC_OPTIX_LIBRARY"' in p.read_text()]
    assert [str(p) for p in named] == ["_config.py"]
    loaders = [p.relative_to(root) for p in root.rglob("*.py") if '"libnvoptix.so.1"' in p.read_text()]
    assert [str(p) for p in loaders] == ["_driver.py"]
