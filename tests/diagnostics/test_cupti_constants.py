"""The CUPTI constants syncwatch relies on, checked against the installed ``cupti-python`` (no GPU needed)."""

from __future__ import annotations

import pytest

# The driver probe has no public door (it decides the skip below).
from optixasync._driver import load_cuda_library

# The constants syncwatch hard-codes and its table of watched driver calls are internal to the collector, with no
# public door: this file checks exactly them against CUPTI's own definitions.
from optixasync.diagnostics import _collector
from optixasync.diagnostics._records import MEMORY_KINDS
from optixasync.diagnostics._syncwatch import driver_callback_names

cupti = pytest.importorskip("cupti.cupti", reason="cupti-python is not installed: pip install 'optixasync[diagnostics]'")


def test_callback_constants_match_cupti():
    assert _collector.DRIVER_DOMAIN == int(cupti.CallbackDomain.DRIVER_API)
    assert _collector.SYNC_DOMAIN == int(cupti.CallbackDomain.SYNCHRONIZE)
    assert _collector.API_ENTER == int(cupti.ApiCallbackSite.API_ENTER)
    assert _collector.API_EXIT == int(cupti.ApiCallbackSite.API_EXIT)
    assert _collector.STREAM_SYNCHRONIZED == int(cupti.CallbackIdSync.STREAM_SYNCHRONIZED)
    assert _collector.CONTEXT_SYNCHRONIZED == int(cupti.CallbackIdSync.CONTEXT_SYNCHRONIZED)


def test_memory_kind_names_match_cupti():
    for member in cupti.ActivityMemoryKind:
        if member.name != "FORCE_INT":
            assert MEMORY_KINDS[int(member)] == member.name.lower().replace("_", "-")


def test_activity_api_used_by_syncwatch_exists():
    assert hasattr(cupti.ActivityKind, "MEMCPY")
    for name in ("subscribe", "unsubscribe", "enable_callback", "enable_domain", "activity_register_callbacks",
                 "activity_enable", "activity_disable", "activity_flush_all"):
        assert callable(getattr(cupti, name)), name
    fields = set(dir(cupti.ActivityMemcpy6))
    assert {"correlation_id", "src_kind", "dst_kind", "bytes"} <= fields
    assert {"callback_site", "correlation_id"} <= set(dir(cupti.CallbackData))
    assert "stream" in set(dir(cupti.SynchronizeData))


def test_watched_driver_calls_from_cuptis_table():
    names = set(driver_callback_names(cupti).values())
    for expected in ("cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize", "cuMemcpyDtoH_v2",
                     "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyAsync", "cuMemAlloc_v2", "cuMemFree_v2",
                     "cuMemHostAlloc", "cuMemFreeHost", "cuModuleLoadData", "cuLibraryLoadData", "cuMemsetD32_v2",
                     "cuStreamSynchronize_ptsz"):
        assert expected in names, expected
    for never in ("cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocFromPoolAsync", "cuLaunchKernel",
                  "cuMemcpyDtoDAsync_v2", "cuEventRecord", "cuEventQuery", "cuStreamWaitEvent", "cuMemsetD32Async"):
        assert never not in names, never


@pytest.mark.skipif(load_cuda_library() is not None, reason="the NVIDIA driver is installed here (libcuda.so.1 loads)")
def test_without_a_driver_the_watch_says_so():
    from optixasync.diagnostics import syncwatch

    with pytest.raises(RuntimeError, match="syncwatch: CUPTI cannot start") as info:
        with syncwatch():
            pass
    assert "driver" in str(info.value)
    # the failed start left no half-started session behind: the next watch tries to start again, and says so again
    with pytest.raises(RuntimeError, match="syncwatch: CUPTI cannot start"):
        with syncwatch():
            pass
