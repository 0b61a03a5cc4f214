"""NVRTC compilation and PTX-versus-driver fitting; CPU only, NVRTC needs no GPU."""

from __future__ import annotations

import logging
import pickle
import re
import sys
from pathlib import Path

import pytest

# Private on purpose: the directory of the package's kernels (installed wheel or checkout) has no public door, and
# _nvrtc's warn-once set and its ISA relabelling (whose ValueError no public call reaches) are pure logic.
from optixasync._config import kernels_dir
from optixasync.errors import NvrtcError
from optixasync.program import (
    CompileOptions,
    _nvrtc,
    compile_ptx,
    fit_ptx_to_driver,
    max_ptx_isa_for_cuda,
    nvrtc_version,
    ptx_isa_version,
    unsupported_ptx_message,
)
from optixasync.validation import coerce_options

TEST_KERNELS = Path(__file__).resolve().parent / "kernels"
TEST_OPTIONS = CompileOptions(include_dirs=(str(TEST_KERNELS),))

_KERNEL_DECL = r'extern\s+"C"\s+__global__\s+void'
_CALLABLE_RE = re.compile(r'extern\s+"C"\s+__device__\s+[\w:<>*&\s]+?\b(__(?:direct|continuation)_callable__\w+)\s*\(')
# Kernels are often declared through a macro (#define OA_PROGRAM extern "C" __global__ void).
_MACRO_RE = re.compile(rf"^\s*#\s*define\s+(\w+)\s+{_KERNEL_DECL}\s*$", re.MULTILINE)


def _package_sources() -> list[Path]:
    return sorted(kernels_dir().glob("*.cu"))


def _kernel_macros(source: str) -> list[str]:
    texts = [source]
    for root in (kernels_dir(), TEST_KERNELS):
        texts += [p.read_text() for p in sorted(root.iterdir()) if p.suffix in (".h", ".hpp", ".cuh")]
    return sorted({name for text in texts for name in _MACRO_RE.findall(text)})


def _expected_entries(source: str) -> list[str]:
    """Names of the ``extern "C" __global__`` functions defined in ``source``, in order."""
    decl = "|".join([_KERNEL_DECL, *(rf"\b{re.escape(m)}\b" for m in _kernel_macros(source))])
    return re.findall(rf"(?:{decl})(?:\s+__launch_bounds__\s*\([^)]*\))?\s+(\w+)\s*\(", source)


def _assert_entries(ptx: str, source: str) -> None:
    for name in _expected_entries(source):
        assert re.search(rf"^\s*(?:\.visible\s+)?\.entry\s+{re.escape(name)}\s*\(", ptx, re.MULTILINE), (
            f"no .entry for {name} in the PTX"
        )
    for name in _CALLABLE_RE.findall(source):
        assert re.search(rf"\.func\s+(?:\([^)]*\)\s*)?{re.escape(name)}\s*\(", ptx), f"no .func for {name}"


# --- compiling ------------------------------------------------------------------------------------------------------


def test_nvrtc_version_is_available():
    major, minor = nvrtc_version()
    assert major >= 12
    assert minor >= 0


def test_package_has_kernels():
    assert _package_sources(), f"no .cu files in {kernels_dir()}"


@pytest.mark.parametrize("path", [p for p in _package_sources() if p.name != "pathtracer.cu"], ids=lambda p: p.name)
def test_package_kernel_compiles(path: Path):
    source = path.read_text()
    assert _expected_entries(source), f'{path.name} declares no extern "C" __global__ program'
    ptx = compile_ptx(source, path.name)
    assert ptx_isa_version(ptx) >= (7, 0)
    _assert_entries(ptx, source)


def test_the_path_tracer_compiles_through_its_generated_source():
    """pathtracer.cu is the body of a program: the dispatches over the registered BSDF families and light types,
    and its raygens' output sets, are generated in front of it; alone it refuses to compile, saying so."""
    from optixasync.render._source import pathtracer_source

    with pytest.raises(NvrtcError, match="generated"):
        compile_ptx((kernels_dir() / "pathtracer.cu").read_text(), "pathtracer.cu")
    ptx = compile_ptx(pathtracer_source([0, 1, 15]).text, "pathtracer_program.cu")
    assert ptx_isa_version(ptx) >= (7, 0)
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    assert entries == {"__raygen__outputs_0", "__raygen__outputs_1", "__raygen__outputs_15", "__closesthit__radiance",
                       "__anyhit__cutout", "__miss__radiance", "__miss__shadow"}


def test_entry_name_parser():
    source = (
        '#define MY_PROGRAM extern "C" __global__ void\n'
        'extern "C" __global__ void plain(int* p) {}\n'
        'extern "C" __global__ void __launch_bounds__(64) bounded() {}\n'
        "MY_PROGRAM __anyhit__x() {}\n"
        "__global__ void mangled() {}\n"
        "__device__ void helper() {}\n"
    )
    assert _expected_entries(source) == ["plain", "bounded", "__anyhit__x"]


def test_simple_kernel_compiles():
    source = (TEST_KERNELS / "simple.cu").read_text()
    assert _expected_entries(source) == ["scale_kernel", "__raygen__simple", "__miss__simple", "__closesthit__simple"]
    ptx = compile_ptx(source, "simple.cu", TEST_OPTIONS)
    _assert_entries(ptx, source)
    assert ".target sm_75" in ptx
    assert "\x00" not in ptx
    assert ptx.rstrip().endswith("}")


def test_every_option_is_accepted_by_nvrtc():
    source = (TEST_KERNELS / "simple.cu").read_text()
    options = CompileOptions(
        arch="compute_80",
        include_dirs=(str(TEST_KERNELS),),
        defines=(("SIMPLE_SCALE", "3.0f"), ("SIMPLE_FLAG", "")),
        use_fast_math=False,
        lineinfo=True,
        extra=("-DSIMPLE_EXTRA=1",),
    )
    ptx = compile_ptx(source, "simple.cu", options)
    assert ".target sm_80" in ptx
    assert ".loc" in ptx  # -lineinfo
    assert "0f40400000" in ptx  # 3.0f from the define, as a PTX float literal
    _assert_entries(ptx, source)


def test_missing_include_dir_is_a_compile_error():
    source = (TEST_KERNELS / "simple.cu").read_text()
    with pytest.raises(NvrtcError) as info:
        compile_ptx(source, "simple.cu")
    assert "simple_math.cuh" in info.value.log


def test_syntax_error_reports_file_and_line():
    source = 'extern "C" __global__ void ok() {}\n\nextern "C" __global__ void bad() { int x = ; }\n'
    with pytest.raises(NvrtcError) as info:
        compile_ptx(source, "bad.cu")
    err = info.value
    assert err.name == "NVRTC_ERROR_COMPILATION"
    assert err.status != 0
    assert "compiling bad.cu failed" in err.explanation
    assert re.search(r"bad\.cu\(3\)", err.log), err.log
    assert "error" in err.log
    assert err.log.strip() in str(err)
    clone = pickle.loads(pickle.dumps(err))
    assert (clone.status, clone.name, clone.log) == (err.status, err.name, err.log)


def test_missing_bindings_give_install_hint(monkeypatch):
    import cuda.bindings

    # Make "from cuda.bindings import nvrtc" fail the way it does without the package.
    monkeypatch.delattr(cuda.bindings, "nvrtc", raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    with pytest.raises(NvrtcError) as info:
        compile_ptx('extern "C" __global__ void k() {}', "k.cu")
    assert info.value.name == "NVRTC_NOT_FOUND"
    assert 'pip install "cuda-bindings>=12.6" "nvidia-cuda-nvrtc"' in str(info.value)


def test_missing_library_gives_install_hint(monkeypatch):
    import cuda.bindings

    class Broken:
        @staticmethod
        def nvrtcVersion():
            raise RuntimeError('Function "nvrtcVersion" not found')

    # The binding imports but its shared library does not load: cuda-bindings fails on the first call.
    monkeypatch.setattr(cuda.bindings, "nvrtc", Broken, raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", Broken)
    with pytest.raises(NvrtcError) as info:
        nvrtc_version()
    assert 'pip install "cuda-bindings>=12.6" "nvidia-cuda-nvrtc"' in str(info.value)


# --- options --------------------------------------------------------------------------------------------------------


def test_default_args():
    args = CompileOptions().to_nvrtc_args()
    assert args[:4] == ["-rdc=true", "-std=c++17", "--device-as-default-execution-space", "-arch=compute_75"]
    assert args[4] == f"-I{kernels_dir()}"
    assert "--use_fast_math" in args
    assert "-lineinfo" not in args


def test_args_order_and_content(tmp_path):
    options = CompileOptions(
        include_dirs=(tmp_path,), defines=(("A", "1"), ("B", "")), lineinfo=True, extra=("-G", "-Xptxas")
    )
    args = options.to_nvrtc_args()
    assert args.index(f"-I{kernels_dir()}") < args.index(f"-I{tmp_path}")
    assert "-DA=1" in args and "-DB" in args
    assert args[-2:] == ["-G", "-Xptxas"]
    assert "-lineinfo" in args


def test_coerce():
    default = CompileOptions()
    assert coerce_options(CompileOptions, None) == default
    assert coerce_options(CompileOptions, default) is default
    from_dict = coerce_options(CompileOptions, {"defines": {"N": 4, "M": "x"}, "include_dirs": ["/a", Path("/b")]})
    assert from_dict.defines == (("N", "4"), ("M", "x"))
    assert from_dict.include_dirs == ("/a", "/b")
    assert from_dict == CompileOptions(defines=(("N", "4"), ("M", "x")), include_dirs=("/a", "/b"))
    assert hash(from_dict) == hash(CompileOptions(defines=[("N", "4"), ("M", "x")], include_dirs=["/a", "/b"]))
    with pytest.raises(TypeError, match="bogus"):
        coerce_options(CompileOptions, {"bogus": 1})
    with pytest.raises(TypeError):
        coerce_options(CompileOptions, 42)


# --- PTX ISA versus driver ------------------------------------------------------------------------------------------

PTX_95 = "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.5\n.target sm_75\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n"


def test_ptx_isa_version():
    assert ptx_isa_version(PTX_95) == (9, 5)
    assert ptx_isa_version(".version 8.7\n.target sm_80\n") == (8, 7)
    assert ptx_isa_version("// c\n  .version 10.12\n") == (10, 12)
    with pytest.raises(ValueError):
        ptx_isa_version("// .version 9.5 only in a comment? no: not at a line start\n.target sm_75\n")
    with pytest.raises(ValueError):
        ptx_isa_version("")


def test_ptx_isa_of_real_output():
    ptx = compile_ptx('extern "C" __global__ void k() {}', "k.cu")
    major = nvrtc_version()[0]
    # NVRTC 12.x writes ISA 8.x, 13.x writes 9.x.
    assert ptx_isa_version(ptx)[0] == major - 4


@pytest.mark.parametrize(
    ("cuda", "isa"),
    [
        (13000, (9, 0)),
        (13010, (9, 1)),
        (13020, (9, 2)),
        (13050, (9, 5)),
        (12000, (8, 0)),
        (12050, (8, 5)),
        (12060, (8, 5)),
        (12070, (8, 6)),
        (12080, (8, 7)),
        (12090, (8, 8)),
        (11080, (7, 8)),
        (12100, (8, 8)),  # unknown 12.x: the newest known 12.x, not a guess
        (14000, (10, 0)),
        (14030, (10, 0)),  # unknown major: only its .0 is assumed
        (11085, (7, 8)),  # patch digit ignored
        (9020, (6, 3)),  # older than the table: its lowest entry
    ],
)
def test_max_ptx_isa_for_cuda(cuda, isa):
    assert max_ptx_isa_for_cuda(cuda) == isa


def test_retarget_ptx():
    out = _nvrtc.retarget_ptx(PTX_95, (9, 0))
    assert ptx_isa_version(out) == (9, 0)
    assert out.replace(".version 9.0", ".version 9.5") == PTX_95
    with pytest.raises(ValueError):
        _nvrtc.retarget_ptx(".target sm_75\n", (9, 0))


def test_fit_ptx_to_old_driver_relabels_and_warns(monkeypatch, caplog):
    monkeypatch.setattr(_nvrtc, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="optixasync"):
        out, changed = fit_ptx_to_driver(PTX_95, 13000)
    assert changed is True
    assert ptx_isa_version(out) == (9, 0)
    assert ".target sm_75" in out
    text = caplog.text
    assert "CUDA 13.0" in text
    assert "ISA 9.0" in text
    assert "nvidia-cuda-nvrtc==13.0.*" in text
    assert f"NVRTC {nvrtc_version()[0]}.{nvrtc_version()[1]}" in text
    # The warning is given once per driver and ISA, not per program.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="optixasync"):
        fit_ptx_to_driver(PTX_95, 13000)
    assert not caplog.records


def test_fit_ptx_to_cuda12_driver():
    out, changed = fit_ptx_to_driver(PTX_95, 12080)
    assert changed is True
    assert ptx_isa_version(out) == (8, 7)


@pytest.mark.parametrize("cuda", [13050, 13060, 14000, None])
def test_fit_ptx_leaves_readable_ptx_alone(cuda):
    out, changed = fit_ptx_to_driver(PTX_95, cuda)
    assert changed is False
    assert out is PTX_95


def test_fit_ptx_without_version_directive():
    assert fit_ptx_to_driver(".target sm_75\n", 13000) == (".target sm_75\n", False)


def test_unsupported_ptx_message_cuda13():
    msg = unsupported_ptx_message((13, 5), 13000)
    assert 'pip install "nvidia-cuda-nvrtc==13.0.*"' in msg
    assert "13.5" in msg and "CUDA 13.0" in msg and "9.0" in msg


def test_unsupported_ptx_message_cuda12():
    msg = unsupported_ptx_message((13, 5), 12080)
    assert "nvidia-cuda-nvrtc-cu12==12.8.*" in msg
    assert "cuda-bindings>=12.6,<13" in msg
    assert "cuda-bindings" not in unsupported_ptx_message((12, 9), 12080)
