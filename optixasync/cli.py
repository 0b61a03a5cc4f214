"""The ``optixasync`` command: ``doctor``, ``render`` and ``syncwatch``.

A thin layer over the public API. Each subcommand other than ``doctor`` lives
beside the code it drives, in a ``_cli`` module with ``add_parser(subparsers)``
and ``run(args) -> int``; those modules import nothing heavy at import time,
so ``optixasync --help`` works without CuPy or a GPU.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time

__all__ = ["main", "doctor"]


def _driver_line() -> tuple[bool, str]:
    """(ok, text) about the CUDA driver, without raising."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1" if sys.platform != "win32" else "nvcuda.dll")
    except OSError:
        return False, "no NVIDIA driver found: libcuda.so.1 cannot be loaded (install the NVIDIA display driver, R535 or newer)"
    return True, ""


def doctor(out=print) -> int:
    """Print what optixasync finds on this machine; return the exit status (0 ok, 1 not usable)."""
    from ._config import cache_dir
    from ._optix._loader import ABI_OPTIX_VERSIONS, ABI_TABLE_SIZES, load_library, probe_abi
    from .program import driver_cuda_version, nvrtc_version

    ok, problem = _driver_line()
    if not ok:
        out(f"optixasync doctor: {problem}")
        return 1
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        out(f"optixasync doctor: CUDA is not usable: {exc}")
        return 1
    if count == 0:
        out("optixasync doctor: no CUDA device found")
        return 1
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    cuda_version = driver_cuda_version() or 0
    try:
        import pynvml  # noqa: F401  (nvidia-ml-py, optional)

        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
    except Exception:
        driver = "unknown (install nvidia-ml-py to read it)"
    out(f"GPU                 : {props['name'].decode()} (sm_{props['major']}{props['minor']}), {count} device(s)")
    out(f"driver              : {driver}")
    out(f"CUDA driver API     : {cuda_version // 1000}.{cuda_version % 1000 // 10}")
    try:
        lib = load_library()
    except Exception as exc:
        out(f"OptiX               : {exc}")
        return 1
    accepted = [f"{abi} (OptiX {ABI_OPTIX_VERSIONS[abi]})" for abi in ABI_TABLE_SIZES if probe_abi(lib, abi) == 0]
    refused = [str(abi) for abi in ABI_TABLE_SIZES if probe_abi(lib, abi) != 0]
    out(f"OptiX ABIs accepted : {', '.join(accepted) or 'none'}" + (f"; refused: {', '.join(refused)}" if refused else ""))
    try:
        major, minor = nvrtc_version()
        out(f"NVRTC               : {major}.{minor}")
    except Exception as exc:
        out(f"NVRTC               : not usable: {exc}")
        return 1
    out(f"cache directory     : {cache_dir()}")
    try:
        import optixasync

        from ._hello import render_triangle

        start = time.perf_counter()
        with optixasync.Context() as ctx:
            result = render_triangle(ctx, 64, 64)
        hits = int((result.image[..., 3] >= 0).sum())
        elapsed = time.perf_counter() - start
        if hits == 0:
            out("test pipeline       : launched but nothing was hit (broken install?)")
            return 1
        out(f"test pipeline       : compiled and launched in {elapsed * 1e3:.0f} ms "
            f"(PTX cache {'hit' if result.module_cache_hit else 'miss'}), {hits} of 4096 pixels hit")
    except Exception as exc:
        out(f"test pipeline       : FAILED: {type(exc).__name__}: {exc}")
        return 1
    return 0


#: Subcommand name -> module with ``add_parser(subparsers)`` and ``run(args)``.
SUBCOMMAND_MODULES = {
    "render": "optixasync.render._cli",
    "syncwatch": "optixasync.diagnostics._cli",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="optixasync", description="OptiX from Python with an asynchronous frame pipeline")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check the driver, OptiX, NVRTC and a test pipeline")
    modules = {name: importlib.import_module(path) for name, path in SUBCOMMAND_MODULES.items()}
    for module in modules.values():
        module.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "doctor":
        return doctor()
    return int(modules[args.command].run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
