"""The ``optixasync`` command: ``doctor``, ``render``, ``syncwatch``, ``view``, and ``--version``.

A thin layer over the public API. Each subcommand other than ``doctor`` lives
beside the code it drives, in a ``_cli`` module with ``add_parser(subparsers)``
and ``run(args) -> int`` (``render`` drives the tracer and the denoiser above
it, so its module is ``optixasync._render_cli``, at the top); those modules import nothing heavy at import time,
so ``optixasync --help`` works without CuPy or a GPU.

Exit status, the same for every subcommand and for the examples and
benchmarks: 0 done, 1 the machine cannot run it (no driver, no GPU, a
missing extra, a GPU failure), 2 bad input.

Blocking calls
--------------
``doctor`` initialises the driver, compiles and launches a test pipeline and
waits for it: that is what it is for.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable

__all__ = ["EXIT_BAD_INPUT", "EXIT_UNAVAILABLE", "SUBCOMMAND_MODULES", "doctor", "main"]

#: Exit status when the machine cannot run the command (driver, GPU, extra, GPU failure).
EXIT_UNAVAILABLE = 1
#: Exit status for bad input (arguments, files).
EXIT_BAD_INPUT = 2

#: Subcommand name -> module with ``add_parser(subparsers)`` and ``run(args)``.
SUBCOMMAND_MODULES = {
    "render": "optixasync._render_cli",
    "syncwatch": "optixasync.diagnostics._cli",
    "view": "optixasync.viewer._cli",
}


def _format_bytes(n: int) -> str:
    return f"{n / 2**30:.0f} GiB"


def doctor(out: Callable[[str], None] = print) -> int:
    """Print what optixasync finds on this machine; return the exit status (0 usable, 1 not)."""
    from . import _driver
    from ._config import cache_dir
    from ._optix._abi import ABI_OPTIX_VERSIONS, SUPPORTED_ABIS
    from ._optix._loader import probe_abi
    from ._version import __version__
    from .errors import OptixAsyncError
    from .program import nvrtc_version

    out(f"optixasync          : {__version__}")
    if _driver.load_cuda_library() is None:
        out(f"optixasync doctor: {_driver.no_driver_message()}")
        return EXIT_UNAVAILABLE
    cuda_version = _driver.driver_cuda_version()
    if cuda_version:
        cuda = (f"CUDA {cuda_version // 1000}.{cuda_version % 1000 // 10} -> "
                f"install optixasync[{_driver.cuda_extra(cuda_version)}]")
    else:  # no extra can be recommended for a version the driver did not report
        cuda = "CUDA unknown"
    out(f"driver              : {_driver.driver_version() or 'unknown (libnvidia-ml.so.1 not found)'}, {cuda}")
    gpus = _driver.devices()
    if not gpus:
        out("optixasync doctor: no CUDA device: the NVIDIA driver is loaded but sees no GPU (check nvidia-smi)")
        return EXIT_UNAVAILABLE
    for gpu in gpus:
        major, minor = gpu.compute_capability
        out(f"GPU {gpu.index:<16}: {gpu.name} (sm_{major}{minor}), {_format_bytes(gpu.memory_bytes)}")
    try:
        lib = _driver.load_optix_library()
        answers = {abi: probe_abi(lib, abi) for abi in sorted(SUPPORTED_ABIS)}  # each ABI asked once
    except OptixAsyncError as exc:
        out(f"OptiX               : {exc}")
        return EXIT_UNAVAILABLE
    accepted = [f"{abi} (OptiX {ABI_OPTIX_VERSIONS[abi]})" for abi, status in answers.items() if status == 0]
    refused = [str(abi) for abi, status in answers.items() if status != 0]
    out(f"OptiX ABIs accepted : {', '.join(accepted) or 'none'}" + (f"; refused: {', '.join(refused)}" if refused else ""))
    try:
        major, minor = nvrtc_version()
        out(f"NVRTC               : {major}.{minor}")
    except Exception as exc:
        out(f"NVRTC               : not usable: {exc}")
        return EXIT_UNAVAILABLE
    try:
        cupy = _driver.require_cupy()
        out(f"CuPy                : {cupy.__version__}")
    except ImportError as exc:
        out(f"CuPy                : {exc}")
        return EXIT_UNAVAILABLE
    _report_denoisers(out)
    out(f"cache directory     : {cache_dir()}")
    return _test_pipeline(out)


def _report_denoisers(out: Callable[[str], None]) -> None:
    try:
        from .denoise import available_denoisers
    except ImportError:  # the denoise package itself is optional in a trimmed install
        return
    for name, state in available_denoisers().items():
        out(f"denoiser {name:<11}: {state}")


def _test_pipeline(out: Callable[[str], None]) -> int:
    try:
        import optixasync

        from .testing import render_triangle

        start = time.perf_counter()
        with optixasync.Context() as ctx:
            result = render_triangle(ctx, 64, 64)
        hits = int((result.image[..., 3] >= 0).sum())
        elapsed = time.perf_counter() - start
    except Exception as exc:
        out(f"test pipeline       : FAILED: {type(exc).__name__}: {exc}")
        return EXIT_UNAVAILABLE
    if hits == 0:
        out("test pipeline       : launched but nothing was hit (broken install?)")
        return EXIT_UNAVAILABLE
    out(f"test pipeline       : compiled and launched in {elapsed * 1e3:.0f} ms "
        f"(PTX cache {'hit' if result.module_cache_hit else 'miss'}), {hits} of 4096 pixels hit")
    return 0


def main(argv: list[str] | None = None) -> int:
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="optixasync", description="OptiX from Python with an asynchronous frame pipeline")
    parser.add_argument("--version", action="version", version=f"optixasync {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check the driver, GPUs, OptiX, NVRTC, CuPy, denoisers and a test pipeline")
    modules = {}
    for name, path in SUBCOMMAND_MODULES.items():
        try:
            modules[name] = importlib.import_module(path)
        except ImportError as exc:
            # A package outside optixasync that is not installed (an optional extra) hides the subcommand; a
            # module of optixasync that fails to import is a bug to see, not a missing command.
            if exc.name is not None and exc.name.split(".")[0] == "optixasync":
                raise
            continue
        modules[name].add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "doctor":
        return doctor()
    return int(modules[args.command].run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
