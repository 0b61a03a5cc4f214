"""The on-disk PTX cache; CPU only."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from optixasync.program import (
    CompileOptions,
    cache_key,
    clear_cache,
    compile_ptx,
    compile_ptx_cached,
    nvrtc_version,
    optix_cache_dir,
)

# The NVRTC fingerprint that goes into the key (wheel version or NVRTC version) has no public door: it is the one
# private name used here, to name the entry file a compilation must produce.
from optixasync.program._cache import nvrtc_fingerprint

TEST_KERNELS = Path(__file__).resolve().parent / "kernels"
SOURCE = 'extern "C" __global__ void __raygen__cached() {}\n'


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("OPTIXASYNC_CACHE_DIR", str(root))
    monkeypatch.delenv("OPTIXASYNC_DISABLE_CACHE", raising=False)
    return root


def _ptx_files(root: Path) -> list[Path]:
    return sorted((root / "ptx").iterdir()) if (root / "ptx").is_dir() else []


def _key(source=SOURCE, name="a.cu", options=None, nvrtc=(13, 5), abi=87) -> str:
    return cache_key(source, name, options or CompileOptions(), nvrtc, abi)


def test_miss_then_hit(cache):
    ptx1, hit1 = compile_ptx_cached(SOURCE, "a.cu")
    ptx2, hit2 = compile_ptx_cached(SOURCE, "a.cu")
    assert (hit1, hit2) == (False, True)
    assert ptx1 == ptx2
    assert ptx1 == compile_ptx(SOURCE, "a.cu")
    files = _ptx_files(cache)
    assert [f.suffix for f in files] == [".ptx"]
    assert files[0].stem == _key(nvrtc=nvrtc_fingerprint())
    assert files[0].read_text() == ptx1


def test_options_as_dict_share_the_entry(cache):
    compile_ptx_cached(SOURCE, "a.cu", {"defines": {"X": 1}})
    _, hit = compile_ptx_cached(SOURCE, "a.cu", CompileOptions(defines=(("X", "1"),)))
    assert hit


def test_different_inputs_miss(cache):
    compile_ptx_cached(SOURCE, "a.cu")
    assert compile_ptx_cached(SOURCE + "// changed\n", "a.cu")[1] is False
    assert compile_ptx_cached(SOURCE, "b.cu")[1] is False
    assert compile_ptx_cached(SOURCE, "a.cu", {"lineinfo": True})[1] is False
    assert compile_ptx_cached(SOURCE, "a.cu", abi=88)[1] is False
    assert len(_ptx_files(cache)) == 5


def test_key_depends_on_every_input():
    base = _key()
    variants = [
        _key(source=SOURCE + " "),
        _key(name="b.cu"),
        _key(options=CompileOptions(arch="compute_80")),
        _key(options=CompileOptions(use_fast_math=False)),
        _key(options=CompileOptions(lineinfo=True)),
        _key(options=CompileOptions(defines=(("A", "1"),))),
        _key(options=CompileOptions(defines=(("A", "2"),))),
        _key(options=CompileOptions(extra=("-G",))),
        _key(nvrtc=(13, 0)),
        _key(nvrtc=(12, 9)),
        _key(abi=88),
    ]
    assert _key() == base  # deterministic
    assert len({base, *variants}) == len(variants) + 1
    assert len(base) == 64 and int(base, 16) >= 0


def test_key_depends_on_header_contents(tmp_path):
    include = tmp_path / "include"
    (include / "sub").mkdir(parents=True)
    header = include / "sub" / "util.cuh"
    header.write_text("#define VALUE 1\n")
    options = CompileOptions(include_dirs=(str(include),))
    first = _key(options=options)
    assert _key(options=options) == first
    header.write_text("#define VALUE 2\n")  # same size, possibly the same mtime: contents must count
    second = _key(options=options)
    assert second != first
    (include / "extra.hpp").write_text("// new header\n")
    third = _key(options=options)
    assert third not in (first, second)
    (include / "notes.txt").write_text("not a header\n")
    assert _key(options=options) == third
    header.rename(include / "sub" / "renamed.cuh")
    assert _key(options=options) != third


def test_header_change_recompiles(cache, tmp_path):
    include = tmp_path / "include"
    include.mkdir()
    header = include / "simple_math.cuh"
    header.write_text((TEST_KERNELS / "simple_math.cuh").read_text())
    options = CompileOptions(include_dirs=(str(include),))
    source = (TEST_KERNELS / "simple.cu").read_text()
    ptx1, hit1 = compile_ptx_cached(source, "simple.cu", options)
    assert compile_ptx_cached(source, "simple.cu", options) == (ptx1, True)
    assert hit1 is False
    header.write_text(header.read_text().replace("a * b + c", "a * b - c"))
    ptx2, hit2 = compile_ptx_cached(source, "simple.cu", options)
    assert hit2 is False
    assert ptx2 != ptx1


def test_unwritable_cache_dir_still_compiles(tmp_path, monkeypatch, caplog):
    # A directory below a regular file cannot be created, whoever runs the test (root included).
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("OPTIXASYNC_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.delenv("OPTIXASYNC_DISABLE_CACHE", raising=False)
    with caplog.at_level(logging.WARNING, logger="optixasync"):
        ptx1, hit1 = compile_ptx_cached(SOURCE, "a.cu")
        ptx2, hit2 = compile_ptx_cached(SOURCE, "a.cu")
    assert (hit1, hit2) == (False, False)
    assert ptx1 == ptx2 and ".entry __raygen__cached" in ptx1
    assert "PTX cache" in caplog.text
    assert blocker.read_text() == "not a directory"
    assert clear_cache() == 0


def test_store_leaves_no_temporaries(cache):
    ptx, _ = compile_ptx_cached(SOURCE, "a.cu")
    path = cache / "ptx" / f"{_key(nvrtc=nvrtc_fingerprint())}.ptx"
    assert [p.name for p in (cache / "ptx").iterdir()] == [path.name]
    path.write_text("")  # damaged: the next compilation overwrites the entry in place
    assert compile_ptx_cached(SOURCE, "a.cu") == (ptx, False)
    assert [p.name for p in (cache / "ptx").iterdir()] == [path.name]
    assert path.read_text() == ptx
    assert compile_ptx_cached(SOURCE, "a.cu") == (ptx, True)  # what was stored is what is loaded


def test_failed_write_removes_its_temporary(cache, monkeypatch, caplog):
    def fail(src, dst):
        raise OSError("disk full")

    with monkeypatch.context() as patch, caplog.at_level(logging.WARNING, logger="optixasync"):
        patch.setattr(os, "replace", fail)  # the atomic rename of a new entry
        ptx, hit = compile_ptx_cached(SOURCE, "a.cu")
    assert hit is False and ".entry __raygen__cached" in ptx
    assert "disk full" in caplog.text
    assert list((cache / "ptx").iterdir()) == []
    assert compile_ptx_cached(SOURCE, "a.cu") == (ptx, False)  # nothing was stored: a miss
    assert len(_ptx_files(cache)) == 1


def test_load_missing_and_corrupt(cache, caplog):
    ptx, hit = compile_ptx_cached(SOURCE, "a.cu")
    assert hit is False  # missing
    (entry,) = _ptx_files(cache)
    entry.write_text("garbage")
    with caplog.at_level(logging.WARNING, logger="optixasync"):
        assert compile_ptx_cached(SOURCE, "a.cu") == (ptx, False)  # corrupt: recompiled, not returned
    assert "corrupt" in caplog.text


def test_corrupt_entry_is_recompiled(cache):
    ptx, _ = compile_ptx_cached(SOURCE, "a.cu")
    (entry,) = _ptx_files(cache)
    entry.write_text("")
    again, hit = compile_ptx_cached(SOURCE, "a.cu")
    assert (again, hit) == (ptx, False)
    assert entry.read_text() == ptx


def test_disabled_cache(cache, monkeypatch):
    monkeypatch.setenv("OPTIXASYNC_DISABLE_CACHE", "1")
    assert compile_ptx_cached(SOURCE, "a.cu")[1] is False
    assert compile_ptx_cached(SOURCE, "a.cu")[1] is False
    assert not cache.exists()
    # an entry written while the cache was on is not read while it is off
    monkeypatch.delenv("OPTIXASYNC_DISABLE_CACHE")
    assert compile_ptx_cached(SOURCE, "a.cu")[1] is False
    assert compile_ptx_cached(SOURCE, "a.cu")[1] is True
    monkeypatch.setenv("OPTIXASYNC_DISABLE_CACHE", "1")
    assert compile_ptx_cached(SOURCE, "a.cu")[1] is False


def test_clear_cache(cache):
    compile_ptx_cached(SOURCE, "a.cu")
    compile_ptx_cached(SOURCE, "b.cu")
    (cache / "ptx" / ".leftover.tmp").write_text("interrupted writer")
    (cache / "ptx" / "README").write_text("not ours")
    optix = optix_cache_dir()
    assert optix == cache / "optix"
    (optix / "nested").mkdir(parents=True)
    (optix / "optix7cache.db").write_bytes(b"\0")
    (optix / "nested" / "x").write_bytes(b"\0")
    assert clear_cache() == 5
    assert [p.name for p in _ptx_files(cache)] == ["README"]
    assert not optix.exists()
    assert clear_cache() == 0
    assert compile_ptx_cached(SOURCE, "a.cu")[1] is False


def test_clear_cache_without_cache_dir(cache):
    assert not cache.exists()
    assert clear_cache() == 0


def test_fingerprint_names_the_nvrtc_wheel_or_version():
    fingerprint = nvrtc_fingerprint()
    major, minor = nvrtc_version()
    # the wheel's version starts with the NVRTC version it ships
    assert fingerprint.startswith("wheel:nvidia-cuda-nvrtc") and f"=={major}.{minor}." in fingerprint or (
        fingerprint == f"nvrtc:{major}.{minor}"
    )
