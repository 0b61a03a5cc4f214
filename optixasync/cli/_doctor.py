"""``optixasync doctor``: what optixasync finds on this machine, and whether a test pipeline runs.

It names the OptiX ABIs the driver accepts, the one a ``Context`` uses (87 unless told otherwise) and the one
``abi="newest"`` would take, and what the device reports through that newest ABI: RT cores, shader execution
reordering, cooperative vectors, cluster acceleration structures and the limits.

Blocking calls
--------------
``doctor`` initialises the driver, creates OptiX contexts, compiles and
launches a test pipeline and waits for it: that is what it is for.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from ..errors import EXIT_OK, EXIT_UNAVAILABLE

__all__ = ["WITHOUT_A_GPU", "add_parser", "describe_abis", "describe_properties", "doctor", "run"]

_PROG = "optixasync doctor"
#: What doctor says works on a machine without a usable NVIDIA GPU (the OptiX renderer needs one).
WITHOUT_A_GPU = ("the OptiX renderer needs an NVIDIA GPU; without one these work: the CPU device, the same kernel "
                 "built by a C++ compiler (optixasync render --device cpu, optixasync view --cpu --scene X, "
                 "RenderPipeline(CpuContext(), scene)), the viewer and the notebook widget "
                 "with the CPU source (optixasync view --cpu), the CPU denoiser (Denoiser(device='cpu'), the "
                 "denoise extra), building and loading scenes (optixasync.scene), and the Mitsuba 3 converter "
                 "(optixasync.testing.mitsuba_scene_dict)")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``doctor`` subcommand."""
    return subparsers.add_parser("doctor", help="check the driver, GPUs, OptiX, NVRTC, CuPy, denoisers and a "
                                                "test pipeline")


def run(args: argparse.Namespace) -> int:
    """Run ``optixasync doctor`` (its report goes to stdout, its verdict is the exit status)."""
    return doctor()


def _format_bytes(n: int) -> str:
    return f"{n / 2**30:.0f} GiB"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def doctor(out: Callable[[str], None] = print, err: Callable[[str], None] = _stderr) -> int:
    """Report what optixasync finds on this machine to ``out``; return the exit status (0 usable, 1 not).

    What stops it is one line to ``err`` (stderr), ``optixasync doctor: error: ...``, after the report so far.
    """

    def fail(message: str) -> int:
        err(f"{_PROG}: error: {message}")
        return EXIT_UNAVAILABLE

    from .. import _driver
    from .._config import cache_dir
    from .._optix import SUPPORTED_ABIS
    from .._optix._loader import probe_abi
    from .._version import __version__
    from ..errors import OptixAsyncError
    from ..program import nvrtc_version

    out(f"optixasync          : {__version__}")
    if _driver.load_cuda_library() is None:
        out(f"without a GPU       : {WITHOUT_A_GPU}")
        return fail(_driver.no_driver_message())
    cuda_version = _driver.driver_cuda_version()
    if cuda_version:
        cuda = (f"CUDA {cuda_version // 1000}.{cuda_version % 1000 // 10} -> "
                f"install optixasync[{_driver.cuda_extra(cuda_version)}]")
    else:  # no extra can be recommended for a version the driver did not report
        cuda = "CUDA unknown"
    out(f"driver              : {_driver.driver_version() or 'unknown (libnvidia-ml.so.1 not found)'}, {cuda}")
    gpus = _driver.devices()
    if not gpus:
        out(f"without a GPU       : {WITHOUT_A_GPU}")
        return fail("no CUDA device: the NVIDIA driver is loaded but sees no GPU (check nvidia-smi)")
    for gpu in gpus:
        major, minor = gpu.compute_capability
        out(f"GPU {gpu.index:<16}: {gpu.name} (sm_{major}{minor}), {_format_bytes(gpu.memory_bytes)}")
    try:
        lib = _driver.load_optix_library()
        answers = {abi: probe_abi(lib, abi) for abi in sorted(SUPPORTED_ABIS)}  # each ABI asked once
    except OptixAsyncError as exc:
        return fail(f"OptiX: {exc}")
    for line in describe_abis(answers):
        out(line)
    accepted = [abi for abi, status in answers.items() if status == 0]
    try:
        major, minor = nvrtc_version()
        out(f"NVRTC               : {major}.{minor}")
    except Exception as exc:
        return fail(f"NVRTC is not usable: {exc}")
    try:
        cupy = _driver.require_cupy()
        out(f"CuPy                : {cupy.__version__}")
    except ImportError as exc:
        return fail(f"CuPy: {exc}")
    _report_denoisers(out)
    out(f"cache directory     : {cache_dir()}")
    problem = _test_pipeline(out)
    if problem:
        return fail(problem)
    if accepted:
        _report_device(out, max(accepted))
    return EXIT_OK


def describe_abis(answers: dict[int, int]) -> list[str]:
    """The report's ABI lines for the driver's answer per ABI (``OptixResult``, 0: accepted)."""
    from .._optix import DEFAULT_ABI, abi_name

    accepted = [abi for abi, status in sorted(answers.items()) if status == 0]
    refused = [str(abi) for abi, status in sorted(answers.items()) if status != 0]
    lines = [f"OptiX ABIs accepted : {', '.join(abi_name(a) for a in accepted) or 'none'}"
             + (f"; refused: {', '.join(refused)} (a newer driver accepts them)" if refused else "")]
    if accepted:
        default = abi_name(DEFAULT_ABI) + ("" if DEFAULT_ABI in accepted else ", which this driver refuses")
        lines.append(f"OptiX ABI chosen    : {default} by default; Context(abi='newest') takes "
                     f"{abi_name(max(accepted))}")
    return lines


def _yes_no(value: bool | None, abi: int) -> str:
    return f"not reported by ABI {abi}" if value is None else ("yes" if value else "no")


def describe_properties(props: Any) -> list[str]:
    """The report's device lines for a :class:`~optixasync._optix.DeviceProperties`."""
    if props.rt_cores is None:
        rt = "not reported"
    elif props.rt_cores:
        rt = f"yes (RT core version {props.rtcore_version // 10}.{props.rtcore_version % 10})"
    else:
        rt = "none (rtcore version 0: OptiX traces on the SMs)"
    return [
        f"RT cores            : {rt}",
        f"shader reordering   : {_yes_no(props.shader_execution_reordering, props.abi)}",
        f"cooperative vectors : {_yes_no(props.cooperative_vectors, props.abi)}",
        f"cluster accel       : {_yes_no(props.cluster_accel, props.abi)}",
        f"limits              : trace depth {props.max_trace_depth}, graph depth {props.max_traversable_graph_depth}, "
        f"{props.max_primitives_per_gas} primitives per GAS, {props.max_instances_per_ias} instances per IAS, "
        f"{props.visibility_mask_bits}-bit visibility masks",
    ]


def _report_device(out: Callable[[str], None], abi: int) -> None:
    """What GPU 0 reports through ``abi`` (the newest the driver accepts: it has the most properties)."""
    try:
        import optixasync

        with optixasync.Context(abi=abi, warm_up=False, disk_cache=False) as ctx:
            props = ctx.properties
    except Exception as exc:  # the test pipeline ran: a failure here is reported, not fatal
        out(f"device properties   : could not be read through ABI {abi}: {type(exc).__name__}: {exc}")
        return
    out(f"device (ABI {abi})    : GPU {ctx.device_id}, as its OptiX context reports it")
    for line in describe_properties(props):
        out(line)


def _report_denoisers(out: Callable[[str], None]) -> None:
    try:
        from ..denoise import available_denoisers
    except ImportError:  # the denoise package itself is optional in a trimmed install
        return
    for name, state in available_denoisers().items():
        out(f"denoiser {name:<11}: {state}")


def _test_pipeline(out: Callable[[str], None]) -> str | None:
    """Compile and launch the hello-triangle pipeline; what went wrong (None: it rendered)."""
    try:
        import optixasync

        from ..testing import render_triangle

        start = time.perf_counter()
        with optixasync.Context() as ctx:
            result = render_triangle(ctx, 64, 64)
        hits = int((result.image[..., 3] >= 0).sum())
        elapsed = time.perf_counter() - start
    except Exception as exc:
        return f"the test pipeline failed: {type(exc).__name__}: {exc}"
    if hits == 0:
        return "the test pipeline launched but nothing was hit (broken install?)"
    out(f"test pipeline       : compiled and launched in {elapsed * 1e3:.0f} ms "
        f"(PTX cache {'hit' if result.module_cache_hit else 'miss'}), {hits} of 4096 pixels hit")
    return None
