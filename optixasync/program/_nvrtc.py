"""Compile CUDA C++ programs to PTX with NVRTC, and fit the PTX to the driver.

NVRTC is a compiler library: it runs on the CPU and never touches the GPU,
so everything here works on a machine without one. Compiling is CPU-bound
and slow (seconds for a path tracer), so :func:`compile_ptx` belongs in
start-up or a background thread, never on a frame's submit path; the
on-disk cache in :mod:`optixasync.program._cache` keeps it off later runs.

Blocking calls
--------------
:func:`compile_ptx` runs the compiler on the CPU (seconds for the path
tracer): set-up time. No CUDA call is made.

PTX carries an ISA version (``.version X.Y``). A driver reads PTX up to the
ISA of the CUDA version it implements and rejects newer text with
``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``, even when the code uses nothing new.
A pip-installed NVRTC is easily newer than the driver, so
:func:`fit_ptx_to_driver` relabels such PTX down to the driver's ISA.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._config import kernels_dir
from .._driver import driver_cuda_version
from ..errors import NvrtcError
from ..validation import coerce_options

__all__ = [
    "CompileOptions",
    "compile_ptx",
    "driver_cuda_version",
    "fit_ptx_to_driver",
    "max_ptx_isa_for_cuda",
    "nvrtc_version",
    "ptx_isa_version",
    "retarget_ptx",
    "unsupported_ptx_message",
]

logger = logging.getLogger("optixasync")

_INSTALL_HINT = 'pip install "cuda-bindings>=12.6" "nvidia-cuda-nvrtc"'


@dataclass(frozen=True)
class CompileOptions:
    """NVRTC options of one program.

    Parameters
    ----------
    arch : str
        Virtual architecture of the PTX (``compute_75`` runs on every GPU
        with RT cores; the driver JIT-compiles it for the actual one).
    include_dirs : tuple of str
        Extra ``-I`` directories. The package's ``kernels_dir()`` is always
        searched first, implicitly.
    defines : tuple of (str, str)
        Preprocessor macros, in order. An empty value gives ``-DNAME``.
    use_fast_math : bool
        Pass ``--use_fast_math``.
    lineinfo : bool
        Pass ``-lineinfo`` (source lines for profilers, no slowdown).
    extra : tuple of str
        Further NVRTC arguments, appended last.
    """

    arch: str = "compute_75"
    include_dirs: tuple[str, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()
    use_fast_math: bool = True
    lineinfo: bool = False
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Normalise lists, paths and dicts so instances hash and compare by value
        # (the cache key is built from them).
        object.__setattr__(self, "include_dirs", tuple(os.fspath(d) for d in self.include_dirs))
        object.__setattr__(self, "defines", _coerce_defines(self.defines))
        object.__setattr__(self, "extra", tuple(str(a) for a in self.extra))

    def to_nvrtc_args(self) -> list[str]:
        """The NVRTC command line of these options."""
        args = [
            # OptiX links the programs of a pipeline itself: relocatable device code is required.
            "-rdc=true",
            "-std=c++17",
            # Lets helper functions in headers omit __device__.
            "--device-as-default-execution-space",
            f"-arch={self.arch}",
            f"-I{kernels_dir()}",
        ]
        args += [f"-I{d}" for d in self.include_dirs]
        args += [f"-D{k}={v}" if v != "" else f"-D{k}" for k, v in self.defines]
        if self.use_fast_math:
            args.append("--use_fast_math")
        if self.lineinfo:
            args.append("-lineinfo")
        args += list(self.extra)
        return args


def _coerce_defines(defines: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> tuple[tuple[str, str], ...]:
    items = defines.items() if isinstance(defines, Mapping) else defines
    out = []
    for item in items:
        name, value = item
        out.append((str(name), "" if value is None else str(value)))
    return tuple(out)


def _nvrtc_module():
    """Import the NVRTC binding, turning a missing package into an :class:`NvrtcError`."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise NvrtcError(-1, "NVRTC_NOT_FOUND", f"cuda-bindings is not installed ({exc}); {_install_hint()}") from exc
    return nvrtc


def _install_hint() -> str:
    hint = f"install it with: {_INSTALL_HINT}"
    cuda = driver_cuda_version()
    if cuda is not None and cuda // 1000 == 12:
        hint += ' (this driver is CUDA 12: use "cuda-bindings>=12.6,<13" "nvidia-cuda-nvrtc-cu12")'
    else:
        hint += " (matching the CUDA major version of the driver)"
    return hint


def _check(nvrtc, result: Any, what: str) -> None:
    if int(result) != 0:
        _, name = nvrtc.nvrtcGetErrorString(result)
        raise NvrtcError(int(result), name.decode(), what)


def nvrtc_version() -> tuple[int, int]:
    """Version ``(major, minor)`` of the NVRTC library that will compile.

    Raises
    ------
    NvrtcError
        cuda-bindings or the NVRTC shared library is missing.
    """
    nvrtc = _nvrtc_module()
    try:
        result, major, minor = nvrtc.nvrtcVersion()
    except (RuntimeError, OSError) as exc:
        # cuda-bindings loads libnvrtc lazily, on the first call.
        raise NvrtcError(
            -1, "NVRTC_NOT_FOUND", f"the NVRTC library could not be loaded ({exc}); {_install_hint()}"
        ) from exc
    _check(nvrtc, result, "nvrtcVersion failed")
    return int(major), int(minor)


def compile_ptx(source: str, name: str, options: CompileOptions | Mapping[str, Any] | None = None) -> str:
    """Compile one CUDA C++ translation unit to PTX.

    CPU-bound and slow; call it off any latency-sensitive path, or use
    :func:`~optixasync.program.compile_ptx_cached`.

    Parameters
    ----------
    source : str
        The CUDA C++ source text.
    name : str
        Its file name (for example ``hello_triangle.cu``); NVRTC names it in
        diagnostics as ``name(line): error: ...``.
    options : CompileOptions, dict or None
        Compiler options (see :meth:`CompileOptions.coerce`).

    Returns
    -------
    str
        The PTX text, as NVRTC wrote it (not fitted to the driver).

    Raises
    ------
    NvrtcError
        Compilation failed (``log`` holds NVRTC's output), or NVRTC is missing.
    """
    opts = coerce_options(CompileOptions, options)
    nvrtc_version()  # fail early, with the install hint, when NVRTC is missing
    nvrtc = _nvrtc_module()
    args = [a.encode() for a in opts.to_nvrtc_args()]
    result, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(nvrtc, result, f"creating the NVRTC program {name} failed")
    try:
        (compile_result,) = nvrtc.nvrtcCompileProgram(prog, len(args), args)
        log = _program_log(nvrtc, prog)
        if int(compile_result) != 0:
            _, err_name = nvrtc.nvrtcGetErrorString(compile_result)
            raise NvrtcError(int(compile_result), err_name.decode(), f"compiling {name} failed", log)
        if log.strip():
            logger.debug("NVRTC output for %s:\n%s", name, log.rstrip())
        result, size = nvrtc.nvrtcGetPTXSize(prog)
        _check(nvrtc, result, f"nvrtcGetPTXSize for {name} failed")
        buf = b" " * size
        (result,) = nvrtc.nvrtcGetPTX(prog, buf)
        _check(nvrtc, result, f"nvrtcGetPTX for {name} failed")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return buf.rstrip(b"\x00").decode()


def _program_log(nvrtc, prog) -> str:
    result, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if int(result) != 0 or size <= 1:
        return ""
    buf = b" " * size
    (result,) = nvrtc.nvrtcGetProgramLog(prog, buf)
    if int(result) != 0:
        return ""
    return buf.rstrip(b"\x00").decode(errors="replace")


# --- PTX ISA versus driver -------------------------------------------------------------------------------------------

_VERSION_RE = re.compile(r"^[ \t]*\.version[ \t]+(\d+)\.(\d+)[ \t]*$", re.MULTILINE)

# Highest PTX ISA each CUDA release reads, (major, minor) -> (isa major, isa minor).
# 12.7 was never released; it is kept so a driver reporting it still gets a sensible answer.
_PTX_ISA_TABLE: dict[tuple[int, int], tuple[int, int]] = {
    (10, 0): (6, 3),
    (10, 1): (6, 4),
    (10, 2): (6, 5),
    (11, 0): (7, 0),
    (11, 1): (7, 1),
    (11, 2): (7, 2),
    (11, 3): (7, 3),
    (11, 4): (7, 4),
    (11, 5): (7, 5),
    (11, 6): (7, 6),
    (11, 7): (7, 7),
    (11, 8): (7, 8),
    (12, 0): (8, 0),
    (12, 1): (8, 1),
    (12, 2): (8, 2),
    (12, 3): (8, 3),
    (12, 4): (8, 4),
    (12, 5): (8, 5),
    (12, 6): (8, 5),
    (12, 7): (8, 6),
    (12, 8): (8, 7),
    (12, 9): (8, 8),
}


def ptx_isa_version(ptx: str) -> tuple[int, int]:
    """The PTX ISA version ``(major, minor)`` of the ``.version`` directive of ``ptx``.

    Raises
    ------
    ValueError
        ``ptx`` has no ``.version`` directive.
    """
    match = _VERSION_RE.search(ptx)
    if match is None:
        raise ValueError("no .version directive in the PTX text")
    return int(match.group(1)), int(match.group(2))


def _split_cuda_version(cuda_version: int) -> tuple[int, int]:
    return cuda_version // 1000, (cuda_version % 1000) // 10


def max_ptx_isa_for_cuda(cuda_version: int) -> tuple[int, int]:
    """Highest PTX ISA that a driver of CUDA version ``cuda_version`` reads.

    Parameters
    ----------
    cuda_version : int
        As ``cuDriverGetVersion`` reports it: ``1000 * major + 10 * minor``
        (13000 for 13.0, 12080 for 12.8).

    Returns
    -------
    tuple of int
        ``(isa_major, isa_minor)``. Versions missing from the table get a
        conservative answer: the last known minor of the same major, or the
        nearest lower known release.
    """
    major, minor = _split_cuda_version(int(cuda_version))
    if (major, minor) in _PTX_ISA_TABLE:
        return _PTX_ISA_TABLE[(major, minor)]
    if major == 13:
        return 9, minor
    if major > 13:
        # The ISA major has tracked CUDA major - 4 since CUDA 11; the minor of an
        # unknown major cannot be guessed, so take its .0, which it surely reads.
        return major - 4, 0
    lower = [key for key in _PTX_ISA_TABLE if key < (major, minor)]
    if lower:
        return _PTX_ISA_TABLE[max(lower)]
    return _PTX_ISA_TABLE[min(_PTX_ISA_TABLE)]


def retarget_ptx(ptx: str, isa: tuple[int, int]) -> str:
    """Rewrite the ``.version`` directive of ``ptx`` to ``isa``.

    Only the label changes. That is sound when the code uses no instruction
    newer than ``isa``, which holds for what NVRTC emits for an older
    ``-arch`` in practice; a driver that still refuses says so at load time.

    Raises
    ------
    ValueError
        ``ptx`` has no ``.version`` directive.
    """
    ptx_isa_version(ptx)  # raise ValueError when absent
    return _VERSION_RE.sub(f".version {isa[0]}.{isa[1]}", ptx, count=1)


def _nvrtc_pip_spec(cuda_version: int) -> str:
    major, minor = _split_cuda_version(cuda_version)
    if major <= 12:
        return f"nvidia-cuda-nvrtc-cu{major}=={major}.{minor}.*"
    return f"nvidia-cuda-nvrtc=={major}.{minor}.*"


def _fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


_warned: set[tuple[tuple[int, int], int]] = set()


def fit_ptx_to_driver(ptx: str, cuda_version: int | None) -> tuple[str, bool]:
    """Relabel ``ptx`` to the driver's PTX ISA when NVRTC wrote a newer one.

    Parameters
    ----------
    ptx : str
        PTX text as NVRTC wrote it.
    cuda_version : int or None
        The driver's CUDA version (:func:`driver_cuda_version`); None leaves
        ``ptx`` untouched.

    Returns
    -------
    tuple of (str, bool)
        The PTX to load, and whether it was relabelled.
    """
    if cuda_version is None:
        return ptx, False
    try:
        isa = ptx_isa_version(ptx)
    except ValueError:
        return ptx, False
    limit = max_ptx_isa_for_cuda(cuda_version)
    if isa <= limit:
        return ptx, False
    key = (isa, cuda_version)
    if key not in _warned:
        # Once per (ISA, driver): every program of a renderer would repeat it otherwise.
        _warned.add(key)
        driver = _fmt(_split_cuda_version(cuda_version))
        logger.warning(
            "NVRTC %s is newer than the driver's CUDA %s: the PTX (ISA %s) was relabelled to ISA %s so the driver "
            "accepts it. Installing %s (the NVRTC of the driver's CUDA) avoids this.",
            _nvrtc_description(isa),
            driver,
            _fmt(isa),
            _fmt(limit),
            _nvrtc_pip_spec(cuda_version),
        )
    return retarget_ptx(ptx, limit), True


def _nvrtc_description(isa: tuple[int, int]) -> str:
    try:
        return _fmt(nvrtc_version())
    except NvrtcError:
        return f"(PTX ISA {_fmt(isa)})"


def unsupported_ptx_message(nvrtc: tuple[int, int], cuda_version: int) -> str:
    """Explain a PTX the driver refused, and which NVRTC to install.

    Parameters
    ----------
    nvrtc : tuple of int
        ``(major, minor)`` of the NVRTC that compiled the PTX.
    cuda_version : int
        The driver's CUDA version, as ``cuDriverGetVersion`` reports it.
    """
    driver = _split_cuda_version(int(cuda_version))
    limit = max_ptx_isa_for_cuda(cuda_version)
    spec = _nvrtc_pip_spec(cuda_version)
    message = (
        f"The driver (CUDA {_fmt(driver)}, PTX ISA up to {_fmt(limit)}) refused PTX compiled by NVRTC "
        f'{_fmt(tuple(nvrtc))}. Install the NVRTC that matches the driver: pip install "{spec}"'
    )
    if nvrtc[0] > driver[0]:
        # The binding's major must match the NVRTC's major, or it will not find the library.
        low = "12.6" if driver[0] == 12 else f"{driver[0]}.0"
        message += f' "cuda-bindings>={low},<{driver[0] + 1}"'
    message += " (or update the NVIDIA driver)."
    return message
